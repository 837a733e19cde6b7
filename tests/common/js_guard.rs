//! JavaScript guards as an author makes them: `plugin new guard --lang js`, an `app.js` of the
//! test's own if it has one, and `plugin build` with the pinned toolchain `scripts/polyglot.sh`
//! installs; then a gateway that loads them from `plugins.dir`.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::{TestGateway, http, plugin_cache_dir};

/// The reply of the provider `b` of [`js_guarded`].
pub const FALCON: &str = "The falcon flies at dawn.";

/// Creates the JavaScript guard project `name` in `dir` from the template, with `app` as its
/// `app.js` if given (and then without the template's own tests, which are of the template's
/// guard), and builds it into `dir/plugins`, which it returns.
pub fn build_js_guard(dir: &Path, name: &str, app: Option<&str>) -> PathBuf {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/polyglot");
    assert!(
        tools.join("js/node_modules").exists(),
        "the JavaScript toolchain is missing: run scripts/polyglot.sh"
    );
    let wasmgate = env!("CARGO_BIN_EXE_wasmgate");
    let created = std::process::Command::new(wasmgate)
        .args(["plugin", "new", "guard", name, "--lang", "js", "--dir"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let project = dir.join(name);
    if let Some(app) = app {
        std::fs::write(project.join("app.js"), app).unwrap();
        let _ = std::fs::remove_file(project.join("app.test.js"));
    }
    let plugins = dir.join("plugins");
    let built = std::process::Command::new(wasmgate)
        .args(["plugin", "build"])
        .arg(&project)
        .arg("--out")
        .arg(&plugins)
        .env("WASMGATE_JS_TOOLCHAIN", tools.join("js"))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}{}",
        String::from_utf8_lossy(&built.stdout),
        String::from_utf8_lossy(&built.stderr)
    );
    plugins
}

/// A gateway loading the plugins in `plugins`, with two echo providers, `a` (which echoes) and
/// `b` (which always answers [`FALCON`]), and `guards` (the items of a `guards:` list).
pub async fn js_guarded(plugins: &Path, guards: &str) -> TestGateway {
    TestGateway::start(&format!(
        r#"
plugins: {{ dir: "{dir}", cache_dir: "{cache}", max_instances: 16 }}
providers:
  a: {{ plugin: echo, models: [m] }}
  b: {{ plugin: echo, models: [m], options: {{ reply: "{FALCON}" }} }}
guards:
{guards}"#,
        dir = plugins.display(),
        cache = plugin_cache_dir().display(),
    ))
    .await
}

/// One user turn to `model`, whole or streamed.
pub async fn say(
    gateway: &TestGateway,
    model: &str,
    text: &str,
    stream: bool,
) -> reqwest::Response {
    http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": model, "stream": stream,
            "messages": [{"role": "user", "content": text}]}))
        .send()
        .await
        .unwrap()
}
