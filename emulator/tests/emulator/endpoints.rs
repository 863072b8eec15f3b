//! Spec 4.3–4.5, 4.7, 5.1, 7.1, 7.3, 8: bot endpoints, their errors and quotas.

use onair_emulator::Emulator;
use serde_json::{json, Value};

use crate::common::*;

fn assert_problem_shape(p: &Value, instance: &str, status: u16, code: Option<&str>) {
    assert_eq!(p["instance"], instance);
    assert_eq!(p["status"], status);
    assert!(p["title"].is_string());
    assert!(p["message"].is_string());
    assert!(p["userId"].is_null() && p.get("userId").is_some());
    assert!(p["extra"].is_null() && p.get("extra").is_some());
    assert!(p["timestamp"].is_i64());
    assert_eq!(p.get("detailCode").and_then(Value::as_str), code);
}

#[tokio::test]
async fn live_has_every_field_of_2_2() {
    let env = Env::start().await;
    let live_id = env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let r = env.get("/v1/live", &access).await;
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["liveId"], live_id);
    assert_eq!(v["title"], "test");
    for k in ["startedAt", "closeAirTime"] {
        assert!(v[k].as_str().unwrap().ends_with('Z'), "{k}");
    }
    assert!(v["listenerCount"].is_u64() && v["totalListenerCount"].is_u64());
    assert_eq!(v["welcomeMessage"], "");
    assert_eq!(v["isChatFrozen"], false);
    assert!(v["categories"].is_array() && v["tags"].is_array());
    assert_eq!(v.as_object().unwrap().len(), 10);
}

#[tokio::test]
async fn every_live_path_is_404_0301_when_not_on_air() {
    let env = Env::start().await;
    let (access, _) = env.tokens(ALL).await;
    for path in ["/v1/live", "/v1/live/listeners", "/v1/live/fans"] {
        let (s, p) = problem(env.get(path, &access).await).await;
        assert_problem_shape(&p, path, 404, Some("OAPI_MNGR_0301"));
        assert_eq!(s, 404);
    }
    let (s, p) = problem(env.chat(&access, "hi").await).await;
    assert_eq!((s, p["detailCode"].as_str()), (404, Some("OAPI_MNGR_0301")));
    let r = env.open(&access).await;
    assert_eq!(r.status().as_u16(), 404);
    assert_eq!(
        r.headers()["content-type"],
        "text/event-stream;charset=UTF-8"
    );
    let body = r.text().await.unwrap();
    let v: Value = serde_json::from_str(body.trim().strip_prefix("data:").unwrap()).unwrap();
    assert_eq!(
        (v["status"].as_u64(), v["detailCode"].as_str()),
        (Some(404), Some("OAPI_MNGR_0301"))
    );
}

#[tokio::test]
async fn missing_or_bad_bearer_is_401_without_detail_code() {
    let env = Env::start().await;
    env.live_start().await;
    let r = env
        .http
        .get(format!("{}/v1/live", env.base))
        .send()
        .await
        .unwrap();
    let (s, p) = problem(r).await;
    assert_problem_shape(&p, "/v1/live", 401, None);
    assert_eq!(s, 401);
    let (s, _) = problem(env.get("/v1/live/fans", "garbage").await).await;
    assert_eq!(s, 401);
}

#[tokio::test]
async fn missing_permission_is_403_without_detail_code() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens("events.chat").await;
    for path in ["/v1/live", "/v1/live/listeners", "/v1/live/fans"] {
        let (s, p) = problem(env.get(path, &access).await).await;
        assert_eq!(s, 403);
        assert_problem_shape(&p, path, 403, None);
    }
    assert_eq!(env.chat(&access, "hi").await.status().as_u16(), 403);
}

async fn list_all(env: &Env, access: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/live/listeners?cursor={}", urlencode(c)),
            None => "/v1/live/listeners".to_owned(),
        };
        let v: Value = env.get(&path, access).await.json().await.unwrap();
        for l in v["listeners"].as_array().unwrap() {
            assert!(l["nickname"].is_string());
            ids.push(l["id"].as_str().unwrap().to_owned());
        }
        match v["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => {
                assert!(v["nextCursor"].is_null());
                return ids;
            }
        }
    }
}

#[tokio::test]
async fn listeners_page_with_opaque_cursors_and_include_the_bot_after_connect() {
    let env = Env::with(Emulator::builder().page_size(3)).await;
    env.live_start().await;
    for i in 0..7 {
        env.emit(
            "presence",
            json!({"user": {"id": format!("p{i}"), "nickname": format!("n{i}")}}),
        )
        .await;
    }
    let (access, _) = env.tokens(ALL).await;
    let before = list_all(&env, &access).await;
    assert_eq!(before.len(), 7);
    let _stream = env.stream(&access).await;
    let after = list_all(&env, &access).await;
    assert_eq!(after.len(), 8, "the bot joins on connect");
    let bot = env.ctl("/consent", json!({"scope": ALL})).await["botUserId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(after.contains(&bot));
    let (s, p) = problem(env.get("/v1/live/listeners?cursor=bogus", &access).await).await;
    assert_eq!((s, p["detailCode"].as_str()), (400, Some("OAPI_MNGR_0103")));
}

#[tokio::test]
async fn fans_are_top_30_of_people_present() {
    let env = Env::start().await;
    env.live_start().await;
    for i in 0..35u64 {
        env.emit(
            "donation",
            json!({"user": {"id": format!("d{i:02}"), "nickname": "x"}, "amount": 100 + i}),
        )
        .await;
    }
    let (access, _) = env.tokens(ALL).await;
    let v: Value = env
        .get("/v1/live/fans", &access)
        .await
        .json()
        .await
        .unwrap();
    let fans = v["fans"].as_array().unwrap();
    assert_eq!(fans.len(), 30);
    assert_eq!(v["totalCount"], 30);
    assert_eq!(fans[0]["id"], "d34");
    assert_eq!(fans[0]["rank"], 1);
    assert!(
        fans.iter().any(|f| f["coinCount"].is_null()),
        "coinCount is sometimes null"
    );
    assert!(fans.iter().any(|f| f["coinCount"].is_u64()));
    // The top donor leaves: they drop off the ranking.
    env.ctl("/leave", json!({"userId": "d34"})).await;
    let v: Value = env
        .get("/v1/live/fans", &access)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["fans"][0]["id"], "d33");
}

#[tokio::test]
async fn chat_posts_204_and_is_recorded() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let r = env.chat(&access, "안녕 👋").await;
    assert_eq!(r.status().as_u16(), 204);
    assert!(r.bytes().await.unwrap().is_empty());
    let v = env.ctl_get("/chat").await;
    assert_eq!(v["messages"][0]["message"], "안녕 👋");
    assert!(v["messages"][0]["atMs"].is_i64());
}

#[tokio::test]
async fn chat_length_counts_utf16_units_0109() {
    let env = Env::start().await;
    env.live_start().await;
    env.ctl("/quota", json!({"chatPerSecond": 100})).await;
    let (access, _) = env.tokens(ALL).await;
    assert_eq!(
        env.chat(&access, &"😀".repeat(100)).await.status().as_u16(),
        204
    );
    let (s, p) = problem(env.chat(&access, &"😀".repeat(101)).await).await;
    assert_eq!((s, p["detailCode"].as_str()), (400, Some("OAPI_MNGR_0109")));
    assert_eq!(
        env.chat(&access, &"a".repeat(200)).await.status().as_u16(),
        204
    );
    let (s, _) = problem(env.chat(&access, &"a".repeat(201)).await).await;
    assert_eq!(s, 400);
}

#[tokio::test]
async fn blank_chat_is_0108() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    for m in ["", "   ", "\t\n"] {
        let (s, p) = problem(env.chat(&access, m).await).await;
        assert_eq!(
            (s, p["detailCode"].as_str()),
            (400, Some("OAPI_MNGR_0108")),
            "{m:?}"
        );
    }
}

#[tokio::test]
async fn malformed_chat_requests_are_0103() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let url = format!("{}/v1/live/chat", env.base);
    // Broken JSON.
    let r = env
        .http
        .post(&url)
        .bearer_auth(&access)
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.1["detailCode"], "OAPI_MNGR_0103");
    // Missing field.
    let r = env
        .http
        .post(&url)
        .bearer_auth(&access)
        .json(&json!({"text": "x"}))
        .send()
        .await
        .unwrap();
    let (s, p) = problem(r).await;
    assert_eq!((s, p["detailCode"].as_str()), (400, Some("OAPI_MNGR_0103")));
    // Missing Content-Type.
    let r = env
        .http
        .post(&url)
        .bearer_auth(&access)
        .body("{\"message\":\"x\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 400);
    // Wrong Content-Type.
    let r = env
        .http
        .post(&url)
        .bearer_auth(&access)
        .header("content-type", "text/plain")
        .body("x")
        .send()
        .await
        .unwrap();
    let (s, p) = problem(r).await;
    assert_eq!((s, p["detailCode"].as_str()), (415, Some("OAPI_MNGR_0103")));
    // Wrong method.
    let r = env
        .http
        .get(&url)
        .bearer_auth(&access)
        .send()
        .await
        .unwrap();
    let (s, p) = problem(r).await;
    assert_eq!((s, p["detailCode"].as_str()), (405, Some("OAPI_MNGR_0103")));
    let r = env
        .http
        .delete(format!("{}/v1/live", env.base))
        .bearer_auth(&access)
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r).await.0, 405);
}

#[tokio::test]
async fn frozen_chat_or_banned_bot_is_403_0208() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    env.ctl("/state", json!({"chatFrozen": true})).await;
    let v: Value = env.get("/v1/live", &access).await.json().await.unwrap();
    assert_eq!(v["isChatFrozen"], true);
    let (s, p) = problem(env.chat(&access, "hi").await).await;
    assert_eq!((s, p["detailCode"].as_str()), (403, Some("OAPI_MNGR_0208")));
    env.ctl(
        "/state",
        json!({"chatFrozen": false, "botChatBanned": true}),
    )
    .await;
    let (s, p) = problem(env.chat(&access, "hi").await).await;
    assert_eq!((s, p["detailCode"].as_str()), (403, Some("OAPI_MNGR_0208")));
}

#[tokio::test]
async fn blocked_bot_is_403_0209_on_chat_and_stream() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    env.ctl("/state", json!({"botBlocked": true})).await;
    let (s, p) = problem(env.chat(&access, "hi").await).await;
    assert_eq!((s, p["detailCode"].as_str()), (403, Some("OAPI_MNGR_0209")));
    let r = env.open(&access).await;
    assert_eq!(r.status().as_u16(), 403);
    assert!(r.text().await.unwrap().contains("OAPI_MNGR_0209"));
}

#[tokio::test]
async fn broadcast_wide_chat_limit_is_429_0302_with_a_body() {
    let env = Env::start().await;
    env.live_start().await;
    env.ctl("/quota", json!({"chatPerSecond": 2})).await;
    let (access, _) = env.tokens(ALL).await;
    assert_eq!(env.chat(&access, "1").await.status().as_u16(), 204);
    assert_eq!(env.chat(&access, "2").await.status().as_u16(), 204);
    let (s, p) = problem(env.chat(&access, "3").await).await;
    assert_problem_shape(&p, "/v1/live/chat", 429, Some("OAPI_MNGR_0302"));
    assert_eq!(s, 429);
    env.advance(1000).await;
    assert_eq!(env.chat(&access, "4").await.status().as_u16(), 204);
}

#[tokio::test]
async fn successes_carry_every_quota_header() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let r = env.get("/v1/live", &access).await;
    for h in [
        "x-ratelimit-remaining",
        "x-ratelimit-replenish-rate",
        "x-ratelimit-burst-capacity",
        "x-ratelimit-daily-limit",
        "x-ratelimit-daily-remaining",
        "x-ratelimit-daily-reset",
    ] {
        assert!(r.headers().get(h).is_some(), "{h}");
    }
    assert!(r.headers().get("x-ratelimit-daily-scope").is_none());
    // The stream carries none.
    let s = env.open(&access).await;
    assert!(s.headers().get("x-ratelimit-remaining").is_none());
}

#[tokio::test]
async fn per_second_quota_is_429_with_empty_body_and_no_retry_after() {
    let env = Env::start().await;
    env.live_start().await;
    env.ctl(
        "/quota",
        json!({"perSecond": {"replenishRate": 1, "burstCapacity": 2}}),
    )
    .await;
    let (access, _) = env.tokens(ALL).await;
    let r = env.get("/v1/live", &access).await;
    assert_eq!(r.headers()["x-ratelimit-remaining"], "1");
    assert_eq!(env.get("/v1/live", &access).await.status().as_u16(), 200);
    let r = env.get("/v1/live", &access).await;
    assert_eq!(r.status().as_u16(), 429);
    assert!(r.headers().get("retry-after").is_none());
    assert!(r.bytes().await.unwrap().is_empty());
    env.advance(1000).await;
    assert_eq!(env.get("/v1/live", &access).await.status().as_u16(), 200);
}

#[tokio::test]
async fn daily_quota_per_permission_names_its_scope_and_waits_until_midnight() {
    let env = Env::start().await;
    env.live_start().await;
    env.ctl(
        "/quota",
        json!({"daily": {"perPermission": {"chat.send": 1}}}),
    )
    .await;
    let (access, _) = env.tokens(ALL).await;
    assert_eq!(env.chat(&access, "one").await.status().as_u16(), 204);
    let r = env.chat(&access, "two").await;
    assert_eq!(r.status().as_u16(), 429);
    assert_eq!(r.headers()["x-ratelimit-daily-scope"], "chat.send");
    let now = env.ctl_get("/clock").await["nowMs"].as_i64().unwrap();
    let midnight = (now / 86_400_000 + 1) * 86_400_000;
    let retry: i64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(retry, (midnight - now + 999) / 1000);
    assert!(r.bytes().await.unwrap().is_empty());
    // Other permissions go on; after midnight chat works again.
    assert_eq!(env.get("/v1/live", &access).await.status().as_u16(), 200);
    env.advance(midnight - now).await;
    let (access, _) = env.tokens(ALL).await;
    assert_eq!(env.chat(&access, "three").await.status().as_u16(), 204);
}

#[tokio::test]
async fn daily_quota_of_the_app_has_no_scope_header() {
    let env = Env::start().await;
    env.live_start().await;
    env.ctl("/quota", json!({"daily": {"limit": 2}})).await;
    let (access, _) = env.tokens(ALL).await;
    let r = env.get("/v1/live", &access).await;
    assert_eq!(r.headers()["x-ratelimit-daily-remaining"], "1");
    env.get("/v1/live/fans", &access).await;
    let r = env.get("/v1/live/listeners", &access).await;
    assert_eq!(r.status().as_u16(), 429);
    assert!(r.headers().get("retry-after").is_some());
    assert!(r.headers().get("x-ratelimit-daily-scope").is_none());
}

#[tokio::test]
async fn injected_server_errors_have_their_codes() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    env.ctl("/fail", json!({"path": "/v1/live", "status": 500}))
        .await;
    let (s, p) = problem(env.get("/v1/live", &access).await).await;
    assert_problem_shape(&p, "/v1/live", 500, Some("OAPI_MNGR_1002"));
    assert_eq!(s, 500);
    env.ctl(
        "/fail",
        json!({"path": "/v1/live/fans", "status": 502, "times": 2}),
    )
    .await;
    for _ in 0..2 {
        let (s, p) = problem(env.get("/v1/live/fans", &access).await).await;
        assert_eq!((s, p["detailCode"].as_str()), (502, Some("OAPI_MNGR_2302")));
    }
    assert_eq!(
        env.get("/v1/live/fans", &access).await.status().as_u16(),
        200
    );
    env.ctl(
        "/fail",
        json!({"path": "/v1/live/chat", "status": 502, "detailCode": "OAPI_MNGR_2303"}),
    )
    .await;
    let (s, p) = problem(env.chat(&access, "hi").await).await;
    assert_eq!((s, p["detailCode"].as_str()), (502, Some("OAPI_MNGR_2303")));
    env.ctl("/fail", json!({"path": "/v1/live/events", "status": 502}))
        .await;
    let r = env.open(&access).await;
    assert_eq!(r.status().as_u16(), 502);
    assert!(r
        .text()
        .await
        .unwrap()
        .starts_with("data:{\"status\":502,\"detailCode\":\"OAPI_MNGR_2302\""));
    env.ctl("/fail", json!({"path": "/v1/live", "status": 429}))
        .await;
    let r = env.get("/v1/live", &access).await;
    assert_eq!(r.status().as_u16(), 429);
    assert!(r.bytes().await.unwrap().is_empty());
}
