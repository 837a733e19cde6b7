//! The three upstreams of the Gemini-dialect tests (`gemini.rs`, `count_translated.rs`): the
//! strict Gemini, OpenAI and Anthropic mocks, a gateway with the `gemini` dialect on and keys
//! required, and a key.

use super::TestGateway;
use super::gateway::{Gateway, GatewayBuilder, Provider};
use super::mock_openai::{self, MockOpenAi};
use super::mock_providers::MockProvider;

pub const GEMINI: &str = "gemini-3.5-flash";
pub const GEMINI_EMBEDDING: &str = "text-embedding-004";
pub const GPT: &str = "gpt-4o-mini";
pub const CLAUDE: &str = "claude-sonnet-4-5";

/// Where the mocks listen, for a test's entries.
pub struct Upstreams {
    pub gemini: String,
    pub openai: String,
    /// The key the OpenAI mock takes (the Gemini and Anthropic mocks take `KEY`).
    pub openai_key: &'static str,
    pub anthropic: String,
}

impl Upstreams {
    /// An entry of `plugin` at `base_url` with `key`, serving `models`, with a 5 s timeout.
    pub fn entry<'a>(
        plugin: &str,
        base_url: &str,
        key: &str,
        models: impl IntoIterator<Item = &'a str>,
    ) -> Provider {
        Provider::at(plugin, base_url, key)
            .models(models)
            .timeout_ms(5000)
    }
}

pub struct Setup {
    pub gemini: MockProvider,
    pub openai: MockOpenAi,
    pub anthropic: MockProvider,
    pub gateway: TestGateway,
    pub key: String,
}

impl Setup {
    /// The mocks, and a gateway of what `entries` adds for these upstreams (its entries and
    /// any routing), with the `gemini` dialect on and keys required; the key is one of
    /// `project`.
    pub async fn start(
        project: &str,
        entries: impl FnOnce(&Upstreams, GatewayBuilder) -> GatewayBuilder,
    ) -> Self {
        let gemini = MockProvider::gemini().await;
        let openai = MockOpenAi::start().await;
        let anthropic = MockProvider::anthropic().await;
        let upstreams = Upstreams {
            gemini: gemini.base_url(),
            openai: openai.base_url(),
            openai_key: mock_openai::responses::API_KEY,
            anthropic: anthropic.base_url(),
        };
        let config = Gateway::builder()
            .set("dialects.gemini.plugin", "gemini-genai")
            .auth_required();
        let gateway = entries(&upstreams, config).start().await;
        let key = gateway.api_key(project).await;
        Self {
            gemini,
            openai,
            anthropic,
            gateway,
            key,
        }
    }
}
