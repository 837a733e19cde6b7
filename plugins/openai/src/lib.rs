//! The OpenAI provider: OpenAI itself and any upstream that speaks its API (vLLM, Ollama, Azure
//! OpenAI with `auth_header: api-key`, ...). Requests and responses already are in the canonical
//! format, so bodies pass through untouched; the SDK's `openai_compat` builds the request, reads
//! usage and maps errors, and adds the key and the entry's `headers`.
//!
//! Responses requests (`POST /v1/responses` on the gateway, and its `/compact` and
//! `/input_tokens`) go natively to `{base_url}/responses` (and its `/compact` and
//! `/input_tokens`), the gateway's own compaction items expanded into messages (see
//! `wasmgate_plugin_sdk::compaction`), when the entry's upstream serves that API: by default OpenAI's own base URL does and any
//! other does not, and the `responses: native | translate` option says otherwise (the presets
//! of hosts that serve it set `native`). A `translate` entry gets them as chat completions,
//! translated by the host.

mod count;

use serde::Deserialize;
use wasmgate_plugin_sdk::http::{check_header, json_body};
use wasmgate_plugin_sdk::native::{
    OrNative, RESPONSES, RESPONSES_WEBSOCKET, ResponsesStream, forwarded_header, native_call,
    responses_path,
};
use wasmgate_plugin_sdk::openai_compat::{
    BATCHES_DIALECT, OpenAiStream, batch_call, path, plain, upstream,
};
use wasmgate_plugin_sdk::{
    CanonicalRequest, ConfigError, Entry, HttpRequest, HttpResponse, Operation, PassthroughAuth,
    PassthroughCall, PlainOperation, PluginError, Prepared, Provider, RequestInfo, compaction,
};

/// The `options:` of an entry (besides the SDK's `headers` and `auth_header`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// Sent as `OpenAI-Organization`.
    organization: Option<String>,
    /// Sent as `OpenAI-Project`.
    project: Option<String>,
    /// Whether the upstream serves the Responses API itself. Default: `native` for OpenAI's
    /// own base URL, `translate` for any other (most compatible hosts have no `/responses`).
    responses: Option<ResponsesMode>,
    /// Whether the upstream runs OpenAI's Files and Batch APIs. Default: yes for OpenAI's own
    /// base URL, no for any other.
    batches: Option<bool>,
    /// Whether the upstream's Responses endpoint takes WebSocket mode (a client socket's turns
    /// then go up on a socket). Default: yes for OpenAI's own base URL, no for any other; only
    /// where the Responses API is served natively.
    websocket: Option<bool>,
}

#[derive(Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum ResponsesMode {
    /// Passed through to `{base_url}/responses` as the client wrote them.
    Native,
    /// Translated into chat completions by the host's Responses dialect.
    Translate,
}

struct OpenAi;

impl Provider for OpenAi {
    type Settings = Settings;
    type Decoder = OrNative<OpenAiStream, ResponsesStream>;
    const SYSTEM: Option<&'static str> = Some("openai");

    fn default_base_url(_: &Settings) -> Option<String> {
        Some("https://api.openai.com/v1".to_owned())
    }

    /// The Responses API where the upstream serves it (the `responses` option), and OpenAI's
    /// Files and Batch APIs, which the host drives (see `openai_compat::batch_call`), where the
    /// upstream runs them (the `batches` option); and the Responses API's WebSocket mode where
    /// it serves that (the `websocket` option).
    fn native_dialects(entry: &Entry<Settings>) -> Vec<String> {
        let openai = is_openai(&entry.base_url);
        let batches = entry.settings.batches.unwrap_or(openai);
        let responses = serves_responses(entry);
        let websocket = responses && entry.settings.websocket.unwrap_or(openai);
        [
            (responses, RESPONSES),
            (websocket, RESPONSES_WEBSOCKET),
            (batches, BATCHES_DIALECT),
        ]
        .into_iter()
        .filter(|(served, _)| *served)
        .map(|(_, dialect)| dialect.to_owned())
        .collect()
    }

    /// A canonical request of these goes to `{base_url}/{path}` untouched, with the key, the
    /// entry's `headers` and the organization and project, which `passthrough` gives too: the
    /// host can send it without an instance.
    fn plain_operations(_: &Entry<Settings>) -> Vec<PlainOperation> {
        plain(&[
            Operation::ChatCompletions,
            Operation::Embeddings,
            Operation::Completions,
        ])
    }

    /// The key and the entry's headers (the SDK's default), after the organization and project,
    /// as on every request `prepare` sends: a pass-through call is billed where the others are.
    fn passthrough(
        entry: &Entry<Settings>,
        _: &PassthroughCall,
    ) -> Result<PassthroughAuth, PluginError> {
        let mut request = HttpRequest::get(String::new());
        for (_, name, value) in entry.settings.headers() {
            if let Some(value) = value {
                request.set_header(name, value);
            }
        }
        entry.authorize(&mut request);
        Ok(PassthroughAuth {
            headers: request.headers,
            query: Vec::new(),
        })
    }

    fn validate(entry: &Entry<Settings>) -> Result<(), ConfigError> {
        for (key, name, value) in entry.settings.headers() {
            if let Some(value) = value {
                check_header(name, value).map_err(|msg| ConfigError::at(key, msg))?;
            }
        }
        Ok(())
    }

    fn prepare(
        entry: &Entry<Settings>,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError> {
        if let Some(prepared) = batch_call(&request, |path| entry.url(path)) {
            let mut prepared = prepared?;
            if let Some(http) = prepared.request_mut() {
                for (_, name, value) in entry.settings.headers() {
                    if let Some(value) = value {
                        http.set_header(name, value);
                    }
                }
            }
            return Ok(prepared);
        }
        let mut request = request;
        let responses = native_call(&request.native, RESPONSES);
        let path = match (&request.native, responses) {
            (None, _) => path(request.operation),
            // The Responses dialect's count and compaction routes go to OpenAI's own.
            (Some(_), Some(call)) if serves_responses(entry) => responses_path(&call.route),
            (Some(_), _) => {
                return Err(PluginError::invalid_request(format!(
                    "provider `{}` does not serve this API natively",
                    entry.name
                )));
            }
        };
        // `OpenAI-Beta` opts a client into preview behaviour; only a client of the Responses
        // API itself can mean it for this upstream.
        let beta = match forwarded_header(&request, "openai-beta") {
            Some(value) if responses.is_some() => {
                check_header("openai-beta", value).map_err(|_| {
                    PluginError::invalid_request("the `openai-beta` header is not a valid value")
                })?;
                Some(value.to_owned())
            }
            Some(_) | None => None,
        };
        if responses.is_some()
            && let Some(expanded) = compaction::expand(&request.body)
        {
            request.body = expanded;
        }
        let mut prepared = upstream(entry.url(path), request)?;
        if let Some(http) = prepared.request_mut() {
            let beta = ("", "openai-beta", beta.as_deref());
            for (_, name, value) in entry.settings.headers().into_iter().chain([beta]) {
                if let Some(value) = value {
                    http.set_header(name, value);
                }
            }
        }
        Ok(prepared)
    }

    /// OpenAI's own counter, `POST /responses/input_tokens`: only an upstream that serves
    /// the Responses API has it.
    fn prepare_count(
        entry: &Entry<Settings>,
        request: CanonicalRequest,
    ) -> Result<Option<HttpRequest>, PluginError> {
        if !serves_responses(entry) {
            return Ok(None);
        }
        let body = count::body(&request.body, &request.model)?;
        let url = entry.url("responses/input_tokens");
        let mut http = HttpRequest::post_json(url, json_body(&body)?);
        for (_, name, value) in entry.settings.headers() {
            if let Some(value) = value {
                http.set_header(name, value);
            }
        }
        Ok(Some(http))
    }

    fn parse_count(
        _: &Entry<Settings>,
        _: &RequestInfo,
        response: HttpResponse,
    ) -> Result<u64, PluginError> {
        count::parse(response)
    }
}

impl Settings {
    /// (option, header, value) of the options sent as headers.
    fn headers(&self) -> [(&'static str, &'static str, Option<&str>); 2] {
        [
            (
                "organization",
                "openai-organization",
                self.organization.as_deref(),
            ),
            ("project", "openai-project", self.project.as_deref()),
        ]
    }
}

/// Whether the entry's upstream serves the Responses API itself: its `responses` option, or
/// by default whether it is OpenAI's own API.
fn serves_responses(entry: &Entry<Settings>) -> bool {
    match entry.settings.responses {
        Some(mode) => mode == ResponsesMode::Native,
        None => is_openai(&entry.base_url),
    }
}

/// Whether `base_url` is OpenAI's own API (`https://api.openai.com/...`), which serves
/// Responses; compatible hosts mostly do not.
fn is_openai(base_url: &str) -> bool {
    let rest = base_url.strip_prefix("https://").unwrap_or_default();
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    host.eq_ignore_ascii_case("api.openai.com")
}

wasmgate_plugin_sdk::export_provider!(OpenAi);

#[cfg(test)]
mod tests;
