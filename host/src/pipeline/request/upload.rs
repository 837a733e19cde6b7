//! Multipart uploads (`/v1/audio/transcriptions`, `/v1/audio/translations`), read as they
//! arrive under the body budget: the file is kept as the chunks it came in (handed upstream
//! as they are, never joined into a second copy), the text fields become the canonical body
//! (a JSON object of strings; a repeated `name[]` field an array of them).

use std::sync::{Arc, Mutex};

use axum::body::{Body, HttpBody};
use axum::http::{HeaderMap, header};
use futures_util::StreamExt;
use indexmap::IndexMap;

use super::body::{Budgeted, Reservation};
use super::check::check_model;
use super::client::ClientRequest;
use super::raw_json::Fields;
use crate::clip::{clip, echo};
use crate::error::ApiError;
use crate::plugins::Operation;
use crate::state::AppState;
use crate::upstream::Upload;

/// The part OpenAI takes the audio in.
const FILE_FIELD: &str = "file";
/// Text parts, at most (repeated ones each count): OpenAI's form has ten or so.
const FIELDS_MAX: usize = 64;
/// Bytes of one text part, at most (a `prompt` is the longest).
const TEXT_MAX: usize = 64 << 10;
/// Bytes of a part's name, file name or content type kept.
const NAME_MAX: usize = 128;
/// The formats OpenAI defines for transcriptions and translations.
pub const RESPONSE_FORMATS: [&str; 6] = [
    "json",
    "text",
    "srt",
    "verbose_json",
    "vtt",
    "diarized_json",
];

/// Reads a multipart form into the request: 400 when it is not one, lacks `file` or `model`, or
/// asks what the gateway cannot answer; the budget's errors as [`super::body::read`] gives them.
pub async fn read(
    state: &AppState,
    operation: Operation,
    headers: &HeaderMap,
    body: Body,
) -> Result<(ClientRequest, Reservation), ApiError> {
    let boundary = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| multer::parse_boundary(v).ok())
        .ok_or_else(|| {
            invalid(
                FILE_FIELD,
                "This endpoint takes a multipart/form-data body with the audio in `file`.",
            )
        })?;
    let budgeted = Arc::new(Mutex::new(Some(
        Budgeted::reserve(state, body.size_hint().upper()).await?,
    )));
    // Why reading stopped, when the budget or the connection stopped it (multer only passes on
    // an error's text).
    let stopped: Arc<Mutex<Option<ApiError>>> = Arc::default();
    let chunks = {
        let (budgeted, stopped) = (Arc::clone(&budgeted), Arc::clone(&stopped));
        body.into_data_stream().map(move |chunk| {
            let error = match chunk {
                Ok(chunk) => {
                    let mut held = crate::sync::lock(&budgeted);
                    match held.as_mut().map(|b| b.take(chunk.len())) {
                        Some(Err(error)) => error,
                        Some(Ok(())) | None => return Ok(chunk),
                    }
                }
                Err(e) => ApiError::body_unreadable(&e),
            };
            let text = error.to_string();
            *crate::sync::lock(&stopped) = Some(error);
            Err(std::io::Error::other(text))
        })
    };
    let mut form = multer::Multipart::new(chunks, boundary);
    let unreadable = |e: multer::Error| {
        crate::sync::lock(&stopped).take().unwrap_or_else(|| {
            invalid(
                FILE_FIELD,
                &format!("The multipart body is malformed: {e}."),
            )
        })
    };
    let mut texts: IndexMap<String, Vec<String>> = IndexMap::new();
    let mut upload: Option<Upload> = None;
    let mut parts = 0;
    while let Some(mut field) = form.next_field().await.map_err(unreadable)? {
        let name = clip(field.name().unwrap_or_default(), NAME_MAX).into_owned();
        if name == FILE_FIELD {
            if upload.is_some() {
                return Err(invalid(FILE_FIELD, "The form has more than one `file`."));
            }
            let mut file = Upload {
                file_name: clip(field.file_name().unwrap_or("audio"), NAME_MAX).into_owned(),
                // Parsed by multer, so a valid type; one too long to keep is left out rather
                // than cut into an invalid one.
                content_type: field
                    .content_type()
                    .map(|m| m.as_ref().to_owned())
                    .filter(|m| m.len() <= NAME_MAX),
                chunks: Vec::new(),
            };
            while let Some(chunk) = field.chunk().await.map_err(unreadable)? {
                file.chunks.push(chunk);
            }
            upload = Some(file);
            continue;
        }
        parts += 1;
        if name.is_empty() || parts > FIELDS_MAX {
            return Err(invalid(&name, "The form has too many or unnamed fields."));
        }
        let mut text: Vec<u8> = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(unreadable)? {
            if text.len() + chunk.len() > TEXT_MAX {
                return Err(invalid(
                    &name,
                    &format!(
                        "The form field `{}` is longer than {TEXT_MAX} bytes.",
                        echo(&name)
                    ),
                ));
            }
            text.extend_from_slice(&chunk);
        }
        let text = String::from_utf8(text).map_err(|_| {
            invalid(
                &name,
                &format!("The form field `{}` is not UTF-8 text.", echo(&name)),
            )
        })?;
        texts.entry(name).or_default().push(text);
    }
    let reservation = crate::sync::lock(&budgeted)
        .take()
        .map(Budgeted::into_reservation);
    let upload = upload
        .filter(|u| !u.is_empty())
        .ok_or_else(|| invalid(FILE_FIELD, "Missing required parameter: 'file'."))?;
    let request = into_request(operation, texts, upload)?;
    Ok((request, reservation.unwrap_or_else(Reservation::none)))
}

/// Checks the text fields and makes them the canonical body.
fn into_request(
    operation: Operation,
    texts: IndexMap<String, Vec<String>>,
    upload: Upload,
) -> Result<ClientRequest, ApiError> {
    let single = |name: &str| texts.get(name).and_then(|v| v.last()).map(String::as_str);
    let model = single("model")
        .filter(|m| !m.is_empty())
        .ok_or_else(|| invalid("model", "Missing required parameter: 'model'."))?
        .to_owned();
    check_model(&model)?;
    if let Some(format) = single("response_format")
        && !RESPONSE_FORMATS.contains(&format)
    {
        return Err(invalid(
            "response_format",
            &format!(
                "Invalid value for 'response_format': '{}'. Supported values are: {}.",
                echo(format),
                RESPONSE_FORMATS.join(", ")
            ),
        ));
    }
    // A form's booleans are text. Only transcriptions stream (the gpt-4o models, as events).
    let stream = single("stream") == Some("true");
    if stream && operation == Operation::AudioTranslations {
        return Err(invalid("stream", "Translations do not stream."));
    }
    let mut body = Fields::new();
    for (name, values) in texts {
        let raw = if name.ends_with("[]") {
            serde_json::value::to_raw_value(&values)
        } else {
            serde_json::value::to_raw_value(values.last().map_or("", String::as_str))
        };
        if let Ok(raw) = raw {
            body.insert(name, raw);
        }
    }
    Ok(ClientRequest::from_form(
        operation, model, stream, body, upload,
    ))
}

fn invalid(param: &str, message: &str) -> ApiError {
    ApiError::InvalidField {
        param: param.to_owned(),
        message: message.to_owned(),
    }
}
