//! [`Bot`]: one sans-IO machine a driver loop polls.
//!
//! It combines the token state ([`oauth`](crate::oauth)), the quota tracker
//! ([`quota`](crate::quota)), the event-stream connect-loop
//! ([`stream`](crate::stream)) with its SSE parser and event decoder, and a
//! queue of app calls. The driver owns the HTTP client, the clock and the
//! randomness; the bot owns every rule of the service.
//!
//! # The contract
//!
//! **Construction.** [`Bot::new`]`(config, saved_tokens, seed)`. Without
//! saved tokens the first poll answers [`Action::NeedsAuthorization`]: get a
//! consent code from the DJ and give it to [`Bot::authorize`]. Seed from real
//! randomness in production (`getrandom`, the OS, the time): bots that share
//! a seed back off in lockstep. Tests pass a fixed seed and get the same
//! delays every run.
//!
//! **The loop.** Methods come in four groups, as in quinn-proto:
//!
//! | group | methods | what they do |
//! |---|---|---|
//! | reports (`on_*`) | [`on_response`](Bot::on_response), [`on_transport_error`](Bot::on_transport_error), [`on_stream_open`](Bot::on_stream_open), [`on_stream_bytes`](Bot::on_stream_bytes), [`on_stream_closed`](Bot::on_stream_closed) | what happened to a request the bot asked for |
//! | app commands | [`authorize`](Bot::authorize), [`send_chat`](Bot::send_chat), [`fetch_broadcast`](Bot::fetch_broadcast), [`list_listeners`](Bot::list_listeners), [`fetch_fans`](Bot::fetch_fans), [`request_reconnect`](Bot::request_reconnect), [`shutdown`](Bot::shutdown) | what your bot wants |
//! | polling | [`poll`](Bot::poll) | the next [`Action`] |
//! | getters | [`tokens`](Bot::tokens), [`quota`](Bot::quota), [`stream`](Bot::stream), [`stop`](Bot::stop) | where things stand |
//!
//! 1. After any report or app command, call `poll(now)` until it returns
//!    [`Action::Wait`]; only then sleep (str0m's "drain until timeout").
//! 2. `Wait { until_ms }`: sleep until `until_ms`, or until a report arrives
//!    (a response, stream bytes, a close), whichever is first; then poll
//!    again. `until_ms` is always later than the `now` you polled with, and is
//!    `None` only when nothing at all is scheduled (only a report can move
//!    the bot). `poll` is safe to call early or often: a deadline that has
//!    passed makes it act at once, and no deadline is ever lost.
//! 3. [`Action::Send`] carries the request's `timeout_ms`. The bot keeps that
//!    deadline itself (it is folded into `Wait`); when it passes without a
//!    report, the bot treats the request as failed. Give your client no
//!    shorter timeout, or none. A stream ([`Action::OpenStream`]) must get no
//!    whole-body timeout at all: the bot's connect timeout and heartbeat
//!    watchdog cover it, and it asks you to close it ([`Action::CloseStream`]).
//! 4. Reports for a request the bot is done with (it timed out, or the bot
//!    closed that stream) are harmless: `Ok(())`, ignored. A report for an id
//!    the bot never issued, or one that does not fit the request (stream
//!    bytes for a plain request, bytes before `on_stream_open`), is a
//!    [`Misuse`]: returned at once, nothing changed.
//! 5. [`Action::Stopped`] is sticky: polling keeps returning it. A
//!    [`Stop::Reauthorize`] stop resumes when [`Bot::authorize`] gets a new
//!    consent code: nothing goes out with the refused tokens, the stream
//!    reopens and queued calls complete. Other stops need a person to fix
//!    something outside the bot (permissions, a block, the app's credentials).
//!
//! **The rules it follows.** 401 on a call or the stream → one refresh, then
//! once more; a second 401 → [`Stop::Reauthorize`] ([`crate::oauth::RefreshOnce`]).
//! Chat is validated before it is queued and retried a bounded number of
//! times on 429 `OAPI_MNGR_0302` and 403 `OAPI_MNGR_0208`, paced by the
//! quota tracker. Calls wait out per-second pacing and backoff; a call whose
//! permission is blocked by the daily quota fails at once instead of waiting
//! for hours. `RECONNECT` is followed at once. A bot that holds only
//! `events.chat` works: nothing polls `GET /v1/live`.
//!
//! # Which layer is for whom
//!
//! Bot authors drive [`Bot`] (or a ready-made driver over it). Someone who
//! builds only a stream reader uses [`crate::stream::ConnectLoop`]; someone
//! who manages tokens for many bots in one service uses
//! [`crate::oauth::TokenManager`]. All three take the time as an argument and
//! answer misuse with the same [`Misuse`] error.
//!
//! ```
//! use onair::{Action, BaseUrl, Bot, BotConfig, ClientCredentials};
//!
//! let base = BaseUrl::new("http://127.0.0.1:8080")?;
//! let credentials =
//!     ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "secret")?;
//! let mut bot = Bot::new(BotConfig::new(base, credentials), None, 7);
//! // No saved tokens: the DJ must authorize first.
//! assert_eq!(bot.poll(0), Action::NeedsAuthorization);
//! bot.authorize("code-from-consent", "https://bot.example/callback");
//! let Action::Send { request, timeout_ms, .. } = bot.poll(0) else { panic!() };
//! assert!(request.url.ends_with("/v1/oauth/token"));
//! assert_eq!(timeout_ms, 30_000);
//! // Nothing else to do until the exchange is answered, or it times out.
//! assert_eq!(bot.poll(0), Action::Wait { until_ms: Some(30_000) });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::VecDeque;
use std::fmt;

use crate::api::{self, ListenerPager, PagerProgress, TokenClient};
use crate::backoff::Backoff;
use crate::chat::ChatError;
use crate::endpoint::Endpoint;
use crate::event::{DecodeError, EndReason, Event, Item};
use crate::http::{BaseUrl, Header, HttpRequest};
use crate::misuse::{Misuse, RequestId};
use crate::model::{Broadcast, FanRanking, Listener};
use crate::oauth::{
    AfterUnauthorized, AuthProblem, OAuthError, RefreshOnce, RefreshPolicy, TokenManager,
    TokenOutcome, Tokens,
};
use crate::problem::{classify, Advice, Problem, ProblemKind};
use crate::quota::QuotaTracker;
use crate::secret::{ClientCredentials, Secret};
use crate::stop::Stop;
use crate::stream::{ConnectLoop, Phase, Step, StreamConfig, StreamNotice};
use crate::time::FrameId;
use crate::timers::{Tag, Timer, TimerError, Timers};

mod status;

pub use status::{Connection, Counters, QuotaBlock, Status};

/// The longest error body of a failed stream open that is kept to classify
/// it (the service's are ~200 bytes).
const MAX_STREAM_ERROR_BODY: usize = 16 * 1024;

/// A daily-quota block longer than this fails a call instead of queueing it.
const MAX_QUEUE_WAIT_MS: u64 = 60_000;

/// How the bot is set up.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BotConfig {
    /// The region's base address, e.g. `https://…` (no host is built in).
    pub base_url: BaseUrl,
    /// The token endpoints' client (credentials and client-auth style).
    pub token_client: TokenClient,
    /// When to refresh the access token.
    pub refresh: RefreshPolicy,
    /// The event stream's connect-loop tunables.
    pub stream: StreamConfig,
    /// Whether to open the event stream at all (a chat-only bot may not).
    pub events: bool,
    /// How many times one call is tried in all when the server says retry
    /// (chat limits, 5xx, per-second quota); default 3.
    pub max_attempts: u32,
    /// How long a request may take before the bot treats it as failed
    /// (default 30 s). Stream opens use the connect timeout of
    /// [`StreamConfig`] instead, and open streams the heartbeat watchdog.
    pub request_timeout_ms: u64,
    /// How many app calls may wait in the queue (default 100); one more is
    /// refused with [`CallError::QueueFull`], never dropped silently.
    pub max_queued_calls: usize,
}

impl BotConfig {
    /// Spec defaults: Basic client auth, refresh 10 minutes before expiry,
    /// the stream on, three attempts per call, 30 s per request.
    pub fn new(base_url: BaseUrl, credentials: ClientCredentials) -> Self {
        Self {
            token_client: TokenClient::new(base_url.clone(), credentials),
            base_url,
            refresh: RefreshPolicy::default(),
            stream: StreamConfig::default(),
            events: true,
            max_attempts: 3,
            request_timeout_ms: 30_000,
            max_queued_calls: 100,
        }
    }
}

/// Names one app call ([`Bot::send_chat`], [`Bot::fetch_broadcast`], …); its
/// answer comes as [`Action::Done`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallId(pub u64);

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "call#{}", self.0)
    }
}

/// What the driver should do next. See the [module docs](self).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Action {
    /// Send this request; report with [`Bot::on_response`] (or
    /// [`Bot::on_transport_error`]).
    Send {
        /// Pass it back with the response.
        id: RequestId,
        /// The request (its `Debug` redacts secrets).
        request: HttpRequest,
        /// The bot gives up on it after this long (it keeps the deadline
        /// itself); a client timeout, if any, should be no shorter.
        timeout_ms: u64,
    },
    /// Open this streaming GET; report with [`Bot::on_stream_open`],
    /// [`Bot::on_stream_bytes`], [`Bot::on_stream_closed`]. Give it no
    /// whole-body timeout: the bot watches it.
    OpenStream {
        /// Pass it back with every report on this connection.
        id: RequestId,
        /// The request.
        request: HttpRequest,
    },
    /// Close this stream connection (it ended, or the watchdog found it
    /// dead). Late reports for it are harmless.
    CloseStream {
        /// The connection to close.
        id: RequestId,
    },
    /// A stream event.
    Event {
        /// The frame's id, when it had one.
        id: Option<FrameId>,
        /// The event.
        event: Event,
    },
    /// Something worth a log line that needs no action.
    Notice(Notice),
    /// The answer to an app call.
    Done {
        /// The call.
        call: CallId,
        /// How it went.
        result: CallResult,
    },
    /// A new token pair is in force: save it (e.g. `tokens.to_json()`);
    /// without it a restart needs new DJ consent.
    PersistTokens(Tokens),
    /// An app timer is due ([`Bot::schedule`], [`Bot::every`]).
    Timer {
        /// The timer's tag.
        tag: Tag,
    },
    /// The bot has no tokens yet: send the DJ through consent and give the
    /// code to [`Bot::authorize`]. Polling keeps returning this until then;
    /// app calls made meanwhile wait and complete afterwards.
    NeedsAuthorization,
    /// Nothing to do until `until_ms` (unix ms), or until something is
    /// reported; `None`: nothing is scheduled, only a report moves the bot.
    Wait {
        /// When to poll again at the latest; always later than the `now` polled.
        until_ms: Option<u64>,
    },
    /// The bot has stopped; a person must act. Polling keeps returning this.
    Stopped(Stop),
}

/// A thing worth logging that needs no action.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Notice {
    /// A stream frame that could not be decoded (it was skipped).
    FrameSkipped(DecodeError),
    /// A stream event this version does not know.
    UnknownEvent {
        /// Its name.
        event: String,
        /// Its raw data.
        data: String,
    },
    /// An error response that the bot is handling by itself (retry, refresh,
    /// reconnect).
    Problem {
        /// Where it came from.
        endpoint: Endpoint,
        /// What it was.
        problem: Problem,
    },
    /// A request got no report within its timeout; the bot treated it as
    /// failed (a late report is ignored).
    RequestTimedOut {
        /// The request.
        id: RequestId,
        /// Its endpoint.
        endpoint: Endpoint,
    },
    /// Stream connections keep ending with `RECONNECT` at once: the next
    /// connect waits until `until_ms`.
    ReconnectStormBraked {
        /// When the next connect goes.
        until_ms: u64,
    },
}

/// The answer to an app call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallResult {
    /// [`Bot::fetch_broadcast`].
    Broadcast(Broadcast),
    /// [`Bot::list_listeners`]: every page, people deduplicated by `id`.
    Listeners(Vec<Listener>),
    /// [`Bot::fetch_fans`].
    Fans(FanRanking),
    /// [`Bot::send_chat`]: the service took the message (204).
    ChatSent,
    /// The call failed; it will not be tried again.
    Failed(CallFailure),
}

/// Why an app call failed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallFailure {
    /// The service answered with this problem (not on air, permission
    /// missing, chat blocked after retries, …).
    Problem(Problem),
    /// A daily quota blocks the call's permission until then (unix ms).
    QuotaBlocked {
        /// When the block ends.
        until_ms: u64,
    },
    /// 2xx, but the body did not decode.
    InvalidBody(api::ResponseError),
    /// The listener pager gave up (a repeated cursor, too many pages).
    Pager(api::PagerError),
    /// No response (or none in time), and the call is not safe to repeat (a
    /// chat may have been posted) or its attempts ran out.
    Transport,
    /// The bot stopped before the call could finish.
    Cancelled,
}

/// An app call refused at once (a local error: nothing was queued).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The chat message would be refused by the server.
    #[error(transparent)]
    Chat(#[from] ChatError),
    /// The call queue holds [`BotConfig::max_queued_calls`] calls already.
    #[error("the call queue is full ({limit} calls waiting)")]
    QueueFull {
        /// The limit.
        limit: usize,
    },
    /// The bot has stopped (and the stop is not one a new consent resumes).
    #[error("the bot has stopped: {0}")]
    Stopped(Stop),
}

/// An app call waiting in the queue or in flight.
#[derive(Debug, Clone)]
struct Call {
    id: CallId,
    op: Op,
    /// Attempts made so far.
    attempts: u32,
    /// Not before this time (retry delays).
    not_before_ms: u64,
    /// The spec's one-refresh rule for this call.
    unauthorized: RefreshOnce,
    /// A 401 was met with this token generation: wait for a newer one.
    wait_for_newer_than: Option<u64>,
}

#[derive(Debug, Clone)]
enum Op {
    Broadcast,
    Listeners(ListenerPager),
    Fans,
    Chat(String),
}

impl Op {
    fn endpoint(&self) -> Endpoint {
        match self {
            Op::Broadcast => Endpoint::Live,
            Op::Listeners(_) => Endpoint::Listeners,
            Op::Fans => Endpoint::Fans,
            Op::Chat(_) => Endpoint::Chat,
        }
    }
}

#[derive(Debug)]
enum Purpose {
    Token,
    Revoke,
    /// A call, with the token generation it was sent with.
    Call(Box<Call>, u64),
}

#[derive(Debug)]
struct InFlight {
    id: RequestId,
    purpose: Purpose,
    deadline_ms: u64,
}

/// The stream connection the driver holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Conn {
    /// Asked for; no response yet.
    Opening(RequestId),
    /// 2xx: bytes are events.
    Open(RequestId),
    /// An error status: bytes are its body, classified when it closes.
    Failed {
        id: RequestId,
        status: u16,
        headers: Vec<(Vec<u8>, Vec<u8>)>,
        body: Vec<u8>,
    },
}

impl Conn {
    fn id(&self) -> RequestId {
        match self {
            Conn::Opening(id) | Conn::Open(id) | Conn::Failed { id, .. } => *id,
        }
    }
}

/// The bot machine. See the [module docs](self).
#[derive(Debug)]
pub struct Bot {
    base_url: BaseUrl,
    events: bool,
    max_attempts: u32,
    request_timeout_ms: u64,
    max_queued_calls: usize,
    tokens: TokenManager,
    stream: ConnectLoop,
    quota: QuotaTracker,
    next_request: u64,
    next_call: u64,
    in_flight: Vec<InFlight>,
    conn: Option<Conn>,
    /// The connect-loop asked for a refresh and waits for it.
    stream_wants_refresh: bool,
    /// A code to exchange: (code, redirect_uri).
    pending_code: Option<(Secret, String)>,
    /// Backoff for refreshes that failed in a way that may pass.
    token_backoff: Backoff,
    token_retry_at_ms: u64,
    calls: VecDeque<Call>,
    call_backoff: Backoff,
    out: VecDeque<Action>,
    stopped: Option<Stop>,
    /// [`Bot::shutdown`] asked to revoke; sent once no token request is in flight.
    revoke_pending: bool,
    /// A stop was lifted by a new consent code: reconnect once the new pair
    /// is in.
    restart_stream: bool,
    timers: Timers,
    counters: Counters,
    /// Chat calls not yet answered, to count their fate.
    chat_calls: Vec<CallId>,
    /// The open connection's end frame was seen (its close is not a drop).
    end_seen: bool,
    /// The token generation the stream connection was opened with.
    stream_generation: u64,
}

impl Bot {
    /// A bot resuming from `saved` tokens (see [`Tokens::from_json`]), or
    /// waiting for [`Bot::authorize`] without them. `seed` fixes every
    /// jitter, so a run is reproducible; seed from real randomness in
    /// production (bots sharing a seed back off in lockstep).
    pub fn new(config: BotConfig, saved: Option<Tokens>, seed: u64) -> Self {
        let tokens = match saved {
            Some(t) => TokenManager::with_tokens(config.token_client, config.refresh, t),
            None => TokenManager::new(config.token_client, config.refresh),
        };
        Self {
            base_url: config.base_url,
            events: config.events,
            max_attempts: config.max_attempts.max(1),
            request_timeout_ms: config.request_timeout_ms.max(1),
            max_queued_calls: config.max_queued_calls,
            tokens,
            stream: ConnectLoop::new(config.stream, seed),
            quota: QuotaTracker::new(seed ^ 0x9E37_79B9_7F4A_7C15),
            next_request: 0,
            next_call: 0,
            in_flight: Vec::new(),
            conn: None,
            stream_wants_refresh: false,
            pending_code: None,
            token_backoff: Backoff::new(seed ^ 0x7070_7070_0000_0001),
            token_retry_at_ms: 0,
            calls: VecDeque::new(),
            call_backoff: Backoff::new(seed ^ 0xCA11_0000_0000_0002),
            out: VecDeque::new(),
            stopped: None,
            revoke_pending: false,
            restart_stream: false,
            timers: Timers::new(),
            counters: Counters::default(),
            chat_calls: Vec::new(),
            end_seen: false,
            stream_generation: 0,
        }
    }

    // ---- app commands --------------------------------------------------------

    /// Exchanges the code from DJ consent (single use: sent once, never
    /// retried). The answer to [`Action::NeedsAuthorization`], and the way
    /// back after [`Stop::Reauthorize`].
    pub fn authorize(&mut self, code: &str, redirect_uri: &str) {
        if self
            .stopped
            .as_ref()
            .is_some_and(|s| !s.resumes_with_new_consent())
        {
            return;
        }
        self.pending_code = Some((Secret::new(code), redirect_uri.to_owned()));
        if self.stopped.take().is_some() {
            // The stream starts over once the new pair is in. Until then it
            // waits: the connect-loop may hold the stop itself (a second 401
            // on the stream), and must not report it again meanwhile.
            self.restart_stream = true;
            self.stream.await_new_tokens();
        }
    }

    /// Queues a chat message after checking it locally (at most 200 UTF-16
    /// units, not blank), so no quota call is spent on one the server would
    /// refuse. Messages go out in the order queued.
    pub fn send_chat(&mut self, message: &str) -> Result<CallId, CallError> {
        crate::chat::validate_chat(message)?;
        let call = self.queue(Op::Chat(message.to_owned()))?;
        self.chat_calls.push(call);
        Ok(call)
    }

    /// Queues `GET /v1/live`.
    pub fn fetch_broadcast(&mut self) -> Result<CallId, CallError> {
        self.queue(Op::Broadcast)
    }

    /// Queues the listener list: every page, deduplicated by `id`.
    pub fn list_listeners(&mut self) -> Result<CallId, CallError> {
        self.queue(Op::Listeners(ListenerPager::new()))
    }

    /// Queues `GET /v1/live/fans`.
    pub fn fetch_fans(&mut self) -> Result<CallId, CallError> {
        self.queue(Op::Fans)
    }

    /// Reconnects the stream at once without backoff: after the DJ makes the
    /// bot a manager, presence events start on the next connection.
    pub fn request_reconnect(&mut self, now_ms: u64) {
        self.stream.request_reconnect(now_ms);
    }

    /// Fires [`Action::Timer`] with `tag` once at `at_ms` (unix ms). The
    /// deadline is folded into [`Action::Wait`]: no timer of your own is
    /// needed. Setting a tag again replaces its timer.
    pub fn schedule(&mut self, at_ms: u64, tag: &str) -> Result<(), TimerError> {
        self.timers.schedule(at_ms, tag)
    }

    /// Fires [`Action::Timer`] with `tag` every `period_ms`, first at
    /// `first_at_ms` (see [`Timers::every`] for the catch-up rule).
    pub fn every(&mut self, period_ms: u64, tag: &str, first_at_ms: u64) -> Result<(), TimerError> {
        self.timers.every(period_ms, tag, first_at_ms)
    }

    /// Sets a timer built with [`Timer`], e.g. one that fires only while the
    /// stream is connected (`Timer::every(…).while_connected()`).
    pub fn set_timer(&mut self, tag: &str, timer: Timer) -> Result<(), TimerError> {
        self.timers.set(tag, timer)
    }

    /// Cancels the timer `tag`; `false` when there was none.
    pub fn cancel_timer(&mut self, tag: &str) -> bool {
        self.timers.cancel(tag)
    }

    /// Stops the bot: queued calls are cancelled, the stream is closed, and
    /// with `revoke` the tokens are revoked (one last request, sent once any
    /// token request in flight has been answered) and forgotten. A pair that
    /// arrives meanwhile is still handed out for persistence.
    pub fn shutdown(&mut self, revoke: bool) {
        self.revoke_pending = revoke;
        self.try_revoke();
        self.halt(Stop::ShutDown);
    }

    // ---- getters -------------------------------------------------------------

    /// The token state, e.g. to show when the next refresh is due.
    pub fn tokens(&self) -> &TokenManager {
        &self.tokens
    }

    /// The quota tracker, e.g. to show the daily blocks in force.
    pub fn quota(&self) -> &QuotaTracker {
        &self.quota
    }

    /// The event stream's connect-loop, e.g. for its phase or last problem.
    pub fn stream(&self) -> &ConnectLoop {
        &self.stream
    }

    /// Why the bot stopped, once it has.
    pub fn stop(&self) -> Option<&Stop> {
        self.stopped.as_ref()
    }

    /// App calls queued and not yet answered (in flight included).
    pub fn pending_calls(&self) -> usize {
        self.calls.len()
            + self
                .in_flight
                .iter()
                .filter(|f| matches!(f.purpose, Purpose::Call(..)))
                .count()
    }

    fn queue(&mut self, op: Op) -> Result<CallId, CallError> {
        if let Some(stop) = &self.stopped {
            if !stop.resumes_with_new_consent() {
                return Err(CallError::Stopped(stop.clone()));
            }
        }
        if self.calls.len() >= self.max_queued_calls {
            return Err(CallError::QueueFull {
                limit: self.max_queued_calls,
            });
        }
        self.next_call += 1;
        let id = CallId(self.next_call);
        self.calls.push_back(Call {
            id,
            op,
            attempts: 0,
            not_before_ms: 0,
            unauthorized: RefreshOnce::default(),
            wait_for_newer_than: None,
        });
        Ok(id)
    }

    fn request_id(&mut self) -> RequestId {
        self.next_request += 1;
        RequestId(self.next_request)
    }

    fn generation(&self) -> u64 {
        self.tokens.tokens().map_or(0, Tokens::generation)
    }

    // ---- polling -------------------------------------------------------------

    /// The next thing to do at `now_ms`. See the [module docs](self).
    pub fn poll(&mut self, now_ms: u64) -> Action {
        let action = self.next_action(now_ms);
        match &action {
            Action::Done { call, result } => {
                if let Some(i) = self.chat_calls.iter().position(|c| c == call) {
                    self.chat_calls.swap_remove(i);
                    match result {
                        CallResult::ChatSent => self.counters.chats_sent += 1,
                        _ => self.counters.chats_failed += 1,
                    }
                }
            }
            Action::PersistTokens(_) => self.counters.token_pairs += 1,
            _ => {}
        }
        action
    }

    /// A snapshot for dashboards and logs (see [`Status`]).
    ///
    /// ```
    /// use onair::{BaseUrl, Bot, BotConfig, ClientCredentials};
    /// use onair::bot::Connection;
    ///
    /// let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// let bot = Bot::new(BotConfig::new(BaseUrl::new("http://127.0.0.1:1")?, creds), None, 1);
    /// let status = bot.status(0);
    /// assert_eq!(status.connection, Connection::NeedsAuthorization);
    /// assert!(status.to_json().starts_with(r#"{"connection":{"state":"needsAuthorization"}"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn status(&self, now_ms: u64) -> Status {
        let connection = if let Some(stop) = &self.stopped {
            Connection::Stopped {
                code: stop.code().to_owned(),
                message: stop.to_string(),
            }
        } else if self.tokens.problem() == Some(&AuthProblem::NotAuthorized) {
            Connection::NeedsAuthorization
        } else if !self.events {
            Connection::Off
        } else {
            match self.stream.phase() {
                Phase::Open => Connection::Connected {
                    since_ms: self.stream.open_since_ms().unwrap_or(now_ms),
                },
                Phase::Connecting => Connection::Connecting { since_ms: None },
                Phase::Refreshing => Connection::Refreshing,
                Phase::Stopped => Connection::Stopped {
                    code: self.stream.stop().map_or("stopped", Stop::code).to_owned(),
                    message: self.stream.stop().map(Stop::to_string).unwrap_or_default(),
                },
                _ => {
                    let at = self.stream.next_connect_at_ms().unwrap_or(now_ms);
                    if self.stream.waiting_for_broadcast() {
                        Connection::WaitingForBroadcast {
                            next_attempt_ms: at,
                        }
                    } else if self.tokens.access_token(now_ms).is_none() {
                        Connection::Refreshing
                    } else {
                        Connection::BackingOff { until_ms: at }
                    }
                }
            }
        };
        let scope = self
            .tokens
            .tokens()
            .map(|t| t.scope().clone())
            .unwrap_or_default();
        let (cannot, notes) = status::limits(&scope);
        Status {
            connection,
            counters: self.counters.clone(),
            scope: scope.iter().map(|p| p.as_str().to_owned()).collect(),
            cannot,
            notes,
            pending_calls: self.pending_calls(),
            token_generation: self.tokens.tokens().map(Tokens::generation),
            access_expires_at_ms: self.tokens.tokens().map(Tokens::access_expires_at_ms),
            refresh_at_ms: self.tokens.refresh_at_ms(),
            quota_blocks: self
                .quota
                .blocks(now_ms)
                .into_iter()
                .map(|b| QuotaBlock {
                    scope: b.scope.map(|p| p.as_str().to_owned()),
                    until_ms: b.until_ms,
                })
                .collect(),
        }
    }

    fn next_action(&mut self, now_ms: u64) -> Action {
        if let Some(action) = self.out.pop_front() {
            return action;
        }
        if let Some(stop) = &self.stopped {
            return Action::Stopped(stop.clone());
        }
        self.expire_requests(now_ms);
        if let Some(action) = self.out.pop_front() {
            return action;
        }
        if let Some(action) = self.poll_tokens(now_ms) {
            return action;
        }
        if let Some(action) = self.decided() {
            return action;
        }
        if let Some(action) = self.poll_stream(now_ms) {
            return action;
        }
        if let Some(action) = self.decided() {
            return action;
        }
        // The stream may just have asked for a refresh.
        if let Some(action) = self.poll_tokens(now_ms).or_else(|| self.decided()) {
            return action;
        }
        if let Some(action) = self.poll_calls(now_ms).or_else(|| self.decided()) {
            return action;
        }
        if let Some(tag) = self.timers.pop_due(now_ms, self.connected()) {
            return Action::Timer { tag };
        }
        if self.needs_authorization() {
            return Action::NeedsAuthorization;
        }
        Action::Wait {
            until_ms: self.next_deadline(now_ms),
        }
    }

    /// What is already decided: queued output first, then a stop.
    fn decided(&mut self) -> Option<Action> {
        self.out
            .pop_front()
            .or_else(|| self.stopped.clone().map(Action::Stopped))
    }

    fn needs_authorization(&self) -> bool {
        self.pending_code.is_none()
            && !self.token_request_in_flight()
            && self.tokens.problem() == Some(&AuthProblem::NotAuthorized)
    }

    /// The earliest time, strictly after `now_ms`, at which a poll would act
    /// without any report: each component's own deadline, gathered in one
    /// place so none is lost.
    fn next_deadline(&self, now_ms: u64) -> Option<u64> {
        let mut earliest: Option<u64> = None;
        let mut add = |at: Option<u64>| {
            if let Some(at) = at.filter(|&at| at > now_ms) {
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
            }
        };
        for request in &self.in_flight {
            add(Some(request.deadline_ms));
        }
        if self.events {
            add(self.stream.deadline());
        }
        if !self.token_request_in_flight() && self.tokens.problem().is_none() {
            add(self
                .tokens
                .refresh_at_ms()
                .map(|at| at.max(self.token_retry_at_ms)));
            if self.stream_wants_refresh {
                add(Some(self.token_retry_at_ms));
            }
        }
        add(self.call_deadline(now_ms));
        add(self.timers.next_deadline(self.connected()));
        earliest
    }

    /// Whether the event stream is open.
    fn connected(&self) -> bool {
        matches!(self.conn, Some(Conn::Open(_)))
    }

    /// Requests whose deadline passed without a report: failed by the bot.
    fn expire_requests(&mut self, now_ms: u64) {
        while let Some(index) = self.in_flight.iter().position(|f| f.deadline_ms <= now_ms) {
            let expired = self.in_flight.swap_remove(index);
            let endpoint = match &expired.purpose {
                Purpose::Token => Endpoint::Token,
                Purpose::Revoke => Endpoint::Revoke,
                Purpose::Call(call, _) => call.op.endpoint(),
            };
            self.out.push_back(Action::Notice(Notice::RequestTimedOut {
                id: expired.id,
                endpoint,
            }));
            self.on_no_response(expired.purpose, now_ms);
        }
    }

    fn token_request_in_flight(&self) -> bool {
        self.in_flight
            .iter()
            .any(|f| matches!(f.purpose, Purpose::Token))
    }

    fn send(&mut self, purpose: Purpose, request: HttpRequest, now_ms: u64) -> Action {
        let id = self.request_id();
        self.in_flight.push(InFlight {
            id,
            purpose,
            deadline_ms: now_ms.saturating_add(self.request_timeout_ms),
        });
        Action::Send {
            id,
            request,
            timeout_ms: self.request_timeout_ms,
        }
    }

    fn poll_tokens(&mut self, now_ms: u64) -> Option<Action> {
        if self.token_request_in_flight() {
            return None;
        }
        if let Some((code, redirect_uri)) = self.pending_code.take() {
            return match self
                .tokens
                .start_exchange(code.expose(), &redirect_uri, now_ms)
            {
                Ok(request) => Some(self.send(Purpose::Token, request, now_ms)),
                Err(_) => {
                    // The same code again, or a malformed one: it cannot be used.
                    self.halt(Stop::Reauthorize(AuthProblem::CodeUnusable));
                    None
                }
            };
        }
        match self.tokens.problem() {
            None => {}
            // Not authorized yet: `NeedsAuthorization`, not a stop.
            Some(AuthProblem::NotAuthorized) => return None,
            Some(problem) => {
                let stop = Stop::from(problem.clone());
                self.halt(stop);
                return None;
            }
        }
        // A 401 on a call makes the refresh due at once (access_rejected).
        let wanted = self.stream_wants_refresh || self.tokens.refresh_due(now_ms);
        if !wanted || now_ms < self.token_retry_at_ms {
            return None;
        }
        match self.tokens.start_refresh(now_ms) {
            Ok(request) => Some(self.send(Purpose::Token, request, now_ms)),
            Err(_) => {
                // Blocked (no refresh token, or it expired).
                if let Some(problem) = self.tokens.problem() {
                    let stop = Stop::from(problem.clone());
                    self.halt(stop);
                }
                None
            }
        }
    }

    fn poll_stream(&mut self, now_ms: u64) -> Option<Action> {
        if !self.events {
            return None;
        }
        loop {
            if self.stream.deadline().is_some_and(|at| at > now_ms) {
                return None;
            }
            // Only a usable token can open the stream. Without one a refresh is
            // due or under way (or a person must act), and its answer moves
            // the loop on; a connection the loop is done with is closed now.
            if self.stream.phase() == Phase::Waiting && self.tokens.access_token(now_ms).is_none() {
                let conn = self.conn.take()?;
                return Some(Action::CloseStream { id: conn.id() });
            }
            match self.stream.poll(now_ms) {
                Step::Connect => {
                    let Some(token) = self.tokens.access_token(now_ms) else {
                        // Cannot happen (checked above); fail the attempt.
                        let _ = self.stream.on_connect_failed(now_ms);
                        return None;
                    };
                    match api::events(&self.base_url, token) {
                        Ok(request) => {
                            let id = self.request_id();
                            self.conn = Some(Conn::Opening(id));
                            self.stream_generation = self.generation();
                            return Some(Action::OpenStream { id, request });
                        }
                        Err(_) => {
                            // A token with control characters: nothing to send.
                            self.tokens.reject_access();
                            self.halt(Stop::Reauthorize(AuthProblem::AccessRejected));
                            return None;
                        }
                    }
                }
                Step::Close => {
                    if let Some(conn) = self.conn.take() {
                        if matches!(conn, Conn::Open(_)) && !self.end_seen {
                            // The watchdog found it silent.
                            self.counters.drops += 1;
                        }
                        return Some(Action::CloseStream { id: conn.id() });
                    }
                }
                Step::RefreshToken => {
                    // The stream's token expired. When the bot has refreshed
                    // since that connection opened, the new pair is the
                    // refresh: reconnect with it (one refresh per expiry).
                    if self.generation() > self.stream_generation
                        && self.tokens.access_token(now_ms).is_some()
                    {
                        let _ = self.stream.on_token_refreshed(now_ms);
                        continue;
                    }
                    self.stream_wants_refresh = true;
                    return None;
                }
                Step::Notice(StreamNotice::ReconnectStormBraked { until_ms }) => {
                    return Some(Action::Notice(Notice::ReconnectStormBraked { until_ms }));
                }
                Step::Wait { .. } => return None,
                Step::Stopped(stop) => {
                    if matches!(stop, Stop::Reauthorize(_)) {
                        self.tokens.reject_access();
                    }
                    self.halt(stop);
                    return None;
                }
            }
        }
    }

    /// When the head call could go, if it waits only for time.
    fn call_deadline(&self, now_ms: u64) -> Option<u64> {
        let head = self.calls.front()?;
        let blocked = self
            .in_flight
            .iter()
            .any(|f| matches!(f.purpose, Purpose::Call(..)))
            || head
                .wait_for_newer_than
                .is_some_and(|seen| self.generation() <= seen)
            || self.tokens.access_token(now_ms).is_none();
        if blocked {
            return None;
        }
        let quota_at = self.quota.next_call_at_endpoint(head.op.endpoint(), now_ms);
        Some(quota_at.max(head.not_before_ms))
    }

    fn poll_calls(&mut self, now_ms: u64) -> Option<Action> {
        let at = self.call_deadline(now_ms)?;
        let head = self.calls.front()?;
        let quota_at = self.quota.next_call_at_endpoint(head.op.endpoint(), now_ms);
        if quota_at > now_ms.saturating_add(MAX_QUEUE_WAIT_MS) {
            let call = self.calls.pop_front()?;
            return Some(done(
                call.id,
                CallResult::Failed(CallFailure::QuotaBlocked { until_ms: quota_at }),
            ));
        }
        if at > now_ms {
            return None;
        }
        let generation = self.generation();
        let token = self.tokens.access_token(now_ms)?;
        let mut call = self.calls.pop_front()?;
        let built = match &mut call.op {
            Op::Broadcast => api::live(&self.base_url, token),
            Op::Fans => api::fans(&self.base_url, token),
            Op::Chat(message) => api::chat(&self.base_url, token, message),
            Op::Listeners(pager) => match pager.next_request(&self.base_url, token) {
                Ok(Some(request)) => Ok(request),
                Ok(None) => {
                    let listeners = std::mem::take(pager).into_listeners();
                    return Some(done(call.id, CallResult::Listeners(listeners)));
                }
                Err(e) => Err(e),
            },
        };
        match built {
            Ok(request) => {
                call.attempts += 1;
                Some(self.send(Purpose::Call(Box::new(call), generation), request, now_ms))
            }
            Err(_) => Some(done(call.id, CallResult::Failed(CallFailure::Cancelled))),
        }
    }

    fn halt(&mut self, stop: Stop) {
        if self.stopped.is_some() {
            return;
        }
        if let Some(conn) = self.conn.take() {
            self.out.push_back(Action::CloseStream { id: conn.id() });
        }
        if !stop.resumes_with_new_consent() {
            for call in self.calls.drain(..) {
                self.out
                    .push_back(done(call.id, CallResult::Failed(CallFailure::Cancelled)));
            }
        }
        self.stopped = Some(stop);
    }

    fn try_revoke(&mut self) {
        if !self.revoke_pending {
            return;
        }
        match self.tokens.revoke() {
            Ok(request) => {
                self.revoke_pending = false;
                // Sent at "time 0" of its own: the bot is stopping, so its
                // deadline never matters; it is kept only to match the report.
                let id = self.request_id();
                self.in_flight.push(InFlight {
                    id,
                    purpose: Purpose::Revoke,
                    deadline_ms: u64::MAX,
                });
                self.out.push_back(Action::Send {
                    id,
                    request,
                    timeout_ms: self.request_timeout_ms,
                });
            }
            // A refresh or exchange is in flight: its answer comes first.
            Err(OAuthError::Misuse(Misuse::TokenRequestInFlight)) => {}
            Err(_) => self.revoke_pending = false,
        }
    }

    // ---- reports -------------------------------------------------------------

    /// Whether `id` was ever issued by this bot.
    fn issued(&self, id: RequestId) -> bool {
        (1..=self.next_request).contains(&id.0)
    }

    /// Finds the plain request `id`: `Ok(Some)` in flight, `Ok(None)` a late
    /// report of a request the bot is done with, `Err` never issued.
    fn take_in_flight(&mut self, id: RequestId) -> Result<Option<Purpose>, Misuse> {
        if !self.issued(id) {
            return Err(Misuse::UnknownRequest(id));
        }
        Ok(self
            .in_flight
            .iter()
            .position(|f| f.id == id)
            .map(|index| self.in_flight.swap_remove(index).purpose))
    }

    fn is_plain_request(&self, id: RequestId) -> bool {
        self.in_flight.iter().any(|f| f.id == id)
    }

    /// The complete response to [`Action::Send`] (or a stream open reported
    /// whole instead of through the stream methods). Headers: any iterator
    /// of (name, value) pairs, e.g. `&[("retry-after", "30")]` or reqwest's
    /// `resp.headers()`.
    pub fn on_response<H: Header>(
        &mut self,
        id: RequestId,
        status: u16,
        headers: impl IntoIterator<Item = H>,
        body: &[u8],
        now_ms: u64,
    ) -> Result<(), Misuse> {
        if matches!(&self.conn, Some(Conn::Opening(open)) if *open == id) {
            self.on_stream_open(id, status, headers, now_ms)?;
            self.on_stream_bytes(id, body, now_ms)?;
            return self.on_stream_closed(id, now_ms);
        }
        if self.conn.as_ref().is_some_and(|c| c.id() == id) {
            return Err(Misuse::NotAStream(id));
        }
        match self.take_in_flight(id)? {
            Some(Purpose::Token) => self.on_token_response(status, headers, body, now_ms),
            Some(Purpose::Revoke) | None => {}
            Some(Purpose::Call(call, generation)) => {
                self.on_call_response(*call, generation, status, headers, body, now_ms);
            }
        }
        Ok(())
    }

    /// A request got no response (connect error, timeout, reset).
    pub fn on_transport_error(&mut self, id: RequestId, now_ms: u64) -> Result<(), Misuse> {
        if self.conn.as_ref().is_some_and(|c| c.id() == id) {
            return self.on_stream_closed(id, now_ms);
        }
        if let Some(purpose) = self.take_in_flight(id)? {
            self.on_no_response(purpose, now_ms);
        }
        Ok(())
    }

    fn on_no_response(&mut self, purpose: Purpose, now_ms: u64) {
        match purpose {
            Purpose::Token => {
                if let Ok(outcome) = self.tokens.on_transport_failure(now_ms) {
                    self.on_token_outcome(outcome, now_ms);
                }
            }
            Purpose::Revoke => {}
            Purpose::Call(call, _) => {
                let repeatable = !matches!(call.op, Op::Chat(_));
                self.retry_or_fail(*call, repeatable, CallFailure::Transport, now_ms);
            }
        }
    }

    /// The status line and headers of [`Action::OpenStream`]. A 2xx opens the
    /// stream; any other status is a failure whose body follows through
    /// [`Bot::on_stream_bytes`] and is judged at [`Bot::on_stream_closed`].
    pub fn on_stream_open<H: Header>(
        &mut self,
        id: RequestId,
        status: u16,
        headers: impl IntoIterator<Item = H>,
        now_ms: u64,
    ) -> Result<(), Misuse> {
        match &self.conn {
            Some(Conn::Opening(open)) if *open == id => {}
            Some(conn) if conn.id() == id => return Err(Misuse::NotAStream(id)),
            _ => return self.late_stream_report(id),
        }
        if (200..300).contains(&status) {
            self.stream
                .on_response(status, headers, b"", now_ms)
                .map_err(|_| Misuse::NotAStream(id))?;
            self.conn = Some(Conn::Open(id));
            self.end_seen = false;
            self.counters.connects += 1;
        } else {
            self.conn = Some(Conn::Failed {
                id,
                status,
                headers: headers
                    .into_iter()
                    .take(64)
                    .map(|h| (h.name().to_vec(), h.value().to_vec()))
                    .collect(),
                body: Vec::new(),
            });
        }
        Ok(())
    }

    /// A report on a stream id that is not the current connection: harmless
    /// for a connection the bot closed, misuse otherwise.
    fn late_stream_report(&self, id: RequestId) -> Result<(), Misuse> {
        if !self.issued(id) {
            Err(Misuse::UnknownRequest(id))
        } else if self.is_plain_request(id) {
            Err(Misuse::NotAStream(id))
        } else {
            Ok(())
        }
    }

    /// A chunk of the open stream's body, split anywhere.
    pub fn on_stream_bytes(
        &mut self,
        id: RequestId,
        chunk: &[u8],
        now_ms: u64,
    ) -> Result<(), Misuse> {
        match &mut self.conn {
            Some(Conn::Open(open)) if *open == id => {}
            Some(Conn::Failed {
                id: failed, body, ..
            }) if *failed == id => {
                let room = MAX_STREAM_ERROR_BODY.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                return Ok(());
            }
            Some(Conn::Opening(opening)) if *opening == id => {
                return Err(Misuse::StreamNotStarted(id))
            }
            _ => return self.late_stream_report(id),
        }
        let counters = &mut self.counters;
        for item in self.stream.on_bytes(chunk, now_ms) {
            match item {
                Item::Event { id, event } => {
                    match &event {
                        Event::Chat(_) => counters.chat += 1,
                        Event::Presence(_) => counters.presence += 1,
                        Event::Like(_) => counters.like += 1,
                        Event::Donation(_) => counters.donation += 1,
                        Event::End(end) => {
                            self.end_seen = true;
                            match end.reason {
                                EndReason::LiveEnded => counters.ends_live_ended += 1,
                                EndReason::TokenExpired => counters.ends_token_expired += 1,
                                EndReason::Reconnect => counters.ends_reconnect += 1,
                                EndReason::Other(_) => counters.drops += 1,
                            }
                        }
                    }
                    self.out.push_back(Action::Event { id, event });
                }
                Item::Unknown { event, data, .. } => {
                    counters.unknown_events += 1;
                    self.out
                        .push_back(Action::Notice(Notice::UnknownEvent { event, data }));
                }
                Item::Error(e) => {
                    counters.decode_errors += 1;
                    self.out.push_back(Action::Notice(Notice::FrameSkipped(e)));
                }
                Item::Heartbeat => {
                    counters.heartbeats += 1;
                    counters.last_heartbeat_ms = Some(now_ms);
                }
                Item::Comment(_) | Item::Retry(_) => {}
            }
        }
        Ok(())
    }

    /// The stream connection ended (end of body or network error). Reporting
    /// it for a connection the bot asked to close is allowed and changes
    /// nothing.
    pub fn on_stream_closed(&mut self, id: RequestId, now_ms: u64) -> Result<(), Misuse> {
        let Some(conn) = self.conn.take_if(|c| c.id() == id) else {
            return self.late_stream_report(id);
        };
        match conn {
            Conn::Failed {
                status,
                headers,
                body,
                ..
            } => {
                if let Ok(problem) = self.stream.on_response(status, &headers, &body, now_ms) {
                    self.notice(Endpoint::Events, &problem);
                }
            }
            Conn::Opening(_) => {
                let _ = self.stream.on_connect_failed(now_ms);
            }
            Conn::Open(_) => {
                if !self.end_seen {
                    self.counters.drops += 1;
                }
                self.stream.on_closed(now_ms);
            }
        }
        Ok(())
    }

    fn notice(&mut self, endpoint: Endpoint, problem: &Problem) {
        if !problem.is_ok() {
            self.out.push_back(Action::Notice(Notice::Problem {
                endpoint,
                problem: problem.clone(),
            }));
        }
    }

    fn on_token_response<H: Header>(
        &mut self,
        status: u16,
        headers: impl IntoIterator<Item = H>,
        body: &[u8],
        now_ms: u64,
    ) {
        let problem = classify(Endpoint::Token, status, headers, body);
        if let Ok(outcome) = self.tokens.on_response(status, body, now_ms) {
            if !matches!(outcome, TokenOutcome::Persist(_)) {
                self.notice(Endpoint::Token, &problem);
            }
            self.on_token_outcome(outcome, now_ms);
        }
    }

    fn on_token_outcome(&mut self, outcome: TokenOutcome, now_ms: u64) {
        match outcome {
            TokenOutcome::Persist(tokens) => {
                self.token_backoff.reset();
                self.token_retry_at_ms = 0;
                if self.stream_wants_refresh {
                    self.stream_wants_refresh = false;
                    let _ = self.stream.on_token_refreshed(now_ms);
                }
                let restart = std::mem::take(&mut self.restart_stream);
                if self.stopped.is_none() && (restart || self.stream.phase() == Phase::Stopped) {
                    self.stream.restart(now_ms);
                }
                self.out.push_back(Action::PersistTokens(tokens));
            }
            TokenOutcome::RetryLater(_) => {
                self.token_retry_at_ms = now_ms.saturating_add(self.token_backoff.next_delay_ms());
            }
            TokenOutcome::Blocked(problem) => self.halt(Stop::from(problem)),
        }
        self.try_revoke();
    }

    fn on_call_response<H: Header>(
        &mut self,
        mut call: Call,
        sent_generation: u64,
        status: u16,
        headers: impl IntoIterator<Item = H>,
        body: &[u8],
        now_ms: u64,
    ) {
        let endpoint = call.op.endpoint();
        let problem = classify(endpoint, status, headers, body);
        self.quota.on_response(endpoint, &problem, now_ms);
        if problem.advice != Advice::RefreshToken {
            call.unauthorized.on_success();
        }
        if problem.is_ok() {
            self.call_backoff.reset();
            self.on_call_success(call, body);
            return;
        }
        match problem.advice {
            // Sent with a pair that has been replaced since: not this
            // token's fault; send again with the new one.
            Advice::RefreshToken if self.generation() > sent_generation => {
                self.requeue_front(call, now_ms);
            }
            Advice::RefreshToken => {
                self.notice(endpoint, &problem);
                call.wait_for_newer_than = Some(sent_generation);
                call.attempts = call.attempts.saturating_sub(1);
                match call.unauthorized.on_unauthorized() {
                    // One refresh, then this call once more (spec 7.3).
                    AfterUnauthorized::RefreshThenRetry => self.tokens.access_rejected(),
                    // The refreshed token was refused too: the DJ must
                    // authorize again; the call waits for the new grant.
                    AfterUnauthorized::Reauthorize => {
                        call.unauthorized = RefreshOnce::default();
                        self.tokens.reject_access();
                        self.halt(Stop::Reauthorize(AuthProblem::AccessRejected));
                    }
                }
                self.requeue_front(call, now_ms);
            }
            Advice::RetrySoon | Advice::RetryBackoff => {
                self.notice(endpoint, &problem);
                let quota_paced = matches!(
                    problem.kind,
                    ProblemKind::ChatRateLimited | ProblemKind::QuotaPerSecond
                );
                if quota_paced {
                    // The quota tracker already holds the next call back.
                    self.retry_in(call, 0, CallFailure::Problem(problem), now_ms);
                } else {
                    self.retry_or_fail(call, true, CallFailure::Problem(problem), now_ms);
                }
            }
            Advice::RetryAfter => {
                self.notice(endpoint, &problem);
                let until_ms = self.quota.next_call_at_endpoint(endpoint, now_ms);
                self.out.push_back(done(
                    call.id,
                    CallResult::Failed(CallFailure::QuotaBlocked { until_ms }),
                ));
            }
            _ => {
                // Not on air, a missing permission, a malformed request, the
                // bot blocked: a state of the broadcast this call cannot change.
                self.out.push_back(done(
                    call.id,
                    CallResult::Failed(CallFailure::Problem(problem)),
                ));
            }
        }
    }

    fn on_call_success(&mut self, mut call: Call, body: &[u8]) {
        let result = match &mut call.op {
            Op::Chat(_) => CallResult::ChatSent,
            Op::Broadcast => match api::decode_broadcast(body) {
                Ok(broadcast) => CallResult::Broadcast(broadcast),
                Err(e) => CallResult::Failed(CallFailure::InvalidBody(e)),
            },
            Op::Fans => match api::decode_fans(body) {
                Ok(fans) => CallResult::Fans(fans),
                Err(e) => CallResult::Failed(CallFailure::InvalidBody(e)),
            },
            Op::Listeners(pager) => match pager.on_body(body) {
                Ok(PagerProgress::More) => {
                    call.attempts = 0;
                    self.calls.push_front(call);
                    return;
                }
                Ok(PagerProgress::Complete) => {
                    CallResult::Listeners(std::mem::take(pager).into_listeners())
                }
                Err(e) => CallResult::Failed(CallFailure::Pager(e)),
            },
        };
        self.out.push_back(done(call.id, result));
    }

    /// Puts a call back at the head of the queue to be sent again as it is
    /// (a listeners page is asked for again), unless the bot has stopped
    /// for good.
    fn requeue_front(&mut self, mut call: Call, now_ms: u64) {
        if self
            .stopped
            .as_ref()
            .is_some_and(|s| !s.resumes_with_new_consent())
        {
            self.out
                .push_back(done(call.id, CallResult::Failed(CallFailure::Cancelled)));
            return;
        }
        if let Op::Listeners(pager) = &mut call.op {
            pager.retry_page();
        }
        call.not_before_ms = call.not_before_ms.max(now_ms);
        self.calls.push_front(call);
    }

    /// Queues the call again after a backoff delay, or fails it when its
    /// attempts are used up (or it must not be repeated).
    fn retry_or_fail(&mut self, call: Call, repeatable: bool, failure: CallFailure, now_ms: u64) {
        if !repeatable {
            self.out
                .push_back(done(call.id, CallResult::Failed(failure)));
            return;
        }
        let delay = self.call_backoff.next_delay_ms();
        self.retry_in(call, delay, failure, now_ms);
    }

    fn retry_in(&mut self, mut call: Call, delay_ms: u64, failure: CallFailure, now_ms: u64) {
        if call.attempts >= self.max_attempts {
            self.out
                .push_back(done(call.id, CallResult::Failed(failure)));
            return;
        }
        call.not_before_ms = now_ms.saturating_add(delay_ms);
        self.requeue_front(call, now_ms);
    }
}

fn done(call: CallId, result: CallResult) -> Action {
    Action::Done { call, result }
}

#[cfg(test)]
mod tests;
