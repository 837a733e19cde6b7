//! The trait a router plugin implements, and its adapter to the generated bindings.

use core::marker::PhantomData;

use serde::de::DeserializeOwned;

use crate::kept_options::parse_kept;
use crate::wit::router::Guest;
use crate::{CircuitState, ConfigError, RouteRequest, Target, parse_options};

/// A router plugin: orders the targets of a virtual model. The host calls each function on a fresh
/// instance, so implementations are types without values (`struct MyRouter;`) and everything
/// arrives as arguments. See [`routing`](crate::routing) for the choices most routers make.
pub trait Router: 'static {
    /// The virtual model's `options`, read with [`parse_options`] once per distinct
    /// text by each instance (a reading depends on the text alone). Give it
    /// `#[serde(deny_unknown_fields)]` so that a misspelt option fails when the config loads;
    /// [`NoOptions`](crate::NoOptions) for a router that takes none.
    type Options: DeserializeOwned + 'static;

    /// Checks the options against the virtual model's target ids once, when the config loads,
    /// after they have been read into [`Self::Options`]. The default accepts anything.
    fn validate(options: &Self::Options, targets: &[String]) -> Result<(), ConfigError> {
        let _ = (options, targets);
        Ok(())
    }

    /// Returns indices into `targets`, in the order to try them; targets left out are not tried.
    /// An error fails the request with a 400 carrying the message.
    fn route(
        options: &Self::Options,
        request: &RouteRequest,
        targets: &[Target],
    ) -> Result<Vec<u32>, String>;
}

/// The type [`export_router!`](crate::export_router) exports for a router `R`.
pub struct RouterAdapter<R>(PhantomData<R>);

impl<R: Router> Guest for RouterAdapter<R> {
    fn validate(options: String, targets: Vec<String>) -> Result<(), ConfigError> {
        validate::<R>(&options, &targets)
    }

    fn route(
        options: String,
        request: RouteRequest,
        targets: Vec<Target>,
    ) -> Result<Vec<u32>, String> {
        route::<R>(&options, &request, &targets)
    }
}

/// Checks `options` (JSON text) and the target ids as the host has `R` do it when the config
/// loads: read into [`Router::Options`], then [`Router::validate`]. For a router's unit tests.
pub fn validate<R: Router>(options: &str, targets: &[String]) -> Result<(), ConfigError> {
    R::validate(&parse_options(options)?, targets)
}

/// Orders `targets` as the host has `R` do it for a request, with `options` as JSON text. For a
/// router's unit tests.
pub fn route<R: Router>(
    options: &str,
    request: &RouteRequest,
    targets: &[Target],
) -> Result<Vec<u32>, String> {
    // `validate` accepted these options when the config loaded, so this fails only if the host
    // skipped it.
    let options = parse_kept::<R::Options>(options).map_err(|err| match err.key {
        Some(key) => format!("invalid router options at `{key}`: {}", err.message),
        None => format!("invalid router options: {}", err.message),
    })?;
    R::route(&options, request, targets)
}

impl Target {
    /// A target `id` (`<provider>/<model>`) as a fresh config would give it: weight 1, no prices,
    /// nothing measured, circuit closed. For tests: `Target { latency_ms: Some(80.0),
    /// ..Target::new("openai/gpt-4o") }`.
    pub fn new(id: &str) -> Self {
        let (provider, model) = id.split_once('/').unwrap_or((id, ""));
        Target {
            id: id.to_owned(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            weight: 1,
            input_price: None,
            output_price: None,
            in_flight: 0,
            latency_ms: None,
            ttft_ms: None,
            tokens_per_second: None,
            error_rate: 0.0,
            circuit: CircuitState::Closed,
        }
    }

    /// Whether the host is skipping this target for now (its circuit is open).
    pub fn is_open(&self) -> bool {
        self.circuit == CircuitState::Open
    }
}

/// A request to the virtual model `""` from project `""`, without user, metadata or stream, and
/// `random` 0. For tests, with struct update syntax.
impl Default for RouteRequest {
    fn default() -> Self {
        RouteRequest {
            model: String::new(),
            project: String::new(),
            user_id: None,
            user_name: None,
            user_tags: Vec::new(),
            estimated_input_tokens: 0,
            stream: false,
            metadata: Vec::new(),
            random: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Opts {
        first: String,
    }

    struct First;

    impl Router for First {
        type Options = Opts;

        fn validate(options: &Opts, targets: &[String]) -> Result<(), ConfigError> {
            if targets.contains(&options.first) {
                Ok(())
            } else {
                Err(ConfigError::at("first", "not a target"))
            }
        }

        fn route(options: &Opts, _: &RouteRequest, targets: &[Target]) -> Result<Vec<u32>, String> {
            let index = targets.iter().position(|t| t.id == options.first);
            Ok(index.into_iter().map(|i| i as u32).collect())
        }
    }

    type Adapter = RouterAdapter<First>;

    #[test]
    fn options_are_read_then_validated() {
        let targets = vec!["a/x".to_owned(), "b/y".to_owned()];
        assert!(Adapter::validate(r#"{"first": "b/y"}"#.into(), targets.clone()).is_ok());

        let err = Adapter::validate(r#"{"first": "c/z"}"#.into(), targets.clone()).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("first"));

        let err = Adapter::validate(r#"{"frist": "a/x"}"#.into(), targets).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("frist"));
    }

    #[test]
    fn route_gets_typed_options() {
        let targets = vec![Target::new("a/x"), Target::new("b/y")];
        let order = Adapter::route(
            r#"{"first": "b/y"}"#.into(),
            RouteRequest::default(),
            targets,
        );
        assert_eq!(order, Ok(vec![1]));

        let err = Adapter::route("{}".into(), RouteRequest::default(), vec![]).unwrap_err();
        assert!(err.contains("first"), "{err}");
    }

    #[test]
    fn new_target_splits_its_id() {
        let target = Target::new("openai/gpt-4o");
        assert_eq!(
            (target.provider.as_str(), target.model.as_str()),
            ("openai", "gpt-4o")
        );
        assert!(!target.is_open());
    }
}
