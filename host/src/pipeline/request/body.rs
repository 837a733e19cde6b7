//! Request bodies, read whole under one budget of body bytes held at once by all requests.
//!
//! `server.max_body_bytes` bounds one body; nothing bounded how many arrive together, and 16
//! bodies of 32 MiB are half a gigabyte before any is parsed. A request reserves its body's
//! size (its `Content-Length`) from [`BodyBudget`] before reading it, waiting up to
//! [`BUDGET_WAIT`] for room (the client's bytes wait in the socket meanwhile), and keeps the
//! reservation until its handler is done with the body. A body without a length reserves
//! chunk by chunk and is refused at once when the budget is spent: it cannot wait while
//! holding part of the budget without risking every such body waiting on the others. (A client
//! that declares a large body and then sends it slowly holds its reservation until the
//! connection's body-read timeout ends it.)

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use bytes::BytesMut;
use futures_util::StreamExt;
use tokio::sync::OwnedSemaphorePermit;

use crate::error::ApiError;
use crate::state::{AppState, BodyBudget};

/// How long a body waits for room in the budget before the request gets 503.
pub const BUDGET_WAIT: Duration = Duration::from_secs(5);

/// A body's share of the budget, given back when this is dropped: keep it while the body, or
/// what was parsed from it, is alive.
pub struct Reservation(
    #[expect(dead_code, reason = "held for its drop")] Option<OwnedSemaphorePermit>,
);

impl Reservation {
    /// Nothing reserved (an empty body).
    pub fn none() -> Self {
        Self(None)
    }
}

/// Reads `body` whole: 413 past `server.max_body_bytes`, 503 when the budget has no room, 408
/// when it does not arrive within `server.body_read_timeout_ms`.
pub async fn read(state: &AppState, body: Body) -> Result<(Bytes, Reservation), ApiError> {
    let mut budgeted = Budgeted::reserve(state, body.size_hint().upper()).await?;
    let mut buffer = BytesMut::new();
    let mut chunks = body.into_data_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| ApiError::body_unreadable(&e))?;
        budgeted.take(chunk.len())?;
        buffer.extend_from_slice(&chunk);
    }
    Ok((buffer.freeze(), budgeted.into_reservation()))
}

/// A body's reservation while it is being read: what it declared, grown chunk by chunk when it
/// declared nothing. Shared by whole bodies ([`read`]) and multipart uploads (`upload.rs`).
pub struct Budgeted {
    budget: Arc<tokio::sync::Semaphore>,
    max: usize,
    read: usize,
    reserved: Option<OwnedSemaphorePermit>,
}

impl Budgeted {
    /// Reserves a body's `declared` length (from its size hint; a `Body` is not `Sync`, so
    /// it is not held across the wait): 413 past the maximum, 503 when no room comes in time.
    pub async fn reserve(state: &AppState, declared: Option<u64>) -> Result<Self, ApiError> {
        let max = state.max_body_bytes;
        if declared.is_some_and(|n| n > max as u64) {
            return Err(ApiError::BodyTooLarge(max));
        }
        let budget = Arc::clone(state.body_budget.semaphore());
        let reserved = match declared {
            Some(n) => {
                let kib = BodyBudget::kib(usize::try_from(n).unwrap_or(usize::MAX));
                let wait = Arc::clone(&budget).acquire_many_owned(kib);
                match tokio::time::timeout(BUDGET_WAIT, wait).await {
                    Ok(Ok(permit)) => Some(permit),
                    Ok(Err(_)) | Err(_) => return Err(ApiError::ServerBusy),
                }
            }
            None => None,
        };
        Ok(Self {
            budget,
            max,
            read: 0,
            reserved,
        })
    }

    /// Counts `len` more bytes read: 413 past the maximum, 503 when the budget has no room
    /// for what was not declared.
    pub fn take(&mut self, len: usize) -> Result<(), ApiError> {
        self.read += len;
        if self.read > self.max {
            return Err(ApiError::BodyTooLarge(self.max));
        }
        let held = self.reserved.as_ref().map_or(0, |p| p.num_permits());
        let needed = BodyBudget::kib(self.read);
        if needed > held as u32 {
            let more = Arc::clone(&self.budget)
                .try_acquire_many_owned(needed - held as u32)
                .map_err(|_| ApiError::ServerBusy)?;
            match &mut self.reserved {
                Some(permit) => permit.merge(more),
                None => self.reserved = Some(more),
            }
        }
        Ok(())
    }

    pub fn into_reservation(self) -> Reservation {
        Reservation(self.reserved)
    }
}
