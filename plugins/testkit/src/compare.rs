//! Comparing JSON with `"<any>"` wildcards, and reading the expected shapes of the cases.

use serde_json::Value;
use wasmgate_plugin_sdk::{ErrorKind, PluginError, Usage};

/// The wildcard of expected JSON.
const ANY: &str = "<any>";

/// Where `actual` differs from `expected` (a JSON path and both values), if anywhere.
pub fn diff(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    match (expected, actual) {
        (Value::String(s), _) if s == ANY => None,
        (Value::Object(e), Value::Object(a)) => {
            for key in e.keys().chain(a.keys()) {
                let (ev, av) = (e.get(key), a.get(key));
                let here = format!("{path}.{key}");
                match (ev, av) {
                    (Some(ev), Some(av)) => {
                        if let Some(found) = diff(ev, av, &here) {
                            return Some(found);
                        }
                    }
                    (Some(ev), None) => return Some(format!("{here}: missing, expected {ev}")),
                    (None, Some(av)) => return Some(format!("{here}: unexpected {av}")),
                    (None, None) => {}
                }
            }
            None
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Some(format!(
                    "{path}: {} items, expected {}\n  actual: {actual}",
                    a.len(),
                    e.len()
                ));
            }
            e.iter()
                .zip(a)
                .enumerate()
                .find_map(|(i, (ev, av))| diff(ev, av, &format!("{path}[{i}]")))
        }
        _ if expected == actual => None,
        _ => Some(format!("{path}: got {actual}, expected {expected}")),
    }
}

/// Usage as JSON, every field present.
pub fn usage_value(usage: Option<&Usage>) -> Value {
    match usage {
        None => Value::Null,
        Some(u) => serde_json::json!({
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cached_input_tokens": u.cached_input_tokens,
            "cache_write_tokens": u.cache_write_tokens,
            "reasoning_tokens": u.reasoning_tokens,
            "images": u.images,
        }),
    }
}

/// Expected usage, with absent counts read as 0.
pub fn expected_usage(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => Value::Null,
        Some(v) => {
            let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
            serde_json::json!({
                "input_tokens": n("input_tokens"),
                "output_tokens": n("output_tokens"),
                "cached_input_tokens": n("cached_input_tokens"),
                "cache_write_tokens": n("cache_write_tokens"),
                "reasoning_tokens": n("reasoning_tokens"),
                "images": n("images"),
            })
        }
    }
}

/// An error as JSON, in the shape `expected.json` writes it.
pub fn error_value(err: &PluginError) -> Value {
    let kind = match err.kind {
        ErrorKind::InvalidRequest => "invalid-request",
        ErrorKind::Authentication => "authentication",
        ErrorKind::PermissionDenied => "permission-denied",
        ErrorKind::NotFound => "not-found",
        ErrorKind::RateLimited => "rate-limited",
        ErrorKind::Upstream => "upstream",
        ErrorKind::Timeout => "timeout",
    };
    serde_json::json!({
        "kind": kind,
        "message": err.message,
        "param": err.param,
        "code": err.code,
        "upstream_status": err.upstream_status,
    })
}

/// Expected error JSON, with absent optional fields read as `null`.
pub fn expected_error(value: &Value) -> Value {
    let field = |k: &str| value.get(k).cloned().unwrap_or(Value::Null);
    serde_json::json!({
        "kind": field("kind"),
        "message": field("message"),
        "param": field("param"),
        "code": field("code"),
        "upstream_status": field("upstream_status"),
    })
}
