//! The documents people read first stay true to the code and to the reader:
//!
//! - each bot of the top README is a word-for-word excerpt of a tested file
//!   (the guides' code runs in each language's test suite), so it cannot rot;
//! - the README, the guides, BENCHMARKS.md, FUZZING.md and the host's
//!   README describe the project as it is: no issue numbers (history lives
//!   in `git log`);
//! - BENCHMARKS.md stays under 250 lines, FUZZING.md under 150;
//! - every relative link of a Markdown file leads to a file that exists.

use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core/ sits in the repository")
        .to_path_buf()
}

fn read(path: &str) -> String {
    fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The fenced blocks of `markdown` whose info string starts with `lang`.
fn blocks<'a>(markdown: &'a str, lang: &str) -> Vec<Vec<&'a str>> {
    let mut out = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in markdown.lines() {
        match current.as_mut() {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    if info.split_whitespace().next() == Some(lang) {
                        current = Some(Vec::new());
                    }
                }
            }
            Some(block) => {
                if line.starts_with("```") {
                    out.extend(current.take());
                } else {
                    block.push(line);
                }
            }
        }
    }
    out
}

/// Whether `excerpt` appears in `source` as consecutive lines, word for word.
fn is_excerpt(excerpt: &[&str], source: &str) -> bool {
    let lines: Vec<&str> = source.lines().collect();
    !excerpt.is_empty() && lines.windows(excerpt.len()).any(|w| w == excerpt)
}

#[test]
fn every_readme_bot_is_an_excerpt_of_tested_code() {
    let readme = read("README.md");
    for (lang, source) in [
        ("rust", "drivers/tokio/examples/bot.rs"),
        ("python", "docs/python.md"),
        ("js", "docs/node.md"),
        ("c", "docs/c.md"),
    ] {
        let found = blocks(&readme, lang);
        assert_eq!(found.len(), 1, "README.md: one {lang} bot");
        assert!(
            is_excerpt(&found[0], &read(source)),
            "README.md's {lang} bot is not word for word in {source}:\n{}",
            found[0].join("\n")
        );
    }
}

#[test]
fn the_documents_carry_no_issue_numbers() {
    let mut documents: Vec<String> = ["README.md", "BENCHMARKS.md", "FUZZING.md", "host/README.md"]
        .map(String::from)
        .to_vec();
    for entry in fs::read_dir(repo().join("docs")).expect("docs/") {
        let name = entry.expect("an entry").file_name();
        documents.push(format!("docs/{}", name.to_string_lossy()));
    }
    let mut found = Vec::new();
    for doc in &documents {
        for (n, line) in read(doc).lines().enumerate() {
            let lower = line.to_lowercase();
            let mut rest = lower.as_str();
            while let Some(at) = rest.find("issue") {
                let after = rest[at + "issue".len()..].trim_start_matches('s');
                let after = after.trim_start_matches([' ', '#']);
                if after.starts_with(|c: char| c.is_ascii_digit()) {
                    found.push(format!("{doc}:{}: {line}", n + 1));
                    break;
                }
                rest = &rest[at + 1..];
            }
        }
    }
    assert!(found.is_empty(), "issue numbers:\n{}", found.join("\n"));
}

#[test]
fn benchmarks_stays_short() {
    let lines = read("BENCHMARKS.md").lines().count();
    assert!(
        lines < 250,
        "BENCHMARKS.md: {lines} lines (keep it under 250)"
    );
}

#[test]
fn fuzzing_stays_short() {
    let lines = read("FUZZING.md").lines().count();
    assert!(lines < 150, "FUZZING.md: {lines} lines (keep it under 150)");
}

#[test]
fn the_helpers_read_what_they_should() {
    let md = "x\n```rust ignore\na\nb\n```\n```c\nc\n```\n";
    assert_eq!(blocks(md, "rust"), [vec!["a", "b"]]);
    assert_eq!(blocks(md, "c"), [vec!["c"]]);
    assert!(is_excerpt(&["b", "c"], "a\nb\nc\nd"));
    assert!(!is_excerpt(&["b", "d"], "a\nb\nc\nd"));
}

/// The Markdown files of the repository (not under `target/`, a
/// `node_modules/` or a dot directory).
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !(name.starts_with('.') || name == "target" || name == "node_modules") {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The relative targets of the `[text](target)` links of `markdown`
/// (without `#fragment`; URLs and in-page anchors left out).
fn relative_links(markdown: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = markdown;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let end = rest.find([')', ' ', '\n']).unwrap_or(rest.len());
        let target = rest[..end].split('#').next().unwrap_or("");
        if !target.is_empty() && !target.contains(':') {
            out.push(target);
        }
    }
    out
}

#[test]
fn every_relative_link_of_a_document_resolves() {
    let mut files = Vec::new();
    markdown_files(&repo(), &mut files);
    assert!(files.len() > 5, "found the documents");
    let mut broken = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap_or_default();
        let dir = file.parent().unwrap_or(Path::new("."));
        for target in relative_links(&text) {
            if !dir.join(target).exists() {
                broken.push(format!("{}: {target}", file.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}
