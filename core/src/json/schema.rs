//! The JSON Schema (2020-12) of every JSON document the core writes or
//! reads, generated from the types that write them (feature `schema`). The
//! repository's `schema/` folder holds [`documents`]' output; the core's
//! `tests/schema.rs` fails when a committed file differs and
//! `ONAIR_BLESS=1 cargo test -p onair --features schema --test schema`
//! rewrites them.
//!
//! Lines the core writes (actions, items, stops, the tally, the status, the
//! token file) are described as written: a field that is always written is
//! `required` (nullable when it may be `null`), one written only when it has
//! a value is optional. Documents the core reads (the kit's configuration)
//! are described as read: a field with a default is optional. Readers of a
//! line must allow fields they do not know: fields may be added, never
//! changed or removed.

use std::borrow::Cow;

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};

use super::{
    ActionJson, ActionLine, ItemJson, ItemLine, RawItemJson, RawLine, RequestJson, RequestLine,
    StopJson, StopLine, TallyJson, Totals,
};

/// Gives a public view the schema of the private line it writes.
macro_rules! schema_of {
    ($view:ty, $line:ty, $name:literal) => {
        impl JsonSchema for $view {
            fn schema_name() -> Cow<'static, str> {
                $name.into()
            }
            fn json_schema(generator: &mut SchemaGenerator) -> Schema {
                <$line>::json_schema(generator)
            }
        }
    };
}

schema_of!(ItemJson<'_>, ItemLine<'static>, "Item");
schema_of!(RawItemJson<'_, '_>, RawLine<'static>, "RawItem");
schema_of!(ActionJson<'_>, ActionLine<'static>, "Action");
schema_of!(RequestJson<'_>, RequestLine<'static>, "Request");
schema_of!(StopJson<'_>, StopLine<'static>, "Stop");
schema_of!(TallyJson<'_>, Totals<'static>, "Tally");

/// A property written only when it has a value (`skip_serializing_if =
/// "Option::is_none"`) is never `null`: schemars gives it its `Option`'s
/// nullable schema; this takes the `null` out of every property a written
/// document does not require.
fn absent_not_null(value: &mut serde_json::Value) {
    use serde_json::Value;
    fn not_null(property: &mut Value) {
        let Some(map) = property.as_object_mut() else {
            return;
        };
        if let Some(Value::Array(kinds)) = map.get_mut("type") {
            kinds.retain(|k| k != "null");
            if kinds.len() == 1 {
                let only = kinds.remove(0);
                map.insert("type".to_owned(), only);
            }
        }
        for union in ["anyOf", "oneOf"] {
            if let Some(Value::Array(members)) = map.get_mut(union) {
                members.retain(|m| m.get("type").and_then(Value::as_str) != Some("null"));
                if members.len() == 1 {
                    let only = members.remove(0);
                    map.remove(union);
                    if let Value::Object(only) = only {
                        map.extend(only);
                    }
                }
            }
        }
    }
    match value {
        Value::Object(map) => {
            let required: Vec<String> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(|n| n.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = map.get_mut("properties") {
                for (name, property) in properties.iter_mut() {
                    if !required.contains(name) {
                        not_null(property);
                    }
                }
            }
            map.values_mut().for_each(absent_not_null);
        }
        Value::Array(values) => values.iter_mut().for_each(absent_not_null),
        _ => {}
    }
}

/// A root schema titled `title`, described `description`, from `settings`
/// (a written document without `null` where a property is left out:
/// [`absent_not_null`]).
fn root<T: JsonSchema>(settings: &SchemaSettings, title: &str, description: &str) -> Schema {
    let mut schema = settings
        .clone()
        .into_generator()
        .into_root_schema_for::<T>();
    if settings.contract == schemars::generate::Contract::Serialize {
        let mut whole = serde_json::Value::Object(std::mem::take(schema.ensure_object()));
        absent_not_null(&mut whole);
        if let serde_json::Value::Object(map) = whole {
            *schema.ensure_object() = map;
        }
    }
    schema.insert("title".to_owned(), title.into());
    schema.insert("description".to_owned(), description.into());
    schema
}

/// Every document as (file name under `schema/`, its schema), in file name
/// order.
pub fn documents() -> Vec<(&'static str, serde_json::Value)> {
    let written = SchemaSettings::draft2020_12().for_serialize();
    let read = SchemaSettings::draft2020_12().for_deserialize();
    let mut documents = vec![
        (
            "action.json",
            root::<ActionJson<'static>>(
                &written,
                "Action",
                "What the bot asks its driver to do next, one JSON object per action \
                 (`type` tells which). A `send` or `openStream` holds secrets (its request's \
                 Authorization header), as does `persistTokens`.",
            ),
        ),
        (
            "item.json",
            root::<ItemJson<'static>>(
                &written,
                "Item",
                "One thing the event stream said, as `onair decode` prints it and the \
                 bindings hand it out (`type` tells which).",
            ),
        ),
        (
            "raw-item.json",
            root::<RawItemJson<'static, 'static>>(
                &written,
                "RawItem",
                "One generic SSE item (`onair decode --raw`).",
            ),
        ),
        (
            "request.json",
            root::<RequestJson<'static>>(
                &written,
                "Request",
                "A request to send (`send` and `openStream` actions). Holds secrets.",
            ),
        ),
        (
            "stop.json",
            root::<StopJson<'static>>(
                &written,
                "Stop",
                "Why the bot stopped (`code`), and what to do about it.",
            ),
        ),
        (
            "tally.json",
            root::<TallyJson<'static>>(
                &written,
                "Tally",
                "One broadcast's totals, the shape of the emulator ledger's `totals`.",
            ),
        ),
        (
            "status.json",
            root::<crate::bot::Status>(
                &written,
                "Status",
                "The bot's status snapshot (`Bot::status`).",
            ),
        ),
        (
            "tokens.json",
            root::<crate::proto::oauth::StoredOut<'static>>(
                &written,
                "Tokens",
                "The token file (`persistTokens`' `tokens`): the stored token pair. Holds \
                 secrets. Readers ignore fields they do not know and refuse another `format` \
                 or a `version` they do not know.",
            ),
        ),
        (
            "kit-state.json",
            root::<crate::kit::StoredState<'static>>(
                &written,
                "KitState",
                "The kit's stored state (`persistState`' `state`): the current broadcast's \
                 people, tally, milestone marks and replies not out yet. No secret. Readers \
                 refuse another `format` or a `version` they do not know.",
            ),
        ),
        (
            "kit-config.json",
            root::<crate::kit::KitConfig>(
                &read,
                "KitConfig",
                "The kit's configuration, as read (every field optional; unknown fields are \
                 refused).",
            ),
        ),
    ];
    documents.sort_by_key(|(name, _)| *name);
    documents
        .into_iter()
        .map(|(name, schema)| (name, schema.to_value()))
        .collect()
}

/// Every document as (file name under `schema/`, its text as committed:
/// pretty JSON and a final newline).
pub fn files() -> Vec<(&'static str, String)> {
    documents()
        .into_iter()
        .map(|(name, schema)| {
            let text = serde_json::to_string_pretty(&schema).unwrap_or_default();
            (name, text + "\n")
        })
        .collect()
}
