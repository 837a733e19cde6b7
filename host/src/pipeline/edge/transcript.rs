//! Transcriptions and translations written in the `response_format` the client asked for,
//! from OpenAI's transcription JSON the provider plugin returned (`json`, or `verbose_json`,
//! whose segments make `srt` and `vtt`). The plugin asks the upstream for the shape that
//! carries what the request is billed for; this writes back what the client wanted.

use serde::Deserialize;
use serde_json::Value;

/// A transcription answer ready to send: its content type and body.
pub struct Rendered {
    pub content_type: &'static str,
    pub body: String,
}

/// Why an answer could not be written in the asked format.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error("the upstream's transcription is not JSON with a `text`")]
    NoText,
    #[error("the upstream's transcription has no segments to write {0} from")]
    NoSegments(&'static str),
}

const JSON: &str = "application/json";
const TEXT: &str = "text/plain; charset=utf-8";
const VTT: &str = "text/vtt; charset=utf-8";

#[derive(Deserialize)]
struct Transcript {
    text: String,
    #[serde(default)]
    segments: Option<Vec<Segment>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    logprobs: Option<Value>,
}

#[derive(Deserialize)]
struct Segment {
    start: f64,
    end: f64,
    text: String,
}

/// Writes `body` (the plugin's JSON) as `format` (the client's `response_format`, `json` when
/// it gave none).
pub fn render(format: &str, body: String) -> Result<Rendered, RenderError> {
    let json = |body| Rendered {
        content_type: JSON,
        body,
    };
    match format {
        "verbose_json" | "diarized_json" => return Ok(json(body)),
        _ => {}
    }
    let transcript: Transcript = serde_json::from_str(&body).map_err(|_| RenderError::NoText)?;
    match format {
        "text" => Ok(Rendered {
            content_type: TEXT,
            body: transcript.text,
        }),
        "srt" => Ok(Rendered {
            content_type: TEXT,
            body: cues(&transcript, "srt", ',', |i| format!("{}\n", i + 1))?,
        }),
        "vtt" => Ok(Rendered {
            content_type: VTT,
            body: format!(
                "WEBVTT\n\n{}",
                cues(&transcript, "vtt", '.', |_| String::new())?
            ),
        }),
        // `json`: as OpenAI writes it, `text` and, where the upstream gave them, `usage` and
        // `logprobs` (a `verbose_json` answer is cut down to that).
        _ if transcript.segments.is_none() => Ok(json(body)),
        _ => {
            let mut out = serde_json::Map::new();
            out.insert("text".to_owned(), Value::String(transcript.text));
            if let Some(usage) = transcript.usage {
                out.insert("usage".to_owned(), usage);
            }
            if let Some(logprobs) = transcript.logprobs {
                out.insert("logprobs".to_owned(), logprobs);
            }
            Ok(json(Value::Object(out).to_string()))
        }
    }
}

/// The segments as subtitle cues, each headed by `head(index)`, times with `decimal` before
/// the milliseconds.
fn cues(
    transcript: &Transcript,
    format: &'static str,
    decimal: char,
    head: impl Fn(usize) -> String,
) -> Result<String, RenderError> {
    let segments = transcript
        .segments
        .as_ref()
        .ok_or(RenderError::NoSegments(format))?;
    let mut out = String::new();
    for (i, segment) in segments.iter().enumerate() {
        out.push_str(&head(i));
        out.push_str(&timestamp(segment.start, decimal));
        out.push_str(" --> ");
        out.push_str(&timestamp(segment.end, decimal));
        out.push('\n');
        out.push_str(segment.text.trim());
        out.push_str("\n\n");
    }
    Ok(out)
}

/// `HH:MM:SS,mmm` (SubRip) or `HH:MM:SS.mmm` (WebVTT).
fn timestamp(seconds: f64, decimal: char) -> String {
    let ms = if seconds.is_finite() && seconds > 0.0 {
        (seconds * 1000.0).round() as u64
    } else {
        0
    };
    let (h, m, s, ms) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    format!("{h:02}:{m:02}:{s:02}{decimal}{ms:03}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERBOSE: &str = r#"{"task":"transcribe","language":"english","duration":8.47,"text":"Hello there. General Kenobi.","segments":[{"id":0,"seek":0,"start":0.0,"end":3.2,"text":" Hello there.","tokens":[1],"temperature":0.0,"avg_logprob":-0.2,"compression_ratio":1.0,"no_speech_prob":0.01},{"id":1,"seek":0,"start":3.2,"end":3725.5,"text":" General Kenobi.","tokens":[2],"temperature":0.0,"avg_logprob":-0.2,"compression_ratio":1.0,"no_speech_prob":0.01}],"usage":{"type":"duration","seconds":9}}"#;

    fn body(format: &str) -> String {
        render(format, VERBOSE.to_owned())
            .map(|r| r.body)
            .unwrap_or_default()
    }

    #[test]
    fn writes_each_format_from_verbose_json() {
        assert_eq!(body("verbose_json"), VERBOSE);
        assert_eq!(body("text"), "Hello there. General Kenobi.");
        assert_eq!(
            body("json"),
            r#"{"text":"Hello there. General Kenobi.","usage":{"type":"duration","seconds":9}}"#
        );
        assert_eq!(
            body("srt"),
            "1\n00:00:00,000 --> 00:00:03,200\nHello there.\n\n\
             2\n00:00:03,200 --> 01:02:05,500\nGeneral Kenobi.\n\n"
        );
        assert_eq!(
            body("vtt"),
            "WEBVTT\n\n00:00:00.000 --> 00:00:03.200\nHello there.\n\n\
             00:00:03.200 --> 01:02:05.500\nGeneral Kenobi.\n\n"
        );
    }

    #[test]
    fn json_without_segments_passes_and_cannot_make_subtitles() {
        let json = r#"{"text":"hi","usage":{"type":"tokens","input_tokens":3,"output_tokens":1,"total_tokens":4}}"#;
        assert_eq!(
            render("json", json.to_owned()).map(|r| r.body),
            Ok(json.to_owned())
        );
        assert_eq!(
            render("text", json.to_owned()).map(|r| r.body),
            Ok("hi".to_owned())
        );
        assert_eq!(
            render("srt", json.to_owned()).map(|r| r.body),
            Err(RenderError::NoSegments("srt"))
        );
    }
}
