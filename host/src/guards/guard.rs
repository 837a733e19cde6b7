//! One guard, ready to run: its plugin, options and scope, and its checks of a request and of
//! an answer, with the outside calls its `consult` asks for made.
//!
//! Nothing here knows of the chat pipeline: a guard's check of any text (a tool's arguments or
//! result, say) goes through [`Guard::check_request`] and [`Guard::start_answer`] the same way.

use std::sync::Arc;

use super::answer_guard::AnswerGuard;
use super::endpoint::{CONSULTS_MAX, Endpoint, outside};
use super::guard_error::GuardError;
use crate::config::guards::{GuardApply, GuardMode, GuardScope};
use crate::plugins::{Consult, ConsultReply, GuardPlugin, RequestVerdict, SlotKind};

/// One guard, ready to run.
pub struct Guard {
    /// Its entry's name (bounded and plain: see `config::guards`).
    pub name: Arc<str>,
    pub plugin: GuardPlugin,
    /// The entry's `options` as JSON.
    pub options: String,
    pub apply: GuardApply,
    pub mode: GuardMode,
    pub fail_open: bool,
    /// The most text its answer guard holds back, as it declared.
    pub max_hold_chars: u32,
    pub(super) scope: GuardScope,
    /// Where its outside calls go, if its entry names an endpoint.
    pub(super) endpoint: Option<Arc<Endpoint>>,
}

/// Who a request is, as scopes see it.
pub struct Who<'a> {
    pub project: &'a str,
    pub key_id: Option<&'a str>,
    /// The model as the client named it.
    pub model: &'a str,
    /// The guards the key names, which apply besides those whose scope takes the request.
    pub named: &'a [String],
}

impl Guard {
    /// Whether it applies to a request from `who`.
    pub fn applies(&self, who: &Who<'_>) -> bool {
        let scope = &self.scope;
        if who.named.iter().any(|n| **n == *self.name) {
            return true;
        }
        !scope.only_named
            && (scope.projects.is_empty() || scope.projects.iter().any(|p| p == who.project))
            && (scope.keys.is_empty()
                || who
                    .key_id
                    .is_some_and(|k| scope.keys.iter().any(|s| s == k)))
            && (scope.models.is_empty() || scope.models.iter().any(|m| m == who.model))
    }
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
        Ok(AnswerGuard::new(
            call,
            Arc::clone(&self.name),
            self.endpoint.clone(),
        ))
    }

    async fn outside(&self, consult: &Consult) -> Result<ConsultReply, GuardError> {
        outside(self.endpoint.as_deref(), &self.name, consult).await
    }
}
