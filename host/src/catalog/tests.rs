//! Tests of the built-in catalog's data and of loading and merging catalogs.

use std::collections::HashSet;

use super::*;

/// USD per million tokens → the catalog's pico-USD per token.
fn mtok(usd: f64) -> Option<i64> {
    Some((usd * 1e6).round() as i64)
}

fn builtin(provider: &str, model: &str) -> &'static ModelInfo {
    match Catalog::builtin().lookup(provider, model) {
        Some(info) => info,
        None => panic!("{provider}/{model} is not in the built-in catalog"),
    }
}

#[test]
fn builtin_catalog_parses_and_is_large() {
    // Parsed directly so that a broken file fails here with its error, not as an empty catalog.
    let catalog = match Catalog::from_yaml(BUILTIN_YAML) {
        Ok(c) => c,
        Err(e) => panic!("models.yaml: {e}"),
    };
    assert!(catalog.len() >= 300, "only {} models", catalog.len());
    assert_eq!(Catalog::builtin().len(), catalog.len());
}

#[test]
fn every_provider_has_a_source_and_models() {
    let catalog = Catalog::builtin();
    let expected = [
        "openai",
        "azure-openai",
        "anthropic",
        "gemini",
        "mistral",
        "groq",
        "deepseek",
        "together",
        "fireworks",
        "openrouter",
        "xai",
        "perplexity",
        "deepinfra",
        "cerebras",
        "cohere",
        "bedrock",
        "ollama",
        "vllm",
        "lmstudio",
    ];
    for name in expected {
        assert!(catalog.has_provider(name), "{name} is missing");
    }
    for (name, source) in catalog.providers() {
        assert!(source.is_some(), "{name} has no source");
        assert!(
            catalog.models().any(|m| m.provider == name),
            "{name} is empty"
        );
    }
}

#[test]
fn no_provider_model_pair_is_listed_twice() {
    // The loader rejects duplicates; this checks that the raw file has none either.
    let file: CatalogFile = match serde_yaml::from_str(BUILTIN_YAML) {
        Ok(f) => f,
        Err(e) => panic!("{e}"),
    };
    let mut seen = HashSet::new();
    let mut providers = HashSet::new();
    for block in &file.providers {
        assert!(
            providers.insert(&block.provider),
            "{} twice",
            block.provider
        );
        for entry in &block.models {
            assert!(
                seen.insert((&block.provider, &entry.model)),
                "{}/{} twice",
                block.provider,
                entry.model
            );
        }
    }
}

#[test]
fn every_model_is_coherent() {
    for m in Catalog::builtin().models() {
        let id = format!("{}/{}", m.provider, m.model);
        if m.kind != Kind::Images {
            assert!(
                m.prices.per_image.is_none(),
                "{id}: per-image price on a token model"
            );
        }
        if m.kind == Kind::Embeddings {
            assert!(
                m.prices.output.is_none(),
                "{id}: embeddings have no output tokens"
            );
        }
        if let (Some(input), Some(cached)) = (m.prices.input, m.prices.cached_input) {
            assert!(cached <= input, "{id}: cache hits cost more than input");
        }
        if let (Some(input), Some(write)) = (m.prices.input, m.prices.cache_write) {
            assert!(write >= input, "{id}: cache writes cost less than input");
        }
        if ["ollama", "vllm", "lmstudio"].contains(&m.provider.as_str()) {
            assert_eq!(m.prices.input, Some(0), "{id}: local models are free");
        }
    }
}

#[test]
fn spot_check_verified_prices() {
    let m = builtin("openai", "gpt-4o-mini");
    assert_eq!(
        (m.prices.input, m.prices.output, m.prices.cached_input),
        (mtok(0.15), mtok(0.6), mtok(0.075))
    );
    assert_eq!(m.context_window, Some(128_000));
    assert!(m.capabilities.tools && m.capabilities.vision && m.capabilities.json_mode);

    let m = builtin("openai", "gpt-5.4");
    assert_eq!(
        (m.prices.input, m.prices.output, m.prices.cached_input),
        (mtok(2.5), mtok(15.0), mtok(0.25))
    );
    assert_eq!(
        builtin("openai", "text-embedding-3-small").prices.input,
        mtok(0.02)
    );
    assert_eq!(
        builtin("openai", "dall-e-3").prices.per_image,
        Some(40_000_000_000)
    );

    // Azure OpenAI charges OpenAI's prices.
    assert_eq!(
        builtin("azure-openai", "gpt-4.1").prices,
        builtin("openai", "gpt-4.1").prices
    );

    let m = builtin("anthropic", "claude-sonnet-4-6");
    assert_eq!((m.prices.input, m.prices.output), (mtok(3.0), mtok(15.0)));
    assert_eq!(
        (m.prices.cached_input, m.prices.cache_write),
        (mtok(0.3), mtok(3.75))
    );
    let m = builtin("anthropic", "claude-haiku-4-5");
    assert_eq!(
        (m.prices.input, m.prices.output, m.prices.cache_write),
        (mtok(1.0), mtok(5.0), mtok(1.25))
    );

    let m = builtin("gemini", "gemini-2.5-flash");
    assert_eq!((m.prices.input, m.prices.output), (mtok(0.3), mtok(2.5)));
    assert_eq!(
        builtin("gemini", "imagen-4.0-generate-001")
            .prices
            .per_image,
        Some(40_000_000_000)
    );

    let m = builtin("deepseek", "deepseek-v4-flash");
    assert_eq!(
        (m.prices.input, m.prices.output, m.prices.cached_input),
        (mtok(0.14), mtok(0.28), Some(2_800))
    );
    assert_eq!(
        builtin("deepseek", "deepseek-v4-pro").prices.cached_input,
        Some(3_625)
    );

    let m = builtin("groq", "openai/gpt-oss-120b");
    assert_eq!(
        (m.prices.input, m.prices.output, m.prices.cached_input),
        (mtok(0.15), mtok(0.6), mtok(0.075))
    );
    let m = builtin("xai", "grok-4.3");
    assert_eq!(
        (m.prices.input, m.prices.output, m.prices.cached_input),
        (mtok(1.25), mtok(2.5), mtok(0.2))
    );
    // Retired xAI slugs are billed at Grok 4.3's rates.
    assert_eq!(
        builtin("xai", "grok-3").prices,
        builtin("xai", "grok-4.3").prices
    );
    assert_eq!(
        builtin("cerebras", "gpt-oss-120b").prices.output,
        mtok(0.75)
    );
    assert_eq!(builtin("perplexity", "sonar-pro").prices.output, mtok(15.0));
    assert_eq!(
        builtin("mistral", "mistral-large-latest").prices.input,
        mtok(0.5)
    );
}

#[test]
fn unpriced_models_are_listed_without_prices() {
    let m = builtin("cohere", "command-a-vision-07-2025");
    assert!(!m.is_priced());
    assert_eq!(m.prices, Prices::default());
    assert!(builtin("openai", "gpt-4o").is_priced());
}

#[test]
fn overrides_replace_and_add_models() {
    let overrides = Catalog::from_yaml(
        r#"
providers:
  - provider: openai
    models:
      - {model: gpt-4o-mini, kind: chat, input_per_mtok: 0.1, output_per_mtok: 0.4}
  - provider: acme
    source: "our contract, 2026-11"
    models:
      - {model: acme-large, kind: chat, context_window: 32000, capabilities: {tools: true}, input_per_mtok: 1, output_per_mtok: 2}
"#,
    );
    let overrides = match overrides {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let base = Catalog::builtin();
    let merged = base.merge(&overrides);
    assert_eq!(merged.len(), base.len() + 1);
    let replaced = merged.lookup("openai", "gpt-4o-mini");
    assert_eq!(replaced.map(|m| m.prices.input), Some(mtok(0.1)));
    // Replaced whole: fields the override leaves out are gone.
    assert_eq!(replaced.map(|m| m.prices.cached_input), Some(None));
    let added = merged.lookup("acme", "acme-large");
    assert_eq!(added.map(|m| m.capabilities.tools), Some(true));
    // The base keeps its source where the override has none; the new provider brings its own.
    let sources: Vec<_> = merged.providers().collect();
    assert!(sources.iter().any(|&(p, s)| p == "openai" && s.is_some()));
    assert!(sources.contains(&("acme", Some("our contract, 2026-11"))));
    // The built-in catalog is untouched.
    assert_eq!(
        base.lookup("openai", "gpt-4o-mini").map(|m| m.prices.input),
        Some(mtok(0.15))
    );
}

#[test]
fn bad_files_are_rejected_with_the_key_at_fault() {
    let error = |text: &str| match Catalog::from_yaml(text) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    };
    let e = error("providers: [{provider: p, models: [{model: m, kind: chat, price: 1}]}]");
    assert!(
        e.contains("providers[0].models[0]") && e.contains("price"),
        "{e}"
    );
    let e = error("providers: [{provider: p, models: [{model: m, kind: audio}]}]");
    assert!(e.contains("kind"), "{e}");
    let e =
        error("providers: [{provider: p, models: [{model: m, kind: chat, input_per_mtok: -1}]}]");
    assert!(e.contains("providers[0].models[0].input_per_mtok"), "{e}");
    let e = error(
        "providers: [{provider: p, models: [{model: m, kind: chat}, {model: m, kind: chat}]}]",
    );
    assert!(
        e.contains("providers[0].models[1].model") && e.contains("twice"),
        "{e}"
    );
    let e = error("providers: [{provider: p}, {provider: p}]");
    assert!(e.contains("providers[1].provider"), "{e}");
    let e = error("providers: [{provider: 'a/b'}]");
    assert!(e.contains("providers[0].provider"), "{e}");
    let e = error("providers: [{provider: p, models: [{model: '', kind: chat}]}]");
    assert!(e.contains("providers[0].models[0].model"), "{e}");
    let e = error("providers: [");
    assert!(e.contains("YAML"), "{e}");
    assert!(matches!(Catalog::from_yaml(""), Ok(c) if c.is_empty()));
}

#[test]
fn kinds_parse_from_the_command_line() {
    assert_eq!("chat".parse::<Kind>(), Ok(Kind::Chat));
    assert_eq!("embeddings".parse::<Kind>(), Ok(Kind::Embeddings));
    assert_eq!("image".parse::<Kind>(), Ok(Kind::Images));
    assert!("audio".parse::<Kind>().is_err());
}
