//! What the host's integration tests share: the emulator's clock as the
//! driver's clock, the emulator's control API, waiting for a condition, one
//! host over an emulator app (its config, started in-process), a browser
//! that keeps cookies, a DJ's consent, the admin's API, plain GETs and
//! POSTs, a page's CSRF field, and the process's log lines captured.
//!
//! Each test file uses some of it (`mod common;`): what one does not use is
//! not dead code in another.
#![allow(dead_code)]

use std::future::Future;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
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

/// The store's key (32 bytes, 0 to 31).
pub const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
/// The admin token of every test host.
pub const ADMIN: &str = "admin-token-of-the-host-tests";

/// The emulator's virtual clock as the driver's clock.
pub struct EmulatorClock(pub Arc<VirtualClock>);

impl Clock for EmulatorClock {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.0.now_ms()).unwrap_or(0)
    }

    fn real_delay(&self, at_ms: u64) -> Duration {
        let left = at_ms.saturating_sub(self.now_ms()) as f64;
        Duration::from_secs_f64((left / self.0.speed().max(1e-3) / 1000.0).min(1.0))
    }
}

/// Every log line of the process, to look for secrets and messages in.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

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
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().map(|b| b.clone()).unwrap_or_default()).into_owned()
    }
}

/// The process's log, captured from the first call on at the levels of
/// `filter` (the first call's: one subscriber serves the process).
pub fn log(filter: &str) -> &'static Captured {
    static LOG: OnceLock<Captured> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Captured::default();
        let writer = log.clone();
        let _ = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_env_filter(filter)
            .try_init();
        log
    })
}

/// A call of the emulator's control API: a POST of `body`, or a GET.
pub async fn control(emu: &Running, path: &str, body: Option<Value>) -> Value {
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

/// Waits until `check` holds, `what` failing past `limit`.
pub async fn until<F, Fut>(what: &str, limit: Duration, mut check: F)
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

/// Token requests of `grant` in the emulator's log (`/requests`); a bot's
/// credentials check at start (a revoke of a token that does not exist) is
/// not counted.
pub fn grants(requests: &Value, grant: &str) -> usize {
    let check = onair_emulator::requests::fingerprint(onair::bot::CREDENTIALS_CHECK_TOKEN);
    requests["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["grant"] == grant && r["credential"] != check.as_str())
        .count()
}

/// The ids of the bots in a `/api/bots` answer.
pub fn bot_ids(bots: &Value) -> Vec<i64> {
    bots["bots"]
        .as_array()
        .expect("bots")
        .iter()
        .filter_map(|b| b["id"].as_i64())
        .collect()
}

/// The value of `name` in `url`'s query.
pub fn param(url: &str, name: &str) -> String {
    url.split(&format!("{name}="))
        .nth(1)
        .and_then(|v| v.split('&').next())
        .expect(name)
        .to_owned()
}

/// One host over an emulator app: the emulator, the host's folder, port and
/// config, the app's credentials.
pub struct Setup {
    pub emu: Running,
    pub dir: PathBuf,
    pub port: u16,
    /// host.toml (`Setup::text_with("")`).
    pub text: String,
    pub client_id: String,
    pub secret: String,
}

impl Setup {
    /// An emulator, an empty folder `onair-host-{name}-PID`, a free port and
    /// an app whose redirect is that port's /callback.
    pub async fn new(name: &str) -> Setup {
        Setup::on(name, Emulator::builder().start().await.expect("emulator")).await
    }

    /// The same over an emulator of the test's own (its clock's speed, …).
    pub async fn on(name: &str, emu: Running) -> Setup {
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
        let mut setup = Setup {
            client_id: app["clientId"].as_str().expect("id").to_owned(),
            secret: app["clientSecret"].as_str().expect("secret").to_owned(),
            emu,
            dir,
            port,
            text: String::new(),
        };
        setup.text = setup.text_with("");
        setup
    }

    /// host.toml for this app and port, `host_extra` in `[host]`.
    pub fn text_with(&self, host_extra: &str) -> String {
        let base = self.emu.base_url();
        let (client_id, port) = (&self.client_id, self.port);
        format!(
            r#"[app]
base_url = "{base}"
client_id = "{client_id}"
consent_url = "{base}/oauth/authorize?client_id={{client_id}}&redirect_uri={{redirect_uri}}&state={{state}}&scope={{scope}}"
[host]
listen = "127.0.0.1:{port}"
start_spread_ms = 300
{host_extra}
[bot.kit]
tally = true
greetings = {{}}
"#
        )
    }

    /// The host's config from `text`, with the app's secret, `key` and the
    /// admin token as its environment.
    pub fn config(&self, key: &str) -> HostConfig {
        let (secret, key) = (self.secret.clone(), key.to_owned());
        let env = move |name: &str| match name {
            ENV_CLIENT_SECRET => Some(secret.clone()),
            ENV_KEY => Some(key.clone()),
            ENV_ADMIN_TOKEN => Some(ADMIN.to_owned()),
            _ => None,
        };
        HostConfig::parse(&self.text, &self.dir, &env).expect("config")
    }

    /// The host in-process on the emulator's clock, its store opened with
    /// `key`.
    pub async fn host(&self, key: &str) -> Host {
        let config = self.config(key);
        let listener = TcpListener::bind(config.listen).await.expect("listen");
        let url = config.public_url.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let clock = Arc::new(EmulatorClock(self.emu.clock()));
        let task = tokio::spawn(onair_host::serve(config, listener, clock, async move {
            let _ = stopped.await;
        }));
        Host {
            url,
            stop: Some(stop),
            task,
        }
    }

    /// The emulator's log of this app's token requests.
    pub async fn requests(&self) -> Value {
        control(
            &self.emu,
            &format!("/requests?clientId={}", self.client_id),
            None,
        )
        .await
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.join("host.db")
    }

    /// The emulator stopped, the folder removed.
    pub async fn finish(self) {
        self.emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A host running in-process.
pub struct Host {
    pub url: String,
    pub stop: Option<oneshot::Sender<()>>,
    pub task: tokio::task::JoinHandle<Result<(), onair_host::HostError>>,
}

impl Host {
    /// Stops the host; it stops cleanly within 20 s.
    pub async fn stop(mut self) {
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
    pub fn runs(&self) -> bool {
        !self.task.is_finished()
    }

    /// `path` on the host.
    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// The admin's view of `path` through the API.
    pub async fn api(&self, path: &str) -> Value {
        admin_get(&self.at(path))
            .await
            .json()
            .await
            .expect("api JSON")
    }

    /// A page (or /metrics) as the admin sees it.
    pub async fn page(&self, path: &str) -> String {
        admin_get(&self.at(path))
            .await
            .text()
            .await
            .expect("page text")
    }

    /// Bot `id` as the API shows it.
    pub async fn bot(&self, id: i64) -> Value {
        self.api(&format!("/api/bots/{id}")).await["bot"].clone()
    }

    pub async fn state(&self, id: i64) -> Value {
        self.bot(id).await["state"].clone()
    }
}

/// `url` with the admin's bearer token, from 127.0.0.1 (within 10 s).
pub async fn admin_get(url: &str) -> reqwest::Response {
    reqwest::Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::LOCALHOST))
        .build()
        .expect("client")
        .get(url)
        .bearer_auth(ADMIN)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("api")
}

/// A browser on 127.0.0.1: cookies kept, redirects read one by one.
pub fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .local_address(IpAddr::V4(Ipv4Addr::LOCALHOST))
        .build()
        .expect("client")
}

pub fn location(r: &reqwest::Response) -> String {
    r.headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .expect("a redirect")
        .to_owned()
}

/// A consent through: the callback URL (with the code) and where the host
/// sent the browser after it.
pub struct Consented {
    pub callback: String,
    pub to: String,
}

/// DJ `dj` (at the service) through `connect` (/connect, or a bot's
/// re-connect link), the consent page and /callback in `b`: the callback's
/// URL and the host's answer to it, whatever it is.
pub async fn consent_answer(
    b: &reqwest::Client,
    connect: &str,
    dj: &str,
) -> (String, reqwest::Response) {
    let r = b.get(connect).send().await.expect("connect");
    assert_eq!(r.status(), 303, "{dj}: /connect");
    let consent_page = location(&r);
    let r = b
        .get(format!("{consent_page}&dj={dj}"))
        .send()
        .await
        .expect("consent page");
    assert_eq!(r.status(), 302, "{dj}: the consent page");
    let callback = location(&r);
    let r = b.get(&callback).send().await.expect("callback");
    (callback, r)
}

/// DJ `dj` (at the service) through `connect` (/connect, or a bot's
/// re-connect link), the consent page and /callback in `b`, which sends the
/// browser on (303).
pub async fn consent(b: &reqwest::Client, connect: &str, dj: &str) -> Consented {
    let (callback, r) = consent_answer(b, connect, dj).await;
    assert_eq!(r.status(), 303, "{:?}", r.text().await);
    let to = location(&r);
    Consented { callback, to }
}

/// The status and the text of `url`.
pub async fn get(b: &reqwest::Client, url: &str) -> (u16, String) {
    let r = b.get(url).send().await.expect("get");
    let status = r.status().as_u16();
    (status, r.text().await.expect("text"))
}

/// The status of a form POST of `form` to `url` with `headers`.
pub async fn post(
    b: &reqwest::Client,
    url: &str,
    form: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> u16 {
    let mut request = b.post(url).form(form);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    request.send().await.expect("post").status().as_u16()
}

/// The CSRF token in a page's forms.
pub fn csrf(page: &str) -> String {
    let at = page
        .find("name=\"csrf\" value=\"")
        .unwrap_or_else(|| panic!("no CSRF field in {page}"));
    let rest = &page[at + "name=\"csrf\" value=\"".len()..];
    rest[..rest.find('"').expect("the value ends")].to_owned()
}
