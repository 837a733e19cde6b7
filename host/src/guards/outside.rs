//! Outside verdicts: the HTTP calls a guard asks the host to make for it (a moderation service,
//! an operator's policy endpoint), to its entry's endpoint only and under its deadline, and the
//! loops that give a guard's `consult` what came of it until the guard decides. Plugins still
//! get no sockets; the endpoint's key never enters the sandbox.
//!
//! Nothing here knows of the chat pipeline: a guard's check of any text (a tool's arguments or
//! result, say) goes through [`Guard::check_request`] and [`Guard::start_answer`] the same way.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

use super::Guard;
use crate::config::guards::{EndpointFailure, GuardEndpoint};
use crate::plugins::{
    AnswerEvent, AnswerGuardCall, Consult, ConsultReply, PluginFailure, RequestVerdict, SlotKind,
    StreamVerdict,
};
use crate::secret::Secret;

/// Outside calls one check may ask for before the guard is taken to be looping.
const CONSULTS_MAX: usize = 4;
/// The most of an endpoint's answer a guard is given.
const REPLY_MAX: usize = 1 << 20;

/// Where a guard's outside calls go, as its entry says.
pub struct Endpoint {
    url: reqwest::Url,
    api_key: Option<Secret>,
    timeout: Duration,
    on_failure: EndpointFailure,
    http: reqwest::Client,
}

impl Endpoint {
    pub(super) fn new(entry: &GuardEndpoint, http: reqwest::Client) -> Result<Self, String> {
        let url = reqwest::Url::parse(&entry.url).map_err(|e| format!("endpoint.url: {e}"))?;
        Ok(Self {
            url,
            api_key: entry.api_key.clone(),
            timeout: Duration::from_millis(entry.timeout_ms),
            on_failure: entry.on_failure,
            http,
        })
    }

    /// POSTs `body`; the status and body of the answer, or why there is none.
    async fn call(&self, body: &str) -> Result<(u16, String), String> {
        let call = async {
            let mut request = (self.http.post(self.url.clone()))
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_owned());
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key.expose());
            }
            let response = request
                .send()
                .await
                .map_err(|e| e.without_url().to_string())?;
            let status = response.status().as_u16();
            // An error status is the service failing, as a timeout is: the entry's
            // `on_failure` decides, not the guard.
            if !(200..300).contains(&status) {
                return Err(format!("it answered {status}"));
            }
            let mut body = Vec::new();
            let mut chunks = response.bytes_stream();
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk.map_err(|e| e.without_url().to_string())?;
                if body.len() + chunk.len() > REPLY_MAX {
                    return Err("its answer is over 1 MiB".to_owned());
                }
                body.extend_from_slice(&chunk);
            }
            Ok((status, String::from_utf8_lossy(&body).into_owned()))
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(result) => result,
            Err(_) => Err(format!("no answer within {} ms", self.timeout.as_millis())),
        }
    }
}

/// Why a guard gave no verdict.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// Its plugin trapped, ran out of time or memory, or found no free instance.
    #[error("{0}")]
    Plugin(PluginFailure),
    /// It broke its contract.
    #[error("{0}")]
    Contract(&'static str),
    /// Its outside verdict did not come, and its entry says that refuses.
    #[error("its endpoint failed: {0}")]
    Unavailable(String),
}

/// A request check's verdict (never `consult`), and whether an outside call it asked for
/// failed and was let through (the entry's `on_failure: allow`).
pub struct Checked {
    pub verdict: RequestVerdict,
    pub outside_failed: bool,
}

impl Guard {
    /// The guard's verdict on `request` (Chat Completions JSON), making the outside calls it
    /// asks for.
    pub async fn check_request(&self, request: &str) -> Result<Checked, GuardError> {
        let plugin = &self.plugin;
        let mut verdict =
            (plugin.check_request(&self.options, request).await).map_err(GuardError::Plugin)?;
        let mut outside_failed = false;
        for _ in 0..CONSULTS_MAX {
            let RequestVerdict::Consult(consult) = verdict else {
                return Ok(Checked {
                    verdict,
                    outside_failed,
                });
            };
            let reply = self.outside(&consult).await?;
            outside_failed |= matches!(reply, ConsultReply::Failed(_));
            verdict = plugin
                .check_request_reply(&self.options, request, &consult.context, &reply)
                .await
                .map_err(GuardError::Plugin)?;
        }
        Err(GuardError::Contract(
            "it asked for more than 4 outside calls",
        ))
    }

    /// Starts guarding one answer to `request` (a stream slot's instance when `kind` says so).
    pub async fn start_answer(
        &self,
        kind: SlotKind,
        request: &str,
    ) -> Result<AnswerGuard, GuardError> {
        let call = (self.plugin.start_answer(kind, &self.options, request).await)
            .map_err(GuardError::Plugin)?;
        Ok(AnswerGuard {
            call,
            name: Arc::clone(&self.name),
            endpoint: self.endpoint.clone(),
            outside_failed: false,
        })
    }

    async fn outside(&self, consult: &Consult) -> Result<ConsultReply, GuardError> {
        outside(self.endpoint.as_deref(), &self.name, consult).await
    }
}

/// What came of `consult` at `endpoint`; an error when it failed and that refuses.
async fn outside(
    endpoint: Option<&Endpoint>,
    guard: &str,
    consult: &Consult,
) -> Result<ConsultReply, GuardError> {
    let Some(endpoint) = endpoint else {
        return Err(GuardError::Contract(
            "it asked for an outside call, but its entry has no `endpoint`",
        ));
    };
    match endpoint.call(&consult.body).await {
        Ok(answered) => Ok(ConsultReply::Answered(answered)),
        Err(reason) => {
            tracing::warn!(guard, "guard endpoint failed: {reason}");
            match endpoint.on_failure {
                EndpointFailure::Allow => Ok(ConsultReply::Failed(reason)),
                EndpointFailure::Refuse => Err(GuardError::Unavailable(reason)),
            }
        }
    }
}

/// One answer's guard, with the outside calls it asks for made.
pub struct AnswerGuard {
    call: AnswerGuardCall,
    name: Arc<str>,
    endpoint: Option<Arc<Endpoint>>,
    /// An outside call it asked for failed and was let through.
    pub outside_failed: bool,
}

impl AnswerGuard {
    /// Pushes the next events of the answer.
    pub async fn push(&mut self, events: &[AnswerEvent]) -> Result<StreamVerdict, GuardError> {
        let verdict = self.call.push(events).await;
        self.settle(verdict).await
    }

    /// The answer ended: everything still held.
    pub async fn finish(&mut self) -> Result<StreamVerdict, GuardError> {
        let verdict = self.call.finish().await;
        self.settle(verdict).await
    }

    /// Answers the verdict's consults until it is a release or a stop.
    async fn settle(
        &mut self,
        verdict: Result<StreamVerdict, PluginFailure>,
    ) -> Result<StreamVerdict, GuardError> {
        let mut verdict = verdict.map_err(GuardError::Plugin)?;
        for _ in 0..CONSULTS_MAX {
            let StreamVerdict::Consult(consult) = verdict else {
                return Ok(verdict);
            };
            let reply = outside(self.endpoint.as_deref(), &self.name, &consult).await?;
            self.outside_failed |= matches!(reply, ConsultReply::Failed(_));
            verdict = self.call.reply(&reply).await.map_err(GuardError::Plugin)?;
        }
        Err(GuardError::Contract(
            "it asked for more than 4 outside calls",
        ))
    }
}
