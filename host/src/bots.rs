//! The bots: one task per integration, each owning one `onair-tokio`
//! driver while it runs. The task saves what its bot hands out before it
//! polls the bot again (a new token pair, sealed, by compare-and-swap; the
//! kit's memory; a broadcast's final tally), answers in chat with the
//! configured replies, writes the event log, and takes commands (a new
//! consent code, disable, enable, revoke, stop). Its view (the core's
//! status snapshot, the tally, why it stopped) is what the dashboard shows.
//!
//! Restored bots start after a seeded delay within
//! [`HostConfig::start_spread_ms`](crate::config::HostConfig), so a host
//! with a thousand DJs does not connect (and refresh) a thousand times in
//! the same instant.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use onair::bot::{Connection, Notice};
use onair::event::Event;
use onair::kit::{ArrivalKind, KitState, Milestone};
use onair::proto::json::TallyJson;
use onair::proto::problem::ProblemKind;
use onair::proto::quota::DailyQuota;
use onair::proto::time::FrameId;
use onair::{BaseUrl, Bot, BotConfig, ClientCredentials, Status, Stop, Tokens};
use onair_tokio::{BeforeRefresh, BotEvent, Clock, Driver, GateFuture, RefreshGate};
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::config::{Behaviour, HostConfig};
use crate::metrics::{KindLabel, Metrics};
use crate::store::{merge_quota, BroadcastRow, LogRow, Store, StoreError};

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
    /// One word: `starting`, `connected`, `connecting`, `waiting`,
    /// `backing_off`, `refreshing`, `needs_consent`, `stopped`, `disabled`,
    /// `elsewhere` (another replica runs it).
    pub state: &'static str,
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
    /// Why it stopped: the core's stop code and what to tell the DJ.
    pub stop: Option<(String, String)>,
    /// A new consent would bring it back (offer the DJ a re-connect link).
    pub reconnect: bool,
}

impl BotView {
    fn idle(id: i64, label: Option<&str>, enabled: bool, state: &'static str) -> BotView {
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

enum LogMsg {
    Row(LogRow),
    Flush(oneshot::Sender<()>),
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
            client: reqwest::Client::builder()
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
        for row in rows {
            if known.contains(&row.id) {
                continue;
            }
            let runs = row.enabled && row.tokens.is_some();
            if runs {
                started += 1;
            }
            let view = BotView {
                stop: row.stop.clone(),
                reconnect: row.enabled && (row.tokens.is_none() || row.stop.is_some()),
                ..BotView::idle(
                    row.id,
                    row.label.as_deref(),
                    row.enabled,
                    match (row.enabled, runs, &row.stop) {
                        (false, _, _) => "disabled",
                        (true, true, _) => "starting",
                        (true, false, Some(_)) => "stopped",
                        (true, false, None) => "needs_consent",
                    },
                )
            };
            self.set_view(view);
            self.spawn(row.id, row.label, row.generation, row.enabled, 0, None);
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
        let shown = self.view(id).map(|v| v.label.clone());
        self.spawn(id, None, 0, true, 0, None);
        self.set_view(BotView::idle(id, shown.as_deref(), true, "elsewhere"));
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

    /// The highest bot id with a task here (0: none).
    pub fn max_bot_id(&self) -> i64 {
        lock(&self.bots).keys().next_back().copied().unwrap_or(0)
    }

    /// Takes the app's quota as the store has it: `true` when it changed
    /// what this replica's bots knew (they get it at once).
    pub fn quota_from_store(&self, app: &DailyQuota) -> bool {
        let now = self.clock.now_ms();
        self.quota
            .send_if_modified(|local| merge_quota(local, app, now))
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
    /// `code` exchanged once. Returns its id and the answer (a pair stored,
    /// or why not).
    pub async fn connect_new(
        self: &Arc<Self>,
        code: String,
    ) -> Result<(i64, oneshot::Receiver<Result<(), String>>), crate::store::StoreError> {
        let id = self
            .store
            .create_integration_leased(self.now_ms(), crate::lease::LEASE_MS)
            .await?;
        self.set_view(BotView::idle(id, None, true, "connecting"));
        let (reply, answer) = oneshot::channel();
        self.spawn(
            id,
            None,
            0,
            true,
            1,
            Some(Command::Authorize { code, reply }),
        );
        Ok((id, answer))
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
        let (tx, rx) = mpsc::channel(16);
        let seed = lock(&self.rng).random();
        let task = BotTask {
            hub: Arc::clone(self),
            id,
            behaviour: self.config.behaviour(id).clone(),
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
        };
        let quota = self.quota.subscribe();
        let handle = tokio::spawn(task.run(rx, quota, first));
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
        if self
            .quota
            .send_if_modified(|app| merge_quota(app, learned, now))
        {
            self.quota_dirty.store(true, Ordering::Release);
        }
    }
}

/// One bot's task as the hub knows it.
struct Slot {
    tx: mpsc::Sender<Command>,
    task: tokio::task::AbortHandle,
}

/// Before a refresh: in one statement, the stored pair and this replica's
/// lease. A newer stored pair is handed back (the spent refresh token is
/// never sent); a lease that is not this replica's, or has less than
/// [`crate::lease::REFRESH_MARGIN_MS`] left, refuses the refresh (the bot
/// retries after a backoff, by then stopped here or renewed).
struct StoreGate {
    store: Store,
    id: i64,
    lease: i64,
    generation: Arc<AtomicI64>,
}

impl RefreshGate for StoreGate {
    fn before_refresh(&self, generation: u64) -> GateFuture {
        let store = self.store.clone();
        let (id, lease) = (self.id, self.lease);
        let row_generation = Arc::clone(&self.generation);
        Box::pin(async move {
            let refused = |why: &str| {
                tracing::warn!(bot = id, "refresh held back: {why}");
                onair_tokio::StoreError::Io(std::io::Error::other(why.to_owned()))
            };
            let read = match tokio::time::timeout(
                Duration::from_secs(3),
                store.gate_read(id, lease),
            )
            .await
            {
                Ok(Ok(read)) => read,
                Ok(Err(e)) => return Err(refused(&e.to_string())),
                Err(_) => return Err(refused("the store did not answer in 3 s")),
            };
            match read.lease_left_ms {
                None => return Err(refused("the lease is another replica's")),
                Some(left) if left < crate::lease::REFRESH_MARGIN_MS => {
                    return Err(refused("the lease is about to expire"))
                }
                Some(_) => {}
            }
            if let Some(tokens) = read.tokens {
                if tokens.generation() > generation {
                    row_generation.store(read.generation, Ordering::Release);
                    tracing::info!(
                        bot = id,
                        generation = tokens.generation(),
                        "took the stored newer pair"
                    );
                    return Ok(BeforeRefresh::Newer(tokens));
                }
            }
            Ok(BeforeRefresh::Proceed)
        })
    }
}

/// Writes the event log in batches, one transaction each, and keeps each
/// broadcast's log to `keep` rows.
async fn log_writer(
    hub: std::sync::Weak<Hub>,
    store: Store,
    mut rx: mpsc::Receiver<LogMsg>,
    keep: u32,
) {
    let mut since_prune: HashMap<(i64, i64), u32> = HashMap::new();
    let mut batch = Vec::new();
    let mut msgs = Vec::new();
    loop {
        msgs.clear();
        if rx.recv_many(&mut msgs, 2048).await == 0 {
            break;
        }
        let mut flushes = Vec::new();
        for msg in msgs.drain(..) {
            match msg {
                LogMsg::Row(row) => batch.push(row),
                LogMsg::Flush(done) => flushes.push(done),
            }
        }
        if !batch.is_empty() {
            let mut tries = 0;
            while let Err(e) = store.insert_events(&batch).await {
                tries += 1;
                if let Some(hub) = hub.upgrade() {
                    hub.metrics.store_errors.inc();
                }
                if tries >= 3 {
                    tracing::error!(error = %e, rows = batch.len(), "event log: rows dropped");
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            for row in batch.drain(..) {
                *since_prune
                    .entry((row.integration_id, row.live_id))
                    .or_default() += 1;
            }
            let due: Vec<(i64, i64)> = since_prune
                .iter()
                .filter(|(_, n)| **n >= (keep / 2).max(16))
                .map(|(k, _)| *k)
                .collect();
            for key in due {
                since_prune.remove(&key);
                if let Err(e) = store.prune_events(key.0, key.1, keep).await {
                    tracing::warn!(error = %e, "event log: prune failed");
                }
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// When a restored bot starts: uniformly within `spread_ms`, from the
/// host's seeded generator (the same seed, the same schedule).
fn start_delay(rng: &mut rand::rngs::StdRng, spread_ms: u64) -> Duration {
    Duration::from_millis(rng.random_range(0..spread_ms.max(1)))
}

fn name(user: &onair::User) -> &str {
    user.nickname.as_deref().unwrap_or("friend")
}

fn fill(template: &str, pairs: &[(&str, &str)]) -> String {
    let mut out = template.to_owned();
    for (key, value) in pairs {
        out = out.replace(&format!("{{{key}}}"), value);
    }
    out
}

fn frame_key(id: Option<&FrameId>, seq: i64) -> String {
    id.map_or_else(|| format!("local-{seq}"), |f| f.as_str().to_owned())
}

/// One bot's task.
struct BotTask {
    hub: Arc<Hub>,
    id: i64,
    behaviour: Behaviour,
    driver: Option<Driver>,
    /// The row's token generation as last read or written (shared with the
    /// refresh gate, which reads newer pairs).
    generation: Arc<AtomicI64>,
    /// This replica's lease of the bot (its generation; 0: none, another
    /// replica runs it or nobody does).
    lease: i64,
    /// A write was refused by the fence: the lease is another replica's.
    fenced: AtomicBool,
    label: Option<String>,
    enabled: bool,
    stop: Option<(String, String)>,
    pending: Option<oneshot::Sender<Result<(), String>>>,
    seed: u64,
    start_at: Option<Instant>,
    last_view: Option<Instant>,
    /// When the bot lists the listeners next (service time).
    listeners_at: u64,
    /// The listing in flight.
    listeners_call: Option<onair::bot::CallId>,
}

async fn next_event(driver: &mut Option<Driver>) -> Option<BotEvent> {
    match driver {
        Some(d) => d.next().await,
        None => std::future::pending().await,
    }
}

async fn start_due(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl BotTask {
    fn gen(&self) -> i64 {
        self.generation.load(Ordering::Acquire)
    }

    fn set_gen(&self, generation: i64) {
        self.generation.store(generation, Ordering::Release);
    }

    /// Whether this replica still holds the bot's lease it believes it
    /// holds. Another replica may have taken it since (an admin's revoke
    /// through it) without the keeper here having noticed yet (it looks
    /// every 2 s): a consent or a revoke through this replica then takes
    /// the lease back first, instead of writing with a fenced one.
    async fn holds_lease(&self) -> bool {
        self.lease != 0
            && matches!(
                self.hub.store.gate_read(self.id, self.lease).await,
                Ok(read) if read.lease_left_ms.is_some_and(|left| left > 0)
            )
    }

    /// Notes a fenced write (the lease is gone): the bot stops here.
    fn note(&self, e: &StoreError) {
        if matches!(e, StoreError::Fenced { .. }) {
            self.fenced.store(true, Ordering::Release);
        }
    }

    /// After a fenced write: the bot stops here at once, saving nothing
    /// more (another replica runs it).
    fn stop_fenced(&mut self) {
        if !self.fenced.swap(false, Ordering::AcqRel) {
            return;
        }
        tracing::warn!(
            bot = self.id,
            "lease lost (a write was fenced): the bot stops here"
        );
        self.driver = None;
        self.lease = 0;
        self.start_at = None;
        if let Some(reply) = self.pending.take() {
            let _ = reply.send(Err("another replica runs the bot".into()));
        }
        self.publish(true);
    }

    async fn run(
        mut self,
        mut rx: mpsc::Receiver<Command>,
        mut quota: watch::Receiver<DailyQuota>,
        first: Option<Command>,
    ) {
        if let Some(command) = first {
            if self.command(command).await {
                return;
            }
        }
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_tick = Instant::now();
        loop {
            // The bot first: what it has read is handled before a command
            // (a stop) is taken.
            tokio::select! {
                biased;
                event = next_event(&mut self.driver) => match event {
                    Some(event) => self.on_event(event).await,
                    None => {
                        // Stopped for good (the stop was handled).
                        self.driver = None;
                        self.publish(true);
                    }
                },
                command = rx.recv() => {
                    let command = command.unwrap_or_else(|| Command::Shutdown(oneshot::channel().0));
                    if self.command(command).await {
                        return;
                    }
                }
                () = start_due(self.start_at) => {
                    self.start_at = None;
                    self.start_from_store().await;
                }
                changed = quota.changed() => {
                    if changed.is_ok() {
                        let app = quota.borrow_and_update().clone();
                        if let Some(driver) = &mut self.driver {
                            let now = driver.now_ms();
                            driver.bot_mut().share_daily_quota(&app, now);
                        }
                    }
                }
                _ = tick.tick() => {}
            }
            // Once a second, also on a busy stream (the bot's arm comes
            // first and is always ready then: the tick's would starve).
            if last_tick.elapsed() >= Duration::from_secs(1) {
                last_tick = Instant::now();
                self.share_quota();
                self.list_listeners();
                self.publish(true);
            }
            self.stop_fenced();
        }
    }

    /// With `listeners_every_ms`: lists the listeners while on air, one
    /// listing at a time.
    fn list_listeners(&mut self) {
        let Some(every) = self.hub.config.listeners_every_ms else {
            return;
        };
        let Some(driver) = &mut self.driver else {
            return;
        };
        let now = driver.now_ms();
        if self.listeners_call.is_some() || now < self.listeners_at {
            return;
        }
        let on_air = driver
            .bot()
            .kit()
            .and_then(onair::kit::Kit::live_id)
            .is_some()
            && matches!(
                driver.bot().status(now).connection,
                Connection::Connected { .. }
            );
        if on_air {
            self.listeners_call = Some(driver.bot_mut().list_listeners());
            self.listeners_at = now.saturating_add(every);
        }
    }

    fn now(&self) -> i64 {
        self.hub.now_ms()
    }

    fn bot_config(&self) -> Result<BotConfig, String> {
        let config = &self.hub.config;
        let base = BaseUrl::new(&config.base_url).map_err(|e| e.to_string())?;
        let creds =
            ClientCredentials::new(&config.client_id, config.client_secret.expose().to_owned())
                .map_err(|e| e.to_string())?;
        let mut bot = BotConfig::new(base, creds);
        bot.kit = self.behaviour.kit.clone();
        if let Some(ms) = config.watchdog_ms {
            bot.stream.watchdog_ms = ms;
        }
        Ok(bot)
    }

    fn driver(&mut self, tokens: Option<Tokens>, state: Option<&KitState>) -> Option<Driver> {
        let config = match self.bot_config() {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(bot = self.id, error = %e, "bot configuration refused");
                return None;
            }
        };
        self.seed = self.seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut bot = Bot::new(config, tokens, self.seed);
        if let Some(state) = state {
            bot = bot.with_kit_state(state);
        }
        let app = self.hub.daily_quota();
        if app != DailyQuota::default() {
            bot.share_daily_quota(&app, self.hub.clock.now_ms());
        }
        self.listeners_call = None;
        Some(
            Driver::new(bot)
                .with_client(self.hub.client.clone())
                .with_clock(self.hub.clock.clone())
                .with_refresh_gate(StoreGate {
                    store: self.hub.store.clone(),
                    id: self.id,
                    lease: self.lease,
                    generation: Arc::clone(&self.generation),
                }),
        )
    }

    /// Starts the bot from the stored pair and kit state (when this replica
    /// holds its lease).
    async fn start_from_store(&mut self) {
        if self.driver.is_some() || !self.enabled || self.lease == 0 {
            return;
        }
        let row = match self.hub.store.integration(self.id).await {
            Ok(Some(row)) => row,
            Ok(None) => return,
            Err(e) => {
                tracing::error!(bot = self.id, error = %e, "cannot read the bot's row");
                self.stop = Some(("store".to_owned(), e.to_string()));
                self.publish(true);
                return;
            }
        };
        self.set_gen(row.generation);
        self.label = row.label.clone();
        self.stop = row.stop.clone();
        self.enabled = row.enabled;
        if !row.enabled {
            self.publish(true);
            return;
        }
        let Some(tokens) = row.tokens else {
            self.publish(true);
            return;
        };
        self.stop = None;
        self.driver = self.driver(Some(tokens), row.kit_state.as_ref());
        tracing::info!(bot = self.id, "bot started from the store");
        self.publish(true);
    }

    /// Handles a command; `true` when the task ends.
    async fn command(&mut self, command: Command) -> bool {
        match command {
            Command::Authorize { code, reply } => {
                self.close(false).await;
                if !self.holds_lease().await {
                    // The DJ re-connected through this replica: the bot
                    // runs here from now on (the holder's writes are fenced).
                    match self
                        .hub
                        .store
                        .steal_lease(self.id, crate::lease::LEASE_MS)
                        .await
                    {
                        Ok(Some(lease)) => {
                            self.lease = lease;
                            self.hub.note_taken(self.id, lease);
                        }
                        Ok(None) => {
                            let _ = reply.send(Err("no such bot".into()));
                            return false;
                        }
                        Err(e) => {
                            let _ = reply.send(Err(e.to_string()));
                            return false;
                        }
                    }
                }
                let state = match self.hub.store.integration(self.id).await {
                    Ok(row) => row.and_then(|r| {
                        self.set_gen(r.generation);
                        // A stop recorded through another replica (a revoke
                        // there) is this consent's to clear.
                        if self.stop.is_none() {
                            self.stop = r.stop;
                        }
                        r.kit_state
                    }),
                    Err(e) => {
                        let _ = reply.send(Err(e.to_string()));
                        return false;
                    }
                };
                self.enabled = true;
                self.start_at = None;
                let now = self.now();
                self.save_retrying("enable", || self.hub.store.set_enabled(self.id, true, now))
                    .await;
                self.driver = self.driver(None, state.as_ref());
                match &mut self.driver {
                    Some(driver) => {
                        driver
                            .bot_mut()
                            .authorize(&code, &self.hub.config.redirect_uri());
                        self.pending = Some(reply);
                    }
                    None => {
                        let _ = reply.send(Err("the bot's configuration was refused".into()));
                    }
                }
                self.publish(true);
                false
            }
            Command::Disable(done) => {
                self.close(false).await;
                self.enabled = false;
                self.start_at = None;
                let now = self.now();
                self.save_retrying("disable", || {
                    self.hub.store.set_enabled(self.id, false, now)
                })
                .await;
                tracing::info!(bot = self.id, "bot disabled");
                self.publish(true);
                let _ = done.send(());
                false
            }
            Command::Enable(done) => {
                self.enabled = true;
                let now = self.now();
                self.save_retrying("enable", || self.hub.store.set_enabled(self.id, true, now))
                    .await;
                self.start_from_store().await;
                tracing::info!(bot = self.id, "bot enabled");
                let _ = done.send(());
                false
            }
            Command::Revoke(done) => {
                if !self.holds_lease().await {
                    // Revoked through this replica: the bot comes here to be
                    // revoked at the service (the holder's writes are fenced).
                    if let Ok(Some(lease)) = self
                        .hub
                        .store
                        .steal_lease(self.id, crate::lease::LEASE_MS)
                        .await
                    {
                        self.lease = lease;
                        self.hub.note_taken(self.id, lease);
                        self.start_from_store().await;
                    }
                }
                self.close(true).await;
                self.start_at = None;
                let now = self.now();
                let id = self.id;
                let mut cleared = false;
                for _ in 0..3 {
                    match self
                        .hub
                        .store
                        .clear_tokens(id, self.gen(), self.lease, now)
                        .await
                    {
                        Ok(Some(g)) => {
                            self.set_gen(g);
                            cleared = true;
                            break;
                        }
                        Ok(None) => match self.hub.store.integration(id).await {
                            Ok(Some(row)) => self.set_gen(row.generation),
                            _ => break,
                        },
                        Err(e) => {
                            self.note(&e);
                            tracing::error!(bot = id, error = %e, "revoke: tokens not cleared");
                            self.hub.metrics.store_errors.inc();
                            break;
                        }
                    }
                }
                if cleared {
                    tracing::info!(bot = id, "bot's tokens revoked and forgotten");
                }
                self.stop = Some((
                    "revoked".to_owned(),
                    "the tokens were revoked: the DJ must connect again".to_owned(),
                ));
                let stop = self.stop.clone();
                if let Some((code, message)) = &stop {
                    let lease = self.lease;
                    self.save_retrying("stop", || {
                        self.hub
                            .store
                            .set_stop(id, Some((code, message)), lease, now)
                    })
                    .await;
                }
                self.publish(true);
                let _ = done.send(());
                false
            }
            Command::Tally(reply) => {
                let _ = reply.send(self.current_tally().await);
                false
            }
            Command::Shutdown(done) => {
                self.close(false).await;
                let _ = done.send(());
                true
            }
            Command::Take { lease, delay } => {
                if self.lease == lease && (self.driver.is_some() || self.start_at.is_some()) {
                    return false;
                }
                if self.lease != lease {
                    // A stale driver of an older lease says nothing more.
                    self.driver = None;
                }
                self.lease = lease;
                // Leases are taken for enabled bots only (an admin may have
                // enabled it through another replica).
                self.enabled = true;
                self.fenced.store(false, Ordering::Release);
                match delay {
                    Some(d) if !d.is_zero() => {
                        self.start_at = Some(Instant::now() + d);
                        self.publish(true);
                    }
                    _ => {
                        self.start_at = None;
                        self.start_from_store().await;
                        if self.driver.is_some() {
                            tracing::info!(bot = self.id, lease, "bot taken over by this replica");
                        }
                    }
                }
                false
            }
            Command::Release(done) => {
                self.start_at = None;
                self.close(false).await;
                let lease = std::mem::replace(&mut self.lease, 0);
                if lease != 0 {
                    if let Err(e) = self.hub.store.release_lease(self.id, lease).await {
                        tracing::warn!(bot = self.id, error = %e, "lease not released (it expires)");
                    }
                }
                tracing::info!(bot = self.id, "bot handed over to another replica");
                self.publish(true);
                let _ = done.send(());
                false
            }
        }
    }

    /// Closes the driver, saving what it handed out as it stopped. What the
    /// bot has read already is handled first (at most for a second): a
    /// frame that reached the host is not lost to a stop.
    async fn close(&mut self, revoke: bool) {
        let until = Instant::now() + Duration::from_secs(1);
        let mut drained = 0;
        while Instant::now() < until {
            let Some(driver) = self.driver.as_mut() else {
                break;
            };
            match tokio::time::timeout(Duration::from_millis(20), driver.next()).await {
                Ok(Some(event)) => {
                    drained += 1;
                    self.on_event(event).await;
                }
                Ok(None) => self.driver = None,
                Err(_) => break,
            }
        }
        if drained > 0 {
            tracing::info!(bot = self.id, drained, "read while closing");
        }
        let Some(driver) = self.driver.take() else {
            return;
        };
        match tokio::time::timeout(Duration::from_secs(32), driver.close(revoke)).await {
            Ok(Ok(closed)) => {
                if let (Some(tokens), false) = (&closed.tokens, revoke) {
                    self.save_tokens(tokens).await;
                }
                if let Some(state) = &closed.state {
                    self.save_state(state).await;
                }
            }
            Ok(Err(e)) => tracing::warn!(bot = self.id, error = %e, "bot closed with an error"),
            Err(_) => tracing::warn!(bot = self.id, "bot did not close within 32 s"),
        }
        if let Some(reply) = self.pending.take() {
            let _ = reply.send(Err("the bot stopped before a pair came".into()));
        }
    }

    /// Retries a store write a few times (200 ms, 400 ms, …); counts and
    /// logs a failure.
    async fn save_retrying<F, Fut>(&self, what: &str, write: F) -> bool
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<(), crate::store::StoreError>>,
    {
        let mut wait = Duration::from_millis(200);
        for attempt in 1..=5 {
            match write().await {
                Ok(()) => return true,
                Err(e @ StoreError::Fenced { .. }) => {
                    tracing::warn!(bot = self.id, error = %e, "store: {what} refused");
                    self.note(&e);
                    return false;
                }
                Err(e) => {
                    self.hub.metrics.store_errors.inc();
                    tracing::warn!(bot = self.id, error = %e, attempt, "store: {what} failed");
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                }
            }
        }
        tracing::error!(bot = self.id, "store: {what} given up");
        false
    }

    async fn save_state(&self, state: &KitState) {
        let now = self.now();
        self.save_retrying("kit state", || {
            self.hub.store.save_state(self.id, state, self.lease, now)
        })
        .await;
    }

    /// Stores a new pair (compare-and-swap on the row's generation) before
    /// the bot may use it.
    async fn save_tokens(&mut self, tokens: &Tokens) -> bool {
        let mut wait = Duration::from_millis(200);
        for attempt in 1..=5 {
            let now = self.now();
            match self
                .hub
                .store
                .save_tokens(self.id, tokens, self.gen(), self.lease, now)
                .await
            {
                Ok(Some(generation)) => {
                    self.set_gen(generation);
                    return true;
                }
                Err(e @ StoreError::Fenced { .. }) => {
                    tracing::warn!(bot = self.id, error = %e, "store: tokens refused");
                    self.note(&e);
                    return false;
                }
                Ok(None) => {
                    // Another writer stored a pair for this row since (a
                    // revocation from the admin page): this pair is newer
                    // than what we read, take its place.
                    tracing::warn!(bot = self.id, "token generation moved under the bot");
                    if let Ok(Some(row)) = self.hub.store.integration(self.id).await {
                        self.set_gen(row.generation);
                    }
                }
                Err(e) => {
                    self.hub.metrics.store_errors.inc();
                    tracing::warn!(bot = self.id, error = %e, attempt, "store: tokens failed");
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                }
            }
        }
        tracing::error!(
            bot = self.id,
            "store: the new token pair was not saved; a restart will need the DJ's consent"
        );
        false
    }

    async fn current_tally(&self) -> Option<(Option<u64>, String)> {
        let line = |kit: &onair::kit::Kit| (kit.live_id(), TallyJson(kit.tally()).to_line());
        if let Some(kit) = self.driver.as_ref().and_then(|d| d.bot().kit()) {
            return Some(line(kit));
        }
        let state = self.hub.store.integration(self.id).await.ok()??.kit_state?;
        let bot = Bot::new(self.bot_config().ok()?, None, 0).with_kit_state(&state);
        bot.kit().map(line)
    }

    fn live_id(&self) -> Option<u64> {
        self.driver
            .as_ref()
            .and_then(|d| d.bot().kit())
            .and_then(onair::kit::Kit::live_id)
    }

    async fn log(
        &self,
        frame: Option<&FrameId>,
        kind: &str,
        summary: String,
        detail: serde_json::Value,
    ) {
        let seq = self.hub.next_seq();
        let row = LogRow {
            integration_id: self.id,
            frame_id: frame_key(frame, seq),
            kind: kind.to_owned(),
            live_id: self
                .live_id()
                .and_then(|l| i64::try_from(l).ok())
                .unwrap_or(0),
            seq,
            at_ms: self.now(),
            summary,
            detail: detail.to_string(),
            lease: self.lease,
        };
        self.hub.log(row);
    }

    fn say(&mut self, template: &str, pairs: &[(&str, &str)]) {
        if template.trim().is_empty() {
            return;
        }
        let text = fill(template, pairs);
        if let Some(driver) = &mut self.driver {
            driver.bot_mut().say(&text);
        }
    }

    fn top_donors(&self) -> String {
        let Some(kit) = self.driver.as_ref().and_then(|d| d.bot().kit()) else {
            return String::new();
        };
        let donors = kit.tally().donors();
        if donors.is_empty() {
            return self.behaviour.replies.no_donors.clone();
        }
        donors
            .iter()
            .take(10)
            .enumerate()
            .map(|(i, (id, p))| {
                format!(
                    "{}. {} {}",
                    i + 1,
                    p.nickname.as_deref().unwrap_or(id),
                    p.donated
                )
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }

    async fn on_event(&mut self, event: BotEvent) {
        match event {
            BotEvent::Event { id, event } => self.on_stream_event(id.as_ref(), &event).await,
            BotEvent::Arrival(a) => {
                let (kind, template) = match a.kind {
                    ArrivalKind::First => ("first", self.behaviour.replies.welcome.clone()),
                    ArrivalKind::Back { .. } => {
                        ("back", self.behaviour.replies.welcome_back.clone())
                    }
                };
                self.say(&template, &[("nickname", name(&a.user))]);
                let detail =
                    serde_json::json!({"id": a.user.id, "kind": kind, "liveId": a.live_id});
                let summary = format!("greeted {} ({kind})", name(&a.user));
                self.log(a.event.id.as_ref(), "arrival", summary, detail)
                    .await;
            }
            BotEvent::Command(c) => {
                let template = self
                    .behaviour
                    .replies
                    .commands
                    .get(&c.name)
                    .cloned()
                    .unwrap_or_default();
                let top = if template.contains("{top}") {
                    self.top_donors()
                } else {
                    String::new()
                };
                self.say(
                    &template,
                    &[
                        ("nickname", name(&c.user)),
                        ("rest", &c.rest),
                        ("top", &top),
                    ],
                );
                let summary = format!("!{} by {}", c.name, name(&c.user));
                let detail = serde_json::json!({"name": c.name, "id": c.user.id});
                self.log(c.chat.id.as_ref(), "command", summary, detail)
                    .await;
            }
            BotEvent::Milestone(Milestone::Hearts { reached, like, .. }) => {
                let template = self.behaviour.replies.hearts.clone();
                self.say(&template, &[("reached", &reached.to_string())]);
                let detail = serde_json::json!({"hearts": reached});
                self.log(
                    like.id.as_ref(),
                    "milestone",
                    format!("{reached} hearts"),
                    detail,
                )
                .await;
            }
            BotEvent::Milestone(Milestone::Donated {
                user,
                reached,
                donation,
                ..
            }) => {
                let template = self.behaviour.replies.donated.clone();
                self.say(
                    &template,
                    &[("nickname", name(&user)), ("reached", &reached.to_string())],
                );
                let detail = serde_json::json!({"id": user.id, "donated": reached});
                let summary = format!("{} has given {reached}", name(&user));
                self.log(donation.id.as_ref(), "milestone", summary, detail)
                    .await;
            }
            BotEvent::BroadcastEnded(b) => {
                let tally = TallyJson(&b.tally).to_line();
                let row = BroadcastRow {
                    live_id: b.live_id.and_then(|l| i64::try_from(l).ok()).unwrap_or(0),
                    ended_at_ms: self.now(),
                    tally,
                };
                let (id, lease) = (self.id, self.lease);
                self.save_retrying("broadcast", || {
                    self.hub.store.save_broadcast(id, &row, lease)
                })
                .await;
                tracing::info!(bot = id, live_id = ?b.live_id, "broadcast ended");
                let detail = serde_json::json!({"liveId": b.live_id});
                let summary = format!(
                    "broadcast over: {} hearts, {} donated, {} joined",
                    b.tally.total_hearts(),
                    b.tally.total_donated(),
                    b.tally.joined()
                );
                let frame = b.end.as_ref().and_then(|e| e.id.as_ref());
                self.log(frame, "ended", summary, detail).await;
                self.publish(true);
            }
            BotEvent::StateChanged(state) => self.save_state(&state).await,
            BotEvent::TokensRenewed(tokens) => {
                self.save_tokens(&tokens).await;
                if tokens.generation() > 1 {
                    self.hub.metrics.refreshes.inc();
                    tracing::info!(
                        bot = self.id,
                        generation = tokens.generation(),
                        "token refreshed"
                    );
                } else {
                    self.hub.metrics.authorizations.inc();
                    tracing::info!(bot = self.id, "authorized");
                }
                if self.stop.take().is_some() {
                    let now = self.now();
                    let (id, lease) = (self.id, self.lease);
                    self.save_retrying("stop", || self.hub.store.set_stop(id, None, lease, now))
                        .await;
                }
                if let Some(reply) = self.pending.take() {
                    let _ = reply.send(Ok(()));
                }
                self.publish(true);
            }
            BotEvent::NeedsAuthorization => {
                if let Some(reply) = self.pending.take() {
                    let _ = reply.send(Err("the bot needs a consent code".into()));
                }
                self.publish(true);
            }
            BotEvent::Stopped(stop) => self.on_stop(&stop).await,
            BotEvent::Notice(Notice::Problem { endpoint, problem }) => {
                let kind = problem.kind;
                if matches!(
                    kind,
                    ProblemKind::QuotaPerSecond
                        | ProblemKind::QuotaDaily
                        | ProblemKind::ChatRateLimited
                ) {
                    if kind == ProblemKind::QuotaDaily {
                        // Every bot of the app learns of the block now.
                        self.share_quota();
                    }
                    self.hub
                        .metrics
                        .throttled
                        .get_or_create(&KindLabel {
                            kind: kind.as_str().to_owned(),
                        })
                        .inc();
                }
                tracing::debug!(bot = self.id, %endpoint, problem = %problem, "handled by the bot");
            }
            BotEvent::Done { call, .. } if self.listeners_call == Some(call) => {
                self.listeners_call = None;
            }
            BotEvent::StoreFailed(e) => {
                tracing::error!(bot = self.id, error = %e, "store failed");
            }
            BotEvent::TimedOut { endpoint } => {
                tracing::debug!(bot = self.id, %endpoint, "no answer in time");
            }
            _ => {}
        }
        self.publish(false);
    }

    async fn on_stream_event(&mut self, id: Option<&FrameId>, event: &Event) {
        let kind = event.name();
        self.hub.metrics.event(kind);
        if let Some((ms, _)) = id.and_then(FrameId::parts) {
            let delay = self.now().saturating_sub(i64::try_from(ms).unwrap_or(0));
            if delay >= 0 {
                self.hub.metrics.event_delay.observe(delay as f64 / 1000.0);
            }
        }
        let (summary, detail) = match event {
            Event::Chat(chat) => {
                if chat.is_dj {
                    if let Some(nick) = chat.user.nickname.as_deref() {
                        if self.label.as_deref() != Some(nick) {
                            self.label = Some(nick.to_owned());
                            let (id, lease) = (self.id, self.lease);
                            let label = nick.to_owned();
                            self.save_retrying("label", || {
                                self.hub.store.set_label(id, &label, lease)
                            })
                            .await;
                        }
                    }
                }
                let who = if chat.is_dj { "DJ" } else { name(&chat.user) };
                (
                    format!("{who}: {}", chat.message),
                    serde_json::json!({"id": chat.user.id, "isDj": chat.is_dj}),
                )
            }
            Event::Presence(p) => (
                format!("{} joined", name(&p.user)),
                serde_json::json!({"id": p.user.id}),
            ),
            Event::Like(l) => (
                format!(
                    "{} sent {} heart{}",
                    name(&l.user),
                    l.total_amount,
                    if l.total_amount == 1 { "" } else { "s" }
                ),
                serde_json::json!({"id": l.user.id, "hearts": l.total_amount}),
            ),
            Event::Donation(d) => {
                let template = self.behaviour.replies.thanks.clone();
                self.say(&template, &[("nickname", name(&d.user))]);
                (
                    format!("{} donated {}", name(&d.user), d.amount),
                    serde_json::json!({"id": d.user.id, "amount": d.amount}),
                )
            }
            Event::End(end) => (
                format!("stream end: {}", end.reason.as_str()),
                serde_json::json!({"reason": end.reason.as_str()}),
            ),
        };
        self.log(id, kind, summary, detail).await;
    }

    async fn on_stop(&mut self, stop: &Stop) {
        let code = stop.code().to_owned();
        let message = stop.to_string();
        tracing::warn!(bot = self.id, code = %code, "bot stopped: {message}");
        if let Some(reply) = self.pending.take() {
            let _ = reply.send(Err(message.clone()));
        }
        self.stop = Some((code, message));
        if let Some((code, message)) = self.stop.clone() {
            let now = self.now();
            let (id, lease) = (self.id, self.lease);
            self.save_retrying("stop", || {
                self.hub
                    .store
                    .set_stop(id, Some((&code, &message)), lease, now)
            })
            .await;
        }
        self.publish(true);
    }

    fn share_quota(&mut self) {
        let Some(driver) = &mut self.driver else {
            return;
        };
        let now = driver.now_ms();
        let learned = driver.bot().quota().daily(now);
        self.hub.share_quota(&learned);
    }

    /// Refreshes the dashboard's view: at most every 250 ms unless `now`.
    fn publish(&mut self, force: bool) {
        let at = Instant::now();
        if !force
            && self
                .last_view
                .is_some_and(|last| at.duration_since(last) < Duration::from_millis(250))
        {
            return;
        }
        self.last_view = Some(at);
        self.hub.set_view(self.view());
    }

    fn view(&self) -> BotView {
        let mut view = BotView::idle(self.id, self.label.as_deref(), self.enabled, "stopped");
        view.stop = self.stop.clone();
        let Some(driver) = &self.driver else {
            view.state = if !self.enabled {
                "disabled"
            } else if self.lease == 0 && self.stop.is_none() {
                "elsewhere"
            } else if self.start_at.is_some() {
                "starting"
            } else if self.stop.is_some() {
                "stopped"
            } else {
                "needs_consent"
            };
            view.reconnect = self.enabled && self.start_at.is_none();
            return view;
        };
        let bot = driver.bot();
        let status = bot.status(driver.now_ms());
        view.state = match &status.connection {
            Connection::Connected { .. } => "connected",
            Connection::Connecting { .. } => "connecting",
            Connection::WaitingForBroadcast { .. } => "waiting",
            Connection::BackingOff { .. } => "backing_off",
            Connection::Refreshing => "refreshing",
            Connection::NeedsAuthorization => "needs_consent",
            Connection::Off => "connected",
            _ => "stopped",
        };
        view.reconnect = matches!(view.state, "needs_consent" | "stopped");
        if let Some(kit) = bot.kit() {
            view.live_id = kit.live_id();
            let tally = kit.tally();
            view.hearts = tally.total_hearts();
            view.donated = tally.total_donated();
            view.joined = tally.joined();
            view.top = tally
                .donors()
                .iter()
                .take(5)
                .map(|(id, p)| Donor {
                    name: p.nickname.clone().unwrap_or_else(|| {
                        let tail: String = id.chars().rev().take(4).collect();
                        format!("·{}", tail.chars().rev().collect::<String>())
                    }),
                    donated: p.donated,
                })
                .collect();
        }
        view.on_air = view.state == "connected" && view.live_id.is_some();
        view.status = Some(status);
        view
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_their_placeholders() {
        assert_eq!(
            fill("Welcome, {nickname}! {nickname}", &[("nickname", "Mina")]),
            "Welcome, Mina! Mina"
        );
        assert_eq!(fill("{top}", &[("top", "1. A 10")]), "1. A 10");
        assert_eq!(fill("{unknown}", &[("nickname", "x")]), "{unknown}");
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

    fn pair(generation: u64) -> Tokens {
        let json = format!(
            r#"{{"format":"onair.tokens","version":1,"generation":{generation},
            "access_token":"A{generation}","access_expires_at_ms":5000,"issued_at_ms":1000,
            "refresh_token":"R{generation}","refresh_expires_at_ms":90000,"scope":"live.read"}}"#
        );
        Tokens::from_json(json.as_bytes()).expect("pair")
    }

    async fn gate_on(db: &crate::testdb::Db) {
        let store = db.store().await;
        let id = store.create_integration(1).await.expect("row");
        store
            .save_tokens(id, &pair(1), 0, 1, 2)
            .await
            .expect("save");
        let generation = Arc::new(AtomicI64::new(1));
        let gate = |lease| StoreGate {
            store: store.clone(),
            id,
            lease,
            generation: Arc::clone(&generation),
        };
        // The bot's pair is the stored one: refresh.
        assert!(matches!(
            gate(1).before_refresh(1).await,
            Ok(BeforeRefresh::Proceed)
        ));
        // Another process refreshed (generation 2 stored): take it.
        store
            .save_tokens(id, &pair(2), 1, 1, 3)
            .await
            .expect("save");
        match gate(1).before_refresh(1).await {
            Ok(BeforeRefresh::Newer(t)) => assert_eq!(t.generation(), 2),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            generation.load(Ordering::Acquire),
            2,
            "the row's generation"
        );
        // Not this replica's lease: no refresh at all.
        assert!(gate(7).before_refresh(2).await.is_err());
        let other = db.store().await;
        other.steal_lease(id, 15_000).await.expect("steal");
        assert!(gate(1).before_refresh(2).await.is_err());
        // A lease about to expire: no refresh either.
        let short = store
            .create_integration_leased(1, 5_000)
            .await
            .expect("row");
        store
            .save_tokens(short, &pair(1), 0, 1, 2)
            .await
            .expect("save");
        let near_end = StoreGate {
            store: store.clone(),
            id: short,
            lease: 1,
            generation: Arc::new(AtomicI64::new(1)),
        };
        assert!(near_end.before_refresh(1).await.is_err());
    }

    crate::testdb::on_both!(refresh_gate, gate_on);

    #[test]
    fn frames_without_an_id_get_a_unique_key() {
        assert_eq!(frame_key(None, 7), "local-7");
        assert_eq!(frame_key(Some(&FrameId::new("1-0")), 7), "1-0");
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::BotView;

    /// A view for page tests.
    pub fn view(id: i64) -> BotView {
        BotView::idle(id, None, true, "connected")
    }
}
