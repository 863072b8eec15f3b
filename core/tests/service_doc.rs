//! `docs/service.md` is the service's rules in the project's own words, and
//! the repository cites it as "spec N.M" (section N.M) and "spec N.M rule K"
//! (numbered rule K of that section, or subsection N.K). This test reads every
//! source and document of the repository and fails when
//!
//! - a citation names a section that `docs/service.md` has no heading for, or
//!   a rule that section does not number;
//! - anything still points at the service's old, outside specification file;
//! - a Markdown link to `service.md` does not resolve from where it is.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Folders never read: build output, installed packages, caches, fuzz inputs.
const SKIP_DIRS: &[&str] = &[
    "target",
    "node_modules",
    "__pycache__",
    "corpus",
    "artifacts",
    "coverage",
    "gen",
    "build",
];

/// Files read: sources, headers, documents, manifests and shell scripts.
const EXTENSIONS: &[&str] = &[
    "rs", "py", "pyi", "ts", "mts", "js", "mjs", "cjs", "h", "c", "md", "toml", "sh",
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core/ sits in the repository")
        .to_path_buf()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !name.starts_with('.') && !SKIP_DIRS.contains(&name.as_ref()) {
                collect(&path, out);
            }
            continue;
        }
        let ext = path.extension().map(|e| e.to_string_lossy().into_owned());
        let in_scripts = path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|p| p == "scripts");
        let wanted = match ext {
            Some(ext) => EXTENSIONS.contains(&ext.as_str()),
            // The shell scripts under scripts/ have no extension.
            None => in_scripts,
        };
        if wanted {
            out.push(path);
        }
    }
}

/// The sections of `docs/service.md`: number → the numbered rules directly
/// under its heading.
fn sections(doc: &str) -> BTreeMap<String, BTreeSet<u32>> {
    let mut sections = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut in_code = false;
    for line in doc.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(heading) = line.strip_prefix('#') {
            let title = heading.trim_start_matches('#').trim();
            let number: String = title
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let number = number.trim_end_matches('.');
            current = (!number.is_empty()).then(|| number.to_owned());
            if let Some(n) = &current {
                assert!(
                    sections.insert(n.clone(), BTreeSet::new()).is_none(),
                    "docs/service.md: section {n} appears twice"
                );
            }
            continue;
        }
        if let Some(n) = &current {
            let digits: String = line.chars().take_while(char::is_ascii_digit).collect();
            if !digits.is_empty() && line[digits.len()..].starts_with(". ") {
                let rule = digits.parse().expect("a rule number");
                sections.get_mut(n).expect("the section").insert(rule);
            }
        }
    }
    sections
}

/// One cited section, with the rules cited in it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Citation {
    section: String,
    rules: Vec<u32>,
}

/// Reads `N(.M)*` at the start of `s`: the number and the rest.
fn number(s: &str) -> Option<(&str, &str)> {
    let bytes = s.as_bytes();
    let digits_from = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut end = digits_from(0);
    if end == 0 {
        return None;
    }
    // A dot continues the number only when a digit follows ("4.6." ends a sentence).
    while end + 1 < bytes.len() && bytes[end] == b'.' && bytes[end + 1].is_ascii_digit() {
        end = digits_from(end + 1);
    }
    Some((&s[..end], &s[end..]))
}

/// Reads `rule K` / `rules K, L` at the start of `s`.
fn rules(s: &str) -> (Vec<u32>, &str) {
    let Some(mut rest) = s
        .strip_prefix(" rules ")
        .or_else(|| s.strip_prefix(" rule "))
    else {
        return (Vec::new(), s);
    };
    let mut found = Vec::new();
    while let Some((k, after)) = number(rest) {
        let Ok(k) = k.parse() else { break };
        found.push(k);
        rest = after;
        match after
            .strip_prefix(", ")
            .or_else(|| after.strip_prefix(" and "))
        {
            Some(next) if next.starts_with(|c: char| c.is_ascii_digit()) => rest = next,
            _ => break,
        }
    }
    (found, rest)
}

/// Every section between `from` and `to` (`2.2`–`2.5`: 2.2, 2.3, 2.4, 2.5).
fn range(from: &str, to: &str) -> Vec<String> {
    let split = |s: &str| {
        s.rsplit_once('.')
            .map(|(a, b)| (a.to_owned(), b.parse::<u32>()))
    };
    match (split(from), split(to)) {
        (Some((pa, Ok(a))), Some((pb, Ok(b)))) if pa == pb && a <= b => {
            (a..=b).map(|i| format!("{pa}.{i}")).collect()
        }
        _ => vec![from.to_owned(), to.to_owned()],
    }
}

/// The citations in `text`: "spec" (any case; or "spec section") followed by
/// a list of section numbers and ranges, each optionally with its rules.
fn citations(text: &str) -> Vec<Citation> {
    // "Spec 4.6" at the start of a sentence counts too.
    let text = text.to_ascii_lowercase();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(pos) = text[at..].find("spec ") {
        let start = at + pos;
        at = start + "spec ".len();
        let word_start = text[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric() && c != '_' && c != '-' && c != '/');
        if !word_start {
            continue;
        }
        let mut rest = &text[at..];
        rest = rest
            .strip_prefix("sections ")
            .or_else(|| rest.strip_prefix("section "))
            .unwrap_or(rest);
        while let Some((first, after)) = number(rest) {
            rest = after;
            let mut cited = vec![first.to_owned()];
            for dash in ["–", "-"] {
                if let Some((last, after)) = rest.strip_prefix(dash).and_then(number) {
                    cited = range(first, last);
                    rest = after;
                    break;
                }
            }
            let (rule_list, after) = rules(rest);
            rest = after;
            let last = cited.len() - 1;
            for (i, section) in cited.into_iter().enumerate() {
                let rules = if i == last {
                    rule_list.clone()
                } else {
                    Vec::new()
                };
                found.push(Citation { section, rules });
            }
            let next = [", ", " / ", "/", " and "]
                .iter()
                .find_map(|sep| rest.strip_prefix(sep))
                .filter(|n| n.starts_with(|c: char| c.is_ascii_digit()));
            match next {
                Some(next) => rest = next,
                None => break,
            }
        }
    }
    found
}

fn service_doc() -> (PathBuf, BTreeMap<String, BTreeSet<u32>>) {
    let path = repo_root().join("docs/service.md");
    let doc = fs::read_to_string(&path).expect("docs/service.md reads");
    (path, sections(&doc))
}

fn sources() -> Vec<(PathBuf, String)> {
    let root = repo_root();
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|path| {
            let bytes = fs::read(&path).ok()?;
            let rel = path.strip_prefix(&root).unwrap_or(&path).to_path_buf();
            Some((rel, String::from_utf8_lossy(&bytes).into_owned()))
        })
        .collect()
}

#[test]
fn every_cited_section_and_rule_is_in_docs_service_md() {
    let (_, sections) = service_doc();
    let mut missing = Vec::new();
    let mut count = 0;
    for (path, text) in sources() {
        for (n, line) in text.lines().enumerate() {
            for citation in citations(line) {
                count += 1;
                let Some(numbered) = sections.get(&citation.section) else {
                    missing.push(format!(
                        "{}:{}: spec {} is no heading of docs/service.md",
                        path.display(),
                        n + 1,
                        citation.section
                    ));
                    continue;
                };
                for rule in &citation.rules {
                    let sub = format!("{}.{rule}", citation.section);
                    if !numbered.contains(rule) && !sections.contains_key(&sub) {
                        missing.push(format!(
                            "{}:{}: spec {} rule {rule}: docs/service.md numbers no such rule there",
                            path.display(),
                            n + 1,
                            citation.section
                        ));
                    }
                }
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    // The walk found the sources: the core alone cites well over a hundred.
    assert!(
        count > 100,
        "only {count} citations found: is the walk broken?"
    );
}

#[test]
fn nothing_points_at_the_outside_specification() {
    // Spelt in two parts, so this file does not match itself.
    let needles = [concat!("live-bot-api", ".md"), concat!("shared/", "spec/")];
    let mut found = Vec::new();
    for (path, text) in sources() {
        for (n, line) in text.lines().enumerate() {
            if needles.iter().any(|needle| line.contains(needle)) {
                found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "point these at docs/service.md:\n{}",
        found.join("\n")
    );
}

#[test]
fn markdown_links_to_service_md_resolve() {
    let root = repo_root();
    let mut broken = Vec::new();
    for (path, text) in sources() {
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let dir = root.join(&path);
        let dir = dir.parent().expect("a file has a folder");
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let target = rest.split([')', ' ']).next().unwrap_or_default();
            let file = target.split('#').next().unwrap_or_default();
            if file.ends_with("service.md") && !file.contains("://") && !dir.join(file).is_file() {
                broken.push(format!("{}: ({target})", path.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links that do not resolve:\n{}",
        broken.join("\n")
    );
}

#[test]
fn citations_are_read_as_written() {
    let c = |s: &str| {
        citations(s)
            .into_iter()
            .map(|c| (c.section, c.rules))
            .collect::<Vec<_>>()
    };
    let s = |n: &str| (n.to_owned(), Vec::new());
    assert_eq!(c("(spec 4.6)."), [s("4.6")]);
    assert_eq!(c("spec 2.1, 8: 3600 seconds"), [s("2.1"), s("8")]);
    assert_eq!(
        c("(spec 2.2–2.4, 4.4)"),
        [s("2.2"), s("2.3"), s("2.4"), s("4.4")]
    );
    assert_eq!(c("spec 2.6 / 6"), [s("2.6"), s("6")]);
    assert_eq!(
        c("(spec 2.6, 4.6 rules 1, 5, 6);"),
        [s("2.6"), ("4.6".to_owned(), vec![1, 5, 6])]
    );
    assert_eq!(c("spec 8 rule 3), so"), [("8".to_owned(), vec![3])]);
    assert_eq!(c("by spec section 6: hearts"), [s("6")]);
    assert_eq!(c("spec 4, \"Summary\""), [s("4")]);
    assert_eq!(c("spec 4.6's table"), [s("4.6")]);
    assert_eq!(c("the spec's 401 rule (7.3)"), []);
    assert_eq!(c("Spec 3.1, 3.2: codes"), [s("3.1"), s("3.2")]);
    assert_eq!(c("inspec 4.6, respec 2"), []);
}
