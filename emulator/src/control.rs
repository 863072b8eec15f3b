//! The control API under `/_emulator/` (a contract: extend it, never break
//! it): one handler per call, listed in [`CALLS`] (the router's table).
//! JSON in and out; every call takes an optional `"dj"` (default: the first
//! DJ, `"main"`). Documented call by call in `emulator/README.md`.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::clock::iso;
use crate::events::Kind;
use crate::oauth;
use crate::reply::Reply;
use crate::scope::{Perm, Scope};
use crate::shared::Shared;
use crate::wire::WireConfig;
use crate::world::{Fail, FailQuota, RefireError, World};

fn ok(v: Value) -> Reply {
    Reply::json(200, &v)
}

fn bad(msg: impl AsRef<str>) -> Reply {
    Reply::control_error(400, msg.as_ref())
}

fn parse<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Reply> {
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        body
    };
    serde_json::from_slice(body).map_err(|e| bad(format!("bad JSON body: {e}")))
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Target {
    dj: Option<String>,
    client_id: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ConsentReq {
    scope: Option<String>,
    redirect_uri: Option<String>,
    dj: Option<String>,
    client_id: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct LiveStartReq {
    title: Option<String>,
    welcome_message: Option<String>,
    categories: Option<Vec<String>>,
    tags: Option<Vec<String>>,
    dj: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct EmitReq {
    event: String,
    data: Value,
    dj: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct EndReq {
    reason: String,
    dj: Option<String>,
    client_id: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct StallReq {
    dj: Option<String>,
    client_id: Option<String>,
    count: Option<usize>,
    for_ms: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct AdvanceReq {
    ms: i64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StateReq {
    chat_frozen: Option<bool>,
    bot_manager: Option<bool>,
    bot_chat_banned: Option<bool>,
    bot_blocked: Option<bool>,
    bot_kicked: Option<bool>,
    dj: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct FailReq {
    path: String,
    status: u16,
    detail_code: Option<String>,
    times: Option<u64>,
    dj: Option<String>,
    /// `perSecond` or `daily`: a 429 answered as that call quota answers.
    quota: Option<String>,
    /// With `quota` `daily`: the permission named in `x-ratelimit-daily-scope`.
    scope: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RefireReq {
    id: String,
    dj: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WireReq {
    dj: Option<String>,
    line_ending: Option<crate::wire::LineEnding>,
    chunk_bytes: Option<usize>,
    bom: Option<bool>,
    space_after_colon: Option<bool>,
    comments: Option<bool>,
    unknown_fields: Option<bool>,
    unknown_events: Option<bool>,
    fraction_digits: Option<u8>,
    heartbeats: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct LeaveReq {
    user_id: String,
    dj: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct BanReq {
    user_id: String,
    banned: Option<bool>,
    dj: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct SuspendReq {
    client_id: Option<String>,
    suspended: Option<bool>,
}

/// Largest single clock jump: ten years (keeps every expiry sum far from overflow).
const MAX_ADVANCE_MS: i64 = 10 * 366 * 86_400_000;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct AppReq {
    redirect_uri: Option<String>,
}

/// A `/fail` request's `quota` and `scope`, checked: only on a 429 of a
/// counted bot endpoint; a daily one's `scope` a counted permission, whose
/// endpoint is the path when none is given.
fn fail_quota(req: &mut FailReq) -> Result<Option<FailQuota>, Reply> {
    let Some(kind) = req.quota.as_deref() else {
        if req.scope.is_some() {
            return Err(bad("scope goes with \"quota\":\"daily\""));
        }
        return Ok(None);
    };
    if req.status != 429 {
        return Err(bad("quota goes with status 429"));
    }
    let quota = match kind {
        "perSecond" if req.scope.is_some() => {
            return Err(bad("scope goes with \"quota\":\"daily\""))
        }
        "perSecond" => FailQuota::PerSecond,
        "daily" => {
            let scope = match req.scope.as_deref() {
                None => None,
                Some(name) => {
                    let perm = Perm::from_name(name)
                        .filter(|p| crate::api::path_of(*p).is_some())
                        .ok_or_else(|| {
                            bad(format!(
                                "scope {name:?} is not a counted permission (live.read, listeners.read, fans.read or chat.send)"
                            ))
                        })?;
                    if req.path.is_empty() {
                        req.path = crate::api::path_of(perm).unwrap_or_default().to_owned();
                    }
                    Some(perm)
                }
            };
            FailQuota::Daily { scope }
        }
        _ => return Err(bad("quota must be perSecond or daily")),
    };
    if !crate::paths::Endpoint::of_path(&req.path).is_some_and(crate::paths::Endpoint::counted) {
        return Err(bad(
            "a quota 429 is answered by /v1/live, /v1/live/listeners, /v1/live/fans or /v1/live/chat (the stream and the token endpoints are not counted)",
        ));
    }
    Ok(Some(quota))
}

/// The state of one DJ as the control API shows it.
pub fn state_json(w: &World, dj: usize) -> Value {
    let d = &w.djs[dj];
    let live = d.live.as_ref();
    json!({
        "dj": d.name,
        "djUserId": d.user_id,
        "onAir": live.is_some(),
        "liveId": live.map(|l| l.live_id),
        "chatFrozen": d.chat_frozen,
        "botManager": d.bot_manager,
        "botChatBanned": d.bot_chat_banned,
        "botBlocked": d.bot_blocked,
        "botKicked": d.bot_kicked,
        "openStreams": w.open_streams(dj),
        "stalledStreams": w.stalled_streams(dj),
        "listenerCount": live.map(|l| l.counts().0),
    })
}

fn wire_json(wire: &WireConfig) -> Value {
    json!({
        "lineEnding": match wire.line_ending {
            crate::wire::LineEnding::Lf => "LF",
            crate::wire::LineEnding::CrLf => "CRLF",
            crate::wire::LineEnding::Cr => "CR",
        },
        "chunkBytes": wire.chunk_bytes,
        "bom": wire.bom,
        "spaceAfterColon": wire.space_after_colon,
        "comments": wire.comments,
        "unknownFields": wire.unknown_fields,
        "unknownEvents": wire.unknown_events,
        "fractionDigits": wire.fraction_digits.unwrap_or(3),
        "heartbeats": !wire.heartbeats_off,
    })
}

/// One control call: its path under `/_emulator`, its method and its handler.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    /// The path after the `/_emulator` prefix.
    pub path: &'static str,
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The handler.
    pub run: fn(&Shared, &Input<'_>) -> Result<Reply, Reply>,
}

/// What a control call reads of its request: the query and the body.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The query string, if any.
    pub query: Option<&'a str>,
    /// The body (empty or whitespace: `{}`).
    pub body: &'a [u8],
}

/// Every control call (a path may have a GET and a POST), grouped by path:
/// the route table of the control API (the router of `routes.rs`).
pub const CALLS: &[Call] = &[
    Call {
        path: "/clock",
        method: "GET",
        run: clock,
    },
    Call {
        path: "/clock/advance",
        method: "POST",
        run: clock_advance,
    },
    Call {
        path: "/clock/pause",
        method: "POST",
        run: clock_pause,
    },
    Call {
        path: "/clock/resume",
        method: "POST",
        run: clock_resume,
    },
    Call {
        path: "/scenario",
        method: "GET",
        run: scenario,
    },
    Call {
        path: "/app",
        method: "GET",
        run: app,
    },
    Call {
        path: "/apps",
        method: "POST",
        run: apps,
    },
    Call {
        path: "/consent",
        method: "POST",
        run: consent,
    },
    Call {
        path: "/consent/narrow",
        method: "POST",
        run: consent_narrow,
    },
    Call {
        path: "/integration/disconnect",
        method: "POST",
        run: integration_disconnect,
    },
    Call {
        path: "/live/start",
        method: "POST",
        run: live_start,
    },
    Call {
        path: "/live/end",
        method: "POST",
        run: live_end,
    },
    Call {
        path: "/emit",
        method: "POST",
        run: emit,
    },
    Call {
        path: "/streams/end",
        method: "POST",
        run: streams_end,
    },
    Call {
        path: "/streams/drop",
        method: "POST",
        run: streams_drop,
    },
    Call {
        path: "/streams/stall",
        method: "POST",
        run: streams_stall,
    },
    Call {
        path: "/state",
        method: "GET",
        run: state_get,
    },
    Call {
        path: "/state",
        method: "POST",
        run: state_set,
    },
    Call {
        path: "/quota",
        method: "POST",
        run: quota,
    },
    Call {
        path: "/fail",
        method: "POST",
        run: fail,
    },
    Call {
        path: "/refire",
        method: "POST",
        run: refire,
    },
    Call {
        path: "/chat",
        method: "GET",
        run: chat,
    },
    Call {
        path: "/requests",
        method: "GET",
        run: requests,
    },
    Call {
        path: "/ledger",
        method: "GET",
        run: ledger,
    },
    Call {
        path: "/mark",
        method: "POST",
        run: mark,
    },
    Call {
        path: "/frames",
        method: "GET",
        run: frames,
    },
    Call {
        path: "/djs",
        method: "GET",
        run: djs,
    },
    Call {
        path: "/wire",
        method: "GET",
        run: wire_get,
    },
    Call {
        path: "/wire",
        method: "POST",
        run: wire_set,
    },
    Call {
        path: "/ban",
        method: "POST",
        run: ban,
    },
    Call {
        path: "/app/suspend",
        method: "POST",
        run: app_suspend,
    },
    Call {
        path: "/leave",
        method: "POST",
        run: leave,
    },
    Call {
        path: "/fleet",
        method: "GET",
        run: fleet,
    },
];

/// Answers one control call with its handler.
pub fn answer(
    shared: &Shared,
    run: fn(&Shared, &Input<'_>) -> Result<Reply, Reply>,
    query: Option<&str>,
    body: &[u8],
) -> Reply {
    match run(shared, &Input { query, body }) {
        Ok(r) | Err(r) => r,
    }
}

/// Answers one control call by its path (without the `/_emulator` prefix)
/// and method, as the router would (scenario steps use it).
pub fn handle(
    shared: &Shared,
    method: &str,
    path: &str,
    query: Option<&str>,
    body: &[u8],
) -> Reply {
    match CALLS.iter().find(|c| c.path == path && c.method == method) {
        Some(c) => answer(shared, c.run, query, body),
        None if CALLS.iter().any(|c| c.path == path) => not_allowed(path),
        None => no_such_call(),
    }
}

/// A known control call with another method: 405 with `Allow`.
pub fn not_allowed(path: &str) -> Reply {
    let allow: Vec<&str> = CALLS
        .iter()
        .filter(|c| c.path == path)
        .map(|c| c.method)
        .collect();
    let reply = Reply::control_error(405, "method not allowed for this control call");
    if allow.is_empty() {
        reply
    } else {
        reply.header("allow", allow.join(", "))
    }
}

/// No such control call: 404.
pub fn no_such_call() -> Reply {
    Reply::control_error(404, "no such control call (see emulator/README.md)")
}

fn query_dj(query: Option<&str>) -> Option<String> {
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(k, _)| k == "dj")
        .map(|(_, v)| v.into_owned())
}

fn dj_of(w: &World, name: Option<&str>) -> Result<usize, Reply> {
    w.dj(name).map_err(|e| Reply::control_error(404, &e))
}

fn integration_of(w: &mut World, t: &Target) -> Result<usize, Reply> {
    let dj = dj_of(w, t.dj.as_deref())?;
    let app = w
        .app_by_id(t.client_id.as_deref())
        .map_err(|e| Reply::control_error(404, &e))?;
    Ok(w.integration(app, dj))
}

/// `GET /clock`.
fn clock(shared: &Shared, _input: &Input<'_>) -> Result<Reply, Reply> {
    let now = shared.clock.now_ms();
    Ok(ok(
        json!({"nowMs": now, "iso": iso(now), "speed": shared.clock.speed(), "paused": shared.clock.is_paused()}),
    ))
}

/// `POST /clock/advance`.
fn clock_advance(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let req: AdvanceReq = parse(body)?;
    if !(0..=MAX_ADVANCE_MS).contains(&req.ms) {
        return Err(bad(
            "ms must be between 0 and ten years (time never runs back)",
        ));
    }
    let now = shared.clock.advance(req.ms);
    let mut w = shared.world();
    w.tick(now);
    w.log(format!("clock advanced {} ms → {}", req.ms, iso(now)));
    Ok(ok(json!({"nowMs": now, "iso": iso(now)})))
}

/// `POST /clock/pause`.
fn clock_pause(shared: &Shared, _input: &Input<'_>) -> Result<Reply, Reply> {
    let now = shared.clock.now_ms();
    let changed = shared.clock.pause();
    if changed {
        shared.world().log(format!("clock paused at {}", iso(now)));
    }
    Ok(ok(
        json!({"nowMs": now, "paused": true, "changed": changed}),
    ))
}

/// `POST /clock/resume`.
fn clock_resume(shared: &Shared, _input: &Input<'_>) -> Result<Reply, Reply> {
    let now = shared.clock.now_ms();
    let changed = shared.clock.resume();
    if changed {
        shared.world().log(format!("clock resumed at {}", iso(now)));
    }
    Ok(ok(
        json!({"nowMs": now, "paused": false, "changed": changed}),
    ))
}

/// `GET /scenario`.
fn scenario(shared: &Shared, _input: &Input<'_>) -> Result<Reply, Reply> {
    Ok(ok(shared.progress_json()))
}

/// `GET /app`.
fn app(shared: &Shared, _input: &Input<'_>) -> Result<Reply, Reply> {
    let w = shared.world();
    Ok(ok(json!(w.apps[0])))
}

/// `POST /apps`.
fn apps(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let req: AppReq = parse(body)?;
    let mut w = shared.world();
    let uri = req
        .redirect_uri
        .unwrap_or_else(|| "http://127.0.0.1/callback".to_owned());
    let i = w.add_app(&uri);
    Ok(ok(json!(w.apps[i])))
}

/// `POST /consent`.
fn consent(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let now = shared.clock.now_ms();
    let body = input.body;
    let req: ConsentReq = parse(body)?;
    let mut w = shared.world();
    let dj = match req.dj.as_deref() {
        Some(name) => match w.dj(Some(name)) {
            Ok(d) => d,
            Err(_) => w.add_dj(name),
        },
        None => 0,
    };
    let app = w
        .app_by_id(req.client_id.as_deref())
        .map_err(|e| Reply::control_error(404, &e))?;
    let scope = Scope::parse(req.scope.as_deref().unwrap_or(&Scope::FULL.to_string()));
    let redirect = req
        .redirect_uri
        .unwrap_or_else(|| w.apps[app].redirect_uri.clone());
    let code = oauth::consent(&mut w, app, dj, scope, &redirect, now);
    let integration = w.integration(app, dj);
    Ok(ok(json!({
        "code": code,
        "dj": w.djs[dj].name,
        "clientId": w.apps[app].client_id,
        "integration": w.integrations[integration].id,
        "botUserId": w.integrations[integration].bot_user_id,
        "scope": scope.to_string(),
        "redirectUri": redirect,
    })))
}

/// `POST /consent/narrow`.
fn consent_narrow(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let req: ConsentReq = parse(body)?;
    let mut w = shared.world();
    let t = Target {
        dj: req.dj,
        client_id: req.client_id,
    };
    let i = integration_of(&mut w, &t)?;
    let scope = Scope::parse(req.scope.as_deref().unwrap_or(""));
    let Some(current) = w.integrations[i].consent else {
        return Err(Reply::control_error(
            409,
            "no consent to narrow (disconnected or never consented)",
        ));
    };
    let narrowed = current.intersect(scope);
    w.integrations[i].consent = Some(narrowed);
    let id = w.integrations[i].id.clone();
    w.log(format!("consent of {id} narrowed to \"{narrowed}\""));
    Ok(ok(
        json!({"integration": id, "scope": narrowed.to_string()}),
    ))
}

/// `POST /integration/disconnect`.
fn integration_disconnect(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let now = shared.clock.now_ms();
    let body = input.body;
    let t: Target = parse(body)?;
    let mut w = shared.world();
    let i = integration_of(&mut w, &t)?;
    oauth::disconnect(&mut w, i, now);
    Ok(ok(
        json!({"integration": w.integrations[i].id, "disconnected": true}),
    ))
}

/// `POST /live/start`.
fn live_start(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let now = shared.clock.now_ms();
    let body = input.body;
    let req: LiveStartReq = parse(body)?;
    let mut w = shared.world();
    let dj = dj_of(&w, req.dj.as_deref())?;
    let live_id = w.live_start(dj, req.title, now);
    if let Some(live) = w.djs[dj].live.as_mut() {
        if let Some(m) = req.welcome_message {
            live.welcome_message = m;
        }
        if let Some(c) = req.categories {
            live.categories = c;
        }
        if let Some(t) = req.tags {
            live.tags = t;
        }
    }
    Ok(ok(json!({"liveId": live_id})))
}

/// `POST /live/end`.
fn live_end(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let t: Target = parse(body)?;
    let mut w = shared.world();
    let dj = dj_of(&w, t.dj.as_deref())?;
    let streams = w.open_streams(dj);
    let live_id = w.live_end(dj);
    Ok(ok(
        json!({"liveId": live_id, "ended": if live_id.is_some() { streams } else { 0 }}),
    ))
}

/// `POST /emit`.
fn emit(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let now = shared.clock.now_ms();
    let body = input.body;
    let req: EmitReq = parse(body)?;
    let Some(kind) = Kind::from_emit(&req.event) else {
        return Err(bad("event must be chat, presence, like or donation"));
    };
    let mut w = shared.world();
    let dj = dj_of(&w, req.dj.as_deref())?;
    match w.emit(dj, kind, &req.data, now) {
        Ok((id, delivered)) => Ok(ok(json!({"id": id, "delivered": delivered}))),
        Err(e) if w.djs[dj].live.is_none() => Err(Reply::control_error(409, &e)),
        Err(e) => Err(bad(e)),
    }
}

/// `POST /streams/end`.
fn streams_end(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let req: EndReq = parse(body)?;
    let reason: &'static str = match req.reason.as_str() {
        "RECONNECT" => "RECONNECT",
        "TOKEN_EXPIRED" => "TOKEN_EXPIRED",
        "LIVE_ENDED" => "LIVE_ENDED",
        _ => return Err(bad("reason must be RECONNECT, TOKEN_EXPIRED or LIVE_ENDED")),
    };
    let mut w = shared.world();
    let dj = dj_of(&w, req.dj.as_deref())?;
    let only = match req.client_id.as_deref() {
        Some(c) => Some(
            w.app_by_id(Some(c))
                .map_err(|e| Reply::control_error(404, &e))?,
        ),
        None => None,
    };
    let apps: Vec<usize> = w.integrations.iter().map(|i| i.app).collect();
    let ended = w.end_streams(dj, reason, |s| {
        only.is_none_or(|a| apps.get(s.integration) == Some(&a))
    });
    Ok(ok(json!({"ended": ended})))
}

/// `POST /streams/drop`.
fn streams_drop(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let t: Target = parse(body)?;
    let mut w = shared.world();
    let dj = dj_of(&w, t.dj.as_deref())?;
    let only = match t.client_id.as_deref() {
        Some(c) => Some(
            w.app_by_id(Some(c))
                .map_err(|e| Reply::control_error(404, &e))?,
        ),
        None => None,
    };
    let apps: Vec<usize> = w.integrations.iter().map(|i| i.app).collect();
    let dropped = w.drop_streams(dj, |s| {
        only.is_none_or(|a| apps.get(s.integration) == Some(&a))
    });
    Ok(ok(json!({"dropped": dropped})))
}

/// `POST /streams/stall`.
fn streams_stall(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let now = shared.clock.now_ms();
    let body = input.body;
    let req: StallReq = parse(body)?;
    if req
        .for_ms
        .is_some_and(|ms| !(0..=MAX_ADVANCE_MS).contains(&ms))
    {
        return Err(bad("forMs must be between 0 and ten years"));
    }
    let mut w = shared.world();
    let dj = dj_of(&w, req.dj.as_deref())?;
    let only = match req.client_id.as_deref() {
        Some(c) => Some(
            w.app_by_id(Some(c))
                .map_err(|e| Reply::control_error(404, &e))?,
        ),
        None => None,
    };
    let apps: Vec<usize> = w.integrations.iter().map(|i| i.app).collect();
    let stalled = w.stall_streams(
        dj,
        |s| only.is_none_or(|a| apps.get(s.integration) == Some(&a)),
        req.count.unwrap_or(usize::MAX),
        req.for_ms.map(|ms| now.saturating_add(ms)),
        now,
    );
    Ok(ok(json!({"stalled": stalled})))
}

/// `GET /state`.
fn state_get(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let query_dj = query_dj(input.query);
    let w = shared.world();
    let dj = dj_of(&w, query_dj.as_deref())?;
    Ok(ok(state_json(&w, dj)))
}

/// `POST /state`.
fn state_set(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let req: StateReq = parse(body)?;
    let mut w = shared.world();
    let dj = dj_of(&w, req.dj.as_deref())?;
    let was_kicked = w.djs[dj].bot_kicked;
    let d = &mut w.djs[dj];
    if let Some(v) = req.chat_frozen {
        d.chat_frozen = v;
    }
    if let Some(v) = req.bot_manager {
        d.bot_manager = v;
    }
    if let Some(v) = req.bot_chat_banned {
        d.bot_chat_banned = v;
    }
    if let Some(v) = req.bot_blocked {
        d.bot_blocked = v;
    }
    if let Some(v) = req.bot_kicked {
        d.bot_kicked = v;
    }
    if req.bot_kicked == Some(true) && !was_kicked {
        w.kick_bots(dj);
    }
    if req.bot_blocked == Some(true) {
        w.kick_bots(dj);
    }
    let s = state_json(&w, dj);
    w.log(format!("state: {s}"));
    Ok(ok(s))
}

/// `POST /quota`.
fn quota(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let req: crate::quota::QuotaUpdate = parse(body)?;
    let mut w = shared.world();
    w.quotas.update(req).map_err(bad)?;
    let c = &w.quotas.config;
    let per: serde_json::Map<String, Value> = c
        .per_permission
        .iter()
        .map(|(p, n)| (p.name().to_owned(), json!(n)))
        .collect();
    Ok(ok(json!({
        "perSecond": {"replenishRate": c.replenish_rate, "burstCapacity": c.burst_capacity},
        "daily": {"limit": c.daily_limit, "perPermission": per},
        "chatPerSecond": c.chat_per_second,
    })))
}

/// `POST /fail`.
fn fail(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let mut req: FailReq = parse(body)?;
    let _ = req.dj;
    let quota = fail_quota(&mut req)?;
    if !req.path.starts_with('/') || !(400..=599).contains(&req.status) {
        return Err(bad("path must start with / and status be 400..599"));
    }
    let mut w = shared.world();
    let times = req.times.unwrap_or(1);
    let detail = req.detail_code.or(match req.status {
        500 => Some("OAPI_MNGR_1002".to_owned()),
        502 => Some("OAPI_MNGR_2302".to_owned()),
        _ => None,
    });
    w.fails.push(Fail {
        path: req.path.clone(),
        status: req.status,
        detail_code: detail.clone(),
        times,
        quota,
    });
    let mut answer =
        json!({"path": req.path, "status": req.status, "detailCode": detail, "times": times});
    if let Some(q) = quota {
        answer["quota"] = json!(match q {
            FailQuota::PerSecond => "perSecond",
            FailQuota::Daily { .. } => "daily",
        });
        if let FailQuota::Daily { scope: Some(p) } = q {
            answer["scope"] = json!(p.name());
        }
    }
    Ok(ok(answer))
}

/// `POST /refire`.
fn refire(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let req: RefireReq = parse(body)?;
    if req.id.is_empty() {
        return Err(bad("id must name a frame (GET /frames lists them)"));
    }
    let mut w = shared.world();
    let dj = dj_of(&w, req.dj.as_deref())?;
    match w.refire(dj, &req.id) {
        Ok(delivered) => Ok(ok(json!({"id": req.id, "delivered": delivered}))),
        Err(RefireError::NotOnAir) => Err(Reply::control_error(409, "not on air")),
        Err(RefireError::Unknown) => Err(Reply::control_error(
            404,
            &format!(
                "no event {:?} of this broadcast among the latest kept (GET /frames lists the ids)",
                req.id
            ),
        )),
    }
}

/// `GET /chat`.
fn chat(shared: &Shared, _input: &Input<'_>) -> Result<Reply, Reply> {
    let w = shared.world();
    Ok(ok(json!({"messages": w.chat_log})))
}

/// `GET /requests`.
fn requests(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let query = input.query;
    let filter = crate::requests::RequestFilter::parse(query).map_err(bad)?;
    let w = shared.world();
    let requests: Vec<&crate::requests::RequestRecord> =
        w.requests.iter().filter(|r| filter.accepts(r)).collect();
    Ok(ok(json!({"total": w.request_count, "requests": requests})))
}

/// `GET /ledger`.
fn ledger(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let query = input.query;
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect();
    let param = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let w = shared.world();
    let dj = match param("dj") {
        Some(name) => Some(dj_of(&w, Some(name))?),
        None => None,
    };
    let mut ledger = w.ledger_of(dj);
    if let Some(client) = param("clientId") {
        for b in &mut ledger.broadcasts {
            b.bots.retain(|bot| bot.client_id == *client);
        }
    }
    Ok(ok(json!(ledger)))
}

/// `POST /mark`.
fn mark(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let now = shared.clock.now_ms();
    let body = input.body;
    let _: Target = parse(body)?;
    let w = shared.world();
    let write_seq = w.writes.mark();
    Ok(ok(json!({"writeSeq": write_seq, "nowMs": now})))
}

/// `GET /frames`.
fn frames(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let query = input.query;
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect();
    let param = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let since = match param("since") {
        Some(v) => v
            .parse::<u64>()
            .map_err(|_| bad("since must be a write number (0 or more)"))?,
        None => 0,
    };
    let w = shared.world();
    let dj = match param("dj") {
        Some(name) => Some(dj_of(&w, Some(name))?),
        None => None,
    };
    // Every frame numbered up to the mark is in its bot's list once
    // that bot's lock is taken: the list is exact up to it, and a
    // next call with `since` = this `writeSeq` misses nothing.
    let write_seq = w.writes.mark();
    let frames = w.frames(dj, param("clientId").map(String::as_str), since, write_seq);
    Ok(ok(json!({"writeSeq": write_seq, "frames": frames})))
}

/// `GET /djs`.
fn djs(shared: &Shared, _input: &Input<'_>) -> Result<Reply, Reply> {
    let w = shared.world();
    let djs: Vec<Value> = (0..w.djs.len()).map(|d| state_json(&w, d)).collect();
    Ok(ok(json!({"djs": djs})))
}

/// `GET /wire`.
fn wire_get(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let query_dj = query_dj(input.query);
    let w = shared.world();
    let dj = dj_of(&w, query_dj.as_deref())?;
    Ok(ok(wire_json(&w.djs[dj].wire)))
}

/// `POST /wire`.
fn wire_set(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let req: WireReq = parse(body)?;
    let mut w = shared.world();
    let dj = dj_of(&w, req.dj.as_deref())?;
    let p = req;
    let wire = &mut w.djs[dj].wire;
    if let Some(v) = p.line_ending {
        wire.line_ending = v;
    }
    if let Some(v) = p.chunk_bytes {
        wire.chunk_bytes = v;
    }
    if let Some(v) = p.bom {
        wire.bom = v;
    }
    if let Some(v) = p.space_after_colon {
        wire.space_after_colon = v;
    }
    if let Some(v) = p.comments {
        wire.comments = v;
    }
    if let Some(v) = p.unknown_fields {
        wire.unknown_fields = v;
    }
    if let Some(v) = p.unknown_events {
        wire.unknown_events = v;
    }
    if let Some(v) = p.fraction_digits {
        wire.fraction_digits = Some(v.min(9));
    }
    if let Some(v) = p.heartbeats {
        wire.heartbeats_off = !v;
    }
    Ok(ok(wire_json(&w.djs[dj].wire)))
}

/// `POST /ban`.
fn ban(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let req: BanReq = parse(body)?;
    let mut w = shared.world();
    let dj = dj_of(&w, req.dj.as_deref())?;
    let banned = req.banned.unwrap_or(true);
    let Some(live) = w.djs[dj].live.as_mut() else {
        return Err(Reply::control_error(409, "not on air"));
    };
    if banned {
        live.chat_banned.insert(req.user_id.clone());
    } else {
        live.chat_banned.remove(&req.user_id);
    }
    Ok(ok(json!({"userId": req.user_id, "banned": banned})))
}

/// `POST /app/suspend`.
fn app_suspend(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let req: SuspendReq = parse(body)?;
    let mut w = shared.world();
    let app = w
        .app_by_id(req.client_id.as_deref())
        .map_err(|e| Reply::control_error(404, &e))?;
    let suspended = req.suspended.unwrap_or(true);
    w.apps[app].suspended = suspended;
    let id = w.apps[app].client_id.clone();
    w.log(format!(
        "app {id} {}",
        if suspended { "suspended" } else { "reinstated" }
    ));
    Ok(ok(json!({"clientId": id, "suspended": suspended})))
}

/// `POST /leave`.
fn leave(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let body = input.body;
    let req: LeaveReq = parse(body)?;
    let mut w = shared.world();
    let dj = dj_of(&w, req.dj.as_deref())?;
    let left = w.leave(dj, &req.user_id);
    Ok(ok(json!({"left": left})))
}

/// `GET /fleet`: the fleet's settings and every DJ's plan and sessions
/// (`?dj=D`: one DJ's; `?onAir=true`: those on air); 404 when no fleet runs.
fn fleet(shared: &Shared, input: &Input<'_>) -> Result<Reply, Reply> {
    let mut dj = None;
    let mut only_on_air = false;
    let w = shared.world();
    for (k, v) in form_urlencoded::parse(input.query.unwrap_or("").as_bytes()) {
        match &*k {
            "dj" => dj = Some(dj_of(&w, Some(&v))?),
            "onAir" => only_on_air = v == "true",
            _ => {}
        }
    }
    crate::fleet::json(&w, dj, only_on_air)
        .map(ok)
        .ok_or_else(|| {
            Reply::control_error(404, "no fleet runs (onair serve --djs N --scenario fleet)")
        })
}
