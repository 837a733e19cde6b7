//! `auth:`: whether `/v1/*` needs a caller to prove who it is, and the JWT issuers whose tokens
//! the gateway accepts beside its own API keys.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::config_error::ConfigError;

/// `auth:`: whether `/v1/*` needs one of the gateway's own API keys (or a JWT of an issuer in
/// `jwt`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// Refuse `/v1/*` requests without a valid key (401) or with another project's (403).
    /// Off by default, as suits a gateway on a developer's machine.
    #[serde(default)]
    pub required: bool,
    /// Identity providers whose JWTs clients may present as their bearer token, each verified
    /// against its issuer's JWKS; their claims name the project, the user and the limits.
    /// A bearer token of three base64url parts goes to these issuers; `wg-` keys keep working.
    #[serde(default)]
    pub jwt: Vec<JwtIssuer>,
}

/// One identity provider whose JWTs the gateway accepts.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JwtIssuer {
    /// The `iss` its tokens carry, exactly (e.g. `https://login.example.com/realms/acme`).
    #[schemars(extend("examples" = ["https://login.example.com/realms/acme"]))]
    pub issuer: String,
    /// Where its signing keys are published (JWKS, RFC 7517): fetched by the gateway, cached,
    /// and fetched again when a token names a key id the cached set lacks.
    #[schemars(extend("examples" = ["https://login.example.com/realms/acme/protocol/openid-connect/certs"]))]
    pub jwks_url: String,
    /// The `aud` values accepted: a token must name at least one of them.
    #[schemars(extend("examples" = [["wasmgate"]]))]
    pub audiences: Vec<String>,
    /// The signing algorithms accepted. Asymmetric only: the gateway holds no secret that
    /// could also mint tokens, and `none` is never accepted.
    #[serde(default = "default_algorithms")]
    pub algorithms: Vec<JwtAlgorithm>,
    /// Seconds of clock difference tolerated on `exp` and `nbf`.
    #[serde(default = "default_clock_skew")]
    pub clock_skew: u64,
    /// Seconds at least between two fetches of `jwks_url` for unknown key ids, so that tokens
    /// with made-up key ids cannot make the gateway hammer the issuer.
    #[serde(default = "default_jwks_cooldown")]
    pub jwks_cooldown: u64,
    /// The project of tokens whose project claim is absent.
    #[serde(default)]
    #[schemars(extend("examples" = ["platform"]))]
    pub project: Option<String>,
    /// The period of the budget a token's `budget_usd` claim sets.
    #[serde(default)]
    pub budget_period: JwtBudgetPeriod,
    /// Which claim carries what.
    #[serde(default)]
    pub claims: JwtClaims,
}

/// Signing algorithms a JWT issuer may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum JwtAlgorithm {
    RS256,
    RS384,
    RS512,
    PS256,
    PS384,
    PS512,
    ES256,
    ES384,
    EdDSA,
}

/// The window of a budget set by a token's claim.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum JwtBudgetPeriod {
    Day,
    #[default]
    Month,
    Total,
}

/// The names of the claims that carry the project, the user and the key-like limits of a token.
/// Top-level claims only; a limit whose claim is not named, or absent from a token, is no limit.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JwtClaims {
    /// A string: the project its usage goes to (else the issuer's `project`).
    #[serde(default = "default_project_claim")]
    pub project: String,
    /// A string: the user its usage is recorded under, in place of the body's.
    #[serde(default = "default_user_claim")]
    pub user: String,
    /// A list of model names or patterns (`*` for any run of characters) it may use.
    #[serde(default)]
    #[schemars(extend("examples" = ["wg_models"]))]
    pub models: Option<String>,
    /// A list of guard names (the config's `guards:` entries) applied to its requests.
    #[serde(default)]
    #[schemars(extend("examples" = ["wg_guards"]))]
    pub guards: Option<String>,
    /// A whole number: its requests per minute.
    #[serde(default)]
    #[schemars(extend("examples" = ["wg_rpm"]))]
    pub requests_per_minute: Option<String>,
    /// A whole number: its tokens per minute.
    #[serde(default)]
    #[schemars(extend("examples" = ["wg_tpm"]))]
    pub tokens_per_minute: Option<String>,
    /// A number: its budget in USD per `budget_period`.
    #[serde(default)]
    #[schemars(extend("examples" = ["wg_budget_usd"]))]
    pub budget_usd: Option<String>,
}

impl Default for JwtClaims {
    fn default() -> Self {
        Self {
            project: default_project_claim(),
            user: default_user_claim(),
            models: None,
            guards: None,
            requests_per_minute: None,
            tokens_per_minute: None,
            budget_usd: None,
        }
    }
}

fn default_algorithms() -> Vec<JwtAlgorithm> {
    vec![JwtAlgorithm::RS256, JwtAlgorithm::ES256]
}

fn default_clock_skew() -> u64 {
    60
}

fn default_jwks_cooldown() -> u64 {
    30
}

fn default_project_claim() -> String {
    "project".to_owned()
}

fn default_user_claim() -> String {
    "sub".to_owned()
}

/// Issuers at most: each is a JWKS the gateway fetches and keeps.
pub const ISSUERS_MAX: usize = 16;

/// Checks `auth.jwt`, naming the key at fault.
pub(super) fn validate(auth: &AuthConfig) -> Result<(), ConfigError> {
    if auth.jwt.len() > ISSUERS_MAX {
        return Err(ConfigError::key(
            "auth.jwt",
            format!("at most {ISSUERS_MAX} issuers"),
        ));
    }
    for (i, entry) in auth.jwt.iter().enumerate() {
        let at = |key: &str| format!("auth.jwt[{i}].{key}");
        if entry.issuer.is_empty() {
            return Err(ConfigError::key(at("issuer"), "must not be empty"));
        }
        if auth.jwt[..i].iter().any(|e| e.issuer == entry.issuer) {
            return Err(ConfigError::key(
                at("issuer"),
                "names an issuer listed before it: list each issuer once",
            ));
        }
        match reqwest::Url::parse(&entry.jwks_url) {
            Ok(url) if matches!(url.scheme(), "https" | "http") && url.host().is_some() => {}
            _ => {
                return Err(ConfigError::key(
                    at("jwks_url"),
                    "must be an http:// or https:// URL",
                ));
            }
        }
        if entry.audiences.is_empty() || entry.audiences.iter().any(String::is_empty) {
            return Err(ConfigError::key(
                at("audiences"),
                "must list at least one audience, none empty (without one, any token of the \
                 issuer for any application would pass)",
            ));
        }
        if entry.algorithms.is_empty() {
            return Err(ConfigError::key(
                at("algorithms"),
                "must list at least one algorithm",
            ));
        }
        if entry.clock_skew > 600 {
            return Err(ConfigError::key(at("clock_skew"), "at most 600 seconds"));
        }
        if !(1..=3600).contains(&entry.jwks_cooldown) {
            return Err(ConfigError::key(
                at("jwks_cooldown"),
                "between 1 and 3600 seconds",
            ));
        }
        if let Some(project) = &entry.project {
            crate::ledger::keys::check_project(project).map_err(|rule| {
                ConfigError::key(at("project"), format!("a project id is {rule}"))
            })?;
        }
        let claims = &entry.claims;
        let named = [
            ("project", Some(&claims.project)),
            ("user", Some(&claims.user)),
            ("models", claims.models.as_ref()),
            ("guards", claims.guards.as_ref()),
            ("requests_per_minute", claims.requests_per_minute.as_ref()),
            ("tokens_per_minute", claims.tokens_per_minute.as_ref()),
            ("budget_usd", claims.budget_usd.as_ref()),
        ];
        for (key, claim) in named {
            if let Some(claim) = claim
                && (claim.is_empty() || claim.len() > 128)
            {
                return Err(ConfigError::key(
                    at(&format!("claims.{key}")),
                    "a claim name of 1 to 128 bytes",
                ));
            }
        }
    }
    Ok(())
}
