//! Who watches the host's plugin calls: an interface the host reports to, so that the plugins
//! need not know telemetry (which sits above them).

/// Watches the host's plugin calls (their duration and failures). The host reports to it rather
/// than to telemetry, which sits above the plugins and is passed in by whoever builds the host.
pub trait CallObserver: Send + Sync {
    /// The export `call` of `plugin` starts; the returned value is told how it ended.
    fn start<'a>(&'a self, plugin: &'a str, call: &'static str) -> Box<dyn CallEnd + 'a>;
}

/// The end of one observed call.
pub trait CallEnd: Send {
    /// `failure`: `trapped`, `timeout` or `out_of_memory` (see [`PluginFailure::kind`]).
    fn end(self: Box<Self>, failure: Option<&'static str>);
}

/// Observes nothing (for tests that have no telemetry).
pub struct Unobserved;

impl CallObserver for Unobserved {
    fn start<'a>(&'a self, _: &'a str, _: &'static str) -> Box<dyn CallEnd + 'a> {
        Box::new(Unobserved)
    }
}

impl CallEnd for Unobserved {
    fn end(self: Box<Self>, _: Option<&'static str>) {}
}
