//! Failure isolation, in-process against the emulator on 127.0.0.1: three
//! DJs' bots; one row damaged in the database file (its sealed pair, its
//! kit state, its pair sealed under another key) stops or limits that bot
//! alone while the other two read their broadcast; the wrong key for every
//! row, or a truncated database file, stops the start at once, said as
//! such; a bot stopped because its refresh was refused forgets the dead
//! pair and a restart sends no refresh with it.

use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use onair_emulator::clock::Clock as VirtualClock;
use onair_emulator::{Emulator, Running};
use onair_host::config::{ENV_ADMIN_TOKEN, ENV_CLIENT_SECRET, ENV_KEY};
use onair_host::HostConfig;
use onair_tokio::Clock;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
/// 32 bytes of 7: another key.
const OTHER_KEY: &str = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";
const ADMIN: &str = "admin-token-of-the-isolation-test";

struct EmulatorClock(Arc<VirtualClock>);

impl Clock for EmulatorClock {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.0.now_ms()).unwrap_or(0)
    }

    fn real_delay(&self, at_ms: u64) -> Duration {
        let left = at_ms.saturating_sub(self.now_ms()) as f64;
        Duration::from_secs_f64((left / self.0.speed().max(1e-3) / 1000.0).min(1.0))
    }
}

/// Every log line of the process.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut b) = self.0.lock() {
            b.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().map(|b| b.clone()).unwrap_or_default()).into_owned()
    }
}

fn log() -> &'static Captured {
    static LOG: OnceLock<Captured> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Captured::default();
        let writer = log.clone();
        let _ = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_env_filter("info,sqlx=warn,hyper=warn,reqwest=warn")
            .try_init();
        log
    })
}

async fn control(emu: &Running, path: &str, body: Option<Value>) -> Value {
    let http = reqwest::Client::new();
    let url = format!("{}{path}", emu.control_url());
    let request = match body {
        Some(b) => http.post(url).body(b.to_string()),
        None => http.get(url),
    };
    let response = request.send().await.expect("control call");
    assert!(
        response.status().is_success(),
        "{path}: {}",
        response.status()
    );
    response.json().await.expect("control JSON")
}

async fn until<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

struct Host {
    url: String,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), onair_host::HostError>>,
}

fn config(text: &str, dir: &Path, secret: &str, key: &str) -> HostConfig {
    let (secret, key) = (secret.to_owned(), key.to_owned());
    let env = move |name: &str| match name {
        ENV_CLIENT_SECRET => Some(secret.clone()),
        ENV_KEY => Some(key.clone()),
        ENV_ADMIN_TOKEN => Some(ADMIN.to_owned()),
        _ => None,
    };
    HostConfig::parse(text, dir, &env).expect("config")
}

async fn start_host(setup: &Setup, key: &str) -> Host {
    let config = config(&setup.text, &setup.dir, &setup.secret, key);
    let listener = TcpListener::bind(config.listen).await.expect("listen");
    let url = config.public_url.clone();
    let (stop, stopped) = oneshot::channel::<()>();
    let clock = Arc::new(EmulatorClock(setup.emu.clock()));
    let task = tokio::spawn(onair_host::serve(config, listener, clock, async move {
        let _ = stopped.await;
    }));
    Host {
        url,
        stop: Some(stop),
        task,
    }
}

impl Host {
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(Duration::from_secs(20), self.task)
            .await
            .expect("the host stops in time")
            .expect("the host task")
            .expect("the host stops cleanly");
    }

    /// The host runs (it did not end with an error at start).
    fn runs(&self) -> bool {
        !self.task.is_finished()
    }
}

fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

fn location(r: &reqwest::Response) -> String {
    r.headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .expect("a redirect")
        .to_owned()
}

/// DJ `dj` connects a new bot through /connect, the consent page and
/// /callback.
async fn consent(b: &reqwest::Client, host: &Host, dj: &str) {
    consent_at(b, &format!("{}/connect", host.url), dj).await;
}

/// DJ `dj` through `connect` (a /connect link), the consent page and
/// /callback.
async fn consent_at(b: &reqwest::Client, connect: &str, dj: &str) {
    let r = b.get(connect).send().await.expect("connect");
    assert_eq!(r.status(), 303);
    let consent_page = location(&r);
    let r = b
        .get(format!("{consent_page}&dj={dj}"))
        .send()
        .await
        .expect("consent page");
    assert_eq!(r.status(), 302);
    let callback = location(&r);
    let r = b.get(&callback).send().await.expect("callback");
    assert_eq!(r.status(), 303, "{:?}", r.text().await);
}

async fn api(host: &Host, path: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{}{path}", host.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("api")
        .json()
        .await
        .expect("api JSON")
}

async fn bot(host: &Host, id: i64) -> Value {
    api(host, &format!("/api/bots/{id}")).await["bot"].clone()
}

/// Token requests of `grant` in the emulator's log; a bot's credentials
/// check at start is not counted.
fn grants(requests: &Value, grant: &str) -> usize {
    let check = onair_emulator::requests::fingerprint(onair::bot::CREDENTIALS_CHECK_TOKEN);
    requests["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["grant"] == grant && r["credential"] != check.as_str())
        .count()
}

const DJS: [&str; 3] = ["ayla", "bo", "cem"];

struct Setup {
    emu: Running,
    dir: PathBuf,
    text: String,
    secret: String,
    client_id: String,
}

impl Setup {
    async fn new(name: &str) -> Setup {
        let emu = Emulator::builder().start().await.expect("emulator");
        let dir = std::env::temp_dir().join(format!("onair-host-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
            l.local_addr().expect("addr").port()
        };
        let app = control(
            &emu,
            "/apps",
            Some(json!({"redirectUri": format!("http://127.0.0.1:{port}/callback")})),
        )
        .await;
        let (client_id, secret) = (
            app["clientId"].as_str().expect("id").to_owned(),
            app["clientSecret"].as_str().expect("secret").to_owned(),
        );
        let base = emu.base_url();
        let text = format!(
            r#"[app]
base_url = "{base}"
client_id = "{client_id}"
consent_url = "{base}/oauth/authorize?client_id={{client_id}}&redirect_uri={{redirect_uri}}&state={{state}}&scope={{scope}}"
[host]
listen = "127.0.0.1:{port}"
start_spread_ms = 300
[bot.kit]
tally = true
greetings = {{}}
"#
        );
        Setup {
            emu,
            dir,
            text,
            secret,
            client_id,
        }
    }

    fn db_path(&self) -> PathBuf {
        self.dir.join("host.db")
    }

    /// The database file on its own (the host stopped).
    async fn sql(&self, sql: &str, value: Option<String>, id: i64) {
        use sqlx::Connection;
        let url = format!("sqlite://{}", self.db_path().display());
        let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("db");
        let query = sqlx::query(sql);
        let query = match value {
            Some(v) => query.bind(v),
            None => query,
        };
        query.bind(id).execute(&mut conn).await.expect(sql);
        conn.close().await.expect("close");
    }

    async fn column(&self, column: &str, id: i64) -> Option<String> {
        use sqlx::Connection;
        let url = format!("sqlite://{}", self.db_path().display());
        let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("db");
        let value: Option<String> =
            sqlx::query_scalar(&format!("SELECT {column} FROM integrations WHERE id = ?"))
                .bind(id)
                .fetch_one(&mut conn)
                .await
                .expect("column");
        conn.close().await.expect("close");
        value
    }

    /// Three DJs connect a bot each and go on air; their ids (and their
    /// browsers, signed in).
    async fn three_bots(&self, host: &Host) -> Vec<i64> {
        self.three_djs(host).await.0
    }

    async fn three_djs(&self, host: &Host) -> (Vec<i64>, Vec<reqwest::Client>) {
        let mut browsers = Vec::new();
        for dj in DJS {
            let b = browser();
            consent(&b, host, dj).await;
            browsers.push(b);
            control(&self.emu, "/live/start", Some(json!({"dj": dj}))).await;
        }
        let bots = api(host, "/api/bots").await;
        let ids: Vec<i64> = bots["bots"]
            .as_array()
            .expect("bots")
            .iter()
            .filter_map(|b| b["id"].as_i64())
            .collect();
        assert_eq!(ids.len(), 3, "{bots}");
        for id in &ids {
            until("every bot on air", Duration::from_secs(15), || async {
                bot(host, *id).await["state"] == "connected"
            })
            .await;
        }
        (ids, browsers)
    }

    /// A heart for `dj`'s broadcast reaches bot `id`.
    async fn reads(&self, host: &Host, id: i64, dj: &str) {
        let before = bot(host, id).await["hearts"].as_u64().unwrap_or(0);
        let like =
            json!({"dj": dj, "event": "like", "data": {"user": {"id": "u1", "nickname": "Mina"}}});
        let emitted = control(&self.emu, "/emit", Some(like)).await;
        assert_eq!(emitted["delivered"], 1, "{emitted}");
        until(
            &format!("bot {id} reads {dj}'s heart"),
            Duration::from_secs(10),
            || async { bot(host, id).await["hearts"].as_u64().unwrap_or(0) > before },
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_damaged_row_stops_one_bot_and_what_concerns_all_stops_the_start() {
    let log = log();
    let setup = Setup::new("isolation").await;
    let host = start_host(&setup, KEY).await;
    let (ids, browsers) = setup.three_djs(&host).await;
    host.stop().await;
    let (one, two, three) = (ids[0], ids[1], ids[2]);
    let pair = setup.column("tokens", two).await.expect("a stored pair");
    let state = setup.column("kit_state", two).await.expect("a kit state");

    // 1. Its kit state damaged: the bot starts without memory, says so.
    setup
        .sql(
            "UPDATE integrations SET kit_state = ? WHERE id = ?",
            Some("{\"format\":\"onair.kit\",\"ver".to_owned()),
            two,
        )
        .await;
    let host = start_host(&setup, KEY).await;
    for id in [one, two, three] {
        until("every bot on air", Duration::from_secs(15), || async {
            bot(&host, id).await["state"] == "connected"
        })
        .await;
    }
    let view = bot(&host, two).await;
    assert!(
        view["warning"]
            .as_str()
            .is_some_and(|w| w.contains("started without it")),
        "{view}"
    );
    setup.reads(&host, two, DJS[1]).await;
    setup.reads(&host, one, DJS[0]).await;
    assert_eq!(
        log.text()
            .matches("the stored kit state does not read: the bot starts without memory")
            .count(),
        1,
        "said once in the log"
    );
    host.stop().await;

    // 2. Its pair damaged, 3. its pair sealed under another key: that bot
    // asks for consent, the two others read their broadcast.
    let other = onair_host::crypto::TokenCipher::from_base64(OTHER_KEY).expect("key");
    let plain = onair_host::crypto::TokenCipher::from_base64(KEY)
        .expect("key")
        .open(&pair, format!("onair-host:integration:{two}").as_bytes())
        .expect("the pair opens");
    let foreign = other.seal(&plain, format!("onair-host:integration:{two}").as_bytes());
    let mut damaged: Vec<char> = pair.chars().collect();
    let at = damaged.len() - 10;
    damaged[at] = if damaged[at] == 'A' { 'B' } else { 'A' };
    let damaged: String = damaged.into_iter().collect();
    for (case, value) in [("damaged", damaged), ("another key", foreign)] {
        setup
            .sql(
                "UPDATE integrations SET tokens = ? WHERE id = ?",
                Some(value),
                two,
            )
            .await;
        let seen = log.text().len();
        let host = start_host(&setup, KEY).await;
        until(
            &format!("{case}: the bot asks for consent"),
            Duration::from_secs(15),
            || async {
                let v = bot(&host, two).await;
                v["state"] == "needs_consent"
                    && v["reconnect"] == true
                    && v["stop"].to_string().contains("unreadable_pair")
            },
        )
        .await;
        for id in [one, three] {
            until("the others on air", Duration::from_secs(15), || async {
                bot(&host, id).await["state"] == "connected"
            })
            .await;
        }
        setup.reads(&host, one, DJS[0]).await;
        setup.reads(&host, three, DJS[2]).await;
        assert!(host.runs());
        let said = log.text()[seen..].to_owned();
        assert!(
            said.contains("the stored pair does not open: the bot needs the DJ's consent"),
            "{case}: {said}"
        );
        assert_eq!(bot(&host, two).await["state"], "needs_consent", "{case}");
        // Its re-connect link brings it back: a new pair over the one that
        // did not open, the bot on air again.
        consent_at(
            &browsers[1],
            &format!("{}/connect?bot={two}", host.url),
            DJS[1],
        )
        .await;
        until(
            &format!("{case}: the bot is back"),
            Duration::from_secs(15),
            || async {
                let v = bot(&host, two).await;
                v["state"] == "connected" && v["stop"].is_null()
            },
        )
        .await;
        setup.reads(&host, two, DJS[1]).await;
        host.stop().await;
    }
    // The intact pair back.
    setup
        .sql(
            "UPDATE integrations SET tokens = ? WHERE id = ?",
            Some(pair.clone()),
            two,
        )
        .await;
    assert_ne!(
        setup.column("kit_state", two).await.as_deref(),
        Some("{\"format\":\"onair.kit\",\"ver"),
        "the memory it started without was saved anew"
    );
    drop(state);

    // Every row under another key: the start stops at once, said as such.
    let started = Instant::now();
    let host = start_host(&setup, OTHER_KEY).await;
    let ended = tokio::time::timeout(Duration::from_secs(5), host.task)
        .await
        .expect("the start stops at once")
        .expect("the host task");
    let err = ended.expect_err("refused").to_string();
    assert!(
        err.contains(
            "the key `ONAIR_HOST_KEY` is not this database's: its key check and its 3 stored pairs do not open with it"
        ),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    // A truncated database file: "damaged", at once.
    let path = setup.db_path();
    let len = std::fs::metadata(&path).expect("db").len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("db");
    file.set_len(len / 2).expect("truncate");
    drop(file);
    let started = Instant::now();
    let host = start_host(&setup, KEY).await;
    let ended = tokio::time::timeout(Duration::from_secs(10), host.task)
        .await
        .expect("the start stops at once")
        .expect("the host task");
    let err = ended.expect_err("refused").to_string();
    assert!(err.starts_with("damaged database file "), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    setup.emu.shutdown().await;
    let _ = std::fs::remove_dir_all(&setup.dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_whose_refresh_was_refused_never_presents_the_dead_token_again() {
    let _log = log();
    let setup = Setup::new("dead-pair").await;
    let host = start_host(&setup, KEY).await;
    let ids = setup.three_bots(&host).await;
    let one = ids[0];
    // DJ one disconnects the integration at the service: the bot's next
    // refresh is refused (invalid_grant).
    control(
        &setup.emu,
        "/integration/disconnect",
        Some(json!({"clientId": setup.client_id, "dj": DJS[0]})),
    )
    .await;
    control(&setup.emu, "/streams/drop", Some(json!({"dj": DJS[0]}))).await;
    until(
        "the bot stops for consent",
        Duration::from_secs(20),
        || async {
            let v = bot(&host, one).await;
            v["reconnect"] == true && v["stop"].to_string().contains("reauthorize")
        },
    )
    .await;
    let requests = control(
        &setup.emu,
        &format!("/requests?clientId={}", setup.client_id),
        None,
    )
    .await;
    let refreshes = grants(&requests, "refresh_token");
    assert!(refreshes >= 1, "the refused refresh: {requests}");
    host.stop().await;

    // A restart: the bot needs consent, and nothing is sent with the dead
    // pair.
    let host = start_host(&setup, KEY).await;
    for id in &ids[1..] {
        until("the others on air", Duration::from_secs(15), || async {
            bot(&host, *id).await["state"] == "connected"
        })
        .await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let requests = control(
        &setup.emu,
        &format!("/requests?clientId={}", setup.client_id),
        None,
    )
    .await;
    assert_eq!(
        grants(&requests, "refresh_token"),
        refreshes,
        "no refresh after the restart"
    );
    let v = bot(&host, one).await;
    assert_eq!(v["state"], "needs_consent", "{v}");
    assert_eq!(v["reconnect"], true, "{v}");
    host.stop().await;
    assert_eq!(
        setup.column("tokens", one).await,
        None,
        "the dead pair is forgotten"
    );
    setup.emu.shutdown().await;
    let _ = std::fs::remove_dir_all(&setup.dir);
}

/// `key=NUMBER` in a log line.
fn field(line: &str, key: &str) -> Option<u64> {
    let at = line.find(&format!("{key}="))? + key.len() + 1;
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refresh_window_is_the_save_alone() {
    let log = log();
    let setup = Setup::new("refresh-window").await;
    let host = start_host(&setup, KEY).await;
    let ids = setup.three_bots(&host).await;
    // Busy rooms while the pairs are refreshed: every bot's log lines go
    // to the store through the same writer.
    let busy = {
        let emu_control = setup.emu.control_url();
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            for i in 0..300 {
                for dj in DJS {
                    let chat = json!({"dj": dj, "event": "chat",
                        "data": {"user": {"id": format!("u{i}"), "nickname": "Mina"}, "message": format!("line {i}")}});
                    let _ = http
                        .post(format!("{emu_control}/emit"))
                        .body(chat.to_string())
                        .send()
                        .await;
                }
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let seen = log.text().len();
    // An hour on: every access token is due, each bot refreshes.
    control(&setup.emu, "/clock/advance", Some(json!({"ms": 3_600_000}))).await;
    until("three refreshes", Duration::from_secs(20), || async {
        log.text()[seen..].matches("token refreshed").count() >= ids.len()
    })
    .await;
    let _ = busy.await;
    let said = log.text()[seen..].to_owned();
    let windows: Vec<u64> = said
        .lines()
        .filter(|l| l.contains("token refreshed"))
        .filter_map(|l| {
            assert!(l.contains("saved=true"), "{l}");
            field(l, "window_us")
        })
        .collect();
    eprintln!("refresh windows (µs, from the pair handed out to its commit): {windows:?}");
    assert_eq!(windows.len(), ids.len(), "{said}");
    // One statement on the tokens' own connection: a few milliseconds
    // (measured 0.5 to 10 ms in a debug build on a busy machine), not the
    // length of a queue of other writes (bounded loosely here: the
    // machine may be busier still).
    assert!(windows.iter().all(|w| *w < 200_000), "{windows:?}");
    host.stop().await;
    setup.emu.shutdown().await;
    let _ = std::fs::remove_dir_all(&setup.dir);
}
