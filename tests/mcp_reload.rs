//! The `mcp:` section on a config reload of the real binary (SIGHUP): a server added is merged
//! in without a restart, one removed leaves the view while a call that was in flight on it
//! still ends well, and the Python SDK client sees both.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::binary::{Gateway, temp_dir};
use crate::common::mcp::{HttpMcpServer, TOKEN, python, python_client, script};

fn write(dir: &Path, servers: &str) {
    let text = format!(
        "server: {{ host: 127.0.0.1, port: 0 }}\n\
         plugins: {{ dir: {plugins}, cache_dir: {cache} }}\n\
         ledger: {{ url: 'sqlite://{ledger}' }}\n\
         mcp:\n  session_secret: 'reload-secret-reload-secret-reload-1'\n  servers:\n{servers}",
        plugins = dir.join("plugins").display(),
        cache = crate::common::plugin_cache_dir().display(),
        ledger = dir.join("ledger.db").display(),
    );
    // Aside and renamed over, so the watcher never reads half a file.
    let tmp = dir.join("config.yaml.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, dir.join("config.yaml")).unwrap();
}

fn search(server: &HttpMcpServer) -> String {
    format!(
        "    search:\n      url: {}\n      token: {TOKEN}\n      timeout_ms: 10000\n",
        server.url()
    )
}

fn files() -> String {
    format!(
        "    files:\n      transport: stdio\n      command: {}\n      args: ['{}']\n      timeout_ms: 10000\n",
        python().display(),
        script("stdio_server.py").display()
    )
}

fn names(listed: &Value) -> Vec<String> {
    let mut names: Vec<String> = listed["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_adds_and_removes_servers_and_spares_a_call_in_flight() {
    let server = HttpMcpServer::start(Some(TOKEN)).await;
    let dir = temp_dir("mcp-reload");
    write(&dir, &search(&server));
    let created = Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .args(["keys", "create", "--project", "acme", "--ledger"])
        .arg(format!("sqlite://{}", dir.join("ledger.db").display()))
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(created.status.success());
    let key = String::from_utf8(created.stdout).unwrap().trim().to_owned();
    let mut gateway = Gateway::serve(&dir, &dir.join("config.yaml")).await;
    let url = gateway.url("/mcp");

    // Added: `files` joins the view once it is up; `search` keeps its connection.
    write(&dir, &format!("{}{}", search(&server), files()));
    gateway.signal(libc::SIGHUP);
    let line = gateway
        .wait_for_line(
            |l| l.contains("MCP servers: 1 started, 0 retired"),
            Duration::from_secs(15),
        )
        .await;
    assert!(!line.is_empty());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = python_client(&url, &key, json!([["tools"]])).await;
        let names = names(&out[0]);
        if names.contains(&"files_add".to_owned()) {
            assert!(names.contains(&"search_search".to_owned()), "{names:?}");
            break;
        }
        assert!(Instant::now() < deadline, "files never joined: {names:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    // Removed while a call to it is in flight: the call ends well, then `search` is gone.
    // The reload waits until the server has the call (a Python client takes a while to start
    // on a loaded machine, so a fixed pause could reload before the call is sent).
    let started = dir.join("slow-started");
    let slow = tokio::spawn({
        let (url, key) = (url.clone(), key.clone());
        let args = json!({"seconds": 4, "started": started.display().to_string()});
        async move { python_client(&url, &key, json!([["call", "search_slow", args]])).await }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while !started.exists() {
        assert!(
            Instant::now() < deadline,
            "the slow call never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    write(&dir, &files());
    gateway.signal(libc::SIGHUP);
    gateway
        .wait_for_line(
            |l| l.contains("MCP servers: 0 started, 1 retired"),
            Duration::from_secs(15),
        )
        .await;
    let out = python_client(
        &url,
        &key,
        json!([["tools"], ["call", "search_search", {"query": "x"}], ["call", "files_add", {"a": 1, "b": 1}]]),
    )
    .await;
    assert!(
        names(&out[0]).iter().all(|n| n.starts_with("files_")),
        "{out}"
    );
    assert_eq!(out[1]["error"]["code"], -32602, "{out}");
    assert_eq!(out[2]["texts"], json!(["2"]));
    let slow = slow.await.unwrap();
    assert_eq!(
        slow[0]["texts"],
        json!(["done"]),
        "the call in flight across the reload ended well: {slow}"
    );
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}
