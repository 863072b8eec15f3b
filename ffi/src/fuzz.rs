//! The C API fuzz body (target `c_api` in `fuzz/fuzz_targets/`; feature
//! `fuzzing`; not API): an operation list decoded from the bytes calls the
//! exported functions the way a C program may — NULL handles, NULL
//! out-parameters, (NULL, n) pairs, invalid UTF-8, enum values out of range,
//! request ids never issued, any numbers — but never the way the contract
//! calls undefined behaviour (a length longer than its buffer, a freed
//! handle, a view used after the next call on its handle), which C cannot
//! be protected from.
//!
//! After every call it asserts:
//! - the result is one the function documents for those arguments (never
//!   `ONAIR_PANIC`): `ONAIR_OK` when every argument is good, one of the
//!   errors the bad ones call for otherwise;
//! - out-parameters are written on `ONAIR_OK` and untouched otherwise
//!   (they are poisoned before the call);
//! - every string handed out is valid UTF-8 of its stated length,
//!   NUL-terminated where the contract says so, JSON where it says so;
//! - the answer is the core's: each handle has a shadow (the core value
//!   behind it, fed the same calls), and items, actions, events, results,
//!   ids and JSON forms must agree with it;
//! - at the end every handle and string is freed: cargo-fuzz runs this
//!   under AddressSanitizer, whose leak check fails the run on a leak.
//!
//! The bytes are read by the core's cursor ([`onair_core::fuzz::Input`],
//! the style of `onair::fuzz::bot`): one byte picks a group of functions
//! (see [`c_api`]), the next the function, then a *faults* byte (under
//! 0xE0: none; 0xE0–0xEF: spoil argument `b & 15`; 0xF0–0xFF: a 16-bit mask
//! of arguments follows) and the arguments: canned values picked by a
//! byte, or raw bytes (a length byte, then that many).

use std::collections::VecDeque;
use std::ffi::{c_char, CStr};
use std::mem::{size_of, MaybeUninit};
use std::ptr::{null, null_mut};

use onair_core::bot::Status;
use onair_core::event::Decoder;
use onair_core::fuzz::Input;
use onair_core::kit::audience::{Audience, Greeting};
use onair_core::kit::commands::{Allowed, Commands, Role};
use onair_core::kit::milestones::{Milestone, Milestones};
use onair_core::kit::tally::Tally;
use onair_core::kit::text;
use onair_core::proto::backoff::Backoff;
use onair_core::proto::endpoint::Endpoint;
use onair_core::proto::json::{ActionJson, ItemJson, RawItemJson, TallyJson};
use onair_core::proto::problem::classify;
use onair_core::proto::ratelimit::{QuotaHeaders, RetryAfter};
use onair_core::proto::sse::{self, Parser};
use onair_core::proto::timers::{Timer, TimerError, Timers};
use onair_core::{
    Action, BaseUrl, Bot, BotConfig, ClientCredentials, Event, HttpRequest, Item, Misuse,
    RequestId, Tokens,
};

use crate::onair_result::{self, *};
use crate::view::event_in;
use crate::*;

// ---------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------

/// Which arguments of a call to spoil.
#[derive(Debug, Clone, Copy)]
struct Faults(u16);

/// Pass NULL for the handle.
const HANDLE: u16 = 0;
/// NULL for the first out-parameter.
const OUT: u16 = 1;
/// NULL for the second (often optional) out-parameter.
const OUT2: u16 = 2;
/// (NULL, 0) for the first buffer argument.
const NULL0: u16 = 3;
/// (NULL, n > 0) for the first buffer argument.
const NULLN: u16 = 4;
/// (NULL, 0) for the second buffer argument.
const NULL0_B: u16 = 5;
/// (NULL, n > 0) for the second buffer argument.
const NULLN_B: u16 = 6;
/// (NULL, n > 0) for the header array.
const HEADERS: u16 = 7;
/// The first header's name is (NULL, n > 0).
const HEADER_NAME: u16 = 8;
/// The last header's value is (NULL, n > 0).
const HEADER_VALUE: u16 = 9;
/// NULL for the event pointer.
const EVENT_NULL: u16 = 10;
/// An `onair_event` that holds no event (`opaque` NULL).
const EVENT_NONE: u16 = 11;
/// NULL for an optional argument (the audience of `onair_commands_match`).
const AUX: u16 = 12;

impl Faults {
    fn read(input: &mut Input<'_>) -> Faults {
        match input.byte() {
            b @ 0xE0..=0xEF => Faults(1 << (b & 0x0F)),
            0xF0..=0xFF => Faults(input.u16()),
            _ => Faults(0),
        }
    }

    fn has(self, fault: u16) -> bool {
        self.0 & (1 << fault) != 0
    }
}

/// The errors a call's arguments make certain: the call must answer one of
/// them; with none, it must answer what the shadow says.
#[derive(Debug, Default)]
struct Expect(Vec<onair_result>);

impl Expect {
    fn new() -> Expect {
        Expect::default()
    }

    fn add(&mut self, cond: bool, code: onair_result) -> &mut Expect {
        if cond && !self.0.contains(&code) {
            self.0.push(code);
        }
        self
    }

    fn any(&self) -> bool {
        !self.0.is_empty()
    }

    fn check(&self, what: &str, got: onair_result, otherwise: onair_result) {
        assert_ne!(got, ONAIR_PANIC, "{what}: libonair panicked");
        if self.any() {
            assert!(
                self.0.contains(&got),
                "{what}: {got:?}, expected one of {:?}",
                self.0
            );
        } else {
            assert_eq!(got, otherwise, "{what}");
        }
    }
}

const POISON: u8 = 0xA5;

/// An out-parameter: poisoned bytes before the call, so a write shows. The
/// slot lives in a box, poisoned in place: moving a `MaybeUninit<T>` would
/// not keep the bytes of T's padding (a typed copy), the box never moves them.
struct Out<T> {
    mem: Box<MaybeUninit<T>>,
    null: bool,
}

impl<T: Copy> Out<T> {
    fn new(null: bool) -> Out<T> {
        let mut mem = Box::new(MaybeUninit::<T>::uninit());
        // SAFETY: writes size_of::<T>() bytes into the slot's own storage.
        unsafe {
            mem.as_mut_ptr()
                .cast::<u8>()
                .write_bytes(POISON, size_of::<T>())
        };
        Out { mem, null }
    }

    fn ptr(&mut self) -> *mut T {
        if self.null {
            null_mut()
        } else {
            self.mem.as_mut_ptr()
        }
    }

    /// Whether every byte still holds the poison. Only asked when the call
    /// failed: a typed write leaves the padding of a struct uninitialised,
    /// so after one the bytes may not be read as bytes (miri says so).
    fn poisoned(&self) -> bool {
        // SAFETY: the slot was poisoned in full, and a call that failed did
        // not write it (if it did, a typed write, miri reports the read).
        let bytes =
            unsafe { std::slice::from_raw_parts(self.mem.as_ptr().cast::<u8>(), size_of::<T>()) };
        bytes.iter().all(|&b| b == POISON)
    }

    /// The value written on `ONAIR_OK`; `None` on an error (asserting that
    /// nothing was written) or when NULL was passed. Whether an `ONAIR_OK`
    /// wrote its value shows in the comparisons with the shadow that follow
    /// (poison is no value the core gives).
    fn after(&self, what: &str, r: onair_result) -> Option<T> {
        if self.null {
            return None;
        }
        if r == ONAIR_OK {
            // SAFETY: on ONAIR_OK the function wrote a whole T.
            Some(unsafe { self.mem.assume_init_read() })
        } else {
            assert!(
                self.poisoned(),
                "{what}: an out-parameter was written on {r:?}"
            );
            None
        }
    }
}

/// A (pointer, length) argument whose length never exceeds its buffer.
#[derive(Debug)]
struct Buf {
    bytes: Vec<u8>,
    null: bool,
    len: usize,
}

impl Buf {
    fn new(bytes: Vec<u8>, faults: Faults, null0: u16, nulln: u16) -> Buf {
        if faults.has(nulln) {
            let len = bytes.len().max(1);
            Buf {
                bytes,
                null: true,
                len,
            }
        } else if faults.has(null0) {
            Buf {
                bytes,
                null: true,
                len: 0,
            }
        } else {
            let len = bytes.len();
            Buf {
                bytes,
                null: false,
                len,
            }
        }
    }

    fn ptr(&self) -> *const u8 {
        if self.null {
            null()
        } else {
            self.bytes.as_ptr()
        }
    }

    fn cptr(&self) -> *const c_char {
        self.ptr().cast()
    }

    /// The bytes the function reads when (NULL, 0) means empty.
    fn seen(&self) -> &[u8] {
        if self.null {
            &[]
        } else {
            &self.bytes
        }
    }

    /// The text, when not NULL and UTF-8.
    fn text(&self) -> Option<&str> {
        if self.null {
            None
        } else {
            std::str::from_utf8(&self.bytes).ok()
        }
    }

    /// A byte argument: (NULL, 0) is empty, (NULL, n > 0) is refused.
    fn bytes_faults(&self, e: &mut Expect) {
        e.add(self.null && self.len > 0, ONAIR_NULL_PARAMETER);
    }

    /// A required text argument: NULL is refused whatever the length.
    fn text_faults(&self, e: &mut Expect) {
        e.add(self.null, ONAIR_NULL_PARAMETER);
        e.add(
            !self.null && std::str::from_utf8(&self.bytes).is_err(),
            ONAIR_INVALID_UTF8,
        );
    }
}

/// A canned value (a byte under the table's length picks it) or raw bytes.
fn pick(input: &mut Input<'_>, table: &[&[u8]]) -> Vec<u8> {
    let b = usize::from(input.byte());
    match table.get(b) {
        Some(t) => t.to_vec(),
        None => input.short().to_vec(),
    }
}

/// A number: one byte picks a kind, edge values included.
fn number(input: &mut Input<'_>, now: u64) -> u64 {
    match input.byte() % 8 {
        0 => 0,
        1 => 1,
        2 => u64::MAX,
        3 => now,
        4 => now.saturating_add(u64::from(input.u16()) * 1000),
        5 => u64::from(input.u16()),
        6 => u64::from(input.byte()),
        _ => now.saturating_sub(u64::from(input.u16())),
    }
}

fn usize_of(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Response headers as C passes them.
#[derive(Debug)]
struct Headers {
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
    raw: Vec<onair_header>,
    array_null: bool,
    bad: bool,
}

const HEADER_TABLE: [(&str, &str); 10] = [
    ("Retry-After", "30"),
    ("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT"),
    ("x-ratelimit-remaining", "0"),
    ("x-ratelimit-replenish-rate", "1"),
    ("X-RateLimit-Burst-Capacity", "5"),
    ("x-ratelimit-daily-limit", "1000"),
    ("x-ratelimit-daily-remaining", "0"),
    ("x-ratelimit-daily-reset", "1732300000"),
    ("x-ratelimit-daily-scope", "chat.send"),
    ("content-type", "text/event-stream"),
];

impl Headers {
    fn read(input: &mut Input<'_>, faults: Faults) -> Headers {
        let n = usize::from(input.byte() % 5);
        let mut pairs = Vec::with_capacity(n);
        for _ in 0..n {
            let b = usize::from(input.byte());
            pairs.push(match HEADER_TABLE.get(b) {
                Some((name, value)) => (name.as_bytes().to_vec(), value.as_bytes().to_vec()),
                None => (input.short().to_vec(), input.short().to_vec()),
            });
        }
        let mut raw: Vec<onair_header> = pairs
            .iter()
            .map(|(n, v)| onair_header {
                name: n.as_ptr().cast(),
                name_len: n.len(),
                value: v.as_ptr().cast(),
                value_len: v.len(),
            })
            .collect();
        let mut bad = false;
        if faults.has(HEADER_NAME) {
            if let Some(h) = raw.first_mut() {
                h.name = null();
                h.name_len = h.name_len.max(1);
                bad = true;
            }
        }
        if faults.has(HEADER_VALUE) {
            if let Some(h) = raw.last_mut() {
                h.value = null();
                h.value_len = h.value_len.max(1);
                bad = true;
            }
        }
        let array_null = faults.has(HEADERS);
        Headers {
            pairs,
            raw,
            array_null,
            bad: bad || array_null,
        }
    }

    fn ptr(&self) -> *const onair_header {
        if self.array_null {
            null()
        } else {
            self.raw.as_ptr()
        }
    }

    fn len(&self) -> usize {
        if self.array_null {
            self.raw.len().max(1)
        } else {
            self.raw.len()
        }
    }

    fn faults(&self, e: &mut Expect) {
        e.add(self.bad, ONAIR_NULL_PARAMETER);
    }

    fn core(&self) -> Vec<(&[u8], &[u8])> {
        self.pairs
            .iter()
            .map(|(n, v)| (n.as_slice(), v.as_slice()))
            .collect()
    }
}

// ---------------------------------------------------------------------------
// Checks on what comes out
// ---------------------------------------------------------------------------

/// A borrowed `onair_str`: NULL with length 0, or valid UTF-8.
fn view_str<'a>(what: &str, s: onair_str) -> Option<&'a str> {
    if s.ptr.is_null() {
        assert_eq!(s.len, 0, "{what}: NULL with a length");
        return None;
    }
    // SAFETY: a view the library handed out: `len` bytes at `ptr`, alive
    // until the next call on its handle (this is called before that).
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len) };
    Some(std::str::from_utf8(bytes).unwrap_or_else(|e| panic!("{what}: not UTF-8: {e}")))
}

/// A borrowed string that is also NUL-terminated at `len`, without a NUL
/// inside.
fn view_cstr<'a>(what: &str, p: *const c_char, len: usize) -> &'a str {
    assert!(!p.is_null(), "{what}: NULL");
    // SAFETY: the library documents `len` bytes and a NUL after them.
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len + 1) };
    assert_eq!(bytes[len], 0, "{what}: no NUL at its length");
    assert!(!bytes[..len].contains(&0), "{what}: a NUL inside");
    std::str::from_utf8(&bytes[..len]).unwrap_or_else(|e| panic!("{what}: not UTF-8: {e}"))
}

/// A string the caller owns (`onair_string_free`): its length, its text;
/// freed here.
fn owned(what: &str, p: *mut c_char, len: Option<usize>) -> String {
    assert!(!p.is_null(), "{what}: NULL string on ONAIR_OK");
    // SAFETY: a NUL-terminated string from CString::into_raw.
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    if let Some(len) = len {
        assert_eq!(bytes.len(), len, "{what}: stated length");
    }
    let text = std::str::from_utf8(bytes)
        .unwrap_or_else(|e| panic!("{what}: not UTF-8: {e}"))
        .to_owned();
    // SAFETY: freed once, as documented.
    unsafe { onair_string_free(p) };
    text
}

fn json(what: &str, text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {text}"))
}

/// The view of an event against the core's event.
fn check_event(what: &str, v: &onair_event, id: Option<&str>, want: &Event) {
    use crate::onair_event_kind::*;
    // SAFETY: a view from a live handle, checked before its next call.
    let got = unsafe { event_in(v) }.unwrap_or_else(|e| panic!("{what}: no event ({e:?})"));
    assert_eq!(&*got, want, "{what}: opaque event");
    assert_eq!(view_str(what, v.name), Some(want.name()), "{what}: name");
    assert_eq!(view_str(what, v.id), id, "{what}: id");
    for s in [
        v.user_id,
        v.nickname,
        v.message,
        v.time,
        v.like_type,
        v.presence_type,
        v.end_reason,
    ] {
        view_str(what, s);
    }
    if let Some(user) = want.user() {
        assert_eq!(view_str(what, v.user_id), Some(user.id.as_str()));
        assert_eq!(view_str(what, v.nickname), user.nickname.as_deref());
    }
    let kind = match want {
        Event::Chat(c) => {
            assert_eq!(view_str(what, v.message), Some(c.message.as_str()));
            assert_eq!(v.is_dj, c.is_dj);
            ONAIR_EVENT_CHAT
        }
        Event::Presence(p) => {
            assert_eq!(v.fan_rank, p.fan_rank.unwrap_or(0));
            assert_eq!(v.has_fan_rank, p.fan_rank.is_some());
            assert_eq!(
                v.favorite_temperature.to_bits(),
                p.favorite_temperature.unwrap_or(0.0).to_bits()
            );
            ONAIR_EVENT_PRESENCE
        }
        Event::Like(l) => {
            assert_eq!(
                (v.amount, v.total_amount, v.extra_amount),
                (l.amount, l.total_amount, l.extra_amount)
            );
            assert_eq!(
                (v.has_combo, v.combo),
                (l.combo.is_some(), l.combo.unwrap_or(0))
            );
            ONAIR_EVENT_LIKE
        }
        Event::Donation(d) => {
            assert_eq!(v.amount, d.amount);
            assert_eq!(view_str(what, v.message), d.message.as_deref());
            ONAIR_EVENT_DONATION
        }
        Event::End(e) => {
            assert_eq!(view_str(what, v.end_reason), Some(e.reason.as_str()));
            ONAIR_EVENT_END
        }
        #[allow(unreachable_patterns)]
        _ => ONAIR_EVENT_OTHER,
    };
    assert_eq!(v.kind, kind, "{what}: kind");
}

/// A decoder item view against the core's item.
fn check_item(v: &onair_item, want: Option<&Item>) {
    use crate::onair_item_kind::*;
    let what = "onair_decoder_next";
    for s in [v.name, v.id, v.text, v.error_code, v.error_message] {
        view_str(what, s);
    }
    match want {
        None => assert_eq!(v.kind, ONAIR_ITEM_NONE, "{what}: an item the core has not"),
        Some(Item::Event { id, event }) => {
            assert_eq!(v.kind, ONAIR_ITEM_EVENT, "{what}");
            let id = id.as_ref().map(|i| i.as_str());
            assert_eq!(view_str(what, v.id), id);
            check_event(what, &v.event, id, event);
        }
        Some(Item::Unknown { event, id, data }) => {
            assert_eq!(v.kind, ONAIR_ITEM_UNKNOWN, "{what}");
            assert_eq!(view_str(what, v.name), Some(event.as_str()));
            assert_eq!(view_str(what, v.id), id.as_ref().map(|i| i.as_str()));
            assert_eq!(view_str(what, v.text), Some(data.as_str()));
        }
        Some(Item::Heartbeat) => assert_eq!(v.kind, ONAIR_ITEM_HEARTBEAT, "{what}"),
        Some(Item::Comment(text)) => {
            assert_eq!(v.kind, ONAIR_ITEM_COMMENT, "{what}");
            assert_eq!(view_str(what, v.text), Some(text.as_str()));
        }
        Some(Item::Retry(ms)) => {
            assert_eq!(v.kind, ONAIR_ITEM_RETRY, "{what}");
            assert_eq!(v.retry_ms, *ms);
        }
        Some(Item::Error(e)) => {
            assert_eq!(v.kind, ONAIR_ITEM_ERROR, "{what}");
            assert_eq!(view_str(what, v.error_code), Some(e.kind.code()));
            assert_eq!(view_str(what, v.error_message), Some(e.message.as_str()));
            assert_eq!(view_str(what, v.text), Some(e.raw.as_str()));
            assert_eq!(view_str(what, v.name), e.event.as_deref());
            assert_eq!(view_str(what, v.id), e.id.as_ref().map(|i| i.as_str()));
        }
    }
}

/// What the generic parser's view must show for one item.
#[derive(Debug, Clone, PartialEq)]
struct RawItem {
    kind: onair_sse_item_kind,
    event: Option<String>,
    data: Option<String>,
    id: Option<String>,
    last_event_id: Option<String>,
    text: Option<String>,
    retry_ms: u64,
    code: Option<String>,
    line: String,
}

impl RawItem {
    fn of(item: &sse::Item<'_>) -> RawItem {
        use crate::onair_sse_item_kind::*;
        let mut r = RawItem {
            kind: ONAIR_SSE_NONE,
            event: None,
            data: None,
            id: None,
            last_event_id: None,
            text: None,
            retry_ms: 0,
            code: None,
            line: RawItemJson(item).to_line(),
        };
        match item {
            sse::Item::Event(f) => {
                r.kind = ONAIR_SSE_EVENT;
                r.event = Some(f.event.to_owned());
                r.data = Some(f.data.to_owned());
                r.id = f.id.map(str::to_owned);
                r.last_event_id = Some(f.last_event_id.to_owned());
            }
            sse::Item::Comment(text) => {
                r.kind = ONAIR_SSE_COMMENT;
                r.text = Some((*text).to_owned());
            }
            sse::Item::Retry(ms) => {
                r.kind = ONAIR_SSE_RETRY;
                r.retry_ms = *ms;
            }
            sse::Item::Error(e) => {
                r.kind = ONAIR_SSE_ERROR;
                r.event = e.event.map(str::to_owned);
                r.id = e.id.map(str::to_owned);
                r.text = Some(e.raw.to_owned());
                r.code = Some(e.kind.code().to_owned());
            }
        }
        r
    }

    fn check(want: Option<&RawItem>, v: &onair_sse_item) {
        let what = "onair_sse_parser_next";
        let got = RawItem {
            kind: v.kind,
            event: view_str(what, v.event).map(str::to_owned),
            data: view_str(what, v.data).map(str::to_owned),
            id: view_str(what, v.id).map(str::to_owned),
            last_event_id: view_str(what, v.last_event_id).map(str::to_owned),
            text: view_str(what, v.text).map(str::to_owned),
            retry_ms: v.retry_ms,
            code: view_str(what, v.error_code).map(str::to_owned),
            line: want.map(|w| w.line.clone()).unwrap_or_default(),
        };
        match want {
            Some(w) => assert_eq!(&got, w, "{what}"),
            None => assert_eq!(got.kind, onair_sse_item_kind::ONAIR_SSE_NONE, "{what}"),
        }
    }
}

/// A request view against the core's request.
fn check_request(v: &onair_request, r: &HttpRequest) {
    let what = "onair_action.request";
    assert_eq!(view_str(what, v.endpoint), Some(r.endpoint.as_str()));
    assert_eq!(
        view_cstr(what, v.method.ptr, v.method.len),
        r.method.as_str()
    );
    assert_eq!(view_cstr(what, v.url.ptr, v.url.len), r.url);
    assert_eq!(v.headers_len, r.headers.len(), "{what}: headers");
    for (i, (name, value)) in r.headers.iter().enumerate() {
        // SAFETY: `headers_len` headers and lines, alive until the next call.
        let (h, line) = unsafe { (*v.headers.add(i), *v.header_lines.add(i)) };
        assert_eq!(view_cstr(what, h.name, h.name_len), *name);
        assert_eq!(view_cstr(what, h.value, h.value_len), value.as_str());
        // SAFETY: each line is NUL-terminated.
        let line = unsafe { CStr::from_ptr(line) }
            .to_str()
            .expect("a header line is UTF-8");
        assert_eq!(line, format!("{name}: {}", value.as_str()));
    }
    let body = r.body.as_bytes();
    if body.is_empty() {
        assert!(v.body.is_null() && v.body_len == 0, "{what}: empty body");
    } else {
        // SAFETY: `body_len` bytes, alive until the next call.
        let got = unsafe { std::slice::from_raw_parts(v.body, v.body_len) };
        assert_eq!(got, body, "{what}: body");
    }
}

/// An action view against the core's action.
fn check_action(v: &onair_action, want: &Action, now: u64) {
    use crate::onair_action_kind::*;
    let what = "onair_bot_poll";
    view_str(what, v.code);
    view_str(what, v.tag);
    if !v.message.ptr.is_null() {
        view_cstr(what, v.message.ptr, v.message.len);
    }
    match want {
        Action::Send {
            id,
            request,
            timeout_ms,
        } => {
            assert_eq!(
                (v.kind, v.request_id, v.timeout_ms),
                (ONAIR_ACTION_SEND, id.0, *timeout_ms)
            );
            check_request(&v.request, request);
        }
        Action::OpenStream { id, request } => {
            assert_eq!((v.kind, v.request_id), (ONAIR_ACTION_OPEN_STREAM, id.0));
            check_request(&v.request, request);
        }
        Action::CloseStream { id } => {
            assert_eq!((v.kind, v.request_id), (ONAIR_ACTION_CLOSE_STREAM, id.0));
        }
        Action::TimedOut { id, endpoint } => {
            assert_eq!((v.kind, v.request_id), (ONAIR_ACTION_TIMED_OUT, id.0));
            assert_eq!(view_str(what, v.code), Some(endpoint.as_str()));
        }
        Action::Event { id, event } => {
            assert_eq!(v.kind, ONAIR_ACTION_EVENT, "{what}");
            check_event(what, &v.event, id.as_ref().map(|i| i.as_str()), event);
        }
        Action::Notice(_) => assert_eq!(v.kind, ONAIR_ACTION_NOTICE, "{what}"),
        Action::Done { call, .. } => {
            assert_eq!((v.kind, v.call_id), (ONAIR_ACTION_DONE, call.0));
        }
        Action::PersistTokens(tokens) => {
            assert_eq!(v.kind, ONAIR_ACTION_PERSIST_TOKENS, "{what}");
            let json = view_cstr(what, v.tokens_json.ptr, v.tokens_json.len);
            assert_eq!(json, tokens.to_json().as_str());
        }
        Action::Timer { tag } => {
            assert_eq!(v.kind, ONAIR_ACTION_TIMER, "{what}");
            assert_eq!(view_str(what, v.tag), Some(tag.as_str()));
        }
        Action::NeedsAuthorization => assert_eq!(v.kind, ONAIR_ACTION_NEEDS_AUTHORIZATION),
        Action::Wait { until_ms } => {
            assert_eq!(v.kind, ONAIR_ACTION_WAIT, "{what}");
            assert_eq!(
                (v.has_until_ms, v.until_ms),
                (until_ms.is_some(), until_ms.unwrap_or(0))
            );
            if v.has_until_ms {
                assert!(
                    v.until_ms > now,
                    "{what}: WAIT until {} at {now}",
                    v.until_ms
                );
            }
        }
        Action::Stopped(stop) => {
            assert_eq!(v.kind, ONAIR_ACTION_STOPPED, "{what}");
            assert_eq!(view_str(what, v.code), Some(stop.code()));
            assert_eq!(v.resumes_with_new_consent, stop.resumes_with_new_consent());
        }
        _ => assert_eq!(v.kind, ONAIR_ACTION_OTHER, "{what}"),
    }
}

// ---------------------------------------------------------------------------
// The documented result of the core's errors
// ---------------------------------------------------------------------------

fn misuse_code(e: Misuse) -> onair_result {
    match e {
        Misuse::UnknownRequest(_) => ONAIR_UNKNOWN_REQUEST,
        Misuse::NotAStream(_) => ONAIR_NOT_A_STREAM,
        Misuse::StreamNotStarted(_) => ONAIR_STREAM_NOT_STARTED,
        _ => ONAIR_MISUSE,
    }
}

fn report_code(r: Result<(), Misuse>) -> onair_result {
    r.map_or_else(misuse_code, |()| ONAIR_OK)
}

fn call_code(e: &onair_core::proto::chat::ChatError) -> onair_result {
    match e.kind {
        onair_core::proto::chat::ChatErrorKind::Empty => ONAIR_CHAT_EMPTY,
        _ => ONAIR_CHAT_TOO_LONG,
    }
}

/// `onair_result`'s documentation: a bad tag is ONAIR_BAD_TAG, a full
/// table ONAIR_TOO_MANY_TIMERS, "a step of 0" ONAIR_INVALID_ARGUMENT.
fn timer_code(r: Result<(), TimerError>) -> onair_result {
    match r {
        Ok(()) => ONAIR_OK,
        Err(TimerError::TooMany) => ONAIR_TOO_MANY_TIMERS,
        Err(TimerError::ZeroPeriod) => ONAIR_INVALID_ARGUMENT,
        Err(_) => ONAIR_BAD_TAG,
    }
}

// ---------------------------------------------------------------------------
// Canned arguments
// ---------------------------------------------------------------------------

const T0: u64 = 1_732_250_000_000;
const SCOPES: &str = "live.read listeners.read fans.read events.chat events.presence events.like events.donation chat.send";

const CHUNKS: [&[u8]; 14] = [
    b":heartbeat\n\n",
    b"id:1732250100000-0\nevent:chat\ndata:{\"user\":{\"id\":\"u1\",\"nickname\":\"Mina\"},\"isDj\":false,\"message\":\"!hello there\",\"sentTime\":\"2024-11-22T04:33:20Z\"}\n\n",
    b"id:1732250101000-1\nevent:presence\ndata:{\"user\":{\"id\":\"u2\",\"nickname\":null},\"type\":\"JOIN\",\"fanRank\":2,\"isManager\":true,\"favoriteTemperature\":36.5,\"time\":\"2024-11-22T04:33:25.5Z\"}\n\n",
    b"id:1732250102000-2\nevent:like\ndata:{\"user\":{\"id\":\"u2\",\"nickname\":\"B\"},\"type\":\"PAID\",\"totalAmount\":60,\"amount\":10,\"extraAmount\":5,\"combo\":4,\"time\":\"2024-11-22T04:33:24Z\"}\n\n",
    b"id:1732250103000-3\nevent:donation\ndata:{\"user\":{\"id\":\"u1\",\"nickname\":\"Mina\"},\"amount\":1000,\"message\":\"gift\",\"time\":\"2024-11-22T04:35:03Z\"}\n\n",
    b"event:end\ndata:{\"reason\":\"RECONNECT\"}\n\n",
    b"event:end\ndata:{\"reason\":\"LIVE_ENDED\"}\n\n",
    b"retry:1500\n\n",
    b"event:chat\ndata:{nope\n\n\xff\xfe",
    b"id:7\nevent:gift\ndata:{}\n\n",
    b"\xef\xbb\xbfdata:a\r\ndata:b\r\n\r\n",
    b"id:1-1\nevent:chat\ndata:{\"user\":{\"id\":\"dj\"},\"isDj\":true,\"message\":\"!stop now\",\"sentTime\":\"t\"}\n\n",
    b"data:",
    b": a comment\n\n",
];

const BODIES: [&[u8]; 8] = [
    b"",
    b"{\"access_token\":\"atX\",\"token_type\":\"Bearer\",\"expires_in\":3600,\"refresh_token\":\"rtX\",\"scope\":\"live.read listeners.read fans.read events.chat events.presence events.like events.donation chat.send\"}",
    b"{\"error\":\"invalid_grant\"}",
    b"{\"instance\":\"/v1/live\",\"status\":403,\"title\":\"x\",\"detailCode\":\"OAPI_MNGR_0208\",\"message\":\"m\",\"timestamp\":1}",
    b"{\"instance\":\"/v1/live\",\"status\":429,\"title\":\"x\",\"detailCode\":\"OAPI_MNGR_0302\",\"message\":\"m\",\"timestamp\":1}",
    b"{\"listeners\":[{\"id\":\"a\",\"nickname\":\"A\"}],\"nextCursor\":null}",
    b"{\"liveId\":1,\"title\":\"t\",\"startedAt\":\"2024-01-01T00:00:00Z\",\"closeAirTime\":\"2024-01-01T01:00:00Z\",\"listenerCount\":2,\"totalListenerCount\":5,\"welcomeMessage\":\"hi\",\"isChatFrozen\":false,\"categories\":[],\"tags\":[]}",
    b"<html>bad gateway</html>",
];

const STATUSES: [u16; 12] = [200, 204, 400, 401, 403, 404, 429, 500, 502, 503, 301, 599];

fn status(input: &mut Input<'_>) -> u16 {
    let b = input.byte();
    match STATUSES.get(usize::from(b)) {
        Some(&s) => s,
        None => u16::from(b)
            .wrapping_mul(4)
            .wrapping_add(u16::from(input.byte())),
    }
}

const TEXTS: [&[u8]; 7] = [
    b"hi",
    b" \n\xe3\x80\x80\t",
    b"",
    "😀 하늘이 좋아요 ".as_bytes(),
    b"e\xcc\x81e\xcc\x81",
    b"\xff\xfe bad",
    b"word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word",
];

/// Chat or split text: canned, raw, or long repetitions.
fn long_text(input: &mut Input<'_>) -> Vec<u8> {
    let b = input.byte();
    match b {
        0xF0..=0xF7 => {
            let unit: &[u8] = ["😀".as_bytes(), b"ab ", b"e\xcc\x81", b"  "][usize::from(b & 3)];
            unit.repeat(usize::from(input.byte()))
        }
        _ => match TEXTS.get(usize::from(b)) {
            Some(t) => t.to_vec(),
            None => input.short().to_vec(),
        },
    }
}

const TAGS: [&[u8]; 5] = [
    b"a",
    b"b",
    b"",
    b"a\x01b",
    b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
];

fn token_file(access_expires_at_ms: u64) -> Vec<u8> {
    format!(
        r#"{{"format":"onair.tokens","version":1,"generation":1,"access_token":"at0","access_expires_at_ms":{access_expires_at_ms},"issued_at_ms":{},"refresh_token":"rt0","refresh_expires_at_ms":{},"scope":"{SCOPES}"}}"#,
        T0 - 60_000,
        T0 + 30 * 86_400_000
    )
    .into_bytes()
}

// ---------------------------------------------------------------------------
// The handles and their shadows
// ---------------------------------------------------------------------------

/// Which handle the current event view borrows from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Src {
    Decoder,
    Bot,
}

/// The typed decoder's shadow: the core decoder fed the same bytes.
struct DecoderShadow {
    decoder: Decoder,
    queue: VecDeque<Item>,
    current: Option<Item>,
}

/// The generic parser's shadow.
struct SseShadow {
    parser: Parser,
    queue: VecDeque<RawItem>,
    current: Option<RawItem>,
}

/// A bot, its shadow and the ids it issued.
struct BotState {
    c: *mut onair_bot,
    shadow: Bot,
    polled: Option<Action>,
    sent: Vec<u64>,
    stream: Option<u64>,
}

/// A kit handle and its shadow.
struct Kit<H, S> {
    c: *mut H,
    shadow: S,
}

struct Fuzz {
    now: u64,
    event: Option<(Src, onair_event)>,
    list: Option<Kit<onair_string_list, Vec<String>>>,
    decoder: Option<Kit<onair_decoder, DecoderShadow>>,
    sse: Option<Kit<onair_sse_parser, SseShadow>>,
    backoff: Option<Kit<onair_backoff, Backoff>>,
    config: Option<Kit<onair_bot_config, BotConfig>>,
    bot: Option<BotState>,
    audience: Option<Kit<onair_audience, Audience>>,
    commands: Option<Kit<onair_commands, Commands>>,
    milestones: Option<Kit<onair_milestones, Milestones>>,
    timers: Option<Kit<onair_timers, Timers>>,
    tally: Option<Kit<onair_tally, Tally>>,
}

/// The handle to pass: NULL when spoiled or absent.
fn handle<H, S>(kit: &Option<Kit<H, S>>, faults: Faults) -> *mut H {
    match kit {
        Some(k) if !faults.has(HANDLE) => k.c,
        _ => null_mut(),
    }
}

/// The C API driven by an operation list (see the module docs). Each
/// operation: a group byte (`% 16`: 0 conventions, 1 decisions, 2 backoff,
/// 3 text, 4 decoder, 5 raw SSE parser, 6 bot config, 7 bot loop and
/// reports, 8 bot commands and getters, 9 audience, 10 commands, 11
/// milestones, 12 timers, 13 tally, 14 `onair_event_json`, 15 time), a
/// function byte, a faults byte and the arguments.
pub fn c_api(data: &[u8]) {
    let mut input = Input::new(data);
    let mut fz = Fuzz {
        now: T0,
        event: None,
        list: None,
        decoder: None,
        sse: None,
        backoff: None,
        config: None,
        bot: None,
        audience: None,
        commands: None,
        milestones: None,
        timers: None,
        tally: None,
    };
    let mut ops = 0;
    while !input.is_empty() && ops < 512 {
        ops += 1;
        let group = input.byte() % 16;
        let op = input.byte();
        let faults = Faults::read(&mut input);
        let i = &mut input;
        match group {
            0 => fz.conventions(op, i),
            1 => fz.decisions(op, faults, i),
            2 => fz.backoff(op, faults, i),
            3 => fz.text(op, faults, i),
            4 => fz.decoder(op, faults, i),
            5 => fz.sse(op, faults, i),
            6 => fz.config(op, faults, i),
            7 => fz.bot_loop(op, faults, i),
            8 => fz.bot_calls(op, faults, i),
            9 => fz.audience(op, faults, i),
            10 => fz.commands(op, faults, i),
            11 => fz.milestones(op, faults, i),
            12 => fz.timers(op, faults, i),
            13 => fz.tally(op, faults, i),
            14 => fz.event_json(faults),
            _ => fz.time(op, i),
        }
    }
    fz.free_all();
}

impl Fuzz {
    /// A call on a handle ends the life of the views it handed out.
    fn touch(&mut self, src: Src) {
        if self.event.is_some_and(|(s, _)| s == src) {
            self.event = None;
        }
    }

    // ---- 0: conventions ----------------------------------------------------

    fn conventions(&mut self, op: u8, input: &mut Input<'_>) {
        let code = u32::from(input.u16()) | (u32::from(op) << 24);
        for c in [code, code & 0xFF] {
            let p = onair_result_message(c);
            assert!(!p.is_null());
            // SAFETY: a static NUL-terminated text.
            let text = unsafe { CStr::from_ptr(p) }
                .to_str()
                .expect("a result message is UTF-8");
            assert!(!text.is_empty());
        }
        assert_eq!(onair_abi_version(), ONAIR_ABI_VERSION);
        // SAFETY: a static NUL-terminated text.
        let version = unsafe { CStr::from_ptr(onair_version()) };
        assert_eq!(version.to_str().ok(), Some(env!("CARGO_PKG_VERSION")));
        // SAFETY: NULL is fine.
        unsafe { onair_string_free(null_mut()) };
    }

    // ---- 1: decisions --------------------------------------------------------

    fn decisions(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        let now = number(input, self.now);
        match op % 4 {
            0 | 1 => {
                let names: Vec<&[u8]> = Endpoint::ALL
                    .iter()
                    .map(|e| e.as_str().as_bytes())
                    .collect();
                let endpoint = Buf::new(pick(input, &names), f, NULL0, NULLN);
                let status = status(input);
                let headers = Headers::read(input, f);
                let body = Buf::new(pick(input, &BODIES), f, NULL0_B, NULLN_B);
                let mut e = Expect::new();
                // The documentation: a NULL endpoint is ONAIR_NULL_PARAMETER.
                e.add(endpoint.null, ONAIR_NULL_PARAMETER);
                e.add(
                    !endpoint.null && std::str::from_utf8(&endpoint.bytes).is_err(),
                    ONAIR_INVALID_UTF8,
                );
                let known = endpoint.text().and_then(Endpoint::from_name);
                e.add(
                    endpoint.text().is_some() && known.is_none(),
                    ONAIR_UNKNOWN_ENDPOINT,
                );
                headers.faults(&mut e);
                body.bytes_faults(&mut e);
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let want = known.map(|ep| classify(ep, status, headers.core(), body.seen()));
                if op % 4 == 0 {
                    let mut out = Out::<onair_problem>::new(f.has(OUT));
                    // SAFETY: every (pointer, length) pair is within its buffer.
                    let r = unsafe {
                        onair_classify(
                            endpoint.cptr(),
                            endpoint.len,
                            status,
                            headers.ptr(),
                            headers.len(),
                            body.ptr(),
                            body.len,
                            now,
                            out.ptr(),
                        )
                    };
                    e.check("onair_classify", r, ONAIR_OK);
                    if let (Some(p), Some(want)) = (out.after("onair_classify", r), want) {
                        let explained = want.explain(Some(now));
                        assert_eq!(view_str("kind", p.kind), Some(want.kind.as_str()));
                        assert_eq!(view_str("advice", p.advice), Some(want.advice.as_str()));
                        assert_eq!(p.status, status);
                        assert_eq!(
                            (p.has_retry_after_ms, p.retry_after_ms),
                            (
                                explained.retry_after_ms.is_some(),
                                explained.retry_after_ms.unwrap_or(0)
                            )
                        );
                        assert_eq!(
                            (p.recently_revoked, p.is_ok),
                            (want.recently_revoked, want.is_ok())
                        );
                    }
                } else {
                    let mut out = Out::<*mut c_char>::new(f.has(OUT));
                    let mut len = Out::<usize>::new(f.has(OUT2));
                    // SAFETY: as above.
                    let r = unsafe {
                        onair_classify_json(
                            endpoint.cptr(),
                            endpoint.len,
                            status,
                            headers.ptr(),
                            headers.len(),
                            body.ptr(),
                            body.len,
                            now,
                            out.ptr(),
                            len.ptr(),
                        )
                    };
                    e.check("onair_classify_json", r, ONAIR_OK);
                    let len = len.after("onair_classify_json len", r);
                    if let Some(p) = out.after("onair_classify_json", r) {
                        let text = owned("onair_classify_json", p, len);
                        json("onair_classify_json", &text);
                        let want = want.expect("OK only for a known endpoint");
                        let expected = serde_json::to_string(&want.explain(Some(now)))
                            .expect("explain serializes");
                        assert_eq!(text, expected);
                    }
                }
            }
            2 => {
                let headers = Headers::read(input, f);
                let mut e = Expect::new();
                headers.faults(&mut e);
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let mut out = Out::<onair_quota>::new(f.has(OUT));
                // SAFETY: the header array and its pairs are within their buffers.
                let r = unsafe { onair_quota_parse(headers.ptr(), headers.len(), now, out.ptr()) };
                e.check("onair_quota_parse", r, ONAIR_OK);
                if let Some(q) = out.after("onair_quota_parse", r) {
                    let want = QuotaHeaders::parse(headers.core());
                    let retry = want.retry_after.map(|r| r.delay_ms(now));
                    let got = [
                        (q.has_remaining, q.remaining),
                        (q.has_replenish_rate, q.replenish_rate),
                        (q.has_burst_capacity, q.burst_capacity),
                        (q.has_daily_limit, q.daily_limit),
                        (q.has_daily_remaining, q.daily_remaining),
                        (q.has_daily_reset_s, q.daily_reset_s),
                        (q.has_retry_after_ms, q.retry_after_ms),
                    ];
                    let expected = [
                        want.remaining,
                        want.replenish_rate,
                        want.burst_capacity,
                        want.daily_limit,
                        want.daily_remaining,
                        want.daily_reset_s,
                        retry,
                    ]
                    .map(|v| (v.is_some(), v.unwrap_or(0)));
                    assert_eq!(got, expected, "onair_quota_parse");
                    assert_eq!(q.retry_after_present, want.retry_after_present);
                }
            }
            _ => {
                let value = Buf::new(
                    pick(
                        input,
                        &[
                            b"30",
                            b"Sun, 06 Nov 1994 08:49:37 GMT",
                            b"99999999999999",
                            b"-1",
                        ],
                    ),
                    f,
                    NULL0,
                    NULLN,
                );
                let mut e = Expect::new();
                value.bytes_faults(&mut e);
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let want = RetryAfter::parse(value.seen());
                e.add(!e.any() && want.is_none(), ONAIR_INVALID_ARGUMENT);
                let mut out = Out::<u64>::new(f.has(OUT));
                // SAFETY: (pointer, length) within the buffer.
                let r = unsafe { onair_retry_after_ms(value.ptr(), value.len, now, out.ptr()) };
                e.check("onair_retry_after_ms", r, ONAIR_OK);
                if let Some(ms) = out.after("onair_retry_after_ms", r) {
                    assert_eq!(Some(ms), want.map(|w| w.delay_ms(now)));
                }
            }
        }
    }

    // ---- 2: backoff ----------------------------------------------------------

    fn backoff(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        let h = handle(&self.backoff, f);
        match op % 5 {
            0 => {
                let (base, cap, seed) = (number(input, 0), number(input, 0), number(input, 0));
                let mut e = Expect::new();
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                e.add((base == 0) != (cap == 0), ONAIR_INVALID_ARGUMENT);
                let mut out = Out::<*mut onair_backoff>::new(f.has(OUT));
                // SAFETY: an out-parameter or NULL.
                let r = unsafe { onair_backoff_new(base, cap, seed, out.ptr()) };
                e.check("onair_backoff_new", r, ONAIR_OK);
                if let Some(p) = out.after("onair_backoff_new", r) {
                    self.free_backoff();
                    let shadow = if base == 0 {
                        Backoff::new(seed)
                    } else {
                        Backoff::with_limits(base, cap, seed)
                    };
                    self.backoff = Some(Kit { c: p, shadow });
                }
            }
            1 => {
                let mut e = Expect::new();
                e.add(h.is_null(), ONAIR_NULL_PARAMETER)
                    .add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let mut out = Out::<u64>::new(f.has(OUT));
                // SAFETY: a live handle or NULL.
                let r = unsafe { onair_backoff_next_delay_ms(h, out.ptr()) };
                e.check("onair_backoff_next_delay_ms", r, ONAIR_OK);
                if let (Some(ms), Some(b)) = (
                    out.after("onair_backoff_next_delay_ms", r),
                    &mut self.backoff,
                ) {
                    assert_eq!(ms, b.shadow.next_delay_ms());
                }
            }
            2 => {
                // SAFETY: a live handle or NULL.
                unsafe { onair_backoff_reset(h) };
                if let (false, Some(b)) = (h.is_null(), &mut self.backoff) {
                    b.shadow.reset();
                }
            }
            3 => {
                // SAFETY: a live handle or NULL.
                let n = unsafe { onair_backoff_attempt(h) };
                let want = self
                    .backoff
                    .as_ref()
                    .filter(|_| !h.is_null())
                    .map_or(0, |b| b.shadow.attempt());
                assert_eq!(n, want, "onair_backoff_attempt");
            }
            _ => self.free_backoff(),
        }
    }

    fn free_backoff(&mut self) {
        if let Some(b) = self.backoff.take() {
            // SAFETY: a live handle, freed once.
            unsafe { onair_backoff_free(b.c) };
        }
    }

    // ---- 3: text ---------------------------------------------------------------

    fn text(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        match op % 6 {
            0 => {
                let t = Buf::new(long_text(input), f, NULL0, NULLN);
                let mut e = Expect::new();
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                t.text_faults(&mut e);
                let mut out = Out::<*mut onair_string_list>::new(f.has(OUT));
                // SAFETY: (pointer, length) within the buffer.
                let r = unsafe { onair_text_split(t.cptr(), t.len, out.ptr()) };
                e.check("onair_text_split", r, ONAIR_OK);
                if let Some(p) = out.after("onair_text_split", r) {
                    self.free_list();
                    let parts = text::split(t.text().expect("OK only for text"));
                    self.list = Some(Kit {
                        c: p,
                        shadow: parts,
                    });
                    self.list_check();
                }
            }
            1 => {
                let h = handle(&self.list, f);
                let index = usize::from(input.byte());
                let mut e = Expect::new();
                e.add(h.is_null(), ONAIR_NULL_PARAMETER)
                    .add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let want = self.list.as_ref().and_then(|l| l.shadow.get(index));
                e.add(!e.any() && want.is_none(), ONAIR_OUT_OF_RANGE);
                let mut out = Out::<onair_str>::new(f.has(OUT));
                // SAFETY: a live handle or NULL.
                let r = unsafe { onair_string_list_get(h, index, out.ptr()) };
                e.check("onair_string_list_get", r, ONAIR_OK);
                if let Some(s) = out.after("onair_string_list_get", r) {
                    assert_eq!(
                        view_str("onair_string_list_get", s),
                        want.map(String::as_str)
                    );
                }
                // SAFETY: a live handle or NULL.
                let len = unsafe { onair_string_list_len(h) };
                assert_eq!(
                    len,
                    if h.is_null() {
                        0
                    } else {
                        self.list.as_ref().map_or(0, |l| l.shadow.len())
                    }
                );
            }
            2 => self.free_list(),
            3 => {
                let t = Buf::new(long_text(input), f, NULL0, NULLN);
                let limit = usize_of(number(input, 200));
                let ellipsis = Buf::new(
                    pick(input, &["…".as_bytes(), b"", b"...", b"\xff"]),
                    f,
                    NULL0_B,
                    NULLN_B,
                );
                let mut e = Expect::new();
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                t.text_faults(&mut e);
                ellipsis.text_faults(&mut e);
                let mut out = Out::<*mut c_char>::new(f.has(OUT));
                let mut len = Out::<usize>::new(f.has(OUT2));
                // SAFETY: (pointer, length) pairs within their buffers.
                let r = unsafe {
                    onair_text_truncate(
                        t.cptr(),
                        t.len,
                        limit,
                        ellipsis.cptr(),
                        ellipsis.len,
                        out.ptr(),
                        len.ptr(),
                    )
                };
                e.check("onair_text_truncate", r, ONAIR_OK);
                let len = len.after("onair_text_truncate len", r);
                if let Some(p) = out.after("onair_text_truncate", r) {
                    let got = owned("onair_text_truncate", p, len);
                    let want = text::truncate(
                        t.text().expect("OK only for text"),
                        limit,
                        ellipsis.text().expect("OK only for text"),
                    );
                    // A C string ends at its first NUL (text may hold one).
                    let want = want.split('\0').next().unwrap_or_default();
                    assert_eq!(got, want, "onair_text_truncate");
                }
            }
            _ => {
                let t = Buf::new(long_text(input), f, NULL0, NULLN);
                let mut e = Expect::new();
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                t.text_faults(&mut e);
                let mut out = Out::<usize>::new(f.has(OUT));
                // SAFETY: (pointer, length) within the buffer.
                let r = unsafe { onair_text_utf16_len(t.cptr(), t.len, out.ptr()) };
                e.check("onair_text_utf16_len", r, ONAIR_OK);
                if let Some(n) = out.after("onair_text_utf16_len", r) {
                    assert_eq!(n, text::utf16_len(t.text().expect("OK only for text")));
                }
            }
        }
    }

    /// Every string of the list against the core's split.
    fn list_check(&mut self) {
        let Some(list) = &self.list else { return };
        // SAFETY: a live handle.
        assert_eq!(unsafe { onair_string_list_len(list.c) }, list.shadow.len());
        for (i, want) in list.shadow.iter().enumerate() {
            let mut out = Out::<onair_str>::new(false);
            // SAFETY: a live handle and an out-parameter.
            let r = unsafe { onair_string_list_get(list.c, i, out.ptr()) };
            let s = out
                .after("onair_string_list_get", r)
                .expect("an index in range");
            let got = view_str("onair_string_list_get", s).expect("a part is a string");
            assert_eq!(got, want);
            assert!(text::utf16_len(got) <= onair_core::proto::chat::CHAT_MAX_UTF16);
        }
    }

    fn free_list(&mut self) {
        if let Some(l) = self.list.take() {
            // SAFETY: a live handle, freed once.
            unsafe { onair_string_list_free(l.c) };
        }
    }

    // ---- 4: the typed decoder ------------------------------------------------

    fn decoder(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        let h = handle(&self.decoder, f);
        if !h.is_null() {
            self.touch(Src::Decoder);
        }
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER);
        match op % 8 {
            0 => {
                let max = match input.byte() % 8 {
                    0 => 0,
                    1 => 1,
                    2 => 64,
                    3 => 128,
                    4 => 1 << 20,
                    // SIZE_MAX: "no limit" (finding #8, fixed).
                    5 => usize::MAX,
                    _ => usize::from(input.u16()),
                };
                let mut out = Out::<*mut onair_decoder>::new(f.has(OUT));
                // SAFETY: an out-parameter or NULL.
                let r = unsafe { onair_decoder_new(max, out.ptr()) };
                Expect::new().add(f.has(OUT), ONAIR_NULL_PARAMETER).check(
                    "onair_decoder_new",
                    r,
                    ONAIR_OK,
                );
                if let Some(p) = out.after("onair_decoder_new", r) {
                    self.free_decoder();
                    let parser = if max == 0 {
                        Parser::new()
                    } else {
                        Parser::with_max_frame_bytes(max)
                    };
                    let shadow = DecoderShadow {
                        decoder: Decoder::with_parser(parser),
                        queue: VecDeque::new(),
                        current: None,
                    };
                    self.decoder = Some(Kit { c: p, shadow });
                }
            }
            1 => {
                let chunk = Buf::new(pick(input, &CHUNKS), f, NULL0, NULLN);
                chunk.bytes_faults(&mut e);
                // SAFETY: a live handle or NULL; (pointer, length) within the buffer.
                let r = unsafe { onair_decoder_feed(h, chunk.ptr(), chunk.len) };
                e.check("onair_decoder_feed", r, ONAIR_OK);
                if let (ONAIR_OK, Some(d)) = (r, &mut self.decoder) {
                    let mut rest = chunk.seen();
                    while let Some(item) = d.shadow.decoder.next_item(&mut rest) {
                        d.shadow.queue.push_back(item);
                    }
                }
            }
            2 => {
                // SAFETY: a live handle or NULL.
                let r = unsafe { onair_decoder_finish(h) };
                e.check("onair_decoder_finish", r, ONAIR_OK);
                if let (ONAIR_OK, Some(d)) = (r, &mut self.decoder) {
                    d.shadow.queue.extend(d.shadow.decoder.finish());
                }
            }
            3 => {
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let mut out = Out::<onair_item>::new(f.has(OUT));
                // SAFETY: a live handle or NULL; an out-parameter or NULL.
                let r = unsafe { onair_decoder_next(h, out.ptr()) };
                e.check("onair_decoder_next", r, ONAIR_OK);
                if let (Some(v), Some(d)) = (out.after("onair_decoder_next", r), &mut self.decoder)
                {
                    d.shadow.current = d.shadow.queue.pop_front();
                    check_item(&v, d.shadow.current.as_ref());
                    if v.kind == onair_item_kind::ONAIR_ITEM_EVENT {
                        self.event = Some((Src::Decoder, v.event));
                    }
                }
            }
            4 | 5 => {
                let batch = op % 8 == 5;
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER)
                    .add(f.has(OUT2), ONAIR_NULL_PARAMETER);
                let current = self
                    .decoder
                    .as_ref()
                    .and_then(|d| d.shadow.current.as_ref());
                e.add(!batch && !e.any() && current.is_none(), ONAIR_NO_CURRENT);
                let mut out = Out::<*const c_char>::new(f.has(OUT));
                let mut len = Out::<usize>::new(f.has(OUT2));
                let name = if batch {
                    "onair_decoder_take_json"
                } else {
                    "onair_decoder_item_json"
                };
                // SAFETY: a live handle or NULL; out-parameters or NULL.
                let r = unsafe {
                    if batch {
                        onair_decoder_take_json(h, out.ptr(), len.ptr())
                    } else {
                        onair_decoder_item_json(h, out.ptr(), len.ptr())
                    }
                };
                e.check(name, r, ONAIR_OK);
                let (p, n) = (out.after(name, r), len.after(name, r));
                if let (Some(p), Some(n), Some(d)) = (p, n, &mut self.decoder) {
                    let text = view_cstr(name, p, n);
                    let want: String = if batch {
                        d.shadow.current = None;
                        d.shadow
                            .queue
                            .drain(..)
                            .map(|item| ItemJson(&item).to_line() + "\n")
                            .collect()
                    } else {
                        ItemJson(d.shadow.current.as_ref().expect("a current item")).to_line()
                    };
                    assert_eq!(text, want, "{name}");
                    for line in text.lines() {
                        json(name, line);
                    }
                }
            }
            6 => {
                // SAFETY: a live handle or NULL.
                let n = unsafe { onair_decoder_pending(h) };
                let want = self
                    .decoder
                    .as_ref()
                    .filter(|_| !h.is_null())
                    .map_or(0, |d| d.shadow.queue.len());
                assert_eq!(n, want, "onair_decoder_pending");
            }
            _ => self.free_decoder(),
        }
    }

    fn free_decoder(&mut self) {
        if let Some(d) = self.decoder.take() {
            self.touch(Src::Decoder);
            // SAFETY: a live handle, freed once.
            unsafe { onair_decoder_free(d.c) };
        }
    }

    // ---- 5: the generic SSE parser -------------------------------------------

    fn sse(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        let h = handle(&self.sse, f);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER);
        match op % 8 {
            0 => {
                let max = match input.byte() % 4 {
                    0 => 0,
                    1 => 64,
                    2 => usize::MAX,
                    _ => usize::from(input.u16()),
                };
                let mut out = Out::<*mut onair_sse_parser>::new(f.has(OUT));
                // SAFETY: an out-parameter or NULL.
                let r = unsafe { onair_sse_parser_new(max, out.ptr()) };
                Expect::new().add(f.has(OUT), ONAIR_NULL_PARAMETER).check(
                    "onair_sse_parser_new",
                    r,
                    ONAIR_OK,
                );
                if let Some(p) = out.after("onair_sse_parser_new", r) {
                    self.free_sse();
                    let parser = if max == 0 {
                        Parser::new()
                    } else {
                        Parser::with_max_frame_bytes(max)
                    };
                    self.sse = Some(Kit {
                        c: p,
                        shadow: SseShadow {
                            parser,
                            queue: VecDeque::new(),
                            current: None,
                        },
                    });
                }
            }
            1 => {
                let chunk = Buf::new(pick(input, &CHUNKS), f, NULL0, NULLN);
                chunk.bytes_faults(&mut e);
                // SAFETY: a live handle or NULL; (pointer, length) within the buffer.
                let r = unsafe { onair_sse_parser_feed(h, chunk.ptr(), chunk.len) };
                e.check("onair_sse_parser_feed", r, ONAIR_OK);
                if let (ONAIR_OK, Some(s)) = (r, &mut self.sse) {
                    let mut rest = chunk.seen();
                    while let Some(item) = s.shadow.parser.next_item(&mut rest) {
                        let raw = RawItem::of(&item);
                        s.shadow.queue.push_back(raw);
                    }
                }
            }
            2 => {
                // SAFETY: a live handle or NULL.
                let r = unsafe { onair_sse_parser_finish(h) };
                e.check("onair_sse_parser_finish", r, ONAIR_OK);
                if let (ONAIR_OK, Some(s)) = (r, &mut self.sse) {
                    if let Some(item) = s.shadow.parser.finish() {
                        let raw = RawItem::of(&item);
                        s.shadow.queue.push_back(raw);
                    }
                }
            }
            3 => {
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let mut out = Out::<onair_sse_item>::new(f.has(OUT));
                // SAFETY: a live handle or NULL; an out-parameter or NULL.
                let r = unsafe { onair_sse_parser_next(h, out.ptr()) };
                e.check("onair_sse_parser_next", r, ONAIR_OK);
                if let (Some(v), Some(s)) = (out.after("onair_sse_parser_next", r), &mut self.sse) {
                    s.shadow.current = s.shadow.queue.pop_front();
                    RawItem::check(s.shadow.current.as_ref(), &v);
                }
            }
            4 => {
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER)
                    .add(f.has(OUT2), ONAIR_NULL_PARAMETER);
                let current = self.sse.as_ref().and_then(|s| s.shadow.current.as_ref());
                e.add(!e.any() && current.is_none(), ONAIR_NO_CURRENT);
                let mut out = Out::<*const c_char>::new(f.has(OUT));
                let mut len = Out::<usize>::new(f.has(OUT2));
                // SAFETY: a live handle or NULL; out-parameters or NULL.
                let r = unsafe { onair_sse_parser_item_json(h, out.ptr(), len.ptr()) };
                e.check("onair_sse_parser_item_json", r, ONAIR_OK);
                let (p, n) = (out.after("item_json", r), len.after("item_json", r));
                if let (Some(p), Some(n), Some(s)) = (p, n, &self.sse) {
                    let text = view_cstr("onair_sse_parser_item_json", p, n);
                    assert_eq!(
                        Some(text),
                        s.shadow.current.as_ref().map(|c| c.line.as_str())
                    );
                    json("onair_sse_parser_item_json", text);
                }
            }
            5 => {
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let mut out = Out::<onair_str>::new(f.has(OUT));
                // SAFETY: a live handle or NULL; an out-parameter or NULL.
                let r = unsafe { onair_sse_parser_last_event_id(h, out.ptr()) };
                e.check("onair_sse_parser_last_event_id", r, ONAIR_OK);
                if let (Some(v), Some(s)) = (out.after("last_event_id", r), &self.sse) {
                    let want = s.shadow.parser.last_event_id();
                    assert_eq!(
                        view_str("onair_sse_parser_last_event_id", v),
                        Some(want.as_str())
                    );
                }
            }
            6 => {
                // SAFETY: a live handle or NULL.
                let n = unsafe { onair_sse_parser_pending(h) };
                let want = self
                    .sse
                    .as_ref()
                    .filter(|_| !h.is_null())
                    .map_or(0, |s| s.shadow.queue.len());
                assert_eq!(n, want, "onair_sse_parser_pending");
            }
            _ => self.free_sse(),
        }
    }

    fn free_sse(&mut self) {
        if let Some(s) = self.sse.take() {
            // SAFETY: a live handle, freed once.
            unsafe { onair_sse_parser_free(s.c) };
        }
    }

    // ---- 6: bot configuration --------------------------------------------------

    fn config(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        let h = handle(&self.config, f);
        match op % 9 {
            0 => {
                let url = Buf::new(
                    pick(
                        input,
                        &[
                            b"http://127.0.0.1:9",
                            b"https://api.example/base/",
                            b"ftp://x",
                            b"http://h/?q",
                        ],
                    ),
                    f,
                    NULL0,
                    NULLN,
                );
                let id = Buf::new(
                    pick(
                        input,
                        &[b"3f2504e0-4f89-11d3-9a0c-0305e82c3301", b"not-a-uuid"],
                    ),
                    f,
                    NULL0_B,
                    NULLN_B,
                );
                let secret_null = f.has(AUX);
                let secret = Buf::new(
                    pick(input, &[b"s3cret-client", b""]),
                    Faults(u16::from(secret_null) << NULL0),
                    NULL0,
                    NULLN,
                );
                let mut e = Expect::new();
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                url.text_faults(&mut e);
                id.text_faults(&mut e);
                secret.text_faults(&mut e);
                let base = url.text().map(BaseUrl::new);
                let credentials = id
                    .text()
                    .zip(secret.text())
                    .map(|(i, s)| ClientCredentials::new(i, s));
                e.add(matches!(base, Some(Err(_))), ONAIR_INVALID_BASE_URL);
                e.add(
                    matches!(credentials, Some(Err(_))),
                    ONAIR_INVALID_CREDENTIALS,
                );
                let mut out = Out::<*mut onair_bot_config>::new(f.has(OUT));
                // SAFETY: (pointer, length) pairs within their buffers.
                let r = unsafe {
                    onair_bot_config_new(
                        url.cptr(),
                        url.len,
                        id.cptr(),
                        id.len,
                        secret.cptr(),
                        secret.len,
                        out.ptr(),
                    )
                };
                e.check("onair_bot_config_new", r, ONAIR_OK);
                if let Some(p) = out.after("onair_bot_config_new", r) {
                    self.free_config();
                    let (Some(Ok(base)), Some(Ok(credentials))) = (base, credentials) else {
                        panic!("onair_bot_config_new: OK with a bad URL or credentials")
                    };
                    self.config = Some(Kit {
                        c: p,
                        shadow: BotConfig::new(base, credentials),
                    });
                }
            }
            8 => self.free_config(),
            setter => {
                let value = number(input, 30_000);
                let mut e = Expect::new();
                e.add(h.is_null(), ONAIR_NULL_PARAMETER);
                let shadow = self
                    .config
                    .as_mut()
                    .filter(|_| !h.is_null())
                    .map(|c| &mut c.shadow);
                // SAFETY: a live handle or NULL.
                let (name, r, zero_refused) = unsafe {
                    match setter {
                        1 => (
                            "set_events",
                            onair_bot_config_set_events(h, value % 2 == 0),
                            false,
                        ),
                        2 => (
                            "set_request_timeout_ms",
                            onair_bot_config_set_request_timeout_ms(h, value),
                            true,
                        ),
                        3 => {
                            let n = u32::try_from(value).unwrap_or(u32::MAX);
                            (
                                "set_max_attempts",
                                onair_bot_config_set_max_attempts(h, n),
                                true,
                            )
                        }
                        4 => (
                            "set_max_queued_calls",
                            onair_bot_config_set_max_queued_calls(h, usize_of(value)),
                            false,
                        ),
                        5 => (
                            "set_watchdog_ms",
                            onair_bot_config_set_watchdog_ms(h, value),
                            true,
                        ),
                        6 => (
                            "set_connect_timeout_ms",
                            onair_bot_config_set_connect_timeout_ms(h, value),
                            true,
                        ),
                        _ => (
                            "set_refresh_margin_ms",
                            onair_bot_config_set_refresh_margin_ms(h, value),
                            false,
                        ),
                    }
                };
                e.add(zero_refused && value == 0, ONAIR_INVALID_ARGUMENT);
                e.check(name, r, ONAIR_OK);
                if let (ONAIR_OK, Some(c)) = (r, shadow) {
                    match setter {
                        1 => c.events = value % 2 == 0,
                        2 => c.request_timeout_ms = value,
                        3 => c.max_attempts = u32::try_from(value).unwrap_or(u32::MAX),
                        4 => c.max_queued_calls = usize_of(value),
                        5 => c.stream.watchdog_ms = value,
                        6 => c.stream.connect_timeout_ms = value,
                        _ => c.refresh.margin_ms = value,
                    }
                }
            }
        }
    }

    fn free_config(&mut self) {
        if let Some(c) = self.config.take() {
            // SAFETY: a live handle, freed once.
            unsafe { onair_bot_config_free(c.c) };
        }
    }

    // ---- 7: the bot's loop and reports --------------------------------------------

    fn bot_handle(&mut self, f: Faults) -> *mut onair_bot {
        match &self.bot {
            Some(b) if !f.has(HANDLE) => {
                let c = b.c;
                self.touch(Src::Bot);
                c
            }
            _ => null_mut(),
        }
    }

    /// A request id: one the bot issued (or its stream's), or any.
    fn request_id(&mut self, input: &mut Input<'_>) -> u64 {
        let b = input.byte();
        let Some(bot) = &self.bot else {
            return u64::from(b);
        };
        match b % 4 {
            0 | 1 if !bot.sent.is_empty() => bot.sent[usize::from(b) % bot.sent.len()],
            2 if bot.stream.is_some() => bot.stream.unwrap_or_default(),
            _ => u64::from(input.u16()),
        }
    }

    fn bot_loop(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        let h = self.bot_handle(f);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER);
        let now = self.now;
        match op % 10 {
            0 => {
                let cfg = match &self.config {
                    Some(c) if !f.has(HANDLE) => c.c,
                    _ => null_mut(),
                };
                let saved = Buf::new(
                    match input.byte() % 4 {
                        0 => token_file(T0 + 3_600_000),
                        1 => token_file(T0 - 1),
                        2 => b"{\"format\":\"onair.tokens\",\"version\":9}".to_vec(),
                        _ => input.short().to_vec(),
                    },
                    f,
                    NULL0,
                    NULLN,
                );
                let seed = number(input, 0);
                let tokens = (!saved.null).then(|| Tokens::from_json(&saved.bytes));
                let mut e = Expect::new();
                e.add(cfg.is_null(), ONAIR_NULL_PARAMETER)
                    .add(f.has(OUT), ONAIR_NULL_PARAMETER);
                e.add(matches!(tokens, Some(Err(_))), ONAIR_INVALID_TOKENS);
                let mut out = Out::<*mut onair_bot>::new(f.has(OUT));
                // SAFETY: a live config or NULL; (pointer, length) within the buffer.
                let r = unsafe { onair_bot_new(cfg, saved.cptr(), saved.len, seed, out.ptr()) };
                e.check("onair_bot_new", r, ONAIR_OK);
                if let Some(p) = out.after("onair_bot_new", r) {
                    self.free_bot();
                    let config = self
                        .config
                        .as_ref()
                        .expect("OK only with a config")
                        .shadow
                        .clone();
                    let saved = tokens.and_then(Result::ok);
                    self.bot = Some(BotState {
                        c: p,
                        shadow: Bot::new(config, saved, seed),
                        polled: None,
                        sent: Vec::new(),
                        stream: None,
                    });
                }
            }
            1 => self.free_bot(),
            2 => {
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                self.poll(h, f.has(OUT), &e);
            }
            3 => {
                if !h.is_null() {
                    for _ in 0..64 {
                        let kind = self.poll(h, false, &e);
                        if !matches!(
                            kind,
                            Some(
                                onair_action_kind::ONAIR_ACTION_SEND
                                    | onair_action_kind::ONAIR_ACTION_OPEN_STREAM
                                    | onair_action_kind::ONAIR_ACTION_CLOSE_STREAM
                                    | onair_action_kind::ONAIR_ACTION_EVENT
                                    | onair_action_kind::ONAIR_ACTION_NOTICE
                                    | onair_action_kind::ONAIR_ACTION_DONE
                                    | onair_action_kind::ONAIR_ACTION_PERSIST_TOKENS
                                    | onair_action_kind::ONAIR_ACTION_TIMER
                            )
                        ) {
                            break;
                        }
                    }
                }
            }
            4 => {
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER)
                    .add(f.has(OUT2), ONAIR_NULL_PARAMETER);
                let polled = self.bot.as_ref().and_then(|b| b.polled.as_ref());
                e.add(!e.any() && polled.is_none(), ONAIR_NO_CURRENT);
                let mut out = Out::<*const c_char>::new(f.has(OUT));
                let mut len = Out::<usize>::new(f.has(OUT2));
                // SAFETY: a live handle or NULL; out-parameters or NULL.
                let r = unsafe { onair_bot_action_json(h, out.ptr(), len.ptr()) };
                e.check("onair_bot_action_json", r, ONAIR_OK);
                let (p, n) = (out.after("action_json", r), len.after("action_json", r));
                if let (Some(p), Some(n), Some(b)) = (p, n, &self.bot) {
                    let text = view_cstr("onair_bot_action_json", p, n);
                    let want = ActionJson(b.polled.as_ref().expect("a polled action")).to_line();
                    assert_eq!(text, want, "onair_bot_action_json");
                    json("onair_bot_action_json", text);
                }
            }
            5 => {
                let id = self.request_id(input);
                let status = status(input);
                let headers = Headers::read(input, f);
                let body = Buf::new(pick(input, &BODIES), f, NULL0, NULLN);
                headers.faults(&mut e);
                body.bytes_faults(&mut e);
                // SAFETY: a live handle or NULL; pairs within their buffers.
                let r = unsafe {
                    onair_bot_on_response(
                        h,
                        id,
                        status,
                        headers.ptr(),
                        headers.len(),
                        body.ptr(),
                        body.len,
                        now,
                    )
                };
                let want = match &mut self.bot {
                    Some(b) if !e.any() => report_code(b.shadow.on_response(
                        RequestId(id),
                        status,
                        headers.core(),
                        body.seen(),
                        now,
                    )),
                    _ => ONAIR_OK,
                };
                e.check("onair_bot_on_response", r, want);
                self.answered(r, id);
            }
            6 => {
                let id = self.request_id(input);
                // SAFETY: a live handle or NULL.
                let r = unsafe { onair_bot_on_transport_error(h, id, now) };
                let want = match &mut self.bot {
                    Some(b) if !e.any() => {
                        report_code(b.shadow.on_transport_error(RequestId(id), now))
                    }
                    _ => ONAIR_OK,
                };
                e.check("onair_bot_on_transport_error", r, want);
                self.answered(r, id);
            }
            7 => {
                let id = self.request_id(input);
                let status = if input.byte() < 0xC0 {
                    200
                } else {
                    status(input)
                };
                let headers = Headers::read(input, f);
                headers.faults(&mut e);
                // SAFETY: a live handle or NULL; the array within its buffer.
                let r = unsafe {
                    onair_bot_on_stream_open(h, id, status, headers.ptr(), headers.len(), now)
                };
                let want = match &mut self.bot {
                    Some(b) if !e.any() => report_code(b.shadow.on_stream_open(
                        RequestId(id),
                        status,
                        headers.core(),
                        now,
                    )),
                    _ => ONAIR_OK,
                };
                e.check("onair_bot_on_stream_open", r, want);
            }
            8 => {
                let id = self.request_id(input);
                let chunk = Buf::new(pick(input, &CHUNKS), f, NULL0, NULLN);
                chunk.bytes_faults(&mut e);
                // SAFETY: a live handle or NULL; (pointer, length) within the buffer.
                let r = unsafe { onair_bot_on_stream_bytes(h, id, chunk.ptr(), chunk.len, now) };
                let want = match &mut self.bot {
                    Some(b) if !e.any() => {
                        report_code(b.shadow.on_stream_bytes(RequestId(id), chunk.seen(), now))
                    }
                    _ => ONAIR_OK,
                };
                e.check("onair_bot_on_stream_bytes", r, want);
            }
            _ => {
                let id = self.request_id(input);
                // SAFETY: a live handle or NULL.
                let r = unsafe { onair_bot_on_stream_closed(h, id, now) };
                let want = match &mut self.bot {
                    Some(b) if !e.any() => {
                        report_code(b.shadow.on_stream_closed(RequestId(id), now))
                    }
                    _ => ONAIR_OK,
                };
                e.check("onair_bot_on_stream_closed", r, want);
                if let (ONAIR_OK, Some(b)) = (r, &mut self.bot) {
                    if b.stream == Some(id) {
                        b.stream = None;
                    }
                }
            }
        }
    }

    /// A request answered is not picked again (its id stays refused).
    fn answered(&mut self, r: onair_result, id: u64) {
        if let (ONAIR_OK, Some(b)) = (r, &mut self.bot) {
            b.sent.retain(|&s| s != id);
        }
    }

    /// One poll, checked against the shadow's; the kind polled.
    fn poll(&mut self, h: *mut onair_bot, null_out: bool, e: &Expect) -> Option<onair_action_kind> {
        let now = self.now;
        // Each poll ends the view of the one before (a drain polls often).
        if !h.is_null() {
            self.touch(Src::Bot);
        }
        let mut out = Out::<onair_action>::new(null_out);
        // SAFETY: a live handle or NULL; an out-parameter or NULL.
        let r = unsafe { onair_bot_poll(h, now, out.ptr()) };
        e.check("onair_bot_poll", r, ONAIR_OK);
        let v = out.after("onair_bot_poll", r)?;
        let b = self.bot.as_mut().expect("OK only with a bot");
        let want = b.shadow.poll(now);
        check_action(&v, &want, now);
        match &want {
            Action::Send { id, .. } => b.sent.push(id.0),
            Action::OpenStream { id, .. } => b.stream = Some(id.0),
            Action::CloseStream { id } if b.stream == Some(id.0) => b.stream = None,
            _ => {}
        }
        b.polled = Some(want);
        if v.kind == onair_action_kind::ONAIR_ACTION_EVENT {
            self.event = Some((Src::Bot, v.event));
        }
        Some(v.kind)
    }

    fn free_bot(&mut self) {
        if let Some(b) = self.bot.take() {
            self.touch(Src::Bot);
            // SAFETY: a live handle, freed once.
            unsafe { onair_bot_free(b.c) };
        }
    }

    // ---- 8: the bot's app commands and getters ------------------------------------

    fn bot_calls(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        let h = self.bot_handle(f);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER);
        let now = self.now;
        let live = !h.is_null();
        match op % 14 {
            0 => {
                let code = Buf::new(pick(input, &[b"code", b"", b"\xff"]), f, NULL0, NULLN);
                let uri = Buf::new(pick(input, &[b"https://bot.test/cb"]), f, NULL0_B, NULLN_B);
                code.text_faults(&mut e);
                uri.text_faults(&mut e);
                // SAFETY: a live handle or NULL; pairs within their buffers.
                let r =
                    unsafe { onair_bot_authorize(h, code.cptr(), code.len, uri.cptr(), uri.len) };
                e.check("onair_bot_authorize", r, ONAIR_OK);
                if let (ONAIR_OK, Some(b)) = (r, &mut self.bot) {
                    b.shadow.authorize(
                        code.text().unwrap_or_default(),
                        uri.text().unwrap_or_default(),
                    );
                }
            }
            1..=4 => {
                let message = Buf::new(long_text(input), f, NULL0, NULLN);
                if op % 14 == 1 {
                    message.text_faults(&mut e);
                }
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let mut out = Out::<u64>::new(f.has(OUT));
                // SAFETY: a live handle or NULL; (pointer, length) within the buffer.
                let r = unsafe {
                    match op % 14 {
                        1 => onair_bot_send_chat(h, message.cptr(), message.len, out.ptr()),
                        2 => onair_bot_fetch_broadcast(h, out.ptr()),
                        3 => onair_bot_list_listeners(h, out.ptr()),
                        _ => onair_bot_fetch_fans(h, out.ptr()),
                    }
                };
                let shadow = match &mut self.bot {
                    Some(b) if !e.any() => Some(match op % 14 {
                        1 => b.shadow.send_chat(message.text().unwrap_or_default()),
                        2 => Ok(b.shadow.fetch_broadcast()),
                        3 => Ok(b.shadow.list_listeners()),
                        _ => Ok(b.shadow.fetch_fans()),
                    }),
                    _ => None,
                };
                let want = match &shadow {
                    Some(Err(err)) => call_code(err),
                    _ => ONAIR_OK,
                };
                e.check("an app call", r, want);
                if let (Some(id), Some(Ok(call))) = (out.after("an app call", r), shadow) {
                    assert_eq!(id, call.0, "call id");
                }
            }
            5 => {
                // SAFETY: a live handle or NULL.
                let r = unsafe { onair_bot_request_reconnect(h, now) };
                e.check("onair_bot_request_reconnect", r, ONAIR_OK);
                if let (true, Some(b)) = (live, &mut self.bot) {
                    b.shadow.request_reconnect(now);
                }
            }
            6 => {
                let revoke = input.byte() % 2 == 0;
                // SAFETY: a live handle or NULL.
                let r = unsafe { onair_bot_shutdown(h, revoke) };
                e.check("onair_bot_shutdown", r, ONAIR_OK);
                if let (true, Some(b)) = (live, &mut self.bot) {
                    b.shadow.shutdown(revoke);
                }
            }
            7..=10 => {
                let tag = Buf::new(pick(input, &TAGS), f, NULL0, NULLN);
                tag.text_faults(&mut e);
                let (at, period) = (number(input, now), number(input, 1000));
                let while_connected = input.byte() % 2 == 0;
                let mut found = Out::<bool>::new(f.has(OUT));
                // SAFETY: a live handle or NULL; (pointer, length) within the buffer.
                let r = unsafe {
                    match op % 14 {
                        7 => onair_bot_schedule(h, at, tag.cptr(), tag.len),
                        8 => onair_bot_every(h, period, tag.cptr(), tag.len, at),
                        9 => {
                            onair_bot_set_timer(h, tag.cptr(), tag.len, at, period, while_connected)
                        }
                        _ => onair_bot_cancel_timer(h, tag.cptr(), tag.len, found.ptr()),
                    }
                };
                let t = tag.text().unwrap_or_default();
                let mut cancelled = None;
                let want = match &mut self.bot {
                    Some(b) if !e.any() => match op % 14 {
                        7 => timer_code(b.shadow.schedule(at, t)),
                        8 => timer_code(b.shadow.every(period, t, at)),
                        9 => {
                            let mut timer = if period == 0 {
                                Timer::at(at)
                            } else {
                                Timer::every(period, at)
                            };
                            if while_connected {
                                timer = timer.while_connected();
                            }
                            timer_code(b.shadow.set_timer(t, timer))
                        }
                        _ => {
                            cancelled = Some(b.shadow.cancel_timer(t));
                            ONAIR_OK
                        }
                    },
                    _ => ONAIR_OK,
                };
                e.check("a bot timer", r, want);
                if op % 14 == 10 {
                    assert_eq!(
                        found.after("onair_bot_cancel_timer", r),
                        cancelled.filter(|_| !f.has(OUT))
                    );
                }
            }
            11 | 12 => {
                let tokens = op % 14 == 11;
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER)
                    .add(f.has(OUT2), ONAIR_NULL_PARAMETER);
                let want: Option<String> = self.bot.as_ref().map(|b| {
                    if tokens {
                        b.shadow
                            .tokens()
                            .tokens()
                            .map(|t| t.to_json().to_string())
                            .unwrap_or_default()
                    } else {
                        Status::to_json(&b.shadow.status(now))
                    }
                });
                if tokens {
                    e.add(!e.any() && want.as_deref() == Some(""), ONAIR_NO_TOKENS);
                }
                let mut out = Out::<*const c_char>::new(f.has(OUT));
                let mut len = Out::<usize>::new(f.has(OUT2));
                let name = if tokens {
                    "onair_bot_tokens_json"
                } else {
                    "onair_bot_status_json"
                };
                // SAFETY: a live handle or NULL; out-parameters or NULL.
                let r = unsafe {
                    if tokens {
                        onair_bot_tokens_json(h, out.ptr(), len.ptr())
                    } else {
                        onair_bot_status_json(h, now, out.ptr(), len.ptr())
                    }
                };
                e.check(name, r, ONAIR_OK);
                if let (Some(p), Some(n)) = (out.after(name, r), len.after(name, r)) {
                    let text = view_cstr(name, p, n);
                    assert_eq!(Some(text), want.as_deref(), "{name}");
                    json(name, text);
                }
            }
            _ => {
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER)
                    .add(f.has(OUT2), ONAIR_NULL_PARAMETER);
                let mut out = Out::<*const c_char>::new(f.has(OUT));
                let mut len = Out::<usize>::new(f.has(OUT2));
                // SAFETY: a live handle or NULL; out-parameters or NULL.
                let r = unsafe { onair_bot_last_error(h, out.ptr(), len.ptr()) };
                e.check("onair_bot_last_error", r, ONAIR_OK);
                if let (Some(p), Some(n)) = (out.after("last_error", r), len.after("last_error", r))
                {
                    view_cstr("onair_bot_last_error", p, n);
                }
                // SAFETY: a live handle or NULL.
                let pending = unsafe { onair_bot_pending_calls(h) };
                let want = self
                    .bot
                    .as_ref()
                    .filter(|_| live)
                    .map_or(0, |b| b.shadow.pending_calls());
                assert_eq!(pending, want, "onair_bot_pending_calls");
            }
        }
    }

    // ---- kit helpers ------------------------------------------------------------

    /// The event argument of a kit call: the current view (a copy of the
    /// struct; its pointers borrow from the handle, still alive), a view
    /// without an event, or NULL.
    fn event_arg(&self, f: Faults) -> (onair_event, bool) {
        let view = match self.event {
            Some((_, v)) if !f.has(EVENT_NONE) => v,
            _ => onair_event::NONE,
        };
        (view, f.has(EVENT_NULL))
    }

    fn event_faults(view: &onair_event, null: bool, e: &mut Expect) {
        e.add(null, ONAIR_NULL_PARAMETER);
        e.add(!null && view.opaque.is_null(), ONAIR_NO_EVENT);
    }

    fn event_ptr(view: &onair_event, spoiled: bool) -> *const onair_event {
        if spoiled {
            null()
        } else {
            view
        }
    }

    // ---- 9: audience --------------------------------------------------------------

    fn audience(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        let h = handle(&self.audience, f);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER);
        match op % 9 {
            0 | 1 => {
                let mut out = Out::<*mut onair_audience>::new(f.has(OUT));
                let mut e = Expect::new();
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let (r, shadow) = if op % 9 == 0 {
                    // SAFETY: an out-parameter or NULL.
                    (
                        unsafe { onair_audience_new(out.ptr()) },
                        Some(Audience::new()),
                    )
                } else {
                    let stored = self
                        .audience
                        .as_ref()
                        .map(|a| a.shadow.to_json().into_bytes());
                    let json = Buf::new(
                        match input.byte() % 4 {
                            0 => stored.unwrap_or_default(),
                            1 => br#"{"format":"onair.audience","version":1,"live_id":9,"dj_id":"dj","people":[{"user":{"id":"u1","nickname":"Mina"},"joins":1,"is_manager":true}]}"#.to_vec(),
                            _ => input.short().to_vec(),
                        },
                        f,
                        NULL0,
                        NULLN,
                    );
                    e.add(json.null, ONAIR_NULL_PARAMETER);
                    let loaded = (!json.null).then(|| Audience::from_json(&json.bytes));
                    e.add(matches!(loaded, Some(Err(_))), ONAIR_INVALID_STATE);
                    // SAFETY: (pointer, length) within the buffer; an out-parameter or NULL.
                    let r = unsafe { onair_audience_from_json(json.cptr(), json.len, out.ptr()) };
                    (r, loaded.and_then(Result::ok))
                };
                e.check("onair_audience_new/from_json", r, ONAIR_OK);
                if let Some(p) = out.after("onair_audience_new/from_json", r) {
                    self.free_audience();
                    let shadow = shadow.expect("OK only when the core loads it");
                    self.audience = Some(Kit { c: p, shadow });
                }
            }
            2 => {
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let mut out = Out::<*mut c_char>::new(f.has(OUT));
                let mut len = Out::<usize>::new(f.has(OUT2));
                // SAFETY: a live handle or NULL; out-parameters or NULL.
                let r = unsafe { onair_audience_to_json(h, out.ptr(), len.ptr()) };
                e.check("onair_audience_to_json", r, ONAIR_OK);
                let len = len.after("onair_audience_to_json len", r);
                if let (Some(p), Some(a)) = (out.after("onair_audience_to_json", r), &self.audience)
                {
                    let text = owned("onair_audience_to_json", p, len);
                    assert_eq!(text, a.shadow.to_json());
                }
            }
            3 => {
                let live_id = number(input, 9);
                let mut out = Out::<bool>::new(f.has(OUT));
                // SAFETY: a live handle or NULL; an optional out-parameter.
                let r = unsafe { onair_audience_start_broadcast(h, live_id, out.ptr()) };
                e.check("onair_audience_start_broadcast", r, ONAIR_OK);
                let new = out.after("onair_audience_start_broadcast", r);
                if let (ONAIR_OK, Some(a)) = (r, &mut self.audience) {
                    let want = a.shadow.start_broadcast(live_id);
                    assert!(
                        new.is_none_or(|n| n == want),
                        "onair_audience_start_broadcast"
                    );
                }
            }
            4 => {
                // SAFETY: a live handle or NULL.
                let r = unsafe { onair_audience_end_broadcast(h) };
                e.check("onair_audience_end_broadcast", r, ONAIR_OK);
                if let (ONAIR_OK, Some(a)) = (r, &mut self.audience) {
                    a.shadow.end_broadcast();
                }
            }
            5 => {
                let (view, null) = self.event_arg(f);
                Self::event_faults(&view, null, &mut e);
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let mut out = Out::<onair_greeting>::new(f.has(OUT));
                // SAFETY: a live handle or NULL; a live view, one without an event, or NULL.
                let r =
                    unsafe { onair_audience_on_event(h, Self::event_ptr(&view, null), out.ptr()) };
                e.check("onair_audience_on_event", r, ONAIR_OK);
                if let (Some(g), Some(a)) =
                    (out.after("onair_audience_on_event", r), &mut self.audience)
                {
                    // SAFETY: the view's event is alive (checked by the call's success).
                    let ev = unsafe { event_in(&view) }.expect("OK only with an event");
                    let want = a.shadow.on_event(&ev);
                    let what = "onair_audience_on_event";
                    let kind = match &want {
                        None => onair_greeting_kind::ONAIR_GREETING_NONE,
                        Some(Greeting::First(_)) => onair_greeting_kind::ONAIR_GREETING_FIRST,
                        Some(Greeting::WelcomeBack(_)) => {
                            onair_greeting_kind::ONAIR_GREETING_WELCOME_BACK
                        }
                    };
                    assert_eq!(g.kind, kind, "{what}");
                    assert_eq!(
                        view_str(what, g.user_id),
                        want.as_ref().map(|w| w.user().id.as_str())
                    );
                    assert_eq!(
                        view_str(what, g.nickname),
                        want.as_ref().and_then(|w| w.user().nickname.as_deref())
                    );
                    assert_eq!(
                        g.is_manager,
                        want.as_ref().is_some_and(|w| w.presence().is_manager)
                    );
                }
            }
            6 => {
                let id = Buf::new(pick(input, &[b"u1", b"u2", b"dj"]), f, NULL0, NULLN);
                // SAFETY: a live handle or NULL; (pointer, length) within the buffer.
                let got = unsafe { onair_audience_is_manager(h, id.cptr(), id.len) };
                let want = match (&self.audience, id.text()) {
                    (Some(a), Some(t)) if !h.is_null() => a.shadow.is_manager(t),
                    _ => false,
                };
                assert_eq!(got, want, "onair_audience_is_manager");
                // SAFETY: a live handle or NULL.
                let len = unsafe { onair_audience_len(h) };
                assert_eq!(
                    len,
                    self.audience
                        .as_ref()
                        .filter(|_| !h.is_null())
                        .map_or(0, |a| a.shadow.len())
                );
            }
            _ => self.free_audience(),
        }
    }

    fn free_audience(&mut self) {
        if let Some(a) = self.audience.take() {
            // SAFETY: a live handle, freed once.
            unsafe { onair_audience_free(a.c) };
        }
    }

    // ---- 10: commands --------------------------------------------------------------

    fn commands(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        let h = handle(&self.commands, f);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER);
        match op % 8 {
            0 => {
                let mut out = Out::<*mut onair_commands>::new(f.has(OUT));
                // SAFETY: an out-parameter or NULL.
                let r = unsafe { onair_commands_new(out.ptr()) };
                Expect::new().add(f.has(OUT), ONAIR_NULL_PARAMETER).check(
                    "onair_commands_new",
                    r,
                    ONAIR_OK,
                );
                if let Some(p) = out.after("onair_commands_new", r) {
                    self.free_commands();
                    self.commands = Some(Kit {
                        c: p,
                        shadow: Commands::new(),
                    });
                }
            }
            1..=4 => {
                let words: [&[u8]; 8] = [
                    b"!",
                    b"?",
                    b"hello",
                    b"stop",
                    b"reset",
                    b"u1",
                    b"",
                    "ΣΟΦΟΣ".as_bytes(),
                ];
                let t = Buf::new(pick(input, &words), f, NULL0, NULLN);
                t.text_faults(&mut e);
                let allowed = u32::from(input.byte() % 4);
                let sub = op % 8;
                e.add(sub == 3 && allowed > 2, ONAIR_INVALID_ARGUMENT);
                // SAFETY: a live handle or NULL; (pointer, length) within the buffer.
                let r = unsafe {
                    match sub {
                        1 => onair_commands_set_prefix(h, t.cptr(), t.len),
                        2 => onair_commands_add_prefix(h, t.cptr(), t.len),
                        3 => onair_commands_add(h, t.cptr(), t.len, allowed),
                        _ => onair_commands_ignore(h, t.cptr(), t.len),
                    }
                };
                e.check("a commands setter", r, ONAIR_OK);
                if let (ONAIR_OK, Some(c)) = (r, &mut self.commands) {
                    let text = t.text().expect("OK only for text");
                    let old = std::mem::take(&mut c.shadow);
                    c.shadow = match sub {
                        1 => old.prefix(text),
                        2 => old.also_prefix(text),
                        3 => old.command(
                            text,
                            [Allowed::Anyone, Allowed::Managers, Allowed::Dj][allowed as usize],
                        ),
                        _ => old.ignore_bots([text]),
                    };
                }
            }
            5 => {
                let (view, null) = self.event_arg(f);
                Self::event_faults(&view, null, &mut e);
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let audience = if f.has(AUX) {
                    null_mut()
                } else {
                    self.audience.as_ref().map_or(null_mut(), |a| a.c)
                };
                let mut out = Out::<onair_invocation>::new(f.has(OUT));
                // SAFETY: live handles or NULL; a live view, one without an event, or NULL.
                let r = unsafe {
                    onair_commands_match(h, audience, Self::event_ptr(&view, null), out.ptr())
                };
                e.check("onair_commands_match", r, ONAIR_OK);
                if let (Some(v), Some(c)) = (out.after("onair_commands_match", r), &self.commands) {
                    // SAFETY: the view's event is alive.
                    let ev = unsafe { event_in(&view) }.expect("OK only with an event");
                    let empty = Audience::new();
                    let aud = match &self.audience {
                        Some(a) if !audience.is_null() => &a.shadow,
                        _ => &empty,
                    };
                    let want = match &*ev {
                        Event::Chat(chat) => c.shadow.match_chat(chat, aud),
                        _ => None,
                    };
                    check_invocation(&v, want.as_ref());
                }
            }
            _ => self.free_commands(),
        }
    }

    fn free_commands(&mut self) {
        if let Some(c) = self.commands.take() {
            // SAFETY: a live handle, freed once.
            unsafe { onair_commands_free(c.c) };
        }
    }

    // ---- 11: milestones --------------------------------------------------------------

    fn milestones(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        let h = handle(&self.milestones, f);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER);
        match op % 8 {
            0 | 1 => {
                let mut out = Out::<*mut onair_milestones>::new(f.has(OUT));
                let mut e = Expect::new();
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let (r, shadow) = if op % 8 == 0 {
                    let (hearts, donations) = (number(input, 100), number(input, 1000));
                    // SAFETY: an out-parameter or NULL.
                    let r = unsafe { onair_milestones_new(hearts, donations, out.ptr()) };
                    let mut m = Milestones::new();
                    if hearts > 0 {
                        m = m.hearts_every(hearts);
                    }
                    if donations > 0 {
                        m = m.donations_every(donations);
                    }
                    (r, Some(m))
                } else {
                    let stored = self
                        .milestones
                        .as_ref()
                        .map(|m| m.shadow.to_json().into_bytes());
                    let json = Buf::new(
                        match input.byte() % 4 {
                            0 => stored.unwrap_or_default(),
                            1 => br#"{"format":"onair.milestones","version":1,"live_id":9,"dj_id":"dj","hearts":250,"hearts_announced":200,"total_donated":1500,"donors":[{"user":{"id":"u1","nickname":"Mina"},"donated":1000,"donations":2,"announced":1000}]}"#.to_vec(),
                            _ => input.short().to_vec(),
                        },
                        f,
                        NULL0,
                        NULLN,
                    );
                    e.add(json.null, ONAIR_NULL_PARAMETER);
                    let loaded = (!json.null).then(|| Milestones::from_json(&json.bytes));
                    e.add(matches!(loaded, Some(Err(_))), ONAIR_INVALID_STATE);
                    // SAFETY: (pointer, length) within the buffer; an out-parameter or NULL.
                    let r = unsafe { onair_milestones_from_json(json.cptr(), json.len, out.ptr()) };
                    (r, loaded.and_then(Result::ok))
                };
                e.check("onair_milestones_new/from_json", r, ONAIR_OK);
                if let Some(p) = out.after("onair_milestones_new/from_json", r) {
                    self.free_milestones();
                    let shadow = shadow.expect("OK only when the core loads it");
                    self.milestones = Some(Kit { c: p, shadow });
                }
            }
            2 => {
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let mut out = Out::<*mut c_char>::new(f.has(OUT));
                let mut len = Out::<usize>::new(f.has(OUT2));
                // SAFETY: a live handle or NULL; out-parameters or NULL.
                let r = unsafe { onair_milestones_to_json(h, out.ptr(), len.ptr()) };
                e.check("onair_milestones_to_json", r, ONAIR_OK);
                let len = len.after("onair_milestones_to_json len", r);
                if let (Some(p), Some(m)) =
                    (out.after("onair_milestones_to_json", r), &self.milestones)
                {
                    assert_eq!(
                        owned("onair_milestones_to_json", p, len),
                        m.shadow.to_json()
                    );
                }
            }
            3 => {
                let live_id = number(input, 9);
                let mut out = Out::<bool>::new(f.has(OUT));
                // SAFETY: a live handle or NULL; an optional out-parameter.
                let r = unsafe { onair_milestones_start_broadcast(h, live_id, out.ptr()) };
                e.check("onair_milestones_start_broadcast", r, ONAIR_OK);
                let new = out.after("onair_milestones_start_broadcast", r);
                if let (ONAIR_OK, Some(m)) = (r, &mut self.milestones) {
                    let want = m.shadow.start_broadcast(live_id);
                    assert!(
                        new.is_none_or(|n| n == want),
                        "onair_milestones_start_broadcast"
                    );
                }
            }
            4 => {
                // SAFETY: a live handle or NULL.
                let r = unsafe { onair_milestones_end_broadcast(h) };
                e.check("onair_milestones_end_broadcast", r, ONAIR_OK);
                if let (ONAIR_OK, Some(m)) = (r, &mut self.milestones) {
                    m.shadow.end_broadcast();
                }
            }
            5 => {
                let (view, null) = self.event_arg(f);
                Self::event_faults(&view, null, &mut e);
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let mut out = Out::<onair_milestone>::new(f.has(OUT));
                // SAFETY: a live handle or NULL; a live view, one without an event, or NULL.
                let r = unsafe {
                    onair_milestones_on_event(h, Self::event_ptr(&view, null), out.ptr())
                };
                e.check("onair_milestones_on_event", r, ONAIR_OK);
                if let (Some(v), Some(m)) = (
                    out.after("onair_milestones_on_event", r),
                    &mut self.milestones,
                ) {
                    // SAFETY: the view's event is alive.
                    let ev = unsafe { event_in(&view) }.expect("OK only with an event");
                    let what = "onair_milestones_on_event";
                    match m.shadow.on_event(&ev) {
                        None => {
                            assert_eq!(v.kind, onair_milestone_kind::ONAIR_MILESTONE_NONE, "{what}")
                        }
                        Some(Milestone::Hearts { reached, total }) => {
                            assert_eq!(
                                (v.kind, v.reached, v.total),
                                (onair_milestone_kind::ONAIR_MILESTONE_HEARTS, reached, total)
                            );
                        }
                        Some(Milestone::Donated {
                            user,
                            reached,
                            total,
                        }) => {
                            assert_eq!(
                                (v.kind, v.reached, v.total),
                                (
                                    onair_milestone_kind::ONAIR_MILESTONE_DONATED,
                                    reached,
                                    total
                                )
                            );
                            assert_eq!(view_str(what, v.user_id), Some(user.id.as_str()));
                            assert_eq!(view_str(what, v.nickname), user.nickname.as_deref());
                        }
                    }
                }
            }
            6 => {
                let id = Buf::new(pick(input, &[b"u1", b"u2", b"dj"]), f, NULL0, NULLN);
                let shadow = self
                    .milestones
                    .as_ref()
                    .filter(|_| !h.is_null())
                    .map(|m| &m.shadow);
                // SAFETY: a live handle or NULL; (pointer, length) within the buffer.
                let (by, hearts, total) = unsafe {
                    (
                        onair_milestones_donated_by(h, id.cptr(), id.len),
                        onair_milestones_hearts(h),
                        onair_milestones_total_donated(h),
                    )
                };
                let want_by = shadow.zip(id.text()).map_or(0, |(m, t)| m.donated_by(t));
                assert_eq!(by, want_by, "onair_milestones_donated_by");
                assert_eq!(hearts, shadow.map_or(0, Milestones::hearts));
                assert_eq!(total, shadow.map_or(0, Milestones::total_donated));
            }
            _ => self.free_milestones(),
        }
    }

    fn free_milestones(&mut self) {
        if let Some(m) = self.milestones.take() {
            // SAFETY: a live handle, freed once.
            unsafe { onair_milestones_free(m.c) };
        }
    }

    // ---- 12: timers ---------------------------------------------------------------------

    fn timers(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        let h = handle(&self.timers, f);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER);
        let now = self.now;
        match op % 7 {
            0 => {
                let mut out = Out::<*mut onair_timers>::new(f.has(OUT));
                // SAFETY: an out-parameter or NULL.
                let r = unsafe { onair_timers_new(out.ptr()) };
                Expect::new().add(f.has(OUT), ONAIR_NULL_PARAMETER).check(
                    "onair_timers_new",
                    r,
                    ONAIR_OK,
                );
                if let Some(p) = out.after("onair_timers_new", r) {
                    self.free_timers();
                    self.timers = Some(Kit {
                        c: p,
                        shadow: Timers::new(),
                    });
                }
            }
            1..=3 => {
                let tag = Buf::new(pick(input, &TAGS), f, NULL0, NULLN);
                tag.text_faults(&mut e);
                let (at, period) = (number(input, now), number(input, 1000));
                let mut found = Out::<bool>::new(f.has(OUT));
                // SAFETY: a live handle or NULL; (pointer, length) within the buffer.
                let r = unsafe {
                    match op % 7 {
                        1 => onair_timers_schedule(h, at, tag.cptr(), tag.len),
                        2 => onair_timers_every(h, period, tag.cptr(), tag.len, at),
                        _ => onair_timers_cancel(h, tag.cptr(), tag.len, found.ptr()),
                    }
                };
                let t = tag.text().unwrap_or_default();
                let mut cancelled = None;
                let want = match &mut self.timers {
                    Some(k) if !e.any() => match op % 7 {
                        1 => timer_code(k.shadow.schedule(at, t)),
                        2 => timer_code(k.shadow.every(period, t, at)),
                        _ => {
                            cancelled = Some(k.shadow.cancel(t));
                            ONAIR_OK
                        }
                    },
                    _ => ONAIR_OK,
                };
                e.check("a timers call", r, want);
                if op % 7 == 3 {
                    assert_eq!(
                        found.after("onair_timers_cancel", r),
                        cancelled.filter(|_| !f.has(OUT))
                    );
                }
            }
            4 => {
                let connected = input.byte() % 2 == 0;
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER)
                    .add(f.has(OUT2), ONAIR_NULL_PARAMETER);
                let mut has = Out::<bool>::new(f.has(OUT));
                let mut at = Out::<u64>::new(f.has(OUT2));
                // SAFETY: a live handle or NULL; out-parameters or NULL.
                let r = unsafe { onair_timers_next_deadline(h, connected, has.ptr(), at.ptr()) };
                e.check("onair_timers_next_deadline", r, ONAIR_OK);
                let (has, at) = (
                    has.after("next_deadline has", r),
                    at.after("next_deadline at", r),
                );
                if let (Some(has), Some(at), Some(k)) = (has, at, &self.timers) {
                    let want = k.shadow.next_deadline(connected);
                    assert_eq!(
                        (has, at),
                        (want.is_some(), want.unwrap_or(0)),
                        "onair_timers_next_deadline"
                    );
                }
            }
            5 => {
                let connected = input.byte() % 2 == 0;
                let at = number(input, now);
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let mut out = Out::<onair_str>::new(f.has(OUT));
                // SAFETY: a live handle or NULL; an out-parameter or NULL.
                let r = unsafe { onair_timers_pop_due(h, at, connected, out.ptr()) };
                e.check("onair_timers_pop_due", r, ONAIR_OK);
                if let (Some(v), Some(k)) = (out.after("onair_timers_pop_due", r), &mut self.timers)
                {
                    let want = k.shadow.pop_due(at, connected);
                    assert_eq!(
                        view_str("onair_timers_pop_due", v),
                        want.as_ref().map(|t| t.as_str())
                    );
                }
            }
            _ => self.free_timers(),
        }
    }

    fn free_timers(&mut self) {
        if let Some(t) = self.timers.take() {
            // SAFETY: a live handle, freed once.
            unsafe { onair_timers_free(t.c) };
        }
    }

    // ---- 13: tally -----------------------------------------------------------------------

    fn tally(&mut self, op: u8, f: Faults, _input: &mut Input<'_>) {
        let h = handle(&self.tally, f);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER);
        match op % 5 {
            0 => {
                let mut out = Out::<*mut onair_tally>::new(f.has(OUT));
                // SAFETY: an out-parameter or NULL.
                let r = unsafe { onair_tally_new(out.ptr()) };
                Expect::new().add(f.has(OUT), ONAIR_NULL_PARAMETER).check(
                    "onair_tally_new",
                    r,
                    ONAIR_OK,
                );
                if let Some(p) = out.after("onair_tally_new", r) {
                    self.free_tally();
                    self.tally = Some(Kit {
                        c: p,
                        shadow: Tally::new(),
                    });
                }
            }
            1 => {
                let (view, null) = self.event_arg(f);
                Self::event_faults(&view, null, &mut e);
                // SAFETY: a live handle or NULL; a live view, one without an event, or NULL.
                let r = unsafe { onair_tally_record(h, Self::event_ptr(&view, null)) };
                e.check("onair_tally_record", r, ONAIR_OK);
                if let (ONAIR_OK, Some(t)) = (r, &mut self.tally) {
                    // SAFETY: the view's event is alive.
                    t.shadow
                        .record(&unsafe { event_in(&view) }.expect("OK only with an event"));
                }
            }
            2 => {
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                let mut out = Out::<*mut c_char>::new(f.has(OUT));
                let mut len = Out::<usize>::new(f.has(OUT2));
                // SAFETY: a live handle or NULL; out-parameters or NULL.
                let r = unsafe { onair_tally_json(h, out.ptr(), len.ptr()) };
                e.check("onair_tally_json", r, ONAIR_OK);
                let len = len.after("onair_tally_json len", r);
                if let (Some(p), Some(t)) = (out.after("onair_tally_json", r), &self.tally) {
                    let text = owned("onair_tally_json", p, len);
                    assert_eq!(text, TallyJson(&t.shadow).to_line());
                    json("onair_tally_json", &text);
                }
            }
            3 => {
                let shadow = self
                    .tally
                    .as_ref()
                    .filter(|_| !h.is_null())
                    .map(|t| &t.shadow);
                // SAFETY: a live handle or NULL.
                let got = unsafe {
                    (
                        onair_tally_hearts(h),
                        onair_tally_donated(h),
                        onair_tally_attendance(h),
                    )
                };
                let want = shadow.map_or((0, 0, 0), |t| {
                    (t.total_hearts(), t.total_donated(), t.attendance())
                });
                assert_eq!(got, want, "tally getters");
            }
            _ => self.free_tally(),
        }
    }

    fn free_tally(&mut self) {
        if let Some(t) = self.tally.take() {
            // SAFETY: a live handle, freed once.
            unsafe { onair_tally_free(t.c) };
        }
    }

    // ---- 14: onair_event_json ------------------------------------------------------------

    fn event_json(&mut self, f: Faults) {
        let (view, null) = self.event_arg(f);
        let mut e = Expect::new();
        Self::event_faults(&view, null, &mut e);
        e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
        let mut out = Out::<*mut c_char>::new(f.has(OUT));
        let mut len = Out::<usize>::new(f.has(OUT2));
        // SAFETY: a live view, one without an event, or NULL; out-parameters or NULL.
        let r = unsafe { onair_event_json(Self::event_ptr(&view, null), out.ptr(), len.ptr()) };
        e.check("onair_event_json", r, ONAIR_OK);
        let len = len.after("onair_event_json len", r);
        if let Some(p) = out.after("onair_event_json", r) {
            let text = owned("onair_event_json", p, len);
            // SAFETY: the view's event is alive.
            let ev = unsafe { event_in(&view) }.expect("OK only with an event");
            let id = view_str("onair_event.id", view.id).map(onair_core::proto::time::FrameId::new);
            let want = ItemJson(&Item::Event {
                id,
                event: Event::clone(&ev),
            })
            .to_line();
            assert_eq!(text, want, "onair_event_json");
        }
    }

    // ---- 15: time -------------------------------------------------------------------------

    fn time(&mut self, op: u8, input: &mut Input<'_>) {
        let n = u64::from(input.byte());
        self.now = self.now.saturating_add(match op % 4 {
            0 => n,
            1 => n * 1000,
            2 => n * 10_000,
            _ => n * 600_000,
        });
    }

    /// Frees every handle (the leak check of ASan sees anything left).
    fn free_all(&mut self) {
        self.free_list();
        self.free_decoder();
        self.free_sse();
        self.free_backoff();
        self.free_config();
        self.free_bot();
        self.free_audience();
        self.free_commands();
        self.free_milestones();
        self.free_timers();
        self.free_tally();
    }
}

fn role_code(role: Role) -> onair_role {
    match role {
        Role::Listener => onair_role::ONAIR_ROLE_LISTENER,
        Role::Manager => onair_role::ONAIR_ROLE_MANAGER,
        Role::Dj => onair_role::ONAIR_ROLE_DJ,
    }
}

/// An invocation view against the core's match.
fn check_invocation(
    v: &onair_invocation,
    want: Option<&Result<onair_core::kit::commands::Invocation, onair_core::kit::commands::Denied>>,
) {
    use crate::onair_command_match::*;
    let what = "onair_commands_match";
    match want {
        None => assert_eq!(v.kind, ONAIR_COMMAND_NONE, "{what}"),
        Some(Ok(run)) => {
            assert_eq!(v.kind, ONAIR_COMMAND_RUN, "{what}");
            assert_eq!(view_str(what, v.name), Some(run.name.as_str()));
            assert_eq!(view_str(what, v.rest), Some(run.rest.as_str()));
            assert_eq!(view_str(what, v.user_id), Some(run.user.id.as_str()));
            assert_eq!(view_str(what, v.nickname), run.user.nickname.as_deref());
            assert_eq!(v.role, role_code(run.role));
            assert_eq!(v.args_len, run.args.len());
            for (i, arg) in run.args.iter().enumerate() {
                // SAFETY: `args_len` views, alive until the next call on the handle.
                let got = unsafe { *v.args.add(i) };
                assert_eq!(view_str(what, got), Some(arg.as_str()));
            }
        }
        Some(Err(denied)) => {
            assert_eq!(v.kind, ONAIR_COMMAND_DENIED, "{what}");
            assert_eq!(view_str(what, v.name), Some(denied.name.as_str()));
            assert_eq!(view_str(what, v.user_id), Some(denied.user.id.as_str()));
            assert_eq!(v.role, role_code(denied.role));
            let needed = match denied.needed {
                Allowed::Anyone => onair_allowed::ONAIR_ALLOWED_ANYONE,
                Allowed::Managers => onair_allowed::ONAIR_ALLOWED_MANAGERS,
                Allowed::Dj => onair_allowed::ONAIR_ALLOWED_DJ,
            };
            assert_eq!(v.needed, needed, "{what}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::c_api;
    use std::path::Path;

    /// Replays every committed input of `fuzz/corpus/c_api/` (seeds from
    /// `fuzz/seeds.py`, `crash-*` kept from findings) on stable, plus the
    /// empty input and every single byte.
    #[test]
    fn every_committed_c_api_input_holds() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/c_api");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        let mut broken = Vec::new();
        for file in &files {
            let data = std::fs::read(file).expect("a corpus file reads");
            if std::panic::catch_unwind(|| c_api(&data)).is_err() {
                broken.push(file.display().to_string());
            }
        }
        assert!(
            broken.is_empty(),
            "inputs that broke an invariant: {broken:#?}"
        );
        assert!(files.len() >= 10, "only {} seeds", files.len());
        c_api(&[]);
        for b in 0..=255u8 {
            c_api(&[b]);
        }
    }
}
