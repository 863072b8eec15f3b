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
