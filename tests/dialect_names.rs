//! No host file names a dialect. Messages, Responses and Gemini are registry dialects: a dialect
//! plugin declares its name, routes and what the host must know of it (`wit/dialect.wit`), and a
//! provider lists the dialects it speaks; the host mounts whatever is declared. This reads every
//! `host/src/**/*.rs` outside comments and tests and fails on a dialect's name, route, plugin or
//! answer-id prefix, naming the file and line.

use std::path::PathBuf;

use super::module_graph::{code_lines, walk};

/// What names a dialect in the host's code.
const NAMES: &[&str] = &[
    "Operation::Messages",
    "Operation::Responses",
    "\"messages\"",
    "\"responses\"",
    "\"gemini\"",
    "\"/v1/messages",
    "\"/v1/responses",
    "\"msg_\"",
    "\"resp_\"",
    "\"anthropic-messages\"",
    "\"openai-responses\"",
    "\"gemini-genai\"",
];

/// Where a name is known, and why.
const KNOWN: &[(&str, &str, &str)] = &[
    (
        "config/dialects.rs",
        "",
        "the built-in dialects, served unless the config says otherwise",
    ),
    (
        "config/config_file.rs",
        "\"gemini",
        "the configuration reference's example of turning on a dialect beyond the built-in ones",
    ),
    (
        "ledger/requests.rs",
        "\"",
        "the usage API's names for the first two dialects' records (`anthropic.messages`, \
         `openai.responses`), which the console and clients use",
    ),
    (
        "server/mod.rs",
        "\"/v1/responses",
        "the response store's own endpoints (retrieve, delete, input items) and the Responses \
         API's WebSocket mode (its upgrade, on the path of the dialect's POST)",
    ),
];

/// Files that read Chat Completions' own `messages` field: the one dialect name that is also a
/// field of the canonical form.
const CHAT_FIELD: &[&str] = &[
    "pipeline/request/client.rs",
    "pipeline/request/props.rs",
    "pipeline/cache/semantic.rs",
    "mcp/guard.rs",
    "pipeline/guard/texts.rs",
];

#[test]
fn no_host_file_names_a_dialect() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut failures = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap_or(&file);
        let name = relative.to_string_lossy().replace('\\', "/");
        // Tests may name what they test; templates are text for plugin crates.
        if name.ends_with("/tests.rs") || name.contains("/tests/") || name.contains("/templates/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (line, token) in sites(&text) {
            let known = KNOWN
                .iter()
                .any(|(file, prefix, _)| *file == name && token.starts_with(prefix));
            let field = token == "\"messages\"" && CHAT_FIELD.contains(&name.as_str());
            if !known && !field {
                failures.push(format!(
                    "host/src/{name}:{line} names a dialect (`{token}`): have the dialect declare \
                     what the host needs (wit/dialect.wit)"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The test's own reader, on known text: names in code are found; in comments, in other words
/// and in the tests module, they are not.
#[test]
fn the_reader_finds_dialect_names_in_code_only() {
    let text = "let a = \"responses\";\n// \"gemini\" in a comment\n\
                let b = cx.operation == Operation::Messages; let c = \"responses_api\";\n\
                #[cfg(test)]\nmod tests { const D: &str = \"gemini\"; }";
    assert_eq!(
        sites(text),
        [(1, "\"responses\""), (3, "Operation::Messages")]
    );
}

/// The (1-based) lines of `text`'s code, before its tests module, that name a dialect.
fn sites(text: &str) -> Vec<(usize, &'static str)> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    code_lines(code)
        .flat_map(|(n, line)| {
            NAMES
                .iter()
                .filter(move |name| line.contains(**name))
                .map(move |name| (n, *name))
        })
        .collect()
}
