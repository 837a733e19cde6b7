//! `auth:`: whether `/v1/*` needs one of the gateway's own API keys.

use schemars::JsonSchema;
use serde::Deserialize;

/// `auth:`: whether `/v1/*` needs one of the gateway's own API keys.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// Refuse `/v1/*` requests without a valid key (401) or with another project's (403).
    /// Off by default, as suits a gateway on a developer's machine.
    #[serde(default)]
    pub required: bool,
}
