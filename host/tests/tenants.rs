//! Tenants, against the emulator on 127.0.0.1 in-process: each DJ sees and
//! acts on only their own bots, a consent through another DJ's re-connect
//! link makes a new bot, anonymous visitors see nothing about any DJ, a
//! refused code leaves no bot and says so, consent requests are bounded,
//! cross-origin and token-less POSTs are refused for the admin and DJs
//! alike, admin sessions live in the store (a restart keeps them, logout
//! and expiry end them, guesses are throttled), a re-connect revokes the
//! pair it replaces, and a bot the admin disabled stays disabled.

use std::sync::Arc;
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
const ADMIN: &str = "admin-token-of-the-tenants-test";

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
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One host over an emulator app.
struct Setup {
    emu: Running,
    text: String,
    dir: std::path::PathBuf,
    secret: String,
    client_id: String,
    port: u16,
}

struct Host {
    url: String,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), onair_host::HostError>>,
}

async fn setup(name: &str) -> Setup {
    let emu = Emulator::builder().start().await.expect("emulator");
    let dir =
        std::env::temp_dir().join(format!("onair-host-tenants-{name}-{}", std::process::id()));
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
    let client_id = app["clientId"].as_str().expect("id").to_owned();
    let secret = app["clientSecret"].as_str().expect("secret").to_owned();
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
        text,
        dir,
        secret,
        client_id,
        port,
    }
}

impl Setup {
    async fn host(&self) -> Host {
        let secret = self.secret.clone();
        let env = move |name: &str| match name {
            ENV_CLIENT_SECRET => Some(secret.clone()),
            ENV_KEY => Some(KEY.to_owned()),
            ENV_ADMIN_TOKEN => Some(ADMIN.to_owned()),
            _ => None,
        };
        let config = HostConfig::parse(&self.text, &self.dir, &env).expect("config");
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

    /// Revoke requests at the service (a bot's credentials check at start
    /// is not one).
    async fn revokes(&self) -> usize {
        let requests = control(
            &self.emu,
            &format!("/requests?clientId={}", self.client_id),
            None,
        )
        .await;
        let check = onair_emulator::requests::fingerprint(onair::bot::CREDENTIALS_CHECK_TOKEN);
        requests["requests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["grant"] == "revoke" && r["credential"] != check.as_str())
            .count()
    }

    async fn finish(self) {
        self.emu.shutdown().await;
        let _ = std::fs::remove_dir_all(&self.dir);
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

    async fn api(&self, path: &str) -> Value {
        reqwest::Client::new()
            .get(format!("{}{path}", self.url))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("api")
            .json()
            .await
            .expect("api JSON")
    }

    async fn state(&self, id: i64) -> Value {
        self.api(&format!("/api/bots/{id}")).await["bot"]["state"].clone()
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

/// DJ `dj` (at the service) through `connect`, the consent page and
/// /callback; where the host sent the browser.
async fn consent(b: &reqwest::Client, connect: &str, dj: &str) -> String {
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
    location(&r)
}

async fn get(b: &reqwest::Client, url: &str) -> (u16, String) {
    let r = b.get(url).send().await.expect("get");
    let status = r.status().as_u16();
    (status, r.text().await.expect("text"))
}

/// The first bytes of an SSE answer (up to 2 s of it).
async fn stream_head(b: &reqwest::Client, url: &str) -> (u16, String) {
    let mut r = b.get(url).send().await.expect("events");
    let status = r.status().as_u16();
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_millis(700), r.chunk()).await {
            Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            Ok(_) => break,
            Err(_) => {}
        }
    }
    (status, seen)
}

/// The CSRF token in a page's forms.
fn csrf(page: &str) -> String {
    let at = page
        .find("name=\"csrf\" value=\"")
        .unwrap_or_else(|| panic!("no CSRF field in {page}"));
    let rest = &page[at + "name=\"csrf\" value=\"".len()..];
    rest[..rest.find('"').expect("the value ends")].to_owned()
}

async fn post(
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_dj_sees_and_acts_on_their_own_bots_only() {
    let s = setup("own").await;
    let host = s.host().await;
    control(&s.emu, "/live/start", Some(json!({"dj": "main"}))).await;

    // DJ A connects: bot 1, and a session.
    let a = browser();
    assert_eq!(
        consent(&a, &format!("{}/connect", host.url), "main").await,
        "/bots/1"
    );
    until("bot 1 on the stream", Duration::from_secs(10), || async {
        host.state(1).await == "connected"
    })
    .await;
    let generation = host.api("/api/bots/1").await["bot"]["status"]["tokenGeneration"].clone();

    // DJ B takes bot 1's re-connect link: a new bot, bot 1 untouched.
    let b = browser();
    assert_eq!(
        consent(&b, &format!("{}/connect?bot=1", host.url), "beta").await,
        "/bots/2"
    );
    let all = host.api("/api/bots").await;
    assert_eq!(all["bots"].as_array().map(Vec::len), Some(2));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let one = host.api("/api/bots/1").await;
    assert_eq!(
        one["bot"]["state"], "connected",
        "bot 1's stream stays open"
    );
    assert_eq!(
        one["bot"]["status"]["tokenGeneration"], generation,
        "bot 1's pair unchanged"
    );
    assert_eq!(s.revokes().await, 0, "nothing revoked at the service");

    // Each DJ's dashboard, pages, streams and API: theirs only.
    let (status, a_index) = get(&a, &format!("{}/", host.url)).await;
    assert_eq!(status, 200);
    assert!(a_index.contains("id=\"bot-1\""), "{a_index}");
    assert!(!a_index.contains("id=\"bot-2\""), "{a_index}");
    let (_, b_index) = get(&b, &format!("{}/", host.url)).await;
    assert!(b_index.contains("id=\"bot-2\""), "{b_index}");
    assert!(!b_index.contains("id=\"bot-1\""), "{b_index}");
    assert!(!b_index.contains("/bots/1"), "{b_index}");
    assert_eq!(get(&b, &format!("{}/bots/1", host.url)).await.0, 404);
    assert_eq!(get(&a, &format!("{}/bots/1", host.url)).await.0, 200);
    assert_eq!(get(&b, &format!("{}/bots/2", host.url)).await.0, 200);
    assert_eq!(get(&a, &format!("{}/bots/2", host.url)).await.0, 404);
    assert_eq!(get(&b, &format!("{}/api/bots/1", host.url)).await.0, 404);
    let (_, b_api) = get(&b, &format!("{}/api/bots", host.url)).await;
    let b_api: Value = serde_json::from_str(&b_api).expect("JSON");
    let ids: Vec<i64> = b_api["bots"]
        .as_array()
        .expect("bots")
        .iter()
        .filter_map(|v| v["id"].as_i64())
        .collect();
    assert_eq!(ids, vec![2]);
    assert_eq!(
        stream_head(&b, &format!("{}/events?bot=1", host.url))
            .await
            .0,
        404
    );
    let (status, b_live) = stream_head(&b, &format!("{}/events", host.url)).await;
    assert_eq!(status, 200);
    assert!(b_live.contains("bot-2"), "{b_live}");
    assert!(!b_live.contains("bot-1"), "{b_live}");

    // B cannot disable bot 1, with a good token of its own.
    let token = csrf(&b_index);
    assert_eq!(
        post(
            &b,
            &format!("{}/bots/1/disable", host.url),
            &[("csrf", &token)],
            &[]
        )
        .await,
        404
    );
    assert_eq!(
        post(
            &b,
            &format!("{}/admin/bots/1/disable", host.url),
            &[("csrf", &token)],
            &[]
        )
        .await,
        404
    );
    assert_eq!(host.state(1).await, "connected");
    // B's re-connect link for bot 1 again: a third bot, never bot 1.
    assert_eq!(
        consent(&b, &format!("{}/connect?bot=1", host.url), "beta").await,
        "/bots/3"
    );
    assert_eq!(host.state(1).await, "connected");
    // A disables and enables their own bot.
    let token = csrf(&a_index);
    assert_eq!(
        post(
            &a,
            &format!("{}/bots/1/disable", host.url),
            &[("csrf", &token)],
            &[]
        )
        .await,
        303
    );
    assert_eq!(host.state(1).await, "disabled");
    assert_eq!(
        post(
            &a,
            &format!("{}/bots/1/enable", host.url),
            &[("csrf", &token)],
            &[]
        )
        .await,
        303
    );
    until("bot 1 back", Duration::from_secs(10), || async {
        host.state(1).await == "connected"
    })
    .await;

    // Log out ends A's session; a one-time link signs A in elsewhere.
    let a2 = browser();
    let r = a
        .post(format!("{}/signin-link", host.url))
        .form(&[("csrf", token.as_str())])
        .send()
        .await
        .expect("link");
    assert_eq!(r.status(), 200);
    let page = r.text().await.expect("page");
    let at = page.find("/signin?code=").expect("a link");
    let code: String = page[at + "/signin?code=".len()..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    assert_eq!(code.len(), 43);
    let (status, confirm) = get(&a2, &format!("{}/signin?code={code}", host.url)).await;
    assert_eq!(status, 200);
    assert!(confirm.contains("method=\"post\""));
    assert_eq!(
        get(&a2, &format!("{}/bots/1", host.url)).await.0,
        404,
        "the link alone signs nobody in"
    );
    assert_eq!(
        post(
            &a2,
            &format!("{}/signin", host.url),
            &[("code", &code)],
            &[]
        )
        .await,
        303
    );
    assert_eq!(get(&a2, &format!("{}/bots/1", host.url)).await.0, 200);
    let a3 = browser();
    assert_eq!(
        post(
            &a3,
            &format!("{}/signin", host.url),
            &[("code", &code)],
            &[]
        )
        .await,
        400,
        "single use"
    );
    assert_eq!(
        post(
            &a,
            &format!("{}/logout", host.url),
            &[("csrf", &token)],
            &[]
        )
        .await,
        303
    );
    assert_eq!(get(&a, &format!("{}/bots/1", host.url)).await.0, 404);
    let (_, after) = get(&a, &format!("{}/", host.url)).await;
    assert!(!after.contains("bot-1"), "{after}");
    // The admin ends the DJ's other sessions.
    assert_eq!(
        post(
            &browser(),
            &format!("{}/admin/bots/1/logout", host.url),
            &[],
            &[("authorization", &format!("Bearer {ADMIN}"))]
        )
        .await,
        303
    );
    assert_eq!(get(&a2, &format!("{}/bots/1", host.url)).await.0, 404);

    // A DJ session lasts 30 days from its consent.
    assert_eq!(get(&b, &format!("{}/bots/2", host.url)).await.0, 200);
    s.emu
        .clock()
        .advance(onair_host::tenants::DJ_SESSION_MS - 60_000);
    assert_eq!(get(&b, &format!("{}/bots/2", host.url)).await.0, 200);
    s.emu.clock().advance(120_000);
    assert_eq!(
        get(&b, &format!("{}/bots/2", host.url)).await.0,
        404,
        "expired"
    );

    host.stop().await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_visitors_see_nothing_about_any_dj() {
    let s = setup("anon").await;
    let host = s.host().await;
    control(&s.emu, "/live/start", Some(json!({"dj": "main"}))).await;
    let a = browser();
    assert_eq!(
        consent(&a, &format!("{}/connect", host.url), "main").await,
        "/bots/1"
    );
    until("bot 1 on the stream", Duration::from_secs(10), || async {
        host.state(1).await == "connected"
    })
    .await;
    let chat = json!({"dj": "main", "event": "chat", "data": {"user": {"id": "u1", "nickname": "Mina"}, "text": "a line only the DJ may read"}});
    control(&s.emu, "/emit", Some(chat)).await;
    until(
        "the chat line is logged",
        Duration::from_secs(10),
        || async {
            host.api("/api/bots/1?events=100")
                .await
                .to_string()
                .contains("Mina")
        },
    )
    .await;
    let (_, own) = get(&a, &format!("{}/bots/1", host.url)).await;
    assert!(own.contains("Mina"), "the DJ sees it: {own}");
    let label = host.api("/api/bots/1").await["bot"]["label"]
        .as_str()
        .expect("label")
        .to_owned();

    let nobody = browser();
    let expected = [
        ("/", 200),
        ("/bots/1", 404),
        ("/api/bots", 401),
        ("/api/bots/1", 401),
        ("/metrics", 401),
    ];
    let mut shown = Vec::new();
    for (path, status) in expected {
        let (got, text) = get(&nobody, &format!("{}{path}", host.url)).await;
        assert_eq!(got, status, "{path}");
        shown.push((path, text));
    }
    for path in ["/events", "/events?bot=1"] {
        let (got, text) = stream_head(&nobody, &format!("{}{path}", host.url)).await;
        assert!(got == 401 || got == 404, "{path}: {got}");
        shown.push((path, text));
    }
    assert!(
        shown[0].1.contains("/connect"),
        "the connect page: {}",
        shown[0].1
    );
    for (path, text) in &shown {
        for secret in [
            "Mina",
            "a line only the DJ may read",
            label.as_str(),
            "bot-1",
            "/bots/1",
            "bot 1",
            "data-bot",
        ] {
            assert!(!text.contains(secret), "{secret:?} in {path}: {text}");
        }
    }
    // The metrics: the bearer token (a scraper).
    let r = reqwest::Client::new()
        .get(format!("{}/metrics", host.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("metrics");
    assert_eq!(r.status(), 200);
    host.stop().await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_code_leaves_no_bot_and_consent_requests_are_bounded() {
    let s = setup("refused").await;
    let host = s.host().await;
    for _ in 0..3 {
        let b = browser();
        let r = b
            .get(format!("{}/connect", host.url))
            .send()
            .await
            .expect("connect");
        assert_eq!(r.status(), 303);
        let to = location(&r);
        let state = to
            .split("state=")
            .nth(1)
            .and_then(|v| v.split('&').next())
            .expect("state")
            .to_owned();
        let r = b
            .get(format!(
                "{}/callback?code=made-up-code&state={state}",
                host.url
            ))
            .send()
            .await
            .expect("callback");
        assert_eq!(r.status(), 400);
        let page = r.text().await.expect("page");
        assert!(page.contains("Consent failed"), "{page}");
        assert!(
            page.contains("href=\"/connect\""),
            "a try-again link: {page}"
        );
        assert!(!page.contains("made-up-code"), "{page}");
    }
    let all = host.api("/api/bots").await;
    assert_eq!(all["bots"].as_array().map(Vec::len), Some(0), "{all}");
    let metrics = reqwest::Client::new()
        .get(format!("{}/metrics", host.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert!(
        metrics.contains("onair_host_consents_failed_total 3"),
        "{metrics}"
    );
    // A good consent afterwards gets bot 1 (no row was left behind).
    let dj = browser();
    assert_eq!(
        consent(&dj, &format!("{}/connect", host.url), "main").await,
        "/bots/1"
    );

    // Unfinished consent requests: 20 per address, then 429.
    let b = browser();
    for i in 0..20 {
        let r = b
            .get(format!("{}/connect", host.url))
            .send()
            .await
            .expect("connect");
        assert_eq!(r.status(), 303, "request {i}");
    }
    let r = b
        .get(format!("{}/connect", host.url))
        .send()
        .await
        .expect("connect");
    assert_eq!(r.status(), 429);
    assert!(r.text().await.expect("page").contains("Too many"));
    // Ten minutes on, the expired ones go first.
    s.emu.clock().advance(10 * 60 * 1000 + 1000);
    let r = b
        .get(format!("{}/connect", host.url))
        .send()
        .await
        .expect("connect");
    assert_eq!(r.status(), 303);
    host.stop().await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_prove_their_origin_and_admin_sessions_live_in_the_store() {
    let s = setup("origin").await;
    let host = s.host().await;
    control(&s.emu, "/live/start", Some(json!({"dj": "main"}))).await;
    let dj = browser();
    assert_eq!(
        consent(&dj, &format!("{}/connect", host.url), "main").await,
        "/bots/1"
    );
    until("bot 1 on the stream", Duration::from_secs(10), || async {
        host.state(1).await == "connected"
    })
    .await;

    // The admin logs in (a login CSRF token from the form).
    let admin = browser();
    let (_, form) = get(&admin, &format!("{}/admin/login", host.url)).await;
    let login_token = csrf(&form);
    assert_eq!(
        post(
            &admin,
            &format!("{}/admin/login", host.url),
            &[("csrf", "wrong"), ("token", ADMIN)],
            &[]
        )
        .await,
        403,
        "no login CSRF token"
    );
    assert_eq!(
        post(
            &admin,
            &format!("{}/admin/login", host.url),
            &[("csrf", &login_token), ("token", &format!(" {ADMIN} "))],
            &[]
        )
        .await,
        303
    );
    let (_, admin_page) = get(&admin, &format!("{}/bots/1", host.url)).await;
    let admin_token = csrf(&admin_page);
    let (_, dj_page) = get(&dj, &format!("{}/bots/1", host.url)).await;
    let dj_token = csrf(&dj_page);
    let other_origin = format!("http://127.0.0.1:{}", s.port.wrapping_add(1));

    // Cross-origin, cross-site and token-less POSTs: refused for both.
    for (who, b, path, token) in [
        (
            "admin",
            &admin,
            "/admin/bots/1/disable",
            admin_token.as_str(),
        ),
        ("dj", &dj, "/bots/1/disable", dj_token.as_str()),
    ] {
        let url = format!("{}{path}", host.url);
        assert_eq!(
            post(b, &url, &[("csrf", token)], &[("origin", &other_origin)]).await,
            403,
            "{who}: another origin"
        );
        assert_eq!(
            post(
                b,
                &url,
                &[("csrf", token)],
                &[("sec-fetch-site", "cross-site")]
            )
            .await,
            403,
            "{who}: cross-site"
        );
        assert_eq!(
            post(
                b,
                &url,
                &[("csrf", token)],
                &[("referer", &format!("{other_origin}/bots/1"))]
            )
            .await,
            403,
            "{who}: another referer"
        );
        assert_eq!(post(b, &url, &[], &[]).await, 403, "{who}: no token");
        assert_eq!(
            post(b, &url, &[("csrf", "forged")], &[]).await,
            403,
            "{who}: a wrong token"
        );
        assert_eq!(host.state(1).await, "connected", "{who}");
    }
    // Another session's token does not do: the DJ's for the admin's form.
    assert_eq!(
        post(
            &admin,
            &format!("{}/admin/bots/1/disable", host.url),
            &[("csrf", &dj_token)],
            &[]
        )
        .await,
        403
    );

    // With its own token and its own origin: done. The admin disables.
    assert_eq!(
        post(
            &admin,
            &format!("{}/admin/bots/1/disable", host.url),
            &[("csrf", &admin_token)],
            &[("origin", &host.url), ("sec-fetch-site", "same-origin")]
        )
        .await,
        303
    );
    assert_eq!(host.state(1).await, "disabled");
    // The DJ cannot enable a bot the admin disabled, not even after a
    // disable of their own ...
    assert_eq!(
        post(
            &dj,
            &format!("{}/bots/1/disable", host.url),
            &[("csrf", &dj_token)],
            &[]
        )
        .await,
        303
    );
    assert_eq!(
        post(
            &dj,
            &format!("{}/bots/1/enable", host.url),
            &[("csrf", &dj_token)],
            &[]
        )
        .await,
        403
    );
    // ... and a re-connect stores the new pair, revokes the one it
    // replaces at the service, and leaves the bot disabled.
    assert_eq!(s.revokes().await, 0);
    let generation = host.api("/api/bots/1").await["bot"]["enabled"].clone();
    assert_eq!(generation, false);
    assert_eq!(
        consent(&dj, &format!("{}/connect?bot=1", host.url), "main").await,
        "/bots/1"
    );
    assert_eq!(
        s.revokes().await,
        1,
        "the replaced pair revoked at the service"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(host.state(1).await, "disabled", "the admin's disable holds");
    let (_, dj_page) = get(&dj, &format!("{}/bots/1", host.url)).await;
    assert!(dj_page.contains("An admin disabled this bot"), "{dj_page}");
    // The admin enables it: it runs on the new pair.
    assert_eq!(
        post(
            &admin,
            &format!("{}/admin/bots/1/enable", host.url),
            &[("csrf", &admin_token)],
            &[]
        )
        .await,
        303
    );
    until("bot 1 runs again", Duration::from_secs(10), || async {
        host.state(1).await == "connected"
    })
    .await;
    // A re-connect of a running bot revokes its pair too.
    assert_eq!(
        consent(&dj, &format!("{}/connect?bot=1", host.url), "main").await,
        "/bots/1"
    );
    assert_eq!(s.revokes().await, 2);
    until(
        "bot 1 on its newest pair",
        Duration::from_secs(10),
        || async { host.state(1).await == "connected" },
    )
    .await;
    // A disabled bot's revoke still revokes its stored pair at the service.
    for action in ["disable", "revoke"] {
        assert_eq!(
            post(
                &admin,
                &format!("{}/admin/bots/1/{action}", host.url),
                &[("csrf", &admin_token)],
                &[]
            )
            .await,
            303,
            "{action}"
        );
    }
    assert_eq!(s.revokes().await, 3, "the disabled bot's pair revoked");

    // The admin session outlives a restart (it is in the store).
    host.stop().await;
    let host = s.host().await;
    let (status, _) = get(&admin, &format!("{}/api/bots", host.url)).await;
    assert_eq!(status, 200, "the admin session after a restart");
    let (status, _) = get(&dj, &format!("{}/api/bots/1", host.url)).await;
    assert_eq!(status, 200, "the DJ session after a restart");
    // Logout ends it.
    assert_eq!(
        post(
            &admin,
            &format!("{}/admin/logout", host.url),
            &[("csrf", &admin_token)],
            &[]
        )
        .await,
        303
    );
    assert_eq!(get(&admin, &format!("{}/api/bots", host.url)).await.0, 401);
    // A new one expires after 12 h.
    let (_, form) = get(&admin, &format!("{}/admin/login", host.url)).await;
    let login_token = csrf(&form);
    assert_eq!(
        post(
            &admin,
            &format!("{}/admin/login", host.url),
            &[("csrf", &login_token), ("token", ADMIN)],
            &[]
        )
        .await,
        303
    );
    assert_eq!(get(&admin, &format!("{}/api/bots", host.url)).await.0, 200);
    s.emu.clock().advance(12 * 3_600_000 - 60_000);
    assert_eq!(get(&admin, &format!("{}/api/bots", host.url)).await.0, 200);
    s.emu.clock().advance(120_000);
    assert_eq!(
        get(&admin, &format!("{}/api/bots", host.url)).await.0,
        401,
        "expired"
    );

    // Wrong admin tokens: five a minute, then 429 (the right one too),
    // whether guessed as a bearer token or through the form.
    let bearer = |token: &str| {
        reqwest::Client::new()
            .get(format!("{}/api/bots", host.url))
            .bearer_auth(token)
    };
    for i in 0..2 {
        let r = bearer("a-wrong-bearer-guess").send().await.expect("api");
        assert_eq!(r.status().as_u16(), 401, "bearer guess {i}");
    }
    let (_, form) = get(&admin, &format!("{}/admin/login", host.url)).await;
    let login_token = csrf(&form);
    for i in 0..3 {
        assert_eq!(
            post(
                &admin,
                &format!("{}/admin/login", host.url),
                &[("csrf", &login_token), ("token", "a-wrong-guess-of-it")],
                &[]
            )
            .await,
            401,
            "guess {i}"
        );
    }
    assert_eq!(
        post(
            &admin,
            &format!("{}/admin/login", host.url),
            &[("csrf", &login_token), ("token", ADMIN)],
            &[]
        )
        .await,
        429
    );
    let r = bearer(ADMIN).send().await.expect("api");
    assert_eq!(r.status().as_u16(), 429, "the right bearer token too");
    assert_eq!(
        r.headers().get("retry-after").and_then(|v| v.to_str().ok()),
        Some("60")
    );
    host.stop().await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_cookies_are_secure_behind_an_https_public_url() {
    let mut s = setup("secure").await;
    // The operator's TLS proxy: the public URL is https; the test talks to
    // the host directly and carries the cookies by hand (a cookie store
    // keeps Secure cookies off plain http).
    let public = "https://bots.example.test";
    let app = control(
        &s.emu,
        "/apps",
        Some(json!({"redirectUri": format!("{public}/callback")})),
    )
    .await;
    let client_id = app["clientId"].as_str().expect("id").to_owned();
    s.text = s
        .text
        .replace(&s.client_id, &client_id)
        .replace("[host]\n", &format!("[host]\npublic_url = \"{public}\"\n"));
    s.secret = app["clientSecret"].as_str().expect("secret").to_owned();
    s.client_id = client_id;
    let host = s.host().await;
    let direct = format!("http://127.0.0.1:{}", s.port);
    let plain = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let set_cookies = |r: &reqwest::Response| -> Vec<String> {
        r.headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect()
    };
    let r = plain
        .get(format!("{direct}/connect"))
        .send()
        .await
        .expect("connect");
    assert_eq!(r.status(), 303);
    let cookies = set_cookies(&r);
    let state_cookie = cookies
        .iter()
        .find(|c| c.starts_with("onair_consent="))
        .expect("the state cookie");
    assert!(state_cookie.contains("; Secure"), "{state_cookie}");
    let state_pair = state_cookie.split(';').next().expect("pair").to_owned();
    let r = plain
        .get(format!("{}&dj=main", location(&r)))
        .send()
        .await
        .expect("consent page");
    assert_eq!(r.status(), 302);
    let callback = location(&r).replace(public, &direct);
    let r = plain
        .get(&callback)
        .header("cookie", &state_pair)
        .send()
        .await
        .expect("callback");
    assert_eq!(r.status(), 303);
    let cookies = set_cookies(&r);
    let session = cookies
        .iter()
        .find(|c| c.starts_with("onair_session="))
        .expect("a DJ session");
    for part in [
        "; Secure",
        "; HttpOnly",
        "; SameSite=Lax",
        "; Path=/",
        "; Max-Age=2592000",
    ] {
        assert!(session.contains(part), "{part} in {session}");
    }
    let pair = session.split(';').next().expect("pair").to_owned();
    let r = plain
        .get(format!("{direct}/bots/1"))
        .header("cookie", &pair)
        .send()
        .await
        .expect("page");
    assert_eq!(r.status(), 200);
    // The admin's too.
    let r = plain
        .get(format!("{direct}/admin/login"))
        .send()
        .await
        .expect("login form");
    let login = set_cookies(&r)
        .into_iter()
        .find(|c| c.starts_with("onair_login="))
        .expect("the login cookie");
    assert!(login.contains("; Secure"), "{login}");
    let token = csrf(&r.text().await.expect("form"));
    let r = plain
        .post(format!("{direct}/admin/login"))
        .header("cookie", login.split(';').next().expect("pair"))
        .form(&[("csrf", token.as_str()), ("token", ADMIN)])
        .send()
        .await
        .expect("login");
    assert_eq!(r.status(), 303);
    let admin = set_cookies(&r)
        .into_iter()
        .find(|c| c.starts_with("onair_admin="))
        .expect("an admin session");
    for part in [
        "; Secure",
        "; HttpOnly",
        "; SameSite=Strict",
        "; Max-Age=43200",
    ] {
        assert!(admin.contains(part), "{part} in {admin}");
    }
    host.stop().await;
    s.finish().await;
}
