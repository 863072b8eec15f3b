//! The JSON wire form of stream items: one object per item, the lines
//! `onair decode` prints (NDJSON) and the shapes the C, Python and Node
//! bindings hand out. A documented contract: fields may be added, never
//! changed or removed.
//!
//! Typed items ([`event::Item`], via [`ItemJson`]):
//!
//! | line | when |
//! |---|---|
//! | `{"type":"event","event":"chat","id":"1732250000000-17","data":{…}}` | a service event; `data` in canonical wire form (documented fields only, nullable fields always present) |
//! | `{"type":"unknown","event":"poll","id":…,"data":"raw"}` | an event name this version does not know |
//! | `{"type":"heartbeat"}` / `{"type":"comment","text":"…"}` | the `:heartbeat` comment / any other comment |
//! | `{"type":"retry","ms":3000}` | a `retry` field |
//! | `{"type":"error","error":CODE,"event":…,"id":…,"raw":"…","message":"…"}` | `invalid_json`, `invalid_event`, `frame_too_large`, `incomplete_frame` |
//!
//! Generic SSE items ([`sse::Item`], via [`RawItemJson`], `onair decode
//! --raw`): `{"type":"event","event":…,"data":"…","id":…,"lastEventId":"…"}`,
//! and the same comment, retry and error lines.
//!
//! ```
//! use onair::event::Item;
//! use onair::json::ItemJson;
//!
//! assert_eq!(ItemJson(&Item::Heartbeat).to_line(), r#"{"type":"heartbeat"}"#);
//! assert_eq!(ItemJson(&Item::Retry(3000)).to_line(), r#"{"type":"retry","ms":3000}"#);
//! ```

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::event::{self, DecodeError};
use crate::sse;

/// The wire form of a typed item; `Serialize` writes it.
#[derive(Debug, Clone, Copy)]
pub struct ItemJson<'a>(pub &'a event::Item);

/// The wire form of a generic SSE item (`onair decode --raw`).
#[derive(Debug, Clone, Copy)]
pub struct RawItemJson<'a, 'b>(pub &'a sse::Item<'b>);

impl ItemJson<'_> {
    /// The item as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        // Maps of strings and integers always serialize.
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl RawItemJson<'_, '_> {
    /// The item as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl Serialize for ItemJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            event::Item::Event { id, event } => {
                let mut map = serializer.serialize_map(Some(4))?;
                map.serialize_entry("type", "event")?;
                map.serialize_entry("event", event.name())?;
                map.serialize_entry("id", id)?;
                map.serialize_entry("data", event)?;
                map.end()
            }
            event::Item::Unknown { event, id, data } => {
                let mut map = serializer.serialize_map(Some(4))?;
                map.serialize_entry("type", "unknown")?;
                map.serialize_entry("event", event)?;
                map.serialize_entry("id", id)?;
                map.serialize_entry("data", data)?;
                map.end()
            }
            event::Item::Heartbeat => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("type", "heartbeat")?;
                map.end()
            }
            event::Item::Comment(text) => comment(serializer, text),
            event::Item::Retry(ms) => retry(serializer, *ms),
            event::Item::Error(e) => DecodeErrorJson(e).serialize(serializer),
        }
    }
}

/// The error line of a frame that did not decode.
struct DecodeErrorJson<'a>(&'a DecodeError);

impl Serialize for DecodeErrorJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let e = self.0;
        let mut map = serializer.serialize_map(Some(6))?;
        map.serialize_entry("type", "error")?;
        map.serialize_entry("error", e.kind.code())?;
        map.serialize_entry("event", &e.event)?;
        map.serialize_entry("id", &e.id)?;
        map.serialize_entry("raw", &e.raw)?;
        map.serialize_entry("message", &e.message)?;
        map.end()
    }
}

impl Serialize for RawItemJson<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            sse::Item::Event(frame) => {
                let mut map = serializer.serialize_map(Some(5))?;
                map.serialize_entry("type", "event")?;
                map.serialize_entry("event", frame.event)?;
                map.serialize_entry("data", frame.data)?;
                map.serialize_entry("id", &frame.id)?;
                map.serialize_entry("lastEventId", frame.last_event_id)?;
                map.end()
            }
            sse::Item::Comment(text) => comment(serializer, text),
            sse::Item::Retry(ms) => retry(serializer, *ms),
            sse::Item::Error(e) => {
                let mut map = serializer.serialize_map(Some(6))?;
                map.serialize_entry("type", "error")?;
                map.serialize_entry("error", e.kind.code())?;
                map.serialize_entry("event", &e.event)?;
                map.serialize_entry("id", &e.id)?;
                map.serialize_entry("raw", e.raw)?;
                map.serialize_entry("message", &e.kind.to_string())?;
                map.end()
            }
        }
    }
}

fn comment<S: Serializer>(serializer: S, text: &str) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(2))?;
    map.serialize_entry("type", "comment")?;
    map.serialize_entry("text", text)?;
    map.end()
}

fn retry<S: Serializer>(serializer: S, ms: u64) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(2))?;
    map.serialize_entry("type", "retry")?;
    map.serialize_entry("ms", &ms)?;
    map.end()
}
