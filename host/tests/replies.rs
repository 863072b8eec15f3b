//! The host's replies are the core's, configured in host.toml: against the
//! emulator on 127.0.0.1, in-process, what the service's chat received. A
//! nickname `{rest}` is said as written (in a welcome, and in a command's
//! answer that also fills `{rest}`); a 60 000-character nickname is
//! one message; a DJ's `[dj.N.replies]` applies to that bot alone; with the
//! chat limit held (429 `OAPI_MNGR_0302`) three arrivals go out as one
//! welcome; a thanks held past its freshness is dropped, logged at warn and
//! written to the event log; the bot's page and /metrics count it all.

mod common;

use std::time::Duration;

use common::{browser, consent, control, until, Host, Setup, KEY};
use onair_emulator::Running;
use serde_json::{json, Value};

const LOG: &str = "info,sqlx=warn,hyper=warn,reqwest=warn,h2=warn";
const WAIT: Duration = Duration::from_secs(20);

/// The chat messages DJ `dj`'s broadcast received, in order.
async fn chat_of(emu: &Running, dj: &str) -> Vec<String> {
    control(emu, "/chat", None).await["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["dj"] == dj)
        .filter_map(|m| m["message"].as_str().map(str::to_owned))
        .collect()
}

/// Waits until DJ `dj`'s chat has received `text`.
async fn until_said(emu: &Running, dj: &str, text: &str) {
    until(&format!("{dj}'s chat says {text:?}"), WAIT, || async {
        chat_of(emu, dj).await.iter().any(|m| m == text)
    })
    .await;
}

/// `nickname` chats in DJ `dj`'s broadcast (a first sign: an arrival).
async fn arrive(emu: &Running, dj: &str, id: &str, nickname: &str) {
    let chat = json!({"dj": dj, "event": "chat",
        "data": {"user": {"id": id, "nickname": nickname}, "message": "hi"}});
    assert_eq!(control(emu, "/emit", Some(chat)).await["delivered"], 1);
}

/// DJ `dj` connects and goes on air; waits for the bot `id` to be on air.
async fn on_air(s: &Setup, host: &Host, dj: &str, id: i64) {
    let to = consent(&browser(), &host.at("/connect"), dj).await.to;
    assert_eq!(to, format!("/bots/{id}"));
    control(&s.emu, "/live/start", Some(json!({ "dj": dj }))).await;
    until(&format!("bot {id} on air"), WAIT, || async {
        host.bot(id).await["onAir"] == true
    })
    .await;
}

/// Bot `id`'s event log (newest first, as the API gives it).
async fn events(host: &Host, id: i64) -> Vec<Value> {
    host.api(&format!("/api/bots/{id}?events=200")).await["events"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Waits until bot `id`'s event log has a row of `kind` whose summary is
/// `summary`.
async fn until_logged(host: &Host, id: i64, kind: &str, summary: &str) {
    until(&format!("bot {id} logs {summary:?}"), WAIT, || async {
        events(host, id)
            .await
            .iter()
            .any(|e| e["kind"] == kind && e["summary"] == summary)
    })
    .await;
}

/// How many chat sends the service answered with `status`.
async fn chat_answers(emu: &Running, status: u64) -> usize {
    control(emu, "/requests?path=/v1/live/chat", None).await["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["status"] == status)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_are_filled_once_in_one_message_and_a_djs_own_apply_to_that_bot_alone() {
    common::log(LOG);
    let mut s = Setup::new("replies-fill").await;
    // After the setup's [bot.kit]: a command, its answer, bot 2's welcome.
    s.text.push_str(
        "commands = [{ name = \"hello\" }]\n\
         [bot.replies.commands]\nhello = \"Hello, {nickname}! You said: {rest}\"\n\
         [dj.2.replies]\nwelcome = \"Hey {nickname}, bot two here\"\n",
    );
    let host = s.host(KEY).await;
    on_air(&s, &host, "ana", 1).await;
    on_air(&s, &host, "bo", 2).await;

    // A nickname that looks like a placeholder is said as written.
    arrive(&s.emu, "ana", "h1", "{rest}").await;
    until_said(&s.emu, "ana", "Welcome, {rest}! 🎧").await;
    let command = json!({"dj": "ana", "event": "chat",
        "data": {"user": {"id": "h1", "nickname": "{rest}"}, "message": "!hello there"}});
    control(&s.emu, "/emit", Some(command)).await;
    until_said(&s.emu, "ana", "Hello, {rest}! You said: there").await;

    // A 60 000-character nickname: one message, cut with `…`; the next
    // welcome (someone arriving after it went out) comes right after it.
    let long = "n".repeat(60_000);
    arrive(&s.emu, "ana", "h2", &long).await;
    until("the long welcome is out", WAIT, || async {
        chat_of(&s.emu, "ana").await.len() == 3
    })
    .await;
    arrive(&s.emu, "ana", "h3", "Zed").await;
    until_said(&s.emu, "ana", "Welcome, Zed! 🎧").await;
    let said = chat_of(&s.emu, "ana").await;
    let at = said
        .iter()
        .position(|m| m == "Hello, {rest}! You said: there")
        .expect("the answer");
    let between = &said[at + 1..said.len() - 1];
    assert_eq!(between.len(), 1, "{between:?}");
    let cut = &between[0];
    assert!(
        cut.starts_with("Welcome, nnn") && cut.ends_with("…! 🎧"),
        "{cut}"
    );
    assert!(cut.encode_utf16().count() <= 200, "{}", cut.len());

    // Bot 2 says its own welcome; bot 1 keeps the default.
    arrive(&s.emu, "bo", "m1", "Mina").await;
    until_said(&s.emu, "bo", "Hey Mina, bot two here").await;
    arrive(&s.emu, "ana", "m1", "Mina").await;
    until_said(&s.emu, "ana", "Welcome, Mina! 🎧").await;
    assert!(chat_of(&s.emu, "ana")
        .await
        .iter()
        .all(|m| !m.contains("bot two")));
    assert_eq!(chat_of(&s.emu, "bo").await, ["Hey Mina, bot two here"]);
    // The event log goes on as before.
    until_logged(&host, 1, "arrival", "greeted Zed (first)").await;

    host.stop().await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_chat_limit_held_arrivals_merge_and_a_stale_thanks_is_dropped_out_loud() {
    let log = common::log(LOG);
    let mut s = Setup::new("replies-merge").await;
    s.text
        .push_str("[bot.replies.fresh_ms]\nthanks = 2000\n[bot.replies]\nthanks_many = \"Thanks, {nicknames}!\"\n");
    let host = s.host(KEY).await;
    on_air(&s, &host, "main", 1).await;

    // The chat limit holds the first welcome back (429 0302); the clock is
    // held so its retry waits while two more people arrive.
    control(&s.emu, "/clock/pause", Some(json!({}))).await;
    control(
        &s.emu,
        "/fail",
        Some(json!({"path": "/v1/live/chat", "status": 429,
            "detailCode": "OAPI_MNGR_0302", "times": 1})),
    )
    .await;
    arrive(&s.emu, "main", "p1", "Ana").await;
    until("the first welcome was answered 429", WAIT, || async {
        chat_answers(&s.emu, 429).await == 1
    })
    .await;
    arrive(&s.emu, "main", "p2", "민지").await;
    arrive(&s.emu, "main", "p3", "Jörg").await;
    until_logged(&host, 1, "arrival", "greeted Jörg (first)").await;
    control(&s.emu, "/clock/resume", Some(json!({}))).await;
    until_said(&s.emu, "main", "Welcome, Ana, 민지 and Jörg! 🎧").await;
    assert_eq!(
        chat_of(&s.emu, "main").await,
        ["Welcome, Ana, 민지 and Jörg! 🎧"]
    );

    // A thanks held past its freshness (2 s here) is dropped, never sent.
    control(&s.emu, "/clock/pause", Some(json!({}))).await;
    control(
        &s.emu,
        "/fail",
        Some(json!({"path": "/v1/live/chat", "status": 429,
            "detailCode": "OAPI_MNGR_0302", "times": 1})),
    )
    .await;
    let donation = json!({"event": "donation",
        "data": {"user": {"id": "p2", "nickname": "민지"}, "amount": 100}});
    control(&s.emu, "/emit", Some(donation)).await;
    until("the thanks was answered 429", WAIT, || async {
        chat_answers(&s.emu, 429).await == 2
    })
    .await;
    control(&s.emu, "/clock/advance", Some(json!({"ms": 5000}))).await;
    control(&s.emu, "/clock/resume", Some(json!({}))).await;
    let told =
        "dropped 1 thanks reply: not sent within their freshness (the chat limit held them back)";
    until_logged(&host, 1, "notice", told).await;
    let row = events(&host, 1)
        .await
        .into_iter()
        .find(|e| e["kind"] == "notice")
        .expect("the notice row");
    let detail: Value = match &row["detail"] {
        Value::String(text) => serde_json::from_str(text).expect("detail JSON"),
        other => other.clone(),
    };
    assert_eq!(
        detail,
        json!({"replyKind": "thanks", "people": 1, "reason": "stale"})
    );
    assert!(
        log.text()
            .lines()
            .any(|l| l.contains("WARN") && l.contains("bot=1") && l.contains(told)),
        "no warn line: {}",
        log.text()
    );
    assert!(chat_of(&s.emu, "main")
        .await
        .iter()
        .all(|m| !m.contains("Thank")));

    // The page and /metrics count them: one welcome message naming three
    // people, all three merged; one thanks dropped.
    let welcome =
        "<tr data-kind=\"welcome\"><td>welcome</td><td>1</td><td>3</td><td>3</td><td>0</td></tr>";
    let thanks =
        "<tr data-kind=\"thanks\"><td>thanks</td><td>0</td><td>0</td><td>0</td><td>1</td></tr>";
    until("the page counts the replies", WAIT, || async {
        let page = host.page("/bots/1").await;
        page.contains(welcome) && page.contains(thanks)
    })
    .await;
    let metrics = host.page("/metrics").await;
    for needle in [
        "onair_host_replies_sent_total{kind=\"welcome\"} 1",
        "onair_host_replies_people_total{kind=\"welcome\"} 3",
        "onair_host_replies_merged_total{kind=\"welcome\"} 3",
        "onair_host_replies_dropped_total{kind=\"thanks\"} 1",
    ] {
        assert!(metrics.contains(needle), "{needle} in\n{metrics}");
    }
    assert!(!metrics.contains("민지") && !metrics.contains("p2"));

    host.stop().await;
    s.finish().await;
}
