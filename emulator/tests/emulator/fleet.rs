//! The fleet: many DJs on a generated schedule, about one in ten on air at a
//! time, starting and ending on the emulator's clock, events while on air,
//! the schedule and each DJ's ledger readable from the control API.

use std::time::Duration;

use onair_emulator::fleet::Fleet;
use onair_emulator::Emulator;
use serde_json::{json, Value};

use crate::common::*;

/// 2025-11-23T06:40:00Z, the harness's start.
const T0: i64 = 1_763_880_000_000;

async fn fleet_env(djs: usize, fleet: Fleet) -> Env {
    Env::with(Emulator::builder().djs(djs).fleet(fleet)).await
}

/// The fleet (one DJ's plan: the counts are the fleet's) once the runner
/// has handled everything due by now.
async fn caught_up(env: &Env) -> Value {
    for _ in 0..400 {
        let f = env.ctl_get("/fleet?dj=dj-1").await;
        let now = env.ctl_get("/clock").await["nowMs"].as_i64().unwrap();
        let behind = f["nextDueMs"].as_i64().unwrap() <= now;
        if !behind {
            return f;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the fleet did not catch up");
}

fn on_air_names(f: &Value) -> Vec<String> {
    f["plans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["onAir"] == true)
        .map(|p| p["dj"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn about_one_in_ten_is_on_air_and_they_start_and_end_through_the_night() {
    let env = fleet_env(500, Fleet::default()).await;
    caught_up(&env).await;
    let f = env.ctl_get("/fleet").await;
    assert_eq!(f["djs"], 500);
    let first = on_air_names(&f);
    assert!((25..=80).contains(&first.len()), "{} on air", first.len());
    assert_eq!(f["onAir"], first.len());
    // Those on air at the start went on air at the start, and the world
    // agrees: their state is on air with the session's liveId.
    let one = &first[0];
    let plan = env.ctl_get(&format!("/fleet?dj={one}")).await["plans"][0].clone();
    assert_eq!(plan["sessions"][0]["startedAtMs"], T0);
    let state = env.ctl_get(&format!("/state?dj={one}")).await;
    assert_eq!(state["onAir"], true);
    assert_eq!(state["liveId"], plan["sessions"][0]["liveId"]);
    assert_eq!(
        env.ctl_get("/state").await["onAir"],
        false,
        "main is not in the fleet"
    );
    let progress = env.ctl_get("/scenario").await;
    assert_eq!(
        (progress["name"].as_str(), progress["done"].as_bool()),
        (Some("fleet"), Some(false))
    );

    // Six hours of the night, twenty minutes at a time.
    let mut shares = Vec::new();
    for _ in 0..18 {
        env.advance(1_200_000).await;
        let f = caught_up(&env).await;
        shares.push(f["onAir"].as_u64().unwrap());
    }
    assert!(
        shares.iter().all(|n| (25..=80).contains(n)),
        "on air along the night: {shares:?}"
    );
    let f = env.ctl_get("/fleet").await;
    let plans = f["plans"].as_array().unwrap();
    let sessions: Vec<&Value> = plans
        .iter()
        .flat_map(|p| p["sessions"].as_array().unwrap())
        .collect();
    let started_later = sessions
        .iter()
        .filter(|s| s["startedAtMs"].as_i64().unwrap() > T0)
        .count();
    let ended = sessions
        .iter()
        .filter(|s| !s["endedAtMs"].is_null())
        .count();
    // 6 h of 24: about a quarter of the fleet starts (and as many end).
    assert!(
        (70..=180).contains(&started_later),
        "{started_later} started"
    );
    assert!((50..=180).contains(&ended), "{ended} ended");
    for s in &sessions {
        if let Some(end) = s["endedAtMs"].as_i64() {
            let planned = s["plannedEndMs"].as_i64().unwrap();
            assert!(end >= planned && end - planned <= 1_200_000, "{s}");
        }
    }

    // One DJ's ledger: exactly its sessions' broadcasts.
    let dj = plans
        .iter()
        .find(|p| !p["sessions"].as_array().unwrap().is_empty())
        .unwrap();
    let name = dj["dj"].as_str().unwrap();
    let ids: Vec<&Value> = dj["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["liveId"])
        .collect();
    let ledger = env.ctl_get(&format!("/ledger?dj={name}")).await;
    let ledger_ids: Vec<&Value> = ledger["broadcasts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["liveId"])
        .collect();
    assert_eq!(ledger_ids, ids);
    assert!(ledger["broadcasts"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["dj"] == name));
}

#[tokio::test]
async fn a_live_dj_gets_events_at_the_rate_asked() {
    let fleet = Fleet {
        events_per_minute: 12.0,
        ..Fleet::default()
    };
    let env = fleet_env(200, fleet).await;
    caught_up(&env).await;
    let f = env.ctl_get("/fleet?onAir=true").await;
    // The on-air DJ with the most time left.
    let plan = f["plans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["onAir"] == true)
        .max_by_key(|p| p["nextMs"].as_i64().unwrap())
        .unwrap()
        .clone();
    assert!(plan["nextMs"].as_i64().unwrap() > T0 + 600_000);
    let name = plan["dj"].as_str().unwrap();
    let code = env.ctl("/consent", json!({"scope": ALL, "dj": name})).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let v: Value = env.exchange(&code).await.json().await.unwrap();
    let access = v["access_token"].as_str().unwrap().to_owned();
    let mut sse = env.stream(&access).await;
    // Ten emulator minutes, 20 s at a time: about 120 events (12 a minute).
    for _ in 0..30 {
        env.advance(20_000).await;
        caught_up(&env).await;
    }
    // A last chat of our own marks the end of what the fleet sent.
    env.ctl(
        "/emit",
        json!({"event": "chat", "dj": name, "data": {"message": "the end"}}),
    )
    .await;
    let mut events = 0;
    loop {
        let frame = sse.event().await;
        if name_of(&frame) == "chat" && data_of(&frame)["message"] == "the end" {
            break;
        }
        if ["chat", "like", "presence", "donation"].contains(&name_of(&frame)) {
            events += 1;
        }
    }
    assert!(
        (80..=160).contains(&events),
        "{events} events in 10 minutes"
    );
    let ledger = env.ctl_get(&format!("/ledger?dj={name}")).await;
    let counted: u64 = ledger["broadcasts"][0]["bots"][0]["connections"][0]["events"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(
        counted,
        events + 1,
        "the ledger counts them (and the last chat)"
    );
}

#[tokio::test]
async fn no_fleet_is_a_404_and_an_unknown_dj_too() {
    let env = Env::start().await;
    let r = env
        .http
        .get(format!("{}/_emulator/fleet", env.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let fleet = fleet_env(3, Fleet::default()).await;
    let r = fleet
        .http
        .get(format!("{}/_emulator/fleet?dj=dj-9", fleet.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    assert_eq!(
        fleet.ctl_get("/fleet?dj=dj-2").await["plans"][0]["dj"],
        "dj-2"
    );
}
