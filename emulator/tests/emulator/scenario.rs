//! Scenarios end to end: a reconnecting client that decodes with the core's
//! `Decoder`, tallies with the core's `Tally`, and must equal the ledger.

use std::collections::BTreeMap;
use std::time::Duration;

use onair::event::{Decoder, EndReason, Event, Item};
use onair::kit::tally::Tally;
use onair_emulator::{Emulator, Scenario};
use serde_json::Value;

use crate::common::*;

async fn scenario_done(env: &Env) -> bool {
    env.ctl_get("/scenario").await["done"] == true
}

async fn live_id(env: &Env, access: &str) -> Option<u64> {
    let r = env.get("/v1/live", access).await;
    if r.status().as_u16() != 200 {
        return None;
    }
    r.json::<Value>().await.unwrap()["liveId"].as_u64()
}

/// The test bot's watchdog: a stream silent this long (emulator time; two
/// heartbeats) is dead — closed and opened again.
const WATCHDOG_MS: i64 = 30_000;

/// A small bot: reconnects by the 4.6 table (fast, for tests), closes a
/// stream silent for [`WATCHDOG_MS`] of emulator time, and tallies per broadcast.
async fn run_bot(env: &Env) -> BTreeMap<u64, Tally> {
    let (mut access, mut refresh) = env.tokens(ALL).await;
    let mut tallies: BTreeMap<u64, Tally> = BTreeMap::new();
    let pause = || tokio::time::sleep(Duration::from_millis(20));
    'outer: while !scenario_done(env).await {
        let Some(live) = live_id(env, &access).await else {
            pause().await;
            continue;
        };
        let mut r = env.open(&access).await;
        match r.status().as_u16() {
            200 => {}
            401 => {
                (access, refresh) = env.refreshed(&refresh).await;
                continue;
            }
            _ => {
                pause().await;
                continue;
            }
        }
        let tally = tallies.entry(live).or_insert_with(|| {
            let mut t = Tally::new();
            t.start_broadcast(live);
            t
        });
        let mut decoder = Decoder::new();
        let mut heard = env.emu.now_ms();
        let mut quiet_since = tokio::time::Instant::now();
        loop {
            let chunk = match tokio::time::timeout(Duration::from_millis(100), r.chunk()).await {
                Err(_) => {
                    // The scenario may be done while its last frames are
                    // still on their way to a bot starved of CPU: it stops
                    // only after a quiet second of real time.
                    if scenario_done(env).await && quiet_since.elapsed() >= Duration::from_secs(1) {
                        break 'outer;
                    }
                    if env.emu.now_ms() - heard >= WATCHDOG_MS {
                        break; // silent too long: close it, reconnect
                    }
                    continue;
                }
                Ok(Ok(Some(c))) => c,
                Ok(_) => break, // dropped: reconnect
            };
            heard = env.emu.now_ms();
            quiet_since = tokio::time::Instant::now();
            let mut input = &chunk[..];
            while let Some(item) = decoder.next_item(&mut input) {
                if let Item::Event { event, .. } = item {
                    if let Event::End(end) = &event {
                        if end.reason == EndReason::TokenExpired {
                            (access, refresh) = env.refreshed(&refresh).await;
                        }
                        continue 'outer;
                    }
                    tally.record(&event);
                }
            }
        }
    }
    tallies
}

fn assert_tally_equals_ledger(tallies: &BTreeMap<u64, Tally>, ledger: &Value) {
    let broadcasts = ledger["broadcasts"].as_array().unwrap();
    assert_eq!(
        broadcasts.len(),
        tallies.len(),
        "one tally per broadcast the bot saw"
    );
    for b in broadcasts {
        let live = b["liveId"].as_u64().unwrap();
        let tally = &tallies[&live];
        let totals = &b["bots"][0]["totals"];
        let people = totals["people"].as_object().unwrap();
        assert_eq!(
            people.len(),
            tally.people().count(),
            "people of {live}; connections {}",
            b["bots"][0]["connections"]
        );
        for (id, p) in people {
            let t = tally
                .person(id)
                .unwrap_or_else(|| panic!("{id} missing from the tally"));
            assert_eq!(p["nickname"].as_str(), t.nickname.as_deref(), "{id}");
            assert_eq!(p["hearts"], t.hearts, "{id}");
            assert_eq!(p["paidHearts"], t.paid_hearts, "{id}");
            assert_eq!(p["donated"], t.donated, "{id}");
            assert_eq!(p["donations"], t.donations, "{id}");
            assert_eq!(p["joins"], t.joins, "{id}");
            assert_eq!(p["chats"], t.chats, "{id}");
        }
        assert_eq!(totals["hearts"], tally.total_hearts());
        assert_eq!(totals["donated"], tally.total_donated());
    }
}

#[tokio::test]
async fn builtin_scenarios_parse_and_busy_has_10k_events() {
    for name in ["quiet", "busy", "faulty"] {
        let s = Scenario::builtin(name).unwrap();
        assert_eq!(s.name, name);
    }
    let busy = Scenario::builtin("busy").unwrap();
    let count: u64 = busy
        .steps
        .iter()
        .filter(|s| s["do"] == "generate")
        .map(|s| s["count"].as_u64().unwrap())
        .sum();
    assert!(count >= 10_000);
    assert!(Scenario::from_json(r#"{"steps":[{"do":"explode"}]}"#).is_err());
}

async fn play(name: &str, speed: f64) -> (Env, BTreeMap<u64, Tally>) {
    let emu = Emulator::builder()
        .seed(9)
        .speed(speed)
        .scenario(Scenario::builtin(name).unwrap())
        .start()
        .await
        .unwrap();
    let env = Env::of(emu);
    // The bot starts after the scenario did: the scenario waits for it.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let tallies = tokio::time::timeout(Duration::from_secs(30), run_bot(&env))
        .await
        .expect("scenario within 30 s");
    env.emu.wait_scenario().await;
    (env, tallies)
}

#[tokio::test]
async fn quiet_scenario_tally_equals_ledger() {
    let (env, tallies) = play("quiet", 50.0).await;
    let ledger = env.ledger().await;
    assert_tally_equals_ledger(&tallies, &ledger);
    let bot = &ledger["broadcasts"][0]["bots"][0];
    assert_eq!(bot["totals"]["attendance"], 3);
    assert_eq!(bot["totals"]["donated"], 1100);
    assert_eq!(bot["totals"]["hearts"], 32);
    assert_eq!(bot["connections"][0]["end"], "LIVE_ENDED");
}

#[tokio::test]
async fn busy_scenario_tally_equals_ledger() {
    let (env, tallies) = play("busy", 200.0).await;
    let ledger = env.ledger().await;
    assert_tally_equals_ledger(&tallies, &ledger);
    let events = &ledger["broadcasts"][0]["bots"][0]["connections"][0]["events"];
    let n: u64 = ["chat", "presence", "like", "donation"]
        .iter()
        .map(|k| events[k].as_u64().unwrap())
        .sum();
    assert_eq!(n, 10_000);
}

#[tokio::test]
async fn faulty_scenario_tally_equals_ledger() {
    let (env, tallies) = play("faulty", 20.0).await;
    let ledger = env.ledger().await;
    assert_tally_equals_ledger(&tallies, &ledger);
    let conns = ledger["broadcasts"][0]["bots"][0]["connections"]
        .as_array()
        .unwrap();
    let ends: Vec<&str> = conns
        .iter()
        .map(|c| c["end"].as_str().unwrap_or("drop"))
        .collect();
    for want in ["drop", "RECONNECT", "TOKEN_EXPIRED", "LIVE_ENDED"] {
        assert!(ends.contains(&want), "{want} in {ends:?}");
    }
    // The frozen connection: open and silent until the bot's watchdog
    // closed it (at the latest, the emulator gave up 50 s after the freeze).
    let stalled: Vec<&Value> = conns.iter().filter(|c| c["stalled"] == true).collect();
    assert_eq!(stalled.len(), 1, "{conns:?}");
    let (at, closed) = (
        stalled[0]["stalledAtMs"].as_i64().unwrap(),
        stalled[0]["closedAtMs"].as_i64().unwrap(),
    );
    assert!(
        (WATCHDOG_MS..=50_000).contains(&(closed - at)),
        "closed {} ms after it froze",
        closed - at
    );
    assert_eq!(stalled[0]["end"], Value::Null);
    assert_eq!(stalled[0]["dropped"], true);
    // The chat during the stall reached no one; the chat after it did.
    let people = &ledger["broadcasts"][0]["bots"][0]["totals"]["people"];
    assert_eq!(people["ufrost01"]["chats"], 1, "{}", people["ufrost01"]);
    assert_eq!(people["ufrost02"]["chats"], 1, "{}", people["ufrost02"]);
    assert_eq!(ledger["broadcasts"].as_array().unwrap().len(), 2);
    let p = env.ctl_get("/scenario").await;
    assert_eq!(
        (p["position"].as_u64(), p["total"].as_u64()),
        (Some(45), Some(45))
    );
}

#[tokio::test]
async fn every_scenario_action_runs_without_error() {
    let text = r#"{"name":"all","steps":[
        {"do":"liveStart","title":"t"},
        {"do":"state","botManager":true},
        {"do":"wire","comments":true},
        {"do":"quota","chatPerSecond":3},
        {"do":"fail","path":"/v1/live","status":500,"times":1},
        {"do":"waitForStream","timeoutMs":5000},
        {"do":"emit","event":"presence","data":{"user":{"id":"a","nickname":"A"}}},
        {"do":"ban","userId":"a"},
        {"do":"emit","event":"chat","data":{"user":{"id":"a","nickname":"A"}}},
        {"do":"leave","userId":"a"},
        {"do":"waitForRequest","path":"/v1/live/chat","count":1,"timeoutMs":5000},
        {"do":"generate","seed":1,"count":50,"intervalMs":1,"people":5},
        {"afterMs":1000,"do":"advance","ms":1000},
        {"do":"streamsEnd","reason":"RECONNECT"},
        {"do":"streamsDrop"},
        {"do":"narrow","scope":"events.chat chat.send"},
        {"do":"disconnect"},
        {"do":"liveEnd"}
    ]}"#;
    let scenario = Scenario::from_json(text).unwrap();
    let emu = Emulator::builder()
        .speed(100.0)
        .scenario(scenario)
        .start()
        .await
        .unwrap();
    let app = emu.app();
    let env = Env {
        base: emu.base_url(),
        http: reqwest::Client::new(),
        client_id: app.client_id,
        secret: app.client_secret,
        redirect: app.redirect_uri,
        emu,
    };
    let (access, _) = env.tokens(ALL).await;
    let _stream = env.stream(&access).await;
    // Chat once the runner waits for it.
    for _ in 0..500 {
        let p = env.ctl_get("/scenario").await;
        if p["waiting"]
            .as_str()
            .is_some_and(|w| w.contains("/v1/live/chat"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(env.chat(&access, "hello").await.status().as_u16(), 204);
    tokio::time::timeout(Duration::from_secs(10), env.emu.wait_scenario())
        .await
        .unwrap();
    let p = env.ctl_get("/scenario").await;
    assert_eq!(p["done"], true);
    assert!(p["error"].is_null(), "{p}");
    assert_eq!(p["position"], 18);
    assert_eq!(env.emu.scenario_progress(), (18, 18, true));
}
