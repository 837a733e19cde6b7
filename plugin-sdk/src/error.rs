//! Building [`PluginError`] and [`ConfigError`] values, and classifying upstream statuses.

use crate::{ConfigError, ErrorKind, PluginError};

impl PluginError {
    /// An error of `kind` with a client-facing `message` and no param, code or upstream status.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        PluginError {
            kind,
            message: message.into(),
            param: None,
            code: None,
            upstream_status: None,
        }
    }

    /// The request is malformed or asks for something the provider does not support (400).
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidRequest, message)
    }

    /// The upstream rejected the credentials (401).
    pub fn authentication(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Authentication, message)
    }

    /// The upstream refused access to the resource (403).
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::PermissionDenied, message)
    }

    /// The model or resource does not exist upstream (404).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    /// The upstream is rate limiting or out of quota (429).
    pub fn rate_limited(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::RateLimited, message)
    }

    /// The upstream failed or answered something that could not be understood (502).
    pub fn upstream(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Upstream, message)
    }

    /// The upstream did not answer in time (504).
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Timeout, message)
    }

    /// Names the request parameter at fault (OpenAI's `param`).
    #[must_use]
    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// Sets a machine-readable code (OpenAI's `code`).
    #[must_use]
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// Records the upstream's HTTP status; the host passes a 4xx on to the client as is.
    #[must_use]
    pub fn with_upstream_status(mut self, status: u16) -> Self {
        self.upstream_status = Some(status);
        self
    }
}

impl ConfigError {
    /// An error about the config entry as a whole.
    pub fn new(message: impl Into<String>) -> Self {
        ConfigError {
            key: None,
            message: message.into(),
        }
    }

    /// An error about one option, named by its dotted path inside `options` (or `base_url`, ...).
    pub fn at(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            key: Some(key.into()),
            message: message.into(),
        }
    }
}

/// The error class of an upstream HTTP status, by the meaning OpenAI gives to each.
pub fn error_kind_for_status(status: u16) -> ErrorKind {
    match status {
        401 => ErrorKind::Authentication,
        403 => ErrorKind::PermissionDenied,
        404 => ErrorKind::NotFound,
        429 => ErrorKind::RateLimited,
        408 | 504 => ErrorKind::Timeout,
        400..=499 => ErrorKind::InvalidRequest,
        // 5xx, and statuses that are not errors at all (1xx, 2xx, 3xx) but came as one: the
        // upstream misbehaved.
        0..=399 | 500..=u16::MAX => ErrorKind::Upstream,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_kinds() {
        let cases = [
            (400, ErrorKind::InvalidRequest),
            (401, ErrorKind::Authentication),
            (403, ErrorKind::PermissionDenied),
            (404, ErrorKind::NotFound),
            (408, ErrorKind::Timeout),
            (409, ErrorKind::InvalidRequest),
            (413, ErrorKind::InvalidRequest),
            (418, ErrorKind::InvalidRequest),
            (422, ErrorKind::InvalidRequest),
            (429, ErrorKind::RateLimited),
            (500, ErrorKind::Upstream),
            (502, ErrorKind::Upstream),
            (503, ErrorKind::Upstream),
            (504, ErrorKind::Timeout),
            (529, ErrorKind::Upstream),
        ];
        for (status, kind) in cases {
            assert_eq!(error_kind_for_status(status), kind, "status {status}");
        }
    }

    #[test]
    fn builders_set_fields() {
        let err = PluginError::invalid_request("bad")
            .with_param("messages")
            .with_code("c")
            .with_upstream_status(400);
        assert_eq!(err.kind, ErrorKind::InvalidRequest);
        assert_eq!(err.message, "bad");
        assert_eq!(err.param.as_deref(), Some("messages"));
        assert_eq!(err.code.as_deref(), Some("c"));
        assert_eq!(err.upstream_status, Some(400));
    }
}
