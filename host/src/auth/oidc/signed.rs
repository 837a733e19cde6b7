//! Values the gateway hands the browser and takes back unchanged: JSON, base64url, then an
//! HMAC-SHA256 of it under the session secret. Every replica holding the secret checks them
//! without storing anything; each kind of value signs under its own purpose, so a value made
//! for one (the login in progress) never passes for another (a session).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::Sha256;

/// Bytes of a signed value, at most: a cookie must stay under browsers' 4 KiB.
pub const SIGNED_MAX: usize = 3800;

/// What a signed value is for; part of what is signed.
#[derive(Clone, Copy)]
pub enum Purpose {
    Login,
    Session,
}

impl Purpose {
    fn name(self) -> &'static [u8] {
        match self {
            Self::Login => b"wasmgate-oidc-login",
            Self::Session => b"wasmgate-session",
        }
    }
}

fn mac(secret: &[u8], purpose: Purpose, payload: &str) -> Option<Hmac<Sha256>> {
    // HMAC takes a key of any length: this does not fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).ok()?;
    mac.update(purpose.name());
    mac.update(b".");
    mac.update(payload.as_bytes());
    Some(mac)
}

/// `value` signed for `purpose`; `None` when it is too large for a cookie.
pub fn sign<T: Serialize>(secret: &[u8], purpose: Purpose, value: &T) -> Option<String> {
    let json = serde_json::to_vec(value).ok()?;
    let payload = URL_SAFE_NO_PAD.encode(json);
    let tag = mac(secret, purpose, &payload)?.finalize().into_bytes();
    let signed = format!("{payload}.{}", URL_SAFE_NO_PAD.encode(tag));
    (signed.len() <= SIGNED_MAX).then_some(signed)
}

/// The value `signed` holds, if it was signed for `purpose` with `secret` and is unchanged.
pub fn open<T: DeserializeOwned>(secret: &[u8], purpose: Purpose, signed: &str) -> Option<T> {
    if signed.len() > SIGNED_MAX {
        return None;
    }
    let (payload, tag) = signed.split_once('.')?;
    let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
    // `verify_slice` compares in constant time.
    mac(secret, purpose, payload)?.verify_slice(&tag).ok()?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn a_value_opens_only_unchanged_with_its_secret_and_purpose() {
        let signed = sign(SECRET, Purpose::Session, &vec!["a", "b"]).unwrap();
        let opened: Vec<String> = open(SECRET, Purpose::Session, &signed).unwrap();
        assert_eq!(opened, ["a", "b"]);
        assert!(
            open::<Vec<String>>(
                b"another secret of enough bytes!!",
                Purpose::Session,
                &signed
            )
            .is_none()
        );
        assert!(open::<Vec<String>>(SECRET, Purpose::Login, &signed).is_none());
        let (payload, tag) = signed.split_once('.').unwrap();
        let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(br#"["admin"]"#));
        assert!(open::<Vec<String>>(SECRET, Purpose::Session, &forged).is_none());
        assert!(open::<Vec<String>>(SECRET, Purpose::Session, payload).is_none());
    }
}
