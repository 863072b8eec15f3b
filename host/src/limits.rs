//! What a server on the internet needs around the router: timeouts, caps on
//! connections and live streams, bounded request bodies, security headers.
//!
//! - **Connections** are served by hyper directly: the request head must
//!   arrive within [`Limits::header_timeout`] (hyper's `header_read_timeout`),
//!   a whole request is answered within [`Limits::request_timeout`]
//!   (tower-http's `TimeoutLayer`: a body sent a byte at a time is cut there,
//!   408), a body may pause at most [`Limits::body_timeout`] between bytes
//!   (`RequestBodyTimeoutLayer`) and hold at most [`Limits::max_body_bytes`]
//!   (`RequestBodyLimitLayer`, 413). A live stream's lifetime is not a
//!   request's: its response head is sent at once, its body is not timed.
//! - **Connection caps**: at most [`Limits::max_connections_per_client`]
//!   open connections per client address (an IPv6 one by its /64:
//!   [`client_of`]) (more are answered 429 and closed)
//!   and [`Limits::max_connections`] in all (503), the latter derived from
//!   the descriptor limit (`RLIMIT_NOFILE`) with room kept for the bots' own
//!   connections to the service and the database ([`connection_cap`]).
//!   Refusals are themselves bounded (a quarter of the descriptors kept,
//!   at most 64: [`refusal_cap`]); beyond that a connection is closed
//!   without an answer.
//! - **Stream caps**: `GET /events` streams per session (the `onair_session`
//!   or `onair_admin` cookie), per client address (429) and in all (503),
//!   counted for as long as the stream's body lives.
//! - **Headers** on every response, pages, assets and errors alike
//!   ([`CSP`], `X-Content-Type-Options: nosniff`, `Referrer-Policy:
//!   same-origin`) through tower-http's `SetResponseHeaderLayer`; the pages'
//!   script and style are files under `/assets/` so the policy allows no
//!   inline script or style. `same-origin` rather than `no-referrer`: no
//!   address of the host's pages leaves for another site, and the host's
//!   own forms keep their `Origin` (under `no-referrer` a browser sends
//!   `Origin: null` with a POST, which the CSRF check refuses).
//!
//! Every request carries `ConnectInfo<SocketAddr>` (the client's address)
//! in its extensions.
//!
//! Why counters of its own for the caps: `tower::limit::ConcurrencyLimit`
//! gives its permit back when the response's head is ready, which for a
//! live stream is at once, and knows no key (client, session); connections
//! are counted below any service, where they are accepted. An idle
//! keep-alive connection is closed after the header timeout too (hyper
//! times the wait for the next request's head).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::{
    CONTENT_SECURITY_POLICY, COOKIE, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures_util::StreamExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tower::util::BoxCloneService;
use tower::{ServiceBuilder, ServiceExt};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::{RequestBodyTimeoutLayer, TimeoutLayer};

/// Every response's `Content-Security-Policy`: nothing inline, scripts,
/// styles and the live stream from the host itself, never in a frame.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; \
frame-ancestors 'none'";

/// The cookies a live stream is counted under, when it carries one.
const SESSION_COOKIES: [&str; 2] = ["onair_session", "onair_admin"];

/// The web side's limits (`[host]` in host.toml; the defaults are stated on
/// each field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The request head must arrive within this (`header_timeout_ms`, 10 s).
    pub header_timeout: Duration,
    /// A request body may pause this long between bytes (`body_timeout_ms`, 10 s).
    pub body_timeout: Duration,
    /// A request is answered within this, its body read included
    /// (`request_timeout_ms`, 60 s: an admin action waits up to 40 s for
    /// the bot). Live streams are not cut by it.
    pub request_timeout: Duration,
    /// The largest request body (`max_body_bytes`, 16 KiB).
    pub max_body_bytes: usize,
    /// Open connections in all (`max_connections`; by default derived from
    /// the descriptor limit: see [`connection_cap`]).
    pub max_connections: Option<usize>,
    /// Open connections per client address (`max_connections_per_client`, 64).
    pub max_connections_per_client: usize,
    /// Live streams in all (`max_streams`; by default half the connections).
    pub max_streams: Option<usize>,
    /// Live streams per client address (`max_streams_per_client`, 16).
    pub max_streams_per_client: usize,
    /// Live streams per session (`max_streams_per_session`, 8).
    pub max_streams_per_session: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            max_body_bytes: 16 * 1024,
            max_connections: None,
            max_connections_per_client: 64,
            max_streams: None,
            max_streams_per_client: 16,
            max_streams_per_session: 8,
        }
    }
}

/// The soft descriptor limit of this process (`RLIMIT_NOFILE`), when known.
pub fn descriptor_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Descriptors kept for everything but client connections: the bots'
/// streams and calls to the service, the database, files, the listener.
/// A quarter of the limit, at least 64.
pub fn reserved_descriptors(limit: u64) -> u64 {
    (limit / 4).max(64)
}

/// Connections in all: `configured`, else the descriptor limit less
/// [`reserved_descriptors`] (1 024 descriptors: 768 connections; 256: 192),
/// at least 1; 768 when the limit is not known.
pub fn connection_cap(configured: Option<usize>, limit: Option<u64>) -> usize {
    if let Some(n) = configured {
        return n.max(1);
    }
    match limit {
        Some(limit) => {
            let cap = limit.saturating_sub(reserved_descriptors(limit)).max(1);
            usize::try_from(cap).unwrap_or(usize::MAX)
        }
        None => 768,
    }
}

/// Connections being answered 429 or 503 at one time (more are closed
/// without an answer): a quarter of [`reserved_descriptors`], 1 to 64 (16
/// at 256 descriptors); 64 when the limit is not known.
pub fn refusal_cap(limit: Option<u64>) -> usize {
    limit.map_or(64, |limit| {
        usize::try_from((reserved_descriptors(limit) / 4).clamp(1, 64)).unwrap_or(64)
    })
}

/// The client a cap counts an address under: an IPv4 address as it is (an
/// IPv4-mapped IPv6 one as IPv4), an IPv6 address by its /64 prefix (what
/// one subscriber is usually given, so a client cannot step around its cap
/// by changing the low bits).
pub fn client_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(
                u128::from(v6) & !((1u128 << 64) - 1),
            )),
        },
    }
}

/// What a count is kept for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Connections(IpAddr),
    Streams(IpAddr),
    SessionStreams([u8; 32]),
    AllStreams,
}

/// Counts by key; a [`Held`] gives its one back when dropped.
#[derive(Debug, Clone, Default)]
struct Counts(Arc<Mutex<HashMap<Key, usize>>>);

#[derive(Debug)]
struct Held {
    counts: Counts,
    key: Key,
}

impl Counts {
    fn take(&self, key: Key, max: usize) -> Option<Held> {
        let mut map = self.0.lock().ok()?;
        let n = map.entry(key.clone()).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Held {
            counts: self.clone(),
            key,
        })
    }

    #[cfg(test)]
    fn get(&self, key: &Key) -> usize {
        self.0
            .lock()
            .map(|m| m.get(key).copied().unwrap_or(0))
            .unwrap_or(0)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Ok(mut map) = self.counts.0.lock() {
            if let Some(n) = map.get_mut(&self.key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    map.remove(&self.key);
                }
            }
        }
    }
}

#[derive(Debug, Clone)]
struct StreamGate {
    counts: Counts,
    per_session: usize,
    per_client: usize,
    all: usize,
}

/// The session a request carries, hashed (the cookie's value is never kept).
fn session_key(request: &Request) -> Option<[u8; 32]> {
    request
        .headers()
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, value)| SESSION_COOKIES.contains(name) && !value.is_empty())
        .map(|(name, value)| {
            let mut hash = Sha256::new();
            hash.update(name.as_bytes());
            hash.update([0]);
            hash.update(value.as_bytes());
            hash.finalize().into()
        })
}

fn too_many(status: StatusCode, text: &'static str) -> Response {
    let mut response = (status, text).into_response();
    response.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        HeaderValue::from_static("10"),
    );
    response
}

/// `GET /events`: counted per session, per client and in all for as long
/// as its body lives.
async fn count_streams(State(gate): State<StreamGate>, request: Request, next: Next) -> Response {
    if request.uri().path() != "/events" {
        return next.run(request).await;
    }
    let mut held = Vec::with_capacity(3);
    if let Some(session) = session_key(&request) {
        match gate
            .counts
            .take(Key::SessionStreams(session), gate.per_session)
        {
            Some(h) => held.push(h),
            None => {
                return too_many(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too many live streams for this session",
                )
            }
        }
    }
    if let Some(ConnectInfo(addr)) = request.extensions().get::<ConnectInfo<SocketAddr>>() {
        match gate
            .counts
            .take(Key::Streams(client_of(addr.ip())), gate.per_client)
        {
            Some(h) => held.push(h),
            None => {
                return too_many(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too many live streams from this address",
                )
            }
        }
    }
    match gate.counts.take(Key::AllStreams, gate.all) {
        Some(h) => held.push(h),
        None => {
            return too_many(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many live streams: try again later",
            )
        }
    }
    let response = next.run(request).await;
    response.map(|body| {
        Body::from_stream(body.into_data_stream().map(move |chunk| {
            let _counted = &held;
            chunk
        }))
    })
}

/// A service hyper can run: requests of any body, responses of axum's.
pub type Service = BoxCloneService<Request<hyper::body::Incoming>, Response, Infallible>;

fn header(value: &'static str) -> HeaderValue {
    HeaderValue::from_static(value)
}

/// `router` with the body limits, the timeouts and the security headers.
fn stack(router: Router, limits: &Limits) -> Service {
    ServiceBuilder::new()
        .map_response(|r: Response<_>| r.map(Body::new))
        .layer(SetResponseHeaderLayer::overriding(
            CONTENT_SECURITY_POLICY,
            header(CSP),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            X_CONTENT_TYPE_OPTIONS,
            header("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            REFERRER_POLICY,
            header("same-origin"),
        ))
        .layer(RequestBodyLimitLayer::new(limits.max_body_bytes))
        .layer(RequestBodyTimeoutLayer::new(limits.body_timeout))
        .map_request(|r: Request<_>| r.map(Body::new))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            limits.request_timeout,
        ))
        .service(router)
        .boxed_clone()
}

/// The answer to every request of a connection over a cap, with the same
/// headers as any other.
fn refusal(status: StatusCode, limits: &Limits) -> Service {
    let text = if status == StatusCode::TOO_MANY_REQUESTS {
        "too many connections from this address"
    } else {
        "too many connections: try again later"
    };
    let router = Router::new().fallback(move || async move { too_many(status, text) });
    stack(router, limits)
}

/// Serves `router` on `listener` within `limits` until `closing` turns
/// true; then stops accepting and ends every connection gracefully (live
/// streams end on the router's own stop, before). Returns when every
/// connection is closed. The host turns `closing` only after its drain,
/// so that a stopping host answers (`/readyz`: 503 draining) rather than
/// refuses connections.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    mut closing: watch::Receiver<bool>,
) {
    let descriptors = descriptor_limit();
    let max_connections = connection_cap(limits.max_connections, descriptors);
    let max_refusing = refusal_cap(descriptors);
    let gate = StreamGate {
        counts: Counts::default(),
        per_session: limits.max_streams_per_session,
        per_client: limits.max_streams_per_client,
        all: limits.max_streams.unwrap_or(max_connections / 2).max(1),
    };
    tracing::info!(
        descriptors = descriptors.unwrap_or(0),
        max_connections,
        max_refusing,
        per_client = limits.max_connections_per_client,
        max_streams = gate.all,
        "connection caps"
    );
    if let Some(limit) = descriptors {
        let wanted = (max_connections + max_refusing) as u64 + reserved_descriptors(limit) * 3 / 4;
        if wanted > limit {
            tracing::warn!(
                descriptors = limit,
                max_connections,
                "host.max_connections leaves too few descriptors for the bots' own connections: raise the limit (ulimit -n) or lower the cap"
            );
        }
    }
    let router = router
        .merge(crate::assets::router())
        .layer(axum::middleware::from_fn_with_state(gate, count_streams));
    let app = stack(router, &limits);
    let busy = refusal(StatusCode::TOO_MANY_REQUESTS, &limits);
    let full = refusal(StatusCode::SERVICE_UNAVAILABLE, &limits);
    let all = Arc::new(Semaphore::new(max_connections));
    let refusing = Arc::new(Semaphore::new(max_refusing));
    let connections = Counts::default();
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = closing.wait_for(|s| *s) => break,
        };
        let (stream, remote) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of descriptors, or a connection reset before it was
                // accepted: wait a little rather than spin.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let per_client = connections.take(
            Key::Connections(client_of(remote.ip())),
            limits.max_connections_per_client,
        );
        let (service, held, keep_alive) = match per_client {
            None => match Arc::clone(&refusing).try_acquire_owned() {
                Ok(permit) => (busy.clone(), (None, Some(permit), None), false),
                Err(_) => continue,
            },
            Some(client) => match Arc::clone(&all).try_acquire_owned() {
                Ok(permit) => (app.clone(), (Some(client), Some(permit), None), true),
                Err(_) => match Arc::clone(&refusing).try_acquire_owned() {
                    Ok(permit) => (full.clone(), (None, None, Some(permit)), false),
                    Err(_) => continue,
                },
            },
        };
        if !keep_alive {
            tracing::debug!(client = %remote.ip(), "connection over a cap refused");
        }
        let hyper_service =
            hyper::service::service_fn(move |mut request: Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(ConnectInfo(remote));
                service.clone().oneshot(request)
            });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .keep_alive(keep_alive)
            .serve_connection(TokioIo::new(stream), hyper_service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _held = held;
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_cap_leaves_room_for_the_bots() {
        assert_eq!(connection_cap(None, Some(1024)), 768);
        assert_eq!(connection_cap(None, Some(256)), 192);
        assert_eq!(connection_cap(None, Some(100)), 36);
        assert_eq!(connection_cap(None, Some(10)), 1);
        assert_eq!(connection_cap(Some(5), Some(1024)), 5);
        assert_eq!(connection_cap(None, None), 768);
        assert_eq!(refusal_cap(Some(256)), 16);
        assert_eq!(refusal_cap(Some(1024)), 64);
        assert_eq!(refusal_cap(Some(100_000)), 64);
        assert_eq!(refusal_cap(Some(8)), 16);
        assert!(descriptor_limit().is_some_and(|n| n > 0));
    }

    #[test]
    fn an_ipv6_client_is_its_64_prefix() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_of(a), client_of(b));
        assert_ne!(client_of(a), client_of(c));
        assert_eq!(client_of(a), "2001:db8:1:2::".parse::<IpAddr>().unwrap());
        let mapped: IpAddr = "::ffff:127.0.0.2".parse().unwrap();
        assert_eq!(client_of(mapped), IpAddr::V4([127, 0, 0, 2].into()));
        let v4: IpAddr = [127, 0, 0, 3].into();
        assert_eq!(client_of(v4), v4);
    }

    #[test]
    fn counts_are_given_back() {
        let counts = Counts::default();
        let ip: IpAddr = [127, 0, 0, 2].into();
        let a = counts.take(Key::Streams(ip), 2).unwrap();
        let b = counts.take(Key::Streams(ip), 2).unwrap();
        assert!(counts.take(Key::Streams(ip), 2).is_none());
        assert!(counts.take(Key::Connections(ip), 2).is_some());
        drop(a);
        assert_eq!(counts.get(&Key::Streams(ip)), 1);
        let _c = counts.take(Key::Streams(ip), 2).unwrap();
        drop(b);
        assert_eq!(counts.get(&Key::Streams(ip)), 1);
    }
}
