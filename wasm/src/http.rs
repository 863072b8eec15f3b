//! HTTP of the bot module: classification of responses, request
//! builders, 2xx body decoders, backoff, and the JSON form of decoded
//! items (the oracle of the decoder module's tape).

use onair::api::classify as core_classify;
use onair::json::ItemJson;
use onair::{BaseUrl, ClientCredentials, Endpoint};
use wasm_bindgen::prelude::*;

use crate::bot::{error, ms, pairs};

// ---- classification -----------------------------------------------------------

/// Classifies one response of `endpoint` (`token`, `revoke`, `live`,
/// `listeners`, `fans`, `events`, `chat`); the `onair explain` object as
/// JSON. `now_ms` turns an HTTP-date `Retry-After` into a delay.
#[wasm_bindgen]
pub fn classify(
    endpoint: &str,
    status: u16,
    headers: JsValue,
    body: &[u8],
    now_ms: Option<f64>,
) -> Result<String, JsValue> {
    let headers = crate::bot::headers(&headers);
    let endpoint = Endpoint::from_name(endpoint).ok_or_else(|| {
        error(
            "OnairError",
            "unknown_endpoint",
            &format!("unknown endpoint \"{endpoint}\""),
        )
    })?;
    let problem = core_classify(endpoint, status, pairs(&headers), body);
    Ok(problem.explain(now_ms.map(ms)).to_json())
}

// ---- request builders, response decoders, backoff ------------------------------

fn base_url(url: &str) -> Result<BaseUrl, JsValue> {
    BaseUrl::new(url).map_err(|e| error("ConfigError", "invalid_base_url", &e.to_string()))
}

fn request_json(
    result: Result<onair::HttpRequest, onair::api::RequestError>,
) -> Result<String, JsValue> {
    match result {
        Ok(request) => Ok(onair::json::RequestJson(&request).to_line()),
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
                &format!("no bearer request for endpoint \"{other}\""),
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
                &format!("no token request \"{other}\""),
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
            Ok(v) => Ok(crate::bot::to_json(&v)),
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
            &format!("no body decoder for endpoint \"{other}\""),
        )),
    }
}

/// Jittered exponential backoff (1 s doubling to 30 s, full jitter), seeded.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Backoff {
    inner: onair::api::Backoff,
}

#[wasm_bindgen]
impl Backoff {
    /// A backoff with the spec's limits, or `base_ms`/`cap_ms` when given.
    #[wasm_bindgen(constructor)]
    pub fn new(seed: f64, base_ms: Option<f64>, cap_ms: Option<f64>) -> Backoff {
        let seed = ms(seed.abs().floor());
        let inner = match (base_ms, cap_ms) {
            (None, None) => onair::api::Backoff::new(seed),
            (b, c) => onair::api::Backoff::with_limits(
                b.map_or(onair::api::Backoff::BASE_MS, ms),
                c.map_or(onair::api::Backoff::CAP_MS, ms),
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

// ---- the oracle of the decoder module -----------------------------------------

/// The decoder with the core's JSON serializer: the items of a chunk as a
/// JSON array of `onair decode` lines. The reference the decoder module's
/// tape is tested against (`Decoder._pushJson` in `bot.js`), not API.
#[wasm_bindgen]
#[derive(Debug)]
pub struct JsonDecoder {
    inner: onair::Decoder,
}

#[wasm_bindgen]
impl JsonDecoder {
    /// A decoder; `max_frame_bytes` caps one frame (default 256 KiB).
    #[wasm_bindgen(constructor)]
    pub fn new(max_frame_bytes: Option<u32>) -> JsonDecoder {
        let parser = match max_frame_bytes {
            Some(cap) => onair::sse::Parser::with_max_frame_bytes(cap as usize),
            None => onair::sse::Parser::new(),
        };
        JsonDecoder {
            inner: onair::Decoder::with_parser(parser),
        }
    }

    /// Decodes a chunk of bytes; the items as a JSON array.
    pub fn push(&mut self, chunk: &[u8]) -> String {
        let mut out = String::from("[");
        for item in self.inner.items(chunk) {
            if out.len() > 1 {
                out.push(',');
            }
            ItemJson(&item).append_to(&mut out);
        }
        out.push(']');
        out
    }
}

// ---- quota headers ------------------------------------------------------------

/// The quota headers of a response (absent or unreadable: null).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub(crate) struct Quota<'a> {
    /// `x-ratelimit-remaining`: per-second tokens left.
    remaining: Option<u64>,
    /// `x-ratelimit-replenish-rate`: tokens refilled per second.
    replenish_rate: Option<u64>,
    /// `x-ratelimit-burst-capacity`: the burst ceiling.
    burst_capacity: Option<u64>,
    /// `x-ratelimit-daily-limit`.
    daily_limit: Option<u64>,
    /// `x-ratelimit-daily-remaining`.
    daily_remaining: Option<u64>,
    /// `x-ratelimit-daily-reset`: next reset, epoch seconds.
    #[serde(rename = "dailyResetS")]
    daily_reset_s: Option<u64>,
    /// `x-ratelimit-daily-scope`: the permission a daily 429 hit.
    daily_scope: Option<&'a str>,
    /// Whether a `Retry-After` header was present (even unreadable).
    retry_after_present: bool,
    /// The `Retry-After` delay from `nowMs` (capped at one day), or null.
    retry_after_ms: Option<u64>,
}

/// Reads the quota headers (`x-ratelimit-*`, `Retry-After`; names in any
/// case, the first of a repeated name wins) as JSON; `now_ms` turns an
/// HTTP-date `Retry-After` into a delay.
#[wasm_bindgen(js_name = parseQuota)]
pub fn parse_quota(headers: JsValue, now_ms: f64) -> String {
    let headers = crate::bot::headers(&headers);
    // Each absent or unreadable value `null`.
    let q = onair::api::QuotaHeaders::parse(pairs(&headers));
    crate::bot::to_json(&Quota {
        remaining: q.remaining,
        replenish_rate: q.replenish_rate,
        burst_capacity: q.burst_capacity,
        daily_limit: q.daily_limit,
        daily_remaining: q.daily_remaining,
        daily_reset_s: q.daily_reset_s,
        daily_scope: q.daily_scope.as_ref().map(|p| p.as_str()),
        retry_after_present: q.retry_after_present,
        retry_after_ms: q.retry_after.map(|r| r.delay_ms(ms(now_ms))),
    })
}
