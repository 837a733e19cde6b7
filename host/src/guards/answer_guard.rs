//! One answer's guard: the events of an answer pushed to it, and the outside calls its verdicts
//! ask for made until it releases or stops.

use std::sync::Arc;

use super::endpoint::{CONSULTS_MAX, Endpoint, outside};
use super::guard_error::GuardError;
use crate::plugins::{AnswerEvent, AnswerGuardCall, ConsultReply, PluginFailure, StreamVerdict};

/// One answer's guard, with the outside calls it asks for made.
pub struct AnswerGuard {
    call: AnswerGuardCall,
    name: Arc<str>,
    endpoint: Option<Arc<Endpoint>>,
    /// An outside call it asked for failed and was let through.
    pub outside_failed: bool,
}

impl AnswerGuard {
    pub(super) fn new(
        call: AnswerGuardCall,
        name: Arc<str>,
        endpoint: Option<Arc<Endpoint>>,
    ) -> Self {
        Self {
            call,
            name,
            endpoint,
            outside_failed: false,
        }
    }

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
