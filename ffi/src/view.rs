//! The borrowed views C reads: strings, headers, events, items. Building a
//! view copies no text; it points into a value its handle keeps until the
//! next call on that handle.

use std::ffi::{c_char, c_void};
use std::ptr;

use crate::boundary;
use crate::handle::{lend, Head, Lent};

use onair_core::event::{EndReason, Event, LikeType};
use onair_core::proto::time::FrameId;

/// A borrowed UTF-8 string: `ptr` and `len` bytes, not NUL-terminated
/// unless a function says so. `ptr` is NULL when the value is absent (a
/// JSON `null`, a field the kind does not have).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_str {
    /// The first byte, or NULL when absent.
    pub ptr: *const c_char,
    /// The length in bytes (0 when absent).
    pub len: usize,
}

impl onair_str {
    pub(crate) const NULL: onair_str = onair_str {
        ptr: ptr::null(),
        len: 0,
    };

    pub(crate) fn of(s: &str) -> onair_str {
        onair_str {
            ptr: s.as_ptr().cast(),
            len: s.len(),
        }
    }

    pub(crate) fn opt(s: Option<&str>) -> onair_str {
        s.map_or(Self::NULL, Self::of)
    }
}

/// One HTTP header as (name, value) byte strings. In arguments (response
/// headers) the bytes are anything received, not necessarily UTF-8, and
/// no NUL is needed; in requests the library builds, both are text.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_header {
    /// The name (any case).
    pub name: *const c_char,
    /// Its length in bytes.
    pub name_len: usize,
    /// The value.
    pub value: *const c_char,
    /// Its length in bytes.
    pub value_len: usize,
}

/// A header array from C as core headers: each (name, value) pair as bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeaderIn<'a>(pub(crate) &'a [u8], pub(crate) &'a [u8]);

impl onair_core::Header for HeaderIn<'_> {
    fn name(&self) -> &[u8] {
        self.0
    }
    fn value(&self) -> &[u8] {
        self.1
    }
}

/// Reads `len` headers at `p` ((NULL, 0) is none). Any NULL name or value
/// with a non-zero length is `ONAIR_NULL_PARAMETER`.
pub(crate) unsafe fn headers_in<'a>(
    p: *const onair_header,
    len: usize,
) -> Result<Vec<HeaderIn<'a>>, crate::onair_result> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(crate::onair_result::ONAIR_NULL_PARAMETER);
    }
    // SAFETY: the caller promises `len` headers at `p`.
    let raw = unsafe { std::slice::from_raw_parts(p, len) };
    raw.iter()
        .map(|h| {
            // SAFETY: each pair is (pointer, length) readable bytes.
            let name = unsafe { crate::bytes_in(h.name.cast(), h.name_len) }?;
            let value = unsafe { crate::bytes_in(h.value.cast(), h.value_len) }?;
            Ok(HeaderIn(name, value))
        })
        .collect()
}

/// Which event an `onair_event` holds.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_event_kind {
    /// Not an event (the struct is zeroed).
    ONAIR_EVENT_NONE = 0,
    /// `chat`
    ONAIR_EVENT_CHAT = 1,
    /// `presence` (a join)
    ONAIR_EVENT_PRESENCE = 2,
    /// `like` (hearts)
    ONAIR_EVENT_LIKE = 3,
    /// `donation`
    ONAIR_EVENT_DONATION = 4,
    /// `end`: the last frame of a stream
    ONAIR_EVENT_END = 5,
    /// An event kind newer than this header: read it through the JSON form.
    ONAIR_EVENT_OTHER = 6,
}

/// A typed stream event as borrowed fields; the fields a kind does not
/// have are zero / NULL. Valid until the next call on the handle it came
/// from (decoder or bot).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_event {
    /// Which event.
    pub kind: onair_event_kind,
    /// The SSE event name: "chat", "presence", "like", "donation", "end".
    pub name: onair_str,
    /// The frame's id (`<epochMillis>-<offset>`), or NULL.
    pub id: onair_str,
    /// The person's id (the stable key); NULL for `end`.
    pub user_id: onair_str,
    /// The person's nickname; NULL when the service sent null (and for `end`).
    pub nickname: onair_str,
    /// chat: the DJ posted it.
    pub is_dj: bool,
    /// chat: the text; donation: the note, or NULL when none.
    pub message: onair_str,
    /// chat `sentTime`, presence/like/donation `time` (the wire text).
    pub time: onair_str,
    /// like: "PAID", "FREE" (or a newer value, verbatim).
    pub like_type: onair_str,
    /// like: bought with the paid currency (`like_type` is "PAID").
    pub is_paid: bool,
    /// like: hearts per item; donation: currency units (already multiplied out).
    pub amount: u64,
    /// like: hearts added this time (tally this one).
    pub total_amount: u64,
    /// like: hearts from a boost item.
    pub extra_amount: u64,
    /// like: whether `combo` is present.
    pub has_combo: bool,
    /// like: items stacked.
    pub combo: u64,
    /// presence: "JOIN" (or a newer value, verbatim).
    pub presence_type: onair_str,
    /// presence: whether `fan_rank` is present.
    pub has_fan_rank: bool,
    /// presence: rank in this broadcast's donation ranking.
    pub fan_rank: u64,
    /// presence: the DJ made this listener a manager.
    pub is_manager: bool,
    /// presence: whether `favorite_temperature` is present.
    pub has_favorite_temperature: bool,
    /// presence: affinity score.
    pub favorite_temperature: f64,
    /// end: "LIVE_ENDED", "TOKEN_EXPIRED", "RECONNECT" (or newer, verbatim).
    pub end_reason: onair_str,
    /// end: the broadcast is over (reason `LIVE_ENDED`).
    pub is_live_ended: bool,
    /// The handle the event is borrowed from, for the kit functions
    /// (`onair_audience_on_event`, …) and `onair_event_json`, which hold
    /// that handle's busy flag while they read the event (ONAIR_BUSY when
    /// another thread is in a call on it); do not touch. NULL for
    /// `ONAIR_EVENT_NONE`.
    pub opaque: *const c_void,
}

impl onair_event {
    pub(crate) const NONE: onair_event = onair_event {
        kind: onair_event_kind::ONAIR_EVENT_NONE,
        name: onair_str::NULL,
        id: onair_str::NULL,
        user_id: onair_str::NULL,
        nickname: onair_str::NULL,
        is_dj: false,
        message: onair_str::NULL,
        time: onair_str::NULL,
        like_type: onair_str::NULL,
        is_paid: false,
        amount: 0,
        total_amount: 0,
        extra_amount: 0,
        has_combo: false,
        combo: 0,
        presence_type: onair_str::NULL,
        has_fan_rank: false,
        fan_rank: 0,
        is_manager: false,
        has_favorite_temperature: false,
        favorite_temperature: 0.0,
        end_reason: onair_str::NULL,
        is_live_ended: false,
        opaque: ptr::null(),
    };

    /// A view of `event` (and its frame id), borrowing both; `source` is
    /// the head of the handle that lends `event` (see `handle::Lends`).
    pub(crate) fn view(id: Option<&FrameId>, event: &Event, source: *const Head) -> onair_event {
        use onair_event_kind::*;
        let mut v = onair_event {
            name: onair_str::of(event.name()),
            id: onair_str::opt(id.map(FrameId::as_str)),
            opaque: source.cast(),
            ..Self::NONE
        };
        if let Some(user) = event.user() {
            v.user_id = onair_str::of(&user.id);
            v.nickname = onair_str::opt(user.nickname.as_deref());
        }
        match event {
            Event::Chat(c) => {
                v.kind = ONAIR_EVENT_CHAT;
                v.is_dj = c.is_dj;
                v.message = onair_str::of(&c.message);
                v.time = onair_str::of(c.sent_time.as_str());
            }
            Event::Presence(p) => {
                v.kind = ONAIR_EVENT_PRESENCE;
                v.presence_type = onair_str::of(p.kind.as_str());
                v.has_fan_rank = p.fan_rank.is_some();
                v.fan_rank = p.fan_rank.unwrap_or(0);
                v.is_manager = p.is_manager;
                v.has_favorite_temperature = p.favorite_temperature.is_some();
                v.favorite_temperature = p.favorite_temperature.unwrap_or(0.0);
                v.time = onair_str::of(p.time.as_str());
            }
            Event::Like(l) => {
                v.kind = ONAIR_EVENT_LIKE;
                v.like_type = onair_str::of(l.kind.as_str());
                v.is_paid = l.kind == LikeType::Paid;
                v.amount = l.amount;
                v.total_amount = l.total_amount;
                v.extra_amount = l.extra_amount;
                v.has_combo = l.combo.is_some();
                v.combo = l.combo.unwrap_or(0);
                v.time = onair_str::of(l.time.as_str());
            }
            Event::Donation(d) => {
                v.kind = ONAIR_EVENT_DONATION;
                v.amount = d.amount;
                v.message = onair_str::opt(d.message.as_deref());
                v.time = onair_str::of(d.time.as_str());
            }
            Event::End(e) => {
                v.kind = ONAIR_EVENT_END;
                v.end_reason = onair_str::of(e.reason.as_str());
                v.is_live_ended = e.reason == EndReason::LiveEnded;
            }
            #[allow(unreachable_patterns)]
            _ => v.kind = ONAIR_EVENT_OTHER,
        }
        v
    }
}

/// The core event behind a view, with the busy flag of the handle that
/// lends it held until the result is dropped: `ONAIR_NO_EVENT` for a view
/// without one, `ONAIR_BUSY` when that handle is in a call on another thread.
pub(crate) unsafe fn event_in<'a>(ev: *const onair_event) -> Result<Lent<'a>, crate::onair_result> {
    if ev.is_null() {
        return Err(crate::onair_result::ONAIR_NULL_PARAMETER);
    }
    // SAFETY: `ev` points to a view this library filled in; only its
    // `opaque` field is read: NULL or the head of the handle that lent it.
    let opaque = unsafe { ptr::addr_of!((*ev).opaque).read() };
    // SAFETY: as above; the handle is alive while its views are used.
    unsafe { lend(opaque.cast()) }
}

/// Renders the canonical JSON of an event (the `data` object of an
/// `onair decode` event line, wrapped as that line:
/// `{"type":"event","event":…,"id":…,"data":{…}}`) into a string the
/// caller owns (free with `onair_string_free`); `out_len` (may be NULL)
/// gets its length.
///
/// Errors: NULL `event` or `out` → ONAIR_NULL_PARAMETER; a view without an
/// event → ONAIR_NO_EVENT; the bot or decoder that lent the event is in a
/// call on another thread → ONAIR_BUSY.
#[no_mangle]
pub unsafe extern "C" fn onair_event_json(
    event: *const onair_event,
    out: *mut *mut c_char,
    out_len: *mut usize,
) -> crate::onair_result {
    boundary(|| {
        let out = crate::out(out)?;
        // SAFETY: see event_in.
        let ev = unsafe { event_in(event) }?;
        // SAFETY: `id` of a view is NULL or borrowed from the same handle.
        let id = unsafe { ptr::addr_of!((*event).id).read() };
        let id = if id.ptr.is_null() {
            None
        } else {
            // SAFETY: the view's id points at `len` bytes of UTF-8 it borrowed.
            let s = unsafe { crate::str_in(id.ptr, id.len) }?;
            Some(FrameId::new(s))
        };
        let item = onair_core::Item::Event {
            id,
            event: Event::clone(&ev),
        };
        let line = onair_core::proto::json::ItemJson(&item).to_line();
        crate::string_out(line, out, crate::out(out_len).ok());
        Ok(())
    })
}
