//! The `passthrough:` section of the config: where the pass-through routes are mounted
//! (`<prefix>/<entry>/<path>`), and what callers whose key names no pass-through patterns of
//! its own may reach.

use schemars::JsonSchema;

use super::config_error::ConfigError;

/// Pass-through routes: a request to `<prefix>/<entry>/<path>` goes to the provider entry's
/// base URL joined with `<path>`, with the entry's key added by its plugin, and is limited and
/// recorded like any other. Nothing is reachable unless `allow` or the caller's key says so.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PassthroughConfig {
    /// The path the routes are mounted under: `/` and one or more segments of lower-case
    /// letters, digits, `-` and `_`, outside the gateway's own paths (`/v1`, `/admin`, ...).
    #[serde(default = "default_prefix")]
    #[schemars(extend("examples" = ["/passthrough"]))]
    pub prefix: String,
    /// `<entry>/<path>` patterns (`*` stands for any run of characters, `/` included) that
    /// callers may reach when their key has no pass-through patterns of its own (and anonymous
    /// callers on an open gateway). Empty, the default: only keys given patterns may pass.
    #[serde(default)]
    #[schemars(extend("examples" = [["openai/files*", "openai/vector_stores*"]]))]
    pub allow: Vec<String>,
}

impl Default for PassthroughConfig {
    fn default() -> Self {
        Self {
            prefix: default_prefix(),
            allow: Vec::new(),
        }
    }
}

fn default_prefix() -> String {
    "/passthrough".to_owned()
}

/// Paths the gateway serves itself: the prefix may be none of them, nor under one.
const RESERVED: [&str; 7] = [
    "/v1", "/admin", "/usage", "/health", "/metrics", "/ui", "/v1beta",
];

impl PassthroughConfig {
    /// The checks serde cannot make, with the key at fault.
    pub fn check(&self) -> Result<(), ConfigError> {
        let prefix = self.prefix.as_str();
        let well_formed = prefix.len() <= 64
            && prefix.strip_prefix('/').is_some_and(|rest| {
                rest.split('/').all(|segment| {
                    !segment.is_empty()
                        && segment.bytes().all(|b| {
                            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_'
                        })
                })
            });
        if !well_formed {
            return Err(ConfigError::key(
                "passthrough.prefix",
                "must be `/` and segments of lower-case letters, digits, `-` and `_`, at most 64 \
                 bytes",
            ));
        }
        if let Some(reserved) = RESERVED
            .iter()
            .find(|r| prefix == **r || prefix.starts_with(&format!("{r}/")))
        {
            return Err(ConfigError::key(
                "passthrough.prefix",
                format!("`{reserved}` is the gateway's own"),
            ));
        }
        for (i, pattern) in self.allow.iter().enumerate() {
            crate::ledger::check_passthrough_pattern(pattern)
                .map_err(|rule| ConfigError::key(format!("passthrough.allow[{i}]"), rule))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_is_checked() {
        let with = |prefix: &str| PassthroughConfig {
            prefix: prefix.to_owned(),
            allow: Vec::new(),
        };
        assert!(with("/passthrough").check().is_ok());
        assert!(with("/p/raw").check().is_ok());
        for bad in [
            "passthrough",
            "/",
            "/v1",
            "/v1/raw",
            "/admin",
            "/P",
            "/a//b",
            "/a/",
        ] {
            assert!(with(bad).check().is_err(), "{bad}");
        }
    }
}
