//! One test's setup as the SDK-driven tests write it (`batches.rs`, `batches_anthropic.rs`): a
//! mock upstream, a gateway whose config is made for it, a key of project `default`, and the
//! official SDKs' programs (`tests/sdk/`) run against the gateway's `/v1` with that key.

use std::process::Output;

use super::TestGateway;
use super::gateway::GatewayBuilder;
use super::sdk::run_client;

pub struct Scenario<M> {
    pub mock: M,
    pub gateway: TestGateway,
    pub key: String,
}

/// `mock`, a gateway on the config `config` makes for it, and a key of project `default`.
pub async fn scenario<M>(mock: M, config: impl FnOnce(&M) -> GatewayBuilder) -> Scenario<M> {
    let gateway = config(&mock).start().await;
    let key = gateway.api_key("default").await;
    Scenario { mock, gateway, key }
}

impl<M> Scenario<M> {
    /// Runs `tests/sdk/<program>` against the gateway's `/v1` with the key and `args`.
    pub async fn client(&self, program: &str, args: &[&str]) -> Output {
        self.client_as(program, &self.key, args).await
    }

    /// Runs `tests/sdk/<program>` against the gateway's `/v1` with `key` and `args`.
    pub async fn client_as(&self, program: &str, key: &str, args: &[&str]) -> Output {
        run_client(program, &self.gateway.url("/v1"), key, args).await
    }
}
