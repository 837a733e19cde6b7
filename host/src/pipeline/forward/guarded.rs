//! A pass-through request or answer that guards apply to.
//!
//! A request's body is read whole (within the body limit and the memory budget, as any
//! request's) rather than streamed, and shown to the request guards with its query's values and
//! the headers it forwards, each where it stands; a rewrite is written back there. A body no
//! guard can read (compressed, or neither JSON nor text) is refused unless the guards' entries
//! exempt `passthrough`.
//!
//! An answer is read whole too (within the same bounds) and each of its strings shown to the
//! answer guards: a JSON body's, an event stream's `data:` (each line's JSON, or its text), a
//! text body whole. One they cannot read (compressed, binary, past the body limit) is withheld
//! with a 502 unless their entries exempt `passthrough`, in which case it passes as it came.

use axum::body::Body;
use axum::http::HeaderMap;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use futures_util::stream;
use serde_json::{Value, json};

use super::answer::Upstream;
use crate::config::guards::BlindRoute;
use crate::error::ApiError;
use crate::pipeline::context::Context;
use crate::pipeline::guard::answer as answer_guards;
use crate::pipeline::guard::body::BodyGuards;
use crate::pipeline::guard::check::Checker;
use crate::pipeline::request::body::Budgeted;
use crate::state::AppState;

/// What goes upstream once the guards have seen it.
pub struct Outgoing {
    pub headers: Vec<(String, String)>,
    pub query: Option<String>,
    pub body: Bytes,
}

/// How the body is shown to the guards.
enum Shown {
    Json,
    Text,
    Empty,
    /// An event stream (`text/event-stream`): its `data:` lines.
    Events,
}

/// A request's parts the guards read besides its body.
pub struct Parts<'a> {
    /// The provider entry it goes to (the model, as guards' scopes see it).
    pub entry: &'a str,
    pub client_headers: &'a HeaderMap,
    /// The headers it forwards.
    pub headers: Vec<(String, String)>,
    pub query: Option<&'a str>,
}

/// `parts` and `body` through `guards`.
pub async fn guarded(
    state: &AppState,
    cx: &mut Context,
    guards: &BodyGuards,
    parts: Parts<'_>,
    body: Body,
) -> Result<Outgoing, ApiError> {
    let Parts {
        entry,
        client_headers,
        mut headers,
        query,
    } = parts;
    // The body is sent whole, its length as it leaves.
    headers.retain(|(name, _)| name != "content-length");
    let gateway = std::sync::Arc::clone(&cx.gateway);
    let refuse = |what| guards.refuse_blind(&gateway, BlindRoute::Passthrough, what);
    let (bytes, _reservation) = crate::pipeline::request::body::read(state, body).await?;
    let unchanged = |headers, bytes| Outgoing {
        headers,
        query: query.map(str::to_owned),
        body: bytes,
    };
    let shown = match shown(client_headers, &bytes) {
        Ok(shown) => shown,
        Err(what) => {
            refuse(what)?;
            return Ok(unchanged(headers, bytes));
        }
    };
    let body = match shown {
        Shown::Empty => Value::Null,
        Shown::Text | Shown::Events => Value::String(String::from_utf8_lossy(&bytes).into_owned()),
        Shown::Json => match serde_json::from_slice(&bytes) {
            Ok(value) => value,
            Err(_) => {
                refuse("a body that says it is JSON but is not")?;
                return Ok(unchanged(headers, bytes));
            }
        },
    };
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let mut whole = json!({"body": body, "query": pairs, "headers": &headers});
    let mut checker = Checker::of(cx);
    if !guards
        .check(&mut checker, (entry, "passthrough"), &mut whole)
        .await?
    {
        return Ok(unchanged(headers, bytes));
    }
    let pairs = |value: &Value| -> Vec<(String, String)> {
        serde_json::from_value(value.clone()).unwrap_or_default()
    };
    let query = pairs(&whole["query"]);
    let query = (!query.is_empty()).then(|| {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&query)
            .finish()
    });
    let body = match (shown, whole["body"].take()) {
        (Shown::Empty, _) => bytes,
        (Shown::Text | Shown::Events, Value::String(text)) => Bytes::from(text),
        (_, value) => Bytes::from(value.to_string()),
    };
    Ok(Outgoing {
        headers: pairs(&whole["headers"]),
        query,
        body,
    })
}

/// `upstream`'s answer through the request's answer guards: read whole, its strings shown to
/// them and their rewrite written back; passed as it came when they cannot read it and exempt
/// the route.
pub async fn answer(
    state: &AppState,
    cx: &mut Context,
    upstream: Upstream,
    provider: usize,
) -> Result<Upstream, ApiError> {
    let gateway = std::sync::Arc::clone(&cx.gateway);
    let (name, idle) = match gateway.providers.get(provider) {
        Some(p) => (&*p.name, p.timeout),
        None => ("", std::time::Duration::from_secs(60)),
    };
    let broke = |detail: String| ApiError::UpstreamUnreachable {
        provider: name.to_owned(),
        detail,
    };
    let Upstream {
        status,
        headers,
        body,
    } = upstream;
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let refuse =
        |cx: &Context, what| answer_guards::refuse_blind(cx, BlindRoute::Passthrough, what);
    let too_large = "larger than the body limit";
    let mut budgeted = match Budgeted::reserve(state, declared).await {
        Err(ApiError::BodyTooLarge(_)) => {
            refuse(cx, too_large)?;
            return Ok(Upstream {
                status,
                headers,
                body,
            });
        }
        reserved => reserved?,
    };
    let mut buffer = BytesMut::new();
    let mut body = body;
    loop {
        let chunk = match tokio::time::timeout(idle, body.next()).await {
            Ok(Some(chunk)) => chunk.map_err(|e| broke(e.without_url().to_string()))?,
            Ok(None) => break,
            Err(_) => {
                return Err(ApiError::UpstreamTimeout {
                    provider: name.to_owned(),
                });
            }
        };
        if buffer.len() + chunk.len() > state.max_body_bytes {
            refuse(cx, too_large)?;
            let read = stream::iter([Ok(buffer.freeze()), Ok(chunk)]);
            return Ok(Upstream {
                status,
                headers,
                body: read.chain(body).boxed(),
            });
        }
        budgeted.take(chunk.len())?;
        buffer.extend_from_slice(&chunk);
    }
    let bytes = buffer.freeze();
    let whole = |bytes: Bytes, headers| Upstream {
        status,
        headers,
        body: stream::once(async move { Ok(bytes) }).boxed(),
    };
    let shown = match shown(&headers, &bytes) {
        Ok(shown) => shown,
        Err(what) => {
            refuse(cx, what)?;
            return Ok(whole(bytes, headers));
        }
    };
    let rewritten = match shown {
        Shown::Empty => None,
        Shown::Json => match serde_json::from_slice::<Value>(&bytes) {
            Ok(mut value) => answer_guards::body(cx, &mut value)
                .await?
                .then(|| Bytes::from(value.to_string())),
            Err(_) => {
                refuse(cx, "a body that says it is JSON but is not")?;
                None
            }
        },
        Shown::Text => {
            let mut value = Value::String(String::from_utf8_lossy(&bytes).into_owned());
            match (answer_guards::body(cx, &mut value).await?, value) {
                (true, Value::String(text)) => Some(Bytes::from(text)),
                _ => None,
            }
        }
        Shown::Events => {
            let text = String::from_utf8_lossy(&bytes);
            let mut lines = events_shown(&text);
            let (at, mut data): (Vec<usize>, Vec<Value>) = (lines.iter_mut().enumerate())
                .filter(|(_, line)| !line.is_null())
                .map(|(n, line)| (n, line.take()))
                .unzip();
            if answer_guards::event_data(cx, &mut data).await? {
                for (n, value) in at.into_iter().zip(data) {
                    lines[n] = value;
                }
                Some(Bytes::from(events_written(&text, &lines)))
            } else {
                None
            }
        }
    };
    Ok(whole(rewritten.unwrap_or(bytes), headers))
}

/// An event stream's lines as the guards see them: a `data:` line's JSON, or its text; every
/// other line (event names, ids, comments, blanks) `null`, not shown.
fn events_shown(text: &str) -> Vec<Value> {
    let lines = text.split('\n').map(|line| {
        let Some(data) = line.trim_end_matches('\r').strip_prefix("data:") else {
            return Value::Null;
        };
        let data = data.strip_prefix(' ').unwrap_or(data);
        serde_json::from_str::<Value>(data)
            .ok()
            .filter(|v| v.is_object() || v.is_array())
            .unwrap_or_else(|| Value::String(data.to_owned()))
    });
    lines.collect()
}

/// `text` with each `data:` line written from `shown` ([`events_shown`], as the guards left
/// it); every other line as it was.
fn events_written(text: &str, shown: &[Value]) -> String {
    let mut out = String::with_capacity(text.len());
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let cr = if line.ends_with('\r') { "\r" } else { "" };
        match shown.get(n) {
            // A rewrite cannot start another line, or it would forge an event.
            Some(Value::String(data)) => {
                out.push_str("data: ");
                out.push_str(&data.replace(['\r', '\n'], " "));
                out.push_str(cr);
            }
            Some(value @ (Value::Object(_) | Value::Array(_))) => {
                out.push_str("data: ");
                out.push_str(&value.to_string());
                out.push_str(cr);
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// How a guard can read `bytes`, or what it cannot read of them.
fn shown(headers: &HeaderMap, bytes: &[u8]) -> Result<Shown, &'static str> {
    if bytes.is_empty() {
        return Ok(Shown::Empty);
    }
    let encoded = headers
        .get(axum::http::header::CONTENT_ENCODING)
        .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"));
    if encoded {
        return Err("a compressed body");
    }
    let media = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let media = media
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let json = media == "application/json" || media.ends_with("+json");
    let text = media.starts_with("text/") || media == "application/x-www-form-urlencoded";
    match (json, text) {
        (true, _) => Ok(Shown::Json),
        (_, true) if media == "text/event-stream" && std::str::from_utf8(bytes).is_ok() => {
            Ok(Shown::Events)
        }
        (_, true) if std::str::from_utf8(bytes).is_ok() => Ok(Shown::Text),
        _ => Err("a body that is neither JSON nor text"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn typed(content_type: &str, encoding: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", content_type.parse().unwrap());
        if let Some(encoding) = encoding {
            headers.insert("content-encoding", encoding.parse().unwrap());
        }
        headers
    }

    #[test]
    fn json_and_text_are_read_and_the_rest_is_not() {
        let json = typed("application/json; charset=utf-8", None);
        assert!(matches!(shown(&json, b"{}"), Ok(Shown::Json)));
        let problem = typed("application/problem+json", None);
        assert!(matches!(shown(&problem, b"{}"), Ok(Shown::Json)));
        assert!(matches!(
            shown(&typed("text/csv", None), b"a,b"),
            Ok(Shown::Text)
        ));
        assert!(matches!(shown(&json, b""), Ok(Shown::Empty)));
        assert!(shown(&typed("application/octet-stream", None), b"x").is_err());
        assert!(shown(&typed("multipart/form-data; boundary=x", None), b"x").is_err());
        assert!(shown(&typed("application/json", Some("gzip")), b"x").is_err());
        assert!(matches!(
            shown(&typed("application/json", Some("identity")), b"{}"),
            Ok(Shown::Json)
        ));
        assert!(shown(&typed("text/plain", None), &[0xff, 0xfe]).is_err());
        assert!(shown(&HeaderMap::new(), b"x").is_err());
        assert!(matches!(
            shown(&typed("text/event-stream", None), b"data: {}"),
            Ok(Shown::Events)
        ));
    }

    #[test]
    fn an_event_streams_data_lines_are_shown_and_written_back_alone() {
        let text = "event: delta\r\ndata: {\"d\":\"a\"}\r\n\r\n: note\ndata: [DONE]\n\n";
        let mut lines = events_shown(text);
        assert_eq!(lines[0], Value::Null);
        assert_eq!(lines[1], json!({"d": "a"}));
        assert_eq!(lines[3], Value::Null, "a comment is not shown");
        assert_eq!(lines[4], json!("[DONE]"));
        assert_eq!(
            events_written(text, &lines),
            text,
            "unchanged, written as it came"
        );
        lines[1] = json!({"d": "b"});
        lines[4] = json!("x\ndata: forged");
        assert_eq!(
            events_written(text, &lines),
            "event: delta\r\ndata: {\"d\":\"b\"}\r\n\r\n: note\ndata: x data: forged\n\n"
        );
    }
}
