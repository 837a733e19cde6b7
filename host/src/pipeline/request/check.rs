//! The checks every request's fields go through: a field of the wrong type, a missing one, an
//! invalid model name, each as the client's 400 naming the field (OpenAI's wording).

use super::raw_json::{self, Fields, Kind};
use crate::clip::{echo, unprintable};
use crate::error::ApiError;

/// Bytes of a model name, at most (Bedrock's inference-profile ARNs are the longest, ~120).
pub const MODEL_MAX: usize = 256;

/// Refuses a model name no provider could serve and no log or metric should carry: longer than
/// [`MODEL_MAX`] bytes, or with control characters.
pub fn check_model(model: &str) -> Result<(), ApiError> {
    if model.len() > MODEL_MAX || model.chars().any(unprintable) {
        return Err(invalid(
            "model",
            &format!(
                "Invalid 'model' `{}`: a model name has at most {MODEL_MAX} bytes and no \
                 control characters.",
                echo(model)
            ),
        ));
    }
    Ok(())
}

#[derive(Clone, Copy)]
pub(in crate::pipeline) enum Check {
    PositiveInteger,
    Number,
    Array,
    Object,
}

impl Check {
    pub(in crate::pipeline) fn apply(self, body: &Fields, field: &str) -> Result<(), ApiError> {
        let Some(raw) = body.get(field) else {
            return Ok(());
        };
        let kind = Kind::of(raw);
        let ok = match (self, kind) {
            (_, Kind::Null) => true,
            (Self::PositiveInteger, Kind::Number) => raw_json::integer(raw).is_some_and(|n| n >= 1),
            (Self::Number, Kind::Number) => true,
            (Self::Array, Kind::Array) => true,
            (Self::Object, Kind::Object) => true,
            _ => false,
        };
        if ok {
            return Ok(());
        }
        let expected = match self {
            Self::PositiveInteger => "a positive integer",
            Self::Number => "a number",
            Self::Array => "an array",
            Self::Object => "an object",
        };
        Err(wrong_type(field, expected, kind))
    }
}

pub(in crate::pipeline) fn invalid(param: &str, message: &str) -> ApiError {
    ApiError::InvalidField {
        param: param.to_owned(),
        message: message.to_owned(),
    }
}

pub(in crate::pipeline) fn missing(param: &str) -> ApiError {
    invalid(param, &format!("Missing required parameter: '{param}'."))
}

pub(in crate::pipeline) fn wrong_type(param: &str, expected: &str, got: Kind) -> ApiError {
    invalid(
        param,
        &format!(
            "Invalid type for '{param}': expected {expected}, but got {} instead.",
            got.name()
        ),
    )
}
