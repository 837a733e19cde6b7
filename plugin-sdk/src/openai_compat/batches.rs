//! OpenAI's Files and Batch APIs, for upstreams that run them (OpenAI, Azure OpenAI). A provider
//! says it does by listing [`DIALECT`] in `native-dialects`; the host then asks `prepare` for
//! each call with `native` set: `route` names the call, `params` its ids and fields, `body` a
//! JSON body where the call has one. The host does the network I/O (and streams files both
//! ways, never through the sandbox); the plugin only says where each call goes.
//!
//! | route | upstream | params |
//! |---|---|---|
//! | `files.create` | `POST files` (multipart; the host attaches the file as `file`) | `purpose`, then other form fields |
//! | `files.content` | `GET files/{file_id}/content` | `file_id` |
//! | `files.delete` | `DELETE files/{file_id}` | `file_id` |
//! | `batches.create` | `POST batches`, `body` as JSON | |
//! | `batches.retrieve` | `GET batches/{batch_id}` | `batch_id` |
//! | `batches.cancel` | `POST batches/{batch_id}/cancel` | `batch_id` |
//!
//! The ids are the upstream's own (the host maps its own to them); they go into the URL as one
//! escaped path segment each.

use crate::http::path_segment;
use crate::{CanonicalRequest, FormRequest, HttpRequest, PluginError, Prepared};

/// The name a provider lists in `native-dialects` to run OpenAI's Files and Batch APIs.
pub const DIALECT: &str = "openai-batches";

/// The upstream request for a Files or Batch API call, `url` making the URL of a path under the
/// API's root (`files`, `batches/{id}`); `None` when `request` is not such a call.
pub fn batch_call(
    request: &CanonicalRequest,
    url: impl Fn(&str) -> String,
) -> Option<Result<Prepared, PluginError>> {
    let call = request.native.as_ref().filter(|n| n.dialect == DIALECT)?;
    let param = |name: &str| -> Result<String, PluginError> {
        call.params
            .iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| path_segment(v))
            .ok_or_else(|| PluginError::invalid_request(format!("`{name}` is missing")))
    };
    let prepared = (|| {
        Ok(match call.route.as_str() {
            "files.create" => Prepared::UpstreamForm(FormRequest {
                request: HttpRequest::new("POST", url("files")),
                fields: call.params.clone(),
                file_field: "file".to_owned(),
            }),
            "files.content" => Prepared::Upstream(HttpRequest::get(url(&format!(
                "files/{}/content",
                param("file_id")?
            )))),
            "files.delete" => Prepared::Upstream(HttpRequest::new(
                "DELETE",
                url(&format!("files/{}", param("file_id")?)),
            )),
            "batches.create" => Prepared::Upstream(HttpRequest::post_json(
                url("batches"),
                request.body.clone().into_bytes(),
            )),
            "batches.retrieve" => Prepared::Upstream(HttpRequest::get(url(&format!(
                "batches/{}",
                param("batch_id")?
            )))),
            "batches.cancel" => Prepared::Upstream(HttpRequest::post_json(
                url(&format!("batches/{}/cancel", param("batch_id")?)),
                b"{}".to_vec(),
            )),
            other => {
                return Err(PluginError::invalid_request(format!(
                    "`{other}` is not a Files or Batch API call"
                )));
            }
        })
    })();
    Some(prepared)
}
