//! Pass-through routes: `<prefix>/<entry>/<path>` (`passthrough.prefix`, `/passthrough` by
//! default) reaches an endpoint the gateway does not model (fine-tuning, vector stores, a
//! provider's own API) at provider entry `<entry>`'s base URL, with the gateway's keys, limits
//! and records:
//!
//! 1. the gateway key is checked ([`super::auth`]);
//! 2. the path and query are checked ([`path`]) and the caller must be allowed the route (its
//!    key's `passthrough` patterns, else the config's `passthrough.allow`; none by default);
//! 3. the limit rules check it as a request to model `<entry>` ([`super::admit::limits`]);
//! 4. the entry's provider plugin says how its upstream takes keys (`passthrough`), so the
//!    host never writes a provider's auth; the joined URL passes the URL guard;
//! 5. the body streams to the upstream as it arrives, and the answer streams back
//!    ([`answer`]); under a request or answer guard, either is read whole and shown to the
//!    guards first ([`guarded`]). The answer's usage is read by the plugin from its end
//!    (`passthrough-usage`) for the record, which `finish` writes as for any request
//!    (operation `passthrough`).
//!
//! Headers cross as [`headers`] says; with no guard, nothing is buffered whole either way.

mod answer;
mod credentials;
mod guarded;
mod headers;
mod path;
pub mod socket;
pub mod upstream_socket;

use axum::body::Body;
use axum::http::{HeaderMap, Method};
use futures_util::TryStreamExt;

pub use answer::Forwarded;
pub use credentials::{credentials, header_map};

use super::context::{Context, Incoming};
use super::finish::End;
use crate::error::ApiError;
use crate::gateway::Target;
use crate::pipeline::guard::body as body_guards;
use crate::plugins::{HttpRequest, PassthroughCall};
use crate::state::AppState;

/// Where a pass-through request goes: `/<entry>/<path>` (the part after the prefix) and the
/// query, as the client sent them.
pub struct Destination<'a> {
    pub method: &'a Method,
    pub rest: &'a str,
    pub query: Option<&'a str>,
}

/// Runs one pass-through request to its answer, or to the error the client gets. Either way
/// it is recorded.
pub async fn run(
    state: &AppState,
    incoming: Incoming,
    to: Destination<'_>,
) -> Result<Forwarded, ApiError> {
    let mut cx = Context::passthrough(state, &incoming);
    let sent = match send(state, &mut cx, incoming, &to).await {
        Ok((response, provider, call)) if cx.guard.answer_guarded() => {
            guarded::answer(state, &mut cx, response.into(), provider)
                .await
                .map(|upstream| (upstream, provider, call))
        }
        Ok((response, provider, call)) => Ok((response.into(), provider, call)),
        Err(error) => Err(error),
    };
    match sent {
        Ok((upstream, provider, call)) => Ok(answer::relay(cx, upstream, provider, call)),
        Err(error) => {
            cx.finish(End::Failed(&error)).wait().await;
            Err(error)
        }
    }
}

/// The stages up to the upstream's answer: its status and headers, the body still to come.
async fn send(
    state: &AppState,
    cx: &mut Context,
    incoming: Incoming,
    to: &Destination<'_>,
) -> Result<(reqwest::Response, usize, PassthroughCall), ApiError> {
    if state.ledger.is_full() {
        return Err(ApiError::LedgerFull);
    }
    super::auth::auth(state, cx, &incoming.headers).await?;
    let bad = |e: path::BadPath| ApiError::InvalidField {
        param: "path".to_owned(),
        message: format!("The pass-through path {e}."),
    };
    let (entry, rest) = split_entry(to.rest).ok_or_else(|| bad(path::BadPath::Length))?;
    let path = path::check_path(rest).map_err(bad)?;
    let query = to.query.map(path::check_query).transpose().map_err(bad)?;
    let gateway = std::sync::Arc::clone(&cx.gateway);
    let allowed =
        cx.caller
            .limits
            .allows_passthrough(&gateway.config.passthrough.allow, entry, path);
    if !allowed {
        cx.trace.denied("passthrough_not_allowed");
        return Err(ApiError::PassthroughNotAllowed(format!("{entry}{path}")));
    }
    let unknown = || ApiError::UnknownRoute {
        method: to.method.to_string(),
        path: format!("{}{}", gateway.config.passthrough.prefix, to.rest),
    };
    let index = gateway
        .providers
        .iter()
        .position(|p| &*p.name == entry)
        .ok_or_else(unknown)?;
    let provider = &gateway.providers[index];
    let base = provider.config.base_url.as_deref().ok_or_else(unknown)?;
    cx.request.model = entry.to_owned();
    cx.trying(&Target {
        provider,
        model: "",
    });
    super::admit::limits(cx).await?;
    crate::pipeline::guard::answer::pick(cx, entry)?;

    let forwarded = headers::to_upstream(&incoming.headers);
    let (forwarded, query, body) = match body_guards::applying(&gateway, &cx.caller, entry)? {
        None => {
            let body = limited(incoming.body, state.max_body_bytes, &incoming.headers)?;
            (forwarded, query.map(str::to_owned), body)
        }
        Some(guards) => {
            let parts = guarded::Parts {
                entry,
                client_headers: &incoming.headers,
                headers: forwarded,
                query,
            };
            let out = guarded::guarded(state, cx, &guards, parts, incoming.body).await?;
            (out.headers, out.query, reqwest::Body::from(out.body))
        }
    };
    let call = PassthroughCall {
        method: to.method.as_str().to_owned(),
        path: path.to_owned(),
        headers: forwarded,
    };
    let auth = credentials(provider, &call, &cx.redactor).await?;
    let url = join(base, path, query.as_deref(), &auth.query);
    let admitted = provider
        .scope
        .admit(HttpRequest {
            method: call.method.clone(),
            url,
            headers: Vec::new(),
            body: Vec::new(),
        })
        .map_err(|refusal| bad(refusal.into()))?;
    let upstream_headers = header_map(&call.headers, auth.headers, &provider.name)?;
    let mut span = cx.trace.stage("upstream");
    let response = span
        .scope(crate::upstream::send_streaming(
            &state.http,
            admitted,
            upstream_headers,
            body,
            provider.timeout,
        ))
        .await
        .map_err(|e| ApiError::upstream(&provider.name, e))?;
    span.set(
        "http.response.status_code",
        i64::from(response.status().as_u16()),
    );
    Ok((response, index, call))
}

/// `/<entry>/<path>` split into the entry's name and the path (with its leading `/`).
fn split_entry(rest: &str) -> Option<(&str, &str)> {
    let rest = rest.strip_prefix('/')?;
    let cut = rest.find('/')?;
    let (entry, path) = rest.split_at(cut);
    let named = !entry.is_empty()
        && !entry.starts_with('.')
        && entry.len() <= 128
        && entry
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    named.then_some((entry, path))
}

/// The upstream URL: the base, the checked path, and the client's query without the
/// parameters the plugin sets, then the plugin's.
fn join(base: &str, path: &str, query: Option<&str>, added: &[(String, String)]) -> String {
    let mut url = format!("{}{path}", base.trim_end_matches('/'));
    let kept = query
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let name = pair.split('=').next().unwrap_or_default();
            let name: String = form_urlencoded::parse(name.as_bytes())
                .map(|(k, _)| k.into_owned())
                .collect();
            !added.iter().any(|(n, _)| *n == name)
        });
    let mut parts: Vec<String> = kept.map(str::to_owned).collect();
    if !added.is_empty() {
        let mut serializer = form_urlencoded::Serializer::new(String::new());
        serializer.extend_pairs(added);
        parts.push(serializer.finish());
    }
    if !parts.is_empty() {
        url.push('?');
        url.push_str(&parts.join("&"));
    }
    url
}

/// The client's body as it arrives, refused past `max` bytes: at once when its
/// `content-length` says so, else when the bytes counted pass it (the upstream request then
/// fails).
fn limited(body: Body, max: usize, headers: &HeaderMap) -> Result<reqwest::Body, ApiError> {
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(ApiError::BodyTooLarge(max));
    }
    let mut seen = 0usize;
    let stream = body
        .into_data_stream()
        .map_err(std::io::Error::other)
        .and_then(move |bytes| {
            seen += bytes.len();
            let over = seen > max;
            async move {
                if over {
                    Err(std::io::Error::other("the request body exceeds the limit"))
                } else {
                    Ok(bytes)
                }
            }
        });
    Ok(reqwest::Body::wrap_stream(stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_is_the_first_segment() {
        assert_eq!(split_entry("/openai/files"), Some(("openai", "/files")));
        assert_eq!(split_entry("/openai"), None);
        assert_eq!(split_entry("//files"), None);
        assert_eq!(split_entry("/op%2fenai/files"), None);
        assert_eq!(split_entry("/../files"), None);
    }

    #[test]
    fn the_plugins_query_replaces_the_clients() {
        let added = [("key".to_owned(), "s&cret".to_owned())];
        assert_eq!(
            join(
                "http://h/v1beta/",
                "/models",
                Some("key=mine&pageSize=5"),
                &added
            ),
            "http://h/v1beta/models?pageSize=5&key=s%26cret"
        );
        assert_eq!(
            join("http://h/v1", "/files", None, &[]),
            "http://h/v1/files"
        );
        assert_eq!(
            join("http://h/v1", "/files", Some("purpose=batch"), &[]),
            "http://h/v1/files?purpose=batch"
        );
    }
}
