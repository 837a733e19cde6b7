//! The binary `cargo run` builds (the README's first command) and the one `cargo test
//! --workspace` builds share every compiled dependency: each crate of the gateway's own
//! dependency tree resolves to the same features in both. A dev-dependency that turns on a
//! feature of a shared crate (serde_json, tokio, reqwest...) makes the test build compile that
//! crate and everything above it again, up to wasmtime and cranelift: 46 crates, built twice in
//! every CI run, before `host/Cargo.toml`'s "Feature parity" block. A new dev-dependency that
//! does so fails here, naming the crate and the two feature sets; the fix is to turn the
//! feature on in the host's own dependencies (if it changes nothing the gateway does) or to
//! write the test without it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Package (name and version) to the feature sets it resolves to (one per build kind: a crate
/// built for a build script or a proc macro and for the binary may differ, in both builds alike).
type Features = BTreeMap<String, BTreeSet<String>>;

fn tree(args: &[&str]) -> Features {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let output = Command::new(cargo)
        .args([
            "tree", "--locked", "--prefix", "none", "--format", "{p}|{f}",
        ])
        .args(args)
        .current_dir(&root)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut features = Features::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Some((package, set)) = line.split_once('|') else {
            continue;
        };
        // `serde v1.0.0 (proc-macro)`, `wasmgate v0.1.0 (/path)`: the name and version.
        let package = package.split(" (").next().unwrap_or(package).to_owned();
        let set = set.trim_end_matches(" (*)").to_owned();
        features.entry(package).or_default().insert(set);
    }
    features
}

#[test]
fn the_first_command_and_the_tests_build_the_same_dependencies() {
    let run = tree(&["-p", "wasmgate", "--edges", "normal"]);
    let test = tree(&["--workspace", "--edges", "normal,dev"]);
    assert!(
        run.len() > 100,
        "cargo tree listed {} packages: {run:?}",
        run.len()
    );
    let differ: Vec<String> = run
        .iter()
        .filter_map(|(package, features)| {
            let other = test.get(package)?;
            (other != features).then(|| {
                format!(
                    "{package}: `cargo run` builds it with {features:?}, the tests with {other:?}"
                )
            })
        })
        .collect();
    assert!(
        differ.is_empty(),
        "the tests' dev-dependencies change the features of crates the gateway shares with them, \
         so CI builds those crates and all above them twice (see host/Cargo.toml, \"Feature \
         parity\"):\n{}",
        differ.join("\n")
    );
}
