//! A local identity provider for the JWT tests: real RSA and EC keys (made by the `openssl`
//! command), a JWKS served on 127.0.0.1 whose keys a test can rotate or take down, counting
//! the fetches it answers, and tokens signed with those keys.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// The issuer the tests' tokens name.
pub const ISSUER: &str = "https://idp.test/realms/acme";
/// The audience the gateway is configured to accept.
pub const AUDIENCE: &str = "wasmgate";

/// A private key and the public JWK of it.
#[derive(Clone)]
pub struct SigningKey {
    pub kid: String,
    pub alg: Algorithm,
    encoding: EncodingKey,
    pub jwk: Value,
}

impl SigningKey {
    /// A new 2048-bit RSA key for RS256.
    pub fn rsa(kid: &str) -> Self {
        // jsonwebtoken reads an RSA key as PKCS#1 DER.
        let der = openssl(
            &["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
            &["pkey", "-traditional"],
        );
        Self::new(kid, Algorithm::RS256, EncodingKey::from_rsa_der(&der))
    }

    /// A new P-256 key for ES256.
    pub fn ec(kid: &str) -> Self {
        // An EC key as PKCS#8 DER (OpenSSL 3.0's `pkey` writes SEC1).
        let der = openssl(
            &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
            &["pkcs8", "-topk8", "-nocrypt"],
        );
        Self::new(kid, Algorithm::ES256, EncodingKey::from_ec_der(&der))
    }

    fn new(kid: &str, alg: Algorithm, encoding: EncodingKey) -> Self {
        let mut jwk = Jwk::from_encoding_key(&encoding, alg).unwrap();
        jwk.common.key_id = Some(kid.to_owned());
        Self {
            kid: kid.to_owned(),
            alg,
            encoding,
            jwk: serde_json::to_value(jwk).unwrap(),
        }
    }

    /// This key under another key id (a forger who knows a real kid but not its key).
    pub fn posing_as(&self, kid: &str) -> Self {
        Self {
            kid: kid.to_owned(),
            ..self.clone()
        }
    }

    /// `claims` signed with this key, `kid` in the header.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }
}

/// A DER private key from `openssl genpkey <args>`, written by `openssl <convert> -outform DER`.
/// DER, not PEM: jsonwebtoken's `use_pem` feature in the tests
/// alone would build the gateway's dependencies twice (see host/Cargo.toml).
fn openssl(args: &[&str], convert: &[&str]) -> Vec<u8> {
    let run = |command: &mut Command, what: &str| {
        let output = command.output().expect("the openssl command runs");
        assert!(
            output.status.success(),
            "openssl {what}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    };
    let dir = std::env::temp_dir().join(format!(
        "wasmgate-jwks-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let pem = dir.join("key.pem");
    run(
        Command::new("openssl")
            .arg("genpkey")
            .args(args)
            .arg("-out")
            .arg(&pem),
        "genpkey",
    );
    let der = run(
        Command::new("openssl")
            .args(convert)
            .args(["-outform", "DER", "-in"])
            .arg(&pem),
        convert[0],
    );
    std::fs::remove_dir_all(&dir).ok();
    der
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Claims that pass: of [`ISSUER`] for [`AUDIENCE`], valid for the next ten minutes, for
/// `sub`; the test adds the project and the rest.
pub fn claims(sub: &str, extra: Value) -> Value {
    let mut claims = json!({
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": sub,
        "iat": now(),
        "exp": now() + 600,
    });
    claims
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    claims
}

/// An unsigned token (`alg: none`) of `claims`.
pub fn unsigned(claims: &Value) -> String {
    use base64::Engine as _;
    let b64 = |v: &Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
    };
    format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT"})),
        b64(claims)
    )
}

/// What the JWKS server serves, and what it was asked.
#[derive(Default)]
pub struct Served {
    keys: Mutex<Vec<Value>>,
    down: AtomicBool,
    fetches: AtomicUsize,
}

/// A JWKS endpoint on 127.0.0.1.
pub struct JwksServer {
    pub url: String,
    served: Arc<Served>,
}

impl JwksServer {
    /// Serves the public keys of `keys` at `/jwks.json`.
    pub async fn start(keys: &[&SigningKey]) -> Self {
        let served = Arc::new(Served::default());
        *served.keys.lock().await = keys.iter().map(|k| k.jwk.clone()).collect();
        let app = axum::Router::new()
            .route("/jwks.json", axum::routing::get(jwks))
            .with_state(Arc::clone(&served));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url: format!("http://{addr}/jwks.json"),
            served,
        }
    }

    /// Serves `keys` from now on (a rotation).
    pub async fn rotate(&self, keys: &[&SigningKey]) {
        *self.served.keys.lock().await = keys.iter().map(|k| k.jwk.clone()).collect();
    }

    /// Answers 503 from now on.
    pub fn take_down(&self) {
        self.served.down.store(true, Ordering::SeqCst);
    }

    /// Fetches answered (or refused while down).
    pub fn fetches(&self) -> usize {
        self.served.fetches.load(Ordering::SeqCst)
    }
}

async fn jwks(State(served): State<Arc<Served>>) -> axum::response::Response {
    served.fetches.fetch_add(1, Ordering::SeqCst);
    if served.down.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let keys = served.keys.lock().await.clone();
    axum::Json(json!({ "keys": keys })).into_response()
}

/// The `auth.jwt` entry trusting [`ISSUER`] with its keys at `jwks_url`: the project from the
/// `project` claim, the user from `email`, limits from `models` and `rpm`; the JWKS fetched
/// again for an unknown key id at most once a second.
pub fn issuer_yaml(jwks_url: &str) -> String {
    format!(
        "auth:\n  required: true\n  jwt:\n    - issuer: {ISSUER}\n      jwks_url: {jwks_url}\n      \
         audiences: [{AUDIENCE}]\n      algorithms: [RS256, ES256]\n      clock_skew: 5\n      \
         jwks_cooldown: 1\n      claims: {{ user: email, models: models, \
         requests_per_minute: rpm }}\n"
    )
}
