//! `console:`: how people sign in to the console and the admin API besides admin keys: OpenID
//! Connect against the company's identity provider, its claims mapped to roles.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Deserialize;

use super::config_error::ConfigError;
use crate::secret::Secret;

/// Bytes of a session secret, at least: an HMAC-SHA256 key no one can guess.
pub const SESSION_SECRET_MIN: usize = 32;
/// Group names per role, and projects, at most.
const NAMES_MAX: usize = 256;

/// `console:`: sign-in to the console and the admin API.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsoleConfig {
    /// Sign-in through an OpenID Connect provider (authorization code with PKCE); without it,
    /// the console takes keys only.
    #[serde(default)]
    pub oidc: Option<OidcConfig>,
}

/// One OpenID Connect provider people sign in with.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The provider's issuer, exactly as its ID tokens' `iss` and its discovery document say;
    /// `<issuer>/.well-known/openid-configuration` is read for its endpoints.
    #[schemars(extend("examples" = ["https://login.example.com/realms/acme"]))]
    pub issuer: String,
    /// The client id the provider gave the gateway; ID tokens must name it in `aud`.
    #[schemars(extend("examples" = ["wasmgate-console"]))]
    pub client_id: String,
    /// The client's secret, sent to the token endpoint (HTTP Basic); write it as `${VAR}`.
    #[schemars(extend("examples" = ["${OIDC_CLIENT_SECRET}"]))]
    pub client_secret: Secret,
    /// This gateway's `/console/callback` as the provider knows it (registered there). An
    /// `https://` one makes the session cookie `Secure`.
    #[schemars(extend("examples" = ["https://gateway.example.com/console/callback"]))]
    pub redirect_url: String,
    /// The scopes asked for; must include `openid`.
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// The key that signs session cookies (HMAC-SHA256), at least 32 bytes; the same on every
    /// replica, so that any of them accepts a session another made. Write it as `${VAR}`.
    #[schemars(extend("examples" = ["${CONSOLE_SESSION_SECRET}"]))]
    pub session_secret: Secret,
    /// Seconds a session lasts from sign-in; then the user signs in again.
    #[serde(default = "default_session_ttl_s")]
    #[schemars(range(min = 60, max = 604800))]
    pub session_ttl_s: u64,
    /// Seconds of clock difference tolerated on the ID token's `exp` and `iat`.
    #[serde(default = "default_clock_skew")]
    #[schemars(range(max = 600))]
    pub clock_skew: u64,
    /// Which claim of the ID token carries the user's groups or roles, and what each grants.
    pub roles: RoleMapping,
}

/// Roles from one claim of the ID token: a string or a list of strings, each value looked up
/// here. A user holds every role any of its values grants; a user with none may not sign in.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleMapping {
    /// The claim's name; a dotted path reaches into objects (Keycloak's `realm_access.roles`).
    #[serde(default = "default_role_claim")]
    #[schemars(extend("examples" = ["groups"]))]
    pub claim: String,
    /// Values that make a user an admin: everything, every project.
    #[serde(default)]
    #[schemars(extend("examples" = [["wasmgate-admins"]]))]
    pub admin: Vec<String>,
    /// Per project id: the values that make a user its admin (its keys and budgets) or its
    /// viewer (its usage).
    #[serde(default)]
    #[schemars(extend("examples" = [{"acme": {"admin": ["acme-leads"], "viewer": ["acme-devs"]}}]))]
    pub projects: IndexMap<String, ProjectRoles>,
}

/// The claim values that grant roles in one project.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectRoles {
    /// Values that make a user this project's admin.
    #[serde(default)]
    pub admin: Vec<String>,
    /// Values that make a user this project's viewer.
    #[serde(default)]
    pub viewer: Vec<String>,
}

fn default_scopes() -> Vec<String> {
    ["openid", "profile", "email"].map(str::to_owned).to_vec()
}

fn default_session_ttl_s() -> u64 {
    8 * 3600
}

fn default_clock_skew() -> u64 {
    60
}

fn default_role_claim() -> String {
    "groups".to_owned()
}

impl OidcConfig {
    /// Whether the session cookie must only travel over HTTPS.
    pub fn secure_cookie(&self) -> bool {
        self.redirect_url.starts_with("https://")
    }
}

impl ConsoleConfig {
    pub fn check(&self) -> Result<(), ConfigError> {
        let Some(oidc) = &self.oidc else {
            return Ok(());
        };
        let at = |key: &str| format!("console.oidc.{key}");
        let http_url = |key: &str, text: &str| match reqwest::Url::parse(text) {
            Ok(url)
                if matches!(url.scheme(), "http" | "https")
                    && url.host().is_some()
                    && url.fragment().is_none() =>
            {
                Ok(())
            }
            _ => Err(ConfigError::key(
                at(key),
                "must be an http:// or https:// URL without a fragment",
            )),
        };
        http_url("issuer", &oidc.issuer)?;
        http_url("redirect_url", &oidc.redirect_url)?;
        if oidc.client_id.is_empty() || oidc.client_id.len() > 256 {
            return Err(ConfigError::key(at("client_id"), "1 to 256 bytes"));
        }
        if oidc.client_secret.expose().is_empty() {
            return Err(ConfigError::key(at("client_secret"), "must not be empty"));
        }
        if !oidc.scopes.iter().any(|s| s == "openid")
            || oidc
                .scopes
                .iter()
                .any(|s| s.is_empty() || !s.bytes().all(|b| b.is_ascii_graphic() && b != b'"'))
        {
            return Err(ConfigError::key(
                at("scopes"),
                "must include `openid`, each scope printable ASCII without spaces",
            ));
        }
        if oidc.session_secret.expose().len() < SESSION_SECRET_MIN {
            return Err(ConfigError::key(
                at("session_secret"),
                format!("at least {SESSION_SECRET_MIN} bytes (e.g. `openssl rand -hex 32`)"),
            ));
        }
        if !(60..=604_800).contains(&oidc.session_ttl_s) {
            return Err(ConfigError::key(
                at("session_ttl_s"),
                "from 60 seconds to 604800 (a week)",
            ));
        }
        if oidc.clock_skew > 600 {
            return Err(ConfigError::key(at("clock_skew"), "at most 600 seconds"));
        }
        let roles = &oidc.roles;
        if roles.claim.is_empty()
            || roles.claim.len() > 128
            || roles.claim.split('.').any(str::is_empty)
        {
            return Err(ConfigError::key(
                at("roles.claim"),
                "a claim name of 1 to 128 bytes (dots between non-empty names)",
            ));
        }
        let values = |key: String, names: &[String]| {
            if names.len() > NAMES_MAX || names.iter().any(|n| n.is_empty() || n.len() > 256) {
                return Err(ConfigError::key(
                    key,
                    format!("at most {NAMES_MAX} values, each of 1 to 256 bytes"),
                ));
            }
            Ok(())
        };
        values(at("roles.admin"), &roles.admin)?;
        if roles.projects.len() > NAMES_MAX {
            return Err(ConfigError::key(
                at("roles.projects"),
                format!("at most {NAMES_MAX} projects"),
            ));
        }
        for (project, granted) in &roles.projects {
            crate::ledger::keys::check_project(project).map_err(|rule| {
                ConfigError::key(
                    at(&format!("roles.projects.{project}")),
                    format!("a project id is {rule}"),
                )
            })?;
            values(
                at(&format!("roles.projects.{project}.admin")),
                &granted.admin,
            )?;
            values(
                at(&format!("roles.projects.{project}.viewer")),
                &granted.viewer,
            )?;
        }
        if roles.admin.is_empty()
            && roles
                .projects
                .values()
                .all(|p| p.admin.is_empty() && p.viewer.is_empty())
        {
            return Err(ConfigError::key(
                at("roles"),
                "grants no role: no one could sign in (list values under `admin` or a project)",
            ));
        }
        Ok(())
    }
}
