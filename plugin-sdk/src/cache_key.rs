//! The trait a cache-key policy plugin implements, and its adapter to the generated bindings.

use core::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::kept_options::parse_kept;
use crate::wit::cache_key::Guest;
use crate::{ConfigError, KeyDecision, KeyRequest, parse_options};

/// A cache-key policy: decides what of a request goes into the response cache's key. Calls may
/// run on an instance that served other requests, so implementations are types without values
/// (`struct MyPolicy;`) and everything arrives as arguments.
pub trait CacheKey: 'static {
    /// The entry's `options`, read with [`parse_options`] once per distinct
    /// text by each instance (a reading depends on the text alone). Give it
    /// `#[serde(deny_unknown_fields)]` so that a misspelt option fails when the config loads.
    type Options: DeserializeOwned + 'static;

    /// Checks the options once, when the config loads. The default accepts anything.
    fn validate(options: &Self::Options) -> Result<(), ConfigError> {
        let _ = options;
        Ok(())
    }

    /// What goes into the key of `request`: [`KeyDecision::Keep`], [`KeyDecision::Replace`]
    /// (see [`KeyRequestExt::replace`]) or [`KeyDecision::Bypass`]. A panic makes the request a
    /// bypass.
    fn key(options: &Self::Options, request: &KeyRequest) -> KeyDecision;
}

/// Reading and replacing a request's fields.
pub trait KeyRequestExt {
    /// The body's top-level fields, parsed (`None` if the host sent what is not an object).
    fn fields_map(&self) -> Option<Map<String, Value>>;
    /// The decision to key the request by `fields` instead.
    fn replace(fields: &Map<String, Value>) -> KeyDecision;
}

impl KeyRequestExt for KeyRequest {
    fn fields_map(&self) -> Option<Map<String, Value>> {
        serde_json::from_str(&self.fields).ok()
    }

    fn replace(fields: &Map<String, Value>) -> KeyDecision {
        KeyDecision::Replace(Value::Object(fields.clone()).to_string())
    }
}

/// The type [`export_cache_key!`](crate::export_cache_key) exports for a policy `P`.
pub struct CacheKeyAdapter<P>(PhantomData<P>);

impl<P: CacheKey> Guest for CacheKeyAdapter<P> {
    fn validate(options: String) -> Result<(), ConfigError> {
        P::validate(&parse_options(&options)?)
    }

    fn key(options: String, request: KeyRequest) -> KeyDecision {
        // `validate` accepted these options when the config loaded; if they fail now the host
        // skipped it, and a bypass is the safe answer.
        match parse_kept::<P::Options>(&options) {
            Ok(options) => P::key(&options, &request),
            Err(_) => KeyDecision::Bypass,
        }
    }
}
