//! The catalog itself: models by provider, in the order the catalog lists them, merged with
//! overrides and looked up by provider and model.

use std::sync::Arc;

use indexmap::IndexMap;

use super::model_info::ModelInfo;

#[derive(Debug, Clone, Default)]
pub(super) struct ProviderModels {
    pub(super) source: Option<String>,
    /// Shared, so that a request can hold its model's prices past a config reload without
    /// copying them, and merging catalogs copies no model.
    pub(super) models: IndexMap<String, Arc<ModelInfo>>,
}

/// Models by provider, in the order the catalog lists them.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub(super) providers: IndexMap<String, ProviderModels>,
}

impl Catalog {
    /// This catalog with `overrides` applied: an override replaces the model with the same
    /// provider and name, or adds it; a provider's source is replaced when the override has one.
    pub fn merge(&self, overrides: &Catalog) -> Catalog {
        let mut merged = self.clone();
        for (name, theirs) in &overrides.providers {
            let ours = merged.providers.entry(name.clone()).or_default();
            if theirs.source.is_some() {
                ours.source.clone_from(&theirs.source);
            }
            for (model, info) in &theirs.models {
                ours.models.insert(model.clone(), Arc::clone(info));
            }
        }
        merged
    }

    pub fn lookup(&self, provider: &str, model: &str) -> Option<&ModelInfo> {
        self.shared(provider, model).map(|info| &**info)
    }

    /// [`Catalog::lookup`], as a handle that outlives the catalog.
    pub fn shared(&self, provider: &str, model: &str) -> Option<&Arc<ModelInfo>> {
        self.providers.get(provider)?.models.get(model)
    }

    /// Every model, grouped by provider.
    pub fn models(&self) -> impl Iterator<Item = &ModelInfo> {
        self.providers
            .values()
            .flat_map(|p| p.models.values().map(|info| &**info))
    }

    /// The names of `provider`'s models, in catalog order; none for an unknown provider.
    pub fn model_names(&self, provider: &str) -> impl Iterator<Item = &str> {
        self.providers
            .get(provider)
            .into_iter()
            .flat_map(|p| p.models.keys().map(String::as_str))
    }

    /// Each provider's name and the source of its prices.
    pub fn providers(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.providers
            .iter()
            .map(|(name, p)| (name.as_str(), p.source.as_deref()))
    }

    pub fn has_provider(&self, provider: &str) -> bool {
        self.providers.contains_key(provider)
    }

    /// How many models the catalog holds.
    pub fn len(&self) -> usize {
        self.providers.values().map(|p| p.models.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
