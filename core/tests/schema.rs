//! The JSON Schema under the repository's `schema/` folder: generated from
//! the types that write the JSON (feature `schema`), committed, and checked
//! here two ways.
//!
//! - Fresh: each committed file equals what the types generate now
//!   (`ONAIR_BLESS=1 cargo test -p onair --features schema --test schema`
//!   rewrites them).
//! - True: every line of the pinned JSON formats (json_formats.rs's
//!   snapshot, one sample of every action, notice, call result, stop and
//!   item, written by the hand-made `Serialize` code) validates against its
//!   document, read strictly (no property the schema does not name), and
//!   every variant the schema names has a sample.
#![cfg(feature = "schema")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema")
}

fn documents() -> Vec<(&'static str, Value)> {
    onair::json::schema_documents()
}

#[test]
fn schema_files_are_fresh() {
    let dir = schema_dir();
    let bless = std::env::var_os("ONAIR_BLESS").is_some();
    let mut stale = Vec::new();
    for (name, text) in onair::json::schema_files() {
        let path = dir.join(name);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != text {
            if bless {
                std::fs::create_dir_all(&dir).expect("schema/ is writable");
                std::fs::write(&path, &text).expect("schema file written");
            } else {
                stale.push(name);
            }
        }
    }
    // A generated file whose type is gone.
    let known: BTreeSet<&str> = documents().iter().map(|(name, _)| *name).collect();
    for entry in std::fs::read_dir(&dir).expect("schema/ exists") {
        let name = entry.expect("a directory entry").file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".json") && !known.contains(name.as_ref()) {
            stale.push(Box::leak(name.into_owned().into_boxed_str()));
        }
    }
    assert!(
        stale.is_empty(),
        "schema/ is stale: {stale:?} (regenerate: ONAIR_BLESS=1 cargo test -p onair \
         --features schema --test schema)"
    );
}

/// The schema made strict for testing: every object schema that names its
/// properties refuses others (`unevaluatedProperties: false`), except the
/// ones merged into another: a member of a `oneOf`/`anyOf`/`allOf` whose
/// parent names properties too, or a definition `$ref`'d beside properties
/// (a flattened struct, a newtype variant): there the parent checks the
/// whole object.
fn strict(schema: &mut Value, merged: bool, defs_merged: &BTreeSet<String>) {
    let Value::Object(map) = schema else { return };
    let names_properties = map.contains_key("properties");
    for (key, value) in map.iter_mut() {
        match (key.as_str(), value) {
            ("oneOf" | "anyOf" | "allOf", Value::Array(members)) => {
                for member in members {
                    strict(member, names_properties || merged, defs_merged);
                }
            }
            ("$defs", Value::Object(defs)) => {
                for (name, def) in defs.iter_mut() {
                    strict(def, defs_merged.contains(name), defs_merged);
                }
            }
            ("properties", Value::Object(children)) => {
                for child in children.values_mut() {
                    strict(child, false, defs_merged);
                }
            }
            (_, value) => strict(value, false, defs_merged),
        }
    }
    if names_properties && !merged {
        map.insert("unevaluatedProperties".to_owned(), Value::Bool(false));
    }
}

/// The definitions `$ref`'d beside `properties`, directly or through a
/// union member.
fn merged_defs(schema: &Value, out: &mut BTreeSet<String>) {
    match schema {
        Value::Object(map) => {
            if map.contains_key("properties") {
                if let Some(Value::String(target)) = map.get("$ref") {
                    out.insert(target.trim_start_matches("#/$defs/").to_owned());
                }
            }
            map.values().for_each(|v| merged_defs(v, out));
        }
        Value::Array(values) => values.iter().for_each(|v| merged_defs(v, out)),
        _ => {}
    }
}

fn validator(name: &str) -> jsonschema::Validator {
    let (_, mut schema) = documents()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no document {name}"));
    let mut merged = BTreeSet::new();
    merged_defs(&schema, &mut merged);
    strict(&mut schema, false, &merged);
    jsonschema::draft202012::new(&schema)
        .unwrap_or_else(|e| panic!("{name} is not a valid JSON Schema 2020-12: {e}"))
}

/// The pinned lines, each with the document it is an instance of.
fn samples() -> Vec<(&'static str, Value)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots/json_formats__every_json_line_format_is_pinned.snap");
    let text = std::fs::read_to_string(path).expect("the pinned JSON formats");
    // insta's header: `---`, its fields, `---`.
    let body = text.splitn(3, "---\n").nth(2).expect("an insta snapshot");
    let mut section = "";
    let mut out = Vec::new();
    for line in body.lines() {
        if let Some(title) = line.strip_prefix("# ") {
            section = match title {
                "typed items" => "item.json",
                "raw items" => "raw-item.json",
                _ => "action.json",
            };
            continue;
        }
        let value: Value = serde_json::from_str(line).expect("a pinned line is JSON");
        let document = if value.get("type").is_some() {
            section
        } else if value.get("endpoint").is_some() {
            "request.json"
        } else if value.get("code").is_some() {
            "stop.json"
        } else if value.get("hearts").is_some() {
            "tally.json"
        } else if value.get("format").is_some() {
            "tokens.json"
        } else if value.get("connection").is_some() {
            "status.json"
        } else {
            section
        };
        // The kit state a `persistState` holds, as a document of its own.
        if let Some(state) = value.get("state").and_then(Value::as_str) {
            let state = serde_json::from_str(state).expect("a kit state is JSON");
            out.push(("kit-state.json", state));
        }
        out.push((document, value));
    }
    out
}

#[test]
fn every_pinned_line_validates_against_its_schema() {
    let mut failures = Vec::new();
    let mut seen = BTreeSet::new();
    for (document, line) in samples() {
        seen.insert(document);
        let validator = validator(document);
        for error in validator.iter_errors(&line) {
            failures.push(format!(
                "{document}: {error} at {} in {line}",
                error.instance_path()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let documents: BTreeSet<&str> = documents().iter().map(|(name, _)| *name).collect();
    let unsampled: Vec<_> = documents
        .difference(&seen)
        .filter(|d| !["kit-config.json"].contains(*d))
        .collect();
    assert!(unsampled.is_empty(), "no pinned line of {unsampled:?}");
}

/// The `const` values a tag takes across a union (`type` of actions,
/// `kind` of notices and call results), found anywhere in `schema`.
fn tags(schema: &Value, tag: &str, out: &mut BTreeSet<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                if let Some(value) = properties
                    .get(tag)
                    .and_then(|p| p.get("const"))
                    .and_then(Value::as_str)
                {
                    out.insert(value.to_owned());
                }
            }
            map.values().for_each(|v| tags(v, tag, out));
        }
        Value::Array(values) => values.iter().for_each(|v| tags(v, tag, out)),
        _ => {}
    }
}

/// The same tags as written in the samples.
fn sampled(value: &Value, tag: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(value)) = map.get(tag) {
                out.insert(value.clone());
            }
            map.values().for_each(|v| sampled(v, tag, out));
        }
        Value::Array(values) => values.iter().for_each(|v| sampled(v, tag, out)),
        _ => {}
    }
}

#[test]
fn every_variant_of_the_schema_has_a_pinned_sample() {
    let samples = samples();
    for (document, tag) in [
        ("action.json", "type"),
        ("action.json", "kind"),
        ("item.json", "type"),
        ("raw-item.json", "type"),
    ] {
        let (_, schema) = documents()
            .into_iter()
            .find(|(n, _)| *n == document)
            .expect("a document");
        let mut declared = BTreeSet::new();
        tags(&schema, tag, &mut declared);
        assert!(!declared.is_empty(), "{document} has no `{tag}` union");
        let mut written = BTreeSet::new();
        for (_, line) in samples.iter().filter(|(d, _)| *d == document) {
            sampled(line, tag, &mut written);
        }
        let missing: Vec<_> = declared.difference(&written).collect();
        assert!(
            missing.is_empty(),
            "{document}: no pinned line has `{tag}` {missing:?} (add one to json_formats.rs)"
        );
    }
}

#[test]
fn a_line_unlike_its_schema_is_refused() {
    let actions = validator("action.json");
    let notice = samples()
        .into_iter()
        .find(|(_, line)| line["type"] == "notice")
        .map(|(_, line)| line)
        .expect("a pinned notice");
    assert!(actions.is_valid(&notice));
    // A property the schema does not name, at the top and inside a
    // flattened notice.
    let mut extra = notice.clone();
    extra["bogus"] = Value::from(1);
    assert!(!actions.is_valid(&extra));
    let mut inner = notice.clone();
    inner["notice"]["bogus"] = Value::from(1);
    assert!(!actions.is_valid(&inner));
    // A required field missing, a wrong type, an unknown tag.
    let mut missing = notice.clone();
    missing["notice"]
        .as_object_mut()
        .expect("an object")
        .remove("level");
    assert!(!actions.is_valid(&missing));
    let wait = serde_json::json!({"type": "wait", "untilMs": "soon"});
    assert!(!actions.is_valid(&wait));
    assert!(actions.is_valid(&serde_json::json!({"type": "wait", "untilMs": null})));
    assert!(!actions.is_valid(&serde_json::json!({"type": "sleep"})));
}
