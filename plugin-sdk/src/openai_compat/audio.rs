//! OpenAI's audio endpoints for upstreams that speak them (OpenAI, Azure OpenAI, Groq, vLLM):
//! transcriptions and translations as multipart forms whose file the host attaches (a streamed
//! transcription's `transcript.text.*` events decoded by `OpenAiStream`, which reads the usage
//! of the last), and speech as a request whose audio the host streams to the client.

use serde::Deserialize;
use serde_json::Value;

use crate::{
    CanonicalRequest, Completion, FormRequest, HttpRequest, HttpResponse, PluginError, Prepared,
    RawRequest, Usage, count_tokens, openai_error, openai_usage,
};

/// The multipart part OpenAI takes the audio file in.
const FILE_FIELD: &str = "file";

/// The form for a transcription or translation sent to `url`. The client's text fields go on as
/// they came, but for `response_format`: the upstream is asked for the shape that carries what
/// the request is billed for (see [`upstream_format`]); the host writes the client's own format
/// from it.
pub fn transcription_form(
    url: String,
    request: &CanonicalRequest,
) -> Result<Prepared, PluginError> {
    let fields: serde_json::Map<String, Value> = serde_json::from_str(&request.body)
        .map_err(|_| PluginError::invalid_request("the form fields are not a JSON object"))?;
    let asked = fields
        .get("response_format")
        .and_then(Value::as_str)
        .unwrap_or("json");
    // A stream (the gpt-4o models) reports its usage in its last event, whatever the format.
    let format = if request.stream {
        asked
    } else {
        upstream_format(&request.model, asked)
    };
    let mut parts = Vec::with_capacity(fields.len() + 1);
    for (name, value) in &fields {
        if name == "response_format" {
            continue;
        }
        match value {
            Value::String(text) => parts.push((name.clone(), text.clone())),
            // A repeated field (`timestamp_granularities[]`) arrives as an array of strings.
            Value::Array(items) => parts.extend(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|text| (name.clone(), text.to_owned())),
            ),
            _ => {
                return Err(PluginError::invalid_request(format!(
                    "the form field `{name}` is not text"
                )));
            }
        }
    }
    parts.push(("response_format".to_owned(), format.to_owned()));
    let mut http = HttpRequest::new("POST", url);
    if request.stream {
        http.set_header("accept", "text/event-stream");
    }
    Ok(Prepared::UpstreamForm(FormRequest {
        request: http,
        fields: parts,
        file_field: FILE_FIELD.to_owned(),
    }))
}

/// The `response_format` asked of the upstream when the client asked for `asked`. Whisper
/// models are billed by the duration, which only `verbose_json` reports (and whose segments
/// make `srt` and `vtt`): they are always asked for it. The `gpt-*` transcription models are
/// billed by tokens, reported in `json`, and serve no other structured format: `text` becomes
/// `json` for them, and anything else goes on as asked (the upstream refuses what it lacks).
pub fn upstream_format<'a>(model: &str, asked: &'a str) -> &'a str {
    if model.starts_with("gpt-") {
        if asked == "text" { "json" } else { asked }
    } else {
        "verbose_json"
    }
}

/// Reads a transcription or translation answer (`json` or `verbose_json`): passed on for the
/// host to render, with its usage. Tokens when the upstream reports them (`usage.type:
/// "tokens"`), else the audio's duration (`usage.seconds`, or `duration` in `verbose_json`).
pub fn parse_transcription(response: HttpResponse) -> Result<Completion, PluginError> {
    #[derive(Deserialize)]
    struct Envelope {
        usage: Option<Value>,
        duration: Option<f64>,
    }
    if !response.is_success() {
        return Err(openai_error(response.status, &response.body));
    }
    let envelope: Envelope = serde_json::from_slice(&response.body)
        .map_err(|_| PluginError::upstream("upstream answered with a body that is not JSON"))?;
    let seconds = envelope
        .usage
        .as_ref()
        .and_then(|u| u.get("seconds"))
        .and_then(Value::as_f64)
        .or(envelope.duration);
    let usage = match (envelope.usage.as_ref().and_then(openai_usage), seconds) {
        (Some(tokens), _) => Some(tokens),
        (None, Some(seconds)) if seconds.is_finite() && seconds >= 0.0 => Some(Usage {
            // Whole milliseconds: the host rounds to the second, as OpenAI bills.
            audio_ms: (seconds * 1000.0).round() as u64,
            ..Usage::default()
        }),
        (None, _) => None,
    };
    let body = String::from_utf8(response.body)
        .map_err(|_| PluginError::upstream("upstream answered with a body that is not UTF-8"))?;
    Ok(Completion { body, usage })
}

/// A speech request to `url`: the body goes on as the client wrote it, and its usage is counted
/// here, from the text to speak (the audio that comes back says nothing of it): its characters
/// (what `tts-1` is billed by) and its tokens (what `gpt-4o-mini-tts` bills as input).
pub fn speech(url: String, request: &CanonicalRequest) -> Result<Prepared, PluginError> {
    #[derive(Deserialize)]
    struct Speech<'a> {
        #[serde(borrow)]
        input: std::borrow::Cow<'a, str>,
    }
    let speech: Speech<'_> = serde_json::from_str(&request.body).map_err(|_| {
        PluginError::invalid_request("`input` must be a string").with_param("input")
    })?;
    let usage = Usage {
        input_tokens: u64::from(count_tokens(&speech.input)),
        characters: speech.input.chars().count() as u64,
        ..Usage::default()
    };
    Ok(Prepared::UpstreamRaw(RawRequest {
        request: HttpRequest::post_json(url, request.body.clone().into_bytes()),
        usage: Some(usage),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whisper_is_asked_for_verbose_json_and_gpt_models_for_json() {
        for asked in ["json", "text", "srt", "vtt", "verbose_json"] {
            assert_eq!(upstream_format("whisper-1", asked), "verbose_json");
        }
        assert_eq!(upstream_format("gpt-4o-transcribe", "text"), "json");
        assert_eq!(upstream_format("gpt-4o-transcribe", "json"), "json");
        assert_eq!(upstream_format("gpt-4o-transcribe", "srt"), "srt");
    }

    fn ok(body: &str) -> HttpResponse {
        HttpResponse {
            status: 200,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn reads_tokens_or_the_duration() {
        let tokens = r#"{"text":"hi","usage":{"type":"tokens","input_tokens":14,"input_token_details":{"text_tokens":0,"audio_tokens":14},"output_tokens":45,"total_tokens":59}}"#;
        let usage = parse_transcription(ok(tokens)).ok().and_then(|c| c.usage);
        assert_eq!(usage, Some(Usage::tokens(14, 45)));
        let seconds = r#"{"text":"hi","usage":{"type":"duration","seconds":3}}"#;
        let usage = parse_transcription(ok(seconds)).ok().and_then(|c| c.usage);
        assert_eq!(usage.map(|u| u.audio_ms), Some(3000));
        let verbose = r#"{"task":"transcribe","language":"english","duration":8.4702,"text":"hi","segments":[]}"#;
        let usage = parse_transcription(ok(verbose)).ok().and_then(|c| c.usage);
        assert_eq!(usage.map(|u| u.audio_ms), Some(8470));
    }
}
