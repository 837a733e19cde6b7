//! One call of OpenAI's Files or Batch API at a provider entry: its plugin says where it goes
//! (`prepare` with `native` set to the [`DIALECT`] and the call's route, see the SDK's
//! `openai_compat::batch_call`), the host sends it under the entry's base URL, streaming a file
//! from the spool, and hands back the answer. An error status goes to the plugin's
//! `parse-response`, which maps it as for any request.

use crate::error::ApiError;
use crate::gateway::{Gateway, Provider};
use crate::plugins::SlotKind;
use crate::plugins::{
    CanonicalRequest, HttpResponse, NativeCall, Operation, Prepared, RequestInfo,
};
use crate::state::AppState;
use crate::upstream::{self, FilePart};

use super::spool::{self, Spooled};

pub use super::target::{Api, DIALECT, api};

/// Bytes of a JSON answer (a file or batch object) read, at most.
const ANSWER_MAX: usize = 1 << 20;

/// A call, with the upstream's ids.
pub enum Call<'a> {
    UploadFile {
        purpose: &'a str,
        fields: &'a [(String, String)],
        filename: &'a str,
        file: &'a Spooled,
    },
    FileContent(&'a str),
    DeleteFile(&'a str),
    CreateBatch(String),
    /// Anthropic's create: `{"requests": [...]}` streamed from the spool.
    SubmitRequests(&'a Spooled),
    RetrieveBatch(&'a str),
    CancelBatch(&'a str),
    /// Anthropic's results of an ended batch.
    BatchResults(&'a str),
}

impl Call<'_> {
    fn route(&self) -> &'static str {
        match self {
            Call::UploadFile { .. } => "files.create",
            Call::FileContent(_) => "files.content",
            Call::DeleteFile(_) => "files.delete",
            Call::CreateBatch(_) | Call::SubmitRequests(_) => "batches.create",
            Call::RetrieveBatch(_) => "batches.retrieve",
            Call::CancelBatch(_) => "batches.cancel",
            Call::BatchResults(_) => "batches.results",
        }
    }

    fn params(&self) -> Vec<(String, String)> {
        let one = |name: &str, value: &str| vec![(name.to_owned(), value.to_owned())];
        match self {
            Call::UploadFile {
                purpose, fields, ..
            } => std::iter::once(("purpose".to_owned(), (*purpose).to_owned()))
                .chain(fields.iter().cloned())
                .collect(),
            Call::FileContent(id) | Call::DeleteFile(id) => one("file_id", id),
            Call::RetrieveBatch(id) | Call::CancelBatch(id) | Call::BatchResults(id) => {
                one("batch_id", id)
            }
            Call::CreateBatch(_) | Call::SubmitRequests(_) => Vec::new(),
        }
    }
}

/// The entry named `name`, if it runs the Files and Batch APIs.
pub fn provider<'a>(gateway: &'a Gateway, name: &str) -> Result<&'a Provider, ApiError> {
    gateway
        .providers
        .iter()
        .find(|p| &*p.name == name)
        .filter(|p| api(p).is_some())
        .ok_or_else(|| ApiError::InvalidField {
            param: "model".to_owned(),
            message: format!(
                "The provider `{name}` runs neither OpenAI's Files and Batch APIs (its plugin \
                 or its `batches` option says so) nor Anthropic's Message Batches."
            ),
        })
}

/// Sends `call` to `provider`; a success status's response, for the caller to read.
pub async fn send(
    state: &AppState,
    gateway: &Gateway,
    provider: &Provider,
    call: Call<'_>,
) -> Result<reqwest::Response, ApiError> {
    let dialect = match api(provider) {
        Some(Api::Anthropic) => super::anthropic::DIALECT,
        _ => DIALECT,
    };
    let native = NativeCall {
        dialect: dialect.to_owned(),
        route: call.route().to_owned(),
        params: call.params(),
    };
    let body = match &call {
        Call::CreateBatch(body) => body.clone(),
        _ => "{}".to_owned(),
    };
    let request = CanonicalRequest {
        operation: Operation::ChatCompletions,
        model: String::new(),
        body,
        stream: false,
        headers: Vec::new(),
        native: Some(native.clone()),
    };
    let redactor = gateway.secrets.for_request(&Default::default());
    let mut plugin = provider
        .plugin
        .start(SlotKind::Call)
        .await
        .map_err(ApiError::plugin)?;
    let prepared = plugin
        .prepare(&provider.config, &request)
        .await
        .map_err(ApiError::plugin)?
        .map_err(|error| ApiError::provider(&provider.name, error, &redactor))?;
    let bad = |detail: &str| ApiError::BadUpstreamRequest {
        provider: provider.name.to_string(),
        detail: detail.to_owned(),
    };
    let admit = |http| {
        provider
            .scope
            .admit(http)
            .map_err(|reason| ApiError::UnsafeUpstreamUrl {
                provider: provider.name.to_string(),
                model: String::new(),
                reason,
            })
    };
    let sent = match (prepared, &call) {
        (Prepared::UpstreamForm(form), Call::UploadFile { filename, file, .. }) => {
            let part = FilePart {
                body: spool::body(file).await?,
                len: file.bytes,
                file_name: (*filename).to_owned(),
                content_type: Some("application/jsonl".to_owned()),
            };
            upstream::send_form_part(
                &state.http,
                admit(form.request)?,
                form.fields,
                form.file_field,
                part,
                provider.timeout,
            )
            .await
        }
        (Prepared::Upstream(http), Call::SubmitRequests(file)) => {
            upstream::send_body(
                &state.http,
                admit(http)?,
                spool::body(file).await?,
                provider.timeout,
            )
            .await
        }
        (Prepared::Upstream(http), call) if !matches!(call, Call::UploadFile { .. }) => {
            upstream::send(&state.http, admit(http)?, provider.timeout).await
        }
        _ => {
            return Err(bad(
                "the plugin answered a Files or Batch API call with the wrong kind",
            ));
        }
    };
    let response = sent.map_err(|e| ApiError::upstream(&provider.name, e))?;
    if response.status().is_success() {
        return Ok(response);
    }
    // An error is the plugin's to read, as any other answer's.
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let body = upstream::read_body(response, provider.timeout)
        .await
        .map_err(|e| ApiError::upstream(&provider.name, e))?;
    let info = RequestInfo {
        operation: Operation::ChatCompletions,
        model: String::new(),
        stream: false,
        native: Some(native),
    };
    let answer = HttpResponse {
        status,
        headers,
        body: body[..body.len().min(ANSWER_MAX)].to_vec(),
    };
    plugin
        .parse_response(&provider.config, &info, &answer)
        .await
        .map_err(ApiError::plugin)?
        .map_err(|error| ApiError::provider(&provider.name, error, &redactor))?;
    Err(bad("the plugin read an upstream error as a success"))
}

/// A success answer read as JSON (a file or batch object), bounded.
pub async fn json(
    provider: &Provider,
    response: reqwest::Response,
) -> Result<serde_json::Value, ApiError> {
    let body = upstream::read_body(response, provider.timeout)
        .await
        .map_err(|e| ApiError::upstream(&provider.name, e))?;
    let bad = |detail: &str| ApiError::BadUpstreamRequest {
        provider: provider.name.to_string(),
        detail: detail.to_owned(),
    };
    if body.len() > ANSWER_MAX {
        return Err(bad("the upstream's answer is too long"));
    }
    serde_json::from_slice(&body).map_err(|_| bad("the upstream's answer is not JSON"))
}

/// A success answer read as a batch object in OpenAI's shape (Anthropic's mapped over
/// `previous`, the object last shown).
pub async fn batch_json(
    provider: &Provider,
    response: reqwest::Response,
    previous: &serde_json::Value,
) -> Result<serde_json::Value, ApiError> {
    let raw = json(provider, response).await?;
    Ok(match api(provider) {
        Some(Api::Anthropic) => super::anthropic::openai_batch(&raw, previous),
        Some(Api::OpenAi) | None => raw,
    })
}
