//! A console session: who signed in, with which roles, until when, and the token a write made
//! with it must repeat (CSRF). Carried whole in a signed cookie, so any replica with the
//! session secret accepts it and none stores it; it ends at its expiry or when the browser
//! drops the cookie (sign-out).

use serde::{Deserialize, Serialize};

use super::roles::Roles;
use super::signed::{self, Purpose};

/// The session cookie's name. `__Host-` would pin it to HTTPS; the gateway also serves plain
/// HTTP on a developer's machine, so the attributes are set one by one instead.
pub const SESSION_COOKIE: &str = "wasmgate_session";
/// The header a write made with a session carries: the session's `csrf`.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// One signed-in person.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The ID token's `sub`: who the audit log names.
    pub sub: String,
    /// A name to show (`preferred_username`, `email` or `name`), if the token had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub roles: Roles,
    /// Unix seconds after which the session is refused.
    pub exp: i64,
    /// A random token a write must repeat in [`CSRF_HEADER`]: another site can make the
    /// browser send the cookie, but cannot read this to send it too.
    pub csrf: String,
}

impl Session {
    /// The session in `cookie`, if signed with `secret`, unchanged and not past its expiry.
    pub fn open(secret: &[u8], cookie: &str, now: i64) -> Option<Self> {
        let session: Self = signed::open(secret, Purpose::Session, cookie)?;
        (session.exp > now).then_some(session)
    }

    /// The cookie's value; `None` when the session is too large for a cookie (roles in very
    /// many projects).
    pub fn seal(&self, secret: &[u8]) -> Option<String> {
        signed::sign(secret, Purpose::Session, self)
    }

    /// Whether `sent` is this session's CSRF token (compared in constant time).
    pub fn csrf_matches(&self, sent: &str) -> bool {
        let (a, b) = (self.csrf.as_bytes(), sent.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax (the provider's redirect back is a top-level
/// GET from another site, which Lax lets through), Secure when the gateway is reached over
/// HTTPS; `max_age` 0 deletes it.
pub fn cookie(name: &str, value: &str, path: &str, max_age: u64, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}")
}

/// The value of cookie `name` in a `Cookie` header's pairs.
pub fn read_cookie<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}
