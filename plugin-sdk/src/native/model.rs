//! Rewriting the `model` of a dialect body while every other value stays as the client wrote it.

use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::PluginError;

/// `body` (a JSON object) with its top-level `model` set to `model`, added if absent. The other
/// members keep their order and their exact text (numbers, escapes, key order inside them), so
/// that nothing the client sent changes meaning on the way; only the whitespace between
/// top-level members is not kept. For upstreams that name the model differently from the host
/// (an Azure deployment name, say).
pub fn with_model(body: &str, model: &str) -> Result<String, PluginError> {
    let bad = || PluginError::invalid_request("the request body must be a JSON object");
    let mut de = serde_json::Deserializer::from_str(body);
    let members = de.deserialize_map(Members).map_err(|_| bad())?;
    de.end().map_err(|_| bad())?;
    let model = serde_json::to_string(model).map_err(|_| bad())?;
    let mut out = String::with_capacity(body.len() + model.len());
    out.push('{');
    let mut wrote_model = false;
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(key).map_err(|_| bad())?);
        out.push(':');
        if key == "model" {
            out.push_str(&model);
            wrote_model = true;
        } else {
            out.push_str(value.get());
        }
    }
    if !wrote_model {
        if !members.is_empty() {
            out.push(',');
        }
        out.push_str("\"model\":");
        out.push_str(&model);
    }
    out.push('}');
    Ok(out)
}

/// The top-level members of an object, in order, each value as its raw text.
struct Members;

impl<'de> Visitor<'de> for Members {
    type Value = Vec<(String, &'de RawValue)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Vec::new();
        while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
            members.push(entry);
        }
        Ok(members)
    }
}
