//! The `Bot` machine (`onair_bot_bg.wasm`), and the helpers every part of
//! that module shares (errors, times, headers).

use onair::bot::DailyQuota;
use onair::json::{ActionJson, StopJson, TallyJson};
use onair::kit::{KitConfig, KitState, ReplyKind};
use onair::{BaseUrl, ClientCredentials, Misuse, RequestId, Timer, Tokens, User};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

// ---- errors -------------------------------------------------------------------

/// An error for the JS layer: `["name","kind","message"]` as a string.
pub(crate) fn error(name: &str, kind: &str, message: &str) -> JsValue {
    JsValue::from_str(&to_json(&[name, kind, message]))
}

/// A kit configuration refused: `ConfigError` of kind `kit`, with the key
/// (`["ConfigError","kit","message","commands[0].allowed"]`).
fn kit_config_error(e: &onair::kit::ConfigError) -> JsValue {
    JsValue::from_str(&to_json(&[
        "ConfigError",
        "kit",
        &e.to_string(),
        e.key.as_str(),
    ]))
}

/// An option of `new Bot` refused: `ConfigError` naming it
/// (`["ConfigError","invalid_base_url","onair: option baseUrl: …","baseUrl"]`).
fn option_error(kind: &str, key: &str, message: &str) -> JsValue {
    JsValue::from_str(&to_json(&[
        "ConfigError",
        kind,
        &format!("onair: option {key}: {message}"),
        key,
    ]))
}

pub(crate) fn misuse(e: Misuse) -> JsValue {
    let kind = match e {
        Misuse::UnknownRequest(_) => "unknown_request",
        Misuse::NotAStream(_) => "not_a_stream",
        Misuse::StreamNotStarted(_) => "stream_not_started",
        Misuse::NotConnecting => "not_connecting",
        Misuse::NotRefreshing => "not_refreshing",
        Misuse::TokenRequestInFlight => "token_request_in_flight",
        Misuse::NoTokenRequestInFlight => "no_token_request_in_flight",
        _ => "misuse",
    };
    error("MisuseError", kind, &e.to_string())
}

/// A value as JSON text (serializing plain values cannot fail).
pub(crate) fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// A JS number of milliseconds as `u64`.
pub(crate) fn ms(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        value as u64
    } else {
        0
    }
}

/// Response headers as JavaScript has them, read with `js-sys`: a fetch
/// `Headers` or any iterable of `[name, value]` pairs, or a plain object
/// (Node's `IncomingHttpHeaders`: an array value repeats the name; `null`
/// and `undefined` values are skipped). Values that are not strings are
/// written as JavaScript writes numbers and booleans; others are skipped.
pub(crate) fn headers(value: &JsValue) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if value.is_null() || value.is_undefined() {
        return out;
    }
    if let Ok(Some(entries)) = js_sys::try_iter(value) {
        for entry in entries.flatten() {
            let pair = js_sys::Array::from(&entry);
            if let (Some(name), Some(v)) = (text(&pair.get(0)), text(&pair.get(1))) {
                out.push((name, v));
            }
        }
    } else if value.is_object() {
        for entry in js_sys::Object::entries(value.unchecked_ref()).iter() {
            let pair = js_sys::Array::from(&entry);
            let (Some(name), v) = (text(&pair.get(0)), pair.get(1)) else {
                continue;
            };
            if js_sys::Array::is_array(&v) {
                for item in js_sys::Array::from(&v).iter() {
                    if let Some(v) = text(&item) {
                        out.push((name.clone(), v));
                    }
                }
            } else if let Some(v) = text(&v) {
                out.push((name, v));
            }
        }
    }
    out
}

/// A header name or value: a string, or a number or boolean as JS writes it.
fn text(value: &JsValue) -> Option<String> {
    if let Some(s) = value.as_string() {
        return Some(s);
    }
    if let Some(n) = value.as_f64() {
        return js_sys::Number::from(n)
            .to_string_with_radix(10)
            .ok()
            .map(String::from);
    }
    value.as_bool().map(|b| b.to_string())
}

/// Header pairs as the core takes them.
pub(crate) fn pairs(headers: &[(String, String)]) -> impl Iterator<Item = (&str, &str)> {
    headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))
}

// ---- the bot ------------------------------------------------------------------

/// The bot machine: `poll` answers one action as JSON.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Bot {
    inner: onair::Bot,
}

#[wasm_bindgen]
impl Bot {
    /// A bot for `base_url` with the app's credentials, resuming from
    /// `tokens` (the stored JSON of a `persistTokens` action) when given;
    /// `kit` is the kit's configuration as JSON (`KitConfig::from_json`),
    /// `kit_state` the stored state of a `persistState` action;
    /// `check_credentials` (default true) whether a bot resuming from tokens
    /// first checks the app's credentials (`BotConfig::check_credentials`).
    #[wasm_bindgen(constructor)]
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        base_url: &str,
        client_id: &str,
        client_secret: &str,
        tokens: Option<String>,
        seed: f64,
        events: Option<bool>,
        max_attempts: Option<u32>,
        request_timeout_ms: Option<f64>,
        max_queued_calls: Option<u32>,
        watchdog_ms: Option<f64>,
        kit: Option<String>,
        kit_state: Option<String>,
        check_credentials: Option<bool>,
        shutdown_grace_ms: Option<f64>,
    ) -> Result<Bot, JsValue> {
        let base = BaseUrl::new(base_url)
            .map_err(|e| option_error("invalid_base_url", "baseUrl", &e.to_string()))?;
        let credentials = ClientCredentials::new(client_id, client_secret).map_err(|e| {
            let key = match e {
                onair::CredentialsError::InvalidClientId => "clientId",
                _ => "clientSecret",
            };
            option_error("invalid_credentials", key, &e.to_string())
        })?;
        let saved = match tokens {
            Some(json) => Some(
                Tokens::from_json(json.as_bytes())
                    .map_err(|e| error("TokensError", load_error(&e), &e.to_string()))?,
            ),
            None => None,
        };
        let mut config = onair::BotConfig::new(base, credentials);
        if let Some(events) = events {
            config.events = events;
        }
        if let Some(n) = max_attempts {
            config.max_attempts = n;
        }
        if let Some(t) = request_timeout_ms {
            config.request_timeout_ms = ms(t);
        }
        if let Some(n) = max_queued_calls {
            config.max_queued_calls = n as usize;
        }
        if let Some(t) = watchdog_ms {
            config.stream.watchdog_ms = ms(t);
        }
        if let Some(check) = check_credentials {
            config.check_credentials = check;
        }
        if let Some(t) = shutdown_grace_ms {
            config.shutdown_grace_ms = ms(t);
        }
        if let Some(json) = kit {
            config.kit = KitConfig::from_json(&json).map_err(|e| kit_config_error(&e))?;
        }
        let state = match kit_state {
            Some(json) => Some(
                KitState::from_json(json.as_bytes())
                    .map_err(|e| error("StateError", "state", &e.to_string()))?,
            ),
            None => None,
        };
        let mut inner = onair::Bot::new(config, saved, ms(seed.abs().floor()));
        if let Some(state) = &state {
            inner = inner.with_kit_state(state);
        }
        Ok(Bot { inner })
    }

    /// The next action at `now_ms`, as JSON.
    pub fn poll(&mut self, now_ms: f64) -> String {
        ActionJson(&self.inner.poll(ms(now_ms))).to_line()
    }

    /// The complete response to a `send` action.
    #[wasm_bindgen(js_name = onResponse)]
    pub fn on_response(
        &mut self,
        id: f64,
        status: u16,
        headers: JsValue,
        body: &[u8],
        now_ms: f64,
    ) -> Result<(), JsValue> {
        let headers = self::headers(&headers);
        self.inner
            .on_response(RequestId(ms(id)), status, pairs(&headers), body, ms(now_ms))
            .map_err(misuse)
    }

    /// A request never left this machine (connection refused, DNS, TLS,
    /// connect timeout): nothing was spent. A consent code's exchange goes
    /// again while the code is fresh, a chat message may be sent again, a
    /// stream open is a failed connect.
    #[wasm_bindgen(js_name = onNotSent)]
    pub fn on_not_sent(&mut self, id: f64, now_ms: f64) -> Result<(), JsValue> {
        self.inner
            .on_not_sent(RequestId(ms(id)), ms(now_ms))
            .map_err(misuse)
    }

    /// A request got no response after it may have been sent (a reset, a
    /// lost connection): the outcome is unknown.
    #[wasm_bindgen(js_name = onTransportError)]
    pub fn on_transport_error(&mut self, id: f64, now_ms: f64) -> Result<(), JsValue> {
        self.inner
            .on_transport_error(RequestId(ms(id)), ms(now_ms))
            .map_err(misuse)
    }

    /// The status and headers of an `openStream` action.
    #[wasm_bindgen(js_name = onStreamOpen)]
    pub fn on_stream_open(
        &mut self,
        id: f64,
        status: u16,
        headers: JsValue,
        now_ms: f64,
    ) -> Result<(), JsValue> {
        let headers = self::headers(&headers);
        self.inner
            .on_stream_open(RequestId(ms(id)), status, pairs(&headers), ms(now_ms))
            .map_err(misuse)
    }

    /// A chunk of the stream's body.
    #[wasm_bindgen(js_name = onStreamBytes)]
    pub fn on_stream_bytes(&mut self, id: f64, chunk: &[u8], now_ms: f64) -> Result<(), JsValue> {
        self.inner
            .on_stream_bytes(RequestId(ms(id)), chunk, ms(now_ms))
            .map_err(misuse)
    }

    /// The stream connection ended.
    #[wasm_bindgen(js_name = onStreamClosed)]
    pub fn on_stream_closed(&mut self, id: f64, now_ms: f64) -> Result<(), JsValue> {
        self.inner
            .on_stream_closed(RequestId(ms(id)), ms(now_ms))
            .map_err(misuse)
    }

    /// Exchanges a consent code.
    pub fn authorize(&mut self, code: &str, redirect_uri: &str) {
        self.inner.authorize(code, redirect_uri);
    }

    /// Queues a chat message; its call id.
    #[wasm_bindgen(js_name = sendChat)]
    pub fn send_chat(&mut self, message: &str) -> Result<f64, JsValue> {
        chat(self.inner.send_chat(message))
    }

    /// Queues a reply split between grapheme clusters; one call id per part.
    pub fn say(&mut self, text: &str) -> js_sys::Array {
        self.inner
            .say(text)
            .into_iter()
            .map(|id| JsValue::from_f64(id.0 as f64))
            .collect()
    }

    /// Queues a reply of `kind` (`welcome`, `welcome_back`, `thanks`,
    /// `milestone`, `command`) naming one person (`Bot::reply`): alone it
    /// goes out as written; waiting with others of a mergeable kind, one
    /// message names them all. `text` must be one chat message.
    pub fn reply(
        &mut self,
        kind: &str,
        user_id: &str,
        nickname: Option<String>,
        text: &str,
    ) -> Result<(), JsValue> {
        let kind = ReplyKind::from_name(kind).ok_or_else(|| {
            let names: Vec<&str> = ReplyKind::ALL.iter().map(|k| k.as_str()).collect();
            error(
                "CallError",
                "unknown_reply_kind",
                &format!("onair: the reply kind must be one of {}", names.join(", ")),
            )
        })?;
        let user = User {
            id: user_id.to_owned(),
            nickname,
        };
        self.inner
            .reply(kind, &user, text)
            .map_err(|e| error("CallError", e.kind.code(), &e.to_string()))
    }

    /// The configured kit's current broadcast as JSON
    /// (`{"liveId":…,"tally":{…}}`), or `undefined` without a kit.
    #[wasm_bindgen(js_name = kitJson)]
    pub fn kit_json(&self) -> Option<String> {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct KitView<'a> {
            live_id: Option<u64>,
            tally: TallyJson<'a>,
        }
        self.inner.kit().map(|kit| {
            to_json(&KitView {
                live_id: kit.live_id(),
                tally: TallyJson(kit.tally()),
            })
        })
    }

    /// The configured kit's state now (the stored form), or `undefined`.
    #[wasm_bindgen(js_name = kitState)]
    pub fn kit_state(&self) -> Option<String> {
        self.inner.kit().map(|kit| kit.state().to_json().to_owned())
    }

    /// Queues `GET /v1/live`; its call id.
    #[wasm_bindgen(js_name = fetchBroadcast)]
    pub fn fetch_broadcast(&mut self) -> f64 {
        self.inner.fetch_broadcast().0 as f64
    }

    /// Queues the listener list; its call id.
    #[wasm_bindgen(js_name = listListeners)]
    pub fn list_listeners(&mut self) -> f64 {
        self.inner.list_listeners().0 as f64
    }

    /// Queues `GET /v1/live/fans`; its call id.
    #[wasm_bindgen(js_name = fetchFans)]
    pub fn fetch_fans(&mut self) -> f64 {
        self.inner.fetch_fans().0 as f64
    }

    /// Reconnects the stream at once.
    #[wasm_bindgen(js_name = requestReconnect)]
    pub fn request_reconnect(&mut self, now_ms: f64) {
        self.inner.request_reconnect(ms(now_ms));
    }

    /// Fires a `timer` action with `tag` once at `at_ms`.
    pub fn schedule(&mut self, at_ms: f64, tag: &str) -> Result<(), JsValue> {
        self.inner.schedule(ms(at_ms), tag).map_err(timer_error)
    }

    /// Fires a `timer` action with `tag` every `period_ms`, first at
    /// `first_at_ms`; with `while_connected`, only while the stream is
    /// connected (`Timer::while_connected`).
    pub fn every(
        &mut self,
        period_ms: f64,
        tag: &str,
        first_at_ms: f64,
        while_connected: Option<bool>,
    ) -> Result<(), JsValue> {
        let mut timer = Timer::every(ms(period_ms), ms(first_at_ms));
        if while_connected == Some(true) {
            timer = timer.while_connected();
        }
        self.inner.set_timer(tag, timer).map_err(timer_error)
    }

    /// Cancels the timer `tag`; `false` when there was none.
    #[wasm_bindgen(js_name = cancelTimer)]
    pub fn cancel_timer(&mut self, tag: &str) -> bool {
        self.inner.cancel_timer(tag)
    }

    /// Stops the bot (with `revoke`, the tokens are revoked).
    pub fn shutdown(&mut self, revoke: bool) {
        self.inner.shutdown(revoke);
    }

    /// Why the bot stopped, as JSON, or `undefined`.
    #[wasm_bindgen(js_name = stopJson)]
    pub fn stop_json(&self) -> Option<String> {
        self.inner.stop().map(|s| StopJson(s).to_line())
    }

    /// The stop a driver ends its run with when no new consent comes, as
    /// JSON: the bot's `reauthorize` stop, or, while it waits for its first
    /// consent (no tokens), a `reauthorize` stop "not authorized yet";
    /// `undefined` when the bot needs no consent.
    #[wasm_bindgen(js_name = consentStopJson)]
    pub fn consent_stop_json(&self) -> Option<String> {
        self.inner
            .consent_stop()
            .map(|stop| StopJson(&stop).to_line())
    }

    /// A snapshot for dashboards and logs, as JSON (the core's `Status`).
    #[wasm_bindgen(js_name = statusJson)]
    pub fn status_json(&self, now_ms: f64) -> String {
        self.inner.status(ms(now_ms)).to_json()
    }

    /// What this bot knows of the app's daily quota, as JSON
    /// (`{"remaining":…,"resetMs":…,"blocks":[…]}`, the core's `DailyQuota`).
    #[wasm_bindgen(js_name = dailyQuotaJson)]
    pub fn daily_quota_json(&self, now_ms: f64) -> String {
        to_json(&self.inner.daily_quota(ms(now_ms)))
    }

    /// Takes the app's daily quota as its other bots learned it (the JSON of
    /// `dailyQuotaJson` or `mergeDailyQuota`): calls it blocks wait for the
    /// reset. Not a daily quota's JSON object: `OnairError` `invalid_argument`.
    #[wasm_bindgen(js_name = shareDailyQuotaJson)]
    pub fn share_daily_quota_json(&mut self, json: &str, now_ms: f64) -> Result<(), JsValue> {
        let shared = daily_quota(json)?;
        self.inner.share_daily_quota(&shared, ms(now_ms));
        Ok(())
    }

    /// App calls queued and not yet answered.
    #[wasm_bindgen(js_name = pendingCalls)]
    pub fn pending_calls(&self) -> u32 {
        u32::try_from(self.inner.pending_calls()).unwrap_or(u32::MAX)
    }

    /// The current token pair in its stored form, or `undefined`.
    #[wasm_bindgen(js_name = tokensJson)]
    pub fn tokens_json(&self) -> Option<String> {
        self.inner
            .token_pair()
            .map(|t| t.to_json().as_str().to_owned())
    }
}

/// A daily quota's JSON object (every key optional; empty text is nothing
/// known), else `OnairError` `invalid_argument` saying why.
fn daily_quota(json: &str) -> Result<DailyQuota, JsValue> {
    DailyQuota::from_json(json).map_err(|why| {
        error(
            "OnairError",
            "invalid_argument",
            &format!("onair: daily quota: {why}"),
        )
    })
}

/// Merges what one bot `learned` of the app's daily quota into the app's
/// view `app` (both JSON; `app` empty when nothing is known yet) at
/// `now_ms`: the core's `DailyQuota::merge` (the later reset wins with its
/// count, the same reset keeps the lower count, blocks merge by scope, what
/// has passed is dropped). The merged view as JSON.
#[wasm_bindgen(js_name = mergeDailyQuota)]
pub fn merge_daily_quota(app: &str, learned: &str, now_ms: f64) -> Result<String, JsValue> {
    let mut app = daily_quota(app)?;
    app.merge(&daily_quota(learned)?, ms(now_ms));
    Ok(to_json(&app))
}

pub(crate) fn timer_error(e: onair::TimerError) -> JsValue {
    use onair::TimerError;
    let kind = match e {
        TimerError::TooMany => "too_many",
        TimerError::BadTag(_) => "bad_tag",
        TimerError::ZeroPeriod => "zero_period",
        _ => "timer",
    };
    error("TimerError", kind, &e.to_string())
}

fn load_error(e: &onair::LoadError) -> &'static str {
    use onair::LoadError;
    match e {
        LoadError::Json { .. } => "json",
        LoadError::UnknownFormat => "unknown_format",
        LoadError::UnsupportedVersion(_) => "unsupported_version",
        LoadError::Invalid(_) => "invalid",
        _ => "invalid",
    }
}

/// A chat message the server would refuse: `CallError` with its kind
/// (`chat_empty`, `chat_too_long`); nothing was queued.
fn chat(result: Result<onair::CallId, onair::ChatError>) -> Result<f64, JsValue> {
    match result {
        Ok(id) => Ok(id.0 as f64),
        Err(e) => Err(error("CallError", e.kind.code(), &e.to_string())),
    }
}
