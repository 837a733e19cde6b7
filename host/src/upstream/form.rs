//! Multipart uploads sent upstream: the text fields a provider plugin named, and the client's
//! file streamed from the chunks the host read it in (never joined into one copy).

use std::time::Duration;

use bytes::Bytes;
use reqwest::multipart::{Form, Part};

use super::{Admitted, UpstreamError, describe, header_map};

/// A file the client uploaded, as the chunks it arrived in.
#[derive(Debug, Default)]
pub struct Upload {
    /// The part's file name as the client sent it (bounded and printable: see `upload.rs`).
    pub file_name: String,
    /// The part's content type, if the client sent one.
    pub content_type: Option<String>,
    pub chunks: Vec<Bytes>,
}

impl Upload {
    pub fn len(&self) -> usize {
        self.chunks.iter().map(Bytes::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Sends `admitted` as a `multipart/form-data` request: `fields` as text parts, then `upload`
/// as the part named `file_field`. Its chunks are shared (`Bytes` clones), not copied, so that a
/// retry at another target can send them again.
pub async fn send_form(
    client: &reqwest::Client,
    admitted: Admitted,
    fields: Vec<(String, String)>,
    file_field: String,
    upload: &Upload,
    timeout: Duration,
) -> Result<reqwest::Response, UpstreamError> {
    let chunks: Vec<Result<Bytes, std::io::Error>> =
        upload.chunks.iter().cloned().map(Ok).collect();
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let file = FilePart {
        body,
        len: upload.len() as u64,
        file_name: upload.file_name.clone(),
        content_type: upload.content_type.clone(),
    };
    send_form_part(client, admitted, fields, file_field, file, timeout).await
}

/// A file part of a form: its body (streamed), length, name and content type.
pub struct FilePart {
    pub body: reqwest::Body,
    pub len: u64,
    pub file_name: String,
    pub content_type: Option<String>,
}

/// Sends `admitted` as a `multipart/form-data` request: `fields` as text parts, then `file` as
/// the part named `file_field`, streamed as its body yields.
pub async fn send_form_part(
    client: &reqwest::Client,
    admitted: Admitted,
    fields: Vec<(String, String)>,
    file_field: String,
    file: FilePart,
    timeout: Duration,
) -> Result<reqwest::Response, UpstreamError> {
    let Admitted { request, url } = admitted;
    let mut headers = header_map(request.headers)?;
    // reqwest writes the form's own, with its boundary.
    headers.remove(reqwest::header::CONTENT_TYPE);
    let mut form = Form::new();
    for (name, value) in fields {
        form = form.text(name, value);
    }
    let FilePart {
        body,
        len,
        file_name,
        content_type,
    } = file;
    let mut file = Part::stream_with_length(body, len).file_name(file_name);
    if let Some(content_type) = &content_type {
        file = file
            .mime_str(content_type)
            .map_err(|_| UpstreamError::InvalidRequest("bad file content type".to_owned()))?;
    }
    form = form.part(file_field, file);
    let method = reqwest::Method::from_bytes(request.method.as_bytes())
        .map_err(|_| UpstreamError::InvalidRequest(format!("bad method {:?}", request.method)))?;
    let send = client
        .request(method, url)
        .headers(headers)
        .multipart(form)
        .send();
    match tokio::time::timeout(timeout, send).await {
        Err(_) => Err(UpstreamError::Timeout(timeout)),
        Ok(Err(e)) if e.is_timeout() => Err(UpstreamError::Timeout(timeout)),
        Ok(Err(e)) => Err(UpstreamError::Connect(describe(e))),
        Ok(Ok(response)) => Ok(response),
    }
}
