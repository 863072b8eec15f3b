//! The borrowed views C reads: strings, headers, events, items. Building a
//! view copies no text; it points into a value its handle keeps until the
//! next call on that handle.

use std::ffi::c_char;
use std::ptr;

use crate::onair_result::{self, *};
use crate::{boundary, str_in};

use onair_core::event::{
    Chat, Donation, End, EndReason, Event, Like, LikeType, Presence, PresenceType, User,
};
use onair_core::{FrameId, Timestamp};

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
) -> Result<Vec<HeaderIn<'a>>, onair_result> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(ONAIR_NULL_PARAMETER);
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
/// have are zero / NULL. Valid as long as what it was handed out with (a
/// decoder's item, a bot's action).
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
    };

    /// The fields every event has: its name, its frame id, its person.
    fn base(kind: onair_event_kind, id: Option<&FrameId>, user: Option<&User>) -> onair_event {
        let mut v = onair_event {
            kind,
            id: onair_str::opt(id.map(FrameId::as_str)),
            ..Self::NONE
        };
        v.name = onair_str::of(match kind {
            onair_event_kind::ONAIR_EVENT_CHAT => "chat",
            onair_event_kind::ONAIR_EVENT_PRESENCE => "presence",
            onair_event_kind::ONAIR_EVENT_LIKE => "like",
            onair_event_kind::ONAIR_EVENT_DONATION => "donation",
            onair_event_kind::ONAIR_EVENT_END => "end",
            _ => "",
        });
        if let Some(user) = user {
            v.user_id = onair_str::of(&user.id);
            v.nickname = onair_str::opt(user.nickname.as_deref());
        }
        v
    }

    /// A view of `event` (and its frame id), borrowing both.
    pub(crate) fn view(id: Option<&FrameId>, event: &Event) -> onair_event {
        match event {
            Event::Chat(c) => Self::chat(id, c),
            Event::Presence(p) => Self::presence(id, p),
            Event::Like(l) => Self::like(id, l),
            Event::Donation(d) => Self::donation(id, d),
            Event::End(e) => Self::end(id, e),
            #[allow(unreachable_patterns)]
            _ => onair_event {
                name: onair_str::of(event.name()),
                ..Self::base(onair_event_kind::ONAIR_EVENT_OTHER, id, event.user())
            },
        }
    }

    pub(crate) fn chat(id: Option<&FrameId>, c: &Chat) -> onair_event {
        onair_event {
            is_dj: c.is_dj,
            message: onair_str::of(&c.message),
            time: onair_str::of(c.sent_time.as_str()),
            ..Self::base(onair_event_kind::ONAIR_EVENT_CHAT, id, Some(&c.user))
        }
    }

    pub(crate) fn presence(id: Option<&FrameId>, p: &Presence) -> onair_event {
        onair_event {
            presence_type: onair_str::of(p.kind.as_str()),
            has_fan_rank: p.fan_rank.is_some(),
            fan_rank: p.fan_rank.unwrap_or(0),
            is_manager: p.is_manager,
            has_favorite_temperature: p.favorite_temperature.is_some(),
            favorite_temperature: p.favorite_temperature.unwrap_or(0.0),
            time: onair_str::of(p.time.as_str()),
            ..Self::base(onair_event_kind::ONAIR_EVENT_PRESENCE, id, Some(&p.user))
        }
    }

    pub(crate) fn like(id: Option<&FrameId>, l: &Like) -> onair_event {
        onair_event {
            like_type: onair_str::of(l.kind.as_str()),
            is_paid: l.kind == LikeType::Paid,
            amount: l.amount,
            total_amount: l.total_amount,
            extra_amount: l.extra_amount,
            has_combo: l.combo.is_some(),
            combo: l.combo.unwrap_or(0),
            time: onair_str::of(l.time.as_str()),
            ..Self::base(onair_event_kind::ONAIR_EVENT_LIKE, id, Some(&l.user))
        }
    }

    pub(crate) fn donation(id: Option<&FrameId>, d: &Donation) -> onair_event {
        onair_event {
            amount: d.amount,
            message: onair_str::opt(d.message.as_deref()),
            time: onair_str::of(d.time.as_str()),
            ..Self::base(onair_event_kind::ONAIR_EVENT_DONATION, id, Some(&d.user))
        }
    }

    pub(crate) fn end(id: Option<&FrameId>, e: &End) -> onair_event {
        onair_event {
            end_reason: onair_str::of(e.reason.as_str()),
            is_live_ended: e.reason == EndReason::LiveEnded,
            ..Self::base(onair_event_kind::ONAIR_EVENT_END, id, None)
        }
    }
}

/// The text of a view's field: NULL is `None`; (NULL, n > 0) and invalid
/// UTF-8 are refused.
unsafe fn field<'a>(s: onair_str) -> Result<Option<&'a str>, onair_result> {
    if s.ptr.is_null() {
        return if s.len == 0 {
            Ok(None)
        } else {
            Err(ONAIR_NULL_PARAMETER)
        };
    }
    // SAFETY: a view's (pointer, length), valid while the view is.
    unsafe { str_in(s.ptr, s.len) }.map(Some)
}

/// The core event a view shows, rebuilt from its fields (the view holds
/// every field of the canonical form).
unsafe fn event_of(v: &onair_event) -> Result<(Option<FrameId>, Event), onair_result> {
    use onair_event_kind::*;
    // SAFETY (every `field` below): the caller's view, valid while it is.
    let text = |s: onair_str| unsafe { field(s) };
    let required = |s: onair_str| text(s)?.ok_or(ONAIR_INVALID_ARGUMENT);
    if matches!(v.kind, ONAIR_EVENT_NONE | ONAIR_EVENT_OTHER) {
        return Err(ONAIR_NO_EVENT);
    }
    let id = text(v.id)?.map(FrameId::new);
    let user = || -> Result<User, onair_result> {
        Ok(User {
            id: required(v.user_id)?.to_owned(),
            nickname: text(v.nickname)?.map(str::to_owned),
        })
    };
    let time = || required(v.time).map(Timestamp::new);
    let event = match v.kind {
        ONAIR_EVENT_CHAT => Event::Chat(Chat {
            user: user()?,
            is_dj: v.is_dj,
            message: required(v.message)?.to_owned(),
            sent_time: time()?,
        }),
        ONAIR_EVENT_PRESENCE => Event::Presence(Presence {
            user: user()?,
            kind: PresenceType::from_wire(required(v.presence_type)?),
            fan_rank: v.has_fan_rank.then_some(v.fan_rank),
            is_manager: v.is_manager,
            favorite_temperature: v.has_favorite_temperature.then_some(v.favorite_temperature),
            time: time()?,
        }),
        ONAIR_EVENT_LIKE => Event::Like(Like {
            user: user()?,
            kind: LikeType::from_wire(required(v.like_type)?),
            total_amount: v.total_amount,
            amount: v.amount,
            extra_amount: v.extra_amount,
            combo: v.has_combo.then_some(v.combo),
            time: time()?,
        }),
        ONAIR_EVENT_DONATION => Event::Donation(Donation {
            user: user()?,
            amount: v.amount,
            message: text(v.message)?.map(str::to_owned),
            time: time()?,
        }),
        _ => Event::End(End {
            reason: EndReason::from_wire(required(v.end_reason)?),
        }),
    };
    Ok((id, event))
}

/// Renders the canonical JSON of an event view (the line `onair decode`
/// prints for it: `{"type":"event","event":…,"id":…,"data":{…}}`) into a
/// string the caller owns (free with `onair_string_free`); `out_len` (may
/// be NULL) gets its length. It reads the view's fields only (no handle):
/// call it while the view is valid (see the handle that handed it out).
///
/// Errors: NULL `event` or `out` → ONAIR_NULL_PARAMETER; a view without an
/// event (`ONAIR_EVENT_NONE`, or a kind newer than this header:
/// `ONAIR_EVENT_OTHER`) → ONAIR_NO_EVENT; a field the kind needs that is
/// NULL → ONAIR_INVALID_ARGUMENT; a field that is not UTF-8 →
/// ONAIR_INVALID_UTF8.
#[no_mangle]
pub unsafe extern "C" fn onair_event_json(
    event: *const onair_event,
    out: *mut *mut c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary(|| {
        let out = crate::out(out)?;
        // SAFETY: NULL or a view the caller keeps valid for the call.
        let view = unsafe { event.as_ref() }.ok_or(ONAIR_NULL_PARAMETER)?;
        // SAFETY: as above.
        let (id, event) = unsafe { event_of(view) }?;
        let line = onair_core::json::ItemJson(&onair_core::Item::Event { id, event }).to_line();
        crate::string_out(line, out, crate::out(out_len).ok());
        Ok(())
    })
}
