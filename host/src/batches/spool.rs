//! An upload on its way upstream: the client's multipart body read as it arrives into a file in
//! `batches.spool_dir` (never held in memory), up to `batches.max_file_bytes`; then, for a
//! batch input file, its lines checked one by one into a second file, rewritten as the upstream
//! takes them. Only a file whose every line passed is sent, so a refusal at line N sends
//! nothing. Each file is removed when dropped.

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{HeaderMap, header};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};

use super::lines::{LINE_MAX, LineChecker};
use crate::clip::clip;
use crate::error::ApiError;

/// Bytes of a text field (`purpose`, `expires_after[...]`) or a file name kept, at most.
const TEXT_MAX: usize = 256;
/// Text fields of the form, at most.
const FIELDS_MAX: usize = 16;

/// A file in the spool directory, removed when dropped.
pub struct Spooled {
    pub path: PathBuf,
    pub bytes: u64,
}

impl Drop for Spooled {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Spooled {
    fn create_path(dir: &Path) -> PathBuf {
        dir.join(format!("wasmgate-upload-{}", uuid::Uuid::new_v4().simple()))
    }

    /// A new empty file in `dir`, open for writing.
    pub async fn create(dir: &Path) -> std::io::Result<(Self, tokio::fs::File)> {
        let path = Self::create_path(dir);
        let file = tokio::fs::File::create(&path).await?;
        Ok((Self { path, bytes: 0 }, file))
    }
}

/// A `POST /v1/files` form, read.
pub struct Form {
    pub purpose: String,
    /// The other text fields (`expires_after[anchor]`, ...), passed on as they came.
    pub fields: Vec<(String, String)>,
    pub filename: String,
    pub file: Spooled,
}

fn invalid(param: &str, message: impl Into<String>) -> ApiError {
    ApiError::InvalidField {
        param: param.to_owned(),
        message: message.into(),
    }
}

pub(super) fn spool_failed(e: std::io::Error) -> ApiError {
    ApiError::SpoolFailed(e.to_string())
}

/// The next line of `reader`, read into `line` and given back without its `\n`; `None` at the
/// end.
pub(super) async fn next_line<'a>(
    reader: &mut (impl tokio::io::AsyncBufRead + Unpin),
    line: &'a mut Vec<u8>,
) -> Result<Option<&'a [u8]>, ApiError> {
    line.clear();
    if reader.read_until(b'\n', line).await.map_err(spool_failed)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.strip_suffix(b"\n").unwrap_or(line)))
}

/// Reads the form of `POST /v1/files`: `purpose` and `file` are required.
pub async fn read_form(
    headers: &HeaderMap,
    body: Body,
    dir: &Path,
    max_bytes: u64,
) -> Result<Form, ApiError> {
    let boundary = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| multer::parse_boundary(v).ok())
        .ok_or_else(|| {
            invalid(
                "file",
                "This endpoint takes a multipart/form-data body with `purpose` and `file`.",
            )
        })?;
    let mut form = multer::Multipart::new(body.into_data_stream(), boundary);
    let malformed =
        |e: multer::Error| invalid("file", format!("The multipart body is malformed: {e}."));
    let mut purpose = None;
    let mut fields = Vec::new();
    let mut file: Option<(String, Spooled)> = None;
    while let Some(mut field) = form.next_field().await.map_err(malformed)? {
        let name = clip(field.name().unwrap_or_default(), TEXT_MAX).into_owned();
        if name == "file" {
            if file.is_some() {
                return Err(invalid("file", "The form has more than one `file`."));
            }
            let filename = clip(field.file_name().unwrap_or("upload.jsonl"), TEXT_MAX).into_owned();
            let path = Spooled::create_path(dir);
            let out = tokio::fs::File::create(&path).await.map_err(spool_failed)?;
            let mut spooled = Spooled { path, bytes: 0 };
            let mut out = BufWriter::with_capacity(256 << 10, out);
            while let Some(chunk) = field.chunk().await.map_err(malformed)? {
                spooled.bytes += chunk.len() as u64;
                if spooled.bytes > max_bytes {
                    return Err(ApiError::BodyTooLarge(
                        usize::try_from(max_bytes).unwrap_or(usize::MAX),
                    ));
                }
                out.write_all(&chunk).await.map_err(spool_failed)?;
            }
            out.flush().await.map_err(spool_failed)?;
            file = Some((filename, spooled));
            continue;
        }
        if fields.len() == FIELDS_MAX {
            return Err(invalid("file", "The form has too many fields."));
        }
        let mut text = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(malformed)? {
            text.extend_from_slice(&chunk);
            if text.len() > TEXT_MAX {
                return Err(invalid(&name, format!("`{name}` is too long.")));
            }
        }
        let text = String::from_utf8(text)
            .map_err(|_| invalid(&name, format!("`{name}` is not UTF-8 text.")))?;
        if name == "purpose" {
            purpose = Some(text);
        } else {
            fields.push((name, text));
        }
    }
    let purpose = purpose.ok_or_else(|| invalid("purpose", "`purpose` is required."))?;
    let (filename, file) = file.ok_or_else(|| invalid("file", "`file` is required."))?;
    Ok(Form {
        purpose,
        fields,
        filename,
        file,
    })
}

/// Checks every line of `input` and writes them, rewritten, to a new spooled file.
pub async fn check_lines(
    input: &Spooled,
    dir: &Path,
    checker: &mut LineChecker<'_>,
) -> Result<Spooled, ApiError> {
    let reader = tokio::fs::File::open(&input.path)
        .await
        .map_err(spool_failed)?;
    let mut reader = BufReader::with_capacity(256 << 10, reader);
    let path = Spooled::create_path(dir);
    let out = tokio::fs::File::create(&path).await.map_err(spool_failed)?;
    let mut spooled = Spooled { path, bytes: 0 };
    let mut out = BufWriter::with_capacity(256 << 10, out);
    let mut line = Vec::new();
    while let Some(text) =
        next_line(&mut (&mut reader).take(LINE_MAX as u64 + 1), &mut line).await?
    {
        if text.len() > LINE_MAX {
            return Err(ApiError::InvalidBatchLine {
                line: checker.next_line(),
                message: format!("longer than {} MiB.", LINE_MAX >> 20),
            });
        }
        if let Some(rewritten) = checker.line(text)? {
            out.write_all(rewritten.as_bytes())
                .await
                .map_err(spool_failed)?;
            out.write_all(b"\n").await.map_err(spool_failed)?;
            spooled.bytes += rewritten.len() as u64 + 1;
        }
    }
    out.flush().await.map_err(spool_failed)?;
    Ok(spooled)
}

/// The spooled file as a request body, read in chunks as the upstream takes them.
pub async fn body(file: &Spooled) -> Result<reqwest::Body, ApiError> {
    let reader = tokio::fs::File::open(&file.path)
        .await
        .map_err(spool_failed)?;
    let stream = tokio_util::io::ReaderStream::with_capacity(reader, 256 << 10);
    Ok(reqwest::Body::wrap_stream(stream))
}
