//! The guards of one loaded config, in the order they run: each entry's plugin loaded once and
//! its options validated, and which of them apply to a request.

use std::sync::Arc;

use super::endpoint::Endpoint;
use super::guard::{Guard, Who};
use crate::config::guards::{BlindRoute, GuardEntry};
use crate::plugins::{GuardPlugin, PluginHost};

/// The guards of a config, in the order they run.
#[derive(Default)]
pub struct Guards {
    list: Vec<Guard>,
}

impl Guards {
    /// Loads each entry's plugin (once per plugin) and has it validate the entry's options.
    /// An error names the entry.
    pub async fn load(
        entries: &[GuardEntry],
        host: &PluginHost,
        dir: &std::path::Path,
    ) -> Result<Self, String> {
        let mut order: Vec<(usize, &GuardEntry)> = entries.iter().enumerate().collect();
        order.sort_by_key(|(i, entry)| (entry.order, *i));
        let mut plugins: std::collections::HashMap<&str, GuardPlugin> = Default::default();
        let mut list = Vec::with_capacity(entries.len());
        // One client for every guard's endpoint, made only when one has an endpoint.
        let mut http: Option<reqwest::Client> = None;
        for (i, entry) in order {
            let at = |key: &str, message: String| format!("guards[{i}].{key}: {message}");
            let plugin = match plugins.get(entry.plugin.as_str()) {
                Some(plugin) => plugin.clone(),
                None => {
                    let plugin = host
                        .load_guard(&entry.plugin, dir)
                        .map_err(|e| at("plugin", e.to_string()))?;
                    plugins.insert(&entry.plugin, plugin.clone());
                    plugin
                }
            };
            let options = serde_json::Value::Object(entry.options.clone()).to_string();
            let info = match plugin.validate(&options).await {
                Ok(Ok(info)) => info,
                Ok(Err(e)) => {
                    let key = e
                        .key
                        .map(|k| format!("options.{k}"))
                        .unwrap_or("options".into());
                    return Err(at(&key, e.message));
                }
                Err(failure) => return Err(at("plugin", failure.to_string())),
            };
            let endpoint = match &entry.endpoint {
                Some(endpoint) => {
                    let client = match &http {
                        Some(client) => client.clone(),
                        None => {
                            let client = crate::upstream::client()
                                .map_err(|e| at("endpoint", e.to_string()))?;
                            http.insert(client).clone()
                        }
                    };
                    let endpoint =
                        Endpoint::new(endpoint, client).map_err(|e| at("endpoint", e))?;
                    Some(Arc::new(endpoint))
                }
                None => None,
            };
            list.push(Guard {
                name: entry.name().into(),
                plugin,
                options,
                apply: entry.apply,
                mode: entry.mode,
                fail_open: entry.fail_open,
                exempt: entry.exempt.clone(),
                max_hold_chars: info.max_hold_chars,
                scope: entry.scope.clone(),
                endpoint,
            });
        }
        Ok(Self { list })
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The guard at `index` (as [`Guards::applying`] gave it).
    pub fn get(&self, index: usize) -> Option<&Guard> {
        self.list.get(index)
    }

    /// The first of the guards at `indices` whose entry does not exempt `route`: the one that
    /// refuses what no guard can read there.
    pub fn not_exempting(
        &self,
        indices: impl IntoIterator<Item = usize>,
        route: BlindRoute,
    ) -> Option<&Guard> {
        (indices.into_iter().filter_map(|i| self.get(i))).find(|g| !g.exempt.contains(&route))
    }

    /// The indices of the guards that apply to `who`, in order; or the first guard the key
    /// names that this config does not have (its requests fail closed rather than go unguarded).
    pub fn applying<'w>(&self, who: &Who<'w>) -> Result<Vec<usize>, &'w str> {
        if let Some(missing) = (who.named.iter()).find(|n| self.named(n).is_none()) {
            return Err(missing);
        }
        Ok((self.list.iter().enumerate())
            .filter(|(_, g)| g.applies(who))
            .map(|(i, _)| i)
            .collect())
    }

    /// The index of the guard named `name`.
    pub fn named(&self, name: &str) -> Option<usize> {
        self.list.iter().position(|g| &*g.name == name)
    }
}
