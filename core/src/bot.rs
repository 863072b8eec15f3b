//! [`Bot`]: one sans-IO machine a driver loop polls.
//!
//! It combines the token machine ([`TokenManager`]), the quota tracker, the
//! event-stream connect-loop ([`ConnectLoop`]) with its SSE parser and
//! event decoder, and a queue of app calls. The driver owns the HTTP client, the clock and the
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
//! | reports (`on_*`) | [`on_response`](Bot::on_response), [`on_transport_error`](Bot::on_transport_error), [`on_not_sent`](Bot::on_not_sent), [`on_stream_open`](Bot::on_stream_open), [`on_stream_bytes`](Bot::on_stream_bytes), [`on_stream_closed`](Bot::on_stream_closed) | what happened to a request the bot asked for |
//! | app commands | [`authorize`](Bot::authorize), [`send_chat`](Bot::send_chat), [`fetch_broadcast`](Bot::fetch_broadcast), [`list_listeners`](Bot::list_listeners), [`fetch_fans`](Bot::fetch_fans), [`request_reconnect`](Bot::request_reconnect), [`set_not_on_air_wait`](Bot::set_not_on_air_wait), [`shutdown`](Bot::shutdown) | what your bot wants |
//! | polling | [`poll`](Bot::poll) | the next [`Action`] |
//! | views | [`status`](Bot::status), [`token_pair`](Bot::token_pair), [`refreshing`](Bot::refreshing), [`daily_quota`](Bot::daily_quota), [`broadcast_started_ms`](Bot::broadcast_started_ms), [`stop`](Bot::stop) | where things stand (snapshots, never the bot's parts) |
//!
//! 1. After any report or app command, call `poll(now)` until it returns an
//!    action that ends the drain ([`Action::ends_drain`]): [`Action::Wait`],
//!    [`Action::NeedsAuthorization`] or [`Action::Stopped`]; only then sleep
//!    (str0m's "drain until timeout").
//! 2. `Wait { until_ms }`: sleep until `until_ms`, or until a report arrives
//!    (a response, stream bytes, a close), whichever is first; then poll
//!    again. `until_ms` is always later than the `now` you polled with, and is
//!    `None` only when nothing at all is scheduled (only a report can move
//!    the bot). `poll` is safe to call early or often: a deadline that has
//!    passed makes it act at once, and no deadline is ever lost.
//! 3. [`Action::Send`] carries the request's `timeout_ms`. The bot keeps that
//!    deadline itself (it is folded into `Wait`); when it passes without a
//!    report, the bot treats the request as failed and asks you to drop it
//!    ([`Action::CloseStream`] with [`CloseReason::TimedOut`]). Give your client no
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
//!    Such a stop for good (and [`Bot::shutdown`]) is drained by the bot
//!    itself before `Stopped`: the requests it no longer wants come as
//!    [`Action::CloseStream`], a token request (or the revocation) is awaited
//!    with `Wait`, at most [`BotConfig::shutdown_grace_ms`]. A driver's
//!    shutdown is its ordinary loop: hand the bot what the stream has read,
//!    call `shutdown`, poll on until `Stopped`.
//!
//! 6. App calls ([`Bot::fetch_broadcast`], …) always return a [`CallId`] and
//!    are always answered by one [`Action::Done`]: a full queue or a stopped
//!    bot is a `Done` with its reason; a call made while the bot waits for
//!    consent is held ([`Notice::CallHeld`]). Only a chat message the server
//!    would refuse is an error at once ([`Bot::send_chat`]).
//!
//! **The rules it follows.** 401 on a call or the stream → one refresh, then
//! once more; a second 401 → [`Stop::Reauthorize`] (the one-refresh rule,
//! [`TokenManager::on_unauthorized`](crate::api::TokenManager::on_unauthorized)).
//! Chat is validated before it is queued and retried a bounded number of
//! times on 429 `OAPI_MNGR_0302` and 403 `OAPI_MNGR_0208`, paced by the
//! quota tracker. Calls wait out per-second pacing and backoff; a call whose
//! permission is blocked by the daily quota fails at once instead of waiting
//! for hours. `RECONNECT` is followed at once. A bot that holds only
//! `events.chat` works: nothing polls `GET /v1/live`.
//!
//! **Nothing fails in silence.** A service that cannot be reached is a
//! [`Notice::Unreachable`] at the first failure, then at most one every
//! 30 s while it lasts ([`Notice::Reachable`] when it answers again). Every
//! app call given up on is also a [`Notice::GaveUp`], rate-limited per
//! endpoint and reason, and counted in [`Status`]; a daily quota that blocks
//! is one [`Notice::DailyQuotaReached`] with its reset time. Each notice's
//! `Display` is its log line, at [`Notice::level`]. With saved tokens the
//! bot checks the client credentials at start
//! ([`BotConfig::check_credentials`]).
//!
//! # Which layer is for whom
//!
//! Bot authors drive [`Bot`] (or a ready-made driver over it). Someone who
//! builds only a stream reader uses
//! [`api::ConnectLoop`](crate::api::ConnectLoop); someone who manages tokens
//! for many bots in one service uses
//! [`api::TokenManager`](crate::api::TokenManager). All three take the time
//! as an argument and answer misuse with the same [`Misuse`] error.
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

use crate::event::{DecodeError, EndReason, Event, Item};
use crate::kit::{
    Arrival, BroadcastEnded, Command, Kit, KitAction, KitConfig, KitState, Milestone, Refused,
};
use crate::proto::api::{self, ClientAuth, ListenerPager, PagerProgress};
use crate::proto::backoff::Backoff;
use crate::proto::chat::ChatError;
use crate::proto::endpoint::Endpoint;
use crate::proto::http::{BaseUrl, Header, HttpRequest};
use crate::proto::misuse::{Misuse, RequestId};
use crate::proto::model::{Broadcast, FanRanking, Listener};
use crate::proto::oauth::{
    AuthProblem, OAuthError, TokenManager, TokenOutcome, TokenStatus, Tokens, Unauthorized,
};
use crate::proto::problem::{classify, Advice, Problem, ProblemKind};
use crate::proto::quota::QuotaTracker;
use crate::proto::scope::Permission;
use crate::proto::secret::{ClientCredentials, Secret};
use crate::proto::stop::Stop;
use crate::proto::stream::{ConnectLoop, Phase, Step, StreamNotice};
use crate::proto::time::FrameId;
use crate::proto::timers::{Tag, Timer, TimerError, Timers};

use calls::{Call, Op};
use requests::Purpose;
use stream::Conn;

mod calls;
mod drain;
mod kit;
pub mod notices;
mod replies;
mod requests;
mod status;
mod stream;
mod timers;
mod tokens;

// What a `BotConfig` is tuned with, and the app's daily quota a bot shares,
// named here so that a bot author never names the machinery.
pub use crate::proto::api::TokenClient;
pub use crate::proto::oauth::RefreshPolicy;
pub use crate::proto::quota::{Block, DailyQuota};
pub use crate::proto::stream::StreamConfig;
pub use drain::SHUTDOWN_GRACE_MS;
pub use notices::{CloseReason, GiveUpReason, Unreached};
pub use replies::{DropReason, RepliesCounters, ReplyCounters, MAX_QUEUED_REPLIES};
pub use status::{Connection, Counters, QuotaBlock, Status};

/// The longest error body of a failed stream open that is kept to classify
/// it (the service's are ~200 bytes).
const MAX_STREAM_ERROR_BODY: usize = 16 * 1024;

/// The token a credentials check revokes (one that does not exist):
/// `POST /v1/oauth/revoke` with `token=onair-credentials-check`
/// ([`BotConfig::check_credentials`]).
pub const CREDENTIALS_CHECK_TOKEN: &str = "onair-credentials-check";

/// How long a consent code is good for after it was first sent (spec 3.1):
/// an exchange that was not sent ([`Bot::on_not_sent`]) goes again only
/// within this time.
pub const CODE_FRESH_MS: u64 = 60_000;

/// How many times the credentials check is tried when no answer comes.
const CHECK_MAX_ATTEMPTS: u32 = 4;

/// A daily-quota block longer than this fails a call instead of queueing it.
const MAX_QUEUE_WAIT_MS: u64 = 60_000;

/// How the bot is set up. Its fields are tuned with the types of this
/// module ([`StreamConfig`], [`RefreshPolicy`], [`TokenClient`]); nothing
/// else needs naming.
///
/// ```
/// use onair::bot::{RefreshPolicy, StreamConfig};
/// use onair::{BaseUrl, BotConfig, ClientCredentials};
///
/// let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
/// let mut config = BotConfig::new(BaseUrl::new("https://api.example.test")?, creds);
/// // A stream silent for a minute is dead; refresh a quarter hour early.
/// let mut stream = StreamConfig::default();
/// stream.watchdog_ms = 60_000;
/// config.stream = stream;
/// let mut refresh = RefreshPolicy::default();
/// refresh.margin_ms = 15 * 60_000;
/// config.refresh = refresh;
/// assert_eq!(config.refresh.refresh_at_ms(0, 3_600_000), 45 * 60_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    /// answered at once by a `Done` with [`CallFailure::QueueFull`], never
    /// dropped silently.
    pub max_queued_calls: usize,
    /// The kit: commands, greetings, milestones, the tally (default: none).
    /// See [`crate::kit`].
    pub kit: KitConfig,
    /// With saved tokens, check the client credentials at start (default
    /// true): one `POST /v1/oauth/revoke` of a token that does not exist
    /// (form `token=onair-credentials-check`), answered 200 only to a client
    /// that authenticates (spec 4.2, 7.4). A 401 stops the bot with
    /// [`Stop::InvalidClient`] at start instead of at the first refresh, up
    /// to an hour later. No answer: tried again later, a few times.
    pub check_credentials: bool,
    /// How long a bot stopped for good ([`Bot::shutdown`], or a stop a
    /// person must fix) waits for a token request or the revocation still
    /// in flight before it says [`Action::Stopped`] (default 30 s,
    /// [`SHUTDOWN_GRACE_MS`]); every other request is dropped at once.
    pub shutdown_grace_ms: u64,
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
            kit: KitConfig::default(),
            check_credentials: true,
            shutdown_grace_ms: SHUTDOWN_GRACE_MS,
        }
    }

    /// The same configuration with another way of sending the client
    /// credentials to the token endpoint (Basic by default), keeping its
    /// base URL and credentials.
    ///
    /// ```
    /// use onair::{BaseUrl, BotConfig, ClientAuth, ClientCredentials};
    /// let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// let config = BotConfig::new(BaseUrl::new("https://api.example.test")?, creds)
    ///     .with_client_auth(ClientAuth::FormFields);
    /// assert_eq!(config.token_client.auth(), ClientAuth::FormFields);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_client_auth(mut self, auth: ClientAuth) -> Self {
        self.token_client = self.token_client.with_auth(auth);
        self
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
    /// Close this connection or drop this request; the bot is done with it
    /// for the `reason` given (a stream that ended or went silent, a request
    /// past its `timeout_ms`, or the bot stopping for good: see
    /// [`Bot::shutdown`]). Late reports for it are harmless.
    CloseStream {
        /// The connection (or request) to close.
        id: RequestId,
        /// Why; a driver closes it the same way whatever the reason.
        reason: CloseReason,
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
    /// A configured command was run by someone allowed to (the kit, see
    /// [`crate::kit`]); answer with [`Bot::say`].
    Command(Command),
    /// Someone to greet: their first sign in this broadcast, or back after
    /// an absence (the kit's greetings).
    Arrival(Arrival),
    /// A configured milestone was crossed.
    Milestone(Milestone),
    /// The broadcast ended; its final tally (the kit's tally). A new
    /// broadcast's memory starts empty.
    BroadcastEnded(BroadcastEnded),
    /// The kit's memory to save (`state.to_json()`) before acting on what
    /// follows; give it back with [`Bot::with_kit_state`] after a restart.
    /// It comes within [`CHECKPOINT_MS`](crate::kit::CHECKPOINT_MS) of a change (a person
    /// greeted, a heart counted), at once ahead of a new broadcast, and as
    /// the bot stops: a restart greets nobody twice and loses no total.
    PersistState(KitState),
    /// An app timer is due ([`Bot::schedule`], [`Bot::every`]).
    Timer {
        /// The timer's tag.
        tag: Tag,
    },
    /// The bot has no tokens yet: send the DJ through consent and give the
    /// code to [`Bot::authorize`]. Like `Wait`, it ends a drain: polling keeps
    /// returning it until then. App calls made meanwhile are held
    /// ([`Notice::CallHeld`]) and go out afterwards.
    NeedsAuthorization,
    /// Nothing to do until `until_ms` (unix ms), or until something is
    /// reported; `None`: nothing is scheduled, only a report moves the bot.
    Wait {
        /// When to poll again at the latest; always later than the `now` polled.
        until_ms: Option<u64>,
    },
    /// The bot has stopped; a person must act. Like `Wait`, it ends a drain:
    /// polling keeps returning it (until [`Bot::authorize`] lifts a
    /// [`Stop::Reauthorize`]).
    Stopped(Stop),
}

impl Action {
    /// Whether this action ends a drain: `Wait`, `NeedsAuthorization` and
    /// `Stopped` all say the bot has nothing more to do until time passes, a
    /// report arrives or a person acts. Poll until one of them, then sleep
    /// until [`Action::wake_at`] (or a report).
    ///
    /// ```
    /// use onair::Action;
    /// assert!(Action::NeedsAuthorization.ends_drain());
    /// assert!(Action::Wait { until_ms: Some(5) }.ends_drain());
    /// use onair::bot::CloseReason;
    /// assert!(!Action::CloseStream { id: onair::RequestId(1), reason: CloseReason::Ended }.ends_drain());
    /// ```
    pub fn ends_drain(&self) -> bool {
        matches!(
            self,
            Action::Wait { .. } | Action::NeedsAuthorization | Action::Stopped(_)
        )
    }

    /// When a drain that ended with this action should poll again at the
    /// latest (unix ms): `Wait`'s `until_ms`; `None` for the others (only a
    /// report or a person moves the bot on) and for an action that does not
    /// end a drain.
    pub fn wake_at(&self) -> Option<u64> {
        match self {
            Action::Wait { until_ms } => *until_ms,
            _ => None,
        }
    }
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
    /// Someone ran a configured command they may not run (a listener, a
    /// manager-only command); answer if you like.
    CommandRefused(Refused),
    /// An app call was made while the bot waits for the DJ's consent
    /// ([`Action::NeedsAuthorization`] or a [`Stop::Reauthorize`] stop): it
    /// is held, and goes out once [`Bot::authorize`] brings a pair.
    CallHeld {
        /// The call.
        call: CallId,
    },
    /// Stream connections keep ending with `RECONNECT` at once: the next
    /// connect waits until `until_ms`.
    ReconnectStormBraked {
        /// When the next connect goes.
        until_ms: u64,
    },
    /// The service could not be reached: a request was not sent
    /// ([`Bot::on_not_sent`]), got no answer ([`Bot::on_transport_error`])
    /// or none in time (a timeout, the stream's connect timeout included).
    /// Told at the first failure, then at most once every
    /// [`UNREACHABLE_NOTICE_EVERY_MS`](notices::UNREACHABLE_NOTICE_EVERY_MS)
    /// while failures go on; the bot keeps retrying.
    Unreachable {
        /// The endpoint of the latest failure.
        endpoint: Endpoint,
        /// How the latest failure happened.
        failure: Unreached,
        /// Failed requests since `since_ms`.
        failures: u64,
        /// When the first failure of this episode happened (unix ms).
        since_ms: u64,
    },
    /// The service answered again after [`Notice::Unreachable`].
    Reachable {
        /// Failed requests in the episode.
        failures: u64,
        /// When its first failure happened (unix ms).
        since_ms: u64,
    },
    /// App calls the bot gave up on (each also answered by its
    /// [`Action::Done`]): the first of an endpoint and reason at once, then
    /// at most one notice every
    /// [`GAVE_UP_NOTICE_EVERY_MS`](notices::GAVE_UP_NOTICE_EVERY_MS)
    /// counting the calls given up since.
    GaveUp {
        /// Their endpoint.
        endpoint: Endpoint,
        /// Why.
        reason: GiveUpReason,
        /// How many calls this notice tells of.
        count: u64,
    },
    /// A daily quota blocks a permission (`scope`), or every call of the app
    /// (`scope` `None`), until `until_ms`: calls needing it fail at once
    /// ([`CallFailure::QuotaBlocked`]) until then. Told once per block.
    DailyQuotaReached {
        /// The blocked permission; `None`: the whole app.
        scope: Option<Permission>,
        /// When the block ends (unix ms).
        until_ms: u64,
    },
    /// Replies dropped, never sent (see [`Bot::reply`] and the kit's
    /// [`RepliesConfig`](crate::kit::RepliesConfig)), per kind and reason:
    /// the first at once, the rest summed in one notice at most every
    /// [`GAVE_UP_NOTICE_EVERY_MS`](notices::GAVE_UP_NOTICE_EVERY_MS), all
    /// of them before [`Action::Stopped`]; each counted in [`Status`].
    RepliesDropped {
        /// Their kind.
        kind: crate::kit::ReplyKind,
        /// How many replies (one person each).
        people: u64,
        /// Why.
        reason: DropReason,
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
    /// The bot stopped before the call could finish; or, for chat still
    /// queued when its broadcast ended (`LIVE_ENDED`), the broadcast it was
    /// written for is over.
    Cancelled,
    /// Refused when it was made: the call queue held this many calls
    /// ([`BotConfig::max_queued_calls`]).
    QueueFull {
        /// The limit.
        limit: usize,
    },
    /// Refused when it was made: the bot has stopped for good (a stop a new
    /// consent does not lift).
    Stopped(Stop),
}

/// The bot machine. See the [module docs](self).
#[derive(Debug)]
pub struct Bot {
    // The owners of the bot's parts, each keeping its own invariants.
    /// The token pair, its refreshes and the one-refresh rule.
    tokens: TokenManager,
    /// The wait before a failed refresh goes again.
    refresh: tokens::RefreshRetry,
    /// The consent code and its exchange.
    code: tokens::CodeExchange,
    /// The credentials check at start.
    check: tokens::CredentialsCheck,
    /// The event stream.
    stream: stream::StreamState,
    /// The requests handed out, and those awaiting their report.
    requests: requests::InFlightRequests,
    /// The app calls.
    calls: calls::Calls,
    /// The drain after a stop for good.
    drain: drain::Drain,
    /// The per-second and daily quotas.
    quota: QuotaTracker,
    /// Replies waiting for the chat limit.
    replies: replies::Replies,
    /// The app's timers ([`Bot::schedule`], [`Bot::every`]).
    timers: Timers,
    /// What the bot tells of by itself, at bounded rates.
    notices: notices::Notices,
    /// The configured kit, when one is.
    kit: Option<Kit>,
    // Shared by all of them.
    /// The region's base address.
    base_url: BaseUrl,
    /// Actions decided and not yet polled.
    out: VecDeque<Action>,
    /// Why the bot stopped, once it has.
    stopped: Option<Stop>,
    /// What the bot counted ([`Status`]).
    counters: Counters,
    /// The latest `now` polled (unix ms).
    clock_ms: u64,
}

impl Bot {
    /// A bot resuming from `saved` tokens (see [`Tokens::from_json`]), or
    /// waiting for [`Bot::authorize`] without them. `seed` fixes every
    /// jitter, so a run is reproducible; seed from real randomness in
    /// production (bots sharing a seed back off in lockstep).
    pub fn new(config: BotConfig, saved: Option<Tokens>, seed: u64) -> Self {
        let check_request = (config.check_credentials && saved.is_some())
            .then(|| {
                config
                    .token_client
                    .revoke(&Secret::new(CREDENTIALS_CHECK_TOKEN), None)
                    .ok()
            })
            .flatten();
        let tokens = match saved {
            Some(t) => TokenManager::with_tokens(config.token_client, config.refresh, t),
            None => TokenManager::new(config.token_client, config.refresh),
        };
        Self {
            base_url: config.base_url,
            tokens,
            stream: stream::StreamState::new(config.events, config.stream, seed),
            quota: QuotaTracker::new(seed ^ 0x9E37_79B9_7F4A_7C15),
            requests: requests::InFlightRequests::new(config.request_timeout_ms.max(1)),
            refresh: tokens::RefreshRetry::new(seed ^ 0x7070_7070_0000_0001),
            calls: calls::Calls::new(
                config.max_queued_calls,
                config.max_attempts.max(1),
                seed ^ 0xCA11_0000_0000_0002,
            ),
            out: VecDeque::new(),
            stopped: None,
            timers: Timers::new(),
            counters: Counters::default(),
            clock_ms: 0,
            drain: drain::Drain::new(config.shutdown_grace_ms),
            replies: replies::Replies::new(config.kit.replies.clone().unwrap_or_default()),
            kit: (!config.kit.is_empty()).then(|| Kit::new(config.kit)),
            code: tokens::CodeExchange::new(seed ^ 0xC0DE_0000_0000_0004),
            check: tokens::CredentialsCheck::new(check_request, seed ^ 0xC4EC_0000_0000_0003),
            notices: notices::Notices::default(),
        }
    }

    /// Gives the kit back the memory a [`Action::PersistState`] saved before
    /// a restart (read it with [`KitState::from_json`]). Without a configured
    /// kit it changes nothing.
    ///
    /// ```
    /// use onair::kit::{KitConfig, KitState};
    /// use onair::{BaseUrl, Bot, BotConfig, ClientCredentials};
    ///
    /// let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// let mut config = BotConfig::new(BaseUrl::new("https://a.test")?, creds);
    /// config.kit = KitConfig::from_json(r#"{"tally":true}"#)?;
    /// let saved = KitState::from_json(r#"{"format":"onair.kit","version":1,"live_id":7}"#)?;
    /// let bot = Bot::new(config, None, 1).with_kit_state(&saved);
    /// assert_eq!(bot.kit().and_then(|k| k.live_id()), Some(7));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_kit_state(mut self, state: &KitState) -> Self {
        if let Some(kit) = &mut self.kit {
            kit.restore(state);
            let stored = kit.take_queued_replies();
            self.restore_replies(stored);
        }
        self
    }

    /// The configured kit (its tally, who was greeted), when one is.
    pub fn kit(&self) -> Option<&Kit> {
        self.kit.as_ref()
    }

    /// The token pair the bot holds, if any: what a driver saves (its
    /// [`Tokens::to_json`]) or shows. When the next refresh is due and how
    /// the stream stands are on [`Bot::status`].
    ///
    /// ```
    /// use onair::{BaseUrl, Bot, BotConfig, ClientCredentials, Tokens};
    /// let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// let config = BotConfig::new(BaseUrl::new("https://a.test")?, creds);
    /// assert!(Bot::new(config.clone(), None, 1).token_pair().is_none());
    /// let saved = Tokens::from_json(
    ///     br#"{"format":"onair.tokens","version":1,"generation":3,
    ///         "access_token":"at","access_expires_at_ms":1700003600000,
    ///         "issued_at_ms":1700000000000,"refresh_token":"rt",
    ///         "refresh_expires_at_ms":1702592000000,"scope":"chat.send"}"#)?;
    /// let bot = Bot::new(config, Some(saved), 1);
    /// assert_eq!(bot.token_pair().map(Tokens::generation), Some(3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn token_pair(&self) -> Option<&Tokens> {
        self.tokens.tokens()
    }

    /// While a token refresh is in flight (handed out as [`Action::Send`]
    /// and not yet answered): the generation of the pair whose refresh token
    /// it spends. `None` when no token request is in flight, or the one in
    /// flight is a code exchange. A driver shared by several processes asks
    /// its store before sending such a refresh, so that a pair another
    /// process already rotated is taken ([`Bot::adopt_tokens`]) instead of
    /// spending a refresh token that is no longer good.
    ///
    /// ```
    /// use onair::{BaseUrl, Bot, BotConfig, ClientCredentials};
    /// let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// let mut bot = Bot::new(BotConfig::new(BaseUrl::new("https://a.test")?, creds), None, 1);
    /// bot.authorize("code", "https://bot.example/callback");
    /// let _exchange = bot.poll(0);
    /// // A code exchange is not a refresh.
    /// assert_eq!(bot.refreshing(0), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn refreshing(&self, now_ms: u64) -> Option<u64> {
        match self.tokens.status(now_ms) {
            TokenStatus::Refreshing => Some(self.generation()),
            _ => None,
        }
    }

    /// What this bot learned of the app's daily quota (counted for the
    /// whole app, across its integrations) as of `now_ms`: to share with the
    /// app's other bots ([`Bot::share_daily_quota`], [`DailyQuota::merge`]).
    ///
    /// ```
    /// use onair::{BaseUrl, Bot, BotConfig, ClientCredentials};
    /// let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// let bot = Bot::new(BotConfig::new(BaseUrl::new("https://a.test")?, creds), None, 1);
    /// // Nothing learned yet.
    /// let daily = bot.daily_quota(1_700_000_000_000);
    /// assert!(daily.blocks.is_empty());
    /// assert_eq!(daily.remaining, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn daily_quota(&self, now_ms: u64) -> DailyQuota {
        self.quota.daily(now_ms)
    }

    /// Takes what the app's other bots learned of its daily quota (counted
    /// for the whole app, across its integrations): calls needing a blocked
    /// permission, or every call once the day's calls are used up, wait for
    /// the reset. The stream is never held back.
    ///
    /// ```
    /// # use onair::{BaseUrl, Bot, BotConfig, ClientCredentials};
    /// use onair::bot::DailyQuota;
    /// # let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// # let mut bot = Bot::new(BotConfig::new(BaseUrl::new("http://127.0.0.1:1")?, creds), None, 1);
    /// let now = 1_700_000_000_000;
    /// // Another bot of the app hit the daily limit of listeners.read.
    /// let learned: DailyQuota = serde_json::from_str(
    ///     r#"{"blocks":[{"scope":"listeners.read","untilMs":1700003600000}]}"#)?;
    /// bot.share_daily_quota(&learned, now);
    /// assert_eq!(bot.daily_quota(now).blocks, learned.blocks);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn share_daily_quota(&mut self, shared: &DailyQuota, now_ms: u64) {
        self.quota.share(shared, now_ms);
        self.announce_quota(now_ms);
    }

    /// Why the bot stopped, once it has.
    pub fn stop(&self) -> Option<&Stop> {
        self.stopped.as_ref()
    }

    /// The stop a person must act on while the bot waits for the DJ's
    /// consent: the [`Stop::Reauthorize`] stop in force, or
    /// `Reauthorize(NotAuthorized)` while it has no tokens yet; `None`
    /// otherwise. A driver with no way to get a new consent code ends its run
    /// with it instead of waiting for ever.
    ///
    /// ```
    /// use onair::{BaseUrl, Bot, BotConfig, ClientCredentials};
    /// let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s")?;
    /// let bot = Bot::new(BotConfig::new(BaseUrl::new("https://a.test")?, creds), None, 1);
    /// assert_eq!(bot.consent_stop().map(|s| s.code()), Some("reauthorize"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn consent_stop(&self) -> Option<Stop> {
        match &self.stopped {
            Some(stop) => stop.resumes_with_new_consent().then(|| stop.clone()),
            None => (self.tokens.problem() == Some(&AuthProblem::NotAuthorized))
                .then_some(Stop::Reauthorize(AuthProblem::NotAuthorized)),
        }
    }

    /// The next thing to do at `now_ms`. See the [module docs](self).
    pub fn poll(&mut self, now_ms: u64) -> Action {
        self.clock_ms = self.clock_ms.max(now_ms);
        let action = self.next_action(now_ms);
        match &action {
            Action::Done { call, result } => {
                if self.calls.take_chat(*call) {
                    match result {
                        CallResult::ChatSent => self.counters.chats_sent += 1,
                        _ => self.counters.chats_failed += 1,
                    }
                }
                if let CallResult::Failed(failure) = result {
                    self.gave_up(*call, failure, now_ms);
                }
            }
            Action::PersistTokens(_) => self.counters.token_pairs += 1,
            _ => {}
        }
        action
    }

    fn next_action(&mut self, now_ms: u64) -> Action {
        if let Some(action) = self.out.pop_front() {
            return action;
        }
        self.expire_replies(now_ms);
        if let Some(notice) = self.replies.take_notice(now_ms, self.stopped.is_some()) {
            return Action::Notice(notice);
        }
        if self.stopped.is_some() {
            return self
                .decided(now_ms)
                .unwrap_or(Action::Wait { until_ms: None });
        }
        self.expire_requests(now_ms);
        if let Some(action) = self.out.pop_front() {
            return action;
        }
        if let Some(notice) = self
            .notices
            .reach
            .due(now_ms)
            .or_else(|| self.notices.give_ups.due(now_ms))
        {
            return Action::Notice(notice);
        }
        if let Some(action) = self.poll_check(now_ms) {
            return action;
        }
        if let Some(action) = self.poll_tokens(now_ms) {
            return action;
        }
        if let Some(action) = self.decided(now_ms) {
            return action;
        }
        if let Some(action) = self.poll_stream(now_ms) {
            return action;
        }
        if let Some(action) = self.decided(now_ms) {
            return action;
        }
        // The stream may just have asked for a refresh.
        if let Some(action) = self.poll_tokens(now_ms).or_else(|| self.decided(now_ms)) {
            return action;
        }
        if let Some(action) = self.poll_calls(now_ms).or_else(|| self.decided(now_ms)) {
            return action;
        }
        if let Some(tag) = self.timers.pop_due(now_ms, self.connected()) {
            return Action::Timer { tag };
        }
        if let Some(action) = self.poll_kit_state(now_ms) {
            return action;
        }
        if self.needs_authorization() {
            return Action::NeedsAuthorization;
        }
        Action::Wait {
            until_ms: self.next_deadline(now_ms),
        }
    }

    /// What is already decided: queued output first, then a stop (after
    /// the drain of a stop for good, [`Bot::poll_drain`]).
    fn decided(&mut self, now_ms: u64) -> Option<Action> {
        if let Some(action) = self.out.pop_front() {
            return Some(action);
        }
        let stop = self.stopped.clone()?;
        if let Some(action) = self.poll_drain(now_ms) {
            return Some(action);
        }
        // What was given up and not yet told is told before the stop.
        Some(match self.notices.give_ups.flush(now_ms) {
            Some(notice) => Action::Notice(notice),
            None => Action::Stopped(stop),
        })
    }

    fn needs_authorization(&self) -> bool {
        !self.code.is_pending()
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
        for deadline in self.requests.deadlines() {
            add(Some(deadline));
        }
        add(self.stream.deadline());
        if !self.token_request_in_flight() && self.tokens.problem().is_none() {
            add(self
                .tokens
                .refresh_at_ms()
                .map(|at| at.max(self.refresh.at_ms())));
            if self.stream.wants_refresh {
                add(Some(self.refresh.at_ms()));
            }
        }
        add(self.call_deadline(now_ms));
        add(self.replies.deadline());
        add(self.timers.next_deadline(self.connected()));
        add(self.kit.as_ref().and_then(Kit::checkpoint_at));
        add(self.notices.reach.deadline());
        add(self.notices.give_ups.deadline());
        add(self.check_deadline());
        if !self.token_request_in_flight() {
            add(self.code.retry_at_ms());
        }
        earliest
    }

    /// Whether the event stream is open.
    fn connected(&self) -> bool {
        self.stream.connected()
    }

    fn halt(&mut self, stop: Stop) {
        match &self.stopped {
            None => {}
            // Waiting for consent, the bot may still be stopped for good
            // (a shutdown, a final problem): that stop replaces this one.
            Some(waiting)
                if waiting.resumes_with_new_consent() && !stop.resumes_with_new_consent() =>
            {
                self.code.forget();
                self.stream.restart = false;
            }
            Some(_) => return,
        }
        if let Some(conn) = self.stream.conn.take() {
            self.out.push_back(Action::CloseStream {
                id: conn.id(),
                reason: CloseReason::Stopping,
            });
        }
        let mut unsent = None;
        if !stop.resumes_with_new_consent() {
            // Saved with the kit state before they are dropped from this
            // run: a restart sends the ones still fresh.
            unsent = Some(self.unsent_replies());
            self.drop_queued_replies(replies::DropReason::Stopped, self.clock_ms);
            for call in self.calls.take_all() {
                self.answer(call, CallResult::Failed(CallFailure::Cancelled));
            }
            self.drop_unwanted_requests();
        }
        self.stopped = Some(stop);
        // The last of the kit's memory, saved before the bot goes quiet.
        self.push_last_state(unsent);
    }
}

fn done(call: CallId, result: CallResult) -> Action {
    Action::Done { call, result }
}

#[cfg(test)]
mod tests;
