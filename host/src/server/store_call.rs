//! One ledger call from a handler: run on the blocking pool (the store is synchronous), its
//! failure a 503 in the API's shape.

use crate::error::ApiError;
use crate::ledger::Store;
use crate::state::AppState;

/// Runs `query` on the ledger's store off the async workers.
pub(super) async fn blocking<T: Send + 'static>(
    state: &AppState,
    query: impl FnOnce(&dyn Store) -> anyhow::Result<T> + Send + 'static,
) -> Result<T, ApiError> {
    let store = state.ledger.store();
    match tokio::task::spawn_blocking(move || query(store.as_ref())).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(ApiError::LedgerUnavailable(format!("{e:#}"))),
        Err(e) => Err(ApiError::LedgerUnavailable(e.to_string())),
    }
}
