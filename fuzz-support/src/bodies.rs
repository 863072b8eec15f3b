//! The bodies over the core crate: one `pub fn` per input surface.
//!
//! The structured inputs (a header block, an operation list) are decoded
//! from the bytes by a small cursor ([`Input`]) rather than with the
//! `arbitrary` crate: the formats stay readable, so seeds can be written by
//! hand (see `fuzz/seeds.py`).
//!
//! Every body panics (through `assert!`) exactly when an invariant is broken:
//! that is their purpose. Nothing here is used by the library itself.

use onair::api::{
    self, classify, validate_chat, ListenerPager, QuotaHeaders, RetryAfter, CHAT_MAX_UTF16,
    MAX_RETRY_AFTER_MS,
};
use onair::bot::{Action, Bot, BotConfig};
use onair::event::{self, Decoder, Event, Item};
use onair::kit::commands::{split_args, Role};
use onair::kit::text::{split, truncate, utf16_len};
use onair::kit::{KitConfig, KitState};
use onair::sse::reference::{self, Seen};
use onair::sse::{Chunk, Parser, DEFAULT_MAX_FRAME_BYTES};
use onair::{
    Advice, BaseUrl, ChatErrorKind, ClientCredentials, Endpoint, ProblemKind, RequestId, Tokens,
};

// ---------------------------------------------------------------------------
// The input cursor
// ---------------------------------------------------------------------------

/// Reads structured values off the front of fuzz bytes; past the end every
/// read answers zero or empty, so any input decodes.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    rest: &'a [u8],
}

impl<'a> Input<'a> {
    /// A cursor over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { rest: data }
    }

    /// Whether everything was read.
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next byte (0 past the end).
    pub fn byte(&mut self) -> u8 {
        match self.rest.split_first() {
            Some((&b, rest)) => {
                self.rest = rest;
                b
            }
            None => 0,
        }
    }

    /// The next two bytes, little-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    /// Up to `n` bytes.
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.rest.split_at(n.min(self.rest.len()));
        self.rest = rest;
        head
    }

    /// A length byte, then that many bytes.
    pub fn short(&mut self) -> &'a [u8] {
        let n = usize::from(self.byte());
        self.take(n)
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.rest)
    }
}

/// Whether `secret` is distinctive enough that finding it in a message means
/// it was quoted (not that a fixed word of the message happens to match): at
/// least 4 characters, one of them a character no fixed message uses.
fn distinctive(secret: &str) -> bool {
    secret.chars().count() >= 4 && secret.chars().any(|c| "#@~^|`$".contains(c))
}

/// Whether `secret` occurs once in the raw body: a value that also sits in a
/// field that is not secret (e.g. as an unknown scope) may show through it.
fn only_once(body: &[u8], secret: &str) -> bool {
    let needle = secret.as_bytes();
    body.windows(needle.len().max(1))
        .filter(|w| *w == needle)
        .count()
        == 1
}

/// The string values of `fields` in a JSON object body, when it is one.
fn string_fields(body: &[u8], fields: &[&str]) -> Vec<String> {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(body)
    else {
        return Vec::new();
    };
    fields
        .iter()
        .filter_map(|f| map.get(*f).and_then(|v| v.as_str()).map(str::to_owned))
        .collect()
}

// ---------------------------------------------------------------------------
// 1. SSE framing in arbitrary chunkings
// ---------------------------------------------------------------------------

/// The items of `chunks`, rendered; read both with `next_item` over slices
/// and with `next_item_in` over [`Chunk`]s, which must agree.
fn sse_items(cap: usize, chunks: &mut dyn Iterator<Item = &[u8]>) -> Vec<String> {
    let mut parser = Parser::with_max_frame_bytes(cap);
    let mut twin = Parser::with_max_frame_bytes(cap);
    let mut out = Vec::new();
    let mut twin_out = Vec::new();
    for chunk in chunks {
        let mut whole = Chunk::new(chunk);
        while let Some(item) = twin.next_item_in(&mut whole) {
            twin_out.push(format!("{item:?}"));
        }
        assert!(
            whole.rest().is_empty(),
            "next_item_in returned None with input left"
        );
        let mut rest = chunk;
        loop {
            let before = rest.len();
            let Some(item) = parser.next_item(&mut rest) else {
                break;
            };
            out.push(format!("{item:?}"));
            assert!(rest.len() <= before, "input grew");
        }
        assert!(rest.is_empty(), "next_item returned None with input left");
        assert!(
            parser.buffered_bytes() <= parser.max_frame_bytes(),
            "{} bytes buffered over the cap {}",
            parser.buffered_bytes(),
            parser.max_frame_bytes()
        );
    }
    out.extend(parser.finish().map(|item| format!("{item:?}")));
    twin_out.extend(twin.finish().map(|item| format!("{item:?}")));
    assert_eq!(out, twin_out, "next_item and next_item_in disagree");
    assert!(parser.buffered_bytes() <= parser.max_frame_bytes());
    assert!(parser.finish().is_none(), "a second finish gave an item");
    out
}

/// What the parser says of `body` under the default cap, in the naive
/// reference parser's terms (`None` when a frame was over the cap).
fn seen(body: &[u8]) -> Option<Vec<Seen>> {
    let mut parser = Parser::new();
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(item) = parser.next_item(&mut rest) {
        out.push(Seen::of(&item)?);
    }
    if let Some(item) = parser.finish() {
        out.push(Seen::of(&item)?);
    }
    Some(out)
}

/// SSE bytes: the first byte picks a chunk size, the next two a second one;
/// the items of the whole input equal those of every chunking (byte by byte,
/// the sizes picked, and cuts at every `\n`), for a small cap and the
/// default one, and no more than the cap is ever buffered; under the default
/// cap they are what the naive WHATWG reference parser says.
pub fn sse_chunking(data: &[u8]) {
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    if let Some(seen) = seen(body) {
        assert_eq!(
            seen,
            reference::parse(body),
            "the parser and the WHATWG reference disagree"
        );
    }
    let size = usize::from(seed % 17) + 1;
    let wide = usize::from(u16::from_le_bytes([seed, *body.first().unwrap_or(&0)]) % 4096) + 1;
    for cap in [128, DEFAULT_MAX_FRAME_BYTES] {
        let whole = sse_items(cap, &mut std::iter::once(body));
        assert_eq!(
            whole,
            sse_items(cap, &mut body.chunks(size)),
            "chunks of {size}"
        );
        assert_eq!(
            whole,
            sse_items(cap, &mut body.chunks(wide)),
            "chunks of {wide}"
        );
        assert_eq!(
            whole,
            sse_items(cap, &mut body.split_inclusive(|&b| b == b'\n')),
            "cut after every LF"
        );
        if body.len() <= 512 {
            assert_eq!(whole, sse_items(cap, &mut body.chunks(1)), "byte by byte");
        }
    }
}

// ---------------------------------------------------------------------------
// 2. Framing plus typed decoding
// ---------------------------------------------------------------------------

fn decoded(chunks: &mut dyn Iterator<Item = &[u8]>) -> Vec<Item> {
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    for chunk in chunks {
        let mut rest = chunk;
        while let Some(item) = decoder.next_item(&mut rest) {
            out.push(item);
        }
    }
    out.extend(decoder.finish());
    out
}

/// Any bytes through framing and typed decoding: every item serializes to
/// one JSON line (the `onair decode` form), and chunking changes nothing.
pub fn event_stream(data: &[u8]) {
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    let whole = decoded(&mut std::iter::once(body));
    for item in &whole {
        let line = onair::json::ItemJson(item).to_line();
        assert!(line.starts_with('{') && !line.contains('\n'), "{line}");
        assert!(
            serde_json::from_str::<serde_json::Value>(&line).is_ok(),
            "{line}"
        );
    }
    let size = usize::from(seed % 31) + 1;
    assert_eq!(whole, decoded(&mut body.chunks(size)));
}

// ---------------------------------------------------------------------------
// 3. Event JSON: the payload reader against serde_json
// ---------------------------------------------------------------------------

const EVENT_NAMES: [&str; 6] = ["chat", "presence", "like", "donation", "end", "message"];

/// The first byte picks the event name, the rest is the frame's data.
/// - The documented-shape fast path, when it answers, agrees with the
///   serde_json reader (floats bit for bit).
/// - The reader calls the data `invalid_json` exactly when serde_json does
///   not read it as JSON.
/// - An event it reads holds every known field as a `serde_json::Value`
///   reading of the text holds it (absent optional fields as `null`; floats
///   to the last unit).
/// - A payload given as a JSON array is never read as an event.
pub fn event_json(data: &[u8]) {
    let Some((&pick, data)) = data.split_first() else {
        return;
    };
    let Ok(data) = std::str::from_utf8(data) else {
        return;
    };
    let name = EVENT_NAMES[usize::from(pick) % EVENT_NAMES.len()];
    let read = event::fuzzing::read(name, data);
    if let Some(template) = event::fuzzing::documented(name, data) {
        assert_eq!(read, Ok(Some(template.clone())), "{name} {data:?}");
        if let (Event::Presence(a), Ok(Some(Event::Presence(b)))) = (&template, &read) {
            assert_eq!(
                a.favorite_temperature.map(f64::to_bits),
                b.favorite_temperature.map(f64::to_bits)
            );
        }
    }
    let bare_end = name == "end" && !data.trim_start().starts_with(['{', '"']);
    if name == "message" || bare_end {
        return;
    }
    let is_json = serde_json::from_str::<serde::de::IgnoredAny>(data).is_ok();
    match &read {
        // A typed field nested past serde_json's bound (128) is refused,
        // though the text is JSON.
        Err((_, message)) if message.contains("recursion limit exceeded") => {}
        Err((event::DecodeErrorKind::InvalidJson, message)) => {
            // Not JSON; or JSON whose strings do not decode (a lone
            // surrogate), which only a reader that skips strings accepts.
            let decodes = serde_json::from_str::<serde_json::Value>(data).is_ok();
            assert!(!is_json || !decodes, "{name} {data:?}: {message}");
        }
        Err((_, message)) => assert!(is_json, "{name} {data:?}: {message}"),
        Ok(Some(event)) => {
            // A payload is one JSON object (serde's derive would also take
            // an array of a struct's fields).
            assert!(
                !data.trim_start().starts_with('['),
                "{name} {data:?}: an array read as an event"
            );
            // A lone surrogate in a skipped field is JSON, but no `Value`.
            let Ok(input) = serde_json::from_str::<serde_json::Value>(data) else {
                assert!(is_json, "{name} {data:?}: read, but serde_json refuses it");
                return;
            };
            let Ok(ours) = serde_json::to_value(event) else {
                panic!("{name} {data:?}: does not serialize");
            };
            let input = match (event, input) {
                (Event::End(_), serde_json::Value::String(reason)) => {
                    serde_json::json!({ "reason": reason })
                }
                (_, input) => input,
            };
            assert_fields_match(&ours, &input, data);
        }
        Ok(None) => panic!("{name} {data:?}: a known event read as unknown"),
    }
}

/// Every field of `ours` equals the input's (absent: `null`), recursively.
fn assert_fields_match(ours: &serde_json::Value, input: &serde_json::Value, data: &str) {
    use serde_json::Value;
    match (ours, input) {
        (Value::Object(ours), Value::Object(input)) => {
            for (key, value) in ours {
                assert_fields_match(value, input.get(key).unwrap_or(&Value::Null), data);
            }
        }
        (Value::Number(a), Value::Number(b)) if a.is_f64() || b.is_f64() => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            // Both readings are serde_json's with `float_roundtrip` (exact);
            // the slack only keeps an integer read into an `f64` field and
            // the `Value`'s integer converted by `as_f64` from differing.
            let scale = a.abs().max(b.abs());
            assert!(
                a == b || (a - b).abs() <= scale * 4.0 * f64::EPSILON,
                "{a} {b} in {data:?}"
            );
        }
        _ => assert_eq!(ours, input, "in {data:?}"),
    }
}

// ---------------------------------------------------------------------------
// 4. Error bodies with headers: classify
// ---------------------------------------------------------------------------

/// One `name: value` line of a header block.
type HeaderLine<'a> = (&'a [u8], &'a [u8]);

/// A header block: `name: value` lines (a line without `:` is a name with
/// an empty value).
fn header_lines(block: &[u8]) -> Vec<HeaderLine<'_>> {
    block
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| match line.iter().position(|&b| b == b':') {
            Some(at) => (&line[..at], &line[at + 1..]),
            None => (line, &b""[..]),
        })
        .collect()
}

/// Splits `name: value` lines up to the first blank line from the body.
fn headers_and_body(rest: &[u8]) -> (Vec<HeaderLine<'_>>, &[u8]) {
    match rest.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (header_lines(&rest[..at]), &rest[at + 2..]),
        None => (Vec::new(), rest),
    }
}

const STATUSES: [u16; 16] = [
    200, 204, 400, 401, 403, 404, 405, 415, 429, 500, 502, 503, 504, 301, 418, 599,
];

fn status_from(byte: u8, extra: u8) -> u16 {
    match STATUSES.get(usize::from(byte)) {
        Some(&s) => s,
        None => {
            u16::from(byte)
                .wrapping_mul(4)
                .wrapping_add(u16::from(extra))
                % 1000
        }
    }
}

/// Byte 0 picks the endpoint, bytes 1–2 the status (a byte under 16 names a
/// common one), then a header block up to a blank line, then the body.
/// `classify` is total and status-first: 2xx is `Ok`; a 401 on a bot
/// endpoint is always `Unauthorized` (refresh); a 401 on a token endpoint
/// with no OAuth error is `InvalidClient`; 5xx and 429 are never `Stop`;
/// kept strings are capped; the quota is exactly what the headers say.
pub fn classify_response(data: &[u8]) {
    let mut input = Input::new(data);
    let endpoint = Endpoint::ALL[usize::from(input.byte()) % Endpoint::ALL.len()];
    let (a, b) = (input.byte(), input.byte());
    let status = status_from(a, b);
    let (headers, body) = headers_and_body(input.rest());
    let p = classify(endpoint, status, &headers, body);
    assert_eq!(
        p,
        classify(endpoint, status, &headers, body),
        "deterministic"
    );
    assert_eq!(p.status, status);
    assert_eq!(p.quota, QuotaHeaders::parse(&headers));
    if (200..300).contains(&status) {
        assert_eq!((p.kind, p.advice), (ProblemKind::Ok, Advice::None));
    } else {
        assert!(!p.is_ok());
    }
    if status == 401 && !endpoint.is_token() {
        assert_eq!(
            (p.kind, p.advice),
            (ProblemKind::Unauthorized, Advice::RefreshToken)
        );
    }
    if status == 401 && endpoint.is_token() && p.oauth_error.is_none() {
        assert_eq!(p.kind, ProblemKind::InvalidClient);
    }
    if (500..600).contains(&status) || status == 429 {
        assert_ne!(p.advice, Advice::Stop, "{status} must be retried");
    }
    if p.recently_revoked {
        assert_eq!(p.kind, ProblemKind::Unauthorized);
    }
    if !endpoint.is_token() {
        assert_eq!(p.oauth_error, None);
    }
    assert!(p
        .message
        .as_ref()
        .is_none_or(|m| m.len() <= onair::Problem::MAX_MESSAGE_BYTES));
    assert!(p
        .detail_code
        .as_ref()
        .is_none_or(|c| c.len() <= onair::Problem::MAX_CODE_BYTES && !c.is_empty()));
    assert!(p
        .oauth_error
        .as_ref()
        .is_none_or(|c| c.len() <= onair::Problem::MAX_CODE_BYTES));
    let explained = p.explain(Some(1_732_250_000_000));
    let _ = format!("{explained:?}");
}

// ---------------------------------------------------------------------------
// 5. Quota headers and Retry-After
// ---------------------------------------------------------------------------

/// Bytes 0–1 move `now` (in hours from a fixed day), then a header block.
/// `Retry-After` alone: a delay never over the cap, `until` never before
/// now, digits read as seconds. The headers: the first of a repeated name
/// wins (appending duplicates changes nothing), `retry_after_present`
/// exactly when the header is there, a read value only when present.
pub fn quota_headers(data: &[u8]) {
    let mut input = Input::new(data);
    let now = 1_732_250_000_000u64.saturating_add(u64::from(input.u16()) * 3_600_000);
    let block = input.rest();
    let headers = header_lines(block);

    // The whole block as one Retry-After value.
    if let Some(after) = RetryAfter::parse(block) {
        let delay = after.delay_ms(now);
        assert!(delay <= MAX_RETRY_AFTER_MS);
        assert_eq!(after.until_ms(now), now.saturating_add(delay));
        if let RetryAfter::Delay { ms, capped } = after {
            assert!(ms <= MAX_RETRY_AFTER_MS);
            assert_eq!(capped, after.is_capped(now));
            let digits = block.trim_ascii();
            if digits.iter().all(u8::is_ascii_digit) && digits.len() <= 12 {
                let secs: u64 = std::str::from_utf8(digits)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .expect("digits parse");
                assert_eq!(ms, (secs * 1000).min(MAX_RETRY_AFTER_MS));
            }
        }
    }
    if let Some(RetryAfter::Date { unix_ms }) = RetryAfter::parse(block) {
        assert_eq!(unix_ms % 1000, 0, "HTTP dates have whole seconds");
    }

    let quota = QuotaHeaders::parse(&headers);
    let has = |name: &str| {
        headers.iter().any(|(n, _)| {
            n.trim_ascii().eq_ignore_ascii_case(name.as_bytes())
                || n.eq_ignore_ascii_case(name.as_bytes())
        })
    };
    if quota.retry_after.is_some() {
        assert!(quota.retry_after_present);
    }
    if quota.retry_after_present {
        assert!(
            has("retry-after"),
            "present without the header: {headers:?}"
        );
    }
    if quota.remaining.is_some() {
        assert!(has("x-ratelimit-remaining"));
    }
    // The first readable value of a name wins (a junk first value lets a good
    // later one in, by design): duplicates appended never change a value read.
    let mut doubled = headers.clone();
    doubled.extend(headers.iter().rev().map(|&(n, _)| (n, &b"7"[..])));
    let again = QuotaHeaders::parse(&doubled);
    assert_eq!(again.retry_after_present, quota.retry_after_present);
    assert_eq!(
        again.retry_after, quota.retry_after,
        "a later Retry-After won"
    );
    for (first, later) in [
        (quota.remaining, again.remaining),
        (quota.replenish_rate, again.replenish_rate),
        (quota.burst_capacity, again.burst_capacity),
        (quota.daily_limit, again.daily_limit),
        (quota.daily_remaining, again.daily_remaining),
        (quota.daily_reset_s, again.daily_reset_s),
    ] {
        if first.is_some() {
            assert_eq!(first, later, "a later duplicate won");
        }
    }
    if quota.daily_scope.is_some() {
        assert_eq!(quota.daily_scope, again.daily_scope, "a later scope won");
    }
}

// ---------------------------------------------------------------------------
// 6. Token responses
// ---------------------------------------------------------------------------

/// A token endpoint body: decoded or refused, its `Debug` and its error
/// never show a token; a decoded pair holds usable tokens and stores and
/// reloads unchanged.
pub fn token_response(data: &[u8]) {
    let secrets: Vec<String> = string_fields(data, &["access_token", "refresh_token"])
        .into_iter()
        .filter(|s| distinctive(s) && only_once(data, s))
        .collect();
    let token_type = string_fields(data, &["token_type"])
        .pop()
        .unwrap_or_default();
    match api::decode_token_pair(data) {
        Ok(pair) => {
            let shown = format!("{pair:?}");
            for s in &secrets {
                assert!(!shown.contains(s.as_str()), "Debug shows a token");
            }
            let access = pair.access_token.expose();
            assert!(!access.is_empty() && !access.chars().any(char::is_control));
            if let Some(r) = &pair.refresh_token {
                assert!(!r.expose().is_empty() && !r.expose().chars().any(char::is_control));
            }
            // Stored and reloaded through a token manager's first exchange.
            let tokens = Tokens::from_json(
                serde_json::json!({
                    "format": "onair.tokens", "version": 1, "generation": 1,
                    "access_token": access,
                    "access_expires_at_ms": pair.expires_in.saturating_mul(1000),
                    "issued_at_ms": 0,
                    "refresh_token": pair.refresh_token.as_ref().map(|r| r.expose()),
                    "refresh_expires_at_ms": pair.refresh_token.as_ref().map(|_| 1u64),
                    "scope": pair.scope.as_ref().map(|s| s.to_string()).unwrap_or_default(),
                })
                .to_string()
                .as_bytes(),
            )
            .expect("a decoded pair stores");
            assert_eq!(tokens.access_token().expose(), access);
            token_file_roundtrip(&tokens, &secrets);
        }
        Err(e) => {
            let message = format!("{e} {e:?}");
            for s in &secrets {
                if !token_type.contains(s.as_str()) {
                    assert!(
                        !message.contains(s.as_str()),
                        "error quotes a token: {message}"
                    );
                }
            }
        }
    }
}

fn token_file_roundtrip(tokens: &Tokens, secrets: &[String]) {
    let json = tokens.to_json();
    let again = Tokens::from_json(json.as_bytes()).expect("to_json reloads");
    assert_eq!(&again, tokens);
    assert_eq!(*again.to_json(), *json, "to_json is a fixed point");
    let shown = format!("{tokens:?} {tokens}");
    for s in secrets {
        assert!(!shown.contains(s.as_str()), "Debug/Display shows a token");
    }
}

// ---------------------------------------------------------------------------
// 7. The stored token file
// ---------------------------------------------------------------------------

/// The stored token file: what loads stores back to the same tokens (and
/// the same JSON); a refusal never quotes the input's tokens.
pub fn token_file(data: &[u8]) {
    let secrets: Vec<String> = string_fields(data, &["access_token", "refresh_token"])
        .into_iter()
        .filter(|s| distinctive(s) && only_once(data, s))
        .collect();
    match Tokens::from_json(data) {
        Ok(tokens) => token_file_roundtrip(&tokens, &secrets),
        Err(e) => {
            let message = format!("{e} {e:?}");
            for s in &secrets {
                assert!(
                    !message.contains(s.as_str()),
                    "error quotes a token: {message}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// 8. REST bodies: Broadcast, listeners, fans
// ---------------------------------------------------------------------------

/// Byte 0 picks the resource (or a pager over several listener pages, the
/// rest cut at `\n`). A decoded body serializes and decodes back equal; the
/// pager stops within its page limit and holds each listener once.
pub fn rest_bodies(data: &[u8]) {
    let mut input = Input::new(data);
    let pick = input.byte();
    let body = input.rest();
    match pick % 4 {
        0 => {
            if let Ok(b) = api::decode_broadcast(body) {
                let json = serde_json::to_vec(&b).expect("serializes");
                assert_eq!(api::decode_broadcast(&json).as_ref(), Ok(&b));
            }
        }
        1 => {
            if let Ok(page) = api::decode_listeners(body) {
                let json = serde_json::to_vec(&page).expect("serializes");
                assert_eq!(api::decode_listeners(&json).as_ref(), Ok(&page));
            }
        }
        2 => {
            if let Ok(fans) = api::decode_fans(body) {
                let json = serde_json::to_vec(&fans).expect("serializes");
                assert_eq!(api::decode_fans(&json).as_ref(), Ok(&fans));
            }
        }
        _ => {
            let max_pages = usize::from(pick / 4 % 8) + 1;
            let mut pager = ListenerPager::with_max_pages(max_pages);
            for page in body.split(|&b| b == b'\n') {
                let _ = pager.on_body(page);
                assert!(pager.pages() <= max_pages, "{} pages", pager.pages());
                if pager.is_complete() || pager.error().is_some() {
                    break;
                }
            }
            let mut seen = std::collections::HashSet::new();
            for l in pager.listeners() {
                assert!(seen.insert(l.id.clone()), "listener {:?} twice", l.id);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// 9. Chat text: split, truncate, validate
// ---------------------------------------------------------------------------

fn non_space(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Byte 0 is a truncate limit, then the text (lossy UTF-8). `split`: parts of
/// at most 200 UTF-16 units, each valid, rejoining to the text modulo
/// whitespace and in order; a valid text is its own single part. `truncate`
/// fits its limit, is a prefix up to the ellipsis, and is valid when the
/// text was too long and the limit is the chat limit.
pub fn chat_text(data: &[u8]) {
    let mut input = Input::new(data);
    let limit = usize::from(input.byte());
    let text = String::from_utf8_lossy(input.rest());
    let text = text.as_ref();

    let parts = split(text);
    for part in &parts {
        assert!(
            utf16_len(part) <= CHAT_MAX_UTF16,
            "part of {} units",
            utf16_len(part)
        );
        assert_eq!(validate_chat(part), Ok(()), "{part:?}");
    }
    // A valid text comes back whole (its edge whitespace too); a cut one has
    // no part starting or ending with whitespace: a whitespace-only grapheme
    // cluster (a cluster such as U+3000 carrying combining marks is not one,
    // and is never cut unless it alone is over the limit).
    if parts.len() > 1 {
        use unicode_segmentation::UnicodeSegmentation;
        let blank = |g: Option<&str>| g.is_some_and(|g| g.chars().all(char::is_whitespace));
        for part in &parts {
            let mut clusters = part.graphemes(true);
            assert!(
                !blank(clusters.next()),
                "a part starts with whitespace: {part:?}"
            );
            assert!(
                !blank(clusters.next_back()),
                "a part ends with whitespace: {part:?}"
            );
        }
    }
    assert_eq!(
        non_space(&parts.concat()),
        non_space(text),
        "parts do not rejoin"
    );
    // Stronger: each part is found in the text after the previous one, with
    // only whitespace between.
    let mut rest = text;
    for part in &parts {
        let at = rest.find(part.as_str()).expect("part in order");
        assert!(
            rest[..at].chars().all(char::is_whitespace),
            "text lost before {part:?}"
        );
        rest = &rest[at + part.len()..];
    }
    assert!(
        rest.chars().all(char::is_whitespace),
        "text lost at the end"
    );
    match validate_chat(text) {
        Ok(()) => assert_eq!(parts, [text]),
        Err(e) if e.kind == ChatErrorKind::Empty => assert!(parts.is_empty()),
        // Too long, maybe only with its edge whitespace (dropped by split).
        Err(_) => {
            assert!(!parts.is_empty());
            if validate_chat(text.trim()).is_err() {
                assert!(parts.len() >= 2, "a text too long came back whole");
            }
        }
    }

    for ellipsis in ["…", "...", ""] {
        let cut = truncate(text, limit, ellipsis);
        assert!(utf16_len(&cut) <= limit, "{cut:?} over {limit}");
        if utf16_len(text) <= limit {
            assert_eq!(cut, text);
        } else {
            let kept = cut.strip_suffix(ellipsis).unwrap_or(&cut);
            assert!(text.starts_with(kept), "not a prefix");
        }
    }
    let cut = truncate(text, CHAT_MAX_UTF16, "…");
    if validate_chat(text).is_err_and(|e| e.kind == ChatErrorKind::TooLong) {
        assert_eq!(validate_chat(&cut), Ok(()), "{cut:?}");
    }
}

// ---------------------------------------------------------------------------
// 10. Command parsing
// ---------------------------------------------------------------------------

fn is_quote(c: char) -> bool {
    matches!(c, '"' | '\u{201C}' | '\u{201D}' | '\u{FF02}')
}

/// A bot with the configured kit, its stream open, and what it made of
/// `frames` (the actions of one drain after them).
fn kit_bot(
    config_json: &str,
    saved: Option<&KitState>,
    frames: &str,
) -> Option<(Bot, Vec<Action>)> {
    let mut config = bot_config(true);
    config.kit = KitConfig::from_json(config_json).ok()?;
    let mut bot = Bot::new(config, None, 9);
    if let Some(state) = saved {
        bot = bot.with_kit_state(state);
    }
    bot.authorize("code", "https://bot.test/cb");
    let id = settle(&mut bot).into_iter().find_map(|a| match a {
        Action::Send { id, .. } => Some(id),
        _ => None,
    })?;
    bot.on_response(id, 200, &[] as &[(&str, &str)], &pair_body("at", "rt"), T0)
        .ok()?;
    let stream = settle(&mut bot).into_iter().find_map(|a| match a {
        Action::OpenStream { id, .. } => Some(id),
        _ => None,
    })?;
    bot.on_stream_open(stream, 200, &[] as &[(&str, &str)], T0)
        .ok()?;
    settle(&mut bot);
    bot.on_stream_bytes(stream, frames.as_bytes(), T0).ok()?;
    let actions = settle(&mut bot);
    Some((bot, actions))
}

/// Polls until the drain ends; the actions before it.
fn settle(bot: &mut Bot) -> Vec<Action> {
    let mut out = Vec::new();
    for _ in 0..1000 {
        let action = bot.poll(T0);
        if action.ends_drain() {
            return out;
        }
        out.push(action);
    }
    panic!("the drain never ended: {out:?}");
}

/// A chat frame of `user` saying `message` (JSON-escaped).
fn chat_frame(user: &str, is_dj: bool, message: &str) -> String {
    let data = serde_json::json!({
        "user": {"id": user, "nickname": "n"},
        "isDj": is_dj,
        "message": message,
        "sentTime": "2024-11-22T04:33:20Z",
    });
    format!("event:chat\ndata:{data}\n\n")
}

/// Byte 0: who posts (DJ, manager, listener, an ignored bot). Then the
/// prefix (short string), a command name (short string), and the message.
/// The configured kit answers a command only for a configured name, with
/// the poster's role, the text after the name trimmed and its arguments
/// split as [`split_args`] does; an ignored poster's chat is never one.
pub fn commands(data: &[u8]) {
    let mut input = Input::new(data);
    let who = input.byte() % 4;
    let prefix = String::from_utf8_lossy(input.short()).into_owned();
    let name = String::from_utf8_lossy(input.short()).into_owned();
    let message = String::from_utf8_lossy(input.rest()).into_owned();

    let mut config = serde_json::json!({
        "commands": [
            {"name": "hello", "aliases": ["hi"]},
            {"name": "reset", "allowed": "managers"},
            {"name": "stop", "allowed": "dj"},
        ],
        "ignore": ["bot-id"],
    });
    if !prefix.is_empty() {
        config["prefix"] = prefix.clone().into();
    }
    if !name.is_empty() {
        if let Some(list) = config["commands"].as_array_mut() {
            list.push(serde_json::json!({ "name": name }));
        }
    }
    let config = config.to_string();
    // A prefix or name the kit refuses is a configuration error, not a panic.
    if KitConfig::from_json(&config).is_err() {
        return;
    }
    let manager = "event:presence\ndata:{\"user\":{\"id\":\"m1\",\"nickname\":null},\"type\":\"JOIN\",\"fanRank\":null,\"isManager\":true,\"favoriteTemperature\":null,\"time\":\"t\"}\n\n";
    let user_id = ["dj", "m1", "u1", "bot-id"][usize::from(who)];
    let frames = format!("{manager}{}", chat_frame(user_id, who == 0, &message));
    let Some((_, actions)) = kit_bot(&config, None, &frames) else {
        return;
    };
    let names = ["hello", "reset", "stop", name.as_str()];
    for action in actions {
        let (matched, role) = match &action {
            Action::Command(c) => {
                assert_eq!(c.rest.trim(), c.rest);
                assert!(message.contains(c.rest.as_str()));
                assert_eq!(c.args, split_args(&c.rest));
                (c.name.clone(), c.role)
            }
            Action::Notice(onair::Notice::CommandRefused(r)) => (r.name.clone(), r.role),
            _ => continue,
        };
        assert_ne!(user_id, "bot-id", "an ignored poster's chat ran a command");
        assert!(
            names.contains(&matched.as_str()),
            "{matched:?} is not configured"
        );
        let expected = match who {
            0 => Role::Dj,
            1 => Role::Manager,
            _ => Role::Listener,
        };
        assert_eq!(role, expected);
    }
    // split_args keeps every non-space, non-quote character, in order.
    let args = split_args(&message);
    let keep = |s: &str| -> String {
        s.chars()
            .filter(|&c| !c.is_whitespace() && !is_quote(c))
            .collect()
    };
    assert_eq!(keep(&args.concat()), keep(&message));
    let quotes = message.chars().filter(|&c| is_quote(c)).count();
    if quotes == 0 {
        assert_eq!(args, message.split_whitespace().collect::<Vec<_>>());
    }
}

// ---------------------------------------------------------------------------
// 11. The kit's stored state
// ---------------------------------------------------------------------------

/// The bytes as a stored kit state. What loads stores back to itself (a
/// fixed point), and a bot given it hands out the same state until an
/// event changes it; a bot that restored it greets nobody it remembers.
pub fn kit_state(data: &[u8]) {
    let Ok(state) = KitState::from_json(data) else {
        return;
    };
    let again = KitState::from_json(state.to_json()).expect("to_json reloads");
    assert_eq!(again.to_json(), state.to_json(), "to_json is a fixed point");
    let config = r#"{"greetings":{},"tally":true,"milestones":{"hearts_every":10}}"#;
    if let Some((bot, _)) = kit_bot(config, Some(&state), ":heartbeat\n\n") {
        let kit = bot.kit().expect("a kit");
        assert_eq!(kit.state().to_json(), state.to_json());
    }
}

// ---------------------------------------------------------------------------
// 12. The Bot machine
// ---------------------------------------------------------------------------

const T0: u64 = 1_732_250_000_000;
const ALL_SCOPES: &str = "live.read listeners.read fans.read events.chat events.presence events.like events.donation chat.send";

fn pair_body(access: &str, refresh: &str) -> Vec<u8> {
    format!(
        r#"{{"access_token":"{access}","token_type":"Bearer","expires_in":3600,"refresh_token":"{refresh}","scope":"{ALL_SCOPES}"}}"#
    )
    .into_bytes()
}

fn problem_body(status: u16, code: &str) -> Vec<u8> {
    format!(r#"{{"instance":"/v1/live","status":{status},"title":"x","detailCode":"{code}","message":"m","timestamp":1}}"#).into_bytes()
}

fn canned_body(kind: u8) -> Vec<u8> {
    match kind {
        0 => Vec::new(),
        1 => pair_body("atX", "rtX"),
        2 => br#"{"error":"invalid_grant"}"#.to_vec(),
        3 => problem_body(403, "OAPI_MNGR_0208"),
        4 => problem_body(429, "OAPI_MNGR_0302"),
        5 => br#"{"listeners":[{"id":"a","nickname":"A"}],"nextCursor":"n"}"#.to_vec(),
        6 => br#"{"listeners":[{"id":"b","nickname":null}],"nextCursor":null}"#.to_vec(),
        7 => br#"{"liveId":1,"title":"t","startedAt":"2024-01-01T00:00:00Z","closeAirTime":"2024-01-01T01:00:00Z","listenerCount":2,"totalListenerCount":5,"welcomeMessage":"hi","isChatFrozen":false,"categories":[],"tags":[]}"#.to_vec(),
        8 => problem_body(404, "OAPI_MNGR_0301"),
        9 => problem_body(401, "OAPI_MNGR_0203"),
        10 => b"<html>bad gateway</html>".to_vec(),
        _ => b"data:{\"status\":403,\"detailCode\":\"OAPI_MNGR_0209\"}".to_vec(),
    }
}

fn canned_bytes(kind: u8) -> Vec<u8> {
    let chat = "id:1-1\nevent:chat\ndata:{\"user\":{\"id\":\"u1\",\"nickname\":\"Mina\"},\"isDj\":false,\"message\":\"hey\",\"sentTime\":\"2024-11-22T04:33:20Z\"}\n\n";
    match kind {
        0 => b":heartbeat\n\n".to_vec(),
        1 => chat.as_bytes().to_vec(),
        2 => b"event:end\ndata:{\"reason\":\"RECONNECT\"}\n\n".to_vec(),
        3 => b"event:end\ndata:{\"reason\":\"TOKEN_EXPIRED\"}\n\n".to_vec(),
        4 => b"event:end\ndata:{\"reason\":\"LIVE_ENDED\"}\n\n".to_vec(),
        5 => b"retry:10\n\n".to_vec(),
        _ => b"event:chat\ndata:{nope\n\n\xff\xfe".to_vec(),
    }
}

const HEADER_SETS: [&[(&str, &str)]; 5] = [
    &[],
    &[("Retry-After", "30")],
    &[
        ("x-ratelimit-remaining", "0"),
        ("x-ratelimit-replenish-rate", "1"),
    ],
    &[
        ("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT"),
        ("x-ratelimit-daily-scope", "chat.send"),
    ],
    &[("content-type", "text/event-stream")],
];

fn bot_config(events: bool) -> BotConfig {
    let base = BaseUrl::new("http://127.0.0.1:9").expect("a fixed base URL");
    let credentials =
        ClientCredentials::new("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "s3cret-client")
            .expect("fixed credentials");
    let mut config = BotConfig::new(base, credentials);
    config.events = events;
    config
}

fn saved_tokens(access_expires_at_ms: u64) -> Tokens {
    let json = format!(
        r#"{{"format":"onair.tokens","version":1,"generation":1,"access_token":"at0","access_expires_at_ms":{access_expires_at_ms},"issued_at_ms":{},"refresh_token":"rt0","refresh_expires_at_ms":{},"scope":"{ALL_SCOPES}"}}"#,
        T0 - 60_000,
        T0 + 30 * 86_400_000
    );
    Tokens::from_json(json.as_bytes()).expect("fixed tokens load")
}

/// What the fuzz driver tracks of the bot's requests.
#[derive(Debug, Default)]
struct Driver {
    /// Requests sent and not answered: id, whether a token request.
    pending: Vec<(RequestId, bool)>,
    /// The stream connection and whether it was reported open.
    stream: Option<(RequestId, bool)>,
}

impl Driver {
    /// Polls until `Wait`, `Stopped` or `NeedsAuthorization`, checking every
    /// action.
    fn drain(&mut self, bot: &mut Bot, now: u64) {
        for _ in 0..10_000 {
            let action = bot.poll(now);
            match action {
                Action::Wait { until_ms } => {
                    if let Some(at) = until_ms {
                        assert!(at > now, "asked to wait until {at} at {now}");
                    }
                    return;
                }
                Action::Stopped(_) | Action::NeedsAuthorization => return,
                Action::Send {
                    id,
                    request,
                    timeout_ms,
                } => {
                    assert!(timeout_ms > 0);
                    let token = request.endpoint == Endpoint::Token;
                    if token {
                        assert!(
                            !self.pending.iter().any(|(_, t)| *t),
                            "two token requests in flight"
                        );
                    }
                    if request.endpoint == Endpoint::Chat {
                        let body: serde_json::Value =
                            serde_json::from_slice(request.body.as_bytes())
                                .expect("chat body is JSON");
                        let message = body
                            .get("message")
                            .and_then(|m| m.as_str())
                            .expect("chat body has a message");
                        assert!(
                            utf16_len(message) <= CHAT_MAX_UTF16,
                            "a chat of {} units sent",
                            utf16_len(message)
                        );
                        assert_eq!(validate_chat(message), Ok(()));
                    }
                    assert!(!self.pending.iter().any(|(p, _)| *p == id), "id reused");
                    self.pending.push((id, token));
                }
                Action::OpenStream { id, .. } => {
                    assert!(
                        self.stream.is_none_or(|(open, _)| open != id),
                        "stream id reused"
                    );
                    self.stream = Some((id, false));
                }
                Action::CloseStream { id, .. }
                    if self.stream.is_some_and(|(open, _)| open == id) =>
                {
                    self.stream = None;
                }
                Action::CloseStream { id, .. } => {
                    self.pending.retain(|(p, _)| *p != id);
                }
                _ => {}
            }
        }
        panic!("poll never settled at {now}");
    }

    fn pick(&mut self, input: &mut Input<'_>) -> Option<RequestId> {
        if self.pending.is_empty() {
            return None;
        }
        let at = usize::from(input.byte()) % self.pending.len();
        Some(self.pending.remove(at).0)
    }
}

/// Chat texts for the machine: canned edge cases or bytes from the input.
fn chat_text_from(input: &mut Input<'_>) -> String {
    match input.byte() % 6 {
        0 => "hi".to_owned(),
        1 => "😀".repeat(usize::from(input.byte())),
        2 => " \n\u{3000}".to_owned(),
        3 => "word ".repeat(usize::from(input.byte())),
        4 => "e\u{301}".repeat(usize::from(input.byte())),
        _ => String::from_utf8_lossy(input.short()).into_owned(),
    }
}

/// The `Bot` driven by an operation list decoded from the bytes: byte 0
/// picks the start (no tokens, saved tokens, expired saved tokens) and
/// whether the stream is on; then each operation is one byte and its
/// arguments: time steps, responses (canned or raw bodies, any status and
/// header set) to any request in flight, transport errors, stream opens,
/// bytes and closes, app calls, reconnects, authorizations, timers and
/// shutdown. After each, the bot is polled until it waits. Never a panic,
/// never two token requests in flight, never a `Wait` at or before now,
/// never a chat body over 200 UTF-16 units (or invalid), never an endless
/// poll; app calls the bot refuses are refused with an error, not dropped.
pub fn bot(data: &[u8]) {
    let mut input = Input::new(data);
    let start = input.byte();
    let mut now = T0;
    let saved = match start % 3 {
        0 => None,
        1 => Some(saved_tokens(T0 + 3_600_000)),
        _ => Some(saved_tokens(T0 - 1)),
    };
    let mut bot = Bot::new(bot_config(start & 0x80 == 0), saved, u64::from(start));
    let mut driver = Driver::default();
    driver.drain(&mut bot, now);
    let mut ops = 0;
    while !input.is_empty() && ops < 512 {
        ops += 1;
        match input.byte() % 14 {
            0 | 13 => {
                let n = u64::from(input.byte());
                now = now.saturating_add(match input.byte() % 4 {
                    0 => n,
                    1 => n * 1000,
                    2 => n * 10_000,
                    _ => n * 600_000,
                });
            }
            1 => {
                let id = driver.pick(&mut input);
                let status = status_from(input.byte() % 32, 0);
                let headers = HEADER_SETS[usize::from(input.byte()) % HEADER_SETS.len()];
                let kind = input.byte();
                let body = if kind < 128 {
                    canned_body(kind % 12)
                } else {
                    input.short().to_vec()
                };
                if let Some(id) = id {
                    let _ = bot.on_response(id, status, headers, &body, now);
                }
            }
            2 => {
                let not_sent = input.byte() & 1 == 1;
                if let Some(id) = driver.pick(&mut input) {
                    let _ = if not_sent {
                        bot.on_not_sent(id, now)
                    } else {
                        bot.on_transport_error(id, now)
                    };
                }
            }
            3 => {
                let status = if input.byte() < 200 {
                    200
                } else {
                    status_from(input.byte() % 16, 0)
                };
                let headers = HEADER_SETS[usize::from(input.byte()) % HEADER_SETS.len()];
                if let Some((id, _)) = driver.stream {
                    let _ = bot.on_stream_open(id, status, headers, now);
                    driver.stream = Some((id, status == 200));
                }
            }
            4 => {
                let kind = input.byte();
                let chunk = if kind < 128 {
                    canned_bytes(kind % 7)
                } else {
                    input.short().to_vec()
                };
                if let Some((id, opened)) = driver.stream {
                    if !opened {
                        let _ = bot.on_stream_open(id, 200, HEADER_SETS[4], now);
                        driver.stream = Some((id, true));
                    }
                    let _ = bot.on_stream_bytes(id, &chunk, now);
                }
            }
            5 => {
                if let Some((id, _)) = driver.stream.take() {
                    let _ = bot.on_stream_closed(id, now);
                }
            }
            6 => {
                let text = chat_text_from(&mut input);
                let valid = validate_chat(&text).is_ok();
                let result = bot.send_chat(&text);
                if !valid {
                    assert!(result.is_err(), "an invalid chat was queued: {text:?}");
                }
            }
            7 => {
                let _ = match input.byte() % 3 {
                    0 => bot.fetch_broadcast(),
                    1 => bot.list_listeners(),
                    _ => bot.fetch_fans(),
                };
            }
            8 => bot.request_reconnect(now),
            9 => bot.authorize("code", "https://bot.test/cb"),
            10 => {
                let tag = ["a", "b", ""][usize::from(input.byte()) % 3];
                let n = u64::from(input.u16());
                match input.byte() % 3 {
                    0 => {
                        let _ = bot.schedule(now.saturating_add(n).saturating_sub(1000), tag);
                    }
                    1 => {
                        let _ = bot.every(n, tag, now.saturating_add(n / 2));
                    }
                    _ => {
                        bot.cancel_timer(tag);
                    }
                }
            }
            11 => {
                let revoke = input.byte().is_multiple_of(2);
                bot.shutdown(revoke);
            }
            _ => {
                // Poll early: the same `now` again is always allowed.
                let _ = bot.status(now);
            }
        }
        driver.drain(&mut bot, now);
    }
    // Drive out whatever is pending: answer it all with transport errors
    // while time runs on; the bot must settle without a panic.
    for _ in 0..16 {
        now = now.saturating_add(60_000);
        while let Some((id, _)) = driver.pending.pop() {
            let _ = bot.on_transport_error(id, now);
        }
        driver.drain(&mut bot, now);
    }
}
