//! Every property of an action's JSON form (`schema/action.json`, generated
//! from the core's types) has a field of the typed view `onair_action` in
//! `include/onair.h`, or is listed in ffi/README.md as read from the JSON
//! (`onair_bot_action_json`). A property added to an action in Rust (and the
//! schema regenerated) fails here until the view or the README says where C
//! finds it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Where C reads a property: a field of `onair_action` (several when the
/// value spans them), or the JSON only.
enum View {
    Fields(&'static [&'static str]),
    Json,
}
use View::{Fields, Json};

/// `variant.property`; a notice's `notice.<kind>.<property>`, a call
/// result's `done.<kind>.<property>`, a stop's `stopped.<property>`.
const VIEWS: &[(&str, View)] = &[
    ("send.id", Fields(&["request_id"])),
    ("send.request", Fields(&["request"])),
    ("send.timeoutMs", Fields(&["timeout_ms"])),
    ("openStream.id", Fields(&["request_id"])),
    ("openStream.request", Fields(&["request"])),
    ("closeStream.id", Fields(&["request_id"])),
    ("closeStream.reason", Fields(&["code"])),
    ("event.event", Fields(&["event"])),
    ("event.id", Fields(&["event"])),
    ("event.data", Fields(&["event"])),
    ("notice.message", Fields(&["message"])),
    ("notice.level", Fields(&["is_warning"])),
    ("notice.frameSkipped.error", Fields(&["code"])),
    ("notice.unknownEvent.event", Fields(&["code"])),
    ("notice.unknownEvent.data", Json),
    ("notice.problem.endpoint", Json),
    ("notice.problem.problem", Fields(&["code"])),
    ("notice.callHeld.call", Fields(&["call_id"])),
    (
        "notice.reconnectStormBraked.untilMs",
        Fields(&["has_until_ms", "until_ms"]),
    ),
    ("notice.commandRefused.name", Fields(&["name"])),
    (
        "notice.commandRefused.user",
        Fields(&["user_id", "nickname"]),
    ),
    ("notice.commandRefused.role", Fields(&["role"])),
    ("notice.commandRefused.needed", Fields(&["needed"])),
    ("notice.unreachable.endpoint", Fields(&["name"])),
    ("notice.unreachable.failure", Fields(&["code"])),
    ("notice.unreachable.failures", Fields(&["count"])),
    ("notice.unreachable.sinceMs", Fields(&["since_ms"])),
    ("notice.reachable.failures", Fields(&["count"])),
    ("notice.reachable.sinceMs", Fields(&["since_ms"])),
    ("notice.gaveUp.endpoint", Fields(&["name"])),
    ("notice.gaveUp.reason", Fields(&["code"])),
    ("notice.gaveUp.count", Fields(&["count"])),
    ("notice.dailyQuotaReached.scope", Fields(&["code"])),
    (
        "notice.dailyQuotaReached.untilMs",
        Fields(&["has_until_ms", "until_ms"]),
    ),
    ("notice.repliesDropped.replyKind", Fields(&["name"])),
    ("notice.repliesDropped.people", Fields(&["count"])),
    ("notice.repliesDropped.reason", Fields(&["code"])),
    ("done.call", Fields(&["call_id"])),
    ("done.result", Fields(&["done"])),
    ("done.broadcast.broadcast", Json),
    ("done.listeners.listeners", Json),
    ("done.fans.fans", Json),
    ("done.failed.failure", Fields(&["failure"])),
    ("done.failed.problem", Fields(&["code"])),
    ("done.failed.untilMs", Fields(&["has_until_ms", "until_ms"])),
    ("done.failed.message", Fields(&["message"])),
    ("done.failed.stop", Fields(&["code"])),
    ("persistTokens.generation", Json),
    ("persistTokens.tokens", Fields(&["tokens_json"])),
    ("timer.tag", Fields(&["tag"])),
    ("wait.untilMs", Fields(&["has_until_ms", "until_ms"])),
    ("stopped.code", Fields(&["code"])),
    ("stopped.message", Fields(&["message"])),
    ("stopped.reason", Json),
    ("stopped.missing", Json),
    ("stopped.problem", Json),
    ("command.name", Fields(&["name"])),
    ("command.args", Fields(&["args", "args_len"])),
    ("command.rest", Fields(&["rest"])),
    ("command.user", Fields(&["user_id", "nickname"])),
    ("command.role", Fields(&["role"])),
    ("command.event", Fields(&["event"])),
    ("arrival.kind", Fields(&["arrival"])),
    ("arrival.awayMs", Fields(&["away_ms"])),
    ("arrival.user", Fields(&["user_id", "nickname"])),
    ("arrival.isManager", Fields(&["is_manager"])),
    ("arrival.liveId", Fields(&["has_live_id", "live_id"])),
    ("arrival.event", Fields(&["event"])),
    ("milestone.kind", Fields(&["milestone"])),
    ("milestone.reached", Fields(&["reached"])),
    ("milestone.total", Fields(&["total"])),
    ("milestone.user", Fields(&["user_id", "nickname"])),
    ("milestone.event", Fields(&["event"])),
    ("broadcastEnded.liveId", Fields(&["has_live_id", "live_id"])),
    ("broadcastEnded.tally", Fields(&["tally_json"])),
    ("broadcastEnded.event", Fields(&["event"])),
    ("persistState.state", Fields(&["state_json"])),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn def<'a>(schema: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(target) if node.get("properties").is_none() => {
            &schema["$defs"][target.trim_start_matches("#/$defs/")]
        }
        _ => node,
    }
}

/// An object schema's property names, `$ref`'d parts included.
fn names(schema: &Value, node: &Value) -> Vec<String> {
    let mut out: Vec<String> = node
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(target) = node.get("$ref").and_then(Value::as_str) {
        if node.get("properties").is_some() {
            out.extend(names(
                schema,
                &schema["$defs"][target.trim_start_matches("#/$defs/")],
            ));
        }
    }
    out
}

/// A tagged union's members by their tag's value.
fn variants<'a>(schema: &'a Value, node: &'a Value, tag: &str) -> Vec<(String, &'a Value)> {
    def(schema, node)["oneOf"]
        .as_array()
        .expect("a tagged union")
        .iter()
        .map(|member| {
            let props = def(schema, member).get("properties").unwrap_or(member);
            let value = member["properties"][tag]["const"]
                .as_str()
                .or_else(|| props[tag]["const"].as_str())
                .expect("a tag")
                .to_owned();
            (value, member)
        })
        .collect()
}

/// Every path of the action schema (see [`VIEWS`]).
fn paths(schema: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (variant, member) in variants(schema, schema, "type") {
        for prop in names(schema, member) {
            let inner = &member["properties"][&prop];
            match (variant.as_str(), prop.as_str()) {
                (_, "type") => {}
                ("notice", "notice") => {
                    for own in names(schema, def(schema, inner)) {
                        out.insert(format!("notice.{own}"));
                    }
                    for (kind, notice) in variants(schema, inner, "kind") {
                        for field in names(schema, notice).into_iter().filter(|f| f != "kind") {
                            out.insert(format!("notice.{kind}.{field}"));
                        }
                    }
                }
                ("done", "result") => {
                    out.insert("done.result".to_owned());
                    for (kind, result) in variants(schema, inner, "kind") {
                        for field in names(schema, result).into_iter().filter(|f| f != "kind") {
                            out.insert(format!("done.{kind}.{field}"));
                        }
                    }
                }
                ("stopped", "stop") => {
                    for field in names(schema, def(schema, inner)) {
                        out.insert(format!("stopped.{field}"));
                    }
                }
                _ => {
                    out.insert(format!("{variant}.{prop}"));
                }
            }
        }
    }
    out
}

/// The fields of `typedef struct NAME { … } NAME;` in the header.
fn struct_fields(header: &str, name: &str) -> BTreeSet<String> {
    let start = header
        .find(&format!("typedef struct {name} {{"))
        .expect("the struct in the header");
    let end = start
        + header[start..]
            .find(&format!("}} {name};"))
            .expect("its end");
    let mut fields = BTreeSet::new();
    let mut in_comment = false;
    for line in header[start..end].lines().skip(1) {
        let line = line.trim();
        if line.starts_with("/*") {
            in_comment = !line.ends_with("*/");
            continue;
        }
        if in_comment {
            in_comment = !line.ends_with("*/");
            continue;
        }
        if let Some(decl) = line.strip_suffix(';') {
            let field = decl.rsplit([' ', '*']).next().expect("a field name");
            fields.insert(field.to_owned());
        }
    }
    fields
}

#[test]
fn every_action_property_has_a_view_field_or_is_documented_json_only() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schema/action.json")).expect("schema/action.json"),
    )
    .expect("JSON");
    let header = std::fs::read_to_string(root().join("include/onair.h")).expect("the header");
    let readme = std::fs::read_to_string(root().join("ffi/README.md")).expect("the README");
    let fields = struct_fields(&header, "onair_action");
    assert!(fields.contains("request_id") && fields.contains("since_ms"));

    let mut problems = Vec::new();
    let schema_paths = paths(&schema);
    let table: BTreeSet<String> = VIEWS.iter().map(|(p, _)| (*p).to_owned()).collect();
    for path in schema_paths.difference(&table) {
        problems.push(format!(
            "`{path}` has no field in onair_action and is not listed as JSON-only \
             (add it to the view, or to ffi/README.md's JSON-only list and VIEWS)"
        ));
    }
    for path in table.difference(&schema_paths) {
        problems.push(format!(
            "`{path}` is in VIEWS but not in schema/action.json"
        ));
    }
    for (path, view) in VIEWS {
        match view {
            Fields(names) => {
                for name in *names {
                    if !fields.contains(*name) {
                        problems.push(format!("`{path}`: onair_action has no field `{name}`"));
                    }
                }
            }
            Json => {
                if !readme.contains(&format!("`{path}`")) {
                    problems.push(format!(
                        "`{path}` is JSON-only but ffi/README.md does not list it"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_check_sees_a_property_the_view_lacks() {
    let mut schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schema/action.json")).expect("schema/action.json"),
    )
    .expect("JSON");
    let timer = schema["oneOf"]
        .as_array_mut()
        .expect("a union")
        .iter_mut()
        .find(|m| m["properties"]["type"]["const"] == "timer")
        .expect("the timer action");
    timer["properties"]["firedAtMs"] = serde_json::json!({"type": "integer"});
    let paths = paths(&schema);
    assert!(paths.contains("timer.firedAtMs"));
    assert!(!VIEWS.iter().any(|(p, _)| *p == "timer.firedAtMs"));
}
