//! A connection's deadlines: its request head, its idle time between requests, and each request
//! body. A response is never timed: a stream may send for as long as it has something to send.
//!
//! hyper's own `header_read_timeout` covers HTTP/1 only, and it also runs while a kept-alive
//! connection waits for its next request, so the idle time would be capped at the header time.
//! Here one watchdog per connection knows whether a request is in flight (the service marks it
//! from its head to its response's last byte) and when bytes arrive (the socket wrapper), which
//! gives nginx's model for both protocols:
//!
//! - **head**: a connection must send a complete request head within `header_read` of its
//!   opening or, for HTTP/1 kept alive, of the first byte after its previous response;
//! - **idle**: a connection with no request in flight is closed after `idle` (for HTTP/2,
//!   pings and other frames do not count as activity: only requests do);
//! - **body**: a request body must arrive within `body_read` of the end of its head, else the
//!   body errors with [`BodyReadTimeout`], which the handlers answer with 408.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use hyper::body::{Frame, Incoming, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use crate::error::BodyReadTimeout;

/// The deadlines of one connection, read from `server:` when it is accepted.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionTimeouts {
    pub header_read: Duration,
    pub idle: Duration,
    pub body_read: Duration,
}

impl ConnectionTimeouts {
    pub fn of(server: &crate::config::ServerConfig) -> Self {
        Self {
            header_read: server.header_read_timeout(),
            idle: server.idle_timeout(),
            body_read: server.body_read_timeout(),
        }
    }
}

/// Why a connection's watchdog fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expiry {
    /// No complete request head in time: the client is too slow, or trickling on purpose.
    Head,
    /// No request in flight for the idle time.
    Idle,
}

/// What the watchdog of one connection knows.
pub(super) struct Activity {
    state: Mutex<State>,
    changed: Notify,
    timeouts: ConnectionTimeouts,
}

struct State {
    in_flight: usize,
    /// Since when no request has been in flight.
    idle_since: Instant,
    /// Since when a request head has been awaited with bytes of it arriving (HTTP/1), or since
    /// the connection opened (either protocol, until its first request).
    head_since: Option<Instant>,
    /// HTTP/2 frames (pings, settings) arrive between requests: bytes do not start a head.
    http2: bool,
}

impl Activity {
    pub(super) fn new(timeouts: ConnectionTimeouts) -> Arc<Self> {
        let now = Instant::now();
        Arc::new(Self {
            state: Mutex::new(State {
                in_flight: 0,
                idle_since: now,
                head_since: Some(now),
                http2: false,
            }),
            changed: Notify::new(),
            timeouts,
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// Marks a request in flight until the returned guard is dropped (its response's end).
    pub(super) fn request_started(self: &Arc<Self>, version: http::Version) -> InFlight {
        {
            let mut state = self.state();
            state.in_flight += 1;
            state.head_since = None;
            state.http2 |= version == http::Version::HTTP_2;
        }
        self.changed.notify_one();
        InFlight(Arc::clone(self))
    }

    /// Bytes arrived from the client.
    fn read(&self) {
        let mut state = self.state();
        if state.in_flight == 0 && state.head_since.is_none() && !state.http2 {
            state.head_since = Some(Instant::now());
            drop(state);
            // The head deadline may come before the idle one.
            self.changed.notify_one();
        }
    }

    /// Starts the idle time again (after asking the connection to close gracefully: it gets
    /// one more idle period to do so).
    pub(super) fn restart_idle(&self) {
        self.state().idle_since = Instant::now();
    }

    /// Resolves when the connection has outstayed its welcome, never while a request is in
    /// flight.
    pub(super) async fn expired(&self) -> Expiry {
        loop {
            let next = self.state().deadline(&self.timeouts);
            match next {
                None => self.changed.notified().await,
                Some((at, _)) => {
                    tokio::select! {
                        () = self.changed.notified() => {}
                        () = tokio::time::sleep_until(at.into()) => {
                            // A request may have started at the same moment: ask again.
                            if let Some((at, why)) = self.state().deadline(&self.timeouts)
                                && at <= Instant::now()
                            {
                                return why;
                            }
                        }
                    }
                }
            }
        }
    }
}

impl State {
    /// When, and why, the connection should close if nothing changes; `None` while busy.
    fn deadline(&self, timeouts: &ConnectionTimeouts) -> Option<(Instant, Expiry)> {
        if self.in_flight > 0 {
            return None;
        }
        let idle = self
            .idle_since
            .checked_add(timeouts.idle)
            .map(|at| (at, Expiry::Idle));
        let head = self
            .head_since
            .and_then(|since| since.checked_add(timeouts.header_read))
            .map(|at| (at, Expiry::Head));
        match (idle, head) {
            (Some(idle), Some(head)) => Some(if head.0 <= idle.0 { head } else { idle }),
            (idle, head) => idle.or(head),
        }
    }
}

/// A request in flight; dropped when its response has ended (or was dropped).
pub(super) struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        {
            let mut state = self.0.state();
            state.in_flight = state.in_flight.saturating_sub(1);
            if state.in_flight == 0 {
                state.idle_since = Instant::now();
                state.head_since = None;
            }
        }
        self.0.changed.notify_one();
    }
}

/// The client's socket, telling the watchdog when bytes arrive.
pub(super) struct Watched<T> {
    io: T,
    activity: Arc<Activity>,
}

impl<T> Watched<T> {
    pub(super) fn new(io: T, activity: Arc<Activity>) -> Self {
        Self { io, activity }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.io).poll_read(cx, buf))?;
        if buf.filled().len() > before {
            this.activity.read();
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// A request body with a deadline, counted from the end of the request's head.
pub(super) struct TimedBody {
    inner: Incoming,
    deadline: tokio::time::Instant,
    timeout: Duration,
    /// Made only when the body first has to wait: most bodies arrive with their head.
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl TimedBody {
    /// `inner` as a body that errors with [`BodyReadTimeout`] past `timeout`.
    pub(super) fn body(inner: Incoming, timeout: Duration) -> Body {
        Body::new(Self {
            inner,
            deadline: tokio::time::Instant::now() + timeout,
            timeout,
            sleep: None,
        })
    }

    fn expired(&self) -> BodyReadTimeout {
        BodyReadTimeout::new(u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX))
    }
}

impl hyper::body::Body for TimedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        let deadline = this.deadline;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        ready!(sleep.as_mut().poll(cx));
        Poll::Ready(Some(Err(this.expired().into())))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that keeps its request in flight until its last frame.
pub(super) struct Tracked {
    inner: Body,
    in_flight: Option<InFlight>,
}

impl Tracked {
    /// `inner` as a body that ends `in_flight` with its last frame.
    pub(super) fn body(inner: Body, in_flight: InFlight) -> Body {
        Body::new(Self {
            inner,
            in_flight: Some(in_flight),
        })
    }
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let frame = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        if frame.is_none() {
            this.in_flight = None;
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeouts() -> ConnectionTimeouts {
        ConnectionTimeouts {
            header_read: Duration::from_millis(100),
            idle: Duration::from_millis(1_000),
            body_read: Duration::from_millis(100),
        }
    }

    fn state(in_flight: usize, idle_since: Instant, head_since: Option<Instant>) -> State {
        State {
            in_flight,
            idle_since,
            head_since,
            http2: false,
        }
    }

    #[test]
    fn a_busy_connection_has_no_deadline() {
        let now = Instant::now();
        assert_eq!(state(1, now, None).deadline(&timeouts()), None);
    }

    #[test]
    fn an_idle_connection_closes_after_the_idle_time_unless_a_head_began() {
        let now = Instant::now();
        let idle = state(0, now, None).deadline(&timeouts());
        assert_eq!(
            idle,
            Some((now + Duration::from_millis(1_000), Expiry::Idle))
        );
        let later = now + Duration::from_millis(500);
        let head = state(0, now, Some(later)).deadline(&timeouts());
        assert_eq!(
            head,
            Some((later + Duration::from_millis(100), Expiry::Head))
        );
    }

    #[tokio::test]
    async fn http2_frames_between_requests_do_not_start_a_head() {
        let activity = Activity::new(timeouts());
        drop(activity.request_started(http::Version::HTTP_2));
        activity.read();
        assert!(activity.state().head_since.is_none());
        let activity = Activity::new(timeouts());
        drop(activity.request_started(http::Version::HTTP_11));
        activity.read();
        assert!(activity.state().head_since.is_some());
    }
}
