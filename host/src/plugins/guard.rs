//! Calls into guard plugins: validate an entry's options, check a request (on a warm instance,
//! as policy plugins do), and guard one answer on an instance that lives as long as it.

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::ResourceAny;

use super::bindings::guard_types::{
    AnswerEvent, ConsultReply, GuardInfo, RequestVerdict, StreamVerdict,
};
use super::bindings::types::ConfigError;
use super::bindings::{GuardPlugin as Bindings, GuardPluginPre};
use super::sandbox::{Sandbox, WarmPool};
use super::slots::SlotKind;
use super::state::PluginState;
use super::{PluginFailure, PluginHost};

/// A loaded guard plugin.
#[derive(Clone)]
pub struct GuardPlugin {
    host: PluginHost,
    name: Arc<str>,
    pre: GuardPluginPre<PluginState>,
    warm: Arc<WarmPool<Bindings>>,
}

/// One answer's guard, with the instance it lives in. Each call gets the full deadline.
pub struct AnswerGuardCall {
    sandbox: Sandbox,
    bindings: Bindings,
    guard: ResourceAny,
}

impl GuardPlugin {
    pub(super) fn new(
        host: PluginHost,
        name: &str,
        component: &wasmtime::component::Component,
    ) -> wasmtime::Result<Self> {
        let pre = host.inner.linker.instantiate_pre(component)?;
        Ok(Self {
            host,
            name: name.into(),
            pre: GuardPluginPre::new(pre)?,
            warm: Arc::default(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub async fn validate(
        &self,
        options: &str,
    ) -> Result<Result<GuardInfo, ConfigError>, PluginFailure> {
        self.call("validate", async |b: &Bindings, s| {
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
        self.call("check_request", async |b: &Bindings, s| {
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
        self.call("check_request_reply", async |b: &Bindings, s| {
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
        let mut sandbox = self.host.sandbox(&self.name, kind).await?;
        let bindings = sandbox
            .instantiate(async |s| self.pre.instantiate_async(s).await)
            .await?;
        let guard = sandbox
            .run("open_answer", &bindings, async |b: &Bindings, s| {
                b.wasmgate_plugin_guard()
                    .answer_guard()
                    .call_constructor(s, options, request)
                    .await
            })
            .await?;
        Ok(AnswerGuardCall {
            sandbox,
            bindings,
            guard,
        })
    }

    async fn call<T>(
        &self,
        call: &'static str,
        f: impl AsyncFnOnce(&Bindings, &mut Store<PluginState>) -> wasmtime::Result<T>,
    ) -> Result<T, PluginFailure> {
        let instantiate = async |s: &mut Store<_>| self.pre.instantiate_async(s).await;
        self.warm
            .run(&self.host, &self.name, call, instantiate, None, f)
            .await
    }
}

impl AnswerGuardCall {
    /// Pushes the next events of the answer.
    pub async fn push(&mut self, events: &[AnswerEvent]) -> Result<StreamVerdict, PluginFailure> {
        let guard = self.guard;
        self.sandbox
            .run("push", &self.bindings, async |b: &Bindings, s| {
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
        self.sandbox
            .run("finish", &self.bindings, async |b: &Bindings, s| {
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
        self.sandbox
            .run("reply", &self.bindings, async |b: &Bindings, s| {
                b.wasmgate_plugin_guard()
                    .answer_guard()
                    .call_reply(s, guard, reply)
                    .await
            })
            .await
    }
}
