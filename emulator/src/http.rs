//! The HTTP/1.1 server: accepts on 127.0.0.1 (hyper serves each
//! connection), reads each request with a capped body and a deadline, lets a
//! replayed cassette answer the bot endpoints, and hands the request to the
//! router ([`routes`]: the control API, the bot endpoints, the consent page),
//! whose reply it writes (streaming for the event stream).
//!
//! Bad input gets an answer, never a crash: hyper answers malformed request
//! lines and headers with 400 (431 for oversized headers) and closes; a
//! slow client's headers time out; a body over [`MAX_BODY`] gets 413
//! `OAPI_MNGR_0103`; a body that does not arrive in time gets 408.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};

use axum::body::Body;
use axum::Router;
use tower_service::Service;

use crate::reply::Reply;
use crate::requests::{RequestFacts, RequestRecord};
use crate::routes;
use crate::shared::Shared;

/// Largest request body read (bigger ones get 413).
pub const MAX_BODY: usize = 64 * 1024;

pub use crate::body::EmuBody;
pub use crate::requests::redact_query;

/// Accepts connections until `stop` changes.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let router = routes::router(Arc::clone(&shared));
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
                let router = router.clone();
                let mut stop = stop.clone();
                tokio::spawn(async move {
                    let kill = Arc::new(Notify::new());
                    let killer = Arc::clone(&kill);
                    let svc = service_fn(move |req| {
                        let shared = Arc::clone(&shared);
                        let kill = Arc::clone(&killer);
                        let router = router.clone();
                        async move { Ok::<_, Infallible>(handle(&shared, router, req, kill).await) }
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

/// Reads the body (capped, with a deadline), lets a replayed cassette answer
/// first, answers a body that could not be read, and hands the rest to the
/// router ([`routes::router`]) with the body read ([`crate::requests::Arrived`]).
async fn handle(
    shared: &Shared,
    mut router: Router,
    req: Request<Incoming>,
    kill: Arc<Notify>,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
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
    let path = parts.uri.path();
    let own = crate::paths::is_control(path) || path == crate::paths::AUTHORIZE;
    if let Some(replay) = shared.replay.as_ref().filter(|_| !own) {
        let replayed = crate::replay::handle(
            shared,
            replay,
            parts.method.as_str(),
            path,
            parts.uri.query(),
            header(&parts, "authorization"),
            body.as_deref().unwrap_or_default(),
            now,
        );
        if let Some(resp) = replayed {
            let method = parts.method.as_str();
            let mut w = shared.world();
            w.log(format!(
                "{method} {path} → {} (replayed)",
                resp.status().as_u16()
            ));
            w.record_request(RequestRecord {
                at_ms: now,
                method: method.to_owned(),
                path: path.to_owned(),
                query: parts.uri.query().map(redact_query),
                status: resp.status().as_u16(),
                seq: 0,
                facts: RequestFacts::default(),
            });
            return resp.map(Body::new);
        }
    }
    match body {
        Err(status) => {
            let msg = match status {
                413 => "The request body is too large.",
                408 => "The request body did not arrive in time.",
                _ => "The request body could not be read.",
            };
            let reply = Reply::problem(path, status, Some("OAPI_MNGR_0103"), msg, now)
                .header("connection", "close");
            if !own {
                let method = parts.method.as_str();
                let mut w = shared.world();
                w.log(format!("{method} {path} → {}", reply.status));
                w.record_request(RequestRecord {
                    at_ms: now,
                    method: method.to_owned(),
                    path: path.to_owned(),
                    query: parts.uri.query().map(redact_query),
                    status: reply.status,
                    seq: 0,
                    facts: RequestFacts::default(),
                });
            }
            reply.into_http().map(Body::new)
        }
        Ok(bytes) => {
            let mut req = Request::from_parts(parts, Body::empty());
            req.extensions_mut().insert(crate::requests::Arrived {
                body: bytes,
                now,
                kill: Some(kill),
            });
            match router.call(req).await {
                Ok(resp) => resp,
                Err(never) => match never {},
            }
        }
    }
}
