//! The accept loop and the connections it serves, all tracked so that a shutdown can first drain
//! them and then, past its deadline, cut them.
//!
//! At most `server.max_connections` are open at once: at the cap the loop stops accepting, so
//! further clients wait in the kernel's listen backlog (as nginx and HAProxy do) instead of
//! taking file descriptors the upstream connections need. Each connection has the deadlines of
//! [`super::timeouts`].
//!
//! Requests already running come before new connections. In `wasmgate serve` the loop runs on
//! the thread that blocks on the server (`main.rs`), so the connections it spawns reach the
//! workers through the runtime's shared queue, which a worker looks at only now and then while
//! it has work of its own, but which it empties up to 128 at a time whenever its own runs dry:
//! every event of a running stream met after such a batch waited behind those requests' starts
//! (about 100 µs each), and 512 streams opened at once stalled the first ones by 25 to 130 ms
//! in most runs (BENCHMARKS.md). So at most [`STARTING`] accepted connections wait for their
//! first turn: the rest of a burst waits in the listen backlog. (The loop moved onto a worker,
//! with or without a yield after every few accepts, stalled as often: there the connections it
//! spawns, and the loop itself once woken, run ahead of the queued work.)
//!
//! `axum::serve` drains without a deadline and spawns connections where nothing can cancel them.
//! Here every connection (and every HTTP/2 stream hyper spawns) runs in one `TaskTracker` and
//! stops when the abort token fires; dropping a connection drops its handlers and response
//! bodies, which is what records a cut stream's usage before the ledger is flushed.

use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::server::conn::auto::Builder;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::future::FutureExt as _;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt as _;

use super::timeouts::{Activity, ConnectionTimeouts, Expiry, TimedBody, Tracked, Watched};

/// Connections accepted and not yet polled once, at most: past it, the loop waits for one of
/// them to start before accepting the next.
pub const STARTING: usize = 2;

/// The connections being served: draining asks them to finish, aborting drops them.
#[derive(Clone, Default)]
pub struct Connections {
    tasks: TaskTracker,
    drain: CancellationToken,
    abort: CancellationToken,
}

/// Runs hyper's tasks (HTTP/2 streams) in the tracker, so they are waited for and aborted with
/// their connection.
#[derive(Clone)]
struct Executor(Connections);

impl<F> hyper::rt::Executor<F> for Executor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        self.0.spawn(future);
    }
}

impl Connections {
    /// Accepts connections on `listener`, at most `max_connections` open at once, and serves
    /// `app` on each, with the deadlines `timeouts` gives when it is accepted, until `shutdown`
    /// resolves; the listener is closed on return, so new connections are refused from then on.
    pub async fn accept(
        &self,
        listener: TcpListener,
        app: Router,
        max_connections: usize,
        timeouts: impl Fn() -> ConnectionTimeouts,
        shutdown: impl Future<Output = ()>,
    ) {
        let mut shutdown = pin!(shutdown);
        let slots = Arc::new(Semaphore::new(max_connections));
        let starting = Arc::new(Semaphore::new(STARTING));
        let mut at_cap = false;
        loop {
            let slot = match Arc::clone(&slots).try_acquire_owned() {
                Ok(slot) => {
                    at_cap = false;
                    slot
                }
                Err(_) => {
                    if !at_cap {
                        // Once per episode: a flood would otherwise write a line per connection.
                        tracing::warn!(
                            "{max_connections} connections open (server.max_connections): \
                             new ones wait in the listen backlog until one closes"
                        );
                        at_cap = true;
                    }
                    let Some(slot) = freed(&slots, shutdown.as_mut()).await else {
                        break;
                    };
                    slot
                }
            };
            let start = match Arc::clone(&starting).try_acquire_owned() {
                Ok(start) => start,
                Err(_) => {
                    let Some(start) = freed(&starting, shutdown.as_mut()).await else {
                        break;
                    };
                    start
                }
            };
            let (tcp, _peer) = tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        accept_failed(&e).await;
                        continue;
                    }
                },
            };
            // Nagle's algorithm meeting delayed ACKs stalls small SSE writes by ~40 ms.
            let _ = tcp.set_nodelay(true);
            self.serve(tcp, app.clone(), slot, start, timeouts());
        }
        self.drain.cancel();
        self.tasks.close();
    }

    /// Serves one connection, holding `slot` (of `max_connections`) until it closes and `start`
    /// (of [`STARTING`]) until its first turn.
    fn serve(
        &self,
        tcp: TcpStream,
        app: Router,
        slot: OwnedSemaphorePermit,
        start: OwnedSemaphorePermit,
        timeouts: ConnectionTimeouts,
    ) {
        let connection = self.connection(tcp, app, slot, timeouts);
        self.spawn(Started::new(start, connection));
    }

    /// One connection served until it ends, or is drained or expires.
    fn connection(
        &self,
        tcp: TcpStream,
        app: Router,
        slot: OwnedSemaphorePermit,
        timeouts: ConnectionTimeouts,
    ) -> impl Future<Output = ()> + Send + 'static {
        let activity = Activity::new(timeouts);
        let io = TokioIo::new(Watched::new(tcp, Arc::clone(&activity)));
        let watched = Arc::clone(&activity);
        let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
            let in_flight = watched.request_started(request.version());
            let request = request.map(|body| TimedBody::body(body, timeouts.body_read));
            let app = app.clone();
            async move {
                let response = app.oneshot(request).await;
                response.map(|response| response.map(|body| Tracked::body(body, in_flight)))
            }
        });
        let connections = self.clone();
        async move {
            let _slot = slot;
            let builder = Builder::new(Executor(connections.clone()));
            let mut conn = pin!(builder.serve_connection_with_upgrades(io, service));
            let mut drain = pin!(connections.drain.cancelled());
            // Whether the connection was asked to close after its response in flight.
            let mut closing = false;
            loop {
                tokio::select! {
                    result = conn.as_mut() => return log_connection_end(result),
                    () = &mut drain, if !closing => {
                        // Idle connections close now; busy ones after the response they are
                        // sending.
                        closing = true;
                        conn.as_mut().graceful_shutdown();
                    }
                    expiry = activity.expired() => match expiry {
                        Expiry::Head => {
                            tracing::debug!(
                                "closed a connection: no complete request head within {} ms",
                                timeouts.header_read.as_millis()
                            );
                            return;
                        }
                        // It was asked to close and did not: cut it.
                        Expiry::Idle if closing => return,
                        Expiry::Idle => {
                            // HTTP/2 gets a GOAWAY, so that its client opens a new connection
                            // rather than failing a request sent meanwhile.
                            closing = true;
                            activity.restart_idle();
                            conn.as_mut().graceful_shutdown();
                        }
                    },
                }
            }
        }
    }

    /// Spawns `future` as a tracked task that is dropped when the connections are aborted.
    fn spawn<F>(&self, future: F)
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tasks.spawn(self.abortable(future));
    }

    /// `future`, dropped when the connections are aborted. A struct, where an `async` block
    /// around a `select!` held `future` twice (its capture and the operand moved out of it):
    /// every connection's task was twice the size of the connection (BENCHMARKS.md).
    fn abortable<F: Future>(&self, future: F) -> impl Future<Output = Option<F::Output>> + use<F> {
        future.with_cancellation_token_owned(self.abort.clone())
    }

    /// Connections (and HTTP/2 streams) still running.
    pub fn in_flight(&self) -> usize {
        self.tasks.len()
    }

    /// Waits up to `deadline` (or until `cut_now` resolves) for every connection to finish, then
    /// drops the rest and waits for them to unwind. Call after [`Connections::accept`] returned.
    pub async fn drain(&self, deadline: Duration, cut_now: impl Future<Output = ()>) -> Drained {
        let early = tokio::select! {
            finished = tokio::time::timeout(deadline, self.tasks.wait()) => {
                if finished.is_ok() {
                    return Drained::All;
                }
                false
            }
            () = cut_now => true,
        };
        let cut = self.tasks.len();
        self.abort.cancel();
        self.tasks.wait().await;
        Drained::Cut { cut, early }
    }
}

/// A permit of `semaphore` once one is freed, or `None` if `shutdown` resolves first.
async fn freed(
    semaphore: &Arc<Semaphore>,
    shutdown: Pin<&mut impl Future<Output = ()>>,
) -> Option<OwnedSemaphorePermit> {
    tokio::select! {
        () = shutdown => None,
        permit = Arc::clone(semaphore).acquire_owned() => permit.ok(),
    }
}

pin_project_lite::pin_project! {
    /// `future`, giving back `permit` once it has been polled once. (A struct for the reason
    /// [`Connections::abortable`] is one.)
    struct Started<F> {
        permit: Option<OwnedSemaphorePermit>,
        #[pin]
        future: F,
    }
}

impl<F> Started<F> {
    fn new(permit: OwnedSemaphorePermit, future: F) -> Self {
        Self {
            permit: Some(permit),
            future,
        }
    }
}

impl<F: Future> Future for Started<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        let this = self.project();
        let polled = this.future.poll(cx);
        drop(this.permit.take());
        polled
    }
}

/// How a drain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drained {
    /// Every connection finished in time.
    All,
    /// `cut` connections (and HTTP/2 streams) were still running: at the deadline, or `early`
    /// when asked to stop waiting.
    Cut { cut: usize, early: bool },
}

fn log_connection_end(result: Result<(), Box<dyn std::error::Error + Send + Sync>>) {
    if let Err(e) = result {
        tracing::debug!("connection ended with an error: {e}");
    }
}

/// Errors that concern one connection are skipped; others (out of file descriptors) are logged
/// and followed by a pause, since accepting again at once would fail the same way.
async fn accept_failed(e: &io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!("accepting a connection failed: {e}");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::sync::Mutex;

    use axum::routing::get;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;
    use crate::config::ServerConfig;

    const CLIENTS: usize = STARTING * 2 + 8;

    /// What each open connection's task holds while it waits: the connection, once. Its
    /// wrappers (the start permit, the abort token) add their fields, not a second copy.
    #[tokio::test]
    async fn a_connections_task_holds_its_connection_once() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (tcp, _) = listener.accept().await.unwrap();
        let permits = Arc::new(Semaphore::new(2));
        let permit = || Arc::clone(&permits).try_acquire_owned().unwrap();
        let connections = Connections::default();
        let timeouts = ConnectionTimeouts::of(&ServerConfig::default());
        let connection = connections.connection(tcp, Router::new(), permit(), timeouts);
        let alone = std::mem::size_of_val(&connection);
        let task = connections.abortable(Started::new(permit(), connection));
        let task = std::mem::size_of_val(&task);
        eprintln!("a connection {alone} bytes, its task {task}");
        assert!(
            task <= alone + 128,
            "a connection's task is {task} bytes for a connection of {alone}"
        );
    }

    /// Every client has connected and sent its request before the server's runtime (one
    /// thread) takes a turn; each handler notes how many connections are open as it runs.
    #[tokio::test]
    async fn a_burst_of_clients_waits_in_the_backlog_not_ahead_of_the_connections_started() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let clients: Vec<std::net::TcpStream> = (0..CLIENTS)
            .map(|_| {
                let mut client = std::net::TcpStream::connect(addr).unwrap();
                client
                    .write_all(b"GET / HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\n\r\n")
                    .unwrap();
                client
            })
            .collect();
        let connections = Connections::default();
        let open = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new().route(
            "/",
            get({
                let (connections, open) = (connections.clone(), Arc::clone(&open));
                move || async move {
                    open.lock().unwrap().push(connections.in_flight());
                    "ok"
                }
            }),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn({
            let connections = connections.clone();
            async move {
                let timeouts = || ConnectionTimeouts::of(&ServerConfig::default());
                let shutdown = async {
                    let _ = stopped.await;
                };
                connections
                    .accept(listener, app, 100, timeouts, shutdown)
                    .await;
            }
        });
        for client in clients {
            client.set_nonblocking(true).unwrap();
            let mut client = tokio::net::TcpStream::from_std(client).unwrap();
            let mut response = String::new();
            client.read_to_string(&mut response).await.unwrap();
            assert!(response.starts_with("HTTP/1.1 200"), "{response}");
            client.shutdown().await.ok();
        }
        stop.send(()).unwrap();
        server.await.unwrap();
        let open = open.lock().unwrap().clone();
        assert_eq!(open.len(), CLIENTS, "every client is answered");
        // Without the bound the loop takes them all from the backlog in its first turn, before
        // the first connection's.
        assert!(
            open[0] <= STARTING && open.iter().all(|&n| n < CLIENTS),
            "connections open as each handler ran: {open:?}"
        );
    }
}
