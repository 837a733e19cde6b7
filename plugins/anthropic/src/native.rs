//! Messages requests passed through natively: the client's body goes to `/messages` as it is,
//! with the entry's key, the client's `anthropic-version` and `anthropic-beta`, and the answer
//! comes back unchanged with its usage read (`message_start`, then the running totals of
//! `message_delta`).

use serde::Deserialize;
use wasmgate_plugin_sdk::http::check_header;
use wasmgate_plugin_sdk::native::{NativeDialect, forwarded_header};
use wasmgate_plugin_sdk::{CanonicalRequest, Completion, Entry, HttpRequest, PluginError, Usage};

use crate::errors::{ErrorBody, stream_error};
use crate::response::{AnthropicUsage, DeltaUsage};
use crate::settings::Settings;

/// The upstream request for a Messages body. The client's `anthropic-version` wins over the
/// entry's (the client knows which version its body is written for); its `anthropic-beta` is
/// sent as it came, with the entry's own betas added after any it does not already name.
pub fn prepare(
    entry: &Entry<Settings>,
    request: CanonicalRequest,
) -> Result<HttpRequest, PluginError> {
    let settings = &entry.settings;
    let version = client_header(&request, "anthropic-version")?
        .unwrap_or(&settings.version)
        .to_owned();
    let beta = match client_header(&request, "anthropic-beta")? {
        Some(sent) => {
            let named: Vec<&str> = sent.split(',').map(str::trim).collect();
            let mut all = sent.to_owned();
            for own in settings
                .beta
                .iter()
                .filter(|b| !named.contains(&b.as_str()))
            {
                all.push(',');
                all.push_str(own);
            }
            all
        }
        None => settings.beta.join(","),
    };
    // The Messages dialect's count goes to Anthropic's own counting endpoint.
    let counting = request
        .native
        .as_ref()
        .is_some_and(|native| native.route == "count_tokens");
    let path = if counting {
        "messages/count_tokens"
    } else {
        "messages"
    };
    let mut http = HttpRequest::post_json(entry.url(path), request.body.into_bytes())
        .header("anthropic-version", version);
    if !beta.is_empty() {
        http.set_header("anthropic-beta", beta);
    }
    Ok(http)
}

/// A forwarded client header, refused if it could not be sent as one header line. The host
/// lets only printable values through; this keeps the plugin safe on its own.
fn client_header<'a>(
    request: &'a CanonicalRequest,
    name: &str,
) -> Result<Option<&'a str>, PluginError> {
    match forwarded_header(request, name) {
        Some(value) if check_header(name, value).is_err() || value.is_empty() => Err(
            PluginError::invalid_request(format!("the `{name}` header is not a valid value")),
        ),
        found => Ok(found),
    }
}

/// A complete Messages answer: the body unchanged, with its usage.
pub fn parse(body: Vec<u8>) -> Result<Completion, PluginError> {
    #[derive(Deserialize)]
    struct Envelope {
        usage: Option<AnthropicUsage>,
    }
    let envelope: Envelope = serde_json::from_slice(&body).map_err(|_| {
        PluginError::upstream("Anthropic answered with a body that is not a message")
    })?;
    let body = String::from_utf8(body)
        .map_err(|_| PluginError::upstream("Anthropic answered with a body that is not UTF-8"))?;
    Ok(Completion {
        body,
        usage: envelope.usage.map(AnthropicUsage::to_usage),
    })
}

/// The [`NativeDialect`] of Anthropic's Messages streams.
#[derive(Default)]
pub struct MessagesEvents {
    usage: Option<AnthropicUsage>,
    stopped: bool,
}

#[derive(Deserialize)]
struct Start {
    message: StartMessage,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: AnthropicUsage,
}

#[derive(Deserialize)]
struct Delta {
    usage: Option<DeltaUsage>,
}

#[derive(Deserialize)]
struct ErrorEvent {
    error: ErrorBody,
}

impl NativeDialect for MessagesEvents {
    fn observe(&mut self, kind: &str, data: &str) -> Result<(), PluginError> {
        let unreadable =
            |_| PluginError::upstream("Anthropic sent a stream event that could not be read");
        match kind {
            "message_start" => {
                let start: Start = serde_json::from_str(data).map_err(unreadable)?;
                self.usage = Some(start.message.usage);
            }
            "message_delta" => {
                let delta: Delta = serde_json::from_str(data).map_err(unreadable)?;
                if let Some(delta) = delta.usage {
                    self.usage
                        .get_or_insert_with(AnthropicUsage::default)
                        .merge(&delta);
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let event: ErrorEvent = serde_json::from_str(data).map_err(unreadable)?;
                return Err(stream_error(event.error));
            }
            // Content blocks, pings and event types added later pass through unread.
            _ => {}
        }
        Ok(())
    }

    fn end(&self) -> Result<(), PluginError> {
        if self.stopped {
            Ok(())
        } else {
            Err(PluginError::upstream(
                "Anthropic's stream ended before the message was complete",
            ))
        }
    }

    fn usage(&self) -> Option<Usage> {
        self.usage.map(AnthropicUsage::to_usage)
    }
}
