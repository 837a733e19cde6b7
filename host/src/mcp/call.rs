//! One `tools/call`: the tool found by its prefix and permitted for the caller, the key's call
//! rate checked, the arguments guarded, the call made on the server's connection, the result
//! guarded, and the call recorded (usage record, metrics, span and log line) however it ended.

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{CallToolRequest, ClientRequest, ServerResult};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::Hub;
use super::error::{McpError, from_service};
use super::guard::{self, Verdicts};
use super::permit::Permit;
use super::progress::Relay;
use crate::auth::Caller;
use crate::guards::Guards;
use crate::ledger::time::now_us;
use crate::ledger::{Ledger, UsageRecord};
use crate::limits::{Limits, Refusal};
use crate::telemetry::{RequestEnd, Telemetry};

/// The operation tool calls are recorded under.
pub const OPERATION: &str = "mcp.tools.call";
/// Bytes of a tool name a record keeps.
const TOOL_NAME_MAX: usize = 128;

/// Who calls, how the call is known, and what it passes through (the config snapshot's limits
/// and guards, taken when the request arrived).
pub struct Call<'a> {
    pub hub: &'a Hub,
    pub ledger: &'a Ledger,
    pub telemetry: &'a Arc<Telemetry>,
    pub limits: &'a Arc<Limits>,
    pub guards: &'a Guards,
    /// Work that outlives the call (settling its limit), waited for on shutdown.
    pub background: &'a tokio_util::task::TaskTracker,
    pub caller: &'a Caller,
    pub permit: &'a Permit,
    pub request_id: &'a str,
    pub headers: &'a axum::http::HeaderMap,
    /// Where the server's progress goes (when the client asked for it with a token).
    pub relay: Option<&'a Relay>,
    /// Cancelled by the client's `notifications/cancelled`.
    pub cancel: Option<&'a CancellationToken>,
}

/// What a call's record learns as it goes.
#[derive(Default)]
struct Facts {
    server: Option<String>,
    /// The tool's own name, once the server answered for it (a name the server does not know
    /// stays out of metric labels).
    tool: Option<String>,
    bytes_in: Option<i64>,
    bytes_out: Option<i64>,
    tool_error: bool,
    verdicts: Verdicts,
}

impl Call<'_> {
    /// Calls the tool `params` names; the result is `CallToolResult` JSON.
    pub async fn run(&self, params: Option<Value>) -> Result<Value, McpError> {
        let started = Instant::now();
        let time_us = now_us();
        let telemetry = self
            .telemetry
            .request(self.headers, "/mcp", OPERATION, self.request_id);
        let mut facts = Facts::default();
        let outcome = self.attempt(params, &mut facts).await;
        let (status, error_type, message) = match &outcome {
            Ok(_) if facts.tool_error => (200, Some("tool_error".to_owned()), None),
            Ok(_) => (200, None, None),
            Err(e) => (
                e.record_status(),
                Some(e.kind().to_owned()),
                Some(e.to_string()),
            ),
        };
        let record = UsageRecord {
            request_id: self.request_id.to_owned(),
            time_us,
            project: self.caller.project.clone(),
            api_key_id: self.caller.key_id.clone(),
            provider: facts.server.clone(),
            model: facts.tool.clone(),
            operation: OPERATION.to_owned(),
            latency_us: i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX),
            status,
            error_type,
            guards: std::mem::take(&mut facts.verdicts).summary(&self.telemetry.metrics),
            bytes_in: facts.bytes_in,
            bytes_out: facts.bytes_out,
            ..UsageRecord::default()
        };
        telemetry.finish(&RequestEnd {
            record: &record,
            system: None,
            error: message.as_deref().map(|m| (m, None)),
        });
        // With a journal, the answer waits until its record is safe on disk.
        self.ledger.record(record).wait().await;
        outcome
    }

    async fn attempt(&self, params: Option<Value>, facts: &mut Facts) -> Result<Value, McpError> {
        let mut params = match params {
            Some(Value::Object(params)) => params,
            _ => {
                return Err(McpError::InvalidParams(
                    "`params` must be an object".to_owned(),
                ));
            }
        };
        let Some(Value::String(name)) = params.remove("name") else {
            return Err(McpError::InvalidParams(
                "`params.name` must be a string".to_owned(),
            ));
        };
        let (server, tool) = match self.hub.route(&name) {
            Some((server, tool)) if self.permit.allows(&server.name, tool) => (server, tool),
            // A tool the caller may not use is one it cannot tell from a missing one.
            _ => return Err(McpError::UnknownTool(name)),
        };
        facts.server = Some(server.name.to_string());
        let tool_label: String = crate::clip::clip(tool, TOOL_NAME_MAX).into_owned();

        let admission = match (self.hub.config().calls_per_minute, &self.caller.key_id) {
            (Some(per_minute), Some(key_id)) => {
                match self
                    .limits
                    .admit_tool_call(&self.caller.project, key_id, per_minute)
                    .await
                {
                    Ok(admission) => Some(admission),
                    Err(Refusal::Denied(denial)) => {
                        return Err(McpError::RateLimited {
                            message: denial.message,
                            retry_after_ms: denial.retry_after_ms,
                        });
                    }
                    Err(Refusal::Unavailable(failure)) => {
                        tracing::warn!("cannot check the MCP call limit: {failure}");
                        return Err(McpError::LimitsUnavailable);
                    }
                }
            }
            _ => None,
        };

        let arguments = match params.remove("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(Value::Object(arguments)) => Value::Object(arguments),
            Some(_) => {
                return Err(McpError::InvalidParams(
                    "`params.arguments` must be an object".to_owned(),
                ));
            }
        };
        let arguments = arguments.to_string();
        let applying = guard::applying(
            self.guards,
            &self.caller.project,
            self.caller.key_id.as_deref(),
            &server.name,
        );
        let arguments = guard::arguments(
            self.guards,
            &applying,
            &server.name,
            tool,
            arguments,
            &mut facts.verdicts,
        )
        .await?;
        facts.bytes_in = i64::try_from(arguments.len()).ok();

        let peer = server
            .peer()
            .ok_or_else(|| McpError::Unavailable(server.name.to_string()))?;
        let mut upstream = Map::new();
        upstream.insert("name".to_owned(), tool.into());
        upstream.insert(
            "arguments".to_owned(),
            serde_json::from_str(&arguments).map_err(|_| McpError::GuardFailed)?,
        );
        if let Some(meta) = params.remove("_meta") {
            upstream.insert("_meta".to_owned(), meta);
        }
        let request = serde_json::from_value(Value::Object(upstream))
            .map_err(|e| McpError::InvalidParams(e.to_string()))?;
        let called = self.upstream(&server, &peer, request).await;
        let succeeded = called.is_ok();
        if let Some(admission) = admission {
            self.background
                .spawn(admission.settle(crate::plugins::Settlement {
                    input_tokens: 0,
                    output_tokens: 0,
                    cost_micros: Some(0),
                    succeeded,
                }));
        }
        let result = called?;
        facts.tool = Some(tool_label);
        facts.tool_error = result.is_error == Some(true);
        let mut result = serde_json::to_value(&result).map_err(|_| McpError::GuardFailed)?;
        if let Some(object) = result.as_object_mut() {
            // A field of a protocol version newer than the ones `/mcp` speaks.
            object.remove("resultType");
        }
        guard::result(
            self.guards,
            &applying,
            &server.name,
            &mut result,
            &mut facts.verdicts,
        )
        .await?;
        facts.bytes_out = i64::try_from(result.to_string().len()).ok();
        Ok(result)
    }
}

impl Call<'_> {
    /// Sends the call to `server` and waits for its answer, relaying its progress, until it
    /// answers, the client cancels, or the server's time is up; the server is told of a
    /// cancellation or a timeout with the request id it knows.
    async fn upstream(
        &self,
        server: &super::upstream::Upstream,
        peer: &Arc<Peer<RoleClient>>,
        request: rmcp::model::CallToolRequestParams,
    ) -> Result<rmcp::model::CallToolResult, McpError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(request));
        let sent = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await;
        let mut handle = match sent {
            Ok(handle) => handle,
            Err(e) => {
                server.mark_broken(peer);
                return Err(from_service(&server.name, e));
            }
        };
        let mut progress = self
            .relay
            .map(|_| server.progress.subscribe(handle.progress_token.clone()));
        let deadline = tokio::time::sleep(server.timeout);
        tokio::pin!(deadline);
        let never = CancellationToken::new();
        let cancel = self.cancel.unwrap_or(&never);
        let answered = loop {
            tokio::select! {
                answered = &mut handle.rx => break Ok(answered),
                Some(note) = async {
                    match progress.as_mut() {
                        Some(progress) => progress.next().await,
                        None => std::future::pending().await,
                    }
                } => {
                    if let Some(relay) = self.relay {
                        relay.send(&note);
                    }
                }
                () = cancel.cancelled() => break Err(McpError::Cancelled),
                () = &mut deadline => break Err(McpError::Timeout(server.name.to_string())),
            }
        };
        let answered = match answered {
            Ok(answered) => answered,
            Err(e) => {
                let reason = match e {
                    McpError::Cancelled => "cancelled by the client",
                    _ => "the gateway's time for the call is up",
                };
                let _ = handle.cancel(Some(reason.to_owned())).await;
                return Err(e);
            }
        };
        match answered {
            Ok(Ok(ServerResult::CallToolResult(result))) => Ok(result),
            // A result with nothing in it reads as the empty result.
            Ok(Ok(ServerResult::EmptyResult(_))) => Ok(rmcp::model::CallToolResult::default()),
            Ok(Ok(_)) => Err(from_service(
                &server.name,
                rmcp::ServiceError::UnexpectedResponse,
            )),
            Ok(Err(e)) => {
                if !matches!(e, rmcp::ServiceError::McpError(_)) {
                    server.mark_broken(peer);
                }
                Err(from_service(&server.name, e))
            }
            // The connection dropped the request: it is gone.
            Err(_) => {
                server.mark_broken(peer);
                Err(McpError::Unavailable(server.name.to_string()))
            }
        }
    }
}
