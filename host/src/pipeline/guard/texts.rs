//! The texts of a body that is not a Chat Completions request, as a guard sees them: every
//! string of an embeddings, image, speech, moderation, completion, rerank or upload request, or
//! the strings of a native body its canonical view does not carry. The guard contract takes a
//! Chat Completions request, so they are shown to it as one user message each, and what it
//! rewrote is written back where each stood, in the encoding it stood in (a `data:` URL or
//! a base64 blob of a text type is shown decoded).
//!
//! An object's keys are shown too, read-only, when they are not plain field names ([`shown_key`]):
//! a client can hide a value in a key (`"metadata": {"4111 1111 1111 1111": 1}`), but a key
//! cannot be rewritten in place, so a guard that would rewrite one refuses the request instead.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use serde_json::{Map, Value, json};

/// Characters a percent-encoded `data:` URL keeps as they are.
const DATA_URL_KEEP: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Keys that name a blob's media type beside its `data` (Gemini's `inlineData`, Anthropic's
/// document `source`).
const MEDIA_TYPE_KEYS: [&str; 3] = ["mimeType", "mime_type", "media_type"];

/// One step of a path into a JSON body.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// How a text is written where it stands.
#[derive(Debug, Clone, PartialEq)]
enum Form {
    Plain,
    /// The base64 `data` of a blob whose media type is text.
    Base64,
    /// A `data:` URL of a text type: its header (`text/plain;base64`), and whether it is base64.
    DataUrl {
        header: String,
        base64: bool,
    },
    /// An object's key: shown, never written.
    Key,
}

#[derive(Debug, Clone, PartialEq)]
struct Slot {
    path: Vec<Step>,
    form: Form,
}

/// The texts of a body, each with where it stands.
#[derive(Debug, Default)]
pub struct TextView {
    slots: Vec<Slot>,
    texts: Vec<String>,
    /// The keys shown, each once.
    keys: std::collections::HashSet<String>,
}

/// A guard's rewrite of a view that does not read back as one.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum NotRead {
    /// Another number of messages, or a message whose content is not a string.
    #[error("it rewrote the texts into a request of another shape")]
    Reshaped,
    /// It changed a key, which cannot be rewritten.
    #[error("it would rewrite the name of a field, which cannot be rewritten")]
    KeyRewritten,
}

/// Whether an object's key is shown to the guards: any but a plain field name (ASCII letters,
/// `_` and `$`, at most 40 of them), so that the structure of every request is not shown on
/// each, while a key holding digits, `@`, `-`, spaces or any other text is.
pub fn shown_key(key: &str) -> bool {
    key.len() > 40
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'$')
}

impl TextView {
    /// Every string of `body` but its top-level `model`.
    pub fn of_body(body: &Value) -> Self {
        let mut view = Self::default();
        view.walk(
            body,
            &mut Vec::new(),
            &|path, _, _| !matches!(path, [Step::Key(key)] if key == "model"),
        );
        view
    }

    /// The keys alone of `body` that are shown ([`shown_key`]): what a Chat Completions request,
    /// which guards read as it is, may carry in its keys.
    pub fn keys(body: &Value) -> Self {
        let mut view = Self::default();
        view.walk(body, &mut Vec::new(), &|_, form, _| *form == Form::Key);
        view
    }

    /// The strings of a native `body` that its canonical view (`canonical`, as guards checked
    /// it) does not hold, whole or inside one of its strings: what a native target would get
    /// that no guard saw (a field the dialect drops, a value it cannot carry). A text encoded
    /// in a blob or a `data:` URL is always taken: a rewrite of the canonical view is carried
    /// into the native body's strings as they are written, and cannot reach inside those.
    pub fn residue(native: &Value, canonical: &Value) -> Self {
        let mut seen = std::collections::HashSet::new();
        let mut haystack = String::new();
        collect(canonical, &mut |text| {
            if seen.insert(text.to_owned()) {
                haystack.push_str(text);
                haystack.push('\u{0}');
            }
        });
        let mut view = Self::default();
        view.walk(native, &mut Vec::new(), &|path, form, text| {
            let model = matches!(path, [Step::Key(key)] if key == "model");
            let encoded = *form != Form::Plain;
            !model && (encoded || (!seen.contains(text) && !haystack.contains(text)))
        });
        view
    }

    /// The texts, as shown (decoded).
    pub fn texts(&self) -> Vec<String> {
        self.texts.clone()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// The view as a guard reads it: a Chat Completions request of one user message per text,
    /// and where they stood: `wasmgate.route` (the route's name) and `wasmgate.at`, for each
    /// message, the JSON pointer (RFC 6901) of its text in the body the route sends.
    pub fn request(&self, model: &str, route: &str) -> String {
        let messages: Vec<Value> = self
            .texts
            .iter()
            .map(|text| json!({"role": "user", "content": text}))
            .collect();
        let at: Vec<String> = self.slots.iter().map(|slot| pointer(&slot.path)).collect();
        json!({"model": model, "messages": messages, "wasmgate": {"route": route, "at": at}})
            .to_string()
    }

    /// The texts of a guard's rewrite of [`TextView::request`], in order.
    pub fn read(&self, rewrite: &str) -> Result<Vec<String>, NotRead> {
        let body: Value = serde_json::from_str(rewrite).map_err(|_| NotRead::Reshaped)?;
        let Some(Value::Array(messages)) = body.get("messages") else {
            return Err(NotRead::Reshaped);
        };
        if messages.len() != self.texts.len() {
            return Err(NotRead::Reshaped);
        }
        let texts = messages
            .iter()
            .map(|m| match m.get("content") {
                Some(Value::String(text)) => Ok(text.clone()),
                _ => Err(NotRead::Reshaped),
            })
            .collect::<Result<Vec<String>, NotRead>>()?;
        self.keys_kept(&texts)?;
        Ok(texts)
    }

    /// Refuses `texts` (the view's, as a guard left them) that change a key.
    pub fn keys_kept(&self, texts: &[String]) -> Result<(), NotRead> {
        let changed = (self.slots.iter().zip(&self.texts).zip(texts))
            .any(|((slot, before), after)| slot.form == Form::Key && before != after);
        match changed {
            true => Err(NotRead::KeyRewritten),
            false => Ok(()),
        }
    }

    /// Writes `texts` (from [`TextView::read`]) where the view's texts stood in `body`; how
    /// many changed.
    pub fn write(&self, texts: &[String], body: &mut Value) -> usize {
        let mut changed = 0;
        for ((slot, before), after) in self.slots.iter().zip(&self.texts).zip(texts) {
            if before == after || slot.form == Form::Key {
                continue;
            }
            let Some(Value::String(at)) = find(body, &slot.path) else {
                continue;
            };
            *at = match &slot.form {
                Form::Plain => after.clone(),
                Form::Base64 => STANDARD.encode(after.as_bytes()),
                Form::Key => continue,
                Form::DataUrl { header, base64 } => {
                    let data = if *base64 {
                        STANDARD.encode(after.as_bytes())
                    } else {
                        utf8_percent_encode(after, DATA_URL_KEEP).to_string()
                    };
                    format!("data:{header},{data}")
                }
            };
            changed += 1;
        }
        changed
    }

    fn walk(
        &mut self,
        value: &Value,
        path: &mut Vec<Step>,
        take: &dyn Fn(&[Step], &Form, &str) -> bool,
    ) {
        match value {
            Value::String(text) => {
                let (form, text) = match data_url(text) {
                    Some((form, decoded)) => (form, decoded),
                    None => (Form::Plain, text.clone()),
                };
                if !text.is_empty() && take(path, &form, &text) {
                    self.slots.push(Slot {
                        path: path.clone(),
                        form,
                    });
                    self.texts.push(text);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(Step::Index(i));
                    self.walk(item, path, take);
                    path.pop();
                }
            }
            Value::Object(fields) => {
                let blob = text_blob(fields);
                for (key, item) in fields {
                    path.push(Step::Key(key.clone()));
                    if shown_key(key) && !self.keys.contains(key) && take(path, &Form::Key, key) {
                        self.keys.insert(key.clone());
                        self.slots.push(Slot {
                            path: path.clone(),
                            form: Form::Key,
                        });
                        self.texts.push(key.clone());
                    }
                    match (&blob, key.as_str()) {
                        // The blob's own media type is structure.
                        (Some(_), key) if MEDIA_TYPE_KEYS.contains(&key) => {}
                        (Some(text), "data") => {
                            if take(path, &Form::Base64, text) {
                                self.slots.push(Slot {
                                    path: path.clone(),
                                    form: Form::Base64,
                                });
                                self.texts.push(text.clone());
                            }
                        }
                        _ => self.walk(item, path, take),
                    }
                    path.pop();
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// Every string of `value`, decoded where it is a text `data:` URL.
fn collect(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::String(text) => match data_url(text) {
            Some((_, decoded)) => f(&decoded),
            None => f(text),
        },
        Value::Array(items) => items.iter().for_each(|item| collect(item, f)),
        Value::Object(fields) => fields.values().for_each(|item| collect(item, f)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `path` as a JSON pointer (RFC 6901: `~` and `/` in a key escaped).
fn pointer(path: &[Step]) -> String {
    let mut pointer = String::new();
    for step in path {
        pointer.push('/');
        match step {
            Step::Key(key) => pointer.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Step::Index(i) => pointer.push_str(&i.to_string()),
        }
    }
    pointer
}

fn find<'a>(value: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    path.iter()
        .try_fold(value, |value, step| match (step, value) {
            (Step::Key(key), Value::Object(fields)) => fields.get_mut(key),
            (Step::Index(i), Value::Array(items)) => items.get_mut(*i),
            _ => None,
        })
}

/// Whether a media type is read as text (none is `text/plain`, RFC 2397).
pub fn is_text_type(media_type: &str) -> bool {
    let media_type = media_type.trim().to_ascii_lowercase();
    media_type.is_empty()
        || media_type.starts_with("text/")
        || matches!(
            media_type.as_str(),
            "application/json" | "application/xml" | "application/x-www-form-urlencoded"
        )
        || media_type.ends_with("+json")
        || media_type.ends_with("+xml")
}

/// A `data:` URL of a text type, decoded.
fn data_url(url: &str) -> Option<(Form, String)> {
    let (header, data) = url.strip_prefix("data:")?.split_once(',')?;
    let mut params = header.split(';');
    if !params.next().is_some_and(is_text_type) {
        return None;
    }
    let base64 = params.any(|p| p.trim().eq_ignore_ascii_case("base64"));
    let text = if base64 {
        String::from_utf8_lossy(&STANDARD.decode(data.trim()).ok()?).into_owned()
    } else {
        percent_decode_str(data).decode_utf8_lossy().into_owned()
    };
    let form = Form::DataUrl {
        header: header.to_owned(),
        base64,
    };
    Some((form, text))
}

/// The text of a blob (`{"mimeType": "text/plain", "data": "<base64>"}`) whose media type is
/// text.
fn text_blob(fields: &Map<String, Value>) -> Option<String> {
    let media_type = MEDIA_TYPE_KEYS
        .iter()
        .find_map(|key| fields.get(*key).and_then(Value::as_str))?;
    let Some(Value::String(data)) = fields.get("data") else {
        return None;
    };
    if !is_text_type(media_type) || media_type.trim().is_empty() {
        return None;
    }
    let bytes = STANDARD.decode(data.trim()).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_string_but_the_model_is_shown_and_written_back_where_it_stood() {
        let mut body = json!({"model": "m", "input": ["a 4111", "b"], "user": "u@x.io"});
        let view = TextView::of_body(&body);
        let request: Value = serde_json::from_str(&view.request("m", "embeddings")).unwrap();
        assert_eq!(request["messages"].as_array().unwrap().len(), 3);
        let rewrite = request
            .to_string()
            .replace("4111", "[CARD]")
            .replace("u@x.io", "[EMAIL]");
        let texts = view.read(&rewrite).unwrap();
        assert_eq!(view.write(&texts, &mut body), 2);
        assert_eq!(
            body,
            json!({"model": "m", "input": ["a [CARD]", "b"], "user": "[EMAIL]"})
        );
        assert!(view.read(r#"{"messages":[]}"#).is_err());
        assert_eq!(
            request["wasmgate"],
            json!({"route": "embeddings", "at": ["/input/0", "/input/1", "/user"]})
        );
    }

    #[test]
    fn a_pointer_escapes_what_rfc_6901_escapes() {
        let body = json!({"metadata": {"a/b~c": "x"}, "data:": [{"k": "data:,hi"}]});
        let view = TextView::of_body(&body);
        let request: Value = serde_json::from_str(&view.request("m", "r")).unwrap();
        // A key that is not a plain name is shown too, at the member it names.
        assert_eq!(
            request["wasmgate"]["at"],
            json!([
                "/metadata/a~1b~0c",
                "/metadata/a~1b~0c",
                "/data:",
                "/data:/0/k"
            ])
        );
        assert_eq!(view.texts, ["a/b~c", "x", "data:", "hi"]);
    }

    #[test]
    fn a_key_is_shown_once_and_a_rewrite_of_it_does_not_read_back() {
        let mut body = json!({"model": "m", "metadata": {"4111 1111 1111 1111": "a", "plain": "b"},
                              "items": [{"u@x.io": 1}, {"u@x.io": 2}]});
        let view = TextView::of_body(&body);
        assert_eq!(view.texts, ["4111 1111 1111 1111", "a", "b", "u@x.io"]);
        let request: Value = serde_json::from_str(&view.request("m", "r")).unwrap();
        let rewrite = request.to_string().replace("4111 1111 1111 1111", "[CARD]");
        assert_eq!(view.read(&rewrite), Err(NotRead::KeyRewritten));
        let texts = view
            .read(&request.to_string().replace("\"b\"", "\"c\""))
            .unwrap();
        assert_eq!(view.write(&texts, &mut body), 1);
        assert_eq!(body["metadata"]["plain"], "c");
        let keys = TextView::keys(&body);
        assert_eq!(keys.texts, ["4111 1111 1111 1111", "u@x.io"]);
        assert!(!shown_key("additionalProperties") && !shown_key("$defs"));
        assert!(shown_key("line1") && shown_key("sk-proj-abc") && shown_key(&"a".repeat(41)));
    }

    #[test]
    fn a_native_body_shows_what_its_canonical_view_lacks_decoded() {
        let native = json!({"model": "m", "contents": [{"parts": [
            {"text": "hello there"},
            {"inlineData": {"mimeType": "text/plain", "data": STANDARD.encode("card 4111")}},
            {"inlineData": {"mimeType": "image/png", "data": "iVBOR"}}]}],
            "metadata": {"user_id": "long id u@x.io"}});
        let canonical = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "hello there"}, {"type": "text", "text": "card 4111"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}]}]});
        let view = TextView::residue(&native, &canonical);
        assert_eq!(view.texts, ["card 4111", "long id u@x.io"]);
        let mut native = native;
        view.write(
            &["card [CARD]".to_owned(), "long id [EMAIL]".to_owned()],
            &mut native,
        );
        let data = native["contents"][0]["parts"][1]["inlineData"]["data"]
            .as_str()
            .unwrap();
        assert_eq!(STANDARD.decode(data).unwrap(), b"card [CARD]");
        assert_eq!(native["metadata"]["user_id"], "long id [EMAIL]");
        assert_eq!(
            native["contents"][0]["parts"][2]["inlineData"]["data"],
            "iVBOR"
        );
    }

    #[test]
    fn a_text_data_url_is_shown_decoded() {
        let mut body = json!({"model": "m", "input": "data:text/plain,card%204111"});
        let view = TextView::of_body(&body);
        assert_eq!(view.texts, ["card 4111"]);
        view.write(&["card [CARD]".to_owned()], &mut body);
        assert_eq!(body["input"], "data:text/plain,card%20%5BCARD%5D");
    }
}
