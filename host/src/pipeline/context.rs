//! The one value a request carries forward through the stages, from its arrival to its end.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use http::HeaderMap;

use super::cache::slot::Slot;
use super::edge::translation::{Edge, Translation};
use super::forward::socket::SocketTurn;
use super::guard::verdicts::Guarded;
use super::request::ClientRequest;
use crate::auth::Caller;
use crate::catalog::ModelInfo;
use crate::error::Dialect;
use crate::gateway::{Gateway, Target};
use crate::limits::Admission;
use crate::plugins::Operation;
use crate::redact::Redactor;
use crate::state::AppState;
use crate::telemetry::{RequestTelemetry, Trace};
use crate::tokenizer::Tokenizer;

/// One request, as HTTP hands it to the pipeline.
pub struct Incoming {
    pub dialect: Dialect,
    pub operation: Operation,
    /// From the request-log middleware (the client's `x-request-id`, or a new one).
    pub request_id: String,
    pub headers: HeaderMap,
    pub body: axum::body::Body,
    /// A registry dialect's route, and the config snapshot it was found in; `None` for Chat.
    pub edge: Option<Edge>,
    /// The client socket it is a turn of (the Responses API's WebSocket mode), whose upstream
    /// sockets it may go on; `None` for a request of its own.
    pub socket: Option<SocketTurn>,
}

/// What a request knows, filled in by each stage in turn and closed once by `finish` (also
/// when it is dropped before its end: see `finish.rs`).
pub struct Context {
    /// The config this request runs on: one snapshot, taken at its arrival.
    pub gateway: Arc<Gateway>,
    pub request_id: String,
    pub dialect: Dialect,
    pub operation: Operation,
    /// Who sent it: until auth passes, the project it claims (or the default), without a key.
    pub caller: Caller,
    /// The parsed request: empty until `parse`.
    pub request: ClientRequest,
    /// A registry dialect's route and parameters, as the server matched them.
    pub edge: Option<crate::plugins::Matched>,
    /// A registry dialect's own body and plugin, beside its canonical form.
    pub translation: Option<Translation>,
    /// The ledger's name for its operation when it is not the operation's own: a registry
    /// dialect's declared name (`messages`, `gemini`), so that each dialect's records can be
    /// told apart; `passthrough` for a pass-through request.
    pub(crate) recorded_as: Option<Cow<'static, str>>,
    /// The prompt's tokens, counted on first use (by admit, route or the record) and kept.
    prompt_tokens: Option<u32>,
    /// How the prompt is counted: the host's tokenizer (a seam for the count-once test).
    pub(crate) count_prompt: fn(&ClientRequest) -> u32,
    /// Parents the stages' spans.
    pub trace: Trace,
    /// The secrets this request must not leak: kept out of its errors, log line and record.
    pub redactor: Redactor,
    /// The limits that admitted it, settled when it ends; none without limit rules.
    pub(crate) admission: Option<Admission>,
    /// The target tried last (the one that answered, if any).
    pub(crate) target: Option<Tried>,
    /// The guards that apply to it, and their verdicts.
    pub guard: Guarded,
    /// When it arrived, and when its first output went to the client.
    pub(crate) started: Instant,
    pub(crate) arrived_us: i64,
    pub(crate) first_output_us: Option<u64>,
    /// What the upstream charged for a whole answer, kept from the moment it was read: when a
    /// later stage refuses that answer (an answer guard's stop), the client gets an error but
    /// the record and the limits still carry what was spent.
    pub(crate) spent: Option<crate::plugins::Usage>,
    /// The request's span, metrics and log line, ended by `finish`.
    pub(crate) telemetry: Option<RequestTelemetry>,
    /// What the response cache did for it, and what a miss's answer is kept under.
    pub(crate) cache: Slot,
    /// Where the end writes: the ledger, and the tracker that settling limits runs under.
    pub(crate) ledger: crate::ledger::Ledger,
    pub(crate) background: tokio_util::task::TaskTracker,
    /// The Realtime session it is one response of (`rtsess_…`); `None` for a request of its own.
    pub(crate) session_id: Option<String>,
    /// The client socket it is a turn of, if any (see [`Incoming::socket`]).
    pub(crate) socket: Option<SocketTurn>,
}

/// A target an attempt was made at.
pub(crate) struct Tried {
    pub provider: String,
    pub model: String,
    pub price: Option<Arc<ModelInfo>>,
    /// `gen_ai.provider.name` of its plugin.
    pub system: Arc<str>,
}

/// Body bytes a stream keeps uncounted until it ends (see [`Context::release_body_for_stream`]).
const KEPT_FOR_COUNT: usize = 16 << 10;

impl Context {
    /// A request that just arrived: its span starts now.
    pub fn new(state: &AppState, incoming: &Incoming) -> Self {
        // A dialect's route was found in a snapshot: its request runs on that one.
        let gateway = incoming.edge.as_ref().map_or_else(
            || state.gateway.load_full(),
            |edge| Arc::clone(&edge.gateway),
        );
        // A dialect's request is traced under its route's declared path and measured under the
        // dialect's name, as it is recorded.
        let route = match &incoming.edge {
            Some(edge) => (
                Cow::Owned(edge.matched.route().path().to_owned()),
                Cow::Owned(edge.matched.dialect.name.clone()),
            ),
            None => {
                let names = crate::plugins::operation_names(incoming.operation);
                (Cow::Borrowed(names.path), Cow::Borrowed(names.measured))
            }
        };
        Self::start(state, gateway, incoming, route)
    }

    /// A pass-through request (see [`super::forward`]), recorded and measured as
    /// `passthrough` (whatever its prefix); `incoming` carries its headers and id (its body
    /// goes upstream as it arrives).
    pub fn passthrough(state: &AppState, incoming: &Incoming) -> Self {
        let mut cx = Self::start(
            state,
            state.gateway.load_full(),
            incoming,
            (Cow::Borrowed("/passthrough"), Cow::Borrowed("passthrough")),
        );
        cx.recorded_as = Some("passthrough".into());
        cx
    }

    /// One response of the Realtime session `session_id` (see `server::realtime`), on the
    /// session's config snapshot, recorded and measured as `realtime`; `headers` are the
    /// upgrade's.
    pub fn realtime(
        state: &AppState,
        gateway: Arc<Gateway>,
        headers: &HeaderMap,
        session_id: &str,
    ) -> Self {
        let incoming = Incoming {
            dialect: Dialect::Chat,
            operation: Operation::ChatCompletions,
            request_id: uuid::Uuid::now_v7().to_string(),
            headers: headers.clone(),
            body: axum::body::Body::empty(),
            edge: None,
            socket: None,
        };
        let mut cx = Self::start(
            state,
            gateway,
            &incoming,
            (Cow::Borrowed("/v1/realtime"), Cow::Borrowed("realtime")),
        );
        cx.recorded_as = Some("realtime".into());
        cx.session_id = Some(session_id.to_owned());
        cx
    }

    fn start(
        state: &AppState,
        gateway: Arc<Gateway>,
        incoming: &Incoming,
        (path, name): (Cow<'static, str>, Cow<'static, str>),
    ) -> Self {
        let headers = &incoming.headers;
        let telemetry = state
            .telemetry
            .request(headers, path, name, &incoming.request_id);
        Self {
            redactor: gateway.secrets.for_request(headers),
            gateway,
            request_id: incoming.request_id.clone(),
            dialect: incoming.dialect,
            operation: incoming.operation,
            caller: super::caller::anonymous(headers),
            request: ClientRequest::unparsed(incoming.operation),
            edge: incoming.edge.as_ref().map(|edge| edge.matched.clone()),
            translation: None,
            recorded_as: incoming
                .edge
                .as_ref()
                .map(|edge| edge.matched.dialect.name.clone().into()),
            prompt_tokens: None,
            count_prompt: |request| request.estimate_input_tokens(Tokenizer),
            trace: telemetry.trace().clone(),
            admission: None,
            target: None,
            guard: Guarded::default(),
            started: Instant::now(),
            arrived_us: crate::ledger::time::now_us(),
            first_output_us: None,
            spent: None,
            telemetry: Some(telemetry),
            cache: Slot::default(),
            ledger: state.ledger.clone(),
            background: state.background.clone(),
            session_id: None,
            socket: incoming.socket.clone(),
        }
    }

    /// The prompt's tokens by the host's tokenizer, counted once.
    pub fn prompt_tokens(&mut self) -> u32 {
        *self
            .prompt_tokens
            .get_or_insert_with(|| (self.count_prompt)(&self.request))
    }

    /// Lets the body go when a stream starts, unless its prompt may still need counting and it
    /// is small. The count is needed only for the record of a stream whose upstream reports no
    /// usage, which is rare (the upstream is always asked for it), and costs about 1 µs per
    /// token (callgrind: 230,000 instructions for a 1 KiB prompt, 14 % of a stream): a small
    /// body is kept for it until the stream ends, a large one counted now and let go.
    pub fn release_body_for_stream(&mut self) {
        if self.prompt_tokens.is_none() && self.request.body_bytes() <= KEPT_FOR_COUNT {
            return;
        }
        self.prompt_tokens();
        self.request.release_body();
    }

    /// An attempt goes to `target`; the last one tried is the one the record names.
    pub fn trying(&mut self, target: &Target<'_>) {
        self.target = Some(Tried {
            provider: target.provider.name.to_string(),
            model: target.model.to_owned(),
            price: target.provider.price(target.model),
            system: Arc::clone(&target.provider.system),
        });
    }

    /// The first output is on its way to the client (time to first token); later calls are
    /// ignored.
    pub fn first_output(&mut self) {
        if self.first_output_us.is_none() {
            let us = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.first_output_us = Some(us.max(1));
        }
    }
}
