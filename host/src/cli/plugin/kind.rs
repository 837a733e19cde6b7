//! The kind of plugin a project builds, and the WIT world it names.

use serde::{Deserialize, Serialize};

/// The kind of plugin: the WIT world it is built against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Router,
    Limiter,
    Provider,
    /// A content policy on requests and answers.
    Guard,
    /// What of a request goes into the response cache's key.
    #[serde(rename = "cache-key")]
    #[value(name = "cache-key")]
    CacheKey,
}

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Router => "router",
            Kind::Limiter => "limiter",
            Kind::Provider => "provider",
            Kind::Guard => "guard",
            Kind::CacheKey => "cache-key",
        }
    }

    pub(super) fn world(self) -> String {
        format!("{}-plugin", self.name())
    }
}
