//! Why a sign-in did not complete: fixed sentences, never what the provider or the browser sent.

/// Why a sign-in did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignInError {
    #[error("the sign-in was not started here or has expired; start again")]
    NoLoginInProgress,
    #[error("the state does not match the sign-in in progress")]
    BadState,
    #[error("the identity provider refused the sign-in")]
    ProviderRefused,
    #[error("the identity provider cannot be reached or answered unexpectedly")]
    ProviderUnavailable,
    #[error("the ID token is not signed by the identity provider")]
    BadSignature,
    #[error("the ID token is not for this gateway")]
    WrongAudience,
    #[error("the ID token is of another issuer")]
    WrongIssuer,
    #[error("the ID token has expired")]
    Expired,
    #[error("the ID token's nonce does not match the sign-in in progress")]
    BadNonce,
    #[error("the ID token is malformed or lacks a required claim")]
    MalformedToken,
    #[error("no role is granted to this account")]
    NoRole,
    #[error("the account's roles are too many to fit in a session")]
    TooManyRoles,
}

impl SignInError {
    /// Whether the provider, rather than what the browser sent, is at fault (a 502).
    pub fn upstream(self) -> bool {
        match self {
            Self::ProviderUnavailable => true,
            Self::NoLoginInProgress
            | Self::BadState
            | Self::ProviderRefused
            | Self::BadSignature
            | Self::WrongAudience
            | Self::WrongIssuer
            | Self::Expired
            | Self::BadNonce
            | Self::MalformedToken
            | Self::NoRole
            | Self::TooManyRoles => false,
        }
    }
}
