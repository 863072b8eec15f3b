//! Tenants, against the emulator on 127.0.0.1 in-process: each DJ sees and
//! acts on only their own bots, a consent through another DJ's re-connect
//! link makes a new bot, anonymous visitors see nothing about any DJ, a
//! refused code leaves no bot and says so, consent requests are bounded,
//! cross-origin and token-less POSTs are refused for the admin and DJs
//! alike, admin sessions live in the store (a restart keeps them, logout
//! and expiry end them, guesses are throttled), a re-connect revokes the
//! pair it replaces, and a bot the admin disabled stays disabled.

mod common;

use std::time::{Duration, Instant};

use common::{
    admin_get, bot_ids, browser, consent, control, csrf, get, grants, location, param, post, until,
    Host, Setup, ADMIN, KEY,
};
use serde_json::{json, Value};

impl Setup {
    /// Revoke requests at the service (a bot's credentials check at start
    /// is not one).
    async fn revokes(&self) -> usize {
        grants(&self.requests().await, "revoke")
    }
}

/// A host (`tenants-{name}`) and DJ "main" on air, connected through
/// /connect: bot 1 on its stream, and the DJ's browser.
async fn bot_1_on_air(name: &str) -> (Setup, Host, reqwest::Client) {
    let s = Setup::new(&format!("tenants-{name}")).await;
    let host = s.host(KEY).await;
    control(&s.emu, "/live/start", Some(json!({"dj": "main"}))).await;
    let dj = browser();
    assert_eq!(connect(&dj, &host, "/connect", "main").await, "/bots/1");
    until_connected(&host, "bot 1 on the stream").await;
    (s, host, dj)
}

/// DJ `dj` (at the service) through `path` (/connect or a re-connect
/// link), the consent page and /callback; where the host sent the browser.
async fn connect(b: &reqwest::Client, host: &Host, path: &str, dj: &str) -> String {
    consent(b, &host.at(path), dj).await.to
}

/// Bot 1 connected, within 10 s.
async fn until_connected(host: &Host, what: &str) {
    until(what, Duration::from_secs(10), || async {
        host.state(1).await == "connected"
    })
    .await;
}

/// A form's fields, or a request's headers.
type Fields<'a> = &'a [(&'a str, &'a str)];

/// The status of `path` for `b`.
async fn status(b: &reqwest::Client, host: &Host, path: &str) -> u16 {
    get(b, &host.at(path)).await.0
}

/// The status of a POST to `path` with `token` as its CSRF field.
async fn post_csrf(b: &reqwest::Client, host: &Host, path: &str, token: &str) -> u16 {
    post(b, &host.at(path), &[("csrf", token)], &[]).await
}

/// The login form's CSRF token (the form sets its cookie in `admin`).
async fn login_form(admin: &reqwest::Client, host: &Host) -> String {
    csrf(&get(admin, &host.at("/admin/login")).await.1)
}

/// The status of the admin's login with `token` through the form.
async fn login(admin: &reqwest::Client, host: &Host, form_token: &str, token: &str) -> u16 {
    let form = [("csrf", form_token), ("token", token)];
    post(admin, &host.at("/admin/login"), &form, &[]).await
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_dj_sees_and_acts_on_their_own_bots_only() {
    // DJ A connects: bot 1, and a session.
    let (s, host, a) = bot_1_on_air("own").await;
    let generation = host.bot(1).await["status"]["tokenGeneration"].clone();

    // DJ B takes bot 1's re-connect link: a new bot, bot 1 untouched.
    let b = browser();
    assert_eq!(
        connect(&b, &host, "/connect?bot=1", "beta").await,
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
    let (status_a, a_index) = get(&a, &host.at("/")).await;
    assert_eq!(status_a, 200);
    assert!(a_index.contains("id=\"bot-1\""), "{a_index}");
    assert!(!a_index.contains("id=\"bot-2\""), "{a_index}");
    let (_, b_index) = get(&b, &host.at("/")).await;
    assert!(b_index.contains("id=\"bot-2\""), "{b_index}");
    assert!(!b_index.contains("id=\"bot-1\""), "{b_index}");
    assert!(!b_index.contains("/bots/1"), "{b_index}");
    for (who, dj, path, expected) in [
        ("B", &b, "/bots/1", 404),
        ("A", &a, "/bots/1", 200),
        ("B", &b, "/bots/2", 200),
        ("A", &a, "/bots/2", 404),
        ("B", &b, "/api/bots/1", 404),
    ] {
        assert_eq!(status(dj, &host, path).await, expected, "{who}: {path}");
    }
    let (_, b_api) = get(&b, &host.at("/api/bots")).await;
    let b_api: Value = serde_json::from_str(&b_api).expect("JSON");
    assert_eq!(bot_ids(&b_api), vec![2]);
    assert_eq!(stream_head(&b, &host.at("/events?bot=1")).await.0, 404);
    let (status_b, b_live) = stream_head(&b, &host.at("/events")).await;
    assert_eq!(status_b, 200);
    assert!(b_live.contains("bot-2"), "{b_live}");
    assert!(!b_live.contains("bot-1"), "{b_live}");

    // B cannot disable bot 1, with a good token of its own.
    let token = csrf(&b_index);
    for path in ["/bots/1/disable", "/admin/bots/1/disable"] {
        assert_eq!(post_csrf(&b, &host, path, &token).await, 404, "{path}");
    }
    assert_eq!(host.state(1).await, "connected");
    // B's re-connect link for bot 1 again: a third bot, never bot 1.
    assert_eq!(
        connect(&b, &host, "/connect?bot=1", "beta").await,
        "/bots/3"
    );
    assert_eq!(host.state(1).await, "connected");
    // A disables and enables their own bot.
    let token = csrf(&a_index);
    assert_eq!(post_csrf(&a, &host, "/bots/1/disable", &token).await, 303);
    assert_eq!(host.state(1).await, "disabled");
    assert_eq!(post_csrf(&a, &host, "/bots/1/enable", &token).await, 303);
    until_connected(&host, "bot 1 back").await;

    // Log out ends A's session; a one-time link signs A in elsewhere.
    let a2 = browser();
    let r = a
        .post(host.at("/signin-link"))
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
    let (status_a2, confirm) = get(&a2, &format!("{}/signin?code={code}", host.url)).await;
    assert_eq!(status_a2, 200);
    assert!(confirm.contains("method=\"post\""));
    assert_eq!(
        status(&a2, &host, "/bots/1").await,
        404,
        "the link alone signs nobody in"
    );
    let signin = host.at("/signin");
    assert_eq!(post(&a2, &signin, &[("code", &code)], &[]).await, 303);
    assert_eq!(status(&a2, &host, "/bots/1").await, 200);
    let a3 = browser();
    assert_eq!(
        post(&a3, &signin, &[("code", &code)], &[]).await,
        400,
        "single use"
    );
    assert_eq!(post_csrf(&a, &host, "/logout", &token).await, 303);
    assert_eq!(status(&a, &host, "/bots/1").await, 404);
    let (_, after) = get(&a, &host.at("/")).await;
    assert!(!after.contains("bot-1"), "{after}");
    // The admin ends the DJ's other sessions.
    assert_eq!(
        post(
            &browser(),
            &host.at("/admin/bots/1/logout"),
            &[],
            &[("authorization", &format!("Bearer {ADMIN}"))]
        )
        .await,
        303
    );
    assert_eq!(status(&a2, &host, "/bots/1").await, 404);

    // A DJ session lasts 30 days from its consent.
    assert_eq!(status(&b, &host, "/bots/2").await, 200);
    s.emu
        .clock()
        .advance(onair_host::tenants::DJ_SESSION_MS - 60_000);
    assert_eq!(status(&b, &host, "/bots/2").await, 200);
    s.emu.clock().advance(120_000);
    assert_eq!(status(&b, &host, "/bots/2").await, 404, "expired");

    host.stop().await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_visitors_see_nothing_about_any_dj() {
    let (s, host, a) = bot_1_on_air("anon").await;
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
    let (_, own) = get(&a, &host.at("/bots/1")).await;
    assert!(own.contains("Mina"), "the DJ sees it: {own}");
    let label = host.bot(1).await["label"]
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
        // Probes: unauthenticated, nothing of anyone.
        ("/healthz", 200),
        ("/readyz", 200),
    ];
    let mut shown = Vec::new();
    for (path, status) in expected {
        let (got, text) = get(&nobody, &host.at(path)).await;
        assert_eq!(got, status, "{path}");
        shown.push((path, text));
    }
    for path in ["/events", "/events?bot=1"] {
        let (got, text) = stream_head(&nobody, &host.at(path)).await;
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
    assert_eq!(admin_get(&host.at("/metrics")).await.status(), 200);
    host.stop().await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_code_leaves_no_bot_and_consent_requests_are_bounded() {
    let s = Setup::new("tenants-refused").await;
    let host = s.host(KEY).await;
    for _ in 0..3 {
        let b = browser();
        let r = b.get(host.at("/connect")).send().await.expect("connect");
        assert_eq!(r.status(), 303);
        let state = param(&location(&r), "state");
        let callback = format!("/callback?code=made-up-code&state={state}");
        let r = b.get(host.at(&callback)).send().await.expect("callback");
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
    let metrics = host.page("/metrics").await;
    assert!(
        metrics.contains("onair_host_consents_failed_total 3"),
        "{metrics}"
    );
    // A good consent afterwards gets bot 1 (no row was left behind).
    let dj = browser();
    assert_eq!(connect(&dj, &host, "/connect", "main").await, "/bots/1");

    // Unfinished consent requests: 20 per address, then 429.
    let b = browser();
    let ask = || b.get(host.at("/connect")).send();
    for i in 0..20 {
        let r = ask().await.expect("connect");
        assert_eq!(r.status(), 303, "request {i}");
    }
    let r = ask().await.expect("connect");
    assert_eq!(r.status(), 429);
    assert!(r.text().await.expect("page").contains("Too many"));
    // Ten minutes on, the expired ones go first.
    s.emu.clock().advance(10 * 60 * 1000 + 1000);
    let r = ask().await.expect("connect");
    assert_eq!(r.status(), 303);
    host.stop().await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_prove_their_origin_and_admin_sessions_live_in_the_store() {
    let (s, host, dj) = bot_1_on_air("origin").await;

    // The admin logs in (a login CSRF token from the form).
    let admin = browser();
    let login_token = login_form(&admin, &host).await;
    assert_eq!(
        login(&admin, &host, "wrong", ADMIN).await,
        403,
        "no login CSRF token"
    );
    let padded = format!(" {ADMIN} ");
    assert_eq!(login(&admin, &host, &login_token, &padded).await, 303);
    let (_, admin_page) = get(&admin, &host.at("/bots/1")).await;
    let admin_token = csrf(&admin_page);
    let (_, dj_page) = get(&dj, &host.at("/bots/1")).await;
    let dj_token = csrf(&dj_page);
    let other_origin = format!("http://127.0.0.1:{}", s.port.wrapping_add(1));
    let other_referer = format!("{other_origin}/bots/1");

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
        let url = host.at(path);
        let with_token = [("csrf", token)];
        let refused: [(&str, Fields<'_>, Fields<'_>); 5] = [
            ("another origin", &with_token, &[("origin", &other_origin)]),
            (
                "cross-site",
                &with_token,
                &[("sec-fetch-site", "cross-site")],
            ),
            (
                "another referer",
                &with_token,
                &[("referer", &other_referer)],
            ),
            ("no token", &[], &[]),
            ("a wrong token", &[("csrf", "forged")], &[]),
        ];
        for (what, form, headers) in refused {
            assert_eq!(post(b, &url, form, headers).await, 403, "{who}: {what}");
        }
        assert_eq!(host.state(1).await, "connected", "{who}");
    }
    // Another session's token does not do: the DJ's for the admin's form.
    assert_eq!(
        post_csrf(&admin, &host, "/admin/bots/1/disable", &dj_token).await,
        403
    );

    // With its own token and its own origin: done. The admin disables.
    assert_eq!(
        post(
            &admin,
            &host.at("/admin/bots/1/disable"),
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
        post_csrf(&dj, &host, "/bots/1/disable", &dj_token).await,
        303
    );
    assert_eq!(
        post_csrf(&dj, &host, "/bots/1/enable", &dj_token).await,
        403
    );
    // ... and a re-connect stores the new pair, revokes the one it
    // replaces at the service, and leaves the bot disabled.
    assert_eq!(s.revokes().await, 0);
    assert_eq!(host.bot(1).await["enabled"], false);
    assert_eq!(
        connect(&dj, &host, "/connect?bot=1", "main").await,
        "/bots/1"
    );
    assert_eq!(
        s.revokes().await,
        1,
        "the replaced pair revoked at the service"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(host.state(1).await, "disabled", "the admin's disable holds");
    let (_, dj_page) = get(&dj, &host.at("/bots/1")).await;
    assert!(dj_page.contains("An admin disabled this bot"), "{dj_page}");
    // The admin enables it: it runs on the new pair.
    assert_eq!(
        post_csrf(&admin, &host, "/admin/bots/1/enable", &admin_token).await,
        303
    );
    until_connected(&host, "bot 1 runs again").await;
    // A re-connect of a running bot revokes its pair too.
    assert_eq!(
        connect(&dj, &host, "/connect?bot=1", "main").await,
        "/bots/1"
    );
    assert_eq!(s.revokes().await, 2);
    until_connected(&host, "bot 1 on its newest pair").await;
    // A disabled bot's revoke still revokes its stored pair at the service.
    for action in ["disable", "revoke"] {
        let path = format!("/admin/bots/1/{action}");
        assert_eq!(
            post_csrf(&admin, &host, &path, &admin_token).await,
            303,
            "{action}"
        );
    }
    assert_eq!(s.revokes().await, 3, "the disabled bot's pair revoked");

    // The admin session outlives a restart (it is in the store).
    host.stop().await;
    let host = s.host(KEY).await;
    assert_eq!(
        status(&admin, &host, "/api/bots").await,
        200,
        "the admin session after a restart"
    );
    assert_eq!(
        status(&dj, &host, "/api/bots/1").await,
        200,
        "the DJ session after a restart"
    );
    // Logout ends it.
    assert_eq!(
        post_csrf(&admin, &host, "/admin/logout", &admin_token).await,
        303
    );
    assert_eq!(status(&admin, &host, "/api/bots").await, 401);
    // A new one expires after 12 h.
    let login_token = login_form(&admin, &host).await;
    assert_eq!(login(&admin, &host, &login_token, ADMIN).await, 303);
    assert_eq!(status(&admin, &host, "/api/bots").await, 200);
    s.emu.clock().advance(12 * 3_600_000 - 60_000);
    assert_eq!(status(&admin, &host, "/api/bots").await, 200);
    s.emu.clock().advance(120_000);
    assert_eq!(status(&admin, &host, "/api/bots").await, 401, "expired");

    // Wrong admin tokens: five a minute, then 429 (the right one too),
    // whether guessed as a bearer token or through the form.
    let bearer = |token: &str| {
        reqwest::Client::new()
            .get(host.at("/api/bots"))
            .bearer_auth(token)
    };
    for i in 0..2 {
        let r = bearer("a-wrong-bearer-guess").send().await.expect("api");
        assert_eq!(r.status().as_u16(), 401, "bearer guess {i}");
    }
    let login_token = login_form(&admin, &host).await;
    for i in 0..3 {
        assert_eq!(
            login(&admin, &host, &login_token, "a-wrong-guess-of-it").await,
            401,
            "guess {i}"
        );
    }
    assert_eq!(login(&admin, &host, &login_token, ADMIN).await, 429);
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
    let mut s = Setup::new("tenants-secure").await;
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
    let host = s.host(KEY).await;
    let direct = format!("http://127.0.0.1:{}", s.port);
    let plain = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    // The cookie `name` that `r` sets (`what`), and its name=value pair.
    let set_cookie = |r: &reqwest::Response, name: &str, what: &str| -> String {
        r.headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|c| c.starts_with(&format!("{name}=")))
            .expect(what)
            .to_owned()
    };
    let pair = |cookie: &str| cookie.split(';').next().expect("pair").to_owned();
    let r = plain
        .get(format!("{direct}/connect"))
        .send()
        .await
        .expect("connect");
    assert_eq!(r.status(), 303);
    let state_cookie = set_cookie(&r, "onair_consent", "the state cookie");
    assert!(state_cookie.contains("; Secure"), "{state_cookie}");
    let r = plain
        .get(format!("{}&dj=main", location(&r)))
        .send()
        .await
        .expect("consent page");
    assert_eq!(r.status(), 302);
    let callback = location(&r).replace(public, &direct);
    let r = plain
        .get(&callback)
        .header("cookie", pair(&state_cookie))
        .send()
        .await
        .expect("callback");
    assert_eq!(r.status(), 303);
    let session = set_cookie(&r, "onair_session", "a DJ session");
    for part in [
        "; Secure",
        "; HttpOnly",
        "; SameSite=Lax",
        "; Path=/",
        "; Max-Age=2592000",
    ] {
        assert!(session.contains(part), "{part} in {session}");
    }
    let r = plain
        .get(format!("{direct}/bots/1"))
        .header("cookie", pair(&session))
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
    let login = set_cookie(&r, "onair_login", "the login cookie");
    assert!(login.contains("; Secure"), "{login}");
    let token = csrf(&r.text().await.expect("form"));
    let r = plain
        .post(format!("{direct}/admin/login"))
        .header("cookie", pair(&login))
        .form(&[("csrf", token.as_str()), ("token", ADMIN)])
        .send()
        .await
        .expect("login");
    assert_eq!(r.status(), 303);
    let admin = set_cookie(&r, "onair_admin", "an admin session");
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
