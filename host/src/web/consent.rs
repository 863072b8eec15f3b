//! The consent flow and the DJ's session: `/connect`, `/callback`, log out,
//! and the one-time sign-in link for another device.

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use tokio::sync::oneshot;

use super::dashboard::BotQuery;
use super::{
    add_cookie, cookie, equal, html, random_token, see_other, unauthorized, Client, Fields, Web,
    DJ_COOKIE, STATE_COOKIE,
};
use crate::bots::Command;
use crate::pages;
use crate::tenants::{self, ConsentBound, DisabledBy, SessionKind};

/// How long `/callback` waits for the code exchange before answering.
const EXCHANGE_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

impl Web {
    /// A new DJ session for `dj`: its `Set-Cookie` value.
    async fn dj_session(&self, dj: i64) -> Result<String, crate::store::StoreError> {
        let raw = random_token();
        tenants::new_session(
            &self.hub.store,
            SessionKind::Dj(dj),
            &raw,
            self.now(),
            tenants::DJ_SESSION_MS,
        )
        .await?;
        Ok(format!(
            "{DJ_COOKIE}={raw}; Path=/; Max-Age={}; HttpOnly; SameSite=Lax{}",
            tenants::DJ_SESSION_MS / 1000,
            self.secure()
        ))
    }
}

fn too_many(text: &str) -> Response {
    let mut r = html(
        StatusCode::TOO_MANY_REQUESTS,
        pages::message("Too many requests", text, Some(("/connect", "Try again"))),
    );
    r.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        HeaderValue::from_static("60"),
    );
    r
}

/// `GET /connect[?bot=ID]`: a consent request with a fresh state, then the
/// consent page. `bot` counts only for that bot's DJ and the admin: anyone
/// else's consent makes a new bot (the answer is the same whether bot ID
/// exists or not).
pub(super) async fn connect(
    State(web): State<Web>,
    headers: HeaderMap,
    client: Client,
    Query(q): Query<BotQuery>,
) -> Response {
    let viewer = web.viewer(&headers).await;
    let mut bot = None;
    if let Some(id) = q.bot {
        if web.sees(&viewer, id).await && web.hub.view(id).is_some() {
            bot = Some(id);
        }
    }
    let state = random_token();
    match tenants::put_consent_state(&web.hub.store, &state, bot, &client.0, web.now()).await {
        Ok(ConsentBound::Stored) => {}
        Ok(bound) => {
            tracing::warn!(?bound, "consent request refused: too many unfinished");
            return too_many(match bound {
                ConsentBound::PerClient => {
                    "Too many unfinished connect requests from your address: finish one, or try again in a few minutes."
                }
                _ => "The host has too many unfinished connect requests: try again in a few minutes.",
            });
        }
        Err(e) => {
            tracing::error!(error = %e, "consent state not stored");
            return html(
                StatusCode::SERVICE_UNAVAILABLE,
                pages::message("Try again", "The host cannot store the request now.", None),
            );
        }
    }
    let mut response = see_other(&web.hub.config.consent_url_for(&state));
    add_cookie(
        &mut response,
        &format!(
            "{STATE_COOKIE}={state}; Path=/callback; Max-Age=600; HttpOnly; SameSite=Lax{}",
            web.secure()
        ),
    );
    response
}

/// The consent page's answer. No `Debug`: it holds the code.
#[derive(Deserialize)]
pub(super) struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

fn clear_state(response: &mut Response) {
    add_cookie(
        response,
        &format!("{STATE_COOKIE}=; Path=/callback; Max-Age=0; HttpOnly; SameSite=Lax"),
    );
}

/// `GET /callback`: the state checked (the cookie and the stored request,
/// once), the code exchanged once. A new bot belongs to the browser's DJ
/// (a new DJ with a new session when the browser has none); a re-connect
/// revokes the pair it replaces. An exchange that fails says so and leaves
/// no new bot behind.
pub(super) async fn callback(
    State(web): State<Web>,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> Response {
    let again = Some(("/connect", "Try again"));
    let refuse = |status: StatusCode, title: &str, text: &str| {
        let mut r = html(status, pages::message(title, text, again));
        clear_state(&mut r);
        r
    };
    let bad = |text: &str| refuse(StatusCode::BAD_REQUEST, "Not connected", text);
    let Some(state) = q.state.as_deref().filter(|s| !s.is_empty()) else {
        return bad("The answer has no state: start from the connect link.");
    };
    if !cookie(&headers, STATE_COOKIE).is_some_and(|c| equal(c, state)) {
        tracing::warn!("consent answer refused: its state is not this browser's");
        return bad("This answer does not belong to a connect request of this browser.");
    }
    let bot = match web
        .hub
        .store
        .take_consent_state(state, web.now() - tenants::CONSENT_TTL_MS)
        .await
    {
        Ok(Some(bot)) => bot,
        Ok(None) => {
            tracing::warn!("consent answer refused: unknown, used or expired state");
            return bad("This connect request was used already or has expired.");
        }
        Err(e) => {
            tracing::error!(error = %e, "consent state not read");
            return bad("The host cannot read the request now.");
        }
    };
    if let Some(error) = &q.error {
        tracing::info!(error = %error, "the DJ's consent came back with an error");
        web.hub.metrics.consents_failed.inc();
        return bad(&format!("Consent failed: the service answered {error}."));
    }
    let Some(code) = q.code.clone().filter(|c| !c.is_empty()) else {
        return bad("The answer has no code.");
    };
    let viewer = web.viewer(&headers).await;
    // `_held` keeps the bot on this replica until the exchange is answered.
    let (id, answer, new, _held) = match bot {
        Some(id) => {
            let held = web.hub.hold_consent(id);
            // An admin's disable holds until the admin enables the bot: the
            // DJ's new pair is stored, the bot stays disabled.
            // The store unable to say counts as the admin's (never
            // enable by default).
            let by_admin = !matches!(
                tenants::disabled_by(&web.hub.store, id).await,
                Ok(None | Some(DisabledBy::Dj))
            );
            let start = !by_admin || viewer.admin();
            let (reply, answer) = oneshot::channel();
            if !web
                .hub
                .command(id, Command::Authorize { code, start, reply })
                .await
            {
                return bad("That bot is gone.");
            }
            (id, answer, false, held)
        }
        None => match web.hub.connect_new(code).await {
            Ok((id, answer, held)) => (id, answer, true, held),
            Err(e) => {
                tracing::error!(error = %e, "new integration not stored");
                return refuse(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Not connected",
                    "The host cannot store a new bot now.",
                );
            }
        },
    };
    let failed = match tokio::time::timeout(EXCHANGE_WAIT, answer).await {
        Ok(Ok(Ok(()))) => None,
        Ok(Ok(Err(why))) => Some(why),
        Ok(Err(_)) => Some("the bot stopped before the exchange was answered".to_owned()),
        Err(_) => Some("the service did not answer in time".to_owned()),
    };
    if let Some(why) = failed {
        web.hub.metrics.consents_failed.inc();
        tracing::warn!(bot = id, new, "consent failed: {why}");
        if new {
            web.hub.forget(id).await;
            if let Err(e) = tenants::delete_bot(&web.hub.store, id).await {
                tracing::error!(bot = id, error = %e, "a failed consent's row not deleted");
            }
        }
        let refused = why.contains("invalid_grant") || why.contains("refused");
        let (status, what) = if refused {
            (
                StatusCode::BAD_REQUEST,
                "The service refused the consent code (it was used, expired or not issued to this app).",
            )
        } else {
            (
                StatusCode::BAD_GATEWAY,
                "The service did not give the bot its tokens.",
            )
        };
        return refuse(
            status,
            "Consent failed",
            &format!("{what} Nothing was connected. ({why})"),
        );
    }
    tracing::info!(bot = id, new, "DJ connected");
    let mut response = see_other(&format!("/bots/{id}"));
    clear_state(&mut response);
    if new {
        // The bot is the browser's DJ's; a browser without a DJ session
        // gets a new DJ and its session.
        let dj = match viewer.dj() {
            Some(dj) => Ok(dj),
            None => tenants::new_dj(&web.hub.store, web.now()).await,
        };
        let owned = match dj {
            Ok(dj) => {
                let set = tenants::set_owner(&web.hub.store, id, dj).await;
                if set.is_ok() && viewer.dj().is_none() {
                    match web.dj_session(dj).await {
                        Ok(c) => add_cookie(&mut response, &c),
                        Err(e) => tracing::error!(error = %e, "DJ session not stored"),
                    }
                }
                set
            }
            Err(e) => Err(e),
        };
        if let Err(e) = owned {
            tracing::error!(bot = id, error = %e, "the bot's DJ not stored");
        }
    } else if let Ok(Some(by)) = tenants::disabled_by(&web.hub.store, id).await {
        if by != DisabledBy::Admin || viewer.admin() {
            let _ = tenants::set_disabled_by(&web.hub.store, id, None).await;
        }
    }
    response
}

/// `POST /logout`: ends this DJ session.
pub(super) async fn logout(State(web): State<Web>, headers: HeaderMap, body: Bytes) -> Response {
    let viewer = web.viewer(&headers).await;
    let form = Fields::parse(&body);
    if viewer.dj().is_none() {
        return unauthorized(false);
    }
    if let Some(refused) = web.check_post(&viewer, &headers, &form) {
        return refused;
    }
    if let Some((_, raw)) = &viewer.dj {
        if let Err(e) = tenants::end_session(&web.hub.store, raw).await {
            tracing::error!(error = %e, "session not ended");
        }
    }
    let mut response = see_other("/");
    add_cookie(
        &mut response,
        &format!(
            "{DJ_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax{}",
            web.secure()
        ),
    );
    response
}

/// `POST /signin-link`: a one-time link (10 minutes) that signs another
/// device in as this DJ.
pub(super) async fn signin_link(
    State(web): State<Web>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let viewer = web.viewer(&headers).await;
    let form = Fields::parse(&body);
    let Some(dj) = viewer.dj() else {
        return unauthorized(false);
    };
    if let Some(refused) = web.check_post(&viewer, &headers, &form) {
        return refused;
    }
    let code = random_token();
    if let Err(e) = tenants::new_signin(&web.hub.store, dj, &code, web.now()).await {
        tracing::error!(error = %e, "sign-in link not stored");
        return html(
            StatusCode::SERVICE_UNAVAILABLE,
            pages::message("Try again", "The host cannot store the link now.", None),
        );
    }
    tracing::info!(dj, "sign-in link made");
    let url = format!(
        "{}/signin?code={code}",
        web.hub.config.public_url.trim_end_matches('/')
    );
    html(
        StatusCode::OK,
        pages::signin_link(&url, tenants::SIGNIN_MS / 60_000),
    )
}

/// The sign-in link's query. No `Debug`: it holds the code.
#[derive(Deserialize)]
pub(super) struct SigninQuery {
    code: Option<String>,
}

/// `GET /signin?code=…`: a button that signs in (opening the link alone
/// changes nothing).
pub(super) async fn signin_form(Query(q): Query<SigninQuery>) -> Response {
    let mut r = html(
        StatusCode::OK,
        pages::signin_confirm(q.code.as_deref().unwrap_or_default()),
    );
    r.headers_mut().insert(
        axum::http::header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

/// `POST /signin`: the code taken once; this device gets the DJ's session.
pub(super) async fn signin(State(web): State<Web>, headers: HeaderMap, body: Bytes) -> Response {
    if !web.same_origin(&headers) {
        return super::forbidden("This request did not come from this site's pages.");
    }
    let form = Fields::parse(&body);
    let code = form.get("code").unwrap_or_default();
    let dj = if code.is_empty() {
        Ok(None)
    } else {
        tenants::take_signin(&web.hub.store, code, web.now()).await
    };
    let dj = match dj {
        Ok(Some(dj)) => dj,
        Ok(None) => {
            tracing::warn!("sign-in refused: unknown, used or expired link");
            return html(
                StatusCode::BAD_REQUEST,
                pages::message(
                    "Not signed in",
                    "This sign-in link was used already or has expired: make a new one on a signed-in device.",
                    None,
                ),
            );
        }
        Err(e) => {
            tracing::error!(error = %e, "sign-in link not read");
            return html(
                StatusCode::SERVICE_UNAVAILABLE,
                pages::message("Try again", "The host cannot read the link now.", None),
            );
        }
    };
    let mut response = see_other("/");
    match web.dj_session(dj).await {
        Ok(c) => add_cookie(&mut response, &c),
        Err(e) => {
            tracing::error!(error = %e, "DJ session not stored");
            return html(
                StatusCode::SERVICE_UNAVAILABLE,
                pages::message("Try again", "The host cannot store the session now.", None),
            );
        }
    }
    tracing::info!(dj, "signed in on another device");
    response
}
