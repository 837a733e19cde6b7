//! The open event streams of the older HTTP+SSE transport (MCP 2024-11-05): a client holds one
//! `GET` stream, `POST`s its messages to the endpoint that stream named, and reads every answer
//! and notification on the stream. So the answers to a session's messages must reach the
//! process holding its stream: this table, by session id, on that replica.
//!
//! Bounded three ways: streams per key ([`Streams::open`]), messages waiting on a stream (a
//! client that stops reading makes its own requests wait, then fail, never the gateway grow),
//! and requests a session may have in flight ([`Stream::busy`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::{Semaphore, mpsc};

/// Messages waiting to be written to one stream.
const QUEUE: usize = 64;
/// Requests one session may have in flight; a further one is refused (429).
pub const IN_FLIGHT: usize = 16;

/// The streams open on this replica.
#[derive(Default)]
pub struct Streams {
    open: Mutex<HashMap<String, Stream>>,
}

/// One open stream: where its session's messages go.
#[derive(Clone)]
pub struct Stream {
    key_id: String,
    pub sender: mpsc::Sender<Value>,
    /// One permit per request in flight.
    pub busy: Arc<Semaphore>,
}

/// A stream, registered until this is dropped (when the client leaves).
pub struct Opened {
    streams: Arc<Streams>,
    session: String,
    pub receiver: mpsc::Receiver<Value>,
}

impl Streams {
    fn open_streams(&self) -> std::sync::MutexGuard<'_, HashMap<String, Stream>> {
        crate::sync::lock(&self.open)
    }

    /// Registers the stream of `session` for `key_id`; `None` when the key holds `per_key`
    /// already.
    pub fn open(self: &Arc<Self>, session: &str, key_id: &str, per_key: usize) -> Option<Opened> {
        let mut open = self.open_streams();
        if open.values().filter(|s| s.key_id == key_id).count() >= per_key {
            return None;
        }
        let (sender, receiver) = mpsc::channel(QUEUE);
        open.insert(
            session.to_owned(),
            Stream {
                key_id: key_id.to_owned(),
                sender,
                busy: Arc::new(Semaphore::new(IN_FLIGHT)),
            },
        );
        Some(Opened {
            streams: Arc::clone(self),
            session: session.to_owned(),
            receiver,
        })
    }

    /// The stream of `session`, when it is open here.
    pub fn find(&self, session: &str) -> Option<Stream> {
        self.open_streams().get(session).cloned()
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        self.streams.open_streams().remove(&self.session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holds_at_most_its_streams_and_a_closed_one_frees_its_place() {
        let streams = Arc::new(Streams::default());
        let one = streams.open("s1", "key_a", 2).unwrap();
        let _two = streams.open("s2", "key_a", 2).unwrap();
        assert!(streams.open("s3", "key_a", 2).is_none());
        assert!(streams.open("s3", "key_b", 2).is_some(), "per key");
        assert!(streams.find("s1").is_some());
        drop(one);
        assert!(streams.find("s1").is_none());
        assert!(streams.open("s4", "key_a", 2).is_some());
    }
}
