//! A plugin project's commands: `new` writes its template, `build` runs its language's
//! toolchain into a component, `test` runs its unit tests.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

use super::embedded;
use super::kind::Kind;
use super::lang::Lang;
use super::templates;

/// `wasmgate-plugin.yaml`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    name: String,
    kind: Kind,
    lang: Lang,
}

const MANIFEST: &str = "wasmgate-plugin.yaml";

/// Where the build tools are. `None` fields mean the defaults: `componentize-py` and `python3`
/// on `PATH`; the project's own `node_modules` (after `npm install`); `cargo` on `PATH`.
#[derive(Debug, Default, Clone)]
pub struct Toolchain {
    /// A Python virtual environment with `componentize-py` installed (`<dir>/bin/...`).
    pub python: Option<PathBuf>,
    /// A directory whose `node_modules` has `@bytecodealliance/componentize-js` and `rolldown`.
    pub js: Option<PathBuf>,
}

impl Toolchain {
    /// The same directories as absolute paths: the tools run in the project's directory.
    fn absolute(&self) -> anyhow::Result<Self> {
        let abs = |dir: &Option<PathBuf>| dir.as_deref().map(absolute).transpose();
        Ok(Self {
            python: abs(&self.python)?,
            js: abs(&self.js)?,
        })
    }
}

/// The Rust SDK this binary was built with, for Rust templates' path dependency.
pub fn default_rust_sdk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugin-sdk")
}

/// Writes a new project `<parent>/<name>` and returns its path.
pub fn new(
    kind: Kind,
    name: &str,
    lang: Lang,
    parent: &Path,
    rust_sdk: &Path,
    note: &mut dyn Write,
) -> anyhow::Result<PathBuf> {
    check_name(name)?;
    let dir = parent.join(name);
    if dir.exists() {
        bail!("{} already exists", dir.display());
    }
    let sdk = std::fs::canonicalize(rust_sdk).unwrap_or_else(|_| rust_sdk.to_path_buf());
    let crate_name = format!("wasmgate-plugin-{name}");
    for (path, text) in templates::files(lang, kind) {
        let text = text
            .replace("{{name}}", name)
            .replace("{{kind}}", kind.name())
            .replace("{{crate}}", &crate_name)
            .replace("{{sdk}}", &sdk.display().to_string());
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let manifest = Manifest {
        name: name.to_owned(),
        kind,
        lang,
    };
    std::fs::write(dir.join(MANIFEST), serde_yaml::to_string(&manifest)?)?;
    let first = match lang {
        Lang::Js => format!("cd {} && npm install && ", dir.display()),
        Lang::Python | Lang::Rust => format!("cd {} && ", dir.display()),
    };
    writeln!(
        note,
        "Created the {} {} `{name}` in {}.\nNext: {first}wasmgate plugin test && wasmgate plugin build --out <plugins.dir>",
        lang_name(lang),
        kind.name(),
        dir.display()
    )?;
    Ok(dir)
}

/// Builds the project in `project` into `<out>/<name>.wasm` and returns that path. The file is
/// written under a temporary name and renamed into place, so a gateway watching `out` never
/// loads half of it.
pub fn build(
    project: &Path,
    out: &Path,
    tools: &Toolchain,
    note: &mut dyn Write,
) -> anyhow::Result<PathBuf> {
    let project = &absolute(project)?;
    let tools = &tools.absolute()?;
    let manifest = read_manifest(project)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let out = &absolute(out)?;
    let dest = out.join(format!("{}.wasm", manifest.name));
    let partial = out.join(format!(".{}.wasm.partial", manifest.name));
    let started = std::time::Instant::now();
    match manifest.lang {
        Lang::Python => {
            let gen_dir = prepare(project, embedded::PYTHON, "python")?;
            let mut command = Command::new(python_tool(tools, "componentize-py"));
            command
                .current_dir(project)
                .arg("-d")
                .arg(gen_dir.join("wit"))
                .args([
                    "-w",
                    &manifest.kind.world(),
                    "componentize",
                    "app",
                    "-p",
                    ".",
                ])
                .arg("-p")
                .arg(gen_dir.join("python"))
                .arg("-o")
                .arg(&partial);
            run(
                command,
                "componentize-py",
                "pip install componentize-py==0.25.1",
            )?;
        }
        Lang::Js => {
            let gen_dir = prepare(project, embedded::JS, "js")?;
            let toolchain = tools.js.clone().unwrap_or_else(|| project.to_path_buf());
            let mut command = Command::new("node");
            command
                .current_dir(project)
                .arg(gen_dir.join("js").join("build.mjs"))
                .arg("app.js")
                .args(["--world", &manifest.kind.world()])
                .arg("--wit")
                .arg(gen_dir.join("wit"))
                .arg("--toolchain")
                .arg(&toolchain)
                .arg("-o")
                .arg(&partial);
            run(
                command,
                "node",
                "install Node.js 20 or later, then `npm install` in the project",
            )?;
        }
        Lang::Rust => {
            let mut command = Command::new("cargo");
            command
                .current_dir(project)
                .args(["build", "--release", "--target", "wasm32-wasip2"]);
            run(command, "cargo", "rustup target add wasm32-wasip2")?;
            let target_dir = std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| project.join("target"), |dir| project.join(dir));
            let artefact = target_dir.join("wasm32-wasip2/release").join(format!(
                "wasmgate_plugin_{}.wasm",
                manifest.name.replace('-', "_")
            ));
            std::fs::copy(&artefact, &partial)
                .with_context(|| format!("copying {}", artefact.display()))?;
        }
    }
    std::fs::rename(&partial, &dest)
        .with_context(|| format!("moving the build to {}", dest.display()))?;
    let size = std::fs::metadata(&dest).map(|m| m.len()).unwrap_or(0);
    writeln!(
        note,
        "Built {} ({:.1} MB) in {:.1} s. Reference it as `{}` (policy: or plugin:) with plugins.dir = {}.",
        dest.display(),
        size as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        manifest.name,
        out.display()
    )?;
    Ok(dest)
}

/// Runs the project's unit tests natively, with the SDK's stand-ins for the host.
pub fn test(project: &Path, tools: &Toolchain) -> anyhow::Result<()> {
    let project = &absolute(project)?;
    let tools = &tools.absolute()?;
    let manifest = read_manifest(project)?;
    match manifest.lang {
        Lang::Python => {
            let gen_dir = prepare(project, embedded::PYTHON, "python")?;
            let bindings = gen_dir.join("bindings");
            // componentize-py refuses to write into a directory that exists: drop the last run's.
            match std::fs::remove_dir_all(&bindings) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(e).with_context(|| format!("removing {}", bindings.display()));
                }
            }
            let mut command = Command::new(python_tool(tools, "componentize-py"));
            command
                .current_dir(project)
                .arg("-d")
                .arg(gen_dir.join("wit"))
                .args(["-w", &manifest.kind.world(), "bindings"])
                .arg(&bindings);
            run(
                command,
                "componentize-py",
                "pip install componentize-py==0.25.1",
            )?;
            let path =
                std::env::join_paths([project.to_path_buf(), gen_dir.join("python"), bindings])?;
            let mut command = Command::new(python_tool(tools, "python3"));
            command
                .current_dir(project)
                .env("PYTHONPATH", path)
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .args(["-m", "unittest", "discover", "-s", ".", "-p", "*_test.py"]);
            run(command, "python3", "install Python 3.11 or later")
        }
        Lang::Js => {
            let gen_dir = prepare(project, embedded::JS, "js")?;
            let mut command = Command::new("node");
            command
                .current_dir(project)
                .arg("--import")
                .arg(gen_dir.join("js/testing/register.js"))
                .args(["--test", "app.test.js"]);
            run(command, "node", "install Node.js 20 or later")
        }
        Lang::Rust => {
            let mut command = Command::new("cargo");
            command.current_dir(project).arg("test");
            run(command, "cargo", "install Rust with rustup")
        }
    }
}

/// The tools run in the project's directory, and node reads a relative path as a package name.
fn absolute(project: &Path) -> anyhow::Result<PathBuf> {
    std::fs::canonicalize(project)
        .with_context(|| format!("{} is not a directory", project.display()))
}

fn lang_name(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "Rust",
        Lang::Python => "Python",
        Lang::Js => "JavaScript",
    }
}

/// A plugin name is a file stem and a config value: lower-case letters, digits and dashes.
fn check_name(name: &str) -> anyhow::Result<()> {
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !ok {
        bail!(
            "`{name}` is not a plugin name: use lower-case letters, digits and dashes, starting with a letter"
        );
    }
    Ok(())
}

fn read_manifest(project: &Path) -> anyhow::Result<Manifest> {
    let path = project.join(MANIFEST);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "{} is not a plugin project (no {MANIFEST}; see `wasmgate plugin new`)",
            project.display()
        )
    })?;
    let manifest: Manifest =
        serde_yaml::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
    check_name(&manifest.name)?;
    Ok(manifest)
}

/// Writes the WIT and the `sdk` files (under `.wasmgate/<sdk_dir>`) into the project.
fn prepare(project: &Path, sdk: &[(&str, &str)], sdk_dir: &str) -> anyhow::Result<PathBuf> {
    let dir = project.join(".wasmgate");
    embedded::write(&dir.join("wit"), embedded::WIT)
        .with_context(|| format!("writing {}", dir.display()))?;
    embedded::write(&dir.join(sdk_dir), sdk)
        .with_context(|| format!("writing {}", dir.display()))?;
    Ok(dir)
}

fn python_tool(tools: &Toolchain, name: &str) -> PathBuf {
    match &tools.python {
        Some(venv) => venv.join("bin").join(name),
        None => PathBuf::from(name),
    }
}

fn run(mut command: Command, tool: &str, hint: &str) -> anyhow::Result<()> {
    let status = match command.status() {
        Ok(status) => status,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("`{tool}` was not found ({hint})")
        }
        Err(e) => bail!("running `{tool}`: {e}"),
    };
    if !status.success() {
        bail!("`{tool}` failed ({status})");
    }
    Ok(())
}
