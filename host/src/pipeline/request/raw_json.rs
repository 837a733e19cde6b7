//! Reading a client's JSON without building a tree of it.
//!
//! A `serde_json::Value` costs about 80 bytes a node, so a 32 MiB body of `[0,0,…]` grew into a
//! 1.3 GB tree before any check could refuse it. Here a body is checked for depth in one pass
//! over its bytes, split into its top-level fields as raw text (about its own size again), and
//! the fields the gateway must look into are walked element by element, holding one at a time.

use std::fmt;

use indexmap::IndexMap;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Nesting of arrays and objects a request body may have, at most.
pub const MAX_DEPTH: usize = 64;
/// Top-level fields of a request body, at most (OpenAI's chat request has about 40).
pub const MAX_FIELDS: usize = 256;

/// A JSON object's fields as their raw text, in order; a repeated key keeps its last value.
pub type Fields = IndexMap<String, Box<RawValue>>;

/// Why a body is not a JSON object the gateway reads.
#[derive(Debug)]
pub enum Unreadable {
    Syntax(serde_json::Error),
    NotAnObject,
    TooDeep,
    TooManyFields,
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax(e) => write!(f, "{e}"),
            Self::NotAnObject => f.write_str("the body must be a JSON object"),
            Self::TooDeep => write!(f, "the JSON is nested more than {MAX_DEPTH} levels deep"),
            Self::TooManyFields => write!(f, "the object has more than {MAX_FIELDS} fields"),
        }
    }
}

/// The JSON kind of a raw value, read from its first byte (the text is valid JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl Kind {
    pub fn of(raw: &RawValue) -> Self {
        match raw.get().trim_start().as_bytes().first() {
            Some(b'"') => Self::String,
            Some(b'{') => Self::Object,
            Some(b'[') => Self::Array,
            Some(b't' | b'f') => Self::Bool,
            Some(b'n') => Self::Null,
            _ => Self::Number,
        }
    }

    /// As an error message names it: "a string".
    pub fn name(self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool => "a boolean",
            Self::Number => "a number",
            Self::String => "a string",
            Self::Array => "an array",
            Self::Object => "an object",
        }
    }
}

/// The top-level fields of `bytes`, which must hold one JSON object no deeper than
/// [`MAX_DEPTH`] with at most `max_fields` fields.
pub fn object(bytes: &[u8], max_fields: usize) -> Result<Fields, Unreadable> {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    match start.map(|i| bytes[i]) {
        Some(b'{') => {}
        // Not an object: a syntax error if it is not JSON at all, else the wrong kind.
        _ => {
            return Err(match serde_json::from_slice::<IgnoredAny>(bytes) {
                Err(e) => Unreadable::Syntax(e),
                Ok(_) => Unreadable::NotAnObject,
            });
        }
    }
    check_depth(bytes)?;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let fields = de
        .deserialize_map(FieldsVisitor { max_fields })
        .and_then(|fields| de.end().map(|()| fields));
    fields.map_err(|e| {
        if e.to_string().starts_with(TOO_MANY) {
            Unreadable::TooManyFields
        } else {
            Unreadable::Syntax(e)
        }
    })
}

/// [`object`] on a raw value already read (a nested object such as `stream_options`).
pub fn fields(raw: &RawValue, max_fields: usize) -> Result<Fields, Unreadable> {
    object(raw.get().as_bytes(), max_fields)
}

const TOO_MANY: &str = "too many fields";

struct FieldsVisitor {
    max_fields: usize,
}

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Fields;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        let mut fields = Fields::new();
        while let Some(key) = map.next_key::<String>()? {
            let value: Box<RawValue> = map.next_value()?;
            fields.insert(key, value);
            if fields.len() > self.max_fields {
                return Err(de::Error::custom(TOO_MANY));
            }
        }
        Ok(fields)
    }
}

/// Refuses JSON nested deeper than [`MAX_DEPTH`], in one pass over the bytes (brackets inside
/// strings do not count). Syntax is left to the parser.
fn check_depth(bytes: &[u8]) -> Result<(), Unreadable> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                (false, _) => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(Unreadable::TooDeep);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// `raw` without the whitespace between its tokens (the form a parsed tree would print).
pub fn compact(raw: &RawValue) -> String {
    let text = raw.get();
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                (false, _) => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if c.is_ascii_whitespace() {
            continue;
        }
        out.push(c);
    }
    out
}

/// The string `raw` holds, if it is one.
pub fn string(raw: &RawValue) -> Option<String> {
    match Kind::of(raw) {
        Kind::String => serde_json::from_str(raw.get()).ok(),
        _ => None,
    }
}

/// The non-negative integer `raw` holds, if it is one.
pub fn integer(raw: &RawValue) -> Option<u64> {
    match Kind::of(raw) {
        Kind::Number => serde_json::from_str(raw.get()).ok(),
        _ => None,
    }
}

/// The value of each of `names` in the object `raw` (`None` when absent, or when `raw` is not
/// an object); the other fields are skipped unread.
pub fn pick<'a, const N: usize>(raw: &'a RawValue, names: [&str; N]) -> [Option<&'a RawValue>; N] {
    struct Pick<'n, const N: usize>(&'n [&'n str; N]);
    impl<'de, const N: usize> Visitor<'de> for Pick<'_, N> {
        type Value = [Option<&'de RawValue>; N];
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = [None; N];
            while let Some(key) = map.next_key_seed(KeyIndex(self.0))? {
                match key {
                    Some(i) => found[i] = Some(map.next_value()?),
                    None => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(found)
        }
    }
    if Kind::of(raw) != Kind::Object {
        return [None; N];
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    de.deserialize_map(Pick(&names)).unwrap_or([None; N])
}

/// Calls `each` on every element of the array `raw` in turn, holding one at a time, until it
/// fails; does nothing when `raw` is not an array.
pub fn each<'a, E>(
    raw: &'a RawValue,
    mut each: impl FnMut(usize, &'a RawValue) -> Result<(), E>,
) -> Result<(), E> {
    struct Each<'f, F>(&'f mut F);
    impl<'de, F: FnMut(&'de RawValue) -> bool> Visitor<'de> for Each<'_, F> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while let Some(element) = seq.next_element::<&'de RawValue>()? {
                if !(self.0)(element) {
                    return Err(de::Error::custom("stopped"));
                }
            }
            Ok(())
        }
    }
    if Kind::of(raw) != Kind::Array {
        return Ok(());
    }
    let mut failed = None;
    let mut i = 0;
    let mut step = |element: &'a RawValue| match each(i, element) {
        Ok(()) => {
            i += 1;
            true
        }
        Err(e) => {
            failed = Some(e);
            false
        }
    };
    let mut de = serde_json::Deserializer::from_str(raw.get());
    // The text is valid JSON: the walk stops early only when `each` failed.
    let _ = de.deserialize_seq(Each(&mut step));
    failed.map_or(Ok(()), Err)
}

/// Calls `each` on every field of the object `raw` in turn, until it fails; does nothing when
/// `raw` is not an object.
pub fn each_field<'a, E>(
    raw: &'a RawValue,
    mut each: impl FnMut(usize, String, &'a RawValue) -> Result<(), E>,
) -> Result<(), E> {
    struct Each<'f, F>(&'f mut F);
    impl<'de, F: FnMut(String, &'de RawValue) -> bool> Visitor<'de> for Each<'_, F> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                let value = map.next_value::<&'de RawValue>()?;
                if !(self.0)(key, value) {
                    return Err(de::Error::custom("stopped"));
                }
            }
            Ok(())
        }
    }
    if Kind::of(raw) != Kind::Object {
        return Ok(());
    }
    let mut failed = None;
    let mut i = 0;
    let mut step = |key: String, value: &'a RawValue| match each(i, key, value) {
        Ok(()) => {
            i += 1;
            true
        }
        Err(e) => {
            failed = Some(e);
            false
        }
    };
    let mut de = serde_json::Deserializer::from_str(raw.get());
    let _ = de.deserialize_map(Each(&mut step));
    failed.map_or(Ok(()), Err)
}

/// The sum of `count` over the texts of `raw`, walked without a tree: a string counts itself,
/// an array its elements, an object its `text` field (else its `content`); anything else 0.
pub fn count_texts(raw: &RawValue, count: &dyn Fn(&str) -> u32) -> u32 {
    let mut de = serde_json::Deserializer::from_str(raw.get());
    Texts(count).deserialize(&mut de).unwrap_or(0)
}

#[derive(Clone, Copy)]
struct Texts<'c>(&'c dyn Fn(&str) -> u32);

impl<'de> DeserializeSeed<'de> for Texts<'_> {
    type Value = u32;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Texts<'_> {
    type Value = u32;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E>(self, text: &str) -> Result<u32, E> {
        Ok((self.0)(text))
    }
    fn visit_bool<E>(self, _: bool) -> Result<u32, E> {
        Ok(0)
    }
    fn visit_i64<E>(self, _: i64) -> Result<u32, E> {
        Ok(0)
    }
    fn visit_u64<E>(self, _: u64) -> Result<u32, E> {
        Ok(0)
    }
    fn visit_f64<E>(self, _: f64) -> Result<u32, E> {
        Ok(0)
    }
    fn visit_unit<E>(self) -> Result<u32, E> {
        Ok(0)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u32, A::Error> {
        let mut sum = 0u32;
        while let Some(n) = seq.next_element_seed(self)? {
            sum = sum.saturating_add(n);
        }
        Ok(sum)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<u32, A::Error> {
        // A repeated key counts its last value, as a parsed object would keep it.
        let (mut text, mut content) = (None, None);
        while let Some(key) = map.next_key_seed(KeyIndex(&["text", "content"]))? {
            match key {
                Some(0) => text = Some(map.next_value_seed(self)?),
                Some(_) => content = Some(map.next_value_seed(self)?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(text.or(content).unwrap_or(0))
    }
}

/// Reads an object key as its index in a list of names (`None`: another key), unallocated.
struct KeyIndex<'n, const N: usize>(&'n [&'n str; N]);

impl<'de, const N: usize> DeserializeSeed<'de> for KeyIndex<'_, N> {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, const N: usize> Visitor<'de> for KeyIndex<'_, N> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, key: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|name| *name == key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn objects_keep_order_last_value_wins_and_are_bounded() {
        let fields = object(br#" {"b": [1, {"x": 2}], "a": "s", "b": 3} "#, 8)
            .unwrap_or_else(|e| panic!("{e}"));
        let keys: Vec<_> = fields.keys().map(String::as_str).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(fields["b"].get(), "3");
        assert!(matches!(object(b"[1]", 8), Err(Unreadable::NotAnObject)));
        assert!(matches!(object(b"{\"a\":", 8), Err(Unreadable::Syntax(_))));
        assert!(matches!(object(b"{} x", 8), Err(Unreadable::Syntax(_))));
        assert!(matches!(
            object(br#"{"a":1,"b":2,"c":3}"#, 2),
            Err(Unreadable::TooManyFields)
        ));
    }

    #[test]
    fn depth_is_counted_outside_strings() {
        let deep = format!(
            "{{\"a\":{}{}}}",
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        assert!(matches!(
            object(deep.as_bytes(), 8),
            Err(Unreadable::TooDeep)
        ));
        let fine = format!(
            "{{\"a\":{}{}, \"s\": \"{}\\\"[[\"}}",
            "[".repeat(MAX_DEPTH - 1),
            "]".repeat(MAX_DEPTH - 1),
            "[".repeat(500)
        );
        assert!(object(fine.as_bytes(), 8).is_ok());
    }

    #[test]
    fn walks_hold_one_element_and_stop_at_the_first_failure() {
        let array = raw(r#"[1, "two", {"three": 3}, 4]"#);
        let mut kinds = Vec::new();
        let result = each(&array, |i, element| {
            kinds.push(Kind::of(element));
            if i == 2 { Err(i) } else { Ok(()) }
        });
        assert_eq!(result, Err(2));
        assert_eq!(kinds, [Kind::Number, Kind::String, Kind::Object]);
        let object = raw(r#"{"role": "user", "content": [{"text": "hi"}], "x": {"y": 1}}"#);
        let [role, content, missing] = pick(&object, ["role", "content", "name"]);
        assert_eq!(role.and_then(string).as_deref(), Some("user"));
        assert_eq!(content.map(Kind::of), Some(Kind::Array));
        assert!(missing.is_none());
    }

    #[test]
    fn texts_are_counted_as_a_tree_walk_would() {
        let words = |s: &str| u32::try_from(s.split_whitespace().count()).unwrap_or(0);
        let messages = raw(r#"[{"role":"user","content":"one two"},
                {"role":"user","content":[{"type":"text","text":"three"},{"type":"image_url"}]},
                {"content":"ignored", "text":"four five six"}, 7, null]"#);
        assert_eq!(count_texts(&messages, &words), 6);
    }

    #[test]
    fn compact_drops_whitespace_between_tokens_only() {
        let pretty = raw("[ {\n \"a b\" : \"c \\\" d\" } ,\t1 ]");
        assert_eq!(compact(&pretty), r#"[{"a b":"c \" d"},1]"#);
    }
}
