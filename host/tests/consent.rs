//! The host against the emulator on 127.0.0.1, in-process: a DJ connects
//! through /connect, the consent page and /callback with a plain HTTP
//! client; the code is exchanged once (a replayed or forged answer is
//! refused); events are tallied; the host stops and starts again and the
//! bot resumes from the store without consent; admin actions need the
//! admin token; a bot's page updates live over SSE; a bot whose integration
//! was disconnected stops for consent and comes back through its re-connect
//! link; a revoked bot's tokens are revoked at the service and forgotten.
//! Tokens never reach the database files, the log, a page or the API.

mod common;

use std::time::{Duration, Instant};

use common::{browser, consent, control, grants, param, until, Consented, Host, Setup, ADMIN, KEY};
use serde_json::{json, Value};

/// Bot 1's `action` by the admin with the bearer token, answered in JSON.
async fn admin_action(host: &Host, action: &str) -> reqwest::StatusCode {
    reqwest::Client::new()
        .post(host.at(&format!("/admin/bots/1/{action}")))
        .bearer_auth(ADMIN)
        .header("accept", "application/json")
        .send()
        .await
        .expect(action)
        .status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dj_connects_once_the_host_restarts_and_the_bot_comes_back_for_consent() {
    let log = common::log("debug,sqlx=warn,hyper=warn,reqwest=warn,h2=warn");
    let s = Setup::new("consent").await;
    let host = s.host(KEY).await;
    control(&s.emu, "/live/start", Some(json!({}))).await;

    // Connect: one bot, one exchange.
    let b = browser();
    let Consented { callback, to } = consent(&b, &host.at("/connect"), "main").await;
    assert_eq!(to, "/bots/1");
    let bot = host.api("/api/bots/1").await;
    assert_eq!(bot["bot"]["enabled"], true);

    // The same answer again (a reload, or a thief): refused, no exchange.
    let again = b.get(&callback).send().await.expect("callback again");
    assert_eq!(again.status(), 400);
    // An answer without this browser's state cookie: refused.
    let forged = browser().get(&callback).send().await.expect("forged");
    assert_eq!(forged.status(), 400);
    let requests = s.requests().await;
    assert_eq!(grants(&requests, "authorization_code"), 1);

    // Events are tallied.
    until("the stream is open", Duration::from_secs(10), || async {
        host.api("/api/bots/1").await["bot"]["state"] == "connected"
    })
    .await;
    let like = json!({"event":"like","data":{"user":{"id":"u1","nickname":"Mina"}}});
    let emitted = control(&s.emu, "/emit", Some(like.clone())).await;
    assert_eq!(emitted["delivered"], 1);
    until("the heart is counted", Duration::from_secs(10), || async {
        host.api("/api/bots/1").await["bot"]["hearts"] == 1
    })
    .await;

    // Admin actions need the admin token.
    let anonymous = reqwest::Client::new()
        .post(format!("{}/admin/bots/1/disable", host.url))
        .send()
        .await
        .expect("disable");
    assert_eq!(anonymous.status(), 401);
    let api_anonymous = reqwest::get(format!("{}/api/bots", host.url))
        .await
        .expect("api");
    assert_eq!(api_anonymous.status(), 401);

    // Stop and start again: the bot resumes from the store, no consent, no
    // refresh, the tally goes on.
    host.stop().await;
    let host = s.host(KEY).await;
    until(
        "the restored bot reconnects",
        Duration::from_secs(10),
        || async { host.api("/api/bots/1").await["bot"]["state"] == "connected" },
    )
    .await;
    control(&s.emu, "/emit", Some(like.clone())).await;
    until("the tally continues", Duration::from_secs(10), || async {
        host.api("/api/bots/1").await["current"]["tally"]["hearts"] == 2
    })
    .await;
    let requests = s.requests().await;
    assert_eq!(grants(&requests, "authorization_code"), 1);
    assert_eq!(grants(&requests, "refresh_token"), 0);

    // The dashboard's live updates: a bot's page stream sends its card, then
    // each event's log line as it is read.
    // (the DJ's browser: the session its consent gave)
    let mut live = b
        .get(format!("{}/events?bot=1", host.url))
        .send()
        .await
        .expect("events");
    assert_eq!(
        live.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let mut seen = String::new();
    let mut emitted = false;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(seen.contains("event: card") && seen.contains("event: log") && seen.contains("Jun")) {
        assert!(Instant::now() < deadline, "no live update: {seen}");
        if seen.contains("event: card") && !emitted {
            let jun = json!({"event":"like","data":{"user":{"id":"u2","nickname":"Jun"}}});
            control(&s.emu, "/emit", Some(jun)).await;
            emitted = true;
        }
        let chunk = tokio::time::timeout(Duration::from_secs(5), live.chunk())
            .await
            .expect("a frame in time")
            .expect("the stream reads");
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap_or_default()));
    }
    drop(live);

    // Disable and enable with the token.
    for (action, state) in [("disable", "disabled"), ("enable", "connected")] {
        assert_eq!(admin_action(&host, action).await, 200, "{action}");
        until(state, Duration::from_secs(10), || async {
            host.api("/api/bots/1").await["bot"]["state"] == state
        })
        .await;
    }

    // The DJ disconnects the integration: the bot stops for consent and
    // offers a re-connect link, which brings the same bot back.
    control(
        &s.emu,
        "/integration/disconnect",
        Some(json!({"clientId": s.client_id})),
    )
    .await;
    control(&s.emu, "/streams/drop", Some(json!({}))).await;
    until(
        "the bot stops for consent",
        Duration::from_secs(20),
        || async { host.api("/api/bots/1").await["bot"]["reconnect"] == true },
    )
    .await;
    let dashboard = host.page("/").await;
    assert!(dashboard.contains("/connect?bot=1"), "{dashboard}");
    let Consented { to, .. } = consent(&b, &host.at("/connect?bot=1"), "main").await;
    assert_eq!(to, "/bots/1");
    until("the bot is back", Duration::from_secs(10), || async {
        let v = host.api("/api/bots/1").await;
        v["bot"]["state"] == "connected" && v["bot"]["stop"].is_null()
    })
    .await;
    let views = host.api("/api/bots").await;
    assert_eq!(
        views["bots"].as_array().map(Vec::len),
        Some(1),
        "the same bot"
    );

    // Secrets: the stored pair opens with the key; its tokens are nowhere
    // else.
    let cipher = onair_host::crypto::TokenCipher::from_base64(KEY).expect("key");
    let store = onair_host::store::Store::open(
        &format!("sqlite://{}?mode=rwc", s.db_path().display()),
        cipher,
    )
    .await
    .expect("store");
    let row = store.integration(1).await.expect("row").expect("bot 1");
    let tokens = row.tokens.expect("a stored pair");
    let pair: Value = serde_json::from_str(&tokens.to_json()).expect("pair JSON");
    let access = pair["access_token"].as_str().expect("access").to_owned();
    let refresh = pair["refresh_token"].as_str().expect("refresh").to_owned();
    let code = param(&callback, "code");
    let mut shown = vec![
        host.page("/").await,
        host.page("/bots/1").await,
        host.page("/metrics").await,
        host.api("/api/bots/1?events=1000").await.to_string(),
        host.api("/api/bots").await.to_string(),
    ];

    // Revoke: the tokens are revoked at the service and forgotten; the bot
    // stops and asks for a new connection.
    assert_eq!(admin_action(&host, "revoke").await, 200);
    until("the bot is revoked", Duration::from_secs(10), || async {
        let v = host.api("/api/bots/1").await;
        v["bot"]["reconnect"] == true && v["bot"].to_string().contains("revoked")
    })
    .await;
    let requests = s.requests().await;
    // The re-connect revoked the pair it replaced; the admin's revoke, the
    // one it brought.
    assert_eq!(
        grants(&requests, "revoke"),
        2,
        "one revoke at the service for each replaced pair"
    );
    let row = store.integration(1).await.expect("row").expect("bot 1");
    assert!(row.tokens.is_none(), "the pair is forgotten");
    shown.push(host.page("/bots/1").await);

    host.stop().await;
    store.close().await;
    shown.push(log.text());
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&s.dir).expect("dir") {
        files.extend(std::fs::read(entry.expect("entry").path()).expect("file"));
    }
    shown.push(String::from_utf8_lossy(&files).into_owned());
    for (i, text) in shown.iter().enumerate() {
        for (what, secret) in [
            ("access token", access.as_str()),
            ("refresh token", refresh.as_str()),
            ("client secret", s.secret.as_str()),
            ("consent code", code.as_str()),
            ("admin token", ADMIN),
            ("key", KEY),
        ] {
            assert!(!text.contains(secret), "the {what} in shown[{i}]");
        }
    }
    assert!(log.text().contains("DJ connected"), "the log was captured");
    s.finish().await;
}
