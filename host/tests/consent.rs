//! The host against the emulator on 127.0.0.1, in-process: a DJ connects
//! through /connect, the consent page and /callback with a plain HTTP
//! client; the code is exchanged once (a replayed or forged answer is
//! refused); events are tallied; the host stops and starts again and the
//! bot resumes from the store without consent; admin actions need the
//! admin token; a bot's page updates live over SSE; a bot whose integration
//! was disconnected stops for consent and comes back through its re-connect
//! link; a revoked bot's tokens are revoked at the service and forgotten.
//! Tokens never reach the database files, the log, a page or the API.

use std::future::Future;
use std::io::Write;
use std::sync::{Arc, Mutex};
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
const ADMIN: &str = "admin-token-of-the-consent-test";

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

/// Every log line of the process, to look for secrets in.
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

async fn start_host(text: &str, dir: &std::path::Path, emu: &Running, secret: &str) -> Host {
    let secret = secret.to_owned();
    let env = move |name: &str| match name {
        ENV_CLIENT_SECRET => Some(secret.clone()),
        ENV_KEY => Some(KEY.to_owned()),
        ENV_ADMIN_TOKEN => Some(ADMIN.to_owned()),
        _ => None,
    };
    let config = HostConfig::parse(text, dir, &env).expect("config");
    let listener = TcpListener::bind(config.listen).await.expect("listen");
    let url = config.public_url.clone();
    let (stop, stopped) = oneshot::channel::<()>();
    let clock = Arc::new(EmulatorClock(emu.clock()));
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

/// A DJ through /connect (or a bot's re-connect link), the consent page
/// and /callback; returns the callback URL (with the code) and where the
/// host sent the browser.
async fn consent(b: &reqwest::Client, connect: &str) -> (String, String) {
    let r = b.get(connect).send().await.expect("connect");
    assert_eq!(r.status(), 303);
    let consent_page = location(&r);
    let r = b
        .get(format!("{consent_page}&dj=main"))
        .send()
        .await
        .expect("consent page");
    assert_eq!(r.status(), 302);
    let callback = location(&r);
    let r = b.get(&callback).send().await.expect("callback");
    assert_eq!(r.status(), 303, "{:?}", r.text().await);
    let to = location(&r);
    (callback, to)
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

/// A page as the admin sees it.
async fn page(host: &Host, path: &str) -> String {
    reqwest::Client::new()
        .get(format!("{}{path}", host.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("page text")
}

/// Token requests of `grant` in the emulator's log; a bot's credentials
/// check at start (a revoke of a token that does not exist) is not counted.
fn exchanges(requests: &Value, grant: &str) -> usize {
    let check = onair_emulator::requests::fingerprint(onair::bot::CREDENTIALS_CHECK_TOKEN);
    requests["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["grant"] == grant && r["credential"] != check.as_str())
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dj_connects_once_the_host_restarts_and_the_bot_comes_back_for_consent() {
    let log = Captured::default();
    let writer = log.clone();
    tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_env_filter("debug,sqlx=warn,hyper=warn,reqwest=warn,h2=warn")
        .init();

    let emu = Emulator::builder().start().await.expect("emulator");
    let dir = std::env::temp_dir().join(format!("onair-host-consent-{}", std::process::id()));
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
    let host = start_host(&text, &dir, &emu, &secret).await;
    control(&emu, "/live/start", Some(json!({}))).await;

    // Connect: one bot, one exchange.
    let b = browser();
    let (callback, to) = consent(&b, &format!("{}/connect", host.url)).await;
    assert_eq!(to, "/bots/1");
    let bot = api(&host, "/api/bots/1").await;
    assert_eq!(bot["bot"]["enabled"], true);

    // The same answer again (a reload, or a thief): refused, no exchange.
    let again = b.get(&callback).send().await.expect("callback again");
    assert_eq!(again.status(), 400);
    // An answer without this browser's state cookie: refused.
    let forged = browser().get(&callback).send().await.expect("forged");
    assert_eq!(forged.status(), 400);
    let requests = control(&emu, &format!("/requests?clientId={client_id}"), None).await;
    assert_eq!(exchanges(&requests, "authorization_code"), 1);

    // Events are tallied.
    until("the stream is open", Duration::from_secs(10), || async {
        api(&host, "/api/bots/1").await["bot"]["state"] == "connected"
    })
    .await;
    let like = json!({"event":"like","data":{"user":{"id":"u1","nickname":"Mina"}}});
    let emitted = control(&emu, "/emit", Some(like.clone())).await;
    assert_eq!(emitted["delivered"], 1);
    until("the heart is counted", Duration::from_secs(10), || async {
        api(&host, "/api/bots/1").await["bot"]["hearts"] == 1
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
    let host = start_host(&text, &dir, &emu, &secret).await;
    until(
        "the restored bot reconnects",
        Duration::from_secs(10),
        || async { api(&host, "/api/bots/1").await["bot"]["state"] == "connected" },
    )
    .await;
    control(&emu, "/emit", Some(like.clone())).await;
    until("the tally continues", Duration::from_secs(10), || async {
        api(&host, "/api/bots/1").await["current"]["tally"]["hearts"] == 2
    })
    .await;
    let requests = control(&emu, &format!("/requests?clientId={client_id}"), None).await;
    assert_eq!(exchanges(&requests, "authorization_code"), 1);
    assert_eq!(exchanges(&requests, "refresh_token"), 0);

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
            control(&emu, "/emit", Some(jun)).await;
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
    let admin = reqwest::Client::new();
    for (action, state) in [("disable", "disabled"), ("enable", "connected")] {
        let r = admin
            .post(format!("{}/admin/bots/1/{action}", host.url))
            .bearer_auth(ADMIN)
            .header("accept", "application/json")
            .send()
            .await
            .expect("admin action");
        assert_eq!(r.status(), 200, "{action}");
        until(state, Duration::from_secs(10), || async {
            api(&host, "/api/bots/1").await["bot"]["state"] == state
        })
        .await;
    }

    // The DJ disconnects the integration: the bot stops for consent and
    // offers a re-connect link, which brings the same bot back.
    control(
        &emu,
        "/integration/disconnect",
        Some(json!({"clientId": client_id})),
    )
    .await;
    control(&emu, "/streams/drop", Some(json!({}))).await;
    until(
        "the bot stops for consent",
        Duration::from_secs(20),
        || async { api(&host, "/api/bots/1").await["bot"]["reconnect"] == true },
    )
    .await;
    let dashboard = page(&host, "/").await;
    assert!(dashboard.contains("/connect?bot=1"), "{dashboard}");
    let (_, to) = consent(&b, &format!("{}/connect?bot=1", host.url)).await;
    assert_eq!(to, "/bots/1");
    until("the bot is back", Duration::from_secs(10), || async {
        let v = api(&host, "/api/bots/1").await;
        v["bot"]["state"] == "connected" && v["bot"]["stop"].is_null()
    })
    .await;
    let views = api(&host, "/api/bots").await;
    assert_eq!(
        views["bots"].as_array().map(Vec::len),
        Some(1),
        "the same bot"
    );

    // Secrets: the stored pair opens with the key; its tokens are nowhere
    // else.
    let cipher = onair_host::crypto::TokenCipher::from_base64(KEY).expect("key");
    let config_path = dir.join("host.db");
    let store = onair_host::store::Store::open(
        &format!("sqlite://{}?mode=rwc", config_path.display()),
        cipher,
    )
    .await
    .expect("store");
    let row = store.integration(1).await.expect("row").expect("bot 1");
    let tokens = row.tokens.expect("a stored pair");
    let pair: Value = serde_json::from_str(&tokens.to_json()).expect("pair JSON");
    let access = pair["access_token"].as_str().expect("access").to_owned();
    let refresh = pair["refresh_token"].as_str().expect("refresh").to_owned();
    let code = callback
        .split("code=")
        .nth(1)
        .and_then(|c| c.split('&').next())
        .expect("code")
        .to_owned();
    let mut shown = vec![
        page(&host, "/").await,
        page(&host, "/bots/1").await,
        page(&host, "/metrics").await,
        api(&host, "/api/bots/1?events=1000").await.to_string(),
        api(&host, "/api/bots").await.to_string(),
    ];

    // Revoke: the tokens are revoked at the service and forgotten; the bot
    // stops and asks for a new connection.
    let r = reqwest::Client::new()
        .post(format!("{}/admin/bots/1/revoke", host.url))
        .bearer_auth(ADMIN)
        .header("accept", "application/json")
        .send()
        .await
        .expect("revoke");
    assert_eq!(r.status(), 200);
    until("the bot is revoked", Duration::from_secs(10), || async {
        let v = api(&host, "/api/bots/1").await;
        v["bot"]["reconnect"] == true && v["bot"].to_string().contains("revoked")
    })
    .await;
    let requests = control(&emu, &format!("/requests?clientId={client_id}"), None).await;
    // The re-connect revoked the pair it replaced; the admin's revoke, the
    // one it brought.
    assert_eq!(
        exchanges(&requests, "revoke"),
        2,
        "one revoke at the service for each replaced pair"
    );
    let row = store.integration(1).await.expect("row").expect("bot 1");
    assert!(row.tokens.is_none(), "the pair is forgotten");
    shown.push(page(&host, "/bots/1").await);

    host.stop().await;
    store.close().await;
    shown.push(log.text());
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("dir") {
        files.extend(std::fs::read(entry.expect("entry").path()).expect("file"));
    }
    shown.push(String::from_utf8_lossy(&files).into_owned());
    for (i, text) in shown.iter().enumerate() {
        for (what, secret) in [
            ("access token", access.as_str()),
            ("refresh token", refresh.as_str()),
            ("client secret", secret.as_str()),
            ("consent code", code.as_str()),
            ("admin token", ADMIN),
            ("key", KEY),
        ] {
            assert!(!text.contains(secret), "the {what} in shown[{i}]");
        }
    }
    assert!(log.text().contains("DJ connected"), "the log was captured");
    emu.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
