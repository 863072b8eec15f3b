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
//! Every line is written by the core's own writer, [`JsonOut`], each type
//! by its [`WriteJson`]; the text is byte for byte what serde_json writes
//! for the same value (the data types keep a derived `Serialize` for Rust
//! users, and the tests hold the two equal). Bindings write their own
//! shapes through the same writer.
//!
//! ```
//! use onair::event::Item;
//! use onair::json::ItemJson;
//!
//! assert_eq!(ItemJson(&Item::Heartbeat).to_line(), r#"{"type":"heartbeat"}"#);
//! assert_eq!(ItemJson(&Item::Retry(3000)).to_line(), r#"{"type":"retry","ms":3000}"#);
//! ```

use crate::bot::{Action, CallFailure, CallResult, Notice};
use crate::event::{self, DecodeError};
use crate::http::HttpRequest;
use crate::sse;
use crate::stop::Stop;
use crate::tally::Tally;
pub use crate::wire::write::{JsonOut, WriteJson};

/// The wire form of a typed item: [`to_line`](ItemJson::to_line) writes it.
#[derive(Debug, Clone, Copy)]
pub struct ItemJson<'a>(pub &'a event::Item);

/// The wire form of a generic SSE item (`onair decode --raw`).
#[derive(Debug, Clone, Copy)]
pub struct RawItemJson<'a, 'b>(pub &'a sse::Item<'b>);

impl ItemJson<'_> {
    /// The item as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        JsonOut::text_of(self)
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
        let mut out = JsonOut::after(std::mem::take(text));
        self.write_json(&mut out);
        *text = out.finish();
    }
}

impl RawItemJson<'_, '_> {
    /// The item as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        JsonOut::text_of(self)
    }
}

impl WriteJson for ItemJson<'_> {
    fn write_json(&self, out: &mut JsonOut) {
        match self.0 {
            event::Item::Event { id, event } => {
                out.begin_object();
                out.key("type").str("event");
                out.key("event").str(event.name());
                out.key("id").put(id);
                out.key("data").put(event);
                out.end_object();
            }
            event::Item::Unknown { event, id, data } => {
                out.begin_object();
                out.key("type").str("unknown");
                out.key("event").str(event);
                out.key("id").put(id);
                out.key("data").str(data);
                out.end_object();
            }
            event::Item::Heartbeat => {
                out.begin_object().key("type").str("heartbeat").end_object();
            }
            event::Item::Comment(text) => comment(out, text),
            event::Item::Retry(ms) => retry(out, *ms),
            event::Item::Error(e) => DecodeErrorJson(e).write_json(out),
        }
    }
}

/// The error line of a frame that did not decode.
struct DecodeErrorJson<'a>(&'a DecodeError);

impl WriteJson for DecodeErrorJson<'_> {
    fn write_json(&self, out: &mut JsonOut) {
        let e = self.0;
        out.begin_object();
        out.key("type").str("error");
        out.key("error").str(e.kind.code());
        out.key("event").put(&e.event);
        out.key("id").put(&e.id);
        out.key("raw").str(&e.raw);
        out.key("message").str(&e.message);
        out.end_object();
    }
}

impl WriteJson for RawItemJson<'_, '_> {
    fn write_json(&self, out: &mut JsonOut) {
        match self.0 {
            sse::Item::Event(frame) => {
                out.begin_object();
                out.key("type").str("event");
                out.key("event").str(frame.event);
                out.key("data").str(frame.data);
                out.key("id").put(&frame.id);
                out.key("lastEventId").str(frame.last_event_id);
                out.end_object();
            }
            sse::Item::Comment(text) => comment(out, text),
            sse::Item::Retry(ms) => retry(out, *ms),
            sse::Item::Error(e) => {
                out.begin_object();
                out.key("type").str("error");
                out.key("error").str(e.kind.code());
                out.key("event").put(&e.event);
                out.key("id").put(&e.id);
                out.key("raw").str(e.raw);
                out.key("message").str(&e.kind.to_string());
                out.end_object();
            }
        }
    }
}

fn comment(out: &mut JsonOut, text: &str) {
    out.begin_object();
    out.key("type").str("comment");
    out.key("text").str(text);
    out.end_object();
}

fn retry(out: &mut JsonOut, ms: u64) {
    out.begin_object();
    out.key("type").str("retry");
    out.key("ms").u64(ms);
    out.end_object();
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
        JsonOut::text_of(self)
    }
}

/// A request as JSON: `{"endpoint","method","url","headers":[[name,value]…],"body"}`,
/// the body as text (every body the bot builds is UTF-8: a form or JSON).
#[derive(Debug, Clone, Copy)]
pub struct RequestJson<'a>(pub &'a HttpRequest);

impl RequestJson<'_> {
    /// The request as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        JsonOut::text_of(self)
    }
}

impl WriteJson for RequestJson<'_> {
    fn write_json(&self, out: &mut JsonOut) {
        let r = self.0;
        out.begin_object();
        out.key("endpoint").str(r.endpoint.as_str());
        out.key("method").str(r.method.as_str());
        out.key("url").str(&r.url);
        out.key("headers").begin_array();
        for (name, value) in &r.headers {
            out.list([*name, value.as_str()]);
        }
        out.end_array();
        out.key("body").str(&String::from_utf8_lossy(&r.body));
        out.end_object();
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
        JsonOut::text_of(self)
    }
}

impl WriteJson for StopJson<'_> {
    fn write_json(&self, out: &mut JsonOut) {
        let stop = self.0;
        out.begin_object();
        out.key("code").str(stop.code());
        out.key("message").str(&stop.to_string());
        match stop {
            Stop::Reauthorize(why) => {
                out.key("reason").str(&why.to_string());
            }
            Stop::Reconsent { missing } => {
                out.key("missing").list(missing.iter().map(|p| p.as_str()));
            }
            Stop::FixRequest(problem) | Stop::Unexpected(problem) => {
                out.key("problem").put(&problem.explain(None));
            }
            _ => {}
        }
        out.end_object();
    }
}

struct NoticeJson<'a>(&'a Notice);

impl WriteJson for NoticeJson<'_> {
    fn write_json(&self, out: &mut JsonOut) {
        out.begin_object();
        let kind = out.key("kind");
        match self.0 {
            Notice::FrameSkipped(e) => {
                kind.str("frameSkipped");
                out.key("error").put(&DecodeErrorJson(e));
            }
            Notice::UnknownEvent { event, data } => {
                kind.str("unknownEvent");
                out.key("event").str(event);
                out.key("data").str(data);
            }
            Notice::Problem { endpoint, problem } => {
                kind.str("problem");
                out.key("endpoint").str(endpoint.as_str());
                out.key("problem").put(&problem.explain(None));
            }
            Notice::RequestTimedOut { id, endpoint } => {
                kind.str("requestTimedOut");
                out.key("id").u64(id.0);
                out.key("endpoint").str(endpoint.as_str());
            }
            Notice::ReconnectStormBraked { until_ms } => {
                kind.str("reconnectStormBraked");
                out.key("untilMs").u64(*until_ms);
            }
        }
        out.end_object();
    }
}

struct ResultJson<'a>(&'a CallResult);

impl WriteJson for ResultJson<'_> {
    fn write_json(&self, out: &mut JsonOut) {
        out.begin_object();
        let kind = out.key("kind");
        match self.0 {
            CallResult::Broadcast(b) => {
                kind.str("broadcast");
                out.key("broadcast").put(b);
            }
            CallResult::Listeners(l) => {
                kind.str("listeners");
                out.key("listeners").list(l);
            }
            CallResult::Fans(f) => {
                kind.str("fans");
                out.key("fans").put(f);
            }
            CallResult::ChatSent => {
                kind.str("chatSent");
            }
            CallResult::Failed(failure) => {
                kind.str("failed");
                let (code, detail): (&str, Option<String>) = match failure {
                    CallFailure::Problem(p) => {
                        out.key("problem").put(&p.explain(None));
                        ("problem", None)
                    }
                    CallFailure::QuotaBlocked { until_ms } => {
                        out.key("untilMs").u64(*until_ms);
                        ("quota_blocked", None)
                    }
                    CallFailure::InvalidBody(e) => ("invalid_body", Some(e.to_string())),
                    CallFailure::Pager(e) => ("pager", Some(e.to_string())),
                    CallFailure::Transport => ("transport", None),
                    CallFailure::Cancelled => ("cancelled", None),
                };
                out.key("failure").str(code);
                if let Some(detail) = detail {
                    out.key("message").str(&detail);
                }
            }
        }
        out.end_object();
    }
}

impl WriteJson for ActionJson<'_> {
    fn write_json(&self, out: &mut JsonOut) {
        out.begin_object();
        let kind = out.key("type");
        match self.0 {
            Action::Send {
                id,
                request,
                timeout_ms,
            } => {
                kind.str("send");
                out.key("id").u64(id.0);
                out.key("request").put(&RequestJson(request));
                out.key("timeoutMs").u64(*timeout_ms);
            }
            Action::OpenStream { id, request } => {
                kind.str("openStream");
                out.key("id").u64(id.0);
                out.key("request").put(&RequestJson(request));
            }
            Action::CloseStream { id } => {
                kind.str("closeStream");
                out.key("id").u64(id.0);
            }
            Action::Event { id, event } => {
                kind.str("event");
                out.key("event").str(event.name());
                out.key("id").put(id);
                out.key("data").put(event);
            }
            Action::Notice(notice) => {
                kind.str("notice");
                out.key("notice").put(&NoticeJson(notice));
            }
            Action::Done { call, result } => {
                kind.str("done");
                out.key("call").u64(call.0);
                out.key("result").put(&ResultJson(result));
            }
            Action::PersistTokens(tokens) => {
                kind.str("persistTokens");
                out.key("generation").u64(tokens.generation());
                out.key("tokens").str(tokens.to_json().as_str());
            }
            Action::Timer { tag } => {
                kind.str("timer");
                out.key("tag").str(tag.as_str());
            }
            Action::NeedsAuthorization => {
                kind.str("needsAuthorization");
            }
            Action::Wait { until_ms } => {
                kind.str("wait");
                out.key("untilMs").put(until_ms);
            }
            Action::Stopped(stop) => {
                kind.str("stopped");
                out.key("stop").put(&StopJson(stop));
            }
        }
        out.end_object();
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
        JsonOut::text_of(self)
    }
}

impl WriteJson for TallyJson<'_> {
    fn write_json(&self, out: &mut JsonOut) {
        let tally = self.0;
        let people: Vec<_> = tally.people().collect();
        out.begin_object();
        out.key("hearts").u64(tally.total_hearts());
        out.key("donated").u64(tally.total_donated());
        out.key("attendance").u64(tally.attendance() as u64);
        out.key("people").begin_object();
        for (id, totals) in crate::tally::ordered(&people, |(id, _)| (0, id)) {
            out.key(id).put(totals);
        }
        out.end_object();
        out.end_object();
    }
}

#[cfg(test)]
mod tests;
