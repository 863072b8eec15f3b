//! Spec 3.3, 4.6, 7.2: the event stream, its frames and every reconnection outcome.

use serde_json::{json, Value};

use crate::common::*;

#[tokio::test]
async fn open_is_200_event_stream_and_frames_are_exactly_4_6() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let r = env.open(&access).await;
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    assert!(r.headers().get("content-encoding").is_none());
    let mut s = Sse {
        resp: r,
        buf: Vec::new(),
    };
    let now = env.ctl_get("/clock").await["nowMs"].as_i64().unwrap();
    let v = env
        .emit("chat", json!({"user": {"id": "u1", "nickname": "Mina"}, "message": "hi", "sentTime": "2025-11-23T06:40:00Z"}))
        .await;
    let id = v["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with(&format!("{now}-")), "{id}");
    assert_eq!(v["delivered"], 1);
    let f = s.event().await;
    assert_eq!(
        f,
        format!("id:{id}\nevent:chat\ndata:{{\"user\":{{\"id\":\"u1\",\"nickname\":\"Mina\"}},\"isDj\":false,\"message\":\"hi\",\"sentTime\":\"2025-11-23T06:40:00Z\"}}\n\n")
    );
    // A second event in the same millisecond gets the next offset.
    let (ms, n) = id.split_once('-').unwrap();
    let n: u64 = n.parse().unwrap();
    assert_eq!(
        env.emit("like", json!({})).await["id"],
        format!("{ms}-{}", n + 1)
    );
}

#[tokio::test]
async fn heartbeat_every_15_s_of_emulator_time() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let mut s = env.stream(&access).await;
    assert!(s.quiet(100).await);
    env.advance(15_000).await;
    assert_eq!(s.next().await, Next::Frame(":heartbeat\n\n".into()));
}

#[tokio::test]
async fn live_ended_is_the_last_frame_and_the_stream_closes() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let mut s = env.stream(&access).await;
    assert_eq!(env.ctl("/live/end", json!({})).await["ended"], 1);
    assert_eq!(
        s.next().await,
        Next::Frame("event:end\ndata:{\"reason\":\"LIVE_ENDED\"}\n\n".into())
    );
    assert_eq!(s.next().await, Next::Closed);
    let b = env.bot_ledger().await;
    assert_eq!(b["connections"][0]["end"], "LIVE_ENDED");
    assert_eq!(b["connections"][0]["dropped"], false);
    // Next attempt: not on air.
    assert_eq!(env.open(&access).await.status().as_u16(), 404);
}

#[tokio::test]
async fn token_expired_when_the_access_token_expires_mid_stream() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, refresh) = env.tokens(ALL).await;
    let mut s = env.stream(&access).await;
    env.advance(3_599_000).await;
    assert_eq!(s.next().await, Next::Frame(":heartbeat\n\n".into()));
    env.advance(1_000).await;
    assert_eq!(
        s.event().await,
        "event:end\ndata:{\"reason\":\"TOKEN_EXPIRED\"}\n\n"
    );
    assert_eq!(s.next().await, Next::Closed);
    // Refresh and reconnect at once.
    let v: Value = env
        .oauth(
            "/v1/oauth/token",
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        env.open(v["access_token"].as_str().unwrap())
            .await
            .status()
            .as_u16(),
        200
    );
}

#[tokio::test]
async fn reconnect_closes_only_this_connection() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let mut s = env.stream(&access).await;
    env.ctl("/streams/end", json!({"reason": "RECONNECT"}))
        .await;
    assert_eq!(
        s.event().await,
        "event:end\ndata:{\"reason\":\"RECONNECT\"}\n\n"
    );
    assert_eq!(s.next().await, Next::Closed);
    // Same token, reconnect immediately.
    let mut s = env.stream(&access).await;
    env.emit("chat", json!({})).await;
    assert_eq!(name_of(&s.event().await), "chat");
}

#[tokio::test]
async fn drop_cuts_without_an_end_frame() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let mut s = env.stream(&access).await;
    env.emit("chat", json!({})).await;
    assert_eq!(env.ctl("/streams/drop", json!({})).await["dropped"], 1);
    assert_eq!(name_of(&s.event().await), "chat");
    assert_eq!(s.next().await, Next::Broken);
    let b = env.closed_connection().await;
    assert_eq!(b["connections"][0]["dropped"], true);
    assert!(b["connections"][0]["end"].is_null());
    assert!(b["connections"][0]["closedAtMs"].is_i64());
}

#[tokio::test]
async fn no_events_permission_is_403_without_detail_code() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens("live.read chat.send").await;
    let r = env.open(&access).await;
    assert_eq!(r.status().as_u16(), 403);
    assert_eq!(
        r.headers()["content-type"],
        "text/event-stream;charset=UTF-8"
    );
    let body = r.text().await.unwrap();
    let v: Value = serde_json::from_str(body.trim().strip_prefix("data:").unwrap()).unwrap();
    assert_eq!(v["status"], 403);
    assert!(v.get("detailCode").is_none());
}

#[tokio::test]
async fn bad_token_on_the_stream_is_401_sse_body() {
    let env = Env::start().await;
    env.live_start().await;
    let r = env.open("nope").await;
    assert_eq!(r.status().as_u16(), 401);
    assert!(r.text().await.unwrap().starts_with("data:{\"status\":401"));
}

#[tokio::test]
async fn events_are_filtered_by_permission() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens("events.donation").await;
    let mut s = env.stream(&access).await;
    assert_eq!(env.emit("chat", json!({})).await["delivered"], 0);
    assert_eq!(env.emit("like", json!({})).await["delivered"], 0);
    assert_eq!(env.emit("donation", json!({})).await["delivered"], 1);
    assert_eq!(name_of(&s.event().await), "donation");
}

#[tokio::test]
async fn presence_only_for_a_bot_that_was_manager_when_it_connected() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let mut s = env.stream(&access).await;
    env.ctl("/state", json!({"botManager": true})).await;
    assert_eq!(
        env.emit("presence", json!({})).await["delivered"],
        0,
        "appointment applies from the next connection"
    );
    env.ctl("/streams/end", json!({"reason": "RECONNECT"}))
        .await;
    assert_eq!(
        s.event().await,
        "event:end\ndata:{\"reason\":\"RECONNECT\"}\n\n"
    );
    let mut s = env.stream(&access).await;
    env.emit("presence", json!({"user": {"id": "p1", "nickname": null}}))
        .await;
    let f = s.event().await;
    assert_eq!(name_of(&f), "presence");
    let d = data_of(&f);
    assert_eq!(d["type"], "JOIN");
    assert!(d["user"]["nickname"].is_null());
    for k in ["fanRank", "isManager", "favoriteTemperature", "time"] {
        assert!(d.get(k).is_some(), "{k}");
    }
}

#[tokio::test]
async fn the_bots_own_chat_and_join_are_never_echoed_but_others_see_them() {
    let env = Env::start().await;
    env.live_start().await;
    env.ctl("/state", json!({"botManager": true})).await;
    let (a1, _) = env.tokens(ALL).await;
    let other = env.ctl("/apps", json!({})).await;
    let code = env
        .ctl(
            "/consent",
            json!({"scope": ALL, "clientId": other["clientId"]}),
        )
        .await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = form(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", other["redirectUri"].as_str().unwrap()),
        ("client_id", other["clientId"].as_str().unwrap()),
        ("client_secret", other["clientSecret"].as_str().unwrap()),
    ]);
    let v: Value = env
        .http
        .post(format!("{}/v1/oauth/token", env.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let a2 = v["access_token"].as_str().unwrap().to_owned();
    let mut s1 = env.stream(&a1).await;
    let mut s2 = env.stream(&a2).await;
    // Bot 1 sees bot 2 join; bot 2 never sees its own join.
    assert_eq!(
        data_of(&s1.event().await)["user"]["nickname"],
        "onair bot 2"
    );
    assert_eq!(env.chat(&a1, "from bot 1").await.status().as_u16(), 204);
    let f = s2.event().await;
    assert_eq!(data_of(&f)["message"], "from bot 1");
    assert!(s1.quiet(150).await, "no echo of the bot's own chat");
}

#[tokio::test]
async fn kick_cuts_the_stream_and_prevents_joining() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let mut s = env.stream(&access).await;
    env.ctl("/state", json!({"botKicked": true})).await;
    assert_eq!(s.next().await, Next::Broken);
    let r = env.open(&access).await;
    assert_eq!(r.status().as_u16(), 403);
    assert!(r.text().await.unwrap().contains("OAPI_MNGR_0209"));
    let (st, p) = problem(env.chat(&access, "hi").await).await;
    assert_eq!(
        (st, p["detailCode"].as_str()),
        (403, Some("OAPI_MNGR_0209"))
    );
}

#[tokio::test]
async fn every_wire_variation_decodes_with_the_core() {
    use onair::event::{Decoder, Event, Item};
    let env = Env::start().await;
    env.live_start().await;
    env.ctl(
        "/wire",
        json!({"lineEnding": "CR", "chunkBytes": 3, "bom": true, "spaceAfterColon": true, "comments": true, "unknownFields": true, "unknownEvents": true, "fractionDigits": 0}),
    )
    .await;
    let (access, _) = env.tokens(ALL).await;
    let mut r = env.open(&access).await;
    env.emit("chat", json!({"message": "a 👨‍👩‍👧 b"})).await;
    env.emit("donation", json!({"amount": 500})).await;
    env.ctl("/streams/end", json!({"reason": "RECONNECT"}))
        .await;
    let mut raw = Vec::new();
    let mut chunks = 0;
    while let Some(c) = r.chunk().await.unwrap() {
        chunks += 1;
        raw.extend_from_slice(&c);
    }
    assert!(
        chunks > 20,
        "written a few bytes per write ({chunks} chunks)"
    );
    assert!(raw.starts_with("\u{feff}".as_bytes()));
    let text = String::from_utf8_lossy(&raw);
    let sent = text.split("\"sentTime\":\"").nth(1).unwrap();
    assert_eq!(
        sent.find('"'),
        Some(20),
        "no fractional digits: {}",
        &sent[..21]
    );
    let mut d = Decoder::new();
    let mut input = &raw[..];
    let mut names = Vec::new();
    while let Some(item) = d.next_item(&mut input) {
        match item {
            Item::Event {
                event: Event::Chat(c),
                ..
            } => {
                assert_eq!(c.message, "a 👨‍👩‍👧 b");
                names.push("chat");
            }
            Item::Event {
                event: Event::Donation(dn),
                ..
            } => {
                assert_eq!(dn.amount, 500);
                names.push("donation");
            }
            Item::Event {
                event: Event::End(_),
                ..
            } => names.push("end"),
            Item::Unknown { .. } => names.push("unknown"),
            _ => {}
        }
    }
    assert_eq!(names, ["unknown", "chat", "unknown", "donation", "end"]);
}

#[tokio::test]
async fn several_djs_are_kept_apart() {
    let env = Env::start().await;
    let v = env
        .ctl("/consent", json!({"scope": ALL, "dj": "second"}))
        .await;
    let code = v["code"].as_str().unwrap().to_owned();
    let t: Value = env.exchange(&code).await.json().await.unwrap();
    let a2 = t["access_token"].as_str().unwrap().to_owned();
    let (a1, _) = env.tokens(ALL).await;
    env.live_start().await;
    assert_eq!(
        env.open(&a2).await.status().as_u16(),
        404,
        "the second DJ is not on air"
    );
    let l2 = env.ctl("/live/start", json!({"dj": "second"})).await["liveId"]
        .as_u64()
        .unwrap();
    let mut s1 = env.stream(&a1).await;
    let mut s2 = env.stream(&a2).await;
    env.ctl(
        "/emit",
        json!({"dj": "second", "event": "chat", "data": {"message": "to second"}}),
    )
    .await;
    assert_eq!(data_of(&s2.event().await)["message"], "to second");
    assert!(s1.quiet(100).await);
    let v: Value = env.get("/v1/live", &a2).await.json().await.unwrap();
    assert_eq!(v["liveId"], l2);
    let st = env.ctl_get("/state?dj=second").await;
    assert_eq!(st["dj"], "second");
    assert_eq!(st["openStreams"], 1);
}
