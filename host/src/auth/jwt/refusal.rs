//! Why a JWT was refused: each reason a fixed sentence, so that the 401 a client reads says
//! what was wrong without echoing any of the token.

/// Why a bearer token that looks like a JWT was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("it is not a well-formed JWT")]
    Malformed,
    #[error("unsigned tokens (`alg: none`) are never accepted")]
    Unsigned,
    #[error("its signing algorithm is not one its issuer is allowed")]
    AlgorithmNotAllowed,
    #[error("its issuer is not one this gateway trusts")]
    UnknownIssuer,
    #[error("its audience is not one this gateway accepts")]
    WrongAudience,
    #[error("it has expired")]
    Expired,
    #[error("it is not valid yet")]
    NotYetValid,
    #[error("its signature does not verify")]
    BadSignature,
    #[error("its key id is not in its issuer's key set")]
    UnknownKey,
    #[error("its issuer's key set could not be fetched; try again shortly")]
    KeysUnavailable,
    /// `.0` is a claim name of the gateway's own (the spec's, or one the config maps).
    #[error("it lacks the claim `{0}`")]
    MissingClaim(String),
    /// `.0` is a claim name of the gateway's own, never the token's value.
    #[error("its claim `{0}` is not of the form this gateway expects")]
    InvalidClaim(String),
    #[error("its limit claims are outside what a key may have")]
    LimitsOutOfBounds,
    #[error("it names a guard this gateway does not have")]
    UnknownGuard,
}

impl Refusal {
    /// The refusal for a claim named by the config (bounded: a config's claim names are at
    /// most 128 bytes, see `config/auth.rs`).
    pub(super) fn invalid(claim: &str) -> Self {
        Self::InvalidClaim(crate::clip::echo(claim).into_owned())
    }
}
