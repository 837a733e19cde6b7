//! The host's modules depend downwards only. Reads every `host/src/**/*.rs`, derives which
//! top-level module imports which (`crate::x`, `crate::{x, y}`, and `super::` paths that climb
//! to the crate root), and fails on an import of a higher layer from a lower one or on any
//! cycle, naming the file and line. It prints the graph, so a failure shows the whole picture.
//!
//! The layers, lowest first: the leaves; `plugins` (the wasmtime host, which knows nothing of
//! the server); what uses plugins (limits, routing, upstream, guards); telemetry; the gateway (one loaded
//! config) and the MCP gateway's servers (`mcp`); the shared state; the request pipeline; the HTTP server; and the commands around it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Every top-level module of the host, by layer. A module may import its own layer (without a
/// cycle) and the ones below it.
const LAYERS: &[&[&str]] = &[
    &[
        "config",
        "catalog",
        "ledger",
        "tokenizer",
        "redact",
        "clip",
        "secret",
        "credentials",
        "auth",
    ],
    &["plugins"],
    &["limits", "routing", "upstream", "guards", "cache"],
    &["telemetry"],
    &["gateway", "mcp"],
    &["state"],
    &["pipeline", "batches"],
    &["server"],
    &["reload", "cli"],
];

/// Where an import was seen.
type Sites = Vec<String>;

#[test]
fn modules_depend_downwards_without_cycles() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = top_level_modules(&src);
    let graph = imports(&src, &files);
    let mut report = String::from("module graph (importer -> imported: first site):\n");
    for ((from, to), sites) in &graph {
        let _ = writeln!(
            report,
            "  {from} -> {to}: {} ({} sites)",
            sites[0],
            sites.len()
        );
    }
    let mut failures = Vec::new();
    let layer = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let modules: BTreeSet<&str> = graph
        .keys()
        .flat_map(|(a, b)| [a.as_str(), b.as_str()])
        .chain(files.iter().map(String::as_str))
        .collect::<BTreeSet<_>>();
    for m in &modules {
        if layer(m).is_none() {
            failures.push(format!("module `{m}` has no layer: add it to LAYERS"));
        }
    }
    for ((from, to), sites) in &graph {
        if let (Some(a), Some(b)) = (layer(from), layer(to))
            && b > a
        {
            for site in sites {
                failures.push(format!(
                    "`{from}` (layer {a}) imports the higher `{to}` (layer {b}) at {site}"
                ));
            }
        }
    }
    for cycle in cycles(&graph) {
        let mut text = format!("cycle: {}", cycle.join(" -> "));
        for pair in cycle.windows(2) {
            let site = &graph[&(pair[0].clone(), pair[1].clone())][0];
            let _ = write!(text, "\n    {} -> {} at {site}", pair[0], pair[1]);
        }
        failures.push(text);
    }
    #[expect(clippy::print_stdout, reason = "the graph is the test's report")]
    {
        println!("{report}");
    }
    assert!(
        failures.is_empty(),
        "{report}\n{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The test's own reader, on known text: a cycle and an upward import are found.
#[test]
fn the_reader_finds_imports_and_cycles() {
    let mut graph = BTreeMap::new();
    let lines = [
        "use crate::server::ApiError; // crate::telemetry is only named here",
        "// crate::state in a comment",
        "    let x = crate::{ledger, clip::echo};",
        "use super::super::routing::Route;",
        "let state = crate::build_state(config);",
    ];
    for (n, line) in lines.iter().enumerate() {
        for target in targets(line, 2) {
            graph
                .entry(("plugins".to_owned(), target))
                .or_insert_with(Vec::new)
                .push(format!("x.rs:{}", n + 1));
        }
    }
    let found: Vec<&str> = graph.keys().map(|(_, to)| to.as_str()).collect();
    // The reader names what follows `crate::`; `imports` keeps the top-level modules of it.
    assert_eq!(
        found,
        ["build_state", "clip", "ledger", "routing", "server"]
    );
    graph.insert(("server".to_owned(), "plugins".to_owned()), vec![]);
    graph.insert(("routing".to_owned(), "ledger".to_owned()), vec![]);
    let cycles = cycles(&graph);
    assert_eq!(cycles, [vec!["plugins", "server", "plugins"]]);
}

/// What only the edge (`pipeline/edge/`) and the server's handlers may name: the edge's module,
/// the dialect plugins' types, and the edge's own state (the Responses keeper, the answer's
/// encodings). A stage between the edge's two halves that names one fails, with its file and
/// line. Stages may read the client's own body off `cx.translation` (`native_request`,
/// `native_parts`): that is the native pass-through, which the edge lets through untouched.
const DIALECT_CODE: &[&str] = &[
    "edge::",
    "dialect::",
    "DialectPlugin",
    "DialectStream",
    "DialectEvent",
    "DialectCallRequest",
    "AnswerInfo",
    "Decoded",
    "Translation",
    "Keeper",
    "keeper",
    "with_previous_id",
    "native_failure",
    "encode_error",
    "encode_models",
    "encode_count",
    "decoded_body",
    "set_native",
];

/// Files of the pipeline that may reach the dialect code, and why.
const EDGE_NEIGHBOURS: &[&str] = &[
    // The driver: it enters the edge once on the way in and once on the way out (checked below).
    "pipeline/mod.rs",
    // Declares the request's fields that carry the edge's route and state.
    "pipeline/context.rs",
    // The count-tokens route's upstream half, called only from the edge's `count_tokens`.
    "pipeline/count.rs",
    // A guarded native request: the guards' rewrite, carried into the client's own body, is
    // read back by the dialect plugin (`decoded_body`) to check it, and replaces that body
    // (`set_native`). A third entry into the dialect code, only when guards rewrite a request
    // to a native target.
    "pipeline/guard_native.rs",
];

#[test]
fn only_the_edge_reaches_the_dialect_code() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src.join("pipeline"), &mut files);
    let mut failures = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap_or(&file);
        let name = relative.to_string_lossy().replace('\\', "/");
        if name.starts_with("pipeline/edge/") || EDGE_NEIGHBOURS.contains(&name.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (line, token) in dialect_sites(&text) {
            failures.push(format!(
                "the stage `{name}` reaches the dialect code (`{token}`) at host/src/{name}:{line}: \
                 only the edge (pipeline/edge/) may"
            ));
        }
    }
    // One request's context enters the edge twice: in (`decode`) and out (`out`).
    let driver = std::fs::read_to_string(src.join("pipeline/mod.rs")).unwrap_or_default();
    let driver = driver.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    let entries: Vec<&str> = code_lines(driver)
        .flat_map(|(_, code)| code.match_indices("edge::").map(|(i, _)| &code[i..]))
        .filter(|call| call.contains('('))
        .collect();
    if entries.len() != 2 {
        failures.push(format!(
            "pipeline/mod.rs enters the edge {} times (in and out are 2): {entries:?}",
            entries.len()
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The test's own reader, on known text: what names the dialect code is found, comments are not.
#[test]
fn the_dialect_reader_finds_what_names_the_edge() {
    let text = "use super::edge::Keeper;\n// super::edge in a comment\nlet x = 1; // Translation\n\
                if let Some(k) = &cx.translation.as_ref().and_then(|t| t.keeper.as_ref()) {}\n\
                let m = \"Translations do not stream.\"; let k = keepers;";
    let found: Vec<(usize, &str)> = dialect_sites(text);
    assert_eq!(found, [(1, "edge::"), (1, "Keeper"), (4, "keeper")]);
}

/// The (1-based) lines of `text` that name the dialect code, outside comments, with the name.
fn dialect_sites(text: &str) -> Vec<(usize, &'static str)> {
    code_lines(text)
        .flat_map(|(n, code)| {
            DIALECT_CODE
                .iter()
                .filter(move |token| {
                    code.match_indices(**token).any(|(i, _)| {
                        // A whole name: `Translations` or `edge_of::` is not one of these.
                        let word = |c: char| c.is_alphanumeric() || c == '_';
                        let before = code[..i].chars().next_back();
                        let after = code[i + token.len()..].chars().next();
                        !(before.is_some_and(word)
                            || (token.ends_with(word) && after.is_some_and(word)))
                    })
                })
                .map(move |token| (n, *token))
        })
        .collect()
}

/// Each line of `text` (numbered from 1) without its comment.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(n, line)| {
        let code = line.find("//").map_or(line, |i| &line[..i]);
        (n + 1, code)
    })
}

/// The directories and files directly under `src`, as module names (not the crate roots).
fn top_level_modules(src: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(src).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let name = name.strip_suffix(".rs").unwrap_or(&name).to_owned();
        if name != "lib" && name != "main" {
            out.push(name);
        }
    }
    out
}

/// (importer, imported) → where, for every pair of distinct top-level modules among `modules`
/// (another name after `crate::` is an item of the crate root, such as `build_state`).
fn imports(src: &Path, modules: &[String]) -> BTreeMap<(String, String), Sites> {
    let mut graph: BTreeMap<(String, String), Sites> = BTreeMap::new();
    let mut files = Vec::new();
    walk(src, &mut files);
    for file in files {
        let relative = file.strip_prefix(src).unwrap_or(&file);
        let parts: Vec<String> = relative
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        // The crate roots import everything by design; templates are text for other crates.
        if parts.len() == 1 && (parts[0] == "lib.rs" || parts[0] == "main.rs")
            || parts.iter().any(|p| p == "templates")
        {
            continue;
        }
        let mut module: Vec<String> = parts
            .iter()
            .map(|p| p.strip_suffix(".rs").unwrap_or(p).to_owned())
            .collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        let top = module[0].clone();
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        // Inside an inline `mod x {` (tests), `super::` climbs one level more.
        let mut depth = module.len();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("mod ") && line.trim_end().ends_with('{') {
                depth = module.len() + 1;
            }
            for target in targets(line, depth) {
                if target != top && modules.contains(&target) {
                    graph
                        .entry((top.clone(), target))
                        .or_default()
                        .push(format!("host/src/{}:{}", relative.display(), n + 1));
                }
            }
        }
    }
    graph
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a line names, outside comments. `depth`: how many `super::` reach the
/// crate root from this line.
fn targets(line: &str, depth: usize) -> Vec<String> {
    let code = match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    };
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or("");
            out.extend(inner.split(',').filter_map(|p| ident(p.trim())));
        } else if let Some(name) = ident(rest) {
            out.push(name);
        }
    }
    let mut rest = code;
    while let Some(i) = rest.find("super::") {
        let before = rest[..i].chars().next_back();
        let mut climbed = 0;
        let mut tail = &rest[i..];
        while let Some(t) = tail.strip_prefix("super::") {
            climbed += 1;
            tail = t;
        }
        rest = tail;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        if climbed >= depth
            && let Some(name) = ident(tail)
        {
            out.push(name);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The identifier `text` starts with, if it names a module (lower case).
fn ident(text: &str) -> Option<String> {
    let name: String = text
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty() && name.starts_with(|c: char| c.is_ascii_lowercase())).then_some(name)
}

/// Every elementary cycle through the graph's strongly connected parts, one per part (the
/// shortest from its first module), as the modules in order with the first repeated at the end.
fn cycles(graph: &BTreeMap<(String, String), Sites>) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in graph.keys() {
        next.entry(from).or_default().push(to);
    }
    let reaches = |from: &str| -> BTreeMap<String, String> {
        // Breadth first: each module reached, with the module it was reached from.
        let mut parent = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([from.to_owned()]);
        while let Some(m) = queue.pop_front() {
            for &n in next.get(m.as_str()).into_iter().flatten() {
                if !parent.contains_key(n) {
                    parent.insert(n.to_owned(), m.clone());
                    queue.push_back(n.to_owned());
                }
            }
        }
        parent
    };
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for start in next.keys() {
        if seen.contains(*start) {
            continue;
        }
        let parent = reaches(start);
        if !parent.contains_key(*start) {
            continue;
        }
        // The path back to `start`, followed from its end.
        let mut path = vec![start.to_string()];
        let mut at = parent[*start].clone();
        while at != *start {
            path.push(at.clone());
            at = parent[&at].clone();
        }
        path.push(start.to_string());
        path.reverse();
        // Everything on a cycle with `start` is reported with it.
        for m in parent.keys() {
            if reaches(m).contains_key(*start) {
                seen.insert(m.clone());
            }
        }
        out.push(path);
    }
    out
}
