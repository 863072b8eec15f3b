//! The bots: one task per integration, each owning one `onair-tokio`
//! driver while it runs. The task saves what its bot hands out before it
//! polls the bot again (a new token pair, sealed, by compare-and-swap; the
//! kit's memory with its queued replies; a broadcast's final tally),
//! counts the replies the core sent, merged and dropped, writes the event
//! log, and takes commands (a new
//! consent code, disable, enable, revoke, stop). Its view (the core's
//! status snapshot, the tally, why it stopped) is what the dashboard shows.
//!
//! Bots taken by the lease keeper start after the delay it gives them
//! (their slot, paced by the probe budget and at least
//! [`HostConfig::start_spread_ms`](crate::config::HostConfig) at a start),
//! so a host with a thousand DJs does not connect (and refresh) a thousand
//! times in the same instant.
//!
//! Here: the hub the web side reads (views, commands, the shared quota);
//! `task` (one bot's driver and commands; the configured replies are the
//! kit's, said by the core), `log` (the event log's writer), `gate` (one refresh per token).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use onair::bot::DailyQuota;
use onair::Status;
use onair_tokio::Clock;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

mod gate;
mod log;
mod task;

use crate::config::HostConfig;
use crate::metrics::Metrics;
use crate::store::{LogRow, Store};
use log::{log_writer, LogMsg};
use task::BotTask;

/// The idle connections the bots' shared HTTP client keeps for their calls
/// (chat, tokens, `GET /v1/live`): enough for a busy replica's calls to
/// reuse them, few enough that they cost little beside the streams.
const IDLE_CONNECTIONS: usize = 32;

/// What changed, for the dashboard's live updates.
#[derive(Debug, Clone)]
pub enum Update {
    /// This bot's view changed.
    Bot(i64),
    /// A new line in this bot's event log.
    Log(Arc<LogRow>),
}

/// A command for one bot's task.
#[derive(Debug)]
pub enum Command {
    /// A new consent code (the DJ connected again): exchanged once; the
    /// answer says whether a pair came.
    Authorize {
        /// The code (single use).
        code: String,
        /// Run the bot once the pair is stored (`false`: an admin disabled
        /// it; the pair is stored and the bot stays disabled).
        start: bool,
        /// `Ok` once the pair is stored, or why not.
        reply: oneshot::Sender<Result<(), String>>,
    },
    /// Stop the bot and keep it stopped (tokens kept).
    Disable(oneshot::Sender<()>),
    /// Run it again.
    Enable(oneshot::Sender<()>),
    /// Revoke its tokens and forget them (the DJ must connect again).
    Revoke(oneshot::Sender<()>),
    /// The current broadcast's `liveId` and tally (`TallyJson`), from the
    /// running bot or its stored kit state.
    Tally(oneshot::Sender<Option<(Option<u64>, String)>>),
    /// The host stops: close, save, end the task.
    Shutdown(oneshot::Sender<()>),
    /// This replica holds the bot's lease (`lease`: its generation): run it
    /// here, after `delay`.
    Take {
        /// The lease's generation (every write of the bot names it).
        lease: i64,
        /// Start after this long (spread at a replica's start).
        delay: Option<Duration>,
    },
    /// Close the bot here (saving what it has) and give its lease up.
    Release(oneshot::Sender<()>),
}

/// A top donor of the current broadcast, for the dashboard.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Donor {
    /// Their nickname (or a short id when they had none).
    pub name: String,
    /// What they donated.
    pub donated: u64,
}

/// A bot's state in one word: the API's JSON, the pages' classes and the
/// metrics' labels use these words (`serde` writes them snake_case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BotState {
    /// Restored, its start delayed (spread at a replica's start).
    Starting,
    /// Reading its broadcast's stream.
    Connected,
    /// Opening the stream.
    Connecting,
    /// Waiting for its DJ's broadcast.
    Waiting,
    /// Waiting before it tries again.
    BackingOff,
    /// Renewing its token pair.
    Refreshing,
    /// Without a usable pair: its DJ must connect again.
    NeedsConsent,
    /// Stopped (the stop says why).
    Stopped,
    /// Disabled by the admin.
    Disabled,
    /// Another replica runs it.
    Elsewhere,
}

impl BotState {
    /// The word.
    pub fn as_str(self) -> &'static str {
        match self {
            BotState::Starting => "starting",
            BotState::Connected => "connected",
            BotState::Connecting => "connecting",
            BotState::Waiting => "waiting",
            BotState::BackingOff => "backing_off",
            BotState::Refreshing => "refreshing",
            BotState::NeedsConsent => "needs_consent",
            BotState::Stopped => "stopped",
            BotState::Disabled => "disabled",
            BotState::Elsewhere => "elsewhere",
        }
    }
}

impl std::fmt::Display for BotState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a bot stopped: the core's stop code (or the host's:
/// `unreadable_pair`, `revoked`, `store`) and what to tell the DJ. In JSON
/// the pair `[code, message]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotStop {
    /// The stop code.
    pub code: String,
    /// What to tell the DJ.
    pub message: String,
}

impl BotStop {
    /// A stop with this code and message.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> BotStop {
        BotStop {
            code: code.into(),
            message: message.into(),
        }
    }
}

impl From<(String, String)> for BotStop {
    fn from((code, message): (String, String)) -> BotStop {
        BotStop { code, message }
    }
}

impl Serialize for BotStop {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (&self.code, &self.message).serialize(s)
    }
}

/// What the dashboard shows of one bot.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BotView {
    /// The bot's id.
    pub id: i64,
    /// Its name: the DJ's nickname once seen, else `bot N`.
    pub label: String,
    /// Whether it is enabled.
    pub enabled: bool,
    /// Its state in one word.
    pub state: BotState,
    /// The core's status snapshot, while a bot runs.
    pub status: Option<Status>,
    /// Connected to a broadcast whose `liveId` it knows.
    pub on_air: bool,
    /// The current broadcast's `liveId`.
    pub live_id: Option<u64>,
    /// Hearts in the current broadcast.
    pub hearts: u64,
    /// Donations in the current broadcast.
    pub donated: u64,
    /// People who joined the current broadcast.
    pub joined: usize,
    /// The current broadcast's top donors (at most five).
    pub top: Vec<Donor>,
    /// Why it stopped.
    pub stop: Option<BotStop>,
    /// A new consent would bring it back (offer the DJ a re-connect link).
    pub reconnect: bool,
    /// Something the DJ should know while the bot runs (it started without
    /// its stored memory).
    pub warning: Option<String>,
}

impl BotView {
    fn idle(id: i64, label: Option<&str>, enabled: bool, state: BotState) -> BotView {
        BotView {
            id,
            label: label.map_or_else(|| format!("bot {id}"), str::to_owned),
            enabled,
            state,
            status: None,
            on_air: false,
            live_id: None,
            hearts: 0,
            donated: 0,
            joined: 0,
            top: Vec::new(),
            stop: None,
            reconnect: false,
            warning: None,
        }
    }
}

/// A clock shared by every driver.
#[derive(Clone)]
pub struct SharedClock(pub Arc<dyn Clock>);

impl Clock for SharedClock {
    fn now_ms(&self) -> u64 {
        self.0.now_ms()
    }

    fn real_delay(&self, at_ms: u64) -> Duration {
        self.0.real_delay(at_ms)
    }
}

impl std::fmt::Debug for SharedClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedClock")
    }
}

/// Everything the bots and the web side share.
pub struct Hub {
    /// The configuration.
    pub config: Arc<HostConfig>,
    /// The store.
    pub store: Store,
    /// The metrics.
    pub metrics: Metrics,
    /// Live updates for the dashboard.
    pub updates: broadcast::Sender<Update>,
    /// The off-air probe planner: this replica's bots off air, what it
    /// knows of each, their waits ([`crate::probe`]).
    pub probes: crate::probe::Board,
    client: reqwest::Client,
    clock: SharedClock,
    bots: Mutex<BTreeMap<i64, Slot>>,
    views: RwLock<BTreeMap<i64, Arc<BotView>>>,
    log: mpsc::Sender<LogMsg>,
    seq: AtomicI64,
    quota: watch::Sender<DailyQuota>,
    /// This replica's bots learned something of the daily quota the store
    /// has not heard yet.
    quota_dirty: AtomicBool,
    rng: Mutex<rand::rngs::StdRng>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Leases a bot took here itself (a consent or a revoke through this
    /// replica), for the lease keeper to watch from its next look on.
    taken_here: Mutex<Vec<(i64, i64)>>,
    /// When the lease keeper last renewed this replica's leases (`/readyz`).
    leases_renewed: Mutex<Option<std::time::Instant>>,
    /// Bots whose consent's code exchange runs here now: the lease keeper
    /// never hands them to another replica meanwhile (the new pair is not
    /// stored yet; the other replica would find none). How many holds
    /// each has (a DJ may consent in two tabs at once).
    consenting: Mutex<HashMap<i64, usize>>,
    /// [`Hub::restore`] ran once (at this replica's start): the bots it
    /// finds from then on were connected through another replica.
    restored: AtomicBool,
}

/// A consent in flight for one bot ([`Hub::hold_consent`]): while it lives
/// the bot stays on this replica; dropped (answered, failed, or the
/// browser gone), the bot may be handed over again.
#[derive(Debug)]
pub struct ConsentInFlight {
    hub: Arc<Hub>,
    id: i64,
}

impl Drop for ConsentInFlight {
    fn drop(&mut self) {
        let mut holds = lock(&self.hub.consenting);
        if let Some(n) = holds.get_mut(&self.id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                holds.remove(&self.id);
            }
        }
    }
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Hub {
    /// A hub over `store`; bots are started by [`Hub::restore`] and
    /// [`Hub::connect_new`].
    pub async fn new(
        config: Arc<HostConfig>,
        store: Store,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Hub>, crate::store::StoreError> {
        let seed = config.seed.unwrap_or_else(|| rand::rng().random());
        let last = store.last_seq().await?;
        let now_us = i64::try_from(clock.now_ms())
            .unwrap_or(0)
            .saturating_mul(1000);
        let (log_tx, log_rx) = mpsc::channel(65_536);
        let (updates, _) = broadcast::channel(4096);
        let hub = Arc::new(Hub {
            store: store.clone(),
            metrics: Metrics::default(),
            updates,
            probes: crate::probe::Board::new(crate::probe::share(
                f64::from(config.probe_budget_per_s),
                1,
            )),
            // One client for every bot here; the idle connections its
            // pool keeps for calls are bounded (every bot's stream has its
            // own, and the calls of a thousand bots reuse a few).
            client: reqwest::Client::builder()
                .pool_max_idle_per_host(IDLE_CONNECTIONS)
                .build()
                .unwrap_or_else(|_| reqwest::Client::new()),
            clock: SharedClock(clock),
            bots: Mutex::new(BTreeMap::new()),
            views: RwLock::new(BTreeMap::new()),
            log: log_tx,
            seq: AtomicI64::new(last.max(now_us) + 1),
            quota: watch::Sender::new(DailyQuota::default()),
            quota_dirty: AtomicBool::new(false),
            rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(seed)),
            tasks: Mutex::new(Vec::new()),
            taken_here: Mutex::new(Vec::new()),
            leases_renewed: Mutex::new(None),
            consenting: Mutex::new(HashMap::new()),
            restored: AtomicBool::new(false),
            config,
        });
        let writer = tokio::spawn(log_writer(
            Arc::downgrade(&hub),
            store,
            log_rx,
            hub.config.events_per_broadcast,
        ));
        lock(&hub.tasks).push(writer);
        Ok(hub)
    }

    /// The time on the host's clock (unix ms).
    pub fn now_ms(&self) -> i64 {
        i64::try_from(self.clock.now_ms()).unwrap_or(i64::MAX)
    }

    /// Every bot's view, by id.
    pub fn views(&self) -> Vec<Arc<BotView>> {
        self.views
            .read()
            .map(|v| v.values().cloned().collect())
            .unwrap_or_default()
    }

    /// One bot's view.
    pub fn view(&self, id: i64) -> Option<Arc<BotView>> {
        self.views.read().ok().and_then(|v| v.get(&id).cloned())
    }

    /// What the app's bots learned of its daily quota.
    pub fn daily_quota(&self) -> DailyQuota {
        self.quota.borrow().clone()
    }

    fn set_view(&self, view: BotView) {
        let id = view.id;
        if let Ok(mut views) = self.views.write() {
            views.insert(id, Arc::new(view));
        }
        if self.updates.receiver_count() > 0 {
            let _ = self.updates.send(Update::Bot(id));
        }
    }

    /// Starts a task for every stored integration without one here (at
    /// start: all; later: those connected through another replica), idle:
    /// the lease keeper
    /// ([`crate::replicas`]) hands this replica its share of the enabled
    /// ones with a pair, which connect after a seeded delay within the
    /// configured spread. Returns how many could run.
    pub async fn restore(self: &Arc<Self>) -> Result<usize, crate::store::StoreError> {
        let rows = self.store.integrations().await?;
        let mut started = 0;
        let known: std::collections::BTreeSet<i64> = lock(&self.bots).keys().copied().collect();
        let later = self.restored.swap(true, Ordering::SeqCst);
        // What the store remembers of the new bots' broadcasts, for the
        // probe planner (a failed read: they start without).
        match self.store.probe_histories().await {
            Ok(histories) => {
                for (id, history) in histories {
                    if !known.contains(&id) {
                        self.probes.load(id, history);
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "probe histories not read"),
        }
        for row in rows {
            if known.contains(&row.id) {
                continue;
            }
            let runs = row.enabled && row.tokens.is_some();
            if runs {
                started += 1;
            }
            // A pair that does not open is this bot's alone: it asks for
            // consent (said when its lease is taken), the others run.
            let stop = match &row.pair_unreadable {
                Some(_) => Some(task::unreadable_pair_stop()),
                None => row.stop.clone().map(BotStop::from),
            };
            // A bot connected through another replica since this one
            // started, with no pair yet and nothing stopped: its consent is
            // running there (the pair comes with it), not needed.
            let elsewhere = later && row.enabled && !runs && stop.is_none();
            let view = BotView {
                reconnect: !elsewhere && row.enabled && (row.tokens.is_none() || stop.is_some()),
                stop: stop.clone(),
                ..BotView::idle(
                    row.id,
                    row.label.as_deref(),
                    row.enabled,
                    // Without a pair a bot needs consent, whatever stopped it.
                    match (row.enabled, runs) {
                        (false, _) => BotState::Disabled,
                        _ if elsewhere => BotState::Elsewhere,
                        (true, true) => BotState::Starting,
                        (true, false) => BotState::NeedsConsent,
                    },
                )
            };
            self.set_view(view);
            let mut task = self.new_task(row.id, row.label, row.generation, row.enabled, 0);
            task.stop = stop;
            task.paired = row.tokens.is_some();
            task.consented_elsewhere = elsewhere;
            self.run_task(task, None);
        }
        Ok(started)
    }

    /// The delay of a bot restored at a replica's start.
    pub fn start_delay(&self) -> Duration {
        start_delay(&mut lock(&self.rng), self.config.start_spread_ms)
    }

    /// Runs bot `id` here with `lease` (its task is made when there is none:
    /// a bot connected through another replica).
    pub async fn take(self: &Arc<Self>, id: i64, lease: i64, delay: Option<Duration>) {
        let known = lock(&self.bots).contains_key(&id);
        if !known {
            self.spawn(id, None, 0, true, 0, None);
        }
        self.command(id, Command::Take { lease, delay }).await;
    }

    /// Closes bot `id` here and gives its lease up (bounded: 40 s).
    pub async fn release(&self, id: i64) {
        let (done, wait) = oneshot::channel();
        if self.command(id, Command::Release(done)).await {
            let _ = tokio::time::timeout(Duration::from_secs(40), wait).await;
        }
    }

    /// Stops bot `id` here at once, saving nothing (its lease is lost or
    /// about to expire: another replica may run it already). Its task is
    /// made again, idle.
    pub fn abandon(self: &Arc<Self>, id: i64) {
        let slot = lock(&self.bots).remove(&id);
        if let Some(slot) = slot {
            slot.task.abort();
        }
        self.probes.set_off_air(id, false);
        let shown = self.view(id).map(|v| v.label.clone());
        self.spawn(id, None, 0, true, 0, None);
        self.set_view(BotView::idle(
            id,
            shown.as_deref(),
            true,
            BotState::Elsewhere,
        ));
    }

    /// Bot `id` took lease generation `lease` here itself: the lease
    /// keeper watches it from its next look on (and stops the bot here when
    /// another replica takes it).
    fn note_taken(&self, id: i64, lease: i64) {
        lock(&self.taken_here).push((id, lease));
    }

    /// The leases bots took here since the last call, (bot, generation).
    pub fn taken_here(&self) -> Vec<(i64, i64)> {
        std::mem::take(&mut *lock(&self.taken_here))
    }

    /// The lease keeper renewed this replica's leases now (`None`: it gave
    /// them up, cut from the store).
    pub fn note_leases_renewed(&self, renewed: bool) {
        *lock(&self.leases_renewed) = renewed.then(std::time::Instant::now);
    }

    /// When the lease keeper last renewed this replica's leases.
    pub fn leases_renewed(&self) -> Option<std::time::Instant> {
        *lock(&self.leases_renewed)
    }

    /// The highest bot id with a task here (0: none).
    pub fn max_bot_id(&self) -> i64 {
        lock(&self.bots).keys().next_back().copied().unwrap_or(0)
    }

    /// Takes the app's quota as the store has it: `true` when it changed
    /// what this replica's bots knew (they get it at once).
    pub fn quota_from_store(&self, app: &DailyQuota) -> bool {
        let now = self.clock.now_ms();
        self.quota.send_if_modified(|local| local.merge(app, now))
    }

    /// What this replica's bots learned since the last call, when the store
    /// has not heard it yet.
    pub fn quota_to_store(&self) -> Option<DailyQuota> {
        self.quota_dirty
            .swap(false, Ordering::AcqRel)
            .then(|| self.daily_quota())
    }

    /// Marks the quota as not yet stored (a store write failed).
    pub fn quota_unsaved(&self) {
        self.quota_dirty.store(true, Ordering::Release);
    }

    /// A new DJ's bot: its row (its lease this replica's), its task, and
    /// `code` exchanged once. Returns its id, the answer (a pair stored,
    /// or why not), and the consent's hold: keep it until the answer, so
    /// that the bot is not handed to another replica before its pair is
    /// stored.
    pub async fn connect_new(
        self: &Arc<Self>,
        code: String,
    ) -> Result<
        (i64, oneshot::Receiver<Result<(), String>>, ConsentInFlight),
        crate::store::StoreError,
    > {
        let id = self
            .store
            .create_integration_leased(self.now_ms(), crate::lease::LEASE_MS)
            .await?;
        // Held from its first moment, until the caller drops the hold.
        let held = self.hold_consent(id);
        self.set_view(BotView::idle(id, None, true, BotState::Connecting));
        let (reply, answer) = oneshot::channel();
        self.spawn(
            id,
            None,
            0,
            true,
            1,
            Some(Command::Authorize {
                code,
                start: true,
                reply,
            }),
        );
        Ok((id, answer, held))
    }

    /// Bot `id`'s consent runs here until the returned value is dropped:
    /// the lease keeper does not hand it over meanwhile.
    pub fn hold_consent(self: &Arc<Self>, id: i64) -> ConsentInFlight {
        *lock(&self.consenting).entry(id).or_insert(0) += 1;
        ConsentInFlight {
            hub: Arc::clone(self),
            id,
        }
    }

    /// Whether a consent for bot `id` runs here now ([`Hub::hold_consent`]).
    pub fn consenting(&self, id: i64) -> bool {
        lock(&self.consenting).contains_key(&id)
    }

    /// Forgets bot `id` here: its task is ended (waited for, at most a
    /// second, so that it writes nothing more) and its view goes (its
    /// consent failed before it ever ran; the caller deletes its row).
    pub async fn forget(&self, id: i64) {
        let slot = lock(&self.bots).remove(&id);
        if let Some(slot) = slot {
            slot.task.abort();
            let until = tokio::time::Instant::now() + Duration::from_secs(1);
            while !slot.task.is_finished() && tokio::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        self.probes.forget(id);
        if let Ok(mut views) = self.views.write() {
            views.remove(&id);
        }
        if self.updates.receiver_count() > 0 {
            let _ = self.updates.send(Update::Bot(id));
        }
    }

    /// Sends `command` to bot `id`; `false` when there is no such bot.
    pub async fn command(&self, id: i64, command: Command) -> bool {
        let tx = lock(&self.bots).get(&id).map(|s| s.tx.clone());
        match tx {
            Some(tx) => tx.send(command).await.is_ok(),
            None => false,
        }
    }

    fn spawn(
        self: &Arc<Self>,
        id: i64,
        label: Option<String>,
        generation: i64,
        enabled: bool,
        lease: i64,
        first: Option<Command>,
    ) {
        let task = self.new_task(id, label, generation, enabled, lease);
        self.run_task(task, first);
    }

    fn new_task(
        self: &Arc<Self>,
        id: i64,
        label: Option<String>,
        generation: i64,
        enabled: bool,
        lease: i64,
    ) -> BotTask {
        let seed = lock(&self.rng).random();
        BotTask {
            hub: Arc::clone(self),
            id,
            driver: None,
            generation: Arc::new(AtomicI64::new(generation)),
            lease,
            fenced: AtomicBool::new(false),
            label,
            enabled,
            stop: None,
            pending: None,
            seed,
            start_at: None,
            last_view: None,
            listeners_at: 0,
            listeners_call: None,
            warning: None,
            paired: true,
            consented_elsewhere: false,
            replies_seen: onair::bot::RepliesCounters::default(),
            probe: task::Probe::default(),
        }
    }

    fn run_task(self: &Arc<Self>, task: BotTask, first: Option<Command>) {
        let id = task.id;
        let (tx, rx) = mpsc::channel(16);
        let quota = self.quota.subscribe();
        let handle = tokio::spawn(Box::new(task).run(rx, quota, first));
        lock(&self.bots).insert(
            id,
            Slot {
                tx,
                task: handle.abort_handle(),
            },
        );
        let mut tasks = lock(&self.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle);
    }

    /// Stops every bot (streams closed, the last pair and kit state saved),
    /// flushes the event log. Bounded: 40 s at most.
    pub async fn shutdown(&self) {
        let senders: Vec<_> = lock(&self.bots).values().map(|s| s.tx.clone()).collect();
        let mut waits = Vec::new();
        for tx in senders {
            let (done, wait) = oneshot::channel();
            if tx.send(Command::Shutdown(done)).await.is_ok() {
                waits.push(wait);
            }
        }
        let all = futures_util::future::join_all(waits);
        if tokio::time::timeout(Duration::from_secs(35), all)
            .await
            .is_err()
        {
            tracing::warn!("some bots did not stop within 35 s");
        }
        let (done, wait) = oneshot::channel();
        if self.log.send(LogMsg::Flush(done)).await.is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(5), wait).await;
        }
    }

    fn next_seq(&self) -> i64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Queues a log line for the writer. Never waits: a bot that waited
    /// for the dashboard's log would stop reading its stream; when the
    /// writer is that far behind, the line is dropped and counted.
    fn log(&self, row: LogRow) {
        if self.updates.receiver_count() > 0 {
            let _ = self.updates.send(Update::Log(Arc::new(row.clone())));
        }
        if self.log.try_send(LogMsg::Row(row)).is_err() {
            self.metrics.log_dropped.inc();
        }
    }

    /// Folds what one bot learned of the app's daily quota into the app's
    /// (every bot of this replica gets it at once, the store at the lease
    /// keeper's next look).
    fn share_quota(&self, learned: &DailyQuota) {
        let now = self.clock.now_ms();
        if self.quota.send_if_modified(|app| app.merge(learned, now)) {
            self.quota_dirty.store(true, Ordering::Release);
        }
    }
}

/// One bot's task as the hub knows it.
struct Slot {
    tx: mpsc::Sender<Command>,
    task: tokio::task::AbortHandle,
}

/// When a restored bot starts: uniformly within `spread_ms`, from the
/// host's seeded generator (the same seed, the same schedule).
fn start_delay(rng: &mut rand::rngs::StdRng, spread_ms: u64) -> Duration {
    Duration::from_millis(rng.random_range(0..spread_ms.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_state_and_the_stop_are_written_as_the_same_words() {
        let all = [
            (BotState::Starting, "starting"),
            (BotState::Connected, "connected"),
            (BotState::Connecting, "connecting"),
            (BotState::Waiting, "waiting"),
            (BotState::BackingOff, "backing_off"),
            (BotState::Refreshing, "refreshing"),
            (BotState::NeedsConsent, "needs_consent"),
            (BotState::Stopped, "stopped"),
            (BotState::Disabled, "disabled"),
            (BotState::Elsewhere, "elsewhere"),
        ];
        for (state, word) in all {
            assert_eq!(state.as_str(), word);
            assert_eq!(state.to_string(), word);
            assert_eq!(serde_json::to_value(state).unwrap(), word);
        }
        let mut view = BotView::idle(3, Some("Mina"), true, BotState::NeedsConsent);
        view.stop = Some(BotStop::new("reauthorize", "connect again"));
        view.warning = Some("started without its memory".to_owned());
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["state"], "needs_consent");
        assert_eq!(
            json["stop"],
            serde_json::json!(["reauthorize", "connect again"])
        );
        let card = crate::pages::bot_card(&view, 0).into_string();
        assert!(card.contains("started without its memory"), "{card}");
        assert!(card.contains("data-state=\"needs_consent\""), "{card}");
    }

    #[test]
    fn a_thousand_restored_bots_start_spread_over_the_window_not_at_once() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let delays: Vec<u128> = (0..1000)
            .map(|_| start_delay(&mut rng, 5_000).as_millis())
            .collect();
        assert!(delays.iter().all(|d| *d < 5_000));
        // 1 000 starts over 5 s: about 20 per 100 ms; none near a burst.
        let mut per_slot = [0u32; 50];
        for d in &delays {
            per_slot[(*d / 100) as usize] += 1;
        }
        assert!(per_slot.iter().all(|n| *n < 45), "{per_slot:?}");
        assert!(per_slot.iter().all(|n| *n > 2), "{per_slot:?}");
        let mut again = rand::rngs::StdRng::seed_from_u64(7);
        assert_eq!(
            start_delay(&mut again, 5_000).as_millis(),
            delays[0],
            "seeded"
        );
        assert_eq!(start_delay(&mut again, 0), Duration::ZERO);
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::{BotState, BotView};

    /// A view for page tests.
    pub fn view(id: i64) -> BotView {
        BotView::idle(id, None, true, BotState::Connected)
    }
}
