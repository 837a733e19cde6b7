//! Embeddings: `embedContent` and `batchEmbedContents` as canonical embeddings requests, and
//! OpenAI's embeddings `list` back as `{"embedding": {"values"}}` or `{"embeddings": [...]}`.

use serde::Deserialize;
use serde_json::{Value, json};
use wasmgate_plugin_sdk::canonical::Dropped;
use wasmgate_plugin_sdk::{Canonical, Decoded, Failure, Framing};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EmbedRequest {
    content: Content,
    output_dimensionality: Option<u32>,
    task_type: Option<String>,
    title: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
struct Part {
    text: Option<String>,
}

#[derive(Deserialize)]
struct Batch {
    requests: Vec<EmbedRequest>,
}

fn text(content: Content) -> String {
    content
        .parts
        .into_iter()
        .filter_map(|p| p.text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn read<T: for<'de> Deserialize<'de>>(body: &str) -> Result<T, Failure> {
    serde_json::from_str(body).map_err(|e| {
        let message = e.to_string();
        let message = message.split(" at line ").next().unwrap_or_default();
        Failure::invalid_request(format!("Invalid JSON payload received. {message}"))
    })
}

fn decoded(
    model: &str,
    input: Vec<String>,
    dimensions: Option<u32>,
    dropped: Dropped,
) -> Result<Decoded, Failure> {
    let mut body = json!({"model": model, "input": input});
    if let Some(dimensions) = dimensions {
        body["dimensions"] = Value::from(dimensions);
    }
    Ok(Decoded {
        operation: Canonical::Embeddings,
        framing: Framing::Sse,
        model: model.to_owned(),
        stream: false,
        body: body.to_string(),
        dropped: dropped.into_vec(),
        echo: "{}".to_owned(),
    })
}

fn note(request: &EmbedRequest, at: &str, dropped: &mut Dropped) {
    if request.task_type.is_some() {
        dropped.push(format!("{at}taskType"));
    }
    if request.title.is_some() {
        dropped.push(format!("{at}title"));
    }
}

pub fn decode_one(body: &str, model: &str) -> Result<Decoded, Failure> {
    let request: EmbedRequest = read(body)?;
    let mut dropped = Dropped::default();
    note(&request, "", &mut dropped);
    let dimensions = request.output_dimensionality;
    decoded(model, vec![text(request.content)], dimensions, dropped)
}

pub fn decode_batch(body: &str, model: &str) -> Result<Decoded, Failure> {
    let batch: Batch = read(body)?;
    if batch.requests.is_empty() {
        return Err(Failure::invalid_request("requests is empty").with_param("requests"));
    }
    let mut dropped = Dropped::default();
    let dimensions = batch.requests[0].output_dimensionality;
    if batch
        .requests
        .iter()
        .any(|r| r.output_dimensionality != dimensions)
    {
        return Err(Failure::invalid_request(
            "Every request of a batch must ask for the same outputDimensionality.",
        )
        .with_param("requests"));
    }
    let mut input = Vec::with_capacity(batch.requests.len());
    for (i, request) in batch.requests.into_iter().enumerate() {
        note(&request, &format!("requests[{i}]."), &mut dropped);
        input.push(text(request.content));
    }
    decoded(model, input, dimensions, dropped)
}

#[derive(Deserialize)]
struct List {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: usize,
    embedding: Value,
}

/// OpenAI's list as the route's answer, in input order.
pub fn encode(route: &str, completion: &str) -> Result<String, Failure> {
    let mut list: List = serde_json::from_str(completion)
        .map_err(|_| Failure::upstream("the provider's embeddings could not be read"))?;
    list.data.sort_by_key(|item| item.index);
    let values: Vec<Value> = list
        .data
        .into_iter()
        .map(|item| json!({"values": item.embedding}))
        .collect();
    let body = if route == "batchEmbedContents" {
        json!({"embeddings": values})
    } else {
        let first = values
            .into_iter()
            .next()
            .ok_or_else(|| Failure::upstream("the provider answered with no embedding"))?;
        json!({"embedding": first})
    };
    Ok(body.to_string())
}
