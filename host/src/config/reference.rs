//! The manual's configuration reference (`docs/src/reference/config.md`), written from the
//! config's JSON Schema so that it names every key the types accept and cannot drift from them.
//! `wasmgate config reference` prints it; a test fails when the committed page is stale.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

/// One step of a key's path.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    /// A key of a map whose keys the operator names; the example name for snippets.
    Named(String),
    /// An element of a list.
    Item,
}

/// A key of the config, as the reference lists it.
#[derive(Debug)]
pub struct Key {
    path: Vec<Step>,
    /// Its schema, `$ref`s resolved and `null` alternatives removed.
    schema: Map<String, Value>,
    required: bool,
    /// Has keys of its own, listed after it.
    nested: bool,
}

impl Key {
    /// `providers.<name>.plugin`, `limits.rules[].policy`.
    pub fn dotted(&self) -> String {
        let mut out = String::new();
        for step in &self.path {
            match step {
                Step::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Step::Named(_) => out.push_str(".<name>"),
                Step::Item => out.push_str("[]"),
            }
        }
        out
    }

    pub fn description(&self) -> Option<&str> {
        self.schema.get("description").and_then(Value::as_str)
    }

    /// The value its snippet shows: the first example, else the default, else the first
    /// allowed value. `None` for a key with keys of its own.
    pub fn example(&self) -> Option<&Value> {
        let first = |key: &str| {
            self.schema
                .get(key)
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find(|v| !v.is_null()))
        };
        if self.nested {
            return first("examples");
        }
        first("examples")
            .or_else(|| self.schema.get("default").filter(|v| !v.is_null()))
            .or_else(|| first("enum"))
    }
}

/// Every key of `schema` (the config's), depth first in declaration order.
pub fn keys(schema: &Value) -> Vec<Key> {
    let definitions = schema
        .get("definitions")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut keys = Vec::new();
    let root = resolve(schema, &definitions);
    walk(&root, &mut Vec::new(), &definitions, &mut keys);
    keys
}

/// The reference page, in Markdown.
pub fn markdown(schema: &Value) -> String {
    let keys = keys(schema);
    let mut out = String::from(HEADER);
    out.push_str("\n## Sections\n\n");
    for key in keys.iter().filter(|k| k.path.len() == 1) {
        let name = key.dotted();
        let summary = key.description().map(first_sentence).unwrap_or_default();
        let _ = writeln!(out, "- [`{name}`](#{name}): {summary}");
    }
    for key in &keys {
        let name = key.dotted();
        let heading = if key.path.len() == 1 { "##" } else { "###" };
        let _ = writeln!(out, "\n{heading} `{name}`\n");
        if let Some(text) = key.description() {
            let _ = writeln!(out, "{}\n", one_paragraph(text));
        }
        let _ = writeln!(out, "- Type: {}", type_name(&key.schema));
        match key.schema.get("default") {
            _ if key.required => {
                let parent = Key {
                    path: key.path[..key.path.len() - 1].to_vec(),
                    schema: Map::new(),
                    required: false,
                    nested: true,
                };
                let _ = writeln!(out, "- Required in `{}`", parent.dotted());
            }
            Some(value) if !is_empty(value) => {
                let _ = writeln!(out, "- Default: `{}`", inline(value));
            }
            Some(value) if !value.is_null() && !key.nested => {
                let _ = writeln!(out, "- Default: `{}`", inline(value));
            }
            _ if key.nested => {}
            _ => out.push_str("- Default: unset\n"),
        }
        if let Some(example) = key.example() {
            let _ = write!(
                out,
                "\n```yaml\n{}```\n",
                snippet(&key.path, example.clone())
            );
        }
    }
    out
}

const HEADER: &str = "\
# Configuration reference

<!-- Generated from the config types by `wasmgate config reference > docs/src/reference/config.md`;
     do not edit by hand (tests/config_cli.rs fails when this page is stale). -->

Every key of `config.yaml`, with its type, its default and an example. Every key is optional
unless it says *Required*; a section left out takes the defaults of its keys. `<name>` stands
for a name you choose (a provider's, a virtual model's), `[]` for each element of a list.

- Strings may read the environment: `${VAR}`, or `${VAR:-default}`. A value that is exactly
  `${VAR}` with `VAR` unset counts as absent, so `api_key: ${OPENAI_API_KEY}` falls back to the
  key's other sources.
- A key the gateway does not know is an error, not ignored, and so is a value of the wrong
  type: the error names the key's path
  (``config key `providers.openai.base_url`: must start with http:// or https://``).
- `wasmgate config check [FILE]` checks a file as `serve` would read it, without starting;
  `wasmgate config schema` prints the JSON Schema these pages come from, for editors (see
  [Configuration files](../configuration.md)).
";

fn first_sentence(text: &str) -> String {
    let text = one_paragraph(text);
    match text.find(". ") {
        Some(end) => text[..=end].to_owned(),
        None => text,
    }
}

/// Doc comments wrap at 100 columns; a Markdown paragraph is one logical line.
fn one_paragraph(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn inline(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The key's path as nested YAML with `value` at its end.
fn snippet(path: &[Step], value: Value) -> String {
    let mut value = value;
    for step in path.iter().rev() {
        value = match step {
            Step::Key(k) | Step::Named(k) => json!({ k: value }),
            Step::Item => json!([value]),
        };
    }
    serde_yaml::to_string(&value).unwrap_or_default()
}

fn walk(
    schema: &Map<String, Value>,
    path: &mut Vec<Step>,
    definitions: &Map<String, Value>,
    keys: &mut Vec<Key>,
) {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        let property = resolve(property, definitions);
        path.push(Step::Key(name.clone()));
        let inner = inner_object(&property, definitions);
        keys.push(Key {
            path: path.clone(),
            schema: property.clone(),
            required: required.contains(&name.as_str()),
            nested: inner.is_some(),
        });
        if let Some((steps, inner)) = inner {
            let depth = path.len();
            path.extend(steps);
            walk(&inner, path, definitions, keys);
            path.truncate(depth);
        }
        path.pop();
    }
}

/// The object with keys of its own inside `schema`, and the steps to reach it: the schema
/// itself, a map's values (`<name>`), a list's elements (`[]`), or an alternative of these.
fn inner_object(
    schema: &Map<String, Value>,
    definitions: &Map<String, Value>,
) -> Option<(Vec<Step>, Map<String, Value>)> {
    if schema.contains_key("properties") {
        return Some((Vec::new(), schema.clone()));
    }
    if let Some(items) = schema.get("items") {
        let items = resolve(items, definitions);
        return inner_object(&items, definitions).map(|(mut steps, inner)| {
            steps.insert(0, Step::Item);
            (steps, inner)
        });
    }
    if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        let values = resolve(values, definitions);
        let name = schema
            .get("propertyNames")
            .and_then(|names| names.pointer("/examples/0"))
            .and_then(Value::as_str)
            .unwrap_or("name")
            .to_owned();
        return inner_object(&values, definitions).map(|(mut steps, inner)| {
            steps.insert(0, Step::Named(name));
            (steps, inner)
        });
    }
    schema
        .get("anyOf")
        .and_then(Value::as_array)?
        .iter()
        .find_map(|variant| inner_object(&resolve(variant, definitions), definitions))
}

/// `schema` with its `$ref` (or a lone `allOf`) merged in, and a `null` alternative of an
/// optional value removed: the reference says "unset" instead.
fn resolve(schema: &Value, definitions: &Map<String, Value>) -> Map<String, Value> {
    let mut out = schema.as_object().cloned().unwrap_or_default();
    let target = match out.remove("$ref") {
        Some(Value::String(r)) => r
            .strip_prefix("#/definitions/")
            .and_then(|name| definitions.get(name))
            .cloned(),
        _ => None,
    };
    let target = target.or_else(|| match out.get("allOf").and_then(Value::as_array) {
        Some(all) if all.len() == 1 => {
            let one = all[0].clone();
            out.remove("allOf");
            Some(one)
        }
        _ => None,
    });
    if let Some(target) = target {
        for (k, v) in resolve(&target, definitions) {
            out.entry(k).or_insert(v);
        }
    }
    if let Some(Value::Array(variants)) = out.get("anyOf") {
        let rest: Vec<Value> = variants
            .iter()
            .filter(|v| v.get("type") != Some(&json!("null")))
            .cloned()
            .collect();
        if rest.len() == 1 {
            out.remove("anyOf");
            for (k, v) in resolve(&rest[0], definitions) {
                out.entry(k).or_insert(v);
            }
        } else if rest.len() < variants.len() {
            out.insert("anyOf".to_owned(), Value::Array(rest));
        }
    }
    if let Some(Value::Array(types)) = out.get("type") {
        let rest: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        if let [one] = rest.as_slice() {
            let one = (*one).clone();
            out.insert("type".to_owned(), one);
        }
    }
    if let Some(Value::Array(values)) = out.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(variants)) = out.get("anyOf") {
        let resolved = variants
            .iter()
            .map(|v| Value::Object(resolve(v, definitions)))
            .collect();
        out.insert("anyOf".to_owned(), Value::Array(resolved));
    }
    for inner in ["items", "additionalProperties"] {
        if let Some(value) = out.get(inner).filter(|v| v.is_object()) {
            let resolved = Value::Object(resolve(value, definitions));
            out.insert(inner.to_owned(), resolved);
        }
    }
    out
}

/// The type as a reader would say it: `integer (0 to 65535)`, `list of strings`.
fn type_name(schema: &Map<String, Value>) -> String {
    if let Some(Value::Array(values)) = schema.get("enum") {
        let values: Vec<String> = values.iter().map(|v| format!("`{}`", inline(v))).collect();
        return format!("one of {}", values.join(", "));
    }
    if let Some(Value::Array(variants)) = schema.get("anyOf")
        && !schema.contains_key("type")
        && !schema.contains_key("properties")
    {
        let names: Vec<String> = variants
            .iter()
            .map(|v| type_name(v.as_object().unwrap_or(&Map::new())))
            .collect();
        return names.join(" or ");
    }
    let kind = schema.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "integer" => {
            let min = schema.get("minimum").and_then(Value::as_i64);
            let max = schema.get("maximum").and_then(Value::as_i64);
            match (min, max) {
                (Some(min), Some(max)) => format!("integer ({min} to {max})"),
                (Some(0), None) => "integer (0 or more)".to_owned(),
                (Some(min), None) => format!("integer ({min} or more)"),
                _ => "integer".to_owned(),
            }
        }
        "number" => "number".to_owned(),
        "boolean" => "boolean".to_owned(),
        "string" => match schema.get("format").and_then(Value::as_str) {
            Some("ip") => "string (an IP address)".to_owned(),
            _ => "string".to_owned(),
        },
        "array" => {
            let items = schema
                .get("items")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if items.contains_key("properties") || items.contains_key("$ref") {
                "list of objects (keys below)".to_owned()
            } else if let Some(Value::Array(variants)) = items.get("anyOf") {
                let each: Vec<String> = variants
                    .iter()
                    .filter_map(Value::as_object)
                    .map(|v| {
                        let name = type_name(v);
                        let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
                            "an"
                        } else {
                            "a"
                        };
                        format!("{article} {name}")
                    })
                    .collect();
                format!("list, each {}", each.join(" or "))
            } else {
                format!("list of {}s", type_name(&items))
            }
        }
        "object" => match schema.get("additionalProperties") {
            _ if schema.contains_key("properties") => "object (keys below)".to_owned(),
            Some(Value::Object(values)) if values.is_empty() => {
                "object (free-form: the plugin reads it)".to_owned()
            }
            Some(Value::Object(values))
                if values.contains_key("properties") || values.contains_key("$ref") =>
            {
                "map of names to objects (keys below)".to_owned()
            }
            Some(Value::Object(values)) => format!("map of names to {}s", type_name(values)),
            _ => "object (free-form: the plugin reads it)".to_owned(),
        },
        _ => "any".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Key> {
        keys(&crate::config::schema::schema())
    }

    #[test]
    fn every_key_has_a_description_and_every_value_an_example() {
        let keys = all();
        assert!(keys.len() > 60, "{}", keys.len());
        let mut missing = Vec::new();
        for key in &keys {
            if key.description().is_none_or(|d| d.trim().is_empty()) {
                missing.push(format!("{}: no `///` doc", key.dotted()));
            }
            if !key.nested && key.example().is_none() {
                missing.push(format!(
                    "{}: no default, no allowed values and no #[schemars(extend(\"examples\" = [...]))]",
                    key.dotted()
                ));
            }
        }
        assert!(missing.is_empty(), "{}", missing.join("\n"));
    }

    #[test]
    fn keys_are_named_by_their_paths() {
        let names: Vec<String> = all().iter().map(Key::dotted).collect();
        for expected in [
            "server.port",
            "providers.<name>.plugin",
            "providers.<name>.preset",
            "routing.<name>.targets",
            "routing.<name>.targets[].weight",
            "routing.<name>.retry.backoff_ms",
            "limits.rules[].scope",
            "observability.traces.otlp_endpoint",
            "catalog.providers[].models[].capabilities.vision",
            "ledger.url",
            "dialects.messages.plugin",
        ] {
            assert!(names.iter().any(|n| n == expected), "{expected}: {names:?}");
        }
        assert!(!names.iter().any(|n| n == "models"), "skipped field listed");
    }

    #[test]
    fn a_snippet_nests_the_key_under_its_parents() {
        let keys = all();
        let key = keys
            .iter()
            .find(|k| k.dotted() == "limits.rules[].policy")
            .unwrap();
        let yaml = snippet(&key.path, key.example().unwrap().clone());
        assert_eq!(yaml, "limits:\n  rules:\n  - policy: budget\n");
        let key = keys
            .iter()
            .find(|k| k.dotted() == "providers.<name>.base_url")
            .unwrap();
        let yaml = snippet(&key.path, key.example().unwrap().clone());
        assert_eq!(
            yaml,
            "providers:\n  openai:\n    base_url: https://api.openai.com/v1\n"
        );
    }

    #[test]
    fn types_and_defaults_are_shown() {
        let page = markdown(&crate::config::schema::schema());
        assert!(
            page.contains("### `server.port`\n\nThe port to listen on (`--port` overrides it).\n\n- Type: integer (0 to 65535)\n- Default: `8080`\n"),
            "{page}"
        );
        assert!(
            page.contains("- Type: one of `global`, `key`, `project`, `user`, `model`"),
            "{page}"
        );
    }
}
