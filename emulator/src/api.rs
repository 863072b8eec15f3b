//! The bot endpoints (spec 4.3–4.7, 5.1, 7.1, 7.3, 8) in the order the
//! service applies its checks: route and method, injected faults, the
//! gateway (Bearer 401, permission 403, call quota 429 — none with a
//! detailCode), the request itself (400/415 `OAPI_MNGR_0103`, chat's 0108 and
//! 0109), then the broadcast (404 0301, 403 0209, 403 0208, 429 0302).

use base64::Engine;
use bytes::Bytes;
use serde::Serialize;

use crate::clock::{iso, next_midnight_ms};
use crate::oauth::{self, Auth, Form};
use crate::paths::Endpoint;
use crate::quota::Refusal;
use crate::reply::{Reply, ReplyBody};
use crate::requests::{fingerprint, RequestFacts};
use crate::scope::Perm;
use crate::world::{ApiError, FailQuota, World};

/// What the HTTP layer extracted from one request.
#[derive(Debug)]
pub struct Request<'a> {
    /// The endpoint routed to (`None`: no such path).
    pub endpoint: Option<Endpoint>,
    /// Method.
    pub method: &'a str,
    /// Path.
    pub path: &'a str,
    /// Query string.
    pub query: Option<&'a str>,
    /// `Authorization` header.
    pub authorization: Option<&'a str>,
    /// `Content-Type` header.
    pub content_type: Option<&'a str>,
    /// `Accept` header.
    pub accept: Option<&'a str>,
    /// The body read so far (capped by the HTTP layer).
    pub body: &'a Bytes,
    /// Aborts this request's connection (a stream whose reader is stuck).
    pub kill: Option<std::sync::Arc<tokio::sync::Notify>>,
}

fn error(path: &str, e: &ApiError, now: i64) -> Reply {
    Reply::problem(path, e.status, e.detail, &e.message, now)
}

fn media_type(ct: Option<&str>) -> Option<String> {
    ct.map(|c| {
        c.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    })
}

/// Decodes `application/x-www-form-urlencoded`: `+` is a space, `%XX` a
/// byte, a bad escape stays as it is, invalid UTF-8 becomes U+FFFD.
///
/// ```
/// use onair_emulator::api::parse_form;
/// let form = parse_form(b"grant_type=refresh_token&scope=a+b%20c&&x&bad=%zz");
/// let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
/// assert_eq!(
///     pairs,
///     [("grant_type", "refresh_token"), ("scope", "a b c"), ("x", ""), ("bad", "%zz")]
/// );
/// ```
pub fn parse_form(body: &[u8]) -> Form {
    form_urlencoded::parse(body).into_owned().collect()
}

/// `GET /v1/live` (spec 2.2, 4.3): the ten fields in the spec's order.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct LiveBody<'a> {
    live_id: u64,
    title: &'a str,
    started_at: String,
    close_air_time: String,
    listener_count: usize,
    total_listener_count: usize,
    welcome_message: &'a str,
    is_chat_frozen: bool,
    categories: &'a [String],
    tags: &'a [String],
}

/// One person of a listener page (spec 4.4).
#[derive(Debug, Serialize)]
struct Listener<'a> {
    id: &'a str,
    nickname: &'a str,
}

/// `GET /v1/live/listeners` (spec 4.4): `nextCursor` is `null` on the last page.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ListenersBody<'a> {
    listeners: Vec<Listener<'a>>,
    next_cursor: Option<String>,
}

/// One donor of `GET /v1/live/fans` (spec 4.5): `coinCount` may be `null`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Fan<'a> {
    id: &'a str,
    nickname: &'a str,
    rank: usize,
    coin_count: Option<u64>,
}

/// `GET /v1/live/fans` (spec 4.5).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FansBody<'a> {
    total_count: usize,
    fans: Vec<Fan<'a>>,
}

/// The counted bot endpoint needing `perm` (none for the stream's `events.*`).
pub(crate) fn path_of(perm: Perm) -> Option<&'static str> {
    Endpoint::ALL
        .into_iter()
        .find(|e| e.permission() == Some(perm))
        .map(Endpoint::path)
}

/// What the request log can know of a request before it is answered: on a
/// token endpoint the grant, the app named and the credential's fingerprint;
/// on a bot endpoint the permission and the access token's app and integration.
fn learn(w: &World, r: &Request<'_>) -> RequestFacts {
    let mut facts = RequestFacts::default();
    match r.endpoint {
        Some(Endpoint::Token | Endpoint::Revoke) => {
            let form = parse_form(r.body);
            let app = oauth::presented_app(w, r.authorization, &form);
            facts.client_id = app.map(|a| w.apps[a].client_id.clone());
            let value = |name: &str| {
                form.iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.as_str())
            };
            let (credential, integration) = if r.endpoint == Some(Endpoint::Revoke) {
                facts.grant = Some("revoke".to_owned());
                let token = value("token");
                let of = token.and_then(|t| {
                    w.access
                        .get(t)
                        .map(|a| a.integration)
                        .or_else(|| w.refresh.get(t).map(|r| r.integration))
                });
                (token, of)
            } else {
                let grant = value("grant_type");
                facts.grant = grant.map(|g| g.chars().take(40).collect());
                match grant {
                    Some("authorization_code") => {
                        let code = value("code");
                        (
                            code,
                            code.and_then(|c| w.codes.get(c)).map(|c| c.integration),
                        )
                    }
                    Some("refresh_token") => {
                        let rt = value("refresh_token");
                        (rt, rt.and_then(|t| w.refresh.get(t)).map(|r| r.integration))
                    }
                    _ => (None, None),
                }
            };
            facts.credential = credential.map(fingerprint);
            facts.integration = integration
                .filter(|i| Some(w.integrations[*i].app) == app)
                .map(|i| w.integrations[i].id.clone());
        }
        Some(e) => {
            facts.permission = e.permission().map(Perm::name);
            let known = oauth::bearer_token(r.authorization).and_then(|t| w.access.get(t));
            if let Some(a) = known {
                let i = &w.integrations[a.integration];
                facts.integration = Some(i.id.clone());
                facts.client_id = Some(w.apps[i.app].client_id.clone());
            }
        }
        None => {}
    }
    facts
}

/// The `error` of a token endpoint's OAuth error body.
fn oauth_error_of(reply: &Reply) -> Option<String> {
    let ReplyBody::Json(text) = &reply.body else {
        return None;
    };
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    Some(v.get("error")?.as_str()?.to_owned())
}

/// Answers one request to a non-control path; `facts` gets what the request
/// log records of it.
pub fn handle(w: &mut World, r: &Request<'_>, now: i64, facts: &mut RequestFacts) -> Reply {
    *facts = learn(w, r);
    let reply = answer(w, r, now, facts);
    if r.endpoint.is_some_and(Endpoint::is_oauth) && reply.status >= 400 {
        facts.oauth_error = oauth_error_of(&reply);
    }
    reply
}

fn answer(w: &mut World, r: &Request<'_>, now: i64, facts: &mut RequestFacts) -> Reply {
    let path = r.path;
    let Some(endpoint) = r.endpoint else {
        return Reply::problem(path, 404, None, "No such endpoint.", now);
    };
    let path = endpoint.path();
    let allowed = endpoint.method();
    if let Some(f) = w.take_fail(path) {
        w.log(format!(
            "fault injected: {path} → {} {}",
            f.status,
            f.detail_code.as_deref().unwrap_or("")
        ));
        if let Some(q) = f.quota {
            let refusal = match q {
                FailQuota::PerSecond => Refusal::PerSecond,
                FailQuota::Daily { scope } => Refusal::Daily {
                    scope,
                    retry_after: ((next_midnight_ms(now) - now) + 999) / 1000,
                },
            };
            return quota_refusal(w, path, refusal, facts);
        }
        return if endpoint == Endpoint::Events {
            Reply::stream_error(f.status, f.detail_code.as_deref(), "Injected failure.")
        } else if endpoint.is_oauth() {
            Reply::oauth_error(
                f.status,
                f.detail_code.as_deref().unwrap_or("server_error"),
                "Injected failure.",
            )
        } else {
            Reply::problem(
                path,
                f.status,
                f.detail_code.as_deref(),
                "Injected failure.",
                now,
            )
        };
    }
    if r.method != allowed {
        return Reply::problem(
            path,
            405,
            Some("OAPI_MNGR_0103"),
            &format!("Use {allowed}."),
            now,
        )
        .header("allow", allowed);
    }
    if endpoint.is_oauth() {
        return token_endpoint(w, r, now);
    }
    let auth = match oauth::bearer(w, r.authorization, now) {
        Ok(a) => a,
        Err(e) if endpoint == Endpoint::Events => {
            return Reply::stream_error(e.status, e.detail, &e.message)
        }
        Err(e) => return error(path, &e, now),
    };
    if endpoint == Endpoint::Events {
        return events(w, r, auth, now);
    }
    let perm = endpoint.permission().unwrap_or(Perm::ChatSend);
    if !auth.scope.has(perm) {
        return Reply::problem(
            path,
            403,
            None,
            &format!("Permission {} is required.", perm.name()),
            now,
        );
    }
    let app = w.integrations[auth.integration].app;
    let headers = match w.quotas.take(now, app, auth.integration, perm) {
        Ok(h) => h,
        Err(refusal) => return quota_refusal(w, path, refusal, facts),
    };
    let reply = match endpoint {
        Endpoint::Live => live(w, auth, now),
        Endpoint::Listeners => listeners(w, r, auth, now),
        Endpoint::Fans => fans(w, auth, now),
        _ => chat(w, r, auth, now),
    };
    if (200..300).contains(&reply.status) {
        headers.into_iter().fold(reply, |r, (k, v)| r.header(k, v))
    } else {
        reply
    }
}

/// A call-quota 429 (empty body): per-second with `x-ratelimit-remaining: 0`,
/// daily with `Retry-After` and, when one permission's limit was hit,
/// `x-ratelimit-daily-scope`; the request log learns which.
fn quota_refusal(w: &World, path: &str, refusal: Refusal, facts: &mut RequestFacts) -> Reply {
    match refusal {
        Refusal::PerSecond => {
            facts.quota = Some("perSecond");
            w.log(format!("429 per-second quota on {path}"));
            Reply::empty(429).header("x-ratelimit-remaining", "0")
        }
        Refusal::Daily { scope, retry_after } => {
            facts.quota = Some("daily");
            facts.daily_scope = scope.map(Perm::name);
            facts.retry_after = Some(retry_after);
            w.log(format!(
                "429 daily quota on {path} ({})",
                scope.map_or("app", |p| p.name())
            ));
            let mut reply = Reply::empty(429).header("retry-after", retry_after.to_string());
            if let Some(p) = scope {
                reply = reply.header("x-ratelimit-daily-scope", p.name());
            }
            reply
        }
    }
}

fn token_endpoint(w: &mut World, r: &Request<'_>, now: i64) -> Reply {
    match media_type(r.content_type).as_deref() {
        Some("application/x-www-form-urlencoded") => {}
        None if r.body.is_empty() => {}
        _ => {
            return Reply::problem(
                r.path,
                415,
                Some("OAPI_MNGR_0103"),
                "Use application/x-www-form-urlencoded.",
                now,
            )
        }
    }
    let form = parse_form(r.body);
    if r.endpoint == Some(Endpoint::Token) {
        oauth::token(w, r.authorization, &form, now)
    } else {
        oauth::revoke(w, r.authorization, &form, now)
    }
}

fn on_air(w: &World, auth: Auth) -> Result<usize, ApiError> {
    let dj = w.integrations[auth.integration].dj;
    if w.djs[dj].live.is_none() {
        return Err(ApiError::not_on_air());
    }
    Ok(dj)
}

fn live(w: &mut World, auth: Auth, now: i64) -> Reply {
    let dj = match on_air(w, auth) {
        Ok(d) => d,
        Err(e) => return error(Endpoint::Live.path(), &e, now),
    };
    let d = &w.djs[dj];
    let Some(live) = d.live.as_ref() else {
        return error(Endpoint::Live.path(), &ApiError::not_on_air(), now);
    };
    let (listener_count, total_listener_count) = live.counts();
    Reply::json(
        200,
        &LiveBody {
            live_id: live.live_id,
            title: &live.title,
            started_at: iso(live.started_at),
            close_air_time: iso(live.close_air_at),
            listener_count,
            total_listener_count,
            welcome_message: &live.welcome_message,
            is_chat_frozen: d.chat_frozen,
            categories: &live.categories,
            tags: &live.tags,
        },
    )
}

const CURSOR: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

fn listeners(w: &mut World, r: &Request<'_>, auth: Auth, now: i64) -> Reply {
    let path = Endpoint::Listeners.path();
    let dj = match on_air(w, auth) {
        Ok(d) => d,
        Err(e) => return error(path, &e, now),
    };
    let live_id = w.djs[dj].live.as_ref().map_or(0, |l| l.live_id);
    let cursor = form_urlencoded::parse(r.query.unwrap_or("").as_bytes())
        .find(|(k, _)| k == "cursor")
        .map(|(_, cursor)| cursor);
    let after = match cursor {
        None => 0,
        Some(c) => {
            let parsed = CURSOR
                .decode(c.as_bytes())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .and_then(|t| {
                    let (l, s) = t.strip_prefix("c:")?.split_once(':')?;
                    Some((l.parse::<u64>().ok()?, s.parse::<u64>().ok()?))
                });
            match parsed {
                Some((l, s)) if l == live_id => s,
                _ => {
                    return Reply::problem(
                        path,
                        400,
                        Some("OAPI_MNGR_0103"),
                        "Invalid cursor.",
                        now,
                    )
                }
            }
        }
    };
    let Some((page, more)) = w.listeners(dj, after, w.cfg.page_size) else {
        return error(path, &ApiError::not_on_air(), now);
    };
    let next = if more {
        page.last()
            .map(|(seq, _, _)| CURSOR.encode(format!("c:{live_id}:{seq}")))
    } else {
        None
    };
    let listeners = page
        .iter()
        .map(|(_, id, nickname)| Listener { id, nickname })
        .collect();
    Reply::json(
        200,
        &ListenersBody {
            listeners,
            next_cursor: next,
        },
    )
}

fn coin_count_hidden(id: &str) -> bool {
    id.bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
        % 5
        == 0
}

fn fans(w: &mut World, auth: Auth, now: i64) -> Reply {
    let path = Endpoint::Fans.path();
    let dj = match on_air(w, auth) {
        Ok(d) => d,
        Err(e) => return error(path, &e, now),
    };
    let Some(list) = w.fans(dj) else {
        return error(path, &ApiError::not_on_air(), now);
    };
    let fans = list
        .iter()
        .enumerate()
        .map(|(i, (id, nickname, coins))| Fan {
            id,
            nickname,
            rank: i + 1,
            coin_count: (!coin_count_hidden(id)).then_some(*coins),
        })
        .collect();
    Reply::json(
        200,
        &FansBody {
            total_count: list.len(),
            fans,
        },
    )
}

/// Whether a chat message is blank: empty or whitespace only (0108).
pub fn is_blank(message: &str) -> bool {
    message.chars().all(char::is_whitespace)
}

fn chat(w: &mut World, r: &Request<'_>, auth: Auth, now: i64) -> Reply {
    let path = Endpoint::Chat.path();
    let bad = |msg: &str| Reply::problem(path, 400, Some("OAPI_MNGR_0103"), msg, now);
    match media_type(r.content_type).as_deref() {
        Some("application/json") => {}
        None => return bad("Content-Type application/json is required."),
        Some(_) => {
            return Reply::problem(
                path,
                415,
                Some("OAPI_MNGR_0103"),
                "Use application/json.",
                now,
            );
        }
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(r.body) else {
        return bad("The body is not valid JSON.");
    };
    let Some(message) = value.get("message").and_then(|m| m.as_str()) else {
        return bad("Field message (a string) is required.");
    };
    if is_blank(message) {
        return Reply::problem(
            path,
            400,
            Some("OAPI_MNGR_0108"),
            "The message is empty.",
            now,
        );
    }
    if message.encode_utf16().count() > 200 {
        return Reply::problem(
            path,
            400,
            Some("OAPI_MNGR_0109"),
            "The message is over 200 characters.",
            now,
        );
    }
    let dj = match on_air(w, auth) {
        Ok(d) => d,
        Err(e) => return error(path, &e, now),
    };
    let d = &w.djs[dj];
    if d.bot_blocked || d.bot_kicked {
        return error(path, &ApiError::blocked(), now);
    }
    if d.chat_frozen || d.bot_chat_banned {
        return Reply::problem(
            path,
            403,
            Some("OAPI_MNGR_0208"),
            "Chat is frozen or the bot is banned from chat.",
            now,
        );
    }
    if !w.chat_slot(dj, now) {
        w.log("429 OAPI_MNGR_0302: broadcast-wide chat limit".to_owned());
        return Reply::problem(
            path,
            429,
            Some("OAPI_MNGR_0302"),
            "Chat limit of this broadcast reached.",
            now,
        );
    }
    w.join_bot(auth.integration, now);
    w.bot_chat(auth.integration, message, now);
    let id = w.integrations[auth.integration].id.clone();
    w.log(format!("bot chat from {id}: {message}"));
    Reply::empty(204)
}

fn events(w: &mut World, r: &Request<'_>, auth: Auth, now: i64) -> Reply {
    if let Some(accept) = r.accept {
        let ok = accept.split(',').any(|a| {
            let t = a.split(';').next().unwrap_or("").trim();
            t == "text/event-stream" || t == "*/*" || t == "text/*"
        });
        if !ok {
            return Reply::stream_error(
                400,
                Some("OAPI_MNGR_0103"),
                "Accept: text/event-stream is required.",
            );
        }
    }
    if !auth.scope.any_events() {
        return Reply::stream_error(403, None, "An events.* permission is required.");
    }
    match w.open_stream(
        auth.integration,
        auth.scope,
        auth.expires_at,
        now,
        r.kill.clone(),
    ) {
        Ok(body) => Reply {
            status: 200,
            headers: vec![
                ("cache-control", "no-cache".to_owned()),
                ("connection", "close".to_owned()),
            ],
            body: crate::reply::ReplyBody::Stream(Box::new(body)),
        },
        Err(e) => Reply::stream_error(e.status, e.detail, &e.message),
    }
}
