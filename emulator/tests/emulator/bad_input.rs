//! Bad input gets the spec's answer, never a crash.

use std::time::Duration;

use onair_emulator::Emulator;
use serde_json::json;
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

async fn still_serving(env: &Env) {
    assert_eq!(env.ctl_get("/clock").await["speed"], 0.0);
}

#[tokio::test]
async fn malformed_request_line_is_400() {
    let env = Env::start().await;
    let out = raw(&env, b"THIS IS NOT HTTP\r\n\r\n").await;
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    still_serving(&env).await;
}

#[tokio::test]
async fn malformed_header_is_400() {
    let env = Env::start().await;
    let out = raw(
        &env,
        b"GET /v1/live HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n",
    )
    .await;
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    still_serving(&env).await;
}

#[tokio::test]
async fn huge_headers_are_refused() {
    let env = Env::start().await;
    let mut req = b"GET /v1/live HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    req.extend(std::iter::repeat_n(b'a', 1_000_000));
    req.extend_from_slice(b"\r\n\r\n");
    let out = raw(&env, &req).await;
    assert!(
        out.starts_with("HTTP/1.1 431") || out.starts_with("HTTP/1.1 400") || out.is_empty(),
        "{out}"
    );
    still_serving(&env).await;
}

#[tokio::test]
async fn huge_body_is_413_0103() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let big = format!("{{\"message\":\"{}\"}}", "a".repeat(200_000));
    let r = env
        .http
        .post(format!("{}/v1/live/chat", env.base))
        .bearer_auth(&access)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    let (s, p) = problem(r).await;
    assert_eq!((s, p["detailCode"].as_str()), (413, Some("OAPI_MNGR_0103")));
    // Chunked (no Content-Length) too.
    let mut req = b"POST /v1/live/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..100 {
        req.extend_from_slice(b"400\r\n");
        req.extend(std::iter::repeat_n(b'a', 0x400));
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let out = raw(&env, &req).await;
    assert!(
        out.starts_with("HTTP/1.1 413"),
        "{}",
        &out[..out.len().min(200)]
    );
    still_serving(&env).await;
}

#[tokio::test]
async fn slow_client_times_out_and_others_are_served() {
    let env = Env::with(Emulator::builder().read_deadline(Duration::from_millis(300))).await;
    let mut tcp = TcpStream::connect(env.emu.addr()).await.unwrap();
    tcp.write_all(b"GET /v1/live HTTP/1.1\r\nHo").await.unwrap();
    still_serving(&env).await;
    let mut out = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(3), tcp.read_to_end(&mut out)).await;
    assert!(n.is_ok(), "the server gave up on the slow client");
    // A body that never completes.
    let mut tcp = TcpStream::connect(env.emu.addr()).await.unwrap();
    tcp.write_all(b"POST /v1/oauth/token HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
        .await
        .unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(3), tcp.read_to_end(&mut out)).await;
    assert!(String::from_utf8_lossy(&out).starts_with("HTTP/1.1 408"));
    still_serving(&env).await;
}

#[tokio::test]
async fn client_vanishing_mid_stream_is_recorded_and_harmless() {
    let env = Env::start().await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    let s = env.stream(&access).await;
    drop(s);
    tokio::time::sleep(Duration::from_millis(20)).await;
    env.emit("chat", json!({})).await;
    let b = env.closed_connection().await;
    assert!(b["connections"][0]["closedAtMs"].is_i64());
    assert_eq!(b["connections"][0]["dropped"], true);
    assert_eq!(env.ctl_get("/state").await["openStreams"], 0);
}

#[tokio::test]
async fn a_reader_that_never_reads_is_cut_and_others_go_on() {
    let env = Env::with(Emulator::builder().stream_buffer(16)).await;
    env.live_start().await;
    let (access, _) = env.tokens(ALL).await;
    // The stalled reader: a raw socket that never reads.
    let mut stalled = TcpStream::connect(env.emu.addr()).await.unwrap();
    stalled
        .write_all(format!("GET /v1/live/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer {access}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut good = env.stream(&access).await;
    // The good reader reports its progress, and the emitter stays within a
    // few frames of it: however loaded the machine, only the stalled
    // reader can fall behind by the whole buffer.
    let (progress, mut seen) = tokio::sync::watch::channel(0usize);
    let reader = tokio::spawn(async move {
        let mut n = 0;
        while n < 400 {
            let f = good.event().await;
            if f.contains("event:chat") {
                n += 1;
                let _ = progress.send(n);
            }
        }
        n
    });
    let message = "x".repeat(50_000); // 400 × 50 kB: more than the kernel buffers hold
    for i in 0..400 {
        let _ = seen.wait_for(|&n| n + 4 >= i).await;
        env.emit(
            "chat",
            json!({"message": message, "user": {"id": "u1", "nickname": "a"}}),
        )
        .await;
    }
    assert_eq!(reader.await.unwrap(), 400);
    let b = env.bot_ledger().await;
    let conns = b["connections"].as_array().unwrap();
    assert!(conns[0]["dropped"] == true, "the stalled stream was cut");
    assert!(conns[0]["events"]["chat"].as_u64().unwrap() < 400);
    assert_eq!(conns[1]["events"]["chat"], 400);
    drop(stalled);
}

#[tokio::test]
async fn random_requests_always_get_an_answer() {
    use onair_emulator::rng::Rng;
    let env = Env::start().await;
    env.live_start().await;
    let (access, refresh) = env.tokens(ALL).await;
    let mut rng = Rng::new(2026);
    let paths = [
        "/v1/oauth/token",
        "/v1/oauth/revoke",
        "/v1/live",
        "/v1/live/listeners",
        "/v1/live/fans",
        "/v1/live/chat",
        "/v1/live/listeners?cursor=%ZZ",
        "/v1/live/listeners?cursor=",
        "/v1/nope",
        "/",
        "/_emulator",
        "/_emulator/emit",
        "/_emulator/state",
        "/_emulator/quota",
        "/_emulator/wire",
        "/_emulator/fail",
        "/_emulator/consent",
        "/_emulator/consent/narrow",
        "/_emulator/streams/end",
        "/_emulator/clock/advance",
        "/_emulator/ban",
        "/_emulator/leave",
        "/_emulator/live/start",
        "/_emulator/apps",
    ];
    let bodies = [
        "",
        "{",
        "null",
        "[]",
        "{\"message\":null}",
        "{\"message\":\"hi\"}",
        "{\"event\":\"chat\",\"data\":[]}",
        "{\"event\":\"like\",\"data\":{\"user\":{\"id\":\"\"}}}",
        "{\"event\":\"donation\",\"data\":{\"amount\":-1}}",
        "{\"event\":\"presence\",\"data\":{\"fanRank\":\"x\"}}",
        "{\"ms\":-5}",
        "{\"status\":99999}",
        "{\"perSecond\":{\"replenishRate\":0,\"burstCapacity\":0}}",
        "{\"chunkBytes\":1}",
        "{\"reason\":\"LIVE_ENDED\"}",
        "grant_type=refresh_token&refresh_token=",
        "grant_type=authorization_code&code=%",
        "token=%%%",
        "\u{0}\u{1}\u{2}",
        "{\"scope\":\"\u{1F600}\"}",
    ];
    let cts = [
        "application/json",
        "application/x-www-form-urlencoded",
        "text/plain",
        "",
        "application/json; charset=utf-8",
    ];
    let auths = [
        format!("Bearer {access}"),
        "Bearer".to_owned(),
        "Basic !!!".to_owned(),
        env.basic(),
        String::new(),
        format!("Bearer {refresh}"),
    ];
    for _ in 0..400 {
        let method = ["GET", "POST", "PUT", "DELETE", "PATCH"][rng.below(5) as usize];
        let path = paths[rng.below(paths.len() as u64) as usize];
        let body = bodies[rng.below(bodies.len() as u64) as usize];
        let ct = cts[rng.below(cts.len() as u64) as usize];
        let auth = &auths[rng.below(auths.len() as u64) as usize];
        let mut req = env
            .http
            .request(
                reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                format!("{}{path}", env.base),
            )
            .body(body.to_owned());
        if !ct.is_empty() {
            req = req.header("content-type", ct);
        }
        if !auth.is_empty() {
            req = req.header("authorization", auth.as_str());
        }
        let r = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path} {body:?}: {e}"));
        assert!(r.status().as_u16() >= 200, "{method} {path}");
        let _ = r.bytes().await.unwrap();
    }
    env.ctl("/wire", json!({"chunkBytes": 0})).await;
    still_serving(&env).await;
}
