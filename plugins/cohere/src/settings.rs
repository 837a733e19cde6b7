//! The entry's `options`, which the SDK reads into [`Settings`] for each call.

use serde::Deserialize;

/// The `options:` of an entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// The embed `input_type`, which OpenAI's request has no place for. Documents are what a
    /// gateway embeds most, to be searched later.
    #[serde(default)]
    pub input_type: InputType,
}

/// The `input_type`s the embed reference lists.
#[derive(Clone, Copy, Debug, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputType {
    #[default]
    SearchDocument,
    SearchQuery,
    Classification,
    Clustering,
    Image,
}
