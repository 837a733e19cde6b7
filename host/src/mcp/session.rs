//! `/mcp` sessions that any replica can serve: the session id carries what a replica needs (the
//! key it belongs to, the protocol version, when it ends), signed with HMAC-SHA256, so no replica
//! keeps sessions in memory and no load balancer needs to be sticky.
//!
//! An id is `<payload>.<mac>`, both base64url without padding; the payload is a small JSON
//! object. A forged, altered or expired id, or one presented with another key, is "not found"
//! (404), on which a client starts a new session as the transport says.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What a session id carries.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Session {
    /// The API key's id (`""` for none).
    #[serde(rename = "k")]
    pub key_id: String,
    /// The protocol version agreed in `initialize`.
    #[serde(rename = "v")]
    pub protocol: String,
    /// When it stops being valid, in seconds since the epoch.
    #[serde(rename = "e")]
    pub expires_s: u64,
    /// Random, so that two sessions of one key started in the same second differ.
    #[serde(rename = "n")]
    pub nonce: String,
}

/// Bytes of a session id, at most: anything longer is not one of ours.
const ID_MAX: usize = 512;

/// Signs and checks session ids.
pub struct Signer {
    secret: Vec<u8>,
}

impl Signer {
    /// A signer with `secret`; a random one of its own when `None` (sessions then live only in
    /// this process).
    pub fn new(secret: Option<&[u8]>) -> Self {
        let secret = match secret {
            Some(s) => s.to_vec(),
            None => (0..2)
                .flat_map(|_| uuid::Uuid::new_v4().into_bytes())
                .collect(),
        };
        Self { secret }
    }

    /// HMAC takes a key of any length, so this is never `None` in practice.
    fn mac(&self, payload: &str) -> Option<Hmac<Sha256>> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.secret).ok()?;
        mac.update(payload.as_bytes());
        Some(mac)
    }

    /// The id of `session`.
    pub fn issue(&self, session: &Session) -> String {
        let json = serde_json::to_vec(session).unwrap_or_default();
        let payload = URL_SAFE_NO_PAD.encode(json);
        let tag = self
            .mac(&payload)
            .map(|mac| mac.finalize().into_bytes().to_vec())
            .unwrap_or_default();
        format!("{payload}.{}", URL_SAFE_NO_PAD.encode(tag))
    }

    /// The session `id` names, if it is ours, unaltered, and valid at `now_s`.
    pub fn check(&self, id: &str, now_s: u64) -> Option<Session> {
        if id.len() > ID_MAX {
            return None;
        }
        let (payload, tag) = id.split_once('.')?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        // Constant-time comparison, so that timing tells nothing of the right tag.
        self.mac(payload)?.verify_slice(&tag).ok()?;
        let json = URL_SAFE_NO_PAD.decode(payload).ok()?;
        let session: Session = serde_json::from_slice(&json).ok()?;
        (now_s < session.expires_s).then_some(session)
    }
}

/// A new session for `key_id`, valid for `ttl_s` from `now_s`.
pub fn new_session(key_id: &str, protocol: &str, now_s: u64, ttl_s: u64) -> Session {
    Session {
        key_id: key_id.to_owned(),
        protocol: protocol.to_owned(),
        expires_s: now_s.saturating_add(ttl_s),
        nonce: uuid::Uuid::new_v4().simple().to_string()[..12].to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_id_is_served_by_any_signer_with_the_secret_until_it_expires() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let (a, b) = (Signer::new(Some(secret)), Signer::new(Some(secret)));
        let session = new_session("key_1", "2025-11-25", 100, 50);
        let id = a.issue(&session);
        assert_eq!(b.check(&id, 120), Some(session));
        assert_eq!(b.check(&id, 150), None, "expired");
        assert_eq!(Signer::new(None).check(&id, 120), None, "another secret");
    }

    #[test]
    fn altered_ids_are_refused() {
        let signer = Signer::new(None);
        let id = signer.issue(&new_session("key_1", "2025-11-25", 100, 50));
        let (payload, tag) = id.split_once('.').unwrap();
        let forged = URL_SAFE_NO_PAD
            .encode(br#"{"k":"key_2","v":"2025-11-25","e":999999,"n":"x"}"#.as_slice());
        assert_eq!(signer.check(&format!("{forged}.{tag}"), 120), None);
        assert_eq!(signer.check(&format!("{payload}.AAAA"), 120), None);
        assert_eq!(signer.check("garbage", 120), None);
        assert_eq!(signer.check(&"a".repeat(600), 120), None);
    }
}
