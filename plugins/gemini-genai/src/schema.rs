//! Google's `Schema` (an OpenAPI 3.0 subset, with type names in upper case and `nullable`) as
//! the JSON Schema the canonical form carries. A `*JsonSchema` field is JSON Schema already
//! and goes as it is.

use serde_json::{Map, Value};

/// Schemas nest at most this deep; deeper ones are passed on as they are.
const DEPTH_MAX: usize = 64;

/// `schema` as JSON Schema: types in lower case, `nullable` as a `null` type, Google-only keys
/// (`propertyOrdering`) left out.
pub fn to_json_schema(schema: &Value) -> Value {
    convert(schema, 0)
}

fn convert(schema: &Value, depth: usize) -> Value {
    if depth > DEPTH_MAX {
        return schema.clone();
    }
    match schema {
        Value::Object(fields) => {
            let mut out = Map::new();
            let nullable = fields.get("nullable").and_then(Value::as_bool) == Some(true);
            for (key, value) in fields {
                match key.as_str() {
                    "nullable" | "propertyOrdering" => {}
                    "type" => {
                        let name = value.as_str().map(str::to_ascii_lowercase);
                        let kind = match name {
                            Some(name) if nullable => Value::from(vec![name, "null".to_owned()]),
                            Some(name) => Value::from(name),
                            None => value.clone(),
                        };
                        out.insert(key.clone(), kind);
                    }
                    // Maps of schemas.
                    "properties" | "$defs" | "definitions" => {
                        let converted = match value {
                            Value::Object(map) => Value::Object(
                                map.iter()
                                    .map(|(k, v)| (k.clone(), convert(v, depth + 1)))
                                    .collect(),
                            ),
                            other => other.clone(),
                        };
                        out.insert(key.clone(), converted);
                    }
                    // Schemas, or lists of them.
                    "items" | "anyOf" | "oneOf" | "allOf" | "not" | "additionalProperties" => {
                        out.insert(key.clone(), convert(value, depth + 1));
                    }
                    _ => {
                        out.insert(key.clone(), value.clone());
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| convert(v, depth + 1)).collect()),
        other => other.clone(),
    }
}
