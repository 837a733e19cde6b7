//! The limit rules before a response runs: a client's `response.create` before it goes
//! upstream, and a response the upstream starts itself (a server VAD turn) as it starts, so
//! that no response of a session escapes the key's budgets and rate limits. A refusal is
//! recorded as the HTTP route's is; a spent budget ends the session.

use crate::error::ApiError;
use crate::pipeline::Context;
use crate::pipeline::finish::End;
use crate::plugins::DenialCode;

/// `cx` admitted by the limit rules, or the refusal (already recorded).
pub async fn admit(mut cx: Context) -> Result<Context, ApiError> {
    match crate::pipeline::admit::limits(&mut cx).await {
        Ok(()) => Ok(cx),
        Err(error) => {
            cx.finish(End::Failed(&error)).wait().await;
            Err(error)
        }
    }
}

/// Whether a refusal ends the session: a spent budget (`insufficient_quota`) will refuse every
/// later response too; a rate limit passes.
pub fn ends_the_session(error: &ApiError) -> bool {
    matches!(
        error,
        ApiError::LimitExceeded(denial) if matches!(denial.code, DenialCode::InsufficientQuota)
    )
}
