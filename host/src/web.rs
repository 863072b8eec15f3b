//! The web side (axum): the consent flow, the dashboard with its live
//! updates over SSE, the admin actions, a JSON view for programs, and
//! `/metrics`.
//!
//! | path | who | what |
//! |---|---|---|
//! | `GET /` | anyone | every bot: state, on air, the tally, re-connect links |
//! | `GET /bots/{id}` | anyone | one bot: its status, top donors, last events |
//! | `GET /events[?bot=ID]` | anyone | SSE: `bots` (table rows), `quota`, `card`, `log` |
//! | `GET /connect[?bot=ID]` | a DJ | to the consent page with a CSRF `state` (a cookie too) |
//! | `GET /callback` | the consent page | checks the state, exchanges the code once, starts the bot |
//! | `POST /admin/bots/{id}/{disable,enable,revoke}` | admin | stops, starts, or revokes a bot |
//! | `GET /api/bots`, `GET /api/bots/{id}` | admin | the same as JSON (tallies, the event log) |
//! | `GET, POST /admin/login` | admin | a session cookie from the admin token |
//! | `GET /metrics` | anyone | Prometheus text |
//!
//! Admin requests carry `Authorization: Bearer <admin token>` or the
//! session cookie of `/admin/login`. No page, answer or log line shows a
//! token, a code or the client secret.

use std::collections::{BTreeSet, HashSet};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Form, Path, Query, State};
use axum::http::header::{
    AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use futures_util::Stream;
use maud::Markup;
use rand::Rng;
use serde::Deserialize;
use subtle::ConstantTimeEq;
use tokio::sync::{broadcast, oneshot, watch};

use crate::bots::{Command, Hub, Update};
use crate::metrics::StateLabel;
use crate::pages;

/// A consent request is good for this long.
const CONSENT_TTL_MS: i64 = 10 * 60 * 1000;
/// How long `/callback` waits for the code exchange before answering.
const EXCHANGE_WAIT: Duration = Duration::from_secs(20);
const STATE_COOKIE: &str = "onair_consent";
const ADMIN_COOKIE: &str = "onair_admin";

/// The web side's state.
#[derive(Clone)]
pub struct Web {
    hub: Arc<Hub>,
    sessions: Arc<Mutex<HashSet<String>>>,
    stopping: watch::Receiver<bool>,
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
        sessions: Arc::new(Mutex::new(HashSet::new())),
        stopping,
    };
    Router::new()
        .route("/", get(index))
        .route("/bots/{id}", get(bot_page))
        .route("/events", get(events))
        .route("/connect", get(connect))
        .route("/callback", get(callback))
        .route("/admin/login", get(login_form).post(login))
        .route("/admin/bots/{id}/{action}", post(admin_action))
        .route("/api/bots", get(api_bots))
        .route("/api/bots/{id}", get(api_bot))
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(web)
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

    fn is_admin(&self, headers: &HeaderMap) -> bool {
        let admin = self.hub.config.admin_token.expose();
        if let Some(given) = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
        {
            return equal(given.trim(), admin);
        }
        cookie(headers, ADMIN_COOKIE).is_some_and(|session| {
            self.sessions
                .lock()
                .map(|s| s.iter().any(|known| equal(known, session)))
                .unwrap_or(false)
        })
    }
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"))
}

async fn index(State(web): State<Web>) -> Response {
    let now = u64::try_from(web.now()).unwrap_or(0);
    html(
        StatusCode::OK,
        pages::index(&web.hub.views(), &web.hub.daily_quota(), now),
    )
}

async fn bot_page(State(web): State<Web>, Path(id): Path<i64>) -> Response {
    let Some(view) = web.hub.view(id) else {
        return html(
            StatusCode::NOT_FOUND,
            pages::message("No such bot", &format!("There is no bot {id}."), None),
        );
    };
    let log = web
        .hub
        .store
        .events(id, None, None, 100)
        .await
        .unwrap_or_default();
    let now = u64::try_from(web.now()).unwrap_or(0);
    html(StatusCode::OK, pages::bot_page(&view, &log, now))
}

#[derive(Debug, Deserialize)]
struct BotQuery {
    bot: Option<i64>,
}

/// `GET /events`: the dashboard's live updates. Table rows (or one bot's
/// card) are sent at most every 300 ms with what changed; log lines at once.
async fn events(
    State(web): State<Web>,
    Query(q): Query<BotQuery>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    struct S {
        web: Web,
        rx: broadcast::Receiver<Update>,
        bot: Option<i64>,
        dirty: BTreeSet<i64>,
        tick: tokio::time::Interval,
        stopping: watch::Receiver<bool>,
        queued: std::collections::VecDeque<SseEvent>,
    }
    let mut dirty = BTreeSet::new();
    match q.bot {
        Some(id) => {
            dirty.insert(id);
        }
        None => dirty.extend(web.hub.views().iter().map(|v| v.id)),
    }
    let state = S {
        rx: web.hub.updates.subscribe(),
        stopping: web.stopping.clone(),
        web,
        bot: q.bot,
        dirty,
        tick: tokio::time::interval(Duration::from_millis(300)),
        queued: std::collections::VecDeque::new(),
    };
    let stream = futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(event) = s.queued.pop_front() {
                return Some((Ok(event), s));
            }
            if *s.stopping.borrow() {
                return None;
            }
            tokio::select! {
                update = s.rx.recv() => match update {
                    Ok(Update::Bot(id)) => {
                        if s.bot.is_none_or(|b| b == id) {
                            s.dirty.insert(id);
                        }
                    }
                    Ok(Update::Log(row)) => {
                        if s.bot == Some(row.integration_id) {
                            let line = pages::log_line(&row).into_string();
                            return Some((Ok(SseEvent::default().event("log").data(line)), s));
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        match s.bot {
                            Some(id) => { s.dirty.insert(id); }
                            None => s.dirty.extend(s.web.hub.views().iter().map(|v| v.id)),
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                _ = s.tick.tick() => {
                    if s.dirty.is_empty() {
                        continue;
                    }
                    let now = u64::try_from(s.web.now()).unwrap_or(0);
                    let ids = std::mem::take(&mut s.dirty);
                    match s.bot {
                        Some(id) => {
                            if let Some(view) = s.web.hub.view(id) {
                                let card = pages::bot_card(&view, now).into_string();
                                s.queued.push_back(SseEvent::default().event("card").data(card));
                            }
                        }
                        None => {
                            let rows: String = ids
                                .iter()
                                .filter_map(|id| s.web.hub.view(*id))
                                .map(|v| pages::bot_row(&v).into_string())
                                .collect();
                            s.queued.push_back(SseEvent::default().event("bots").data(rows));
                            let quota = s.web.hub.daily_quota();
                            if quota.reset_ms.is_some() || !quota.blocks.is_empty() {
                                let line = pages::index_quota(&quota, now).into_string();
                                s.queued.push_back(SseEvent::default().event("quota").data(line));
                            }
                        }
                    }
                }
                _ = s.stopping.changed() => return None,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// `GET /connect[?bot=ID]`: a consent request with a fresh state, then the
/// consent page.
async fn connect(State(web): State<Web>, Query(q): Query<BotQuery>) -> Response {
    if let Some(id) = q.bot {
        if web.hub.view(id).is_none() {
            return html(
                StatusCode::NOT_FOUND,
                pages::message("No such bot", &format!("There is no bot {id}."), None),
            );
        }
    }
    let state = random_token();
    if let Err(e) = web
        .hub
        .store
        .put_consent_state(&state, q.bot, web.now())
        .await
    {
        tracing::error!(error = %e, "consent state not stored");
        return html(
            StatusCode::SERVICE_UNAVAILABLE,
            pages::message("Try again", "The host cannot store the request now.", None),
        );
    }
    let mut response = see_other(&web.hub.config.consent_url_for(&state));
    let cookie = format!(
        "{STATE_COOKIE}={state}; Path=/callback; Max-Age=600; HttpOnly; SameSite=Lax{}",
        web.secure()
    );
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(SET_COOKIE, v);
    }
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The consent page's answer. No `Debug`: it holds the code.
#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /callback`: the state checked (the cookie and the stored request,
/// once), the code exchanged once, the bot started.
async fn callback(
    State(web): State<Web>,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> Response {
    let again = Some(("/connect", "Connect again"));
    let refuse = |text: &str| {
        let mut r = html(
            StatusCode::BAD_REQUEST,
            pages::message("Not connected", text, again),
        );
        if let Ok(v) = HeaderValue::from_str(&format!(
            "{STATE_COOKIE}=; Path=/callback; Max-Age=0; HttpOnly; SameSite=Lax"
        )) {
            r.headers_mut().insert(SET_COOKIE, v);
        }
        r
    };
    let Some(state) = q.state.as_deref().filter(|s| !s.is_empty()) else {
        return refuse("The answer has no state: start from the connect link.");
    };
    if !cookie(&headers, STATE_COOKIE).is_some_and(|c| equal(c, state)) {
        tracing::warn!("consent answer refused: its state is not this browser's");
        return refuse("This answer does not belong to a connect request of this browser.");
    }
    let bot = match web
        .hub
        .store
        .take_consent_state(state, web.now() - CONSENT_TTL_MS)
        .await
    {
        Ok(Some(bot)) => bot,
        Ok(None) => {
            tracing::warn!("consent answer refused: unknown, used or expired state");
            return refuse("This connect request was used already or has expired.");
        }
        Err(e) => {
            tracing::error!(error = %e, "consent state not read");
            return refuse("The host cannot read the request now.");
        }
    };
    if let Some(error) = &q.error {
        tracing::info!(error = %error, "the DJ's consent came back with an error");
        return refuse(&format!("The service answered: {error}."));
    }
    let Some(code) = q.code.clone().filter(|c| !c.is_empty()) else {
        return refuse("The answer has no code.");
    };
    let (id, answer) = match bot {
        Some(id) => {
            let (reply, answer) = oneshot::channel();
            if !web
                .hub
                .command(id, Command::Authorize { code, reply })
                .await
            {
                return refuse("That bot is gone.");
            }
            (id, answer)
        }
        None => match web.hub.connect_new(code).await {
            Ok(started) => started,
            Err(e) => {
                tracing::error!(error = %e, "new integration not stored");
                return refuse("The host cannot store the new bot now.");
            }
        },
    };
    match tokio::time::timeout(EXCHANGE_WAIT, answer).await {
        Ok(Ok(Ok(()))) => tracing::info!(bot = id, "DJ connected"),
        Ok(Ok(Err(why))) => tracing::warn!(bot = id, "connect failed: {why}"),
        _ => tracing::warn!(bot = id, "no answer to the code exchange yet"),
    }
    let mut response = see_other(&format!("/bots/{id}"));
    if let Ok(v) = HeaderValue::from_str(&format!(
        "{STATE_COOKIE}=; Path=/callback; Max-Age=0; HttpOnly; SameSite=Lax"
    )) {
        response.headers_mut().insert(SET_COOKIE, v);
    }
    response
}

async fn login_form() -> Response {
    html(StatusCode::OK, pages::login(false))
}

/// The login form. No `Debug`: it holds the admin token.
#[derive(Deserialize)]
struct LoginForm {
    token: String,
}

async fn login(State(web): State<Web>, Form(form): Form<LoginForm>) -> Response {
    if !equal(form.token.trim(), web.hub.config.admin_token.expose()) {
        tracing::warn!("admin login refused");
        return html(StatusCode::UNAUTHORIZED, pages::login(true));
    }
    let session = random_token();
    if let Ok(mut sessions) = web.sessions.lock() {
        sessions.insert(session.clone());
    }
    let mut response = see_other("/");
    let cookie = format!(
        "{ADMIN_COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200{}",
        web.secure()
    );
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(SET_COOKIE, v);
    }
    response
}

fn unauthorized(json: bool) -> Response {
    if json {
        (
            StatusCode::UNAUTHORIZED,
            Json(serde_json::json!({"error": "the admin token is needed"})),
        )
            .into_response()
    } else {
        html(
            StatusCode::UNAUTHORIZED,
            pages::message(
                "Admin only",
                "This needs the admin token.",
                Some(("/admin/login", "Log in")),
            ),
        )
    }
}

async fn admin_action(
    State(web): State<Web>,
    headers: HeaderMap,
    Path((id, action)): Path<(i64, String)>,
) -> Response {
    let json = wants_json(&headers);
    if !web.is_admin(&headers) {
        return unauthorized(json);
    }
    let (done, wait) = oneshot::channel();
    let command = match action.as_str() {
        "disable" => Command::Disable(done),
        "enable" => Command::Enable(done),
        "revoke" => Command::Revoke(done),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    if !web.hub.command(id, command).await {
        return StatusCode::NOT_FOUND.into_response();
    }
    let _ = tokio::time::timeout(Duration::from_secs(40), wait).await;
    tracing::info!(bot = id, action = %action, "admin action");
    if json {
        Json(serde_json::json!({"bot": id, "done": action, "view": web.hub.view(id)}))
            .into_response()
    } else {
        see_other(&format!("/bots/{id}"))
    }
}

async fn api_bots(State(web): State<Web>, headers: HeaderMap) -> Response {
    if !web.is_admin(&headers) {
        return unauthorized(true);
    }
    Json(serde_json::json!({
        "bots": web.hub.views(),
        "dailyQuota": web.hub.daily_quota(),
    }))
    .into_response()
}

#[derive(Debug, Deserialize)]
struct BotApiQuery {
    events: Option<i64>,
    kind: Option<String>,
}

async fn api_bot(
    State(web): State<Web>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Query(q): Query<BotApiQuery>,
) -> Response {
    if !web.is_admin(&headers) {
        return unauthorized(true);
    }
    let Some(view) = web.hub.view(id) else {
        return (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({"error": "no such bot"})),
        )
            .into_response();
    };
    let store = &web.hub.store;
    let mut broadcasts = Vec::new();
    for b in store.broadcasts(id).await.unwrap_or_default() {
        let tally: serde_json::Value = serde_json::from_str(&b.tally).unwrap_or_default();
        broadcasts.push(serde_json::json!({
            "liveId": (b.live_id != 0).then_some(b.live_id),
            "endedAtMs": b.ended_at_ms,
            "ended": true,
            "tally": tally,
        }));
    }
    let (reply, answer) = oneshot::channel();
    let current = if web.hub.command(id, Command::Tally(reply)).await {
        tokio::time::timeout(Duration::from_secs(5), answer)
            .await
            .ok()
            .and_then(Result::ok)
            .flatten()
    } else {
        None
    };
    let current = current.map(|(live_id, tally)| {
        serde_json::json!({
            "liveId": live_id,
            "ended": false,
            "tally": serde_json::from_str::<serde_json::Value>(&tally).unwrap_or_default(),
        })
    });
    let limit = q.events.unwrap_or(100).clamp(0, 1_000_000);
    let events: Vec<serde_json::Value> = store
        .events(id, None, q.kind.as_deref(), limit)
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|r| {
            serde_json::json!({
                "frameId": r.frame_id, "kind": r.kind, "liveId": r.live_id, "seq": r.seq,
                "atMs": r.at_ms, "summary": r.summary,
                "detail": serde_json::from_str::<serde_json::Value>(&r.detail).unwrap_or_default(),
            })
        })
        .collect();
    Json(serde_json::json!({
        "bot": view,
        "broadcasts": broadcasts,
        "current": current,
        "events": events,
    }))
    .into_response()
}

async fn metrics(State(web): State<Web>) -> Response {
    let m = &web.hub.metrics;
    m.bots.clear();
    for view in web.hub.views() {
        m.bots
            .get_or_create(&StateLabel {
                state: view.state.to_owned(),
            })
            .inc();
    }
    (
        [(
            CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        m.encode(),
    )
        .into_response()
}

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
    }
}
