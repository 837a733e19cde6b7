//! The long-lived sessions the gateway holds open (the Responses API's WebSocket mode, the
//! Realtime API's sessions): counted
//! per key and in all, so that the upgrade of one too many is refused; closed on shutdown after
//! the turn each has in flight, and cut at the drain's deadline.
//!
//! An upgraded connection leaves the server's connection tracking (hyper hands its socket over),
//! so the sessions are tracked here instead: [`Sockets::track`] runs one until it ends or the
//! sessions are cut.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The open sessions. Cheap to clone: every clone is the same registry.
#[derive(Clone, Default)]
pub struct Sockets {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Open sessions by holder (a key id, or an anonymous project).
    open: Mutex<HashMap<String, u32>>,
    tasks: TaskTracker,
    /// Asks every session to close after its turn in flight.
    closing: CancellationToken,
    /// Drops every session where it stands.
    cut: CancellationToken,
}

/// Why a session was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The holder has `max` sessions open already.
    PerKey { max: u32 },
    /// The gateway has `max` sessions open already.
    Total { max: u32 },
    /// The gateway is shutting down.
    Closing,
}

/// One open session's place in the count, given back when dropped.
pub struct Seat {
    inner: Arc<Inner>,
    holder: String,
}

impl Sockets {
    /// A seat for one more session of `holder`, within `per_key` sessions of it and `total` in
    /// all.
    pub fn admit(&self, holder: &str, per_key: u32, total: u32) -> Result<Seat, Refused> {
        if self.inner.closing.is_cancelled() {
            return Err(Refused::Closing);
        }
        let mut open = self.open();
        let all: u32 = open.values().sum();
        if all >= total {
            return Err(Refused::Total { max: total });
        }
        let held = open.entry(holder.to_owned()).or_insert(0);
        if *held >= per_key {
            return Err(Refused::PerKey { max: per_key });
        }
        *held += 1;
        Ok(Seat {
            inner: Arc::clone(&self.inner),
            holder: holder.to_owned(),
        })
    }

    /// Sessions open now.
    pub fn open_count(&self) -> u32 {
        self.open().values().sum()
    }

    /// Runs `session` as a tracked one, dropped where it stands if the sessions are cut.
    pub async fn track(&self, session: impl Future<Output = ()>) {
        let cut = self.inner.cut.clone();
        self.inner
            .tasks
            .track_future(async move {
                tokio::select! {
                    () = session => {}
                    () = cut.cancelled() => {}
                }
            })
            .await;
    }

    /// Resolves when the sessions are asked to close (a shutdown).
    pub fn closing(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.inner.closing.cancelled()
    }

    /// Asks every session to close after its turn in flight, and waits up to `deadline` for
    /// them; cuts those left. Returns how many were cut.
    pub async fn drain(&self, deadline: Duration) -> usize {
        self.inner.closing.cancel();
        self.inner.tasks.close();
        if tokio::time::timeout(deadline, self.inner.tasks.wait())
            .await
            .is_ok()
        {
            return 0;
        }
        let cut = self.inner.tasks.len();
        self.inner.cut.cancel();
        self.inner.tasks.wait().await;
        cut
    }

    /// The Prometheus lines of the sessions.
    pub fn write_metrics(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP wasmgate_websocket_sessions WebSocket sessions open (the Responses API's and the Realtime API's).\n\
             # TYPE wasmgate_websocket_sessions gauge\n\
             wasmgate_websocket_sessions {}",
            self.open_count()
        );
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<String, u32>> {
        self.inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut open = self
            .inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = open.get_mut(&self.holder) {
            *held -= 1;
            if *held == 0 {
                open.remove(&self.holder);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_are_counted_per_holder_and_in_all_and_given_back() {
        let sockets = Sockets::default();
        let a1 = sockets.admit("a", 2, 3);
        let a2 = sockets.admit("a", 2, 3);
        assert!(a1.is_ok() && a2.is_ok());
        assert_eq!(
            sockets.admit("a", 2, 3).err(),
            Some(Refused::PerKey { max: 2 })
        );
        let b1 = sockets.admit("b", 2, 3);
        assert!(b1.is_ok());
        assert_eq!(
            sockets.admit("b", 2, 3).err(),
            Some(Refused::Total { max: 3 })
        );
        assert_eq!(sockets.open_count(), 3);
        drop(a1);
        assert!(
            sockets.admit("a", 2, 3).is_ok(),
            "a seat given back is free"
        );
        assert_eq!(
            sockets.open_count(),
            2,
            "the admitted seat was dropped at once"
        );
    }

    #[tokio::test]
    async fn a_drain_closes_then_cuts_what_is_left() {
        let sockets = Sockets::default();
        let held = sockets.clone();
        let stuck = tokio::spawn(async move { held.track(std::future::pending()).await });
        tokio::task::yield_now().await;
        let cut = sockets.drain(Duration::from_millis(20)).await;
        assert_eq!(cut, 1);
        assert!(stuck.await.is_ok());
        assert_eq!(
            sockets.admit("a", 1, 1).err(),
            Some(Refused::Closing),
            "no session opens during a shutdown"
        );
    }
}
