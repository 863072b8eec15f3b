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
//! The bot's actions ([`crate::bot::Action`], via [`ActionJson`]) have one
//! JSON form too, for bindings that hand actions to another language as
//! JSON: an object with a `type` (`send`, `openStream`, `closeStream`,
//! `event`, `notice`, `done`, `persistTokens`, `timer`, `needsAuthorization`,
//! `wait`, `stopped`) and camelCase fields; an `event` action is the typed
//! item line above with `"type":"event"`. A `send` carries the request whole
//! (its `Authorization` header and form body included: it must be sent), so
//! treat that JSON as a secret; every other action holds no secret but
//! `persistTokens`, whose `tokens` is the stored token file.
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

use crate::bot::{Action, CallFailure, CallResult, Notice};
use crate::event::{self, DecodeError};
use crate::http::HttpRequest;
use crate::sse;
use crate::stop::Stop;
use crate::tally::Tally;

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

/// The JSON form of a bot action (see the [module docs](self)).
///
/// ```
/// use onair::json::ActionJson;
/// use onair::Action;
///
/// let wait = ActionJson(&Action::Wait { until_ms: Some(5) }).to_line();
/// assert_eq!(wait, r#"{"type":"wait","untilMs":5}"#);
/// assert_eq!(ActionJson(&Action::NeedsAuthorization).to_line(), r#"{"type":"needsAuthorization"}"#);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ActionJson<'a>(pub &'a Action);

impl ActionJson<'_> {
    /// The action as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A request as JSON: `{"endpoint","method","url","headers":[[name,value]…],"body"}`,
/// the body as text (every body the bot builds is UTF-8: a form or JSON).
#[derive(Debug, Clone, Copy)]
pub struct RequestJson<'a>(pub &'a HttpRequest);

impl Serialize for RequestJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let headers: Vec<[&str; 2]> = r.headers.iter().map(|(n, v)| [*n, v.as_str()]).collect();
        let mut map = serializer.serialize_map(Some(5))?;
        map.serialize_entry("endpoint", r.endpoint.as_str())?;
        map.serialize_entry("method", r.method.as_str())?;
        map.serialize_entry("url", &r.url)?;
        map.serialize_entry("headers", &headers)?;
        map.serialize_entry("body", &String::from_utf8_lossy(&r.body))?;
        map.end()
    }
}

/// A stop as JSON: `{"code","message"}` plus `reason` (the token problem of
/// a `reauthorize` stop), `missing` (permissions of `reconsent`) or
/// `problem` (the classified response of `fix_request` / `unexpected`).
#[derive(Debug, Clone, Copy)]
pub struct StopJson<'a>(pub &'a Stop);

impl Serialize for StopJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let stop = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("code", stop.code())?;
        map.serialize_entry("message", &stop.to_string())?;
        match stop {
            Stop::Reauthorize(why) => map.serialize_entry("reason", &why.to_string())?,
            Stop::Reconsent { missing } => {
                let names: Vec<&str> = missing.iter().map(|p| p.as_str()).collect();
                map.serialize_entry("missing", &names)?;
            }
            Stop::FixRequest(problem) | Stop::Unexpected(problem) => {
                map.serialize_entry("problem", &problem.explain(None))?;
            }
            _ => {}
        }
        map.end()
    }
}

struct NoticeJson<'a>(&'a Notice);

impl Serialize for NoticeJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self.0 {
            Notice::FrameSkipped(e) => {
                map.serialize_entry("kind", "frameSkipped")?;
                map.serialize_entry("error", &DecodeErrorJson(e))?;
            }
            Notice::UnknownEvent { event, data } => {
                map.serialize_entry("kind", "unknownEvent")?;
                map.serialize_entry("event", event)?;
                map.serialize_entry("data", data)?;
            }
            Notice::Problem { endpoint, problem } => {
                map.serialize_entry("kind", "problem")?;
                map.serialize_entry("endpoint", endpoint.as_str())?;
                map.serialize_entry("problem", &problem.explain(None))?;
            }
            Notice::RequestTimedOut { id, endpoint } => {
                map.serialize_entry("kind", "requestTimedOut")?;
                map.serialize_entry("id", &id.0)?;
                map.serialize_entry("endpoint", endpoint.as_str())?;
            }
            Notice::ReconnectStormBraked { until_ms } => {
                map.serialize_entry("kind", "reconnectStormBraked")?;
                map.serialize_entry("untilMs", until_ms)?;
            }
        }
        map.end()
    }
}

struct ResultJson<'a>(&'a CallResult);

impl Serialize for ResultJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self.0 {
            CallResult::Broadcast(b) => {
                map.serialize_entry("kind", "broadcast")?;
                map.serialize_entry("broadcast", b)?;
            }
            CallResult::Listeners(l) => {
                map.serialize_entry("kind", "listeners")?;
                map.serialize_entry("listeners", l)?;
            }
            CallResult::Fans(f) => {
                map.serialize_entry("kind", "fans")?;
                map.serialize_entry("fans", f)?;
            }
            CallResult::ChatSent => map.serialize_entry("kind", "chatSent")?,
            CallResult::Failed(failure) => {
                map.serialize_entry("kind", "failed")?;
                let (code, detail): (&str, Option<String>) = match failure {
                    CallFailure::Problem(p) => {
                        map.serialize_entry("problem", &p.explain(None))?;
                        ("problem", None)
                    }
                    CallFailure::QuotaBlocked { until_ms } => {
                        map.serialize_entry("untilMs", until_ms)?;
                        ("quota_blocked", None)
                    }
                    CallFailure::InvalidBody(e) => ("invalid_body", Some(e.to_string())),
                    CallFailure::Pager(e) => ("pager", Some(e.to_string())),
                    CallFailure::Transport => ("transport", None),
                    CallFailure::Cancelled => ("cancelled", None),
                };
                map.serialize_entry("failure", code)?;
                if let Some(detail) = detail {
                    map.serialize_entry("message", &detail)?;
                }
            }
        }
        map.end()
    }
}

impl Serialize for ActionJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self.0 {
            Action::Send {
                id,
                request,
                timeout_ms,
            } => {
                map.serialize_entry("type", "send")?;
                map.serialize_entry("id", &id.0)?;
                map.serialize_entry("request", &RequestJson(request))?;
                map.serialize_entry("timeoutMs", timeout_ms)?;
            }
            Action::OpenStream { id, request } => {
                map.serialize_entry("type", "openStream")?;
                map.serialize_entry("id", &id.0)?;
                map.serialize_entry("request", &RequestJson(request))?;
            }
            Action::CloseStream { id } => {
                map.serialize_entry("type", "closeStream")?;
                map.serialize_entry("id", &id.0)?;
            }
            Action::Event { id, event } => {
                map.serialize_entry("type", "event")?;
                map.serialize_entry("event", event.name())?;
                map.serialize_entry("id", id)?;
                map.serialize_entry("data", event)?;
            }
            Action::Notice(notice) => {
                map.serialize_entry("type", "notice")?;
                map.serialize_entry("notice", &NoticeJson(notice))?;
            }
            Action::Done { call, result } => {
                map.serialize_entry("type", "done")?;
                map.serialize_entry("call", &call.0)?;
                map.serialize_entry("result", &ResultJson(result))?;
            }
            Action::PersistTokens(tokens) => {
                map.serialize_entry("type", "persistTokens")?;
                map.serialize_entry("generation", &tokens.generation())?;
                map.serialize_entry("tokens", tokens.to_json().as_str())?;
            }
            Action::Timer { tag } => {
                map.serialize_entry("type", "timer")?;
                map.serialize_entry("tag", tag.as_str())?;
            }
            Action::NeedsAuthorization => map.serialize_entry("type", "needsAuthorization")?,
            Action::Wait { until_ms } => {
                map.serialize_entry("type", "wait")?;
                map.serialize_entry("untilMs", until_ms)?;
            }
            Action::Stopped(stop) => {
                map.serialize_entry("type", "stopped")?;
                map.serialize_entry("stop", &StopJson(stop))?;
            }
        }
        map.end()
    }
}

/// A broadcast's totals as JSON, the shape of the emulator ledger's
/// `totals`: `{"hearts","donated","attendance","people":{"<id>":{"nickname",
/// "hearts","paidHearts","donated","donations","joins","chats"}}}` (people
/// in `id` order). End-to-end tests compare a bot's tally with the ledger in
/// this form.
///
/// ```
/// use onair::json::TallyJson;
/// use onair::tally::Tally;
///
/// let line = TallyJson(&Tally::new()).to_line();
/// assert_eq!(line, r#"{"hearts":0,"donated":0,"attendance":0,"people":{}}"#);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TallyJson<'a>(pub &'a Tally);

impl TallyJson<'_> {
    /// The totals as one line of JSON.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl Serialize for TallyJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tally = self.0;
        let people: Vec<_> = tally.people().collect();
        let people = crate::tally::ordered(&people, |(id, _)| (0, id));
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("hearts", &tally.total_hearts())?;
        map.serialize_entry("donated", &tally.total_donated())?;
        map.serialize_entry("attendance", &tally.attendance())?;
        map.serialize_entry("people", &People(&people))?;
        map.end()
    }
}

/// The people of a tally as a JSON object, in the order given (by `id`).
struct People<'a>(&'a [(&'a str, &'a crate::tally::PersonTotals)]);

impl Serialize for People<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().copied())
    }
}
