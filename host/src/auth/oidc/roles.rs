//! What a signed-in person may do: the roles `console.oidc.roles` grants for the values of one
//! claim of their ID token.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::console::RoleMapping;

/// A role in one project.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProjectRole {
    /// Reads the project's usage.
    Viewer,
    /// Reads its usage, and manages its keys and budgets.
    ProjectAdmin,
}

/// Every role of one person.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roles {
    /// Everything, every project.
    #[serde(default)]
    pub admin: bool,
    /// The strongest role granted in each project.
    #[serde(default)]
    pub projects: BTreeMap<String, ProjectRole>,
}

impl Roles {
    /// Whether no role is granted at all.
    pub fn none(&self) -> bool {
        !self.admin && self.projects.is_empty()
    }

    /// Whether these roles manage `project`'s keys and budgets.
    pub fn manages(&self, project: &str) -> bool {
        self.admin || self.projects.get(project) == Some(&ProjectRole::ProjectAdmin)
    }

    /// Whether these roles read `project`'s usage.
    pub fn reads(&self, project: &str) -> bool {
        self.admin || self.projects.contains_key(project)
    }

    /// The projects these roles manage (for an admin, all of them: `None`).
    pub fn managed(&self) -> Option<Vec<String>> {
        (!self.admin).then(|| {
            (self.projects.iter())
                .filter(|(_, role)| **role == ProjectRole::ProjectAdmin)
                .map(|(project, _)| project.clone())
                .collect()
        })
    }
}

/// The roles `mapping` grants for the claims of an ID token. A claim of the wrong type grants
/// nothing (as if absent).
pub fn granted(mapping: &RoleMapping, claims: &Map<String, Value>) -> Roles {
    let mut at = claims.get(mapping.claim.split('.').next().unwrap_or_default());
    for name in mapping.claim.split('.').skip(1) {
        at = at.and_then(|v| v.get(name));
    }
    let values: Vec<&str> = match at {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let has = |names: &[String]| names.iter().any(|n| values.contains(&n.as_str()));
    let mut roles = Roles {
        admin: has(&mapping.admin),
        projects: BTreeMap::new(),
    };
    for (project, granted) in &mapping.projects {
        let role = if has(&granted.admin) {
            ProjectRole::ProjectAdmin
        } else if has(&granted.viewer) {
            ProjectRole::Viewer
        } else {
            continue;
        };
        roles.projects.insert(project.clone(), role);
    }
    roles
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn mapping(claim: &str) -> RoleMapping {
        serde_yaml::from_str(&format!(
            "claim: {claim}\nadmin: [ops]\nprojects:\n  acme: {{admin: [acme-leads], viewer: [acme-devs]}}\n  \
             beta: {{viewer: [beta-devs]}}\n"
        ))
        .unwrap()
    }

    fn claims(json: Value) -> Map<String, Value> {
        json.as_object().unwrap().clone()
    }

    #[test]
    fn each_value_grants_its_role_and_the_strongest_wins() {
        let roles = granted(
            &mapping("groups"),
            &claims(serde_json::json!({"groups": ["acme-devs", "acme-leads", "beta-devs", 7]})),
        );
        assert!(!roles.admin);
        assert!(roles.manages("acme") && !roles.manages("beta") && roles.reads("beta"));
        assert!(!roles.reads("gamma"));
        assert_eq!(roles.managed().unwrap(), ["acme"]);
    }

    #[test]
    fn a_dotted_claim_reaches_into_objects_and_a_string_is_one_value() {
        let keycloak = claims(serde_json::json!({"realm_access": {"roles": ["ops"]}}));
        assert!(granted(&mapping("realm_access.roles"), &keycloak).admin);
        let one = claims(serde_json::json!({"role": "beta-devs"}));
        assert!(granted(&mapping("role"), &one).reads("beta"));
        let wrong_type = claims(serde_json::json!({"groups": {"ops": true}}));
        assert!(granted(&mapping("groups"), &wrong_type).none());
    }
}
