//! The `Bot` machine: configuration (the kit's too), the driver loop
//! (`poll` and the `on_*` reports), app commands, tokens, the kit's tally.

use std::ffi::c_char;

use onair_core::json::{ActionJson, StopJson};
use onair_core::kit::{KitConfig, KitState, ReplyKind, StateError};
use onair_core::{
    BaseUrl, Bot, BotConfig, ChatError, ChatErrorKind, ClientCredentials, CredentialsError, Misuse,
    RequestId, Timer, TimerError, Tokens, User,
};
use zeroize::Zeroizing;

use crate::action::{nul_terminated, onair_action, tally_line, Current};
use crate::handle::{free, handles, new_handle, Guarded};
use crate::onair_result::{self, *};
use crate::problem::daily_quota_in;
use crate::text::text_arg;
use crate::view::{headers_in, onair_header, onair_str};
use crate::{
    boundary, boundary_on, boundary_on_or, boundary_peek, bytes_in, out, out_opt, str_in, TextOut,
};

// ---- configuration ---------------------------------------------------------------

/// How a bot is set up (`onair_bot_config_new`), its kit included
/// (`onair_bot_config_set_kit_json`); read by `onair_bot_new`, which copies
/// it, so it may be freed right after.
///
/// Threads: one call at a time (`onair_bot_new` reading it counts); a
/// concurrent call gets ONAIR_BUSY and changes nothing. The text of
/// `onair_bot_config_last_error` is valid until the next call on it.
#[derive(Debug)]
pub struct onair_bot_config(Guarded<ConfigState>);

/// The state behind an `onair_bot_config`.
#[derive(Debug)]
pub(crate) struct ConfigState {
    config: BotConfig,
    /// The last refusal's detail, NUL-terminated.
    last_error: Vec<u8>,
}

impl ConfigState {
    /// Every call but `_last_error` starts by clearing the last error.
    fn enter(&mut self) {
        self.last_error = vec![0];
    }

    fn fail(&mut self, code: onair_result, detail: impl std::fmt::Display) -> onair_result {
        self.last_error = nul_terminated(detail.to_string());
        code
    }
}

handles! {
    onair_bot_config => ConfigState, tag 1, enter ConfigState::enter;
    onair_bot => BotState, tag 2, enter BotState::enter;
}

/// A configuration with the spec's defaults for the service at `base_url`
/// (absolute http(s), e.g. `https://api.example` or
/// `http://127.0.0.1:8080`) and the app's client id and secret. Free with
/// `onair_bot_config_free`.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 →
/// ONAIR_INVALID_UTF8; bad URL → ONAIR_INVALID_BASE_URL; a client id that
/// is not a UUID → ONAIR_INVALID_CLIENT_ID; an empty secret →
/// ONAIR_INVALID_CLIENT_SECRET. `onair_result_message` of each names the
/// parameter (there is no handle to hold a detail yet).
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
        let credentials = ClientCredentials::new(id, secret).map_err(|e| match e {
            CredentialsError::InvalidClientId => ONAIR_INVALID_CLIENT_ID,
            _ => ONAIR_INVALID_CLIENT_SECRET,
        })?;
        *slot = new_handle::<onair_bot_config>(ConfigState {
            config: BotConfig::new(base, credentials),
            last_error: vec![0],
        })?;
        Ok(())
    })
}

/// Frees a configuration.
///
/// Returns ONAIR_OK (NULL included); ONAIR_FREED_HANDLE when it was freed
/// already (a double free, or a stale handle whose slot now holds another
/// object, which is left alone); ONAIR_INVALID_HANDLE for a pointer that is
/// no handle of this kind; ONAIR_BUSY when another thread is in a call on
/// it (nothing is freed: free it once that call is over).
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_free(config: *mut onair_bot_config) -> onair_result {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary(|| unsafe { free(config) })
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
    boundary_on(config, |c| {
        c.config.events = events;
        Ok(())
    })
}

/// Whether a bot started with saved tokens checks the client credentials
/// first (default true): one `POST /v1/oauth/revoke` of a token that does
/// not exist (`token=onair-credentials-check`), so a wrong client secret
/// stops the bot with `invalid_client` at start instead of at the first
/// refresh, up to an hour later.
///
/// Errors: NULL `config` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_set_check_credentials(
    config: *mut onair_bot_config,
    check: bool,
) -> onair_result {
    boundary_on(config, |c| {
        c.config.check_credentials = check;
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
    boundary_on(config, |c| {
        c.config.request_timeout_ms = nonzero(timeout_ms)?;
        Ok(())
    })
}

/// How long a bot stopping for good waits for a token request or the
/// revocation still in flight before it says `ONAIR_ACTION_STOPPED`
/// (default 30 000 ms); every other request is dropped at once. 0 drops
/// those too.
///
/// Errors: NULL `config` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_set_shutdown_grace_ms(
    config: *mut onair_bot_config,
    grace_ms: u64,
) -> onair_result {
    boundary_on(config, |c| {
        c.config.shutdown_grace_ms = grace_ms;
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
    boundary_on(config, |c| {
        c.config.max_attempts = nonzero(attempts)?;
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
    boundary_on(config, |c| {
        c.config.max_queued_calls = max_calls;
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
    boundary_on(config, |c| {
        c.config.stream.watchdog_ms = nonzero(watchdog_ms)?;
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
    boundary_on(config, |c| {
        c.config.stream.connect_timeout_ms = nonzero(timeout_ms)?;
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
    boundary_on(config, |c| {
        c.config.refresh.margin_ms = margin_ms;
        Ok(())
    })
}

/// Configures the kit from JSON (UTF-8; no NUL needed): the commands and
/// who may run each, greetings, milestones, the tally, with the keys of the
/// core's `KitConfig` (all optional), e.g.
/// `{"commands":[{"name":"hello","aliases":["hi"]},{"name":"top","allowed":"managers","cooldown_ms":30000}],
/// "greetings":{"welcome_back_after_ms":600000},
/// "milestones":{"hearts_every":100,"donations_every":1000},"tally":true}`.
/// The bot then hands out ONAIR_ACTION_COMMAND, _ARRIVAL, _MILESTONE,
/// _BROADCAST_ENDED and _PERSIST_STATE (and ONAIR_NOTICE_COMMAND_REFUSED).
/// Replaces any kit set before; `{}` configures none.
///
/// Errors: NULL pointer → ONAIR_NULL_PARAMETER; not UTF-8 →
/// ONAIR_INVALID_UTF8; a configuration the kit refuses (not JSON, an
/// unknown key, a wrong type, a name given twice, a step of 0, …) →
/// ONAIR_INVALID_KIT_CONFIG, and `onair_bot_config_last_error` names the key
/// (`commands[1].allowed: unknown variant …`). Nothing changes on an error.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_set_kit_json(
    config: *mut onair_bot_config,
    json: *const c_char,
    json_len: usize,
) -> onair_result {
    boundary_on(config, |c| {
        let text = text_arg(json, json_len)?;
        c.config.kit =
            KitConfig::from_json(text).map_err(|e| c.fail(ONAIR_INVALID_KIT_CONFIG, e))?;
        Ok(())
    })
}

/// The detail of the refusal of the previous call on this configuration (a
/// line for logs, never a secret): the key a kit configuration got wrong,
/// or why `onair_bot_new` could not load the saved tokens or kit state.
/// Every other call clears it first (empty: that call succeeded, or its
/// code says all there is). Borrowed and NUL-terminated, valid until the
/// next call on the configuration.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_config_last_error(
    config: *const onair_bot_config,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary_peek(config, |c| {
        let text_out = TextOut::new(out_ptr, out_len)?;
        text_out.lend(&c.last_error)
    })
}

// ---- the bot ---------------------------------------------------------------------

/// The bot machine (`onair_bot_new`).
///
/// Threads: a bot may be used by one thread at a time (move it between
/// threads freely). A second thread's call while one is in flight returns
/// ONAIR_BUSY (`_pending_calls`: 0) and changes nothing. The text of
/// `_last_error`, `_tokens_json`, `_status_json`, `_consent_stop_json`, `_tally_json`,
/// `_daily_quota_json` and the donor of `_donor` is valid until the next call on the bot by any thread
/// that is not refused with ONAIR_BUSY; the action of `onair_bot_poll`
/// (with its event, its other views and `_action_json` text) until the next
/// poll. A caller sharing a bot between threads holds its own lock from
/// the call until it has read (or copied) what was lent.
/// `onair_bot_free` while another thread is in a call is refused (ONAIR_BUSY).
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
    /// The JSON of `onair_bot_status_json`, `_consent_stop_json`, `_tally_json`
    /// or `_daily_quota_json`, NUL-terminated.
    status: Vec<u8>,
}

impl BotState {
    /// Every call but `_last_error` starts by clearing the last error.
    fn enter(&mut self) {
        self.last_error = vec![0];
    }

    fn fail(&mut self, code: onair_result, detail: impl std::fmt::Display) -> onair_result {
        self.last_error = nul_terminated(detail.to_string());
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
        r.map_err(|e| self.fail(timer_error(e), e))
    }

    fn report(&mut self, r: Result<(), Misuse>) -> Result<(), onair_result> {
        r.map_err(|e| self.misuse(e))
    }
}

/// A timer refusal as its result code ("a step of 0" is
/// `ONAIR_INVALID_ARGUMENT`).
fn timer_error(e: TimerError) -> onair_result {
    match e {
        TimerError::TooMany => ONAIR_TOO_MANY_TIMERS,
        TimerError::ZeroPeriod => ONAIR_INVALID_ARGUMENT,
        _ => ONAIR_BAD_TAG,
    }
}

/// A saved kit state that did not load, as its result code.
fn state_error(e: &StateError) -> onair_result {
    match e {
        StateError::UnsupportedVersion { .. } => ONAIR_KIT_STATE_TOO_NEW,
        _ => ONAIR_INVALID_STATE,
    }
}

/// A setting that must not be 0, else `ONAIR_INVALID_ARGUMENT`.
fn nonzero<T: Default + PartialEq>(value: T) -> Result<T, onair_result> {
    if value == T::default() {
        return Err(ONAIR_INVALID_ARGUMENT);
    }
    Ok(value)
}

/// A new bot. `saved_tokens` is the token file a `PERSIST_TOKENS` action
/// (or `onair_bot_tokens_json`) gave earlier, or NULL to start without
/// tokens (the first poll then asks for authorization). `saved_kit_state`
/// is the kit state a `PERSIST_STATE` action gave earlier, or NULL for an
/// empty memory (ignored when the configuration has no kit). `seed` fixes
/// every jitter: seed from real randomness in production. `config` is
/// copied. Free with `onair_bot_free`.
///
/// Errors: NULL `config` or `out_bot` → ONAIR_NULL_PARAMETER; a token file
/// that does not load → ONAIR_INVALID_TOKENS; a kit state that does not
/// load → ONAIR_INVALID_STATE, or ONAIR_KIT_STATE_TOO_NEW when a newer onair
/// wrote it. The detail of these is `onair_bot_config_last_error`'s.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_new(
    config: *const onair_bot_config,
    saved_tokens: *const c_char,
    saved_tokens_len: usize,
    saved_kit_state: *const c_char,
    saved_kit_state_len: usize,
    seed: u64,
    out_bot: *mut *mut onair_bot,
) -> onair_result {
    boundary_on(config, |c| {
        let slot = out(out_bot)?;
        let saved = if saved_tokens.is_null() {
            None
        } else {
            // SAFETY: (pointer, length) from the caller.
            let json = unsafe { bytes_in(saved_tokens.cast(), saved_tokens_len) }?;
            let tokens = Tokens::from_json(json);
            Some(tokens.map_err(|e| c.fail(ONAIR_INVALID_TOKENS, e))?)
        };
        let state = if saved_kit_state.is_null() {
            None
        } else {
            // SAFETY: (pointer, length) from the caller.
            let json = unsafe { bytes_in(saved_kit_state.cast(), saved_kit_state_len) }?;
            let state = KitState::from_json(json);
            Some(state.map_err(|e| c.fail(state_error(&e), e))?)
        };
        let mut bot = Bot::new(c.config.clone(), saved, seed);
        if let Some(state) = &state {
            bot = bot.with_kit_state(state);
        }
        *slot = new_handle::<onair_bot>(BotState {
            bot,
            current: None,
            tokens: Zeroizing::new(Vec::new()),
            last_error: vec![0],
            status: Vec::new(),
        })?;
        Ok(())
    })
}

/// Frees a bot (nothing is sent: call `onair_bot_shutdown` and drain the
/// loop first to revoke). What it lent (the action, borrowed text) goes
/// with it.
///
/// Returns ONAIR_OK (NULL included); ONAIR_FREED_HANDLE when it was freed
/// already (a double free, or a stale handle whose slot now holds another
/// object, which is left alone); ONAIR_INVALID_HANDLE for a pointer that is
/// no handle of this kind; ONAIR_BUSY when another thread is in a call on
/// it (nothing is freed: free it once that call is over).
#[no_mangle]
pub unsafe extern "C" fn onair_bot_free(bot: *mut onair_bot) -> onair_result {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary(|| unsafe { free(bot) })
}

/// The detail of the error the previous call on this bot returned (a line
/// for logs, never a secret), borrowed and NUL-terminated, valid until the
/// next call on the bot. Every other call clears it first, so it never
/// describes an older call: empty when the previous call succeeded, or when
/// its code says all there is (`onair_result_message`). Reading it does not
/// clear it. A call refused with ONAIR_BUSY, ONAIR_FREED_HANDLE or
/// ONAIR_INVALID_HANDLE cannot reach the bot and leaves it.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_last_error(
    bot: *const onair_bot,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary_peek(bot, |b| {
        let text_out = TextOut::new(out_ptr, out_len)?;
        text_out.lend(&b.last_error)
    })
}

/// The next thing to do at `now_ms` (unix ms), into `*out_action`
/// (borrowed fields). After any report or app command, poll until the
/// action is `ONAIR_ACTION_WAIT`; only then sleep. Polling early or often
/// is safe.
///
/// The action — its request text, its event, its other views, its
/// messages, its `onair_bot_action_json` text —
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
    boundary_on(bot, |b| {
        let slot = out(out_action)?;
        let action = b.bot.poll(now_ms);
        let current = b.current.insert(Current::new(action));
        *slot = current.view();
        Ok(())
    })
}

/// The canonical JSON form of the action last polled (the core's
/// `ActionJson`: `{"type":"send",…}`, `{"type":"event",…}`,
/// `{"type":"done","call":…,"result":{…}}`, …), borrowed and
/// NUL-terminated, valid until the next `onair_bot_poll` or `onair_bot_free`
/// (like the action). Secrets: a `send` and an `openStream` hold the
/// Authorization header (a send its form too), `persistTokens` the token
/// file; no other action's JSON holds one.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER; nothing polled yet →
/// ONAIR_NO_CURRENT.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_action_json(
    bot: *mut onair_bot,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary_on(bot, |b| {
        let text_out = TextOut::new(out_ptr, out_len)?;
        let c = b.current.as_mut().ok_or(ONAIR_NO_CURRENT)?;
        if c.json.is_empty() {
            *c.json = nul_terminated(Zeroizing::new(ActionJson(&c.action).to_line()).as_bytes());
        }
        text_out.lend(&c.json)
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
    boundary_on(bot, |b| {
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

/// Request `request_id` never left this machine: the connection was
/// refused, the name did not resolve, the TLS handshake failed, or the
/// connect timed out (libcurl: CURLE_COULDNT_CONNECT,
/// CURLE_COULDNT_RESOLVE_HOST, CURLE_SSL_CONNECT_ERROR, or
/// CURLE_OPERATION_TIMEDOUT before the connection was made). Nothing was
/// spent: a consent code's exchange goes again while the code is fresh, a
/// chat message may be sent again, a stream open is a failed connect
/// (backoff). It counts toward `ONAIR_NOTICE_UNREACHABLE`. Then poll.
///
/// Errors: NULL `bot` → ONAIR_NULL_PARAMETER; an id never issued →
/// ONAIR_UNKNOWN_REQUEST. A late report is ONAIR_OK and ignored.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_on_not_sent(
    bot: *mut onair_bot,
    request_id: u64,
    now_ms: u64,
) -> onair_result {
    boundary_on(bot, |b| {
        let r = b.bot.on_not_sent(RequestId(request_id), now_ms);
        b.report(r)
    })
}

/// Request `request_id` got no response after it may have been sent (the
/// connection reset or lost after sending, a read timeout): the outcome is
/// unknown, so a consent code counts as spent and a chat message is not
/// sent again. A request that surely never left: `onair_bot_on_not_sent`.
///
/// Errors: NULL `bot` → ONAIR_NULL_PARAMETER; an id never issued →
/// ONAIR_UNKNOWN_REQUEST.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_on_transport_error(
    bot: *mut onair_bot,
    request_id: u64,
    now_ms: u64,
) -> onair_result {
    boundary_on(bot, |b| {
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
    boundary_on(bot, |b| {
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
    boundary_on(bot, |b| {
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
    boundary_on(bot, |b| {
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
    boundary_on(bot, |b| {
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
    boundary_on(bot, |b| {
        let slot = out(out_call)?;
        let text = text_arg(message, message_len)?;
        let call = b.bot.send_chat(text).map_err(|e| b.chat_error(e))?;
        *slot = call.0;
        Ok(())
    })
}

/// Queues a reply: `text` split between grapheme clusters into messages
/// the service takes (at most 200 UTF-16 units each, at spaces when it
/// can; blank parts dropped), each queued as `onair_bot_send_chat` would.
/// `*out_count` (may be NULL) gets how many were queued (0 for a blank
/// text); each is answered by its `ONAIR_ACTION_DONE`. The first
/// `calls_cap` of their call ids go to `out_calls` (may be NULL with
/// `calls_cap` 0); a text of N bytes makes at most N messages, so
/// `calls_cap` = `text_len` always holds them all.
///
/// Errors: NULL `bot` or `text`, or NULL `out_calls` with `calls_cap` > 0
/// → ONAIR_NULL_PARAMETER; not UTF-8 → ONAIR_INVALID_UTF8 (nothing queued).
#[no_mangle]
pub unsafe extern "C" fn onair_bot_say(
    bot: *mut onair_bot,
    text: *const c_char,
    text_len: usize,
    out_calls: *mut u64,
    calls_cap: usize,
    out_count: *mut usize,
) -> onair_result {
    boundary_on(bot, |b| {
        let text = text_arg(text, text_len)?;
        if out_calls.is_null() && calls_cap > 0 {
            return Err(ONAIR_NULL_PARAMETER);
        }
        let calls = b.bot.say(text);
        if calls_cap > 0 {
            // SAFETY: the caller promises `calls_cap` writable u64s.
            let ids = unsafe { std::slice::from_raw_parts_mut(out_calls, calls_cap) };
            for (slot, call) in ids.iter_mut().zip(&calls) {
                *slot = call.0;
            }
        }
        out_opt(out_count, calls.len());
        Ok(())
    })
}

/// What a reply is for (`onair_bot_reply`, `onair_bot_reply_counters`):
/// its freshness (the kit's `replies.fresh_ms`), and whether replies of its
/// kind waiting together go out as one message (welcome, welcome back,
/// thanks; never mixed with another kind).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_reply_kind {
    /// A person's first arrival in a broadcast (merged: `welcome_many`).
    ONAIR_REPLY_WELCOME = 1,
    /// A return after the configured absence (merged: `welcome_back_many`).
    ONAIR_REPLY_WELCOME_BACK = 2,
    /// A donation (merged: `thanks_many`).
    ONAIR_REPLY_THANKS = 3,
    /// A milestone: never merged.
    ONAIR_REPLY_MILESTONE = 4,
    /// A command's answer: never merged.
    ONAIR_REPLY_COMMAND = 5,
}

/// The core's kind of an `onair_reply_kind` value from C (any number).
fn reply_kind(kind: u32) -> Option<ReplyKind> {
    use onair_reply_kind::*;
    [
        (ONAIR_REPLY_WELCOME, ReplyKind::Welcome),
        (ONAIR_REPLY_WELCOME_BACK, ReplyKind::WelcomeBack),
        (ONAIR_REPLY_THANKS, ReplyKind::Thanks),
        (ONAIR_REPLY_MILESTONE, ReplyKind::Milestone),
        (ONAIR_REPLY_COMMAND, ReplyKind::Command),
    ]
    .into_iter()
    .find(|(c, _)| *c as u32 == kind)
    .map(|(_, k)| k)
}

/// Queues a reply of `kind` (an `onair_reply_kind`) naming one person (their
/// `user_id`, and their `nickname`, or NULL or empty for none: merged, they
/// are named `friend`): `text` goes out as written
/// when it goes alone; when other replies of a mergeable kind (welcome,
/// welcome back, thanks: the kit's configured ones or other
/// `onair_bot_reply`s) wait with it while the chat limit holds the queue,
/// one message names them all with the kind's `_many` text, in the order
/// they came ("Welcome, Ana, Jörg and Mia! 🎧"). It waits in the chat queue
/// in order with `onair_bot_send_chat`, and is dropped with an
/// `ONAIR_NOTICE_REPLIES_DROPPED` when it is not out within the kind's
/// freshness (counted from the latest poll), never sent late. No DONE
/// answers it: `onair_bot_reply_counters` counts what went out.
///
/// Errors: NULL `bot`, `user_id` or `text`, or NULL `nickname` with
/// `nickname_len` > 0 → ONAIR_NULL_PARAMETER; not UTF-8 →
/// ONAIR_INVALID_UTF8; a `kind` that is no `onair_reply_kind`, or an empty
/// `user_id` → ONAIR_INVALID_ARGUMENT; a blank text → ONAIR_CHAT_EMPTY;
/// over 200 UTF-16 units → ONAIR_CHAT_TOO_LONG. Nothing is queued on an
/// error; `onair_bot_last_error` says which.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_reply(
    bot: *mut onair_bot,
    kind: u32,
    user_id: *const c_char,
    user_id_len: usize,
    nickname: *const c_char,
    nickname_len: usize,
    text: *const c_char,
    text_len: usize,
) -> onair_result {
    boundary_on(bot, |b| {
        let id = text_arg(user_id, user_id_len)?;
        // SAFETY: (pointer, length) from the caller; (NULL, 0) is none.
        let nickname = unsafe { str_in(nickname, nickname_len) }?;
        let text = text_arg(text, text_len)?;
        let Some(kind) = reply_kind(kind) else {
            return Err(b.fail(
                ONAIR_INVALID_ARGUMENT,
                format_args!("kind {kind} is no onair_reply_kind (1 to 5)"),
            ));
        };
        if id.is_empty() {
            return Err(b.fail(ONAIR_INVALID_ARGUMENT, "user_id is empty"));
        }
        let user = User {
            id: id.to_owned(),
            nickname: (!nickname.is_empty()).then(|| nickname.to_owned()),
        };
        b.bot.reply(kind, &user, text).map_err(|e| b.chat_error(e))
    })
}

/// One kind's reply counters since the bot started
/// (`onair_bot_reply_counters`; also in `onair_bot_status_json` under
/// `counters.replies`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct onair_reply_counters {
    /// Messages the service took.
    pub messages: u64,
    /// Replies (people) named in those messages.
    pub people: u64,
    /// Replies that went out merged with others of their kind.
    pub merged: u64,
    /// Replies dropped, for any reason (the sum of the six below).
    pub dropped: u64,
    /// … not sent within their freshness (`stale`).
    pub dropped_stale: u64,
    /// … still queued when the broadcast ended (`ended`).
    pub dropped_ended: u64,
    /// … refused by the service (`refused`).
    pub dropped_refused: u64,
    /// … given up: no answer, or the daily quota (`given_up`).
    pub dropped_given_up: u64,
    /// … the reply queue was full (`queue_full`).
    pub dropped_queue_full: u64,
    /// … the bot stopped (`stopped`).
    pub dropped_stopped: u64,
}

/// The reply counters of `kind` (an `onair_reply_kind`) into `*out_counters`.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER; a `kind` that is no
/// `onair_reply_kind` → ONAIR_INVALID_ARGUMENT (nothing written).
#[no_mangle]
pub unsafe extern "C" fn onair_bot_reply_counters(
    bot: *const onair_bot,
    kind: u32,
    out_counters: *mut onair_reply_counters,
) -> onair_result {
    boundary_on(bot, |b| {
        let slot = out(out_counters)?;
        let kind = reply_kind(kind).ok_or(ONAIR_INVALID_ARGUMENT)?;
        let status = b.bot.status(0);
        let c = status.counters.replies.of(kind);
        *slot = onair_reply_counters {
            messages: c.messages,
            people: c.people,
            merged: c.merged,
            dropped: c.dropped,
            dropped_stale: c.dropped_stale,
            dropped_ended: c.dropped_ended,
            dropped_refused: c.dropped_refused,
            dropped_given_up: c.dropped_given_up,
            dropped_queue_full: c.dropped_queue_full,
            dropped_stopped: c.dropped_stopped,
        };
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
    boundary_on(bot, |b| {
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
    boundary_on(bot, |b| {
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
    boundary_on(bot, |b| {
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
    boundary_on(bot, |b| {
        b.bot.request_reconnect(now_ms);
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
    boundary_on(bot, |b| {
        b.bot.shutdown(revoke);
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
    boundary_on(bot, |b| {
        let text_out = TextOut::new(out_ptr, out_len)?;
        let json = match b.bot.token_pair() {
            Some(t) => t.to_json(),
            None => return Err(b.fail(ONAIR_NO_TOKENS, "the bot holds no tokens yet")),
        };
        *b.tokens = nul_terminated(json.as_bytes());
        text_out.lend(&b.tokens)
    })
}

/// App calls queued and not yet answered (in flight included); NULL → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_pending_calls(bot: *const onair_bot) -> usize {
    boundary_on_or(0, bot, |b| b.bot.pending_calls())
}

/// The stop a person must act on while the bot waits for the DJ's consent
/// (`Bot::consent_stop`: the `reauthorize` stop in force, or the one of a
/// bot with no tokens yet) as JSON, the `stop` object of a `stopped` action;
/// `null` when the bot does not wait for consent. A driver with no way to get
/// a new code ends its run with it. Borrowed and NUL-terminated, valid until
/// the next call on the bot. Holds no secret.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_consent_stop_json(
    bot: *mut onair_bot,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary_on(bot, |b| {
        let text_out = TextOut::new(out_ptr, out_len)?;
        let json = b
            .bot
            .consent_stop()
            .map_or_else(|| "null".to_owned(), |stop| StopJson(&stop).to_line());
        b.status = nul_terminated(json);
        text_out.lend(&b.status)
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
    boundary_on(bot, |b| {
        let text_out = TextOut::new(out_ptr, out_len)?;
        b.status = nul_terminated(b.bot.status(now_ms).to_json());
        text_out.lend(&b.status)
    })
}

/// What this bot knows of the app's daily quota at `now_ms` (the daily
/// counters last seen while their reset is ahead, and the daily blocks in
/// force) as JSON, `{"remaining":…,"resetMs":…,"blocks":[{"scope":…,
/// "untilMs":…}]}` (`remaining` and `resetMs` may be null; a block's
/// `scope` null is every call): the app's quota is counted across all its
/// bots, so an app running many merges each one's with
/// `onair_daily_quota_merge` and gives the result back to every bot with
/// `onair_bot_share_daily_quota_json`. Borrowed and NUL-terminated, valid
/// until the next call on the bot. Holds no secret.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_daily_quota_json(
    bot: *mut onair_bot,
    now_ms: u64,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary_on(bot, |b| {
        let text_out = TextOut::new(out_ptr, out_len)?;
        let daily = b.bot.daily_quota(now_ms);
        let json = serde_json::to_string(&daily).map_err(|_| ONAIR_INVALID_ARGUMENT)?;
        b.status = nul_terminated(json);
        text_out.lend(&b.status)
    })
}

/// Takes what the app's other bots learned of its daily quota (the JSON of
/// `onair_bot_daily_quota_json` or `onair_daily_quota_merge`, UTF-8, no NUL
/// needed) at `now_ms`: calls needing a blocked permission, or every call
/// once the day's calls are used up, wait for the reset (each such call is
/// answered by its DONE, failure `quota_blocked`); the stream is never held
/// back. A block ends no later than a day from `now_ms`. Then poll.
///
/// Errors: NULL `bot` or `json` → ONAIR_NULL_PARAMETER; not UTF-8 →
/// ONAIR_INVALID_UTF8; not a daily quota's JSON object →
/// ONAIR_INVALID_ARGUMENT, and `onair_bot_last_error` says why. Nothing
/// changes on an error.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_share_daily_quota_json(
    bot: *mut onair_bot,
    json: *const c_char,
    json_len: usize,
    now_ms: u64,
) -> onair_result {
    boundary_on(bot, |b| {
        let text = text_arg(json, json_len)?;
        let shared = daily_quota_in(text.as_bytes())
            .map_err(|e| b.fail(ONAIR_INVALID_ARGUMENT, format_args!("daily quota: {e}")))?;
        b.bot.share_daily_quota(&shared, now_ms);
        Ok(())
    })
}

/// The kit's tally of the current broadcast with its `liveId` (null until
/// the bot learns it), the form of `ONAIR_ACTION_BROADCAST_ENDED`'s
/// `tally_json`: `{"liveId":…,"hearts":…,"donated":…,"attendance":…,
/// "people":{"<id>":{"nickname","hearts","paidHearts","donated",
/// "donations","joins","chats"}}}` (the emulator ledger's `totals` plus
/// `liveId`; the DJ kept out). Borrowed and NUL-terminated, valid until
/// the next call on the bot. Holds no secret.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER; no kit configured →
/// ONAIR_NO_KIT.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_tally_json(
    bot: *mut onair_bot,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary_on(bot, |b| {
        let text_out = TextOut::new(out_ptr, out_len)?;
        let kit = b.bot.kit().ok_or(ONAIR_NO_KIT)?;
        b.status = nul_terminated(tally_line(kit.live_id(), kit.tally()));
        text_out.lend(&b.status)
    })
}

/// One donor of the current broadcast (the kit's tally): who and how much.
/// Borrowed from the bot until the next call on it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_donor {
    /// Their id.
    pub user_id: onair_str,
    /// Their latest nickname, or NULL.
    pub nickname: onair_str,
    /// Currency units donated in this broadcast.
    pub donated: u64,
    /// How many donations.
    pub donations: u64,
}

/// The donor at `rank` (0: the top) of the current broadcast, highest
/// total first (ties by id), into `*out_donor`: for a `!top` command.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER; no kit configured →
/// ONAIR_NO_KIT; `rank` past the last donor → ONAIR_OUT_OF_RANGE.
#[no_mangle]
pub unsafe extern "C" fn onair_bot_donor(
    bot: *const onair_bot,
    rank: usize,
    out_donor: *mut onair_donor,
) -> onair_result {
    boundary_on(bot, |b| {
        let slot = out(out_donor)?;
        let kit = b.bot.kit().ok_or(ONAIR_NO_KIT)?;
        let donors = kit.tally().donors();
        let (id, totals) = donors.get(rank).ok_or(ONAIR_OUT_OF_RANGE)?;
        *slot = onair_donor {
            user_id: onair_str::of(id),
            nickname: onair_str::opt(totals.nickname.as_deref()),
            donated: totals.donated,
            donations: totals.donations,
        };
        Ok(())
    })
}

// ---- app timers ------------------------------------------------------------------

fn tag_arg<'a>(tag: *const c_char, len: usize) -> Result<&'a str, onair_result> {
    text_arg(tag, len)
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
    boundary_on(bot, |b| {
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
    boundary_on(bot, |b| {
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
    boundary_on(bot, |b| {
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
    boundary_on(bot, |b| {
        let tag = tag_arg(tag, tag_len)?;
        let found = b.bot.cancel_timer(tag);
        out_opt(out_found, found);
        Ok(())
    })
}
