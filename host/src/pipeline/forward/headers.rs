//! Which headers cross a pass-through route, each way. Hop-by-hop headers (RFC 9110 §7.6.1)
//! belong to one connection; the gateway's own (its key, the project, `x-wasmgate-*`) never
//! reach the upstream, and the upstream's cookies and connection details never reach the client.

use axum::http::{HeaderMap, HeaderName, HeaderValue};

/// Headers of one connection, never forwarded either way.
const HOP_BY_HOP: [&str; 10] = [
    "connection",
    "expect",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Client headers that are the gateway's, or that describe the client's connection to it; and
/// `accept-encoding`, so that the answer arrives as text whose usage can be read.
const GATEWAY_OWN: [&str; 13] = [
    "accept-encoding",
    "host",
    "authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "x-project-id",
    "cookie",
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-real-ip",
];

/// Upstream headers the client does not get: its cookies, and what the gateway sets itself.
const UPSTREAM_OWN: [&str; 3] = ["set-cookie", "content-length", "x-request-id"];

/// Client headers a pass-through request forwards at most (a request head is bounded by the
/// server already; this bounds what the plugin is handed).
const FORWARDED_MAX: usize = 64;

/// The client's headers to send upstream: the hop-by-hop ones, those `Connection` names and
/// the gateway's own removed; lower-cased names, values that are text.
pub fn to_upstream(headers: &HeaderMap) -> Vec<(String, String)> {
    let named = connection_named(headers);
    headers
        .iter()
        .filter(|(name, _)| {
            let name = name.as_str();
            !HOP_BY_HOP.contains(&name)
                && !GATEWAY_OWN.contains(&name)
                && !name.starts_with("x-wasmgate-")
                && !named.iter().any(|n| n == name)
        })
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .take(FORWARDED_MAX)
        .collect()
}

/// The upstream's headers to send the client: hop-by-hop, cookies and those the gateway sets
/// removed.
pub fn to_client(headers: &reqwest::header::HeaderMap) -> Vec<(HeaderName, HeaderValue)> {
    let named = connection_named(headers);
    headers
        .iter()
        .filter(|(name, _)| {
            let name = name.as_str();
            !HOP_BY_HOP.contains(&name)
                && !UPSTREAM_OWN.contains(&name)
                && !name.starts_with("x-wasmgate-")
                && !named.iter().any(|n| n == name)
        })
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// The headers a `Connection` header names, which are hop-by-hop too.
fn connection_named(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all("connection")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|n| n.trim().to_ascii_lowercase())
        .filter(|n| !n.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_gateway_and_hop_by_hop_headers_stay_behind() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer wg_secret"),
            ("x-api-key", "wg_secret"),
            ("x-project-id", "p"),
            ("x-wasmgate-cache", "off"),
            ("connection", "keep-alive, x-private"),
            ("x-private", "1"),
            ("transfer-encoding", "chunked"),
            ("host", "gateway"),
            ("content-type", "application/json"),
            ("openai-beta", "assistants=v2"),
        ] {
            headers.append(name, HeaderValue::from_static(value));
        }
        let sent = to_upstream(&headers);
        let names: Vec<&str> = sent.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["content-type", "openai-beta"]);

        let mut answer = reqwest::header::HeaderMap::new();
        for (name, value) in [
            ("set-cookie", "s=1"),
            ("connection", "close"),
            ("content-type", "application/json"),
            ("openai-processing-ms", "12"),
            ("x-wasmgate-provider", "spoofed"),
        ] {
            answer.append(name, HeaderValue::from_static(value));
        }
        let got = to_client(&answer);
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["content-type", "openai-processing-ms"]);
    }
}
