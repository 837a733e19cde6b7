//! Calls into guard plugins: validate an entry's options, check a request (on a warm instance,
//! as policy plugins do), and guard one answer on an instance that lives as long as it.

use wasmtime::component::ResourceAny;

use super::bindings::GuardPlugin as Bindings;
use super::bindings::guard_types::{
    AnswerEvent, ConsultReply, GuardInfo, RequestVerdict, StreamVerdict,
};
use super::bindings::types::ConfigError;
use super::failure::PluginFailure;
use super::loaded::{Instance, Warm};
use super::slots::SlotKind;

/// A loaded guard plugin.
pub type GuardPlugin = Warm<Bindings>;

/// One answer's guard, with the instance it lives in. Each call gets the full deadline.
pub struct AnswerGuardCall {
    instance: Instance<Bindings>,
    guard: ResourceAny,
}

impl GuardPlugin {
    pub async fn validate(
        &self,
        options: &str,
    ) -> Result<Result<GuardInfo, ConfigError>, PluginFailure> {
        self.call("validate", None, async |b: &Bindings, s| {
            b.wasmgate_plugin_guard().call_validate(s, options).await
        })
        .await
    }

    /// The guard's verdict on `request` (Chat Completions JSON).
    pub async fn check_request(
        &self,
        options: &str,
        request: &str,
    ) -> Result<RequestVerdict, PluginFailure> {
        self.call("check_request", None, async |b: &Bindings, s| {
            b.wasmgate_plugin_guard()
                .call_check_request(s, options, request)
                .await
        })
        .await
    }

    /// The guard's verdict on `request` once the outside call it asked for (with `context`)
    /// came to `reply`.
    pub async fn check_request_reply(
        &self,
        options: &str,
        request: &str,
        context: &str,
        reply: &ConsultReply,
    ) -> Result<RequestVerdict, PluginFailure> {
        self.call("check_request_reply", None, async |b: &Bindings, s| {
            b.wasmgate_plugin_guard()
                .call_check_request_reply(s, options, request, context, reply)
                .await
        })
        .await
    }

    /// Starts guarding one answer to `request`, on an instance of its own (a stream slot when
    /// the answer is streamed: it lives as long as the stream).
    pub async fn start_answer(
        &self,
        kind: SlotKind,
        options: &str,
        request: &str,
    ) -> Result<AnswerGuardCall, PluginFailure> {
        let mut instance = self.start(kind).await?;
        let guard = instance
            .run("open_answer", async |b: &Bindings, s| {
                b.wasmgate_plugin_guard()
                    .answer_guard()
                    .call_constructor(s, options, request)
                    .await
            })
            .await?;
        Ok(AnswerGuardCall { instance, guard })
    }
}

impl AnswerGuardCall {
    /// Pushes the next events of the answer.
    pub async fn push(&mut self, events: &[AnswerEvent]) -> Result<StreamVerdict, PluginFailure> {
        let guard = self.guard;
        self.instance
            .run("push", async |b: &Bindings, s| {
                b.wasmgate_plugin_guard()
                    .answer_guard()
                    .call_push(s, guard, events)
                    .await
            })
            .await
    }

    /// The answer ended: everything still held.
    pub async fn finish(&mut self) -> Result<StreamVerdict, PluginFailure> {
        let guard = self.guard;
        self.instance
            .run("finish", async |b: &Bindings, s| {
                b.wasmgate_plugin_guard()
                    .answer_guard()
                    .call_finish(s, guard)
                    .await
            })
            .await
    }

    /// What came of the outside call the last verdict asked for.
    pub async fn reply(&mut self, reply: &ConsultReply) -> Result<StreamVerdict, PluginFailure> {
        let guard = self.guard;
        self.instance
            .run("reply", async |b: &Bindings, s| {
                b.wasmgate_plugin_guard()
                    .answer_guard()
                    .call_reply(s, guard, reply)
                    .await
            })
            .await
    }
}
