//! The end user a request is for, from the gateway-only `extra` object: bounded in count and
//! length, since every field reaches the ledger (records and rollups), routers or limiters.
//!
//! Values past a bound are refused with a 400 naming them, not trimmed: a trimmed user id
//! would silently merge users, or split one user's usage in two.

use serde_json::value::RawValue;

use super::raw_json::{self, Fields, Kind};
use crate::clip::unprintable;
use crate::error::ApiError;

/// Bytes of a user id or name, at most.
pub const TEXT_MAX: usize = 256;
/// Tags of one user, at most, and bytes of each.
pub const TAGS_MAX: usize = 16;
pub const TAG_MAX: usize = 64;
/// Metadata pairs, at most, and bytes of each key and value (OpenAI's own `metadata` bounds).
pub const METADATA_MAX: usize = 16;
pub const METADATA_KEY_MAX: usize = 64;
pub const METADATA_VALUE_MAX: usize = 512;

/// Who a request is for, as the hosted API documents it: `extra.user` (`id` or `user_id`,
/// `name` or `user_name`, `tags` or `user_tags`), with OpenAI's `user` field as a fallback id;
/// and `extra.metadata`, flattened to strings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UserInfo {
    pub id: Option<String>,
    pub name: Option<String>,
    pub tags: Vec<String>,
    pub metadata: Vec<(String, String)>,
}

impl UserInfo {
    pub(in crate::pipeline) fn from_body(body: &Fields) -> Result<Self, ApiError> {
        let extra = match body.get("extra") {
            None => None,
            Some(extra) => match Kind::of(extra) {
                Kind::Null => None,
                Kind::Object => Some(&**extra),
                other => return Err(super::check::wrong_type("extra", "an object", other)),
            },
        };
        let [user, metadata] = match extra {
            Some(extra) => raw_json::pick(extra, ["user", "metadata"]),
            None => [None, None],
        };
        let [id, user_id, name, user_name, tags, user_tags] = match user {
            Some(user) => raw_json::pick(
                user,
                ["id", "user_id", "name", "user_name", "tags", "user_tags"],
            ),
            None => [None; 6],
        };
        let (param, id) = match id.or(user_id).and_then(text) {
            Some(id) => ("extra.user.id", Some(id)),
            None => (
                "user",
                body.get("user").and_then(|raw| raw_json::string(raw)),
            ),
        };
        Ok(Self {
            id: bounded_text(param, id)?,
            name: bounded_text("extra.user.name", name.or(user_name).and_then(text))?,
            tags: match tags.or(user_tags) {
                Some(raw) => bounded_tags(raw)?,
                None => Vec::new(),
            },
            metadata: match metadata {
                Some(raw) => bounded_metadata(raw)?,
                None => Vec::new(),
            },
        })
    }
}

/// A user field as text: a string, or a number written out; anything else counts as absent.
fn text(raw: &RawValue) -> Option<String> {
    match Kind::of(raw) {
        Kind::String => raw_json::string(raw),
        Kind::Number => serde_json::from_str::<serde_json::Number>(raw.get())
            .ok()
            .map(|n| n.to_string()),
        Kind::Null | Kind::Bool | Kind::Array | Kind::Object => None,
    }
}

fn bounded_text(param: &str, value: Option<String>) -> Result<Option<String>, ApiError> {
    match value {
        Some(v) if v.len() > TEXT_MAX || v.chars().any(unprintable) => Err(too_long(
            param,
            &format!("at most {TEXT_MAX} bytes, without control characters"),
        )),
        other => Ok(other),
    }
}

/// The string tags of `raw` (other elements are skipped, as before bounds existed).
fn bounded_tags(raw: &RawValue) -> Result<Vec<String>, ApiError> {
    let param = "extra.user.tags";
    let mut tags = Vec::new();
    raw_json::each(raw, |_, element| {
        let Some(tag) = raw_json::string(element) else {
            return Ok(());
        };
        if tags.len() == TAGS_MAX {
            return Err(too_long(param, &format!("at most {TAGS_MAX} tags")));
        }
        if tag.len() > TAG_MAX || tag.chars().any(unprintable) {
            return Err(too_long(
                param,
                &format!("tags of at most {TAG_MAX} bytes, without control characters"),
            ));
        }
        tags.push(tag);
        Ok(())
    })?;
    Ok(tags)
}

/// `extra.metadata` as string pairs: strings as they are, other values as compact JSON.
fn bounded_metadata(raw: &RawValue) -> Result<Vec<(String, String)>, ApiError> {
    let param = "extra.metadata";
    let mut pairs = Vec::new();
    raw_json::each_field(raw, |i, key, value| {
        if i == METADATA_MAX {
            return Err(too_long(param, &format!("at most {METADATA_MAX} keys")));
        }
        if key.len() > METADATA_KEY_MAX || key.chars().any(unprintable) {
            return Err(too_long(
                param,
                &format!("keys of at most {METADATA_KEY_MAX} bytes, without control characters"),
            ));
        }
        // The raw text bounds the compact form, so a large value is refused unparsed.
        let value = match Kind::of(value) {
            Kind::String => raw_json::string(value),
            _ if value.get().len() > METADATA_VALUE_MAX * 4 => None,
            _ => serde_json::from_str::<serde_json::Value>(value.get())
                .ok()
                .map(|v| v.to_string()),
        };
        match value {
            Some(value) if value.len() <= METADATA_VALUE_MAX => {
                pairs.push((key, value));
                Ok(())
            }
            _ => Err(too_long(
                param,
                &format!("values of at most {METADATA_VALUE_MAX} bytes"),
            )),
        }
    })?;
    Ok(pairs)
}

fn too_long(param: &str, rule: &str) -> ApiError {
    ApiError::InvalidField {
        param: param.to_owned(),
        message: format!("Invalid '{param}': it must have {rule}."),
    }
}
