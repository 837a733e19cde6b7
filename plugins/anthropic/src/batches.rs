//! Anthropic's Message Batches API, which the host drives to run an OpenAI batch whose lines
//! name a Claude model (see the host's `batches::anthropic`). A provider says it runs it by
//! listing [`DIALECT`] in `native-dialects`; the host asks `prepare` for each call with
//! `native` set, and does the network I/O itself (the requests are streamed from disk, never
//! through the sandbox). The lines themselves are translated by `prepare` and the results by
//! `parse-response`, as live chat completions are.
//!
//! | route | upstream | params |
//! |---|---|---|
//! | `batches.create` | `POST messages/batches` (the host attaches `{"requests": [...]}`) | |
//! | `batches.retrieve` | `GET messages/batches/{batch_id}` | `batch_id` |
//! | `batches.cancel` | `POST messages/batches/{batch_id}/cancel` | `batch_id` |
//! | `batches.results` | `GET messages/batches/{batch_id}/results` | `batch_id` |
//!
//! Reference: <https://docs.anthropic.com/en/api/creating-message-batches> and the pages on
//! retrieving, canceling and the results of message batches.

use wasmgate_plugin_sdk::http::path_segment;
use wasmgate_plugin_sdk::{CanonicalRequest, Entry, HttpRequest, PluginError};

use crate::settings::Settings;

/// The name the plugin lists in `native-dialects` for the Message Batches API.
pub const DIALECT: &str = "anthropic-message-batches";

/// The upstream request for a Message Batches call; `None` when `request` is not one.
pub fn call(
    entry: &Entry<Settings>,
    request: &CanonicalRequest,
) -> Option<Result<HttpRequest, PluginError>> {
    let call = request.native.as_ref().filter(|n| n.dialect == DIALECT)?;
    let id = || -> Result<String, PluginError> {
        call.params
            .iter()
            .find(|(k, _)| k == "batch_id")
            .and_then(|(_, v)| path_segment(v))
            .ok_or_else(|| PluginError::invalid_request("`batch_id` is missing"))
    };
    let http = (|| {
        Ok(match call.route.as_str() {
            "batches.create" => HttpRequest::post_json(entry.url("messages/batches"), Vec::new()),
            "batches.retrieve" => {
                HttpRequest::get(entry.url(&format!("messages/batches/{}", id()?)))
            }
            "batches.cancel" => HttpRequest::post_json(
                entry.url(&format!("messages/batches/{}/cancel", id()?)),
                Vec::new(),
            ),
            "batches.results" => {
                HttpRequest::get(entry.url(&format!("messages/batches/{}/results", id()?)))
            }
            other => {
                return Err(PluginError::invalid_request(format!(
                    "`{other}` is not a Message Batches call"
                )));
            }
        })
    })();
    Some(http.map(|http| {
        let settings = &entry.settings;
        let mut http = http.header("anthropic-version", settings.version.as_str());
        if !settings.beta.is_empty() {
            http.set_header("anthropic-beta", settings.beta.join(","));
        }
        http
    }))
}
