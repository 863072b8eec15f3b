//! The limits a public server needs, against `onair host` as a process (this
//! test binary again, running the ignored `host_process` test, under
//! `ulimit -n` where the descriptor limit matters) and the emulator
//! in-process, all on 127.0.0.1 (attackers connect from other loopback
//! addresses, 127.0.0.2 and up, so the caps per client address can tell
//! them from the DJ and the admin):
//!
//! - slow headers and a slow body are cut (timeouts lowered through
//!   `[host]`; the defaults are 10 s and 60 s);
//! - excess connections and live streams from one client are answered 429,
//!   past the cap in all 503, while a DJ, the admin and the bots' own
//!   reconnects get through, at a descriptor limit of 256;
//! - a bot's page stays bounded after many 60 KB chat lines;
//! - every response carries the security headers; pages have no inline
//!   script or style.

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use common::{admin_get, browser, consent, control, get, Setup, ADMIN, KEY};
use onair_emulator::Running;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const CONFIG_VAR: &str = "ONAIR_LIMITS_TEST_HOST_CONFIG";

/// The host process of the other tests: `onair_host::main` on the file
/// they name (they run this binary again with `--ignored --exact`).
#[test]
#[ignore = "the host process the other tests start"]
fn host_process() {
    let Ok(config) = std::env::var(CONFIG_VAR) else {
        return;
    };
    let code = onair_host::main(Path::new(&config));
    std::process::exit(if code == ExitCode::SUCCESS { 0 } else { 1 });
}

struct HostProcess {
    child: Child,
    url: String,
    port: u16,
    log: PathBuf,
}

impl HostProcess {
    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, and the exit status.
    fn stop(mut self) -> Option<i32> {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The host as a process with `host_extra` in `[host]`, under
/// `ulimit -n nofile` when given; returns once `/healthz` answers.
async fn start_host(s: &Setup, host_extra: &str, nofile: Option<u32>) -> HostProcess {
    let text = s.text_with(host_extra);
    let config = s.dir.join("host.toml");
    std::fs::write(&config, text).expect("config");
    let log = s.dir.join("host.log");
    let exe = std::env::current_exe().expect("this test binary");
    let script = match nofile {
        Some(n) => format!("ulimit -n {n} && exec \"$0\" \"$@\""),
        None => "exec \"$0\" \"$@\"".to_owned(),
    };
    let child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(exe)
        .args([
            "host_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CONFIG_VAR, &config)
        .env("ONAIR_HOST_CLIENT_SECRET", &s.secret)
        .env("ONAIR_HOST_KEY", KEY)
        .env("ONAIR_HOST_ADMIN_TOKEN", ADMIN)
        .env("ONAIR_HOST_LOG", "info,sqlx=warn")
        .env_remove("ONAIR_HOST_DATABASE")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("the host process");
    let host = HostProcess {
        child,
        url: format!("http://127.0.0.1:{}", s.port),
        port: s.port,
        log,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(r) = reqwest::get(format!("{}/healthz", host.url)).await {
            if r.status() == 200 {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the host did not start: {}",
            host.log_text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    host
}

/// DJ `dj` connects through /connect in `b`; returns the bot's page
/// (`/bots/N`).
async fn connect(b: &reqwest::Client, host: &HostProcess, dj: &str) -> String {
    consent(b, &format!("{}/connect", host.url), dj).await.to
}

/// The admin's view through the API, from 127.0.0.1.
async fn api(host: &HostProcess, path: &str) -> reqwest::Response {
    admin_get(&format!("{}{path}", host.url)).await
}

async fn bot_state(host: &HostProcess, id: i64) -> Value {
    api(host, &format!("/api/bots/{id}"))
        .await
        .json::<Value>()
        .await
        .expect("api JSON")["bot"]
        .clone()
}

async fn until_connected(host: &HostProcess, id: i64, connects_over: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let bot = bot_state(host, id).await;
        let connects = bot["status"]["counters"]["connects"].as_u64().unwrap_or(0);
        if bot["state"] == "connected" && connects > connects_over {
            return;
        }
        assert!(Instant::now() < deadline, "bot {id} not connected: {bot}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A connection from `from` (a loopback address) to the host.
async fn connect_from(from: Ipv4Addr, port: u16) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(IpAddr::V4(from), 0))?;
    socket
        .connect(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
        .await
}

/// Sends `GET path` on `stream` with `headers` and reads the status of the
/// answer's head: `None` when the host closed the connection instead.
async fn get_status(stream: &mut TcpStream, path: &str, headers: &str) -> Option<u16> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Some(())
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .ok()??;
    let text = String::from_utf8_lossy(&head);
    text.split(' ').nth(1)?.parse().ok()
}

/// The session cookies of `b` for the host, as one `Cookie:` header.
fn cookie_header(jar: &reqwest::cookie::Jar, host: &HostProcess) -> String {
    use reqwest::cookie::CookieStore;
    let url = host.url.parse().expect("url");
    let cookies = jar
        .cookies(&url)
        .and_then(|v| v.to_str().ok().map(str::to_owned))
        .unwrap_or_default();
    format!("Cookie: {cookies}\r\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_and_slow_bodies_are_cut() {
    let s = Setup::new("limits-slow").await;
    let host = start_host(
        &s,
        "header_timeout_ms = 1000\nrequest_timeout_ms = 3000",
        None,
    )
    .await;

    // The request head a byte at a time: the connection is closed once the
    // header timeout (1 s here) is over.
    let mut slow = connect_from(Ipv4Addr::LOCALHOST, host.port)
        .await
        .expect("connect");
    let started = Instant::now();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .expect("write");
    let mut closed = None;
    let mut buf = [0u8; 256];
    while started.elapsed() < Duration::from_secs(10) {
        if slow.write_all(b"a").await.is_err() {
            closed = Some(started.elapsed());
            break;
        }
        match tokio::time::timeout(Duration::from_millis(300), slow.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                closed = Some(started.elapsed());
                break;
            }
            Ok(Ok(_)) => {
                // hyper may answer 408 first; the close follows.
            }
            Err(_) => {}
        }
    }
    let closed = closed.expect("a slow request head is held for ever");
    assert!(
        closed >= Duration::from_millis(900) && closed < Duration::from_secs(4),
        "closed after {closed:?}"
    );

    // A connection kept alive after its answer, idle: closed once the
    // header timeout is over too.
    let mut idle = connect_from(Ipv4Addr::LOCALHOST, host.port)
        .await
        .expect("connect");
    assert_eq!(get_status(&mut idle, "/healthz", "").await, Some(200));
    let answered = Instant::now();
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = [0u8; 256];
        loop {
            match idle.read(&mut buf).await {
                Ok(0) | Err(_) => return answered.elapsed(),
                Ok(_) => {}
            }
        }
    })
    .await
    .expect("an idle connection is held for ever");
    assert!(closed < Duration::from_secs(3), "closed after {closed:?}");

    // A body a byte every 500 ms: answered 408 once the request timeout
    // (3 s here) is over, though no pause reaches the body timeout (10 s).
    let mut slow = connect_from(Ipv4Addr::LOCALHOST, host.port)
        .await
        .expect("connect");
    let started = Instant::now();
    let head = format!(
        "POST /admin/login HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: {}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 200\r\n\r\ntoken=",
        host.url
    );
    slow.write_all(head.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    while started.elapsed() < Duration::from_secs(10) {
        if slow.write_all(b"a").await.is_err() {
            break;
        }
        match tokio::time::timeout(Duration::from_millis(500), slow.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => {
                answer.extend_from_slice(&buf[..n]);
                if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            Err(_) => {}
        }
    }
    let answered = started.elapsed();
    let answer = String::from_utf8_lossy(&answer).to_lowercase();
    assert!(
        answer.starts_with("http/1.1 408"),
        "after {answered:?}: {answer:?}"
    );
    assert!(
        answered >= Duration::from_millis(2900) && answered < Duration::from_secs(5),
        "answered after {answered:?}"
    );
    assert!(answer.contains("content-security-policy: "), "{answer}");

    // A body over the cap (16 KiB): 413 at once.
    let big = reqwest::Client::new()
        .post(format!("{}/admin/login", host.url))
        .header("origin", &host.url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={}", "a".repeat(20_000)))
        .send()
        .await
        .expect("a big body");
    assert_eq!(big.status(), 413);

    // The host still serves, and stops cleanly.
    let ok = reqwest::get(format!("{}/healthz", host.url))
        .await
        .expect("healthz");
    assert_eq!(ok.status(), 200);
    assert_eq!(host.stop(), Some(0));
}

/// How many streams ana's bot has open at the emulator.
async fn open_streams(emu: &Running, dj: &str) -> u64 {
    let v = control(emu, "/djs", None).await;
    v["djs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["dj"] == dj)
        .and_then(|d| d["openStreams"].as_u64())
        .unwrap_or(0)
}

/// Drops `dj`'s stream at the emulator and waits for the bot to open
/// another (the bot's own connection out of the host).
async fn bot_reconnects(emu: &Running, dj: &str) {
    assert_eq!(open_streams(emu, dj).await, 1, "{dj}'s bot has its stream");
    control(emu, "/streams/drop", Some(json!({ "dj": dj }))).await;
    assert_eq!(open_streams(emu, dj).await, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while open_streams(emu, dj).await != 1 {
        assert!(Instant::now() < deadline, "{dj}'s bot did not reconnect");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn excess_clients_are_refused_while_djs_the_admin_and_the_bots_get_through() {
    let s = Setup::new("limits-caps").await;
    // The descriptor limit is 256: the cap in all is derived from it (192
    // connections; 64 descriptors kept for the bots, the database, the
    // listener and 16 refusals in flight). Live streams: 8 per session, 16
    // per client (the defaults), 40 in all (set here).
    let host = start_host(&s, "max_streams = 40", Some(256)).await;
    let log = host.log_text();
    assert!(
        log.contains("descriptors=256") && log.contains("max_connections=192"),
        "the cap is not derived from the descriptor limit: {log}"
    );

    // Two DJs on air, each with a bot; ana is the test's DJ, mallory the
    // attacker (a DJ too: anyone can consent).
    let dj = browser();
    let to = connect(&dj, &host, "ana").await;
    let ana: i64 = to.trim_start_matches("/bots/").parse().expect("bot id");
    let mallory_jar = std::sync::Arc::new(reqwest::cookie::Jar::default());
    let mallory = reqwest::Client::builder()
        .cookie_provider(mallory_jar.clone())
        .redirect(reqwest::redirect::Policy::none())
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)))
        .build()
        .expect("client");
    connect(&mallory, &host, "mallory").await;
    drop(mallory);
    for name in ["ana", "mallory"] {
        control(&s.emu, "/live/start", Some(json!({ "dj": name }))).await;
    }
    until_connected(&host, ana, 0).await;

    // Connections in all: 4 clients of 64 connections each want 256: at
    // most 192 are served, the rest answered 503 (or closed past the
    // refusals in flight), and no descriptor runs out: a bot reconnects
    // while the host is full.
    let mut held = Vec::new();
    let (mut served, mut full, mut other) = (0, 0, 0);
    for last in 10..14u8 {
        let from = Ipv4Addr::new(127, 0, 0, last);
        for _ in 0..64 {
            let Ok(mut c) = connect_from(from, host.port).await else {
                other += 1;
                continue;
            };
            match get_status(&mut c, "/healthz", "").await {
                Some(200) => served += 1,
                Some(503) => full += 1,
                _ => other += 1,
            }
            held.push(c);
        }
    }
    assert!(
        (180..=192).contains(&served) && full >= 50,
        "served {served}, refused 503 {full}, others {other}"
    );
    let refused = reqwest::Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 20)))
        .build()
        .expect("client")
        .get(format!("{}/healthz", host.url))
        .send()
        .await
        .expect("a new client while full");
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("content-security-policy"));
    bot_reconnects(&s.emu, "ana").await;
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(15);
    while reqwest::get(format!("{}/healthz", host.url))
        .await
        .map(|r| r.status() != 200)
        .unwrap_or(true)
    {
        assert!(Instant::now() < deadline, "the host is still full");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Mallory, from 127.0.0.2 with her session, asks for 300 live streams:
    // 8 (her session's cap) are served, the rest refused 429 (by the stream
    // cap, past 64 connections by the connection cap, or closed past the
    // refusals in flight).
    let attacker = Ipv4Addr::new(127, 0, 0, 2);
    let cookie = cookie_header(&mallory_jar, &host);
    let mut held = Vec::new();
    let (mut served, mut refused, mut other) = (0, 0, Vec::new());
    for _ in 0..300 {
        let Ok(mut c) = connect_from(attacker, host.port).await else {
            other.push(0);
            continue;
        };
        match get_status(&mut c, "/events", &cookie).await {
            Some(200) => served += 1,
            Some(429) => refused += 1,
            Some(code) => other.push(code),
            None => other.push(0),
        }
        held.push(c);
    }
    assert_eq!(served, 8, "streams of one session (refused {refused})");
    assert!(refused >= 200, "refused {refused}, others {other:?}");
    assert!(
        other.iter().all(|c| *c == 0),
        "only 429 or a close: {other:?}"
    );
    // Her address holds 64 connections: one more is refused at once.
    let mut more = connect_from(attacker, host.port).await.expect("connect");
    assert_eq!(get_status(&mut more, "/healthz", "").await, Some(429));

    // Meanwhile the DJ sees their bot and its live updates, the admin
    // reads the API, and a bot whose stream drops reconnects.
    let (status, _) = get(&dj, &format!("{}/bots/{ana}", host.url)).await;
    assert_eq!(status, 200, "the DJ's page");
    let live = dj
        .get(format!("{}/events?bot={ana}", host.url))
        .send()
        .await
        .expect("the DJ's stream");
    assert_eq!(live.status(), 200);
    assert_eq!(api(&host, "/api/bots").await.status(), 200);
    bot_reconnects(&s.emu, "ana").await;
    until_connected(&host, ana, 1).await;

    // Streams per client address: the admin's bearer token (no session)
    // from 127.0.0.3 gets 16, the 17th is refused 429.
    let admin_header = format!("Authorization: Bearer {ADMIN}\r\n");
    let from = Ipv4Addr::new(127, 0, 0, 3);
    let mut statuses = Vec::new();
    for _ in 0..17 {
        let mut c = connect_from(from, host.port).await.expect("connect");
        statuses.push(get_status(&mut c, "/events", &admin_header).await);
        held.push(c);
    }
    assert!(
        statuses[..16].iter().all(|s| *s == Some(200)),
        "{statuses:?}"
    );
    assert_eq!(statuses[16], Some(429));
    // Streams in all (40 here; held: mallory's 8, the DJ's 1, 16 from
    // 127.0.0.3): 15 more from other addresses are served, then 503.
    let mut statuses = Vec::new();
    'all: for last in 30..40u8 {
        let from = Ipv4Addr::new(127, 0, 0, last);
        for _ in 0..5 {
            let mut c = connect_from(from, host.port).await.expect("connect");
            let status = get_status(&mut c, "/events", &admin_header).await;
            statuses.push(status);
            held.push(c);
            if status != Some(200) {
                break 'all;
            }
        }
    }
    assert_eq!(statuses.last(), Some(&Some(503)), "{statuses:?}");
    assert_eq!(statuses.len(), 16, "{statuses:?}");
    drop(live);
    drop(held);
    let log = host.log_text();
    assert!(
        !log.to_lowercase().contains("too many open files"),
        "descriptors ran out: {log}"
    );
    assert_eq!(host.stop(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_page_stays_bounded_after_many_long_chat_lines() {
    let s = Setup::new("limits-pages").await;
    // The log keeps every line of this broadcast (120 chat lines and 120
    // greetings: the default 200 would prune some, depending on timing).
    let host = start_host(&s, "events_per_broadcast = 1000", None).await;
    let dj = browser();
    let to = connect(&dj, &host, "ana").await;
    let id: i64 = to.trim_start_matches("/bots/").parse().expect("bot id");
    control(&s.emu, "/live/start", Some(json!({"dj": "ana"}))).await;
    until_connected(&host, id, 0).await;

    let mut live = dj
        .get(format!("{}/events?bot={id}", host.url))
        .send()
        .await
        .expect("the DJ's stream");
    assert_eq!(live.status(), 200);
    // 120 chat lines of 60 KB (the emulator's control API takes bodies up
    // to 64 KiB), each with a bidi override.
    let text = format!("\u{202E}{}", "x<".repeat(30_000));
    for i in 0..120 {
        let chat = json!({"dj": "ana", "event": "chat", "data": {
            "user": {"id": format!("u{i}"), "nickname": format!("\u{202E}Mina{i}")},
            "message": text,
        }});
        control(&s.emu, "/emit", Some(chat)).await;
    }
    // A live log line is cut too.
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !seen.contains("event: log")
        || !seen[seen.find("event: log").unwrap_or(0)..].contains("\n\n")
    {
        assert!(
            Instant::now() < deadline,
            "no live log line: {}",
            seen.len()
        );
        let chunk = tokio::time::timeout(Duration::from_secs(10), live.chunk())
            .await
            .expect("a frame in time")
            .expect("the stream")
            .expect("a frame");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let at = seen.find("event: log").unwrap_or(0);
    let event = &seen[at..at + seen[at..].find("\n\n").unwrap_or(0)];
    assert!(
        event.len() < 2_500,
        "a live log line of {} bytes",
        event.len()
    );
    assert!(event.contains("…</bdi>"), "{event}");
    drop(live);

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v = api(&host, &format!("/api/bots/{id}?events=1000"))
            .await
            .json::<Value>()
            .await
            .expect("api JSON");
        let chats = v["events"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["kind"] == "chat")
            .count();
        if chats >= 120 {
            break;
        }
        assert!(Instant::now() < deadline, "{chats} chat lines logged");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (_, page) = get(&dj, &format!("{}/bots/{id}", host.url)).await;
    // 100 lines of at most 300 characters (escaped: 4 bytes for a '<'),
    // the card and the frame: under 160 KB (7 MB before lines were cut).
    assert!(page.len() < 160_000, "a page of {} bytes", page.len());
    let lines = page.matches("<li data-kind=").count();
    assert_eq!(lines, 100, "log lines on the page");
    assert!(page.contains("data-max=\"100\""));
    // Every chat line isolated: the override cannot reach past its <bdi>.
    let chat_lines = page.matches("<li data-kind=\"chat\">").count();
    let isolated = page
        .matches("<span class=\"kind\">chat</span><bdi>")
        .count();
    assert_eq!(chat_lines, isolated, "{page:.2000}");
    assert_eq!(host.stop(), Some(0));
}

/// An inline event handler attribute (` onclick=`, ` onload=`…).
fn has_handler(html: &str) -> bool {
    html.match_indices(" on").any(|(at, _)| {
        let rest = &html[at + 3..];
        let name: String = rest.chars().take_while(char::is_ascii_lowercase).collect();
        !name.is_empty() && rest[name.len()..].starts_with('=')
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_has_the_security_headers_and_pages_no_inline_script() {
    let s = Setup::new("limits-headers").await;
    let host = start_host(&s, "", None).await;
    let dj = browser();
    let to = connect(&dj, &host, "ana").await;

    let anonymous = reqwest::Client::new();
    let mut seen = Vec::new();
    for (who, path) in [
        (&anonymous, "/".to_owned()),
        (&dj, "/".to_owned()),
        (&dj, to.clone()),
        (&anonymous, "/assets/host.js".to_owned()),
        (&anonymous, "/assets/host.css".to_owned()),
        (&anonymous, "/no/such/page".to_owned()),
        (&anonymous, "/bots/1".to_owned()),
        (&anonymous, "/api/bots".to_owned()),
        (&anonymous, "/admin/login".to_owned()),
        (&anonymous, "/metrics".to_owned()),
    ] {
        let r = who
            .get(format!("{}{path}", host.url))
            .send()
            .await
            .expect(&path);
        let h = r.headers().clone();
        let header = |name: &str| {
            h.get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        let csp = header("content-security-policy");
        for part in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(part), "{path}: {part} not in {csp:?}");
        }
        assert!(!csp.contains("unsafe"), "{path}: {csp}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header("referrer-policy"), "same-origin", "{path}");
        let status = r.status().as_u16();
        let content_type = header("content-type");
        let body = r.text().await.expect("body");
        if content_type.starts_with("text/html") {
            assert!(!body.contains("<script>"), "{path}: an inline script");
            assert!(!body.contains("<style"), "{path}: an inline style");
            assert!(!body.contains(" style="), "{path}: a style attribute");
            assert!(!has_handler(&body), "{path}: an inline handler");
        }
        seen.push((path, status, content_type, body));
    }
    let find = |p: &str, who: usize| seen.iter().filter(|s| s.0 == p).nth(who).expect(p);
    // The DJ's pages load the script from the host, which serves it.
    let (_, status, _, dashboard) = find("/", 1);
    assert_eq!(*status, 200);
    assert!(
        dashboard.contains("<script src=\"/assets/host.js\" defer>"),
        "{dashboard}"
    );
    assert!(dashboard.contains("<link rel=\"stylesheet\" href=\"/assets/host.css\">"));
    let (_, status, _, bot_page) = find(&to, 0);
    assert_eq!(*status, 200);
    assert!(bot_page.contains("<script src=\"/assets/host.js\" defer>"));
    let (_, status, content_type, script) = find("/assets/host.js", 0);
    assert_eq!(*status, 200);
    assert!(content_type.starts_with("text/javascript"));
    assert!(script.contains("new EventSource('/events')"));
    let (_, status, content_type, _) = find("/assets/host.css", 0);
    assert_eq!(*status, 200);
    assert!(content_type.starts_with("text/css"));
    assert_eq!(find("/no/such/page", 0).1, 404);
    assert_eq!(host.stop(), Some(0));
}
