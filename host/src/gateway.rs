//! One loaded configuration: its providers with their plugins, and the index that resolves a
//! client's `model` to a provider. Requests take one snapshot at their start, so a reload can
//! swap in a new `Gateway` without disturbing requests in flight.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::catalog::{Catalog, ModelInfo};
use crate::config::Config;
use crate::limits::Limits;
use crate::plugins::{DialectRegistry, PluginHost, ProviderConfig, ProviderPlugin, RouterPlugin};
use crate::redact::Secrets;
use crate::routing::Route;
use crate::upstream::Scope;

mod plain;

pub use plain::PlainPlan;

/// A configured provider entry with its loaded plugin.
pub struct Provider {
    pub name: Arc<str>,
    pub plugin: ProviderPlugin,
    /// Its telemetry name (`gen_ai.provider.name`), as its plugin stated it.
    pub system: Arc<str>,
    /// What the plugin receives with every call.
    pub config: ProviderConfig,
    /// Wait for response headers, and between streamed chunks.
    pub timeout: Duration,
    /// Where its upstream requests may go: under its base URL.
    pub scope: Scope,
    /// The catalog provider whose prices apply, if the catalog knows it.
    pub catalog: Option<String>,
    /// The client dialects its upstream serves itself, by their declared names, as its plugin
    /// said when the config loaded: requests in these pass through untranslated.
    pub native: Vec<String>,
    /// The requests the host sends and reads itself, without the plugin (issue 38): what the
    /// plugin declared plain, unless the entry sets `plain_path: false`.
    pub plain: PlainPlan,
    /// The config's catalog (built-in, with `catalog:` merged over it).
    models: Arc<Catalog>,
}

impl Provider {
    /// The catalog's entry (prices) for `model` at this provider, when it has prices.
    pub fn price(&self, model: &str) -> Option<Arc<ModelInfo>> {
        let info = self.models.shared(self.catalog.as_deref()?, model)?;
        info.is_priced().then(|| Arc::clone(info))
    }

    /// What the catalog knows of `model` at this provider, priced or not.
    pub fn info(&self, model: &str) -> Option<&ModelInfo> {
        self.models.lookup(self.catalog.as_deref()?, model)
    }

    /// Whether any model name is passed through (the entry declares no models).
    pub fn passthrough(&self) -> bool {
        self.config.models.is_empty()
    }
}

/// Where a client's model id leads.
pub struct Target<'a> {
    pub provider: &'a Provider,
    /// The model name as the upstream knows it.
    pub model: &'a str,
}

/// Why a model id leads nowhere.
#[derive(Debug)]
pub enum ResolveError {
    NotFound,
    /// Several providers serve this bare name; these are the ids that would pick one.
    Ambiguous(Vec<String>),
}

/// Why a config could not be turned into a running gateway. Each names the config entry.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("providers.{provider}: {source}")]
    Load {
        provider: String,
        source: crate::plugins::LoadError,
    },
    #[error("providers.{provider}: plugin `{plugin}` rejected its options: {message}")]
    Rejected {
        provider: String,
        plugin: String,
        message: String,
    },
    #[error("providers.{provider}: {source}")]
    Plugin {
        provider: String,
        source: crate::plugins::PluginFailure,
    },
    #[error("providers.{provider}.base_url: {message}")]
    BaseUrl { provider: String, message: String },
    #[error("routing.{route}: {message}")]
    Route { route: String, message: String },
    #[error("{message}")]
    Limits { message: String },
    #[error("{message}")]
    Guards { message: String },
    #[error("{message}")]
    CacheKey { message: String },
    #[error("dialects.{dialect}.plugin: {source}")]
    Dialect {
        dialect: String,
        source: crate::plugins::LoadError,
    },
    #[error("dialects.{dialect}: {source}")]
    DialectDeclaration {
        dialect: String,
        source: crate::plugins::RegistryError,
    },
}

/// Loads each configured dialect plugin and mounts what it declares.
async fn load_dialects(
    config: &Config,
    host: &PluginHost,
) -> Result<DialectRegistry, StartupError> {
    let mut registry = DialectRegistry::default();
    for (key, plugin) in config.dialects.entries() {
        let loaded = host
            .load_dialect(plugin, &config.plugins.dir)
            .map_err(|source| StartupError::Dialect {
                dialect: key.to_owned(),
                source,
            })?;
        registry
            .mount(key, loaded)
            .await
            .map_err(|source| StartupError::DialectDeclaration {
                dialect: key.to_owned(),
                source,
            })?;
    }
    Ok(registry)
}

pub struct Gateway {
    pub config: Config,
    pub providers: Vec<Provider>,
    /// Virtual models by name.
    pub routes: HashMap<String, Route>,
    /// Rate limits and budgets.
    pub limits: Arc<Limits>,
    /// The config's secrets, kept out of what is relayed from upstream, logged or stored.
    pub secrets: Arc<Secrets>,
    /// The client dialects besides Chat Completions: their plugins, routes and key sources.
    pub dialects: DialectRegistry,
    /// Content policies on requests and answers, in order.
    pub guards: crate::guards::Guards,
    /// The cache-key policy plugin, where `cache.key_plugin` names one.
    pub cache_key: Option<crate::cache::policy::KeyPolicy>,
    /// Bare model name → indices into `providers` that declare it.
    by_model: HashMap<String, Vec<usize>>,
}

impl Gateway {
    /// Loads every provider's plugin (once per plugin) and has it validate the entry's options.
    pub async fn load(config: Config, host: &PluginHost) -> Result<Self, StartupError> {
        Self::load_replacing(config, host, None).await
    }

    /// Like [`Gateway::load`], for a reload: the limit counters of `previous` are kept when the
    /// counter store is unchanged.
    pub async fn load_replacing(
        config: Config,
        host: &PluginHost,
        previous: Option<&Gateway>,
    ) -> Result<Self, StartupError> {
        let mut plugins: HashMap<String, ProviderPlugin> = HashMap::new();
        let mut providers = Vec::with_capacity(config.providers.len());
        for (name, entry) in &config.providers {
            let plugin = match plugins.get(&entry.plugin) {
                Some(plugin) => plugin.clone(),
                None => {
                    let plugin = host
                        .load_provider(&entry.plugin, &config.plugins.dir)
                        .map_err(|source| StartupError::Load {
                            provider: name.clone(),
                            source,
                        })?;
                    plugins.insert(entry.plugin.clone(), plugin.clone());
                    plugin
                }
            };
            let plugin_failed = |source| StartupError::Plugin {
                provider: name.clone(),
                source,
            };
            let mut call = plugin
                .start(crate::plugins::SlotKind::Call)
                .await
                .map_err(plugin_failed)?;
            let mut provider_config = ProviderConfig {
                name: name.clone(),
                base_url: entry.base_url.clone(),
                api_key: entry.api_key.as_ref().map(|k| k.expose().to_owned()),
                models: entry.models.clone(),
                options: serde_json::Value::Object(entry.options.clone()).to_string(),
            };
            let description = call
                .describe(&provider_config)
                .await
                .map_err(plugin_failed)?;
            // The plugin is told the default the guard checks against, so the two agree.
            if provider_config.base_url.is_none() {
                provider_config.base_url = description.default_base_url;
            }
            let scope =
                Scope::new(name, provider_config.base_url.as_deref()).map_err(|message| {
                    StartupError::BaseUrl {
                        provider: name.clone(),
                        message,
                    }
                })?;
            if let Err(e) = call
                .validate(&provider_config)
                .await
                .map_err(plugin_failed)?
            {
                let message = match e.key {
                    // The entry's own keys are named as they are; any other is an option's.
                    Some(key) if matches!(key.as_str(), "base_url" | "api_key" | "models") => {
                        format!("{key}: {}", e.message)
                    }
                    Some(key) => format!("options.{key}: {}", e.message),
                    None => e.message,
                };
                return Err(StartupError::Rejected {
                    provider: name.clone(),
                    plugin: entry.plugin.clone(),
                    message,
                });
            }
            let native = call
                .native_dialects(&provider_config)
                .await
                .map_err(plugin_failed)?;
            let plain = match entry.plain_path {
                true => PlainPlan::load(&mut call, &provider_config, description.plain)
                    .await
                    .map_err(plugin_failed)?,
                false => PlainPlan::default(),
            };
            let system = telemetry_name(description.system.as_deref(), &entry.plugin);
            providers.push(Provider {
                name: name.as_str().into(),
                system,
                plugin,
                config: provider_config,
                timeout: entry.timeout(),
                scope,
                catalog: [
                    entry.catalog.as_deref(),
                    Some(name.as_str()),
                    Some(entry.plugin.as_str()),
                ]
                .into_iter()
                .flatten()
                .find(|p| config.models.has_provider(p))
                .map(str::to_owned),
                native,
                plain,
                models: Arc::clone(&config.models),
            });
        }
        let mut by_model: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, provider) in providers.iter().enumerate() {
            for model in &provider.config.models {
                let entry = by_model.entry(model.clone()).or_default();
                if !entry.contains(&i) {
                    entry.push(i);
                }
            }
        }
        let previous_limits = previous.map(|g| g.limits.as_ref());
        let limits = Limits::load(&config.limits, host, &config.plugins.dir, previous_limits)
            .await
            .map_err(|message| StartupError::Limits { message })?;
        let dialects = load_dialects(&config, host).await?;
        let guards = crate::guards::Guards::load(&config.guards, host, &config.plugins.dir)
            .await
            .map_err(|message| StartupError::Guards { message })?;
        let cache_key = match &config.cache.key_plugin {
            Some(entry) => Some(
                crate::cache::policy::KeyPolicy::load(entry, host, &config.plugins.dir)
                    .await
                    .map_err(|message| StartupError::CacheKey { message })?,
            ),
            None => None,
        };
        let mut gateway = Self {
            dialects,
            guards,
            cache_key,
            secrets: Arc::new(Secrets::from_config(&config)),
            limits: Arc::new(limits),
            routes: HashMap::new(),
            config,
            providers,
            by_model,
        };
        gateway.routes = gateway.load_routes(host).await?;
        Ok(gateway)
    }

    /// Loads each virtual model's router plugin, checks its targets, and has it validate its
    /// options.
    async fn load_routes(&self, host: &PluginHost) -> Result<HashMap<String, Route>, StartupError> {
        let mut routers: HashMap<String, RouterPlugin> = HashMap::new();
        let mut routes = HashMap::new();
        for (name, entry) in &self.config.routing {
            let fail = |message: String| StartupError::Route {
                route: name.clone(),
                message,
            };
            let router = match routers.get(&entry.policy) {
                Some(router) => router.clone(),
                None => {
                    let router = host
                        .load_router(&entry.policy, &self.config.plugins.dir)
                        .map_err(|e| fail(format!("policy: {e}")))?;
                    routers.insert(entry.policy.clone(), router.clone());
                    router
                }
            };
            let route = Route::from_config(router, entry);
            for (i, target) in route.targets.iter().enumerate() {
                if self.resolve(&target.id).is_err() {
                    return Err(fail(format!(
                        "targets[{i}]: `{}` is not a model of provider `{}`",
                        target.id, target.provider
                    )));
                }
            }
            let ids: Vec<String> = route.targets.iter().map(|t| t.id.clone()).collect();
            match route.router.validate(&route.options, &ids).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    let key = e.key.map(|k| format!("options.{k}: ")).unwrap_or_default();
                    return Err(fail(format!(
                        "policy `{}` rejected its options: {key}{}",
                        entry.policy, e.message
                    )));
                }
                Err(e) => return Err(fail(e.to_string())),
            }
            routes.insert(name.clone(), route);
        }
        Ok(routes)
    }

    /// `<provider>/<model>` picks the provider; a bare `<model>` must be served by exactly one.
    /// A name whose prefix is no provider (`meta-llama/Llama-3-8b`) is looked up as a bare name.
    pub fn resolve<'a>(&'a self, model: &'a str) -> Result<Target<'a>, ResolveError> {
        if let Some((prefix, rest)) = model.split_once('/')
            && let Some(provider) = self.providers.iter().find(|p| &*p.name == prefix)
        {
            if provider.passthrough() || provider.config.models.iter().any(|m| m == rest) {
                return Ok(Target {
                    provider,
                    model: rest,
                });
            }
            return Err(ResolveError::NotFound);
        }
        match self.by_model.get(model).map(Vec::as_slice) {
            Some([one]) => Ok(Target {
                provider: &self.providers[*one],
                model,
            }),
            Some(many) if !many.is_empty() => Err(ResolveError::Ambiguous(
                many.iter()
                    .map(|&i| format!("{}/{model}", self.providers[i].name))
                    .collect(),
            )),
            _ => Err(ResolveError::NotFound),
        }
    }
}

/// The `gen_ai.provider.name` a plugin stated, if it is a short name of the kind OpenTelemetry
/// lists (it goes into every span), else the plugin's own name.
fn telemetry_name(stated: Option<&str>, plugin: &str) -> Arc<str> {
    let plain = |s: &str| {
        (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
    };
    stated.filter(|s| plain(s)).unwrap_or(plugin).into()
}
