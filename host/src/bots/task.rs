//! One bot's task: its driver, its commands, what it saves, its view.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use onair::bot::{Connection, DailyQuota, Notice};
use onair::event::Event;
use onair::json::TallyJson;
use onair::kit::{ArrivalKind, KitState, Milestone};
use onair::{
    BaseUrl, Bot, BotConfig, ClientCredentials, Endpoint, FrameId, ProblemKind, Stop, Tokens,
};
use onair_tokio::{BotEvent, Clock, Driver};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use super::gate::StoreGate;
use super::log::frame_key;
use super::{BotState, BotStop, BotView, Command, Donor, Hub};
use crate::metrics::KindLabel;
use crate::store::{BroadcastRow, LogRow, StoreError};

/// What a person is called in a reply or a log line.
fn name(user: &onair::User) -> &str {
    user.nickname.as_deref().unwrap_or("friend")
}

/// One bot's task.
pub(super) struct BotTask {
    pub(super) hub: Arc<Hub>,
    pub(super) id: i64,
    /// Boxed: every replica keeps a task for every bot of the app, most
    /// of them run elsewhere or stopped, without a driver.
    pub(super) driver: Option<Box<Driver>>,
    /// The row's token generation as last read or written (shared with the
    /// refresh gate, which reads newer pairs).
    pub(super) generation: Arc<AtomicI64>,
    /// This replica's lease of the bot (its generation; 0: none, another
    /// replica runs it or nobody does).
    pub(super) lease: i64,
    /// A write was refused by the fence: the lease is another replica's.
    pub(super) fenced: AtomicBool,
    pub(super) label: Option<String>,
    pub(super) enabled: bool,
    pub(super) stop: Option<BotStop>,
    pub(super) pending: Option<oneshot::Sender<Result<(), String>>>,
    pub(super) seed: u64,
    pub(super) start_at: Option<Instant>,
    pub(super) last_view: Option<Instant>,
    /// When the bot lists the listeners next (service time).
    pub(super) listeners_at: u64,
    /// The listing in flight.
    pub(super) listeners_call: Option<onair::bot::CallId>,
    /// Something the DJ should know while the bot runs (it started without
    /// its memory), shown on its page.
    pub(super) warning: Option<String>,
    /// A pair is stored for the bot, as far as this task knows (`false`:
    /// none, or one that does not open: it needs its DJ's consent).
    pub(super) paired: bool,
    /// Connected through another replica after this one started, without a
    /// pair when this replica first read it: its consent runs there, so
    /// until this replica takes it, it runs elsewhere (not "needs consent").
    pub(super) consented_elsewhere: bool,
    /// The driver's reply counters as last added to the metrics (zero for
    /// a driver just made: its core counts from zero).
    pub(super) replies_seen: onair::bot::RepliesCounters,
    /// The bot's part in the off-air probe budget.
    pub(super) probe: Probe,
}

/// A bot's part in the off-air probe budget ([`crate::probe`]).
#[derive(Debug, Default)]
pub(super) struct Probe {
    /// Off air, probing (as last told to the planner).
    off_air: bool,
    /// The wait last given to the bot (ms; 0: none yet).
    wait_ms: u64,
    /// When the stream opened after probing (unix ms), while the start of
    /// its broadcast is not known yet.
    detect_from: Option<u64>,
    /// The start of the broadcast last noted (unix ms).
    started_ms: Option<u64>,
}

/// The stop of a bot whose stored pair does not open.
pub(super) fn unreadable_pair_stop() -> BotStop {
    BotStop::new(
        "unreadable_pair",
        "the stored token pair does not open (damaged, or sealed under another key): \
         the DJ must connect again",
    )
}

/// Whether `stop` says the stored pair is dead: its refresh token was
/// refused or has expired, or the grant is gone. A bot stopped so never
/// presents that pair again (it is forgotten).
fn pair_is_dead(stop: &Stop) -> bool {
    use onair::AuthProblem;
    matches!(
        stop,
        Stop::Reauthorize(
            AuthProblem::RefreshRejected
                | AuthProblem::RefreshTokenExpired
                | AuthProblem::NoRefreshToken
                | AuthProblem::AccessRejected
                | AuthProblem::Revoked
        )
    )
}

async fn next_event(driver: &mut Option<Box<Driver>>) -> Option<BotEvent> {
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

    /// The task's loop. The task is boxed: an async fn keeps its
    /// by-value `self` twice in its future (the argument and the binding),
    /// a box only twice a pointer.
    pub(super) async fn run(
        mut self: Box<Self>,
        mut rx: mpsc::Receiver<Command>,
        mut quota: watch::Receiver<DailyQuota>,
        first: Option<Command>,
    ) {
        if let Some(command) = first {
            if self.boxed_command(command).await {
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
                    if self.boxed_command(command).await {
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
                self.probe().await;
                self.list_listeners();
                self.publish(true);
            }
            self.stop_fenced();
        }
    }

    /// Once a second: tells the probe planner whether the bot is off air
    /// (probing), gives the bot the wait planned for it, and notes a
    /// broadcast found (its start kept in the bot's history; the time from
    /// it to the stream's open, after probing, in the detect histogram).
    async fn probe(&mut self) {
        let id = self.id;
        let Some(driver) = &mut self.driver else {
            self.probe.detect_from = None;
            if std::mem::take(&mut self.probe.off_air) {
                self.hub.probes.set_off_air(id, false);
            }
            return;
        };
        let now = driver.now_ms();
        let (off_air, open_since) = match driver.bot().status(now).connection {
            Connection::WaitingForBroadcast { .. } => (true, None),
            // A probe under way, or a connect after a fault.
            Connection::Connecting { .. } => (self.probe.off_air, None),
            Connection::Connected { since_ms } => (false, Some(since_ms)),
            _ => (false, None),
        };
        match open_since {
            Some(since) if self.probe.off_air => {
                // The probe that found the broadcast.
                self.hub.metrics.probes.inc();
                self.probe.detect_from = Some(since);
            }
            Some(_) => {}
            None => self.probe.detect_from = None,
        }
        if off_air != self.probe.off_air {
            self.probe.off_air = off_air;
            self.hub.probes.set_off_air(id, off_air);
        }
        if off_air {
            let wait = self
                .hub
                .probes
                .wait_ms(id, i64::try_from(now).unwrap_or(i64::MAX));
            // Small moves of the plan are left alone (a shorter wait redraws
            // the one under way).
            let applied = self.probe.wait_ms;
            if wait.abs_diff(applied) > applied / 10 {
                self.probe.wait_ms = driver.bot_mut().set_not_on_air_wait(now, wait);
            }
        }
        let started = driver.bot().broadcast_started_ms();
        if let Some(start) = started.filter(|s| self.probe.started_ms != Some(*s)) {
            self.probe.started_ms = Some(start);
            if let Some(opened) = self.probe.detect_from.take() {
                let took_ms = opened.saturating_sub(start);
                self.hub.metrics.detect.observe(took_ms as f64 / 1000.0);
                tracing::info!(bot = id, took_ms, "broadcast found");
            }
            let history = self
                .hub
                .probes
                .started(id, i64::try_from(start).unwrap_or(0));
            self.save_probe_history(&history).await;
        }
    }

    /// Saves the bot's broadcast history for the probe planner (advisory:
    /// a failure is counted and logged).
    async fn save_probe_history(&self, history: &crate::probe::History) {
        if let Err(e) = self.hub.store.save_probe_history(self.id, history).await {
            self.hub.metrics.store_errors.inc();
            tracing::warn!(bot = self.id, error = %e, "probe history not saved");
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
        // Read from the configuration when a driver is made: a copy kept
        // in every task would cost each bot, off air too, its kit's
        // configuration twice (this one and the bot's).
        bot.kit = config.behaviour(self.id).kit.clone();
        if let Some(ms) = config.watchdog_ms {
            bot.stream.watchdog_ms = ms;
        }
        Ok(bot)
    }

    fn driver(&mut self, tokens: Option<Tokens>, state: Option<&KitState>) -> Option<Box<Driver>> {
        let config = match self.bot_config() {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(bot = self.id, error = %e, "bot configuration refused");
                return None;
            }
        };
        self.seed = self.seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut bot = Bot::new(config, tokens, self.seed);
        // Off air, it probes at the pace the planner gives it.
        let now = self.hub.clock.now_ms();
        let wait = self
            .hub
            .probes
            .wait_ms(self.id, i64::try_from(now).unwrap_or(i64::MAX));
        self.probe.wait_ms = bot.set_not_on_air_wait(now, wait);
        if let Some(state) = state {
            bot = bot.with_kit_state(state);
        }
        let app = self.hub.daily_quota();
        if app != DailyQuota::default() {
            bot.share_daily_quota(&app, self.hub.clock.now_ms());
        }
        self.listeners_call = None;
        if self.driver.is_none() {
            // The new core counts its replies from zero.
            self.replies_seen = onair::bot::RepliesCounters::default();
        }
        Some(Box::new(
            Driver::new(bot)
                .with_span_label(self.id.to_string())
                .with_client(self.hub.client.clone())
                .with_clock(self.hub.clock.clone())
                .with_refresh_gate(StoreGate {
                    store: self.hub.store.clone(),
                    id: self.id,
                    lease: self.lease,
                    generation: Arc::clone(&self.generation),
                }),
        ))
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
                self.stop = Some(BotStop::new("store", e.to_string()));
                self.publish(true);
                return;
            }
        };
        self.set_gen(row.generation);
        self.label = row.label.clone();
        self.stop = row.stop.clone().map(BotStop::from);
        self.enabled = row.enabled;
        if !row.enabled {
            self.publish(true);
            return;
        }
        self.paired = row.tokens.is_some();
        if let Some(why) = &row.pair_unreadable {
            // This bot's pair alone does not open: it waits for its DJ's
            // consent (the re-connect link stores a new pair over it);
            // every other bot runs.
            tracing::error!(
                bot = self.id,
                error = %why,
                "the stored pair does not open: the bot needs the DJ's consent"
            );
            self.stop = Some(unreadable_pair_stop());
            if let Some(BotStop { code, message }) = self.stop.clone() {
                let (id, lease, now) = (self.id, self.lease, self.now());
                self.save_retrying("stop", || {
                    self.hub
                        .store
                        .set_stop(id, Some((&code, &message)), lease, now)
                })
                .await;
            }
            self.publish(true);
            return;
        }
        let Some(tokens) = row.tokens else {
            self.publish(true);
            return;
        };
        if let Some(why) = &row.state_unreadable {
            tracing::warn!(
                bot = self.id,
                error = %why,
                "the stored kit state does not read: the bot starts without memory"
            );
            self.warning = Some(
                "The bot's stored memory (kit state) did not read: it started without it \
                 (the current broadcast's tally and who was greeted start over)."
                    .to_owned(),
            );
        }
        self.stop = None;
        self.driver = self.driver(Some(tokens), row.kit_state.as_ref());
        tracing::info!(bot = self.id, "bot started from the store");
        self.publish(true);
    }

    /// [`command`](Self::command) on the heap while it runs: its future
    /// (the consent's exchange, the saves of a stop) is larger than the
    /// rest of the task's and would otherwise sit in every bot's task,
    /// idle or not, for the rare moments a command runs.
    fn boxed_command(
        &mut self,
        command: Command,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send + '_>> {
        Box::pin(self.command(command))
    }

    /// Handles a command; `true` when the task ends.
    async fn command(&mut self, command: Command) -> bool {
        match command {
            Command::Authorize { code, start, reply } => {
                // The pair this consent replaces is revoked at the service
                // before the new code is exchanged (revoking a refresh
                // token revokes every access token of its integration: after
                // the exchange it would revoke the new one too).
                let revoked = self.driver.is_some();
                self.close(true).await;
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
                let mut replaced = None;
                let state = match self.hub.store.integration(self.id).await {
                    Ok(row) => row.and_then(|r| {
                        self.set_gen(r.generation);
                        // A stop recorded through another replica (a revoke
                        // there) is this consent's to clear.
                        if self.stop.is_none() {
                            self.stop = r.stop.map(BotStop::from);
                        }
                        if !revoked {
                            replaced = r.tokens;
                        }
                        r.kit_state
                    }),
                    Err(e) => {
                        let _ = reply.send(Err(e.to_string()));
                        return false;
                    }
                };
                let had_pair = revoked || replaced.is_some();
                if let Some(old) = replaced {
                    // A stored pair the bot was not running (stopped,
                    // disabled): revoked all the same.
                    self.revoke_pair(old, state.as_ref()).await;
                }
                if had_pair {
                    tracing::info!(
                        bot = self.id,
                        "the replaced pair was revoked at the service"
                    );
                }
                self.enabled = start;
                self.start_at = None;
                if start {
                    let now = self.now();
                    self.save_retrying("enable", || self.hub.store.set_enabled(self.id, true, now))
                        .await;
                }
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
                let running = self.driver.is_some();
                self.close(true).await;
                if !running {
                    // A bot that was not running (disabled, stopped): its
                    // stored pair is revoked at the service all the same.
                    if let Ok(Some(row)) = self.hub.store.integration(self.id).await {
                        if let Some(tokens) = row.tokens {
                            self.revoke_pair(tokens, row.kit_state.as_ref()).await;
                        }
                    }
                }
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
                            self.paired = false;
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
                self.stop = Some(BotStop::new(
                    "revoked",
                    "the tokens were revoked: the DJ must connect again",
                ));
                let stop = self.stop.clone();
                if let Some(BotStop { code, message }) = &stop {
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

    /// Revokes `tokens` at the service with a driver made for that alone
    /// (the bot is not running on them; nothing it hands out is saved).
    async fn revoke_pair(&mut self, tokens: Tokens, state: Option<&KitState>) {
        let Some(driver) = self.driver(Some(tokens), state) else {
            return;
        };
        match tokio::time::timeout(Duration::from_secs(32), driver.close(true)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(bot = self.id, error = %e, "a stored pair: revoke failed"),
            Err(_) => tracing::warn!(bot = self.id, "a stored pair: revoke timed out"),
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
        // What the core counted until now reaches the metrics.
        self.publish(true);
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
                    self.paired = true;
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
            // Bounded where it is made: the store, the live streams'
            // backlog and the pages hold at most this much of a chat line.
            summary: crate::text::cut(&summary, crate::text::STORED_TEXT_CHARS).into_owned(),
            detail: detail.to_string(),
            lease: self.lease,
        };
        self.hub.log(row);
    }

    async fn on_event(&mut self, event: BotEvent) {
        match event {
            BotEvent::Event { id, event } => self.on_stream_event(id.as_ref(), &event).await,
            // The core says the configured replies (the kit's); the host
            // writes what happened to the event log.
            BotEvent::Arrival(a) => {
                let kind = match a.kind {
                    ArrivalKind::First => "first",
                    ArrivalKind::Back { .. } => "back",
                };
                let detail =
                    serde_json::json!({"id": a.user.id, "kind": kind, "liveId": a.live_id});
                let summary = format!("greeted {} ({kind})", name(&a.user));
                self.log(a.event.id.as_ref(), "arrival", summary, detail)
                    .await;
            }
            BotEvent::Command(c) => {
                let summary = format!("!{} by {}", c.name, name(&c.user));
                let detail = serde_json::json!({"name": c.name, "id": c.user.id});
                self.log(c.chat.id.as_ref(), "command", summary, detail)
                    .await;
            }
            BotEvent::Milestone(Milestone::Hearts { reached, like, .. }) => {
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
                let history = self.hub.probes.ended(id, row.ended_at_ms);
                self.save_probe_history(&history).await;
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
                // The refresh window: nothing between the pair handed out
                // and its commit (no log line, no view, no other write).
                let read = std::time::Instant::now();
                let saved = self.save_tokens(&tokens).await;
                let window = read.elapsed();
                if tokens.generation() > 1 {
                    if saved {
                        self.hub
                            .metrics
                            .refresh_window
                            .observe(window.as_secs_f64());
                    }
                    self.hub.metrics.refreshes.inc();
                    tracing::info!(
                        bot = self.id,
                        generation = tokens.generation(),
                        saved,
                        window_us = u64::try_from(window.as_micros()).unwrap_or(u64::MAX),
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
                if !self.enabled {
                    // A consent for a bot an admin disabled: the pair is
                    // stored, the bot does not run.
                    self.driver = None;
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
                if endpoint == Endpoint::Events && kind == ProblemKind::NotOnAir {
                    // An off-air probe: the DJ is not on air.
                    self.hub.metrics.probes.inc();
                }
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
            BotEvent::Notice(
                notice @ Notice::RepliesDropped {
                    kind,
                    people,
                    reason,
                },
            ) => {
                tracing::warn!(bot = self.id, kind = %kind, people, reason = reason.as_str(), "{notice}");
                let detail = serde_json::json!({
                    "replyKind": kind.as_str(),
                    "people": people,
                    "reason": reason.as_str(),
                });
                self.log(None, "notice", notice.to_string(), detail).await;
            }
            BotEvent::Done { call, .. } if self.listeners_call == Some(call) => {
                self.listeners_call = None;
            }
            BotEvent::StoreFailed(e) => {
                tracing::error!(bot = self.id, error = %e, "store failed");
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
            Event::Donation(d) => (
                format!("{} donated {}", name(&d.user), d.amount),
                serde_json::json!({"id": d.user.id, "amount": d.amount}),
            ),
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
        self.stop = Some(BotStop::new(code, message));
        if let Some(BotStop { code, message }) = self.stop.clone() {
            let now = self.now();
            let (id, lease) = (self.id, self.lease);
            self.save_retrying("stop", || {
                self.hub
                    .store
                    .set_stop(id, Some((&code, &message)), lease, now)
            })
            .await;
        }
        if pair_is_dead(stop) {
            self.forget_dead_pair().await;
        }
        self.publish(true);
    }

    /// Forgets the stored pair after a stop that says it is dead, so no
    /// start sends its refresh token again: the bot waits for its DJ's
    /// consent. A pair stored since by another writer (a newer generation)
    /// is left alone.
    async fn forget_dead_pair(&mut self) {
        let (id, lease, now) = (self.id, self.lease, self.now());
        match self
            .hub
            .store
            .clear_tokens(id, self.gen(), lease, now)
            .await
        {
            Ok(Some(generation)) => {
                self.set_gen(generation);
                self.paired = false;
                tracing::info!(bot = id, "the dead pair is forgotten");
            }
            Ok(None) => {
                tracing::info!(bot = id, "a newer pair was stored since: kept");
            }
            Err(e) => {
                self.note(&e);
                self.hub.metrics.store_errors.inc();
                tracing::warn!(bot = id, error = %e, "the dead pair was not forgotten");
            }
        }
    }

    fn share_quota(&mut self) {
        let Some(driver) = &mut self.driver else {
            return;
        };
        let now = driver.now_ms();
        let learned = driver.bot().daily_quota(now);
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
        let view = self.view();
        if let Some(status) = &view.status {
            let now = &status.counters.replies;
            self.hub.metrics.replies(&self.replies_seen, now);
            self.replies_seen.clone_from(now);
        }
        self.hub.set_view(view);
    }

    fn view(&self) -> BotView {
        let mut view = BotView::idle(
            self.id,
            self.label.as_deref(),
            self.enabled,
            BotState::Stopped,
        );
        view.stop = self.stop.clone();
        view.warning = self.warning.clone();
        let Some(driver) = &self.driver else {
            view.state = if !self.enabled {
                BotState::Disabled
            } else if !(self.paired || self.consented_elsewhere && self.lease == 0) {
                BotState::NeedsConsent
            } else if self.lease == 0 && self.stop.is_none() {
                BotState::Elsewhere
            } else if self.start_at.is_some() {
                BotState::Starting
            } else if self.stop.is_some() {
                BotState::Stopped
            } else {
                BotState::NeedsConsent
            };
            // A bot another replica runs needs nothing from this one.
            view.reconnect =
                self.enabled && self.start_at.is_none() && view.state != BotState::Elsewhere;
            return view;
        };
        let bot = driver.bot();
        let status = bot.status(driver.now_ms());
        view.state = match &status.connection {
            Connection::Connected { .. } => BotState::Connected,
            Connection::Connecting { .. } => BotState::Connecting,
            Connection::WaitingForBroadcast { .. } => BotState::Waiting,
            Connection::BackingOff { .. } => BotState::BackingOff,
            Connection::Refreshing => BotState::Refreshing,
            Connection::NeedsAuthorization => BotState::NeedsConsent,
            Connection::Off => BotState::Connected,
            _ => BotState::Stopped,
        };
        view.reconnect = matches!(view.state, BotState::NeedsConsent | BotState::Stopped);
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
        view.on_air = view.state == BotState::Connected && view.live_id.is_some();
        view.status = Some(status);
        view
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns, without calling it.
    fn future_size<A, B, C, D, F, Fut>(_: &F) -> usize
    where
        F: FnOnce(A, B, C, D) -> Fut,
    {
        std::mem::size_of::<Fut>()
    }

    /// Every bot's task future is allocated when it is spawned and lives as
    /// long as the bot, off air too: it holds the loop's state only, not
    /// the task (boxed) nor a command's future (boxed while one runs). With
    /// both inline it was 21.9 KB in a debug build, 2.6 KB without.
    #[test]
    fn a_bot_task_future_holds_the_loop_only() {
        let run = future_size(&BotTask::run);
        assert!(run <= 4_096, "{run} bytes");
    }

    /// Every replica keeps a task for every bot of the app (most of them
    /// run by another replica): without a driver it is a few hundred bytes
    /// (5.4 KB with the driver inline).
    #[test]
    fn a_bot_task_without_its_driver_is_small() {
        let task = std::mem::size_of::<BotTask>();
        eprintln!(
            "BotTask {task} bytes, Driver {}",
            std::mem::size_of::<Driver>()
        );
        assert!(task <= 1_024, "{task} bytes");
    }
}
