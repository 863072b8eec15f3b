//! A frozen stream (`POST /_emulator/streams/stall`): open, silent (no
//! event, heartbeat or end frame), nothing after the freeze counted; it ends
//! when the bot closes it, when the emulator gives up (`forMs`), on a drop,
//! or at shutdown.

use std::time::Duration;

use onair_emulator::Emulator;
use serde_json::{json, Value};

use crate::common::*;

/// The ledger's connections of the first bot of the last broadcast.
async fn connections(env: &Env) -> Vec<Value> {
    env.bot_ledger().await["connections"]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn a_stalled_stream_stays_open_and_silent_and_nothing_after_is_counted() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let mut s = env.stream(&access).await;
    env.emit("chat", json!({"user": {"id": "u1", "nickname": "A"}}))
        .await;
    s.event().await;
    let at = env.ctl_get("/clock").await["nowMs"].as_i64().unwrap();
    assert_eq!(
        env.ctl("/streams/stall", json!({})).await,
        json!({"stalled": 1})
    );
    let state = env.ctl_get("/state").await;
    assert_eq!(state["openStreams"], 0);
    assert_eq!(state["stalledStreams"], 1);
    // Nothing reaches it: events (none delivered), heartbeats, end frames.
    let e = env.emit("like", json!({"user": {"id": "u2"}})).await;
    assert_eq!(e["delivered"], 0);
    env.advance(60_000).await; // four heartbeats' worth
    assert_eq!(
        env.ctl("/streams/end", json!({"reason": "RECONNECT"}))
            .await,
        json!({"ended": 0})
    );
    env.ctl("/live/end", json!({})).await;
    assert!(s.quiet(300).await, "a stalled stream writes nothing");
    let c = &connections(&env).await[0];
    assert_eq!(c["stalled"], true);
    assert_eq!(c["stalledAtMs"], at);
    assert_eq!(c["closedAtMs"], Value::Null, "still open: {c}");
    assert_eq!(c["frames"], 1);
    assert_eq!(c["events"]["like"], 0);
    // The bot's watchdog closes it: the close is recorded as usual.
    drop(s);
    let b = env.closed_connection().await;
    let c = &b["connections"][0];
    assert_eq!(c["closedAtMs"], at + 60_000);
    assert_eq!(c["dropped"], true);
    assert_eq!(c["end"], Value::Null);
    assert_eq!(b["totals"]["people"].as_object().unwrap().len(), 1);
    assert_eq!(env.ctl_get("/state").await["stalledStreams"], 0);
}

#[tokio::test]
async fn a_stall_picks_the_open_streams_of_one_client_at_most_count() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let other = env
        .ctl("/apps", json!({"redirectUri": "http://127.0.0.1/other"}))
        .await;
    let other_id = other["clientId"].as_str().unwrap().to_owned();
    let code = env
        .ctl(
            "/consent",
            json!({"clientId": other_id, "redirectUri": "http://127.0.0.1/other"}),
        )
        .await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = env
        .http
        .post(format!("{}/v1/oauth/token", env.base))
        .basic_auth(&other_id, other["clientSecret"].as_str())
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "http://127.0.0.1/other"),
        ])
        .send()
        .await
        .unwrap();
    let other_access = r.json::<Value>().await.unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut first = env.stream(&access).await;
    let mut second = env.stream(&access).await;
    let mut theirs = env.stream(&other_access).await;
    let stalled = env
        .ctl(
            "/streams/stall",
            json!({"clientId": env.client_id, "count": 1}),
        )
        .await;
    assert_eq!(stalled, json!({"stalled": 1}));
    env.emit("chat", json!({"user": {"id": "u1"}})).await;
    // The oldest of that client froze; its newer one and the other app's go on.
    assert!(first.quiet(200).await);
    assert_eq!(name_of(&second.event().await), "chat");
    assert_eq!(name_of(&theirs.event().await), "chat");
    assert_eq!(
        env.ctl_status("/streams/stall", json!({"clientId": "nobody"}))
            .await,
        404
    );
    assert_eq!(
        env.ctl_status("/streams/stall", json!({"forMs": -1})).await,
        400
    );
}

#[tokio::test]
async fn the_emulator_gives_up_on_a_stalled_stream_after_for_ms() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let mut s = env.stream(&access).await;
    env.ctl("/streams/stall", json!({"forMs": 30_000})).await;
    env.advance(29_999).await;
    assert!(s.quiet(200).await);
    env.advance(1).await;
    assert_eq!(s.next().await, Next::Broken, "cut, no end frame");
    let b = env.closed_connection().await;
    let c = &b["connections"][0];
    assert_eq!(
        c["closedAtMs"].as_i64(),
        c["stalledAtMs"].as_i64().map(|t| t + 30_000)
    );
    assert_eq!(c["dropped"], true);
}

#[tokio::test]
async fn a_drop_cuts_a_stalled_stream_and_shutdown_ends_it() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let mut s = env.stream(&access).await;
    env.ctl("/streams/stall", json!({})).await;
    assert_eq!(
        env.ctl("/streams/drop", json!({})).await,
        json!({"dropped": 1})
    );
    assert_eq!(s.next().await, Next::Broken);
    // Shutdown lets go of a stalled stream too, at once.
    let mut s = env.stream(&access).await;
    env.ctl("/streams/stall", json!({})).await;
    let started = std::time::Instant::now();
    env.emu.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(s.next().await, Next::Broken);
}

#[tokio::test]
async fn a_stall_step_freezes_the_bot_until_its_watchdog_reconnects() {
    // The scenario step of the same effect: the reconnect is awaited, and the
    // chat in between is counted for no one.
    let text = r#"{"name":"stall","steps":[
        {"do":"liveStart"},
        {"do":"waitForStream","timeoutMs":5000},
        {"do":"streamsStall","count":1},
        {"do":"emit","event":"chat","data":{"user":{"id":"u1","nickname":"A"}}},
        {"do":"waitForStream","timeoutMs":5000},
        {"do":"emit","event":"chat","data":{"user":{"id":"u2","nickname":"B"}}},
        {"do":"liveEnd"}
    ]}"#;
    let env =
        Env::with(Emulator::builder().scenario(onair_emulator::Scenario::from_json(text).unwrap()))
            .await;
    let (access, _) = env.tokens(ALL).await;
    let mut first = env.stream(&access).await;
    // Wait for the freeze, then "the watchdog": close and reconnect.
    for _ in 0..200 {
        if env.ctl_get("/state").await["stalledStreams"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(first.quiet(100).await);
    drop(first);
    let mut second = env.stream(&access).await;
    assert_eq!(data_of(&second.event().await)["user"]["id"], "u2");
    assert!(second.event().await.contains("LIVE_ENDED"));
    tokio::time::timeout(Duration::from_secs(5), env.emu.wait_scenario())
        .await
        .unwrap();
    let b = env.bot_ledger().await;
    let people = b["totals"]["people"].as_object().unwrap();
    assert_eq!(people.keys().collect::<Vec<_>>(), ["u2"]);
    let conns = b["connections"].as_array().unwrap();
    assert_eq!(conns[0]["stalled"], true);
    assert_eq!(conns[1]["stalled"], false);
    assert_eq!(env.ctl_get("/scenario").await["error"], Value::Null);
}

#[tokio::test]
async fn a_frame_counted_before_the_freeze_is_written_whole() {
    // One byte per write: the freeze may land while a frame is half written.
    // What the ledger counted and what the reader got must still agree.
    let env = Env::start().await;
    env.live_start().await;
    env.ctl("/wire", json!({"chunkBytes": 1})).await;
    let (access, _) = env.tokens(ALL).await;
    let mut s = env.stream(&access).await;
    let long = "a long line ".repeat(16);
    for _ in 0..3 {
        env.emit("chat", json!({"user": {"id": "u1"}, "message": long}))
            .await;
    }
    env.ctl("/streams/stall", json!({})).await;
    // Everything that arrives until 300 ms of silence.
    let mut got = Vec::new();
    while let Ok(Ok(Some(chunk))) =
        tokio::time::timeout(Duration::from_millis(300), s.resp.chunk()).await
    {
        got.extend_from_slice(&chunk);
    }
    let text = String::from_utf8(got).unwrap();
    assert!(
        text.is_empty() || text.ends_with("\n\n"),
        "half a frame: {text:?}"
    );
    let frames = text.matches("event:chat").count();
    let c = &connections(&env).await[0];
    assert_eq!(c["frames"], frames, "{c}");
    assert_eq!(c["events"]["chat"], frames);
}
