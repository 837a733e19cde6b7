//! Builds the plugin components (guest crates for `wasm32-wasip2`) so that the `wasmgate` binary
//! can embed the built-in ones and tests can load the test-only ones, and writes the tokenizer's
//! vocabulary (`build/vocabulary.rs`).
//!
//! The built-in plugins are the plugin crates (`cdylib`s) of the `plugins/` and `policies/`
//! workspaces: adding a crate there is all it takes to embed it. `built_in.rs` in `OUT_DIR`
//! lists them for `src/plugins/mod.rs`.
//!
//! The guests live in workspaces of their own (`plugins/`, `tests/plugins/`): built natively as
//! members of the host's workspace they would fail to link. They get their own target directory
//! so this nested build does not wait on the outer build's lock.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "build/vocabulary.rs"]
mod vocabulary;

const TARGET: &str = "wasm32-wasip2";

/// zstd level of the embedded plugins: 19 gains a few per cent over this at ten times the time,
/// and this runs on every build that rebuilt a plugin.
const ZSTD_LEVEL: i32 = 12;

/// (guest workspace, where under target/ its components are copied)
const WORKSPACES: &[(&str, &str)] = &[
    ("plugins", "plugins"),
    ("policies", "plugins"),
    ("tests/plugins", "test-plugins"),
    ("tests/policies", "test-plugins"),
];

fn main() {
    if let Err(e) = run() {
        println!("cargo::error={e}");
    }
}

fn run() -> Result<(), String> {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
    let root = manifest_dir
        .parent()
        .ok_or("host/ has no parent directory")?
        .to_path_buf();
    let out_dir = PathBuf::from(env("OUT_DIR")?);
    vocabulary::write(&out_dir)?;
    for dir in [
        "plugins",
        "policies",
        "plugin-sdk",
        "wit",
        "tests/plugins",
        "tests/policies",
    ] {
        println!("cargo::rerun-if-changed={}", root.join(dir).display());
    }
    println!("cargo::rerun-if-env-changed=WASMGATE_SKIP_GUEST_BUILD");
    // For host development while guest crates are mid-change: reuse the last built components.
    let skip_build = std::env::var_os("WASMGATE_SKIP_GUEST_BUILD").is_some();
    if skip_build {
        println!("cargo::warning=WASMGATE_SKIP_GUEST_BUILD is set: using previously built plugins");
    } else {
        ensure_target()?;
    }
    let target_dir = root.join("target").join("guests");
    for (workspace, copy_to) in WORKSPACES {
        if !root.join(workspace).join("Cargo.toml").exists() {
            println!("cargo::warning=no guest workspace at {workspace}/");
            continue;
        }
        let built = if skip_build {
            built_components(&root.join(workspace), &target_dir)?
        } else {
            build_workspace(&root.join(workspace), &target_dir)?
        };
        let dest = root.join("target").join(copy_to);
        std::fs::create_dir_all(&dest).map_err(|e| format!("creating {}: {e}", dest.display()))?;
        for (name, path) in built {
            copy(&path, &dest.join(format!("{name}.wasm")))?;
            if *copy_to == "plugins" {
                copy(&path, &out_dir.join(format!("{name}.wasm")))?;
            }
        }
    }
    let mut built_in = Vec::new();
    for (workspace, copy_to) in WORKSPACES {
        if *copy_to == "plugins" {
            built_in.extend(plugin_crates(&root.join(workspace))?);
        }
    }
    built_in.sort();
    let mut list = String::from("&[\n");
    for name in &built_in {
        let path = out_dir.join(format!("{name}.wasm"));
        let wasm = std::fs::read(&path).unwrap_or_else(|_| {
            // Keeps the host compiling while a plugin is missing; loading it then fails clearly.
            println!("cargo::warning=built-in plugin `{name}` was not built");
            Vec::new()
        });
        // Embedded compressed: the components were 15 of the shipped binary's MB, and a
        // built-in is decompressed once per load (milliseconds), not per request.
        let packed = zstd::bulk::compress(&wasm, ZSTD_LEVEL)
            .map_err(|e| format!("compressing {}: {e}", path.display()))?;
        let zst = out_dir.join(format!("{name}.wasm.zst"));
        std::fs::write(&zst, packed).map_err(|e| format!("{}: {e}", zst.display()))?;
        list.push_str(&format!(
            "    ({name:?}, include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{name}.wasm.zst\"))),\n"
        ));
    }
    list.push_str("]\n");
    let generated = out_dir.join("built_in.rs");
    std::fs::write(&generated, list).map_err(|e| format!("{}: {e}", generated.display()))?;
    println!(
        "cargo::rustc-env=WASMGATE_TEST_PLUGINS_DIR={}",
        root.join("target").join("test-plugins").display()
    );
    Ok(())
}

/// Adds the wasm target with rustup when it is missing.
fn ensure_target() -> Result<(), String> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    if let Ok(out) = &installed
        && String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.trim() == TARGET)
    {
        return Ok(());
    }
    let status = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status()
        .map_err(|e| format!("running `rustup target add {TARGET}`: {e}"))?;
    if !status.success() {
        return Err(format!("`rustup target add {TARGET}` failed"));
    }
    Ok(())
}

/// Builds one guest workspace; returns (plugin name, path of its .wasm) for each cdylib.
fn build_workspace(workspace: &Path, target_dir: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace)
        .args(["build", "--release", "--target", TARGET, "--target-dir"])
        .arg(target_dir);
    // The outer build's flags and wrappers (clippy, coverage) are meant for the host only.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_PROFILE_RELEASE_DEBUG",
    ] {
        command.env_remove(var);
    }
    let status = command
        .status()
        .map_err(|e| format!("building the plugins in {}: {e}", workspace.display()))?;
    if !status.success() {
        return Err(format!(
            "building the plugins in {} failed",
            workspace.display()
        ));
    }
    built_components(workspace, target_dir)
}

/// The names of the plugin crates (`crate-type = ["cdylib"]`) of `workspace`: its directories
/// whose manifest builds a component, not a library (the test kit).
fn plugin_crates(workspace: &Path) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let entries =
        std::fs::read_dir(workspace).map_err(|e| format!("{}: {e}", workspace.display()))?;
    for entry in entries.flatten() {
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let is_component = text
            .lines()
            .any(|l| l.replace(' ', "").starts_with("crate-type=[\"cdylib\"]"));
        if let (true, Some(name)) = (is_component, entry.file_name().to_str()) {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// (plugin name, path of its .wasm) for each plugin crate of `workspace` that has been built.
fn built_components(workspace: &Path, target_dir: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let release = target_dir.join(TARGET).join("release");
    let mut built = Vec::new();
    let entries =
        std::fs::read_dir(workspace).map_err(|e| format!("{}: {e}", workspace.display()))?;
    for entry in entries.flatten() {
        let dir = entry.path();
        if !dir.join("Cargo.toml").exists() {
            continue;
        }
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let artefact = release.join(format!("wasmgate_plugin_{}.wasm", name.replace('-', "_")));
        if artefact.exists() {
            built.push((name.to_owned(), artefact));
        }
    }
    Ok(built)
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}
