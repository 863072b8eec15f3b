//! `onair ctl` end to end: the built binary drives a running `onair serve`
//! (the built binary on 127.0.0.1:0, its clock frozen) and each command's
//! effect is checked where a bot would see it — the bytes of an open event
//! stream, the answer of the next call — or in the ledger and request log.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A running `onair serve --json`, stopped when dropped.
struct Serve {
    child: Child,
    base: String,
    addr: String,
    line: String,
    client_id: String,
    client_secret: String,
    redirect_uri: String,
    dir: std::path::PathBuf,
}

impl Serve {
    fn start(name: &str) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_onair"))
            .args(["serve", "--json", "--port", "0", "--speed", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn onair serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the --json line");
        let v: Value = serde_json::from_str(&line).expect("one JSON object");
        let s = |k: &str| v[k].as_str().expect(k).to_owned();
        let base = s("baseUrl");
        let dir = std::env::temp_dir().join(format!("onair-ctl-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Serve {
            child,
            addr: base.trim_start_matches("http://").to_owned(),
            base,
            line: line.trim_end().to_owned(),
            client_id: s("clientId"),
            client_secret: s("clientSecret"),
            redirect_uri: s("redirectUri"),
            dir,
        }
    }

    /// `onair ctl --url BASE ARGS…`.
    fn ctl(&self, args: &[&str]) -> Run {
        let mut all = vec!["ctl", "--url", &self.base];
        all.extend_from_slice(args);
        onair(&all, &[])
    }

    /// `onair ctl ARGS…` that must succeed; its stdout.
    #[track_caller]
    fn ok(&self, args: &[&str]) -> String {
        let run = self.ctl(args);
        assert_eq!(run.code, 0, "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.is_empty(), "{args:?}: {}", run.stderr);
        run.stdout
    }

    /// `onair ctl ARGS…` printing JSON: the value.
    #[track_caller]
    fn json(&self, args: &[&str]) -> Value {
        let out = self.ok(args);
        assert_eq!(out.lines().count(), 1, "{args:?}: one line: {out}");
        serde_json::from_str(&out).expect("JSON")
    }

    fn control(&self, method: &str, path: &str, body: &str) -> Value {
        let r = http(&self.addr, method, &format!("/_emulator{path}"), &[], body);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        serde_json::from_str(&r.body).expect("control JSON")
    }

    fn state(&self) -> Value {
        self.control("GET", "/state", "")
    }

    /// A consent code (through `onair ctl consent code --json`) exchanged
    /// for an access token.
    fn token(&self, scope: Option<&str>) -> String {
        let mut args = vec!["consent", "code", "--json"];
        if let Some(s) = scope {
            args.extend(["--scope", s]);
        }
        let consent = self.json(&args);
        let code = consent["code"].as_str().expect("code");
        let form = format!(
            "grant_type=authorization_code&code={code}&redirect_uri={}&client_id={}&client_secret={}",
            enc(&self.redirect_uri),
            self.client_id,
            self.client_secret
        );
        let r = http(
            &self.addr,
            "POST",
            "/v1/oauth/token",
            &[("content-type", "application/x-www-form-urlencoded")],
            &form,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        let v: Value = serde_json::from_str(&r.body).expect("token JSON");
        v["access_token"].as_str().expect("access_token").to_owned()
    }

    fn get(&self, path: &str, token: &str) -> Answer {
        http(
            &self.addr,
            "GET",
            path,
            &[("authorization", &format!("Bearer {token}"))],
            "",
        )
    }

    fn chat(&self, token: &str, message: &str) -> Answer {
        http(
            &self.addr,
            "POST",
            "/v1/live/chat",
            &[
                ("authorization", &format!("Bearer {token}")),
                ("content-type", "application/json"),
            ],
            &json!({ "message": message }).to_string(),
        )
    }

    /// Opens the event stream; a thread keeps reading it.
    fn stream(&self, token: &str) -> Stream {
        let mut tcp = TcpStream::connect(&self.addr).expect("connect");
        write!(
            tcp,
            "GET /v1/live/events HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n",
            self.addr
        )
        .expect("write");
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let closed = Arc::new(AtomicBool::new(false));
        let (b, c) = (Arc::clone(&bytes), Arc::clone(&closed));
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match tcp.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => b.lock().expect("lock").extend_from_slice(&buf[..n]),
                }
            }
            c.store(true, Ordering::SeqCst);
        });
        Stream { bytes, closed }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An open event stream as read so far.
struct Stream {
    bytes: Arc<Mutex<Vec<u8>>>,
    closed: Arc<AtomicBool>,
}

impl Stream {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes.lock().expect("lock")).into_owned()
    }

    fn count(&self, needle: &str) -> usize {
        self.text().matches(needle).count()
    }

    fn closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

/// Waits (up to 10 s) until `what` holds.
#[track_caller]
fn until(why: &str, mut what: impl FnMut() -> bool) {
    let start = Instant::now();
    while !what() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "waited for {why}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// One HTTP/1.1 request, `Connection: close`; the body de-chunked.
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut tcp = TcpStream::connect(addr).expect("connect");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    tcp.write_all(req.as_bytes()).expect("write");
    let mut raw = Vec::new();
    tcp.read_to_end(&mut raw).expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").expect("a head");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        let mut out = String::new();
        let mut rest = rest;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).expect("chunk size");
            if n == 0 {
                break;
            }
            out.push_str(&after[..n]);
            rest = &after[n + 2..];
        }
        out
    } else {
        rest.to_owned()
    };
    Answer {
        status,
        head: head.to_owned(),
        body,
    }
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn onair(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_onair"));
    cmd.args(args)
        .stdin(Stdio::null())
        .env_remove("ONAIR_EMULATOR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run onair");
    Run {
        code: out.status.code().expect("an exit code"),
        stdout: String::from_utf8(out.stdout).expect("utf-8"),
        stderr: String::from_utf8(out.stderr).expect("utf-8"),
    }
}

/// The streams, the events, the clock and the bot's standing: each command
/// seen doing what it says on a stream a bot holds open.
#[test]
fn stream_event_clock_and_consent_commands_act_on_a_running_emulator() {
    let emu = Serve::start("streams");
    let live = emu.ok(&["live", "start", "--title", "Late night lo-fi"]);
    assert!(live.starts_with("on air: liveId "), "{live}");
    assert_eq!(emu.state()["onAir"], true);

    let manager = emu.ok(&["manager", "on"]);
    assert!(
        manager.starts_with("the bot is a manager of main"),
        "{manager}"
    );
    assert_eq!(emu.state()["botManager"], true);

    // Found through the --json line (a file and stdin) and ONAIR_EMULATOR too.
    let line_file = emu.dir.join("serve.json");
    std::fs::write(&line_file, format!("{}\n", emu.line)).expect("write");
    let by_file = onair(
        &[
            "ctl",
            "--json-line",
            line_file.to_str().expect("path"),
            "state",
        ],
        &[],
    );
    assert_eq!(by_file.code, 0, "{}", by_file.stderr);
    assert!(
        by_file.stdout.contains("\"onAir\":true"),
        "{}",
        by_file.stdout
    );
    let mut by_stdin = Command::new(env!("CARGO_BIN_EXE_onair"))
        .args(["ctl", "--json-line", "-", "clock", "show"])
        .env_remove("ONAIR_EMULATOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = by_stdin.stdin.take().expect("stdin");
    writeln!(stdin, "{}", emu.line).expect("write the line");
    drop(stdin);
    let out = by_stdin.wait_with_output().expect("run");
    assert!(out.status.success());
    let clock: Value = serde_json::from_slice(&out.stdout).expect("clock JSON");
    let t0 = clock["nowMs"].as_i64().expect("nowMs");
    for env in [emu.base.as_str(), emu.line.as_str()] {
        let run = onair(&["ctl", "state"], &[("ONAIR_EMULATOR", env)]);
        assert_eq!(run.code, 0, "{env}: {}", run.stderr);
    }

    let token = emu.token(None);
    let s = emu.stream(&token);
    until("the stream to open", || emu.state()["openStreams"] == 1);

    // Heartbeats off: a minute of emulator time carries none; on: they come back.
    assert_eq!(s.count(":heartbeat"), 0);
    let off = emu.ok(&["heartbeats", "off"]);
    assert!(off.starts_with("heartbeats off"), "{off}");
    assert_eq!(emu.control("GET", "/wire", "")["heartbeats"], false);
    let moved = emu.ok(&["clock", "advance", "60s"]);
    assert!(moved.starts_with("the clock is at "), "{moved}");
    // The clock moved by exactly that (it is frozen otherwise).
    let now = emu.json(&["clock", "show"])["nowMs"]
        .as_i64()
        .expect("nowMs");
    assert_eq!(now - t0, 60_000);
    // A marker event: everything the advance queued was written before it.
    emu.ok(&["emit", "like"]);
    until("the marker", || s.count("event:like") == 1);
    assert_eq!(s.count(":heartbeat"), 0, "{}", s.text());
    emu.ok(&["heartbeats", "on"]);
    emu.ok(&["clock", "advance", "15s"]);
    until("a heartbeat", || s.count(":heartbeat") >= 1);
    let now2 = emu.json(&["clock", "show"])["nowMs"]
        .as_i64()
        .expect("nowMs");
    assert_eq!(now2 - now, 15_000);

    // emit: the fields arrive on the stream, and the id printed is the frame's.
    let said = emu.ok(&[
        "emit",
        "like",
        "--field",
        "type=PAID",
        "--field",
        "amount=10",
        "--field",
        "combo=3",
        "--field",
        "user.id=fan-1",
        "--field",
        "user.nickname=Mina",
    ]);
    let id = said
        .strip_prefix("emitted ")
        .and_then(|r| r.split(' ').next())
        .expect("the id")
        .to_owned();
    assert!(said.trim_end().ends_with("to 1 stream(s)"), "{said}");
    until("the like", || s.count(&format!("id:{id}\n")) == 1);
    let text = s.text();
    let frame = &text[text.find(&format!("id:{id}\n")).expect("frame")..];
    let data = frame.lines().nth(2).expect("data line");
    let like: Value = serde_json::from_str(data.trim_start_matches("data:")).expect("data");
    assert_eq!(like["type"], "PAID");
    assert_eq!(like["amount"], 10);
    assert_eq!(like["combo"], 3);
    assert_eq!(like["totalAmount"], 30);
    assert_eq!(like["user"]["id"], "fan-1");
    assert_eq!(like["user"]["nickname"], "Mina");

    // emit --file: a whole payload, a --field on top; presence reaches a manager's stream.
    let payload = emu.dir.join("chat.json");
    std::fs::write(
        &payload,
        r#"{"user":{"id":"fan-2","nickname":"윤아"},"message":"from the file"}"#,
    )
    .expect("write");
    emu.ok(&[
        "emit",
        "chat",
        "--file",
        payload.to_str().expect("path"),
        "--field",
        "message=안녕 from ctl",
    ]);
    until("the chat", || s.count("안녕 from ctl") == 1);
    assert_eq!(s.count("from the file"), 0);
    assert_eq!(s.count("\"nickname\":\"윤아\""), 1);
    emu.ok(&["emit", "presence", "--field", "user.id=fan-3"]);
    until("the join", || s.count("event:presence") == 1);

    // refire: the same frame again, same id; the frames list shows it twice.
    let frames = emu.json(&["frames"]);
    let listed = |v: &Value| {
        v["frames"]
            .as_array()
            .expect("frames")
            .iter()
            .filter(|f| f["id"] == id.as_str())
            .count()
    };
    assert_eq!(listed(&frames), 1);
    let again = emu.ok(&["refire", &id]);
    assert_eq!(again.trim_end(), format!("sent {id} again to 1 stream(s)"));
    until("the like again", || s.count(&format!("id:{id}\n")) == 2);
    assert_eq!(listed(&emu.json(&["frames"])), 2);
    // The ledger's totals count an id once (a bot must too).
    let ledger = emu.json(&["ledger"]);
    let people = &ledger["broadcasts"][0]["bots"][0]["totals"]["people"];
    assert_eq!(people["fan-1"]["hearts"], 30, "{ledger}");

    // stream end: the end frame with the reason, in the ledger too.
    let ended = emu.ok(&["stream", "end", "--reason", "RECONNECT"]);
    assert_eq!(ended.trim_end(), "ended 1 stream(s)");
    until("the end frame", || s.closed());
    assert!(
        s.text()
            .contains("event:end\ndata:{\"reason\":\"RECONNECT\"}"),
        "{}",
        s.text()
    );
    let pretty = emu.ok(&["ledger", "--pretty"]);
    assert!(pretty.lines().count() > 10, "{pretty}");
    let ledger: Value = serde_json::from_str(&pretty).expect("JSON");
    let conns = &ledger["broadcasts"][0]["bots"][0]["connections"];
    assert_eq!(conns[0]["end"], "RECONNECT");

    // freeze, then drop: open and silent, then cut without an end frame.
    let s2 = emu.stream(&token);
    until("the second stream", || emu.state()["openStreams"] == 1);
    let frozen = emu.ok(&["stream", "freeze", "--for", "5m"]);
    assert_eq!(
        frozen.trim_end(),
        "froze 1 stream(s): open, carrying nothing"
    );
    assert_eq!(emu.state()["stalledStreams"], 1);
    emu.ok(&["emit", "chat", "--field", "message=nobody hears this"]);
    emu.ok(&["emit", "like"]);
    assert_eq!(s2.count("nobody hears this"), 0);
    assert!(!s2.closed());
    let dropped = emu.ok(&["stream", "drop"]);
    assert_eq!(dropped.trim_end(), "dropped 1 stream(s) (no end frame)");
    until("the cut", || s2.closed());
    assert_eq!(s2.count("event:end"), 0);
    let ledger = emu.json(&["ledger"]);
    let second = &ledger["broadcasts"][0]["bots"][0]["connections"][1];
    assert_eq!(second["dropped"], true, "{ledger}");
    assert_eq!(second["stalled"], true, "{ledger}");

    // consent narrow: the call the narrowed consent lacks answers 403.
    assert_eq!(emu.get("/v1/live", &token).status, 200);
    let narrowed = emu.ok(&["consent", "narrow", "--scope", "events.chat chat.send"]);
    assert!(
        narrowed.contains("narrowed to \"events.chat chat.send\""),
        "{narrowed}"
    );
    assert_eq!(emu.get("/v1/live", &token).status, 403);
    assert_eq!(emu.chat(&token, "still allowed").status, 204);

    // manager off: a stream opened from now gets no presence.
    emu.ok(&["manager", "off"]);
    assert_eq!(emu.state()["botManager"], false);

    // revoke: every token of the integration refused.
    let revoked = emu.ok(&["revoke"]);
    assert!(revoked.contains("disconnected"), "{revoked}");
    assert_eq!(emu.get("/v1/live", &token).status, 401);

    // requests: the log, filtered by path.
    let log = emu.json(&["requests", "--path", "/v1/live"]);
    let statuses: Vec<u64> = log["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .map(|r| r["status"].as_u64().expect("status"))
        .collect();
    assert_eq!(statuses, [200, 403, 401]);

    let over = emu.ok(&["live", "end"]);
    assert!(over.contains("ended: 0 stream(s) got LIVE_ENDED"), "{over}");
    assert_eq!(emu.state()["onAir"], false);
    // clock pause and resume say so.
    assert!(emu.ok(&["clock", "pause"]).starts_with("the clock is held"));
    assert!(emu
        .ok(&["clock", "resume"])
        .starts_with("the clock runs on"));
}

/// `onair ctl live end` ends a bot's stream with LIVE_ENDED; `stream end
/// --reason TOKEN_EXPIRED` writes that reason.
#[test]
fn live_end_and_token_expired_reach_the_stream() {
    let emu = Serve::start("ends");
    emu.ok(&["live", "start"]);
    let token = emu.token(Some("events.chat events.like"));
    let s = emu.stream(&token);
    until("the stream", || emu.state()["openStreams"] == 1);
    emu.ok(&["stream", "end", "--reason", "token_expired"]);
    until("the end", || s.closed());
    assert!(
        s.text().contains("data:{\"reason\":\"TOKEN_EXPIRED\"}"),
        "{}",
        s.text()
    );
    let s = emu.stream(&token);
    until("the stream", || emu.state()["openStreams"] == 1);
    let over = emu.ok(&["live", "end"]);
    assert!(over.contains("1 stream(s) got LIVE_ENDED"), "{over}");
    until("the end", || s.closed());
    assert!(
        s.text().contains("data:{\"reason\":\"LIVE_ENDED\"}"),
        "{}",
        s.text()
    );
}

/// `onair ctl fail`: the next call answers as the service would.
#[test]
fn fail_injects_the_answers_the_service_gives() {
    let emu = Serve::start("fail");
    emu.ok(&["live", "start"]);
    let token = emu.token(None);

    let said = emu.ok(&["fail", "429", "--per-second"]);
    assert_eq!(
        said.trim_end(),
        "the next call to /v1/live will answer 429 (the per-second quota)"
    );
    let r = emu.get("/v1/live", &token);
    assert_eq!((r.status, r.body.as_str()), (429, ""));
    assert_eq!(r.header("x-ratelimit-remaining").as_deref(), Some("0"));
    assert_eq!(emu.get("/v1/live", &token).status, 200, "only once");

    let said = emu.ok(&[
        "fail",
        "429",
        "--daily",
        "--scope",
        "chat.send",
        "--times",
        "2",
    ]);
    assert_eq!(
        said.trim_end(),
        "the next 2 calls to /v1/live/chat will answer 429 (the daily quota of chat.send)"
    );
    for _ in 0..2 {
        let r = emu.chat(&token, "hi");
        assert_eq!((r.status, r.body.as_str()), (429, ""));
        assert_eq!(
            r.header("x-ratelimit-daily-scope").as_deref(),
            Some("chat.send")
        );
        let retry: i64 = r
            .header("retry-after")
            .expect("Retry-After")
            .parse()
            .expect("seconds");
        assert!((1..=86_400).contains(&retry), "{retry}");
    }
    assert_eq!(emu.chat(&token, "hi").status, 204);
    let log = emu.json(&["requests", "--path", "/v1/live/chat"]);
    let first = &log["requests"][0];
    assert_eq!(first["quota"], "daily");
    assert_eq!(first["dailyScope"], "chat.send");

    emu.ok(&["fail", "429", "--chat-limit"]);
    let r = emu.chat(&token, "hi");
    assert_eq!(r.status, 429);
    let body: Value = serde_json::from_str(&r.body).expect("problem JSON");
    assert_eq!(body["detailCode"], "OAPI_MNGR_0302");

    let said = emu.ok(&["fail", "502"]);
    assert_eq!(
        said.trim_end(),
        "the next call to /v1/live will answer 502 OAPI_MNGR_2302"
    );
    let r = emu.get("/v1/live", &token);
    assert_eq!(r.status, 502);
    let body: Value = serde_json::from_str(&r.body).expect("problem JSON");
    assert_eq!(body["detailCode"], "OAPI_MNGR_2302");

    emu.ok(&["fail", "502", "--path", "/v1/live/events"]);
    let r = emu.get("/v1/live/events", &token);
    assert_eq!(r.status, 502);
    assert!(r.body.contains("OAPI_MNGR_2302"), "{}", r.body);

    // Wrong combinations: usage errors, or the emulator's own refusal.
    for args in [
        &["fail", "429"][..],
        &["fail", "502", "--daily"],
        &["fail", "429", "--per-second", "--daily"],
        &["fail", "429", "--chat-limit", "--path", "/v1/live"],
        &["fail", "429", "--scope", "chat.send"],
        &["fail", "200"],
    ] {
        let run = emu.ctl(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
    }
    let run = emu.ctl(&["fail", "429", "--daily", "--scope", "events.chat"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "the emulator refused (HTTP 400): scope \"events.chat\" is not a counted permission"
        ),
        "{}",
        run.stderr
    );
}

/// Bad input: clear one-line errors, exit 2 (usage) or 1 (refused,
/// unreachable), never a panic.
#[test]
fn bad_input_is_refused_clearly() {
    let emu = Serve::start("bad");
    let usage = |args: &[&str], says: &str| {
        let run = emu.ctl(args);
        assert_eq!(run.code, 2, "{args:?}: {}{}", run.stdout, run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    };
    usage(&["emit", "gift"], "invalid value 'gift' for '<KIND>'");
    usage(&["emit", "like", "--field", "amount"], "takes KEY=VALUE");
    usage(
        &["emit", "like", "--field", "user.=x"],
        "is not a field name",
    );
    usage(
        &["emit", "like", "--file", "/no/such/payload.json"],
        "cannot read /no/such/payload.json",
    );
    usage(&["clock", "advance", "90"], "takes a duration");
    usage(&["stream", "end", "--reason", "BYE"], "invalid value 'BYE'");
    usage(&["stream", "freeze", "--for", "soon"], "takes a duration");

    let array = emu.dir.join("array.json");
    std::fs::write(&array, "[1]").expect("write");
    usage(
        &["emit", "like", "--file", array.to_str().expect("path")],
        "must be a JSON object",
    );

    // The emulator's refusals, its text quoted: exit 1.
    let refused = |args: &[&str], says: &str| {
        let run = emu.ctl(args);
        assert_eq!(run.code, 1, "{args:?}: {}{}", run.stdout, run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
    };
    refused(&["emit", "like"], "(HTTP 409): dj main is not on air");
    emu.ok(&["live", "start"]);
    refused(&["emit", "like", "--field", "amount=\"ten\""], "(HTTP 400)");
    refused(&["refire", "1-0"], "(HTTP 404): no event \"1-0\"");
    refused(
        &["stream", "drop", "--dj", "nobody"],
        "(HTTP 404): unknown dj \"nobody\"",
    );

    // Where is the emulator: none given, nothing there, not a URL.
    let run = onair(&["ctl", "ledger"], &[]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("give --url URL, --json-line FILE or ONAIR_EMULATOR"),
        "{}",
        run.stderr
    );
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let nobody = format!("http://127.0.0.1:{port}");
    let run = onair(&["ctl", "--url", &nobody, "ledger"], &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr.trim_end(),
        format!("onair ctl ledger: cannot reach the emulator at {nobody} (connection refused): is `onair serve` running?")
    );
    let run = onair(&["ctl", "--url", "not a url", "ledger"], &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = onair(&["ctl", "--json-line", "/no/such/line", "ledger"], &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("cannot read /no/such/line"),
        "{}",
        run.stderr
    );
    let run = onair(&["ctl", "ledger"], &[("ONAIR_EMULATOR", "{\"nothing\":1}")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no baseUrl"), "{}", run.stderr);
}

/// `--help` of `onair ctl` and of every command under it: exit 0, help on
/// stdout; `onair ctl`'s own is a snapshot.
#[test]
fn every_ctl_command_has_help() {
    let help = |args: &[&str]| {
        let mut all = vec!["ctl"];
        all.extend_from_slice(args);
        all.push("--help");
        let run = onair(&all, &[]);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(run.stderr.is_empty(), "{args:?}: {}", run.stderr);
        assert!(
            run.stdout.starts_with(|c: char| c.is_uppercase()),
            "{args:?}"
        );
        run.stdout
    };
    insta::assert_snapshot!("help_ctl", help(&[]));
    let top = help(&[]);
    let commands: Vec<&str> = top
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert_eq!(commands.len(), 14, "{commands:?}");
    for command in &commands {
        let text = help(&[command]);
        let subs: Vec<String> = text
            .lines()
            .skip_while(|l| *l != "Commands:")
            .skip(1)
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .filter(|c| c != "help")
            .collect();
        for sub in subs {
            help(&[command, &sub]);
        }
    }
}
