//! An incremental Server-Sent-Events parser, after the WHATWG "event stream" rules.
//!
//! Upstream bodies reach a plugin in chunks split anywhere: inside an event, inside a UTF-8
//! sequence, between the `\r` and `\n` of a line break. [`SseParser`] buffers what it cannot use
//! yet and hands back each event once its blank line has arrived.
//!
//! ```
//! use wasmgate_plugin_sdk::sse::SseParser;
//!
//! let mut parser = SseParser::new();
//! assert!(parser.push(b"event: delta\ndata: {\"a\"").is_empty());
//! let events = parser.push(b":1}\n\n");
//! assert_eq!(events[0].event.as_deref(), Some("delta"));
//! assert_eq!(events[0].data, r#"{"a":1}"#);
//! ```

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `None` when absent (the type is then `message`).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last `id:` seen in the stream so far, if any.
    pub id: Option<String>,
}

/// Parses an SSE body fed in arbitrary chunks. See the [module docs](self).
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line being received; lines break on ASCII bytes only, so a complete line is
    /// never cut inside a UTF-8 sequence.
    line: Vec<u8>,
    /// The last chunk ended in `\r`: a `\n` starting the next one belongs to that line break.
    after_cr: bool,
    /// Whether the start of the body (and a byte-order mark there) is behind us.
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    last_id: Option<String>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    /// A parser at the start of a body.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next bytes of the body and returns the events they complete, in order.
    pub fn push(&mut self, mut chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if !self.started {
            // The mark may itself arrive split; wait until there are enough bytes to tell.
            self.line.extend_from_slice(chunk);
            if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
                return events;
            }
            self.started = true;
            let pending = std::mem::take(&mut self.line);
            let body = pending.strip_prefix(BOM).unwrap_or(&pending);
            self.feed(body, &mut events);
            return events;
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        self.feed(chunk, &mut events);
        events
    }

    /// The body ended: returns the last event even when its closing blank line never came.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut events = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            let line = if self.started {
                &line[..]
            } else {
                line.strip_prefix(BOM).unwrap_or(&line)
            };
            self.process_line(line, &mut events);
        }
        self.started = true;
        self.after_cr = false;
        self.dispatch(&mut events);
        events.pop()
    }

    fn feed(&mut self, chunk: &[u8], events: &mut Vec<SseEvent>) {
        let mut rest = chunk;
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            if self.line.is_empty() {
                self.process_line(&rest[..end], events);
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&rest[..end]);
                self.process_line(&line, events);
                line.clear();
                self.line = line; // keep the allocation for the next partial line
            }
            let crlf = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if crlf {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.line.extend_from_slice(rest);
    }

    fn process_line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(events);
            return;
        }
        if line[0] == b':' {
            return; // a comment, often a keep-alive
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            // An id containing NUL is ignored, as the standard says.
            b"id" if !value.contains(&0) => {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            _ => {} // `retry` and unknown fields: nothing a translator needs
        }
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            return; // the standard drops events without data
        }
        events.push(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
            id: None,
        }
    }

    /// Feeds `body` in every possible two-way split and in single bytes, and checks that each
    /// gives the same events as feeding it whole.
    fn parse_all_ways(body: &[u8]) -> Vec<SseEvent> {
        let parse = |chunks: &[&[u8]]| {
            let mut parser = SseParser::new();
            let mut events: Vec<SseEvent> = chunks.iter().flat_map(|c| parser.push(c)).collect();
            events.extend(parser.finish());
            events
        };
        let whole = parse(&[body]);
        for split in 0..=body.len() {
            let (a, b) = body.split_at(split);
            assert_eq!(parse(&[a, b]), whole, "split at {split}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(parse(&bytes), whole, "byte by byte");
        whole
    }

    #[test]
    fn lf_events() {
        let body = b"data: {\"a\":1}\n\ndata: [DONE]\n\n";
        assert_eq!(
            parse_all_ways(body),
            vec![ev(None, r#"{"a":1}"#), ev(None, "[DONE]")]
        );
    }

    #[test]
    fn crlf_and_cr_line_breaks() {
        let body = b"event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\rdata: 3\n\r\n";
        assert_eq!(
            parse_all_ways(body),
            vec![ev(Some("a"), "1"), ev(Some("b"), "2"), ev(None, "3")]
        );
    }

    #[test]
    fn multi_line_data_is_joined() {
        let body = b"data: one\ndata:two\ndata:  three\ndata\n\n";
        assert_eq!(parse_all_ways(body), vec![ev(None, "one\ntwo\n three\n")]);
    }

    #[test]
    fn comments_and_unknown_fields_are_skipped() {
        let body = b": keep-alive\n\n:\nretry: 10\nfoo: bar\ndata: x\n\n";
        assert_eq!(parse_all_ways(body), vec![ev(None, "x")]);
    }

    #[test]
    fn events_without_data_are_dropped() {
        let body = b"event: ping\n\nevent: message_start\ndata: {}\n\n";
        assert_eq!(parse_all_ways(body), vec![ev(Some("message_start"), "{}")]);
    }

    #[test]
    fn utf8_split_inside_a_character() {
        let body = "data: héllo 👋\n\n".as_bytes();
        assert_eq!(parse_all_ways(body), vec![ev(None, "héllo 👋")]);
    }

    #[test]
    fn finish_flushes_an_unterminated_event() {
        assert_eq!(
            parse_all_ways(b"data: a\n\ndata: b"),
            vec![ev(None, "a"), ev(None, "b")]
        );
        assert_eq!(parse_all_ways(b"data: b\n"), vec![ev(None, "b")]);
        assert_eq!(parse_all_ways(b"data: b\r"), vec![ev(None, "b")]);
        let mut parser = SseParser::new();
        assert_eq!(parser.finish(), None);
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        let body = b"\xEF\xBB\xBFdata: x\n\n";
        assert_eq!(parse_all_ways(body), vec![ev(None, "x")]);
        assert_eq!(parse_all_ways(b"\xEF\xBB"), vec![]);
    }

    #[test]
    fn ids_persist() {
        let body = b"id: 7\ndata: a\n\ndata: b\n\n";
        let events = parse_all_ways(body);
        assert_eq!(events[0].id.as_deref(), Some("7"));
        assert_eq!(events[1].id.as_deref(), Some("7"));
    }

    #[test]
    fn a_long_event_in_many_chunks() {
        let payload = "x".repeat(10_000);
        let body = format!("data: {payload}\n\n");
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        for chunk in body.as_bytes().chunks(7) {
            events.extend(parser.push(chunk));
        }
        assert_eq!(events, vec![ev(None, &payload)]);
    }
}
