//! `onair-emulator`: the live-broadcast bot service (`docs/service.md`)
//! on 127.0.0.1 — OAuth, the bot endpoints, the SSE event stream, a virtual
//! clock, a control API under `/_emulator/`, scenarios, fault injection and a
//! ledger of everything delivered.
//!
//! It is a second, independent reading of the spec: it writes its wire JSON
//! and frames with its own types ([`wire`], [`events`]), never the core's, so a
//! misread field cannot cancel out between client and server.
//!
//! # Embedding
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! use onair_emulator::Emulator;
//!
//! let emu = Emulator::builder().speed(1.0).heartbeat_ms(15_000).start().await?;
//! assert!(emu.base_url().starts_with("http://127.0.0.1:"));
//! assert_eq!(emu.control_url(), format!("{}/_emulator", emu.base_url()));
//! let app = emu.app();
//! assert_eq!(app.client_id.len(), 36);
//! let t0 = emu.now_ms();
//! emu.advance_ms(60_000);
//! assert!(emu.now_ms() >= t0 + 60_000);
//! assert!(emu.ledger().broadcasts.is_empty());
//! emu.wait_scenario().await; // no scenario: done at once
//! emu.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Layers
//!
//! Leaves: [`clock`], [`rng`], [`scope`], [`wire`]. Protocol: [`events`]
//! (payloads and defaults), [`stream`] (fan-out and the stream writer),
//! [`ledger`], [`quota`], [`requests`] (the request log). State: [`room`]
//! (a broadcast on air and who is in it), [`world`] (apps, tokens, DJs,
//! fan-out, streams), [`oauth`]. Front: [`routes`] (the route table and
//! router), [`api`] (bot endpoints), [`consent`] (the consent page),
//! [`control`], [`http`] (server),
//! [`scenario`] (one timeline per DJ with [`Builder::djs`]), [`fleet`] (many
//! DJs on a daily schedule).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod body;
pub mod cassette;
pub mod clock;
pub mod consent;
pub mod control;
pub mod events;
pub mod fleet;
pub mod http;
pub mod ledger;
pub mod oauth;
pub mod paths;
pub mod playback;
pub mod quota;
pub mod replay;
pub mod reply;
pub mod requests;
pub mod rng;
pub mod room;
pub mod routes;
pub mod scenario;
pub mod scope;
pub mod shared;
pub mod stream;
pub mod wire;
pub mod world;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use crate::clock::Clock;
pub use crate::ledger::Ledger;
pub use crate::scenario::Scenario;
use crate::shared::Shared;
use crate::world::{Config, World};

/// The emulator's entry point.
#[derive(Debug, Clone, Copy)]
pub struct Emulator;

impl Emulator {
    /// A builder with the spec's defaults: speed 1, heartbeat 15 s, an
    /// ephemeral port, no scenario.
    pub fn builder() -> Builder {
        Builder::default()
    }
}

/// Settings of an emulator to start.
#[derive(Debug, Clone)]
pub struct Builder {
    port: u16,
    speed: f64,
    start_ms: Option<i64>,
    seed: Option<u64>,
    scenario: Option<Scenario>,
    djs: usize,
    cfg: Config,
    replay: Option<(cassette::Cassette, bool)>,
    fleet: Option<fleet::Fleet>,
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            port: 0,
            speed: 1.0,
            start_ms: None,
            seed: None,
            scenario: None,
            djs: 0,
            cfg: Config::default(),
            replay: None,
            fleet: None,
        }
    }
}

impl Builder {
    /// The port on 127.0.0.1 (0, the default: an ephemeral one).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Emulator time speed relative to real time (0 = frozen; moved by
    /// `POST /_emulator/clock/advance` only).
    pub fn speed(mut self, speed: f64) -> Self {
        self.speed = speed;
        self
    }

    /// Emulator time at start, epoch ms (default: the wall clock).
    pub fn start_ms(mut self, ms: i64) -> Self {
        self.start_ms = Some(ms);
        self
    }

    /// Seed for ids, secrets and default payloads (default: a random one).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Heartbeat interval in emulator ms (0 = none; spec default 15 000).
    pub fn heartbeat_ms(mut self, ms: i64) -> Self {
        self.cfg.heartbeat_ms = ms.max(0);
        self
    }

    /// Frames a stream may have queued before it is cut as a slow reader.
    pub fn stream_buffer(mut self, frames: usize) -> Self {
        self.cfg.stream_buffer = frames.max(1);
        self
    }

    /// Listeners per page of `GET /v1/live/listeners` (default 20).
    pub fn page_size(mut self, n: usize) -> Self {
        self.cfg.page_size = n.max(1);
        self
    }

    /// Real time a client has to send its headers, then its body (default 10 s).
    pub fn read_deadline(mut self, deadline: Duration) -> Self {
        self.cfg.read_deadline = deadline;
        self
    }

    /// A scenario to play from the start (instead of a fleet).
    pub fn scenario(mut self, scenario: Scenario) -> Self {
        self.scenario = Some(scenario);
        self.fleet = None;
        self
    }

    /// Runs the DJs `dj-1` … `dj-n` of [`Builder::djs`] as a fleet
    /// ([`fleet`]: each goes on air at its usual time of day for a while,
    /// about `on_air_percent` % of them at a time, with events) instead of a
    /// scenario, until the emulator stops. Its progress (`GET
    /// /_emulator/scenario`, named `fleet`) counts the DJs on air; it is
    /// never done.
    pub fn fleet(mut self, fleet: fleet::Fleet) -> Self {
        self.fleet = Some(fleet);
        self.scenario = None;
        self
    }

    /// `n` more DJs, `dj-1` … `dj-n`, beside the default DJ `main` (a hosted
    /// service's load: one app, many DJs, each with its own bot). The
    /// scenario, if any, runs for each of them too, on its own timeline:
    /// see [`scenario::run_for_djs`]. Default 0.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let emu = onair_emulator::Emulator::builder().djs(3).speed(0.0).start().await?;
    /// assert_eq!(emu.dj_names(), ["main", "dj-1", "dj-2", "dj-3"]);
    /// emu.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn djs(mut self, n: usize) -> Self {
        self.djs = n;
        self
    }

    /// Plays a cassette to the bots ([`replay`]): the bot endpoints answer
    /// from it, at its recorded pace divided by the speed. With `strict`,
    /// [`Running::unrecorded`] lists the requests it had no answer for.
    pub fn replay(mut self, cassette: cassette::Cassette, strict: bool) -> Self {
        self.replay = Some((cassette, strict));
        self
    }

    /// Binds 127.0.0.1 and starts serving (call inside a tokio runtime).
    ///
    /// # Errors
    /// When the port cannot be bound.
    pub async fn start(self) -> io::Result<Running> {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await?;
        let addr = listener.local_addr()?;
        let wall = Clock::wall_ms();
        let clock = Arc::new(Clock::new(self.start_ms.unwrap_or(wall), self.speed));
        let (log, _) = broadcast::channel(4096);
        // No seed given: one from the system's generator, so that tokens
        // and ids differ between runs (the wall clock if it has none).
        let seed = self.seed.unwrap_or_else(|| {
            use rand::TryRng;
            rand::rngs::SysRng
                .try_next_u64()
                .unwrap_or(wall as u64 ^ u64::from(addr.port()) << 48)
        });
        let mut world = World::new(self.cfg, seed, Arc::clone(&clock), log.clone());
        let djs: Vec<String> = (1..=self.djs).map(|k| format!("dj-{k}")).collect();
        for name in &djs {
            world.add_dj(name);
        }
        let mut shared = Shared::new(clock, world);
        shared.replay = self
            .replay
            .map(|(c, strict)| replay::Replay::new(c, self.speed, strict));
        let shared = Arc::new(shared);
        let (stop, stop_rx) = watch::channel(false);
        let mut tasks = vec![tokio::spawn(http::serve(
            listener,
            Arc::clone(&shared),
            stop_rx.clone(),
        ))];
        tasks.push(tokio::spawn(ticker(Arc::clone(&shared), stop_rx.clone())));
        if let Some(r) = &shared.replay {
            shared.progress.send_replace(replay_state(r.progress()));
            tasks.push(tokio::spawn(replay_progress(
                Arc::clone(&shared),
                stop_rx.clone(),
            )));
        }
        if let Some(f) = self.fleet {
            let sh = Arc::clone(&shared);
            shared.progress.send_replace(shared::Progress {
                name: Some("fleet".to_owned()),
                total: djs.len(),
                ..shared::Progress::default()
            });
            let runner = fleet::start(&shared, f, 1);
            let mut stop_rx = stop_rx.clone();
            tasks.push(tokio::spawn(async move {
                tokio::select! {
                    () = runner.run(sh) => {}
                    _ = stop_rx.changed() => {}
                }
            }));
        }
        if let Some(s) = self.scenario {
            let sh = Arc::clone(&shared);
            shared.progress.send_replace(shared::Progress {
                name: Some(s.name.clone()),
                total: s.steps.len() * (djs.len() + 1),
                ..shared::Progress::default()
            });
            let mut stop_rx = stop_rx;
            tasks.push(tokio::spawn(async move {
                tokio::select! {
                    _ = scenario::run_for_djs(sh, s, &djs) => {}
                    _ = stop_rx.changed() => {}
                }
            }));
        }
        Ok(Running {
            shared,
            addr,
            stop,
            tasks,
            log,
        })
    }
}

/// A replay's progress shown as the scenario `replay`: its position the
/// recorded connections played to their end, done when all were.
fn replay_state((played, total): (usize, usize)) -> shared::Progress {
    shared::Progress {
        name: Some("replay".to_owned()),
        position: played,
        total,
        done: played >= total,
        waiting: (played < total)
            .then(|| format!("{} more recorded connection(s)", total - played)),
        error: None,
    }
}

/// Keeps a replay's progress up to date (every 100 ms) until it is done.
async fn replay_progress(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let Some(replay) = shared.replay.as_ref() else {
        return;
    };
    loop {
        let now = replay.progress();
        shared.progress.send_if_modified(|p| {
            let next = replay_state(now);
            let changed = *p != next;
            *p = next;
            changed
        });
        if now.0 >= now.1 {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = stop.changed() => return,
        }
    }
}

/// Heartbeats and token expiry, checked every 20 ms of real time.
async fn ticker(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut every = tokio::time::interval(Duration::from_millis(20));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => {
                let now = shared.clock.now_ms();
                shared.world().tick(now);
            }
            _ = stop.changed() => return,
        }
    }
}

/// The app credentials a bot is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppCredentials {
    /// UUID client id.
    pub client_id: String,
    /// Client secret.
    pub client_secret: String,
    /// Registered redirect URI.
    pub redirect_uri: String,
}

/// A running emulator.
#[derive(Debug)]
pub struct Running {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    log: broadcast::Sender<String>,
}

impl Running {
    /// The socket address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, the bot API's `{base_url}`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/_emulator`.
    pub fn control_url(&self) -> String {
        format!("{}/_emulator", self.base_url())
    }

    /// The default app's credentials.
    pub fn app(&self) -> AppCredentials {
        let w = self.shared.world();
        let a = &w.apps[0];
        AppCredentials {
            client_id: a.client_id.clone(),
            client_secret: a.client_secret.clone(),
            redirect_uri: a.redirect_uri.clone(),
        }
    }

    /// The DJs' names, the default DJ (`main`) first.
    pub fn dj_names(&self) -> Vec<String> {
        self.shared
            .world()
            .djs
            .iter()
            .map(|d| d.name.clone())
            .collect()
    }

    /// Emulator time now, epoch ms.
    pub fn now_ms(&self) -> i64 {
        self.shared.clock.now_ms()
    }

    /// The virtual clock itself, to share with a bot driver so that the bot
    /// and the emulator agree on time (speed and jumps included).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let emu = onair_emulator::Emulator::builder().speed(0.0).start().await?;
    /// let clock = emu.clock();
    /// emu.advance_ms(1_000);
    /// assert_eq!(clock.now_ms(), emu.now_ms());
    /// emu.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn clock(&self) -> Arc<Clock> {
        Arc::clone(&self.shared.clock)
    }

    /// Jumps emulator time forward; returns the new time.
    pub fn advance_ms(&self, ms: i64) -> i64 {
        let now = self.shared.clock.advance(ms);
        self.shared.world().tick(now);
        now
    }

    /// The ledger now.
    pub fn ledger(&self) -> Ledger {
        self.shared.world().ledger()
    }

    /// A mark in the ledger's write sequence (`POST /_emulator/mark`): every
    /// frame numbered at or below it was written before this call.
    pub fn mark(&self) -> u64 {
        self.shared.world().writes.mark()
    }

    /// Scenario progress: (position, total, done).
    pub fn scenario_progress(&self) -> (usize, usize, bool) {
        let p = self.shared.progress.borrow();
        (p.position, p.total, p.done)
    }

    /// Waits until the scenario is done (at once when none runs).
    pub async fn wait_scenario(&self) {
        let mut rx = self.shared.progress.subscribe();
        let _ = rx.wait_for(|p| p.done).await;
    }

    /// The requests a replayed cassette had no answer for, one line each
    /// (empty when no cassette plays).
    pub fn unrecorded(&self) -> Vec<String> {
        self.shared
            .replay
            .as_ref()
            .map(replay::Replay::unrecorded)
            .unwrap_or_default()
    }

    /// Stream connections a replayed cassette has served so far.
    pub fn replayed_connections(&self) -> usize {
        self.shared
            .replay
            .as_ref()
            .map_or(0, replay::Replay::connections_served)
    }

    /// One readable line per thing that happens (what `onair serve` prints).
    pub fn subscribe_log(&self) -> broadcast::Receiver<String> {
        self.log.subscribe()
    }

    /// Stops serving: open streams are cut, connections closed, tasks ended.
    pub async fn shutdown(self) {
        {
            let mut w = self.shared.world();
            for dj in 0..w.djs.len() {
                w.drop_streams(dj, |_| true);
            }
            w.stalled.clear();
        }
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(3), t).await;
        }
    }
}
