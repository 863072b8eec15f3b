//! The fleet: a generated schedule for many DJs (`onair serve --djs N
//! --scenario fleet`), a hosted service's night. Each DJ of the fleet
//! (`dj-1` … `dj-N`; `main` stays out of it) has a usual start time of day;
//! each day of emulator time it goes on air then (± 20 min), stays on air for
//! 0.5–1.5 × the mean session (`onAirPercent` of a day: 2.4 h at the default
//! 10 %), and ends; so about `onAirPercent` % of the fleet is on air at any
//! time, starting and ending all through the night. A live DJ gets events
//! (50 % chat, 30 % likes, 15 % presence, 5 % donations, default payloads)
//! at `eventsPerMinute` per emulator minute, each gap 0.5–1.5 × the mean
//! (after a jump of the clock of over a minute, the events of the jump are
//! skipped, not sent in a burst). DJs whose window covers the start go on
//! air at once.
//!
//! Everything runs on the emulator's clock (speed it up with `--speed`), from
//! one task and one queue of what is due next, so an idle DJ costs its
//! world entry and one [`Plan`] (a few dozen bytes, plus its past sessions).
//! The schedule is fixed by the seed (it uses [`crate::rng`], replayable).
//!
//! `GET /_emulator/fleet` shows every DJ's plan and sessions (when each went
//! on air: a benchmark's time-to-detect), `GET /_emulator/ledger?dj=` its
//! ledger.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use crate::events::Kind;
use crate::rng::Rng;
use crate::shared::Shared;
use crate::world::World;

pub mod plan;

pub(crate) use plan::current_or_next;
pub use plan::{usual_start, window, Fleet, FleetState, Plan, Session};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    Start,
    End,
    Event,
}

/// What is due when: (at, fleet index, session number, what).
type Entry = Reverse<(i64, u32, u32, Due)>;

/// Starts `k` now (its window ends at `end`) or plans its next start.
fn settle(w: &mut World, heap: &mut BinaryHeap<Entry>, rng: &mut Rng, k: usize, now: i64) {
    let Some(fleet) = w.fleet.as_ref() else {
        return;
    };
    let config = fleet.config;
    let (dj, usual) = (fleet.plans[k].dj as usize, fleet.plans[k].usual_ms);
    let (start, end) = current_or_next(&config, k, usual, now);
    if start > now {
        if let Some(p) = w.fleet.as_mut().map(|f| &mut f.plans[k]) {
            p.on_air = false;
            p.next_ms = start;
        }
        heap.push(Reverse((start, k as u32, 0, Due::Start)));
        return;
    }
    let name = w.djs[dj].name.clone();
    let live_id = w.live_start(dj, Some(format!("{name} on the fleet")), now);
    if let Some(live) = w.djs[dj].live.as_mut() {
        live.close_air_at = end;
    }
    let Some(p) = w.fleet.as_mut().map(|f| &mut f.plans[k]) else {
        return;
    };
    p.sessions_started += 1;
    p.on_air = true;
    p.next_ms = end;
    p.history.push(Session {
        live_id,
        started_at_ms: now,
        planned_end_ms: end,
        ended_at_ms: None,
    });
    let session = p.sessions_started;
    heap.push(Reverse((end, k as u32, session, Due::End)));
    if let Some(gap) = gap(&config, rng) {
        heap.push(Reverse((now + gap, k as u32, session, Due::Event)));
    }
}

/// The next gap between two events of a live DJ, ms.
fn gap(config: &Fleet, rng: &mut Rng) -> Option<i64> {
    if config.events_per_minute <= 0.0 {
        return None;
    }
    let mean = (60_000.0 / config.events_per_minute).max(1.0) as u64;
    Some((mean / 2 + rng.below(mean.max(1))).max(1) as i64)
}

/// Handles one due entry.
fn due(w: &mut World, heap: &mut BinaryHeap<Entry>, rng: &mut Rng, entry: Entry, now: i64) {
    let Reverse((at, k, session, what)) = entry;
    let k = k as usize;
    let Some(fleet) = w.fleet.as_ref() else {
        return;
    };
    let config = fleet.config;
    let Some(plan) = fleet.plans.get(k) else {
        return;
    };
    let (dj, current) = (plan.dj as usize, plan.sessions_started);
    match what {
        Due::Start => settle(w, heap, rng, k, now),
        Due::End if session == current => {
            w.live_end(dj);
            if let Some(p) = w.fleet.as_mut().map(|f| &mut f.plans[k]) {
                p.on_air = false;
                if let Some(s) = p.history.last_mut() {
                    s.ended_at_ms = Some(now);
                }
            }
            settle(w, heap, rng, k, now);
        }
        Due::Event if session == current && w.djs[dj].live.is_some() => {
            let kind = match rng.below(100) {
                0..50 => Kind::Chat,
                50..80 => Kind::Like,
                80..95 => Kind::Presence,
                _ => Kind::Donation,
            };
            let _ = w.emit(dj, kind, &Value::Null, now);
            if let Some(g) = gap(&config, rng) {
                // Behind by over a minute (a jump of the clock): no backlog.
                let next = if now - (at + g) > 60_000 {
                    now + g
                } else {
                    at + g
                };
                heap.push(Reverse((next, k as u32, session, Due::Event)));
            }
        }
        Due::End | Due::Event => {}
    }
}

fn note_next(w: &mut World, heap: &BinaryHeap<Entry>) {
    if let Some(f) = w.fleet.as_mut() {
        f.next_due_ms = heap.peek().map_or(i64::MAX, |Reverse((at, ..))| *at);
    }
}

/// A fleet planned and started, its queue ready to run.
#[derive(Debug)]
pub struct Runner {
    heap: BinaryHeap<Entry>,
    rng: Rng,
    size: usize,
}

/// Plans the fleet of the world's DJs `first..` and starts those whose
/// window holds now (so `GET /_emulator/fleet` answers from the first
/// request on); [`Runner::run`] plays the rest.
pub fn start(shared: &Shared, config: Fleet, first: usize) -> Runner {
    let config = config.checked();
    let mut heap: BinaryHeap<Entry> = BinaryHeap::new();
    let mut rng = Rng::new(config.seed ^ 0xe7e7);
    let size = {
        let mut w = shared.world();
        let plans: Vec<Plan> = (first..w.djs.len())
            .enumerate()
            .map(|(k, dj)| Plan {
                dj: dj as u32,
                usual_ms: usual_start(&config, k),
                sessions_started: 0,
                on_air: false,
                next_ms: 0,
                history: Vec::new(),
            })
            .collect();
        let size = plans.len();
        w.fleet = Some(FleetState {
            config,
            plans,
            next_due_ms: i64::MAX,
        });
        let now = shared.clock.now_ms();
        for k in 0..size {
            settle(&mut w, &mut heap, &mut rng, k, now);
        }
        note_next(&mut w, &heap);
        w.log(format!(
            "fleet: {size} DJs, about {} % on air, {} events a minute each",
            config.on_air_percent, config.events_per_minute
        ));
        size
    };
    Runner { heap, rng, size }
}

impl Runner {
    /// Plays the fleet until the emulator stops.
    pub async fn run(self, shared: Arc<Shared>) {
        let Runner {
            mut heap,
            mut rng,
            size,
        } = self;
        loop {
            let on_air = shared.world().fleet.as_ref().map_or(0, FleetState::on_air);
            shared.progress.send_if_modified(|p| {
                let changed = p.position != on_air || p.total != size;
                p.position = on_air;
                p.total = size;
                p.waiting = Some(format!("{on_air} of {size} DJs on air"));
                changed
            });
            let Some(Reverse((next, ..))) = heap.peek().copied() else {
                // Nothing will ever be due (no DJs): idle until stopped.
                tokio::time::sleep(Duration::from_secs(3600)).await;
                continue;
            };
            if let Some(d) = shared.clock.real_wait(next, Duration::from_millis(50)) {
                tokio::time::sleep(d).await;
                continue;
            }
            {
                let now = shared.clock.now_ms();
                let mut w = shared.world();
                for _ in 0..2_000 {
                    match heap.peek() {
                        Some(Reverse((at, ..))) if *at <= now => {}
                        _ => break,
                    }
                    if let Some(e) = heap.pop() {
                        due(&mut w, &mut heap, &mut rng, e, now);
                    }
                }
                note_next(&mut w, &heap);
            }
            tokio::task::yield_now().await;
        }
    }
}

/// One DJ's plan as the control API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanJson<'a> {
    dj: &'a str,
    usual_start_ms: u32,
    on_air: bool,
    /// On air: the planned end; else the next planned start.
    next_ms: i64,
    sessions: &'a [Session],
}

/// `GET /_emulator/fleet[?dj=D][&onAir=true]`: the settings, how many are on
/// air, and the plans (all, one DJ's, or those on air).
pub fn json(w: &World, dj: Option<usize>, only_on_air: bool) -> Option<Value> {
    let f = w.fleet.as_ref()?;
    let plans: Vec<PlanJson<'_>> = f
        .plans
        .iter()
        .filter(|p| dj.is_none_or(|d| p.dj as usize == d))
        .filter(|p| !only_on_air || p.on_air)
        .map(|p| PlanJson {
            dj: &w.djs[p.dj as usize].name,
            usual_start_ms: p.usual_ms,
            on_air: p.on_air,
            next_ms: p.next_ms,
            sessions: &p.history,
        })
        .collect();
    Some(json!({
        "djs": f.plans.len(),
        "onAir": f.on_air(),
        "onAirPercent": f.config.on_air_percent,
        "eventsPerMinute": f.config.events_per_minute,
        "seed": f.config.seed,
        "nextDueMs": f.next_due_ms,
        "plans": plans,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::DAY_MS;

    #[test]
    fn about_the_share_asked_is_on_air_at_any_time() {
        let fleet = Fleet::default();
        let n = 10_000;
        let usual: Vec<u32> = (0..n).map(|k| usual_start(&fleet, k)).collect();
        for t in [0, 3 * 3_600_000, DAY_MS * 3 + 123_456, DAY_MS * 40 + 7] {
            let live = (0..n)
                .filter(|&k| current_or_next(&fleet, k, usual[k], t).0 <= t)
                .count();
            assert!((800..1_200).contains(&live), "{live} on air at {t}");
        }
    }

    #[test]
    fn a_window_is_near_the_usual_start_and_a_mean_session_long() {
        let fleet = Fleet::default();
        assert_eq!((fleet.on_air_percent, fleet.events_per_minute), (10, 6.0));
        for k in 0..1_000 {
            let (start, end) = window(&fleet, k, 3_600_000, 3);
            let usual = 3 * DAY_MS + 3_600_000;
            assert!((usual - 1_200_000..=usual + 1_200_000).contains(&start));
            assert!((4_320_000..=12_960_000).contains(&(end - start)));
        }
    }

    #[test]
    fn windows_follow_each_other_without_overlap() {
        let fleet = Fleet {
            on_air_percent: 50,
            ..Fleet::default()
        };
        for k in 0..200 {
            let u = usual_start(&fleet, k);
            let mut t = 0;
            for _ in 0..5 {
                let (s, e) = current_or_next(&fleet, k, u, t);
                assert!(s < e && e > t);
                let (s2, _) = current_or_next(&fleet, k, u, e);
                assert!(s2 >= e, "dj {k}: next window starts before this one ends");
                t = e;
            }
        }
    }
}
