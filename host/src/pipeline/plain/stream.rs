//! A plain stream: OpenAI's server-sent events read by the host, each `data:` event a canonical
//! chunk passed on as it came, `[DONE]` its end, the usage from the chunk that carries it.
//!
//! The host reads only the framing OpenAI-compatible servers write (lines ending in `\n` or
//! `\r\n`, `data:` fields, comments). From the first event it cannot read (an `event:` field,
//! an `error` chunk, data that is not a JSON object, a bare `\r`, a byte-order mark) it hands the
//! rest of the body, from that event's first byte, to the plugin's own decoder, opened then: an
//! event boundary is where a fresh decoder starts, so the plugin reads what it would have read.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::gateway::Gateway;
use crate::plugins::{
    PluginError, PluginFailure, ProviderStream, RequestInfo, SlotKind, StreamOutput, Usage,
};

type CallResult<T> = Result<Result<T, PluginError>, PluginFailure>;

/// What decodes an upstream stream: the plugin's decoder, or the host's plain reading.
#[expect(
    clippy::large_enum_variant,
    reason = "one a stream, inside the boxed `Upstream`: a box of its own would only cost an allocation"
)]
pub enum Decoder {
    Plugin(ProviderStream),
    Plain(PlainStream),
}

impl Decoder {
    /// Takes the next bytes of the body, split anywhere, and returns the events they complete.
    pub async fn push(&mut self, bytes: &[u8]) -> CallResult<StreamOutput> {
        match self {
            Decoder::Plugin(decoder) => decoder.push(bytes).await,
            Decoder::Plain(plain) => plain.push(bytes).await,
        }
    }

    /// The body ended: the remaining events and the final usage.
    pub async fn finish(&mut self) -> CallResult<StreamOutput> {
        match self {
            Decoder::Plugin(decoder) => decoder.finish().await,
            Decoder::Plain(plain) => plain.finish().await,
        }
    }
}

/// The host's reading of a plain stream. See the [module docs](self).
pub struct PlainStream {
    reader: Reader,
    /// Where the plugin's decoder comes from.
    source: Source,
    /// The plugin's decoder, once the host met what it cannot read.
    plugin: Option<ProviderStream>,
    /// An error the plugin's decoder met behind events the host read in the same call: those
    /// go out first, as the plugin's own decoder does it.
    failed: Option<PluginError>,
}

/// What opens the plugin's decoder.
struct Source {
    gateway: Arc<Gateway>,
    /// The entry, in `gateway.providers`.
    provider: usize,
    info: RequestInfo,
    /// The upstream response's headers, as the decoder's constructor takes them.
    headers: Vec<(String, String)>,
}

/// The host's reading so far.
#[derive(Default)]
struct Reader {
    /// Bytes from the start of the event being received.
    pending: Vec<u8>,
    usage: Option<Usage>,
    /// `[DONE]` came: anything after it is not part of the answer.
    done: bool,
}

/// What one call of the reader gave.
enum Reading {
    Read(StreamOutput),
    /// The events read before an event the host cannot read, and the bytes from that event on.
    Unreadable {
        events: Vec<String>,
        rest: Vec<u8>,
    },
}

/// The fields of a chunk looked at; serde skips the rest (the choices) unbuilt.
#[derive(Deserialize)]
struct Probe {
    usage: Option<Value>,
    error: Option<Value>,
}

/// One event cut from the front of the pending bytes.
enum Cut {
    /// `len` bytes make a whole event (its terminating blank line included).
    Event { len: usize },
    /// Not whole yet.
    Incomplete,
    /// Framing the host does not read.
    Unreadable,
}

/// What one event is to the host.
enum Read {
    /// A chunk to pass on, with the usage it carries.
    Chunk(String, Option<Usage>),
    /// Nothing to pass on (a comment, no data).
    Nothing,
    Done,
    Unreadable,
}

/// The first byte of a UTF-8 byte-order mark, which the host leaves to the plugin's parser.
const BOM_FIRST: u8 = 0xEF;

impl PlainStream {
    /// Reads the stream answering `info`, a request to `gateway.providers[provider]`, whose
    /// response came with `headers`.
    pub fn new(
        gateway: Arc<Gateway>,
        provider: usize,
        info: RequestInfo,
        headers: Vec<(String, String)>,
    ) -> Self {
        Self {
            reader: Reader::default(),
            source: Source {
                gateway,
                provider,
                info,
                headers,
            },
            plugin: None,
            failed: None,
        }
    }

    async fn push(&mut self, bytes: &[u8]) -> CallResult<StreamOutput> {
        self.call(bytes, false).await
    }

    async fn finish(&mut self) -> CallResult<StreamOutput> {
        self.call(&[], true).await
    }

    /// `bytes` read (and the body ended, at the `end`), by the host or by the plugin.
    async fn call(&mut self, bytes: &[u8], end: bool) -> CallResult<StreamOutput> {
        if let Some(error) = self.failed.take() {
            return Ok(Err(error));
        }
        if let Some(decoder) = &mut self.plugin {
            return match end {
                true => decoder.finish().await,
                false => decoder.push(bytes).await,
            };
        }
        let (mut events, rest) = match self.reader.read(bytes, end) {
            Reading::Read(output) => return Ok(Ok(output)),
            Reading::Unreadable { events, rest } => (events, rest),
        };
        let decoder = self.plugin.insert(self.source.open().await?);
        let mut read = decoder.push(&rest).await?;
        if end && let Ok(first) = read {
            read = match decoder.finish().await? {
                Ok(last) => Ok(joined(first, last)),
                Err(error) if first.events.is_empty() => Err(error),
                Err(error) => {
                    self.failed = Some(error);
                    Ok(first)
                }
            };
        }
        let usage = self.reader.usage;
        Ok(match read {
            Ok(mut output) => {
                events.append(&mut output.events);
                // The plugin's decoder knows only the usage of what it read.
                Ok(StreamOutput {
                    events,
                    usage: output.usage.or(usage),
                })
            }
            Err(error) if events.is_empty() => Err(error),
            Err(error) => {
                self.failed = Some(error);
                Ok(StreamOutput { events, usage })
            }
        })
    }
}

impl Source {
    async fn open(&self) -> Result<ProviderStream, PluginFailure> {
        let entry = &self.gateway.providers[self.provider];
        entry
            .plugin
            .start(SlotKind::Stream)
            .await?
            .open_stream(&entry.config, &self.info, &self.headers)
            .await
    }
}

impl Reader {
    /// The events `bytes` complete (all that is left, at the `end`).
    fn read(&mut self, bytes: &[u8], end: bool) -> Reading {
        let mut events = Vec::new();
        if self.done {
            return Reading::Read(self.output(events));
        }
        if self.pending.is_empty() && bytes.first() == Some(&BOM_FIRST) {
            let rest = bytes.to_vec();
            return Reading::Unreadable { events, rest };
        }
        self.pending.extend_from_slice(bytes);
        let mut start = 0;
        while start < self.pending.len() {
            let at = start;
            let rest = &self.pending[at..];
            let read = match cut(rest, end) {
                Cut::Incomplete => break,
                Cut::Unreadable => Read::Unreadable,
                Cut::Event { len } => {
                    let read = event(&rest[..len]);
                    start += len;
                    read
                }
            };
            match read {
                Read::Chunk(data, usage) => {
                    if usage.is_some() {
                        self.usage = usage;
                    }
                    events.push(data);
                }
                Read::Nothing => {}
                Read::Done => {
                    self.done = true;
                    self.pending = Vec::new();
                    return Reading::Read(self.output(events));
                }
                Read::Unreadable => {
                    // From the event's first byte: a fresh decoder starts at a boundary.
                    let rest = self.pending.split_off(at);
                    self.pending = Vec::new();
                    return Reading::Unreadable { events, rest };
                }
            }
        }
        self.pending.drain(..start);
        Reading::Read(self.output(events))
    }

    /// `events` with the usage reported so far.
    fn output(&self, events: Vec<String>) -> StreamOutput {
        StreamOutput {
            events,
            usage: self.usage,
        }
    }
}

/// `first`'s events then `last`'s, with the later usage.
fn joined(mut first: StreamOutput, mut last: StreamOutput) -> StreamOutput {
    first.events.append(&mut last.events);
    StreamOutput {
        events: first.events,
        usage: last.usage.or(first.usage),
    }
}

/// The first event of `bytes`: up to and with the blank line after it (a line ending followed
/// by `\n` or `\r\n`), or everything at the `end`.
fn cut(bytes: &[u8], end: bool) -> Cut {
    let mut from = 0;
    while let Some(at) = bytes[from..].iter().position(|&b| b == b'\n') {
        let at = from + at;
        let after = &bytes[at + 1..];
        if after.starts_with(b"\n") {
            return Cut::Event { len: at + 2 };
        }
        if after.starts_with(b"\r\n") {
            return Cut::Event { len: at + 3 };
        }
        from = at + 1;
    }
    if bare_cr(bytes) {
        return Cut::Unreadable;
    }
    match end && !bytes.is_empty() {
        true => Cut::Event { len: bytes.len() },
        false => Cut::Incomplete,
    }
}

/// Whether a `\r` ends a line on its own (the host reads `\n` and `\r\n` endings only). One at
/// the very end may still be followed by `\n`.
fn bare_cr(bytes: &[u8]) -> bool {
    bytes
        .windows(2)
        .any(|pair| pair[0] == b'\r' && pair[1] != b'\n')
}

/// One whole event, its blank line included.
fn event(bytes: &[u8]) -> Read {
    if bare_cr(bytes.strip_suffix(b"\r").unwrap_or(bytes)) {
        return Read::Unreadable;
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Read::Unreadable;
    };
    let mut data: Option<String> = None;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            // A named event (`error`, ...) is the plugin's to read.
            "event" => return Read::Unreadable,
            // `id` and `retry` say nothing of the answer; other fields are ignored by SSE.
            _ => {}
        }
    }
    let Some(data) = data else {
        return Read::Nothing;
    };
    match data.trim() {
        "[DONE]" => return Read::Done,
        "" => return Read::Nothing,
        _ => {}
    }
    match serde_json::from_str::<Probe>(&data) {
        Ok(probe) if data.trim_start().starts_with('{') => {
            if probe.error.is_some_and(|e| !e.is_null()) {
                return Read::Unreadable;
            }
            let usage = probe.usage.as_ref().and_then(super::openai_usage);
            Read::Chunk(data, usage)
        }
        _ => Read::Unreadable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = ": keep-alive\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\r\n\r\ndata: {\"choices\":[],\n\
                        data: \"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\nid: 7\ndata: [DONE]\n\ndata: {\"after\":1}\n\n";

    /// The events and usage (input, output) of `body` pushed in the pieces `at` cuts it into,
    /// then finished.
    fn read_in_pieces(body: &[u8], at: &[usize]) -> (Vec<String>, Option<(u64, u64)>) {
        let mut reader = Reader::default();
        let mut events = Vec::new();
        let mut from = 0;
        for &to in at.iter().chain([&body.len()]) {
            match reader.read(&body[from..to], false) {
                Reading::Read(out) => events.extend(out.events),
                Reading::Unreadable { .. } => panic!("unreadable at {to}"),
            }
            from = to;
        }
        match reader.read(&[], true) {
            Reading::Read(out) => {
                events.extend(out.events);
                (events, out.usage.map(|u| (u.input_tokens, u.output_tokens)))
            }
            Reading::Unreadable { .. } => panic!("unreadable at the end"),
        }
    }

    #[test]
    fn events_are_the_same_wherever_the_body_is_split() {
        let body = BODY.as_bytes();
        let whole = read_in_pieces(body, &[]);
        assert_eq!(
            whole.0,
            [
                r#"{"choices":[{"delta":{"content":"Hi"}}]}"#,
                "{\"choices\":[],\n\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}",
            ]
        );
        assert_eq!(whole.1, Some((3, 1)));
        for cut in 1..body.len() {
            assert_eq!(read_in_pieces(body, &[cut]), whole, "cut at {cut}");
        }
    }

    #[test]
    fn the_last_event_needs_no_blank_line() {
        let (events, _) = read_in_pieces(b"data: {\"a\":1}", &[]);
        assert_eq!(events, [r#"{"a":1}"#]);
    }

    #[test]
    fn what_the_host_cannot_read_is_handed_over_from_its_first_byte() {
        let first = "data: {\"a\":1}\n\n";
        for unread in [
            "event: error\ndata: {\"error\":\"x\"}\n\n",
            "data: {\"error\":{\"message\":\"overloaded\"}}\n\n",
            "data: not json\n\n",
            "data: [1]\n\n",
            "data: {\"a\":2}\r\rdata: {\"a\":3}\r\r",
        ] {
            let mut reader = Reader::default();
            let body = format!("{first}{unread}data: {{\"b\":1}}\n\n");
            match reader.read(body.as_bytes(), false) {
                Reading::Unreadable { events, rest } => {
                    assert_eq!(events, [r#"{"a":1}"#], "{unread:?}");
                    assert_eq!(rest, body.as_bytes()[first.len()..], "{unread:?}");
                }
                Reading::Read(out) => panic!("{unread:?} read as {:?}", out.events),
            }
        }
        let mut reader = Reader::default();
        let bom = "\u{feff}data: {\"a\":1}\n\n";
        assert!(matches!(
            reader.read(bom.as_bytes(), false),
            Reading::Unreadable { rest, .. } if rest == bom.as_bytes()
        ));
    }
}
