//! The operator's console at `/ui/`: static files built into the binary (`host/ui/`), served
//! with a strict Content-Security-Policy. The page holds no data of its own: it asks the
//! `/usage/*` APIs (or, signed in with an admin key, `/admin/keys` and `/admin/audit`) with the
//! key its user signs in with, or with the session of a sign-in through `console.oidc` (see
//! `console_sign_in`), so these routes need no key.

use std::sync::LazyLock;

use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use sha2::{Digest, Sha256};

use super::routes::{Outbound, Table, methods};
use crate::error::ApiError;

/// Only this origin, for everything: no inline script or style, no frame, no plugin, no form
/// sent anywhere. uPlot styles its elements through the CSSOM, which `style-src` allows.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
     connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const SVG: &str = "image/svg+xml";
const TEXT: &str = "text/plain; charset=utf-8";

/// Every file of the console: its path under `/ui/`, content type and bytes.
const FILES: &[(&str, &str, &[u8])] = &[
    ("index.html", HTML, include_bytes!("../../ui/index.html")),
    ("app.css", CSS, include_bytes!("../../ui/app.css")),
    ("app.js", JS, include_bytes!("../../ui/app.js")),
    ("api.js", JS, include_bytes!("../../ui/api.js")),
    ("format.js", JS, include_bytes!("../../ui/format.js")),
    ("charts.js", JS, include_bytes!("../../ui/charts.js")),
    ("tables.js", JS, include_bytes!("../../ui/tables.js")),
    ("log.js", JS, include_bytes!("../../ui/log.js")),
    ("keys.js", JS, include_bytes!("../../ui/keys.js")),
    ("audit.js", JS, include_bytes!("../../ui/audit.js")),
    ("icon.svg", SVG, include_bytes!("../../ui/icon.svg")),
    (
        "vendor/uPlot.iife.min.js",
        JS,
        include_bytes!("../../ui/vendor/uPlot.iife.min.js"),
    ),
    (
        "vendor/uPlot.min.css",
        CSS,
        include_bytes!("../../ui/vendor/uPlot.min.css"),
    ),
    (
        "vendor/uPlot.LICENSE",
        TEXT,
        include_bytes!("../../ui/vendor/uPlot.LICENSE"),
    ),
];

/// Each file's ETag, hashed once.
static ETAGS: LazyLock<Vec<HeaderValue>> = LazyLock::new(|| {
    FILES
        .iter()
        .map(|(_, _, bytes)| {
            let digest = Sha256::digest(bytes);
            HeaderValue::from_str(&format!("\"{}\"", hex::encode(&digest[..12])))
                .unwrap_or(HeaderValue::from_static("\"\""))
        })
        .collect()
});

/// The console's routes; mounted by [`super::app`].
pub fn routes(table: Table) -> Table {
    // The page asks `/usage/*` with its user's key.
    let page = Outbound::Nothing("the console's static files");
    table
        .route(
            "/ui",
            methods().get(page, || async { Redirect::permanent("/ui/") }),
        )
        .route("/ui/", methods().get(page, index))
        .route("/ui/{*file}", methods().get(page, file))
}

async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers).unwrap_or_else(IntoResponse::into_response)
}

async fn file(uri: Uri, headers: HeaderMap) -> Response {
    let path = uri.path();
    let name = path.strip_prefix("/ui/").unwrap_or(path);
    match serve(name, &headers) {
        Ok(response) => response,
        Err(not_found) => not_found.into_response(),
    }
}

fn serve(name: &str, headers: &HeaderMap) -> Result<Response, ApiError> {
    let Some(at) = FILES.iter().position(|(path, _, _)| *path == name) else {
        return Err(ApiError::UnknownRoute {
            method: "GET".to_owned(),
            path: format!("/ui/{name}"),
        });
    };
    let (_, content_type, bytes) = FILES[at];
    let etag = ETAGS[at].clone();
    let fresh = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| tag.trim() == etag.to_str().unwrap_or_default() || tag.trim() == "*");
    let common = [
        (header::ETAG, etag),
        // Revalidated on every load (a 304 when unchanged), so an upgraded gateway's page is
        // never mixed with an older one's scripts.
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (
            HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ),
    ];
    if fresh {
        return Ok((StatusCode::NOT_MODIFIED, common).into_response());
    }
    Ok((
        common,
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        bytes,
    )
        .into_response())
}
