//! An ended Message Batch's results (`GET messages/batches/{id}/results`, JSONL of
//! `{custom_id, result: {type: succeeded|errored|canceled|expired, message|error}}`) read as the
//! upstream streams them and translated, line by line, into OpenAI's batch output lines: a
//! succeeded message by the plugin's `parse-response`, as a live answer is, into
//! `{id, custom_id, response: {status_code: 200, request_id, body}, error: null}`; an errored
//! one into its status and OpenAI's error body; a canceled or expired one into
//! `{..., response: null, error: {code, message}}`.
//!
//! The gateway names them as files: `{batch}.output` (the succeeded lines), `{batch}.errors`
//! (the others) and, for metering, `{batch}.all` (every line that ran).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::anthropic::Session;
use super::lines::LINE_MAX;
use crate::error::ApiError;
use crate::plugins::{HttpResponse, Operation, RequestInfo, Usage};

/// Which lines of the results a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Output,
    Errors,
    All,
}

/// The batch and the lines a gateway-named results file stands for; `None` for another id.
pub fn named(upstream_id: &str) -> Option<(&str, Kind)> {
    let (batch, suffix) = upstream_id.rsplit_once('.')?;
    let kind = match suffix {
        "output" => Kind::Output,
        "errors" => Kind::Errors,
        "all" => Kind::All,
        _ => return None,
    };
    Some((batch, kind))
}

/// One translated line, with the usage the plugin read from its message.
pub struct Translated {
    pub line: Bytes,
    pub usage: Option<Usage>,
}

/// The results, as they are read and translated.
pub struct Results {
    provider: String,
    session: Session,
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    timeout: Duration,
    buffer: BytesMut,
    model: String,
    kind: Kind,
    ended: bool,
}

#[derive(serde::Deserialize)]
struct Line<'a> {
    custom_id: &'a str,
    #[serde(borrow)]
    result: Outcome<'a>,
}

#[derive(serde::Deserialize)]
struct Outcome<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    error: Option<Value>,
}

impl Results {
    /// Reads `response` (the upstream's results) for the batch of `model`.
    pub fn new(
        provider: &crate::gateway::Provider,
        response: reqwest::Response,
        model: String,
        kind: Kind,
    ) -> Self {
        Self {
            provider: provider.name.to_string(),
            session: Session::new(provider),
            body: response.bytes_stream().boxed(),
            timeout: provider.timeout,
            buffer: BytesMut::new(),
            model,
            kind,
            ended: false,
        }
    }

    /// The next line of this file's kind; `None` at the end.
    pub async fn next(&mut self) -> Option<Result<Translated, ApiError>> {
        loop {
            let line = match memchr::memchr(b'\n', &self.buffer) {
                Some(end) => {
                    let line = self.buffer.split_to(end + 1);
                    line.freeze().slice(..end)
                }
                None if self.ended => {
                    if self.buffer.is_empty() {
                        return None;
                    }
                    self.buffer.split().freeze()
                }
                None => {
                    if let Err(e) = self.read().await {
                        self.ended = true;
                        return Some(Err(e));
                    }
                    continue;
                }
            };
            match self.translate(&line).await {
                Ok(Some(translated)) => return Some(Ok(translated)),
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }

    async fn read(&mut self) -> Result<(), ApiError> {
        match tokio::time::timeout(self.timeout, self.body.next()).await {
            Err(_) => Err(ApiError::UpstreamTimeout {
                provider: self.provider.clone(),
            }),
            Ok(None) => {
                self.ended = true;
                Ok(())
            }
            Ok(Some(Err(e))) => Err(ApiError::UpstreamUnreachable {
                provider: self.provider.clone(),
                detail: e.without_url().to_string(),
            }),
            Ok(Some(Ok(chunk))) => {
                self.buffer.extend_from_slice(&chunk);
                if self.buffer.len() > LINE_MAX && memchr::memchr(b'\n', &self.buffer).is_none() {
                    return Err(ApiError::BadUpstreamRequest {
                        provider: self.provider.clone(),
                        detail: "a line of the batch results is too long".to_owned(),
                    });
                }
                Ok(())
            }
        }
    }

    /// One result line in OpenAI's shape, if this file holds it.
    async fn translate(&mut self, line: &[u8]) -> Result<Option<Translated>, ApiError> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let unreadable = || ApiError::BadUpstreamRequest {
            provider: self.provider.clone(),
            detail: "a line of the batch results could not be read".to_owned(),
        };
        let parsed: Line = serde_json::from_slice(line).map_err(|_| unreadable())?;
        let ran = matches!(parsed.result.kind, "succeeded" | "errored");
        let wanted = match self.kind {
            Kind::Output => parsed.result.kind == "succeeded",
            Kind::Errors => parsed.result.kind != "succeeded",
            Kind::All => ran,
        };
        if !wanted {
            return Ok(None);
        }
        let id = format!("batch_req_{}", parsed.custom_id);
        let (line, usage) = match (parsed.result.kind, parsed.result.message) {
            ("succeeded", Some(message)) => {
                let (body, usage) = self.completion(message.get()).await?;
                let request_id = serde_json::from_str::<Value>(message.get())
                    .ok()
                    .and_then(|m| m.get("id").cloned());
                let line = format!(
                    "{{\"id\":{},\"custom_id\":{},\"response\":{{\"status_code\":200,\
                     \"request_id\":{},\"body\":{body}}},\"error\":null}}\n",
                    json!(id),
                    json!(parsed.custom_id),
                    request_id.unwrap_or(Value::Null),
                );
                (line, usage)
            }
            ("errored", _) => {
                let error = parsed.result.error.as_ref().and_then(|e| e.get("error"));
                let kind = error
                    .and_then(|e| e.get("type"))
                    .and_then(Value::as_str)
                    .unwrap_or("api_error");
                let status = if kind == "invalid_request_error" {
                    400
                } else {
                    500
                };
                let message = error
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("The request failed.");
                let line = json!({
                    "id": id,
                    "custom_id": parsed.custom_id,
                    "response": {
                        "status_code": status,
                        "request_id": null,
                        "body": {"error": {
                            "message": crate::clip::clip(message, 1024),
                            "type": kind,
                            "param": null,
                            "code": null,
                        }},
                    },
                    "error": null,
                });
                (format!("{line}\n"), None)
            }
            (other, _) => {
                let code = match other {
                    "expired" => "batch_expired",
                    _ => "batch_cancelled",
                };
                let line = json!({
                    "id": id,
                    "custom_id": parsed.custom_id,
                    "response": null,
                    "error": {
                        "code": code,
                        "message": "This request was not run before the batch ended.",
                    },
                });
                (format!("{line}\n"), None)
            }
        };
        Ok(Some(Translated {
            line: Bytes::from(line),
            usage,
        }))
    }

    /// A Messages answer as a chat completion, by the plugin's `parse-response`.
    async fn completion(&mut self, message: &str) -> Result<(String, Option<Usage>), ApiError> {
        let info = RequestInfo {
            operation: Operation::ChatCompletions,
            model: self.model.clone(),
            stream: false,
            native: None,
        };
        let answer = HttpResponse {
            status: 200,
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body: message.as_bytes().to_vec(),
        };
        let config = self.session.config.clone();
        let parsed = match self
            .session
            .call()
            .await?
            .parse_response(&config, &info, &answer)
            .await
        {
            Ok(parsed) => parsed,
            Err(failure) => {
                self.session.reset();
                return Err(ApiError::plugin(failure));
            }
        };
        let completion = parsed.map_err(|error| ApiError::BadUpstreamRequest {
            provider: self.provider.clone(),
            detail: crate::clip::clip(&error.message, 512).into_owned(),
        })?;
        Ok((completion.body, completion.usage))
    }

    /// The lines as a body, read as the client takes them.
    pub fn into_stream(self) -> BoxStream<'static, Result<Bytes, ApiError>> {
        futures_util::stream::unfold(self, |mut results| async move {
            let item = results.next().await?;
            Some((item.map(|t| t.line), results))
        })
        .boxed()
    }
}
