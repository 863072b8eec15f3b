//! The C API body (target `c_api`): an operation list decoded from the
//! bytes calls libonair's exported functions (`ffi/src/`, compiled here as
//! the rlib `onair_ffi` by `ffi/rlib/`) the way a C program may — NULL
//! handles, NULL out-parameters, (NULL, n) pairs, invalid UTF-8, request
//! ids never issued, kit configurations and saved state of any shape, any
//! numbers — but never the way the contract calls undefined behaviour (a
//! length longer than its buffer, a view used after the
//! next call on its handle), which C cannot be protected from.
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
//!   behind it, fed the same calls), and items, actions (the kit's
//!   included), events (read back through `onair_event_json`), results,
//!   ids and JSON forms must agree with it;
//! - every handle's free answers `ONAIR_OK`, and a second free of it
//!   `ONAIR_FREED_HANDLE` (a double free is answered, never undefined);
//! - at the end every handle and string is freed: cargo-fuzz runs this
//!   under AddressSanitizer, whose leak check fails the run on a leak.
//!
//! The bytes are read by [`Input`]: one byte picks a group of functions
//! (see [`c_api`]), the next the function, then a *faults* byte (under
//! 0xE0: none; 0xE0–0xEF: spoil argument `b & 15`; 0xF0–0xFF: a 16-bit mask
//! of arguments follows) and the arguments: canned values picked by a
//! byte, or raw bytes (a length byte, then that many).

use std::collections::VecDeque;
use std::ffi::{c_char, CStr};
use std::mem::{size_of, MaybeUninit};
use std::ptr::{null, null_mut};

use onair::api::{classify, Backoff, QuotaHeaders, RetryAfter};
use onair::bot::DailyQuota;
use onair::bot::{Notice, Status};
use onair::event::{Decoder, Event};
use onair::json::{ActionJson, ItemJson, RawItemJson, TallyJson};
use onair::kit::tally::Tally;
use onair::kit::{text, Allowed, ArrivalKind, KitConfig, KitState, Milestone, ReplyKind, Role};
use onair::sse::Parser;
use onair::{sse, CredentialsError, Endpoint, FrameId, Timer, TimerError};
use onair::{
    Action, BaseUrl, Bot, BotConfig, ClientCredentials, HttpRequest, Item, Misuse, RequestId,
    Tokens,
};
use onair_ffi::onair_result::{self, *};
use onair_ffi::*;

use crate::Input;

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

/// An event view with no event (`ONAIR_EVENT_NONE`, every field empty).
fn no_event() -> onair_event {
    // SAFETY: all zeroes is a valid onair_event: kind ONAIR_EVENT_NONE (0),
    // NULL strings of length 0, false, 0.
    unsafe { std::mem::zeroed() }
}

/// The canonical line of an event with its frame id (`onair_event_json`'s).
fn event_line(id: Option<&FrameId>, event: &Event) -> String {
    ItemJson(&Item::Event {
        id: id.cloned(),
        event: event.clone(),
    })
    .to_line()
}

/// The view of an event against the core's event: its kind and the flags
/// derived from the wire, and the event read back from the view's fields
/// (`onair_event_json`) is the core's, field for field (each string valid
/// UTF-8 of its stated length, a NULL exactly where the core has none).
fn check_event(what: &str, v: &onair_event, id: Option<&FrameId>, want: &Event) {
    use onair_ffi::onair_event_kind::*;
    let kind = match want {
        Event::Chat(_) => ONAIR_EVENT_CHAT,
        Event::Presence(_) => ONAIR_EVENT_PRESENCE,
        Event::Like(l) => {
            assert_eq!(v.is_paid, l.kind == onair::event::LikeType::Paid, "{what}");
            ONAIR_EVENT_LIKE
        }
        Event::Donation(_) => ONAIR_EVENT_DONATION,
        Event::End(e) => {
            let ended = e.reason == onair::event::EndReason::LiveEnded;
            assert_eq!(v.is_live_ended, ended, "{what}");
            ONAIR_EVENT_END
        }
    };
    assert_eq!(v.kind, kind, "{what}: kind");
    assert_eq!(view_str(what, v.name), Some(want.name()), "{what}: name");
    let mut out = Out::<*mut c_char>::new(false);
    let mut len = Out::<usize>::new(false);
    // SAFETY: a view from a live handle, read before its next call.
    let r = unsafe { onair_event_json(v, out.ptr(), len.ptr()) };
    assert_eq!(r, ONAIR_OK, "{what}: onair_event_json");
    let len = len.after("onair_event_json len", r);
    let line = out
        .after("onair_event_json", r)
        .map(|p| owned(what, p, len));
    assert_eq!(line, Some(event_line(id, want)), "{what}: read back");
}

/// A decoder item view against the core's item.
fn check_item(v: &onair_item, want: Option<&Item>) {
    use onair_ffi::onair_item_kind::*;
    let what = "onair_decoder_next";
    for s in [v.name, v.id, v.text, v.error_code, v.error_message] {
        view_str(what, s);
    }
    match want {
        None => assert_eq!(v.kind, ONAIR_ITEM_NONE, "{what}: an item the core has not"),
        Some(Item::Event { id, event }) => {
            assert_eq!(v.kind, ONAIR_ITEM_EVENT, "{what}");
            assert_eq!(view_str(what, v.id), id.as_ref().map(FrameId::as_str));
            check_event(what, &v.event, id.as_ref(), event);
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
        use onair_ffi::onair_sse_item_kind::*;
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

/// A tally with its broadcast as libonair writes it: `{"liveId":…}` and the
/// core's `TallyJson` fields.
fn check_tally(what: &str, text: &str, live_id: Option<u64>, tally: &Tally) {
    let mut got = json(what, text);
    let map = got.as_object_mut().expect("a tally is an object");
    assert_eq!(
        map.remove("liveId"),
        Some(live_id.map_or(serde_json::Value::Null, Into::into)),
        "{what}: liveId"
    );
    assert_eq!(got, json(what, &TallyJson(tally).to_line()), "{what}");
    assert!(text.starts_with("{\"liveId\":"), "{what}: liveId first");
}

fn role_code(role: Role) -> onair_role {
    match role {
        Role::Listener => onair_role::ONAIR_ROLE_LISTENER,
        Role::Manager => onair_role::ONAIR_ROLE_MANAGER,
        Role::Dj => onair_role::ONAIR_ROLE_DJ,
    }
}

fn allowed_code(allowed: Allowed) -> onair_allowed {
    match allowed {
        Allowed::Anyone => onair_allowed::ONAIR_ALLOWED_ANYONE,
        Allowed::Managers => onair_allowed::ONAIR_ALLOWED_MANAGERS,
        Allowed::Dj => onair_allowed::ONAIR_ALLOWED_DJ,
    }
}

/// The person fields of an action against the core's user.
fn check_user(what: &str, v: &onair_action, user: Option<&onair::event::User>) {
    assert_eq!(
        view_str(what, v.user_id),
        user.map(|u| u.id.as_str()),
        "{what}: user"
    );
    assert_eq!(
        view_str(what, v.nickname),
        user.and_then(|u| u.nickname.as_deref()),
        "{what}: nickname"
    );
}

/// An action view against the core's action.
fn check_action(v: &onair_action, want: &Action, now: u64) {
    use onair_ffi::onair_action_kind::*;
    let what = "onair_bot_poll";
    view_str(what, v.code);
    view_str(what, v.tag);
    if !v.message.ptr.is_null() {
        view_cstr(what, v.message.ptr, v.message.len);
    }
    if !matches!(
        want,
        Action::Event { .. }
            | Action::Command(_)
            | Action::Arrival(_)
            | Action::Milestone(_)
            | Action::BroadcastEnded(_)
    ) {
        assert_eq!(
            v.event.kind,
            onair_event_kind::ONAIR_EVENT_NONE,
            "{what}: an event"
        );
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
        Action::CloseStream { id, reason } => {
            assert_eq!((v.kind, v.request_id), (ONAIR_ACTION_CLOSE_STREAM, id.0));
            assert_eq!(view_str(what, v.code), Some(reason.as_str()));
        }
        Action::Event { id, event } => {
            assert_eq!(v.kind, ONAIR_ACTION_EVENT, "{what}");
            check_event(what, &v.event, id.as_ref(), event);
        }
        Action::Notice(Notice::CommandRefused(r)) => {
            assert_eq!(v.kind, ONAIR_ACTION_NOTICE, "{what}");
            assert_eq!(v.notice, onair_notice_kind::ONAIR_NOTICE_COMMAND_REFUSED);
            assert_eq!(view_str(what, v.name), Some(r.name.as_str()));
            check_user(what, v, Some(&r.user));
            assert_eq!(
                (v.role, v.needed),
                (role_code(r.role), allowed_code(r.needed))
            );
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
        Action::Command(c) => {
            assert_eq!(v.kind, ONAIR_ACTION_COMMAND, "{what}");
            assert_eq!(view_str(what, v.name), Some(c.name.as_str()));
            assert_eq!(view_str(what, v.rest), Some(c.rest.as_str()));
            assert_eq!(v.args_len, c.args.len(), "{what}: args");
            for (i, arg) in c.args.iter().enumerate() {
                // SAFETY: `args_len` views, alive until the next poll.
                let got = unsafe { *v.args.add(i) };
                assert_eq!(view_str(what, got), Some(arg.as_str()), "{what}: args");
            }
            check_user(what, v, Some(&c.user));
            assert_eq!(v.role, role_code(c.role));
            let chat = Event::Chat(c.chat.event.clone());
            check_event(what, &v.event, c.chat.id.as_ref(), &chat);
        }
        Action::Arrival(a) => {
            assert_eq!(v.kind, ONAIR_ACTION_ARRIVAL, "{what}");
            let (kind, away) = match a.kind {
                ArrivalKind::First => (onair_arrival_kind::ONAIR_ARRIVAL_FIRST, 0),
                ArrivalKind::Back { away_ms } => (onair_arrival_kind::ONAIR_ARRIVAL_BACK, away_ms),
            };
            assert_eq!((v.arrival, v.away_ms), (kind, away), "{what}");
            check_user(what, v, Some(&a.user));
            assert_eq!(v.is_manager, a.is_manager);
            assert_eq!(
                (v.has_live_id, v.live_id),
                (a.live_id.is_some(), a.live_id.unwrap_or(0))
            );
            check_event(what, &v.event, a.event.id.as_ref(), &a.event.event);
        }
        Action::Milestone(m) => {
            assert_eq!(v.kind, ONAIR_ACTION_MILESTONE, "{what}");
            match m {
                Milestone::Hearts {
                    reached,
                    total,
                    like,
                } => {
                    assert_eq!(v.milestone, onair_milestone_kind::ONAIR_MILESTONE_HEARTS);
                    assert_eq!((v.reached, v.total), (*reached, *total));
                    check_user(what, v, None);
                    let event = Event::Like(like.event.clone());
                    check_event(what, &v.event, like.id.as_ref(), &event);
                }
                Milestone::Donated {
                    user,
                    reached,
                    total,
                    donation,
                } => {
                    assert_eq!(v.milestone, onair_milestone_kind::ONAIR_MILESTONE_DONATED);
                    assert_eq!((v.reached, v.total), (*reached, *total));
                    check_user(what, v, Some(user));
                    let event = Event::Donation(donation.event.clone());
                    check_event(what, &v.event, donation.id.as_ref(), &event);
                }
            }
        }
        Action::BroadcastEnded(b) => {
            assert_eq!(v.kind, ONAIR_ACTION_BROADCAST_ENDED, "{what}");
            assert_eq!(
                (v.has_live_id, v.live_id),
                (b.live_id.is_some(), b.live_id.unwrap_or(0))
            );
            let text = view_cstr(what, v.tally_json.ptr, v.tally_json.len);
            check_tally(what, text, b.live_id, &b.tally);
            match &b.end {
                Some(end) => {
                    let event = Event::End(end.event.clone());
                    check_event(what, &v.event, end.id.as_ref(), &event);
                }
                None => assert_eq!(v.event.kind, onair_event_kind::ONAIR_EVENT_NONE),
            }
        }
        Action::PersistState(state) => {
            assert_eq!(v.kind, ONAIR_ACTION_PERSIST_STATE, "{what}");
            let text = view_cstr(what, v.state_json.ptr, v.state_json.len);
            assert_eq!(text, state.to_json(), "{what}: state");
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

fn call_code(e: &onair::ChatError) -> onair_result {
    match e.kind {
        onair::ChatErrorKind::Empty => ONAIR_CHAT_EMPTY,
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

const CHUNKS: [&[u8]; 16] = [
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
    b"id:1732250104000-4\nevent:chat\ndata:{\"user\":{\"id\":\"u2\",\"nickname\":null},\"isDj\":false,\"message\":\"!TOP 3 \\\"a b\\\"\",\"sentTime\":\"t\"}\n\n",
    b"id:1732250105000-5\nevent:like\ndata:{\"user\":{\"id\":\"u1\",\"nickname\":\"Mina\"},\"type\":\"FREE\",\"totalAmount\":100,\"amount\":100,\"extraAmount\":0,\"combo\":null,\"time\":\"t\"}\n\n",
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

/// Daily quota JSON: the app's counters and blocks (around T0), nothing,
/// and refusals (an array, a wrong type, not JSON).
const QUOTAS: [&[u8]; 10] = [
    br#"{"remaining":40,"resetMs":1732253600000,"blocks":[]}"#,
    br#"{"remaining":12,"resetMs":1732253600000,"blocks":[{"scope":"listeners.read","untilMs":1732251800000}]}"#,
    br#"{"remaining":0,"resetMs":1732257200000,"blocks":[{"scope":null,"untilMs":1732250060000},{"scope":"chat.send","untilMs":1732250100000}]}"#,
    br#"{"blocks":[{"scope":"fans.read","untilMs":99999999999999}]}"#,
    b"{}",
    b"  ",
    br#"[12,1732253600000,[]]"#,
    br#"{"remaining":"many"}"#,
    br#"{"blocks":[{"scope":"listeners.read"}]}"#,
    b"{",
];

/// A daily quota's JSON as libonair reads it (the oracle): blank is nothing
/// known; otherwise a JSON object of that form, or `None` (refused).
fn daily_quota_of(text: &str) -> Option<DailyQuota> {
    if text.trim_ascii().is_empty() {
        return Some(DailyQuota::default());
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) if v.is_object() => serde_json::from_value(v).ok(),
        _ => None,
    }
}

/// The reply kind of an `onair_reply_kind` value (1 to 5), or `None`.
fn reply_kind_of(kind: u32) -> Option<ReplyKind> {
    [
        ReplyKind::Welcome,
        ReplyKind::WelcomeBack,
        ReplyKind::Thanks,
        ReplyKind::Milestone,
        ReplyKind::Command,
    ]
    .get(usize::try_from(kind).ok()?.checked_sub(1)?)
    .copied()
}

fn token_file(access_expires_at_ms: u64) -> Vec<u8> {
    format!(
        r#"{{"format":"onair.tokens","version":1,"generation":1,"access_token":"at0","access_expires_at_ms":{access_expires_at_ms},"issued_at_ms":{},"refresh_token":"rt0","refresh_expires_at_ms":{},"scope":"{SCOPES}"}}"#,
        T0 - 60_000,
        T0 + 30 * 86_400_000
    )
    .into_bytes()
}

/// Kit configurations: one of each part, the reference bots', and refusals.
const KITS: [&[u8]; 7] = [
    br#"{"commands":[{"name":"hello","aliases":["hi"]},{"name":"top","allowed":"managers","cooldown_ms":1000},{"name":"stop","allowed":"dj"}],"ignore":["u9"],"greetings":{"welcome_back_after_ms":60000},"milestones":{"hearts_every":50,"donations_every":500},"tally":true}"#,
    br#"{"commands":[{"name":"hello"},{"name":"top"}],"greetings":{"welcome_back_after_ms":600000},"milestones":{"hearts_every":100,"donations_every":1000},"tally":true}"#,
    br#"{}"#,
    br#"{"prefix":"?","commands":[{"name":"a"},{"name":"A"}]}"#,
    br#"{"commands":[{"name":"x","allowed":"admins"}]}"#,
    br#"{"milestones":{"hearts_every":0}}"#,
    b"{",
];

/// Saved kit states: a small one, a newer version, another format.
const STATES: [&[u8]; 3] = [
    br#"{"format":"onair.kit","version":1,"live_id":1,"people":{"u1":{"nickname":"Mina","greeted":true,"last_seen_ms":1732250000000}}}"#,
    br#"{"format":"onair.kit","version":2}"#,
    br#"{"format":"onair.audience","version":1}"#,
];

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

/// A configuration's shadow: the core's, and its last refusal.
struct ConfigShadow {
    config: BotConfig,
    last_error: String,
}

/// A bot, its shadow and the ids it issued.
struct BotState {
    c: *mut onair_bot,
    shadow: Bot,
    polled: Option<Action>,
    sent: Vec<u64>,
    stream: Option<u64>,
}

/// A handle and its shadow.
struct Kit<H, S> {
    c: *mut H,
    shadow: S,
}

/// The event view current on a handle and the core's event it shows.
struct Current {
    src: Src,
    view: onair_event,
    id: Option<FrameId>,
    event: Event,
}

struct Fuzz {
    now: u64,
    event: Option<Current>,
    list: Option<Kit<onair_string_list, Vec<String>>>,
    decoder: Option<Kit<onair_decoder, DecoderShadow>>,
    sse: Option<Kit<onair_sse_parser, SseShadow>>,
    backoff: Option<Kit<onair_backoff, Backoff>>,
    config: Option<Kit<onair_bot_config, ConfigShadow>>,
    bot: Option<BotState>,
    /// The last kit state a bot handed out, to start the next bot from.
    saved_state: Option<String>,
    /// The last daily quota JSON handed out (a bot's, or a merge), to feed
    /// back.
    quota: Vec<u8>,
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
/// reports, 8 bot commands and getters, 9 the kit's configuration, 10
/// `onair_bot_say` (function byte under 0xD0; 0xD0–0xDF `onair_bot_reply`,
/// 0xE0–0xEF `onair_bot_reply_counters`, 0xF0–0xFF the app's daily quota:
/// `onair_bot_daily_quota_json`, `onair_bot_share_daily_quota_json`,
/// `onair_daily_quota_merge`), 11 `onair_bot_donor`, 12 a bot from saved kit state, 13
/// `onair_bot_tally_json`, 14 `onair_event_json`, 15 time), a function
/// byte, a faults byte and the arguments.
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
        saved_state: None,
        quota: Vec::new(),
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
            9 => fz.kit_config(op, faults, i),
            10 => match op {
                0xD0..=0xDF => fz.reply(faults, i),
                0xE0..=0xEF => fz.reply_counters(faults, i),
                0xF0..=0xFF => fz.daily_quota(op, faults, i),
                _ => fz.say(faults, i),
            },
            11 => fz.donor(faults, i),
            12 => fz.bot_new(faults, i, true),
            13 => fz.tally_json(faults),
            14 => fz.event_json(faults),
            _ => fz.time(op, i),
        }
    }
    fz.free_all();
}

impl Fuzz {
    /// A call on a handle ends the life of the views it handed out.
    fn touch(&mut self, src: Src) {
        if self.event.as_ref().is_some_and(|c| c.src == src) {
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
                if op.is_multiple_of(4) {
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
            let r = unsafe { onair_backoff_free(b.c) };
            assert_eq!(r, ONAIR_OK, "onair_backoff_free of a live handle");
            // SAFETY: a freed handle is looked up, never read as memory.
            let again = unsafe { onair_backoff_free(b.c) };
            assert_eq!(
                again, ONAIR_FREED_HANDLE,
                "onair_backoff_free again: a double free"
            );
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
            assert!(text::utf16_len(got) <= onair::api::CHAT_MAX_UTF16);
        }
    }

    fn free_list(&mut self) {
        if let Some(l) = self.list.take() {
            // SAFETY: a live handle, freed once.
            let r = unsafe { onair_string_list_free(l.c) };
            assert_eq!(r, ONAIR_OK, "onair_string_list_free of a live handle");
            // SAFETY: a freed handle is looked up, never read as memory.
            let again = unsafe { onair_string_list_free(l.c) };
            assert_eq!(
                again, ONAIR_FREED_HANDLE,
                "onair_string_list_free again: a double free"
            );
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
                    if let Some(Item::Event { id, event }) = &d.shadow.current {
                        self.event = Some(Current {
                            src: Src::Decoder,
                            view: v.event,
                            id: id.clone(),
                            event: event.clone(),
                        });
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
            let r = unsafe { onair_decoder_free(d.c) };
            assert_eq!(r, ONAIR_OK, "onair_decoder_free of a live handle");
            // SAFETY: a freed handle is looked up, never read as memory.
            let again = unsafe { onair_decoder_free(d.c) };
            assert_eq!(
                again, ONAIR_FREED_HANDLE,
                "onair_decoder_free again: a double free"
            );
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
            let r = unsafe { onair_sse_parser_free(s.c) };
            assert_eq!(r, ONAIR_OK, "onair_sse_parser_free of a live handle");
            // SAFETY: a freed handle is looked up, never read as memory.
            let again = unsafe { onair_sse_parser_free(s.c) };
            assert_eq!(
                again, ONAIR_FREED_HANDLE,
                "onair_sse_parser_free again: a double free"
            );
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
                    matches!(credentials, Some(Err(CredentialsError::InvalidClientId))),
                    ONAIR_INVALID_CLIENT_ID,
                );
                e.add(
                    matches!(credentials, Some(Err(CredentialsError::EmptySecret))),
                    ONAIR_INVALID_CLIENT_SECRET,
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
                        shadow: ConfigShadow {
                            config: BotConfig::new(base, credentials),
                            last_error: String::new(),
                        },
                    });
                }
            }
            8 => self.free_config(),
            setter => {
                let value = number(input, 30_000);
                let mut e = Expect::new();
                e.add(h.is_null(), ONAIR_NULL_PARAMETER);
                // Every call reaching the config clears its last error.
                if let Some(c) = self.config.as_mut().filter(|_| !h.is_null()) {
                    c.shadow.last_error.clear();
                }
                let shadow = self
                    .config
                    .as_mut()
                    .filter(|_| !h.is_null())
                    .map(|c| &mut c.shadow.config);
                // SAFETY: a live handle or NULL.
                let (name, r, zero_refused) = unsafe {
                    match setter {
                        1 => (
                            "set_events",
                            onair_bot_config_set_events(h, value.is_multiple_of(2)),
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
                        1 => c.events = value.is_multiple_of(2),
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
            let r = unsafe { onair_bot_config_free(c.c) };
            assert_eq!(r, ONAIR_OK, "onair_bot_config_free of a live handle");
            // SAFETY: a freed handle is looked up, never read as memory.
            let again = unsafe { onair_bot_config_free(c.c) };
            assert_eq!(
                again, ONAIR_FREED_HANDLE,
                "onair_bot_config_free again: a double free"
            );
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
            0 => self.bot_new(f, input, false),
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
                // A request that never left, or one without an answer.
                let not_sent = input.byte() & 1 == 1;
                let (name, r) = if not_sent {
                    // SAFETY: a live handle or NULL.
                    let r = unsafe { onair_bot_on_not_sent(h, id, now) };
                    ("onair_bot_on_not_sent", r)
                } else {
                    // SAFETY: a live handle or NULL.
                    let r = unsafe { onair_bot_on_transport_error(h, id, now) };
                    ("onair_bot_on_transport_error", r)
                };
                let want = match &mut self.bot {
                    Some(b) if !e.any() => report_code(if not_sent {
                        b.shadow.on_not_sent(RequestId(id), now)
                    } else {
                        b.shadow.on_transport_error(RequestId(id), now)
                    }),
                    _ => ONAIR_OK,
                };
                e.check(name, r, want);
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
            Action::CloseStream { id, .. } if b.stream == Some(id.0) => b.stream = None,
            _ => {}
        }
        if let Action::PersistState(state) = &want {
            self.saved_state = Some(state.to_json().to_owned());
        }
        let shown = match &want {
            Action::Event { id, event } => Some((id.clone(), event.clone())),
            Action::Command(c) => Some((c.chat.id.clone(), Event::Chat(c.chat.event.clone()))),
            Action::Arrival(a) => Some((a.event.id.clone(), a.event.event.clone())),
            Action::Milestone(Milestone::Hearts { like, .. }) => {
                Some((like.id.clone(), Event::Like(like.event.clone())))
            }
            Action::Milestone(Milestone::Donated { donation, .. }) => {
                Some((donation.id.clone(), Event::Donation(donation.event.clone())))
            }
            Action::BroadcastEnded(b) => b
                .end
                .as_ref()
                .map(|end| (end.id.clone(), Event::End(end.event.clone()))),
            _ => None,
        };
        b.polled = Some(want);
        if let Some((id, event)) = shown {
            self.event = Some(Current {
                src: Src::Bot,
                view: v.event,
                id,
                event,
            });
        }
        Some(v.kind)
    }

    /// `onair_bot_new` from the current configuration: saved tokens (good,
    /// expired, another version, raw bytes, NULL) and, `with_state`, a saved
    /// kit state (the last a bot handed out, canned ones, raw bytes, NULL).
    fn bot_new(&mut self, f: Faults, input: &mut Input<'_>, with_state: bool) {
        let cfg = match &mut self.config {
            Some(c) if !f.has(HANDLE) => {
                // Every call reaching the config clears its last error.
                c.shadow.last_error.clear();
                c.c
            }
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
        let state = if with_state {
            let bytes = match input.byte() % 4 {
                0 => self.saved_state.clone().unwrap_or_default().into_bytes(),
                _ => pick(input, &STATES),
            };
            Buf::new(bytes, f, NULL0_B, NULLN_B)
        } else {
            Buf::new(Vec::new(), Faults(1 << NULL0_B), NULL0_B, NULLN_B)
        };
        let seed = number(input, 0);
        let tokens = (!saved.null).then(|| Tokens::from_json(&saved.bytes));
        let loaded = (!state.null).then(|| KitState::from_json(&state.bytes));
        let mut e = Expect::new();
        e.add(cfg.is_null(), ONAIR_NULL_PARAMETER)
            .add(f.has(OUT), ONAIR_NULL_PARAMETER);
        // A NULL saved file is none, whatever its length. The tokens are
        // read first: the state's refusal comes only with good tokens.
        let tokens_refused = tokens.as_ref().and_then(|t| t.as_ref().err());
        e.add(tokens_refused.is_some(), ONAIR_INVALID_TOKENS);
        let state_refused = loaded.as_ref().and_then(|s| s.as_ref().err());
        let state_code = match state_refused {
            Some(onair::kit::StateError::UnsupportedVersion { .. }) => ONAIR_KIT_STATE_TOO_NEW,
            _ => ONAIR_INVALID_STATE,
        };
        e.add(
            state_refused.is_some() && tokens_refused.is_none(),
            state_code,
        );
        let mut out = Out::<*mut onair_bot>::new(f.has(OUT));
        // SAFETY: a live config or NULL; (pointer, length) pairs within their buffers.
        let r = unsafe {
            onair_bot_new(
                cfg,
                saved.cptr(),
                saved.len,
                state.cptr(),
                state.len,
                seed,
                out.ptr(),
            )
        };
        e.check("onair_bot_new", r, ONAIR_OK);
        let detail = match r {
            ONAIR_INVALID_TOKENS => tokens_refused.map(ToString::to_string),
            ONAIR_INVALID_STATE | ONAIR_KIT_STATE_TOO_NEW => state_refused.map(ToString::to_string),
            _ => None,
        };
        if let (Some(detail), Some(c)) = (detail, &mut self.config) {
            c.shadow.last_error = detail;
        }
        if let Some(p) = out.after("onair_bot_new", r) {
            self.free_bot();
            let config = self
                .config
                .as_ref()
                .expect("OK only with a config")
                .shadow
                .config
                .clone();
            let mut shadow = Bot::new(config, tokens.and_then(Result::ok), seed);
            if let Some(Ok(state)) = &loaded {
                shadow = shadow.with_kit_state(state);
            }
            self.bot = Some(BotState {
                c: p,
                shadow,
                polled: None,
                sent: Vec::new(),
                stream: None,
            });
        }
    }

    fn free_bot(&mut self) {
        if let Some(b) = self.bot.take() {
            self.touch(Src::Bot);
            // SAFETY: a live handle, freed once.
            let r = unsafe { onair_bot_free(b.c) };
            assert_eq!(r, ONAIR_OK, "onair_bot_free of a live handle");
            // SAFETY: a freed handle is looked up, never read as memory.
            let again = unsafe { onair_bot_free(b.c) };
            assert_eq!(
                again, ONAIR_FREED_HANDLE,
                "onair_bot_free again: a double free"
            );
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
                let revoke = input.byte().is_multiple_of(2);
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
                let while_connected = input.byte().is_multiple_of(2);
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
                            .token_pair()
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

    // ---- 9: the kit's configuration ------------------------------------------------

    fn kit_config(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        let h = handle(&self.config, f);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER);
        if op.is_multiple_of(2) {
            if let Some(c) = self.config.as_mut().filter(|_| !h.is_null()) {
                c.shadow.last_error.clear();
            }
            let json = Buf::new(pick(input, &KITS), f, NULL0, NULLN);
            json.text_faults(&mut e);
            let parsed = json.text().map(KitConfig::from_json);
            e.add(
                !e.any() && matches!(parsed, Some(Err(_))),
                ONAIR_INVALID_KIT_CONFIG,
            );
            // SAFETY: a live config or NULL; (pointer, length) within the buffer.
            let r = unsafe { onair_bot_config_set_kit_json(h, json.cptr(), json.len) };
            e.check("onair_bot_config_set_kit_json", r, ONAIR_OK);
            if let (Some(c), Some(parsed)) = (&mut self.config, parsed) {
                match (r, parsed) {
                    (ONAIR_OK, Ok(kit)) => c.shadow.config.kit = kit,
                    (ONAIR_INVALID_KIT_CONFIG, Err(err)) => {
                        assert!(!err.key.is_empty() || err.to_string().starts_with("kit config: "));
                        c.shadow.last_error = err.to_string();
                    }
                    _ => {}
                }
            }
        } else {
            e.add(f.has(OUT), ONAIR_NULL_PARAMETER)
                .add(f.has(OUT2), ONAIR_NULL_PARAMETER);
            let mut out = Out::<*const c_char>::new(f.has(OUT));
            let mut len = Out::<usize>::new(f.has(OUT2));
            // SAFETY: a live config or NULL; out-parameters or NULL.
            let r = unsafe { onair_bot_config_last_error(h, out.ptr(), len.ptr()) };
            e.check("onair_bot_config_last_error", r, ONAIR_OK);
            let (p, n) = (out.after("last_error", r), len.after("last_error", r));
            if let (Some(p), Some(n), Some(c)) = (p, n, &self.config) {
                let text = view_cstr("onair_bot_config_last_error", p, n);
                assert_eq!(text, c.shadow.last_error, "onair_bot_config_last_error");
            }
        }
    }

    // ---- 10, 11, 13: the kit on the bot ----------------------------------------------

    fn say(&mut self, f: Faults, input: &mut Input<'_>) {
        let h = self.bot_handle(f);
        let text = Buf::new(long_text(input), f, NULL0, NULLN);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER);
        text.text_faults(&mut e);
        let mut count = Out::<usize>::new(f.has(OUT));
        // Room for some of the ids (0 to 3): every part is queued regardless.
        let cap = usize::from(input.byte() % 4);
        let mut ids = vec![0u64; cap];
        // SAFETY: a live bot or NULL; (pointer, length) within the buffers.
        let r =
            unsafe { onair_bot_say(h, text.cptr(), text.len, ids.as_mut_ptr(), cap, count.ptr()) };
        e.check("onair_bot_say", r, ONAIR_OK);
        let count = count.after("onair_bot_say", r);
        if let (ONAIR_OK, Some(b)) = (r, &mut self.bot) {
            let calls = b.shadow.say(text.text().expect("OK only for text"));
            assert!(count.is_none_or(|n| n == calls.len()), "onair_bot_say");
            for (i, id) in ids.iter().enumerate() {
                let want = calls.get(i).map_or(0, |c| c.0);
                assert_eq!(*id, want, "onair_bot_say id {i}");
            }
        }
    }

    fn reply(&mut self, f: Faults, input: &mut Input<'_>) {
        let h = self.bot_handle(f);
        let kind = u32::from(input.byte() % 7);
        let id = Buf::new(pick(input, &[b"u1", b"u2", b"", b"\xff"]), f, NULL0, NULLN);
        let nickname = Buf::new(
            pick(input, &[b"Ana", b"", "J\u{f6}rg".as_bytes(), b"\xff"]),
            f,
            NULL0_B,
            NULLN_B,
        );
        let text = Buf::new(long_text(input), f, AUX, AUX);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER);
        id.text_faults(&mut e);
        // The nickname is optional: (NULL, 0) is none.
        nickname.bytes_faults(&mut e);
        e.add(
            !nickname.null && std::str::from_utf8(&nickname.bytes).is_err(),
            ONAIR_INVALID_UTF8,
        );
        text.text_faults(&mut e);
        let core_kind = reply_kind_of(kind);
        e.add(!e.any() && core_kind.is_none(), ONAIR_INVALID_ARGUMENT);
        e.add(!e.any() && id.text() == Some(""), ONAIR_INVALID_ARGUMENT);
        // SAFETY: a live bot or NULL; (pointer, length) pairs within their buffers.
        let r = unsafe {
            onair_bot_reply(
                h,
                kind,
                id.cptr(),
                id.len,
                nickname.cptr(),
                nickname.len,
                text.cptr(),
                text.len,
            )
        };
        let want = match (&mut self.bot, core_kind) {
            (Some(b), Some(k)) if !e.any() => {
                let nick = nickname.text().unwrap_or_default();
                let user = onair::User {
                    id: id.text().unwrap_or_default().to_owned(),
                    nickname: (!nick.is_empty()).then(|| nick.to_owned()),
                };
                let said = b.shadow.reply(k, &user, text.text().unwrap_or_default());
                said.as_ref().map_or_else(call_code, |()| ONAIR_OK)
            }
            _ => ONAIR_OK,
        };
        e.check("onair_bot_reply", r, want);
    }

    fn reply_counters(&mut self, f: Faults, input: &mut Input<'_>) {
        let h = self.bot_handle(f);
        let kind = u32::from(input.byte() % 7);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER)
            .add(f.has(OUT), ONAIR_NULL_PARAMETER);
        let core_kind = reply_kind_of(kind);
        e.add(!e.any() && core_kind.is_none(), ONAIR_INVALID_ARGUMENT);
        let mut out = Out::<onair_reply_counters>::new(f.has(OUT));
        // SAFETY: a live bot or NULL; an out-parameter or NULL.
        let r = unsafe { onair_bot_reply_counters(h, kind, out.ptr()) };
        e.check("onair_bot_reply_counters", r, ONAIR_OK);
        let got = out.after("onair_bot_reply_counters", r);
        if let (Some(c), Some(b), Some(k)) = (got, &self.bot, core_kind) {
            let status = b.shadow.status(0);
            let w = status.counters.replies.of(k);
            let got = [
                c.messages,
                c.people,
                c.merged,
                c.dropped,
                c.dropped_stale,
                c.dropped_ended,
                c.dropped_refused,
                c.dropped_given_up,
                c.dropped_queue_full,
                c.dropped_stopped,
            ];
            let want = [
                w.messages,
                w.people,
                w.merged,
                w.dropped,
                w.dropped_stale,
                w.dropped_ended,
                w.dropped_refused,
                w.dropped_given_up,
                w.dropped_queue_full,
                w.dropped_stopped,
            ];
            assert_eq!(got, want, "onair_bot_reply_counters {k:?}");
            assert_eq!(
                c.dropped,
                want[4..].iter().sum::<u64>(),
                "onair_bot_reply_counters: dropped is the sum of its reasons"
            );
        }
    }

    /// A quota JSON argument: canned, or the last one handed out.
    fn quota_arg(&self, input: &mut Input<'_>) -> Vec<u8> {
        let b = input.byte();
        match QUOTAS.get(usize::from(b)) {
            Some(q) => q.to_vec(),
            None if b >= 0xF0 => self.quota.clone(),
            None => input.short().to_vec(),
        }
    }

    fn daily_quota(&mut self, op: u8, f: Faults, input: &mut Input<'_>) {
        let now = number(input, self.now);
        match op % 3 {
            0 => {
                let h = self.bot_handle(f);
                let mut e = Expect::new();
                e.add(h.is_null(), ONAIR_NULL_PARAMETER)
                    .add(f.has(OUT), ONAIR_NULL_PARAMETER)
                    .add(f.has(OUT2), ONAIR_NULL_PARAMETER);
                let mut out = Out::<*const c_char>::new(f.has(OUT));
                let mut len = Out::<usize>::new(f.has(OUT2));
                let what = "onair_bot_daily_quota_json";
                // SAFETY: a live bot or NULL; out-parameters or NULL.
                let r = unsafe { onair_bot_daily_quota_json(h, now, out.ptr(), len.ptr()) };
                e.check(what, r, ONAIR_OK);
                let (p, n) = (out.after(what, r), len.after(what, r));
                if let (Some(p), Some(n), Some(b)) = (p, n, &self.bot) {
                    let text = view_cstr(what, p, n);
                    let want = b.shadow.daily_quota(now);
                    assert_eq!(
                        serde_json::from_str::<DailyQuota>(text).ok(),
                        Some(want),
                        "{what}"
                    );
                    self.quota = text.as_bytes().to_vec();
                }
            }
            1 => {
                let h = self.bot_handle(f);
                let json = Buf::new(self.quota_arg(input), f, NULL0, NULLN);
                let mut e = Expect::new();
                e.add(h.is_null(), ONAIR_NULL_PARAMETER);
                json.text_faults(&mut e);
                let shared = json.text().and_then(daily_quota_of);
                e.add(!e.any() && shared.is_none(), ONAIR_INVALID_ARGUMENT);
                // SAFETY: a live bot or NULL; (pointer, length) within the buffer.
                let r = unsafe { onair_bot_share_daily_quota_json(h, json.cptr(), json.len, now) };
                e.check("onair_bot_share_daily_quota_json", r, ONAIR_OK);
                if let (ONAIR_OK, Some(b), Some(q)) = (r, &mut self.bot, &shared) {
                    b.shadow.share_daily_quota(q, now);
                }
            }
            _ => {
                let app = Buf::new(self.quota_arg(input), f, NULL0, NULLN);
                let learned = Buf::new(self.quota_arg(input), f, NULL0_B, NULLN_B);
                let mut e = Expect::new();
                e.add(f.has(OUT), ONAIR_NULL_PARAMETER);
                for b in [&app, &learned] {
                    b.bytes_faults(&mut e);
                    e.add(
                        !b.null && std::str::from_utf8(&b.bytes).is_err(),
                        ONAIR_INVALID_UTF8,
                    );
                }
                let read = |b: &Buf| std::str::from_utf8(b.seen()).ok().and_then(daily_quota_of);
                let (mut want, learned_q) = (read(&app), read(&learned));
                e.add(
                    !e.any() && (want.is_none() || learned_q.is_none()),
                    ONAIR_INVALID_ARGUMENT,
                );
                let mut out = Out::<*mut c_char>::new(f.has(OUT));
                let mut len = Out::<usize>::new(f.has(OUT2));
                let mut changed = Out::<bool>::new(f.has(AUX));
                let what = "onair_daily_quota_merge";
                // SAFETY: (pointer, length) pairs within their buffers; out-parameters or NULL.
                let r = unsafe {
                    onair_daily_quota_merge(
                        app.cptr(),
                        app.len,
                        learned.cptr(),
                        learned.len,
                        now,
                        out.ptr(),
                        len.ptr(),
                        changed.ptr(),
                    )
                };
                e.check(what, r, ONAIR_OK);
                let len = len.after(what, r);
                let changed = changed.after(what, r);
                if let Some(p) = out.after(what, r) {
                    let text = owned(what, p, len);
                    let (Some(want), Some(learned_q)) = (want.as_mut(), learned_q) else {
                        panic!("{what}: ONAIR_OK for a refused quota");
                    };
                    let did = want.merge(&learned_q, now);
                    assert_eq!(
                        serde_json::from_str::<DailyQuota>(&text).ok().as_ref(),
                        Some(&*want),
                        "{what}"
                    );
                    assert!(changed.is_none_or(|c| c == did), "{what}: changed");
                    self.quota = text.into_bytes();
                }
            }
        }
    }

    fn donor(&mut self, f: Faults, input: &mut Input<'_>) {
        let h = self.bot_handle(f);
        let rank = usize::from(input.byte() % 8);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER)
            .add(f.has(OUT), ONAIR_NULL_PARAMETER);
        let kit = self.bot.as_ref().and_then(|b| b.shadow.kit());
        e.add(!e.any() && kit.is_none(), ONAIR_NO_KIT);
        let donors = kit.map(|k| k.tally().donors()).unwrap_or_default();
        let want = donors.get(rank);
        e.add(!e.any() && want.is_none(), ONAIR_OUT_OF_RANGE);
        let mut out = Out::<onair_donor>::new(f.has(OUT));
        // SAFETY: a live bot or NULL; an out-parameter or NULL.
        let r = unsafe { onair_bot_donor(h, rank, out.ptr()) };
        e.check("onair_bot_donor", r, ONAIR_OK);
        if let (Some(d), Some((id, totals))) = (out.after("onair_bot_donor", r), want) {
            let what = "onair_bot_donor";
            assert_eq!(view_str(what, d.user_id), Some(*id));
            assert_eq!(view_str(what, d.nickname), totals.nickname.as_deref());
            assert_eq!((d.donated, d.donations), (totals.donated, totals.donations));
        }
    }

    fn tally_json(&mut self, f: Faults) {
        let h = self.bot_handle(f);
        let mut e = Expect::new();
        e.add(h.is_null(), ONAIR_NULL_PARAMETER)
            .add(f.has(OUT), ONAIR_NULL_PARAMETER)
            .add(f.has(OUT2), ONAIR_NULL_PARAMETER);
        let kit = self.bot.as_ref().and_then(|b| b.shadow.kit());
        e.add(!e.any() && kit.is_none(), ONAIR_NO_KIT);
        let mut out = Out::<*const c_char>::new(f.has(OUT));
        let mut len = Out::<usize>::new(f.has(OUT2));
        // SAFETY: a live bot or NULL; out-parameters or NULL.
        let r = unsafe { onair_bot_tally_json(h, out.ptr(), len.ptr()) };
        e.check("onair_bot_tally_json", r, ONAIR_OK);
        let (p, n) = (out.after("tally_json", r), len.after("tally_json", r));
        if let (Some(p), Some(n), Some(kit)) = (p, n, kit) {
            let text = view_cstr("onair_bot_tally_json", p, n);
            check_tally("onair_bot_tally_json", text, kit.live_id(), kit.tally());
        }
    }

    // ---- 14: onair_event_json ------------------------------------------------------------

    /// The current event view (a copy of the struct; its pointers borrow
    /// from its handle, still alive), one without an event, or NULL.
    fn event_json(&mut self, f: Faults) {
        let view = match &self.event {
            Some(c) if !f.has(EVENT_NONE) => c.view,
            _ => no_event(),
        };
        let spoiled = f.has(EVENT_NULL);
        let mut e = Expect::new();
        e.add(spoiled, ONAIR_NULL_PARAMETER)
            .add(f.has(OUT), ONAIR_NULL_PARAMETER);
        e.add(
            !spoiled && view.kind == onair_event_kind::ONAIR_EVENT_NONE,
            ONAIR_NO_EVENT,
        );
        let mut out = Out::<*mut c_char>::new(f.has(OUT));
        let mut len = Out::<usize>::new(f.has(OUT2));
        let arg: *const onair_event = if spoiled { null() } else { &view };
        // SAFETY: a live view, one without an event, or NULL; out-parameters or NULL.
        let r = unsafe { onair_event_json(arg, out.ptr(), len.ptr()) };
        e.check("onair_event_json", r, ONAIR_OK);
        let len = len.after("onair_event_json len", r);
        if let Some(p) = out.after("onair_event_json", r) {
            let text = owned("onair_event_json", p, len);
            let c = self.event.as_ref().expect("OK only with an event");
            assert_eq!(
                text,
                event_line(c.id.as_ref(), &c.event),
                "onair_event_json"
            );
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

    fn free_all(&mut self) {
        self.free_list();
        self.free_decoder();
        self.free_sse();
        self.free_backoff();
        self.free_config();
        self.free_bot();
    }
}
