//! The cache stage's lookup: the request's key made (the policy that applies, the client's
//! directives, the cache-key plugin), the exact entry looked up, then in semantic mode the
//! nearest kept turn; what it found, or what a miss is to keep, set on the request's slot.

use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;

use super::semantic;
use super::slot::{Fill, Hit, Indexed, Outcome};
use crate::cache::answer::Assembler;
use crate::cache::key::{self, Scope, Shape};
use crate::cache::policy::Decided;
use crate::config::cache::{CacheConfig, CacheScope};
use crate::pipeline::context::Context;
use crate::plugins::{KeyRequest, Operation};
use crate::state::AppState;

/// Our header for a client's own TTL in seconds (it may shorten the configured one).
const TTL_HEADER: &str = "x-wasmgate-cache-ttl";

/// Looks the request up. Sets what the answer's header will say, and what a miss keeps.
pub async fn lookup(state: &AppState, cx: &mut Context, headers: &http::HeaderMap) -> Option<Hit> {
    let config = &cx.gateway.config.cache;
    if !config.in_use() {
        return None;
    }
    // Boxed: a semantic lookup runs a request of its own, and its future would size the
    // stages' of every request, with a cache or without.
    let lookup = Box::pin(lookup_in(state, cx, headers));
    let outcome = lookup.await;
    let counts = &state.cache.counts;
    let count = match cx.cache.outcome {
        Some(Outcome::Hit) => &counts.hits,
        Some(Outcome::Miss) => &counts.misses,
        Some(Outcome::Bypass) | None => &counts.bypasses,
    };
    count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    outcome
}

async fn lookup_in(state: &AppState, cx: &mut Context, headers: &http::HeaderMap) -> Option<Hit> {
    cx.cache.outcome = Some(Outcome::Bypass);
    // Its own handle on the config: a semantic lookup runs a request of its own through `cx`.
    let gateway = Arc::clone(&cx.gateway);
    let config = &gateway.config.cache;
    let policy = policy(config, &cx.request.model, cx.caller.key_id.as_deref())?;
    // Guards may rewrite the answer (and reversible redaction gives each client its own values
    // back): an answer kept before them could hand one client what a guard held from another.
    if cx.guard.applies() {
        return None;
    }
    let dialect_operation;
    let operation = match (&cx.translation, cx.operation) {
        // A dialect's request is keyed by the dialect and the route it came on, so that its
        // own body (below) cannot meet another dialect's or another route's.
        (Some(translation), _) => {
            dialect_operation = format!("{}.{}", translation.dialect.name, translation.route);
            dialect_operation.as_str()
        }
        (None, Operation::ChatCompletions) => "chat.completions",
        (None, _) => return None,
    };
    let control = Control::of(headers);
    if control.no_cache && control.no_store {
        return None;
    }
    let target = resolved(cx)?;
    let semantic_config = config.semantic.as_ref().filter(|_| policy.semantic);
    let scope = Scope {
        namespace: policy.namespace,
        project: &cx.caller.project,
        api_key: match config.scope {
            CacheScope::Project => None,
            CacheScope::Key => Some(cx.caller.key_id.as_deref().unwrap_or("")),
        },
    };
    // A dialect's request by its own body: what a native target gets, with everything its
    // canonical form may have dropped.
    let (fields, headers): (Vec<Field<'_>>, &[(String, String)]) = match &cx.translation {
        Some(translation) => {
            let (fields, headers) = translation.native_parts();
            let fields = fields.iter().map(|(k, v)| (k.as_str(), &**v)).collect();
            (fields, headers)
        }
        None => (cx.request.fields().collect(), &[]),
    };
    let replaced;
    let fields = match &gateway.cache_key {
        None => fields,
        Some(policy) => {
            let request = KeyRequest {
                operation: operation.to_owned(),
                model: cx.request.model.clone(),
                project: cx.caller.project.clone(),
                fields: object(&fields),
            };
            let span = cx.trace.stage("cache.key_plugin");
            match span.scope(policy.decide(&request)).await {
                Decided::Keep => fields,
                Decided::Bypass => return None,
                Decided::Replace(fields) => {
                    replaced = fields;
                    replaced.iter().map(|(k, v)| (k.as_str(), &**v)).collect()
                }
            }
        }
    };
    let shape = Shape {
        operation,
        target: &target,
        headers,
    };
    let key = key::key(&scope, &shape, fields.iter().copied());
    state
        .cache
        .counts
        .keys
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ttl = match control.ttl_s {
        Some(s) => policy.ttl_s.min(s),
        None => policy.ttl_s,
    };
    let mut indexed = None;
    if !control.no_cache {
        let mut span = cx.trace.stage("cache");
        let found = span.scope(state.cache.get(&key)).await;
        let hit = found.filter(|e| e.serves(cx.request.stream));
        let outcome = match hit {
            Some(_) => Outcome::Hit,
            None => Outcome::Miss,
        };
        span.set("wasmgate.cache", outcome.as_str());
        drop(span);
        cx.cache.outcome = Some(outcome);
        if let Some(entry) = hit {
            return Some(Hit { entry });
        }
        if let Some(config) = semantic_config {
            let fields = fields.iter().copied();
            let probe = semantic::probe(config, &scope, &shape, fields, &cx.request);
            match semantic_lookup(state, cx, config, probe).await {
                SemanticLookup::Hit(hit) => return Some(hit),
                SemanticLookup::Miss(found) => indexed = found,
            }
        }
    }
    if !control.no_store {
        let cache = Arc::clone(&state.cache);
        cx.cache.fill = Some(Fill {
            assembler: cx
                .request
                .stream
                .then(|| Assembler::new(cache.max_entry_bytes())),
            cache,
            key,
            ttl: Duration::from_secs(ttl),
            background: cx.background.clone(),
            native: None,
            indexed,
        });
    }
    None
}

/// A top-level field of a body: its name and its JSON text.
type Field<'a> = (&'a str, &'a RawValue);

/// `fields` as one JSON object, without those the key never has (what a cache-key plugin gets).
fn object(fields: &[Field<'_>]) -> String {
    let mut out = String::from("{");
    for (name, raw) in fields
        .iter()
        .filter(|(name, _)| !key::IGNORED.contains(name))
    {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&serde_json::Value::from(*name).to_string());
        out.push(':');
        out.push_str(raw.get());
    }
    out.push('}');
    out
}

/// How a semantic lookup went: a hit, or a miss with the vector to keep beside its answer (none
/// when it was not looked up).
enum SemanticLookup {
    Hit(Hit),
    Miss(Option<Indexed>),
}

/// Looks `probe` up among the earlier turns of its scope, after an exact miss.
async fn semantic_lookup(
    state: &AppState,
    cx: &mut Context,
    config: &crate::config::cache::SemanticConfig,
    probe: Result<semantic::Probe, semantic::Skip>,
) -> SemanticLookup {
    use std::sync::atomic::Ordering::Relaxed;
    let counts = &state.cache.counts;
    let skipped = || {
        counts.semantic_skipped.fetch_add(1, Relaxed);
        SemanticLookup::Miss(None)
    };
    let Ok(probe) = probe else {
        return skipped();
    };
    let Some(vector) = semantic::embed(state, cx, config, &probe.text).await else {
        return skipped();
    };
    let mut span = cx.trace.stage("cache.semantic");
    let nearest = span
        .scope(semantic::nearest(
            state,
            &probe.scope,
            &vector,
            config.threshold,
        ))
        .await;
    let nearest = match nearest {
        Ok(nearest) => nearest,
        Err(e) => {
            tracing::warn!("semantic cache read failed: {e}");
            counts.errors.fetch_add(1, Relaxed);
            return skipped();
        }
    };
    let indexed = Indexed {
        scope: probe.scope,
        vector,
    };
    let Some(nearest) = nearest else {
        span.set("wasmgate.cache.semantic", "miss");
        counts.semantic_misses.fetch_add(1, Relaxed);
        return SemanticLookup::Miss(Some(indexed));
    };
    let found = span.scope(state.cache.get(&nearest.key)).await;
    match found.filter(|e| e.serves(cx.request.stream)) {
        Some(entry) => {
            span.set("wasmgate.cache.semantic", "hit");
            span.set(
                "wasmgate.cache.similarity",
                format!("{:.4}", nearest.similarity),
            );
            counts.semantic_hits.fetch_add(1, Relaxed);
            cx.cache.outcome = Some(Outcome::Hit);
            cx.cache.similarity = Some(nearest.similarity);
            SemanticLookup::Hit(Hit { entry })
        }
        // Its answer expired or was evicted before its vector.
        None => {
            span.set("wasmgate.cache.semantic", "miss");
            counts.semantic_misses.fetch_add(1, Relaxed);
            SemanticLookup::Miss(Some(indexed))
        }
    }
}

/// What the config says for a request to `model` with `key_id`: `None` when the cache is off
/// for it.
struct Policy<'a> {
    ttl_s: u64,
    namespace: &'a str,
    /// Looked up semantically after an exact miss.
    semantic: bool,
}

fn policy<'a>(config: &'a CacheConfig, model: &str, key_id: Option<&str>) -> Option<Policy<'a>> {
    let rule = config.rules.iter().find(|rule| {
        (rule.models.is_empty() || rule.models.iter().any(|m| m == model))
            && (rule.keys.is_empty() || key_id.is_some_and(|k| rule.keys.iter().any(|r| r == k)))
    });
    let enabled = rule.and_then(|r| r.enabled).unwrap_or(config.enabled);
    enabled.then(|| Policy {
        ttl_s: rule.and_then(|r| r.ttl_s).unwrap_or(config.ttl_s),
        namespace: rule
            .and_then(|r| r.namespace.as_deref())
            .unwrap_or(&config.namespace),
        semantic: config
            .semantic
            .as_ref()
            .is_some_and(|semantic| rule.and_then(|r| r.semantic).unwrap_or(semantic.enabled)),
    })
}

/// The model as resolved: a virtual model by its name (any of its targets may answer it), a
/// direct one by the target it leads to (so its aliases share answers). `None` when it leads
/// nowhere: the route stage names the error.
fn resolved(cx: &Context) -> Option<String> {
    let model = &cx.request.model;
    if cx.gateway.routes.contains_key(model) {
        return Some(format!("route:{model}"));
    }
    let target = cx.gateway.resolve(model).ok()?;
    Some(format!("{}/{}", target.provider.name, target.model))
}

/// The client's cache directives.
#[derive(Debug, Default, PartialEq)]
struct Control {
    /// `Cache-Control: no-cache`: not answered from the cache (the answer may still be kept).
    no_cache: bool,
    /// `Cache-Control: no-store`: the answer is not kept.
    no_store: bool,
    /// `x-wasmgate-cache-ttl`: seconds, at most the configured TTL.
    ttl_s: Option<u64>,
}

impl Control {
    fn of(headers: &http::HeaderMap) -> Self {
        let mut control = Self::default();
        for value in headers.get_all(http::header::CACHE_CONTROL) {
            let Ok(value) = value.to_str() else { continue };
            for directive in value.split(',').map(str::trim) {
                if directive.eq_ignore_ascii_case("no-cache") {
                    control.no_cache = true;
                } else if directive.eq_ignore_ascii_case("no-store") {
                    control.no_store = true;
                }
            }
        }
        control.ttl_s = headers
            .get(TTL_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if control.ttl_s == Some(0) {
            // A TTL of nothing: do not keep it.
            control.no_store = true;
        }
        control
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderName, HeaderValue};

    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap_or(http::header::ACCEPT),
                HeaderValue::from_str(v).unwrap_or(HeaderValue::from_static("")),
            );
        }
        map
    }

    #[test]
    fn reads_the_clients_directives() {
        assert_eq!(Control::of(&headers(&[])), Control::default());
        let both = Control::of(&headers(&[("cache-control", "No-Cache, no-store")]));
        assert!(both.no_cache && both.no_store);
        let ttl = Control::of(&headers(&[("x-wasmgate-cache-ttl", " 30 ")]));
        assert_eq!(ttl.ttl_s, Some(30));
        assert!(Control::of(&headers(&[("x-wasmgate-cache-ttl", "0")])).no_store);
        assert_eq!(
            Control::of(&headers(&[("x-wasmgate-cache-ttl", "soon")])).ttl_s,
            None
        );
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let config: CacheConfig = serde_yaml::from_str(
            "{ enabled: true, ttl_s: 100, rules: [ { models: [a], enabled: false }, { keys: [k1], ttl_s: 5, namespace: eval } ] }",
        )
        .unwrap_or_default();
        assert!(policy(&config, "a", Some("k1")).is_none());
        let p = policy(&config, "b", Some("k1")).map(|p| (p.ttl_s, p.namespace));
        assert_eq!(p, Some((5, "eval")));
        let p = policy(&config, "b", None).map(|p| (p.ttl_s, p.namespace));
        assert_eq!(p, Some((100, "")));
    }
}
