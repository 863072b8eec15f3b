//! The typed view `onair_action` in `include/onair.h` against the actions'
//! JSON form (`schema/action.json`, generated from the core's types). C keeps
//! its views for what a C bot's loop uses and reads everything else from the
//! JSON (`onair_bot_action_json`), so a property the core adds to an action
//! is JSON-only with no C edit. What this guarantees:
//!
//! - every field of a view maps to a property the schema still has: a
//!   property removed or renamed in Rust fails here until the view follows
//!   (a stale view);
//! - every field [`VIEWS`] names is a field of `onair_action`, and every
//!   field of `onair_action` is named by [`VIEWS`] (or is one of the few
//!   [`DERIVED`] from a tag): a field the map forgets fails too.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The fields of `onair_action` that hold no one property: the action's
/// `type` (`kind`), a notice's `kind` (`notice`), and what a stop's `code`
/// implies (`resumes_with_new_consent`).
const DERIVED: &[&str] = &["kind", "notice", "resumes_with_new_consent"];

/// The properties C reads from the view, each with the fields of
/// `onair_action` that hold it (several when the value spans them), by
/// `variant.property`; a notice's `notice.<kind>.<property>`, a call
/// result's `done.<kind>.<property>`, a stop's `stopped.<property>`. Any
/// other property is read from the JSON.
const VIEWS: &[(&str, &[&str])] = &[
    ("send.id", &["request_id"]),
    ("send.request", &["request"]),
    ("send.timeoutMs", &["timeout_ms"]),
    ("openStream.id", &["request_id"]),
    ("openStream.request", &["request"]),
    ("closeStream.id", &["request_id"]),
    ("closeStream.reason", &["code"]),
    ("event.event", &["event"]),
    ("event.id", &["event"]),
    ("event.data", &["event"]),
    ("notice.message", &["message"]),
    ("notice.level", &["is_warning"]),
    ("notice.frameSkipped.error", &["code"]),
    ("notice.unknownEvent.event", &["code"]),
    ("notice.problem.problem", &["code"]),
    ("notice.callHeld.call", &["call_id"]),
    (
        "notice.reconnectStormBraked.untilMs",
        &["has_until_ms", "until_ms"],
    ),
    ("notice.commandRefused.name", &["name"]),
    ("notice.commandRefused.user", &["user_id", "nickname"]),
    ("notice.commandRefused.role", &["role"]),
    ("notice.commandRefused.needed", &["needed"]),
    ("notice.unreachable.endpoint", &["name"]),
    ("notice.unreachable.failure", &["code"]),
    ("notice.unreachable.failures", &["count"]),
    ("notice.unreachable.sinceMs", &["since_ms"]),
    ("notice.reachable.failures", &["count"]),
    ("notice.reachable.sinceMs", &["since_ms"]),
    ("notice.gaveUp.endpoint", &["name"]),
    ("notice.gaveUp.reason", &["code"]),
    ("notice.gaveUp.count", &["count"]),
    ("notice.dailyQuotaReached.scope", &["code"]),
    (
        "notice.dailyQuotaReached.untilMs",
        &["has_until_ms", "until_ms"],
    ),
    ("notice.repliesDropped.replyKind", &["name"]),
    ("notice.repliesDropped.people", &["count"]),
    ("notice.repliesDropped.reason", &["code"]),
    ("done.call", &["call_id"]),
    ("done.result", &["done"]),
    ("done.failed.failure", &["failure"]),
    ("done.failed.problem", &["code"]),
    ("done.failed.untilMs", &["has_until_ms", "until_ms"]),
    ("done.failed.message", &["message"]),
    ("done.failed.stop", &["code"]),
    ("persistTokens.tokens", &["tokens_json"]),
    ("timer.tag", &["tag"]),
    ("wait.untilMs", &["has_until_ms", "until_ms"]),
    ("stopped.code", &["code"]),
    ("stopped.message", &["message"]),
    ("command.name", &["name"]),
    ("command.args", &["args", "args_len"]),
    ("command.rest", &["rest"]),
    ("command.user", &["user_id", "nickname"]),
    ("command.role", &["role"]),
    ("command.event", &["event"]),
    ("arrival.kind", &["arrival"]),
    ("arrival.awayMs", &["away_ms"]),
    ("arrival.user", &["user_id", "nickname"]),
    ("arrival.isManager", &["is_manager"]),
    ("arrival.liveId", &["has_live_id", "live_id"]),
    ("arrival.event", &["event"]),
    ("milestone.kind", &["milestone"]),
    ("milestone.reached", &["reached"]),
    ("milestone.total", &["total"]),
    ("milestone.user", &["user_id", "nickname"]),
    ("milestone.event", &["event"]),
    ("broadcastEnded.liveId", &["has_live_id", "live_id"]),
    ("broadcastEnded.tally", &["tally_json"]),
    ("broadcastEnded.event", &["event"]),
    ("persistState.state", &["state_json"]),
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

fn schema() -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(root().join("schema/action.json")).expect("schema/action.json"),
    )
    .expect("JSON")
}

fn view_fields() -> BTreeSet<String> {
    let header = std::fs::read_to_string(root().join("include/onair.h")).expect("the header");
    let fields = struct_fields(&header, "onair_action");
    assert!(fields.contains("request_id") && fields.contains("since_ms"));
    fields
}

/// What is wrong with [`VIEWS`] for this schema and these view fields.
fn problems(schema: &Value, fields: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    let schema_paths = paths(schema);
    let mut mapped: BTreeSet<&str> = DERIVED.iter().copied().collect();
    for (path, names) in VIEWS {
        if !schema_paths.contains(*path) {
            problems.push(format!(
                "`{path}` (onair_action's {names:?}) is not in schema/action.json: \
                 the view is stale; follow the core's change in the view and in VIEWS"
            ));
        }
        for name in *names {
            mapped.insert(name);
            if !fields.contains(*name) {
                problems.push(format!("`{path}`: onair_action has no field `{name}`"));
            }
        }
    }
    for field in fields {
        if !mapped.contains(field.as_str()) {
            problems.push(format!(
                "onair_action's `{field}` maps to no property in VIEWS (nor DERIVED)"
            ));
        }
    }
    problems
}

/// The action `tag` of the schema.
fn action<'a>(schema: &'a mut Value, tag: &str) -> &'a mut Value {
    schema["oneOf"]
        .as_array_mut()
        .expect("a union")
        .iter_mut()
        .find(|m| m["properties"]["type"]["const"] == tag)
        .expect("the action")
}

#[test]
fn every_view_field_maps_to_a_property_of_the_schema() {
    let problems = problems(&schema(), &view_fields());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_property_added_to_an_action_is_json_only_with_no_c_edit() {
    let mut schema = schema();
    action(&mut schema, "timer")["properties"]["firedAtMs"] =
        serde_json::json!({"type": "integer"});
    assert!(paths(&schema).contains("timer.firedAtMs"));
    let problems = problems(&schema, &view_fields());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_view_of_a_property_the_schema_no_longer_has_fails() {
    let mut schema = schema();
    let arrival = action(&mut schema, "arrival");
    arrival["properties"]
        .as_object_mut()
        .expect("its properties")
        .remove("awayMs");
    let found = problems(&schema, &view_fields());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("`arrival.awayMs` (onair_action's [\"away_ms\"]) is not in"),
        "{found:?}"
    );
    let mut fields = view_fields();
    fields.insert("spare".to_owned());
    assert_eq!(
        problems(&self::schema(), &fields),
        ["onair_action's `spare` maps to no property in VIEWS (nor DERIVED)"]
    );
}
