//! The JSON Schema of `config.yaml`, derived from the config types: what `wasmgate config
//! schema` prints for editors, and what the manual's configuration reference is generated from.
//!
//! One source, the serde structs of this module: their `///` docs become descriptions, their
//! `#[serde(default = ...)]` values defaults, `deny_unknown_fields` `additionalProperties:
//! false`. Draft 7, the newest draft editors' YAML support (yaml-language-server) handles fully.

use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use super::config_file::Config;

/// The schema, as JSON.
pub fn schema() -> Value {
    let mut schema = SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<Config>();
    schema.insert("title".to_owned(), json!("wasmgate config.yaml"));
    schema.to_value()
}
