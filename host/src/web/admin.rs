//! The admin's session (in the store, 12 h, throttled guesses) and the
//! bots' actions (a DJ's on their own bot, the admin's on any).

use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use tokio::sync::oneshot;

use super::dashboard::wants_json;
use super::{
    add_cookie, cookie, equal, forbidden, html, not_found, random_token, see_other, unauthorized,
    Client, Fields, Web, ACTION_WAIT, ADMIN_COOKIE, LOGIN_COOKIE,
};
use crate::bots::Command;
use crate::pages;
use crate::tenants::{self, DisabledBy, SessionKind};

/// Wrong admin tokens allowed per client address and minute; then 429.
pub const GUESSES_PER_MINUTE: u32 = 5;
const GUESS_WINDOW: Duration = Duration::from_secs(60);

impl Web {
    /// Whether `client` may guess again now.
    fn may_guess(&self, client: &str) -> bool {
        let Ok(mut guesses) = self.guesses.lock() else {
            return false;
        };
        let now = Instant::now();
        if guesses.len() > 10_000 {
            guesses.retain(|_, (start, _)| now.duration_since(*start) < GUESS_WINDOW);
        }
        match guesses.get(client) {
            Some((start, n)) => {
                now.duration_since(*start) >= GUESS_WINDOW || *n < GUESSES_PER_MINUTE
            }
            None => true,
        }
    }

    fn wrong_guess(&self, client: &str) {
        if let Ok(mut guesses) = self.guesses.lock() {
            let now = Instant::now();
            let entry = guesses.entry(client.to_owned()).or_insert((now, 0));
            if now.duration_since(entry.0) >= GUESS_WINDOW {
                *entry = (now, 0);
            }
            entry.1 += 1;
        }
    }
}

/// Every request with a bearer token: a wrong one counts as a guess of the
/// admin token, as a wrong login does, and a client past its guesses is
/// answered 429 until the minute is over (the right token included), so
/// the API is no faster a way to guess than the form.
pub(super) async fn bearer_guesses(
    State(web): State<Web>,
    client: Client,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if request
        .headers()
        .contains_key(axum::http::header::AUTHORIZATION)
    {
        if !web.may_guess(&client.0) {
            tracing::warn!(client = %client.0, "admin token guesses throttled");
            return too_many_guesses(true);
        }
        if !web.bearer_admin(request.headers()) {
            web.wrong_guess(&client.0);
        }
    }
    next.run(request).await
}

fn too_many_guesses(json: bool) -> Response {
    let text = "Too many wrong admin tokens from your address: wait a minute.";
    let mut r = if json {
        (
            StatusCode::TOO_MANY_REQUESTS,
            Json(serde_json::json!({ "error": text })),
        )
            .into_response()
    } else {
        html(
            StatusCode::TOO_MANY_REQUESTS,
            pages::message("Too many tries", text, None),
        )
    };
    r.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        HeaderValue::from_static("60"),
    );
    r
}

/// `GET /admin/login`: the form, with a login CSRF token (a cookie and the
/// same value in the form).
pub(super) async fn login_form(State(web): State<Web>) -> Response {
    let token = random_token();
    let mut r = html(StatusCode::OK, pages::admin_login(false, &token));
    add_cookie(
        &mut r,
        &format!(
            "{LOGIN_COOKIE}={token}; Path=/admin/login; Max-Age=3600; HttpOnly; SameSite=Strict{}",
            web.secure()
        ),
    );
    r
}

/// `POST /admin/login`: the admin token (trimmed) against the configured
/// one; a session in the store for 12 h.
pub(super) async fn login(
    State(web): State<Web>,
    headers: HeaderMap,
    client: Client,
    body: Bytes,
) -> Response {
    if !web.same_origin(&headers) {
        return forbidden("This request did not come from this site's pages.");
    }
    let form = Fields::parse(&body);
    let csrf = cookie(&headers, LOGIN_COOKIE).unwrap_or_default();
    if csrf.is_empty() || !form.get("csrf").is_some_and(|given| equal(given, csrf)) {
        tracing::warn!("admin login refused: no login CSRF token");
        return forbidden("This form has expired: open the login page again.");
    }
    if !web.may_guess(&client.0) {
        tracing::warn!(client = %client.0, "admin login throttled");
        return too_many_guesses(false);
    }
    let given = form.get("token").unwrap_or_default();
    if !equal(given.trim(), web.hub.config.admin_token.expose()) {
        web.wrong_guess(&client.0);
        tracing::warn!("admin login refused");
        return html(StatusCode::UNAUTHORIZED, pages::admin_login(true, csrf));
    }
    let session = random_token();
    if let Err(e) = tenants::new_session(
        &web.hub.store,
        SessionKind::Admin,
        &session,
        web.now(),
        tenants::ADMIN_SESSION_MS,
    )
    .await
    {
        tracing::error!(error = %e, "admin session not stored");
        return html(
            StatusCode::SERVICE_UNAVAILABLE,
            pages::message("Try again", "The host cannot store the session now.", None),
        );
    }
    tracing::info!("admin logged in");
    let mut response = see_other("/");
    add_cookie(
        &mut response,
        &format!(
            "{ADMIN_COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
            tenants::ADMIN_SESSION_MS / 1000,
            web.secure()
        ),
    );
    response
}

/// `POST /admin/logout`: ends the admin session.
pub(super) async fn logout(State(web): State<Web>, headers: HeaderMap, body: Bytes) -> Response {
    let viewer = web.viewer(&headers).await;
    let form = Fields::parse(&body);
    let Some(raw) = viewer.admin_session.clone() else {
        return unauthorized(false);
    };
    if let Some(refused) = web.check_post(&viewer, &headers, &form) {
        return refused;
    }
    if let Err(e) = tenants::end_session(&web.hub.store, &raw).await {
        tracing::error!(error = %e, "admin session not ended");
    }
    tracing::info!("admin logged out");
    let mut response = see_other("/");
    add_cookie(
        &mut response,
        &format!(
            "{ADMIN_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{}",
            web.secure()
        ),
    );
    response
}

fn unavailable() -> Response {
    html(
        StatusCode::SERVICE_UNAVAILABLE,
        pages::message("Try again", "The host cannot read its store now.", None),
    )
}

/// `POST /bots/{id}/{action}` (its DJ) and `POST /admin/bots/{id}/{action}`
/// (the admin): `disable`, `enable` (a DJ: not a bot the admin disabled),
/// `revoke`, and the admin's `logout` (ends the bot's DJ's sessions).
/// Another DJ's bot answers 404.
pub(super) async fn bot_action(
    State(web): State<Web>,
    headers: HeaderMap,
    Path((id, action)): Path<(i64, String)>,
    body: Bytes,
) -> Response {
    let json = wants_json(&headers);
    let viewer = web.viewer(&headers).await;
    if !viewer.admin() && viewer.dj().is_none() {
        return unauthorized(json);
    }
    let form = Fields::parse(&body);
    if let Some(refused) = web.check_post(&viewer, &headers, &form) {
        return refused;
    }
    if !web.sees(&viewer, id).await || web.hub.view(id).is_none() {
        return not_found();
    }
    let admin = viewer.admin();
    let store = &web.hub.store;
    // Who disabled the bot decides who may enable it: read first, and when
    // the store cannot say, act on nothing (never enable by default).
    let disabled_by = match tenants::disabled_by(store, id).await {
        Ok(by) => by,
        Err(e) => {
            tracing::error!(bot = id, error = %e, "who disabled the bot not read");
            return unavailable();
        }
    };
    let (done, wait) = oneshot::channel();
    let command = match action.as_str() {
        "disable" => {
            // An admin's disable holds through the DJ's own disable.
            let by = if admin || disabled_by == Some(DisabledBy::Admin) {
                DisabledBy::Admin
            } else {
                DisabledBy::Dj
            };
            if let Err(e) = tenants::set_disabled_by(store, id, Some(by)).await {
                tracing::error!(bot = id, error = %e, "who disabled the bot not stored");
                return unavailable();
            }
            Command::Disable(done)
        }
        "enable" => {
            if !admin && disabled_by == Some(DisabledBy::Admin) {
                return forbidden("An admin disabled this bot: only the admin enables it again.");
            }
            Command::Enable(done)
        }
        "revoke" => Command::Revoke(done),
        "logout" if admin => {
            let ended = match tenants::owner(store, id).await {
                Ok(Some(dj)) => tenants::end_dj_sessions(store, dj).await.unwrap_or(0),
                _ => 0,
            };
            tracing::info!(bot = id, ended, "admin ended the DJ's sessions");
            return if json {
                Json(serde_json::json!({"bot": id, "done": action, "sessionsEnded": ended}))
                    .into_response()
            } else {
                see_other(&format!("/bots/{id}"))
            };
        }
        _ => return not_found(),
    };
    if !web.hub.command(id, command).await {
        return not_found();
    }
    let _ = tokio::time::timeout(ACTION_WAIT, wait).await;
    if action == "enable" {
        if let Err(e) = tenants::set_disabled_by(store, id, None).await {
            tracing::error!(bot = id, error = %e, "who disabled the bot not cleared");
        }
    }
    tracing::info!(bot = id, action = %action, admin, "bot action");
    if json {
        Json(serde_json::json!({"bot": id, "done": action, "view": web.hub.view(id)}))
            .into_response()
    } else {
        see_other(&format!("/bots/{id}"))
    }
}
