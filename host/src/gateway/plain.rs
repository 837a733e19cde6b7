//! An entry's plain plan (issue 38): the operations its plugin declared plain (`plain-operation`
//! in `wit/provider.wit`), each with the URL and headers the plugin would send, asked of it once
//! when the config loads, so that such a request is sent without an instance of the plugin.

use crate::plugins::{
    HttpRequest, Operation, PassthroughCall, PlainOperation, PluginCall, PluginFailure,
    ProviderConfig,
};

/// What the host sends for each plain operation of one entry. No `Debug`: it holds the key.
#[derive(Default)]
pub struct PlainPlan {
    routes: Vec<Route>,
}

struct Route {
    operation: Operation,
    url: String,
    /// `content-type` first, then the plugin's credentials, each replacing one of its name.
    headers: Vec<(String, String)>,
    /// The same with `accept: text/event-stream` after `content-type`, for a stream.
    stream_headers: Vec<(String, String)>,
}

impl PlainPlan {
    /// The plan for `declared`: each operation whose body the host holds as the upstream takes
    /// it (JSON), with the credentials `passthrough` gives for a `POST` to its path. An
    /// operation the plugin refuses a pass-through for, or whose path is not a plain relative
    /// one, stays with the plugin.
    pub async fn load(
        call: &mut PluginCall,
        config: &ProviderConfig,
        declared: Vec<PlainOperation>,
    ) -> Result<Self, PluginFailure> {
        let mut routes = Vec::with_capacity(declared.len());
        let base = config.base_url.as_deref().unwrap_or_default();
        for PlainOperation { operation, path } in declared {
            if !sent_as_json(operation) || !relative(&path) || base.is_empty() {
                tracing::warn!(provider = %config.name, path, "plain operation not taken");
                continue;
            }
            let asked = PassthroughCall {
                method: "POST".to_owned(),
                path: format!("/{path}"),
                headers: Vec::new(),
            };
            let auth = match call.passthrough(config, &asked).await? {
                Ok(auth) if auth.query.is_empty() => auth,
                // Query credentials and refusals stay with the plugin; the reason is its own.
                Ok(_) | Err(_) => continue,
            };
            let json = ("content-type".to_owned(), "application/json".to_owned());
            let sse = ("accept".to_owned(), "text/event-stream".to_owned());
            let headers = with_credentials(vec![json.clone()], &auth.headers);
            let stream_headers = with_credentials(vec![json, sse], &auth.headers);
            routes.push(Route {
                operation,
                url: format!("{}/{path}", base.trim_end_matches('/')),
                headers,
                stream_headers,
            });
        }
        Ok(Self { routes })
    }

    /// The upstream request for a non-native request of `operation` with canonical `body`
    /// (taken from there), if the operation is plain here.
    pub fn request(
        &self,
        operation: Operation,
        body: &mut String,
        stream: bool,
    ) -> Option<HttpRequest> {
        let route = self.routes.iter().find(|r| r.operation == operation)?;
        let headers = match stream {
            true => &route.stream_headers,
            false => &route.headers,
        };
        Some(HttpRequest {
            method: "POST".to_owned(),
            url: route.url.clone(),
            headers: headers.clone(),
            body: std::mem::take(body).into_bytes(),
        })
    }
}

/// Whether the host's canonical body of `operation` is what the upstream is sent: a JSON body.
/// An upload's body is its form's fields, speech answers in audio, and a model list is a `GET`.
fn sent_as_json(operation: Operation) -> bool {
    match operation {
        Operation::ChatCompletions
        | Operation::Embeddings
        | Operation::ImageGenerations
        | Operation::Completions
        | Operation::Moderations
        | Operation::Rerank => true,
        Operation::ListModels
        | Operation::AudioTranscriptions
        | Operation::AudioTranslations
        | Operation::AudioSpeech => false,
    }
}

/// A path below the base URL that stays there: segments with no dot segment, query, fragment,
/// backslash or percent sign (the URL guard checks each request again).
fn relative(path: &str) -> bool {
    !path.is_empty()
        && path
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
        && !path.contains(['?', '#', '\\', '%', '@'])
        && path.bytes().all(|b| b.is_ascii_graphic())
}

/// `headers` with each of `credentials` set, replacing one of the same name, as the plugin SDK
/// sets a header.
fn with_credentials(
    mut headers: Vec<(String, String)>,
    credentials: &[(String, String)],
) -> Vec<(String, String)> {
    for (name, value) in credentials {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        headers.push((name.clone(), value.clone()));
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_replace_a_header_of_their_name_in_place_of_order() {
        let headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("accept".to_owned(), "text/event-stream".to_owned()),
        ];
        let credentials = [
            ("authorization".to_owned(), "Bearer k".to_owned()),
            ("Accept".to_owned(), "x/y".to_owned()),
        ];
        let names: Vec<_> = with_credentials(headers, &credentials)
            .into_iter()
            .map(|(n, v)| format!("{n}: {v}"))
            .collect();
        assert_eq!(
            names,
            [
                "content-type: application/json",
                "authorization: Bearer k",
                "Accept: x/y"
            ]
        );
    }

    #[test]
    fn only_plain_relative_paths_are_taken() {
        for good in ["chat/completions", "v2/embed", "a-b_c.d/e"] {
            assert!(relative(good), "{good}");
        }
        for bad in [
            "", "/chat", "a//b", "../x", "a/./b", "a?b", "a#b", "a%2f", "a b", "u@h", "a\\b",
        ] {
            assert!(!relative(bad), "{bad}");
        }
    }
}
