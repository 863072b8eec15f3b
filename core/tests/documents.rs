//! The documents people read first stay true to the code and to the reader:
//!
//! - each bot of the top README is a word-for-word excerpt of a tested file
//!   (the guides' code runs in each language's test suite), so it cannot rot;
//! - the README, the guides, BENCHMARKS.md, FUZZING.md and the host's
//!   README describe the project as it is: no issue numbers (history lives
//!   in `git log`);
//! - BENCHMARKS.md stays under 250 lines, FUZZING.md under 150.

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
