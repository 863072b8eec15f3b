//! Scenarios: a broadcast timeline in emulator time, replayed at any speed.
//!
//! A scenario is JSON: `{"name", "description", "steps": [step, …]}`. Each
//! step is an object with `"do"` (the action), an optional `"afterMs"`
//! (emulator milliseconds to wait after the previous step, default 0) and an
//! optional `"dj"`. Most actions are control API calls with the step's other
//! fields as the body, so a step means exactly what the call means:
//!
//! | `do` | control call |
//! |---|---|
//! | `liveStart` | `POST /live/start` |
//! | `liveEnd` | `POST /live/end` |
//! | `emit` | `POST /emit` |
//! | `state` | `POST /state` |
//! | `fail` | `POST /fail` |
//! | `quota` | `POST /quota` |
//! | `wire` | `POST /wire` |
//! | `streamsEnd` | `POST /streams/end` |
//! | `streamsDrop` | `POST /streams/drop` |
//! | `streamsStall` | `POST /streams/stall` |
//! | `advance` | `POST /clock/advance` |
//! | `narrow` | `POST /consent/narrow` |
//! | `disconnect` | `POST /integration/disconnect` |
//! | `leave` | `POST /leave` |
//! | `ban` | `POST /ban` |
//!
//! And three of its own:
//!
//! - `waitForStream` `{"count":1,"timeoutMs":60000}`: waits until at least
//!   `count` streams of the DJ are open (real-time timeout; on timeout the
//!   scenario goes on).
//! - `waitForRequest` `{"path":"/v1/live/chat","count":1,"timeoutMs":60000}`:
//!   waits until `count` more requests of `path` have arrived.
//! - `generate` `{"seed":7,"count":10000,"intervalMs":10,"people":400,
//!   "djChatEvery":250}`: a deterministic mix of chat (many scripts, emoji,
//!   ZWJ sequences, astral characters), FREE and PAID hearts with combos,
//!   donations with and without a message, joins and rejoins, and the DJ
//!   chatting; one event every `intervalMs`. When a reader falls behind
//!   (half its queue in use) the generator waits for it instead of cutting it.
//!
//! A scenario is done when `GET /_emulator/scenario` shows `"done":true`:
//! its last step ran and every frame it queued has been handed to its
//! connection (at most 5 s of waiting for a reader that does not read), so
//! the ledger is final.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::control;
use crate::events::Kind;
use crate::events::{person_id, MESSAGES, NICKNAMES};
use crate::rng::Rng;
use crate::shared::Shared;

/// A parsed scenario.
#[derive(Debug, Clone, Deserialize)]
pub struct Scenario {
    /// Name (shown in progress).
    #[serde(default)]
    pub name: String,
    /// What it plays.
    #[serde(default)]
    pub description: String,
    /// The timeline.
    pub steps: Vec<Map<String, Value>>,
}

/// Built-in scenarios: (name, JSON text).
pub const BUILTIN: [(&str, &str); 3] = [
    ("quiet", include_str!("../scenarios/quiet.json")),
    ("busy", include_str!("../scenarios/busy.json")),
    ("faulty", include_str!("../scenarios/faulty.json")),
];

impl Scenario {
    /// Parses scenario JSON.
    ///
    /// ```
    /// use onair_emulator::Scenario;
    /// let s = Scenario::from_json(r#"{"name":"mini","steps":[
    ///     {"do":"liveStart","title":"t"},
    ///     {"do":"waitForStream"},
    ///     {"afterMs":500,"do":"emit","event":"chat","data":{"message":"hi"}},
    ///     {"afterMs":1000,"do":"liveEnd"}]}"#).unwrap();
    /// assert_eq!(s.steps.len(), 4);
    /// assert!(Scenario::from_json(r#"{"steps":[{"afterMs":1}]}"#).is_err());
    /// ```
    ///
    /// # Errors
    /// A message when the text is not a scenario or a step has no `"do"`.
    pub fn from_json(text: &str) -> Result<Scenario, String> {
        let s: Scenario = serde_json::from_str(text).map_err(|e| format!("scenario: {e}"))?;
        for (i, step) in s.steps.iter().enumerate() {
            match step.get("do").and_then(Value::as_str) {
                Some(action) if action_path(action).is_some() || OWN.contains(&action) => {}
                Some(action) => return Err(format!("step {i}: unknown action {action:?}")),
                None => return Err(format!("step {i}: missing \"do\"")),
            }
        }
        Ok(s)
    }

    /// A built-in scenario by name (`quiet`, `busy`, `faulty`).
    pub fn builtin(name: &str) -> Option<Scenario> {
        BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, text)| Scenario::from_json(text).ok())
    }
}

const OWN: [&str; 3] = ["waitForStream", "waitForRequest", "generate"];

fn action_path(action: &str) -> Option<&'static str> {
    Some(match action {
        "liveStart" => "/live/start",
        "liveEnd" => "/live/end",
        "emit" => "/emit",
        "state" => "/state",
        "fail" => "/fail",
        "quota" => "/quota",
        "wire" => "/wire",
        "streamsEnd" => "/streams/end",
        "streamsDrop" => "/streams/drop",
        "streamsStall" => "/streams/stall",
        "advance" => "/clock/advance",
        "narrow" => "/consent/narrow",
        "disconnect" => "/integration/disconnect",
        "leave" => "/leave",
        "ban" => "/ban",
        _ => return None,
    })
}

async fn sleep_until(shared: &Shared, target_ms: i64) {
    while let Some(d) = shared.clock.real_wait(target_ms, Duration::from_millis(50)) {
        tokio::time::sleep(d).await;
    }
}

fn num(step: &Map<String, Value>, key: &str, default: u64) -> u64 {
    step.get(key).and_then(Value::as_u64).unwrap_or(default)
}

/// Plays `scenario` to the end, updating progress.
pub async fn run(shared: Arc<Shared>, scenario: Scenario) {
    run_for_djs(shared, scenario, &[]).await;
}

/// One DJ's copy of a scenario's timeline (see [`run_for_djs`]).
#[derive(Debug, Clone)]
struct Copy {
    /// The DJ addressed by steps without `"dj"` (`None`: the default DJ,
    /// and every step played as written).
    dj: Option<String>,
    /// Emulator ms to wait before the first step.
    offset_ms: i64,
    /// Mixed into every `generate` seed (0: the seeds as written).
    salt: u64,
}

/// Steps a DJ's copy leaves to the default DJ's timeline: they act on the
/// whole emulator (quotas, faults, the clock), so one play is enough.
const APP_WIDE: [&str; 3] = ["quota", "fail", "advance"];

/// A copy's start offset and seed salt: fixed by its number, different
/// for each, so that the copies are not in lockstep.
fn copy_of(n: usize, dj: &str) -> Copy {
    let mut rng = Rng::new(0x5eed_0000_0000 ^ n as u64);
    Copy {
        dj: Some(dj.to_owned()),
        offset_ms: 250 + rng.below(4_750) as i64,
        salt: rng.next_u64() | 1,
    }
}

/// Plays `scenario` for the default DJ as written and, at the same time,
/// once for each DJ of `djs` (a hosted service's load: one app, many DJs,
/// each with its own broadcast). In a DJ's copy a step without `"dj"`
/// addresses that DJ; steps naming a DJ and the app-wide steps (`quota`,
/// `fail`, `advance`) are played by the default DJ's timeline only; the
/// copy starts a fixed 0.25–5 s of emulator time later and its `generate`
/// seeds are mixed with a number of its own, so no two DJs are in
/// lockstep. Progress counts the steps of every timeline; done when all are.
pub async fn run_for_djs(shared: Arc<Shared>, scenario: Scenario, djs: &[String]) {
    let per = scenario.steps.len();
    let total = per * (djs.len() + 1);
    shared.progress.send_replace(crate::shared::Progress {
        name: Some(scenario.name.clone()),
        position: 0,
        total,
        done: false,
        waiting: None,
        error: None,
    });
    let scenario = Arc::new(scenario);
    let mut copies = tokio::task::JoinSet::new();
    for (i, dj) in djs.iter().enumerate() {
        let (sh, sc, copy) = (
            Arc::clone(&shared),
            Arc::clone(&scenario),
            copy_of(i + 1, dj),
        );
        copies.spawn(async move { timeline(&sh, &sc, &copy).await });
    }
    let main = Copy {
        dj: None,
        offset_ms: 0,
        salt: 0,
    };
    timeline(&shared, &scenario, &main).await;
    while copies.join_next().await.is_some() {}
    // Done means the ledger is final: wait (briefly) until every frame the
    // scenario queued has been handed to its connection.
    shared
        .progress
        .send_modify(|p| p.waiting = Some("streams to drain".to_owned()));
    let deadline = Instant::now() + Duration::from_secs(5);
    while !shared.world().settled() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    shared.progress.send_modify(|p| {
        p.position = p.total;
        p.done = true;
        p.waiting = None;
    });
    shared
        .world()
        .log(format!("scenario {} done", scenario.name));
}

/// Plays one timeline: the scenario as written (`copy.dj` `None`) or a DJ's copy.
async fn timeline(shared: &Shared, scenario: &Scenario, copy: &Copy) {
    let mut at = shared.clock.now_ms().saturating_add(copy.offset_ms);
    for (i, step) in scenario.steps.iter().enumerate() {
        let action = step.get("do").and_then(Value::as_str).unwrap_or("");
        let skipped = copy.dj.is_some() && (APP_WIDE.contains(&action) || step.contains_key("dj"));
        let result = if skipped {
            Ok(())
        } else {
            let after = step
                .get("afterMs")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                .max(0);
            at = at.max(shared.clock.now_ms() - 5).saturating_add(after);
            sleep_until(shared, at).await;
            let dj = step
                .get("dj")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| copy.dj.clone());
            let r = play(shared, i, action, step, dj, copy.salt).await;
            at = shared.clock.now_ms();
            r
        };
        shared.progress.send_modify(|p| {
            p.position += 1;
            p.waiting = None;
            if let Err(e) = &result {
                p.error.get_or_insert(e.clone());
            }
        });
        if let Err(e) = result {
            shared.world().log(format!("scenario: {e}"));
        }
    }
}

/// Plays one step for `dj` (`None`: the default DJ).
async fn play(
    shared: &Shared,
    i: usize,
    action: &str,
    step: &Map<String, Value>,
    dj: Option<String>,
    salt: u64,
) -> Result<(), String> {
    match action {
        "waitForStream" => {
            wait_for_stream(
                shared,
                dj.as_deref(),
                num(step, "count", 1) as usize,
                num(step, "timeoutMs", 60_000),
            )
            .await;
            Ok(())
        }
        "waitForRequest" => {
            let path = step
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or(crate::paths::Endpoint::Live.path())
                .to_owned();
            wait_for_request(
                shared,
                &path,
                num(step, "count", 1),
                num(step, "timeoutMs", 60_000),
            )
            .await;
            Ok(())
        }
        "generate" => generate(shared, dj.as_deref(), step, salt).await,
        _ => {
            let mut body = step.clone();
            body.remove("do");
            body.remove("afterMs");
            if let Some(dj) = dj {
                body.insert("dj".to_owned(), Value::String(dj));
            }
            let path = action_path(action).unwrap_or("/");
            let reply = control::handle(
                shared,
                "POST",
                path,
                None,
                Value::Object(body).to_string().as_bytes(),
            );
            if reply.status == 200 {
                Ok(())
            } else {
                Err(format!("step {i} ({action}) answered {}", reply.status))
            }
        }
    }
}

async fn wait_for_stream(shared: &Shared, dj: Option<&str>, count: usize, timeout_ms: u64) {
    shared
        .progress
        .send_modify(|p| p.waiting = Some(format!("{count} open stream(s)")));
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    loop {
        {
            let w = shared.world();
            let Ok(d) = w.dj(dj) else { return };
            if w.open_streams(d) >= count {
                return;
            }
        }
        if Instant::now() >= deadline {
            shared
                .world()
                .log("scenario: waitForStream timed out; going on".to_owned());
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn wait_for_request(shared: &Shared, path: &str, count: u64, timeout_ms: u64) {
    shared
        .progress
        .send_modify(|p| p.waiting = Some(format!("{count} request(s) of {path}")));
    let start = shared.world().path_counts.get(path).copied().unwrap_or(0);
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    while shared.world().path_counts.get(path).copied().unwrap_or(0) < start + count {
        if Instant::now() >= deadline {
            shared.world().log(format!(
                "scenario: waitForRequest {path} timed out; going on"
            ));
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One generated event: (kind, data) — plus a listener leaving before a rejoin.
fn generated(
    rng: &mut Rng,
    n: u64,
    people: u64,
    dj_chat_every: u64,
    joined: &mut [bool],
) -> (Option<String>, Kind, Value) {
    if dj_chat_every > 0 && n.is_multiple_of(dj_chat_every) {
        let msg = MESSAGES[rng.below(MESSAGES.len() as u64) as usize];
        return (
            None,
            Kind::Chat,
            json!({"isDj": true, "message": format!("DJ: {msg}")}),
        );
    }
    let p = rng.below(people);
    let id = person_id(p);
    let nickname: Value = if p.is_multiple_of(17) {
        Value::Null
    } else {
        json!(NICKNAMES[(p % NICKNAMES.len() as u64) as usize])
    };
    let user = json!({"id": id, "nickname": nickname});
    let idx = p as usize;
    if !joined[idx] {
        joined[idx] = true;
        return (
            None,
            Kind::Presence,
            json!({"user": user, "isManager": p.is_multiple_of(50)}),
        );
    }
    let roll = rng.below(100);
    match roll {
        0..=39 => {
            let mut msg = MESSAGES[rng.below(MESSAGES.len() as u64) as usize].to_owned();
            if rng.chance(10) {
                msg = "🎉".repeat(1 + rng.below(90) as usize);
            }
            (None, Kind::Chat, json!({"user": user, "message": msg}))
        }
        40..=59 => (
            None,
            Kind::Like,
            json!({"user": user, "type": "FREE", "amount": 1, "combo": null}),
        ),
        60..=74 => {
            let amount = [1, 5, 10, 50][rng.below(4) as usize];
            let extra = if rng.chance(20) { rng.below(5) + 1 } else { 0 };
            let combo = 1 + rng.below(10);
            (
                None,
                Kind::Like,
                json!({"user": user, "type": "PAID", "amount": amount, "extraAmount": extra, "combo": combo}),
            )
        }
        75..=87 => {
            let amount = [10, 100, 500, 1000, 10_000][rng.below(5) as usize];
            let message: Value = if rng.chance(50) {
                json!(MESSAGES[rng.below(MESSAGES.len() as u64) as usize])
            } else {
                Value::Null
            };
            (
                None,
                Kind::Donation,
                json!({"user": user, "amount": amount, "message": message}),
            )
        }
        _ => {
            // A rejoin: the person leaves (no event) and joins again.
            (Some(id), Kind::Presence, json!({"user": user}))
        }
    }
}

async fn generate(
    shared: &Shared,
    dj: Option<&str>,
    step: &Map<String, Value>,
    salt: u64,
) -> Result<(), String> {
    let seed = num(step, "seed", 7) ^ salt;
    let count = num(step, "count", 1000);
    let interval = num(step, "intervalMs", 10) as i64;
    let people = num(step, "people", 400).max(1);
    let dj_chat_every = num(step, "djChatEvery", 250);
    let mut rng = Rng::new(seed);
    let mut joined = vec![false; people as usize];
    let start = shared.clock.now_ms();
    let mut n = 0u64;
    while n < count {
        {
            let now = shared.clock.now_ms();
            let mut w = shared.world();
            let d = w.dj(dj)?;
            let mut batch = 0;
            while n < count
                && start + (n as i64) * interval <= now
                && batch < 200
                && !w.streams_backed_up(d)
            {
                let (leave, kind, data) =
                    generated(&mut rng, n, people, dj_chat_every, &mut joined);
                if let Some(id) = leave {
                    w.leave(d, &id);
                }
                if let Err(e) = w.emit(d, kind, &data, now) {
                    return Err(format!("generate: {e}"));
                }
                n += 1;
                batch += 1;
            }
        }
        shared
            .progress
            .send_modify(|p| p.waiting = Some(format!("generated {n} of {count} events")));
        if n < count {
            let backed_up = {
                let w = shared.world();
                w.dj(dj).is_ok_and(|d| w.streams_backed_up(d))
            };
            if backed_up {
                // Readers are behind: give them real time to catch up.
                tokio::time::sleep(Duration::from_millis(5)).await;
            } else {
                sleep_until(shared, start + (n as i64) * interval).await;
            }
        }
    }
    Ok(())
}
