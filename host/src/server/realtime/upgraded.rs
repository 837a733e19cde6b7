//! What a Realtime session knows of itself from its upgrade, read by the relay (`session`)
//! and by what inspects the client's events (`client_events`).

use std::sync::Arc;

use axum::http::HeaderMap;

use crate::auth::Caller;
use crate::config::WebsocketConfig;
use crate::gateway::{Gateway, Target};
use crate::pipeline::Context;
use crate::pipeline::guard::body::BodyGuards;
use crate::state::AppState;

/// What a session knows of itself from its upgrade.
pub struct Session {
    pub state: Arc<AppState>,
    /// The config snapshot of the upgrade: the session's responses run on it.
    pub gateway: Arc<Gateway>,
    pub caller: Caller,
    /// The upgrade's headers (without the key a browser put in its subprotocols).
    pub headers: HeaderMap,
    /// The model as the client named it.
    pub model: String,
    /// The provider entry (an index into the snapshot's) and the model it was routed to.
    pub provider: usize,
    pub target_model: String,
    /// `rtsess_…`: ties the session's records together.
    pub id: String,
    pub guards: Option<BodyGuards>,
    /// The first answer guard that applies and does not exempt `realtime`: audio output (and
    /// `conversation.item.retrieve`) is refused while there is one.
    pub blind: Option<String>,
    pub bounds: WebsocketConfig,
}

impl Session {
    /// A context for one response of the session: its caller, model and target.
    pub fn context(&self) -> Context {
        let mut cx = Context::realtime(
            &self.state,
            Arc::clone(&self.gateway),
            &self.headers,
            &self.id,
        );
        cx.caller = self.caller.clone();
        cx.request.model = self.model.clone();
        cx.request.stream = true;
        if let Some(provider) = self.gateway.providers.get(self.provider) {
            cx.trying(&Target {
                provider,
                model: &self.target_model,
            });
        }
        cx
    }
}
