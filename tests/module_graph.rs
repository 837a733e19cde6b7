//! The host's modules depend downwards only. Reads every `host/src/**/*.rs`, derives which
//! top-level module imports which (`crate::x`, `crate::{x, y}`, and `super::` paths that climb
//! to the crate root), and fails on an import of a higher layer from a lower one or on any
//! cycle, naming the file and line. It prints the graph, so a failure shows the whole picture.
//!
//! The layers, lowest first: the leaves; `plugins` (the wasmtime host, which knows nothing of
//! the server); what uses plugins (limits, routing, upstream, guards); telemetry and the API errors; the gateway (one loaded
//! config) and the MCP gateway's servers (`mcp`); the shared state; the request pipeline; the HTTP server; and the commands around it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Every top-level module of the host, by layer. A module may import its own layer (without a
/// cycle) and the ones below it.
const LAYERS: &[&[&str]] = &[
    // A leaf: imports nothing of the host.
    &["sync", "sockets", "resident"],
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
    &["telemetry", "error"],
    &["gateway", "mcp"],
    &["state"],
    &["pipeline", "batches", "alerts"],
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
    // The count-tokens route: a dialect request beside the model-call path, decoded by its
    // dialect's plugin (`decode_fields`) and sent natively or translated to the target's
    // counter; its answer is written by the same plugin.
    "pipeline/count/tokens.rs",
    "pipeline/count/upstream.rs",
    // A guarded native request: the guards' rewrite, carried into the client's own body, is
    // read back by the dialect plugin (`decoded_body`) to check it, and replaces that body
    // (`set_native`). A third entry into the dialect code, only when guards rewrite a request
    // to a native target.
    "pipeline/guard/native.rs",
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
pub(crate) fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
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

pub(crate) fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
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

// ---------------------------------------------------------------------------------------------
// Rooms: no import circle among the files of one folder.
// ---------------------------------------------------------------------------------------------

/// One file's imports: the file it imports → where it is first named (`file:line`).
type FileEdges = BTreeMap<PathBuf, String>;

/// A folder of `host/src` is a room a newcomer walks through in one direction: no file in it
/// may reach, through any chain of imports (inside the folder or out of it and back), a file
/// that reaches it. Reads every `host/src/**/*.rs` but test modules, resolves each `use` tree and
/// each path (`crate::`, `super::`, `self::`, a child module's name) to the file that holds it,
/// and fails on every strongly connected group of files that holds two or more files of one
/// top-level folder, naming the folder, the files, and one circle with the line of each step.
/// A folder's `mod.rs` may re-export its files for the rest of the crate, so its files import
/// each other by their own paths (`super::sibling::Item`), never through `mod.rs`.
#[test]
fn no_folder_of_the_host_has_an_import_circle() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let circles = room_circles(&src);
    let (waiting, new): (Vec<&String>, Vec<&String>) = circles.iter().partition(|c| {
        NOT_YET_ROOMS
            .iter()
            .any(|room| c.starts_with(&format!("{room}/:")))
    });
    assert!(
        new.is_empty(),
        "{} import circles inside folders of host/src:\n{}",
        new.len(),
        new.iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    // A folder that lost its circles leaves the list, so that it cannot gain one back unseen.
    for room in NOT_YET_ROOMS {
        assert!(
            waiting.iter().any(|c| c.starts_with(&format!("{room}/:"))),
            "`{room}/` has no import circle any more: take it off NOT_YET_ROOMS"
        );
    }
}

/// Folders whose `mod.rs` still holds types its own files import while it imports them (the
/// circle the pipeline had), each to be split as the pipeline was. The list only shrinks.
const NOT_YET_ROOMS: &[&str] = &[];

/// The reader on a tree of its own: a circle through a folder's `mod.rs` re-export is found, a
/// test module's `use super::*` and a comment are not imports, and a one-way folder passes.
#[test]
fn the_room_reader_finds_a_circle_and_only_that() {
    let root = std::env::temp_dir().join(format!("wasmgate-rooms-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let write = |path: &str, text: &str| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap_or(&root)).unwrap_or_default();
        std::fs::write(path, text).unwrap_or_default();
    };
    write("lib.rs", "pub mod room;\npub mod hall;\n");
    write(
        "room/mod.rs",
        "mod a;\nmod b;\npub use a::Thing;\n// crate::room::b::Other in a comment\n",
    );
    write(
        "room/a.rs",
        "use super::b::Other;\npub struct Thing;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::room::Thing;\n}\n",
    );
    write(
        "room/b.rs",
        "pub struct Other;\nfn f() { let s = \"crate::room::Thing\"; }\n",
    );
    write("hall/mod.rs", "pub mod c;\npub mod d;\n");
    write("hall/c.rs", "use crate::room::Thing;\npub struct C;\n");
    write("hall/d.rs", "use super::c::C;\n");
    assert_eq!(room_circles(&root), Vec::<String>::new(), "a one-way tree");
    // b reaches back for the re-export: a (room) -> b -> mod.rs -> a.
    write("room/b.rs", "use crate::room::Thing;\npub struct Other;\n");
    let circles = room_circles(&root);
    let _ = std::fs::remove_dir_all(&root);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert!(
        circles[0].starts_with("room/: 3 files in one circle: room/a.rs, room/b.rs, room/mod.rs"),
        "{circles:?}"
    );
    assert!(circles[0].contains("room/b.rs:1"), "{circles:?}");
}

/// Every import circle inside a folder of `src`, described.
fn room_circles(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    walk(src, &mut files);
    let files: Vec<PathBuf> = files
        .into_iter()
        .filter_map(|f| f.strip_prefix(src).ok().map(Path::to_path_buf))
        .filter(|f| {
            // Test files and plugin templates (text for other crates) are no part of the house.
            f.file_name().is_some_and(|n| n != "tests.rs")
                && !f.iter().any(|p| p == "tests" || p == "templates")
        })
        .collect();
    let graph: BTreeMap<PathBuf, FileEdges> = files
        .iter()
        .map(|f| (f.clone(), file_imports(src, f)))
        .collect();
    let mut out = Vec::new();
    for group in strongly_connected(&graph) {
        let mut rooms: BTreeMap<String, Vec<&PathBuf>> = BTreeMap::new();
        for file in &group {
            if file.components().count() > 1 {
                let room = file.iter().next().map(|p| p.to_string_lossy().into_owned());
                rooms
                    .entry(room.unwrap_or_default())
                    .or_default()
                    .push(file);
            }
        }
        for (room, mut members) in rooms {
            if members.len() < 2 {
                continue;
            }
            members.sort();
            let names: Vec<String> = members.iter().map(|f| slashed(f)).collect();
            let mut text = format!(
                "{room}/: {} files in one circle: {}",
                members.len(),
                names.join(", ")
            );
            for (from, to, site) in circle_through(&graph, &group, members[0]) {
                let _ = write!(
                    text,
                    "\n    {} -> {} at {site}",
                    slashed(&from),
                    slashed(&to)
                );
            }
            out.push(text);
        }
    }
    out
}

fn slashed(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// The files `file` (relative to `src`) imports, each with the line it is first named on.
fn file_imports(src: &Path, file: &Path) -> FileEdges {
    let text = std::fs::read_to_string(src.join(file)).unwrap_or_default();
    let code = without_visibility_paths(&without_tests(&code_only(&text)));
    let mut module: Vec<String> = file
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    let is_mod = matches!(
        module.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    );
    if is_mod {
        module.pop();
    }
    let children = child_modules(src, file, is_mod);
    let mut edges = FileEdges::new();
    for (line, path) in paths_named(&code) {
        let segments: Vec<&str> = path.split("::").collect();
        let mut target: Vec<String> = match segments[0] {
            "crate" => Vec::new(),
            "self" | "super" => module.clone(),
            first if children.contains(first) => module.clone(),
            _ => continue,
        };
        for segment in &segments {
            match *segment {
                "crate" | "self" => {}
                "super" => {
                    target.pop();
                }
                name => target.push(name.to_owned()),
            }
        }
        if let Some(found) = file_of(src, &target)
            && found != file
        {
            edges
                .entry(found)
                .or_insert_with(|| format!("host/src/{}:{line}", slashed(file)));
        }
    }
    edges
}

/// The names of the modules declared beside or below `file`: its own folder's files for a
/// `mod.rs`, the folder named after it for a leaf file.
fn child_modules(src: &Path, file: &Path, is_mod: bool) -> BTreeSet<String> {
    let dir = if is_mod {
        src.join(file).parent().map(Path::to_path_buf)
    } else {
        Some(src.join(file).with_extension(""))
    };
    let mut names = BTreeSet::new();
    for entry in dir.iter().flat_map(std::fs::read_dir).flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".rs") {
            names.insert(stem.to_owned());
        } else if path.join("mod.rs").is_file() {
            names.insert(name);
        }
    }
    names
}

/// The file holding the longest prefix of `module` that is a module of the crate.
fn file_of(src: &Path, module: &[String]) -> Option<PathBuf> {
    (1..=module.len()).rev().find_map(|n| {
        let base: PathBuf = module[..n].iter().collect();
        [base.with_extension("rs"), base.join("mod.rs")]
            .into_iter()
            .find(|candidate| src.join(candidate).is_file())
    })
}

/// `text` with comments, string and character literals blanked (lines kept).
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                out.push(if chars[i] == '\n' { '\n' } else { ' ' });
                i += 1;
            }
            i += 2;
        } else if c == 'r' && matches!(next, Some('"' | '#')) && !ident_before(&chars, i) {
            // A raw string: r"..." or r#"..."#.
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            i += 2 + hashes;
            while i < chars.len()
                && !(chars[i] == '"' && chars[i + 1..].iter().take(hashes).all(|&h| h == '#'))
            {
                if chars[i] == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1 + hashes;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && next == Some('\\') {
            // An escaped character literal: '\n', '\'', '\u{..}'.
            let end = chars[i + 2..].iter().position(|&q| q == '\'');
            i += end.map_or(1, |e| e + 3);
            out.push_str("' '");
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `pub(in crate::x)` as `pub`: a visibility names a module without importing it.
fn without_visibility_paths(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("pub(in ") {
        out.push_str(&rest[..at + 3]);
        rest = &rest[at..];
        rest = rest.find(')').map_or("", |end| &rest[end + 1..]);
    }
    out.push_str(rest);
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// `code` without its `#[cfg(test)]` modules (inline ones blanked, lines kept; declared ones
/// dropped): a test module imports what it tests, which is no part of the room's design.
fn without_tests(code: &str) -> String {
    let mut out = code.to_owned();
    let mut from = 0;
    while let Some(at) = out[from..].find("#[cfg(test)]").map(|i| i + from) {
        let rest = &out[at + "#[cfg(test)]".len()..];
        let trimmed = rest.trim_start();
        let skipped = rest.len() - trimmed.len();
        let declaration = ["mod ", "pub mod ", "pub(crate) mod "]
            .iter()
            .any(|m| trimmed.starts_with(m));
        if !declaration {
            from = at + 1;
            continue;
        }
        let head = at + "#[cfg(test)]".len() + skipped;
        let Some(end) = out[head..].find([';', '{']).map(|i| i + head) else {
            break;
        };
        let stop = if out.as_bytes()[end] == b';' {
            end + 1
        } else {
            let mut depth = 0usize;
            let mut stop = out.len();
            for (i, b) in out.as_bytes()[end..].iter().enumerate() {
                match b {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            stop = end + i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            stop
        };
        let blank: String = out[at..stop]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..stop, &blank);
        from = stop;
    }
    out
}

/// Every module path `code` names, with its line: each leaf of a `use` tree, and each
/// `a::b::c` path elsewhere.
fn paths_named(code: &str) -> Vec<(usize, String)> {
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut outside_uses = String::with_capacity(code.len());
    let mut rest = 0;
    let bytes = code.as_bytes();
    let mut i = 0;
    while let Some(found) = code[i..].find("use ").map(|f| f + i) {
        i = found + 4;
        let word_start =
            found == 0 || !(bytes[found - 1].is_ascii_alphanumeric() || bytes[found - 1] == b'_');
        if !word_start {
            continue;
        }
        let Some(end) = code[found..].find(';').map(|e| e + found) else {
            break;
        };
        // Whitespace dropped, and each alias (`as name`) with it.
        let mut tree = String::new();
        let mut tokens = code[found + 4..end].split_whitespace();
        while let Some(token) = tokens.next() {
            if token == "as" {
                let alias = tokens.next().unwrap_or("");
                tree.extend(
                    alias
                        .chars()
                        .filter(|c| !(c.is_alphanumeric() || *c == '_')),
                );
            } else {
                tree.push_str(token);
            }
        }
        for path in expand_tree(&tree) {
            out.push((line_of(found), path));
        }
        outside_uses.push_str(&code[rest..found]);
        outside_uses.extend(
            code[found..end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' }),
        );
        rest = end;
        i = end;
    }
    outside_uses.push_str(&code[rest..]);
    // Paths outside `use`: identifiers joined by `::`, the first one not itself after `::`.
    let text = outside_uses.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut at = 0;
    while at < text.len() {
        if !word(text[at]) || (at > 0 && (word(text[at - 1]) || text[at - 1] == b':')) {
            at += 1;
            continue;
        }
        let start = at;
        let mut end = at;
        loop {
            while end < text.len() && word(text[end]) {
                end += 1;
            }
            if text[end..].starts_with(b"::") && text.get(end + 2).copied().is_some_and(word) {
                end += 2;
            } else {
                break;
            }
        }
        let path = &outside_uses[start..end];
        if path.contains("::") {
            out.push((line_of(start), path.to_owned()));
        }
        at = end.max(start + 1);
    }
    out
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e` (`self` in a group names the group).
fn expand_tree(tree: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(open) = tree.find('{') else {
        out.push(tree.trim_end_matches("::self").to_owned());
        return out;
    };
    let head = &tree[..open];
    let body = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut depth = 0;
    let mut start = 0;
    let mut items = Vec::new();
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&body[start..]);
    for item in items.into_iter().filter(|i| !i.is_empty()) {
        if item == "self" {
            out.push(head.trim_end_matches("::").to_owned());
        } else {
            out.extend(expand_tree(&format!("{head}{item}")));
        }
    }
    out
}

/// The strongly connected groups of two or more files (Tarjan's algorithm, iterative).
fn strongly_connected(graph: &BTreeMap<PathBuf, FileEdges>) -> Vec<Vec<PathBuf>> {
    let nodes: Vec<&PathBuf> = graph.keys().collect();
    let index_of: BTreeMap<&PathBuf, usize> =
        nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let next: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            graph[*n]
                .keys()
                .filter_map(|t| index_of.get(t).copied())
                .collect()
        })
        .collect();
    let (mut index, mut low) = (vec![usize::MAX; nodes.len()], vec![0; nodes.len()]);
    let (mut on_stack, mut stack, mut counter) = (vec![false; nodes.len()], Vec::new(), 0);
    let mut groups = Vec::new();
    for root in 0..nodes.len() {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut edge)) = work.last_mut() {
            if *edge == 0 && index[v] == usize::MAX {
                index[v] = counter;
                low[v] = counter;
                counter += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = next[v].get(*edge) {
                *edge += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut group = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    group.push(nodes[w].clone());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    groups.push(group);
                }
            }
        }
    }
    groups
}

/// One circle from `start` back to it inside `group` (breadth first), each step with its site.
fn circle_through(
    graph: &BTreeMap<PathBuf, FileEdges>,
    group: &[PathBuf],
    start: &PathBuf,
) -> Vec<(PathBuf, PathBuf, String)> {
    let mut parent: BTreeMap<&PathBuf, &PathBuf> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        for to in graph[at].keys().filter(|t| group.contains(t)) {
            if !parent.contains_key(to) {
                parent.insert(to, at);
                queue.push_back(to);
            }
        }
        if parent.contains_key(start) {
            break;
        }
    }
    let mut steps = Vec::new();
    let mut to = start;
    while let Some(&from) = parent.get(to) {
        steps.push((from.clone(), to.clone(), graph[from][to].clone()));
        to = from;
        if to == start {
            break;
        }
    }
    steps.reverse();
    steps
}
