//! The view of a bot's action (`onair_bot_poll`): borrowed fields, built
//! from the core's `Action` with the text it points into.

use std::ffi::c_char;

use onair_core::bot::{CallFailure, CallResult, Notice};
use onair_core::json::TallyJson;
use onair_core::kit::tally::Tally;
use onair_core::kit::{Allowed, ArrivalKind, Milestone, Role};
use onair_core::Action;
use zeroize::Zeroizing;

use crate::view::{onair_event, onair_header, onair_str};

/// What an `onair_action` asks for.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_action_kind {
    /// Send `request`; report with `onair_bot_on_response` (or
    /// `onair_bot_on_transport_error`) and `request_id`. The bot keeps
    /// `timeout_ms` itself: give your client no shorter timeout.
    ONAIR_ACTION_SEND = 0,
    /// Open `request` as a stream (no whole-body timeout); report with
    /// `onair_bot_on_stream_open`, `_on_stream_bytes`, `_on_stream_closed`.
    ONAIR_ACTION_OPEN_STREAM = 1,
    /// Close the stream `request_id`, or drop that request: the bot is done
    /// with it. `code` says why: `ended`, `silent` (the heartbeat
    /// watchdog), `timed_out` (no answer within its timeout: the bot counted
    /// it as failed), `stopping`. A late report for it is ignored.
    ONAIR_ACTION_CLOSE_STREAM = 2,
    /// A stream event: `event`.
    ONAIR_ACTION_EVENT = 3,
    /// Worth a log line, needs no action: `notice`, `code`, `message`.
    ONAIR_ACTION_NOTICE = 4,
    /// The answer to app call `call_id`: `done`, and on failure `failure`,
    /// `code`, `message` (the result's data is in the JSON form).
    ONAIR_ACTION_DONE = 5,
    /// Save `tokens_json` (a secret); without it a restart needs new consent.
    ONAIR_ACTION_PERSIST_TOKENS = 6,
    /// Get a consent code from the DJ and call `onair_bot_authorize`.
    ONAIR_ACTION_NEEDS_AUTHORIZATION = 7,
    /// Sleep until `until_ms` (when `has_until_ms`), or until a report
    /// arrives; then poll again.
    ONAIR_ACTION_WAIT = 8,
    /// The bot has stopped (sticky): `code`, `message`,
    /// `resumes_with_new_consent`.
    ONAIR_ACTION_STOPPED = 9,
    /// An action newer than this header: read its JSON form.
    ONAIR_ACTION_OTHER = 10,
    /// App timer `tag` fired (`onair_bot_schedule`, `onair_bot_every`,
    /// `onair_bot_set_timer`).
    ONAIR_ACTION_TIMER = 11,
    /// A configured command was run by someone allowed to (the kit): `name`,
    /// `args`, `rest`, `user_id`, `nickname`, `role`, and its chat as
    /// `event`. Answer with `onair_bot_say`.
    ONAIR_ACTION_COMMAND = 13,
    /// Someone to greet (the kit's greetings): `arrival` (first, or back
    /// after `away_ms`), `user_id`, `nickname` (the latest), `is_manager`,
    /// `live_id` when `has_live_id`, and their join or chat as `event`.
    ONAIR_ACTION_ARRIVAL = 14,
    /// A configured milestone was crossed: `milestone`, `reached`, `total`,
    /// for donations the donor (`user_id`, `nickname`), and the like or
    /// donation that crossed it as `event`.
    ONAIR_ACTION_MILESTONE = 15,
    /// The broadcast ended (the kit's tally): `live_id` when `has_live_id`,
    /// its final tally as `tally_json`, and its `end` frame as `event`
    /// (`ONAIR_EVENT_NONE` when the end was inferred). The next broadcast's
    /// memory starts empty.
    ONAIR_ACTION_BROADCAST_ENDED = 16,
    /// The kit's memory changed: save `state_json` before acting on what
    /// follows, and give it back to `onair_bot_new` after a restart (so
    /// nobody is greeted twice and no total is lost).
    ONAIR_ACTION_PERSIST_STATE = 17,
}

/// How an app call ended (`ONAIR_ACTION_DONE`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_done_kind {
    /// Not a DONE action.
    ONAIR_DONE_NONE = 0,
    /// `onair_bot_fetch_broadcast` answered (the broadcast: JSON form).
    ONAIR_DONE_BROADCAST = 1,
    /// `onair_bot_list_listeners` answered (the list: JSON form).
    ONAIR_DONE_LISTENERS = 2,
    /// `onair_bot_fetch_fans` answered (the ranking: JSON form).
    ONAIR_DONE_FANS = 3,
    /// `onair_bot_send_chat`: the service took the message.
    ONAIR_DONE_CHAT_SENT = 4,
    /// The call failed for good: see `failure`.
    ONAIR_DONE_FAILED = 5,
    /// A result newer than this header: read the JSON form.
    ONAIR_DONE_OTHER = 6,
}

/// Why an app call failed (`ONAIR_DONE_FAILED`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_failure_kind {
    /// Not a failure.
    ONAIR_FAILURE_NONE = 0,
    /// The service answered with a problem; `code` is its kind.
    ONAIR_FAILURE_PROBLEM = 1,
    /// A daily quota blocks the call until `until_ms`.
    ONAIR_FAILURE_QUOTA_BLOCKED = 2,
    /// 2xx, but the body did not decode.
    ONAIR_FAILURE_INVALID_BODY = 3,
    /// The listener pager gave up.
    ONAIR_FAILURE_PAGER = 4,
    /// No response, and the call may not be repeated.
    ONAIR_FAILURE_TRANSPORT = 5,
    /// The bot stopped before the call finished.
    ONAIR_FAILURE_CANCELLED = 6,
    /// A failure newer than this header.
    ONAIR_FAILURE_OTHER = 7,
    /// Refused when made: the call queue was full (`message` says its limit).
    ONAIR_FAILURE_QUEUE_FULL = 8,
    /// Refused when made: the bot had stopped for good (`code` is the stop's).
    ONAIR_FAILURE_STOPPED = 9,
}

/// What a notice says (`ONAIR_ACTION_NOTICE`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_notice_kind {
    /// Not a notice.
    ONAIR_NOTICE_NONE = 0,
    /// A frame was skipped; `code` is the decode error's code.
    ONAIR_NOTICE_FRAME_SKIPPED = 1,
    /// An event name this version does not know; `code` is its name.
    ONAIR_NOTICE_UNKNOWN_EVENT = 2,
    /// An error response the bot is handling itself; `code` is its kind.
    ONAIR_NOTICE_PROBLEM = 3,
    /// Reconnects keep ending at once: the next waits until `until_ms`.
    ONAIR_NOTICE_RECONNECT_STORM_BRAKED = 5,
    /// A notice newer than this header.
    ONAIR_NOTICE_OTHER = 6,
    /// App call `call_id` was made while the bot waits for the DJ's consent:
    /// it is held, and goes out once `onair_bot_authorize` brings a pair.
    ONAIR_NOTICE_CALL_HELD = 7,
    /// Someone ran a configured command they may not run: `name`, `user_id`,
    /// `nickname`, `role`, and who may (`needed`). Answer if you like.
    ONAIR_NOTICE_COMMAND_REFUSED = 8,
    /// The service could not be reached: `name` is the endpoint of the
    /// latest failure, `code` how it failed (`not_sent`, `no_response`,
    /// `timed_out`), `count` the failed requests since `since_ms`. The first
    /// failure at once, then at most one every 30 s while failures go on.
    ONAIR_NOTICE_UNREACHABLE = 9,
    /// The service answered again after `ONAIR_NOTICE_UNREACHABLE`: `count`
    /// failed requests since `since_ms`.
    ONAIR_NOTICE_REACHABLE = 10,
    /// `count` app calls of endpoint `name` were given up on, for reason
    /// `code` (`cancelled`, `quota_blocked`, `refused`, `queue_full`,
    /// `transport`, `invalid_answer`); each also has its DONE. At most one such notice
    /// every 5 s per endpoint and reason.
    ONAIR_NOTICE_GAVE_UP = 11,
    /// A daily quota blocks permission `code` (NULL: every call of the app)
    /// until `until_ms`. Once per block.
    ONAIR_NOTICE_DAILY_QUOTA_REACHED = 12,
    /// `count` replies (one person each) of kind `name` (`welcome`,
    /// `welcome_back`, `thanks`, `milestone`, `command`) were dropped, never
    /// sent, for reason `code`: `stale` (not out within the kind's
    /// freshness: the chat limit held them back), `ended` (queued at the
    /// broadcast's end), `refused`, `given_up`, `queue_full`, `stopped`. One
    /// notice per kind and reason for what was dropped since the last poll;
    /// a warning. Counted in `onair_bot_reply_counters`.
    ONAIR_NOTICE_REPLIES_DROPPED = 13,
}

/// Who may run a command (`ONAIR_NOTICE_COMMAND_REFUSED`'s `needed`; the
/// kit configuration's `allowed`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_allowed {
    /// Anyone in the chat.
    ONAIR_ALLOWED_ANYONE = 0,
    /// Managers and the DJ.
    ONAIR_ALLOWED_MANAGERS = 1,
    /// The DJ only.
    ONAIR_ALLOWED_DJ = 2,
}

/// What the poster of a command is, as far as the bot can tell.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_role {
    /// A listener (or a manager whose join the bot did not see).
    ONAIR_ROLE_LISTENER = 0,
    /// A listener whose latest join said `isManager`.
    ONAIR_ROLE_MANAGER = 1,
    /// The DJ.
    ONAIR_ROLE_DJ = 2,
}

/// Whether an arrival is a first or a return (`ONAIR_ACTION_ARRIVAL`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_arrival_kind {
    /// Not an arrival.
    ONAIR_ARRIVAL_NONE = 0,
    /// The person's first sign in this broadcast.
    ONAIR_ARRIVAL_FIRST = 1,
    /// The person is back after at least the configured absence (`away_ms`).
    ONAIR_ARRIVAL_BACK = 2,
}

/// Which milestone was crossed (`ONAIR_ACTION_MILESTONE`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_milestone_kind {
    /// Not a milestone.
    ONAIR_MILESTONE_NONE = 0,
    /// The broadcast's hearts reached a multiple of the step.
    ONAIR_MILESTONE_HEARTS = 1,
    /// One person's donations reached a multiple of the step.
    ONAIR_MILESTONE_DONATED = 2,
}

/// A request to send, ready for libcurl: `method`, `url` and each of
/// `header_lines` ("Name: value") are NUL-terminated. Part of the action:
/// valid until the next `onair_bot_poll` or `onair_bot_free`. A SEND's and
/// an OPEN_STREAM's carry the Authorization header (the access token), a
/// SEND's form may carry the client secret, a consent code or the refresh
/// token: never log it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_request {
    /// The endpoint's short name (`token`, `live`, `chat`, `events`, …).
    pub endpoint: onair_str,
    /// "GET", "POST" (NUL-terminated).
    pub method: onair_str,
    /// The full URL, query included (NUL-terminated).
    pub url: onair_str,
    /// `headers_len` headers as (name, value), each NUL-terminated too.
    pub headers: *const onair_header,
    /// How many headers.
    pub headers_len: usize,
    /// The same headers as `headers_len` "Name: value" lines.
    pub header_lines: *const *const c_char,
    /// The body (NULL when empty; not NUL-terminated).
    pub body: *const u8,
    /// The body's length.
    pub body_len: usize,
}

impl onair_request {
    const NONE: onair_request = onair_request {
        endpoint: onair_str::NULL,
        method: onair_str::NULL,
        url: onair_str::NULL,
        headers: std::ptr::null(),
        headers_len: 0,
        header_lines: std::ptr::null(),
        body: std::ptr::null(),
        body_len: 0,
    };
}

/// The next thing to do, as borrowed fields (`onair_bot_poll`); fields the
/// kind does not use are zero / NULL. Valid until the next `onair_bot_poll`
/// or `onair_bot_free` (the bot's other calls leave it).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_action {
    /// What to do.
    pub kind: onair_action_kind,
    /// SEND, OPEN_STREAM, CLOSE_STREAM: the request.
    pub request_id: u64,
    /// SEND, OPEN_STREAM: what to send.
    pub request: onair_request,
    /// SEND: the bot gives up after this long.
    pub timeout_ms: u64,
    /// EVENT: the event; COMMAND, ARRIVAL, MILESTONE, BROADCAST_ENDED: the
    /// event that caused it (`ONAIR_EVENT_NONE` for an inferred end).
    pub event: onair_event,
    /// DONE, NOTICE call held: the app call (as returned by the command).
    pub call_id: u64,
    /// DONE: how it ended.
    pub done: onair_done_kind,
    /// DONE with ONAIR_DONE_FAILED: why.
    pub failure: onair_failure_kind,
    /// NOTICE: what it says.
    pub notice: onair_notice_kind,
    /// Whether `until_ms` is set.
    pub has_until_ms: bool,
    /// WAIT: poll again then at the latest (always later than the `now_ms`
    /// polled); FAILURE_QUOTA_BLOCKED, NOTICE storm: until when.
    pub until_ms: u64,
    /// STOPPED: the stop's code (`reauthorize`, `reconsent`,
    /// `join_forbidden`, `invalid_client`, `fix_request`, `unexpected`,
    /// `shut_down`); DONE/NOTICE with a problem: its kind; FAILURE_STOPPED:
    /// the stop's code; FRAME_SKIPPED: the decode error's code;
    /// UNKNOWN_EVENT: the event name; CLOSE_STREAM: why (`ended`, `silent`,
    /// `timed_out`, `stopping`); NOTICE gave up, replies dropped: the reason.
    pub code: onair_str,
    /// STOPPED, NOTICE, DONE failed: a line for logs (NUL-terminated).
    pub message: onair_str,
    /// STOPPED: a new consent code (`onair_bot_authorize`) resumes the bot.
    pub resumes_with_new_consent: bool,
    /// PERSIST_TOKENS: the token file to save (NUL-terminated; a secret).
    /// Give it back to `onair_bot_new` after a restart.
    pub tokens_json: onair_str,
    /// TIMER: the timer's tag.
    pub tag: onair_str,
    /// COMMAND, NOTICE command refused: the command's name as configured
    /// (not as typed, not an alias); NOTICE unreachable, gave up: the
    /// endpoint; NOTICE replies dropped: the replies' kind.
    pub name: onair_str,
    /// COMMAND: the text after the name, trimmed.
    pub rest: onair_str,
    /// COMMAND: the arguments (split on white space, quotes keep words
    /// together): `args_len` strings.
    pub args: *const onair_str,
    /// COMMAND: how many arguments.
    pub args_len: usize,
    /// COMMAND, NOTICE command refused, ARRIVAL, MILESTONE donated: the
    /// person's id.
    pub user_id: onair_str,
    /// The same person's nickname (the latest seen), or NULL.
    pub nickname: onair_str,
    /// COMMAND, NOTICE command refused: what the person is.
    pub role: onair_role,
    /// NOTICE command refused: who may run the command.
    pub needed: onair_allowed,
    /// ARRIVAL: first or back.
    pub arrival: onair_arrival_kind,
    /// ARRIVAL back: how long they were not seen (ms).
    pub away_ms: u64,
    /// ARRIVAL: they are a manager (from their join; false when unknown).
    pub is_manager: bool,
    /// MILESTONE: which.
    pub milestone: onair_milestone_kind,
    /// MILESTONE: the multiple reached.
    pub reached: u64,
    /// MILESTONE: the broadcast's hearts, or the donor's total, now.
    pub total: u64,
    /// ARRIVAL, BROADCAST_ENDED: whether `live_id` is known.
    pub has_live_id: bool,
    /// ARRIVAL, BROADCAST_ENDED: the broadcast's `liveId`.
    pub live_id: u64,
    /// BROADCAST_ENDED: the final tally (NUL-terminated JSON):
    /// `{"liveId":…,"hearts":…,"donated":…,"attendance":…,"people":{…}}`,
    /// the form of `onair_bot_tally_json`.
    pub tally_json: onair_str,
    /// PERSIST_STATE: the kit's state to save (NUL-terminated JSON, no
    /// secret); give it back to `onair_bot_new`.
    pub state_json: onair_str,
    /// NOTICE: whether to log `message` as a warning (something was lost,
    /// refused or cannot be reached) rather than as information.
    pub is_warning: bool,
    /// NOTICE unreachable, reachable: failed requests; NOTICE gave up: calls;
    /// NOTICE replies dropped: replies (people).
    pub count: u64,
    /// NOTICE unreachable, reachable: when the first failure happened (unix ms).
    pub since_ms: u64,
}

impl onair_action {
    const NONE: onair_action = onair_action {
        kind: onair_action_kind::ONAIR_ACTION_OTHER,
        request_id: 0,
        request: onair_request::NONE,
        timeout_ms: 0,
        event: onair_event::NONE,
        call_id: 0,
        done: onair_done_kind::ONAIR_DONE_NONE,
        failure: onair_failure_kind::ONAIR_FAILURE_NONE,
        notice: onair_notice_kind::ONAIR_NOTICE_NONE,
        has_until_ms: false,
        until_ms: 0,
        code: onair_str::NULL,
        message: onair_str::NULL,
        resumes_with_new_consent: false,
        tokens_json: onair_str::NULL,
        tag: onair_str::NULL,
        name: onair_str::NULL,
        rest: onair_str::NULL,
        args: std::ptr::null(),
        args_len: 0,
        user_id: onair_str::NULL,
        nickname: onair_str::NULL,
        role: onair_role::ONAIR_ROLE_LISTENER,
        needed: onair_allowed::ONAIR_ALLOWED_ANYONE,
        arrival: onair_arrival_kind::ONAIR_ARRIVAL_NONE,
        away_ms: 0,
        is_manager: false,
        milestone: onair_milestone_kind::ONAIR_MILESTONE_NONE,
        reached: 0,
        total: 0,
        has_live_id: false,
        live_id: 0,
        tally_json: onair_str::NULL,
        state_json: onair_str::NULL,
        is_warning: false,
        count: 0,
        since_ms: 0,
    };
}

/// A NUL-terminated copy, allocated once at its final size (so text that
/// may be secret is never left behind in a grown-out buffer).
pub(crate) fn nul_terminated(text: impl AsRef<[u8]>) -> Vec<u8> {
    let bytes = text.as_ref();
    let mut v = Vec::with_capacity(bytes.len() + 1);
    v.extend(bytes.iter().copied().filter(|&b| b != 0));
    v.push(0);
    v
}

/// Lends a NUL-terminated buffer (from [`nul_terminated`]) through a C
/// pointer and length out-parameters: the text, its length without the NUL.
pub(crate) fn str_of_nul(buf: &[u8]) -> onair_str {
    onair_str {
        ptr: buf.as_ptr().cast(),
        len: buf.len().saturating_sub(1),
    }
}

/// The action last polled and the text its view points into.
#[derive(Debug)]
pub(crate) struct Current {
    /// The action (the JSON form and the kit's getters read it).
    pub(crate) action: Action,
    /// method, URL, header names, values and lines, each NUL-terminated
    /// (may hold an Authorization header: wiped on drop).
    buf: Zeroizing<Vec<u8>>,
    headers: Vec<onair_header>,
    lines: Vec<*const c_char>,
    /// A human line for logs, NUL-terminated.
    message: Vec<u8>,
    /// The token file of a PersistTokens, NUL-terminated.
    tokens: Zeroizing<Vec<u8>>,
    /// The JSON form, NUL-terminated, rendered on demand.
    pub(crate) json: Zeroizing<Vec<u8>>,
    /// A command's arguments as views.
    args: Vec<onair_str>,
    /// A broadcast's final tally, or the kit state to save, NUL-terminated.
    kit: Vec<u8>,
}

impl Current {
    pub(crate) fn new(action: Action) -> Current {
        let mut current = Current {
            action,
            buf: Zeroizing::new(Vec::new()),
            headers: Vec::new(),
            lines: Vec::new(),
            message: Vec::new(),
            tokens: Zeroizing::new(Vec::new()),
            json: Zeroizing::new(Vec::new()),
            args: Vec::new(),
            kit: Vec::new(),
        };
        let request = match &current.action {
            Action::Send { request, .. } | Action::OpenStream { request, .. } => Some(request),
            _ => None,
        };
        if let Some(r) = request {
            // One buffer, sized first so it never moves: method, url, then
            // name, value and "name: value" per header, each NUL-terminated.
            let size = r.method.as_str().len()
                + r.url.len()
                + 2
                + r.headers
                    .iter()
                    .map(|(n, v)| 2 * (n.len() + v.as_str().len()) + 5)
                    .sum::<usize>();
            let mut buf = Vec::with_capacity(size);
            let mut spans = Vec::with_capacity(2 + 3 * r.headers.len());
            let mut push = |buf: &mut Vec<u8>, parts: &[&str]| {
                let start = buf.len();
                for p in parts {
                    buf.extend_from_slice(p.as_bytes());
                }
                spans.push((start, buf.len() - start));
                buf.push(0);
            };
            push(&mut buf, &[r.method.as_str()]);
            push(&mut buf, &[&r.url]);
            for (name, value) in &r.headers {
                push(&mut buf, &[name]);
                push(&mut buf, &[value.as_str()]);
                push(&mut buf, &[name, ": ", value.as_str()]);
            }
            *current.buf = buf;
            let base = current.buf.as_ptr();
            // SAFETY: every span lies inside `buf`, which is not resized again.
            let at = |(start, _): (usize, usize)| unsafe { base.add(start) }.cast::<c_char>();
            for h in spans[2..].chunks(3) {
                current.headers.push(onair_header {
                    name: at(h[0]),
                    name_len: h[0].1,
                    value: at(h[1]),
                    value_len: h[1].1,
                });
                current.lines.push(at(h[2]));
            }
        }
        current
    }

    /// The view of the action.
    pub(crate) fn view(&mut self) -> onair_action {
        use onair_action_kind::*;
        let mut v = onair_action::NONE;
        let mut message: Option<String> = None;
        match &self.action {
            Action::Send {
                id,
                request,
                timeout_ms,
            } => {
                v.kind = ONAIR_ACTION_SEND;
                v.request_id = id.0;
                v.timeout_ms = *timeout_ms;
                v.request = self.request_view(request);
            }
            Action::OpenStream { id, request } => {
                v.kind = ONAIR_ACTION_OPEN_STREAM;
                v.request_id = id.0;
                v.request = self.request_view(request);
            }
            Action::CloseStream { id, reason } => {
                v.kind = ONAIR_ACTION_CLOSE_STREAM;
                v.request_id = id.0;
                v.code = onair_str::of(reason.as_str());
            }
            Action::Event { id, event } => {
                v.kind = ONAIR_ACTION_EVENT;
                v.event = onair_event::view(id.as_ref(), event);
            }
            Action::Notice(notice) => {
                use onair_notice_kind::*;
                v.kind = ONAIR_ACTION_NOTICE;
                match notice {
                    Notice::FrameSkipped(e) => {
                        v.notice = ONAIR_NOTICE_FRAME_SKIPPED;
                        v.code = onair_str::of(e.kind.code());
                    }
                    Notice::UnknownEvent { event, .. } => {
                        v.notice = ONAIR_NOTICE_UNKNOWN_EVENT;
                        v.code = onair_str::of(event);
                    }
                    Notice::Problem { problem, .. } => {
                        v.notice = ONAIR_NOTICE_PROBLEM;
                        v.code = onair_str::of(problem.kind.as_str());
                    }
                    Notice::CallHeld { call } => {
                        v.notice = ONAIR_NOTICE_CALL_HELD;
                        v.call_id = call.0;
                    }
                    Notice::ReconnectStormBraked { until_ms } => {
                        v.notice = ONAIR_NOTICE_RECONNECT_STORM_BRAKED;
                        v.has_until_ms = true;
                        v.until_ms = *until_ms;
                    }
                    Notice::CommandRefused(r) => {
                        v.notice = ONAIR_NOTICE_COMMAND_REFUSED;
                        v.name = onair_str::of(&r.name);
                        v.user_id = onair_str::of(&r.user.id);
                        v.nickname = onair_str::opt(r.user.nickname.as_deref());
                        v.role = role_of(r.role);
                        v.needed = allowed_of(r.needed);
                    }
                    Notice::Unreachable {
                        endpoint,
                        failure,
                        failures,
                        since_ms,
                    } => {
                        v.notice = ONAIR_NOTICE_UNREACHABLE;
                        v.name = onair_str::of(endpoint.as_str());
                        v.code = onair_str::of(failure.as_str());
                        v.count = *failures;
                        v.since_ms = *since_ms;
                    }
                    Notice::Reachable { failures, since_ms } => {
                        v.notice = ONAIR_NOTICE_REACHABLE;
                        v.count = *failures;
                        v.since_ms = *since_ms;
                    }
                    Notice::GaveUp {
                        endpoint,
                        reason,
                        count,
                    } => {
                        v.notice = ONAIR_NOTICE_GAVE_UP;
                        v.name = onair_str::of(endpoint.as_str());
                        v.code = onair_str::of(reason.as_str());
                        v.count = *count;
                    }
                    Notice::DailyQuotaReached { scope, until_ms } => {
                        v.notice = ONAIR_NOTICE_DAILY_QUOTA_REACHED;
                        v.code = onair_str::opt(scope.as_ref().map(|p| p.as_str()));
                        v.has_until_ms = true;
                        v.until_ms = *until_ms;
                    }
                    Notice::RepliesDropped {
                        kind,
                        people,
                        reason,
                    } => {
                        v.notice = ONAIR_NOTICE_REPLIES_DROPPED;
                        v.name = onair_str::of(kind.as_str());
                        v.code = onair_str::of(reason.as_str());
                        v.count = *people;
                    }
                    _ => v.notice = ONAIR_NOTICE_OTHER,
                }
                v.is_warning = notice.is_warning();
                // Every notice's log line is its Display text.
                message = Some(notice.to_string());
            }
            Action::Done { call, result } => {
                use onair_done_kind::*;
                use onair_failure_kind::*;
                v.kind = ONAIR_ACTION_DONE;
                v.call_id = call.0;
                v.done = match result {
                    CallResult::Broadcast(_) => ONAIR_DONE_BROADCAST,
                    CallResult::Listeners(_) => ONAIR_DONE_LISTENERS,
                    CallResult::Fans(_) => ONAIR_DONE_FANS,
                    CallResult::ChatSent => ONAIR_DONE_CHAT_SENT,
                    CallResult::Failed(f) => {
                        v.failure = match f {
                            CallFailure::Problem(p) => {
                                v.code = onair_str::of(p.kind.as_str());
                                message = Some(p.to_string());
                                ONAIR_FAILURE_PROBLEM
                            }
                            CallFailure::QuotaBlocked { until_ms } => {
                                v.has_until_ms = true;
                                v.until_ms = *until_ms;
                                ONAIR_FAILURE_QUOTA_BLOCKED
                            }
                            CallFailure::InvalidBody(e) => {
                                message = Some(e.to_string());
                                ONAIR_FAILURE_INVALID_BODY
                            }
                            CallFailure::Pager(e) => {
                                message = Some(e.to_string());
                                ONAIR_FAILURE_PAGER
                            }
                            CallFailure::Transport => ONAIR_FAILURE_TRANSPORT,
                            CallFailure::Cancelled => ONAIR_FAILURE_CANCELLED,
                            CallFailure::QueueFull { limit } => {
                                message =
                                    Some(format!("the call queue is full ({limit} calls waiting)"));
                                ONAIR_FAILURE_QUEUE_FULL
                            }
                            CallFailure::Stopped(stop) => {
                                v.code = onair_str::of(stop.code());
                                message = Some(stop.to_string());
                                ONAIR_FAILURE_STOPPED
                            }
                            _ => ONAIR_FAILURE_OTHER,
                        };
                        ONAIR_DONE_FAILED
                    }
                    _ => ONAIR_DONE_OTHER,
                };
            }
            Action::PersistTokens(tokens) => {
                v.kind = ONAIR_ACTION_PERSIST_TOKENS;
                *self.tokens = nul_terminated(tokens.to_json().as_bytes());
                v.tokens_json = str_of_nul(&self.tokens);
            }
            Action::Timer { tag } => {
                v.kind = ONAIR_ACTION_TIMER;
                v.tag = onair_str::of(tag.as_str());
            }
            Action::NeedsAuthorization => v.kind = ONAIR_ACTION_NEEDS_AUTHORIZATION,
            Action::Wait { until_ms } => {
                v.kind = ONAIR_ACTION_WAIT;
                v.has_until_ms = until_ms.is_some();
                v.until_ms = until_ms.unwrap_or(0);
            }
            Action::Stopped(stop) => {
                v.kind = ONAIR_ACTION_STOPPED;
                v.code = onair_str::of(stop.code());
                v.resumes_with_new_consent = stop.resumes_with_new_consent();
                message = Some(stop.to_string());
            }
            Action::Command(c) => {
                v.kind = ONAIR_ACTION_COMMAND;
                v.name = onair_str::of(&c.name);
                v.rest = onair_str::of(&c.rest);
                self.args = c.args.iter().map(|a| onair_str::of(a)).collect();
                v.args = if self.args.is_empty() {
                    std::ptr::null()
                } else {
                    self.args.as_ptr()
                };
                v.args_len = self.args.len();
                v.user_id = onair_str::of(&c.user.id);
                v.nickname = onair_str::opt(c.user.nickname.as_deref());
                v.role = role_of(c.role);
                v.event = onair_event::chat(c.chat.id.as_ref(), &c.chat.event);
            }
            Action::Arrival(a) => {
                v.kind = ONAIR_ACTION_ARRIVAL;
                (v.arrival, v.away_ms) = match a.kind {
                    ArrivalKind::Back { away_ms } => {
                        (onair_arrival_kind::ONAIR_ARRIVAL_BACK, away_ms)
                    }
                    _ => (onair_arrival_kind::ONAIR_ARRIVAL_FIRST, 0),
                };
                v.user_id = onair_str::of(&a.user.id);
                v.nickname = onair_str::opt(a.user.nickname.as_deref());
                v.is_manager = a.is_manager;
                v.has_live_id = a.live_id.is_some();
                v.live_id = a.live_id.unwrap_or(0);
                v.event = onair_event::view(a.event.id.as_ref(), &a.event.event);
            }
            Action::Milestone(m) => {
                v.kind = ONAIR_ACTION_MILESTONE;
                match m {
                    Milestone::Hearts {
                        reached,
                        total,
                        like,
                    } => {
                        v.milestone = onair_milestone_kind::ONAIR_MILESTONE_HEARTS;
                        (v.reached, v.total) = (*reached, *total);
                        v.event = onair_event::like(like.id.as_ref(), &like.event);
                    }
                    Milestone::Donated {
                        user,
                        reached,
                        total,
                        donation,
                    } => {
                        v.milestone = onair_milestone_kind::ONAIR_MILESTONE_DONATED;
                        (v.reached, v.total) = (*reached, *total);
                        v.user_id = onair_str::of(&user.id);
                        v.nickname = onair_str::opt(user.nickname.as_deref());
                        v.event = onair_event::donation(donation.id.as_ref(), &donation.event);
                    }
                }
            }
            Action::BroadcastEnded(b) => {
                v.kind = ONAIR_ACTION_BROADCAST_ENDED;
                v.has_live_id = b.live_id.is_some();
                v.live_id = b.live_id.unwrap_or(0);
                self.kit = nul_terminated(tally_line(b.live_id, &b.tally));
                v.tally_json = str_of_nul(&self.kit);
                if let Some(end) = &b.end {
                    v.event = onair_event::end(end.id.as_ref(), &end.event);
                }
            }
            Action::PersistState(state) => {
                v.kind = ONAIR_ACTION_PERSIST_STATE;
                self.kit = nul_terminated(state.to_json());
                v.state_json = str_of_nul(&self.kit);
            }
            _ => v.kind = ONAIR_ACTION_OTHER,
        }
        if let Some(m) = message {
            self.message = nul_terminated(m);
            v.message = str_of_nul(&self.message);
        }
        v
    }

    fn request_view(&self, r: &onair_core::HttpRequest) -> onair_request {
        let body = r.body.as_bytes();
        // The first two NUL-terminated spans of `buf` are the method and URL.
        let method_len = r.method.as_str().len();
        let base = self.buf.as_ptr();
        onair_request {
            endpoint: onair_str::of(r.endpoint.as_str()),
            method: onair_str {
                ptr: base.cast(),
                len: method_len,
            },
            url: onair_str {
                // SAFETY: the URL starts right after the method's NUL.
                ptr: unsafe { base.add(method_len + 1) }.cast(),
                len: r.url.len(),
            },
            headers: self.headers.as_ptr(),
            headers_len: self.headers.len(),
            header_lines: self.lines.as_ptr(),
            body: if body.is_empty() {
                std::ptr::null()
            } else {
                body.as_ptr()
            },
            body_len: body.len(),
        }
    }
}

fn role_of(role: Role) -> onair_role {
    match role {
        Role::Manager => onair_role::ONAIR_ROLE_MANAGER,
        Role::Dj => onair_role::ONAIR_ROLE_DJ,
        _ => onair_role::ONAIR_ROLE_LISTENER,
    }
}

fn allowed_of(allowed: Allowed) -> onair_allowed {
    match allowed {
        Allowed::Managers => onair_allowed::ONAIR_ALLOWED_MANAGERS,
        Allowed::Dj => onair_allowed::ONAIR_ALLOWED_DJ,
        _ => onair_allowed::ONAIR_ALLOWED_ANYONE,
    }
}

/// A broadcast's tally with its `liveId` first: `{"liveId":…,` then the
/// core's `TallyJson` fields (`"hearts","donated","attendance","people"`).
pub(crate) fn tally_line(live_id: Option<u64>, tally: &Tally) -> String {
    let totals = TallyJson(tally).to_line();
    let live = live_id.map_or_else(|| "null".to_owned(), |id| id.to_string());
    match totals.strip_prefix('{') {
        Some(fields) => format!("{{\"liveId\":{live},{fields}"),
        None => totals,
    }
}
