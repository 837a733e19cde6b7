//! The `conditional` router: targets chosen by rules on who sent the request.
//!
//! Options: `rules: [{when: {...}, targets: [<target ids>]}]` and `default: [<target ids>]`. The
//! first rule whose every condition holds gives the targets to try, in its order (open circuits
//! moved last); with no such rule, `default` does, and without a default the request fails.
//! Conditions, each left out or empty meaning "any": `user_tags_any` (the user has one of these
//! tags), `user_tags_all` (all of them), `user_id`, `project` (one of these), and `metadata`
//! (`{key: value}`, each pair in the request's metadata).

use std::collections::BTreeMap;

use serde::Deserialize;
use wasmgate_plugin_sdk::routing::{indexed, open_last};
use wasmgate_plugin_sdk::{ConfigError, RouteRequest, Router, Target};

struct Conditional;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    #[serde(default)]
    rules: Vec<Rule>,
    default: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rule {
    #[serde(default)]
    when: When,
    targets: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct When {
    user_tags_any: Vec<String>,
    user_tags_all: Vec<String>,
    user_id: Vec<String>,
    project: Vec<String>,
    metadata: BTreeMap<String, String>,
}

impl When {
    fn holds(&self, request: &RouteRequest) -> bool {
        let has_tag = |tag: &String| request.user_tags.contains(tag);
        let has_pair = |(key, value): (&String, &String)| {
            let mut pairs = request.metadata.iter();
            pairs.any(|(k, v)| k == key && v == value)
        };
        (self.user_tags_any.is_empty() || self.user_tags_any.iter().any(has_tag))
            && self.user_tags_all.iter().all(has_tag)
            && (self.user_id.is_empty()
                || request
                    .user_id
                    .as_ref()
                    .is_some_and(|id| self.user_id.contains(id)))
            && (self.project.is_empty() || self.project.contains(&request.project))
            && self.metadata.iter().all(has_pair)
    }
}

/// Checks that `ids`, the list at `key`, is not empty and names only configured targets.
fn check_ids(key: &str, ids: &[String], targets: &[String]) -> Result<(), ConfigError> {
    if ids.is_empty() {
        return Err(ConfigError::at(key, "name at least one target"));
    }
    match ids.iter().enumerate().find(|(_, id)| !targets.contains(id)) {
        Some((i, id)) => {
            let message = format!("`{id}` is not one of this model's targets");
            Err(ConfigError::at(format!("{key}[{i}]"), message))
        }
        None => Ok(()),
    }
}

impl Router for Conditional {
    type Options = Options;

    fn validate(options: &Options, targets: &[String]) -> Result<(), ConfigError> {
        if options.rules.is_empty() && options.default.is_none() {
            return Err(ConfigError::new("give `rules`, a `default`, or both"));
        }
        for (i, rule) in options.rules.iter().enumerate() {
            check_ids(&format!("rules[{i}].targets"), &rule.targets, targets)?;
        }
        match &options.default {
            Some(ids) => check_ids("default", ids, targets),
            None => Ok(()),
        }
    }

    fn route(
        options: &Options,
        request: &RouteRequest,
        targets: &[Target],
    ) -> Result<Vec<u32>, String> {
        let rule = options.rules.iter().find(|rule| rule.when.holds(request));
        let Some(ids) = rule.map(|rule| &rule.targets).or(options.default.as_ref()) else {
            return Err(format!(
                "no routing rule matched this request to model `{}`, and it has no default",
                request.model
            ));
        };
        // `validate` checked that every id is a target, so none is dropped here.
        let find = |id: &String| indexed(targets).find(|(_, t)| t.id == *id).map(|(i, _)| i);
        Ok(open_last(ids.iter().filter_map(find), targets))
    }
}

wasmgate_plugin_sdk::export_router!(Conditional);

#[cfg(test)]
mod tests;
