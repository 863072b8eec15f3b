//! What the router answers at its edges: unknown paths (a trailing slash, a
//! percent-encoded letter), wrong methods and HEAD on the bot endpoints and
//! the control API, reason phrases, and a body too large for a control call.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::*;

async fn raw(env: &Env, request: &[u8]) -> String {
    let mut tcp = TcpStream::connect(env.emu.addr()).await.unwrap();
    tcp.write_all(request).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

async fn send(env: &Env, method: Method, path: &str) -> reqwest::Response {
    env.http
        .request(method, format!("{}{path}", env.base))
        .send()
        .await
        .unwrap()
}

fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
}

/// The request log's paths and statuses, in order.
async fn logged(env: &Env) -> Vec<(String, u64)> {
    let v = env.ctl_get("/requests").await;
    v["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap().to_owned(),
                r["status"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn unknown_paths_are_the_services_404_problem_and_are_logged() {
    let env = Env::start().await;
    for path in [
        "/v1/nope",
        "/v1/live/",
        "/v1/%6Cive",
        "/",
        "/v1/live/events/x",
    ] {
        let r = send(&env, Method::GET, path).await;
        assert_eq!(
            header(&r, "content-type").as_deref(),
            Some("application/json"),
            "{path}"
        );
        let body: Value = r.json().await.unwrap();
        assert_eq!(
            body,
            json!({"instance": path, "status": 404, "title": "Not Found",
                   "message": "No such endpoint.", "userId": null, "extra": null,
                   "timestamp": 1_763_880_000_000_i64}),
            "{path}"
        );
    }
    // A POST to an unknown path is a 404 too, not a 405.
    let r = send(&env, Method::POST, "/v1/live/").await;
    assert_eq!(r.status().as_u16(), 404);
    assert_eq!(
        logged(&env).await,
        [
            ("/v1/nope".to_owned(), 404),
            ("/v1/live/".to_owned(), 404),
            ("/v1/%6Cive".to_owned(), 404),
            ("/".to_owned(), 404),
            ("/v1/live/events/x".to_owned(), 404),
            ("/v1/live/".to_owned(), 404),
        ]
    );
}

#[tokio::test]
async fn a_wrong_method_on_a_bot_endpoint_is_405_0103_with_allow() {
    let env = Env::start().await;
    for (method, path, allow) in [
        (Method::DELETE, "/v1/live", "GET"),
        (Method::PUT, "/v1/live/chat", "POST"),
        (Method::GET, "/v1/oauth/token", "POST"),
        (Method::PATCH, "/v1/live/events", "GET"),
    ] {
        let r = send(&env, method.clone(), path).await;
        assert_eq!(
            header(&r, "allow").as_deref(),
            Some(allow),
            "{method} {path}"
        );
        let (status, p) = problem(r).await;
        assert_eq!(
            (status, p["detailCode"].as_str(), p["title"].as_str()),
            (405, Some("OAPI_MNGR_0103"), Some("Method Not Allowed")),
            "{method} {path}"
        );
        assert_eq!(p["instance"], path);
        assert_eq!(p["message"], format!("Use {allow}."));
    }
    assert_eq!(
        logged(&env).await.len(),
        4,
        "every one is in the request log"
    );
}

#[tokio::test]
async fn an_injected_fault_comes_before_the_method_check() {
    let env = Env::start().await;
    env.ctl("/fail", json!({"path": "/v1/live", "status": 503}))
        .await;
    let (status, p) = problem(send(&env, Method::DELETE, "/v1/live").await).await;
    assert_eq!(
        (status, p["message"].as_str()),
        (503, Some("Injected failure."))
    );
    let (status, _) = problem(send(&env, Method::DELETE, "/v1/live").await).await;
    assert_eq!(status, 405, "the fault was used once");
}

#[tokio::test]
async fn head_is_405_on_the_bot_endpoints_and_the_control_api() {
    let env = Env::start().await;
    // HEAD on a GET endpoint: 405 with the problem's length and no body.
    let get = send(&env, Method::PATCH, "/v1/live/listeners").await;
    let length = get.text().await.unwrap().len();
    let out = raw(
        &env,
        b"HEAD /v1/live/listeners HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.1 405 Method Not Allowed"),
        "{head}"
    );
    let head = head.to_ascii_lowercase();
    assert!(head.contains("\r\nallow: get\r\n"), "{head}");
    assert!(
        head.contains(&format!("\r\ncontent-length: {length}\r\n")),
        "{head}"
    );
    assert_eq!(body, "", "no body on HEAD");

    let r = send(&env, Method::HEAD, "/_emulator/clock").await;
    assert_eq!(r.status().as_u16(), 405);
    assert_eq!(header(&r, "allow").as_deref(), Some("GET"));
    assert_eq!(header(&r, "cache-control").as_deref(), Some("no-store"));
}

#[tokio::test]
async fn control_api_edges_answer_control_errors_with_no_store() {
    let env = Env::start().await;
    let cases = [
        (Method::GET, "/_emulator/clock/advance", 405, Some("POST")),
        (Method::DELETE, "/_emulator/state", 405, Some("GET, POST")),
        (Method::POST, "/_emulator/djs", 405, Some("GET")),
        (Method::GET, "/_emulator", 404, None),
        (Method::GET, "/_emulator/", 404, None),
        (Method::GET, "/_emulator/clock/", 404, None),
        (Method::GET, "/_emulator/%63lock", 404, None),
        (Method::POST, "/_emulator/nope", 404, None),
    ];
    for (method, path, status, allow) in cases {
        let r = send(&env, method.clone(), path).await;
        assert_eq!(r.status().as_u16(), status, "{method} {path}");
        assert_eq!(header(&r, "allow"), allow.map(str::to_owned), "{path}");
        assert_eq!(
            header(&r, "cache-control").as_deref(),
            Some("no-store"),
            "{path}"
        );
        let body: Value = r.json().await.unwrap();
        let error = if status == 405 {
            "method not allowed for this control call"
        } else {
            "no such control call (see emulator/README.md)"
        };
        assert_eq!(body, json!({"error": error}), "{method} {path}");
    }
    // `/_emulatorx` is not the control API: the service's 404.
    let (status, p) = problem(send(&env, Method::GET, "/_emulatorx").await).await;
    assert_eq!(
        (status, p["message"].as_str()),
        (404, Some("No such endpoint."))
    );
    assert_eq!(
        logged(&env).await,
        [("/_emulatorx".to_owned(), 404)],
        "control calls are not in the request log"
    );
}

#[tokio::test]
async fn a_problems_title_is_the_canonical_reason_phrase() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    for (status, title) in [
        (418, "I'm a teapot"),
        (422, "Unprocessable Entity"),
        (504, "Gateway Timeout"),
        (499, "Error"),
    ] {
        env.ctl("/fail", json!({"path": "/v1/live/fans", "status": status}))
            .await;
        let (s, p) = problem(env.get("/v1/live/fans", &access).await).await;
        assert_eq!((s, p["title"].as_str()), (status, Some(title)));
    }
}

#[tokio::test]
async fn a_control_body_too_large_is_413_and_not_logged() {
    let env = Env::start().await;
    let r = env
        .http
        .post(format!("{}/_emulator/emit", env.base))
        .header("content-type", "application/json")
        .body(vec![b' '; 70_000])
        .send()
        .await
        .unwrap();
    let (status, p) = problem(r).await;
    assert_eq!(
        (status, p["detailCode"].as_str(), p["instance"].as_str()),
        (413, Some("OAPI_MNGR_0103"), Some("/_emulator/emit"))
    );
    assert_eq!(logged(&env).await, []);
}
