//! The HTTP/1.1 server: accepts on 127.0.0.1, reads each request with a
//! capped body and a deadline, hands it to the control API or the bot
//! endpoints (or the consent page), and writes the reply (streaming for the event stream).
//!
//! Bad input gets an answer, never a crash: hyper answers malformed request
//! lines and headers with 400 (431 for oversized headers) and closes; a
//! slow client's headers time out; a body over [`MAX_BODY`] gets 413
//! `OAPI_MNGR_0103`; a body that does not arrive in time gets 408.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};

use crate::api;
use crate::consent;
use crate::control;
use crate::reply::{Reply, ReplyBody};
use crate::requests::{RequestFacts, RequestRecord};
use crate::shared::Shared;

/// Largest request body read (bigger ones get 413).
pub const MAX_BODY: usize = 64 * 1024;

pub use crate::body::EmuBody;
pub use crate::requests::redact_query;

/// Accepts connections until `stop` changes.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let tcp = match accepted {
                    Ok((tcp, _)) => tcp,
                    Err(_) => {
                        // Out of descriptors or similar: breathe, then go on.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let _ = tcp.set_nodelay(true);
                let deadline = shared.world().cfg.read_deadline;
                let shared = Arc::clone(&shared);
                let mut stop = stop.clone();
                tokio::spawn(async move {
                    let kill = Arc::new(Notify::new());
                    let killer = Arc::clone(&kill);
                    let svc = service_fn(move |req| {
                        let shared = Arc::clone(&shared);
                        let kill = Arc::clone(&killer);
                        async move { Ok::<_, Infallible>(handle(&shared, req, kill).await) }
                    });
                    let conn = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(deadline)
                        .serve_connection(TokioIo::new(tcp), svc);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        // A stream cut as a slow reader: abort the connection.
                        () = kill.notified() => {}
                        _ = stop.changed() => {
                            conn.as_mut().graceful_shutdown();
                            let _ = tokio::time::timeout(Duration::from_secs(2), conn).await;
                        }
                    }
                });
            }
            _ = stop.changed() => break,
        }
    }
}

fn header<'a>(req: &'a hyper::http::request::Parts, name: &str) -> Option<&'a str> {
    req.headers.get(name).and_then(|v| v.to_str().ok())
}

async fn handle(shared: &Shared, req: Request<Incoming>, kill: Arc<Notify>) -> Response<EmuBody> {
    let (parts, body) = req.into_parts();
    let method = parts.method.as_str().to_owned();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().map(str::to_owned);
    let declared = header(&parts, "content-length").and_then(|v| v.parse::<u64>().ok());
    let deadline = shared.world().cfg.read_deadline;
    let body = if declared.is_some_and(|n| n > MAX_BODY as u64) {
        Err(413)
    } else {
        match tokio::time::timeout(deadline, Limited::new(body, MAX_BODY).collect()).await {
            Ok(Ok(c)) => Ok(c.to_bytes()),
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(413),
            Ok(Err(_)) => Err(400),
            Err(_) => Err(408),
        }
    };
    let now = shared.clock.now_ms();
    let control = path == "/_emulator" || path.starts_with("/_emulator/");
    let consent = path == consent::PATH;
    if let Some(replay) = shared.replay.as_ref().filter(|_| !control && !consent) {
        let authorization = header(&parts, "authorization");
        let replayed = crate::replay::handle(
            shared,
            replay,
            &method,
            &path,
            query.as_deref(),
            authorization,
            body.as_deref().unwrap_or_default(),
            now,
        );
        if let Some(resp) = replayed {
            let mut w = shared.world();
            w.log(format!(
                "{method} {path} → {} (replayed)",
                resp.status().as_u16()
            ));
            w.record_request(RequestRecord {
                at_ms: now,
                method,
                path,
                query: query.map(|q| redact_query(&q)),
                status: resp.status().as_u16(),
                seq: 0,
                facts: RequestFacts::default(),
            });
            return resp;
        }
    }
    let mut facts = RequestFacts::default();
    let reply = match body {
        Err(status) => {
            let msg = match status {
                413 => "The request body is too large.",
                408 => "The request body did not arrive in time.",
                _ => "The request body could not be read.",
            };
            Reply::problem(&path, status, Some("OAPI_MNGR_0103"), msg, now)
                .header("connection", "close")
        }
        Ok(bytes) if control => {
            let rest = &path["/_emulator".len()..];
            let mut reply = control::handle(shared, &method, rest, query.as_deref(), &bytes);
            reply.headers.push(("cache-control", "no-store".to_owned()));
            reply
        }
        Ok(_) if consent => {
            let mut w = shared.world();
            let reply = consent::authorize(
                &mut w,
                &method,
                query.as_deref(),
                header(&parts, "accept"),
                now,
            );
            w.log(format!("{method} {path} → {}", reply.status));
            reply
        }
        Ok(bytes) => {
            let r = api::Request {
                method: &method,
                path: &path,
                query: query.as_deref(),
                authorization: header(&parts, "authorization"),
                content_type: header(&parts, "content-type"),
                accept: header(&parts, "accept"),
                body: &bytes,
                kill: Some(kill),
            };
            let mut w = shared.world();
            api::handle(&mut w, &r, now, &mut facts)
        }
    };
    if !control && !consent {
        let query = query.map(|q| redact_query(&q));
        let mut w = shared.world();
        w.log(format!("{method} {path} → {}", reply.status));
        w.record_request(RequestRecord {
            at_ms: now,
            method,
            path,
            query,
            status: reply.status,
            seq: 0,
            facts,
        });
    }
    to_response(reply)
}

fn to_response(reply: Reply) -> Response<EmuBody> {
    let (content_type, body) = match reply.body {
        ReplyBody::Empty => (None, EmuBody::Full(None)),
        ReplyBody::Json(s) => (
            Some("application/json"),
            EmuBody::Full(Some(Bytes::from(s))),
        ),
        ReplyBody::Text(s, ct) => (Some(ct), EmuBody::Full(Some(Bytes::from(s)))),
        ReplyBody::Stream(s) => (Some("text/event-stream"), EmuBody::Stream(s)),
    };
    let mut resp = Response::new(body);
    *resp.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = resp.headers_mut();
    if let Some(ct) = content_type {
        headers.insert(hyper::header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    for (name, value) in reply.headers {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.append(HeaderName::from_static(name), v);
        }
    }
    resp
}
