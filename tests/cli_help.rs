//! The manual's page of every command's `--help` (`docs/src/reference/cli-help.md`) is the
//! binary's own, command by command: a new command or option, or a changed doc comment, fails
//! this test until the page is written again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_wasmgate");

const PAGE: &str = "docs/src/reference/cli-help.md";

const HEADER: &str = "\
# Every command's --help

<!-- Written from the binary's own --help by tests/cli_help.rs; do not edit by hand. -->

What `wasmgate <command> --help` prints, for every command; what each is for is on the
[command line](cli.md) page.
";

/// `wasmgate <path> --help`, with no environment: clap shows the values of `env` options.
fn help(path: &[String]) -> String {
    let output = Command::new(BIN)
        .args(path)
        .arg("--help")
        .env_clear()
        .output()
        .unwrap();
    assert!(output.status.success(), "{path:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The subcommands a help text lists under `Commands:`, `help` aside.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The page: each command's help, depth first in the order the help lists them.
fn page() -> String {
    let mut out = String::from(HEADER);
    let mut pending = vec![Vec::<String>::new()];
    while let Some(path) = pending.pop() {
        let text = help(&path);
        let name = std::iter::once("wasmgate".to_owned())
            .chain(path.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        out.push_str(&format!(
            "\n## `{name}`\n\n```text\n{}\n```\n",
            text.trim_end()
        ));
        for sub in subcommands(&text).into_iter().rev() {
            let mut next = path.clone();
            next.push(sub);
            pending.push(next);
        }
    }
    out
}

#[test]
fn the_manuals_help_page_is_the_binarys_help() {
    let generated = page();
    assert!(
        generated.contains("## `wasmgate config check`"),
        "{generated}"
    );
    assert!(
        generated.contains("## `wasmgate keys create`"),
        "{generated}"
    );
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(PAGE);
    if std::env::var_os("WASMGATE_WRITE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{PAGE} is stale (a command or option changed); write it again with\n  \
         WASMGATE_WRITE_DOCS=1 cargo test -p wasmgate --test e2e cli_help::"
    );
}
