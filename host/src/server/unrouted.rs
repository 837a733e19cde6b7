//! The errors of a request no route takes: a known path asked with another method, or no path
//! of the gateway's at all.

use axum::http::{Method, Uri};

use crate::error::ApiError;

pub(super) fn method_not_allowed(method: &Method, uri: &Uri) -> ApiError {
    ApiError::MethodNotAllowed {
        method: method.to_string(),
        path: uri.path().to_owned(),
    }
}

pub(super) fn unknown_route(method: &Method, uri: &Uri) -> ApiError {
    ApiError::UnknownRoute {
        method: method.to_string(),
        path: uri.path().to_owned(),
    }
}
