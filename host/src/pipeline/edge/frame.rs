//! The edge's half of a stream: events written as the client's API has them (`data: {chunk}`
//! then `data: [DONE]` for Chat Completions; `event: {type}` and the data as the upstream sent
//! it from a target that speaks the client's dialect; or canonical chunks re-encoded by the
//! dialect plugin), for the relay's live streams and for answers made without one (a plugin's
//! own events, a cached answer replayed).

use super::encode::encoder;
use super::keeper::{Keeper, keep_final};
use crate::error::{ApiError, Dialect};
use crate::pipeline::context::Context;
use crate::pipeline::relay;
use crate::plugins::{DialectEvent, DialectStream, Usage};

const DONE: &[u8] = b"data: [DONE]\n\n";

/// How a stream is written for the client: the edge's half of the relay (see
/// [`relay::Frame`]), chosen by the way out when the stream opens.
pub enum Framing {
    /// Chat Completions: `data: {chunk}`, and `data: [DONE]` at the end.
    Chat { client_wants_usage: bool },
    /// The client's dialect from a target that speaks it: `event: {type}`, the data untouched.
    Native,
    /// Canonical chunks re-encoded in the client's dialect by its plugin.
    Translated(Box<DialectStream>),
}

/// The whole SSE body of events a plugin produced without any upstream; a stream a guard
/// `stopped` ends after its events with the client's dialect's error event instead.
pub(super) async fn local(
    events: Vec<String>,
    usage: Option<Usage>,
    mut framing: Framing,
    stopped: Option<&ApiError>,
) -> Vec<u8> {
    let mut body = Vec::new();
    match &mut framing {
        Framing::Chat { client_wants_usage } => {
            write_events(&mut body, events, *client_wants_usage);
        }
        Framing::Native => write_typed(&mut body, &events),
        Framing::Translated(encoder) => {
            if let Ok(Ok(encoded)) = encoder.push(&events).await {
                write_named(&mut body, &encoded);
            }
        }
    }
    if let Some(error) = stopped {
        body.extend(error_event(&mut framing, error).await);
        return body;
    }
    match &mut framing {
        Framing::Chat { .. } => body.extend_from_slice(DONE),
        Framing::Native => {}
        Framing::Translated(encoder) => {
            if let Ok(Ok(encoded)) = encoder.finish(usage).await {
                write_named(&mut body, &encoded);
            }
        }
    }
    body
}

/// The error event that ends a stream in the client's dialect: its plugin's own when the
/// stream is re-encoded, else the gateway's rendering of the dialect's shape.
async fn error_event(framing: &mut Framing, error: &ApiError) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Framing::Translated(encoder) = framing
        && let Ok(events) = encoder
            .fail(error.status().as_u16(), &error.failure())
            .await
    {
        write_named(&mut buf, &events);
        return buf;
    }
    buf.extend_from_slice(error.stream_event(framing.dialect()).as_bytes());
    buf
}

/// The SSE body of a cached answer's chunks re-encoded in the client's dialect, whose final
/// Responses object is kept as a live stream's is.
pub(super) async fn replay_kept(
    mut encoder: DialectStream,
    events: Vec<String>,
    usage: Option<Usage>,
    keeper: &Keeper,
) -> Result<Vec<u8>, ApiError> {
    let mut encoded = super::dialect_call::answered(encoder.push(&events).await)?;
    encoded.extend(super::dialect_call::answered(encoder.finish(usage).await)?);
    for event in &encoded {
        keep_final(keeper, &event.data).await;
    }
    let mut body = Vec::new();
    write_named(&mut body, &encoded);
    Ok(body)
}

/// The SSE body of a cached native stream's events, named by their type as the relay names a
/// live one's; a Responses object they end with is kept.
pub(super) async fn replay_native(events: &[String], keeper: Option<&Keeper>) -> Vec<u8> {
    if let Some(keeper) = keeper {
        for event in events {
            keep_final(keeper, event).await;
        }
    }
    let mut body = Vec::new();
    write_typed(&mut body, events);
    body
}

impl Framing {
    /// The dialect the gateway's own error events are written in, when no plugin writes them.
    fn dialect(&self) -> Dialect {
        match self {
            Framing::Chat { .. } => Dialect::Chat,
            Framing::Native | Framing::Translated(_) => Dialect::Plugin,
        }
    }
}

impl relay::Frame for Framing {
    /// Writes decoded events as the client's dialect has them, closing the stream after the
    /// last ones; a Responses object that is complete is kept before the client reads its end.
    async fn frame(
        &mut self,
        cx: Option<&Context>,
        events: Vec<String>,
        ended: bool,
        usage: Option<Usage>,
    ) -> Result<Vec<u8>, ApiError> {
        let translation = cx.and_then(|cx| cx.translation.as_ref());
        let keeper = translation.and_then(|t| t.keeper.as_ref());
        let mut buf = Vec::new();
        match self {
            Framing::Chat { client_wants_usage } => {
                write_events(&mut buf, events, *client_wants_usage);
                if ended {
                    buf.extend_from_slice(DONE);
                }
            }
            Framing::Native => {
                let events = match translation {
                    Some(translation) => events
                        .into_iter()
                        .map(|event| translation.with_previous_id(event))
                        .collect(),
                    None => events,
                };
                if let Some(keeper) = keeper {
                    for event in &events {
                        keep_final(keeper, event).await;
                    }
                }
                write_typed(&mut buf, &events);
            }
            Framing::Translated(encoder) => {
                let mut encoded = if events.is_empty() {
                    Vec::new()
                } else {
                    super::dialect_call::answered(encoder.push(&events).await)?
                };
                if ended {
                    encoded.extend(super::dialect_call::answered(encoder.finish(usage).await)?);
                }
                if let Some(keeper) = keeper {
                    for event in &encoded {
                        keep_final(keeper, &event.data).await;
                    }
                }
                write_named(&mut buf, &encoded);
            }
        }
        Ok(buf)
    }

    /// Ends the stream with an error event in the client's dialect, as the APIs do mid-stream.
    async fn fail(&mut self, cx: Option<&Context>, error: &ApiError) -> Vec<u8> {
        let mut buf = Vec::new();
        match self {
            Framing::Native => {
                let translation = cx.and_then(|cx| {
                    let translation = cx.translation.as_ref()?;
                    Some((translation, cx.request.model.as_str()))
                });
                let events = match translation {
                    Some((translation, model)) => {
                        translation
                            .native_failure(model, error.status().as_u16(), &error.failure())
                            .await
                    }
                    None => None,
                };
                match events {
                    Some(events) => write_named(&mut buf, &events),
                    None => buf.extend_from_slice(error.stream_event(Dialect::Plugin).as_bytes()),
                }
            }
            framing @ (Framing::Chat { .. } | Framing::Translated(_)) => {
                buf = error_event(framing, error).await;
            }
        }
        buf
    }
}

/// Frames a dialect's own events: `event:` is each event's `type`.
fn write_typed(buf: &mut Vec<u8>, events: &[String]) {
    #[derive(serde::Deserialize)]
    struct Typed<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
    }
    for event in events {
        if let Ok(Typed { kind }) = serde_json::from_str::<Typed<'_>>(event)
            && !kind.is_empty()
            && !kind.contains(['\r', '\n'])
        {
            buf.extend_from_slice(b"event: ");
            buf.extend_from_slice(kind.as_bytes());
            buf.push(b'\n');
        }
        buf.extend_from_slice(b"data: ");
        buf.extend_from_slice(event.as_bytes());
        buf.extend_from_slice(b"\n\n");
    }
}

/// Frames events a dialect plugin named.
fn write_named(buf: &mut Vec<u8>, events: &[DialectEvent]) {
    for event in events {
        if !event.name.is_empty() && !event.name.contains(['\r', '\n']) {
            buf.extend_from_slice(b"event: ");
            buf.extend_from_slice(event.name.as_bytes());
            buf.push(b'\n');
        }
        buf.extend_from_slice(b"data: ");
        // One `data:` line per line of data, as SSE requires.
        buf.extend_from_slice(event.data.replace('\n', "\ndata: ").as_bytes());
        buf.extend_from_slice(b"\n\n");
    }
}

/// Frames events as SSE. The usage-only chunk (empty `choices`) is kept only for clients that
/// asked for it: the gateway always asks upstream for usage, but a client that did not may not
/// expect a chunk without choices.
fn write_events(buf: &mut Vec<u8>, events: Vec<String>, client_wants_usage: bool) {
    for event in events {
        if !client_wants_usage && is_usage_only(&event) {
            continue;
        }
        buf.extend_from_slice(b"data: ");
        buf.extend_from_slice(event.as_bytes());
        buf.extend_from_slice(b"\n\n");
    }
}

fn is_usage_only(event: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        choices: Vec<serde::de::IgnoredAny>,
        #[serde(default)]
        usage: Option<serde::de::IgnoredAny>,
    }
    // Cheap pre-check: only an event with an empty choices list can be usage-only.
    if !event.contains("\"choices\":[]") && !event.contains("\"choices\": []") {
        return false;
    }
    serde_json::from_str::<Probe>(event)
        .map(|p| p.choices.is_empty() && p.usage.is_some())
        .unwrap_or(false)
}

/// How a stream is written for the client: as chat chunks, as the target's own events in the
/// client's dialect, or re-encoded by the dialect plugin.
pub(super) async fn framing(cx: &mut Context, native: bool) -> Result<Framing, ApiError> {
    if cx.translation.is_none() {
        return Ok(Framing::Chat {
            client_wants_usage: cx.request.client_wants_usage,
        });
    }
    if native {
        return Ok(Framing::Native);
    }
    match encoder(cx).await? {
        Some(encoder) => Ok(Framing::Translated(Box::new(encoder))),
        None => Ok(Framing::Chat {
            client_wants_usage: cx.request.client_wants_usage,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_the_usage_chunk_only_for_clients_that_did_not_ask() {
        let events = || {
            vec![
                r#"{"choices":[{"delta":{"content":"a"}}],"usage":null}"#.to_owned(),
                r#"{"choices":[],"usage":{"prompt_tokens":1}}"#.to_owned(),
            ]
        };
        let mut without = Vec::new();
        write_events(&mut without, events(), false);
        let mut with = Vec::new();
        write_events(&mut with, events(), true);
        assert_eq!(
            String::from_utf8_lossy(&without).matches("data: ").count(),
            1
        );
        assert_eq!(String::from_utf8_lossy(&with).matches("data: ").count(), 2);
    }
}
