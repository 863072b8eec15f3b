//! The TypeScript of the core's JSON lines (actions, items, notices, call
//! results, stops, requests, the tally), written from their JSON Schema
//! (`onair::json::schema_documents()`, the documents committed under
//! `schema/`): every union member, property, nullability and optional
//! property comes from the schema, property docs from its `description`s
//! (the Rust doc comments). A field, variant or action added to a line in
//! the Rust reaches `types.d.ts` through the bless with no edit here.
//!
//! What the schema cannot say is in the tables below: TypeScript's names for
//! some definitions, a narrower type where the Rust writes a plain string
//! (`role` is a `Role`), the unions TypeScript narrows on a property the
//! schema leaves a plain string (a stop's `code`, a failure's `failure`, a
//! milestone's `kind`), the event references, and the type docs in
//! TypeScript's words. Every entry must still match the schema: an entry
//! naming a property or member the schema no longer has fails the render.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// TypeScript's name for a schema definition, where not the same.
const RENAMES: &[(&str, &str)] = &[
    ("Request", "OnairRequest"),
    ("Tally", "TallyJson"),
    ("NoticeJson", "Notice"),
    ("ResultLine", "CallResult"),
    ("FailedLine", "CallFailure"),
    ("EventRef", "EventLine"),
    ("DecodeErrorKind", "DecodeErrorCode"),
    ("DropReason", "ReplyDropReason"),
];

/// The type docs, in TypeScript's words (a type not listed takes its
/// schema description).
const DOCS: &[(&str, &str)] = &[
    (
        "Action",
        "What to do next: `switch (action.type)` narrows; an `event` action is an\n\
         `OnairEvent`.",
    ),
    (
        "OnairItem",
        "One thing the stream said (`onair decode`'s lines): `switch (item.type)`\nnarrows.",
    ),
    (
        "EventLine",
        "A typed service event: `switch (ev.event)` narrows `data`.",
    ),
    (
        "ErrorItem",
        "A decode error as an item (`{\"type\":\"error\",…}`).",
    ),
    (
        "ErrorLine",
        "A frame that could not be decoded; the stream goes on.",
    ),
    (
        "Notice",
        "Worth a log line; needs no action. `switch (notice.kind)` narrows.\n\
         Every notice ends with `message` (its log line) and `level`, so one of\n\
         any kind is logged by printing its message at its level.",
    ),
    (
        "CallResult",
        "The answer to an app call: `switch (result.kind)` narrows.",
    ),
    (
        "CallFailure",
        "Why an app call failed: `switch (result.failure)` narrows.",
    ),
    ("Stop", "Why the bot stopped; `switch (stop.code)` narrows."),
    (
        "OnairRequest",
        "A request to send, ready for `fetch` (see `fetchArgs`). Holds secrets:\nnever log it.",
    ),
    (
        "TallyJson",
        "One broadcast's totals (the emulator ledger's `totals` shape).",
    ),
    (
        "Milestone",
        "A configured milestone was crossed: `switch (m.kind)` narrows.",
    ),
    ("ChatRef", "The chat behind a command."),
    ("LikeRef", "The hearts behind a milestone."),
    ("DonationRef", "The donation behind a milestone."),
    ("EndRef", "The `LIVE_ENDED` frame behind a broadcast's end."),
];

/// The type of a property, where TypeScript's is narrower than the schema's
/// (an event reference whose event is always the same one), by
/// `Type:tag.property` (a union member's) or `Type.property`.
const PROPS: &[(&str, &str)] = &[
    ("Action:command.event", "ChatRef"),
    ("Action:broadcastEnded.event", "EndRef"),
    ("Milestone:hearts.event", "LikeRef"),
    ("Milestone:donated.event", "DonationRef"),
];

/// One object of the schema written as a union TypeScript narrows on
/// `property` (its values: the schema's for it): (type, property, values
/// with the optional properties each always has and its doc). An optional
/// property no value lists stays optional in every member; a value the
/// table does not list (one the core added) has every optional property,
/// optional.
type Split = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static [&'static str], &'static str)],
);
const SPLITS: &[Split] = &[
    (
        "Stop",
        "code",
        &[
            (
                "reauthorize",
                &["reason"],
                "The DJ must authorize again (a new consent code to `authorize`).",
            ),
            (
                "reconsent",
                &["missing"],
                "The DJ must consent again, with these permissions.",
            ),
            ("join_forbidden", &[], ""),
            ("invalid_client", &[], ""),
            ("fix_request", &["problem"], ""),
            ("unexpected", &["problem"], ""),
            ("shut_down", &[], ""),
        ],
    ),
    (
        "CallFailure",
        "failure",
        &[
            ("problem", &["problem"], ""),
            ("quota_blocked", &["untilMs"], ""),
            ("invalid_body", &["message"], ""),
            ("pager", &["message"], ""),
            ("transport", &[], ""),
            ("cancelled", &[], ""),
            ("queue_full", &["message"], ""),
            ("stopped", &["stop"], ""),
        ],
    ),
    (
        "Milestone",
        "kind",
        &[
            (
                "hearts",
                &[],
                "The broadcast's hearts reached a multiple of the step.",
            ),
            (
                "donated",
                &["user"],
                "One person's donations reached a multiple of the step.",
            ),
        ],
    ),
];

/// Union members given a name of their own (`{"type":"milestone"} & Milestone`).
const NAMED: &[(&str, &str)] = &[("Action:milestone", "Milestone")];

/// The one-event references: (name, the event).
const REFS: &[(&str, &str)] = &[
    ("ChatRef", "chat"),
    ("LikeRef", "like"),
    ("DonationRef", "donation"),
    ("EndRef", "end"),
];

const FRAME_ID_DOC: &str = "The frame's id (`<epochMillis>-<offset>`), or null when it had none.";

fn lookup(table: &[(&'static str, &'static str)], key: &str) -> Option<&'static str> {
    table.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

fn ref_name(node: &Value) -> Option<&str> {
    node.get("$ref")?.as_str()?.strip_prefix("#/$defs/")
}

fn is_ident(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn key_text(key: &str) -> String {
    if is_ident(key) {
        key.to_owned()
    } else {
        Value::from(key).to_string()
    }
}

/// A Rust doc comment as JSDoc text: Rust links as code.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text.trim();
    while let Some(at) = rest.find("[`") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let Some(end) = after.find("`]") else {
            out.push_str(&rest[at..]);
            rest = "";
            break;
        };
        let code = after[..end + 1].replace("::", ".");
        out.push_str(&code);
        rest = &after[end + 2..];
        if rest.starts_with('(') {
            if let Some(close) = rest.find(')') {
                rest = &rest[close + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `text` as a JSDoc block at `indent`.
fn jsdoc(text: &str, indent: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let mut out = format!("{indent}/**\n");
    for line in text.lines() {
        if line.is_empty() {
            out.push_str(&format!("{indent} *\n"));
        } else {
            out.push_str(&format!("{indent} * {line}\n"));
        }
    }
    out.push_str(&format!("{indent} */\n"));
    out
}

/// One property of an object type.
struct Prop {
    key: String,
    node: Value,
    optional: bool,
}

struct Gen<'a> {
    defs: BTreeMap<String, Value>,
    /// The names ts-rs writes (the payload types): referenced, not written.
    known: &'a BTreeSet<String>,
    /// Declarations written, by name.
    out: BTreeMap<String, String>,
    /// Definitions still to write: (schema name, TypeScript name).
    queue: Vec<(String, String)>,
    /// The table entries used (an unused one is stale).
    used: BTreeSet<String>,
}

impl Gen<'_> {
    fn use_entry(&mut self, table: &str, key: &str) {
        self.used.insert(format!("{table} {key}"));
    }

    fn ts_name(name: &str) -> String {
        lookup(RENAMES, name).unwrap_or(name).to_owned()
    }

    /// The TypeScript name of definition `name`, queued to be written when
    /// ts-rs does not write it.
    fn named(&mut self, name: &str) -> String {
        if name == "FrameId" {
            return "string".to_owned();
        }
        let ts = Self::ts_name(name);
        if !self.known.contains(&ts)
            && !self.out.contains_key(&ts)
            && !self.queue.iter().any(|(_, t)| *t == ts)
        {
            self.queue.push((name.to_owned(), ts.clone()));
        }
        ts
    }

    /// The object's properties (a `$ref`'d part flattened), required ones
    /// in the schema's order, then the optional ones by name.
    fn props(&self, node: &Value) -> Vec<Prop> {
        let mut props: Map<String, Value> = Map::new();
        let mut required: Vec<String> = Vec::new();
        if let Some(name) = ref_name(node) {
            if let Some(def) = self.defs.get(name) {
                for p in self.props(def) {
                    if !p.optional {
                        required.push(p.key.clone());
                    }
                    props.insert(p.key, p.node);
                }
            }
        }
        if let Some(own) = node.get("properties").and_then(Value::as_object) {
            props.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        for r in node
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(r) = r.as_str() {
                if !required.iter().any(|x| x == r) {
                    required.push(r.to_owned());
                }
            }
        }
        let mut out: Vec<Prop> = required
            .iter()
            .filter_map(|r| {
                props.get(r).map(|node| Prop {
                    key: r.clone(),
                    node: node.clone(),
                    optional: false,
                })
            })
            .collect();
        for (key, node) in &props {
            if !required.contains(key) {
                out.push(Prop {
                    key: key.clone(),
                    node: node.clone(),
                    optional: true,
                });
            }
        }
        out
    }

    /// The type of a property's schema at `ctx` (`Type:tag` or `Type`).
    fn prop_type(&mut self, ctx: &str, key: &str, node: &Value) -> String {
        let (base, nullable) = self.without_null(node);
        let exact = [format!("{ctx}.{key}"), {
            let ty = ctx.split(':').next().unwrap_or(ctx);
            format!("{ty}.{key}")
        }];
        let mut chosen = None;
        for k in &exact {
            if let Some(t) = lookup(PROPS, k) {
                self.use_entry("PROPS", k);
                chosen = Some(t.to_owned());
                break;
            }
        }
        let ty = match chosen {
            Some(t) => t,
            None => self.ts(&base),
        };
        if nullable {
            format!("{ty} | null")
        } else {
            ty
        }
    }

    /// The schema without its `null`, and whether it had one.
    fn without_null(&self, node: &Value) -> (Value, bool) {
        if let Some(members) = node.get("anyOf").and_then(Value::as_array) {
            let rest: Vec<&Value> = members
                .iter()
                .filter(|m| m.get("type").and_then(Value::as_str) != Some("null"))
                .collect();
            if rest.len() < members.len() && rest.len() == 1 {
                let mut one = rest[0].clone();
                if let (Some(o), Some(d)) = (one.as_object_mut(), node.get("description")) {
                    o.entry("description").or_insert(d.clone());
                }
                return (one, true);
            }
        }
        if let Some(kinds) = node.get("type").and_then(Value::as_array) {
            if kinds.iter().any(|k| k == "null") {
                let rest: Vec<Value> = kinds.iter().filter(|k| *k != "null").cloned().collect();
                let mut one = node.clone();
                if let Some(o) = one.as_object_mut() {
                    o.insert(
                        "type".to_owned(),
                        if rest.len() == 1 {
                            rest[0].clone()
                        } else {
                            Value::Array(rest)
                        },
                    );
                }
                return (one, true);
            }
        }
        (node.clone(), false)
    }

    /// A schema's TypeScript type.
    fn ts(&mut self, node: &Value) -> String {
        if let Some(name) = ref_name(node) {
            return self.named(name);
        }
        if let Some(c) = node.get("const") {
            return c.to_string();
        }
        for union in ["anyOf", "oneOf"] {
            if let Some(members) = node.get(union).and_then(Value::as_array) {
                let parts: Vec<String> = members.iter().map(|m| self.ts(m)).collect();
                return parts.join(" | ");
            }
        }
        if let Some(values) = node.get("enum").and_then(Value::as_array) {
            let parts: Vec<String> = values.iter().map(Value::to_string).collect();
            return parts.join(" | ");
        }
        match node.get("type") {
            Some(Value::Array(kinds)) => {
                let parts: Vec<String> = kinds
                    .iter()
                    .map(|k| {
                        let mut one = node.clone();
                        if let Some(o) = one.as_object_mut() {
                            o.insert("type".to_owned(), k.clone());
                        }
                        self.ts(&one)
                    })
                    .collect();
                parts.join(" | ")
            }
            Some(Value::String(kind)) => match kind.as_str() {
                "integer" | "number" => "number".to_owned(),
                "string" => "string".to_owned(),
                "boolean" => "boolean".to_owned(),
                "null" => "null".to_owned(),
                "array" => {
                    let items = node.get("items").cloned().unwrap_or(Value::Bool(true));
                    if let Some(tuple) = items.get("prefixItems").and_then(Value::as_array) {
                        let parts: Vec<String> = tuple.iter().map(|p| self.ts(p)).collect();
                        format!("Array<[{}]>", parts.join(", "))
                    } else if let Some(tuple) = node.get("prefixItems").and_then(Value::as_array) {
                        let parts: Vec<String> = tuple.iter().map(|p| self.ts(p)).collect();
                        format!("[{}]", parts.join(", "))
                    } else {
                        format!("Array<{}>", self.ts(&items))
                    }
                }
                "object" => match node.get("additionalProperties") {
                    Some(inner @ Value::Object(_)) => {
                        format!("Record<string, {}>", self.ts(inner))
                    }
                    _ if node.get("properties").is_some() => {
                        let props = self.props(node);
                        self.object("", None, &props, "")
                    }
                    _ => "Record<string, unknown>".to_owned(),
                },
                _ => "unknown".to_owned(),
            },
            _ => "unknown".to_owned(),
        }
    }

    /// An object type: `lead` (a tag and its value) first, then `props`,
    /// each at `indent` + 2 spaces.
    fn object(
        &mut self,
        ctx: &str,
        lead: Option<(&str, &str)>,
        props: &[Prop],
        indent: &str,
    ) -> String {
        let inner = format!("{indent}  ");
        let mut out = String::from("{\n");
        if let Some((tag, value)) = lead {
            out.push_str(&format!(
                "{inner}{}: {};\n",
                key_text(tag),
                Value::from(value)
            ));
        }
        for p in props {
            let ty = self.prop_type(ctx, &p.key, &p.node);
            let doc = p
                .node
                .get("description")
                .and_then(Value::as_str)
                .map(prose)
                .unwrap_or_default();
            out.push_str(&jsdoc(&doc, &inner));
            let q = if p.optional { "?" } else { "" };
            out.push_str(&format!("{inner}{}{q}: {ty};\n", key_text(&p.key)));
        }
        out.push_str(indent);
        out.push('}');
        out
    }

    /// A tagged union's members: (tag, [(value, member)]), or None when the
    /// schema's `oneOf` is not one.
    fn tagged(&self, node: &Value) -> Option<(String, Vec<(String, Value)>)> {
        let members = node.get("oneOf")?.as_array()?;
        let mut tag = None;
        let mut out = Vec::new();
        for member in members {
            let own = member.get("properties")?.as_object()?;
            let consts: Vec<(&String, &str)> = own
                .iter()
                .filter_map(|(k, v)| Some((k, v.get("const")?.as_str()?)))
                .collect();
            let [(key, value)] = consts.as_slice() else {
                return None;
            };
            tag = Some((*key).clone());
            out.push((value.to_string(), member.clone()));
        }
        Some((tag?, out))
    }

    /// A union type named `name` from the tagged members, each also given
    /// `extra` (properties of the union's own object).
    fn union(
        &mut self,
        name: &str,
        tag: &str,
        members: &[(String, Value)],
        extra: &[Prop],
    ) -> String {
        let mut parts = Vec::new();
        for (value, member) in members {
            let ctx = format!("{name}:{value}");
            let mut props: Vec<Prop> = self
                .props(member)
                .into_iter()
                .filter(|p| p.key != tag)
                .collect();
            props.extend(extra.iter().map(|p| Prop {
                key: p.key.clone(),
                node: p.node.clone(),
                optional: p.optional,
            }));
            let lead = format!("{{ {}: {} }}", key_text(tag), Value::from(value.as_str()));
            let doc = member
                .get("description")
                .and_then(Value::as_str)
                .map(prose)
                .unwrap_or_default();
            let mut part = jsdoc(&doc, "  ");
            let data_is_event = props
                .iter()
                .any(|p| p.key == "data" && ref_name(&p.node) == Some("Event"));
            if data_is_event {
                // The event line's own fields are `EventLine`'s; any other
                // (a donation's `replyKind`) is the member's.
                let own: Vec<Prop> = props
                    .into_iter()
                    .filter(|p| !matches!(p.key.as_str(), "event" | "id" | "data"))
                    .collect();
                let lead = if own.is_empty() {
                    lead
                } else {
                    self.object(&ctx, Some((tag, value)), &own, "    ")
                };
                part.push_str(&format!("  | ({lead} & EventLine)"));
            } else if let Some(own) = lookup(NAMED, &ctx) {
                self.use_entry("NAMED", &ctx);
                let decl = self.object_or_split(own, &props, "");
                self.declare(own, "", &decl);
                part.push_str(&format!("  | ({lead} & {own})"));
            } else if props.is_empty() {
                part.push_str(&format!("  | {lead}"));
            } else if member
                .get("properties")
                .and_then(Value::as_object)
                .map(Map::len)
                == Some(1)
                && ref_name(member).is_some()
                && extra.is_empty()
            {
                let inner = self.named(ref_name(member).unwrap_or_default());
                part.push_str(&format!("  | ({lead} & {inner})"));
            } else {
                let body = self.object(&ctx, Some((tag, value)), &props, "    ");
                part.push_str(&format!("  | {body}"));
            }
            parts.push(part);
        }
        format!("\n{}", parts.join("\n"))
    }

    /// An object named `name`, or the union of its split when [`SPLITS`]
    /// has one.
    fn object_or_split(&mut self, name: &str, props: &[Prop], indent: &str) -> String {
        let Some((_, key, values)) = SPLITS.iter().find(|(n, _, _)| *n == name) else {
            return self.object(name, None, props, indent);
        };
        self.use_entry("SPLITS", name);
        let listed: BTreeSet<&str> = values
            .iter()
            .flat_map(|(_, has, _)| has.iter().copied())
            .collect();
        for l in &listed {
            if !props.iter().any(|p| p.key == *l && p.optional) {
                panic!("SPLITS: {name}'s `{l}` is not an optional property in the schema");
            }
        }
        let Some(split) = props.iter().find(|p| p.key == *key) else {
            panic!("SPLITS: {name} has no property `{key}` in the schema");
        };
        let known: Vec<String> = self.values(&split.node);
        for (value, _, _) in values.iter() {
            if !known.is_empty() && !known.iter().any(|k| k == value) {
                panic!("SPLITS: the schema has no {name} `{key}` {value:?}");
            }
        }
        let mut all: Vec<(String, &[&str], &str)> = values
            .iter()
            .map(|(v, has, doc)| ((*v).to_owned(), *has, *doc))
            .collect();
        let mut unlisted = Vec::new();
        for k in known {
            if !all.iter().any(|(v, _, _)| *v == k) {
                unlisted.push(k.clone());
                all.push((k, &[], ""));
            }
        }
        let mut parts = Vec::new();
        for (value, has, doc) in all.iter() {
            let value = value.as_str();
            let every = unlisted.iter().any(|u| u == value);
            let mine: Vec<Prop> = props
                .iter()
                .filter(|p| {
                    p.key != *key
                        && (!p.optional
                            || every
                            || !listed.contains(p.key.as_str())
                            || has.contains(&p.key.as_str()))
                })
                .map(|p| Prop {
                    key: p.key.clone(),
                    node: p.node.clone(),
                    optional: p.optional && !has.contains(&p.key.as_str()),
                })
                .collect();
            let body = self.object(
                &format!("{name}:{value}"),
                Some((key, value)),
                &mine,
                "    ",
            );
            parts.push(format!("{}  | {body}", jsdoc(doc, "  ")));
        }
        format!("\n{}", parts.join("\n"))
    }

    /// The values a string property may take: its definition's constants
    /// (none for a plain string).
    fn values(&self, node: &Value) -> Vec<String> {
        let node = match ref_name(node).and_then(|n| self.defs.get(n)) {
            Some(def) => def,
            None => node,
        };
        if let Some(values) = node.get("enum").and_then(Value::as_array) {
            return values
                .iter()
                .filter_map(|v| Some(v.as_str()?.to_owned()))
                .collect();
        }
        node.get("oneOf")
            .and_then(Value::as_array)
            .map(|m| {
                m.iter()
                    .filter_map(|m| Some(m.get("const")?.as_str()?.to_owned()))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn declare(&mut self, name: &str, schema_doc: &str, body: &str) {
        let doc = match lookup(DOCS, name) {
            Some(d) => {
                self.use_entry("DOCS", name);
                d.to_owned()
            }
            None => prose(schema_doc),
        };
        let sep = if body.starts_with('\n') { "" } else { " " };
        let text = format!("{}export type {name} ={sep}{body};", jsdoc(&doc, ""));
        if self.known.contains(name) || self.out.insert(name.to_owned(), text).is_some() {
            panic!("types.d.ts: {name} is declared twice");
        }
    }

    /// Writes definition `def` as `name`.
    fn definition(&mut self, def: &str, name: &str) {
        let Some(node) = self.defs.get(def).cloned() else {
            panic!("the schema has no definition {def}");
        };
        let doc = node
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let consts: Option<Vec<(String, String)>> =
            node.get("oneOf").and_then(Value::as_array).and_then(|m| {
                m.iter()
                    .map(|m| {
                        let c = m.get("const")?.as_str()?.to_owned();
                        let d = m
                            .get("description")
                            .and_then(Value::as_str)
                            .map(prose)
                            .unwrap_or_default();
                        Some((c, d))
                    })
                    .collect()
            });
        let body = if let Some(values) = consts {
            let parts: Vec<String> = values
                .iter()
                .map(|(c, d)| format!("{}  | {}", jsdoc(d, "  "), Value::from(c.as_str())))
                .collect();
            format!("\n{}", parts.join("\n"))
        } else if let Some((tag, members)) = self.tagged(&node) {
            let extra = self.props(&Value::Object(
                node.as_object()
                    .map(|o| {
                        o.iter()
                            .filter(|(k, _)| *k != "oneOf")
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect()
                    })
                    .unwrap_or_default(),
            ));
            self.union(name, &tag, &members, &extra)
        } else if node.get("properties").is_some() {
            let props = self.props(&node);
            self.object_or_split(name, &props, "")
        } else {
            self.ts(&node)
        };
        self.declare(name, &doc, &body);
    }

    /// `EventLine` and the one-event references, from the `Event` definition
    /// (`anyOf` the payloads, each described by its wire name).
    fn events(&mut self) {
        let members = self
            .defs
            .get("Event")
            .and_then(|e| e.get("anyOf"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut all = Vec::new();
        for member in &members {
            let Some(payload) = ref_name(member) else {
                continue;
            };
            let wire = member
                .get("description")
                .and_then(Value::as_str)
                .map(|d| d.trim_matches('`').to_owned())
                .unwrap_or_else(|| payload.to_lowercase());
            let data = self.named(payload);
            let body = |indent: &str| {
                format!(
                    "{{\n{indent}  event: {};\n{}{indent}  id: string | null;\n{indent}  data: {data};\n{indent}}}",
                    Value::from(wire.as_str()),
                    jsdoc(FRAME_ID_DOC, &format!("{indent}  ")),
                )
            };
            all.push(format!("  | {}", body("    ")));
            if let Some((name, _)) = REFS.iter().find(|(_, e)| *e == wire) {
                self.use_entry("REFS", name);
                self.declare(name, "", &body(""));
            }
        }
        if all.is_empty() {
            panic!("the schema's Event definition names no payload");
        }
        self.declare("EventLine", "", &format!("\n{}", all.join("\n")));
    }
}

/// Every line type as (name, declaration): the unions of the action and
/// item documents and every definition they name that ts-rs does not write
/// (`known`).
pub fn render(documents: &[(&str, Value)], known: &BTreeSet<String>) -> Vec<(String, String)> {
    let mut defs = BTreeMap::new();
    let mut roots = BTreeMap::new();
    for (file, doc) in documents {
        if let Some(d) = doc.get("$defs").and_then(Value::as_object) {
            for (k, v) in d {
                defs.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        roots.insert(*file, doc.clone());
    }
    let mut g = Gen {
        defs,
        known,
        out: BTreeMap::new(),
        queue: Vec::new(),
        used: BTreeSet::new(),
    };
    g.events();
    for (file, name) in [("action.json", "Action"), ("item.json", "OnairItem")] {
        let Some(root) = roots.get(file) else {
            panic!("no schema document {file}");
        };
        let Some((tag, members)) = g.tagged(root) else {
            panic!("{file} is not a tagged union");
        };
        let body = g.union(name, &tag, &members, &[]);
        let doc = root
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("");
        g.declare(name, doc, &body);
    }
    while let Some((def, name)) = g.queue.first().cloned() {
        g.queue.remove(0);
        if def == "EventRef" || g.out.contains_key(&name) {
            continue;
        }
        g.definition(&def, &name);
    }
    let mut stale = Vec::new();
    let entries = PROPS
        .iter()
        .map(|(k, _)| ("PROPS", *k))
        .chain(DOCS.iter().map(|(k, _)| ("DOCS", *k)))
        .chain(NAMED.iter().map(|(k, _)| ("NAMED", *k)))
        .chain(REFS.iter().map(|(k, _)| ("REFS", *k)))
        .chain(SPLITS.iter().map(|(k, _, _)| ("SPLITS", *k)));
    for (table, key) in entries {
        if !g.used.contains(&format!("{table} {key}")) {
            stale.push(format!("{table} {key}"));
        }
    }
    assert!(
        stale.is_empty(),
        "wasm/src/types/lines.rs: entries the schema no longer has a place for: {stale:?}"
    );
    g.out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line types of the schema documents, `edit`ed first, as one text.
    fn rendered(edit: impl FnOnce(&mut Vec<(&'static str, Value)>)) -> String {
        let mut documents = onair::json::schema_documents();
        edit(&mut documents);
        let known: BTreeSet<String> = ["Chat", "Presence", "Like", "Donation", "End", "User"]
            .iter()
            .chain(&[
                "Explanation",
                "Broadcast",
                "Listener",
                "FanRanking",
                "PersonTotals",
            ])
            .chain(&["Role", "Allowed", "ReplyKind"])
            .map(|s| (*s).to_owned())
            .collect();
        render(&documents, &known)
            .into_iter()
            .map(|(_, d)| d)
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn action_member<'a>(documents: &'a mut [(&'static str, Value)], tag: &str) -> &'a mut Value {
        let action = &mut documents
            .iter_mut()
            .find(|(name, _)| *name == "action.json")
            .expect("action.json")
            .1;
        action["oneOf"]
            .as_array_mut()
            .expect("the actions")
            .iter_mut()
            .find(|m| m["properties"]["type"]["const"] == tag)
            .expect("the member")
    }

    /// The member of `union` tagged `"tag": "value"`, as written.
    fn member<'a>(text: &'a str, union: &str, tag: &str) -> &'a str {
        let start = text
            .find(&format!("export type {union} ="))
            .expect("the union");
        let rest = &text[start..];
        let at = rest.find(tag).expect("the member");
        let end = rest[at..].find('}').expect("its end");
        &rest[at..at + end]
    }

    #[test]
    fn a_property_added_to_a_line_is_typed_from_the_schema_alone() {
        let text = rendered(|documents| {
            let timer = action_member(documents, "timer");
            timer["properties"]["extra"] = serde_json::json!({
                "description": "Something new.",
                "type": "integer", "format": "uint32", "minimum": 0
            });
            timer["required"]
                .as_array_mut()
                .expect("required")
                .push("extra".into());
            let wait = action_member(documents, "wait");
            wait["properties"]["why"] = serde_json::json!({"type": ["string", "null"]});
        });
        let timer = member(&text, "Action", "type: \"timer\"");
        assert!(timer.contains("tag: string;"), "{timer}");
        assert!(timer.contains("* Something new.\n"), "{timer}");
        assert!(timer.contains("extra: number;"), "{timer}");
        let wait = member(&text, "Action", "type: \"wait\"");
        assert!(wait.contains("why?: string | null;"), "{wait}");
    }

    #[test]
    fn an_action_and_a_code_added_in_the_schema_are_union_members() {
        let text = rendered(|documents| {
            let action = &mut documents
                .iter_mut()
                .find(|(name, _)| *name == "action.json")
                .expect("action.json")
                .1;
            action["oneOf"].as_array_mut().expect("the actions").push(serde_json::json!({
                "type": "object",
                "properties": {"type": {"type": "string", "const": "rewind"}, "toMs": {"type": "integer"}},
                "required": ["type", "toMs"]
            }));
            action["$defs"]["StopCode"]["enum"]
                .as_array_mut()
                .expect("the stop codes")
                .push("paused".into());
        });
        let rewind = member(&text, "Action", "type: \"rewind\"");
        assert!(rewind.contains("toMs: number;"), "{rewind}");
        let paused = member(&text, "Stop", "code: \"paused\"");
        assert!(paused.contains("message: string;"), "{paused}");
        assert!(paused.contains("problem?: Explanation;"), "{paused}");
        let reconsent = member(&text, "Stop", "code: \"reconsent\"");
        assert!(reconsent.contains("missing: Array<string>;"), "{reconsent}");
        assert!(!reconsent.contains("problem"), "{reconsent}");
    }

    #[test]
    #[should_panic(expected = "SPLITS: Milestone's `user` is not an optional property")]
    fn a_table_entry_the_schema_no_longer_matches_fails_the_render() {
        rendered(|documents| {
            let milestone = action_member(documents, "milestone");
            milestone["properties"]
                .as_object_mut()
                .expect("its properties")
                .remove("user");
        });
    }
}
