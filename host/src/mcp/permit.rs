//! Who may list and call what: the project's rule (`mcp.projects`) and the key's own `tools`,
//! both `<server>/<tool>` patterns; a tool must pass both. The same check filters listings and
//! admits calls, so a tool a key may not call is one it never sees.

use crate::auth::Caller;
use crate::config::mcp::McpConfig;
use crate::ledger::keys::tools_match;

/// What one caller may use.
pub struct Permit {
    /// The project's patterns; `None` when the project has no rule (every tool).
    project: Option<Vec<String>>,
    /// The key's patterns; empty allows every tool the project allows.
    key: Vec<String>,
}

impl Permit {
    pub fn of(caller: &Caller, config: &McpConfig) -> Self {
        Self {
            project: config
                .projects
                .get(&caller.project)
                .map(|p| p.tools.clone()),
            key: caller.limits.tools.clone(),
        }
    }

    /// Whether the tool (or prompt) `name` of `server` may be listed and used.
    pub fn allows(&self, server: &str, name: &str) -> bool {
        self.project
            .as_ref()
            .is_none_or(|p| tools_match(p, server, name))
            && (self.key.is_empty() || tools_match(&self.key, server, name))
    }

    /// Whether the server's resources may be listed and read: only by a caller allowed every
    /// tool of it (`<server>/*`), since a resource can hold what a tool would return.
    pub fn allows_resources(&self, server: &str) -> bool {
        self.allows(server, "*")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::mcp::McpProject;
    use crate::ledger::KeyLimits;

    fn caller(project: &str, tools: &[&str]) -> Caller {
        Caller {
            project: project.to_owned(),
            key_id: Some("key_1".to_owned()),
            limits: KeyLimits {
                tools: tools.iter().map(|t| (*t).to_owned()).collect(),
                ..KeyLimits::default()
            },
            user: None,
        }
    }

    #[test]
    fn a_tool_must_pass_the_project_and_the_key() {
        let mut config = McpConfig::default();
        config.projects.insert(
            "support".to_owned(),
            McpProject {
                tools: vec!["search/*".to_owned(), "files/read_*".to_owned()],
            },
        );
        let open = Permit::of(&caller("other", &[]), &config);
        assert!(open.allows("files", "delete") && open.allows_resources("files"));
        let project = Permit::of(&caller("support", &[]), &config);
        assert!(project.allows("files", "read_file"));
        assert!(!project.allows("files", "delete"));
        assert!(!project.allows_resources("files") && project.allows_resources("search"));
        let key = Permit::of(&caller("support", &["files/*"]), &config);
        assert!(key.allows("files", "read_file"));
        assert!(
            !key.allows("search", "query"),
            "the key narrows the project"
        );
        assert!(
            !key.allows("files", "delete"),
            "and the project narrows the key"
        );
    }
}
