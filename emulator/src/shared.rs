//! What the server, the control API, the ticker and the scenario runner
//! share: the clock, the world behind its mutex, scenario progress.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{json, Value};
use tokio::sync::watch;

use crate::clock::Clock;
use crate::world::World;

/// Scenario progress (`GET /_emulator/scenario`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// Scenario name (`None`: no scenario).
    pub name: Option<String>,
    /// Steps done.
    pub position: usize,
    /// Steps in all.
    pub total: usize,
    /// Finished (or none loaded).
    pub done: bool,
    /// What the runner waits for now, if anything.
    pub waiting: Option<String>,
    /// Why it stopped early, if it did.
    pub error: Option<String>,
}

/// The state shared by every task of one emulator.
#[derive(Debug)]
pub struct Shared {
    /// Emulator time.
    pub clock: Arc<Clock>,
    world: Mutex<World>,
    /// Scenario progress; watchers learn when it is done.
    pub progress: watch::Sender<Progress>,
    /// A cassette played to the bots (`onair serve --replay`), if any.
    pub replay: Option<crate::playback::Replay>,
}

impl Shared {
    /// Wraps a world.
    pub fn new(clock: Arc<Clock>, world: World) -> Self {
        let (progress, _) = watch::channel(Progress {
            done: true,
            ..Progress::default()
        });
        Self {
            clock,
            world: Mutex::new(world),
            progress,
            replay: None,
        }
    }

    /// Locks the world (a panic elsewhere never poisons the emulator).
    pub fn world(&self) -> MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Progress as the control API shows it.
    pub fn progress_json(&self) -> Value {
        let p = self.progress.borrow();
        json!({
            "name": p.name,
            "position": p.position,
            "total": p.total,
            "done": p.done,
            "waiting": p.waiting,
            "error": p.error,
        })
    }
}
