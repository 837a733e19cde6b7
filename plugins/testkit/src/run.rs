//! Reading the case folders and driving a [`Provider`] through each.

use std::path::Path;

use serde_json::Value;
use wasmgate_plugin_sdk::{
    CanonicalRequest, HttpRequest, HttpResponse, NativeCall, Operation, PluginError, Prepared,
    Provider, ProviderConfig, RequestInfo, StreamDecoder, Usage,
};

use crate::compare::{diff, error_value, expected_error, expected_usage, usage_value};

/// Runs every case under `dir` (a folder per case) against provider `P`, configured under the
/// entry name `name`, and panics listing every case that failed.
pub fn run_cases<P: Provider>(dir: &str, name: &str) {
    let mut cases: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("cannot read {dir}: {err}"))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "no cases in {dir}");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let label = case.file_name()?.to_string_lossy().into_owned();
            run_case::<P>(case, name)
                .err()
                .map(|why| format!("case `{label}`: {why}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn read_json(path: &Path) -> Result<Option<Value>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|err| format!("{}: {err}", path.display())),
        Err(_) => Ok(None),
    }
}

fn operation(name: &str) -> Result<Operation, String> {
    Ok(match name {
        "chat-completions" => Operation::ChatCompletions,
        "embeddings" => Operation::Embeddings,
        "image-generations" => Operation::ImageGenerations,
        "list-models" => Operation::ListModels,
        "completions" => Operation::Completions,
        "moderations" => Operation::Moderations,
        "rerank" => Operation::Rerank,
        "audio-transcriptions" => Operation::AudioTranscriptions,
        "audio-translations" => Operation::AudioTranslations,
        "audio-speech" => Operation::AudioSpeech,
        other => return Err(format!("unknown operation `{other}`")),
    })
}

fn run_case<P: Provider>(case: &Path, name: &str) -> Result<(), String> {
    let request = read_json(&case.join("request.json"))?.ok_or("no request.json")?;
    let expected = read_json(&case.join("expected.json"))?.ok_or("no expected.json")?;
    let expected_upstream = read_json(&case.join("expected_upstream.json"))?;

    let config = config_of(name, request.get("config"));
    wasmgate_plugin_sdk::calls::validate::<P>(&config)
        .map_err(|err| format!("validate failed: {err:?}"))?;
    // A raw body keeps the client's exact text (spacing, escapes, number forms), which a
    // dialect body must reach the upstream with.
    let text = match request.get("raw_body").and_then(Value::as_str) {
        Some(raw) => raw.to_owned(),
        None => request
            .get("body")
            .cloned()
            .unwrap_or(Value::Null)
            .to_string(),
    };
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let native = request["native"].as_str().map(|dialect| NativeCall {
        dialect: dialect.to_owned(),
        route: request["route"].as_str().unwrap_or(dialect).to_owned(),
        params: Vec::new(),
    });
    let canonical = CanonicalRequest {
        native,
        operation: operation(request["operation"].as_str().unwrap_or("chat-completions"))?,
        model: body["model"].as_str().unwrap_or_default().to_owned(),
        body: text.clone(),
        stream: request["stream"].as_bool().unwrap_or(false),
        headers: string_pairs(request.get("headers")),
    };
    let info = canonical.info();
    let dialect = info.native.is_some();

    let http = match wasmgate_plugin_sdk::calls::prepare::<P>(&config, canonical) {
        Err(err) => return check_error(&expected, &err, "prepare"),
        Ok(Prepared::Local(completion)) => {
            let body: Value = serde_json::from_str(&completion.body)
                .map_err(|e| format!("local body is not JSON: {e}"))?;
            return check_body(&expected, &body, completion.usage.as_ref());
        }
        Ok(Prepared::LocalStream(output)) => {
            return check_events(&expected, &output.events, output.usage.as_ref(), None);
        }
        Ok(Prepared::Upstream(http)) => http,
        // The file part is the host's to attach; the case checks the request line and headers.
        Ok(Prepared::UpstreamForm(form)) => form.request,
        Ok(Prepared::UpstreamRaw(raw)) => raw.request,
    };
    let expected_upstream =
        expected_upstream.ok_or("prepare went upstream: no expected_upstream.json")?;
    check_upstream(&expected_upstream, &http)?;
    let rewritten = expected_upstream["body_rewritten"]
        .as_bool()
        .unwrap_or(false);
    if dialect && !rewritten && http.body != text.as_bytes() {
        return Err(format!(
            "a dialect body must go upstream unchanged: sent {}",
            String::from_utf8_lossy(&http.body)
        ));
    }

    if let Ok(stream) = std::fs::read(case.join("upstream_stream.txt")) {
        if dialect {
            check_passthrough::<P>(&config, &info, &stream)?;
        }
        return check_stream::<P>(&expected, &config, &info, &stream);
    }
    let response = read_reply(&case.join("upstream_response.json"))?;
    let sent = response.body.clone();
    match wasmgate_plugin_sdk::calls::parse_response::<P>(&config, &info, response) {
        Err(err) => check_error(&expected, &err, "parse_response"),
        Ok(completion) if dialect && completion.body.as_bytes() != sent => Err(format!(
            "a dialect answer must come back unchanged: got {}",
            completion.body
        )),
        Ok(completion) => {
            let body: Value = serde_json::from_str(&completion.body)
                .map_err(|e| format!("response body is not JSON: {e}"))?;
            check_body(&expected, &body, completion.usage.as_ref())
        }
    }
}

/// The upstream's reply. The body is taken as written in the file (a string body as its text),
/// so that key order and number formatting reach the plugin as an upstream would send them.
fn read_reply(path: &Path) -> Result<HttpResponse, String> {
    #[derive(serde::Deserialize)]
    struct Reply {
        status: Option<u16>,
        headers: Option<Value>,
        body: Box<serde_json::value::RawValue>,
    }
    let text = std::fs::read_to_string(path)
        .map_err(|_| "no upstream_response.json or upstream_stream.txt".to_owned())?;
    let reply: Reply =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let raw = reply.body.get();
    let body = match serde_json::from_str::<String>(raw) {
        Ok(text) => text.into_bytes(),
        Err(_) => raw.as_bytes().to_vec(),
    };
    Ok(HttpResponse {
        status: reply.status.unwrap_or(200),
        headers: string_pairs(reply.headers.as_ref()),
        body,
    })
}

fn config_of(name: &str, config: Option<&Value>) -> ProviderConfig {
    let field = |k: &str| config.and_then(|c| c.get(k));
    ProviderConfig {
        name: name.to_owned(),
        base_url: field("base_url").and_then(Value::as_str).map(str::to_owned),
        api_key: match field("api_key") {
            Some(Value::String(key)) => Some(key.clone()),
            Some(_) => None,
            None => Some("test-key".to_owned()),
        },
        models: field("models")
            .and_then(Value::as_array)
            .map(|m| {
                m.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        options: field("options").map_or_else(|| "{}".to_owned(), Value::to_string),
    }
}

fn string_pairs(value: Option<&Value>) -> Vec<(String, String)> {
    value
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .map(|(k, v)| {
                    (
                        k.to_ascii_lowercase(),
                        v.as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn check_upstream(expected: &Value, http: &HttpRequest) -> Result<(), String> {
    let want = |k: &str| expected[k].as_str().unwrap_or_default();
    if http.method != want("method") || http.url != want("url") {
        return Err(format!(
            "upstream request is {} {}, expected {} {}",
            http.method,
            http.url,
            want("method"),
            want("url")
        ));
    }
    for name in expected["absent_headers"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap_or_default();
        if http
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            return Err(format!("header `{name}` was sent, expected none"));
        }
    }
    for (name, value) in string_pairs(expected.get("headers")) {
        let sent: Vec<&str> = http
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(&name))
            .map(|(_, v)| v.as_str())
            .collect();
        if sent != [value.as_str()] {
            return Err(format!("header `{name}` is {sent:?}, expected [{value:?}]"));
        }
    }
    let body = if http.body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&http.body).map_err(|e| format!("upstream body is not JSON: {e}"))?
    };
    let want = expected.get("body").cloned().unwrap_or(Value::Null);
    diff(&want, &body, "upstream.body").map_or(Ok(()), Err)
}

fn check_error(expected: &Value, err: &PluginError, during: &str) -> Result<(), String> {
    let want = expected
        .get("error")
        .ok_or_else(|| format!("{during} failed unexpectedly: {err:?}"))?;
    diff(&expected_error(want), &error_value(err), "error").map_or(Ok(()), Err)
}

fn check_body(expected: &Value, body: &Value, usage: Option<&Usage>) -> Result<(), String> {
    let want = expected
        .get("body")
        .ok_or_else(|| format!("expected an error, got {body}"))?;
    diff(want, body, "body").map_or(Ok(()), Err)?;
    diff(
        &expected_usage(expected.get("usage")),
        &usage_value(usage),
        "usage",
    )
    .map_or(Ok(()), Err)
}

fn check_events(
    expected: &Value,
    events: &[String],
    usage: Option<&Usage>,
    error: Option<&PluginError>,
) -> Result<(), String> {
    let parsed: Result<Vec<Value>, String> = events
        .iter()
        .map(|e| serde_json::from_str(e).map_err(|err| format!("event {e} is not JSON: {err}")))
        .collect();
    let actual = Value::Array(parsed?);
    let want = expected
        .get("events")
        .cloned()
        .unwrap_or(Value::Array(vec![]));
    diff(&want, &actual, "events").map_or(Ok(()), Err)?;
    match error {
        Some(err) => check_error(expected, err, "the stream"),
        None if expected.get("error").is_some() => Err("the stream did not fail".to_owned()),
        None => diff(
            &expected_usage(expected.get("usage")),
            &usage_value(usage),
            "usage",
        )
        .map_or(Ok(()), Err),
    }
}

/// Decodes `chunks` as one stream: the events, the last usage reported, and the error it ended
/// with, if any.
fn replay<P: Provider>(
    config: &ProviderConfig,
    info: &RequestInfo,
    chunks: &[&[u8]],
) -> (Vec<String>, Option<Usage>, Option<PluginError>) {
    let headers = [("content-type".to_owned(), "text/event-stream".to_owned())];
    let mut decoder = P::Decoder::new(config.clone(), info.clone(), &headers);
    let (mut events, mut usage) = (Vec::new(), None);
    for i in 0..=chunks.len() {
        let result = match chunks.get(i) {
            Some(chunk) => decoder.push(chunk),
            None => decoder.finish(),
        };
        match result {
            Ok(out) => {
                events.extend(out.events);
                usage = out.usage.or(usage);
            }
            Err(err) => return (events, usage, Some(err)),
        }
    }
    (events, usage, None)
}

/// A dialect stream that completes: its events are the upstream's `data:` payloads, unchanged.
fn check_passthrough<P: Provider>(
    config: &ProviderConfig,
    info: &RequestInfo,
    body: &[u8],
) -> Result<(), String> {
    let (events, _, error) = replay::<P>(config, info, &[body]);
    if error.is_some() {
        return Ok(()); // an error case: `check_stream` compares what came before it
    }
    let text = String::from_utf8_lossy(body);
    let payloads: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .filter(|data| !data.trim().is_empty() && data.trim() != "[DONE]")
        .collect();
    if events != payloads {
        return Err(format!(
            "a dialect stream must pass through unchanged:\n  got {events:?}\n  sent {payloads:?}"
        ));
    }
    Ok(())
}

fn check_stream<P: Provider>(
    expected: &Value,
    config: &ProviderConfig,
    info: &RequestInfo,
    body: &[u8],
) -> Result<(), String> {
    let check = |chunks: &[&[u8]], how: &str| {
        let (events, usage, error) = replay::<P>(config, info, chunks);
        check_events(expected, &events, usage.as_ref(), error.as_ref())
            .map_err(|why| format!("stream fed {how}: {why}"))
    };
    check(&[body], "whole")?;
    for split in 0..=body.len() {
        let (a, b) = body.split_at(split);
        check(&[a, b], &format!("split at byte {split}"))?;
    }
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    check(&bytes, "byte by byte")
}
