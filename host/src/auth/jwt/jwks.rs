//! The issuers' signing keys (JWKS), fetched by the gateway and cached per URL.
//!
//! A set is used for [`FRESH`] after its fetch; past that, or when a token names a key id the
//! set lacks (the issuer rotated its keys), it is fetched again, but never sooner than the
//! issuer's cooldown after the last attempt: tokens with made-up key ids then cost a map
//! lookup, not a request to the issuer. While a fetch fails, a known key keeps working from a
//! set younger than [`STALE_MAX`]. One fetch per URL at a time; requests that need it wait for
//! it. The cache is bounded: [`KEYS_MAX`] keys a set, [`SOURCES_MAX`] sets.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};

use super::refusal::Refusal;

/// How long a fetched set is used before it is fetched again.
const FRESH: Duration = Duration::from_secs(600);
/// How long a set still serves the keys it has while its URL cannot be fetched.
const STALE_MAX: Duration = Duration::from_secs(3600);
/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Bytes of a JWKS document, at most.
const BODY_MAX: usize = 256 * 1024;
/// Keys kept of one set, at most.
pub const KEYS_MAX: usize = 64;
/// Sets kept, at most (one an issuer; more only across reloads that change `jwks_url`s).
const SOURCES_MAX: usize = 32;

/// One verification key of a set.
pub struct Key {
    pub key: DecodingKey,
    /// The algorithm the set says the key is for, if it says.
    pub algorithm: Option<Algorithm>,
}

/// The fetched sets, by URL.
pub struct Jwks {
    http: reqwest::Client,
    sources: Mutex<HashMap<String, Arc<Source>>>,
}

/// One URL's set and the lock its fetches take.
#[derive(Default)]
struct Source {
    set: Mutex<Option<Arc<Fetched>>>,
    /// Held while fetching; holds when the last attempt started.
    fetching: tokio::sync::Mutex<Option<Instant>>,
}

/// A set as fetched: usable keys by id (keys without an id under `""`).
struct Fetched {
    keys: HashMap<String, Arc<Key>>,
    at: Instant,
}

impl Fetched {
    /// The key `kid` names; without a `kid`, the set's only key.
    fn find(&self, kid: Option<&str>) -> Option<Arc<Key>> {
        match kid {
            Some(kid) => self.keys.get(kid).cloned(),
            None if self.keys.len() == 1 => self.keys.values().next().cloned(),
            None => None,
        }
    }
}

impl Jwks {
    pub fn new(http: reqwest::Client) -> Self {
        Self {
            http,
            sources: Mutex::default(),
        }
    }

    /// The key `kid` names in the set at `url`, fetched if the cached set is old or lacks it
    /// and the last attempt is more than `cooldown` ago.
    pub async fn key(
        &self,
        url: &str,
        kid: Option<&str>,
        cooldown: Duration,
    ) -> Result<Arc<Key>, Refusal> {
        let source = self.source(url);
        if let Some(key) = source.current(FRESH).and_then(|set| set.find(kid)) {
            return Ok(key);
        }
        let mut last = source.fetching.lock().await;
        // Another request may have fetched it while this one waited.
        let current = source.current(FRESH);
        if let Some(key) = current.as_ref().and_then(|set| set.find(kid)) {
            return Ok(key);
        }
        let stale = source.current(STALE_MAX);
        if last.is_some_and(|at| at.elapsed() < cooldown) {
            return match stale {
                Some(set) => set.find(kid).ok_or(Refusal::UnknownKey),
                None => Err(Refusal::KeysUnavailable),
            };
        }
        *last = Some(Instant::now());
        match self.fetch(url).await {
            Ok(fetched) => {
                let fetched = Arc::new(fetched);
                if let Ok(mut set) = source.set.lock() {
                    *set = Some(Arc::clone(&fetched));
                }
                fetched.find(kid).ok_or(Refusal::UnknownKey)
            }
            Err(e) => {
                tracing::warn!(jwks_url = url, "cannot fetch a JWKS: {e:#}");
                match stale.and_then(|set| set.find(kid)) {
                    Some(key) => Ok(key),
                    None => Err(Refusal::KeysUnavailable),
                }
            }
        }
    }

    fn source(&self, url: &str) -> Arc<Source> {
        let Ok(mut sources) = self.sources.lock() else {
            return Arc::default();
        };
        if !sources.contains_key(url) && sources.len() >= SOURCES_MAX {
            sources.clear();
        }
        Arc::clone(sources.entry(url.to_owned()).or_default())
    }

    async fn fetch(&self, url: &str) -> anyhow::Result<Fetched> {
        let body = bounded(self.http.get(url), FETCH_TIMEOUT, BODY_MAX).await?;
        Ok(Fetched {
            keys: usable(&serde_json::from_slice(&body)?),
            at: Instant::now(),
        })
    }
}

/// The body of a successful answer to `request` within `timeout`, at most `max` bytes: what an
/// identity provider serves (a JWKS, a discovery document, a token answer).
pub async fn bounded(
    request: reqwest::RequestBuilder,
    timeout: Duration,
    max: usize,
) -> anyhow::Result<Vec<u8>> {
    let mut response = request.timeout(timeout).send().await?.error_for_status()?;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        anyhow::ensure!(
            body.len() + chunk.len() <= max,
            "the answer is larger than {max} bytes"
        );
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

impl Source {
    /// The set, if fetched less than `max_age` ago.
    fn current(&self, max_age: Duration) -> Option<Arc<Fetched>> {
        let set = self.set.lock().ok()?;
        set.as_ref()
            .filter(|set| set.at.elapsed() < max_age)
            .map(Arc::clone)
    }
}

/// A JWKS document, each key read on its own: one key of a kind the gateway cannot read (a
/// new key type) leaves the others usable.
#[derive(serde::Deserialize)]
struct RawSet {
    keys: Vec<Box<serde_json::value::RawValue>>,
}

/// The keys of `set` that can verify a signature: asymmetric, for signing, of an algorithm
/// the gateway knows; at most [`KEYS_MAX`], the first of each id.
fn usable(set: &RawSet) -> HashMap<String, Arc<Key>> {
    let mut keys = HashMap::new();
    for raw in &set.keys {
        if keys.len() == KEYS_MAX {
            break;
        }
        let Ok(jwk) = serde_json::from_str::<Jwk>(raw.get()) else {
            continue;
        };
        let Some((id, key)) = usable_key(&jwk) else {
            continue;
        };
        keys.entry(id).or_insert_with(|| Arc::new(key));
    }
    keys
}

fn usable_key(jwk: &Jwk) -> Option<(String, Key)> {
    let common = &jwk.common;
    let for_signing = matches!(common.public_key_use, None | Some(PublicKeyUse::Signature));
    let asymmetric = matches!(
        jwk.algorithm,
        AlgorithmParameters::RSA(_)
            | AlgorithmParameters::EllipticCurve(_)
            | AlgorithmParameters::OctetKeyPair(_)
    );
    if !for_signing || !asymmetric {
        return None;
    }
    let algorithm = match common.key_algorithm {
        None => None,
        Some(named) => Some(signing_algorithm(named)?),
    };
    let key = DecodingKey::from_jwk(jwk).ok()?;
    let id = common.key_id.clone().unwrap_or_default();
    Some((id, Key { key, algorithm }))
}

/// The signing algorithm a JWK's `alg` names; `None` for an encryption algorithm or a
/// symmetric one, whose key is then not used.
fn signing_algorithm(named: KeyAlgorithm) -> Option<Algorithm> {
    Some(match named {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn set(json: &str) -> HashMap<String, Arc<Key>> {
        usable(&serde_json::from_str(json).unwrap())
    }

    const EC: &str = r#"{"kty":"EC","crv":"P-256","kid":"ec","use":"sig","alg":"ES256",
        "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
        "y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#;

    #[test]
    fn only_asymmetric_signing_keys_are_kept() {
        let keys = set(&format!(
            r#"{{"keys":[{EC},
            {{"kty":"oct","kid":"hmac","k":"c2VjcmV0"}},
            {{"kty":"future-kind","kid":"new"}},
            {{"kty":"EC","crv":"P-256","kid":"enc","use":"enc",
              "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
              "y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}}]}}"#
        ));
        assert_eq!(keys.len(), 1);
        assert_eq!(keys["ec"].algorithm, Some(Algorithm::ES256));
    }

    #[test]
    fn a_set_keeps_a_bounded_number_of_keys() {
        let many: Vec<String> = (0..KEYS_MAX + 10)
            .map(|i| EC.replace("\"kid\":\"ec\"", &format!("\"kid\":\"k{i}\"")))
            .collect();
        let keys = set(&format!(r#"{{"keys":[{}]}}"#, many.join(",")));
        assert_eq!(keys.len(), KEYS_MAX);
    }

    #[test]
    fn a_token_without_kid_uses_the_only_key() {
        let one = Fetched {
            keys: set(&format!(r#"{{"keys":[{EC}]}}"#)),
            at: Instant::now(),
        };
        assert!(one.find(None).is_some());
        assert!(one.find(Some("ec")).is_some());
        assert!(one.find(Some("other")).is_none());
    }
}
