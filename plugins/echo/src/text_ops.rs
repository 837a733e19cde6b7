//! Text completions, moderations and rerank, answered locally: a completion echoes its prompt
//! (streamed word by word when asked), a moderation flags nothing, and rerank orders the
//! documents by the words they share with the query, billed as one search.

use serde_json::{Value, json};
use wasmgate_plugin_sdk::{
    CanonicalRequest, Completion, PluginError, Prepared, StreamOutput, Usage, count_tokens,
};

use crate::bad_param;

/// The prompt's texts (a string, or an array of strings).
fn prompts(body: &Value) -> Result<Vec<&str>, PluginError> {
    match body.get("prompt") {
        Some(Value::String(text)) => Ok(vec![text.as_str()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| bad_param("prompt", "the echo provider takes text prompts"))
            })
            .collect(),
        _ => Err(bad_param("prompt", "`prompt` is required")),
    }
}

/// `text_completion` answers: each prompt echoed back as its choice.
pub fn completion(
    request: &CanonicalRequest,
    body: &Value,
    created: u64,
) -> Result<Prepared, PluginError> {
    let prompts = prompts(body)?;
    let tokens: u64 = prompts.iter().map(|p| u64::from(count_tokens(p))).sum();
    let usage = Usage::tokens(tokens, tokens);
    let base = |choices: Value| {
        json!({"id": "cmpl-echo", "object": "text_completion", "created": created,
               "model": request.model, "choices": choices})
    };
    if !request.stream {
        let choices: Vec<Value> = prompts
            .iter()
            .enumerate()
            .map(|(i, p)| json!({"text": p, "index": i, "logprobs": null, "finish_reason": "stop"}))
            .collect();
        let mut body = base(Value::Array(choices));
        body["usage"] = json!({"prompt_tokens": tokens, "completion_tokens": tokens,
                               "total_tokens": 2 * tokens});
        return Ok(Prepared::Local(Completion {
            body: body.to_string(),
            usage: Some(usage),
        }));
    }
    let mut events = Vec::new();
    for (i, prompt) in prompts.iter().enumerate() {
        for word in prompt.split_inclusive(' ') {
            let choice = json!({"text": word, "index": i, "logprobs": null, "finish_reason": null});
            events.push(base(json!([choice])).to_string());
        }
        let end = json!({"text": "", "index": i, "logprobs": null, "finish_reason": "stop"});
        events.push(base(json!([end])).to_string());
    }
    let mut last = base(json!([]));
    last["usage"] = json!({"prompt_tokens": tokens, "completion_tokens": tokens,
                           "total_tokens": 2 * tokens});
    events.push(last.to_string());
    Ok(Prepared::LocalStream(StreamOutput {
        events,
        usage: Some(usage),
    }))
}

/// A moderation that flags nothing, one result per input.
pub fn moderation(request: &CanonicalRequest, body: &Value) -> Result<Completion, PluginError> {
    let inputs = match body.get("input") {
        Some(Value::String(_)) => 1,
        Some(Value::Array(items)) if !items.is_empty() => items.len(),
        _ => return Err(bad_param("input", "`input` is required")),
    };
    let categories = ["harassment", "hate", "self-harm", "sexual", "violence"];
    let flags: serde_json::Map<String, Value> = categories
        .iter()
        .map(|c| ((*c).to_owned(), json!(false)))
        .collect();
    let scores: serde_json::Map<String, Value> = categories
        .iter()
        .map(|c| ((*c).to_owned(), json!(0.0)))
        .collect();
    let result = json!({"flagged": false, "categories": flags, "category_scores": scores});
    let body = json!({"id": "modr-echo", "model": request.model, "results": vec![result; inputs]});
    Ok(Completion {
        body: body.to_string(),
        usage: Some(Usage::default()),
    })
}

/// Documents ordered by the query words they contain, in Cohere's v2 shape.
pub fn rerank(body: &Value) -> Result<Completion, PluginError> {
    let query = body
        .get("query")
        .and_then(Value::as_str)
        .ok_or_else(|| bad_param("query", "`query` is required"))?
        .to_lowercase();
    let documents = body
        .get("documents")
        .and_then(Value::as_array)
        .ok_or_else(|| bad_param("documents", "`documents` is required"))?;
    let words: Vec<&str> = query.split_whitespace().collect();
    let mut scores: Vec<(usize, f64)> = documents
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let text = d.as_str().unwrap_or_default().to_lowercase();
            let shared = words.iter().filter(|w| text.contains(**w)).count();
            (i, shared as f64 / words.len().max(1) as f64)
        })
        .collect();
    scores.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    if let Some(n) = body.get("top_n").and_then(Value::as_u64) {
        scores.truncate(usize::try_from(n).unwrap_or(usize::MAX));
    }
    let results: Vec<Value> = scores
        .iter()
        .map(|(i, s)| json!({"index": i, "relevance_score": s}))
        .collect();
    let body = json!({"id": "rerank-echo", "results": results,
                      "meta": {"billed_units": {"search_units": 1}}});
    Ok(Completion {
        body: body.to_string(),
        usage: Some(Usage {
            search_units: 1,
            ..Usage::default()
        }),
    })
}
