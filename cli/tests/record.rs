//! `onair record` and `onair serve --replay`, end to end with the built
//! binary: `onair serve` stands in for the service, `onair record` records
//! from it over HTTP, `onair serve --replay` plays the cassette.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use onair_emulator::cassette::Cassette;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_onair");

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A directory of its own under the target dir.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("record-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// `onair serve --json …` as a child; SIGTERM on drop.
struct Serve {
    child: Child,
    info: Value,
}

impl Serve {
    fn start(args: &[&str]) -> Serve {
        let mut child = Command::new(BIN)
            .arg("serve")
            .arg("--json")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn onair serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("its line");
        let info = serde_json::from_str(&line).expect("the --json line");
        Serve { child, info }
    }

    fn get(&self, key: &str) -> String {
        self.info[key].as_str().unwrap_or_default().to_owned()
    }

    fn control(&self, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.get("controlUrl"));
        rt().block_on(async {
            let c = reqwest::Client::new();
            let r = match body {
                Some(b) => c.post(url).body(b.to_string()).send().await,
                None => c.get(url).send().await,
            };
            r.expect("control call").json().await.expect("JSON")
        })
    }

    /// A consent code of the default app (or `client_id`'s).
    fn code(&self, client_id: Option<&str>) -> String {
        let body = match client_id {
            Some(id) => json!({"clientId": id}),
            None => json!({}),
        };
        self.control("/consent", Some(body))["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// SIGTERM, then the exit status and stderr.
    fn stop(mut self) -> (std::process::ExitStatus, String) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let status = self.child.wait().expect("wait");
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        (status, err)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The app settings of `serve` as `ONAIR_*` variables for a child.
fn app_env(cmd: &mut Command, serve: &Serve, tokens: &Path) {
    cmd.env("ONAIR_BASE_URL", serve.get("baseUrl"))
        .env("ONAIR_CLIENT_ID", serve.get("clientId"))
        .env("ONAIR_CLIENT_SECRET", serve.get("clientSecret"))
        .env("ONAIR_TOKENS", tokens);
}

/// `onair auth exchange` into `tokens`.
fn exchange(serve: &Serve, tokens: &Path) -> String {
    let code = serve.code(None);
    let mut cmd = Command::new(BIN);
    cmd.args([
        "auth",
        "exchange",
        "--code",
        &code,
        "--redirect-uri",
        &serve.get("redirectUri"),
    ]);
    app_env(&mut cmd, serve, tokens);
    let out = cmd.output().expect("onair auth exchange");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    code
}

/// `onair record --out cassette` as a child.
fn record(serve: &Serve, tokens: &Path, cassette: &Path) -> Child {
    let mut cmd = Command::new(BIN);
    cmd.args(["record", "--out"])
        .arg(cassette)
        .stderr(Stdio::piped());
    app_env(&mut cmd, serve, tokens);
    cmd.spawn().expect("onair record")
}

/// Waits for a child at most `limit`; its status and stderr.
fn finish(mut child: Child, limit: Duration) -> (std::process::ExitStatus, String) {
    let until = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            return (status, err);
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every string value of a JSON document whose key has `token` in it.
fn token_values(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| k.contains("token"))
                .filter_map(|(_, v)| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The cassette's text and every byte in it decoded, as one text to search.
fn searchable(cassette: &Path) -> (String, Cassette) {
    let text = std::fs::read_to_string(cassette).expect("cassette");
    let c = Cassette::parse(&text).expect("a valid cassette");
    let mut all = text.clone();
    for conn in &c.connections {
        for (_, b) in &conn.chunks {
            all.push_str(&String::from_utf8_lossy(b));
        }
        for (k, v) in &conn.headers {
            all.push_str(&format!("{k}: {v}\n"));
        }
    }
    for answers in c.rest.values() {
        for a in answers {
            all.push_str(&String::from_utf8_lossy(&a.body));
            for (k, v) in &a.headers {
                all.push_str(&format!("{k}: {v}\n"));
            }
        }
    }
    (all, c)
}

/// One bot's entries in a ledger: (liveId, bot entry).
fn bot_entries(ledger: &Value, client_id: &str) -> Vec<(u64, Value)> {
    let mut out = Vec::new();
    for b in ledger["broadcasts"].as_array().into_iter().flatten() {
        for bot in b["bots"].as_array().into_iter().flatten() {
            if bot["clientId"] == client_id {
                out.push((b["liveId"].as_u64().unwrap_or(0), bot.clone()));
            }
        }
    }
    out
}

/// Totals with the people as a sorted list of their numbers (ids and
/// nicknames are stand-ins on one side): what pseudonymising keeps.
fn shape(totals: &Value) -> (Value, Vec<String>) {
    let mut people: Vec<String> = totals["people"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, p)| {
            format!(
                "hearts {} paid {} donated {} donations {} joins {} chats {} named {}",
                p["hearts"],
                p["paidHearts"],
                p["donated"],
                p["donations"],
                p["joins"],
                p["chats"],
                !p["nickname"].is_null()
            )
        })
        .collect();
    people.sort();
    (
        json!([totals["hearts"], totals["donated"], totals["attendance"]]),
        people,
    )
}

/// The round trip: the faulty night recorded from `onair serve`, replayed
/// to the reference bot (`onair demo` against the replay): the bot's tally
/// equals the replay's ledger, which equals the original's after
/// pseudonymising; the cassette holds no secret and no original id,
/// nickname or message text.
#[test]
fn a_faulty_night_recorded_and_replayed_to_the_reference_bot() {
    let dir = scratch("faulty");
    let (tokens, cassette) = (dir.join("tokens.json"), dir.join("faulty.cassette"));
    let original = Serve::start(&["--scenario", "faulty", "--speed", "10"]);
    let code = exchange(&original, &tokens);
    let first_pair = token_values(
        &serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap_or_default())
            .unwrap_or_default(),
    );
    let (status, err) = finish(
        record(&original, &tokens, &cassette),
        Duration::from_secs(240),
    );
    assert!(status.success(), "{err}");
    assert!(err.contains("connection(s)"), "{err}");
    let client_id = original.get("clientId");
    let truth = bot_entries(&original.control("/ledger", None), &client_id);
    // It never chats.
    assert_eq!(original.control("/chat", None)["messages"], json!([]));
    let last_pair = token_values(
        &serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap_or_default())
            .unwrap_or_default(),
    );
    // TOKEN_EXPIRED was followed: the file holds a newer pair than the first.
    assert_eq!(first_pair.len(), 2);
    assert_ne!(first_pair, last_pair, "the refreshed pair was saved");

    let (all, c) = searchable(&cassette);
    // No secret: the app's secret, the consent code, every token, no Authorization.
    let mut secrets = vec![original.get("clientSecret"), code];
    secrets.extend(first_pair);
    secrets.extend(last_pair);
    for s in &secrets {
        assert!(
            !s.is_empty() && !all.contains(s.as_str()),
            "a secret is in the cassette"
        );
    }
    assert!(!all.to_ascii_lowercase().contains("authorization"));
    assert!(!all.contains("Bearer"));
    // No original id or nickname of anyone delivered, no scenario message.
    let (live_id, bot) = truth.first().cloned().expect("the recorder in the ledger");
    let people = bot["totals"]["people"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert!(people.len() > 20, "{}", people.len());
    for (id, p) in &people {
        assert!(
            !all.contains(&format!("\"{id}\"")),
            "id {id} in the cassette"
        );
        if let Some(nick) = p["nickname"].as_str() {
            assert!(
                !all.contains(&format!("\"{nick}\"")),
                "nickname {nick} in the cassette"
            );
        }
    }
    let scenario: Value =
        serde_json::from_str(include_str!("../../emulator/scenarios/faulty.json"))
            .unwrap_or_default();
    let mut messages = 0;
    for step in scenario["steps"].as_array().into_iter().flatten() {
        if let Some(m) = step["data"]["message"].as_str() {
            assert!(!all.contains(m), "message {m:?} in the cassette");
            messages += 1;
        }
    }
    assert!(messages >= 5);
    // What the cassette holds: every connection, a refused one among them.
    let served: Vec<u16> = c.connections.iter().map(|k| k.status).collect();
    assert!(served.contains(&502), "{served:?}");
    assert_eq!(
        served.iter().filter(|s| **s == 200).count(),
        bot["connections"].as_array().map_or(0, Vec::len)
    );

    // The replay, to the reference bot.
    let replay = Serve::start(&[
        "--replay",
        cassette.to_str().unwrap_or_default(),
        "--speed",
        "2",
    ]);
    let tally = dir.join("tally.json");
    let mut demo = Command::new(BIN);
    demo.args([
        "demo",
        "--base-url",
        &replay.get("baseUrl"),
        "--client-id",
        &replay.get("clientId"),
    ])
    .args([
        "--client-secret",
        &replay.get("clientSecret"),
        "--code",
        &replay.code(None),
    ])
    .args(["--redirect-uri", &replay.get("redirectUri")])
    .arg("--tally-out")
    .arg(&tally)
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let demo = demo.spawn().expect("onair demo");
    let want = served.iter().filter(|s| **s == 200).count();
    let until = Instant::now() + Duration::from_secs(120);
    // Done (GET /_emulator/scenario) once every recorded connection was played.
    loop {
        let progress = replay.control("/scenario", None);
        assert_eq!(progress["name"], "replay");
        assert_eq!(progress["total"], json!(served.len()));
        if progress["done"] == true {
            break;
        }
        assert!(
            Instant::now() < until,
            "the replay did not finish: {progress}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let replayed = bot_entries(&replay.control("/ledger", None), &replay.get("clientId"));
    let conns = replayed[0].1["connections"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(conns.len(), want);
    assert!(
        conns.iter().all(|k| !k["closedAtMs"].is_null()),
        "{conns:?}"
    );
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill")
        .args(["-TERM", &demo.id().to_string()])
        .status();
    let (status, _) = finish(demo, Duration::from_secs(30));
    assert!(status.success());
    let (status, err) = replay.stop();
    assert!(
        status.success(),
        "without --strict, chat is no failure: {err}"
    );

    // The replay's ledger = the original's, after pseudonymising.
    assert_eq!(replayed.len(), 1);
    let (replay_live, replay_bot) = &replayed[0];
    assert_eq!(*replay_live, live_id);
    let events = |b: &Value| -> Vec<(Value, Value)> {
        b["connections"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|k| (k["events"].clone(), k["end"].clone()))
            .collect()
    };
    assert_eq!(events(replay_bot), events(&bot));
    assert_eq!(shape(&replay_bot["totals"]), shape(&bot["totals"]));
    // The bot's tally = the replay's ledger, person by person (stand-ins).
    let tally: Value =
        serde_json::from_str(&std::fs::read_to_string(&tally).expect("the tally")).expect("JSON");
    let mine: Vec<&Value> = tally["broadcasts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["liveId"] == live_id)
        .collect();
    assert_eq!(mine.len(), 1, "{tally}");
    let want_totals = &replay_bot["totals"];
    for key in ["hearts", "donated", "attendance"] {
        assert_eq!(mine[0][key], want_totals[key], "{key}");
    }
    let got: BTreeMap<String, Value> = mine[0]["people"]
        .as_object()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let want: BTreeMap<String, Value> = want_totals["people"]
        .as_object()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .collect();
    assert_eq!(got, want);
    assert!(got.keys().all(|k| k.starts_with("person-")));
    drop(original);
}

/// A one-byte-chunked, CR-only, BOM-prefixed wire: the cassette keeps it
/// (the original's bytes but for the data JSON), the replay serves the
/// cassette's bytes exactly; `--strict` fails on an unrecorded request;
/// `--to-scenario` makes a scenario `onair serve` plays.
#[test]
fn a_one_byte_cr_bom_wire_replays_byte_for_byte_strict_fails_on_chat_and_it_converts_to_a_scenario()
{
    let dir = scratch("wire");
    let (tokens, cassette) = (dir.join("tokens.json"), dir.join("wire.cassette"));
    let original = Serve::start(&["--speed", "1"]);
    // Not a manager: no presence, so neither bot sees the other join.
    original.control(
        "/wire",
        Some(json!({"lineEnding": "CR", "chunkBytes": 1, "bom": true})),
    );
    original.control("/live/start", Some(json!({"title": "wire"})));
    exchange(&original, &tokens);
    // A second app reads the original wire as it is.
    let other = original.control("/apps", Some(json!({})));
    let other_id = other["clientId"].as_str().unwrap_or_default().to_owned();
    let other_code = original.code(Some(&other_id));
    let reader_rt = rt();
    let base = original.get("baseUrl");
    let (raw_tx, raw_rx) = std::sync::mpsc::channel();
    let other_secret = other["clientSecret"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let redirect = other["redirectUri"].as_str().unwrap_or_default().to_owned();
    let reader_base = base.clone();
    let reader = std::thread::spawn(move || {
        reader_rt.block_on(async move {
            let token = access_token(
                &reader_base,
                &other_id,
                &other_secret,
                &other_code,
                &redirect,
            )
            .await;
            let bytes = read_stream(&reader_base, &token).await;
            let _ = raw_tx.send(bytes);
        });
    });
    let recorder = record(&original, &tokens, &cassette);
    wait_streams(&original, 2);
    original.control("/emit", Some(json!({"event": "chat", "data": {"user": {"id": "u-secret-1", "nickname": "Zelda"}, "message": "a private message"}})));
    original.control("/emit", Some(json!({"event": "like", "data": {"user": {"id": "u-secret-1", "nickname": "Zelda"}, "type": "PAID", "amount": 10, "combo": 2}})));
    original.control(
        "/emit",
        Some(json!({"event": "donation", "data": {"user": {"id": "u-secret-2", "nickname": "민지"}, "amount": 100, "message": "another private one"}})),
    );
    std::thread::sleep(Duration::from_millis(300));
    original.control("/live/end", Some(json!({})));
    let (status, err) = finish(recorder, Duration::from_secs(60));
    assert!(status.success(), "{err}");
    let _ = reader.join();
    let raw = raw_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the original wire");

    let (all, c) = searchable(&cassette);
    for secret in [
        "u-secret-1",
        "u-secret-2",
        "Zelda",
        "민지",
        "a private message",
    ] {
        assert!(!all.contains(secret), "{secret} in the cassette");
    }
    let conn = c.connections.first().expect("a connection");
    let recorded: Vec<u8> = conn.chunks.iter().flat_map(|(_, b)| b.clone()).collect();
    assert!(recorded.starts_with("\u{feff}".as_bytes()));
    assert!(recorded.contains(&b'\r') && !recorded.contains(&b'\n'));
    assert!(
        conn.chunks.len() > 100,
        "one-byte chunks kept: {}",
        conn.chunks.len()
    );
    // The framing is the original's: only the data lines differ.
    let frame_lines = |b: &[u8]| -> Vec<Vec<u8>> {
        b.split(|x| *x == b'\r')
            .filter(|l| !l.starts_with(b"data:"))
            .map(<[u8]>::to_vec)
            .collect()
    };
    // (Heartbeats, comments and blank lines aside: their times differ.)
    let keep = |l: &Vec<u8>| {
        !l.is_empty() && !l.starts_with(b":") && l.as_slice() != "\u{feff}".as_bytes()
    };
    let raw_lines: Vec<Vec<u8>> = frame_lines(&raw).into_iter().filter(keep).collect();
    let rec_lines: Vec<Vec<u8>> = frame_lines(&recorded).into_iter().filter(keep).collect();
    assert!(rec_lines.len() >= 7, "{}", rec_lines.len());
    assert_eq!(rec_lines, raw_lines);

    // Replayed byte for byte, then a chat the cassette never saw.
    let replay = Serve::start(&[
        "--replay",
        cassette.to_str().unwrap_or_default(),
        "--strict",
    ]);
    let base = replay.get("baseUrl");
    let code = replay.code(None);
    let (id, secret, redirect) = (
        replay.get("clientId"),
        replay.get("clientSecret"),
        replay.get("redirectUri"),
    );
    let (served, chat) = rt().block_on(async {
        let token = access_token(&base, &id, &secret, &code, &redirect).await;
        let served = read_stream(&base, &token).await;
        let chat = reqwest::Client::new()
            .post(format!("{base}/v1/live/chat"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(r#"{"message":"hi"}"#)
            .send()
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0);
        (served, chat)
    });
    assert_eq!(served, recorded);
    assert_eq!(chat, 204);
    // Kept in the chat log, under the replayed broadcast, for a judge.
    let log = replay.control("/chat", None);
    assert_eq!(log["messages"][0]["message"], "hi");
    assert_eq!(log["messages"][0]["liveId"], json!(conn.live_id));
    let (status, err) = replay.stop();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("no recorded answer for POST /v1/live/chat"),
        "{err}"
    );
    drop(original);

    // The cassette as an ordinary scenario, played by `onair serve`.
    let out = Command::new(BIN)
        .args(["record", "--to-scenario"])
        .arg(&cassette)
        .output()
        .expect("--to-scenario");
    assert!(out.status.success());
    let scenario_file = dir.join("converted.json");
    std::fs::write(&scenario_file, &out.stdout).expect("write the scenario");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let steps: Vec<String> = onair_emulator::Scenario::from_json(&text)
        .expect("a scenario")
        .steps
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s.get("do").and_then(Value::as_str).unwrap_or(""),
                s.get("event").and_then(Value::as_str).unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            "state ",
            "liveStart ",
            "waitForStream ",
            "emit chat",
            "emit like",
            "emit donation",
            "liveEnd "
        ]
    );
    let played = Serve::start(&[
        "--scenario",
        scenario_file.to_str().unwrap_or_default(),
        "--speed",
        "10",
    ]);
    let base = played.get("baseUrl");
    let code = played.code(None);
    let (id, secret, redirect) = (
        played.get("clientId"),
        played.get("clientSecret"),
        played.get("redirectUri"),
    );
    rt().block_on(async {
        let token = access_token(&base, &id, &secret, &code, &redirect).await;
        read_stream(&base, &token).await
    });
    let ledger = bot_entries(&played.control("/ledger", None), &id);
    let conn = &ledger[0].1["connections"][0];
    assert_eq!(
        conn["events"],
        json!({"chat": 1, "like": 1, "donation": 1, "presence": 0})
    );
    assert_eq!(conn["end"], "LIVE_ENDED");
    let people = ledger[0].1["totals"]["people"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert!(
        !people.is_empty() && people.keys().all(|k| k.starts_with("person-")),
        "{people:?}"
    );
}

/// Until `n` streams are open in the main DJ's broadcast.
fn wait_streams(serve: &Serve, n: u64) {
    let until = Instant::now() + Duration::from_secs(20);
    while serve.control("/state", None)["openStreams"]
        .as_u64()
        .unwrap_or(0)
        < n
    {
        assert!(Instant::now() < until, "streams did not open");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A code exchanged for an access token (client credentials in the form).
async fn access_token(base: &str, id: &str, secret: &str, code: &str, redirect: &str) -> String {
    let enc = |s: &str| -> String {
        s.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect()
    };
    let form = format!(
        "grant_type=authorization_code&code={}&redirect_uri={}&client_id={}&client_secret={}",
        enc(code),
        enc(redirect),
        enc(id),
        enc(secret)
    );
    let v: Value = reqwest::Client::new()
        .post(format!("{base}/v1/oauth/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .expect("token endpoint")
        .json()
        .await
        .expect("token JSON");
    v["access_token"].as_str().unwrap_or_default().to_owned()
}

/// Every byte of one stream connection until the server closes it.
async fn read_stream(base: &str, token: &str) -> Vec<u8> {
    let mut resp = reqwest::Client::new()
        .get(format!("{base}/v1/live/events"))
        .bearer_auth(token)
        .send()
        .await
        .expect("the stream");
    assert_eq!(resp.status().as_u16(), 200);
    let mut out = Vec::new();
    while let Ok(Ok(Some(chunk))) =
        tokio::time::timeout(Duration::from_secs(30), resp.chunk()).await
    {
        out.extend_from_slice(&chunk);
    }
    out
}

/// Ctrl-C mid-broadcast: the recorder stops at once with its summary and
/// leaves a valid cassette, the open stream closed as the recorder's.
#[test]
fn ctrl_c_leaves_a_valid_cassette() {
    let dir = scratch("ctrl-c");
    let (tokens, cassette) = (dir.join("tokens.json"), dir.join("cut.cassette"));
    let original = Serve::start(&["--speed", "1"]);
    original.control("/live/start", Some(json!({"title": "cut short"})));
    exchange(&original, &tokens);
    let recorder = record(&original, &tokens, &cassette);
    wait_streams(&original, 1);
    original.control(
        "/emit",
        Some(json!({"event": "chat", "data": {"message": "still here"}})),
    );
    std::thread::sleep(Duration::from_millis(300));
    let _ = Command::new("kill")
        .args(["-INT", &recorder.id().to_string()])
        .status();
    let (status, err) = finish(recorder, Duration::from_secs(20));
    assert!(status.success(), "{err}");
    assert!(err.contains("1 connection(s), 1 frame(s)"), "{err}");
    let text = std::fs::read_to_string(&cassette).expect("cassette");
    let c = Cassette::parse(&text).expect("valid");
    assert_eq!(c.connections.len(), 1);
    assert_eq!(
        c.connections[0].close.map(|(_, how)| how),
        Some(onair_emulator::cassette::CloseHow::Client)
    );
    assert!(text
        .lines()
        .all(|l| serde_json::from_str::<Value>(l).is_ok()));
}

/// The DJ disconnected the bot: the recorder says the bot stopped, exits 1
/// and still leaves a valid cassette.
#[test]
fn a_withdrawn_consent_stops_the_recording_with_exit_1() {
    let dir = scratch("withdrawn");
    let (tokens, cassette) = (dir.join("tokens.json"), dir.join("refused.cassette"));
    let original = Serve::start(&["--speed", "1"]);
    original.control("/live/start", Some(json!({"title": "refused"})));
    exchange(&original, &tokens);
    original.control("/integration/disconnect", Some(json!({})));
    let (status, err) = finish(
        record(&original, &tokens, &cassette),
        Duration::from_secs(60),
    );
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("cassette"), "{err}");
    let text = std::fs::read_to_string(&cassette).expect("cassette");
    Cassette::parse(&text).expect("valid");
}

/// One line and exit 2 for each mistake; a secret given is never quoted;
/// help exits 0; no saved tokens is exit 3.
#[test]
fn usage_errors_help_and_a_missing_token_file() {
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .env_remove("ONAIR_BASE_URL")
            .env_remove("ONAIR_CLIENT_ID")
            .env_remove("ONAIR_CLIENT_SECRET")
            .env_remove("ONAIR_TOKENS")
            .output()
            .expect("onair")
    };
    let dir = scratch("usage");
    let bad_version = dir.join("v2.cassette");
    std::fs::write(
        &bad_version,
        "{\"format\":\"onair.cassette\",\"version\":2,\"recordedAtMs\":0,\"pseudonymised\":true,\"keepText\":false}\n",
    )
    .expect("write");
    let bad = bad_version.to_str().unwrap_or_default();
    for (args, says) in [
        (&["record"][..], "--out"),
        (&["record", "--out", "x.cassette"], "--base-url"),
        (
            &["record", "--client-secret", "s3cret-word", "stray"],
            "unexpected argument",
        ),
        (
            &["record", "--to-scenario", "/no/such/cassette"],
            "/no/such/cassette",
        ),
        (&["record", "--to-scenario", bad], "version 2"),
        (&["serve", "--strict"], "--replay"),
        (
            &["serve", "--replay", "/no/such/cassette"],
            "/no/such/cassette",
        ),
        (&["serve", "--replay", bad], "version 2"),
        (
            &["serve", "--replay", bad, "--scenario", "quiet"],
            "--scenario",
        ),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("s3cret-word"), "{err}");
    }
    for args in [&["record", "--help"][..], &["help", "record"]] {
        let out = run(args);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("--keep-text") && text.contains("exit codes"),
            "{text}"
        );
    }
    let out = run(&[
        "record",
        "--out",
        dir.join("none.cassette").to_str().unwrap_or_default(),
        "--base-url",
        "http://127.0.0.1:9",
        "--client-id",
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "--client-secret",
        "s3cret-word",
        "--tokens",
        dir.join("no-such-tokens.json").to_str().unwrap_or_default(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("no saved tokens") && !err.contains("s3cret-word"),
        "{err}"
    );
}
