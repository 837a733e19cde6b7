//! The pipeline's streamed answer (server-sent events, as a `stream: true` Responses call gets
//! them) cut into the JSON documents the socket sends one message each.

use axum::body::Bytes;

/// Cuts server-sent events out of the bytes of a stream as they arrive.
#[derive(Default)]
pub struct Frames {
    pending: Vec<u8>,
}

impl Frames {
    /// The data of every event completed by `bytes` (an event's `data:` lines joined, the
    /// `event:` line dropped: each document names its own `type`).
    pub fn push(&mut self, bytes: &Bytes) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(end) = find_blank_line(&self.pending[start..]) {
            let block = &self.pending[start..start + end.at];
            if let Some(data) = data_of(block) {
                events.push(data);
            }
            start += end.at + end.len;
        }
        self.pending.drain(..start);
        events
    }
}

struct BlankLine {
    at: usize,
    len: usize,
}

/// Where the first event of `bytes` ends (`\n\n` or `\r\n\r\n`).
fn find_blank_line(bytes: &[u8]) -> Option<BlankLine> {
    let lf = bytes.windows(2).position(|w| w == b"\n\n");
    let crlf = bytes.windows(4).position(|w| w == b"\r\n\r\n");
    match (lf, crlf) {
        (Some(a), Some(b)) if b < a => Some(BlankLine { at: b, len: 4 }),
        (Some(a), _) => Some(BlankLine { at: a, len: 2 }),
        (None, Some(b)) => Some(BlankLine { at: b, len: 4 }),
        (None, None) => None,
    }
}

/// An event's data, if it has any (a comment or a bare `event:` has none; Chat Completions'
/// `[DONE]` is no document).
fn data_of(block: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(block);
    let mut data: Option<String> = None;
    for line in text.lines() {
        let Some(value) = line.strip_prefix("data:") else {
            continue;
        };
        let value = value.strip_prefix(' ').unwrap_or(value);
        match &mut data {
            Some(joined) => {
                joined.push('\n');
                joined.push_str(value);
            }
            None => data = Some(value.to_owned()),
        }
    }
    data.filter(|d| d != "[DONE]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_reads_come_out_whole() {
        let mut frames = Frames::default();
        let first = frames.push(&Bytes::from_static(
            b"event: response.created\ndata: {\"type\":\"response.created\"}\n\nevent: x\nda",
        ));
        assert_eq!(first, vec![r#"{"type":"response.created"}"#]);
        let rest = frames.push(&Bytes::from_static(
            b"ta: {\"a\":1}\r\n\r\n: comment\n\ndata: [DONE]\n\n",
        ));
        assert_eq!(rest, vec![r#"{"a":1}"#]);
        assert!(frames.push(&Bytes::new()).is_empty());
    }
}
