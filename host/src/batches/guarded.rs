//! A batch input file under request guards: each line's `body` (the request a live call would
//! send) is shown to them as any body is, and the file the gateway sends, or holds for a
//! provider that keeps no files, is the rewritten one. Nothing else of a line (`custom_id`,
//! which the results are matched by; `url`) is rewritten. A file of another purpose is not
//! read line by line, so under a request guard it is refused unless the guards' entries exempt
//! `files`.

use std::path::Path;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};

use super::lines::LINE_MAX;
use super::spool::{Spooled, next_line, spool_failed};
use crate::auth::Caller;
use crate::config::guards::BlindRoute;
use crate::error::ApiError;
use crate::gateway::Gateway;
use crate::pipeline::guard::body as body_guards;
use crate::state::AppState;

/// A file of a purpose other than `batch`, refused when a request guard applies to its caller
/// and does not exempt `files`.
pub fn other_purpose(gateway: &Gateway, caller: &Caller) -> Result<(), ApiError> {
    match body_guards::applying(gateway, caller, "")? {
        Some(guards) => guards.refuse_blind(
            gateway,
            BlindRoute::Files,
            "a file that is not a batch input file",
        ),
        None => Ok(()),
    }
}

/// `file`'s lines (checked already, so each is a JSON object) with their bodies through the
/// request guards that apply to `caller` and `model`: a new file if one rewrote a line.
pub async fn lines(
    state: &AppState,
    gateway: &Gateway,
    caller: &Caller,
    model: &str,
    file: Spooled,
    dir: &Path,
) -> Result<Spooled, ApiError> {
    let Some(guards) = body_guards::applying(gateway, caller, model)? else {
        return Ok(file);
    };
    let mut detached = body_guards::Detached::new(&state.telemetry);
    let mut checker = detached.checker(gateway);
    let (mut out, written) = Spooled::create(dir).await.map_err(spool_failed)?;
    let mut written = BufWriter::with_capacity(256 << 10, written);
    let reader = tokio::fs::File::open(&file.path)
        .await
        .map_err(spool_failed)?;
    let mut reader = BufReader::with_capacity(256 << 10, reader);
    let mut line = Vec::new();
    let mut changed = false;
    while let Some(text) =
        next_line(&mut (&mut reader).take(LINE_MAX as u64 + 1), &mut line).await?
    {
        let mut value: Value =
            serde_json::from_slice(text).map_err(|e| spool_failed(std::io::Error::other(e)))?;
        let rewritten = match value.get_mut("body") {
            Some(body) => {
                guards
                    .check(&mut checker, (model, "batch_line"), body)
                    .await?
            }
            None => false,
        };
        changed |= rewritten;
        let bytes = match rewritten {
            true => value.to_string().into_bytes(),
            false => text.to_vec(),
        };
        written.write_all(&bytes).await.map_err(spool_failed)?;
        written.write_all(b"\n").await.map_err(spool_failed)?;
        out.bytes += bytes.len() as u64 + 1;
    }
    written.flush().await.map_err(spool_failed)?;
    Ok(if changed { out } else { file })
}
