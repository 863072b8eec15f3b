//! # onair-tokio — the ready-made async driver of onair
//!
//! [`onair::Bot`] holds every rule of the live-broadcast bot API and does no
//! I/O. This crate is the loop every async bot would otherwise write around
//! it (quinn to onair's quinn-proto): one task per request and per stream
//! over reqwest (rustls), a channel back, `select!` over reports and the
//! bot's `Wait` deadline, streams aborted when the bot closes them, headers
//! converted, the clock read, tokens persisted through a [`TokenStore`]. You
//! get only what matters: events, call results, stops.
//!
//! ```no_run
//! use onair::{BaseUrl, BotConfig, ClientCredentials, Event};
//! use onair_tokio::{BotEvent, Driver, FileStore};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let creds = ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "secret")?;
//! let config = BotConfig::new(BaseUrl::new("http://127.0.0.1:8080")?, creds);
//! let mut driver = Driver::from_store(config, FileStore::new("tokens.json"))?;
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

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use onair::bot::Notice;
use onair::event::Event;
use onair::kit::{Arrival, BroadcastEnded, Command, KitState, Milestone};
use onair::proto::endpoint::Endpoint;
use onair::proto::oauth::TokenStatus;
use onair::proto::time::FrameId;
use onair::{Action, Bot, BotConfig, CallId, CallResult, HttpRequest, RequestId, Stop, Tokens};
use reqwest::header::HeaderMap;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

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
    /// A request got no answer within its timeout: the driver dropped it,
    /// and the bot retries or fails its call (a [`BotEvent::Done`] follows).
    TimedOut {
        /// The request's endpoint.
        endpoint: Endpoint,
    },
    /// An app timer is due (`bot_mut().schedule(…)`, `every(…)`).
    Timer {
        /// The timer's tag.
        tag: onair::proto::timers::Tag,
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

/// What a request task reports back.
#[derive(Debug)]
enum Report {
    Response {
        id: RequestId,
        status: u16,
        headers: HeaderMap,
        body: Vec<u8>,
    },
    TransportError {
        id: RequestId,
    },
    StreamOpen {
        id: RequestId,
        status: u16,
        headers: HeaderMap,
    },
    StreamBytes {
        id: RequestId,
        chunk: bytes::Bytes,
    },
    StreamClosed {
        id: RequestId,
    },
    /// The refresh gate answered with a newer stored pair: `id` was not sent.
    Adopt {
        id: RequestId,
        tokens: Tokens,
    },
}

/// A request or stream in flight.
#[derive(Debug)]
struct Task {
    abort: AbortHandle,
    endpoint: Endpoint,
}

/// A [`Bot`] driven over tokio and reqwest. See the [crate docs](crate).
pub struct Driver {
    bot: Bot,
    client: reqwest::Client,
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
            client: reqwest::Client::new(),
            clock: Arc::new(SystemClock),
            store: None,
            state_store: None,
            refresh_gate: None,
            tx,
            rx,
            tasks: HashMap::new(),
            said: false,
            finished: false,
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
        self.client = client;
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
    /// only on the reports channel and a timer, and the next call goes on.
    pub async fn next(&mut self) -> Option<BotEvent> {
        while !self.finished {
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
                Action::CloseStream { id } => self.abort(id),
                Action::TimedOut { id, endpoint } => {
                    // The bot gave up on it: stop waiting for a server that
                    // may never answer.
                    self.abort(id);
                    return Some(BotEvent::TimedOut { endpoint });
                }
                Action::Event { id, event } => return Some(BotEvent::Event { id, event }),
                Action::Done { call, result } => return Some(BotEvent::Done { call, result }),
                Action::Notice(notice) => return Some(BotEvent::Notice(notice)),
                Action::Timer { tag } => return Some(BotEvent::Timer { tag }),
                Action::Command(c) => return Some(BotEvent::Command(c)),
                Action::Arrival(a) => return Some(BotEvent::Arrival(a)),
                Action::Milestone(m) => return Some(BotEvent::Milestone(m)),
                Action::BroadcastEnded(b) => return Some(BotEvent::BroadcastEnded(b)),
                Action::PersistState(state) => match &self.state_store {
                    Some(store) => {
                        if let Err(e) = store.save_state(&state) {
                            return Some(BotEvent::StoreFailed(e.to_string()));
                        }
                    }
                    None => return Some(BotEvent::StateChanged(state)),
                },
                Action::PersistTokens(tokens) => {
                    if let Some(store) = &self.store {
                        if let Err(e) = store.save(&tokens) {
                            return Some(BotEvent::StoreFailed(e.to_string()));
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
                Action::Stopped(stop) => {
                    if stop.resumes_with_new_consent() {
                        self.said = true;
                    } else {
                        self.finished = true;
                        self.abort_all();
                    }
                    return Some(BotEvent::Stopped(stop));
                }
                Action::Wait { until_ms } => self.wait(until_ms).await,
                _ => {}
            }
        }
        None
    }

    /// Stops the bot: the stream is closed, queued calls cancelled, and with
    /// `revoke` the tokens are revoked (the request is sent and awaited) and
    /// the store cleared. Waits only for a token request or the revocation
    /// in flight (at most 30 s); other requests in flight are dropped.
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
        let mut closed = Closed::default();
        self.bot.shutdown(revoke);
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            // Everything the stopping bot still has: a last pair to save,
            // the revoke request to send, streams to close.
            loop {
                let now = self.clock.now_ms();
                match self.bot.poll(now) {
                    Action::Send { id, request, .. } => self.spawn_send(id, request, now),
                    Action::PersistTokens(tokens) => {
                        if let Some(store) = &self.store {
                            store.save(&tokens)?;
                        }
                        closed.tokens = Some(tokens);
                    }
                    Action::PersistState(state) => {
                        if let Some(store) = &self.state_store {
                            store.save_state(&state)?;
                        }
                        closed.state = Some(state);
                    }
                    Action::CloseStream { id } | Action::TimedOut { id, .. } => self.abort(id),
                    Action::Stopped(_) => break,
                    _ => {}
                }
            }
            // Only a token request (a pair to save) or the revocation is
            // worth waiting for; the stopped bot wants no other answer, and
            // a server that never answers must not hold the shutdown.
            let others: Vec<RequestId> = self
                .tasks
                .iter()
                .filter(|(_, task)| !task.endpoint.is_token())
                .map(|(id, _)| *id)
                .collect();
            for id in others {
                self.abort(id);
            }
            if self.tasks.is_empty() {
                break;
            }
            // A token request or the revocation is in flight: its answer.
            tokio::select! {
                report = self.rx.recv() => match report {
                    Some(report) => self.apply(report),
                    None => break,
                },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        self.finished = true;
        self.abort_all();
        if revoke {
            if let Some(store) = &self.store {
                store.clear()?;
            }
        }
        Ok(closed)
    }

    /// Sleeps until `until_ms` on the driver's clock, or until a report
    /// arrives; applies every report that is ready.
    async fn wait(&mut self, until_ms: Option<u64>) {
        let sleep = until_ms.map(|at| self.clock.real_delay(at));
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
                self.bot.on_response(id, status, &headers, &body, now)
            }
            Report::TransportError { id } => {
                self.tasks.remove(&id);
                self.bot.on_transport_error(id, now)
            }
            Report::StreamOpen {
                id,
                status,
                headers,
            } => self.bot.on_stream_open(id, status, &headers, now),
            Report::StreamBytes { id, chunk } => self.bot.on_stream_bytes(id, &chunk, now),
            Report::StreamClosed { id } => {
                self.tasks.remove(&id);
                self.bot.on_stream_closed(id, now)
            }
            Report::Adopt { id, tokens } => {
                self.tasks.remove(&id);
                if self.bot.adopt_tokens(tokens, now) {
                    Ok(())
                } else {
                    // Not newer after all (or the bot moved on): as if the
                    // refresh had failed; the bot retries after a backoff.
                    self.bot.on_transport_error(id, now)
                }
            }
        };
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
        let Some(request) = self.build(request) else {
            let _ = self.bot.on_transport_error(id, now);
            return;
        };
        let client = self.client.clone();
        // A refresh (not a code exchange) asks the gate first.
        let gate = self.refresh_gate.clone().filter(|_| {
            endpoint == Endpoint::Token
                && matches!(self.bot.tokens().status(now), TokenStatus::Refreshing)
        });
        let generation = self.bot.tokens().tokens().map_or(0, Tokens::generation);
        let task = tokio::spawn(async move {
            if let Some(gate) = gate {
                match gate.before_refresh(generation).await {
                    Ok(BeforeRefresh::Proceed) => {}
                    Ok(BeforeRefresh::Newer(tokens)) => {
                        let _ = tx.send(Report::Adopt { id, tokens }).await;
                        return;
                    }
                    Err(_) => {
                        let _ = tx.send(Report::TransportError { id }).await;
                        return;
                    }
                }
            }
            let report = match client.execute(request).await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let headers = response.headers().clone();
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
                Err(_) => Report::TransportError { id },
            };
            let _ = tx.send(report).await;
        });
        self.tasks.insert(
            id,
            Task {
                abort: task.abort_handle(),
                endpoint,
            },
        );
    }

    fn spawn_stream(&mut self, id: RequestId, request: HttpRequest, now: u64) {
        let tx = self.tx.clone();
        let endpoint = request.endpoint;
        let Some(request) = self.build(request) else {
            let _ = self.bot.on_transport_error(id, now);
            return;
        };
        let client = self.client.clone();
        let task = tokio::spawn(async move {
            let response = match client.execute(request).await {
                Ok(response) => response,
                Err(_) => {
                    let _ = tx.send(Report::TransportError { id }).await;
                    return;
                }
            };
            let open = Report::StreamOpen {
                id,
                status: response.status().as_u16(),
                headers: response.headers().clone(),
            };
            if tx.send(open).await.is_err() {
                return;
            }
            let mut body = response.bytes_stream();
            while let Some(Ok(chunk)) = body.next().await {
                if tx.send(Report::StreamBytes { id, chunk }).await.is_err() {
                    return;
                }
            }
            let _ = tx.send(Report::StreamClosed { id }).await;
        });
        self.tasks.insert(
            id,
            Task {
                abort: task.abort_handle(),
                endpoint,
            },
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
