//! The control API contract: every call answers JSON of the documented shape.

use serde_json::{json, Value};

use crate::common::*;

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

#[tokio::test]
async fn control_api_shapes_hold() {
    let env = Env::start().await;
    let c = env
        .ctl(
            "/consent",
            json!({"scope": ALL, "redirectUri": env.redirect}),
        )
        .await;
    assert!(c["code"].is_string());
    assert_eq!(c["clientId"], env.client_id.as_str());
    let l = env.ctl("/live/start", json!({"title": "t"})).await;
    assert!(l["liveId"].is_u64());
    let (access, _) = env.tokens(ALL).await;
    let mut s = env.stream(&access).await;
    let e = env.ctl("/emit", json!({"event": "chat", "data": {}})).await;
    assert_eq!(keys(&e), ["delivered", "id"]);
    assert!(e["id"].as_str().unwrap().contains('-'));
    s.event().await;
    assert_eq!(
        env.ctl("/streams/end", json!({"reason": "RECONNECT"}))
            .await,
        json!({"ended": 1})
    );
    assert_eq!(
        env.ctl("/streams/drop", json!({})).await,
        json!({"dropped": 0})
    );
    let a = env.ctl("/clock/advance", json!({"ms": 1000})).await;
    assert!(a["nowMs"].is_i64());
    let g = env.ctl_get("/clock").await;
    assert_eq!(g["nowMs"], a["nowMs"]);
    let p = env.ctl("/clock/pause", json!({})).await;
    assert_eq!(
        (p["paused"].as_bool(), p["changed"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(env.ctl("/clock/pause", json!({})).await["changed"], false);
    assert_eq!(env.ctl_get("/clock").await["paused"], true);
    let r = env.ctl("/clock/resume", json!({})).await;
    assert_eq!(
        (r["paused"].as_bool(), r["changed"].as_bool()),
        (Some(false), Some(true))
    );
    assert_eq!(env.ctl_get("/clock").await["paused"], false);
    let st = env
        .ctl("/state", json!({"chatFrozen": true, "botManager": true, "botChatBanned": false, "botBlocked": false, "botKicked": false}))
        .await;
    assert_eq!(
        (st["chatFrozen"].as_bool(), st["botManager"].as_bool()),
        (Some(true), Some(true))
    );
    let n = env
        .ctl("/consent/narrow", json!({"scope": "events.chat chat.send"}))
        .await;
    assert_eq!(n["scope"], "events.chat chat.send");
    let q = env
        .ctl("/quota", json!({"perSecond": {"replenishRate": 5, "burstCapacity": 10}, "daily": {"limit": 1000, "perPermission": {"chat.send": 10}}}))
        .await;
    assert_eq!(q["perSecond"]["burstCapacity"], 10);
    assert_eq!(q["daily"]["perPermission"]["chat.send"], 10);
    let f = env.ctl("/fail", json!({"path": "/v1/live/chat", "status": 502, "detailCode": "OAPI_MNGR_2303", "times": 1})).await;
    assert_eq!(f["times"], 1);
    let w = env.ctl("/wire", json!({"lineEnding": "CRLF"})).await;
    assert_eq!(w["lineEnding"], "CRLF");
    let ch = env.ctl_get("/chat").await;
    assert!(ch["messages"].is_array());
    let r = env.ctl_get("/requests").await;
    let reqs = r["requests"].as_array().unwrap();
    assert!(!reqs.is_empty());
    // The code exchange: the five first fields, its number, and what the
    // log learned (the credential is a fingerprint, never the code).
    assert_eq!(
        keys(&reqs[0]),
        [
            "atMs",
            "clientId",
            "credential",
            "grant",
            "integration",
            "method",
            "path",
            "query",
            "seq",
            "status"
        ]
    );
    assert_eq!(reqs[0]["seq"], 1);
    let text = r.to_string();
    assert!(
        !text.contains(&access) && !text.contains(&env.secret),
        "secrets are never recorded"
    );
    let led = env.ledger().await;
    let bot = &led["broadcasts"][0]["bots"][0];
    assert_eq!(keys(&led["broadcasts"][0]), ["bots", "dj", "liveId"]);
    assert_eq!(
        keys(bot),
        ["clientId", "connections", "integration", "totals"]
    );
    assert_eq!(
        keys(&bot["connections"][0]),
        [
            "closedAtMs",
            "closedSeq",
            "dropped",
            "end",
            "events",
            "frames",
            "lastWriteSeq",
            "openedAtMs",
            "openedSeq",
            "stalled",
            "stalledAtMs"
        ]
    );
    assert_eq!(
        keys(&bot["connections"][0]["events"]),
        ["chat", "donation", "like", "presence"]
    );
    assert_eq!(
        keys(&bot["totals"]),
        ["attendance", "donated", "hearts", "people"]
    );
    let person = bot["totals"]["people"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    assert_eq!(
        keys(person),
        [
            "chats",
            "donated",
            "donations",
            "hearts",
            "joins",
            "nickname",
            "paidHearts"
        ]
    );
    let sc = env.ctl_get("/scenario").await;
    assert_eq!(sc["done"], true);
    env.ctl("/integration/disconnect", json!({})).await;
    let end = env.ctl("/live/end", json!({})).await;
    assert!(end["liveId"].is_u64());
}

#[tokio::test]
async fn control_errors_are_json() {
    let env = Env::start().await;
    let r = env
        .http
        .post(format!("{}/_emulator/emit", env.base))
        .json(&json!({"event": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.json::<Value>().await.unwrap()["error"].is_string());
    let r = env
        .http
        .post(format!("{}/_emulator/emit", env.base))
        .json(&json!({"event": "chat"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 409, "not on air");
    let r = env
        .http
        .post(format!("{}/_emulator/state", env.base))
        .json(&json!({"chatFrozn": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400, "typos are caught");
    let r = env
        .http
        .get(format!("{}/_emulator/nope", env.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let r = env
        .http
        .post(format!("{}/_emulator/live/start", env.base))
        .json(&json!({"dj": "ghost"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    env.live_start().await;
    let r = env
        .http
        .post(format!("{}/_emulator/emit", env.base))
        .json(&json!({"event": "like", "data": {"amount": "ten"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
}

#[tokio::test]
async fn the_dj_query_is_form_decoded() {
    let env = Env::start().await;
    env.ctl(
        "/consent",
        json!({"dj": "DJ Two+1", "redirectUri": env.redirect}),
    )
    .await;
    assert_eq!(
        env.ctl_get("/state?dj=DJ%20Two%2B1").await["dj"],
        "DJ Two+1"
    );
    assert_eq!(
        env.ctl_get("/wire?x=1&dj=DJ+Two%2b1").await["lineEnding"],
        "LF"
    );
    let r = env
        .http
        .get(format!("{}/_emulator/state?dj=DJ+Two+1", env.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404, "`+` is a space");
}

/// `POST /refire`: the same frame again, byte for byte, to the streams that
/// may see it; the room untouched; the ledger's totals count the id once.
#[tokio::test]
async fn refire_sends_the_same_frame_again_to_whom_may_see_it() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens("events.chat events.donation").await;
    let mut s = env.stream(&access).await;
    let chat = env
        .emit("chat", json!({"user": {"id": "u1", "nickname": "Mina"}}))
        .await;
    let like = env.emit("like", json!({"user": {"id": "u1"}})).await;
    let gift = env
        .emit("donation", json!({"user": {"id": "u2"}, "amount": 500}))
        .await;
    assert_eq!(like["delivered"], 0, "no events.like");
    let first_chat = s.event().await;
    let first_gift = s.event().await;

    let again = env.ctl("/refire", json!({"id": chat["id"]})).await;
    assert_eq!(again, json!({"id": chat["id"], "delivered": 1}));
    assert_eq!(s.event().await, first_chat, "byte for byte, id included");
    let again = env.ctl("/refire", json!({"id": like["id"]})).await;
    assert_eq!(again["delivered"], 0, "the permission filter holds");
    env.ctl("/refire", json!({"id": gift["id"]})).await;
    assert_eq!(s.event().await, first_gift);

    let bot = env.bot_ledger().await;
    assert_eq!(bot["connections"][0]["events"]["chat"], 2);
    assert_eq!(bot["totals"]["donated"], 500, "an id counts once");
    assert_eq!(bot["totals"]["people"]["u2"]["donations"], 1);
    let frames = env.ctl_get("/frames").await;
    let listed = frames["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == chat["id"])
        .count();
    assert_eq!(listed, 2);
    assert_eq!(
        env.ctl_get("/state").await["listenerCount"],
        3,
        "the bot, u1 and u2"
    );

    assert_eq!(env.ctl_status("/refire", json!({"id": "1-0"})).await, 404);
    assert_eq!(env.ctl_status("/refire", json!({})).await, 400);
    env.ctl("/live/end", json!({})).await;
    assert_eq!(
        env.ctl_status("/refire", json!({"id": chat["id"]})).await,
        409
    );
    env.live_start().await;
    assert_eq!(
        env.ctl_status("/refire", json!({"id": chat["id"]})).await,
        404,
        "an event of an earlier broadcast"
    );
}

/// `"heartbeats": false` in `POST /wire`: the DJ's streams carry none until
/// it is true again.
#[tokio::test]
async fn heartbeats_can_be_stopped_and_resumed() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let mut s = env.stream(&access).await;
    let wire = env.ctl("/wire", json!({"heartbeats": false})).await;
    assert_eq!(wire["heartbeats"], false);
    assert_eq!(env.ctl_get("/wire").await["heartbeats"], false);
    env.advance(60_000).await;
    assert!(s.quiet(300).await, "no heartbeat while off");
    env.ctl("/wire", json!({"heartbeats": true})).await;
    env.advance(15_000).await;
    assert_eq!(s.next().await, Next::Frame(":heartbeat\n\n".to_owned()));
}

/// `POST /fail` with `quota`: the call quota's own 429, logged as one; bad
/// combinations are refused.
#[tokio::test]
async fn a_quota_fault_answers_as_the_quota_does() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let f = env
        .ctl(
            "/fail",
            json!({"status": 429, "quota": "daily", "scope": "fans.read"}),
        )
        .await;
    assert_eq!(f["path"], "/v1/live/fans", "the scope's endpoint");
    assert_eq!(f["scope"], "fans.read");
    let r = env.get("/v1/live/fans", &access).await;
    assert_eq!(r.status().as_u16(), 429);
    assert_eq!(r.headers()["x-ratelimit-daily-scope"], "fans.read");
    let retry: i64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=86_400).contains(&retry));
    assert_eq!(r.text().await.unwrap(), "");
    env.ctl(
        "/fail",
        json!({"path": "/v1/live", "status": 429, "quota": "daily"}),
    )
    .await;
    let r = env.get("/v1/live", &access).await;
    assert_eq!(r.status().as_u16(), 429);
    assert!(
        r.headers().get("x-ratelimit-daily-scope").is_none(),
        "the whole app"
    );
    env.ctl(
        "/fail",
        json!({"path": "/v1/live", "status": 429, "quota": "perSecond"}),
    )
    .await;
    let r = env.get("/v1/live", &access).await;
    assert_eq!(r.headers()["x-ratelimit-remaining"], "0");
    let log = env.ctl_get("/requests").await;
    let quotas: Vec<&Value> = log["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == 429)
        .map(|r| &r["quota"])
        .collect();
    assert_eq!(
        quotas,
        [&json!("daily"), &json!("daily"), &json!("perSecond")]
    );
    for bad in [
        json!({"path": "/v1/live", "status": 502, "quota": "perSecond"}),
        json!({"path": "/v1/live", "status": 429, "quota": "hourly"}),
        json!({"status": 429, "quota": "daily", "scope": "events.chat"}),
        json!({"path": "/v1/live/events", "status": 429, "quota": "perSecond"}),
        json!({"path": "/v1/live", "status": 429, "scope": "live.read"}),
        json!({"path": "/v1/live", "status": 429, "quota": "perSecond", "scope": "live.read"}),
    ] {
        assert_eq!(env.ctl_status("/fail", bad.clone()).await, 400, "{bad}");
    }
}
