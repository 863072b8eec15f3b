//! # onair-wasm — the WebAssembly layer of onair, for Node
//!
//! A thin wasm-bindgen layer over the `onair` core: every rule of the
//! service lives in the core; this crate only moves values across the
//! boundary. It is built with `wasm-pack build --target nodejs` and wrapped
//! by the hand-written JavaScript of `wasm/npm/` (`index.js`, `index.d.ts`),
//! which is the package's API: JS idiom, plain objects, `Error` subclasses.
//!
//! Values cross as JSON text in the core's one wire form
//! ([`onair::json`]): a stream item is an [`ItemJson`], an action an
//! [`ActionJson`], a stop a [`StopJson`], a tally a [`TallyJson`]. A batch of
//! items crosses as one JSON array (one string, one `JSON.parse`), which
//! measured faster than building objects field by field through js-sys.
//!
//! Errors cross as a JSON string `{"name","kind","message"}` that the JS
//! layer turns into the matching `Error` subclass.
//!
//! Times are unix milliseconds as JS numbers (`Date.now()`), converted to
//! `u64` here (negative and NaN become 0).

use onair::endpoint::Endpoint;
use onair::event::{Event, Item};
use onair::json::{ActionJson, ItemJson, StopJson, TallyJson};
use onair::kit::audience::{Audience as CoreAudience, Greeting};
use onair::kit::commands::{Allowed, Commands as CoreCommands, Role};
use onair::kit::milestones::{Milestone, Milestones as CoreMilestones};
use onair::oauth::Tokens;
use onair::problem::classify as core_classify;
use onair::sse;
use onair::tally::Tally as CoreTally;
use onair::{BaseUrl, ClientCredentials, Misuse, RequestId};
use serde::ser::SerializeMap;
use serde::Serializer;
use wasm_bindgen::prelude::*;

mod tape;

// ---- errors -------------------------------------------------------------------

/// An error for the JS layer: `{"name","kind","message"}` as a string.
fn error(name: &str, kind: &str, message: &str) -> JsValue {
    let json = serde_json::json!({ "name": name, "kind": kind, "message": message });
    JsValue::from_str(&json.to_string())
}

fn misuse(e: Misuse) -> JsValue {
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

/// A JS number of milliseconds as `u64`.
fn ms(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        value as u64
    } else {
        0
    }
}

/// Headers arrive flattened: `[name, value, name, value, …]`.
fn pairs(flat: &[String]) -> impl Iterator<Item = (&str, &str)> {
    flat.chunks_exact(2)
        .map(|pair| (pair[0].as_str(), pair[1].as_str()))
}

/// A typed event from the `event` and `data` of an event object (the JS
/// layer passes `data` as JSON text).
fn event_from(name: &str, data: &str) -> Option<Event> {
    Event::decode(name, data).ok().flatten()
}

// ---- decoder ------------------------------------------------------------------

/// SSE framing plus typed decoding: bytes in, a JSON array of items out.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Decoder {
    inner: onair::Decoder,
    out: Vec<u8>,
    tape: tape::Tape,
}

#[wasm_bindgen]
impl Decoder {
    /// A decoder; `max_frame_bytes` caps one frame (default 256 KiB).
    #[wasm_bindgen(constructor)]
    pub fn new(max_frame_bytes: Option<u32>) -> Decoder {
        let parser = match max_frame_bytes {
            Some(cap) => sse::Parser::with_max_frame_bytes(cap as usize),
            None => sse::Parser::new(),
        };
        Decoder {
            inner: onair::Decoder::with_parser(parser),
            out: Vec::with_capacity(4096),
            tape: tape::Tape::default(),
        }
    }

    /// Decodes a chunk of bytes onto the tape (the fast path): returns its
    /// numbers; its text follows from [`Decoder::text`].
    pub fn push(&mut self, chunk: &[u8]) -> Vec<f64> {
        self.tape.clear();
        for item in self.inner.items(chunk) {
            self.tape.item(&item);
        }
        std::mem::take(&mut self.tape.nums)
    }

    /// The text of the last [`Decoder::push`] (its strings, concatenated).
    pub fn text(&mut self) -> String {
        std::mem::take(&mut self.tape.text)
    }

    /// Decodes a chunk of bytes; the items as a JSON array (the reference
    /// the tape is tested against).
    #[wasm_bindgen(js_name = pushJson)]
    pub fn push_json(&mut self, chunk: &[u8]) -> String {
        self.out.clear();
        self.out.push(b'[');
        let mut chunk = onair::sse::Chunk::new(chunk);
        while let Some(item) = self.inner.next_item_in(&mut chunk) {
            self.write(&item);
        }
        self.close()
    }

    /// Decodes a chunk of text onto the tape.
    #[wasm_bindgen(js_name = pushText)]
    pub fn push_text(&mut self, chunk: &str) -> Vec<f64> {
        self.push(chunk.as_bytes())
    }

    /// Ends the stream: `[]`, or an `incomplete_frame` error when a frame
    /// was pending.
    pub fn finish(&mut self) -> String {
        self.out.clear();
        self.out.push(b'[');
        if let Some(item) = self.inner.finish() {
            self.write(&item);
        }
        self.close()
    }

    fn write(&mut self, item: &Item) {
        if self.out.len() > 1 {
            self.out.push(b',');
        }
        // Maps of strings and numbers always serialize.
        let _ = serde_json::to_writer(&mut self.out, &ItemJson(item));
    }

    fn close(&mut self) -> String {
        self.out.push(b']');
        String::from_utf8(std::mem::take(&mut self.out)).unwrap_or_else(|_| "[]".to_owned())
    }
}

// ---- classification -----------------------------------------------------------

/// Classifies one response of `endpoint` (`token`, `revoke`, `live`,
/// `listeners`, `fans`, `events`, `chat`); the `onair explain` object as
/// JSON. `now_ms` turns an HTTP-date `Retry-After` into a delay.
#[wasm_bindgen]
pub fn classify(
    endpoint: &str,
    status: u16,
    headers: Vec<String>,
    body: &[u8],
    now_ms: Option<f64>,
) -> Result<String, JsValue> {
    let endpoint = Endpoint::from_name(endpoint).ok_or_else(|| {
        error(
            "OnairError",
            "unknown_endpoint",
            &format!("unknown endpoint {endpoint:?}"),
        )
    })?;
    let problem = core_classify(endpoint, status, pairs(&headers), body);
    serde_json::to_string(&problem.explain(now_ms.map(ms)))
        .map_err(|e| error("OnairError", "json", &e.to_string()))
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
    /// `tokens` (the stored JSON of a `persistTokens` action) when given.
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
    ) -> Result<Bot, JsValue> {
        let base = BaseUrl::new(base_url)
            .map_err(|e| error("ConfigError", "invalid_base_url", &e.to_string()))?;
        let credentials = ClientCredentials::new(client_id, client_secret)
            .map_err(|e| error("ConfigError", "invalid_credentials", &e.to_string()))?;
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
        Ok(Bot {
            inner: onair::Bot::new(config, saved, ms(seed.abs().floor())),
        })
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
        headers: Vec<String>,
        body: &[u8],
        now_ms: f64,
    ) -> Result<(), JsValue> {
        self.inner
            .on_response(RequestId(ms(id)), status, pairs(&headers), body, ms(now_ms))
            .map_err(misuse)
    }

    /// A request got no response (connect error, reset).
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
        headers: Vec<String>,
        now_ms: f64,
    ) -> Result<(), JsValue> {
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
        call(self.inner.send_chat(message))
    }

    /// Queues `GET /v1/live`; its call id.
    #[wasm_bindgen(js_name = fetchBroadcast)]
    pub fn fetch_broadcast(&mut self) -> Result<f64, JsValue> {
        call(self.inner.fetch_broadcast())
    }

    /// Queues the listener list; its call id.
    #[wasm_bindgen(js_name = listListeners)]
    pub fn list_listeners(&mut self) -> Result<f64, JsValue> {
        call(self.inner.list_listeners())
    }

    /// Queues `GET /v1/live/fans`; its call id.
    #[wasm_bindgen(js_name = fetchFans)]
    pub fn fetch_fans(&mut self) -> Result<f64, JsValue> {
        call(self.inner.fetch_fans())
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

    /// Fires a `timer` action with `tag` every `period_ms`, first at `first_at_ms`.
    pub fn every(&mut self, period_ms: f64, tag: &str, first_at_ms: f64) -> Result<(), JsValue> {
        self.inner
            .every(ms(period_ms), tag, ms(first_at_ms))
            .map_err(timer_error)
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
        self.inner
            .stop()
            .map(|s| serde_json::to_string(&StopJson(s)).unwrap_or_default())
    }

    /// A snapshot for dashboards and logs, as JSON (the core's `Status`).
    #[wasm_bindgen(js_name = statusJson)]
    pub fn status_json(&self, now_ms: f64) -> String {
        self.inner.status(ms(now_ms)).to_json()
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
            .tokens()
            .tokens()
            .map(|t| t.to_json().as_str().to_owned())
    }
}

fn timer_error(e: onair::timers::TimerError) -> JsValue {
    use onair::timers::TimerError;
    let kind = match e {
        TimerError::TooMany => "too_many",
        TimerError::BadTag(_) => "bad_tag",
        TimerError::ZeroPeriod => "zero_period",
        _ => "timer",
    };
    error("TimerError", kind, &e.to_string())
}

fn load_error(e: &onair::oauth::LoadError) -> &'static str {
    use onair::oauth::LoadError;
    match e {
        LoadError::Json { .. } => "json",
        LoadError::UnknownFormat => "unknown_format",
        LoadError::UnsupportedVersion(_) => "unsupported_version",
        LoadError::Invalid(_) => "invalid",
        _ => "invalid",
    }
}

fn call(result: Result<onair::CallId, onair::CallError>) -> Result<f64, JsValue> {
    match result {
        Ok(id) => Ok(id.0 as f64),
        Err(e) => {
            let kind = match &e {
                onair::CallError::Chat(chat) => chat.kind.code(),
                onair::CallError::QueueFull { .. } => "queue_full",
                onair::CallError::Stopped(_) => "stopped",
                _ => "call",
            };
            Err(error("CallError", kind, &e.to_string()))
        }
    }
}

// ---- tally --------------------------------------------------------------------

/// Per-broadcast totals by person.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Tally {
    inner: CoreTally,
}

impl Default for Tally {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen]
impl Tally {
    /// An empty tally.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Tally {
        Tally {
            inner: CoreTally::new(),
        }
    }

    /// Ties the tally to a broadcast; `true` when it started over.
    #[wasm_bindgen(js_name = startBroadcast)]
    pub fn start_broadcast(&mut self, live_id: f64) -> bool {
        self.inner.start_broadcast(ms(live_id))
    }

    /// Counts one event (`event` name, `data` as JSON text); `false` when
    /// it did not decode.
    pub fn record(&mut self, event: &str, data: &str) -> bool {
        match event_from(event, data) {
            Some(e) => {
                self.inner.record(&e);
                true
            }
            None => false,
        }
    }

    /// The totals as JSON (the ledger's shape).
    #[wasm_bindgen(js_name = toJson)]
    pub fn to_json(&self) -> String {
        TallyJson(&self.inner).to_line()
    }
}

// ---- kit ----------------------------------------------------------------------

/// Splits chat text into messages the service takes (grapheme-safe).
#[wasm_bindgen(js_name = splitChat)]
pub fn split_chat(text: &str) -> Vec<String> {
    onair::kit::text::split(text)
}

/// Truncates text to `limit` UTF-16 units at a grapheme boundary.
#[wasm_bindgen(js_name = truncateChat)]
pub fn truncate_chat(text: &str, limit: Option<u32>, ellipsis: &str) -> String {
    // Without a limit, the service's own: the core's CHAT_MAX_UTF16.
    let limit = limit.map_or(onair::chat::CHAT_MAX_UTF16, |l| l as usize);
    onair::kit::text::truncate(text, limit, ellipsis)
}

/// Splits command arguments (quotes group words).
#[wasm_bindgen(js_name = splitArgs)]
pub fn split_args(text: &str) -> Vec<String> {
    onair::kit::commands::split_args(text)
}

/// Greet-once / welcome-back memory of one broadcast's audience.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Audience {
    inner: CoreAudience,
}

impl Default for Audience {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen]
impl Audience {
    /// An empty audience.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Audience {
        Audience {
            inner: CoreAudience::new(),
        }
    }

    /// Loads a stored audience (its `toJson`).
    #[wasm_bindgen(js_name = fromJson)]
    pub fn from_json(json: &str) -> Result<Audience, JsValue> {
        CoreAudience::from_json(json)
            .map(|inner| Audience { inner })
            .map_err(|e| error("StateError", "state", &e.to_string()))
    }

    /// The stored form.
    #[wasm_bindgen(js_name = toJson)]
    pub fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// Starts a broadcast; `true` when it is a new one.
    #[wasm_bindgen(js_name = startBroadcast)]
    pub fn start_broadcast(&mut self, live_id: f64) -> bool {
        self.inner.start_broadcast(ms(live_id))
    }

    /// Ends the broadcast.
    #[wasm_bindgen(js_name = endBroadcast)]
    pub fn end_broadcast(&mut self) {
        self.inner.end_broadcast();
    }

    /// Feeds one event; a greeting as JSON
    /// (`{"greeting":"first"|"welcomeBack","presence":{…}}`), or `undefined`.
    #[wasm_bindgen(js_name = onEvent)]
    pub fn on_event(&mut self, event: &str, data: &str) -> Option<String> {
        let greeting = self.inner.on_event(&event_from(event, data)?)?;
        let kind = match &greeting {
            Greeting::First(_) => "first",
            Greeting::WelcomeBack(_) => "welcomeBack",
        };
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::new(&mut out);
        let mut map = ser.serialize_map(Some(2)).ok()?;
        map.serialize_entry("greeting", kind).ok()?;
        map.serialize_entry("presence", greeting.presence()).ok()?;
        map.end().ok()?;
        String::from_utf8(out).ok()
    }

    /// Whether the person is in the broadcast now.
    #[wasm_bindgen(js_name = isPresent)]
    pub fn is_present(&self, id: &str) -> bool {
        self.inner.is_present(id)
    }

    /// Whether the person is a manager.
    #[wasm_bindgen(js_name = isManager)]
    pub fn is_manager(&self, id: &str) -> bool {
        self.inner.is_manager(id)
    }

    /// People remembered.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> u32 {
        u32::try_from(self.inner.len()).unwrap_or(u32::MAX)
    }
}

/// Heart and donation milestones, running donor totals.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Milestones {
    inner: CoreMilestones,
}

#[wasm_bindgen]
impl Milestones {
    /// Milestones every `hearts_every` hearts and `donations_every` units
    /// donated by one person (0: none).
    #[wasm_bindgen(constructor)]
    pub fn new(hearts_every: f64, donations_every: f64) -> Milestones {
        let mut inner = CoreMilestones::new();
        if hearts_every >= 1.0 {
            inner = inner.hearts_every(ms(hearts_every));
        }
        if donations_every >= 1.0 {
            inner = inner.donations_every(ms(donations_every));
        }
        Milestones { inner }
    }

    /// Starts a broadcast; `true` when it is a new one.
    #[wasm_bindgen(js_name = startBroadcast)]
    pub fn start_broadcast(&mut self, live_id: f64) -> bool {
        self.inner.start_broadcast(ms(live_id))
    }

    /// Feeds one event; a milestone as JSON, or `undefined`:
    /// `{"milestone":"hearts","reached","total"}` or
    /// `{"milestone":"donated","user","reached","total"}`.
    #[wasm_bindgen(js_name = onEvent)]
    pub fn on_event(&mut self, event: &str, data: &str) -> Option<String> {
        let json = match self.inner.on_event(&event_from(event, data)?)? {
            Milestone::Hearts { reached, total } => {
                serde_json::json!({"milestone": "hearts", "reached": reached, "total": total})
            }
            Milestone::Donated {
                user,
                reached,
                total,
            } => serde_json::json!({
                "milestone": "donated", "user": user, "reached": reached, "total": total
            }),
        };
        Some(json.to_string())
    }

    /// Hearts this broadcast.
    #[wasm_bindgen(getter)]
    pub fn hearts(&self) -> f64 {
        self.inner.hearts() as f64
    }

    /// Donated this broadcast.
    #[wasm_bindgen(getter, js_name = totalDonated)]
    pub fn total_donated(&self) -> f64 {
        self.inner.total_donated() as f64
    }

    /// What one person donated this broadcast.
    #[wasm_bindgen(js_name = donatedBy)]
    pub fn donated_by(&self, id: &str) -> f64 {
        self.inner.donated_by(id) as f64
    }

    /// The stored form.
    #[wasm_bindgen(js_name = toJson)]
    pub fn to_json(&self) -> String {
        self.inner.to_json()
    }
}

/// Chat commands: `!name args`, who may run them.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Commands {
    inner: CoreCommands,
}

impl Default for Commands {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen]
impl Commands {
    /// No commands yet, prefix `!`.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Commands {
        Commands {
            inner: CoreCommands::new(),
        }
    }

    /// Adds a command; `allowed`: `anyone`, `managers` or `dj`.
    pub fn add(&mut self, name: &str, allowed: &str) -> Result<(), JsValue> {
        let allowed = match allowed {
            "anyone" => Allowed::Anyone,
            "managers" => Allowed::Managers,
            "dj" => Allowed::Dj,
            other => {
                return Err(error(
                    "OnairError",
                    "invalid_allowed",
                    &format!("allowed must be anyone, managers or dj, not {other:?}"),
                ))
            }
        };
        let inner = std::mem::take(&mut self.inner);
        self.inner = inner.command(name, allowed);
        Ok(())
    }

    /// Sets the prefix (replacing `!`).
    pub fn prefix(&mut self, prefix: &str) {
        let inner = std::mem::take(&mut self.inner);
        self.inner = inner.prefix(prefix);
    }

    /// The bot's own id (its chat is ignored).
    #[wasm_bindgen(js_name = ownId)]
    pub fn own_id(&mut self, id: &str) {
        let inner = std::mem::take(&mut self.inner);
        self.inner = inner.own_id(id);
    }

    /// Matches a chat event (`data` as JSON text) against the commands, with
    /// the audience's managers; JSON or `undefined`:
    /// `{"ok":true,"name","args","rest","user","role"}` or
    /// `{"ok":false,"name","needed","user","role"}`.
    #[wasm_bindgen(js_name = matchChat)]
    pub fn match_chat(&self, data: &str, audience: &Audience) -> Option<String> {
        let Some(Event::Chat(chat)) = event_from("chat", data) else {
            return None;
        };
        let json = match self.inner.match_chat(&chat, &audience.inner)? {
            Ok(inv) => serde_json::json!({
                "ok": true, "name": inv.name, "args": inv.args, "rest": inv.rest,
                "user": inv.user, "role": role(inv.role),
            }),
            Err(denied) => serde_json::json!({
                "ok": false, "name": denied.name, "needed": allowed(denied.needed),
                "user": denied.user, "role": role(denied.role),
            }),
        };
        Some(json.to_string())
    }
}

fn role(role: Role) -> &'static str {
    match role {
        Role::Listener => "listener",
        Role::Manager => "manager",
        Role::Dj => "dj",
    }
}

fn allowed(allowed: Allowed) -> &'static str {
    match allowed {
        Allowed::Anyone => "anyone",
        Allowed::Managers => "managers",
        Allowed::Dj => "dj",
    }
}

// ---- request builders, response decoders, backoff ------------------------------

fn base_url(url: &str) -> Result<BaseUrl, JsValue> {
    BaseUrl::new(url).map_err(|e| error("ConfigError", "invalid_base_url", &e.to_string()))
}

fn request_json(
    result: Result<onair::HttpRequest, onair::api::RequestError>,
) -> Result<String, JsValue> {
    match result {
        Ok(request) => serde_json::to_string(&onair::json::RequestJson(&request))
            .map_err(|e| error("OnairError", "json", &e.to_string())),
        Err(e) => Err(error("RequestError", e.code(), &e.to_string())),
    }
}

/// Builds the request of a bearer endpoint (`live`, `listeners`, `fans`,
/// `events`, `chat`) as a request JSON; `arg` is the listeners cursor or the
/// chat message.
#[wasm_bindgen(js_name = buildRequest)]
pub fn build_request(
    endpoint: &str,
    base: &str,
    access_token: &str,
    arg: Option<String>,
) -> Result<String, JsValue> {
    let base = base_url(base)?;
    let token = onair::Secret::new(access_token);
    let result = match endpoint {
        "live" => onair::api::live(&base, &token),
        "listeners" => onair::api::listeners(&base, &token, arg.as_deref()),
        "fans" => onair::api::fans(&base, &token),
        "events" => onair::api::events(&base, &token),
        "chat" => onair::api::chat(&base, &token, arg.as_deref().unwrap_or_default()),
        other => {
            return Err(error(
                "OnairError",
                "unknown_endpoint",
                &format!("no bearer request for endpoint {other:?}"),
            ))
        }
    };
    request_json(result)
}

/// Builds a token-endpoint request: `issue` (arg: code, arg2: redirect URI),
/// `refresh` (arg: refresh token) or `revoke` (arg: token).
#[wasm_bindgen(js_name = buildTokenRequest)]
pub fn build_token_request(
    kind: &str,
    base: &str,
    client_id: &str,
    client_secret: &str,
    arg: &str,
    arg2: Option<String>,
) -> Result<String, JsValue> {
    let credentials = ClientCredentials::new(client_id, client_secret)
        .map_err(|e| error("ConfigError", "invalid_credentials", &e.to_string()))?;
    let client = onair::api::TokenClient::new(base_url(base)?, credentials);
    let result = match kind {
        "issue" => client.issue(arg, arg2.as_deref().unwrap_or_default()),
        "refresh" => client.refresh(&onair::Secret::new(arg)),
        "revoke" => client.revoke(&onair::Secret::new(arg), None),
        other => {
            return Err(error(
                "OnairError",
                "unknown_request",
                &format!("no token request {other:?}"),
            ))
        }
    };
    request_json(result)
}

/// Decodes a 2xx body of `live`, `listeners` (one page) or `fans` as JSON.
#[wasm_bindgen(js_name = decodeBody)]
pub fn decode_body(endpoint: &str, body: &[u8]) -> Result<String, JsValue> {
    fn out<T: serde::Serialize>(
        r: Result<T, onair::api::ResponseError>,
    ) -> Result<String, JsValue> {
        match r {
            Ok(v) => {
                serde_json::to_string(&v).map_err(|e| error("OnairError", "json", &e.to_string()))
            }
            Err(e) => Err(error("ResponseError", e.kind.code(), &e.to_string())),
        }
    }
    match endpoint {
        "live" => out(onair::api::decode_broadcast(body)),
        "listeners" => out(onair::api::decode_listeners(body)),
        "fans" => out(onair::api::decode_fans(body)),
        other => Err(error(
            "OnairError",
            "unknown_endpoint",
            &format!("no body decoder for endpoint {other:?}"),
        )),
    }
}

/// Jittered exponential backoff (1 s doubling to 30 s, full jitter), seeded.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Backoff {
    inner: onair::backoff::Backoff,
}

#[wasm_bindgen]
impl Backoff {
    /// A backoff with the spec's limits, or `base_ms`/`cap_ms` when given.
    #[wasm_bindgen(constructor)]
    pub fn new(seed: f64, base_ms: Option<f64>, cap_ms: Option<f64>) -> Backoff {
        let seed = ms(seed.abs().floor());
        let inner = match (base_ms, cap_ms) {
            (None, None) => onair::backoff::Backoff::new(seed),
            (b, c) => onair::backoff::Backoff::with_limits(
                b.map_or(onair::backoff::Backoff::BASE_MS, ms),
                c.map_or(onair::backoff::Backoff::CAP_MS, ms),
                seed,
            ),
        };
        Backoff { inner }
    }

    /// The next delay in milliseconds.
    #[wasm_bindgen(js_name = nextDelayMs)]
    pub fn next_delay_ms(&mut self) -> f64 {
        self.inner.next_delay_ms() as f64
    }

    /// The largest delay of attempt `attempt` (0-based).
    #[wasm_bindgen(js_name = ceilingMs)]
    pub fn ceiling_ms(&self, attempt: u32) -> f64 {
        self.inner.ceiling_ms(attempt) as f64
    }

    /// Attempts made since the last reset.
    #[wasm_bindgen(getter)]
    pub fn attempt(&self) -> u32 {
        self.inner.attempt()
    }

    /// Back to the first delay (after a success).
    pub fn reset(&mut self) {
        self.inner.reset();
    }
}
