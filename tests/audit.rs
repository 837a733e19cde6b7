//! The audit log through the real binary: changes made with the CLI, the admin API and a config
//! reload are each recorded with who, from where, and the values before and after (never a key
//! or its hash); `/admin/audit` filters them; `wasmgate audit verify` passes an intact chain and
//! names the entry of a row changed behind the gateway's back.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::binary::{Gateway, temp_dir};
use crate::common::gateway::{Gateway as Config, Provider};
use crate::keys::{admin, cli};

fn write_config(dir: &Path, guards: bool) -> PathBuf {
    let config = dir.join("config.yaml");
    let mut builder = Config::builder()
        .any_port()
        .ledger(&format!("sqlite://{}", dir.join("ledger.db").display()))
        .auth_required()
        .provider("echo", Provider::echo().models(["echo-1"]));
    if guards {
        builder = builder.set_yaml("guards", "[{plugin: redact}]");
    }
    std::fs::write(&config, builder.to_yaml()).unwrap();
    config
}

fn run(config: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .args(args)
        .arg("--config")
        .arg(config)
        .env_remove("WASMGATE_CONFIG")
        .output()
        .unwrap()
}

async fn audit(gateway: &Gateway, admin_key: &str, query: &str) -> Vec<Value> {
    let path = format!("/admin/audit{query}");
    let (status, body) = admin(gateway, Some(admin_key), Method::GET, &path, None).await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn every_key_change_is_in_a_chain_that_verify_checks() {
    let dir = temp_dir("audit-keys");
    let config = write_config(&dir, false);
    let admin_key = cli(&config, &["admin-key", "create", "--name", "ops"])
        .trim()
        .to_owned();
    let gateway = Gateway::serve(&dir, &config).await;

    let (status, created) = admin(
        &gateway,
        Some(&admin_key),
        Method::POST,
        "/admin/keys",
        Some(json!({"project": "acme", "rpm": 10})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let (id, secret) = (
        created["id"].as_str().unwrap().to_owned(),
        created["key"].as_str().unwrap().to_owned(),
    );
    let path = format!("/admin/keys/{id}");
    let (status, _) = admin(
        &gateway,
        Some(&admin_key),
        Method::PATCH,
        &path,
        Some(json!({"rpm": 20})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = admin(&gateway, Some(&admin_key), Method::DELETE, &path, None).await;
    assert_eq!(status, 200);

    let entries = audit(&gateway, &admin_key, "").await;
    let actions: Vec<&str> = entries
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["admin_key.create", "key.create", "key.update", "key.revoke"]
    );
    assert!(entries[0]["actor"].as_str().unwrap().starts_with("cli:"));
    assert!(entries[0]["origin"].as_str().unwrap().starts_with("cli@"));
    let admin_id = entries[0]["target"].as_str().unwrap();
    assert!(admin_id.starts_with("adm_"), "{}", entries[0]);
    for entry in &entries[1..] {
        assert_eq!(entry["actor"], format!("admin:{admin_id}"));
        assert_eq!(entry["origin"], "admin API");
        assert_eq!(entry["target"], id.as_str());
    }
    assert_eq!(entries[1]["before"], Value::Null);
    assert_eq!(entries[1]["after"]["rpm"], 10);
    assert_eq!(entries[2]["before"]["rpm"], 10);
    assert_eq!(entries[2]["after"]["rpm"], 20);
    assert_eq!(entries[3]["before"]["revoked_us"], Value::Null);
    assert!(entries[3]["after"]["revoked_us"].is_i64(), "{}", entries[3]);
    for (n, entry) in entries.iter().enumerate() {
        assert_eq!(entry["seq"], n + 1);
        if n > 0 {
            assert_eq!(entry["prev_hash"], entries[n - 1]["hash"]);
        }
    }
    // Neither key nor any hash of one is in the log.
    let text = Value::from(entries.clone()).to_string();
    assert!(!text.contains(&secret) && !text.contains(&admin_key));
    for key in [&secret, &admin_key] {
        assert!(!text.contains(&wasmgate::auth::hash(key)), "a key's hash");
    }

    // Filters and pages.
    let updates = audit(&gateway, &admin_key, "?action=key.update").await;
    assert_eq!(updates.len(), 1);
    let page = audit(&gateway, &admin_key, "?after=1&limit=2").await;
    assert_eq!(page[0]["seq"], 2);
    assert_eq!(page.len(), 2);
    let (status, body) = admin(
        &gateway,
        Some(&admin_key),
        Method::GET,
        "/admin/audit?action=key.delete",
        None,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, _) = admin(&gateway, None, Method::GET, "/admin/audit", None).await;
    assert_eq!(status, 401);
    drop(gateway);

    let verified = run(&config, &["audit", "verify"]);
    let stdout = String::from_utf8_lossy(&verified.stdout);
    assert!(verified.status.success(), "{verified:?}");
    assert!(stdout.starts_with("ok: 4 entries"), "{stdout}");
    let listed = run(&config, &["audit", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("key.revoke"));

    // Someone with the database rewrites who made a change.
    let db = rusqlite::Connection::open(dir.join("ledger.db")).unwrap();
    db.execute(
        "UPDATE audit_log SET actor = 'admin:someone' WHERE seq = 3",
        [],
    )
    .unwrap();
    drop(db);
    let verified = run(&config, &["audit", "verify"]);
    let stdout = String::from_utf8_lossy(&verified.stdout);
    assert!(!verified.status.success(), "{stdout}");
    assert!(stdout.contains("broken at entry 3"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_config_reload_is_recorded_with_the_sections_it_changed() {
    let dir = temp_dir("audit-reload");
    let config = write_config(&dir, false);
    let admin_key = cli(&config, &["admin-key", "create"]).trim().to_owned();
    let mut gateway = Gateway::serve(&dir, &config).await;

    write_config(&dir, true);
    gateway.signal(libc::SIGHUP);
    let line = gateway
        .wait_for_line(|l| l.contains("config reloaded"), Duration::from_secs(15))
        .await;
    assert!(!line.is_empty());
    let mut reloads = Vec::new();
    for _ in 0..50 {
        reloads = audit(&gateway, &admin_key, "?action=config.reload").await;
        if !reloads.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let reload = &reloads[0];
    assert_eq!(reload["actor"], "config file");
    assert_eq!(reload["target"], config.display().to_string());
    assert_eq!(reload["after"]["changed_sections"], json!(["guards"]));
    assert_ne!(reload["before"]["sha256"], reload["after"]["sha256"]);
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}
