//! The core's modules form layers with no import circles, each rule in one
//! home (the table is `core/src/proto.rs`'s module docs). This test reads every `crate::…`
//! path of the library's source (tests left out) and holds the graph to the
//! layer table below: a module imports only from its own layer or a lower
//! one, and the graph has no cycle. The folders agree: `src/proto/` holds
//! the machinery (leaves, protocol, decisions) and nothing above it, and
//! none of it is public (the committed public API names no `proto` path).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The layers, from the ground up. Keep it in step with `proto.rs`'s table.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "leaves",
        &[
            "secret", "http", "endpoint", "scope", "time", "backoff", "misuse", "wire", "swar",
        ],
    ),
    ("protocol", &["sse", "event", "model", "chat", "ratelimit"]),
    (
        "decisions",
        &[
            "api", "problem", "oauth", "quota", "stop", "stream", "timers",
        ],
    ),
    ("kit", &["kit"]),
    ("machine", &["bot", "json"]),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

/// The top-level module a source file belongs to (`sse/one_go.rs` → `sse`).
/// The module a source file belongs to: its first path component under
/// `src/`, or under `src/proto/` for the machinery (`proto.rs` itself only
/// declares modules).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts = rel.components().map(|c| c.as_os_str().to_str());
    let mut first = parts.next()??;
    if first == "proto" {
        first = parts.next()??;
    }
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "proto")).then(|| name.to_owned())
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).expect("the source folder reads") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "snapshots") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(path);
        }
    }
}

/// Every top-level module named in a `crate::name` path of `text`, code only
/// (after the `#[cfg(test)]` line that opens a file's test module, nothing
/// counts).
fn imports(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or(text);
    let mut found = BTreeSet::new();
    for line in code.lines() {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            rest = rest.strip_prefix("proto::").unwrap_or(rest);
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
        // `use crate::{a, b::c}` groups.
        if let Some(group) = line.strip_prefix("use crate::{") {
            for part in group.split(',') {
                let part = part.trim();
                let name: String = part
                    .strip_prefix("proto::")
                    .unwrap_or(part)
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        }
    }
    found
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let Some(module) = module_of(&src, &file) else {
            continue;
        };
        let text = fs::read_to_string(&file).expect("a source file reads");
        let entry = graph.entry(module.clone()).or_default();
        for used in imports(&text) {
            if used != module && layer_of(&used).is_some() {
                entry.insert(used);
            }
        }
    }
    graph
}

#[test]
fn every_module_has_a_layer() {
    for module in graph().keys() {
        assert!(
            layer_of(module).is_some(),
            "module `{module}` is in no layer of this test's table"
        );
    }
}

#[test]
fn imports_only_go_down_or_sideways() {
    for (module, used) in graph() {
        let own = layer_of(&module).unwrap_or(usize::MAX);
        for other in used {
            let theirs = layer_of(&other).unwrap_or(usize::MAX);
            assert!(
                theirs <= own,
                "`{module}` ({}) imports `{other}` ({}), a layer above it",
                LAYERS[own].0,
                LAYERS[theirs].0
            );
        }
    }
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let graph = graph();
    // Depth-first search with colours: grey on the stack, black done.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        colour: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) {
        colour.insert(node.to_owned(), 1);
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            match colour.get(next.as_str()) {
                Some(1) => panic!("import circle: {} -> {next}", path.join(" -> ")),
                Some(_) => {}
                None => visit(next, graph, colour, path),
            }
        }
        path.pop();
        colour.insert(node.to_owned(), 2);
    }
    let mut colour = BTreeMap::new();
    for node in graph.keys() {
        if !colour.contains_key(node.as_str()) {
            visit(node, &graph, &mut colour, &mut Vec::new());
        }
    }
}

#[test]
fn the_machinery_folder_holds_nothing_above_the_decisions() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let decisions = LAYERS
        .iter()
        .position(|(name, _)| *name == "decisions")
        .expect("a decisions layer");
    let mut files = Vec::new();
    sources(&src.join("proto"), &mut files);
    assert!(!files.is_empty(), "src/proto/ holds the machinery");
    for file in files {
        let module = module_of(&src, &file).expect("a file under proto/ names its module");
        let layer = layer_of(&module).unwrap_or(usize::MAX);
        assert!(
            layer <= decisions,
            "{} sits in src/proto/ but `{module}` is in the {} layer, above the machinery",
            file.display(),
            LAYERS.get(layer).map_or("no", |l| l.0)
        );
    }
}

#[test]
fn the_reader_sees_imports() {
    let text = "use crate::a::B;\nuse crate::{c, d::E};\nfn f() { crate::g::h(); }\n// crate::z\n#[cfg(test)]\nmod tests;\nuse crate::late;";
    let found: Vec<_> = imports(text).into_iter().collect();
    assert_eq!(found, ["a", "c", "d", "g"]);
}

/// The machinery stays behind the front door: the committed public API
/// (`core/public-api.txt`, held to the code by `scripts/public-api`) has no
/// `proto` path, and its public modules are the crate's own plus the two
/// facades that re-export what drivers and bindings use of the machinery.
#[test]
fn the_machinery_is_not_public() {
    let api = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("public-api.txt"))
        .expect("core/public-api.txt reads");
    let leaks: Vec<&str> = api.lines().filter(|l| l.contains("onair::proto")).collect();
    assert!(leaks.is_empty(), "public items under proto: {leaks:?}");
    let modules: Vec<&str> = api
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .collect();
    assert_eq!(
        modules,
        [
            "onair",
            "onair::api",
            "onair::api::codes",
            "onair::bot",
            "onair::bot::notices",
            "onair::event",
            "onair::json",
            "onair::kit",
            "onair::kit::commands",
            "onair::kit::replies",
            "onair::kit::tally",
            "onair::kit::text",
            "onair::sse",
        ]
    );
}
