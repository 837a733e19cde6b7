//! The exact cache's key: a SHA-256 of everything that shapes an answer, under its scope.
//!
//! Every field of the request's body goes in except the few listed in [`IGNORED`], which change
//! how an answer is delivered or billed, never what it says: a field the gateway does not know
//! (a new sampling parameter, a provider's own option) is part of the key, so an unknown field
//! can cause a miss but never a wrong hit. Objects are written with their keys sorted, so the
//! order a client's JSON library writes them in does not matter; everything else (array order,
//! strings, numbers as written) does.

use serde_json::Value;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

/// Top-level fields that do not change the answer: how it is delivered (`stream`,
/// `stream_options`), who asked (`user`, `metadata`, `safety_identifier`), whether the provider
/// keeps it (`store`), and the provider's own prompt-cache routing hint. The model is in the
/// key as resolved, not as written.
pub const IGNORED: &[&str] = &[
    "model",
    "stream",
    "stream_options",
    "user",
    "metadata",
    "safety_identifier",
    "store",
    "prompt_cache_key",
];

/// Where an answer may be shared: one namespace, one project (and one key when the scope is
/// per key). Two requests in different scopes never share a key.
pub struct Scope<'a> {
    pub namespace: &'a str,
    pub project: &'a str,
    pub api_key: Option<&'a str>,
}

/// What a key is made of besides the scope.
pub struct Shape<'a> {
    /// The operation and the client's dialect (`chat.completions`, `messages`, `responses`).
    pub operation: &'a str,
    /// The model as resolved: `provider/model` of a direct target, `route:<name>` of a virtual
    /// model (any of whose targets may answer it).
    pub target: &'a str,
    /// Client headers forwarded to the target that can change its answer (`anthropic-beta`).
    pub headers: &'a [(String, String)],
}

/// A cache key: 64 hex digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key(pub String);

/// The key of a request of `shape` under `scope`, whose body has the top-level `fields` (as the
/// target would receive them).
pub fn key<'f>(
    scope: &Scope<'_>,
    shape: &Shape<'_>,
    fields: impl Iterator<Item = (&'f str, &'f RawValue)>,
) -> Key {
    let mut hash = Sha256::new();
    // The key's own version: a change in what goes in starts afresh.
    part(&mut hash, b"wasmgate-cache-v1");
    part(&mut hash, scope.namespace.as_bytes());
    part(&mut hash, scope.project.as_bytes());
    part(&mut hash, scope.api_key.unwrap_or("").as_bytes());
    part(&mut hash, shape.operation.as_bytes());
    part(&mut hash, shape.target.as_bytes());
    let mut fields: Vec<(&str, &RawValue)> =
        fields.filter(|(name, _)| !IGNORED.contains(name)).collect();
    fields.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut text = String::new();
    for (name, raw) in fields {
        part(&mut hash, name.as_bytes());
        text.clear();
        match serde_json::from_str::<Value>(raw.get()) {
            Ok(value) => canonical(&value, &mut text),
            // Not JSON the gateway can read (it was checked before): as written.
            Err(_) => text.push_str(raw.get()),
        }
        part(&mut hash, text.as_bytes());
    }
    for (name, value) in shape.headers {
        part(&mut hash, name.to_ascii_lowercase().as_bytes());
        part(&mut hash, value.as_bytes());
    }
    Key(hex::encode(hash.finalize()))
}

/// One part, with its length in front so that no two sequences of parts hash alike.
fn part(hash: &mut Sha256, bytes: &[u8]) {
    hash.update((bytes.len() as u64).to_le_bytes());
    hash.update(bytes);
}

/// `value` as JSON with every object's keys sorted.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (name, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(name.clone()).to_string());
                out.push(':');
                canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    const BASE: &str = r#"{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"temperature":0.2,"top_p":1,"seed":7,"stop":["\n"],"max_tokens":50,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto","response_format":{"type":"text"},"n":1,"presence_penalty":0,"frequency_penalty":0,"logit_bias":{},"reasoning_effort":"low"}"#;

    fn key_of(body: &str, project: &str, target: &str) -> Key {
        let fields: indexmap::IndexMap<String, Box<RawValue>> = serde_json::from_str(body).unwrap();
        key(
            &Scope {
                namespace: "",
                project,
                api_key: None,
            },
            &Shape {
                operation: "chat.completions",
                target,
                headers: &[],
            },
            fields.iter().map(|(k, v)| (k.as_str(), &**v)),
        )
    }

    /// Every field that shapes the answer changes the key, one at a time.
    #[test]
    fn a_change_in_any_shaping_field_misses() {
        let base = key_of(BASE, "p", "openai/m");
        let mut value: Value = serde_json::from_str(BASE).unwrap();
        let changes: &[(&str, Value)] = &[
            (
                "messages",
                serde_json::json!([{"role": "user", "content": "Hi!"}]),
            ),
            ("temperature", serde_json::json!(0.3)),
            ("top_p", serde_json::json!(0.9)),
            ("seed", serde_json::json!(8)),
            ("stop", serde_json::json!(["."])),
            ("max_tokens", serde_json::json!(51)),
            ("tools", serde_json::json!([])),
            ("tool_choice", serde_json::json!("none")),
            (
                "response_format",
                serde_json::json!({"type": "json_object"}),
            ),
            ("n", serde_json::json!(2)),
            ("presence_penalty", serde_json::json!(0.5)),
            ("frequency_penalty", serde_json::json!(0.5)),
            ("logit_bias", serde_json::json!({"50256": -100})),
            ("reasoning_effort", serde_json::json!("high")),
            ("a_field_nobody_knows", serde_json::json!(1)),
        ];
        for (field, new) in changes {
            let mut changed = value.clone();
            changed[*field] = new.clone();
            let other = key_of(&changed.to_string(), "p", "openai/m");
            assert_ne!(base, other, "{field} did not change the key");
        }
        value["stream"] = Value::Bool(true);
        value["stream_options"] = serde_json::json!({"include_usage": true});
        value["user"] = Value::from("u-1");
        assert_eq!(
            base,
            key_of(&value.to_string(), "p", "openai/m"),
            "delivery fields changed the key"
        );
        assert_ne!(base, key_of(BASE, "q", "openai/m"), "another project");
        assert_ne!(base, key_of(BASE, "p", "openai/m2"), "another target");
    }

    /// Keys in another order, or other white space, are the same request.
    #[test]
    fn object_key_order_and_spacing_do_not_matter() {
        let a = r#"{"model":"m","messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}}}"#;
        let b = r#"{ "response_format": {"json_schema": {"schema": {}, "name": "x"}, "type": "json_schema"}, "messages": [ {"content": "Hi", "role": "user"} ], "model": "m" }"#;
        assert_eq!(key_of(a, "p", "t"), key_of(b, "p", "t"));
    }

    /// The Responses API's `input` is the request: two inputs never share a key (a peer's
    /// cache ignored it).
    #[test]
    fn responses_input_is_in_the_key() {
        let a = r#"{"model":"m","input":"What is 2+2?","instructions":"Be brief."}"#;
        let b = r#"{"model":"m","input":"What is 3+3?","instructions":"Be brief."}"#;
        let c = r#"{"model":"m","input":"What is 2+2?","instructions":"Be long."}"#;
        assert_ne!(key_of(a, "p", "t"), key_of(b, "p", "t"));
        assert_ne!(key_of(a, "p", "t"), key_of(c, "p", "t"));
    }
}
