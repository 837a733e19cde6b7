//! Console and admin sign-in through an OpenID Connect provider (`console.oidc`): the
//! authorization code flow with PKCE ([`flow`]), its ID token's claims mapped to roles
//! ([`roles`]), and the session that follows, a signed cookie any replica accepts
//! ([`session`]).
//!
//! Built on `jsonwebtoken` and the JWKS cache of `auth.jwt` rather than the `openidconnect`
//! crate: that one pins reqwest 0.12 (through `oauth2`) while the gateway is on 0.13, and the
//! flow it would cover is a few dozen lines here, its checks each tested in `tests/oidc.rs`.

mod discovery;
pub mod flow;
mod refusal;
pub mod roles;
pub mod session;
mod signed;

pub use discovery::Discovery;
pub use refusal::SignInError;
pub use roles::{ProjectRole, Roles};
pub use session::Session;
