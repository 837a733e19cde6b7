//! The lines of a batch input file (JSONL), checked one at a time as the upload arrives: each
//! is a JSON object with a unique `custom_id`, `method: POST`, a `url` the Batch API runs, and a
//! `body` that is a valid request of that endpoint for a model the key may use. Every line's
//! model must lead to the same provider entry (a virtual model's: see [`super::target`]). A line that passes is rewritten as the upstream
//! takes it (its model the upstream's name, gateway-only fields gone).
//!
//! Wire format: OpenAI's Batch API reference, "The per-line object of the batch input file"
//! (`custom_id`, `method`, `url`, `body`).

use std::collections::HashSet;

use serde_json::value::RawValue;

use super::target::{self, Unresolved};
use crate::catalog::cost_micros;
use crate::error::ApiError;
use crate::gateway::Gateway;
use crate::ledger::KeyLimits;
use crate::pipeline::request::ClientRequest;
use crate::plugins::Operation;
use crate::tokenizer::Tokenizer;

/// Bytes of one line, at most: a request with images inlined fits.
pub const LINE_MAX: usize = 16 << 20;
/// Bytes of a `custom_id`, at most (OpenAI takes 512 characters).
const CUSTOM_ID_MAX: usize = 512;
/// Lines of one file, at most (OpenAI's limit per batch).
pub const LINES_MAX: u64 = 50_000;
/// Output tokens assumed for a line that sets no `max_tokens` (as for a live request).
const DEFAULT_OUTPUT_ESTIMATE: u64 = 1024;

/// The endpoints a batch line may name, and the operation its body is checked as.
pub const ENDPOINTS: [(&str, Operation); 4] = [
    ("/v1/chat/completions", Operation::ChatCompletions),
    ("/v1/embeddings", Operation::Embeddings),
    ("/v1/completions", Operation::Completions),
    ("/v1/moderations", Operation::Moderations),
];

/// What the checked lines add up to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// The provider entry every line resolved to, and the model as the first line named it.
    pub provider: String,
    pub model: String,
    /// The endpoint every line names.
    pub url: String,
    pub lines: u64,
    /// Prompt tokens (by the gateway's tokenizer) plus each line's `max_tokens` (or 1,024).
    pub estimate_tokens: u64,
    /// What the lines may cost at most at the batch price; `None` when the catalog has none.
    pub estimate_micros: Option<i64>,
}

/// Checks lines in order; holds what the file's lines must agree on.
pub struct LineChecker<'a> {
    gateway: &'a Gateway,
    limits: &'a KeyLimits,
    custom_ids: HashSet<String>,
    checked: Checked,
    priced: bool,
    /// Lines read so far, blank ones included: what a refusal names.
    read: u64,
}

#[derive(serde::Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    custom_id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<&'a RawValue>,
    #[serde(borrow)]
    url: Option<&'a RawValue>,
    #[serde(borrow)]
    body: Option<&'a RawValue>,
}

#[derive(serde::Serialize)]
struct Rewritten<'a> {
    custom_id: &'a str,
    method: &'static str,
    url: &'a str,
    body: &'a RawValue,
}

impl<'a> LineChecker<'a> {
    pub fn new(gateway: &'a Gateway, limits: &'a KeyLimits) -> Self {
        Self {
            gateway,
            limits,
            custom_ids: HashSet::new(),
            checked: Checked::default(),
            priced: true,
            read: 0,
        }
    }

    /// The number (from 1) the next line read has.
    pub fn next_line(&self) -> u64 {
        self.read + 1
    }

    /// Checks the next line (without its line break) and returns it as the upstream takes it.
    /// Blank lines are skipped (`None`).
    pub fn line(&mut self, bytes: &[u8]) -> Result<Option<String>, ApiError> {
        self.read += 1;
        let number = self.read;
        let refuse = |message: String| ApiError::InvalidBatchLine {
            line: number,
            message,
        };
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        if self.checked.lines == LINES_MAX {
            return Err(refuse(format!("a batch has at most {LINES_MAX} lines.")));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| refuse("not UTF-8 text.".into()))?;
        let line: Line<'_> =
            serde_json::from_str(text).map_err(|e| refuse(format!("not a JSON object ({e}).")))?;
        let string = |raw: Option<&RawValue>, field: &str| -> Result<String, ApiError> {
            let raw = raw.ok_or_else(|| refuse(format!("`{field}` is missing.")))?;
            serde_json::from_str::<String>(raw.get())
                .map_err(|_| refuse(format!("`{field}` must be a string.")))
        };
        let custom_id = string(line.custom_id, "custom_id")?;
        if custom_id.is_empty() || custom_id.len() > CUSTOM_ID_MAX {
            return Err(refuse(format!(
                "`custom_id` must be 1 to {CUSTOM_ID_MAX} bytes."
            )));
        }
        if !self.custom_ids.insert(custom_id.clone()) {
            return Err(refuse(format!(
                "`custom_id` '{}' is used by an earlier line; each must be unique.",
                crate::clip::echo(&custom_id)
            )));
        }
        if string(line.method, "method")? != "POST" {
            return Err(refuse("`method` must be `POST`.".into()));
        }
        let url = string(line.url, "url")?;
        let Some(&(_, operation)) = ENDPOINTS.iter().find(|(u, _)| *u == url) else {
            return Err(refuse(format!(
                "`url` '{}' is not an endpoint the Batch API runs ({}).",
                crate::clip::echo(&url),
                ENDPOINTS.map(|(u, _)| u).join(", ")
            )));
        };
        if self.checked.lines > 0 && url != self.checked.url {
            return Err(refuse(format!(
                "`url` must be the same on every line (line 1 has `{}`).",
                self.checked.url
            )));
        }
        let body = line
            .body
            .ok_or_else(|| refuse("`body` is missing.".into()))?;
        let mut request = ClientRequest::parse(operation, body.get().as_bytes())
            .map_err(|e| refuse(format!("`body`: {e}")))?;
        if request.stream {
            return Err(refuse("`body.stream` must not be true in a batch.".into()));
        }
        let model = request.model.clone();
        if !self.limits.allows_model(&model) {
            return Err(refuse(ApiError::ModelNotAllowed(model).to_string()));
        }
        let target = match target::resolve(self.gateway, &model) {
            Ok(target) => target,
            Err(Unresolved::NotFound) => {
                return Err(refuse(ApiError::ModelNotFound(model).to_string()));
            }
            Err(Unresolved::Ambiguous(ids)) => {
                return Err(refuse(format!(
                    "the model `{}` is served by several providers; name one of {}.",
                    crate::clip::echo(&model),
                    ids.join(", ")
                )));
            }
            Err(Unresolved::NoBatchTarget) => {
                return Err(refuse(format!(
                    "no target of the virtual model `{}` is at a provider that runs batches.",
                    crate::clip::echo(&model)
                )));
            }
        };
        let provider = target.provider;
        if self.checked.lines == 0 {
            self.checked.provider = provider.name.to_string();
            self.checked.model = model.clone();
            self.checked.url = url.clone();
        } else if *provider.name != *self.checked.provider {
            return Err(refuse(format!(
                "the model `{}` is served by `{}`, line 1's by `{}`: a batch goes to one \
                 provider.",
                crate::clip::echo(&model),
                provider.name,
                self.checked.provider
            )));
        }
        let input = u64::from(request.estimate_input_tokens(Tokenizer));
        let output = match operation {
            Operation::ChatCompletions | Operation::Completions => request
                .max_output_tokens()
                .map_or(DEFAULT_OUTPUT_ESTIMATE, u64::from),
            _ => 0,
        };
        self.checked.estimate_tokens += input + output;
        match provider
            .price(target.model)
            .and_then(|info| info.at_batch_price())
        {
            Some(info) if self.priced => {
                let cost = cost_micros(&info, input, output, 0, 0, 0);
                *self.checked.estimate_micros.get_or_insert(0) += cost;
            }
            _ => {
                self.priced = false;
                self.checked.estimate_micros = None;
            }
        }
        let upstream_model = target.model.to_owned();
        let canonical = request.canonical(&upstream_model);
        let body = RawValue::from_string(canonical.body)
            .map_err(|_| refuse("`body` could not be rewritten.".into()))?;
        self.checked.lines += 1;
        let rewritten = Rewritten {
            custom_id: &custom_id,
            method: "POST",
            url: &url,
            body: &body,
        };
        serde_json::to_string(&rewritten)
            .map(Some)
            .map_err(|_| refuse("could not be rewritten.".into()))
    }

    /// What the file's lines add up to; an error when it had none.
    pub fn finish(self) -> Result<Checked, ApiError> {
        if self.checked.lines == 0 {
            return Err(ApiError::InvalidBatchLine {
                line: 1,
                message: "the file has no requests.".into(),
            });
        }
        Ok(self.checked)
    }
}
