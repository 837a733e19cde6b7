//! The WIT contract and the Python and JavaScript SDKs, compiled into the binary so that
//! `plugin build` uses the ones this gateway speaks, and written into a project's `.wasmgate/`.

use std::path::Path;

macro_rules! files {
    ($root:literal: $($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../../../", $root, "/", $path)))),*]
    };
}

/// The WIT package, `wasmgate:plugin@0.1.0`.
pub const WIT: &[(&str, &str)] = files!("wit": "types.wit", "router.wit", "limiter.wit", "provider.wit", "guard.wit", "cache-key.wit");

/// The Python SDK: `wasmgate_plugin/` and the `provider` module componentize-py looks for.
pub const PYTHON: &[(&str, &str)] = files!("sdk/python":
    "provider.py",
    "guard.py",
    "wasmgate_plugin/__init__.py",
    "wasmgate_plugin/_export.py",
    "wasmgate_plugin/_host.py",
    "wasmgate_plugin/cache_key.py",
    "wasmgate_plugin/errors.py",
    "wasmgate_plugin/guard.py",
    "wasmgate_plugin/limiter.py",
    "wasmgate_plugin/openai.py",
    "wasmgate_plugin/options.py",
    "wasmgate_plugin/passthrough.py",
    "wasmgate_plugin/provider.py",
    "wasmgate_plugin/router.py",
);

/// The JavaScript SDK, its build script and its test stand-ins.
pub const JS: &[(&str, &str)] = files!("sdk/js":
    "package.json",
    "build.mjs",
    "_export.js",
    "cache_key.js",
    "errors.js",
    "guard.js",
    "host.js",
    "limiter.js",
    "openai.js",
    "options.js",
    "passthrough.js",
    "provider.js",
    "router.js",
    "testing/hooks.js",
    "testing/host.js",
    "testing/register.js",
);

/// Writes `files` under `dir`, replacing what an older gateway wrote there.
pub fn write(dir: &Path, files: &[(&str, &str)]) -> std::io::Result<()> {
    for (path, text) in files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    Ok(())
}
