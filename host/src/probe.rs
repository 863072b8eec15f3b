//! Finding DJs on air within a request budget.
//!
//! The service offers no signal for a broadcast's start: a bot learns of
//! one by opening `GET /v1/live/events` and no longer getting a 404. Each
//! off-air bot probes so, and the host spreads those probes over a budget
//! (`[host] probe_budget_per_s`, for the whole app), divided among the live
//! replicas: this replica's **share**. Every bot off air gets a weight from
//! what the host knows of it ([`History`]):
//!
//! | the DJ | weight |
//! |---|---|
//! | broadcast ended within the last hour ([`RECENT_MS`]), or within an hour of a usual start time ([`History::near_usual_start`]) | [`WEIGHT_HOT`] (8) |
//! | on air within the last week ([`IDLE_MS`]), or not known yet (no broadcast seen) | [`WEIGHT_NORMAL`] (1) |
//! | last on air longer ago | [`WEIGHT_IDLE`] (¼) |
//!
//! and a rate proportional to its weight, the rates summing to at most the
//! share, none above one probe per [`FLOOR_MS`] (the spec's few seconds;
//! what a capped bot cannot spend goes to the others, and what nobody can
//! spend is left unspent). The core draws each wait uniformly in
//! `[wait, 2 × wait]`, on average [`DRAW_MEAN`] × `wait`; so a bot's wait
//! is `1 / (rate × DRAW_MEAN)`, rounded up to whole milliseconds, and the
//! probes sent average the planned rate. [`plan`] is the pure computation;
//! [`Board`] holds the replica's bots, what it knows of them and their
//! waits.
//!
//! A bot a replica takes over (or starts with) probes too, at its first
//! connect: while the lease keeper takes bots, the off-air bots are planned
//! for half the share and the taken bots' first connects get the rest
//! ([`takeover_pace`]), each in a slot of a [`Pacer`] spaced so that no
//! second holds more than that pace ([`spacing_ms`]);
//! [`takeover_schedule`] is the pure model of a takeover by several
//! replicas.

use std::collections::HashMap;
use std::sync::Mutex;

/// The shortest wait between two probes of one DJ (ms): the spec's floor,
/// which the core keeps whatever it is asked.
pub const FLOOR_MS: u64 = onair::api::NOT_ON_AIR_FLOOR_MS;
/// The mean of the core's draw of a wait, as a multiple of the wait it is
/// given ([`onair::api::ConnectLoop::set_not_on_air_wait`]: uniform in
/// `[wait, 2 × wait]`).
pub const DRAW_MEAN: f64 = 1.5;
/// The part of a replica's share its plan spends ([`Board::replan`]; the
/// rest is margin):
/// the plan cannot see every probe (a bot whose broadcast just ended
/// probes at once; a wait cut short is drawn afresh), and the draws are
/// chance. With 1 000 DJs and a history, 5 % more than the plan was sent.
pub const PLANNED_SHARE: f64 = 0.95;
/// A broadcast that ended this recently (ms) makes its DJ likely to start
/// again soon (a dropped broadcast, a restart).
pub const RECENT_MS: i64 = 60 * 60 * 1000;
/// How close (ms, time of day, either side) to a usual start time counts
/// as near it.
pub const NEAR_USUAL_MS: i64 = 60 * 60 * 1000;
/// A DJ not on air for this long (ms) is probed least.
pub const IDLE_MS: i64 = 7 * DAY_MS;
/// Starts older than this (ms) say nothing of a DJ's usual hours.
pub const USUAL_WITHIN_MS: i64 = 28 * DAY_MS;
/// How many broadcast starts a bot's history keeps.
pub const KEPT_STARTS: usize = 8;
/// The weight of a DJ likely to start soon.
pub const WEIGHT_HOT: f64 = 8.0;
/// The weight of a DJ seen on air this week.
pub const WEIGHT_NORMAL: f64 = 1.0;
/// The weight of a long-idle DJ.
pub const WEIGHT_IDLE: f64 = 0.25;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// What the host remembers of a DJ's broadcasts, to guess when the next
/// one starts: when the last ended, and when the last few started. Stored
/// per bot (`probe_history`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// When its last broadcast ended (unix ms), if one was seen.
    pub last_ended_ms: Option<i64>,
    /// When its last broadcasts started (unix ms), oldest first, at most
    /// [`KEPT_STARTS`].
    pub starts_ms: Vec<i64>,
}

impl History {
    /// A broadcast started at `at_ms` (the same start twice is kept once).
    pub fn started(&mut self, at_ms: i64) {
        if self.starts_ms.last() == Some(&at_ms) {
            return;
        }
        self.starts_ms.push(at_ms);
        let extra = self.starts_ms.len().saturating_sub(KEPT_STARTS);
        self.starts_ms.drain(..extra);
    }

    /// A broadcast ended at `at_ms`.
    pub fn ended(&mut self, at_ms: i64) {
        self.last_ended_ms = Some(self.last_ended_ms.map_or(at_ms, |e| e.max(at_ms)));
    }

    /// The starts as stored: unix ms, comma-separated.
    pub fn starts_text(&self) -> String {
        let parts: Vec<String> = self.starts_ms.iter().map(i64::to_string).collect();
        parts.join(",")
    }

    /// A history from its stored form; pieces that do not read are left
    /// out (the history is a guide, never a reason to fail).
    pub fn from_stored(last_ended_ms: Option<i64>, starts: &str) -> History {
        let mut starts_ms: Vec<i64> = starts
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        let extra = starts_ms.len().saturating_sub(KEPT_STARTS);
        starts_ms.drain(..extra);
        History {
            last_ended_ms,
            starts_ms,
        }
    }

    /// Whether `now_ms` is within [`NEAR_USUAL_MS`] of a usual start time
    /// (time of day, UTC): one at which at least two of the starts of the
    /// last [`USUAL_WITHIN_MS`] fell within [`NEAR_USUAL_MS`] of each other,
    /// or the one such start.
    pub fn near_usual_start(&self, now_ms: i64) -> bool {
        let recent: Vec<i64> = self
            .starts_ms
            .iter()
            .copied()
            .filter(|s| now_ms.saturating_sub(*s) < USUAL_WITHIN_MS)
            .collect();
        let usual = |s: i64| {
            recent.len() == 1
                || recent
                    .iter()
                    .filter(|o| day_distance(**o, s) <= NEAR_USUAL_MS)
                    .count()
                    >= 2
        };
        recent
            .iter()
            .any(|s| day_distance(*s, now_ms) <= NEAR_USUAL_MS && usual(*s))
    }

    /// How much this DJ's probes weigh at `now_ms` (see the module's table).
    pub fn weight(&self, now_ms: i64) -> f64 {
        let since = |at: i64| now_ms.saturating_sub(at);
        if self.last_ended_ms.is_some_and(|e| since(e) < RECENT_MS) || self.near_usual_start(now_ms)
        {
            return WEIGHT_HOT;
        }
        let last_seen = self
            .last_ended_ms
            .into_iter()
            .chain(self.starts_ms.iter().copied())
            .max();
        // A DJ not seen on air yet (just connected) is not idle.
        if last_seen.is_none_or(|at| since(at) < IDLE_MS) {
            WEIGHT_NORMAL
        } else {
            WEIGHT_IDLE
        }
    }
}

/// How far apart two instants are by time of day (ms, at most half a day).
fn day_distance(a: i64, b: i64) -> i64 {
    let d = (a.rem_euclid(DAY_MS) - b.rem_euclid(DAY_MS)).abs();
    d.min(DAY_MS - d)
}

/// This replica's share of the app's probe budget (probes per second):
/// the budget divided by the live replicas (at least one).
pub fn share(budget_per_s: f64, live_replicas: i64) -> f64 {
    let live = u32::try_from(live_replicas.max(1)).unwrap_or(u32::MAX);
    budget_per_s / f64::from(live)
}

/// The waits (ms, as the core takes them) for bots of these weights to
/// share `share_per_s` probes a second: rates proportional to the weights,
/// none above one probe per [`DRAW_MEAN`] × [`FLOOR_MS`] (a wait at the
/// floor; the surplus goes to the others), each wait
/// `1000 / (rate × DRAW_MEAN)` rounded up. The result is in the order of
/// `weights`; [`planned_rate`] of it ≤ `share_per_s`. No share (zero,
/// negative, not a number): `u64::MAX` each.
pub fn plan(weights: &[f64], share_per_s: f64) -> Vec<u64> {
    let mut waits = vec![u64::MAX; weights.len()];
    if share_per_s.is_nan() || share_per_s <= 0.0 || !share_per_s.is_finite() {
        return waits;
    }
    let weight = |i: usize| {
        let w = weights[i];
        if w.is_finite() && w > 0.0 {
            w
        } else {
            WEIGHT_IDLE
        }
    };
    // Heaviest first: once one is under the cap, all the lighter ones are.
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|a, b| weight(*b).total_cmp(&weight(*a)));
    let max_rate = 1000.0 / (FLOOR_MS as f64 * DRAW_MEAN);
    let mut left = share_per_s;
    let mut left_weight: f64 = order.iter().map(|i| weight(*i)).sum();
    for i in order {
        let w = weight(i);
        let rate = if left_weight > 0.0 {
            (left * w / left_weight).min(max_rate)
        } else {
            0.0
        };
        left = (left - rate).max(0.0);
        left_weight -= w;
        if rate > 0.0 {
            // `as` saturates: a rate too small for a u64 of ms waits forever.
            let wait = (1000.0 / (rate * DRAW_MEAN)).ceil() as u64;
            waits[i] = wait.max(FLOOR_MS);
        }
    }
    waits
}

/// Probes per second that `waits` (as the core takes them) send on
/// average: Σ 1000 / ([`DRAW_MEAN`] × wait).
pub fn planned_rate(waits: impl IntoIterator<Item = u64>) -> f64 {
    waits
        .into_iter()
        .filter(|w| *w > 0 && *w != u64::MAX)
        .map(|w| 1000.0 / (w as f64 * DRAW_MEAN))
        .sum()
}

/// How fast this replica starts bots it takes over (or starts with): first
/// connects per second. A taken bot's first connect is a probe of the
/// service, so it comes out of the replica's share: while it takes leases,
/// its off-air bots are planned for half the share ([`Board::set_taking`]),
/// and the taken bots get the rest: the share less what that plan holds
/// (`planned_per_s`), so at least half of it and all of it when nothing is
/// off air yet. The two together stay within the share.
pub fn takeover_pace(share_per_s: f64, planned_per_s: f64) -> f64 {
    if share_per_s.is_nan() || share_per_s <= 0.0 || !share_per_s.is_finite() {
        return 0.0;
    }
    let planned = if planned_per_s.is_finite() {
        planned_per_s.clamp(0.0, share_per_s / 2.0)
    } else {
        share_per_s / 2.0
    };
    share_per_s - planned
}

/// The time between two first connects (ms) at `pace_per_s`, so that no
/// second (any window of 1 000 ms) holds more than the pace rounded down,
/// with a tenth to spare ([`SPACING_MARGIN`]: a bot's first connect comes
/// a few ms early or late, by its timer and its own calls):
/// `⌈1100 / ⌊pace⌋⌉`, or `⌈1100 / pace⌉` below one a second. No pace:
/// `u64::MAX`.
pub fn spacing_ms(pace_per_s: f64) -> u64 {
    if pace_per_s.is_nan() || pace_per_s <= 0.0 || !pace_per_s.is_finite() {
        return u64::MAX;
    }
    let per_s = if pace_per_s >= 1.0 {
        pace_per_s.floor()
    } else {
        pace_per_s
    };
    // `as` saturates: a pace too small waits u64::MAX.
    ((1000.0 * SPACING_MARGIN / per_s).ceil() as u64).max(1)
}

/// How much farther apart first connects are than the pace alone asks.
pub const SPACING_MARGIN: f64 = 1.1;

/// The spacing of a replica's first start: at least `spread_ms` over the
/// `bots` it starts with (`host.start_spread_ms`, a lower bound), and no
/// closer than the pace allows ([`spacing_ms`]): the spread is then
/// `bots ÷ pace` seconds.
pub fn start_spacing_ms(pace_spacing_ms: u64, spread_ms: u64, bots: u64) -> u64 {
    pace_spacing_ms.max(spread_ms / bots.max(1))
}

/// The slots of first connects a replica books, one after another,
/// `spacing` apart. Time is the caller's (ms on a monotonic clock).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pacer {
    /// The earliest free slot (ms).
    next_ms: u64,
}

impl Pacer {
    /// How many slots fit before `now_ms + horizon_ms` at `spacing_ms`:
    /// how many leases to take now (the rest stay free for the other
    /// replicas until the next look).
    pub fn room(&self, now_ms: u64, spacing_ms: u64, horizon_ms: u64) -> u64 {
        if spacing_ms == u64::MAX {
            return 0;
        }
        let from = self.next_ms.max(now_ms);
        let end = now_ms.saturating_add(horizon_ms);
        if from >= end {
            return 0;
        }
        (end - from).div_ceil(spacing_ms.max(1))
    }

    /// Books the next slot: the delay (ms from `now_ms`) of the next
    /// first connect.
    pub fn book(&mut self, now_ms: u64, spacing_ms: u64) -> u64 {
        let at = self.next_ms.max(now_ms);
        self.next_ms = at.saturating_add(spacing_ms.max(1));
        at - now_ms
    }

    /// Whether slots booked are still ahead of `now_ms`.
    pub fn busy(&self, now_ms: u64) -> bool {
        self.next_ms > now_ms
    }
}

/// A takeover as the lease keeper runs it, for tests and the README: `n`
/// expired leases, `replicas` live replicas each looking every `tick_ms`
/// (one after another, `share_per_s` and `planned_per_s` each) with room
/// for the slots of one tick. Returns, per replica, the instants (ms after
/// the leases expired) of its taken bots' first connects.
pub fn takeover_schedule(
    n: u64,
    replicas: u64,
    share_per_s: f64,
    planned_per_s: f64,
    tick_ms: u64,
) -> Vec<Vec<u64>> {
    let replicas = replicas.max(1);
    let spacing = spacing_ms(takeover_pace(share_per_s, planned_per_s));
    let mut pacers = vec![Pacer::default(); usize::try_from(replicas).unwrap_or(1)];
    let mut starts = vec![Vec::new(); pacers.len()];
    let mut left = n;
    let mut now = 0u64;
    // Each replica's target: an even part of the dead one's bots.
    let mut wanted: Vec<u64> = (0..replicas)
        .map(|r| n / replicas + u64::from(r < n % replicas))
        .collect();
    while left > 0 && spacing != u64::MAX {
        for (r, pacer) in pacers.iter_mut().enumerate() {
            let batch = pacer.room(now, spacing, tick_ms).min(wanted[r]).min(left);
            for _ in 0..batch {
                starts[r].push(now + pacer.book(now, spacing));
            }
            wanted[r] -= batch;
            left -= batch;
        }
        now += tick_ms;
    }
    starts
}

#[derive(Debug, Default)]
struct Entry {
    history: History,
    off_air: bool,
    wait_ms: Option<u64>,
}

#[derive(Debug, Default)]
struct Inner {
    bots: HashMap<i64, Entry>,
    share_per_s: f64,
    /// Σ weight of the off-air bots at the last plan.
    weight: f64,
    planned_per_s: f64,
    off_air: usize,
    spent_per_s: f64,
    changed: bool,
    /// The lease keeper is taking bots over (or starting them).
    taking: bool,
}

/// The replica's bots as the probe planner sees them: each one's history,
/// whether it is off air (probing), and its wait. Bots report; a keeper
/// calls [`Board::replan`] every few seconds and when one goes on or off
/// air ([`Board::changed`]).
#[derive(Debug, Default)]
pub struct Board {
    inner: Mutex<Inner>,
}

/// Where the replica's probing stands, for the dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Summary {
    /// The last plan.
    pub plan: Plan,
    /// Probes per second sent lately (measured).
    pub spent_per_s: f64,
}

/// What a [`Board::replan`] came to.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Plan {
    /// Bots off air, probing.
    pub off_air: usize,
    /// The share planned for (probes per second).
    pub share_per_s: f64,
    /// Probes per second the waits allow at most (≤ the share).
    pub planned_per_s: f64,
}

impl Board {
    /// A board for a replica whose share starts at `share_per_s`.
    pub fn new(share_per_s: f64) -> Board {
        Board {
            inner: Mutex::new(Inner {
                share_per_s,
                ..Inner::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the store remembers of bot `id`.
    pub fn load(&self, id: i64, history: History) {
        self.lock().bots.entry(id).or_default().history = history;
    }

    /// What the planner knows of bot `id`'s broadcasts.
    pub fn history(&self, id: i64) -> Option<History> {
        self.lock().bots.get(&id).map(|e| e.history.clone())
    }

    /// Bot `id` is off air (probing) or not (on air, stopped, elsewhere).
    pub fn set_off_air(&self, id: i64, off_air: bool) {
        let mut inner = self.lock();
        let entry = inner.bots.entry(id).or_default();
        if entry.off_air != off_air {
            entry.off_air = off_air;
            if !off_air {
                entry.wait_ms = None;
            }
            inner.changed = true;
        }
    }

    /// Bot `id` found a broadcast that started at `at_ms`: its history to
    /// save.
    pub fn started(&self, id: i64, at_ms: i64) -> History {
        let mut inner = self.lock();
        let entry = inner.bots.entry(id).or_default();
        entry.history.started(at_ms);
        entry.history.clone()
    }

    /// Bot `id`'s broadcast ended at `at_ms`: its history to save.
    pub fn ended(&self, id: i64, at_ms: i64) -> History {
        let mut inner = self.lock();
        inner.changed = true;
        let entry = inner.bots.entry(id).or_default();
        entry.history.ended(at_ms);
        entry.history.clone()
    }

    /// Bot `id` is gone from this replica.
    pub fn forget(&self, id: i64) {
        let mut inner = self.lock();
        if inner.bots.remove(&id).is_some_and(|e| e.off_air) {
            inner.changed = true;
        }
    }

    /// Whether a bot went on or off air (or its history moved) since the
    /// last plan.
    pub fn changed(&self) -> bool {
        self.lock().changed
    }

    /// The wait for bot `id`'s next probes (ms) at `now_ms`: the planned
    /// one, or for a bot not planned yet (just started, or just gone off
    /// air) its rate at the last plan's proportions.
    pub fn wait_ms(&self, id: i64, now_ms: i64) -> u64 {
        let inner = self.lock();
        let entry = inner.bots.get(&id);
        if let Some(wait) = entry.and_then(|e| e.wait_ms) {
            return wait;
        }
        let w = entry.map_or(WEIGHT_IDLE, |e| e.history.weight(now_ms));
        let total = inner.weight + w;
        plan(&[w], inner.share_per_s * PLANNED_SHARE * w / total)
            .first()
            .copied()
            .unwrap_or(u64::MAX)
    }

    /// The lease keeper is taking bots over (or starting them) or not:
    /// while it is, the off-air bots are planned for half the share (see
    /// [`takeover_pace`]).
    pub fn set_taking(&self, taking: bool) {
        let mut inner = self.lock();
        if inner.taking != taking {
            inner.taking = taking;
            inner.changed = true;
        }
    }

    /// The share to plan the off-air bots for, of the replica's
    /// `share_per_s`: half of it while bots are being taken, all of it
    /// otherwise.
    pub fn planned_share(&self, share_per_s: f64) -> f64 {
        if self.lock().taking {
            share_per_s / 2.0
        } else {
            share_per_s
        }
    }

    /// Notes the probes per second measured lately.
    pub fn note_spent(&self, per_s: f64) {
        self.lock().spent_per_s = per_s;
    }

    /// The last plan and the rate measured.
    pub fn summary(&self) -> Summary {
        let inner = self.lock();
        Summary {
            plan: Plan {
                off_air: inner.off_air,
                share_per_s: inner.share_per_s,
                planned_per_s: inner.planned_per_s,
            },
            spent_per_s: inner.spent_per_s,
        }
    }

    /// Plans every off-air bot's wait for [`PLANNED_SHARE`] of
    /// `share_per_s` at `now_ms`.
    pub fn replan(&self, now_ms: i64, share_per_s: f64) -> Plan {
        let mut inner = self.lock();
        let ids: Vec<i64> = inner
            .bots
            .iter()
            .filter(|(_, e)| e.off_air)
            .map(|(id, _)| *id)
            .collect();
        let weights: Vec<f64> = ids
            .iter()
            .map(|id| {
                inner
                    .bots
                    .get(id)
                    .map_or(WEIGHT_IDLE, |e| e.history.weight(now_ms))
            })
            .collect();
        let waits = plan(&weights, share_per_s * PLANNED_SHARE);
        for (id, wait) in ids.iter().zip(&waits) {
            if let Some(e) = inner.bots.get_mut(id) {
                e.wait_ms = Some(*wait);
            }
        }
        inner.share_per_s = share_per_s;
        inner.weight = weights.iter().sum();
        inner.planned_per_s = planned_rate(waits);
        inner.off_air = ids.len();
        inner.changed = false;
        Plan {
            off_air: ids.len(),
            share_per_s,
            planned_per_s: inner.planned_per_s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 60 * 60 * 1000;
    /// 2026-11-28 21:00 UTC.
    const NOW: i64 = 1_795_899_600_000;

    /// Last on air a month ago.
    fn idle() -> History {
        History {
            last_ended_ms: Some(NOW - 30 * 24 * HOUR),
            starts_ms: vec![NOW - 30 * 24 * HOUR - 5 * HOUR],
        }
    }

    fn recently_live() -> History {
        History {
            last_ended_ms: Some(NOW - 20 * 60 * 1000),
            starts_ms: vec![NOW - 3 * HOUR],
        }
    }

    /// Started at 21:30 on the last three days.
    fn evening_dj() -> History {
        History {
            last_ended_ms: Some(NOW - 22 * HOUR),
            starts_ms: (1..=3).map(|d| NOW - d * 24 * HOUR + HOUR / 2).collect(),
        }
    }

    fn weekly() -> History {
        History {
            last_ended_ms: Some(NOW - 3 * 24 * HOUR),
            starts_ms: vec![NOW - 3 * 24 * HOUR - 5 * HOUR],
        }
    }

    fn board_of(histories: &[History]) -> Board {
        let board = Board::new(0.0);
        for (id, h) in histories.iter().enumerate() {
            let id = i64::try_from(id).unwrap();
            board.load(id, h.clone());
            board.set_off_air(id, true);
        }
        board
    }

    /// The planned rate of the board's bots.
    fn spent(board: &Board, n: usize) -> f64 {
        let waits = (0..n).map(|id| board.wait_ms(i64::try_from(id).unwrap(), NOW));
        planned_rate(waits)
    }

    #[test]
    fn the_budget_holds_for_ten_a_thousand_and_ten_thousand_bots() {
        let kinds = [idle(), recently_live(), evening_dj(), weekly()];
        for n in [10, 1_000, 10_000] {
            let histories: Vec<History> = (0..n).map(|i| kinds[i % 4].clone()).collect();
            let board = board_of(&histories);
            for share in [0.5, 66.7, 200.0] {
                let plan = board.replan(NOW, share);
                assert_eq!(plan.off_air, n);
                let spent = spent(&board, n);
                assert!(spent <= share + 1e-9, "{n} bots, share {share}: {spent}");
                assert!((plan.planned_per_s - spent).abs() < 1e-6);
                // Never faster than the floor.
                for id in 0..n {
                    assert!(board.wait_ms(i64::try_from(id).unwrap(), NOW) >= FLOOR_MS);
                }
                // The budget is spent, unless every bot is at the floor.
                let all_at_floor = n as f64 * 1000.0 / (FLOOR_MS as f64 * DRAW_MEAN);
                let expected = (share * PLANNED_SHARE).min(all_at_floor);
                assert!(spent > expected * 0.99, "{n} bots, share {share}: {spent}");
            }
        }
    }

    #[test]
    fn ten_bots_and_a_large_budget_probe_at_the_floor_and_leave_the_rest() {
        let board = board_of(&vec![idle(); 10]);
        let plan = board.replan(NOW, 200.0);
        for id in 0..10 {
            assert_eq!(board.wait_ms(id, NOW), FLOOR_MS);
        }
        assert!((plan.planned_per_s - 10.0 / 4.5).abs() < 1e-9);
    }

    #[test]
    fn the_share_halves_when_a_second_replica_joins_and_comes_back_when_it_leaves() {
        let histories: Vec<History> = (0..1_000).map(|_| weekly()).collect();
        let board = board_of(&histories);
        let one = board.replan(NOW, share(200.0, 1));
        let wait_one = board.wait_ms(0, NOW);
        assert_eq!(one.share_per_s, 200.0);
        let two = board.replan(NOW, share(200.0, 2));
        assert_eq!(two.share_per_s, 100.0);
        assert!(spent(&board, 1_000) <= 100.0 + 1e-9);
        let wait_two = board.wait_ms(0, NOW);
        assert!(
            (wait_two as f64 / wait_one as f64 - 2.0).abs() < 0.01,
            "{wait_one} → {wait_two}"
        );
        let back = board.replan(NOW, share(200.0, 1));
        assert_eq!(back, one);
        assert_eq!(board.summary().plan, one);
        assert_eq!(board.wait_ms(0, NOW), wait_one);
        // No replica counted yet: one.
        assert_eq!(share(200.0, 0), 200.0);
        assert!((share(200.0, 3) - 66.666).abs() < 0.001);
    }

    #[test]
    fn recently_live_and_usual_hour_djs_are_probed_sooner_long_idle_ones_later() {
        let board = board_of(&[idle(), recently_live(), evening_dj(), weekly()]);
        let mut more: Vec<History> = vec![weekly(); 996];
        more.extend([idle(), recently_live(), evening_dj(), weekly()]);
        let board_big = board_of(&more);
        for (board, base, share) in [(&board, 0, 0.5), (&board_big, 996, 10.0)] {
            board.replan(NOW, share);
            let wait = |i: i64| board.wait_ms(base + i, NOW);
            let (idle, recent, usual, normal) = (wait(0), wait(1), wait(2), wait(3));
            assert!(
                recent < normal && usual < normal,
                "{recent} {usual} {normal}"
            );
            assert!(normal < idle, "{normal} {idle}");
        }
        // With a thousand bots sharing 10/s: 8 times the rate, 4 times that
        // of the long idle.
        let wait = |i: i64| board_big.wait_ms(996 + i, NOW) as f64;
        assert!((wait(3) / wait(1) - 8.0).abs() < 0.01);
        assert!((wait(0) / wait(3) - 4.0).abs() < 0.01);
    }

    /// The core's probes, drawn from the planned waits, average the plan.
    #[test]
    fn the_probes_the_core_sends_average_the_planned_rate() {
        use onair::api::{ConnectLoop, Step, StreamConfig};
        let not_on_air = |lp: &mut ConnectLoop, at: u64| {
            let ct = [("content-type", "application/json")];
            let body = br#"{"detailCode":"OAPI_MNGR_0301"}"#;
            lp.on_response(404, ct, body, at).unwrap();
        };
        // Twenty near their usual hour (some at the floor), 180 others.
        let histories: Vec<History> = (0..200)
            .map(|i| if i % 10 == 0 { evening_dj() } else { weekly() })
            .collect();
        let board = board_of(&histories);
        let plan = board.replan(NOW, 20.0);
        assert!(
            (plan.planned_per_s - 20.0 * PLANNED_SHARE).abs() < 0.01,
            "{plan:?}"
        );
        let hour = 3_600_000;
        let mut probes = 0u64;
        for id in 0..200u64 {
            let mut lp = ConnectLoop::new(StreamConfig::default(), id + 1);
            assert_eq!(lp.poll(0), Step::Connect);
            not_on_air(&mut lp, 0);
            lp.set_not_on_air_wait(0, board.wait_ms(i64::try_from(id).unwrap(), NOW));
            while let Some(at) = lp.next_connect_at_ms().filter(|at| *at < hour) {
                assert_eq!(lp.poll(at), Step::Connect);
                probes += 1;
                not_on_air(&mut lp, at);
            }
        }
        let sent = probes as f64 / 3_600.0;
        assert!(
            (sent / plan.planned_per_s - 1.0).abs() < 0.03,
            "sent {sent:.2}/s, planned {:.2}/s",
            plan.planned_per_s
        );
    }

    #[test]
    fn the_usual_hour_counts_from_an_hour_before_to_an_hour_after() {
        let dj = evening_dj(); // 21:30 on three days
        assert!(dj.near_usual_start(NOW)); // 21:00
        assert!(dj.near_usual_start(NOW - HOUR / 2 + 1)); // 20:30
        assert!(!dj.near_usual_start(NOW - HOUR)); // 20:00
        assert!(dj.near_usual_start(NOW + 3 * HOUR / 2)); // 22:30
        assert!(!dj.near_usual_start(NOW + 2 * HOUR)); // 23:00
        assert_eq!(dj.weight(NOW), WEIGHT_HOT);
        assert_eq!(dj.weight(NOW + 3 * HOUR), WEIGHT_NORMAL);
        // Two starts at unrelated times are no habit.
        let odd = History {
            last_ended_ms: Some(NOW - 20 * HOUR),
            starts_ms: vec![NOW - 31 * HOUR, NOW - 24 * HOUR],
        };
        assert!(!odd.near_usual_start(NOW));
        assert!(!odd.near_usual_start(NOW - 7 * HOUR));
        // The one start known is the usual one.
        assert!(weekly().near_usual_start(NOW - 5 * HOUR));
        // A start a month ago says nothing of the hours now.
        assert!(!idle().near_usual_start(NOW - 5 * HOUR));
        // Around midnight, by time of day.
        let late = History {
            last_ended_ms: None,
            starts_ms: vec![NOW + 3 * HOUR - 24 * HOUR + 10 * 60 * 1000], // 00:10
        };
        assert!(late.near_usual_start(NOW + 2 * HOUR + HOUR / 2)); // 23:30
        assert_eq!(late.weight(NOW + 2 * HOUR + HOUR / 2), WEIGHT_HOT);
        assert_eq!(idle().weight(NOW), WEIGHT_IDLE);
        assert_eq!(
            History::default().weight(NOW),
            WEIGHT_NORMAL,
            "not known yet"
        );
        assert_eq!(recently_live().weight(NOW), WEIGHT_HOT);
    }

    #[test]
    fn a_bot_not_planned_yet_gets_its_share_at_the_last_proportions() {
        let board = board_of(&vec![weekly(); 99]);
        board.replan(NOW, 10.0);
        let planned = board.wait_ms(0, NOW);
        board.load(500, weekly());
        let fresh = board.wait_ms(500, NOW);
        // 100 bots of one weight now: a little longer than the planned ones.
        assert!(
            fresh >= planned && fresh <= planned * 101 / 99 + 1,
            "{planned} {fresh}"
        );
        board.set_off_air(500, true);
        assert!(board.changed());
        board.replan(NOW, 10.0);
        assert!(!board.changed());
        assert!(spent(&board, 99) + planned_rate([board.wait_ms(500, NOW)]) <= 10.0 + 1e-9);
        // On air: no planned wait kept; off the plan at the next replan.
        board.set_off_air(500, false);
        assert_eq!(board.replan(NOW, 10.0).off_air, 99);
    }

    #[test]
    fn history_keeps_the_last_starts_and_reads_its_stored_form() {
        let mut h = History::default();
        for i in 0..12 {
            h.started(i * 1000);
        }
        h.started(11_000);
        assert_eq!(h.starts_ms, (4..12).map(|i| i * 1000).collect::<Vec<_>>());
        h.ended(20_000);
        h.ended(15_000);
        assert_eq!(h.last_ended_ms, Some(20_000));
        let back = History::from_stored(h.last_ended_ms, &h.starts_text());
        assert_eq!(back, h);
        let damaged = History::from_stored(None, "12,x,,-3");
        assert_eq!(damaged.starts_ms, [12, -3]);
        assert_eq!(History::from_stored(None, "").starts_ms, Vec::<i64>::new());
    }

    /// The most first connects in any window of 1 000 ms of `starts`.
    fn busiest_second(starts: &[u64]) -> usize {
        let mut all = starts.to_vec();
        all.sort_unstable();
        (0..all.len())
            .map(|i| all[i..].iter().take_while(|t| **t < all[i] + 1000).count())
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn the_takeover_pace_is_the_share_less_the_plan_and_at_least_half_of_it() {
        assert_eq!(takeover_pace(100.0, 0.0), 100.0);
        assert_eq!(takeover_pace(100.0, 30.0), 70.0);
        assert_eq!(takeover_pace(100.0, 80.0), 50.0);
        assert_eq!(takeover_pace(100.0, f64::NAN), 50.0);
        assert_eq!(takeover_pace(0.0, 0.0), 0.0);
        assert_eq!(spacing_ms(100.0), 11);
        // 66.7 a second: 17 ms apart, 59 in any second (never 67).
        assert_eq!(spacing_ms(200.0 / 3.0), 17);
        assert_eq!(spacing_ms(0.5), 2200);
        assert_eq!(spacing_ms(1.0), 1100);
        assert_eq!(spacing_ms(0.0), u64::MAX);
        assert_eq!(spacing_ms(f64::NAN), u64::MAX);
        // A start: the spread is a lower bound; thousands of bots go by the pace.
        assert_eq!(start_spacing_ms(11, 5_000, 20), 250);
        assert_eq!(start_spacing_ms(11, 5_000, 3_000), 11);
        assert_eq!(start_spacing_ms(11, 0, 0), 11);
    }

    #[test]
    fn the_pacer_books_slots_one_spacing_apart_and_says_how_many_fit() {
        let mut p = Pacer::default();
        assert_eq!(p.room(1_000, 10, 2_500), 250);
        assert_eq!(p.room(1_000, u64::MAX, 2_500), 0);
        let delays: Vec<u64> = (0..5).map(|_| p.book(1_000, 10)).collect();
        assert_eq!(delays, [0, 10, 20, 30, 40]);
        assert!(p.busy(1_049));
        assert!(!p.busy(1_050));
        assert_eq!(p.room(1_000, 10, 2_500), 245);
        // Later slots go on from the last one booked, or from now.
        assert_eq!(p.book(1_020, 10), 30);
        assert_eq!(p.book(5_000, 10), 0);
        assert_eq!(p.room(5_000, 10, 5), 0);
    }

    #[test]
    fn a_takeover_never_starts_more_bots_in_a_second_than_the_budget_and_the_survivors_share_it() {
        // 3 000 bots of a dead replica, a 200/s app budget, 2 survivors
        // (share 100/s each), looking every 2 s.
        for (n, survivors, budget, planned) in [
            (3_000, 2, 200.0, 0.0),
            (3_000, 2, 200.0, 50.0),
            (3_000, 2, 200.0, 20.0),
            (300, 2, 20.0, 0.0),
            (300, 3, 20.0, 4.0),
            (7, 2, 1.0, 0.0),
        ] {
            let share_per_s = share(budget, survivors);
            let starts = takeover_schedule(n, survivors as u64, share_per_s, planned, 2_000);
            let all: Vec<u64> = starts.iter().flatten().copied().collect();
            assert_eq!(all.len() as u64, n, "every bot taken");
            for mine in &starts {
                // Each survivor takes part: an even part.
                assert!(
                    mine.len() as u64 >= n / survivors as u64,
                    "{n}: {:?}",
                    starts.iter().map(Vec::len).collect::<Vec<_>>()
                );
            }
            let busiest = busiest_second(&all);
            assert!(
                busiest as f64 <= budget.max(survivors as f64),
                "{n} bots, budget {budget}: {busiest} in one second"
            );
            // Each survivor within its own pace.
            let pace = takeover_pace(share_per_s, planned);
            for mine in &starts {
                assert!(busiest_second(mine) as f64 <= pace.max(1.0));
            }
            // The batching's cost: n bots at the survivors' pace.
            let last_s = all.iter().max().copied().unwrap_or(0) as f64 / 1000.0;
            let at_least = (n as f64 / (survivors as f64 * pace)) - 1.0;
            assert!(
                last_s >= at_least,
                "{n}: last at {last_s} s, {at_least} s at least"
            );
        }
        // The issue's case: 3 000 bots, 200/s, 2 survivors: 16.5 s with
        // nothing off air, 33 s when their plans hold half the share (the
        // pace and a tenth to spare); within 60 s either way.
        let last = |planned: f64| {
            let starts = takeover_schedule(3_000, 2, 100.0, planned, 2_000);
            starts.iter().flatten().max().copied().unwrap_or(0)
        };
        assert!((16_400..16_600).contains(&last(0.0)), "{}", last(0.0));
        assert!((32_900..33_100).contains(&last(80.0)), "{}", last(80.0));
    }

    #[test]
    fn while_taking_the_off_air_bots_are_planned_for_half_the_share() {
        let board = board_of(&vec![weekly(); 1_000]);
        assert_eq!(board.planned_share(100.0), 100.0);
        board.replan(NOW, 100.0);
        assert!(!board.changed());
        board.set_taking(true);
        assert!(board.changed());
        assert_eq!(board.planned_share(100.0), 50.0);
        let plan = board.replan(NOW, board.planned_share(100.0));
        assert!(plan.planned_per_s <= 50.0 + 1e-9);
        // With the taken bots' pace, the share holds.
        let pace = takeover_pace(100.0, plan.planned_per_s);
        assert!(plan.planned_per_s + pace <= 100.0 + 1e-9);
        assert!(pace >= 50.0);
        board.set_taking(false);
        assert_eq!(board.planned_share(100.0), 100.0);
    }

    #[test]
    fn no_share_means_no_probes_planned() {
        assert_eq!(plan(&[1.0, 8.0], 0.0), [u64::MAX, u64::MAX]);
        assert_eq!(plan(&[1.0], f64::NAN), [u64::MAX]);
        assert_eq!(planned_rate(plan(&[1.0], 0.0)), 0.0);
        assert!(plan(&[], 5.0).is_empty());
    }
}
