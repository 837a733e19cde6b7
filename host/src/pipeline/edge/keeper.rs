//! Where a Responses answer the client asked to keep (`store`, the default) is kept: in the
//! ledger's database, whichever upstream answered (`replay.rs` replays it into a later turn).

use std::sync::Arc;

use crate::ledger::Store;
use crate::ledger::responses::StoredResponse;

/// Keeps one Responses answer, so that `GET /v1/responses/{id}` and a later
/// `previous_response_id` find it.
#[derive(Clone)]
pub struct Keeper {
    pub(super) store: Arc<dyn Store>,
    pub(super) project: String,
    pub(super) previous_id: Option<String>,
    /// The request's own input items (not the replayed ones), with ids.
    pub(super) input_items: String,
}

impl Keeper {
    /// Keeps `response` (the Responses object as the client receives it). A failure is logged:
    /// the answer itself is not lost for it. Another object on the dialect's routes (a
    /// compaction, `response.compaction`) is not a turn a later one could continue: it is not
    /// kept.
    pub async fn keep(&self, response: &str) {
        let read = serde_json::from_str::<IdOnly>(response);
        let Ok(IdOnly { id, object }) = read else {
            tracing::warn!("a Responses answer without an id cannot be kept");
            return;
        };
        if object.as_deref().is_some_and(|object| object != RESPONSE) {
            return;
        }
        let stored = StoredResponse {
            id,
            project: self.project.clone(),
            created_us: crate::ledger::time::now_us(),
            previous_id: self.previous_id.clone(),
            input_items: self.input_items.clone(),
            response: response.to_owned(),
        };
        let store = Arc::clone(&self.store);
        let kept = tokio::task::spawn_blocking(move || store.put_response(&stored)).await;
        match kept {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!("cannot keep a response: {e:#}"),
            Err(e) => tracing::error!("cannot keep a response: {e}"),
        }
    }
}

/// The `object` of a Responses answer that is a turn of its conversation.
const RESPONSE: &str = "response";

#[derive(serde::Deserialize)]
struct IdOnly {
    id: String,
    object: Option<String>,
}

/// Keeps the Responses object a `response.completed` (or `.incomplete`) event carries.
pub(super) async fn keep_final(keeper: &Keeper, event: &str) {
    #[derive(serde::Deserialize)]
    struct Final<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
        #[serde(default, borrow)]
        response: Option<&'a serde_json::value::RawValue>,
    }
    // Cheap pre-check: most events are deltas.
    if !event.contains("response.completed") && !event.contains("response.incomplete") {
        return;
    }
    if let Ok(Final {
        kind,
        response: Some(response),
    }) = serde_json::from_str::<Final<'_>>(event)
        && (kind == "response.completed" || kind == "response.incomplete")
    {
        keeper.keep(response.get()).await;
    }
}
