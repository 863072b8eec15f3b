//! # onair-tokio — the ready-made async driver of onair
//!
//! [`onair::Bot`] holds every rule of the live-broadcast bot API and does no
//! I/O. This crate is the loop every async bot would otherwise write around
//! it (quinn to onair's quinn-proto): one task per request and per stream
//! over reqwest (rustls), a channel back, `select!` over reports and the
//! bot's `Wait` deadline, streams aborted when the bot closes them, headers
//! converted, the clock read, tokens persisted through a [`TokenStore`],
//! Ctrl-C and SIGTERM turned into a clean stop that loses nothing read
//! ([`Driver::stop_on_signals`]). You get only what matters: events, call
//! results, stops.
//!
//! ```no_run
//! use onair::{BaseUrl, BotConfig, ClientCredentials, Event};
//! use onair_tokio::{BotEvent, Driver, FileStore};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "secret")?;
//! let config = BotConfig::new(BaseUrl::new("http://127.0.0.1:8080")?, creds);
//! // Ctrl-C and SIGTERM stop it cleanly: `Stopped(ShutDown)`, then `None`.
//! let mut driver = Driver::from_store(config, FileStore::new("tokens.json"))?.stop_on_signals();
//! while let Some(ev) = driver.next().await {
//!     match ev {
//!         BotEvent::Event { event: Event::Chat(chat), .. } if chat.message == "!hello" => {
//!             driver.bot_mut().send_chat("hello!")?;
//!         }
//!         BotEvent::NeedsAuthorization => driver.bot_mut().authorize("code", "https://bot/cb"),
//!         BotEvent::Stopped(why) => eprintln!("stopped: {why}"),
//!         _ => {}
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! The driver follows the bot's contract: it polls until `Wait`, sleeps
//! until the deadline or the next report, gives requests no timeout of their
//! own (the bot keeps each request's deadline) and the stream none at all
//! (the bot's watchdog covers it).
//!
//! **The guide** — install, a bot in fifteen lines, tokens and consent, the
//! configured kit, testing a bot against `onair serve`, what each stop means —
//! is `docs/rust.md` in the repository; its code runs as this crate's doc
//! tests, and its bot is `examples/bot.rs`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod clock;
mod store;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use onair::bot::Notice;
use onair::event::Event;
use onair::kit::{Arrival, BroadcastEnded, Command, KitState, Milestone};
use onair::{
    Action, Bot, BotConfig, CallId, CallResult, Endpoint, FrameId, HttpRequest, RequestId, Stop,
    Tag, Tokens,
};
use reqwest::header::HeaderMap;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;

pub use clock::{Clock, SystemClock};
pub use store::{
    BeforeRefresh, FileStore, GateFuture, MemoryStore, RefreshGate, StateStore, StoreError,
    TokenStore,
};

/// The largest response body read whole (the service's are a few KiB); a
/// larger one is treated as a failed request.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How many reports may wait in the channel; a stream's reader waits when
/// it is full (back-pressure, not growth).
const CHANNEL: usize = 256;

/// Draining a stream before it is closed: it is read until nothing more
/// comes within this quiet time (what the socket already holds arrives at
/// once)…
const DRAIN_QUIET: Duration = Duration::from_millis(25);

/// … and for at most this long, however busy it is.
const DRAIN_MAX: Duration = Duration::from_millis(1_000);

/// What the bot has for its author.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BotEvent {
    /// A stream event.
    Event {
        /// Its frame id, when it had one.
        id: Option<FrameId>,
        /// The event.
        event: Event,
    },
    /// A configured command to answer (the kit; reply with
    /// `driver.bot_mut().say(…)`).
    Command(Command),
    /// Someone to greet (the kit's greetings).
    Arrival(Arrival),
    /// A milestone crossed (the kit's milestones).
    Milestone(Milestone),
    /// A broadcast ended, with its final tally (the kit's tally).
    BroadcastEnded(BroadcastEnded),
    /// The kit's memory changed and there is no state store: save it
    /// yourself if a restart should remember it.
    StateChanged(KitState),
    /// The answer to an app call (`send_chat`, `fetch_broadcast`, …).
    Done {
        /// The call.
        call: CallId,
        /// How it went.
        result: CallResult,
    },
    /// Worth a log line; nothing to do.
    Notice(Notice),
    /// An app timer is due (`bot_mut().schedule(…)`, `every(…)`).
    Timer {
        /// The timer's tag.
        tag: Tag,
    },
    /// A new token pair is in force; it was saved to the store already.
    TokensRenewed(Tokens),
    /// The store refused the new pair: fix it, or a restart needs consent.
    StoreFailed(String),
    /// No tokens: get a consent code from the DJ and give it to
    /// `driver.bot_mut().authorize(code, redirect_uri)`.
    NeedsAuthorization,
    /// The bot stopped. A [`Stop::Reauthorize`] stop resumes after
    /// `authorize`; after any other, [`Driver::next`] returns `None`.
    Stopped(Stop),
}

/// What a bot handed out as it stopped ([`Driver::close`]): the pair and
/// the kit state to save so that a restart resumes where it stopped.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Closed {
    /// The last token pair handed out while stopping (a refresh or code
    /// exchange that was in flight); `None`: the stored pair stands (after
    /// a revocation: forget it).
    pub tokens: Option<Tokens>,
    /// The kit's memory as it stopped; `None` without a kit or a change.
    pub state: Option<KitState>,
}

/// What a request task reports back. Kept small (the large parts boxed):
/// the channel allocates room for 32 reports with every driver, a bot off
/// air included.
#[derive(Debug)]
enum Report {
    Response {
        id: RequestId,
        status: u16,
        headers: Box<HeaderMap>,
        body: Vec<u8>,
    },
    TransportError {
        id: RequestId,
    },
    /// The request never left this machine (no connection was made).
    NotSent {
        id: RequestId,
    },
    StreamOpen {
        id: RequestId,
        status: u16,
        headers: Box<HeaderMap>,
    },
    StreamBytes {
        id: RequestId,
        chunk: bytes::Bytes,
    },
    StreamClosed {
        id: RequestId,
    },
    /// The stream handed over everything it had read and stopped reading.
    Drained {
        id: RequestId,
    },
    /// The refresh gate answered with a newer stored pair: `id` was not sent.
    Adopt {
        id: RequestId,
        tokens: Box<Tokens>,
    },
}

/// A request or stream in flight.
#[derive(Debug)]
struct Task {
    abort: AbortHandle,
    /// A stream's "hand over what you read, then stop reading".
    drain: Option<oneshot::Sender<()>>,
    /// A stream's span (`stream`): the parent of its events' `process`
    /// spans and of the calls made while it is open.
    span: Option<tracing::Span>,
}

/// A driver's part in the Ctrl-C and SIGTERM listener of
/// [`Driver::stop_on_signals`].
#[derive(Debug)]
enum Signals {
    /// Asked for outside a runtime: subscribes at the first `next`.
    Wanted,
    /// Subscribed: the process's signal count, and its value then.
    On {
        count: watch::Receiver<u32>,
        seen: u32,
    },
}

/// The process's one Ctrl-C and SIGTERM listener, shared by every driver
/// that asked for it: the signal count, and the task that counts.
struct Listener {
    count: Arc<watch::Sender<u32>>,
    task: AbortHandle,
}

static LISTENER: std::sync::Mutex<Option<Listener>> = std::sync::Mutex::new(None);

/// How many drivers are stopping after a signal right now: a signal that
/// comes meanwhile ends the process at once.
static STOPPING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts a driver in [`STOPPING`] while it lives.
#[derive(Debug)]
struct Stopping;

impl Stopping {
    fn start() -> Self {
        STOPPING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Stopping
    }
}

impl Drop for Stopping {
    fn drop(&mut self) {
        STOPPING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A receiver of the process's signal count, starting the listener on the
/// current runtime if none runs; `None` outside a runtime.
fn subscribe() -> Option<watch::Receiver<u32>> {
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    let mut slot = LISTENER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(listener) = slot.as_ref().filter(|l| !l.task.is_finished()) {
        return Some(listener.count.subscribe());
    }
    // The first, or the runtime it ran on is gone: (re)start it here.
    let count = slot
        .as_ref()
        .map(|l| Arc::clone(&l.count))
        .unwrap_or_else(|| Arc::new(watch::channel(0).0));
    let receiver = count.subscribe();
    // The handlers are in place when this returns (a signal right after
    // `stop_on_signals` must not kill the process).
    let signals = {
        let _inside = runtime.enter();
        OsSignals::new()
    };
    let task = runtime
        .spawn(listen_for_signals(signals, Arc::clone(&count)))
        .abort_handle();
    *slot = Some(Listener { count, task });
    Some(receiver)
}

/// A [`Bot`] driven over tokio and reqwest. See the [crate docs](crate).
pub struct Driver {
    bot: Bot,
    /// Made at the first request when none was given: a reqwest client
    /// (its TLS roots, its pool) is large to build and drop for a driver
    /// that is given one anyway (a host of many bots gives each the same).
    client: Option<reqwest::Client>,
    clock: Arc<dyn Clock>,
    store: Option<Box<dyn TokenStore>>,
    state_store: Option<Box<dyn StateStore>>,
    refresh_gate: Option<Arc<dyn RefreshGate>>,
    tx: mpsc::Sender<Report>,
    rx: mpsc::Receiver<Report>,
    tasks: HashMap<RequestId, Task>,
    /// `NeedsAuthorization` or a resumable stop was handed out; do not hand
    /// it out again until the bot moves on.
    said: bool,
    finished: bool,
    /// Ctrl-C and SIGTERM stop the bot ([`Driver::stop_on_signals`]).
    signals: Option<Signals>,
    /// A signal came: the streams are drained and the bot is stopping.
    stopping: bool,
    /// Counted in [`STOPPING`] until it stopped.
    stopping_count: Option<Stopping>,
    /// The resumable stop in force when a signal came: handed out as the
    /// final stop instead of `ShutDown`.
    stop_before_signal: Option<Stop>,
    /// What the bot handed out to save while stopping ([`Driver::close`]).
    closed: Closed,
    /// The first store failure while stopping.
    close_error: Option<StoreError>,
    /// The bot's name in its spans ([`Driver::with_span_label`]).
    label: Option<Arc<str>>,
    /// The `process` span of the event last handed out: it ends when the
    /// author asks for the next one.
    processing: Option<tracing::Span>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("bot", &self.bot)
            .field("tasks", &self.tasks.len())
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl Driver {
    /// Drives `bot` with the system clock, a default reqwest client and no
    /// token store.
    pub fn new(bot: Bot) -> Self {
        let (tx, rx) = mpsc::channel(CHANNEL);
        Driver {
            bot,
            client: None,
            clock: Arc::new(SystemClock),
            store: None,
            state_store: None,
            refresh_gate: None,
            tx,
            rx,
            tasks: HashMap::new(),
            said: false,
            finished: false,
            signals: None,
            stopping: false,
            stopping_count: None,
            stop_before_signal: None,
            closed: Closed::default(),
            close_error: None,
            label: None,
            processing: None,
        }
    }

    /// A bot resuming from the pair in `store` (or needing authorization
    /// without one), seeded from the system's randomness, saving every new
    /// pair to `store`.
    pub fn from_store(
        config: BotConfig,
        store: impl TokenStore + 'static,
    ) -> Result<Self, StoreError> {
        let saved = store.load()?;
        let bot = Bot::new(config, saved, clock::random_seed());
        Ok(Driver::new(bot).with_store(store))
    }

    /// Like [`from_store`](Self::from_store), and the configured kit's
    /// memory resumes from `state` and is saved there on every change, before
    /// anything that depends on it is handed to you.
    ///
    /// ```no_run
    /// # use onair::{BaseUrl, BotConfig, ClientCredentials};
    /// use onair_tokio::{Driver, FileStore};
    /// # fn run(config: BotConfig) -> Result<(), onair_tokio::StoreError> {
    /// let driver = Driver::from_stores(
    ///     config,
    ///     FileStore::new("tokens.json"),
    ///     FileStore::new("state.json"),
    /// )?;
    /// # Ok(()) }
    /// ```
    pub fn from_stores(
        config: BotConfig,
        tokens: impl TokenStore + 'static,
        state: impl StateStore + 'static,
    ) -> Result<Self, StoreError> {
        let saved = tokens.load()?;
        let mut bot = Bot::new(config, saved, clock::random_seed());
        if let Some(kit_state) = state.load_state()? {
            bot = bot.with_kit_state(&kit_state);
        }
        let mut driver = Driver::new(bot).with_store(tokens);
        driver.state_store = Some(Box::new(state));
        Ok(driver)
    }

    /// Saves every new pair to `store`.
    pub fn with_store(mut self, store: impl TokenStore + 'static) -> Self {
        self.store = Some(Box::new(store));
        self
    }

    /// Asks `gate` before every refresh, so processes sharing this
    /// integration's tokens refresh once between them (see [`RefreshGate`]).
    pub fn with_refresh_gate(mut self, gate: impl RefreshGate + 'static) -> Self {
        self.refresh_gate = Some(Arc::new(gate));
        self
    }

    /// Reads time from `clock` (e.g. an emulator's virtual clock).
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Sends with `client` (proxies, TLS roots, user agent). Give it no
    /// total timeout: the bot keeps request deadlines and watches streams.
    pub fn with_client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Names the bot in the spans of its requests, streams and events (the
    /// `onair.bot` attribute), e.g. its id in a service of many bots. Never
    /// a person's name or a token: spans leave the process.
    ///
    /// The driver makes `tracing` spans at level DEBUG: `connect` (the
    /// stream's request), `stream` (one per connection, a root), `process`
    /// (each event, from its hand-out to the next [`next`](Self::next)),
    /// `send` (a chat message), `refresh` (a token refresh) and `call`
    /// (any other request), with the OpenTelemetry messaging and HTTP
    /// attributes; a subscriber that exports them (`tracing-opentelemetry`)
    /// makes them traces. Disabled, they cost a callsite check.
    pub fn with_span_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(Arc::from(label.into()));
        self
    }

    /// Stops the bot cleanly on Ctrl-C (SIGINT) or SIGTERM, as a bot run
    /// from a terminal or a service manager should:
    ///
    /// 1. every stream hands the bot what it has read, and what its
    ///    connection already holds (read until nothing more comes within
    ///    25 ms, at most a second), so the kit counts it;
    /// 2. the bot stops ([`Bot::shutdown`], no revocation): queued calls are
    ///    cancelled, the stream closed, a token request in flight awaited
    ///    (its pair saved), the kit's last state saved;
    /// 3. [`next`](Self::next) hands out what the drained bytes made
    ///    (events, arrivals, …), then [`BotEvent::Stopped`] with
    ///    [`Stop::ShutDown`] — or the resumable stop the bot was already
    ///    waiting in (a `Reauthorize` stops stays the answer) — then `None`.
    ///
    /// A second signal while a driver is still stopping, or one that comes
    /// when no driver listens any more (each stops listening once stopped
    /// for good, or dropped), ends the process at once with status 130
    /// (SIGINT) or 143 (SIGTERM). One listener serves the process: a signal
    /// stops every driver that listens. Without this, a signal kills the
    /// process: whatever the kit counted in its last two seconds is lost.
    ///
    /// ```no_run
    /// # use onair::{BotConfig, Stop};
    /// use onair_tokio::{BotEvent, Driver, FileStore};
    /// # async fn run(config: BotConfig) -> Result<(), Box<dyn std::error::Error>> {
    /// let tokens = FileStore::new("tokens.json");
    /// let mut driver = Driver::from_store(config, tokens)?.stop_on_signals();
    /// while let Some(event) = driver.next().await {
    ///     match event {
    ///         BotEvent::Stopped(Stop::ShutDown) => break, // Ctrl-C: all saved, exit 0
    ///         BotEvent::Stopped(stop) => return Err(stop.to_string().into()),
    ///         _ => {}
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// Listening starts at once inside a tokio runtime, else at the first
    /// [`next`](Self::next). Without Unix signals (Windows) only Ctrl-C.
    pub fn stop_on_signals(mut self) -> Self {
        self.signals = Some(Signals::Wanted);
        self.listen();
        self
    }

    /// The bot, for its getters.
    pub fn bot(&self) -> &Bot {
        &self.bot
    }

    /// The bot, for app commands (`send_chat`, `authorize`, …). They take
    /// effect on the next [`Driver::next`].
    pub fn bot_mut(&mut self) -> &mut Bot {
        &mut self.bot
    }

    /// The time now on the driver's clock (unix ms).
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Runs the bot until it has something for you; `None` once it has
    /// stopped for good (after [`BotEvent::Stopped`]).
    ///
    /// Cancel-safe: the future may be dropped at any await (a `select!`
    /// with your own channel or a signal) and nothing is lost; it waits
    /// only on the reports channel, a timer and (with
    /// [`stop_on_signals`](Self::stop_on_signals)) the signals, and the next
    /// call goes on.
    pub async fn next(&mut self) -> Option<BotEvent> {
        // The author is done with the event last handed out.
        self.processing = None;
        self.listen();
        loop {
            if self.finished {
                return None;
            }
            if !self.stopping && self.signalled() {
                self.stop_for_signal().await;
                continue;
            }
            let now = self.clock.now_ms();
            let action = self.bot.poll(now);
            let repeat = matches!(
                &action,
                Action::NeedsAuthorization | Action::Stopped(Stop::Reauthorize(_))
            );
            if !repeat {
                self.said = false;
            }
            match action {
                Action::Send { id, request, .. } => self.spawn_send(id, request, now),
                Action::OpenStream { id, request } => self.spawn_stream(id, request, now),
                // Whatever the reason (a request that timed out among them:
                // stop waiting for a server that may never answer).
                Action::CloseStream { id, .. } => self.abort(id),
                Action::PersistState(state) => {
                    if self.stopping {
                        self.closed.state = Some(state.clone());
                    }
                    match &self.state_store {
                        Some(store) => {
                            if let Err(e) = store.save_state(&state) {
                                return Some(self.store_failed(e));
                            }
                        }
                        None => return Some(BotEvent::StateChanged(state)),
                    }
                }
                Action::PersistTokens(tokens) => {
                    if self.stopping {
                        self.closed.tokens = Some(tokens.clone());
                    }
                    if let Some(store) = &self.store {
                        if let Err(e) = store.save(&tokens) {
                            return Some(self.store_failed(e));
                        }
                    }
                    return Some(BotEvent::TokensRenewed(tokens));
                }
                Action::NeedsAuthorization | Action::Stopped(Stop::Reauthorize(_)) if self.said => {
                    // Already said: wait for the author to act (or a report).
                    self.wait(None).await;
                }
                Action::NeedsAuthorization => {
                    self.said = true;
                    return Some(BotEvent::NeedsAuthorization);
                }
                Action::Stopped(stop) if stop.resumes_with_new_consent() => {
                    self.said = true;
                    return Some(BotEvent::Stopped(stop));
                }
                Action::Stopped(stop) => {
                    // Stopped for good, last: the bot handed out its last
                    // pair and state and waited for a token request before.
                    self.finished = true;
                    self.abort_all();
                    // A signal no longer has anyone to stop here (the next
                    // one ends the process, if no other driver listens).
                    self.signals = None;
                    self.stopping_count = None;
                    let stop = match (stop, self.stop_before_signal.take()) {
                        (Stop::ShutDown, Some(before)) => before,
                        (stop, _) => stop,
                    };
                    return Some(BotEvent::Stopped(stop));
                }
                Action::Wait { until_ms } => self.wait(until_ms).await,
                other => {
                    if let Some(event) = self.handed_out(other) {
                        return Some(event);
                    }
                }
            }
        }
    }

    /// What the bot hands its author as it is (events, answers, notices, the
    /// kit's news), logging the notices a person should see.
    fn handed_out(&mut self, action: Action) -> Option<BotEvent> {
        Some(match action {
            Action::Event { id, event } => {
                self.processing = Some(tracing::debug_span!(
                    parent: self.stream_span(),
                    "process",
                    otel.kind = "consumer",
                    messaging.system = "onair",
                    messaging.operation.name = "process",
                    messaging.operation.type = "process",
                    messaging.destination.name = Endpoint::Events.path(),
                    onair.event.kind = event.name(),
                    onair.bot = self.label.as_deref(),
                ));
                BotEvent::Event { id, event }
            }
            Action::Done { call, result } => BotEvent::Done { call, result },
            Action::Notice(notice) => {
                log_notice(&notice);
                BotEvent::Notice(notice)
            }
            Action::Timer { tag } => BotEvent::Timer { tag },
            Action::Command(c) => BotEvent::Command(c),
            Action::Arrival(a) => BotEvent::Arrival(a),
            Action::Milestone(m) => BotEvent::Milestone(m),
            Action::BroadcastEnded(b) => BotEvent::BroadcastEnded(b),
            _ => return None,
        })
    }

    /// Starts the signal listener of [`stop_on_signals`](Self::stop_on_signals)
    /// if it waited for a runtime.
    fn listen(&mut self) {
        if matches!(self.signals, Some(Signals::Wanted)) {
            if let Some(count) = subscribe() {
                let seen = *count.borrow();
                self.signals = Some(Signals::On { count, seen });
            }
        }
    }

    /// Whether a signal came ([`stop_on_signals`](Self::stop_on_signals)).
    fn signalled(&self) -> bool {
        match &self.signals {
            Some(Signals::On { count, seen }) => *count.borrow() > *seen,
            _ => false,
        }
    }

    /// A signal came: everything read is handed to the bot, then it stops.
    async fn stop_for_signal(&mut self) {
        // Counted from the start of the drain: a second signal meanwhile
        // exits at once. (Dropped mid-drain, the next call drains what is
        // left and goes on from here.)
        self.stopping_count.get_or_insert_with(Stopping::start);
        self.drain_streams().await;
        self.stopping = true;
        self.stop_before_signal = self
            .bot
            .stop()
            .filter(|stop| stop.resumes_with_new_consent())
            .cloned();
        self.bot.shutdown(false);
    }

    /// Stops the bot: the stream is closed, queued calls cancelled, and with
    /// `revoke` the tokens are revoked (the request is sent and awaited) and
    /// the store cleared. The bot waits only for a token request or the
    /// revocation in flight (at most 30 s, [`BotConfig::shutdown_grace_ms`]);
    /// it drops the other requests in flight ([`Bot::shutdown`]).
    ///
    /// Before the stream is closed it hands the bot everything already read
    /// (as [`stop_on_signals`](Self::stop_on_signals) does), so the kit
    /// counts it and its last state includes it.
    pub async fn shutdown(self, revoke: bool) -> Result<(), StoreError> {
        self.close(revoke).await.map(drop)
    }

    /// [`shutdown`](Self::shutdown), and what the stopping bot handed out
    /// on the way: its last token pair and the kit's last state. A driver
    /// without stores (its author saves tokens and state itself, e.g. into
    /// a database) saves them from here; with stores they were saved there
    /// already and are returned all the same.
    ///
    /// ```no_run
    /// # async fn run(driver: onair_tokio::Driver) -> Result<(), onair_tokio::StoreError> {
    /// let closed = driver.close(false).await?;
    /// if let Some(state) = &closed.state {
    ///     std::fs::write("state.json", state.to_json())?; // or your database
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn close(mut self, revoke: bool) -> Result<Closed, StoreError> {
        self.stopping = true;
        self.drain_streams().await;
        self.bot.shutdown(revoke);
        // The bot drives the drain; its actions are handled as ever (the
        // pair and state saved and kept in `closed`) until `Stopped`.
        self.finished = false;
        while self.next().await.is_some() {}
        if let Some(error) = self.close_error.take() {
            return Err(error);
        }
        if revoke {
            if let Some(store) = &self.store {
                store.clear()?;
            }
        }
        Ok(std::mem::take(&mut self.closed))
    }

    /// A store refused what the bot handed out: told to the author, and
    /// (while stopping) returned by [`close`](Self::close).
    fn store_failed(&mut self, error: StoreError) -> BotEvent {
        let event = BotEvent::StoreFailed(error.to_string());
        if self.stopping {
            self.close_error.get_or_insert(error);
        }
        event
    }

    /// Every stream hands over what it has read and what its connection
    /// holds, then stops reading; each report is applied. Bounded by
    /// [`DRAIN_MAX`] (and a little for the channel).
    async fn drain_streams(&mut self) {
        let mut draining = HashSet::new();
        for (id, task) in &mut self.tasks {
            if let Some(drain) = task.drain.take() {
                if drain.send(()).is_ok() {
                    draining.insert(*id);
                }
            }
        }
        let deadline = Instant::now() + DRAIN_MAX + Duration::from_millis(500);
        while !draining.is_empty() {
            tokio::select! {
                report = self.rx.recv() => match report {
                    Some(report) => {
                        if let Report::Drained { id }
                        | Report::StreamClosed { id }
                        | Report::TransportError { id }
                        | Report::NotSent { id } = &report
                        {
                            draining.remove(id);
                        }
                        self.apply(report);
                    }
                    None => break,
                },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        while let Ok(report) = self.rx.try_recv() {
            self.apply(report);
        }
    }

    /// Sleeps until `until_ms` on the driver's clock, or until a report
    /// arrives; applies every report that is ready.
    async fn wait(&mut self, until_ms: Option<u64>) {
        let sleep = until_ms.map(|at| self.clock.real_delay(at));
        // A signal wakes the wait (once: after it the bot is stopping).
        let mut signals = match &self.signals {
            Some(Signals::On { count, seen }) if !self.stopping => Some((count.clone(), *seen)),
            _ => None,
        };
        tokio::select! {
            report = self.rx.recv() => {
                if let Some(report) = report {
                    self.apply(report);
                }
            }
            () = async {
                match sleep {
                    Some(delay) => tokio::time::sleep(delay).await,
                    None => std::future::pending().await,
                }
            } => {}
            () = async {
                let came = match &mut signals {
                    Some((count, seen)) => count.wait_for(|n| *n > *seen).await.is_ok(),
                    None => false,
                };
                if !came {
                    // No listener (or it could not start): never.
                    std::future::pending::<()>().await;
                }
            } => {}
        }
        while let Ok(report) = self.rx.try_recv() {
            self.apply(report);
        }
    }

    /// Hands a report to the bot. A misuse here would be a bug of this
    /// driver; late reports of closed streams are `Ok` by the contract.
    fn apply(&mut self, report: Report) {
        let now = self.clock.now_ms();
        let _ = match report {
            Report::Response {
                id,
                status,
                headers,
                body,
            } => {
                self.tasks.remove(&id);
                self.bot.on_response(id, status, &*headers, &body, now)
            }
            Report::TransportError { id } => {
                self.tasks.remove(&id);
                self.bot.on_transport_error(id, now)
            }
            Report::NotSent { id } => {
                self.tasks.remove(&id);
                self.bot.on_not_sent(id, now)
            }
            // The stream stopped reading; the bot closes it as it stops.
            Report::Drained { .. } => Ok(()),
            Report::StreamOpen {
                id,
                status,
                headers,
            } => self.bot.on_stream_open(id, status, &*headers, now),
            Report::StreamBytes { id, chunk } => self.bot.on_stream_bytes(id, &chunk, now),
            Report::StreamClosed { id } => {
                self.tasks.remove(&id);
                self.bot.on_stream_closed(id, now)
            }
            Report::Adopt { id, tokens } => {
                self.tasks.remove(&id);
                if self.bot.adopt_tokens(*tokens, now) {
                    Ok(())
                } else {
                    // Not newer after all (or the bot moved on): as if the
                    // refresh had failed; the bot retries after a backoff.
                    self.bot.on_transport_error(id, now)
                }
            }
        };
    }

    /// The open stream's span, if any.
    fn stream_span(&self) -> Option<tracing::Id> {
        self.tasks
            .values()
            .find_map(|t| t.span.as_ref().and_then(tracing::Span::id))
    }

    fn abort(&mut self, id: RequestId) {
        if let Some(task) = self.tasks.remove(&id) {
            task.abort.abort();
        }
    }

    fn abort_all(&mut self) {
        for (_, task) in self.tasks.drain() {
            task.abort.abort();
        }
    }

    fn build(&self, request: HttpRequest) -> Option<reqwest::Request> {
        let request = request.into_http().ok()?;
        reqwest::Request::try_from(request).ok()
    }

    fn spawn_send(&mut self, id: RequestId, request: HttpRequest, now: u64) {
        let tx = self.tx.clone();
        let endpoint = request.endpoint;
        let method = request.method.as_str();
        let Some(request) = self.build(request) else {
            let _ = self.bot.on_transport_error(id, now);
            return;
        };
        let client = self.client.get_or_insert_with(reqwest::Client::new).clone();
        // A refresh (not a code exchange) asks the gate first.
        let refreshing = self
            .bot
            .refreshing(now)
            .filter(|_| endpoint == Endpoint::Token);
        // A chat message is a `send` (messaging); a token refresh, a
        // `refresh`; anything else, a `call`.
        let (name, operation) = match endpoint {
            Endpoint::Chat => ("send", Some("send")),
            Endpoint::Token if refreshing.is_some() => ("refresh", None),
            _ => ("call", None),
        };
        let span = tracing::debug_span!(
            parent: self.stream_span(),
            "call",
            otel.name = name,
            otel.kind = if operation.is_some() { "producer" } else { "client" },
            otel.status_code = tracing::field::Empty,
            messaging.system = operation.map(|_| "onair"),
            messaging.operation.name = operation,
            messaging.operation.type = operation,
            messaging.destination.name = operation.map(|_| endpoint.path()),
            http.request.method = method,
            url.template = endpoint.path(),
            http.response.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
            onair.refresh = tracing::field::Empty,
            onair.endpoint = endpoint.as_str(),
            onair.bot = self.label.as_deref(),
        );
        let gate = self.refresh_gate.clone().zip(refreshing);
        let task = tokio::spawn(async move {
            if let Some((gate, generation)) = gate {
                match gate.before_refresh(generation).await {
                    Ok(BeforeRefresh::Proceed) => {}
                    Ok(BeforeRefresh::Newer(tokens)) => {
                        // Another holder of the pair refreshed it already.
                        span.record("onair.refresh", "adopted");
                        let _ = tx
                            .send(Report::Adopt {
                                id,
                                tokens: Box::new(tokens),
                            })
                            .await;
                        return;
                    }
                    Err(_) => {
                        span.record("error.type", "gate");
                        let _ = tx.send(Report::TransportError { id }).await;
                        return;
                    }
                }
            }
            let report = match client.execute(request).await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    record_status(&span, status);
                    let headers = Box::new(response.headers().clone());
                    match read_body(response).await {
                        Some(body) => Report::Response {
                            id,
                            status,
                            headers,
                            body,
                        },
                        None => Report::TransportError { id },
                    }
                }
                Err(e) => {
                    record_error(&span, &e);
                    failed(id, &e)
                }
            };
            let _ = tx.send(report).await;
        });
        self.tasks.insert(
            id,
            Task {
                abort: task.abort_handle(),
                drain: None,
                span: None,
            },
        );
    }

    fn spawn_stream(&mut self, id: RequestId, request: HttpRequest, now: u64) {
        let tx = self.tx.clone();
        let path = request.endpoint.path();
        let method = request.method.as_str();
        let Some(request) = self.build(request) else {
            let _ = self.bot.on_transport_error(id, now);
            return;
        };
        let client = self.client.get_or_insert_with(reqwest::Client::new).clone();
        let (drain, mut drained) = oneshot::channel::<()>();
        // One trace per connection: `stream` from the request to the
        // stream's end, `connect` until the answer's head.
        let label = self.label.as_deref();
        let stream = tracing::debug_span!(
            parent: None,
            "stream",
            otel.kind = "consumer",
            otel.status_code = tracing::field::Empty,
            messaging.system = "onair",
            messaging.operation.name = "receive",
            messaging.operation.type = "receive",
            messaging.destination.name = path,
            http.response.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
            onair.bot = label,
        );
        let connect = tracing::debug_span!(
            parent: &stream,
            "connect",
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            http.request.method = method,
            url.template = path,
            http.response.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
            onair.bot = label,
        );
        let span = stream.clone();
        let task = tokio::spawn(async move {
            // The span ends with the stream's task.
            let stream = span;
            let response = tokio::select! {
                biased;
                // Stopping before the stream opened: nothing was read.
                _ = &mut drained => {
                    let _ = tx.send(Report::Drained { id }).await;
                    return;
                }
                response = client.execute(request) => match response {
                    Ok(response) => response,
                    Err(e) => {
                        record_error(&connect, &e);
                        record_error(&stream, &e);
                        let _ = tx.send(failed(id, &e)).await;
                        return;
                    }
                },
            };
            let status = response.status().as_u16();
            record_status(&connect, status);
            // Off air (404) is no error of the stream's: it was looked for.
            stream.record("http.response.status_code", status);
            drop(connect);
            let open = Report::StreamOpen {
                id,
                status: response.status().as_u16(),
                headers: Box::new(response.headers().clone()),
            };
            if tx.send(open).await.is_err() {
                return;
            }
            let mut body = response.bytes_stream();
            loop {
                tokio::select! {
                    biased;
                    _ = &mut drained => {
                        drain_body(id, &mut body, &tx).await;
                        return;
                    }
                    chunk = body.next() => match chunk {
                        Some(Ok(chunk)) => {
                            // A copy the size of what was read: hyper's
                            // chunk shares its read buffer, which it can
                            // reuse only once no chunk holds it; a chunk
                            // queued here would make it allocate another
                            // (a live stream's buffers: 24 KiB, not 8).
                            let chunk = bytes::Bytes::copy_from_slice(&chunk);
                            if tx.send(Report::StreamBytes { id, chunk }).await.is_err() {
                                return;
                            }
                        }
                        _ => {
                            let _ = tx.send(Report::StreamClosed { id }).await;
                            return;
                        }
                    },
                }
            }
        });
        self.tasks.insert(
            id,
            Task {
                abort: task.abort_handle(),
                drain: Some(drain),
                span: Some(stream),
            },
        );
    }
}

/// Records an answer's status on a request's span (an error from 400 on,
/// as OpenTelemetry's HTTP client spans say).
fn record_status(span: &tracing::Span, status: u16) {
    span.record("http.response.status_code", status);
    if status >= 400 {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", status);
    }
}

/// Records a request that got no answer on its span.
fn record_error(span: &tracing::Span, error: &reqwest::Error) {
    span.record("otel.status_code", "ERROR");
    let kind = if error.is_connect() {
        "connect"
    } else if error.is_timeout() {
        "timeout"
    } else {
        "transport"
    };
    span.record("error.type", kind);
}

/// A request that failed: not sent when no connection was made (refused,
/// DNS, TLS handshake, connect timeout), else no answer (outcome unknown).
fn failed(id: RequestId, error: &reqwest::Error) -> Report {
    if error.is_connect() {
        Report::NotSent { id }
    } else {
        Report::TransportError { id }
    }
}

/// Hands over what the stream's connection has read or already holds: read
/// until nothing comes within [`DRAIN_QUIET`], at most [`DRAIN_MAX`]; then
/// reports it drained (and closed, if it ended meanwhile).
async fn drain_body<S>(id: RequestId, body: &mut S, tx: &mpsc::Sender<Report>)
where
    S: futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin,
{
    let until = Instant::now() + DRAIN_MAX;
    loop {
        let quiet = (Instant::now() + DRAIN_QUIET).min(until);
        match tokio::time::timeout_at(quiet, body.next()).await {
            Ok(Some(Ok(chunk))) => {
                if tx.send(Report::StreamBytes { id, chunk }).await.is_err() {
                    return;
                }
            }
            Ok(_) => {
                let _ = tx.send(Report::StreamClosed { id }).await;
                break;
            }
            Err(_) => break,
        }
    }
    let _ = tx.send(Report::Drained { id }).await;
}

/// Logs a notice a person should see (level warn) with `tracing`, target
/// `onair`; the others at debug.
fn log_notice(notice: &Notice) {
    if notice.is_warning() {
        tracing::warn!(target: "onair", "{notice}");
    } else {
        tracing::debug!(target: "onair", "{notice}");
    }
}

/// The signals a driver stops on, their handlers installed.
struct OsSignals {
    #[cfg(unix)]
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl OsSignals {
    /// Installs the handlers (inside a runtime).
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let streams = match (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) {
                (Ok(interrupt), Ok(terminate)) => Some((interrupt, terminate)),
                (Err(e), _) | (_, Err(e)) => {
                    tracing::warn!(target: "onair", "cannot listen for Ctrl-C and SIGTERM: {e}");
                    None
                }
            };
            OsSignals { streams }
        }
        #[cfg(not(unix))]
        OsSignals {}
    }

    /// The next signal: the exit status it asks for (130 SIGINT, 143
    /// SIGTERM); `None` when no more can come.
    async fn recv(&mut self) -> Option<i32> {
        #[cfg(unix)]
        {
            let (interrupt, terminate) = self.streams.as_mut()?;
            tokio::select! {
                Some(()) = interrupt.recv() => Some(130),
                Some(()) = terminate.recv() => Some(143),
                else => None,
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.ok().map(|()| 130)
        }
    }
}

/// The listener of [`Driver::stop_on_signals`]: counts Ctrl-C and SIGTERM
/// into `count`, which every listening driver watches. A signal while a
/// driver is still stopping after the last one, or when no driver listens
/// any more, ends the process at once.
async fn listen_for_signals(mut signals: OsSignals, count: Arc<watch::Sender<u32>>) {
    while let Some(status) = signals.recv().await {
        let stopping = STOPPING.load(std::sync::atomic::Ordering::SeqCst);
        if stopping > 0 || count.receiver_count() == 0 {
            tracing::warn!(target: "onair", "signal: exiting at once");
            std::process::exit(status);
        }
        count.send_modify(|n| *n = n.wrapping_add(1));
        tracing::info!(
            target: "onair",
            "signal received: stopping the bot (saving its state; again to exit at once)"
        );
    }
}

/// The guide's code (`docs/rust.md`) runs as doc tests, so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/rust.md")]
struct GuideDoctests;

impl Drop for Driver {
    fn drop(&mut self) {
        self.abort_all();
    }
}

/// The whole body, or `None` past [`MAX_BODY_BYTES`] or on a read error.
async fn read_body(response: reqwest::Response) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.ok()?;
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    Some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every driver's channel holds room for 32 reports from the start (a
    /// block of tokio's channel), a bot off air included: a report is a
    /// few words, its headers and tokens boxed (about 4.3 KiB a driver
    /// with them inline, 1.5 KiB so).
    #[test]
    fn a_report_is_a_few_words() {
        assert!(
            std::mem::size_of::<Report>() <= 48,
            "{} bytes",
            std::mem::size_of::<Report>()
        );
    }
}
