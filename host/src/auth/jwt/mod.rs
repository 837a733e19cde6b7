//! JWT client auth: a bearer token signed by one of `auth.jwt`'s issuers, verified against the
//! issuer's published keys, stands for a caller whose claims name its project, user and limits.
//!
//! The checks, in order, each a [`Refusal`] of its own: the token's shape and size; `alg: none`
//! and `crit` headers refused; the `iss` claim (read before the signature, only to pick the
//! issuer) must name a configured issuer, and the header's algorithm be one it allows; the key
//! its `kid` names is fetched from the issuer's JWKS ([`Jwks`]); then `jsonwebtoken` checks the
//! signature, `exp` and `nbf` (with the issuer's clock skew), `iss` and `aud`, all required
//! together with `sub`; and [`claims`] maps what it says into an [`Identity`].
//!
//! The caller's key id is `jwt:` and a hash of its issuer and subject, the same on every
//! replica, so that the limits and the ledger, which key by key id, treat a token's subject as
//! they treat a key, without storing anything of it.

mod claims;
mod jwks;
mod refusal;

pub use claims::Identity;
pub use jwks::{Jwks, bounded};
pub use refusal::Refusal;

use std::str::FromStr;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::config::{JwtAlgorithm, JwtIssuer};

/// Bytes of a token, at most (identity providers' tokens are a few KiB at most).
const TOKEN_MAX: usize = 16 * 1024;

/// Whether a bearer token is shaped as a JWT: three base64url parts, the first two non-empty
/// (an unsigned token's third part is empty: it must reach [`verify`] to be refused).
pub fn looks_like(token: &str) -> bool {
    let base64url = |part: &str| {
        part.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    let mut parts = token.split('.');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(header), Some(payload), Some(signature), None) => {
            !header.is_empty()
                && !payload.is_empty()
                && [header, payload, signature].into_iter().all(base64url)
        }
        _ => false,
    }
}

/// The header fields read before the signature is checked.
#[derive(Deserialize)]
struct RawHeader {
    alg: String,
    kid: Option<String>,
    crit: Option<Value>,
}

/// The claim read before the signature is checked, to pick the issuer.
#[derive(Deserialize)]
struct RawPayload {
    iss: Option<String>,
}

/// Verifies `token` against `issuers`, and maps its claims.
pub async fn verify(jwks: &Jwks, issuers: &[JwtIssuer], token: &str) -> Result<Identity, Refusal> {
    if token.len() > TOKEN_MAX || !looks_like(token) {
        return Err(Refusal::Malformed);
    }
    let mut parts = token.split('.');
    let (Some(header), Some(payload)) = (parts.next(), parts.next()) else {
        return Err(Refusal::Malformed);
    };
    let header: RawHeader = part(header)?;
    if header.alg.eq_ignore_ascii_case("none") {
        return Err(Refusal::Unsigned);
    }
    // RFC 7515 §4.1.11: an extension the gateway does not understand must not be ignored.
    if header.crit.is_some() {
        return Err(Refusal::Malformed);
    }
    let payload: RawPayload = part(payload)?;
    let iss = payload
        .iss
        .ok_or_else(|| Refusal::MissingClaim("iss".to_owned()))?;
    let issuer = (issuers.iter())
        .find(|i| i.issuer == iss)
        .ok_or(Refusal::UnknownIssuer)?;
    let algorithm = Algorithm::from_str(&header.alg)
        .ok()
        .filter(|alg| issuer.algorithms.iter().any(|a| algorithm(*a) == *alg))
        .ok_or(Refusal::AlgorithmNotAllowed)?;
    let cooldown = Duration::from_secs(issuer.jwks_cooldown);
    let key = jwks
        .key(&issuer.jwks_url, header.kid.as_deref(), cooldown)
        .await?;
    if key.algorithm.is_some_and(|alg| alg != algorithm) {
        return Err(Refusal::AlgorithmNotAllowed);
    }
    let mut validation = Validation::new(algorithm);
    validation.set_issuer(&[&issuer.issuer]);
    validation.set_audience(&issuer.audiences);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.leeway = issuer.clock_skew;
    validation.validate_nbf = true;
    let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
        .map_err(|e| refusal(e.kind()))?;
    claims::identity(issuer, &data.claims)
}

/// One base64url JSON part of the token, read into `T`.
fn part<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, Refusal> {
    let bytes = URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| Refusal::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| Refusal::Malformed)
}

fn algorithm(allowed: JwtAlgorithm) -> Algorithm {
    match allowed {
        JwtAlgorithm::RS256 => Algorithm::RS256,
        JwtAlgorithm::RS384 => Algorithm::RS384,
        JwtAlgorithm::RS512 => Algorithm::RS512,
        JwtAlgorithm::PS256 => Algorithm::PS256,
        JwtAlgorithm::PS384 => Algorithm::PS384,
        JwtAlgorithm::PS512 => Algorithm::PS512,
        JwtAlgorithm::ES256 => Algorithm::ES256,
        JwtAlgorithm::ES384 => Algorithm::ES384,
        JwtAlgorithm::EdDSA => Algorithm::EdDSA,
    }
}

/// The refusal for what `jsonwebtoken` found wrong.
fn refusal(kind: &ErrorKind) -> Refusal {
    // The names of the claims the validation requires, as the gateway's own strings: the
    // library's carry nothing of the token, but the refusal must not depend on that.
    let spec = |claim: &str| {
        ["exp", "nbf", "iss", "aud", "sub"]
            .into_iter()
            .find(|c| *c == claim)
            .unwrap_or("a registered claim")
            .to_owned()
    };
    match kind {
        ErrorKind::ExpiredSignature => Refusal::Expired,
        ErrorKind::ImmatureSignature => Refusal::NotYetValid,
        ErrorKind::InvalidAudience => Refusal::WrongAudience,
        ErrorKind::InvalidIssuer => Refusal::UnknownIssuer,
        ErrorKind::InvalidSignature
        | ErrorKind::InvalidEcdsaKey
        | ErrorKind::InvalidEddsaKey
        | ErrorKind::InvalidRsaKey(_)
        | ErrorKind::InvalidKeyFormat => Refusal::BadSignature,
        ErrorKind::InvalidAlgorithm | ErrorKind::UnsupportedAlgorithm => {
            Refusal::AlgorithmNotAllowed
        }
        ErrorKind::MissingRequiredClaim(claim) => Refusal::MissingClaim(spec(claim)),
        ErrorKind::InvalidClaimFormat(claim) => Refusal::InvalidClaim(spec(claim)),
        _ => Refusal::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jwt_shapes_are_told_from_keys() {
        assert!(looks_like("eyJh.eyJz.c2ln"));
        // Unsigned: an empty third part.
        assert!(looks_like("eyJh.eyJz."));
        for not in [
            "wg-0123456789abcdef",
            "eyJh.eyJz",
            "eyJh.eyJz.c2ln.x",
            ".eyJz.c2ln",
            "eyJh..c2ln",
            "eyJh.eyJz.c2l=",
            "eyJh.ey+z.c2ln",
        ] {
            assert!(!looks_like(not), "{not}");
        }
    }

    #[test]
    fn library_errors_become_fixed_refusals() {
        assert_eq!(refusal(&ErrorKind::ExpiredSignature), Refusal::Expired);
        assert_eq!(
            refusal(&ErrorKind::MissingRequiredClaim("aud".to_owned())),
            Refusal::MissingClaim("aud".to_owned())
        );
        // A name that is not one the gateway asked for is not repeated.
        assert_eq!(
            refusal(&ErrorKind::InvalidClaimFormat("<script>".to_owned())),
            Refusal::InvalidClaim("a registered claim".to_owned())
        );
    }
}
