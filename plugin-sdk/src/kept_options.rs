//! What a policy plugin's warm instance keeps of its options: each distinct text read once.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::rc::Rc;

use serde::de::DeserializeOwned;

use crate::{ConfigError, parse_options};

/// How many options texts, each with what it was read into, an instance keeps.
const KEPT: usize = 8;

/// One kept reading: the type read into, the text, the value (an `Rc<T>` of that type).
type Kept = (TypeId, Box<str>, Rc<dyn Any>);

thread_local! {
    /// The options texts this instance read last. The host calls a policy plugin's warm instance
    /// with the same few texts (one per rule or virtual model) request after request, and reading
    /// one (JSON, then the typed struct through `serde_path_to_error`) was most of a rate-limit
    /// call's own work.
    static KEPT_OPTIONS: RefCell<Vec<Kept>> = const { RefCell::new(Vec::new()) };
}

/// [`parse_options`](crate::parse_options), kept: an instance reads each distinct text (for
/// each `T`) once and hands back the same value after. A reading is a function of the text
/// alone (a `Deserialize` that reads no state of its own), so a kept one is the one a fresh
/// instance would make; a text that fails is not kept, and only the last [`KEPT`] texts are.
pub(crate) fn parse_kept<T: DeserializeOwned + 'static>(
    options: &str,
) -> Result<Rc<T>, ConfigError> {
    let id = TypeId::of::<T>();
    let kept = KEPT_OPTIONS.with_borrow(|kept| {
        kept.iter()
            .find(|(t, text, _)| *t == id && **text == *options)
            .map(|(_, _, value)| Rc::clone(value))
    });
    if let Some(value) = kept.and_then(|value| value.downcast::<T>().ok()) {
        return Ok(value);
    }
    let value = Rc::new(parse_options::<T>(options)?);
    KEPT_OPTIONS.with_borrow_mut(|kept| {
        if kept.len() == KEPT {
            kept.remove(0);
        }
        kept.push((id, options.into(), Rc::clone(&value) as Rc<dyn Any>));
    });
    Ok(value)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::NoOptions;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Opts {
        organization: Option<String>,
    }

    /// Options whose readings are counted.
    #[derive(Debug)]
    struct Counted(u32);

    thread_local! {
        static READINGS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }

    impl<'de> Deserialize<'de> for Counted {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct Raw {
                n: u32,
            }
            READINGS.set(READINGS.get() + 1);
            Ok(Counted(Raw::deserialize(d)?.n))
        }
    }

    /// Nothing kept and nothing counted on this thread (libtest may run tests on one thread).
    fn fresh() {
        KEPT_OPTIONS.with_borrow_mut(Vec::clear);
        READINGS.set(0);
    }

    #[test]
    fn a_kept_text_is_read_once_and_gives_the_same_value() {
        fresh();
        let first = parse_kept::<Counted>(r#"{"n": 1}"#).unwrap();
        let again = parse_kept::<Counted>(r#"{"n": 1}"#).unwrap();
        assert!(Rc::ptr_eq(&first, &again));
        assert_eq!(READINGS.get(), 1);
        // Another text is another reading; the first stays kept.
        assert_eq!(parse_kept::<Counted>(r#"{"n": 2}"#).unwrap().0, 2);
        assert_eq!(parse_kept::<Counted>(r#"{"n": 1}"#).unwrap().0, 1);
        assert_eq!(READINGS.get(), 2);
    }

    #[test]
    fn one_text_read_into_two_types_is_kept_apart() {
        fresh();
        let text = r#"{"organization": "o"}"#;
        let opts = parse_kept::<Opts>(text).unwrap();
        assert_eq!(opts.organization.as_deref(), Some("o"));
        // The same text read as options that take no keys: refused, not the kept `Opts`.
        let err = parse_kept::<NoOptions>(text).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("organization"));
    }

    #[test]
    fn a_text_that_fails_is_not_kept_and_only_the_last_texts_are() {
        fresh();
        for _ in 0..2 {
            let err = parse_kept::<Counted>(r#"{"n": -1}"#).unwrap_err();
            assert_eq!(err.key.as_deref(), Some("n"));
        }
        assert_eq!(READINGS.get(), 2);
        for n in 0..=KEPT {
            parse_kept::<Counted>(&format!(r#"{{"n": {n}}}"#)).unwrap();
        }
        let kept = KEPT_OPTIONS.with_borrow(Vec::len);
        assert_eq!(kept, KEPT);
        assert_eq!(READINGS.get(), 2 + KEPT as u32 + 1);
        // The oldest went; the newest is still kept.
        parse_kept::<Counted>(&format!(r#"{{"n": {KEPT}}}"#)).unwrap();
        assert_eq!(READINGS.get(), 2 + KEPT as u32 + 1);
        parse_kept::<Counted>(r#"{"n": 0}"#).unwrap();
        assert_eq!(READINGS.get(), 2 + KEPT as u32 + 2);
    }
}
