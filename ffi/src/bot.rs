//! The `Bot` machine: configuration, the driver loop (`poll` and the
//! `on_*` reports), app commands, tokens.

use std::ffi::c_char;

use onair_core::bot::{CallFailure, CallResult, Notice};
use onair_core::proto::chat::{ChatError, ChatErrorKind};
use onair_core::proto::json::ActionJson;
use onair_core::proto::timers::{Timer, TimerError};
use onair_core::{
    Action, BaseUrl, Bot, BotConfig, ClientCredentials, Event, Misuse, RequestId, Tokens,
};
use zeroize::Zeroizing;

use crate::handle::{free, handles, hold, new_handle, Guarded, Head, Lends};
use crate::onair_result::{self, *};
use crate::view::{headers_in, onair_event, onair_header, onair_str};
use crate::{boundary, boundary_or, bytes_in, out, str_in};

// ---- configuration ---------------------------------------------------------------

/// How a bot is set up (`onair_bot_config_new`); read by `onair_bot_new`,
/// which copies it, so it may be freed right after.
///
/// Threads: one call at a time (`onair_bot_new` reading it counts); a
/// concurrent call gets ONAIR_BUSY and changes nothing.
#[derive(Debug)]
pub struct onair_bot_config(Guarded<BotConfig>);

impl Lends for BotConfig {}

handles! {
    onair_bot_config => BotConfig,
    onair_bot => BotState,
}

/// A configuration with the spec's defaults for the service at `base_url`
/// (absolute http(s), e.g. `https://api.example` or
/// `http://127.0.0.1:8080`) and the app's client id and secret. Free with
/// `onair_bot_config_free`.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 →
/// ONAIR_INVALID_UTF8; bad URL → ONAIR_INVALID_BASE_URL; a client id that
/// is not a UUID or an empty secret → ONAIR_INVALID_CREDENTIALS.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_new(
    base_url: *const c_char,
    base_url_len: usize,
    client_id: *const c_char,
    client_id_len: usize,
    client_secret: *const c_char,
    client_secret_len: usize,
    out_config: *mut *mut onair_bot_config,
) -> onair_result {
    boundary(|| {
        let slot = out(out_config)?;
        if base_url.is_null() || client_id.is_null() || client_secret.is_null() {
            return Err(ONAIR_NULL_PARAMETER);
        }
        // SAFETY: (pointer, length) pairs from the caller.
        let (url, id, secret) = unsafe {
            (
                str_in(base_url, base_url_len)?,
                str_in(client_id, client_id_len)?,
                str_in(client_secret, client_secret_len)?,
            )
        };
        let base = BaseUrl::new(url).map_err(|_| ONAIR_INVALID_BASE_URL)?;
        let credentials =
            ClientCredentials::new(id, secret).map_err(|_| ONAIR_INVALID_CREDENTIALS)?;
        *slot = new_handle::<onair_bot_config>(BotConfig::new(base, credentials));
        Ok(())
    })
}

/// Frees a configuration. NULL is fine. Never while another thread is in a
/// call on it (a free then does nothing: see `onair_bot_free`).
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_free(config: *mut onair_bot_config) {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary_or((), || unsafe { free(config) })
}

/// Whether to open the event stream at all (default true; a bot that only
/// posts chat may turn it off).
///
/// Errors: NULL `config` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_set_events(
    config: *mut onair_bot_config,
    events: bool,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_config_new.
        unsafe { hold(config) }?.events = events;
        Ok(())
    })
}

/// How long a request may take before the bot treats it as failed
/// (default 30 000 ms).
///
/// Errors: NULL `config` → ONAIR_NULL_PARAMETER; 0 → ONAIR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_set_request_timeout_ms(
    config: *mut onair_bot_config,
    timeout_ms: u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_config_new.
        let mut held = unsafe { hold(config) }?;
        let c = &mut *held;
        if timeout_ms == 0 {
            return Err(ONAIR_INVALID_ARGUMENT);
        }
        c.request_timeout_ms = timeout_ms;
        Ok(())
    })
}

/// How many times one call is tried in all when the server says retry
/// (default 3).
///
/// Errors: NULL `config` → ONAIR_NULL_PARAMETER; 0 → ONAIR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_set_max_attempts(
    config: *mut onair_bot_config,
    attempts: u32,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_config_new.
        let mut held = unsafe { hold(config) }?;
        let c = &mut *held;
        if attempts == 0 {
            return Err(ONAIR_INVALID_ARGUMENT);
        }
        c.max_attempts = attempts;
        Ok(())
    })
}

/// How many app calls may wait in the queue (default 100).
///
/// Errors: NULL `config` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_set_max_queued_calls(
    config: *mut onair_bot_config,
    max_calls: usize,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_config_new.
        unsafe { hold(config) }?.max_queued_calls = max_calls;
        Ok(())
    })
}

/// The event stream's heartbeat watchdog: no bytes for this long means the
/// connection is dead (default 45 000 ms, three missed heartbeats).
///
/// Errors: NULL `config` → ONAIR_NULL_PARAMETER; 0 → ONAIR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_set_watchdog_ms(
    config: *mut onair_bot_config,
    watchdog_ms: u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_config_new.
        let mut held = unsafe { hold(config) }?;
        let c = &mut *held;
        if watchdog_ms == 0 {
            return Err(ONAIR_INVALID_ARGUMENT);
        }
        c.stream.watchdog_ms = watchdog_ms;
        Ok(())
    })
}

/// How long a stream open may wait for its response (default 30 000 ms).
///
/// Errors: NULL `config` → ONAIR_NULL_PARAMETER; 0 → ONAIR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_set_connect_timeout_ms(
    config: *mut onair_bot_config,
    timeout_ms: u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_config_new.
        let mut held = unsafe { hold(config) }?;
        let c = &mut *held;
        if timeout_ms == 0 {
            return Err(ONAIR_INVALID_ARGUMENT);
        }
        c.stream.connect_timeout_ms = timeout_ms;
        Ok(())
    })
}

/// Refresh the access token this long before it expires (default
/// 600 000 ms; capped by the core at half the token's lifetime).
///
/// Errors: NULL `config` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_set_refresh_margin_ms(
    config: *mut onair_bot_config,
    margin_ms: u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_config_new.
        unsafe { hold(config) }?.refresh.margin_ms = margin_ms;
        Ok(())
    })
}

// ---- the bot ---------------------------------------------------------------------

/// The bot machine (`onair_bot_new`).
///
/// Threads: a bot may be used by one thread at a time (move it between
/// threads freely). A second thread's call while one is in flight returns
/// ONAIR_BUSY (`_pending_calls`: 0) and changes nothing. The text of
/// `_last_error`, `_tokens_json` and `_status_json` is valid until the next
/// call on the bot by any thread that is not refused with ONAIR_BUSY; the
/// action of `onair_bot_poll` (with its event and `_action_json` text)
/// until the next poll. A caller sharing a bot between threads holds its
/// own lock from the call until it has read (or copied) what was lent.
/// Kit functions given an event of this bot hold the bot's flag for their
/// call (ONAIR_BUSY while another thread is in a call on the bot).
/// `onair_bot_free` must not race any other call on the bot.
#[derive(Debug)]
pub struct onair_bot(Guarded<BotState>);

/// The state behind an `onair_bot`.
#[derive(Debug)]
pub(crate) struct BotState {
    bot: Bot,
    current: Option<Current>,
    /// The token file of `onair_bot_tokens_json`, NUL-terminated.
    tokens: Zeroizing<Vec<u8>>,
    /// The last error's detail, NUL-terminated.
    last_error: Vec<u8>,
    /// The status JSON of `onair_bot_status_json`, NUL-terminated.
    status: Vec<u8>,
}

/// The action last polled and the text its view points into.
#[derive(Debug)]
struct Current {
    action: Action,
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
    json: Zeroizing<Vec<u8>>,
}

impl Lends for BotState {
    fn lent(&self) -> Option<&Event> {
        match &self.current.as_ref()?.action {
            Action::Event { event, .. } => Some(event),
            _ => None,
        }
    }
}

impl BotState {
    fn fail(&mut self, code: onair_result, detail: impl std::fmt::Display) -> onair_result {
        self.last_error = format!("{detail}").into_bytes();
        self.last_error.retain(|&b| b != 0);
        self.last_error.push(0);
        code
    }

    fn misuse(&mut self, e: Misuse) -> onair_result {
        let code = match e {
            Misuse::UnknownRequest(_) => ONAIR_UNKNOWN_REQUEST,
            Misuse::NotAStream(_) => ONAIR_NOT_A_STREAM,
            Misuse::StreamNotStarted(_) => ONAIR_STREAM_NOT_STARTED,
            _ => ONAIR_MISUSE,
        };
        self.fail(code, e)
    }

    fn chat_error(&mut self, e: ChatError) -> onair_result {
        let code = match e.kind {
            ChatErrorKind::Empty => ONAIR_CHAT_EMPTY,
            _ => ONAIR_CHAT_TOO_LONG,
        };
        self.fail(code, e)
    }

    fn timer(&mut self, r: Result<(), TimerError>) -> Result<(), onair_result> {
        r.map_err(|e| self.fail(crate::kit::timer_error(e), e))
    }

    fn report(&mut self, r: Result<(), Misuse>) -> Result<(), onair_result> {
        r.map_err(|e| self.misuse(e))
    }
}

/// A new bot. `saved_tokens` is the token file a `PERSIST_TOKENS` action
/// (or `onair_bot_tokens_json`) gave earlier, or NULL to start without
/// tokens (the first poll then asks for authorization). `seed` fixes every
/// jitter: seed from real randomness in production. `config` is copied.
/// Free with `onair_bot_free`.
///
/// Errors: NULL `config` or `out_bot` → ONAIR_NULL_PARAMETER; a token file
/// that does not load → ONAIR_INVALID_TOKENS.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_new(
    config: *const onair_bot_config,
    saved_tokens: *const c_char,
    saved_tokens_len: usize,
    seed: u64,
    out_bot: *mut *mut onair_bot,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_config_new.
        let config = unsafe { hold(config) }?;
        let slot = out(out_bot)?;
        let saved = if saved_tokens.is_null() {
            None
        } else {
            // SAFETY: (pointer, length) from the caller.
            let json = unsafe { bytes_in(saved_tokens.cast(), saved_tokens_len) }?;
            Some(Tokens::from_json(json).map_err(|_| ONAIR_INVALID_TOKENS)?)
        };
        *slot = new_handle::<onair_bot>(BotState {
            bot: Bot::new((*config).clone(), saved, seed),
            current: None,
            tokens: Zeroizing::new(Vec::new()),
            last_error: vec![0],
            status: Vec::new(),
        });
        Ok(())
    })
}

/// Frees a bot (nothing is sent: call `onair_bot_shutdown` and drain the
/// loop first to revoke). NULL is fine.
///
/// Threads: never call it while another thread may be in a call on the bot
/// or about to start one (the memory goes away under that call: C cannot
/// be protected from it). Should it happen while a call is in flight, the
/// bot's flag is set and nothing is freed (the bot stays, leaked).
#[no_mangle]
pub unsafe extern "C" fn onair_bot_free(bot: *mut onair_bot) {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary_or((), || unsafe { free(bot) })
}

/// The detail of the last error this bot returned (a line for logs; empty
/// before any), borrowed and NUL-terminated, valid until the next call on
/// the bot.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_last_error(
    bot: *const onair_bot,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let b = unsafe { hold(bot) }?;
        let (p, l) = (out(out_ptr)?, out(out_len)?);
        *p = b.last_error.as_ptr().cast();
        *l = b.last_error.len().saturating_sub(1);
        Ok(())
    })
}

// ---- actions ---------------------------------------------------------------------

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
    /// Close the stream `request_id`.
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
    /// The bot gave up on request `request_id` (no report within its
    /// timeout; `code` is its endpoint): drop it. A late report is ignored.
    ONAIR_ACTION_TIMED_OUT = 12,
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
}

/// A request to send, ready for libcurl: `method`, `url` and each of
/// `header_lines` ("Name: value") are NUL-terminated. Borrowed from the
/// bot until the next call on it. It may carry an Authorization header and
/// a form with secrets: do not log it.
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
/// kind does not use are zero / NULL. Valid until the next call on the bot.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_action {
    /// What to do.
    pub kind: onair_action_kind,
    /// SEND, OPEN_STREAM, CLOSE_STREAM, TIMED_OUT: the request.
    pub request_id: u64,
    /// SEND, OPEN_STREAM: what to send.
    pub request: onair_request,
    /// SEND: the bot gives up after this long.
    pub timeout_ms: u64,
    /// EVENT: the event.
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
    /// UNKNOWN_EVENT: the event name; TIMED_OUT: the request's endpoint.
    pub code: onair_str,
    /// STOPPED, NOTICE, DONE failed, TIMED_OUT: a line for logs (NUL-terminated).
    pub message: onair_str,
    /// STOPPED: a new consent code (`onair_bot_authorize`) resumes the bot.
    pub resumes_with_new_consent: bool,
    /// PERSIST_TOKENS: the token file to save (NUL-terminated; a secret).
    /// Give it back to `onair_bot_new` after a restart.
    pub tokens_json: onair_str,
    /// TIMER: the timer's tag.
    pub tag: onair_str,
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
    };
}

/// A NUL-terminated copy, allocated once at its final size (so text that
/// may be secret is never left behind in a grown-out buffer).
fn nul_terminated(text: impl AsRef<[u8]>) -> Vec<u8> {
    let bytes = text.as_ref();
    let mut v = Vec::with_capacity(bytes.len() + 1);
    v.extend(bytes.iter().copied().filter(|&b| b != 0));
    v.push(0);
    v
}

fn str_of_nul(buf: &[u8]) -> onair_str {
    onair_str {
        ptr: buf.as_ptr().cast(),
        len: buf.len().saturating_sub(1),
    }
}

impl Current {
    fn new(action: Action) -> Current {
        let mut current = Current {
            action,
            buf: Zeroizing::new(Vec::new()),
            headers: Vec::new(),
            lines: Vec::new(),
            message: Vec::new(),
            tokens: Zeroizing::new(Vec::new()),
            json: Zeroizing::new(Vec::new()),
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

    /// The view of the action; an event's `opaque` is the bot's `head`.
    fn view(&mut self, head: *const Head) -> onair_action {
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
            Action::CloseStream { id } => {
                v.kind = ONAIR_ACTION_CLOSE_STREAM;
                v.request_id = id.0;
            }
            Action::TimedOut { id, endpoint } => {
                v.kind = ONAIR_ACTION_TIMED_OUT;
                v.request_id = id.0;
                v.code = onair_str::of(endpoint.as_str());
                message = Some(format!("{id} ({}) timed out", endpoint.as_str()));
            }
            Action::Event { id, event } => {
                v.kind = ONAIR_ACTION_EVENT;
                v.event = onair_event::view(id.as_ref(), event, head);
            }
            Action::Notice(notice) => {
                use onair_notice_kind::*;
                v.kind = ONAIR_ACTION_NOTICE;
                match notice {
                    Notice::FrameSkipped(e) => {
                        v.notice = ONAIR_NOTICE_FRAME_SKIPPED;
                        v.code = onair_str::of(e.kind.code());
                        message = Some(e.to_string());
                    }
                    Notice::UnknownEvent { event, .. } => {
                        v.notice = ONAIR_NOTICE_UNKNOWN_EVENT;
                        v.code = onair_str::of(event);
                        message = Some(format!("unknown event {event}"));
                    }
                    Notice::Problem { endpoint, problem } => {
                        v.notice = ONAIR_NOTICE_PROBLEM;
                        v.code = onair_str::of(problem.kind.as_str());
                        message = Some(format!("{}: {problem}", endpoint.as_str()));
                    }
                    Notice::CallHeld { call } => {
                        v.notice = ONAIR_NOTICE_CALL_HELD;
                        v.call_id = call.0;
                        message = Some(format!("{call} held until the DJ authorizes the bot"));
                    }
                    Notice::ReconnectStormBraked { until_ms } => {
                        v.notice = ONAIR_NOTICE_RECONNECT_STORM_BRAKED;
                        v.has_until_ms = true;
                        v.until_ms = *until_ms;
                    }
                    _ => v.notice = ONAIR_NOTICE_OTHER,
                }
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

/// The next thing to do at `now_ms` (unix ms), into `*out_action`
/// (borrowed fields). After any report or app command, poll until the
/// action is `ONAIR_ACTION_WAIT`; only then sleep. Polling early or often
/// is safe.
///
/// The action — its request text, its event (for the kit and
/// `onair_event_json`), its messages, its `onair_bot_action_json` text —
/// stays valid until the next `onair_bot_poll` or `onair_bot_free`: the
/// bot's other calls (reports, commands, `_shutdown`, getters), from any
/// thread, leave it as it is. So a loop may finish reading an event while
/// another thread queues chat (each call holding the caller's lock or
/// answered ONAIR_BUSY).
///
/// Errors: NULL `bot` or `out_action` → ONAIR_NULL_PARAMETER (nothing is
/// taken from the bot).
#[no_mangle]
pub unsafe extern "C" fn onair_bot_poll(
    bot: *mut onair_bot,
    now_ms: u64,
    out_action: *mut onair_action,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let head = held.head();
        let b = &mut *held;
        let slot = out(out_action)?;
        let action = b.bot.poll(now_ms);
        let current = b.current.insert(Current::new(action));
        *slot = current.view(head);
        Ok(())
    })
}

/// The canonical JSON form of the action last polled (the core's
/// `ActionJson`: `{"type":"send",…}`, `{"type":"event",…}`,
/// `{"type":"done","call":…,"result":{…}}`, …), borrowed and
/// NUL-terminated, valid until the next call on the bot. A `send` holds
/// secrets (its Authorization header and form), as does `persistTokens`.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER; nothing polled yet →
/// ONAIR_NO_CURRENT.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_action_json(
    bot: *mut onair_bot,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        let (p, l) = (out(out_ptr)?, out(out_len)?);
        let c = b.current.as_mut().ok_or(ONAIR_NO_CURRENT)?;
        if c.json.is_empty() {
            *c.json = nul_terminated(Zeroizing::new(ActionJson(&c.action).to_line()).as_bytes());
        }
        *p = c.json.as_ptr().cast();
        *l = c.json.len() - 1;
        Ok(())
    })
}

// ---- reports ---------------------------------------------------------------------

/// The complete response to `ONAIR_ACTION_SEND` `request_id`: status,
/// headers as received ((NULL, 0) for none; any bytes) and the body (any
/// bytes). Then poll.
///
/// Errors: NULL `bot`, or a NULL array with a non-zero length →
/// ONAIR_NULL_PARAMETER; an id never issued → ONAIR_UNKNOWN_REQUEST; the
/// stream's id in a state that does not take it → ONAIR_NOT_A_STREAM.
/// Nothing changes on an error. A late report (the request timed out) is
/// ONAIR_OK and ignored.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_on_response(
    bot: *mut onair_bot,
    request_id: u64,
    status: u16,
    headers: *const onair_header,
    headers_len: usize,
    body: *const u8,
    body_len: usize,
    now_ms: u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        // SAFETY: (pointer, length) pairs from the caller.
        let headers = unsafe { headers_in(headers, headers_len) }?;
        // SAFETY: as above.
        let body = unsafe { bytes_in(body, body_len) }?;
        let r = b
            .bot
            .on_response(RequestId(request_id), status, headers, body, now_ms);
        b.report(r)
    })
}

/// Request `request_id` got no response (connect error, timeout, reset).
///
/// Errors: NULL `bot` → ONAIR_NULL_PARAMETER; an id never issued →
/// ONAIR_UNKNOWN_REQUEST.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_on_transport_error(
    bot: *mut onair_bot,
    request_id: u64,
    now_ms: u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        let r = b.bot.on_transport_error(RequestId(request_id), now_ms);
        b.report(r)
    })
}

/// The status line and headers of `ONAIR_ACTION_OPEN_STREAM`
/// `request_id`. A 2xx opens the stream; any other status is a failure
/// whose body follows through `onair_bot_on_stream_bytes` and is judged at
/// `onair_bot_on_stream_closed`.
///
/// Errors: NULL `bot`, or a NULL array with a non-zero length →
/// ONAIR_NULL_PARAMETER; an id never issued → ONAIR_UNKNOWN_REQUEST; a
/// plain request's id or an open stream's → ONAIR_NOT_A_STREAM.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_on_stream_open(
    bot: *mut onair_bot,
    request_id: u64,
    status: u16,
    headers: *const onair_header,
    headers_len: usize,
    now_ms: u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        // SAFETY: (pointer, length) from the caller.
        let headers = unsafe { headers_in(headers, headers_len) }?;
        let r = b
            .bot
            .on_stream_open(RequestId(request_id), status, headers, now_ms);
        b.report(r)
    })
}

/// A chunk of the open stream's body, split anywhere (not kept). Then poll:
/// the events it completes come as `ONAIR_ACTION_EVENT`.
///
/// Errors: NULL `bot`, or NULL `bytes` with `len` > 0 →
/// ONAIR_NULL_PARAMETER; an id never issued → ONAIR_UNKNOWN_REQUEST; before
/// `onair_bot_on_stream_open` → ONAIR_STREAM_NOT_STARTED; a plain request's
/// id → ONAIR_NOT_A_STREAM.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_on_stream_bytes(
    bot: *mut onair_bot,
    request_id: u64,
    bytes: *const u8,
    len: usize,
    now_ms: u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        // SAFETY: (pointer, length) from the caller.
        let chunk = unsafe { bytes_in(bytes, len) }?;
        let r = b.bot.on_stream_bytes(RequestId(request_id), chunk, now_ms);
        b.report(r)
    })
}

/// The stream connection `request_id` ended (end of body or a network
/// error). Harmless for a connection the bot asked to close.
///
/// Errors: NULL `bot` → ONAIR_NULL_PARAMETER; an id never issued →
/// ONAIR_UNKNOWN_REQUEST; a plain request's id → ONAIR_NOT_A_STREAM.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_on_stream_closed(
    bot: *mut onair_bot,
    request_id: u64,
    now_ms: u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        let r = b.bot.on_stream_closed(RequestId(request_id), now_ms);
        b.report(r)
    })
}

// ---- app commands ----------------------------------------------------------------

/// Gives the bot the DJ's consent code and the redirect URI it was issued
/// for (the answer to `ONAIR_ACTION_NEEDS_AUTHORIZATION`, and the way back
/// from a `reauthorize` stop). The code is sent once, never retried.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_authorize(
    bot: *mut onair_bot,
    code: *const c_char,
    code_len: usize,
    redirect_uri: *const c_char,
    redirect_uri_len: usize,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        if code.is_null() || redirect_uri.is_null() {
            return Err(ONAIR_NULL_PARAMETER);
        }
        // SAFETY: (pointer, length) pairs from the caller.
        let (code, uri) = unsafe {
            (
                str_in(code, code_len)?,
                str_in(redirect_uri, redirect_uri_len)?,
            )
        };
        b.bot.authorize(code, uri);
        Ok(())
    })
}

/// Queues a chat message (checked first: at most 200 UTF-16 units, not
/// blank; messages go out in order, paced and retried by the bot). The
/// call's id goes to `*out_call`; its answer comes as `ONAIR_ACTION_DONE`,
/// a full queue or a stopped bot included (`ONAIR_FAILURE_QUEUE_FULL`,
/// `ONAIR_FAILURE_STOPPED`); made while the bot waits for consent, it is held
/// (`ONAIR_NOTICE_CALL_HELD`).
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 →
/// ONAIR_INVALID_UTF8; ONAIR_CHAT_EMPTY, ONAIR_CHAT_TOO_LONG (nothing
/// queued).
#[no_mangle]
pub unsafe extern "C" fn onair_bot_send_chat(
    bot: *mut onair_bot,
    message: *const c_char,
    message_len: usize,
    out_call: *mut u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        let slot = out(out_call)?;
        if message.is_null() {
            return Err(ONAIR_NULL_PARAMETER);
        }
        // SAFETY: (pointer, length) from the caller.
        let text = unsafe { str_in(message, message_len) }?;
        let call = b.bot.send_chat(text).map_err(|e| b.chat_error(e))?;
        *slot = call.0;
        Ok(())
    })
}

/// Queues `GET /v1/live` (answer: ONAIR_DONE_BROADCAST, data in the JSON form).
///
/// Always queued: a full queue or a stopped bot is answered by its DONE
/// (see `onair_bot_send_chat`).
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_fetch_broadcast(
    bot: *mut onair_bot,
    out_call: *mut u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        let slot = out(out_call)?;
        *slot = b.bot.fetch_broadcast().0;
        Ok(())
    })
}

/// Queues the listener list, every page, deduplicated (answer:
/// ONAIR_DONE_LISTENERS, data in the JSON form).
///
/// Always queued: a full queue or a stopped bot is answered by its DONE
/// (see `onair_bot_send_chat`).
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_list_listeners(
    bot: *mut onair_bot,
    out_call: *mut u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        let slot = out(out_call)?;
        *slot = b.bot.list_listeners().0;
        Ok(())
    })
}

/// Queues `GET /v1/live/fans` (answer: ONAIR_DONE_FANS, data in the JSON form).
///
/// Always queued: a full queue or a stopped bot is answered by its DONE
/// (see `onair_bot_send_chat`).
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_fetch_fans(
    bot: *mut onair_bot,
    out_call: *mut u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        let slot = out(out_call)?;
        *slot = b.bot.fetch_fans().0;
        Ok(())
    })
}

/// Reconnects the stream at once, without backoff (e.g. after the DJ made
/// the bot a manager: presence events start on the next connection).
///
/// Errors: NULL `bot` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_request_reconnect(
    bot: *mut onair_bot,
    now_ms: u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        unsafe { hold(bot) }?.bot.request_reconnect(now_ms);
        Ok(())
    })
}

/// Stops the bot: queued calls are cancelled, the stream is closed, and
/// with `revoke` the tokens are revoked (one last SEND) and forgotten.
/// Poll until the action is `ONAIR_ACTION_STOPPED` (code `shut_down`),
/// doing what it says on the way. The action last polled stays valid.
///
/// Errors: NULL `bot` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_shutdown(bot: *mut onair_bot, revoke: bool) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        unsafe { hold(bot) }?.bot.shutdown(revoke);
        Ok(())
    })
}

// ---- getters ---------------------------------------------------------------------

/// The token file of the pair in force (the form `PERSIST_TOKENS` gives;
/// load it with `onair_bot_new`), borrowed and NUL-terminated, valid until
/// the next call on the bot. A secret.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER; no tokens yet → ONAIR_NO_TOKENS.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_tokens_json(
    bot: *mut onair_bot,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        let (p, l) = (out(out_ptr)?, out(out_len)?);
        let json = match b.bot.tokens().tokens() {
            Some(t) => t.to_json(),
            None => return Err(b.fail(ONAIR_NO_TOKENS, "the bot holds no tokens yet")),
        };
        *b.tokens = nul_terminated(json.as_bytes());
        *p = b.tokens.as_ptr().cast();
        *l = b.tokens.len() - 1;
        Ok(())
    })
}

/// App calls queued and not yet answered (in flight included); NULL → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_pending_calls(bot: *const onair_bot) -> usize {
    // SAFETY: checked pointer from onair_bot_new.
    boundary_or(0, || {
        unsafe { hold(bot) }.map_or(0, |b| b.bot.pending_calls())
    })
}

/// The bot's state as JSON (the core's status snapshot: connection state,
/// counters, scope and what it cannot do, token times, quota blocks),
/// borrowed and NUL-terminated, valid until the next call on the bot.
/// Holds no secret.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_status_json(
    bot: *mut onair_bot,
    now_ms: u64,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        let (p, l) = (out(out_ptr)?, out(out_len)?);
        b.status = nul_terminated(b.bot.status(now_ms).to_json());
        *p = b.status.as_ptr().cast();
        *l = b.status.len() - 1;
        Ok(())
    })
}

// ---- app timers ------------------------------------------------------------------

fn tag_arg<'a>(tag: *const c_char, len: usize) -> Result<&'a str, onair_result> {
    if tag.is_null() {
        return Err(ONAIR_NULL_PARAMETER);
    }
    // SAFETY: (pointer, length) from the caller.
    unsafe { str_in(tag, len) }
}

/// Fires `ONAIR_ACTION_TIMER` with `tag` once at `at_ms` (replacing a
/// timer with that tag). Its deadline is folded into `ONAIR_ACTION_WAIT`.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 →
/// ONAIR_INVALID_UTF8; an empty, too long or control-character tag →
/// ONAIR_BAD_TAG; too many timers → ONAIR_TOO_MANY_TIMERS.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_schedule(
    bot: *mut onair_bot,
    at_ms: u64,
    tag: *const c_char,
    tag_len: usize,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        let tag = tag_arg(tag, tag_len)?;
        let r = b.bot.schedule(at_ms, tag);
        b.timer(r)
    })
}

/// Fires `ONAIR_ACTION_TIMER` with `tag` every `period_ms`, first at
/// `first_at_ms` (late ticks are not piled up).
///
/// Errors: as `onair_bot_schedule`; a `period_ms` of 0 →
/// ONAIR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_every(
    bot: *mut onair_bot,
    period_ms: u64,
    tag: *const c_char,
    tag_len: usize,
    first_at_ms: u64,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        let tag = tag_arg(tag, tag_len)?;
        let r = b.bot.every(period_ms, tag, first_at_ms);
        b.timer(r)
    })
}

/// Sets timer `tag` in full: once at `at_ms` (`period_ms` 0) or every
/// `period_ms` from `at_ms`; with `while_connected` it fires only while
/// the event stream is open.
///
/// Errors: as `onair_bot_schedule`.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_set_timer(
    bot: *mut onair_bot,
    tag: *const c_char,
    tag_len: usize,
    at_ms: u64,
    period_ms: u64,
    while_connected: bool,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        let tag = tag_arg(tag, tag_len)?;
        let mut timer = if period_ms == 0 {
            Timer::at(at_ms)
        } else {
            Timer::every(period_ms, at_ms)
        };
        if while_connected {
            timer = timer.while_connected();
        }
        let r = b.bot.set_timer(tag, timer);
        b.timer(r)
    })
}

/// Cancels timer `tag`; `*out_found` (may be NULL) says whether it was set.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_cancel_timer(
    bot: *mut onair_bot,
    tag: *const c_char,
    tag_len: usize,
    out_found: *mut bool,
) -> onair_result {
    boundary(|| {
        // SAFETY: checked pointer from onair_bot_new.
        let mut held = unsafe { hold(bot) }?;
        let b = &mut *held;
        let tag = tag_arg(tag, tag_len)?;
        let found = b.bot.cancel_timer(tag);
        if let Ok(slot) = out(out_found) {
            *slot = found;
        }
        Ok(())
    })
}
