//! `onair-tokio` against the real service on loopback: each test starts its
//! own emulator on 127.0.0.1 (port 0) and drives a bot through it. Every
//! wait is bounded, so a failure fails fast instead of hanging.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use onair::bot::{Notice, Unreached};
use onair::event::Event;
use onair::json::TallyJson;
use onair::kit::tally::Tally;
use onair::{BaseUrl, Bot, BotConfig, CallResult, ClientCredentials, Endpoint, Stop, Tokens};
use onair_emulator::clock::Clock as VirtualClock;
use onair_emulator::{AppCredentials, Emulator, Running};
use onair_tokio::{
    BeforeRefresh, BotEvent, Clock, Driver, FileStore, GateFuture, RefreshGate, TokenStore,
};
use serde_json::{json, Value};

/// The emulator's virtual clock for the driver (bot and service agree on
/// time, clock jumps included).
struct EmulatorClock(Arc<VirtualClock>);

impl Clock for EmulatorClock {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.0.now_ms()).unwrap_or(0)
    }

    fn real_delay(&self, at_ms: u64) -> Duration {
        let left = at_ms.saturating_sub(self.now_ms()) as f64;
        // Capped: polling early is always safe, and a jump of the virtual
        // clock is noticed within a second.
        Duration::from_secs_f64((left / self.0.speed().max(1e-3) / 1000.0).min(1.0))
    }
}

/// The control API (`/_emulator/…`).
struct Control {
    http: reqwest::Client,
    url: String,
    client_id: String,
}

impl Control {
    fn new(emu: &Running) -> Self {
        Control {
            http: reqwest::Client::new(),
            url: emu.control_url(),
            client_id: emu.app().client_id,
        }
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let response = self
            .http
            .post(format!("{}{path}", self.url))
            .body(body.to_string())
            .send()
            .await
            .expect("control call");
        let status = response.status();
        let bytes = response.bytes().await.expect("control body");
        assert!(status.is_success(), "POST {path}: {status} {bytes:?}");
        serde_json::from_slice(&bytes).expect("control JSON")
    }

    async fn get(&self, path: &str) -> Value {
        let bytes = self
            .http
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .expect("control call")
            .bytes()
            .await
            .expect("control body");
        serde_json::from_slice(&bytes).expect("control JSON")
    }

    async fn consent(&self) -> String {
        let v = self.post("/consent", json!({})).await;
        v["code"].as_str().expect("code").to_owned()
    }

    async fn emit(&self, event: &str, data: Value) {
        let v = self
            .post("/emit", json!({ "event": event, "data": data }))
            .await;
        assert_eq!(v["delivered"], 1, "{event} delivered to the bot's stream");
    }

    /// This app's stream connections in the ledger, every broadcast.
    async fn connections(&self) -> Vec<Value> {
        let ledger = self.get("/ledger").await;
        let mut all = Vec::new();
        for b in ledger["broadcasts"].as_array().into_iter().flatten() {
            for bot in b["bots"].as_array().into_iter().flatten() {
                if bot["clientId"] == self.client_id.as_str() {
                    all.extend(bot["connections"].as_array().into_iter().flatten().cloned());
                }
            }
        }
        all
    }

    /// Waits until the app has opened `n` stream connections in all and
    /// the last one is open.
    async fn wait_connections(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(8);
        loop {
            let c = self.connections().await;
            if c.len() >= n && c.last().is_some_and(|l| l["closedAtMs"].is_null()) {
                assert_eq!(c.len(), n, "exactly {n} connections: {c:?}");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no stream connection #{n} in time: {c:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn config(base_url: &str, app: &AppCredentials) -> BotConfig {
    let creds = ClientCredentials::new(&app.client_id, app.client_secret.clone()).expect("creds");
    let mut config = BotConfig::new(BaseUrl::new(base_url).expect("base url"), creds);
    // A broadcast that ended or has not started is retried quickly.
    config.stream.not_on_air_min_ms = 50;
    config.stream.not_on_air_max_ms = 100;
    config
}

/// What the bot handed out.
#[derive(Default)]
struct Seen {
    events: Vec<Event>,
    ends: Vec<String>,
    notices: Vec<Notice>,
    generations: Vec<u64>,
    done: Vec<CallResult>,
    stops: Vec<Stop>,
    /// One tally per broadcast (a new one after each `LIVE_ENDED`).
    tallies: Vec<Tally>,
}

/// Runs the driver, answering `NeedsAuthorization` with `code` (once; a
/// second time, or without a code, fails the test) and `!hello` with a
/// chat, while `script` runs; returns once `script` is done and `until`
/// holds. Fails after `limit`.
async fn drive(
    driver: &mut Driver,
    seen: &mut Seen,
    mut code: Option<(String, String)>,
    script: impl Future<Output = ()>,
    limit: Duration,
    until: impl Fn(&Seen) -> bool,
) {
    if seen.tallies.is_empty() {
        seen.tallies.push(Tally::new());
    }
    let deadline = tokio::time::Instant::now() + limit;
    tokio::pin!(script);
    let mut script_done = false;
    while !(script_done && until(seen)) {
        tokio::select! {
            () = &mut script, if !script_done => script_done = true,
            ev = driver.next() => {
                let Some(ev) = ev else {
                    assert!(script_done && until(seen), "the driver ended early: {:?}", seen.stops);
                    return;
                };
                match ev {
                    BotEvent::Event { event, .. } => {
                        if let Event::End(end) = &event {
                            seen.ends.push(end.reason.as_str().to_owned());
                            if end.reason.as_str() == "LIVE_ENDED" {
                                seen.tallies.push(Tally::new());
                            }
                        } else if let Some(t) = seen.tallies.last_mut() {
                            t.record(&event);
                        }
                        if let Event::Chat(chat) = &event {
                            if chat.message == "!hello" {
                                driver.bot_mut().send_chat("hello back").expect("send_chat");
                            }
                        }
                        seen.events.push(event);
                    }
                    BotEvent::Done { result, .. } => seen.done.push(result),
                    BotEvent::Notice(n) => seen.notices.push(n),
                    BotEvent::TokensRenewed(t) => seen.generations.push(t.generation()),
                    BotEvent::NeedsAuthorization => {
                        let (code, redirect) = code.take().expect("no authorization expected now");
                        driver.bot_mut().authorize(&code, &redirect);
                    }
                    BotEvent::Stopped(stop) => seen.stops.push(stop),
                    other => panic!("unexpected {other:?}"),
                }
            }
            () = tokio::time::sleep_until(deadline) => panic!(
                "not done within {limit:?} (script done: {script_done}); ends {:?}, stops {:?}, \
                 generations {:?}, {} events, {} notices, the last: {:?}",
                seen.ends, seen.stops, seen.generations, seen.events.len(), seen.notices.len(),
                seen.notices.last()
            ),
        }
    }
}

async fn shutdown(driver: Driver, revoke: bool) {
    tokio::time::timeout(Duration::from_secs(3), driver.shutdown(revoke))
        .await
        .expect("shutdown in time")
        .expect("shutdown");
}

async fn started(builder: onair_emulator::Builder) -> (Running, Control) {
    let emu = builder.start().await.expect("emulator");
    let control = Control::new(&emu);
    (emu, control)
}

fn chat_sent(seen: &Seen) -> usize {
    seen.done
        .iter()
        .filter(|r| matches!(r, CallResult::ChatSent))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_authorizes_streams_receives_and_chats() {
    let (emu, ctl) = started(Emulator::builder()).await;
    let app = emu.app();
    ctl.post("/live/start", json!({ "title": "driver test" }))
        .await;
    let code = ctl.consent().await;
    let bot = Bot::new(config(&emu.base_url(), &app), None, 7);
    let mut driver = Driver::new(bot).with_clock(EmulatorClock(emu.clock()));
    let mut seen = Seen::default();
    let script = async {
        ctl.wait_connections(1).await;
        ctl.emit("chat", json!({ "message": "!hello" })).await;
        ctl.emit("like", json!({ "type": "PAID", "combo": 2 }))
            .await;
        ctl.emit("donation", json!({ "amount": 300 })).await;
    };
    drive(
        &mut driver,
        &mut seen,
        Some((code, app.redirect_uri.clone())),
        script,
        Duration::from_secs(10),
        |s| s.events.len() == 3 && chat_sent(s) == 1,
    )
    .await;
    assert_eq!(seen.generations, [1]);
    let names: Vec<&str> = seen.events.iter().map(Event::name).collect();
    assert_eq!(names, ["chat", "like", "donation"]);
    assert_eq!(seen.tallies[0].total_donated(), 300);
    let chat = ctl.get("/chat").await;
    let mine: Vec<&Value> = chat["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["clientId"] == app.client_id.as_str())
        .collect();
    assert_eq!(mine.len(), 1, "{chat}");
    assert_eq!(mine[0]["message"], "hello back");
    shutdown(driver, false).await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_stream_is_closed_by_the_watchdog_and_reopened() {
    // No heartbeats and no events: only the bot's watchdog notices.
    let (emu, ctl) = started(Emulator::builder().heartbeat_ms(0)).await;
    let app = emu.app();
    ctl.post("/live/start", json!({})).await;
    let code = ctl.consent().await;
    let mut config = config(&emu.base_url(), &app);
    config.stream.watchdog_ms = 300;
    let mut driver = Driver::new(Bot::new(config, None, 11)).with_clock(EmulatorClock(emu.clock()));
    let mut seen = Seen::default();
    let started = Instant::now();
    let script = async {
        ctl.wait_connections(1).await;
        ctl.wait_connections(2).await;
        ctl.emit("chat", json!({ "message": "still there?" })).await;
    };
    drive(
        &mut driver,
        &mut seen,
        Some((code, app.redirect_uri.clone())),
        script,
        Duration::from_secs(10),
        |s| s.events.len() == 1,
    )
    .await;
    let connections = ctl.connections().await;
    assert_eq!(connections.len(), 2, "{connections:?}");
    assert_eq!(
        connections[0]["dropped"], true,
        "closed by the bot, no end frame"
    );
    assert!(connections[0]["end"].is_null());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(seen.ends.is_empty());
    shutdown(driver, false).await;
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_a_quiet_stream_open_on_a_fast_virtual_clock() {
    // ×50: a 5 s heartbeat every 100 ms, the default 45 s watchdog is
    // 900 ms (room for a loaded machine). Two real seconds are 100 s of a
    // quiet broadcast, over two watchdog periods: the stream stays up (the
    // driver sleeps on the virtual clock, not too long, not too short).
    let (emu, ctl) = started(Emulator::builder().speed(50.0).heartbeat_ms(5_000)).await;
    let app = emu.app();
    ctl.post("/live/start", json!({})).await;
    let code = ctl.consent().await;
    let mut driver = Driver::new(Bot::new(config(&emu.base_url(), &app), None, 13))
        .with_clock(EmulatorClock(emu.clock()));
    let mut seen = Seen::default();
    let script = async {
        ctl.wait_connections(1).await;
        let virtual_start = emu.now_ms();
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(emu.now_ms() - virtual_start >= 95_000, "the clock runs ×50");
        ctl.emit("chat", json!({ "message": "quiet night" })).await;
    };
    drive(
        &mut driver,
        &mut seen,
        Some((code, app.redirect_uri.clone())),
        script,
        Duration::from_secs(10),
        |s| s.events.len() == 1,
    )
    .await;
    let connections = ctl.connections().await;
    assert_eq!(connections.len(), 1, "never reconnected: {connections:?}");
    assert_eq!(seen.generations, [1]);
    shutdown(driver, false).await;
    emu.shutdown().await;
}

/// A server that accepts connections and never answers.
async fn black_hole() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    format!("http://{addr}")
}

/// A saved pair that is good for an hour from `now_ms`.
fn saved_tokens(now_ms: u64) -> Tokens {
    let json = format!(
        r#"{{"format":"onair.tokens","version":1,"generation":1,
        "access_token":"AT-test","access_expires_at_ms":{},"issued_at_ms":{now_ms},
        "refresh_token":"RT-test","refresh_expires_at_ms":{},"scope":"events.chat chat.send"}}"#,
        now_ms + 3_600_000,
        now_ms + 86_400_000
    );
    Tokens::from_json(json.as_bytes()).expect("tokens")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_never_answers_fails_by_the_bots_deadline() {
    let base = black_hole().await;
    let app = AppCredentials {
        client_id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301".into(),
        client_secret: "secret".into(),
        redirect_uri: "http://127.0.0.1/callback".into(),
    };
    let mut config = config(&base, &app);
    config.request_timeout_ms = 300;
    config.events = false;
    config.max_attempts = 1;
    config.check_credentials = false; // the chat is the one request
    let now = onair_tokio::SystemClock.now_ms();
    let mut driver = Driver::new(Bot::new(config, Some(saved_tokens(now)), 3));
    driver
        .bot_mut()
        .send_chat("anyone there?")
        .expect("send_chat");
    let mut seen = Seen::default();
    let started = Instant::now();
    drive(
        &mut driver,
        &mut seen,
        None,
        async {},
        Duration::from_secs(5),
        |s| !s.done.is_empty(),
    )
    .await;
    let elapsed = started.elapsed();
    // Told as the service unreachable: no answer in time.
    assert!(
        seen.notices.iter().any(|n| matches!(
            n,
            Notice::Unreachable {
                endpoint: Endpoint::Chat,
                failure: Unreached::TimedOut,
                ..
            }
        )),
        "{:?}",
        seen.notices
    );
    assert!(
        matches!(seen.done[..], [CallResult::Failed(_)]),
        "{:?}",
        seen.done
    );
    assert!(
        elapsed >= Duration::from_millis(290) && elapsed < Duration::from_secs(3),
        "failed by the 300 ms deadline, not before and not much later: {elapsed:?}"
    );
    // The request the bot gave up on is not waited for on the way out.
    let started = Instant::now();
    shutdown(driver, false).await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_does_not_wait_for_a_call_that_never_answers() {
    let base = black_hole().await;
    let app = AppCredentials {
        client_id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301".into(),
        client_secret: "secret".into(),
        redirect_uri: "http://127.0.0.1/callback".into(),
    };
    let mut config = config(&base, &app);
    config.events = false;
    let now = onair_tokio::SystemClock.now_ms();
    let mut driver = Driver::new(Bot::new(config, Some(saved_tokens(now)), 5));
    driver
        .bot_mut()
        .send_chat("anyone there?")
        .expect("send_chat");
    // The chat goes out and hangs (its deadline is 30 s away).
    let nothing = tokio::time::timeout(Duration::from_millis(200), driver.next()).await;
    assert!(nothing.is_err(), "nothing to hand out: {nothing:?}");
    let started = Instant::now();
    shutdown(driver, false).await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

/// A service whose token endpoint answers a refresh after `delay` (a new
/// pair, `AT-new`) and whose other endpoints never answer; counts the token
/// requests and the others.
async fn slow_token_endpoint(
    delay: Duration,
) -> (String, Arc<[std::sync::atomic::AtomicUsize; 2]>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let counts = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let counts = Arc::clone(&counts);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                if !head.starts_with(b"POST /v1/oauth/token ") {
                    counts[1].fetch_add(1, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                }
                counts[0].fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                let body = r#"{"access_token":"AT-new","token_type":"Bearer","expires_in":3600,"refresh_token":"RT-new","scope":"events.chat chat.send"}"#;
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}"), seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_in_the_poll_loop_drops_a_hanging_call_and_awaits_the_refresh() {
    use std::sync::atomic::Ordering;
    let (base, seen) = slow_token_endpoint(Duration::from_millis(300)).await;
    let app = AppCredentials {
        client_id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301".into(),
        client_secret: "secret".into(),
        redirect_uri: "http://127.0.0.1/callback".into(),
    };
    let mut config = config(&base, &app);
    config.events = false;
    config.check_credentials = false;
    // Issued 55 minutes ago: the refresh is due at once.
    let now = onair_tokio::SystemClock.now_ms();
    let saved = saved_tokens(now - 55 * 60_000);
    let mut driver = Driver::new(Bot::new(config, Some(saved), 5));
    let chat = driver
        .bot_mut()
        .send_chat("anyone there?")
        .expect("send_chat");
    // The refresh and the chat go out; neither is answered yet.
    while seen[0].load(Ordering::SeqCst) == 0 || seen[1].load(Ordering::SeqCst) == 0 {
        let next = tokio::time::timeout(Duration::from_millis(20), driver.next()).await;
        assert!(next.is_err(), "nothing to hand out yet: {next:?}");
    }
    // The shutdown is the ordinary loop: the bot drops the chat (answered),
    // awaits the refresh and hands out its pair, then stops, last.
    driver.bot_mut().shutdown(false);
    let started = Instant::now();
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(5), driver.next())
        .await
        .expect("stopped in time")
    {
        events.push(event);
    }
    assert!(
        events.contains(&BotEvent::Done {
            call: chat,
            result: CallResult::Failed(onair::CallFailure::Cancelled)
        }),
        "{events:?}"
    );
    let renewed = events.iter().position(
        |e| matches!(e, BotEvent::TokensRenewed(t) if t.access_token().expose() == "AT-new"),
    );
    assert!(renewed.is_some(), "the refresh was awaited: {events:?}");
    assert_eq!(events.last(), Some(&BotEvent::Stopped(Stop::ShutDown)));
    assert_eq!(renewed, Some(events.len() - 2), "{events:?}");
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(seen[0].load(Ordering::SeqCst), 1, "one refresh");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_open_that_never_answers_is_given_up_and_its_connection_closed() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::AsyncReadExt;

    // Accepts, reads, never answers; counts the connections still open.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let (accepted, open) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (a, o) = (Arc::clone(&accepted), Arc::clone(&open));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            a.fetch_add(1, Ordering::SeqCst);
            o.fetch_add(1, Ordering::SeqCst);
            let o = Arc::clone(&o);
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
                o.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    let app = AppCredentials {
        client_id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301".into(),
        client_secret: "secret".into(),
        redirect_uri: "http://127.0.0.1/callback".into(),
    };
    let mut config = config(&base, &app);
    config.stream.connect_timeout_ms = 150;
    // Only the stream's attempts reach this server.
    config.check_credentials = false;
    let now = onair_tokio::SystemClock.now_ms();
    let mut driver = Driver::new(Bot::new(config, Some(saved_tokens(now)), 9));
    let mut notices = Vec::new();
    let second_attempt = async {
        while accepted.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::pin!(second_attempt);
    let deadline = tokio::time::sleep(Duration::from_secs(5));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            () = &mut second_attempt => break,
            ev = driver.next() => notices.push(ev.expect("the driver ended")),
            () = &mut deadline => panic!("no second connect attempt within 5 s: {notices:?}"),
        }
    }
    // The first attempt was given up: its connection is closed, not held.
    let until = Instant::now() + Duration::from_secs(2);
    while open.load(Ordering::SeqCst) > 1 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(open.load(Ordering::SeqCst) <= 1, "attempts left open");
    shutdown(driver, false).await;
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("onair-tokio-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_resumes_from_the_token_file_and_shutdown_revokes_it() {
    let (emu, ctl) = started(Emulator::builder()).await;
    let app = emu.app();
    let dir = temp_dir("restart");
    let path = dir.join("tokens.json");
    ctl.post("/live/start", json!({})).await;
    let code = ctl.consent().await;

    // First run: consent, a saved pair, a stream.
    let mut driver = Driver::from_store(config(&emu.base_url(), &app), FileStore::new(&path))
        .expect("store")
        .with_clock(EmulatorClock(emu.clock()));
    let mut seen = Seen::default();
    drive(
        &mut driver,
        &mut seen,
        Some((code, app.redirect_uri.clone())),
        ctl.wait_connections(1),
        Duration::from_secs(10),
        |s| s.generations == [1],
    )
    .await;
    shutdown(driver, false).await;
    let saved = FileStore::new(&path)
        .load()
        .expect("load")
        .expect("the pair is saved");
    assert_eq!(saved.generation(), 1);

    // Second run: from the file, no consent, streaming at once.
    let mut driver = Driver::from_store(config(&emu.base_url(), &app), FileStore::new(&path))
        .expect("store")
        .with_clock(EmulatorClock(emu.clock()));
    let mut seen = Seen::default();
    let started = Instant::now();
    let script = async {
        ctl.wait_connections(2).await;
        ctl.emit("chat", json!({ "message": "welcome back" })).await;
    };
    drive(
        &mut driver,
        &mut seen,
        None,
        script,
        Duration::from_secs(10),
        |s| s.events.len() == 1,
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(seen.generations.is_empty(), "no new consent, no refresh");

    // Shutdown with revocation: the file is gone, the token refused.
    shutdown(driver, true).await;
    assert!(!path.exists(), "the token file is deleted");
    let live = reqwest::Client::new()
        .get(format!("{}/v1/live", emu.base_url()))
        .bearer_auth(saved.access_token().expose())
        .send()
        .await
        .expect("GET /v1/live");
    assert_eq!(live.status(), 401, "revoked");
    let requests = ctl.get("/requests").await;
    // The revocation, besides the start's credentials check (a revoke of a
    // token that does not exist).
    let check = onair_emulator::requests::fingerprint("onair-credentials-check");
    let revokes = requests["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .filter(|r| r["path"] == "/v1/oauth/revoke" && r["credential"] != check.as_str())
        .count();
    assert_eq!(revokes, 1);
    emu.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_token_expired_and_live_ended_keep_the_tally_equal_to_the_ledger() {
    let (emu, ctl) = started(Emulator::builder()).await;
    let app = emu.app();
    ctl.post("/live/start", json!({ "title": "first" })).await;
    let code = ctl.consent().await;
    let mut config = config(&emu.base_url(), &app);
    // The hour's jump of the shared clock below would otherwise also fire
    // the bot's 45 s watchdog, which may then close the stream before its
    // TOKEN_EXPIRED frame is read (right, for a real clock jump; a race
    // here). Heartbeats keep flowing, so a longer watchdog changes nothing else.
    config.stream.watchdog_ms = 3 * 3_600_000;
    let bot = Bot::new(config, None, 23);
    let mut driver = Driver::new(bot).with_clock(EmulatorClock(emu.clock()));
    let mut seen = Seen::default();
    let three = || async {
        ctl.emit(
            "chat",
            json!({ "user": { "id": "u1", "nickname": "Mina" } }),
        )
        .await;
        ctl.emit(
            "like",
            json!({ "user": { "id": "u2", "nickname": "Jo" }, "type": "PAID", "combo": 3 }),
        )
        .await;
        ctl.emit(
            "donation",
            json!({ "user": { "id": "u1", "nickname": "Mina" }, "amount": 500 }),
        )
        .await;
    };
    let script = async {
        ctl.wait_connections(1).await;
        three().await;
        ctl.post("/streams/end", json!({ "reason": "RECONNECT" }))
            .await;
        ctl.wait_connections(2).await;
        three().await;
        ctl.post("/clock/advance", json!({ "ms": 3_600_000 })).await;
        ctl.wait_connections(3).await;
        three().await;
        ctl.post("/live/end", json!({})).await;
        ctl.post("/live/start", json!({ "title": "second" })).await;
        ctl.wait_connections(4).await;
        three().await;
        ctl.post("/live/end", json!({})).await;
    };
    drive(
        &mut driver,
        &mut seen,
        Some((code, app.redirect_uri.clone())),
        script,
        Duration::from_secs(15),
        |s| s.ends.len() == 4,
    )
    .await;
    assert_eq!(
        seen.ends,
        ["RECONNECT", "TOKEN_EXPIRED", "LIVE_ENDED", "LIVE_ENDED"]
    );
    assert_eq!(seen.generations, [1, 2], "one refresh for the one expiry");
    assert_eq!(seen.events.len(), 4 * 3 + 4);

    // The tally of each broadcast equals the emulator's ledger.
    let ledger = ctl.get("/ledger").await;
    let broadcasts = ledger["broadcasts"].as_array().expect("broadcasts");
    assert_eq!(broadcasts.len(), 2);
    for (i, b) in broadcasts.iter().enumerate() {
        let bot = b["bots"]
            .as_array()
            .expect("bots")
            .iter()
            .find(|bot| bot["clientId"] == app.client_id.as_str())
            .expect("our bot in the ledger");
        let tally: serde_json::Value =
            serde_json::from_str(&TallyJson(&seen.tallies[i]).to_line()).expect("tally json");
        assert_eq!(bot["totals"], tally, "broadcast {}", i + 1);
        let delivered: u64 = bot["connections"]
            .as_array()
            .expect("connections")
            .iter()
            .map(|c| {
                ["chat", "presence", "like", "donation"]
                    .iter()
                    .map(|k| c["events"][k].as_u64().unwrap_or(0))
                    .sum::<u64>()
            })
            .sum();
        let received = if i == 0 { 9 } else { 3 };
        assert_eq!(delivered, received, "broadcast {}", i + 1);
    }
    assert_eq!(seen.tallies[0].total_hearts(), 3 * 30);
    assert_eq!(seen.tallies[0].total_donated(), 3 * 500);
    shutdown(driver, false).await;
    emu.shutdown().await;
}

/// The tally of this app's bot over the ledger's connections from index
/// `from` on (in the first broadcast), as `(chat, like, donation)` counts.
async fn delivered_since(ctl: &Control, from: usize) -> (u64, u64, u64) {
    let connections = ctl.connections().await;
    let mut counts = (0, 0, 0);
    for c in connections.iter().skip(from) {
        counts.0 += c["events"]["chat"].as_u64().unwrap_or(0);
        counts.1 += c["events"]["like"].as_u64().unwrap_or(0);
        counts.2 += c["events"]["donation"].as_u64().unwrap_or(0);
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_401_on_the_stream_stops_and_a_new_consent_code_resumes_it() {
    let (emu, ctl) = started(Emulator::builder()).await;
    let app = emu.app();
    ctl.post("/live/start", json!({ "title": "re-authorized" }))
        .await;
    let code = ctl.consent().await;
    let mut driver = Driver::new(Bot::new(config(&emu.base_url(), &app), None, 31))
        .with_clock(EmulatorClock(emu.clock()));
    let mut seen = Seen::default();
    let script = async {
        ctl.wait_connections(1).await;
        ctl.emit("chat", json!({ "message": "before" })).await;
        // The next two stream opens answer 401: the refresh between them
        // does not help, so the bot stops for re-authorization.
        ctl.post(
            "/fail",
            json!({ "path": "/v1/live/events", "status": 401, "times": 2 }),
        )
        .await;
        ctl.post("/streams/drop", json!({})).await;
    };
    drive(
        &mut driver,
        &mut seen,
        Some((code, app.redirect_uri.clone())),
        script,
        Duration::from_secs(10),
        |s| !s.stops.is_empty(),
    )
    .await;
    assert!(
        matches!(seen.stops.as_slice(), [Stop::Reauthorize(_)]),
        "{:?}",
        seen.stops
    );
    assert_eq!(seen.generations, [1, 2], "one refresh between the two 401s");
    let before = ctl.connections().await.len();

    // The DJ consents again: the bot exchanges the new code and resumes.
    let code = ctl.consent().await;
    driver.bot_mut().authorize(&code, &app.redirect_uri);
    let after_resume = Tally::new();
    seen.tallies.push(after_resume);
    let script = async {
        ctl.wait_connections(before + 1).await;
        ctl.emit(
            "chat",
            json!({ "user": { "id": "u1", "nickname": "Mina" }, "message": "after" }),
        )
        .await;
        ctl.emit(
            "like",
            json!({ "user": { "id": "u2", "nickname": "Jo" }, "type": "PAID", "combo": 2 }),
        )
        .await;
        ctl.emit(
            "donation",
            json!({ "user": { "id": "u1", "nickname": "Mina" }, "amount": 700 }),
        )
        .await;
    };
    drive(
        &mut driver,
        &mut seen,
        None,
        script,
        Duration::from_secs(10),
        |s| s.events.len() == 4,
    )
    .await;
    assert_eq!(seen.stops.len(), 1, "no second stop: {:?}", seen.stops);
    assert_eq!(seen.generations, [1, 2, 3], "the new consent's pair");
    assert!(driver.bot().stop().is_none());
    // What the bot counted after the resume is what the service delivered
    // on the connections opened after it.
    let tally = seen.tallies.last().expect("tally");
    let (chat, like, donation) = delivered_since(&ctl, before).await;
    assert_eq!((chat, like, donation), (1, 1, 1));
    assert_eq!(tally.total_donated(), 700);
    assert_eq!(tally.total_hearts(), 20);
    let messages: Vec<&str> = seen
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Chat(c) => Some(c.message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(messages, ["before", "after"]);
    shutdown(driver, false).await;
    emu.shutdown().await;
}

/// A store two processes share: the latest pair, behind a lock.
#[derive(Clone, Default)]
struct Shared(Arc<std::sync::Mutex<Option<Tokens>>>);

impl TokenStore for Shared {
    fn load(&self) -> Result<Option<Tokens>, onair_tokio::StoreError> {
        Ok(self.0.lock().expect("lock").clone())
    }
    fn save(&self, tokens: &Tokens) -> Result<(), onair_tokio::StoreError> {
        *self.0.lock().expect("lock") = Some(tokens.clone());
        Ok(())
    }
    fn clear(&self) -> Result<(), onair_tokio::StoreError> {
        *self.0.lock().expect("lock") = None;
        Ok(())
    }
}

impl RefreshGate for Shared {
    fn before_refresh(&self, generation: u64) -> GateFuture {
        let stored = self.0.lock().expect("lock").clone();
        Box::pin(async move {
            Ok(match stored {
                Some(t) if t.generation() > generation => BeforeRefresh::Newer(t),
                _ => BeforeRefresh::Proceed,
            })
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_sharing_a_pair_refresh_it_once() {
    let (emu, ctl) = started(Emulator::builder().speed(0.0)).await;
    let app = emu.app();
    let store = Shared::default();
    ctl.post("/live/start", json!({})).await;
    let code = ctl.consent().await;
    // Process A: consent, the pair in the shared store, a stream.
    let mut a = Driver::from_store(config(&emu.base_url(), &app), store.clone())
        .expect("store")
        .with_refresh_gate(store.clone())
        .with_clock(EmulatorClock(emu.clock()));
    let mut seen_a = Seen::default();
    drive(
        &mut a,
        &mut seen_a,
        Some((code, app.redirect_uri.clone())),
        ctl.wait_connections(1),
        Duration::from_secs(10),
        |s| s.generations == [1],
    )
    .await;
    // Process B: the same pair, from the store.
    let mut b = Driver::from_store(config(&emu.base_url(), &app), store.clone())
        .expect("store")
        .with_refresh_gate(store.clone())
        .with_clock(EmulatorClock(emu.clock()));
    let mut seen_b = Seen::default();
    drive(
        &mut b,
        &mut seen_b,
        None,
        ctl.wait_connections(2),
        Duration::from_secs(10),
        |_| true,
    )
    .await;
    // Both pairs are due for a refresh; A refreshes first and stores the new one.
    ctl.post("/clock/advance", json!({ "ms": 3_300_000 })).await;
    drive(
        &mut a,
        &mut seen_a,
        None,
        async {},
        Duration::from_secs(10),
        |s| s.generations == [1, 2],
    )
    .await;
    // B takes the stored pair instead of sending its spent refresh token.
    drive(
        &mut b,
        &mut seen_b,
        None,
        async {},
        Duration::from_secs(10),
        |_| true,
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while b.bot().token_pair().map(Tokens::generation) != Some(2) {
        assert!(Instant::now() < deadline, "B did not take the stored pair");
        let _ = tokio::time::timeout(Duration::from_millis(50), b.next()).await;
    }
    assert!(seen_b.generations.is_empty(), "B saved nothing of its own");
    let requests = ctl.get("/requests").await;
    let refreshes: Vec<&Value> = requests["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .filter(|r| r["grant"] == "refresh_token")
        .collect();
    assert_eq!(
        refreshes.len(),
        1,
        "one refresh between them: {refreshes:?}"
    );
    assert!(
        refreshes.iter().all(|r| r["oauthError"].is_null()),
        "no invalid_grant: {refreshes:?}"
    );
    shutdown(a, false).await;
    shutdown(b, false).await;
    emu.shutdown().await;
}
