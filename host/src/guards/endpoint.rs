//! A guard's endpoint: the HTTP calls a guard asks the host to make for it (a moderation
//! service, an operator's policy endpoint), to its entry's endpoint only and under its deadline.
//! Plugins still get no sockets; the endpoint's key never enters the sandbox.

use std::time::Duration;

use futures_util::StreamExt;

use super::guard_error::GuardError;
use crate::config::guards::{EndpointFailure, GuardEndpoint};
use crate::plugins::{Consult, ConsultReply};
use crate::secret::Secret;

/// Outside calls one check may ask for before the guard is taken to be looping.
pub(super) const CONSULTS_MAX: usize = 4;
/// The most of an endpoint's answer a guard is given.
const REPLY_MAX: usize = 1 << 20;

/// Where a guard's outside calls go, as its entry says.
pub struct Endpoint {
    url: reqwest::Url,
    api_key: Option<Secret>,
    timeout: Duration,
    on_failure: EndpointFailure,
    http: reqwest::Client,
}

impl Endpoint {
    pub(super) fn new(entry: &GuardEndpoint, http: reqwest::Client) -> Result<Self, String> {
        let url = reqwest::Url::parse(&entry.url).map_err(|e| format!("endpoint.url: {e}"))?;
        Ok(Self {
            url,
            api_key: entry.api_key.clone(),
            timeout: Duration::from_millis(entry.timeout_ms),
            on_failure: entry.on_failure,
            http,
        })
    }

    /// POSTs `body`; the status and body of the answer, or why there is none.
    async fn call(&self, body: &str) -> Result<(u16, String), String> {
        let call = async {
            let mut request = (self.http.post(self.url.clone()))
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_owned());
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key.expose());
            }
            let response = request
                .send()
                .await
                .map_err(|e| e.without_url().to_string())?;
            let status = response.status().as_u16();
            // An error status is the service failing, as a timeout is: the entry's
            // `on_failure` decides, not the guard.
            if !(200..300).contains(&status) {
                return Err(format!("it answered {status}"));
            }
            let mut body = Vec::new();
            let mut chunks = response.bytes_stream();
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk.map_err(|e| e.without_url().to_string())?;
                if body.len() + chunk.len() > REPLY_MAX {
                    return Err("its answer is over 1 MiB".to_owned());
                }
                body.extend_from_slice(&chunk);
            }
            Ok((status, String::from_utf8_lossy(&body).into_owned()))
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(result) => result,
            Err(_) => Err(format!("no answer within {} ms", self.timeout.as_millis())),
        }
    }
}

/// What came of `consult` at `endpoint`; an error when it failed and that refuses.
pub(super) async fn outside(
    endpoint: Option<&Endpoint>,
    guard: &str,
    consult: &Consult,
) -> Result<ConsultReply, GuardError> {
    let Some(endpoint) = endpoint else {
        return Err(GuardError::Contract(
            "it asked for an outside call, but its entry has no `endpoint`",
        ));
    };
    match endpoint.call(&consult.body).await {
        Ok(answered) => Ok(ConsultReply::Answered(answered)),
        Err(reason) => {
            tracing::warn!(guard, "guard endpoint failed: {reason}");
            match endpoint.on_failure {
                EndpointFailure::Allow => Ok(ConsultReply::Failed(reason)),
                EndpointFailure::Refuse => Err(GuardError::Unavailable(reason)),
            }
        }
    }
}
