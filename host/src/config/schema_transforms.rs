//! What the derived schema cannot say by itself, applied to the types that need it: a provider
//! entry's `plugin`-or-`preset`, and example names for maps keyed by the operator's names.

use schemars::Schema;
use serde_json::{Value, json};

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
