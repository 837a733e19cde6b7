//! Reading a client's request body field by field: each known field into its type, with errors
//! that name its path, and the rest listed as dropped.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::Failure;

/// The top-level fields of a JSON object body, each kept as its raw text until it is taken.
pub struct Fields<'a> {
    fields: BTreeMap<String, &'a RawValue>,
}

impl<'a> Fields<'a> {
    /// Splits `body`, which must be a JSON object, into its fields.
    pub fn parse(body: &'a str) -> Result<Self, Failure> {
        let fields = serde_json::from_str(body).map_err(|err| {
            let message = if err.is_data() {
                "the request body must be a JSON object".to_owned()
            } else {
                format!(
                    "the request body is not valid JSON: {}",
                    without_position(&err)
                )
            };
            Failure::invalid_request(message).with_code("invalid_json")
        })?;
        Ok(Fields { fields })
    }

    /// Takes the field `key` as a `T`; `None` when it is absent or `null`. A value of the wrong
    /// shape fails with the path inside it (`messages[2].content`).
    pub fn take<T: Deserialize<'a>>(&mut self, key: &str) -> Result<Option<T>, Failure> {
        match self.fields.remove(key) {
            Some(raw) if raw.get() != "null" => read(key, raw).map(Some),
            _ => Ok(None),
        }
    }

    /// Takes the field `key`, which must be there.
    pub fn require<T: Deserialize<'a>>(&mut self, key: &str) -> Result<T, Failure> {
        self.take(key)?.ok_or_else(|| {
            Failure::invalid_request(format!("{key}: Field required"))
                .with_param(key)
                .with_code("missing_required_parameter")
        })
    }

    /// Takes the field `key` as its raw JSON text, unless absent or `null`.
    pub fn take_raw(&mut self, key: &str) -> Option<&'a RawValue> {
        self.fields.remove(key).filter(|raw| raw.get() != "null")
    }

    /// The names of the fields not taken, to list as dropped.
    pub fn rest(self) -> impl Iterator<Item = String> {
        self.fields.into_keys()
    }
}

/// Reads `raw`, the value at `path`, as a `T`; an error names the path of the field at fault.
pub fn read<'a, T: Deserialize<'a>>(path: &str, raw: &'a RawValue) -> Result<T, Failure> {
    let mut de = serde_json::Deserializer::from_str(raw.get());
    serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let inner = err.path().to_string();
        let path = if inner == "." {
            path.to_owned()
        } else if inner.starts_with('[') {
            format!("{path}{inner}")
        } else {
            format!("{path}.{inner}")
        };
        let message = without_position(err.inner());
        Failure::invalid_request(format!("{path}: {message}")).with_param(path)
    })
}

/// serde_json's message without "at line 1 column 123", which means nothing to the client, and
/// cut to [`MESSAGE_MAX`] bytes: serde quotes the client's strings (an unknown variant) whole.
fn without_position(err: &serde_json::Error) -> String {
    let message = err.to_string();
    let mut message = match message.split_once(" at line ") {
        Some((head, _)) => head.to_owned(),
        None => message,
    };
    if message.len() > MESSAGE_MAX {
        let mut end = MESSAGE_MAX;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

/// The longest error message quoted from serde.
const MESSAGE_MAX: usize = 200;

/// The dotted names of the fields a translation dropped, for the host's debug log. Client field
/// names are hostile: a long or unprintable one is listed as `?`, and the list stops at
/// [`Dropped::MAX`] entries, so that a body of many odd fields cannot fill the log.
#[derive(Debug, Default)]
pub struct Dropped {
    names: Vec<String>,
    more: usize,
}

impl Dropped {
    /// The most names listed.
    pub const MAX: usize = 64;
    /// The longest name listed.
    pub const NAME_MAX: usize = 128;

    /// Lists `name` (a dotted path).
    pub fn push(&mut self, name: impl Into<String>) {
        if self.names.len() >= Self::MAX {
            self.more += 1;
            return;
        }
        let name = name.into();
        let printable = name.len() <= Self::NAME_MAX && !name.chars().any(char::is_control);
        self.names
            .push(if printable { name } else { "?".to_owned() });
    }

    /// Lists `field` of the object at `path` (`path.field`, or `field` at the top).
    pub fn field(&mut self, path: &str, field: &str) {
        if path.is_empty() {
            self.push(field);
        } else {
            self.push(format!("{path}.{field}"));
        }
    }

    /// The names, with a last `… and N more` when the list was cut.
    pub fn into_vec(mut self) -> Vec<String> {
        if self.more > 0 {
            self.names.push(format!("… and {} more", self.more));
        }
        self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Message {
        #[allow(dead_code, reason = "only deserialized")]
        role: String,
    }

    #[test]
    fn fields_are_taken_by_name_and_the_rest_listed() {
        let mut fields =
            Fields::parse(r#"{"model":"m","n":null,"extra":1,"messages":[]}"#).unwrap();
        assert_eq!(fields.require::<String>("model").unwrap(), "m");
        assert_eq!(fields.take::<u32>("n").unwrap(), None);
        assert!(fields.take_raw("messages").is_some());
        assert_eq!(fields.rest().collect::<Vec<_>>(), ["extra"]);
    }

    #[test]
    fn errors_name_the_path() {
        let mut fields = Fields::parse(r#"{"messages":[{"role":"user"},{"role":3}]}"#).unwrap();
        let err = fields.take::<Vec<Message>>("messages").unwrap_err();
        assert_eq!(err.param.as_deref(), Some("messages[1].role"));
        assert!(!err.message.contains("line"), "{}", err.message);

        let err = Fields::parse("{}")
            .unwrap()
            .require::<String>("model")
            .unwrap_err();
        assert_eq!(err.param.as_deref(), Some("model"));
        let err = Fields::parse("[1]").err().unwrap();
        assert_eq!(err.code.as_deref(), Some("invalid_json"));
        assert!(Fields::parse("{").is_err());

        let long = format!(r#"{{"n":"{}"}}"#, "é".repeat(500));
        let err = Fields::parse(&long).unwrap().take::<u32>("n").unwrap_err();
        assert!(err.message.contains("éé"), "{}", err.message);
        assert!(
            err.message.len() <= MESSAGE_MAX + 8,
            "{}",
            err.message.len()
        );
    }

    #[test]
    fn dropped_names_are_bounded() {
        let mut dropped = Dropped::default();
        dropped.field("", "top_k");
        dropped.field("tools[0]", "cache_control");
        dropped.push("a\nb");
        dropped.push("x".repeat(Dropped::NAME_MAX + 1));
        for i in 0..Dropped::MAX {
            dropped.push(format!("f{i}"));
        }
        let names = dropped.into_vec();
        assert_eq!(&names[..4], ["top_k", "tools[0].cache_control", "?", "?"]);
        assert_eq!(names.len(), Dropped::MAX + 1);
        assert_eq!(names.last().map(String::as_str), Some("… and 4 more"));
    }
}
