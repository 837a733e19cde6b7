//! Tests of loading whole configs: the default and example files, overrides, and errors.

use super::*;

#[test]
fn default_config_is_valid() {
    let config = Config::from_yaml(DEFAULT_CONFIG).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.server.port, 8080);
    assert!(config.providers.contains_key("echo"));
}

#[test]
fn the_example_config_is_valid() {
    let text = include_str!("../../../config.example.yaml");
    let config = Config::from_yaml(text).unwrap_or_else(|e| panic!("{e}"));
    assert!(config.providers.contains_key("openai"));
}

#[test]
fn the_example_configs_commented_presets_are_valid_once_uncommented() {
    let text = include_str!("../../../config.example.yaml");
    let block = text
        .split("# presets:begin\n")
        .nth(1)
        .and_then(|rest| rest.split("  # presets:end").next())
        .unwrap_or_default();
    let entries: String = block
        .lines()
        .map(|line| format!("{}\n", line.replacen("# ", "", 1)))
        .collect();
    assert_eq!(entries.lines().count(), 13, "{entries}");
    let config = Config::from_yaml(&format!("providers:\n{entries}"))
        .unwrap_or_else(|e| panic!("{e}\n{entries}"));
    assert_eq!(config.providers.len(), 13);
    assert!(config.providers.values().all(|p| p.plugin == "openai"));
}

#[test]
fn unknown_key_is_named_with_its_path() {
    let err = Config::from_yaml("providers:\n  p:\n    plugin: echo\n    modles: [a]\n")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("providers.p"), "{err}");
    assert!(err.contains("modles"), "{err}");
}

#[test]
fn the_journal_is_on_by_default_and_its_keys_are_checked() {
    let ledger = |yaml: &str| Config::from_yaml(yaml).map(|c| c.ledger);
    let on_disk = ledger("ledger: { url: 'sqlite:///var/lib/w/ledger.db' }\n").unwrap();
    let settings = on_disk.journal_settings().expect("on by default");
    assert_eq!(
        settings.dir,
        std::path::PathBuf::from("/var/lib/w/ledger.db.usage-journal")
    );
    assert_eq!((settings.fsync, settings.max_bytes), (false, 1 << 30));
    let shared = ledger("ledger: { url: 'postgres://u:p@db/w' }\n").unwrap();
    let settings = shared.journal_settings().expect("on by default");
    assert_eq!(settings.dir, std::path::PathBuf::from("./wasmgate-journal"));
    let memory = ledger("ledger: { url: 'sqlite::memory:' }\n").unwrap();
    assert!(
        memory.journal_settings().is_none(),
        "nothing to replay into"
    );
    let off = ledger("ledger: { journal: { enabled: false } }\n").unwrap();
    assert!(off.journal_settings().is_none());
    let set = ledger("ledger: { journal: { dir: /j, fsync: true, max_bytes: 2097152 } }\n")
        .unwrap()
        .journal_settings()
        .unwrap();
    assert_eq!(
        (set.dir, set.fsync, set.max_bytes),
        (std::path::PathBuf::from("/j"), true, 2 << 20)
    );
    let err = |yaml: &str| {
        ledger(yaml)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let small = err("ledger: { journal: { max_bytes: 1000 } }\n");
    assert!(small.contains("ledger.journal.max_bytes"), "{small}");
    let typo = err("ledger: { journal: { fsinc: true } }\n");
    assert!(
        typo.contains("ledger.journal") && typo.contains("fsinc"),
        "{typo}"
    );
}

#[test]
fn mistyped_value_is_named_with_its_path() {
    let err = Config::from_yaml("server:\n  port: eighty\n")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.starts_with("config key `server.port`"), "{err}");
}

#[test]
fn bad_base_url_is_named() {
    let err = Config::from_yaml("providers:\n  p:\n    plugin: openai\n    base_url: ftp://x\n")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("providers.p.base_url"), "{err}");
}

#[test]
fn overrides_win_over_the_file() {
    let mut config = Config::from_yaml("server: { port: 9000 }").unwrap_or_else(|e| panic!("{e}"));
    config.apply(&Overrides {
        port: Some(9100),
        ..Overrides::default()
    });
    assert_eq!(config.server.port, 9100);
}

#[test]
fn jwt_issuers_are_checked_and_named_by_their_paths() {
    let entry = "issuer: https://idp, jwks_url: 'https://idp/jwks', audiences: [wasmgate]";
    let issuer_only = "issuer: https://idp";
    let config = Config::from_yaml(&format!("auth:\n  jwt:\n    - {{ {entry} }}\n")).unwrap();
    let issuer = &config.auth.jwt[0];
    assert_eq!(
        issuer.algorithms,
        [JwtAlgorithm::RS256, JwtAlgorithm::ES256]
    );
    assert_eq!((issuer.clock_skew, issuer.jwks_cooldown), (60, 30));
    assert_eq!(
        (issuer.claims.project.as_str(), issuer.claims.user.as_str()),
        ("project", "sub")
    );
    let refused = |more: &str| {
        let entry = if more.contains("audiences") || more.contains("jwks_url") {
            issuer_only
        } else {
            entry
        };
        Config::from_yaml(&format!("auth:\n  jwt:\n    - {{ {entry}, {more} }}\n"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    for (more, path) in [
        ("algorithms: [none]", "auth.jwt[0].algorithms"),
        ("algorithms: [HS256]", "auth.jwt[0].algorithms"),
        ("algorithms: []", "auth.jwt[0].algorithms"),
        (
            "jwks_url: 'https://idp/jwks', audiences: []",
            "auth.jwt[0].audiences",
        ),
        (
            "jwks_url: 'file:///etc/keys', audiences: [a]",
            "auth.jwt[0].jwks_url",
        ),
        ("jwks_cooldown: 0", "auth.jwt[0].jwks_cooldown"),
        ("project: 'two words'", "auth.jwt[0].project"),
        ("claims: { user: '' }", "auth.jwt[0].claims.user"),
        ("claims: { scope: roles }", "auth.jwt[0].claims"),
    ] {
        let err = refused(more);
        assert!(err.contains(path), "{more}: {err}");
    }
    let twice = format!("auth:\n  jwt:\n    - {{ {entry} }}\n    - {{ {entry} }}\n");
    let err = Config::from_yaml(&twice).err().map(|e| e.to_string());
    assert!(err.is_some_and(|e| e.contains("auth.jwt[1].issuer")));
}
