//! The consent page, `GET /oauth/authorize`: a plain HTTP client that
//! follows redirects runs the whole authorization-code flow; errors about
//! the app or its redirect URI are HTML pages, never a redirect.

use std::collections::HashMap;

use reqwest::redirect::Policy;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::common::*;

/// A one-shot callback server: answers the first request with its target
/// (path and query) as the body.
async fn callback() -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("http://{}/callback", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if tcp.read(&mut byte).await.unwrap() == 0 {
                return;
            }
            head.push(byte[0]);
        }
        let line = String::from_utf8_lossy(&head);
        let target = line.split(' ').nth(1).unwrap_or("").to_owned();
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{target}",
            target.len()
        );
        tcp.write_all(reply.as_bytes()).await.unwrap();
    });
    (uri, task)
}

/// The query of a URL or request target, form-decoded.
fn query_of(target: &str) -> HashMap<String, String> {
    let q = target.split_once('?').map_or("", |(_, q)| q);
    form_urlencoded::parse(q.as_bytes()).into_owned().collect()
}

fn no_follow() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_client_that_follows_redirects_runs_the_whole_flow() {
    let env = Env::start().await;
    let (redirect, server) = callback().await;
    let app = env.ctl("/apps", json!({"redirectUri": redirect})).await;
    let (id, secret) = (
        app["clientId"].as_str().unwrap(),
        app["clientSecret"].as_str().unwrap(),
    );
    let state = "xyz ü/+&=%";
    let url = format!(
        "{}/oauth/authorize?response_type=code&client_id={id}&redirect_uri={}&state={}&scope={}&dj=night",
        env.base,
        urlencode(&redirect),
        urlencode(state),
        urlencode("live.read events.chat chat.send")
    );
    // reqwest follows the 302 to the app's callback by default.
    let r = env.http.get(url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let target = r.text().await.unwrap();
    server.await.unwrap();
    let q = query_of(&target);
    assert_eq!(q["state"], state, "state echoed exactly");
    let code = &q["code"];
    // The code is a consent code like POST /_emulator/consent mints.
    let r = env
        .http
        .post(format!("{}/v1/oauth/token", env.base))
        .basic_auth(id, Some(secret))
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", redirect.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["scope"], "live.read events.chat chat.send");
    // The new DJ "night": a user with its own broadcast state.
    let night = env.ctl_get("/state?dj=night").await;
    assert_eq!(night["onAir"], false);
    assert_ne!(night["djUserId"], env.ctl_get("/state").await["djUserId"]);
    env.ctl("/live/start", json!({"dj": "night", "title": "night"}))
        .await;
    let live: Value = env
        .get("/v1/live", v["access_token"].as_str().unwrap())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(live["title"], "night");
}

#[tokio::test]
async fn defaults_are_every_permission_the_first_dj_and_the_registered_uri() {
    let env = Env::start().await;
    let r = no_follow()
        .get(format!(
            "{}/oauth/authorize?client_id={}&state=s1",
            env.base, env.client_id
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 302);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(&format!("{}?code=", env.redirect)));
    let code = query_of(&location)["code"].clone();
    let v: Value = env.exchange(&code).await.json().await.unwrap();
    assert_eq!(v["scope"], ALL);
    env.live_start().await; // the first DJ's broadcast
    let r = env
        .get("/v1/live", v["access_token"].as_str().unwrap())
        .await;
    assert_eq!(r.status().as_u16(), 200);
}

#[tokio::test]
async fn a_redirect_uri_with_a_query_gets_the_code_appended() {
    let env = Env::start().await;
    let uri = "http://127.0.0.1:9/cb?tenant=7";
    let app = env.ctl("/apps", json!({"redirectUri": uri})).await;
    let r = no_follow()
        .get(format!(
            "{}/oauth/authorize?client_id={}&redirect_uri={}&state=a%2Bb",
            env.base,
            app["clientId"].as_str().unwrap(),
            urlencode(uri)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 302);
    let location = r.headers()["location"].to_str().unwrap();
    assert!(
        location.starts_with("http://127.0.0.1:9/cb?tenant=7&code="),
        "{location}"
    );
    assert!(location.ends_with("&state=a%2Bb"), "{location}");
}

#[tokio::test]
async fn errors_are_html_pages_never_a_redirect() {
    let env = Env::start().await;
    let http = no_follow();
    let id = env.client_id.clone();
    for (query, why) in [
        ("state=s".to_owned(), "client_id is required"),
        ("client_id=nobody&state=s".to_owned(), "Unknown client_id"),
        (
            format!("client_id={id}&state=s&redirect_uri=http%3A%2F%2Fevil.example%2Fcb"),
            "not the one registered",
        ),
        (format!("client_id={id}"), "state is required"),
        (format!("client_id={id}&state="), "state is required"),
    ] {
        let r = http
            .get(format!("{}/oauth/authorize?{query}", env.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 400, "{query}");
        assert!(r.headers().get("location").is_none(), "{query}");
        assert!(r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"));
        let body = r.text().await.unwrap();
        assert!(body.contains(why), "{query}: {body}");
    }
    // A suspended app gets no code either.
    env.ctl("/app/suspend", json!({"suspended": true})).await;
    let r = http
        .get(format!(
            "{}/oauth/authorize?client_id={id}&state=s",
            env.base
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    // Another method is 405.
    let r = http
        .post(format!(
            "{}/oauth/authorize?client_id={id}&state=s",
            env.base
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
    // The consent page is not a bot or token endpoint: not in the request log.
    let log = env.ctl_get("/requests").await;
    assert_eq!(log["total"], 0, "{log}");
}

#[tokio::test]
async fn an_unknown_scope_goes_back_as_invalid_scope() {
    let env = Env::start().await;
    for scope in ["live.read%20bogus", "%20"] {
        let r = no_follow()
            .get(format!(
                "{}/oauth/authorize?client_id={}&state=s9&scope={scope}",
                env.base, env.client_id
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 302);
        let location = r.headers()["location"].to_str().unwrap();
        let q = query_of(location);
        assert_eq!(q["error"], "invalid_scope");
        assert_eq!(q["state"], "s9");
        assert!(!q.contains_key("code"));
    }
}

#[tokio::test]
async fn a_browser_without_dj_is_shown_the_djs() {
    let env = Env::start().await;
    env.ctl("/consent", json!({"dj": "second"})).await;
    let r = no_follow()
        .get(format!(
            "{}/oauth/authorize?client_id={}&state=s",
            env.base, env.client_id
        ))
        .header("accept", "text/html,application/xhtml+xml;q=0.9")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let page = r.text().await.unwrap();
    for dj in ["main", "second"] {
        assert!(
            page.contains(&format!("&amp;dj={dj}\">{dj}</a>")),
            "{dj}: {page}"
        );
    }
}
