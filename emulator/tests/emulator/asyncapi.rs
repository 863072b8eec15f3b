//! The event stream's AsyncAPI document (`schema/live-bot-api.asyncapi.yaml`)
//! held to the code on both sides of the wire:
//!
//! - its payloads against the core's event types (their schemars schema:
//!   field names, required, null, types, known enum values), so a field
//!   added in Rust fails here until the document follows;
//! - every frame the emulator sends in its busy and faulty scenarios, and
//!   every event the core's decoder reads from those bytes (its JSON form),
//!   validated against the document (JSON Schema draft-07, the AsyncAPI
//!   Schema vocabulary);
//! - the stream's opening errors, each against the message for its status;
//! - wrong frames (an array payload, a missing field, a string for a number)
//!   fail with a message naming the problem, and the decoder refuses them too.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use std::time::Duration;

use jsonschema::Validator;
use onair::event::{Chat, DecodeErrorKind, Decoder, Donation, End, Event, Item, Like, Presence};
use onair_emulator::{Emulator, Scenario};
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};
use yaml_rust2::{Yaml, YamlLoader};

use crate::common::*;

const DOCUMENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../schema/live-bot-api.asyncapi.yaml"
);

/// The five events: SSE name and component schema name.
const EVENTS: [(&str, &str); 5] = [
    ("chat", "Chat"),
    ("presence", "Presence"),
    ("like", "Like"),
    ("donation", "Donation"),
    ("end", "End"),
];

// ---------------------------------------------------------------------------
// The document

fn yaml_to_json(y: &Yaml) -> Value {
    match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(r) => Value::from(r.parse::<f64>().expect("a YAML real is a float")),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(items) => Value::Array(items.iter().map(yaml_to_json).collect()),
        Yaml::Hash(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        other => panic!("a non-string key in the document: {other:?}"),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Yaml::Alias(_) | Yaml::BadValue => panic!("the document uses no aliases: {y:?}"),
    }
}

/// The document as JSON (read once).
fn doc() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let text = std::fs::read_to_string(DOCUMENT).expect("schema/live-bot-api.asyncapi.yaml");
        let docs = YamlLoader::load_from_str(&text).expect("the document is YAML");
        assert_eq!(docs.len(), 1, "one YAML document");
        yaml_to_json(&docs[0])
    })
}

/// A validator for the schema at `pointer` in the document (its `$ref`s
/// resolved within the document), draft-07 as AsyncAPI 3.0's schemas are,
/// formats asserted (`date-time`).
fn validator_at(pointer: &str) -> Validator {
    let doc = doc();
    assert!(
        doc.pointer(pointer).is_some(),
        "{pointer} is in the document"
    );
    let root = json!({ "$ref": format!("#{pointer}"), "components": doc["components"] });
    jsonschema::draft7::options()
        .should_validate_formats(true)
        .build(&root)
        .unwrap_or_else(|e| panic!("{pointer} is a valid schema: {e}"))
}

/// Each error of `instance` against `v`, as `at <path>: <message>`.
fn errors(v: &Validator, instance: &Value) -> Vec<String> {
    v.iter_errors(instance)
        .map(|e| format!("at '{}': {}", e.instance_path(), e))
        .collect()
}

/// The message of the event stream that an SSE event name is sent as.
fn message_key(event: &str) -> Option<String> {
    doc()["components"]["messages"]
        .as_object()
        .expect("components.messages")
        .iter()
        .find(|(_, m)| m["headers"]["properties"]["event"]["const"] == event)
        .map(|(k, _)| k.clone())
}

/// The payload and headers validators of each event message, by SSE name.
struct EventSchemas {
    payload: BTreeMap<String, Validator>,
    headers: BTreeMap<String, Validator>,
    heartbeat: Validator,
}

impl EventSchemas {
    fn new() -> Self {
        let mut payload = BTreeMap::new();
        let mut headers = BTreeMap::new();
        for (name, _) in EVENTS {
            let key = message_key(name).unwrap_or_else(|| panic!("a message for `{name}`"));
            payload.insert(
                name.to_owned(),
                validator_at(&format!("/components/messages/{key}/payload")),
            );
            headers.insert(
                name.to_owned(),
                validator_at(&format!("/components/messages/{key}/headers")),
            );
        }
        EventSchemas {
            payload,
            headers,
            heartbeat: validator_at("/components/messages/heartbeat/payload"),
        }
    }

    /// Errors of one event frame: its `event`/`id` fields and its data.
    fn check_frame(&self, frame: &SseFrame) -> Vec<String> {
        let name = frame.event.as_deref().unwrap_or("message");
        let (Some(p), Some(h)) = (self.payload.get(name), self.headers.get(name)) else {
            return vec![format!("`{name}` is not an event of the document")];
        };
        let mut out = Vec::new();
        let mut fields = Map::new();
        fields.insert("event".into(), Value::from(name));
        if let Some(id) = &frame.id {
            fields.insert("id".into(), Value::from(id.as_str()));
        }
        out.extend(errors(h, &Value::Object(fields)));
        match serde_json::from_str::<Value>(&frame.data) {
            Ok(data) => out.extend(errors(p, &data)),
            Err(e) => out.push(format!("data is not JSON: {e}")),
        }
        out
    }
}

// ---------------------------------------------------------------------------
// The document against the Rust types

/// What a schema says of a value, for comparing two schemas written apart:
/// its JSON types (with `null`), its known string values, and for an object
/// its properties (each the same) and which are required. Descriptions,
/// bounds and formats are left out.
fn shape(root: &Value, schema: &Value) -> Value {
    let mut schema = schema;
    while let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        schema = root
            .pointer(r.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("{r} resolves"));
    }
    let mut types = BTreeSet::new();
    let mut known = BTreeSet::new();
    let mut object: Option<Value> = None;
    match &schema["type"] {
        Value::String(t) => {
            types.insert(t.clone());
        }
        Value::Array(ts) => types.extend(ts.iter().filter_map(Value::as_str).map(str::to_owned)),
        _ => {}
    }
    for list in ["enum", "examples"] {
        if let Some(values) = schema[list].as_array() {
            known.extend(values.iter().filter_map(Value::as_str).map(str::to_owned));
        }
    }
    if let Some(c) = schema["const"].as_str() {
        known.insert(c.to_owned());
    }
    // `anyOf` (a nullable reference) and `allOf` (a reference beside a
    // description, draft-07's way) add their branches' shapes.
    let branches = ["anyOf", "allOf"]
        .into_iter()
        .flat_map(|k| schema[k].as_array().into_iter().flatten());
    for branch in branches {
        let s = shape(root, branch);
        types.extend(
            s["types"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned),
        );
        known.extend(
            s["known"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned),
        );
        if !s["object"].is_null() {
            object = Some(s["object"].clone());
        }
    }
    if let Some(props) = schema["properties"].as_object() {
        let properties: Map<String, Value> = props
            .iter()
            .map(|(k, v)| (k.clone(), shape(root, v)))
            .collect();
        let mut required: Vec<&str> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        required.sort_unstable();
        object = Some(json!({ "properties": properties, "required": required }));
    }
    json!({ "types": types, "known": known, "object": object })
}

/// The schemars schema of `T` as the core writes it (the serialize
/// contract: every field written, `None` as `null`), draft-07.
fn rust_schema<T: JsonSchema>() -> Value {
    let schema = SchemaSettings::draft07()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>();
    serde_json::to_value(schema).expect("a schema is JSON")
}

#[test]
fn payloads_match_the_core_event_types() {
    let doc = doc();
    let rust: [(&str, Value); 5] = [
        ("Chat", rust_schema::<Chat>()),
        ("Presence", rust_schema::<Presence>()),
        ("Like", rust_schema::<Like>()),
        ("Donation", rust_schema::<Donation>()),
        ("End", rust_schema::<End>()),
    ];
    for (name, rust) in &rust {
        let documented = &doc["components"]["schemas"][*name];
        assert!(documented.is_object(), "components.schemas.{name}");
        let (want, got) = (shape(rust, rust), shape(doc, documented));
        assert_eq!(
            serde_json::to_string_pretty(&got).unwrap(),
            serde_json::to_string_pretty(&want).unwrap(),
            "components.schemas.{name} of the document (left) differs from \
             onair::event::{name} (right)"
        );
        // Every payload is an object, open to fields it does not list.
        assert_eq!(documented["type"], "object", "{name}");
        assert_eq!(documented["additionalProperties"], true, "{name}");
    }
    // The nested person too.
    let user = &doc["components"]["schemas"]["User"];
    assert_eq!(user["additionalProperties"], true);
    assert_eq!(
        shape(doc, &user["properties"]["nickname"])["types"],
        json!(["null", "string"])
    );
}

#[test]
fn the_shape_comparison_sees_a_field_the_document_lacks() {
    // What the check above would say if Rust grew a field: a copy of the
    // document's Donation without `message` differs from the Rust type.
    let doc = doc();
    let mut lacking = doc["components"]["schemas"]["Donation"].clone();
    lacking["properties"]
        .as_object_mut()
        .unwrap()
        .remove("message");
    let rust = rust_schema::<Donation>();
    assert_ne!(shape(doc, &lacking), shape(&rust, &rust));
    // And a nullable field written as not nullable.
    let mut strict = doc["components"]["schemas"]["Presence"].clone();
    strict["properties"]["fanRank"]["type"] = json!("integer");
    let rust = rust_schema::<Presence>();
    assert_ne!(shape(doc, &strict), shape(&rust, &rust));
}

#[test]
fn each_event_names_its_permission_and_the_stream_its_endpoint() {
    let doc = doc();
    assert_eq!(doc["asyncapi"], "3.0.0");
    let channel = &doc["channels"]["liveEvents"];
    assert_eq!(channel["address"], "/v1/live/events");
    assert_eq!(
        doc["operations"]["receiveEvents"]["bindings"]["http"]["method"],
        "GET"
    );
    let headers = &doc["components"]["schemas"]["StreamRequestHeaders"];
    assert_eq!(headers["required"], json!(["Authorization", "Accept"]));
    assert!(headers["properties"]["Last-Event-ID"].is_object());
    for (name, permission) in [
        ("chat", "events.chat"),
        ("presence", "events.presence"),
        ("like", "events.like"),
        ("donation", "events.donation"),
        ("end", "none"),
    ] {
        let key = message_key(name).unwrap();
        assert_eq!(
            doc["components"]["messages"][&key]["x-permission"], permission,
            "{name}"
        );
    }
    assert_eq!(
        doc["components"]["messages"]["heartbeat"]["payload"]["const"],
        "heartbeat"
    );
}

/// Every `$ref` string under `value`.
fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn every_reference_of_the_document_resolves_within_it() {
    let mut found = Vec::new();
    refs(doc(), &mut found);
    assert!(found.len() > 30, "{found:?}");
    let broken: Vec<&str> = found
        .into_iter()
        .filter(|r| {
            !r.starts_with("#/")
                || doc()
                    .pointer(&r[1..].replace("~1", "/").replace("~0", "~"))
                    .is_none()
        })
        .collect();
    assert!(broken.is_empty(), "unresolved: {broken:?}");
    // The operations' messages are the channel's.
    for (name, op) in doc()["operations"].as_object().unwrap() {
        assert_eq!(op["channel"]["$ref"], "#/channels/liveEvents", "{name}");
        for m in op["messages"].as_array().unwrap() {
            let r = m["$ref"].as_str().unwrap();
            assert!(
                r.starts_with("#/channels/liveEvents/messages/"),
                "{name}: {r}"
            );
        }
    }
}

#[test]
fn the_document_examples_validate() {
    let schemas = EventSchemas::new();
    let mut n = 0;
    for (key, m) in doc()["components"]["messages"].as_object().unwrap() {
        let payload = validator_at(&format!("/components/messages/{key}/payload"));
        for ex in m["examples"].as_array().into_iter().flatten() {
            assert_eq!(
                errors(&payload, &ex["payload"]),
                Vec::<String>::new(),
                "{key}"
            );
            let name = ex["headers"]["event"].as_str().unwrap();
            assert_eq!(
                errors(&schemas.headers[name], &ex["headers"]),
                Vec::<String>::new()
            );
            n += 1;
        }
    }
    assert!(n >= 10, "two examples per event");
}

// ---------------------------------------------------------------------------
// Wrong frames

#[test]
fn wrong_frames_fail_with_a_clear_message_and_the_decoder_refuses_them() {
    let schemas = EventSchemas::new();
    let good = r#"{"user":{"id":"u1","nickname":null},"amount":100,"message":null,"time":"2026-11-23T06:40:00.000Z"}"#;
    let frame = |event: &str, data: &str| SseFrame {
        id: Some("1763880000000-0".into()),
        event: Some(event.into()),
        data: data.into(),
    };
    assert_eq!(
        schemas.check_frame(&frame("donation", good)),
        Vec::<String>::new()
    );
    // Unknown fields are allowed, at the top and in `user`.
    let extra = r#"{"user":{"id":"u1","nickname":"A","badge":7},"amount":1,"message":"hi","time":"2026-11-23T06:40:00Z","giftId":3}"#;
    assert_eq!(
        schemas.check_frame(&frame("donation", extra)),
        Vec::<String>::new()
    );

    let cases: [(&str, &str, &str, &str); 6] = [
        // The fuzz finding: a chat given as a positional array.
        (
            "chat",
            r#"[{"id":"u","nickname":null},false,"hi","2026-01-01T00:00:00Z"]"#,
            "at '': ",
            "is not of type \"object\"",
        ),
        (
            "like",
            r#"[["","",""]]"#,
            "at '': ",
            "is not of type \"object\"",
        ),
        // `time` missing.
        (
            "donation",
            r#"{"user":{"id":"u1","nickname":null},"amount":100,"message":null}"#,
            "at '': ",
            "\"time\" is a required property",
        ),
        // A string where a number belongs.
        (
            "donation",
            r#"{"user":{"id":"u1","nickname":null},"amount":"100","message":null,"time":"2026-11-23T06:40:00Z"}"#,
            "at '/amount': ",
            "\"100\" is not of type \"integer\"",
        ),
        // `user.nickname` left out (it is sent, as `null` when missing).
        (
            "chat",
            r#"{"user":{"id":"u1"},"isDj":false,"message":"hi","sentTime":"2026-11-23T06:40:00Z"}"#,
            "at '/user': ",
            "\"nickname\" is a required property",
        ),
        // A boolean for the nullable `combo`.
        (
            "like",
            r#"{"user":{"id":"u1","nickname":"A"},"type":"FREE","totalAmount":1,"amount":1,"extraAmount":0,"combo":true,"time":"2026-11-23T06:40:00Z"}"#,
            "at '/combo': ",
            "true is not of types \"null\", \"integer\"",
        ),
    ];
    for (event, data, at, says) in cases {
        let errs = schemas.check_frame(&frame(event, data));
        assert!(
            errs.iter().any(|e| e.starts_with(at) && e.contains(says)),
            "{event} {data}: expected an error {at}…{says}, got {errs:?}"
        );
        // The decoder agrees with the document, except where it is lenient
        // on purpose (a missing nullable field reads as null).
        let lenient = data.contains(r#"{"id":"u1"}"#);
        let decoded = Event::decode(event, data);
        if lenient {
            assert!(decoded.is_ok(), "{event} {data}: {decoded:?}");
        } else {
            let Err((kind, _)) = decoded else {
                panic!("{event} {data} decoded: {decoded:?}")
            };
            assert_eq!(kind, DecodeErrorKind::InvalidEvent, "{event} {data}");
        }
    }
    // A timestamp that is not a UTC date-time.
    let errs = schemas.check_frame(&frame(
        "donation",
        r#"{"user":{"id":"u1","nickname":null},"amount":1,"message":null,"time":"yesterday"}"#,
    ));
    assert!(errs.iter().any(|e| e.starts_with("at '/time'")), "{errs:?}");
    // An event frame without an id, and a name the document does not have.
    let errs = schemas.check_frame(&SseFrame {
        id: None,
        ..frame("donation", good)
    });
    assert!(
        errs.iter()
            .any(|e| e.contains("\"id\" is a required property")),
        "{errs:?}"
    );
    assert_eq!(
        schemas.check_frame(&frame("gift", "{}")),
        vec!["`gift` is not an event of the document".to_owned()]
    );
}

// ---------------------------------------------------------------------------
// The emulator's frames and the decoder's events

/// One dispatched SSE frame (WHATWG rules: BOM, CR / LF / CRLF, one space
/// after the colon dropped, data lines joined with LF).
#[derive(Debug, Clone)]
struct SseFrame {
    id: Option<String>,
    event: Option<String>,
    data: String,
}

/// The frames and comments of one connection's bytes; a frame cut off by
/// the connection's end is not dispatched.
fn sse_frames(bytes: &[u8]) -> (Vec<SseFrame>, Vec<String>) {
    let text = String::from_utf8(bytes.to_vec()).expect("the stream is UTF-8");
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let (mut frames, mut comments) = (Vec::new(), Vec::new());
    let (mut id, mut event, mut data): (Option<String>, Option<String>, Option<String>) =
        (None, None, None);
    let mut rest = text;
    while let Some(end) = rest.find(['\r', '\n']) {
        let line = &rest[..end];
        let skip = if rest[end..].starts_with("\r\n") {
            2
        } else {
            1
        };
        rest = &rest[end + skip..];
        if line.is_empty() {
            if let Some(d) = data.take() {
                frames.push(SseFrame {
                    id: id.clone(),
                    event: event.take(),
                    data: d,
                });
            }
            event = None;
            continue;
        }
        if let Some(c) = line.strip_prefix(':') {
            comments.push(c.to_owned());
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
        match field {
            "id" => id = Some(value),
            "event" => event = Some(value),
            "data" => {
                data = Some(match data.take() {
                    Some(d) => d + "\n" + &value,
                    None => value,
                })
            }
            _ => {}
        }
    }
    (frames, comments)
}

/// What a scenario run sent: the bytes of each stream, and each refused
/// opening (status, content type, body).
#[derive(Default)]
struct Recording {
    streams: Vec<Vec<u8>>,
    refusals: Vec<(u16, String, String)>,
}

/// Plays a built-in scenario with a bot that reconnects through everything
/// (refreshing on 401, closing a stream silent for 30 s of emulator time)
/// and keeps every byte it was sent.
async fn record(name: &str, speed: f64) -> Recording {
    let emu = Emulator::builder()
        .seed(9)
        .speed(speed)
        .scenario(Scenario::builtin(name).unwrap())
        .start()
        .await
        .unwrap();
    let env = Env::of(emu);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (mut access, mut refresh) = env.tokens(ALL).await;
    let mut rec = Recording::default();
    let done = |env: &Env| env.emu.scenario_progress().2;
    let run = async {
        while !done(&env) {
            let mut r = env.open(&access).await;
            let status = r.status().as_u16();
            if status != 200 {
                let ct = r
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                rec.refusals
                    .push((status, ct, r.text().await.unwrap_or_default()));
                if status == 401 {
                    (access, refresh) = env.refreshed(&refresh).await;
                } else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                continue;
            }
            let mut bytes = Vec::new();
            let mut heard = env.emu.now_ms();
            loop {
                match tokio::time::timeout(Duration::from_millis(100), r.chunk()).await {
                    Err(_) => {
                        if done(&env) || env.emu.now_ms() - heard >= 30_000 {
                            break;
                        }
                    }
                    Ok(Ok(Some(c))) => {
                        heard = env.emu.now_ms();
                        bytes.extend_from_slice(&c);
                    }
                    Ok(_) => break, // ended or dropped
                }
            }
            rec.streams.push(bytes);
        }
    };
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the scenario within 60 s");
    env.emu.shutdown().await;
    rec
}

/// Validates a recording against the document, frame by frame and decoded
/// event by decoded event; returns the frames seen per event name (and
/// `:heartbeat` for the heartbeat comments).
fn check_recording(rec: &Recording) -> BTreeMap<String, u64> {
    let schemas = EventSchemas::new();
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    for (n, bytes) in rec.streams.iter().enumerate() {
        let (frames, comments) = sse_frames(bytes);
        let mut documented = 0u64;
        for frame in &frames {
            let name = frame.event.clone().unwrap_or_else(|| "message".into());
            *seen.entry(name.clone()).or_default() += 1;
            if schemas.payload.contains_key(&name) {
                documented += 1;
                for e in schemas.check_frame(frame) {
                    failures.push(format!("stream {n}, {name} {}: {e}", frame.data));
                }
            } else {
                // A name a future server might add (the emulator's
                // `unknownEvents`): its data is still one JSON object.
                let data: Result<Value, _> = serde_json::from_str(&frame.data);
                assert!(
                    matches!(data, Ok(Value::Object(_))),
                    "stream {n}: {name} {}",
                    frame.data
                );
            }
        }
        for c in &comments {
            if c.trim_start() == "heartbeat" {
                *seen.entry(":heartbeat".into()).or_default() += 1;
                let errs = errors(&schemas.heartbeat, &Value::from(c.trim_start()));
                assert_eq!(errs, Vec::<String>::new());
            }
        }
        // The same bytes through the core's decoder: each event it reads,
        // in its JSON form, validates against the payload of its name.
        let mut decoder = Decoder::new();
        let mut items: Vec<Item> = decoder.items(bytes).collect();
        let unfinished = decoder.finish();
        let mut decoded = 0u64;
        for item in items.drain(..) {
            match item {
                Item::Event { event, .. } => {
                    decoded += 1;
                    let json = serde_json::to_value(&event).unwrap();
                    for e in errors(&schemas.payload[event.name()], &json) {
                        failures.push(format!("stream {n}, decoded {}: {json}: {e}", event.name()));
                    }
                }
                Item::Error(e) => failures.push(format!("stream {n}: the decoder refused {e}")),
                Item::Unknown { event, .. } => {
                    assert!(!schemas.payload.contains_key(&event), "{event}")
                }
                Item::Heartbeat | Item::Comment(_) | Item::Retry(_) => {}
            }
        }
        // Only a frame cut off by a dropped connection may be left over.
        if let Some(Item::Error(e)) = &unfinished {
            assert_eq!(e.kind, DecodeErrorKind::IncompleteFrame, "{e}");
        }
        assert_eq!(decoded, documented, "stream {n}: decoded as many as framed");
    }
    // Every refused opening: SSE-shaped, and one of the document's answers.
    for (status, ct, body) in &rec.refusals {
        if let Err(e) = check_refusal(*status, ct, body) {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures, the first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(10)]
    );
    seen
}

/// The opening-failure messages of the document, by status.
fn refusal_messages(status: u16) -> Vec<String> {
    doc()["components"]["messages"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, m)| {
            let p = &m["payload"]["allOf"][1]["properties"]["status"];
            p["const"] == status
                || p["enum"]
                    .as_array()
                    .is_some_and(|e| e.contains(&status.into()))
        })
        .map(|(k, _)| k.clone())
        .collect()
}

/// Checks one refused opening against the document: its content type, its
/// `data:` body, and exactly one message of its status that the JSON fits.
fn check_refusal(status: u16, content_type: &str, body: &str) -> Result<String, String> {
    let fail = |why: String| Err(format!("{status} {body:?}: {why}"));
    if content_type != "text/event-stream;charset=UTF-8" {
        return fail(format!("content type {content_type}"));
    }
    let Some(json) = body.strip_prefix("data:") else {
        return fail("the body does not start with data:".into());
    };
    let value: Value = match serde_json::from_str(json.trim_end()) {
        Ok(v) => v,
        Err(e) => return fail(format!("not JSON: {e}")),
    };
    let fits: Vec<String> = refusal_messages(status)
        .into_iter()
        .filter(|k| validator_at(&format!("/components/messages/{k}/payload")).is_valid(&value))
        .collect();
    match fits.as_slice() {
        [one] => Ok(one.clone()),
        _ => fail(format!("fits {fits:?} of the document's messages")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_scenario_frames_and_decoded_events_validate() {
    let rec = record("busy", 200.0).await;
    let seen = check_recording(&rec);
    let events: u64 = ["chat", "presence", "like", "donation"]
        .iter()
        .map(|k| seen.get(*k).copied().unwrap_or(0))
        .sum();
    // All 10 000 unless a busy machine made the emulator drop the slow
    // stream (the frames sent before and after still count).
    assert!(events >= 1_000, "{seen:?}");
    for name in ["chat", "presence", "like", "donation", "end"] {
        assert!(seen.get(name).is_some_and(|n| *n > 0), "{name} in {seen:?}");
    }
    assert!(seen.contains_key(":heartbeat"), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulty_scenario_frames_and_decoded_events_validate() {
    let rec = record("faulty", 20.0).await;
    let seen = check_recording(&rec);
    for name in ["chat", "presence", "like", "donation", "end", "gift"] {
        assert!(seen.get(name).is_some_and(|n| *n > 0), "{name} in {seen:?}");
    }
    // The injected 502 on the stream was among the refusals, and fit.
    let kinds: BTreeSet<String> = rec
        .refusals
        .iter()
        .filter_map(|(s, ct, b)| check_refusal(*s, ct, b).ok())
        .collect();
    assert!(kinds.contains("openBroadcastServerError"), "{kinds:?}");
}

#[tokio::test]
async fn every_opening_error_of_the_stream_fits_its_message() {
    let env = Env::start().await;
    let refusal = |r: reqwest::Response| async move {
        let status = r.status().as_u16();
        let ct = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        (status, ct, r.text().await.unwrap())
    };
    let check = |(status, ct, body): (u16, String, String)| {
        check_refusal(status, &ct, &body).unwrap_or_else(|e| panic!("{e}"))
    };
    let (access, _) = env.tokens(ALL).await;
    // Not on air.
    assert_eq!(
        check(refusal(env.open(&access).await).await),
        "openNotOnAir"
    );
    env.live_start().await;
    // A token that is none.
    assert_eq!(
        check(refusal(env.open("not-a-token").await).await),
        "openUnauthorized"
    );
    // Accept other than text/event-stream.
    let r = env
        .http
        .get(format!("{}/v1/live/events", env.base))
        .bearer_auth(&access)
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(check(refusal(r).await), "openMalformed");
    // Server errors, injected.
    for (status, code, want) in [
        (502, "OAPI_MNGR_2302", "openBroadcastServerError"),
        (500, "OAPI_MNGR_1002", "openServerError"),
    ] {
        env.ctl(
            "/fail",
            json!({"path": "/v1/live/events", "status": status, "detailCode": code, "times": 1}),
        )
        .await;
        assert_eq!(check(refusal(env.open(&access).await).await), want);
    }
    // The DJ blocked the bot.
    env.ctl("/state", json!({"botBlocked": true})).await;
    assert_eq!(
        check(refusal(env.open(&access).await).await),
        "openCannotJoin"
    );
    env.ctl("/state", json!({"botBlocked": false})).await;
    // No events.* permission (the DJ's consent narrowed: every token of the
    // integration follows it).
    let (reader, _) = env.tokens("live.read chat.send").await;
    assert_eq!(
        check(refusal(env.open(&reader).await).await),
        "openPermissionMissing"
    );
    // A body that fits none: a 403 whose detailCode is not the document's.
    let err = check_refusal(
        403,
        "text/event-stream;charset=UTF-8",
        "data:{\"status\":403,\"detailCode\":\"OAPI_MNGR_0208\",\"message\":\"x\"}\n\n",
    )
    .unwrap_err();
    assert!(err.contains("fits []"), "{err}");
}
