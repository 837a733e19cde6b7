//! A stream written as one JSON array instead of server-sent events, for the dialects whose
//! plugin asks for it (Google's `streamGenerateContent` without `alt=sse`): each event's data
//! becomes an element as it arrives, so the array streams as the events did.

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use futures_util::StreamExt;

use crate::pipeline::reply::{Answer, AnswerBody};

/// `answer` with its event stream reframed as a JSON array, and its content type said so.
pub fn reframe(mut answer: Answer) -> Answer {
    let AnswerBody::Events(body) = answer.body else {
        return answer;
    };
    answer.headers.push((
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    ));
    let mut framer = Framer::default();
    let opened =
        futures_util::stream::once(async { Ok::<_, axum::Error>(Bytes::from_static(b"[")) });
    let events = body
        .into_data_stream()
        .map(move |chunk| chunk.map(|bytes| framer.push(&bytes)));
    let closed =
        futures_util::stream::once(async { Ok::<_, axum::Error>(Bytes::from_static(b"]")) });
    answer.body = AnswerBody::Events(Body::from_stream(opened.chain(events).chain(closed)));
    answer
}

/// Turns SSE bytes, split anywhere, into array elements: `data:` lines of one event joined,
/// elements separated by commas; `event:` names and comments are dropped.
#[derive(Default)]
struct Framer {
    pending: Vec<u8>,
    written: bool,
}

impl Framer {
    fn push(&mut self, bytes: &[u8]) -> Bytes {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = find(&self.pending, b"\n\n") {
            let event: Vec<u8> = self.pending.drain(..end + 2).collect();
            let mut data = Vec::new();
            for line in event.split(|b| *b == b'\n') {
                if let Some(value) = line.strip_prefix(b"data:") {
                    if !data.is_empty() {
                        data.push(b'\n');
                    }
                    data.extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
                }
            }
            if data.is_empty() {
                continue;
            }
            if self.written {
                out.extend_from_slice(b",\r\n");
            }
            out.extend_from_slice(&data);
            self.written = true;
        }
        Bytes::from(out)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn events_split_anywhere_become_one_array() {
        let answer = Answer {
            headers: Vec::new(),
            body: AnswerBody::Events(Body::from_stream(futures_util::stream::iter([
                Ok::<_, std::io::Error>(Bytes::from_static(b"data: {\"a\":1}\n")),
                Ok(Bytes::from_static(b"\nevent: x\ndata: {\"b\":")),
                Ok(Bytes::from_static(b"2}\n\n")),
            ]))),
        };
        let answer = reframe(answer);
        assert!(answer.headers.iter().any(|(_, v)| v == "application/json"));
        let AnswerBody::Events(body) = answer.body else {
            panic!("not a stream");
        };
        let bytes = axum::body::to_bytes(body, 1 << 16).await.unwrap();
        let array: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(array, serde_json::json!([{"a": 1}, {"b": 2}]));
    }
}
