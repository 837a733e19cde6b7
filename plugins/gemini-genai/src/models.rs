//! The model list: OpenAI's `list` of the gateway's models as Google's `models` (`name` is
//! `models/<id>`, with the methods each serves).

use serde::Deserialize;
use serde_json::{Value, json};
use wasmgate_plugin_sdk::Failure;

#[derive(Deserialize)]
struct List {
    data: Vec<Model>,
}

#[derive(Deserialize)]
struct Model {
    id: String,
    kind: Option<String>,
    context_window: Option<u64>,
}

fn model(model: Model) -> Value {
    let methods: &[&str] = match model.kind.as_deref() {
        Some("embedding") => &["embedContent", "batchEmbedContents"],
        _ => &["generateContent", "streamGenerateContent", "countTokens"],
    };
    let mut value = json!({
        "name": format!("models/{}", model.id),
        "baseModelId": model.id,
        "version": "001",
        "displayName": model.id,
        "supportedGenerationMethods": methods,
    });
    if let Some(window) = model.context_window {
        value["inputTokenLimit"] = Value::from(window);
    }
    value
}

pub fn encode(route: &str, models: &str) -> Result<String, Failure> {
    let list: List = serde_json::from_str(models)
        .map_err(|_| Failure::upstream("the model list could not be read"))?;
    let mut models = list.data.into_iter().map(model);
    if route == "getModel" {
        return models.next().map(|m| m.to_string()).ok_or_else(|| {
            Failure::new(wasmgate_plugin_sdk::ErrorKind::NotFound, "Model not found.")
        });
    }
    Ok(json!({"models": models.collect::<Vec<_>>()}).to_string())
}
