//! [`Bot`]: one sans-IO machine a driver loop polls.
//!
//! It combines the token state ([`oauth`](crate::oauth)), the quota tracker
//! ([`quota`](crate::quota)), the event-stream connect-loop
//! ([`stream`](crate::stream)) with its SSE parser and event decoder, and a
//! queue of app calls. The driver owns the HTTP client and the clock:
//!
//! ```text
//! bot = Bot::new(config, saved_tokens, seed)
//! loop:
//!     match bot.poll(now):
//!         Send { id, request }       -> send it; bot.on_response(id, status, headers, body, now)
//!         OpenStream { id, request } -> open a streaming GET; bot.on_stream_open(id, status, headers, now),
//!                                       then bot.on_stream_bytes(id, chunk, now) per chunk,
//!                                       and bot.on_stream_closed(id, now) at its end
//!         CloseStream { id }         -> close that connection (no report needed)
//!         Event { event, .. }        -> your bot logic; it may call bot.send_chat(text)
//!         Done { call, result }      -> the answer to an app call
//!         PersistTokens(tokens)      -> save tokens.to_json() (a restart without it needs new DJ consent)
//!         Wait { until_ms }          -> sleep until then (None: until a response or bytes arrive)
//!         Stopped(why)               -> tell a person: re-authorize, re-consent, the DJ blocked the bot, …
//! ```
//!
//! The contract (as in h11 and quinn-proto):
//! - After any `on_*` call or app command, call [`Bot::poll`] until it returns
//!   [`Action::Wait`]; only then sleep.
//! - `poll(now)` is safe to call early or often. A deadline in the past means
//!   "act now"; the machine never asks to wait until a time at or before `now`.
//! - A request that fails without a response (connect error, timeout) is
//!   reported with [`Bot::on_transport_error`].
//! - Misuse by the caller (an unknown request id, bytes for a stream that is
//!   not open) is a [`DriverError`], returned at once and changing nothing.
//!   Bad input from the server is a remote problem: classified and acted on.
//!
//! The rules it follows: 401 on any call → one refresh, then the call once
//! more; a second 401 → stopped (re-authorize). Chat is validated before it
//! is queued and retried a bounded number of times on 429 `OAPI_MNGR_0302`
//! and 403 `OAPI_MNGR_0208`, paced by the quota tracker. Calls wait out
//! per-second pacing and backoff; a call whose permission is blocked by the
//! daily quota fails at once instead of waiting for hours. A bot that holds
//! only `events.chat` works: nothing polls `GET /v1/live`.
//!
//! ```
//! use onair::api::BaseUrl;
//! use onair::bot::{Action, Bot, BotConfig, Stop};
//! use onair::oauth::{AuthProblem, ClientCredentials};
//!
//! let base = BaseUrl::new("http://127.0.0.1:8080").unwrap();
//! let credentials =
//!     ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "secret").unwrap();
//! let mut bot = Bot::new(BotConfig::new(base, credentials), None, 7);
//! // No saved tokens: the DJ must authorize first.
//! assert_eq!(bot.poll(0), Action::Stopped(Stop::Reauthorize(AuthProblem::NotAuthorized)));
//! bot.authorize("code-from-consent", "https://bot.example/callback");
//! let Action::Send { request, .. } = bot.poll(0) else { panic!() };
//! assert!(request.url.ends_with("/v1/oauth/token"));
//! ```

use std::collections::VecDeque;
use std::fmt;

use crate::api::{
    self, BaseUrl, ChatError, HttpRequest, ListenerPager, PagerProgress, TokenClient,
};
use crate::backoff::Backoff;
use crate::event::{DecodeError, Event, Item};
use crate::header::Header;
use crate::model::{Broadcast, FanRanking, Listener};
use crate::oauth::{
    AuthProblem, ClientCredentials, OAuthError, RefreshPolicy, Secret, TokenManager, TokenOutcome,
    Tokens,
};
use crate::problem::{classify, Advice, Endpoint, Problem, ProblemKind};
use crate::quota::QuotaTracker;
use crate::scope::Permission;
use crate::stream::{ConnectLoop, Phase, Step, StopReason, StreamConfig};
use crate::time::FrameId;

/// The longest error body of a failed stream open that is kept to classify
/// it (the service's are ~200 bytes).
const MAX_STREAM_ERROR_BODY: usize = 16 * 1024;

/// A daily-quota block longer than this fails a call instead of queueing it.
const MAX_QUEUE_WAIT_MS: u64 = 60_000;

/// How the bot is set up.
#[derive(Debug, Clone)]
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
}

impl BotConfig {
    /// Spec defaults: Basic client auth, refresh 10 minutes before expiry,
    /// the stream on, three attempts per call.
    pub fn new(base_url: BaseUrl, credentials: ClientCredentials) -> Self {
        Self {
            token_client: TokenClient::new(base_url.clone(), credentials),
            base_url,
            refresh: RefreshPolicy::default(),
            stream: StreamConfig::default(),
            events: true,
            max_attempts: 3,
        }
    }
}

/// Names one HTTP request the bot asked for, so its response can be matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request#{}", self.0)
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
pub enum Action {
    /// Send this request; report with [`Bot::on_response`] (or
    /// [`Bot::on_transport_error`]).
    Send {
        /// Pass it back with the response.
        id: RequestId,
        /// The request (its `Debug` redacts secrets).
        request: HttpRequest,
    },
    /// Open this streaming GET; report with [`Bot::on_stream_open`],
    /// [`Bot::on_stream_bytes`], [`Bot::on_stream_closed`].
    OpenStream {
        /// Pass it back with every report on this connection.
        id: RequestId,
        /// The request.
        request: HttpRequest,
    },
    /// Close this stream connection (it ended, or the watchdog found it dead).
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
    /// A new token pair is in force: save it (e.g. `tokens.to_json()`).
    PersistTokens(Tokens),
    /// Nothing to do until `until_ms` (unix ms), or until something is
    /// reported; `None`: only a report moves the bot on.
    Wait {
        /// When to poll again at the latest; always later than the `now` polled.
        until_ms: Option<u64>,
    },
    /// The bot has stopped; a person must act. Polling keeps returning this.
    Stopped(Stop),
}

/// Why the bot stopped, as a person must act on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The DJ must authorize the bot (again); the reason says what happened.
    /// Give the new code to [`Bot::authorize`] to go on.
    Reauthorize(AuthProblem),
    /// The DJ must consent again with these permissions (any one of the
    /// `events.*` ones, for the stream).
    Reconsent {
        /// The permissions the service found missing.
        missing: Vec<Permission>,
    },
    /// The bot cannot join the broadcast (403 `OAPI_MNGR_0209`): the DJ may
    /// have blocked it and must lift that.
    JoinForbidden,
    /// The token endpoint refused the client credentials: fix the app's
    /// configuration (the DJ cannot help).
    InvalidClient,
    /// A response outside the spec that retrying will not fix.
    Unexpected(Problem),
    /// [`Bot::shutdown`] was called; delete the stored tokens if revoked.
    ShutDown,
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::Reauthorize(why) => write!(f, "re-authorize: {why}"),
            Stop::Reconsent { missing } => {
                f.write_str("re-consent needed for:")?;
                for p in missing {
                    write!(f, " {p}")?;
                }
                Ok(())
            }
            Stop::JoinForbidden => f.write_str("the bot cannot join: the DJ may have blocked it"),
            Stop::InvalidClient => {
                f.write_str("client credentials rejected: fix the configuration")
            }
            Stop::Unexpected(problem) => write!(f, "unexpected response: {problem}"),
            Stop::ShutDown => f.write_str("shut down"),
        }
    }
}

/// A thing worth logging that needs no action.
#[derive(Debug, Clone, PartialEq)]
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
}

/// The answer to an app call.
#[derive(Debug, Clone, PartialEq)]
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
    /// No response, and the call is not safe to repeat (a chat may have been
    /// posted) or its attempts ran out.
    Transport,
    /// The bot stopped before the call could finish.
    Cancelled,
}

/// A mistake by the driver (not a server problem). Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverError {
    /// No request with this id is awaiting a response.
    UnknownRequest(RequestId),
    /// This id is not the stream connection that is open or opening.
    StreamNotOpen(RequestId),
    /// Bytes for a stream whose open was not reported.
    StreamNotStarted(RequestId),
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::UnknownRequest(id) => write!(f, "{id} is not awaiting a response"),
            DriverError::StreamNotOpen(id) => write!(f, "{id} is not the open stream"),
            DriverError::StreamNotStarted(id) => {
                write!(f, "{id}: report on_stream_open before its bytes")
            }
        }
    }
}

impl std::error::Error for DriverError {}

/// An app call waiting in the queue or in flight.
#[derive(Debug, Clone)]
struct Call {
    id: CallId,
    op: Op,
    /// Attempts made so far.
    attempts: u32,
    /// Not before this time (retry delays).
    not_before_ms: u64,
    /// A 401 was met: wait for a token newer than this generation, then retry once.
    after_refresh: Option<u64>,
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
    Call(Box<Call>),
    Stream,
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
    tokens: TokenManager,
    stream: ConnectLoop,
    quota: QuotaTracker,
    next_request: u64,
    next_call: u64,
    in_flight: Vec<(RequestId, Purpose)>,
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
}

impl Bot {
    /// A bot resuming from `saved` tokens (see [`Tokens::from_json`]), or
    /// waiting for [`Bot::authorize`] without them. `seed` fixes every
    /// jitter, so a run is reproducible.
    pub fn new(config: BotConfig, saved: Option<Tokens>, seed: u64) -> Self {
        let tokens = match saved {
            Some(t) => TokenManager::with_tokens(config.token_client, config.refresh, t),
            None => TokenManager::new(config.token_client, config.refresh),
        };
        Self {
            base_url: config.base_url,
            events: config.events,
            max_attempts: config.max_attempts.max(1),
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
        }
    }

    // ---- app commands --------------------------------------------------------

    /// Exchanges the code from DJ consent (single use: sent once, never
    /// retried). Also the way back after [`Stop::Reauthorize`].
    pub fn authorize(&mut self, code: &str, redirect_uri: &str) {
        self.pending_code = Some((Secret::new(code), redirect_uri.to_owned()));
        if matches!(self.stopped, Some(Stop::Reauthorize(_))) {
            self.stopped = None;
        }
    }

    /// Queues a chat message after checking it locally (at most 200 UTF-16
    /// units, not blank), so no quota call is spent on one the server would
    /// refuse.
    pub fn send_chat(&mut self, message: &str) -> Result<CallId, ChatError> {
        api::validate_chat(message)?;
        Ok(self.queue(Op::Chat(message.to_owned())))
    }

    /// Queues `GET /v1/live`.
    pub fn fetch_broadcast(&mut self) -> CallId {
        self.queue(Op::Broadcast)
    }

    /// Queues the listener list: every page, deduplicated by `id`.
    pub fn list_listeners(&mut self) -> CallId {
        self.queue(Op::Listeners(ListenerPager::new()))
    }

    /// Queues `GET /v1/live/fans`.
    pub fn fetch_fans(&mut self) -> CallId {
        self.queue(Op::Fans)
    }

    /// Reconnects the stream at once without backoff: after the DJ makes the
    /// bot a manager, presence events start on the next connection.
    pub fn request_reconnect(&mut self, now_ms: u64) {
        self.stream.request_reconnect(now_ms);
    }

    /// Stops the bot: queued calls are cancelled, the stream is closed, and
    /// with `revoke` the tokens are revoked (one last request, sent once any
    /// token request in flight has been answered) and forgotten. A pair that
    /// arrives meanwhile is still handed out for persistence.
    pub fn shutdown(&mut self, revoke: bool) {
        self.revoke_pending = revoke;
        self.try_revoke();
        self.stop(Stop::ShutDown);
    }

    fn try_revoke(&mut self) {
        if !self.revoke_pending {
            return;
        }
        match self.tokens.revoke() {
            Ok(request) => {
                self.revoke_pending = false;
                let id = self.request_id();
                self.in_flight.push((id, Purpose::Revoke));
                self.out.push_back(Action::Send { id, request });
            }
            // A refresh or exchange is in flight: its answer comes first.
            Err(OAuthError::Busy) => {}
            Err(_) => self.revoke_pending = false,
        }
    }

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

    fn queue(&mut self, op: Op) -> CallId {
        self.next_call += 1;
        let id = CallId(self.next_call);
        if self.stopped.is_some() {
            self.out
                .push_back(done(id, CallResult::Failed(CallFailure::Cancelled)));
        } else {
            self.calls.push_back(Call {
                id,
                op,
                attempts: 0,
                not_before_ms: 0,
                after_refresh: None,
            });
        }
        id
    }

    fn request_id(&mut self) -> RequestId {
        self.next_request += 1;
        RequestId(self.next_request)
    }

    // ---- polling -------------------------------------------------------------

    /// The next thing to do at `now_ms`. See the [module docs](self).
    pub fn poll(&mut self, now_ms: u64) -> Action {
        if let Some(action) = self.queued() {
            return action;
        }
        if let Some(action) = self.poll_tokens(now_ms).or_else(|| self.queued()) {
            return action;
        }
        let mut deadlines = Deadlines::new(now_ms);
        if let Some(action) = self
            .poll_stream(now_ms, &mut deadlines)
            .or_else(|| self.queued())
        {
            return action;
        }
        // The stream may just have asked for a refresh.
        if let Some(action) = self.poll_tokens(now_ms).or_else(|| self.queued()) {
            return action;
        }
        if let Some(action) = self
            .poll_calls(now_ms, &mut deadlines)
            .or_else(|| self.queued())
        {
            return action;
        }
        self.token_deadline(&mut deadlines);
        Action::Wait {
            until_ms: deadlines.earliest,
        }
    }

    /// What is already decided: queued output first, then a stop.
    fn queued(&mut self) -> Option<Action> {
        self.out
            .pop_front()
            .or_else(|| self.stopped.clone().map(Action::Stopped))
    }

    fn token_request_in_flight(&self) -> bool {
        self.in_flight
            .iter()
            .any(|(_, p)| matches!(p, Purpose::Token))
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
                Ok(request) => Some(self.send(Purpose::Token, request)),
                Err(_) => {
                    // The same code again, or a malformed one: it cannot be used.
                    self.stop(Stop::Reauthorize(AuthProblem::NotAuthorized));
                    None
                }
            };
        }
        if let Some(problem) = self.tokens.problem() {
            let problem = problem.clone();
            self.stop(stop_for_auth(problem));
            return None;
        }
        // A 401 on a call makes the refresh due at once (access_rejected).
        let wanted = self.stream_wants_refresh || self.tokens.refresh_due(now_ms);
        if !wanted || now_ms < self.token_retry_at_ms {
            return None;
        }
        match self.tokens.start_refresh(now_ms) {
            Ok(request) => Some(self.send(Purpose::Token, request)),
            Err(_) => {
                // Blocked (no refresh token, or it expired): poll reports it.
                if let Some(problem) = self.tokens.problem() {
                    let problem = problem.clone();
                    self.stop(stop_for_auth(problem));
                }
                None
            }
        }
    }

    fn token_deadline(&self, deadlines: &mut Deadlines) {
        if self.token_request_in_flight() || self.tokens.problem().is_some() {
            return;
        }
        if let Some(at) = self.tokens.refresh_at_ms() {
            deadlines.add(at.max(self.token_retry_at_ms));
        }
        if self.stream_wants_refresh {
            deadlines.add(self.token_retry_at_ms);
        }
    }

    fn poll_stream(&mut self, now_ms: u64, deadlines: &mut Deadlines) -> Option<Action> {
        if !self.events {
            return None;
        }
        loop {
            match self.stream.deadline() {
                Some(at) if at > now_ms => {
                    deadlines.add(at);
                    return None;
                }
                _ => {}
            }
            // Only a usable token can open the stream. Without one a refresh is
            // due or under way (or a person must act), and its answer moves
            // the loop on; a connection the loop is done with is closed now.
            if self.stream.phase() == Phase::Waiting && self.tokens.access_token(now_ms).is_none() {
                let conn = self.conn.take()?;
                self.in_flight.retain(|(id, _)| *id != conn.id());
                return Some(Action::CloseStream { id: conn.id() });
            }
            match self.stream.poll(now_ms) {
                Step::Connect => {
                    let Some(token) = self.tokens.access_token(now_ms) else {
                        self.stream.on_connect_failed(now_ms);
                        return None;
                    };
                    match api::events(&self.base_url, token) {
                        Ok(request) => {
                            let id = self.request_id();
                            self.in_flight.push((id, Purpose::Stream));
                            self.conn = Some(Conn::Opening(id));
                            return Some(Action::OpenStream { id, request });
                        }
                        Err(_) => {
                            // A token with control characters: nothing to send.
                            self.stop(Stop::Reauthorize(AuthProblem::AccessRejected));
                            return None;
                        }
                    }
                }
                Step::Close => {
                    if let Some(conn) = self.conn.take() {
                        self.in_flight.retain(|(id, _)| *id != conn.id());
                        return Some(Action::CloseStream { id: conn.id() });
                    }
                }
                Step::RefreshToken => {
                    self.stream_wants_refresh = true;
                    return None;
                }
                Step::Wait { until_ms } => {
                    if let Some(at) = until_ms {
                        deadlines.add(at);
                    }
                    return None;
                }
                Step::Stopped(reason) => {
                    let stop = self.stop_for_stream(reason);
                    self.stop(stop);
                    return None;
                }
            }
        }
    }

    fn poll_calls(&mut self, now_ms: u64, deadlines: &mut Deadlines) -> Option<Action> {
        let call_in_flight = self
            .in_flight
            .iter()
            .any(|(_, p)| matches!(p, Purpose::Call(_)));
        if call_in_flight {
            return None;
        }
        let generation = self.tokens.tokens().map_or(0, Tokens::generation);
        let token_ready = self.tokens.access_token(now_ms).is_some();
        let head = self.calls.front()?;
        if head.after_refresh.is_some_and(|seen| generation <= seen) || !token_ready {
            // Waiting for a refresh; its answer moves things on.
            return None;
        }
        let endpoint = head.op.endpoint();
        let quota_at = self.quota.next_call_at_endpoint(endpoint, now_ms);
        if quota_at > now_ms.saturating_add(MAX_QUEUE_WAIT_MS) {
            let call = self.calls.pop_front()?;
            return Some(done(
                call.id,
                CallResult::Failed(CallFailure::QuotaBlocked { until_ms: quota_at }),
            ));
        }
        let at = quota_at.max(head.not_before_ms);
        if at > now_ms {
            deadlines.add(at);
            return None;
        }
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
                Some(self.send(Purpose::Call(Box::new(call)), request))
            }
            Err(_) => Some(done(call.id, CallResult::Failed(CallFailure::Cancelled))),
        }
    }

    fn send(&mut self, purpose: Purpose, request: HttpRequest) -> Action {
        let id = self.request_id();
        self.in_flight.push((id, purpose));
        Action::Send { id, request }
    }

    fn stop(&mut self, stop: Stop) {
        if self.stopped.is_some() {
            return;
        }
        if let Some(conn) = self.conn.take() {
            self.in_flight.retain(|(id, _)| *id != conn.id());
            self.out.push_back(Action::CloseStream { id: conn.id() });
        }
        for call in self.calls.drain(..) {
            self.out
                .push_back(done(call.id, CallResult::Failed(CallFailure::Cancelled)));
        }
        self.stopped = Some(stop);
    }

    fn stop_for_stream(&self, reason: StopReason) -> Stop {
        match reason {
            StopReason::Reauthorize => Stop::Reauthorize(
                self.tokens
                    .problem()
                    .cloned()
                    .unwrap_or(AuthProblem::AccessRejected),
            ),
            StopReason::Reconsent => Stop::Reconsent {
                missing: Permission::KNOWN
                    .into_iter()
                    .filter(Permission::is_event)
                    .collect(),
            },
            StopReason::JoinForbidden => Stop::JoinForbidden,
            StopReason::InvalidClient => Stop::InvalidClient,
            StopReason::FixRequest | StopReason::Unexpected => match self.stream.last_problem() {
                Some(problem) => Stop::Unexpected(problem.clone()),
                None => Stop::Reauthorize(AuthProblem::AccessRejected),
            },
        }
    }

    // ---- reports -------------------------------------------------------------

    fn take_in_flight(&mut self, id: RequestId) -> Result<Purpose, DriverError> {
        let index = self
            .in_flight
            .iter()
            .position(|(i, _)| *i == id)
            .ok_or(DriverError::UnknownRequest(id))?;
        Ok(self.in_flight.swap_remove(index).1)
    }

    /// The complete response to [`Action::Send`] (or a stream open that
    /// failed, reported whole instead of through the stream methods).
    pub fn on_response<H: Header>(
        &mut self,
        id: RequestId,
        status: u16,
        headers: &[H],
        body: &[u8],
        now_ms: u64,
    ) -> Result<(), DriverError> {
        if self.conn.as_ref().is_some_and(|c| c.id() == id) {
            self.on_stream_open(id, status, headers, now_ms)?;
            if (200..300).contains(&status) {
                self.on_stream_bytes(id, body, now_ms)?;
            } else if let Some(Conn::Failed { body: kept, .. }) = &mut self.conn {
                kept.extend_from_slice(&body[..body.len().min(MAX_STREAM_ERROR_BODY)]);
            }
            return self.on_stream_closed(id, now_ms);
        }
        match self.take_in_flight(id)? {
            Purpose::Token => self.on_token_response(status, headers, body, now_ms),
            Purpose::Revoke | Purpose::Stream => {}
            Purpose::Call(call) => self.on_call_response(*call, status, headers, body, now_ms),
        }
        Ok(())
    }

    /// A request got no response (connect error, timeout, reset).
    pub fn on_transport_error(&mut self, id: RequestId, now_ms: u64) -> Result<(), DriverError> {
        if self.conn.as_ref().is_some_and(|c| c.id() == id) {
            return self.on_stream_closed(id, now_ms);
        }
        match self.take_in_flight(id)? {
            Purpose::Token => {
                if let Ok(outcome) = self.tokens.on_transport_failure(now_ms) {
                    self.on_token_outcome(outcome, now_ms);
                }
            }
            Purpose::Revoke | Purpose::Stream => {}
            Purpose::Call(call) => {
                let repeatable = !matches!(call.op, Op::Chat(_));
                self.retry_or_fail(*call, repeatable, CallFailure::Transport, now_ms);
            }
        }
        Ok(())
    }

    /// The status line and headers of [`Action::OpenStream`]. A 2xx opens the
    /// stream; any other status is a failure whose body follows through
    /// [`Bot::on_stream_bytes`] and is judged at [`Bot::on_stream_closed`].
    pub fn on_stream_open<H: Header>(
        &mut self,
        id: RequestId,
        status: u16,
        headers: &[H],
        now_ms: u64,
    ) -> Result<(), DriverError> {
        match &self.conn {
            Some(Conn::Opening(open)) if *open == id => {}
            _ => return Err(DriverError::StreamNotOpen(id)),
        }
        self.in_flight.retain(|(i, _)| *i != id);
        if (200..300).contains(&status) {
            self.stream.on_response(status, headers, b"", now_ms);
            self.conn = Some(Conn::Open(id));
        } else {
            self.conn = Some(Conn::Failed {
                id,
                status,
                headers: headers
                    .iter()
                    .take(64)
                    .map(|h| (h.name().to_vec(), h.value().to_vec()))
                    .collect(),
                body: Vec::new(),
            });
        }
        Ok(())
    }

    /// A chunk of the open stream's body, split anywhere.
    pub fn on_stream_bytes(
        &mut self,
        id: RequestId,
        chunk: &[u8],
        now_ms: u64,
    ) -> Result<(), DriverError> {
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
                return Err(DriverError::StreamNotStarted(id))
            }
            _ => return Err(DriverError::StreamNotOpen(id)),
        }
        for item in self.stream.on_bytes(chunk, now_ms) {
            match item {
                Item::Event { id, event } => self.out.push_back(Action::Event { id, event }),
                Item::Unknown { event, data, .. } => {
                    self.out
                        .push_back(Action::Notice(Notice::UnknownEvent { event, data }));
                }
                Item::Error(e) => self.out.push_back(Action::Notice(Notice::FrameSkipped(e))),
                Item::Heartbeat | Item::Comment(_) | Item::Retry(_) => {}
            }
        }
        Ok(())
    }

    /// The stream connection ended (end of body or network error). Reporting
    /// it for a connection the bot asked to close is allowed and changes
    /// nothing.
    pub fn on_stream_closed(&mut self, id: RequestId, now_ms: u64) -> Result<(), DriverError> {
        let Some(conn) = self.conn.take_if(|c| c.id() == id) else {
            return Ok(());
        };
        self.in_flight.retain(|(i, _)| *i != id);
        match conn {
            Conn::Failed {
                status,
                headers,
                body,
                ..
            } => {
                let problem = self.stream.on_response(status, &headers, &body, now_ms);
                self.notice(Endpoint::Events, &problem);
            }
            Conn::Opening(_) => self.stream.on_connect_failed(now_ms),
            Conn::Open(_) => self.stream.on_closed(now_ms),
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
        headers: &[H],
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
                    self.stream.on_token_refreshed(now_ms);
                }
                if self.stopped.is_none() && self.stream.phase() == Phase::Stopped {
                    self.stream.restart(now_ms);
                }
                self.out.push_back(Action::PersistTokens(tokens));
            }
            TokenOutcome::RetryLater(_) => {
                self.token_retry_at_ms = now_ms.saturating_add(self.token_backoff.next_delay_ms());
            }
            TokenOutcome::Blocked(problem) => self.stop(stop_for_auth(problem)),
        }
        self.try_revoke();
    }

    fn on_call_response<H: Header>(
        &mut self,
        mut call: Call,
        status: u16,
        headers: &[H],
        body: &[u8],
        now_ms: u64,
    ) {
        let endpoint = call.op.endpoint();
        let problem = classify(endpoint, status, headers, body);
        self.quota.on_response(endpoint, &problem, now_ms);
        if problem.is_ok() {
            call.after_refresh = None;
            self.call_backoff.reset();
            self.on_call_success(call, body);
            return;
        }
        match problem.advice {
            Advice::RefreshToken if call.after_refresh.is_none() => {
                // One refresh, then this call once more (spec 7.3).
                self.notice(endpoint, &problem);
                self.tokens.access_rejected();
                call.after_refresh = Some(self.tokens.tokens().map_or(0, Tokens::generation));
                call.attempts = call.attempts.saturating_sub(1);
                self.calls.push_front(call);
            }
            Advice::RefreshToken => {
                self.out.push_back(done(
                    call.id,
                    CallResult::Failed(CallFailure::Problem(problem)),
                ));
                self.stop(Stop::Reauthorize(AuthProblem::AccessRejected));
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
        if let Op::Listeners(pager) = &mut call.op {
            pager.retry_page();
        }
        call.not_before_ms = now_ms.saturating_add(delay_ms);
        self.calls.push_front(call);
    }
}

fn done(call: CallId, result: CallResult) -> Action {
    Action::Done { call, result }
}

fn stop_for_auth(problem: AuthProblem) -> Stop {
    match problem {
        AuthProblem::ClientRejected => Stop::InvalidClient,
        other => Stop::Reauthorize(other),
    }
}

/// The earliest of the times something becomes due, strictly after `now`.
struct Deadlines {
    now_ms: u64,
    earliest: Option<u64>,
}

impl Deadlines {
    fn new(now_ms: u64) -> Self {
        Self {
            now_ms,
            earliest: None,
        }
    }

    fn add(&mut self, at_ms: u64) {
        if at_ms > self.now_ms {
            self.earliest = Some(self.earliest.map_or(at_ms, |e| e.min(at_ms)));
        }
    }
}

#[cfg(test)]
mod tests;
