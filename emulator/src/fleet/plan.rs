//! The fleet's data and its schedule, pure: the settings ([`Fleet`]), each
//! DJ's [`Plan`] and [`Session`]s, the [`FleetState`] the world keeps, and
//! when each DJ goes on air ([`usual_start`], [`window`]). The runner in
//! the module above plays it on the world.

use serde::Serialize;

use crate::clock::DAY_MS;
use crate::rng::Rng;

/// A fleet's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fleet {
    /// The share of the fleet on air at a time, 1–50 (default 10).
    pub on_air_percent: u32,
    /// Events per live DJ per emulator minute (default 6; 0: none).
    pub events_per_minute: f64,
    /// Fixes the usual start times, the windows and the events' mix.
    pub seed: u64,
}

impl Default for Fleet {
    fn default() -> Self {
        Self {
            on_air_percent: 10,
            events_per_minute: 6.0,
            seed: 0x000f_1ee7,
        }
    }
}

impl Fleet {
    /// `on_air_percent` held to 1–50, a negative or non-finite rate to 0.
    pub fn checked(mut self) -> Self {
        self.on_air_percent = self.on_air_percent.clamp(1, 50);
        if !(self.events_per_minute.is_finite() && self.events_per_minute > 0.0) {
            self.events_per_minute = 0.0;
        }
        self
    }

    /// The mean session, ms.
    fn mean_ms(&self) -> i64 {
        DAY_MS / 100 * i64::from(self.on_air_percent)
    }
}

/// One DJ of the fleet.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Its index among the world's DJs.
    pub dj: u32,
    /// Its usual start, ms after midnight UTC.
    pub usual_ms: u32,
    /// Sessions started (the current one's number while on air).
    pub(crate) sessions_started: u32,
    /// On air now (as the fleet started it).
    pub(crate) on_air: bool,
    /// While on air: the planned end; else the next planned start.
    pub(crate) next_ms: i64,
    /// Its sessions so far, oldest first.
    pub history: Vec<Session>,
}

/// One broadcast of a fleet DJ.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// Its `liveId`.
    pub live_id: u64,
    /// When it went on air (emulator ms).
    pub started_at_ms: i64,
    /// When it is planned to end.
    pub planned_end_ms: i64,
    /// When it ended (`null`: on air).
    pub ended_at_ms: Option<i64>,
}

/// The fleet as it runs (kept in the world, read by `GET /_emulator/fleet`).
#[derive(Debug, Clone)]
pub struct FleetState {
    /// Its settings.
    pub config: Fleet,
    /// One plan per DJ of the fleet.
    pub plans: Vec<Plan>,
    /// When the next thing is due (a start, an end, an event): everything
    /// due before it has been done.
    pub next_due_ms: i64,
}

impl FleetState {
    /// DJs on air now.
    pub fn on_air(&self) -> usize {
        self.plans.iter().filter(|p| p.on_air).count()
    }
}

fn mix(seed: u64, k: u64, day: i64) -> Rng {
    Rng::new(
        seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ (day as u64).wrapping_mul(0xD1B5_4A32_D192_ED03),
    )
}

/// The usual start (ms after midnight UTC) of fleet DJ `k`.
pub fn usual_start(fleet: &Fleet, k: usize) -> u32 {
    mix(fleet.seed, k as u64, i64::MIN).below(DAY_MS as u64) as u32
}

/// Fleet DJ `k`'s window on `day` (days since the epoch): (start, end), ms.
pub fn window(fleet: &Fleet, k: usize, usual_ms: u32, day: i64) -> (i64, i64) {
    let mut r = mix(fleet.seed, k as u64, day);
    let jitter = r.below(40 * 60_000) as i64 - 20 * 60_000;
    let mean = fleet.mean_ms();
    let length = mean / 2 + r.below(mean as u64) as i64;
    let start = day * DAY_MS + i64::from(usual_ms) + jitter;
    (start, start + length)
}

/// The window of DJ `k` that holds `t`, or the next one.
pub(crate) fn current_or_next(fleet: &Fleet, k: usize, usual_ms: u32, t: i64) -> (i64, i64) {
    let mut day = t.div_euclid(DAY_MS) - 1;
    loop {
        let (start, end) = window(fleet, k, usual_ms, day);
        if end > t {
            return (start, end);
        }
        day += 1;
    }
}
