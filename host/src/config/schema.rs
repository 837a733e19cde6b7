//! The JSON Schema of `config.yaml`, derived from the config types: what `wasmgate config
//! schema` prints for editors, and what the manual's configuration reference is generated from.
//!
//! One source, the serde structs of this module: their `///` docs become descriptions, their
//! `#[serde(default = ...)]` values defaults, `deny_unknown_fields` `additionalProperties:
//! false`. Draft 7, the newest draft editors' YAML support (yaml-language-server) handles fully.

use schemars::Schema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use super::Config;

/// The schema, as JSON.
pub fn schema() -> Value {
    let mut schema = SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<Config>();
    schema.insert("title".to_owned(), json!("wasmgate config.yaml"));
    schema.to_value()
}

/// `providers.<name>`: `plugin` is required unless `preset` gives it (presets are expanded
/// before the entry is read), and `preset` takes the names of the built-in presets.
pub(super) fn provider_entry(schema: &mut Schema) {
    if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|key| key != "plugin");
    }
    if schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        schema.remove("required");
    }
    schema.insert(
        "anyOf".to_owned(),
        json!([{"required": ["plugin"]}, {"required": ["preset"]}]),
    );
    if let Some(preset) = schema.pointer_mut("/properties/preset")
        && let Some(preset) = preset.as_object_mut()
    {
        let mut names: Vec<Value> = super::presets::presets().keys().map(|k| json!(k)).collect();
        names.push(Value::Null);
        preset.insert("enum".to_owned(), Value::Array(names));
    }
}

/// `providers:` and `routing:`: a map whose keys are the operator's names; the example name
/// shows in the reference's snippets (and in editors that offer examples).
pub(super) fn named_map(example: &'static str) -> impl Fn(&mut Schema) {
    move |schema: &mut Schema| {
        schema.insert("propertyNames".to_owned(), json!({"examples": [example]}));
    }
}
