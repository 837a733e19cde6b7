//! Progress and cancellation of tool calls in flight.
//!
//! Progress: rmcp gives every request on an upstream connection a progress token of its own (a
//! counter per connection), so a client's token never reaches the server and two clients'
//! tokens cannot collide there. The server's `notifications/progress` name that token; the
//! connection's [`Progress`] routes each to the call that holds it, which relays it to its
//! client under the client's own token.
//!
//! Cancellation: a client's `notifications/cancelled` names its own request id, within its
//! session; [`InFlight`] finds the call by both and cancels it, and the call sends the server
//! `notifications/cancelled` with the id the server knows. Calls live in the replica that
//! serves their `POST`, so a cancellation must reach the same replica (an MCP client sends it
//! on the same session, through the same load balancer; one that lands elsewhere finds
//! nothing, and the call runs to its end).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Notifications one call may have waiting before newer ones are dropped (progress is
/// advisory: a client that does not read its stream loses some, never the call).
const QUEUE: usize = 32;
/// Notifications kept for a token nobody holds yet: a server can report progress before the
/// call that sent the request has registered its token.
const EARLY_MAX: usize = 16;

/// The progress routes of one upstream connection.
#[derive(Default)]
pub struct Progress {
    routes: Mutex<Routes>,
}

#[derive(Default)]
struct Routes {
    open: HashMap<ProgressToken, mpsc::Sender<ProgressNotificationParam>>,
    early: VecDeque<ProgressNotificationParam>,
}

impl Progress {
    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        crate::sync::lock(&self.routes)
    }

    /// The progress of the request that holds `token`, until the subscription is dropped.
    pub fn subscribe(self: &Arc<Self>, token: ProgressToken) -> Subscription {
        let (sender, receiver) = mpsc::channel(QUEUE);
        let mut routes = self.routes();
        let early = std::mem::take(&mut routes.early);
        for notification in early {
            if notification.progress_token == token {
                let _ = sender.try_send(notification);
            } else {
                routes.early.push_back(notification);
            }
        }
        routes.open.insert(token.clone(), sender);
        Subscription {
            progress: Arc::clone(self),
            token,
            receiver,
        }
    }

    /// Passes a server's notification to the call that holds its token.
    pub fn deliver(&self, notification: ProgressNotificationParam) {
        let mut routes = self.routes();
        if let Some(sender) = routes.open.get(&notification.progress_token) {
            let _ = sender.try_send(notification);
            return;
        }
        if routes.early.len() == EARLY_MAX {
            routes.early.pop_front();
        }
        routes.early.push_back(notification);
    }

    /// Forgets every route: the connection they belonged to is gone.
    pub fn clear(&self) {
        let mut routes = self.routes();
        routes.open.clear();
        routes.early.clear();
    }
}

/// One call's progress, as its server reports it.
pub struct Subscription {
    progress: Arc<Progress>,
    token: ProgressToken,
    receiver: mpsc::Receiver<ProgressNotificationParam>,
}

impl Subscription {
    pub async fn next(&mut self) -> Option<ProgressNotificationParam> {
        self.receiver.recv().await
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.progress.routes().open.remove(&self.token);
    }
}

/// Where a call's progress goes: its client's token and the client's stream.
pub struct Relay {
    pub token: serde_json::Value,
    pub sender: mpsc::Sender<serde_json::Value>,
}

impl Relay {
    /// A relay and the receiving end of its stream.
    pub fn new(token: serde_json::Value) -> (Self, mpsc::Receiver<serde_json::Value>) {
        let (sender, receiver) = mpsc::channel(QUEUE);
        (Self { token, sender }, receiver)
    }

    /// Passes on a server's progress under the client's token (dropped when the client's
    /// stream is full or gone).
    pub fn send(&self, progress: &ProgressNotificationParam) {
        let mut params = serde_json::json!({
            "progressToken": self.token,
            "progress": progress.progress,
        });
        if let Some(total) = progress.total {
            params["total"] = total.into();
        }
        if let Some(message) = &progress.message {
            params["message"] = crate::clip::clip(message, 1000).into_owned().into();
        }
        let notification = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": params,
        });
        let _ = self.sender.try_send(notification);
    }
}

/// The tool calls in flight on this replica, by session and the client's request id.
#[derive(Default)]
pub struct InFlight {
    calls: Mutex<HashMap<(String, String), CancellationToken>>,
}

impl InFlight {
    /// Registers a call; it can be cancelled until the returned entry is dropped.
    pub fn enter(self: &Arc<Self>, session: &str, id: &serde_json::Value) -> Entry {
        let key = (session.to_owned(), id.to_string());
        let cancel = CancellationToken::new();
        crate::sync::lock(&self.calls).insert(key.clone(), cancel.clone());
        Entry {
            in_flight: Arc::clone(self),
            key,
            cancel,
        }
    }

    /// Cancels the call `id` of `session`; whether there was one.
    pub fn cancel(&self, session: &str, id: &serde_json::Value) -> bool {
        let key = (session.to_owned(), id.to_string());
        let calls = crate::sync::lock(&self.calls);
        calls.get(&key).inspect(|c| c.cancel()).is_some()
    }
}

/// A registered call.
pub struct Entry {
    in_flight: Arc<InFlight>,
    key: (String, String),
    pub cancel: CancellationToken,
}

impl Drop for Entry {
    fn drop(&mut self) {
        crate::sync::lock(&self.in_flight.calls).remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    fn note(token: i64, progress: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), progress)
    }

    #[tokio::test]
    async fn progress_reaches_the_call_that_holds_its_token_even_when_it_came_first() {
        let progress = Arc::new(Progress::default());
        progress.deliver(note(7, 0.5));
        progress.deliver(note(8, 0.1));
        let mut seven = progress.subscribe(ProgressToken(NumberOrString::Number(7)));
        progress.deliver(note(7, 1.0));
        assert_eq!(seven.next().await.unwrap().progress, 0.5);
        assert_eq!(seven.next().await.unwrap().progress, 1.0);
        drop(seven);
        assert!(progress.routes().open.is_empty());
        assert_eq!(progress.routes().early.len(), 1, "8's stays for its call");
    }

    #[test]
    fn a_cancellation_finds_its_call_only_in_its_own_session() {
        let in_flight = Arc::new(InFlight::default());
        let entry = in_flight.enter("s1", &serde_json::json!(3));
        assert!(!in_flight.cancel("s2", &serde_json::json!(3)));
        assert!(!in_flight.cancel("s1", &serde_json::json!("3")));
        assert!(!entry.cancel.is_cancelled());
        assert!(in_flight.cancel("s1", &serde_json::json!(3)));
        assert!(entry.cancel.is_cancelled());
        drop(entry);
        assert!(!in_flight.cancel("s1", &serde_json::json!(3)));
    }
}
