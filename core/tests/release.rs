//! One release, one version: every package of onair says the version of the
//! root Cargo.toml's `[workspace.package]`, and each carries the licences.
//!
//! - every crate of the workspace takes the workspace's version, and every
//!   versioned dependency between them names it (`[workspace.dependencies]`);
//! - the published crates are exactly the ones RELEASING.md names, each with
//!   what a registry page needs (description, README, keywords, categories,
//!   docs.rs settings, the minimum Rust version) and both licence texts,
//!   and they depend only on each other among the workspace's crates;
//! - the npm package (wasm/npm/package.json) has the version and ships both
//!   licences;
//! - libonair's header says the version (`ONAIR_VERSION_*`) and the ABI
//!   of ffi/Cargo.toml (the soname's number);
//! - the Python package's version and `onair.__version__`;
//! - CHANGELOG.md has the version's entry, in the Keep a Changelog form.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The crates published to crates.io, in dependency order (RELEASING.md).
const PUBLISHED: [&str; 5] = [
    "onair",
    "onair-tokio",
    "onair-emulator",
    "onair-host",
    "onair-cli",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core/ sits in the repository")
        .to_path_buf()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn toml_at(path: &Path) -> toml::Table {
    read(path)
        .parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn str_at<'a>(table: &'a toml::Table, keys: &[&str]) -> Option<&'a str> {
    let (last, path) = keys.split_last()?;
    let mut t = table;
    for k in path {
        t = t.get(*k)?.as_table()?;
    }
    t.get(*last)?.as_str()
}

/// The root manifest and the workspace's one version.
fn workspace() -> (toml::Table, String) {
    let root = toml_at(&repo().join("Cargo.toml"));
    let version = str_at(&root, &["workspace", "package", "version"])
        .expect("[workspace.package] version")
        .to_string();
    (root, version)
}

/// Every member: (folder, its manifest).
fn members(root: &toml::Table) -> Vec<(PathBuf, toml::Table)> {
    root["workspace"]["members"]
        .as_array()
        .expect("workspace.members")
        .iter()
        .map(|m| {
            let dir = repo().join(m.as_str().expect("a member is a path"));
            let manifest = toml_at(&dir.join("Cargo.toml"));
            (dir, manifest)
        })
        .collect()
}

fn package(manifest: &toml::Table) -> &toml::Table {
    manifest["package"].as_table().expect("[package]")
}

fn name(manifest: &toml::Table) -> &str {
    package(manifest)["name"].as_str().expect("package.name")
}

fn published(manifest: &toml::Table) -> bool {
    package(manifest).get("publish").and_then(|p| p.as_bool()) != Some(false)
}

/// Whether `key` of `[package]` is `key.workspace = true`.
fn inherited(manifest: &toml::Table, key: &str) -> bool {
    package(manifest)
        .get(key)
        .and_then(|v| v.as_table())
        .and_then(|t| t.get("workspace"))
        .and_then(|w| w.as_bool())
        == Some(true)
}

/// Each dependency table of a manifest (normal, dev, build, per target):
/// (which, the table).
fn dependency_tables(manifest: &toml::Table) -> Vec<(String, &toml::Table)> {
    let kinds = ["dependencies", "dev-dependencies", "build-dependencies"];
    let mut out = Vec::new();
    for kind in kinds {
        if let Some(t) = manifest.get(kind).and_then(|t| t.as_table()) {
            out.push((kind.to_string(), t));
        }
    }
    if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
        for (cfg, target) in targets {
            for kind in kinds {
                if let Some(t) = target.get(kind).and_then(|t| t.as_table()) {
                    out.push((format!("target.{cfg}.{kind}"), t));
                }
            }
        }
    }
    out
}

/// The crate a dependency entry names (`package = ` when renamed).
fn dependency_name<'a>(key: &'a str, spec: &'a toml::Value) -> &'a str {
    spec.get("package").and_then(|p| p.as_str()).unwrap_or(key)
}

#[test]
fn every_crate_has_the_workspace_version() {
    let (root, version) = workspace();
    assert!(
        version.split('.').count() == 3 && version.split('.').all(|n| n.parse::<u32>().is_ok()),
        "the workspace's version is MAJOR.MINOR.PATCH: {version}"
    );
    for (dir, manifest) in members(&root) {
        assert!(
            inherited(&manifest, "version"),
            "{}: version.workspace = true (one version for every package)",
            dir.display()
        );
    }
    let internal: BTreeSet<String> = members(&root)
        .iter()
        .map(|(_, m)| name(m).to_string())
        .collect();
    let deps = root["workspace"]["dependencies"]
        .as_table()
        .expect("[workspace.dependencies]");
    for (key, spec) in deps {
        if internal.contains(dependency_name(key, spec)) {
            assert_eq!(
                spec.get("version").and_then(|v| v.as_str()),
                Some(version.as_str()),
                "[workspace.dependencies] {key}: the workspace's version"
            );
        }
    }
    for (dir, manifest) in members(&root) {
        for (kind, table) in dependency_tables(&manifest) {
            for (key, spec) in table {
                let named = spec.get("version").and_then(|v| v.as_str());
                if internal.contains(dependency_name(key, spec)) {
                    if let Some(named) = named {
                        assert_eq!(
                            named,
                            version,
                            "{} [{kind}] {key}: the workspace's version",
                            dir.display()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn the_published_crates_are_complete() {
    let (root, _) = workspace();
    let all = members(&root);
    let listed: BTreeSet<&str> = all
        .iter()
        .filter(|(_, m)| published(m))
        .map(|(_, m)| name(m))
        .collect();
    assert_eq!(
        listed,
        PUBLISHED.into_iter().collect::<BTreeSet<_>>(),
        "the crates without publish = false (RELEASING.md says which are published and why)"
    );
    let releasing = read(&repo().join("RELEASING.md"));
    let top_mit = read(&repo().join("LICENSE-MIT"));
    let top_apache = read(&repo().join("LICENSE-APACHE"));
    assert!(top_mit.contains("Copyright (c) the onair developers"));
    assert!(top_apache.contains("Apache License") && top_apache.contains("Version 2.0"));
    for (dir, manifest) in all.iter().filter(|(_, m)| published(m)) {
        let crate_name = name(manifest);
        let at = dir.display();
        assert!(
            releasing.contains(&format!("`{crate_name}`")),
            "RELEASING.md names `{crate_name}`"
        );
        let p = package(manifest);
        for key in ["edition", "rust-version", "license", "repository"] {
            assert!(inherited(manifest, key), "{at}: {key}.workspace = true");
        }
        let description = p.get("description").and_then(|d| d.as_str()).unwrap_or("");
        assert!(!description.is_empty(), "{at}: a description");
        let readme = p.get("readme").and_then(|r| r.as_str());
        let readme = readme.unwrap_or_else(|| panic!("{at}: readme = \"README.md\""));
        assert!(
            read(&dir.join(readme)).starts_with("# onair"),
            "{at}/{readme}: the crate's own README"
        );
        for key in ["keywords", "categories"] {
            let list = p.get(key).and_then(|k| k.as_array());
            let n = list.map_or(0, |l| l.len());
            assert!((1..=5).contains(&n), "{at}: {key} (one to five)");
        }
        for keyword in p["keywords"].as_array().into_iter().flatten() {
            let k = keyword.as_str().unwrap_or("");
            assert!(
                !k.is_empty()
                    && k.len() <= 20
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
                "{at}: keyword {k:?} is what crates.io accepts"
            );
        }
        let has_lib = dir.join("src/lib.rs").exists();
        if has_lib {
            assert!(
                manifest
                    .get("package")
                    .and_then(|p| p.get("metadata"))
                    .and_then(|m| m.get("docs"))
                    .and_then(|d| d.get("rs"))
                    .is_some(),
                "{at}: [package.metadata.docs.rs]"
            );
        }
        let include: Vec<&str> = p
            .get("include")
            .and_then(|i| i.as_array())
            .map(|i| i.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        for (file, text) in [("LICENSE-MIT", &top_mit), ("LICENSE-APACHE", &top_apache)] {
            assert_eq!(
                &read(&dir.join(file)),
                text,
                "{at}/{file}: the top's text (a link to it)"
            );
            assert!(
                include.is_empty() || include.contains(&format!("/{file}").as_str()),
                "{at}: include lists /{file}"
            );
        }
        // A published crate's own dependencies among the workspace's crates
        // are published too, at a version (dev-dependencies by path only are
        // left out of the package by cargo).
        for (kind, table) in dependency_tables(manifest) {
            if kind.ends_with("dev-dependencies") {
                continue;
            }
            for (key, spec) in table {
                let dep = dependency_name(key, spec);
                let Some((_, target)) = all.iter().find(|(_, m)| name(m) == dep) else {
                    continue;
                };
                assert!(published(target), "{at}: depends on unpublished {dep}");
                let via_workspace = spec.get("workspace").and_then(|w| w.as_bool()) == Some(true);
                assert!(
                    via_workspace || spec.get("version").is_some(),
                    "{at} [{kind}] {key}: a version (`{key}.workspace = true`)"
                );
            }
        }
    }
}

#[test]
fn the_npm_package_has_the_version_and_the_licences() {
    let (_, version) = workspace();
    let dir = repo().join("wasm/npm");
    let package: serde_json::Value =
        serde_json::from_str(&read(&dir.join("package.json"))).expect("package.json is JSON");
    assert_eq!(package["version"].as_str(), Some(version.as_str()));
    assert_eq!(package["name"].as_str(), Some("onair"));
    assert_eq!(package["license"].as_str(), Some("MIT OR Apache-2.0"));
    let files: Vec<&str> = package["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    for file in ["LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(files.contains(&file), "package.json's files list {file}");
        assert_eq!(
            read(&dir.join(file)),
            read(&repo().join(file)),
            "wasm/npm/{file}: a copy of the top's"
        );
    }
}

/// The value of `#define NAME <value>` in the header.
fn define(header: &str, name: &str) -> Option<u32> {
    header.lines().find_map(|l| {
        let rest = l.strip_prefix("#define ")?.strip_prefix(name)?;
        rest.strip_prefix(' ')?.trim().parse().ok()
    })
}

#[test]
fn libonair_says_the_version_and_its_abi() {
    let (_, version) = workspace();
    let header = read(&repo().join("include/onair.h"));
    let parts: Vec<Option<u32>> = ["MAJOR", "MINOR", "PATCH"]
        .iter()
        .map(|p| define(&header, &format!("ONAIR_VERSION_{p}")))
        .collect();
    let expected: Vec<Option<u32>> = version.split('.').map(|n| n.parse().ok()).collect();
    assert_eq!(
        parts, expected,
        "include/onair.h's ONAIR_VERSION_* are {version}"
    );
    let ffi = toml_at(&repo().join("ffi/Cargo.toml"));
    let abi = ffi["package"]["metadata"]["onair"]["abi-version"]
        .as_integer()
        .expect("[package.metadata.onair] abi-version");
    assert_eq!(
        define(&header, "ONAIR_ABI_VERSION").map(i64::from),
        Some(abi),
        "ONAIR_ABI_VERSION is ffi/Cargo.toml's abi-version (the soname's number)"
    );
    // The C release archive and the installed pkg-config file name both.
    let install = read(&repo().join("scripts/install-c"));
    assert!(install.contains("libonair.so.$abi") && install.contains("Version: $version"));
}

#[test]
fn the_python_package_has_the_version() {
    let (_, version) = workspace();
    let pyproject = toml_at(&repo().join("python/pyproject.toml"));
    let project = pyproject["project"].as_table().expect("[project]");
    let dynamic = project
        .get("dynamic")
        .and_then(|d| d.as_array())
        .is_some_and(|d| d.iter().any(|v| v.as_str() == Some("version")));
    if !dynamic {
        // A static version is the workspace's; a dynamic one is read from
        // Cargo.toml by the build backend.
        assert_eq!(
            project.get("version").and_then(|v| v.as_str()),
            Some(version.as_str()),
            "python/pyproject.toml's version"
        );
    }
    let init = read(&repo().join("python/onair/__init__.py"));
    let literal = init
        .lines()
        .find_map(|l| l.strip_prefix("__version__ = \""))
        .and_then(|l| l.strip_suffix('"'));
    if let Some(literal) = literal {
        assert_eq!(literal, version, "python/onair/__init__.py's __version__");
    }
}

#[test]
fn the_changelog_has_this_release() {
    let (_, version) = workspace();
    let changelog = read(&repo().join("CHANGELOG.md"));
    assert!(changelog.starts_with("# Changelog"));
    assert!(changelog.contains("Keep a Changelog"));
    assert!(changelog.contains("## [Unreleased]"));
    let heading = format!("## [{version}] - ");
    let line = changelog
        .lines()
        .find(|l| l.starts_with(&heading))
        .unwrap_or_else(|| panic!("CHANGELOG.md has `{heading}YYYY-MM-DD`"));
    let date = &line[heading.len()..];
    let ok = date.len() == 10
        && date.char_indices().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        });
    assert!(ok, "the release's date is YYYY-MM-DD: {line}");
    assert!(
        changelog.contains(&format!("[{version}]: ")),
        "a link reference for [{version}]"
    );
}
