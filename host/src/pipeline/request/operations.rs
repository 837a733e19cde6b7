//! The checks of the JSON bodies of OpenAI's smaller endpoints (text completions,
//! moderations, speech) and of rerank (Cohere's v2 shape): what must be there for an upstream
//! to answer, by the public API references. The rest goes on untouched.

use super::check::{Check, invalid, missing, wrong_type};
use super::raw_json::{self, Fields, Kind};
use crate::clip::echo;
use crate::error::ApiError;

/// `POST /v1/completions`: `prompt` (a string, or an array of strings or token arrays).
pub fn completions(body: &Fields) -> Result<(), ApiError> {
    match body.get("prompt").map(|raw| Kind::of(raw)) {
        Some(Kind::String | Kind::Array) => {}
        Some(other) => return Err(wrong_type("prompt", "a string or an array", other)),
        None => return Err(missing("prompt")),
    }
    for (field, check) in [
        ("max_tokens", Check::PositiveInteger),
        ("n", Check::PositiveInteger),
        ("best_of", Check::PositiveInteger),
        ("temperature", Check::Number),
        ("top_p", Check::Number),
    ] {
        check.apply(body, field)?;
    }
    Ok(())
}

/// `POST /v1/moderations`: `input` (a string, or a non-empty array of strings or parts).
pub fn moderations(body: &Fields) -> Result<(), ApiError> {
    non_empty(
        body,
        "input",
        &[Kind::String, Kind::Array],
        "a string or an array",
    )
}

/// `POST /v1/rerank`: `query` and a non-empty `documents` array; `top_n` at least 1.
pub fn rerank(body: &Fields) -> Result<(), ApiError> {
    non_empty(body, "query", &[Kind::String], "a string")?;
    non_empty(body, "documents", &[Kind::Array], "an array")?;
    Check::PositiveInteger.apply(body, "top_n")?;
    Check::PositiveInteger.apply(body, "max_tokens_per_doc")
}

/// The audio formats `/v1/audio/speech` writes.
const SPEECH_FORMATS: [&str; 6] = ["mp3", "opus", "aac", "flac", "wav", "pcm"];
/// Characters of `input`, at most (OpenAI's limit).
const SPEECH_INPUT_MAX: usize = 4096;

/// `POST /v1/audio/speech`: `input` (at most 4096 characters), `voice`, and a known
/// `response_format`.
pub fn speech(body: &Fields) -> Result<(), ApiError> {
    non_empty(body, "input", &[Kind::String], "a string")?;
    if let Some(input) = body.get("input").and_then(|raw| raw_json::string(raw))
        && input.chars().count() > SPEECH_INPUT_MAX
    {
        return Err(invalid(
            "input",
            &format!("'input' is longer than {SPEECH_INPUT_MAX} characters."),
        ));
    }
    // A voice's name, or (newer models) an object naming a custom voice.
    match body.get("voice").map(|raw| Kind::of(raw)) {
        Some(Kind::String | Kind::Object) => {}
        Some(other) => return Err(wrong_type("voice", "a string or an object", other)),
        None => return Err(missing("voice")),
    }
    if let Some(raw) = body.get("response_format") {
        match raw_json::string(raw) {
            Some(format) if SPEECH_FORMATS.contains(&format.as_str()) => {}
            Some(format) => {
                return Err(invalid(
                    "response_format",
                    &format!(
                        "Invalid value for 'response_format': '{}'. Supported values are: {}.",
                        echo(&format),
                        SPEECH_FORMATS.join(", ")
                    ),
                ));
            }
            None => return Err(wrong_type("response_format", "a string", Kind::of(raw))),
        }
    }
    Check::Number.apply(body, "speed")
}

/// `field` is there, of one of `kinds`, and not empty.
fn non_empty(body: &Fields, field: &str, kinds: &[Kind], expected: &str) -> Result<(), ApiError> {
    let Some(raw) = body.get(field) else {
        return Err(missing(field));
    };
    let kind = Kind::of(raw);
    if !kinds.contains(&kind) {
        return Err(wrong_type(field, expected, kind));
    }
    let empty = match kind {
        Kind::String => raw_json::string(raw).is_some_and(|s| s.is_empty()),
        Kind::Array => {
            let mut empty = true;
            // One element is enough to know: the walk stops there.
            let _ = raw_json::each(raw, |_, _| {
                empty = false;
                Err(())
            });
            empty
        }
        _ => false,
    };
    if empty {
        return Err(invalid(field, &format!("'{field}' must not be empty.")));
    }
    Ok(())
}
