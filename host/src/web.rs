//! The web side (axum): the consent flow, DJ and admin sessions, the
//! dashboard with its live updates over SSE, the bots' actions, a JSON view
//! for programs, and `/metrics`.
//!
//! Who is who: **the admin** (`Authorization: Bearer <admin token>`, or the
//! `onair_admin` session of `/admin/login`), **a DJ** (the `onair_session`
//! session a successful consent or a sign-in link gives; it owns the bots
//! its consents made), **anyone else**.
//!
//! | path | who | what |
//! |---|---|---|
//! | `GET /` | anyone | the admin: every bot; a DJ: theirs; anyone else: "connect your bot" only |
//! | `GET /bots/{id}` | its DJ, admin | one bot: its status, top donors, last events (anyone else: 404) |
//! | `GET /events[?bot=ID]` | a DJ, admin | SSE of the bots the viewer sees (none: 401; another's bot: 404) |
//! | `GET /connect[?bot=ID]` | anyone | to the consent page with a CSRF `state` (a cookie too); `bot` counts for its DJ and the admin only, anyone else gets a new bot |
//! | `GET /callback` | the consent page | checks the state, exchanges the code once; a new bot belongs to the browser's DJ (a new DJ and session when it has none); a refused exchange leaves no bot |
//! | `POST /bots/{id}/{disable,enable,revoke}` | its DJ | a DJ's own bot (enable: not when the admin disabled it) |
//! | `POST /admin/bots/{id}/{disable,enable,revoke,logout}` | admin | any bot; `logout` ends its DJ's sessions |
//! | `POST /logout` | a DJ | ends this session |
//! | `POST /signin-link` | a DJ | a one-time sign-in link for another device (10 minutes) |
//! | `GET, POST /signin` | whoever holds the link | the DJ's session on this device |
//! | `GET, POST /admin/login`, `POST /admin/logout` | admin | the admin session (12 h); 5 wrong guesses a minute per address, then 429 |
//! | `GET /api/bots`, `GET /api/bots/{id}` | admin, a DJ (theirs) | the same as JSON (tallies, the event log) |
//! | `GET /metrics` | admin | Prometheus text (the bearer token works for scrapers) |
//! | `GET /healthz` | anyone | `ok`: the process answers |
//! | `GET /readyz` | anyone | `ready`, or 503 and why in one line: draining (stopping), the store not answering, the leases not renewed |
//!
//! While the host drains (a stop: its bots saved, their leases released,
//! before the listener closes) `/readyz` says `draining`, live streams
//! end, and the consent flow and every POST are answered 503 with
//! `Retry-After`; the rest answers as usual.
//!
//! Every POST proves its origin: an `Origin`, `Sec-Fetch-Site` or `Referer`
//! that is present must be the public URL's (same-origin), and a request
//! that rides on a session cookie carries that session's CSRF token (form
//! field `csrf` or header `x-csrf-token`); bearer calls need no token. No
//! page, answer or log line shows a token, a code, a session or the client
//! secret; sessions and sign-in codes are stored as their SHA-256.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::header::{AUTHORIZATION, CACHE_CONTROL, COOKIE, LOCATION, ORIGIN, REFERER};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use maud::Markup;
use rand::Rng;
use subtle::ConstantTimeEq;
use tokio::sync::watch;

use crate::bots::Hub;
use crate::pages;
use crate::tenants::{self, SessionKind};

mod admin;
mod consent;
mod dashboard;

const STATE_COOKIE: &str = "onair_consent";
const ADMIN_COOKIE: &str = "onair_admin";
const DJ_COOKIE: &str = "onair_session";
const LOGIN_COOKIE: &str = "onair_login";

/// The web side's state.
#[derive(Clone)]
pub struct Web {
    hub: Arc<Hub>,
    stopping: watch::Receiver<bool>,
    /// Wrong admin tokens per client address in the current minute.
    guesses: Arc<Mutex<HashMap<String, (Instant, u32)>>>,
}

impl std::fmt::Debug for Web {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Web")
    }
}

/// The router over `hub`; SSE streams end when `stopping` turns true.
pub fn router(hub: Arc<Hub>, stopping: watch::Receiver<bool>) -> Router {
    let web = Web {
        hub,
        stopping,
        guesses: Arc::new(Mutex::new(HashMap::new())),
    };
    Router::new()
        .route("/", get(dashboard::index))
        .route("/bots/{id}", get(dashboard::bot_page))
        .route("/bots/{id}/{action}", post(admin::bot_action))
        .route("/events", get(dashboard::events))
        .route("/connect", get(consent::connect))
        .route("/callback", get(consent::callback))
        .route("/logout", post(consent::logout))
        .route("/signin-link", post(consent::signin_link))
        .route("/signin", get(consent::signin_form).post(consent::signin))
        .route("/admin/login", get(admin::login_form).post(admin::login))
        .route("/admin/logout", post(admin::logout))
        .route("/admin/bots/{id}/{action}", post(admin::bot_action))
        .route("/api/bots", get(dashboard::api_bots))
        .route("/api/bots/{id}", get(dashboard::api_bot))
        .route("/metrics", get(dashboard::metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .layer(axum::middleware::from_fn_with_state(
            web.clone(),
            admin::bearer_guesses,
        ))
        .layer(axum::middleware::from_fn_with_state(
            web.clone(),
            refuse_while_draining,
        ))
        .with_state(web)
}

/// While the host drains (stopping: its bots being saved, their leases
/// released), what would start or change a bot is answered 503 with
/// `Retry-After`: the consent flow (`/connect`, `/callback`: the code is
/// not exchanged, so the DJ's retry works elsewhere) and every POST. Pages,
/// the API, `/metrics` and the probes answer as before.
async fn refuse_while_draining(
    axum::extract::State(web): axum::extract::State<Web>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let method = request.method();
    let changes = !(method == axum::http::Method::GET || method == axum::http::Method::HEAD)
        || matches!(request.uri().path(), "/connect" | "/callback");
    if changes && *web.stopping.borrow() {
        let mut response = html(
            StatusCode::SERVICE_UNAVAILABLE,
            pages::message("The host is stopping", "Try again in a moment.", None),
        );
        response.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            HeaderValue::from_static("5"),
        );
        return response;
    }
    next.run(request).await
}

/// `/readyz`: 200 `ready`, or 503 with the first reason it is not.
async fn readyz(axum::extract::State(web): axum::extract::State<Web>) -> Response {
    let stopping = *web.stopping.borrow();
    let mut response = match readiness(&web.hub, stopping).await {
        Ok(()) => (StatusCode::OK, "ready").into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
    };
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Whether this replica should get traffic: it is not stopping, its store
/// answers a trivial query within 2 s, and its lease keeper renewed its
/// leases within the time after which it would give its bots up (with no
/// bots the renewal is as quick). The reason it should not, in one line
/// (no detail of the store's error: the answer is public).
pub async fn readiness(hub: &Hub, stopping: bool) -> Result<(), String> {
    if stopping {
        return Err("draining: the host is stopping".into());
    }
    let ping = sqlx::query("SELECT 1").execute(hub.store.pool());
    match tokio::time::timeout(Duration::from_secs(2), ping).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "readyz: the store did not answer");
            return Err("store: not answering".into());
        }
        Err(_) => return Err("store: no answer within 2 s".into()),
    }
    let give_up = Duration::from_millis(crate::lease::GIVE_UP_MS.unsigned_abs());
    match hub.leases_renewed() {
        None => Err("leases: not renewed yet".into()),
        Some(at) if at.elapsed() >= give_up => Err(format!(
            "leases: not renewed for {} s",
            at.elapsed().as_secs()
        )),
        Some(_) => Ok(()),
    }
}

fn html(status: StatusCode, markup: Markup) -> Response {
    let mut response = (status, markup).into_response();
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn see_other(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        response.headers_mut().insert(LOCATION, v);
    }
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn not_found() -> Response {
    html(
        StatusCode::NOT_FOUND,
        pages::message("Not found", "There is nothing here for you.", None),
    )
}

fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn equal(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// A session's CSRF token: derived from its id (which only the browser
/// holds), so nothing more is stored and a token names no session.
fn csrf_of(session: &str) -> String {
    tenants::digest(&format!("onair-host:csrf:{session}"))
}

fn add_cookie(response: &mut Response, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        response
            .headers_mut()
            .append(axum::http::header::SET_COOKIE, v);
    }
}

/// The client's address as the serve loop gives it (`ConnectInfo`), or
/// one shared bucket when it gives none.
#[derive(Debug, Clone)]
pub(crate) struct Client(pub(crate) String);

impl<S: Send + Sync> FromRequestParts<S> for Client {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Client(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map_or_else(
                    || "shared".to_owned(),
                    |ConnectInfo(a)| crate::limits::client_of(a.ip()).to_string(),
                ),
        ))
    }
}

/// Who is asking: the admin (by bearer token or session), a DJ (by
/// session), both, or nobody.
#[derive(Default)]
pub(crate) struct Viewer {
    /// The admin token came as a bearer token.
    bearer: bool,
    /// The admin session's id (the cookie's value), when valid.
    admin_session: Option<String>,
    /// The DJ and the DJ session's id, when valid.
    dj: Option<(i64, String)>,
}

impl std::fmt::Debug for Viewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Viewer")
            .field("bearer", &self.bearer)
            .field("admin_session", &self.admin_session.is_some())
            .field("dj", &self.dj.as_ref().map(|(id, _)| id))
            .finish()
    }
}

impl Viewer {
    fn admin(&self) -> bool {
        self.bearer || self.admin_session.is_some()
    }

    fn dj(&self) -> Option<i64> {
        self.dj.as_ref().map(|(id, _)| *id)
    }

    /// The CSRF token for the forms of this viewer's pages.
    fn csrf(&self) -> String {
        self.admin_session
            .as_deref()
            .or(self.dj.as_ref().map(|(_, s)| s.as_str()))
            .map(csrf_of)
            .unwrap_or_default()
    }

    /// `given` is the token of one of this viewer's sessions.
    fn csrf_ok(&self, given: Option<&str>) -> bool {
        let Some(given) = given.filter(|g| !g.is_empty()) else {
            return false;
        };
        self.admin_session
            .iter()
            .chain(self.dj.iter().map(|(_, s)| s))
            .any(|s| equal(&csrf_of(s), given))
    }
}

impl Web {
    fn now(&self) -> i64 {
        self.hub.now_ms()
    }

    fn secure(&self) -> &'static str {
        if self.hub.config.public_url.starts_with("https://") {
            "; Secure"
        } else {
            ""
        }
    }

    /// The public URL's origin (`scheme://host[:port]`).
    fn origin(&self) -> &str {
        let url = self.hub.config.public_url.as_str();
        let after = url.find("://").map_or(0, |i| i + 3);
        match url[after..].find('/') {
            Some(i) => &url[..after + i],
            None => url,
        }
    }

    fn bearer_admin(&self, headers: &HeaderMap) -> bool {
        headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|given| equal(given.trim(), self.hub.config.admin_token.expose()))
    }

    /// Who is asking (sessions read from the store).
    async fn viewer(&self, headers: &HeaderMap) -> Viewer {
        let mut viewer = Viewer {
            bearer: self.bearer_admin(headers),
            ..Viewer::default()
        };
        let now = self.now();
        if let Some(raw) = cookie(headers, ADMIN_COOKIE).filter(|c| !c.is_empty()) {
            match tenants::session(&self.hub.store, raw, now).await {
                Ok(Some(SessionKind::Admin)) => viewer.admin_session = Some(raw.to_owned()),
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e, "session not read"),
            }
        }
        if let Some(raw) = cookie(headers, DJ_COOKIE).filter(|c| !c.is_empty()) {
            match tenants::session(&self.hub.store, raw, now).await {
                Ok(Some(SessionKind::Dj(dj))) => viewer.dj = Some((dj, raw.to_owned())),
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e, "session not read"),
            }
        }
        viewer
    }

    /// Whether `viewer` sees bot `id` (the admin: any; a DJ: theirs).
    async fn sees(&self, viewer: &Viewer, id: i64) -> bool {
        if viewer.admin() {
            return true;
        }
        match viewer.dj() {
            Some(dj) => matches!(tenants::owner(&self.hub.store, id).await, Ok(Some(o)) if o == dj),
            None => false,
        }
    }

    /// The request comes from this site's pages: every origin header
    /// present (`Origin`, `Sec-Fetch-Site`, `Referer`) says so.
    fn same_origin(&self, headers: &HeaderMap) -> bool {
        let origin = self.origin();
        let text = |name| {
            headers
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
        };
        if let Some(given) = text(ORIGIN) {
            if given != origin {
                return false;
            }
        }
        if let Some(site) = text(axum::http::HeaderName::from_static("sec-fetch-site")) {
            if site != "same-origin" {
                return false;
            }
        }
        if let Some(referer) = text(REFERER) {
            let rest = referer.strip_prefix(origin);
            if !rest.is_some_and(|r| r.is_empty() || r.starts_with('/')) {
                return false;
            }
        }
        true
    }

    /// A POST's proof of origin: the origin headers, and the session's CSRF
    /// token unless the admin token came as a bearer token.
    fn check_post(&self, viewer: &Viewer, headers: &HeaderMap, form: &Fields) -> Option<Response> {
        if !self.same_origin(headers) {
            tracing::warn!("a cross-origin POST refused");
            return Some(forbidden(
                "This request did not come from this site's pages.",
            ));
        }
        if viewer.bearer {
            return None;
        }
        let given = headers
            .get("x-csrf-token")
            .and_then(|v| v.to_str().ok())
            .or(form.get("csrf"));
        if !viewer.csrf_ok(given) {
            tracing::warn!("a POST without its session's CSRF token refused");
            return Some(forbidden(
                "This form has expired or did not come from this site: reload the page and try again.",
            ));
        }
        None
    }
}

fn forbidden(text: &str) -> Response {
    html(
        StatusCode::FORBIDDEN,
        pages::message("Refused", text, Some(("/", "Back"))),
    )
}

fn unauthorized(json: bool) -> Response {
    if json {
        (
            StatusCode::UNAUTHORIZED,
            Json(serde_json::json!({"error": "a session or the admin token is needed"})),
        )
            .into_response()
    } else {
        html(
            StatusCode::UNAUTHORIZED,
            pages::message(
                "Not signed in",
                "Connect your bot, or log in as the admin.",
                Some(("/connect", "Connect your bot")),
            ),
        )
    }
}

/// A form body's fields (urlencoded), read by name. No `Debug`: it may hold
/// the admin token or a sign-in code.
pub(crate) struct Fields(Vec<(String, String)>);

impl Fields {
    fn parse(body: &[u8]) -> Fields {
        Fields(form_urlencoded::parse(body).into_owned().collect())
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Bounded wait for a bot's answer.
const ACTION_WAIT: Duration = Duration::from_secs(40);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            COOKIE,
            HeaderValue::from_static("a=1; onair_consent=xyz; b=2"),
        );
        assert_eq!(cookie(&h, STATE_COOKIE), Some("xyz"));
        assert_eq!(cookie(&h, ADMIN_COOKIE), None);
    }

    #[test]
    fn tokens_are_random_and_url_safe() {
        let (a, b) = (random_token(), random_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert!(equal(&a, &a.clone()));
        assert!(!equal(&a, &b));
        assert!(!equal("ab", "abc"));
        assert_ne!(csrf_of(&a), csrf_of(&b));
        assert!(!csrf_of(&a).contains(&a));
    }

    #[test]
    fn a_csrf_token_belongs_to_one_of_the_viewers_sessions() {
        let viewer = Viewer {
            bearer: false,
            admin_session: None,
            dj: Some((1, "session-a".into())),
        };
        assert!(viewer.csrf_ok(Some(&csrf_of("session-a"))));
        assert!(!viewer.csrf_ok(Some(&csrf_of("session-b"))));
        assert!(!viewer.csrf_ok(Some("")));
        assert!(!viewer.csrf_ok(None));
        assert!(!Viewer::default().csrf_ok(Some(&csrf_of(""))));
    }
    /// A hub over a fresh SQLite store (no bot).
    async fn hub(db: &crate::testdb::SqliteDb) -> Arc<Hub> {
        let app = (
            "http://127.0.0.1:9",
            "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
            "secret",
        );
        crate::testdb::hub_of(&db.url, 200, app).await
    }

    /// `/readyz`'s status and text, as anyone asks.
    async fn ready(hub: &Arc<Hub>, stopping: bool) -> (u16, String) {
        use tower::ServiceExt as _;
        let (_tx, rx) = watch::channel(stopping);
        let request = axum::http::Request::builder()
            .uri("/readyz")
            .body(axum::body::Body::empty())
            .expect("request");
        let response = router(Arc::clone(hub), rx)
            .oneshot(request)
            .await
            .expect("answer");
        let status = response.status().as_u16();
        let body = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .expect("body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    /// A consent's hold keeps its bot from being handed over until it is
    /// dropped; two consents of one bot at once (a DJ's two tabs) hold it
    /// until the last is answered.
    #[tokio::test]
    async fn a_consents_hold_lasts_until_the_last_one_is_dropped() {
        let db = crate::testdb::SqliteDb::new("consent-hold");
        let hub = hub(&db).await;
        assert!(!hub.consenting(3));
        let first = hub.hold_consent(3);
        let second = hub.hold_consent(3);
        assert!(hub.consenting(3));
        assert!(!hub.consenting(4));
        drop(first);
        assert!(hub.consenting(3), "the second tab's consent still runs");
        drop(second);
        assert!(!hub.consenting(3));
    }

    #[tokio::test]
    async fn readyz_says_ready_only_with_the_store_answering_the_leases_renewed_and_no_stop() {
        let db = crate::testdb::SqliteDb::new("readyz");
        let hub = hub(&db).await;
        // Before the lease keeper's first renewal.
        assert_eq!(
            ready(&hub, false).await,
            (503, "leases: not renewed yet".to_owned())
        );
        hub.note_leases_renewed(true);
        assert_eq!(ready(&hub, false).await, (200, "ready".to_owned()));
        // A stop started: draining.
        assert_eq!(
            ready(&hub, true).await,
            (503, "draining: the host is stopping".to_owned())
        );
        // Cut from the store: the keeper gave the leases up.
        hub.note_leases_renewed(false);
        assert_eq!(
            ready(&hub, false).await,
            (503, "leases: not renewed yet".to_owned())
        );
        hub.note_leases_renewed(true);
        // The store closed: it answers no query.
        hub.store.close().await;
        assert_eq!(
            ready(&hub, false).await,
            (503, "store: not answering".to_owned())
        );
        // /healthz: the process answers, whatever the rest.
        use tower::ServiceExt as _;
        let (_tx, rx) = watch::channel(true);
        let request = axum::http::Request::builder()
            .uri("/healthz")
            .body(axum::body::Body::empty())
            .expect("request");
        let response = router(Arc::clone(&hub), rx)
            .oneshot(request)
            .await
            .expect("answer");
        assert_eq!(response.status(), StatusCode::OK);
    }
}
