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
//! `event`, `notice`, `done`, `persistTokens`, `timer`,
//! `needsAuthorization`, `wait`, `stopped`) and camelCase fields; an `event` action is the typed
//! item line above with `"type":"event"`. The actions about a person a
//! reply answers carry that reply's kind as `replyKind`
//! ([`Action::reply_kind`]): an `arrival` (`welcome`, `welcome_back`), a
//! `command` (`command`), a donation's `event` (`thanks`); a driver sends a
//! handler's text for one as that reply, naming the person, so it merges
//! with the replies of its kind. A `send` carries the request whole
//! (its `Authorization` header and form body included: it must be sent), so
//! treat that JSON as a secret; so is an `openStream`'s (its request carries
//! the access token); every other action holds no secret but
//! `persistTokens`, whose `tokens` is the stored token file.
//!
//! Every line is serde_json over a borrowed view of the value (the event
//! payloads are the event types' own derived `Serialize`).
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

use crate::bot::{
    Action, CallFailure, CallResult, CloseReason, DropReason, GiveUpReason, Notice, Unreached,
};
use crate::event::{self, DecodeError, DecodeErrorKind, Event, User};
use crate::kit::tally::{PersonTotals, Tally};
use crate::kit::{Allowed, ArrivalKind, Milestone, ReplyKind, Role};
use crate::proto::endpoint::{Endpoint, Method};
use crate::proto::http::HttpRequest;
use crate::proto::problem::Explanation;
use crate::proto::sse;
use crate::proto::stop::Stop;
use crate::proto::time::FrameId;

/// One value as a line of JSON. Serializing the views of this module into a
/// `String` cannot fail (no map has non-string keys, no float is written
/// that JSON cannot hold: serde_json writes NaN and infinities as `null`).
fn line(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// The wire form of a typed item: [`to_line`](ItemJson::to_line) writes it.
#[derive(Debug, Clone, Copy)]
pub struct ItemJson<'a>(pub &'a event::Item);

/// The wire form of a generic SSE item (`onair decode --raw`).
#[derive(Debug, Clone, Copy)]
pub struct RawItemJson<'a, 'b>(pub &'a sse::Item<'b>);

impl ItemJson<'_> {
    /// The item as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        line(self)
    }

    /// Appends the line (without the newline) to `text`: a batch of lines
    /// in one buffer.
    ///
    /// ```
    /// use onair::event::Item;
    /// use onair::json::ItemJson;
    ///
    /// let mut batch = String::new();
    /// for item in [Item::Heartbeat, Item::Retry(5)] {
    ///     ItemJson(&item).append_to(&mut batch);
    ///     batch.push('\n');
    /// }
    /// assert_eq!(batch, "{\"type\":\"heartbeat\"}\n{\"type\":\"retry\",\"ms\":5}\n");
    /// ```
    pub fn append_to(&self, text: &mut String) {
        let mut bytes = std::mem::take(text).into_bytes();
        // Writing into a Vec cannot fail (see `line`).
        let _ = serde_json::to_writer(&mut bytes, self);
        // serde_json writes UTF-8 after UTF-8: no copy, no failure.
        *text = String::from_utf8(bytes).unwrap_or_default();
    }
}

impl RawItemJson<'_, '_> {
    /// The item as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        line(self)
    }
}

/// The lines of typed items, tagged by `type`.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "camelCase")]
enum ItemLine<'a> {
    Event {
        event: &'static str,
        id: &'a Option<FrameId>,
        data: &'a Event,
    },
    Unknown {
        event: &'a str,
        id: &'a Option<FrameId>,
        data: &'a str,
    },
    Heartbeat,
    Comment {
        text: &'a str,
    },
    Retry {
        ms: u64,
    },
    Error(ErrorLine<'a>),
}

/// The error line alone, tagged as in [`ItemLine`].
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "camelCase")]
enum ErrorItem<'a> {
    Error(ErrorLine<'a>),
}

/// The error line of a frame that did not decode (`error`: its code).
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct ErrorLine<'a> {
    error: DecodeErrorKind,
    event: Option<&'a str>,
    id: Option<&'a str>,
    raw: &'a str,
    message: &'a str,
}

impl<'a> ErrorLine<'a> {
    fn of(e: &'a DecodeError) -> Self {
        ErrorLine {
            error: e.kind,
            event: e.event.as_deref(),
            id: e.id.as_ref().map(FrameId::as_str),
            raw: &e.raw,
            message: &e.message,
        }
    }
}

impl Serialize for ItemJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            event::Item::Event { id, event } => ItemLine::Event {
                event: event.name(),
                id,
                data: event,
            },
            event::Item::Unknown { event, id, data } => ItemLine::Unknown { event, id, data },
            event::Item::Heartbeat => ItemLine::Heartbeat,
            event::Item::Comment(text) => ItemLine::Comment { text },
            event::Item::Retry(ms) => ItemLine::Retry { ms: *ms },
            event::Item::Error(e) => ItemLine::Error(ErrorLine::of(e)),
        }
        .serialize(s)
    }
}

/// The lines of generic SSE items (`onair decode --raw`).
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "camelCase")]
enum RawLine<'a> {
    Event {
        event: &'a str,
        data: &'a str,
        id: Option<&'a str>,
        #[serde(rename = "lastEventId")]
        last_event_id: &'a str,
    },
    Comment {
        text: &'a str,
    },
    Retry {
        ms: u64,
    },
    Error {
        error: &'static str,
        event: Option<&'a str>,
        id: Option<&'a str>,
        raw: &'a str,
        message: String,
    },
}

impl Serialize for RawItemJson<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            sse::Item::Event(frame) => RawLine::Event {
                event: frame.event,
                data: frame.data,
                id: frame.id,
                last_event_id: frame.last_event_id,
            },
            sse::Item::Comment(text) => RawLine::Comment { text },
            sse::Item::Retry(ms) => RawLine::Retry { ms: *ms },
            sse::Item::Error(e) => RawLine::Error {
                error: e.kind.code(),
                event: e.event,
                id: e.id,
                raw: e.raw,
                message: e.kind.to_string(),
            },
        }
        .serialize(s)
    }
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
        line(self)
    }
}

/// A request as JSON: `{"endpoint","method","url","headers":[[name,value]…],"body"}`,
/// the body as text (every body the bot builds is UTF-8: a form or JSON).
#[derive(Debug, Clone, Copy)]
pub struct RequestJson<'a>(pub &'a HttpRequest);

impl RequestJson<'_> {
    /// The request as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        line(self)
    }
}

/// A request's line (see [`RequestJson`]).
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct RequestLine<'a> {
    endpoint: Endpoint,
    method: Method,
    url: &'a str,
    /// `[name, value]` pairs in order.
    headers: Vec<(&'a str, &'a str)>,
    body: std::borrow::Cow<'a, str>,
}

impl Serialize for RequestJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        RequestLine {
            endpoint: r.endpoint,
            method: r.method,
            url: &r.url,
            headers: r.headers.iter().map(|(n, v)| (*n, v.as_str())).collect(),
            body: String::from_utf8_lossy(&r.body),
        }
        .serialize(s)
    }
}

/// A stop as JSON: `{"code","message"}` plus `reason` (the token problem of
/// a `reauthorize` stop), `missing` (permissions of `reconsent`) or
/// `problem` (the classified response of `fix_request` / `unexpected`).
#[derive(Debug, Clone, Copy)]
pub struct StopJson<'a>(pub &'a Stop);

impl StopJson<'_> {
    /// The stop as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        line(self)
    }
}

/// A stop's line (see [`StopJson`]).
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct StopLine<'a> {
    #[cfg_attr(feature = "schema", schemars(with = "names::StopCode"))]
    code: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    missing: Option<Vec<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<Explanation>,
}

impl Serialize for StopJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let stop = self.0;
        let mut out = StopLine {
            code: stop.code(),
            message: stop.to_string(),
            reason: None,
            missing: None,
            problem: None,
        };
        match stop {
            Stop::Reauthorize(why) => out.reason = Some(why.to_string()),
            Stop::Reconsent { missing } => {
                out.missing = Some(missing.iter().map(|p| p.as_str()).collect());
            }
            Stop::FixRequest(problem) | Stop::Unexpected(problem) => {
                out.problem = Some(problem.explain(None));
            }
            _ => {}
        }
        out.serialize(s)
    }
}

/// A notice, tagged by `kind`.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "camelCase")]
enum NoticeLine<'a> {
    FrameSkipped {
        error: ErrorItem<'a>,
    },
    UnknownEvent {
        event: &'a str,
        data: &'a str,
    },
    Problem {
        endpoint: Endpoint,
        problem: Explanation,
    },
    CallHeld {
        call: u64,
    },
    #[serde(rename_all = "camelCase")]
    ReconnectStormBraked {
        until_ms: u64,
    },
    CommandRefused {
        name: &'a str,
        user: &'a User,
        role: Role,
        needed: Allowed,
    },
    #[serde(rename_all = "camelCase")]
    Unreachable {
        endpoint: Endpoint,
        failure: Unreached,
        failures: u64,
        since_ms: u64,
    },
    #[serde(rename_all = "camelCase")]
    Reachable {
        failures: u64,
        since_ms: u64,
    },
    GaveUp {
        endpoint: Endpoint,
        reason: GiveUpReason,
        count: u64,
    },
    #[serde(rename_all = "camelCase")]
    DailyQuotaReached {
        scope: Option<&'a str>,
        until_ms: u64,
    },
    #[serde(rename_all = "camelCase")]
    RepliesDropped {
        /// `kind` is the notice's tag: the replies' kind is `replyKind`.
        reply_kind: ReplyKind,
        people: u64,
        reason: DropReason,
    },
}

/// A notice line: its kind's fields, then `message` (the notice's
/// `Display` text) and `level` (`warn` or `info`), so a driver logs any
/// notice without knowing its kind.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct NoticeJson<'a> {
    #[serde(flatten)]
    line: NoticeLine<'a>,
    message: String,
    #[cfg_attr(feature = "schema", schemars(with = "names::Level"))]
    level: &'static str,
}

impl<'a> NoticeJson<'a> {
    fn of(notice: &'a Notice) -> Self {
        NoticeJson {
            line: NoticeLine::of(notice),
            message: notice.to_string(),
            level: notice.level(),
        }
    }
}

impl<'a> NoticeLine<'a> {
    fn of(notice: &'a Notice) -> Self {
        match notice {
            Notice::FrameSkipped(e) => NoticeLine::FrameSkipped {
                error: ErrorItem::Error(ErrorLine::of(e)),
            },
            Notice::UnknownEvent { event, data } => NoticeLine::UnknownEvent { event, data },
            Notice::Problem { endpoint, problem } => NoticeLine::Problem {
                endpoint: *endpoint,
                problem: problem.explain(None),
            },
            Notice::CallHeld { call } => NoticeLine::CallHeld { call: call.0 },
            Notice::ReconnectStormBraked { until_ms } => NoticeLine::ReconnectStormBraked {
                until_ms: *until_ms,
            },
            Notice::CommandRefused(r) => NoticeLine::CommandRefused {
                name: &r.name,
                user: &r.user,
                role: r.role,
                needed: r.needed,
            },
            Notice::Unreachable {
                endpoint,
                failure,
                failures,
                since_ms,
            } => NoticeLine::Unreachable {
                endpoint: *endpoint,
                failure: *failure,
                failures: *failures,
                since_ms: *since_ms,
            },
            Notice::Reachable { failures, since_ms } => NoticeLine::Reachable {
                failures: *failures,
                since_ms: *since_ms,
            },
            Notice::GaveUp {
                endpoint,
                reason,
                count,
            } => NoticeLine::GaveUp {
                endpoint: *endpoint,
                reason: *reason,
                count: *count,
            },
            Notice::RepliesDropped {
                kind,
                people,
                reason,
            } => NoticeLine::RepliesDropped {
                reply_kind: *kind,
                people: *people,
                reason: *reason,
            },
            Notice::DailyQuotaReached { scope, until_ms } => NoticeLine::DailyQuotaReached {
                scope: scope.as_ref().map(|p| p.as_str()),
                until_ms: *until_ms,
            },
        }
    }
}

/// The answer to an app call, tagged by `kind`.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "camelCase")]
enum ResultLine<'a> {
    Broadcast {
        broadcast: &'a crate::proto::model::Broadcast,
    },
    Listeners {
        listeners: &'a [crate::proto::model::Listener],
    },
    Fans {
        fans: &'a crate::proto::model::FanRanking,
    },
    ChatSent,
    Failed(FailedLine<'a>),
}

/// A failed call: `problem` or `untilMs` first when the failure has one,
/// then `failure` (its code), `message` (a body, pager or queue failure)
/// and `stop` (a call refused by a stopped bot).
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
struct FailedLine<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<Explanation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    until_ms: Option<u64>,
    #[cfg_attr(feature = "schema", schemars(with = "names::FailureCode"))]
    failure: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<StopJson<'a>>,
}

impl<'a> ResultLine<'a> {
    fn of(result: &'a CallResult) -> Self {
        match result {
            CallResult::Broadcast(broadcast) => ResultLine::Broadcast { broadcast },
            CallResult::Listeners(listeners) => ResultLine::Listeners { listeners },
            CallResult::Fans(fans) => ResultLine::Fans { fans },
            CallResult::ChatSent => ResultLine::ChatSent,
            CallResult::Failed(failure) => {
                let mut line = FailedLine {
                    problem: None,
                    until_ms: None,
                    failure: "",
                    message: None,
                    stop: None,
                };
                line.failure = match failure {
                    CallFailure::Problem(p) => {
                        line.problem = Some(p.explain(None));
                        "problem"
                    }
                    CallFailure::QuotaBlocked { until_ms } => {
                        line.until_ms = Some(*until_ms);
                        "quota_blocked"
                    }
                    CallFailure::InvalidBody(e) => {
                        line.message = Some(e.to_string());
                        "invalid_body"
                    }
                    CallFailure::Pager(e) => {
                        line.message = Some(e.to_string());
                        "pager"
                    }
                    CallFailure::Transport => "transport",
                    CallFailure::Cancelled => "cancelled",
                    CallFailure::QueueFull { limit } => {
                        line.message =
                            Some(format!("the call queue is full ({limit} calls waiting)"));
                        "queue_full"
                    }
                    CallFailure::Stopped(stop) => {
                        line.stop = Some(StopJson(stop));
                        "stopped"
                    }
                };
                ResultLine::Failed(line)
            }
        }
    }
}

/// A zeroizing buffer, written as its text.
fn text<S: Serializer>(text: &zeroize::Zeroizing<String>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(text)
}

/// The actions, tagged by `type`.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "camelCase")]
enum ActionLine<'a> {
    #[serde(rename_all = "camelCase")]
    Send {
        id: u64,
        request: RequestJson<'a>,
        timeout_ms: u64,
    },
    OpenStream {
        id: u64,
        request: RequestJson<'a>,
    },
    CloseStream {
        id: u64,
        reason: CloseReason,
    },
    #[serde(rename_all = "camelCase")]
    Event {
        event: &'static str,
        id: &'a Option<FrameId>,
        data: &'a Event,
        /// On a donation the bot hands out, the reply that answers the
        /// donor: `thanks`. A driver sends a handler's text for the event
        /// as this reply, so it merges with the others of its kind. Absent
        /// on every other event (and on the decoder's lines).
        #[serde(skip_serializing_if = "Option::is_none")]
        reply_kind: Option<ReplyKind>,
    },
    Notice {
        notice: NoticeJson<'a>,
    },
    Done {
        call: u64,
        result: ResultLine<'a>,
    },
    PersistTokens {
        generation: u64,
        #[serde(serialize_with = "text")]
        #[cfg_attr(feature = "schema", schemars(with = "String"))]
        tokens: zeroize::Zeroizing<String>,
    },
    Timer {
        tag: &'a str,
    },
    NeedsAuthorization,
    #[serde(rename_all = "camelCase")]
    Wait {
        until_ms: Option<u64>,
    },
    Stopped {
        stop: StopJson<'a>,
    },
    #[serde(rename_all = "camelCase")]
    Command {
        name: &'a str,
        args: &'a [String],
        rest: &'a str,
        user: &'a User,
        role: Role,
        event: EventRef<'a>,
        /// The reply that answers whoever typed it: `command`. A driver
        /// sends a handler's text for the command as this reply.
        reply_kind: ReplyKind,
    },
    #[serde(rename_all = "camelCase")]
    Arrival {
        #[cfg_attr(feature = "schema", schemars(with = "names::ArrivalKindName"))]
        kind: &'static str,
        away_ms: Option<u64>,
        user: &'a User,
        is_manager: bool,
        live_id: Option<u64>,
        event: EventRef<'a>,
        /// The reply that greets them: `welcome` (first) or
        /// `welcome_back` (back). A driver sends a handler's text for the
        /// arrival as this reply, so it merges with the others of its kind.
        reply_kind: ReplyKind,
    },
    Milestone {
        #[cfg_attr(feature = "schema", schemars(with = "names::MilestoneKind"))]
        kind: &'static str,
        reached: u64,
        total: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        user: Option<&'a User>,
        event: EventRef<'a>,
    },
    #[serde(rename_all = "camelCase")]
    BroadcastEnded {
        live_id: Option<u64>,
        tally: TallyJson<'a>,
        event: Option<EventRef<'a>>,
    },
    PersistState {
        state: &'a str,
    },
}

/// The event behind a kit action: `{"event":name,"id":…,"data":{…}}`, the
/// event line's fields.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct EventRef<'a> {
    event: &'static str,
    id: Option<&'a str>,
    data: EventData<'a>,
}

/// An event's payload, whichever type the kit action holds.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
enum EventData<'a> {
    Any(&'a Event),
    Chat(&'a crate::event::Chat),
    Like(&'a crate::event::Like),
    Donation(&'a crate::event::Donation),
    End(&'a crate::event::End),
}

impl<'a> EventRef<'a> {
    fn of(id: &'a Option<FrameId>, name: &'static str, data: EventData<'a>) -> Self {
        EventRef {
            event: name,
            id: id.as_ref().map(FrameId::as_str),
            data,
        }
    }
}

impl Serialize for ActionJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Action::Send {
                id,
                request,
                timeout_ms,
            } => ActionLine::Send {
                id: id.0,
                request: RequestJson(request),
                timeout_ms: *timeout_ms,
            },
            Action::OpenStream { id, request } => ActionLine::OpenStream {
                id: id.0,
                request: RequestJson(request),
            },
            Action::CloseStream { id, reason } => ActionLine::CloseStream {
                id: id.0,
                reason: *reason,
            },
            Action::Event { id, event } => ActionLine::Event {
                event: event.name(),
                id,
                data: event,
                reply_kind: self.0.reply_kind(),
            },
            Action::Notice(notice) => ActionLine::Notice {
                notice: NoticeJson::of(notice),
            },
            Action::Done { call, result } => ActionLine::Done {
                call: call.0,
                result: ResultLine::of(result),
            },
            Action::PersistTokens(tokens) => ActionLine::PersistTokens {
                generation: tokens.generation(),
                tokens: tokens.to_json(),
            },
            Action::Timer { tag } => ActionLine::Timer { tag: tag.as_str() },
            Action::NeedsAuthorization => ActionLine::NeedsAuthorization,
            Action::Wait { until_ms } => ActionLine::Wait {
                until_ms: *until_ms,
            },
            Action::Stopped(stop) => ActionLine::Stopped {
                stop: StopJson(stop),
            },
            Action::Command(c) => ActionLine::Command {
                name: &c.name,
                args: &c.args,
                rest: &c.rest,
                user: &c.user,
                role: c.role,
                event: EventRef::of(&c.chat.id, "chat", EventData::Chat(&c.chat.event)),
                reply_kind: c.reply_kind(),
            },
            Action::Arrival(a) => ActionLine::Arrival {
                kind: match a.kind {
                    ArrivalKind::First => "first",
                    ArrivalKind::Back { .. } => "back",
                },
                away_ms: match a.kind {
                    ArrivalKind::First => None,
                    ArrivalKind::Back { away_ms } => Some(away_ms),
                },
                user: &a.user,
                is_manager: a.is_manager,
                live_id: a.live_id,
                event: EventRef::of(
                    &a.event.id,
                    a.event.event.name(),
                    EventData::Any(&a.event.event),
                ),
                reply_kind: a.reply_kind(),
            },
            Action::Milestone(Milestone::Hearts {
                reached,
                total,
                like,
            }) => ActionLine::Milestone {
                kind: "hearts",
                reached: *reached,
                total: *total,
                user: None,
                event: EventRef::of(&like.id, "like", EventData::Like(&like.event)),
            },
            Action::Milestone(Milestone::Donated {
                user,
                reached,
                total,
                donation,
            }) => ActionLine::Milestone {
                kind: "donated",
                reached: *reached,
                total: *total,
                user: Some(user),
                event: EventRef::of(
                    &donation.id,
                    "donation",
                    EventData::Donation(&donation.event),
                ),
            },
            Action::BroadcastEnded(b) => ActionLine::BroadcastEnded {
                live_id: b.live_id,
                tally: TallyJson(&b.tally),
                event: b
                    .end
                    .as_ref()
                    .map(|end| EventRef::of(&end.id, "end", EventData::End(&end.event))),
            },
            Action::PersistState(state) => ActionLine::PersistState {
                state: state.to_json(),
            },
        }
        .serialize(s)
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
/// use onair::kit::tally::Tally;
///
/// let line = TallyJson(&Tally::new()).to_line();
/// assert_eq!(line, r#"{"hearts":0,"donated":0,"attendance":0,"people":{}}"#);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TallyJson<'a>(pub &'a Tally);

impl TallyJson<'_> {
    /// The totals as one line of JSON.
    pub fn to_line(&self) -> String {
        line(self)
    }
}

// The tally's own JSON line, written here where the wire forms live (the
// kit sits below this module and does not import it).
impl Tally {
    /// The totals as one line of JSON, people in `id` order: what the
    /// emulator's ledger shows as a bot's `totals` (print it, save it, or
    /// compare it with the ledger in a test).
    ///
    /// ```
    /// use onair::event::Event;
    /// use onair::kit::tally::Tally;
    ///
    /// let like = Event::decode(
    ///     "like",
    ///     r#"{"user":{"id":"u1","nickname":"Mina"},"type":"PAID","totalAmount":30,"amount":10,"extraAmount":0,"combo":3,"time":"t"}"#,
    /// ).unwrap().unwrap();
    /// let mut tally = Tally::new();
    /// assert_eq!(tally.to_json(), r#"{"hearts":0,"donated":0,"attendance":0,"people":{}}"#);
    /// tally.record(&like);
    /// assert!(tally.to_json().starts_with(r#"{"hearts":30,"donated":0,"#));
    /// ```
    pub fn to_json(&self) -> String {
        TallyJson(self).to_line()
    }
}

/// The people in `id` order.
struct People<'a>(Vec<(&'a str, &'a PersonTotals)>);

impl Serialize for People<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (id, totals) in crate::kit::tally::ordered(&self.0, |(id, _)| (0, id)) {
            map.serialize_entry(id, totals)?;
        }
        map.end()
    }
}

/// The tally's line (see [`TallyJson`]).
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct Totals<'a> {
    hearts: u64,
    donated: u64,
    attendance: u64,
    /// Each person's totals by id.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "std::collections::BTreeMap<String, PersonTotals>")
    )]
    people: People<'a>,
}

impl Serialize for TallyJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let tally = self.0;
        Totals {
            hearts: tally.total_hearts(),
            donated: tally.total_donated(),
            attendance: tally.joined() as u64,
            people: People(tally.people().collect()),
        }
        .serialize(s)
    }
}

#[cfg(feature = "schema")]
mod schema;
#[cfg(feature = "schema")]
#[doc(hidden)]
pub use schema::{documents as schema_documents, files as schema_files};

/// Stand-ins for the schema of the codes a line writes as plain strings
/// (`schemars(with = …)`): each lists the values of the function that writes
/// them. A value missing here fails the schema test, which validates one
/// pinned line of every variant.
#[cfg(feature = "schema")]
#[allow(dead_code)]
mod names {
    /// A stop's code ([`Stop::code`](crate::Stop::code)).
    #[derive(schemars::JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub(super) enum StopCode {
        Reauthorize,
        Reconsent,
        JoinForbidden,
        InvalidClient,
        FixRequest,
        Unexpected,
        ShutDown,
    }

    /// Why a call failed ([`CallFailure`](crate::CallFailure)).
    #[derive(schemars::JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub(super) enum FailureCode {
        Problem,
        QuotaBlocked,
        InvalidBody,
        Pager,
        Transport,
        Cancelled,
        QueueFull,
        Stopped,
    }

    /// A notice's level: `warn` deserves a default log line, `info` does not.
    #[derive(schemars::JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub(super) enum Level {
        Warn,
        Info,
    }

    /// An arrival's kind: `first` in this broadcast, or `back` after an absence.
    #[derive(schemars::JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[schemars(rename = "ArrivalKind")]
    pub(super) enum ArrivalKindName {
        First,
        Back,
    }

    /// What a milestone counts: `hearts` for the broadcast, `donated` by one person.
    #[derive(schemars::JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub(super) enum MilestoneKind {
        Hearts,
        Donated,
    }
}

#[cfg(test)]
mod tests;
