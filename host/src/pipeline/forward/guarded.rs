//! A pass-through request that request guards apply to. Its body is read whole (within the
//! body limit and the memory budget, as any request's) rather than streamed, and shown to the
//! guards with its query's values and the headers it forwards, each where it stands; a rewrite
//! is written back there. A body no guard can read (compressed, or neither JSON nor text) is
//! refused unless the guards' entries exempt `passthrough`.

use axum::body::Body;
use axum::http::HeaderMap;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::config::guards::BlindRoute;
use crate::error::ApiError;
use crate::pipeline::context::Context;
use crate::pipeline::guard::body::BodyGuards;
use crate::pipeline::guard::check::Checker;
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
        Shown::Text => Value::String(String::from_utf8_lossy(&bytes).into_owned()),
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
        (Shown::Text, Value::String(text)) => Bytes::from(text),
        (_, value) => Bytes::from(value.to_string()),
    };
    Ok(Outgoing {
        headers: pairs(&whole["headers"]),
        query,
        body,
    })
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
    }
}
