//! Everything a client can be told went wrong ([`ApiError`]), its status, and the detail a
//! client reads (OpenAI's error object); `render.rs` writes it in the client's API.

use std::borrow::Cow;

use axum::http::StatusCode;
use serde::Serialize;

use crate::clip::{clip, echo};

use crate::plugins::{Denial, DenialCode, ErrorKind, PluginError, PluginFailure};
use crate::redact::Redactor;
use crate::upstream::{Refusal, UpstreamError};

/// Everything a client can be told went wrong.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("We could not parse the JSON body of your request: {}", clip(.0, JSON_ERROR))]
    InvalidJson(String),
    #[error("{}", clip(message, crate::clip::MESSAGE))]
    InvalidField { param: String, message: String },
    #[error("The model `{}` does not exist or is not served by this gateway.", echo(.0))]
    ModelNotFound(String),
    #[error("The model `{}` is served by several providers; choose one of: {}.", echo(model), candidates.join(", "))]
    AmbiguousModel {
        model: String,
        candidates: Vec<String>,
    },
    #[error("No target of the virtual model `{model}` can take this request: {message}")]
    NoRoute { model: String, message: String },
    #[error("{}", .0.message)]
    LimitExceeded(Denial),
    #[error("The gateway cannot check its limits right now; try again shortly.")]
    LimitsUnavailable(PluginFailure),
    #[error("The request body exceeds the limit of {0} bytes.")]
    BodyTooLarge(usize),
    #[error(
        "The request body ({body_bytes} bytes) is too large for the provider plugin `{plugin}`, \
         whose memory is capped at {mib} MiB; send a smaller request."
    )]
    TooLargeForPlugin {
        plugin: String,
        body_bytes: usize,
        mib: u64,
    },
    #[error("Unknown request URL: {} {}.", echo(method), echo(path))]
    UnknownRoute { method: String, path: String },
    #[error(
        "The method {} is not allowed on {}; the `Allow` header lists those that are.",
        echo(method),
        echo(path)
    )]
    MethodNotAllowed { method: String, path: String },
    #[error("The header `{0}` was sent more than once; send it once.")]
    DuplicateHeader(&'static str),
    #[error("{message}")]
    InvalidHeader {
        header: &'static str,
        message: String,
    },
    #[error("The gateway is holding as many request bodies as it may; try again shortly.")]
    ServerBusy,
    #[error("{}", error.message)]
    Provider {
        provider: String,
        error: PluginError,
    },
    #[error("The provider plugin `{}` failed while handling this request.", .0.plugin())]
    PluginFailed(PluginFailure),
    #[error("The provider `{provider}` could not be reached.")]
    UpstreamUnreachable { provider: String, detail: String },
    #[error("The provider `{provider}` did not answer in time.")]
    UpstreamTimeout { provider: String },
    #[error("The provider `{provider}` sent a request the gateway could not send.")]
    BadUpstreamRequest { provider: String, detail: String },
    /// The URL a plugin built for this request leaves its entry's base URL, or is malformed:
    /// nothing was sent. `model` is cut short.
    #[error(
        "The model `{model}` cannot be sent to the provider `{provider}`: the upstream URL built \
         for it {reason}."
    )]
    UnsafeUpstreamUrl {
        provider: String,
        model: String,
        reason: Refusal,
    },
    #[error("The usage ledger cannot answer right now; try again shortly.")]
    LedgerUnavailable(String),
    /// The usage journal is at its bound (the ledger database has been down for long) or cannot
    /// be written: the request would be answered without a record.
    #[error("The gateway cannot record usage right now; try again shortly.")]
    LedgerFull,
    /// No record of the caller's project has this request id (another project's is not shown).
    #[error("No request `{}` in this project's usage records.", echo(.0))]
    RequestNotFound(String),
    /// The dialect plugin refused the request body (a malformed Messages or Responses request).
    #[error("{}", clip(&.0.message, crate::clip::MESSAGE))]
    DialectRejected(PluginError),
    /// `previous_response_id` names no stored response of the caller's project.
    #[error("Previous response with id '{}' not found.", echo(.0))]
    PreviousResponseNotFound(String),
    /// The conversation `previous_response_id` continues is too long to replay.
    #[error("The conversation that '{}' continues is longer than the gateway replays ({} turns or {} MiB).", echo(.0), crate::ledger::responses::MAX_TURNS, crate::ledger::responses::MAX_HISTORY_BYTES >> 20)]
    ConversationTooLong(String),
    /// No stored response of the caller's project has this id (another project's is not shown).
    #[error("Response with id '{}' not found.", echo(.0))]
    ResponseNotFound(String),
    /// No file or batch of the caller's project has this id (`what`: `File`, `Batch`), as
    /// OpenAI words it; another project's is not shown.
    #[error("No such {what} object: {}", echo(id))]
    ObjectNotFound { what: &'static str, id: String },
    /// A line of a batch input file cannot be run: refused before anything goes upstream, with
    /// its number (from 1).
    #[error(
        "Line {line} of the batch input file: {}",
        clip(message, crate::clip::MESSAGE)
    )]
    InvalidBatchLine { line: u64, message: String },
    /// An upload could not be written to or read from `batches.spool_dir` (the detail is logged,
    /// not sent).
    #[error("The gateway could not hold the upload; try again later.")]
    SpoolFailed(String),
    #[error(
        "You didn't provide an API key. Send it as `Authorization: Bearer <key>`; \
         `wasmgate keys create --project <project>` makes one."
    )]
    MissingApiKey,
    #[error("Incorrect or revoked API key provided.")]
    InvalidApiKey,
    #[error("This API key has expired; ask the gateway's operator for a new one.")]
    ExpiredApiKey,
    /// A bearer JWT that did not verify; the refusal is a fixed sentence, never the token.
    #[error("The bearer token was refused: {0}.")]
    InvalidToken(crate::auth::jwt::Refusal),
    #[error("This API key may not use the model `{}`.", echo(.0))]
    ModelNotAllowed(String),
    /// The caller's key (or the config, for a key without patterns) does not allow this
    /// pass-through route.
    #[error("This API key may not reach `{}` by a pass-through route.", echo(.0))]
    PassthroughNotAllowed(String),
    #[error("This endpoint needs an admin key (`wasmgate admin-key create` makes one).")]
    AdminKeyRequired,
    #[error("A project key cannot manage keys; send an admin key.")]
    NotAnAdminKey,
    /// A console session whose roles do not cover what it asked; the text says what was needed.
    #[error("Your console role does not allow this: {0}.")]
    RoleForbidden(String),
    /// A write with a console session but without its CSRF token (or from another site).
    #[error(
        "A change made with a console session must carry the session's `x-csrf-token` header \
         and come from the console's own origin."
    )]
    CsrfRefused,
    /// A console sign-in through `console.oidc` that did not complete.
    #[error("The sign-in did not complete: {0}.")]
    SignIn(crate::auth::oidc::SignInError),
    #[error("Sign-in through an identity provider is not configured (`console.oidc`).")]
    OidcNotConfigured,
    #[error("No API key has the id `{}`.", echo(.0))]
    KeyNotFound(String),
    #[error("This API key does not belong to the project `{}`.", echo(.0))]
    WrongProject(String),
    #[error(
        "The gateway is at capacity: no plugin instance came free within {0} ms. \
         Try again shortly."
    )]
    Saturated(u64),
    #[error("The request body did not arrive within {0} ms.")]
    BodyTimeout(u64),
    /// A guard refused the request.
    #[error("Refused by guard `{guard}`: {reason}")]
    GuardRefused {
        guard: String,
        status: u16,
        reason: String,
    },
    /// A guard applies to a request that carries what no guard can read (an uploaded file's
    /// bytes, token ids), and its entry does not exempt the route.
    #[error(
        "Guard `{guard}` cannot inspect {what}, so the request was refused \
         (the operator may exempt route `{route}` in the guard's `exempt`)."
    )]
    GuardCannotInspect {
        guard: String,
        what: &'static str,
        route: &'static str,
    },
    /// An answer guard applies to an answer it cannot read (a pass-through answer that is
    /// neither JSON nor text, or too large to hold), and its entry does not exempt the route:
    /// the answer is withheld.
    #[error(
        "Guard `{guard}` cannot inspect the upstream's answer ({what}), so it was withheld \
         (the operator may exempt route `{route}` in the guard's `exempt`)."
    )]
    AnswerCannotBeInspected {
        guard: String,
        what: &'static str,
        route: &'static str,
    },
    /// A guard stopped the answer.
    #[error("The answer was stopped by guard `{guard}`: {reason}")]
    AnswerStopped {
        guard: String,
        status: u16,
        reason: String,
    },
    /// A guard failed (trapped, ran out of time or memory, broke its contract), so the request
    /// fails closed.
    #[error("Guard `{guard}` failed, so the request was refused.")]
    GuardFailed { guard: String, detail: String },
    /// A guard's outside verdict (its entry's `endpoint`) did not come, and the entry says a
    /// failure refuses (the default).
    #[error(
        "Guard `{guard}` could not get its verdict, so the request was refused. Try again shortly."
    )]
    GuardUnavailable { guard: String, detail: String },
}

/// OpenAI's error object.
#[derive(Serialize)]
pub struct Detail<'a> {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub param: Option<Cow<'a, str>>,
    pub code: Option<&'a str>,
}

impl ApiError {
    /// A provider plugin's error, often the upstream's own text: without the secrets the
    /// request must not leak (an upstream may repeat the key it was sent).
    pub fn provider(provider: &str, mut error: PluginError, redactor: &Redactor) -> Self {
        error.message = redactor.string(error.message);
        error.param = error.param.map(|p| redactor.string(p));
        error.code = error.code.map(|c| redactor.string(c));
        Self::Provider {
            provider: provider.to_owned(),
            error,
        }
    }

    pub fn upstream(provider: &str, error: UpstreamError) -> Self {
        let provider = provider.to_owned();
        match error {
            UpstreamError::Timeout(_) => Self::UpstreamTimeout { provider },
            UpstreamError::Connect(detail) => Self::UpstreamUnreachable { provider, detail },
            UpstreamError::InvalidRequest(detail) => Self::BadUpstreamRequest { provider, detail },
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::InvalidJson(_)
            | Self::InvalidField { .. }
            | Self::AmbiguousModel { .. }
            | Self::NoRoute { .. } => StatusCode::BAD_REQUEST,
            Self::ModelNotFound(_)
            | Self::UnknownRoute { .. }
            | Self::RequestNotFound(_)
            | Self::ResponseNotFound(_)
            | Self::ObjectNotFound { .. } => StatusCode::NOT_FOUND,
            Self::InvalidBatchLine { .. } => StatusCode::BAD_REQUEST,
            Self::SpoolFailed(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::UnsafeUpstreamUrl { .. } => StatusCode::BAD_REQUEST,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::DuplicateHeader(_) | Self::InvalidHeader { .. } => StatusCode::BAD_REQUEST,
            Self::ServerBusy => StatusCode::SERVICE_UNAVAILABLE,
            Self::LimitExceeded(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::LimitsUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::BodyTooLarge(_) | Self::TooLargeForPlugin { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Provider { error, .. } | Self::DialectRejected(error) => provider_status(error),
            Self::PreviousResponseNotFound(_) | Self::ConversationTooLong(_) => {
                StatusCode::BAD_REQUEST
            }
            Self::PluginFailed(_)
            | Self::UpstreamUnreachable { .. }
            | Self::BadUpstreamRequest { .. } => StatusCode::BAD_GATEWAY,
            Self::UpstreamTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            Self::LedgerUnavailable(_) | Self::LedgerFull => StatusCode::SERVICE_UNAVAILABLE,
            Self::MissingApiKey
            | Self::InvalidApiKey
            | Self::ExpiredApiKey
            | Self::InvalidToken(_)
            | Self::AdminKeyRequired => StatusCode::UNAUTHORIZED,
            Self::SignIn(e) if e.upstream() => StatusCode::BAD_GATEWAY,
            Self::SignIn(e) if *e == crate::auth::oidc::SignInError::NoRole => {
                StatusCode::FORBIDDEN
            }
            Self::SignIn(_) => StatusCode::UNAUTHORIZED,
            Self::OidcNotConfigured => StatusCode::NOT_FOUND,
            Self::RoleForbidden(_) | Self::CsrfRefused => StatusCode::FORBIDDEN,
            Self::WrongProject(_)
            | Self::ModelNotAllowed(_)
            | Self::PassthroughNotAllowed(_)
            | Self::NotAnAdminKey => StatusCode::FORBIDDEN,
            Self::KeyNotFound(_) => StatusCode::NOT_FOUND,
            Self::Saturated(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::GuardRefused { status, .. } | Self::AnswerStopped { status, .. } => {
                StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_REQUEST)
            }
            Self::GuardCannotInspect { .. } => StatusCode::BAD_REQUEST,
            Self::AnswerCannotBeInspected { .. } => StatusCode::BAD_GATEWAY,
            Self::GuardFailed { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            Self::GuardUnavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The OpenAI error object for this error (also sent as an event inside a stream).
    pub fn detail(&self) -> Detail<'_> {
        let (kind, param, code): (&str, Option<&str>, Option<&str>) = match self {
            Self::InvalidJson(_) => ("invalid_request_error", None, Some("invalid_json")),
            Self::InvalidField { param, .. } => {
                ("invalid_request_error", Some(param), Some("invalid_value"))
            }
            Self::ModelNotFound(_) => (
                "invalid_request_error",
                Some("model"),
                Some("model_not_found"),
            ),
            Self::AmbiguousModel { .. } => (
                "invalid_request_error",
                Some("model"),
                Some("ambiguous_model"),
            ),
            Self::NoRoute { .. } => ("invalid_request_error", Some("model"), Some("no_route")),
            Self::LimitExceeded(denial) => match denial.code {
                DenialCode::RateLimitExceeded => ("requests", None, Some("rate_limit_exceeded")),
                DenialCode::InsufficientQuota => {
                    ("insufficient_quota", None, Some("insufficient_quota"))
                }
            },
            Self::LimitsUnavailable(_) => ("api_error", None, Some("limits_unavailable")),
            Self::BodyTooLarge(_) | Self::TooLargeForPlugin { .. } => {
                ("invalid_request_error", None, Some("request_too_large"))
            }
            Self::UnknownRoute { .. } => ("invalid_request_error", None, Some("unknown_url")),
            Self::MethodNotAllowed { .. } => {
                ("invalid_request_error", None, Some("method_not_allowed"))
            }
            Self::DuplicateHeader(header) => (
                "invalid_request_error",
                Some(*header),
                Some("duplicate_header"),
            ),
            Self::InvalidHeader { header, .. } => (
                "invalid_request_error",
                Some(*header),
                Some("invalid_header"),
            ),
            Self::ServerBusy => ("api_error", None, Some("server_busy")),
            Self::PreviousResponseNotFound(_) => (
                "invalid_request_error",
                Some("previous_response_id"),
                Some("previous_response_not_found"),
            ),
            Self::ConversationTooLong(_) => (
                "invalid_request_error",
                Some("previous_response_id"),
                Some("conversation_too_long"),
            ),
            Self::Provider { error, .. } | Self::DialectRejected(error) => (
                kind_type(error.kind),
                error.param.as_deref(),
                error.code.as_deref(),
            ),
            Self::PluginFailed(failure) => (
                "api_error",
                None,
                Some(match failure {
                    PluginFailure::Trapped { .. } => "plugin_trapped",
                    PluginFailure::TimedOut { .. } => "plugin_timeout",
                    PluginFailure::OutOfMemory { .. } => "plugin_out_of_memory",
                    PluginFailure::Saturated { .. } => "gateway_saturated",
                }),
            ),
            Self::UpstreamUnreachable { .. } | Self::BadUpstreamRequest { .. } => {
                ("api_error", None, Some("upstream_error"))
            }
            Self::UpstreamTimeout { .. } => ("api_error", None, Some("upstream_timeout")),
            Self::UnsafeUpstreamUrl { .. } => (
                "invalid_request_error",
                Some("model"),
                Some("unsafe_upstream_url"),
            ),
            Self::LedgerUnavailable(_) => ("api_error", None, Some("ledger_unavailable")),
            Self::LedgerFull => ("api_error", None, Some("ledger_full")),
            Self::RequestNotFound(_) => (
                "invalid_request_error",
                Some("request_id"),
                Some("request_not_found"),
            ),
            Self::ResponseNotFound(_) => ("invalid_request_error", None, None),
            Self::ObjectNotFound { .. } => ("invalid_request_error", Some("id"), None),
            Self::SpoolFailed(_) => ("api_error", None, Some("upload_spool_failed")),
            Self::InvalidBatchLine { .. } => (
                "invalid_request_error",
                Some("file"),
                Some("invalid_batch_line"),
            ),
            Self::MissingApiKey => ("invalid_request_error", None, Some("missing_api_key")),
            Self::InvalidApiKey => ("invalid_request_error", None, Some("invalid_api_key")),
            Self::ExpiredApiKey => ("invalid_request_error", None, Some("expired_api_key")),
            Self::InvalidToken(_) => ("invalid_request_error", None, Some("invalid_token")),
            Self::ModelNotAllowed(_) => {
                ("permission_error", Some("model"), Some("model_not_allowed"))
            }
            Self::PassthroughNotAllowed(_) => (
                "permission_error",
                Some("path"),
                Some("passthrough_not_allowed"),
            ),
            Self::AdminKeyRequired => ("invalid_request_error", None, Some("admin_key_required")),
            Self::NotAnAdminKey => ("permission_error", None, Some("not_an_admin_key")),
            Self::RoleForbidden(_) => ("permission_error", None, Some("role_forbidden")),
            Self::CsrfRefused => ("permission_error", None, Some("csrf_refused")),
            Self::SignIn(e) if e.upstream() => {
                ("api_error", None, Some("identity_provider_unavailable"))
            }
            Self::SignIn(_) => ("authentication_error", None, Some("sign_in_refused")),
            Self::OidcNotConfigured => ("invalid_request_error", None, Some("oidc_not_configured")),
            Self::KeyNotFound(_) => ("invalid_request_error", Some("id"), Some("key_not_found")),
            Self::WrongProject(_) => ("permission_error", None, Some("project_mismatch")),
            Self::Saturated(_) => ("api_error", None, Some("gateway_saturated")),
            Self::BodyTimeout(_) => ("invalid_request_error", None, Some("request_timeout")),
            Self::GuardRefused { status, .. } if *status >= 500 => {
                ("api_error", None, Some("guard_refused"))
            }
            Self::GuardRefused { .. } => ("invalid_request_error", None, Some("guard_refused")),
            Self::GuardCannotInspect { .. } => {
                ("invalid_request_error", None, Some("guard_cannot_inspect"))
            }
            Self::AnswerCannotBeInspected { .. } => {
                ("api_error", None, Some("guard_cannot_inspect"))
            }
            Self::AnswerStopped { .. } => ("api_error", None, Some("answer_stopped")),
            Self::GuardFailed { .. } => ("api_error", None, Some("guard_failed")),
            Self::GuardUnavailable { .. } => ("api_error", None, Some("guard_unavailable")),
        };
        let message = match self {
            // The plugin failure's own text names the plugin and the limit it hit; it holds no
            // request data, so the client may see it.
            Self::PluginFailed(failure @ PluginFailure::TimedOut { .. })
            | Self::PluginFailed(failure @ PluginFailure::OutOfMemory { .. }) => {
                format!("{self} ({failure})")
            }
            _ => self.to_string(),
        };
        // Whatever a message or param repeats (client input, an upstream's text), the error
        // body stays small.
        Detail {
            message: clip(&message, crate::clip::MESSAGE).into_owned(),
            kind,
            param: param.map(echo),
            code,
        }
    }
}

fn provider_status(error: &PluginError) -> StatusCode {
    if let Some(status) = error.upstream_status {
        // An upstream 4xx is the client's to see; an upstream 5xx is our gateway failure.
        return match StatusCode::from_u16(status) {
            Ok(s) if s.is_client_error() => s,
            _ if error.kind == ErrorKind::Timeout => StatusCode::GATEWAY_TIMEOUT,
            _ => StatusCode::BAD_GATEWAY,
        };
    }
    match error.kind {
        ErrorKind::InvalidRequest => StatusCode::BAD_REQUEST,
        ErrorKind::Authentication => StatusCode::UNAUTHORIZED,
        ErrorKind::PermissionDenied => StatusCode::FORBIDDEN,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::Upstream => StatusCode::BAD_GATEWAY,
        ErrorKind::Timeout => StatusCode::GATEWAY_TIMEOUT,
    }
}

fn kind_type(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidRequest | ErrorKind::NotFound => "invalid_request_error",
        ErrorKind::Authentication => "authentication_error",
        ErrorKind::PermissionDenied => "permission_error",
        ErrorKind::RateLimited => "rate_limit_error",
        ErrorKind::Upstream | ErrorKind::Timeout => "api_error",
    }
}

impl ApiError {
    /// Whether the failure says something about the target rather than the request, so that
    /// another target may succeed: it cannot be reached, timed out, is rate limited or failed.
    pub fn is_target_failure(&self) -> bool {
        match self {
            Self::PluginFailed(_)
            | Self::UpstreamUnreachable { .. }
            | Self::UpstreamTimeout { .. }
            | Self::BadUpstreamRequest { .. } => true,
            Self::Provider { error, .. } => match error.upstream_status {
                Some(status) => status == 429 || status == 408 || status >= 500,
                None => matches!(
                    error.kind,
                    ErrorKind::RateLimited | ErrorKind::Upstream | ErrorKind::Timeout
                ),
            },
            Self::InvalidJson(_)
            | Self::InvalidField { .. }
            | Self::ModelNotFound(_)
            | Self::AmbiguousModel { .. }
            | Self::NoRoute { .. }
            | Self::BodyTooLarge(_)
            | Self::TooLargeForPlugin { .. }
            | Self::UnknownRoute { .. }
            | Self::MethodNotAllowed { .. }
            | Self::DuplicateHeader(_)
            | Self::InvalidHeader { .. }
            | Self::ServerBusy
            | Self::LimitExceeded(_)
            | Self::LimitsUnavailable(_)
            | Self::LedgerUnavailable(_)
            | Self::LedgerFull
            | Self::RequestNotFound(_)
            | Self::ResponseNotFound(_)
            | Self::ObjectNotFound { .. }
            | Self::InvalidBatchLine { .. }
            | Self::SpoolFailed(_)
            | Self::DialectRejected(_)
            | Self::PreviousResponseNotFound(_)
            | Self::ConversationTooLong(_)
            | Self::UnsafeUpstreamUrl { .. }
            | Self::MissingApiKey
            | Self::InvalidApiKey
            | Self::ExpiredApiKey
            | Self::InvalidToken(_)
            | Self::ModelNotAllowed(_)
            | Self::PassthroughNotAllowed(_)
            | Self::AdminKeyRequired
            | Self::NotAnAdminKey
            | Self::RoleForbidden(_)
            | Self::CsrfRefused
            | Self::SignIn(_)
            | Self::OidcNotConfigured
            | Self::KeyNotFound(_)
            | Self::WrongProject(_)
            // Every target needs an instance from the same pool; and a busy gateway says nothing
            // about a target's health.
            | Self::Saturated(_)
            | Self::BodyTimeout(_)
            | Self::GuardRefused { .. }
            | Self::GuardCannotInspect { .. }
            | Self::AnswerCannotBeInspected { .. }
            | Self::AnswerStopped { .. }
            | Self::GuardFailed { .. }
            | Self::GuardUnavailable { .. } => false,
        }
    }

    /// A short name of the failure, for metrics labels and a span's `error.type`: the
    /// upstream's HTTP status (`http_503`) when it answered with an error, else the error code.
    pub fn error_type(&self) -> String {
        if let Self::Provider { error, .. } = self
            && let Some(status) = error.upstream_status
        {
            return format!("http_{status}");
        }
        let detail = self.detail();
        detail.code.unwrap_or(detail.kind).to_owned()
    }

    /// What the log line adds to the message (never sent to the client), bounded like it.
    pub fn internal_detail(&self) -> Option<String> {
        let detail = match self {
            Self::PluginFailed(failure) | Self::LimitsUnavailable(failure) => failure.to_string(),
            Self::UpstreamUnreachable { detail, .. }
            | Self::BadUpstreamRequest { detail, .. }
            | Self::LedgerUnavailable(detail)
            | Self::SpoolFailed(detail)
            | Self::GuardFailed { detail, .. }
            | Self::GuardUnavailable { detail, .. } => detail.clone(),
            _ => return None,
        };
        Some(clip(&detail, crate::clip::MESSAGE).into_owned())
    }
}

/// Bytes of a JSON parser's message kept: it may quote the client's field names and values.
const JSON_ERROR: usize = 512;

impl ApiError {
    /// A provider plugin's failure; no free instance is the gateway's capacity, not a plugin's
    /// fault.
    pub fn plugin(failure: PluginFailure) -> Self {
        match failure {
            PluginFailure::Saturated { waited_ms, .. } => Self::Saturated(waited_ms),
            failure => Self::PluginFailed(failure),
        }
    }

    /// A provider plugin's failure while preparing a body of `body_bytes`. A plugin that ran out
    /// of memory on a body of at least a quarter of its cap (it holds the body, the upstream
    /// request it builds, and their parsed forms) ran out because of the body's size: that is
    /// the client's 413, not the gateway's 502.
    pub fn prepare_failed(failure: PluginFailure, body_bytes: usize) -> Self {
        match failure {
            PluginFailure::OutOfMemory { plugin, mib }
                if (body_bytes as u64).saturating_mul(4) >= mib << 20 =>
            {
                Self::TooLargeForPlugin {
                    plugin: plugin.to_string(),
                    body_bytes,
                    mib,
                }
            }
            failure => Self::plugin(failure),
        }
    }

    /// A limiter plugin's failure, told apart the same way.
    pub fn limits_unavailable(failure: PluginFailure) -> Self {
        match failure {
            PluginFailure::Saturated { waited_ms, .. } => Self::Saturated(waited_ms),
            failure => Self::LimitsUnavailable(failure),
        }
    }

    /// Why a request body stopped arriving: not in time (408), or the connection broke.
    pub fn body_unreadable(error: &axum::Error) -> Self {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(error) = cause {
            if let Some(timeout) = error.downcast_ref::<BodyReadTimeout>() {
                return Self::BodyTimeout(timeout.ms());
            }
            cause = error.source();
        }
        Self::InvalidJson(format!("Failed to buffer the request body: {error}"))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::redact::Secrets;

    #[test]
    fn a_provider_error_is_redacted_field_by_field() {
        let yaml = "providers: { p: { plugin: openai, api_key: sk-secret-999 } }";
        let config = crate::config::Config::from_yaml(yaml).unwrap_or_else(|e| panic!("{e}"));
        let secrets = Arc::new(Secrets::from_config(&config));
        let redactor = secrets.for_request(&http::HeaderMap::new());
        let error = PluginError {
            kind: ErrorKind::Authentication,
            message: "Incorrect API key provided: sk-secret-999.".to_owned(),
            param: Some("sk-secret-999".to_owned()),
            code: Some("invalid_api_key".to_owned()),
            upstream_status: Some(401),
        };
        let ApiError::Provider { provider, error } = ApiError::provider("p", error, &redactor)
        else {
            panic!("not a provider error");
        };
        assert_eq!(provider, "p");
        assert_eq!(error.message, "Incorrect API key provided: [redacted].");
        assert_eq!(error.param.as_deref(), Some("[redacted]"));
        assert_eq!(error.code.as_deref(), Some("invalid_api_key"));
        assert_eq!(error.upstream_status, Some(401));
    }
}
/// A request body that did not arrive in time (the server's body timeout, see
/// `server::timeouts`); read as a 408.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {ms} ms")]
pub struct BodyReadTimeout {
    ms: u64,
}

impl BodyReadTimeout {
    pub fn new(ms: u64) -> Self {
        Self { ms }
    }

    pub fn ms(&self) -> u64 {
        self.ms
    }
}
