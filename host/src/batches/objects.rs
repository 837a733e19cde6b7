//! The objects clients see: files and batches as OpenAI's API reference defines them, with the
//! gateway's ids in place of the upstream's. The upstream's batch object is kept as it came but
//! for its ids; an output or error file it names becomes a gateway file of the batch's project
//! (its id derived from the upstream's, so that replicas that see it at once agree on it).

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::ledger::{StoredBatch, StoredFile};

/// Bytes of an upstream id, at most.
const UPSTREAM_ID_MAX: usize = 128;

/// A new gateway id: `prefix` and 24 random hex digits.
pub fn new_id(prefix: &str) -> String {
    format!(
        "{prefix}{}",
        &uuid::Uuid::new_v4().simple().to_string()[..24]
    )
}

/// The gateway id of an upstream's file, the same for every replica.
pub fn derived_file_id(project: &str, provider: &str, upstream_id: &str) -> String {
    let digest = Sha256::digest(format!("{project}\0{provider}\0{upstream_id}"));
    format!("file-{}", &hex::encode(digest)[..24])
}

/// An id an upstream gave, checked before it is kept or put into a URL.
pub fn upstream_id(provider: &str, value: Option<&Value>) -> Result<String, ApiError> {
    match value.and_then(Value::as_str) {
        Some(id)
            if !id.is_empty()
                && id.len() <= UPSTREAM_ID_MAX
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) =>
        {
            Ok(id.to_owned())
        }
        _ => Err(ApiError::BadUpstreamRequest {
            provider: provider.to_owned(),
            detail: "the upstream answered without a usable id".to_owned(),
        }),
    }
}

/// OpenAI's file object.
pub fn file_object(file: &StoredFile) -> Value {
    json!({
        "id": file.id,
        "object": "file",
        "bytes": file.bytes,
        "created_at": file.created_us / 1_000_000,
        "filename": file.filename,
        "purpose": file.purpose,
        "status": "processed",
        "expires_at": null,
        "status_details": null,
    })
}

/// OpenAI's list object over `data`, whose items have an `id`.
pub fn list(data: Vec<Value>, has_more: bool) -> Value {
    json!({
        "object": "list",
        "first_id": data.first().map(|v| v["id"].clone()),
        "last_id": data.last().map(|v| v["id"].clone()),
        "has_more": has_more,
        "data": data,
    })
}

/// Statuses after which a batch does not change.
pub fn is_terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "expired" | "cancelled")
}

/// The upstream's output and error files of a batch object, as gateway files to keep.
pub fn result_files(batch: &StoredBatch, object: &Value) -> Result<Vec<StoredFile>, ApiError> {
    let mut files = Vec::new();
    for field in ["output_file_id", "error_file_id"] {
        if object.get(field).is_none_or(Value::is_null) {
            continue;
        }
        let upstream = upstream_id(&batch.provider, object.get(field))?;
        files.push(StoredFile {
            project: batch.project.clone(),
            id: derived_file_id(&batch.project, &batch.provider, &upstream),
            provider: batch.provider.clone(),
            upstream_id: upstream,
            purpose: "batch_output".to_owned(),
            filename: format!("{}_{}.jsonl", batch.id, field.trim_end_matches("_file_id")),
            bytes: 0,
            created_us: crate::ledger::time::now_us(),
            model: Some(batch.model.clone()),
            ..StoredFile::default()
        });
    }
    Ok(files)
}

/// The upstream's batch object with the gateway's ids: the batch's own, its input file's, and
/// those of its output and error files.
pub fn batch_object(batch: &StoredBatch, mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.insert("id".into(), json!(batch.id));
        map.insert("input_file_id".into(), json!(batch.input_file_id));
        for field in ["output_file_id", "error_file_id"] {
            if let Some(Value::String(upstream)) = map.get(field) {
                let id = derived_file_id(&batch.project, &batch.provider, upstream);
                map.insert(field.into(), json!(id));
            }
        }
    }
    object
}
