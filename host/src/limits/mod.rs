//! Rate limits and budgets: limiter plugins check each request before it is forwarded and
//! settle it with its real usage afterwards, using counters kept here (in memory) or in Redis.
//!
//! Besides the config's rules, a key with limits of its own (see [`crate::ledger::KeyLimits`])
//! is checked by the same `rate-limit` and `budget` plugins, as rules `key-rate` and
//! `key-budget` scoped by the key's id, after the config's rules and on the same counters store
//! (so they hold across replicas on Redis).

pub mod counters;
pub mod window;

use std::sync::Arc;

use crate::config::{LimitRule, LimitScope, LimitsConfig};
use crate::ledger::KeyLimits;
use crate::plugins::{
    CounterStore, Decision, Denial, LimitRequest, LimiterPlugin, PluginFailure, PluginHost,
    Settlement,
};

/// The limit rules of one config, with their counter store.
pub struct Limits {
    store: Arc<dyn CounterStore>,
    /// `limits.store` as configured, to tell whether a reload may keep `store`.
    store_url: String,
    rules: Vec<Arc<Rule>>,
    /// The plugins that check a key's own rate and budget.
    key_rate: LimiterPlugin,
    key_budget: LimiterPlugin,
}

/// The counter prefixes of a key's own limits.
const KEY_RATE_RULE: &str = "key-rate";
const KEY_BUDGET_RULE: &str = "key-budget";

struct Rule {
    /// Prefix of the rule's counter keys.
    id: Arc<str>,
    plugin: LimiterPlugin,
    options: String,
    scope: LimitScope,
    models: Vec<String>,
}

/// What the limits know of a request.
pub struct Facts<'a> {
    pub project: &'a str,
    pub api_key_id: Option<&'a str>,
    pub user_id: Option<&'a str>,
    /// The model as the client named it.
    pub model: &'a str,
    pub estimated_input_tokens: u32,
    pub max_output_tokens: Option<u32>,
    pub estimated_cost_micros: Option<i64>,
    /// The key's own limits (empty for an anonymous caller).
    pub key_limits: &'a KeyLimits,
}

/// Why a request cannot be admitted.
#[derive(Debug)]
pub enum Refusal {
    Denied(Denial),
    /// A limiter failed (its plugin trapped, or the counter store is unreachable): the request
    /// is refused rather than let through unchecked.
    Unavailable(PluginFailure),
}

/// An admitted request: the rules that allowed it, to settle when it is done.
pub struct Admission {
    limits: Arc<Limits>,
    checked: Vec<(Arc<Rule>, LimitRequest)>,
    /// `x-ratelimit-*` headers for the response.
    pub headers: Vec<(String, String)>,
}

impl Limits {
    /// Loads the rules' limiter plugins. `previous` is the config being replaced by a reload:
    /// when its store is the same, its counters are kept (in memory they would otherwise start
    /// from zero, and every reload would hand out a fresh allowance).
    pub async fn load(
        config: &LimitsConfig,
        host: &PluginHost,
        plugins_dir: &std::path::Path,
        previous: Option<&Limits>,
    ) -> Result<Self, String> {
        let store: Arc<dyn CounterStore> =
            if let Some(previous) = previous.filter(|p| p.store_url == config.store) {
                Arc::clone(&previous.store)
            } else if config.store == "memory" {
                Arc::new(counters::MemoryCounters::new(window::Clock::new()))
            } else {
                Arc::new(
                    counters::RedisCounters::connect(&config.store)
                        .await
                        .map_err(|e| format!("limits.store: {e}"))?,
                )
            };
        let mut rules = Vec::with_capacity(config.rules.len());
        for (i, rule) in config.rules.iter().enumerate() {
            rules.push(Arc::new(load_rule(i, rule, host, plugins_dir).await?));
        }
        let builtin = |name: &str| {
            host.load_limiter(name, plugins_dir)
                .map_err(|e| format!("the `{name}` limiter, for keys' own limits: {e}"))
        };
        Ok(Self {
            store,
            store_url: config.store.clone(),
            rules,
            key_rate: builtin("rate-limit")?,
            key_budget: builtin("budget")?,
        })
    }

    /// Whether there is nothing to check for a request whose key has `key_limits`.
    pub fn is_empty_for(&self, key_limits: &KeyLimits) -> bool {
        self.rules.is_empty() && !key_limits.has_counters()
    }

    /// The rules of the key's own limits that apply to every request it sends.
    fn key_rules(&self, limits: &KeyLimits) -> Vec<Arc<Rule>> {
        let rule = |id: &str, plugin: &LimiterPlugin, options: String| {
            Arc::new(Rule {
                id: id.into(),
                plugin: plugin.clone(),
                options,
                scope: LimitScope::Key,
                models: Vec::new(),
            })
        };
        let rate = limits
            .rate_options()
            .map(|o| rule(KEY_RATE_RULE, &self.key_rate, o));
        let budget = limits
            .budget_options()
            .map(|o| rule(KEY_BUDGET_RULE, &self.key_budget, o));
        rate.into_iter().chain(budget).collect()
    }

    /// Checks every rule that applies. The first denial refuses the request; reservations the
    /// rules before it made are given back.
    pub async fn admit(self: &Arc<Self>, facts: &Facts<'_>) -> Result<Admission, Refusal> {
        let mut admission = Admission {
            limits: Arc::clone(self),
            checked: Vec::new(),
            headers: Vec::new(),
        };
        let key_rules = match facts.api_key_id {
            Some(_) => self.key_rules(facts.key_limits),
            None => Vec::new(),
        };
        for rule in self.rules.iter().chain(&key_rules) {
            if !rule.models.is_empty() && !rule.models.iter().any(|m| m == facts.model) {
                continue;
            }
            let request = limit_request(rule.scope, facts);
            let decision = rule
                .plugin
                .check(&self.store, &rule.id, &rule.options, &request)
                .await;
            match decision {
                Ok(Decision::Allow(headers)) => {
                    admission.headers.extend(headers);
                    admission.checked.push((Arc::clone(rule), request));
                }
                Ok(Decision::Deny(denial)) => {
                    admission.release().await;
                    return Err(Refusal::Denied(denial));
                }
                Err(failure) => {
                    admission.release().await;
                    return Err(Refusal::Unavailable(failure));
                }
            }
        }
        Ok(admission)
    }
}

impl Limits {
    /// Checks one more MCP tool call of `key_id` against `per_minute` calls a minute, with the
    /// `rate-limit` plugin on this config's counters (so on Redis the count holds across
    /// replicas), under a rule of its own: model requests do not count against it.
    pub async fn admit_tool_call(
        self: &Arc<Self>,
        project: &str,
        key_id: &str,
        per_minute: u32,
    ) -> Result<Admission, Refusal> {
        let rule = Arc::new(Rule {
            id: TOOL_CALL_RULE.into(),
            plugin: self.key_rate.clone(),
            options: serde_json::json!({ "requests_per_minute": per_minute }).to_string(),
            scope: LimitScope::Key,
            models: Vec::new(),
        });
        let request = LimitRequest {
            scope_key: format!("key:{key_id}"),
            project: project.to_owned(),
            api_key_id: Some(key_id.to_owned()),
            user_id: None,
            model: "mcp".to_owned(),
            estimated_input_tokens: 0,
            max_output_tokens: None,
            estimated_cost_micros: None,
        };
        let decision = rule
            .plugin
            .check(&self.store, &rule.id, &rule.options, &request)
            .await;
        match decision {
            Ok(Decision::Allow(headers)) => Ok(Admission {
                limits: Arc::clone(self),
                checked: vec![(rule, request)],
                headers,
            }),
            Ok(Decision::Deny(denial)) => Err(Refusal::Denied(denial)),
            Err(failure) => Err(Refusal::Unavailable(failure)),
        }
    }
}

/// The counter prefix of MCP tool calls.
const TOOL_CALL_RULE: &str = "mcp-calls";

async fn load_rule(
    i: usize,
    rule: &LimitRule,
    host: &PluginHost,
    plugins_dir: &std::path::Path,
) -> Result<Rule, String> {
    let at = format!("limits.rules[{i}]");
    let plugin = host
        .load_limiter(&rule.policy, plugins_dir)
        .map_err(|e| format!("{at}.policy: {e}"))?;
    let options = serde_json::Value::Object(rule.options.clone()).to_string();
    match plugin.validate(&options).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let key = e.key.map(|k| format!(".{k}")).unwrap_or_default();
            return Err(format!("{at}.options{key}: {}", e.message));
        }
        Err(failure) => return Err(format!("{at}: {failure}")),
    }
    let id = rule
        .id
        .clone()
        .unwrap_or_else(|| format!("{}-{}-{i}", rule.policy, rule.scope.name()));
    Ok(Rule {
        id: id.into(),
        plugin,
        options,
        scope: rule.scope,
        models: rule.models.clone(),
    })
}

fn limit_request(scope: LimitScope, facts: &Facts<'_>) -> LimitRequest {
    let scope_key = match scope {
        LimitScope::Global => "global".to_owned(),
        LimitScope::Key => format!("key:{}", facts.api_key_id.unwrap_or("anonymous")),
        LimitScope::Project => format!("project:{}", facts.project),
        LimitScope::User => format!("user:{}", facts.user_id.unwrap_or("anonymous")),
        LimitScope::Model => format!("model:{}", facts.model),
    };
    LimitRequest {
        scope_key,
        project: facts.project.to_owned(),
        api_key_id: facts.api_key_id.map(str::to_owned),
        user_id: facts.user_id.map(str::to_owned),
        model: facts.model.to_owned(),
        estimated_input_tokens: facts.estimated_input_tokens,
        max_output_tokens: facts.max_output_tokens,
        estimated_cost_micros: facts.estimated_cost_micros,
    }
}

impl Admission {
    /// Settles every rule that allowed the request with what it really used.
    pub async fn settle(self, usage: Settlement) {
        for (rule, request) in &self.checked {
            let settled = rule
                .plugin
                .settle(&self.limits.store, &rule.id, &rule.options, request, &usage)
                .await;
            if let Err(e) = settled {
                tracing::warn!(rule = &*rule.id, "settling a limit failed: {e}");
            }
        }
    }

    /// Gives back what the rules checked so far reserved (the request will not be sent).
    async fn release(&mut self) {
        let released = Admission {
            limits: Arc::clone(&self.limits),
            checked: std::mem::take(&mut self.checked),
            headers: Vec::new(),
        };
        released
            .settle(Settlement {
                input_tokens: 0,
                output_tokens: 0,
                cost_micros: Some(0),
                succeeded: false,
            })
            .await;
    }
}
