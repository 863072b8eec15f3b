//! The generic SSE parser: frames as text, before any event decoding
//! (`onair decode --raw`).

use std::collections::VecDeque;
use std::ffi::c_char;

use onair_core::json::RawItemJson;
use onair_core::sse::{Chunk, Frame, FrameError, FrameErrorKind, Item, Parser};

use crate::handle::{free, handles, new_handle, Guarded};
use crate::onair_result::{self, *};
use crate::view::onair_str;
use crate::{boundary, boundary_on, boundary_on_or, bytes_in, out, TextOut};

/// An owned copy of one parsed item (the parser's items borrow from it and
/// from the input chunk, which C does not keep).
#[derive(Debug)]
enum Owned {
    Event {
        event: String,
        data: String,
        id: Option<String>,
        last_event_id: String,
    },
    Comment(String),
    Retry(u64),
    Error {
        kind: FrameErrorKind,
        event: Option<String>,
        id: Option<String>,
        raw: String,
    },
}

impl Owned {
    fn of(item: Item<'_>) -> Owned {
        match item {
            Item::Event(f) => Owned::Event {
                event: f.event.to_owned(),
                data: f.data.to_owned(),
                id: f.id.map(str::to_owned),
                last_event_id: f.last_event_id.to_owned(),
            },
            Item::Comment(text) => Owned::Comment(text.to_owned()),
            Item::Retry(ms) => Owned::Retry(ms),
            Item::Error(e) => Owned::Error {
                kind: e.kind,
                event: e.event.map(str::to_owned),
                id: e.id.map(str::to_owned),
                raw: e.raw.to_owned(),
            },
        }
    }

    fn item(&self) -> Item<'_> {
        match self {
            Owned::Event {
                event,
                data,
                id,
                last_event_id,
            } => Item::Event(Frame {
                event,
                data,
                id: id.as_deref(),
                last_event_id,
            }),
            Owned::Comment(text) => Item::Comment(text),
            Owned::Retry(ms) => Item::Retry(*ms),
            Owned::Error {
                kind,
                event,
                id,
                raw,
            } => Item::Error(FrameError {
                kind: *kind,
                event: event.as_deref(),
                id: id.as_deref(),
                raw,
            }),
        }
    }
}

/// A generic SSE parser (`onair_sse_parser_new`): frames with their event
/// name, data, id and last event id, no event decoding. Most bots want
/// `onair_decoder` instead.
///
/// Threads: one thread at a time; a concurrent call gets ONAIR_BUSY
/// (`_pending`: 0) and changes nothing. What it lends (`onair_sse_item`,
/// `_item_json`, `_last_event_id`) is valid until the next call on it by
/// any thread that is not refused with ONAIR_BUSY. Free it only when no
/// other thread may call it.
#[derive(Debug)]
pub struct onair_sse_parser(Guarded<SseParserState>);

handles! { onair_sse_parser => SseParserState, tag 4 }

/// The state behind an `onair_sse_parser`.
#[derive(Debug)]
pub(crate) struct SseParserState {
    parser: Parser,
    queue: VecDeque<Owned>,
    current: Option<Owned>,
    /// The current item's JSON line, NUL-terminated.
    json: Vec<u8>,
    /// The text of `onair_sse_parser_last_event_id`.
    last_event_id: String,
}

/// What an `onair_sse_item` holds.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_sse_item_kind {
    /// No item: everything fed so far has been taken.
    ONAIR_SSE_NONE = 0,
    /// A dispatched frame: `event`, `data`, `id`, `last_event_id`.
    ONAIR_SSE_EVENT = 1,
    /// A comment: `text` (the text after `:`, verbatim).
    ONAIR_SSE_COMMENT = 2,
    /// A `retry` field: `retry_ms`.
    ONAIR_SSE_RETRY = 3,
    /// A frame not delivered: `error_code` (`frame_too_large`,
    /// `incomplete_frame`), `event` and `id` when read, `text` (a prefix of
    /// the raw frame).
    ONAIR_SSE_ERROR = 4,
}

/// One parsed SSE item as borrowed fields, valid until the next call on
/// the parser.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_sse_item {
    /// What it is.
    pub kind: onair_sse_item_kind,
    /// EVENT: the `event` field (`message` when none); ERROR: when read.
    pub event: onair_str,
    /// EVENT: the data lines joined with LF.
    pub data: onair_str,
    /// EVENT / ERROR: the frame's own `id`, or NULL.
    pub id: onair_str,
    /// EVENT: the stream's last event id after this frame.
    pub last_event_id: onair_str,
    /// COMMENT: its text; ERROR: the raw prefix.
    pub text: onair_str,
    /// RETRY: milliseconds.
    pub retry_ms: u64,
    /// ERROR: the error's code.
    pub error_code: onair_str,
}

/// A new SSE parser whose frames may hold at most `max_frame_bytes` (0: the
/// default, 1 MiB; under 64 counts as 64). Free with `onair_sse_parser_free`.
///
/// Errors: NULL `out_parser` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_sse_parser_new(
    max_frame_bytes: usize,
    out_parser: *mut *mut onair_sse_parser,
) -> onair_result {
    boundary(|| {
        let slot = out(out_parser)?;
        let parser = if max_frame_bytes == 0 {
            Parser::new()
        } else {
            Parser::with_max_frame_bytes(max_frame_bytes)
        };
        *slot = new_handle::<onair_sse_parser>(SseParserState {
            parser,
            queue: VecDeque::new(),
            current: None,
            json: Vec::new(),
            last_event_id: String::new(),
        })?;
        Ok(())
    })
}

/// Frees a parser.
///
/// Returns ONAIR_OK (NULL included); ONAIR_FREED_HANDLE when it was freed
/// already (a double free, or a stale handle whose slot now holds another
/// object, which is left alone); ONAIR_INVALID_HANDLE for a pointer that is
/// no handle of this kind; ONAIR_BUSY when another thread is in a call on
/// it (nothing is freed: free it once that call is over).
#[no_mangle]
pub unsafe extern "C" fn onair_sse_parser_free(parser: *mut onair_sse_parser) -> onair_result {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary(|| unsafe { free(parser) })
}

/// Feeds a chunk of the stream, split anywhere (any bytes, not kept); the
/// items it completes are queued for `onair_sse_parser_next`.
///
/// Errors: NULL `parser`, or NULL `bytes` with `len` > 0 → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_sse_parser_feed(
    parser: *mut onair_sse_parser,
    bytes: *const u8,
    len: usize,
) -> onair_result {
    boundary_on(parser, |p| {
        // SAFETY: the caller promises `len` bytes.
        let mut chunk = Chunk::new(unsafe { bytes_in(bytes, len) }?);
        while let Some(item) = p.parser.next_item_in(&mut chunk) {
            p.queue.push_back(Owned::of(item));
        }
        Ok(())
    })
}

/// Ends the stream (an `incomplete_frame` error when a frame was cut off);
/// the parser is then ready for a new connection.
///
/// Errors: NULL `parser` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_sse_parser_finish(parser: *mut onair_sse_parser) -> onair_result {
    boundary_on(parser, |p| {
        if let Some(item) = p.parser.finish() {
            let owned = Owned::of(item);
            p.queue.push_back(owned);
        }
        Ok(())
    })
}

/// Takes the next item into `*out_item` (borrowed until the next call on
/// the parser); `kind` is `ONAIR_SSE_NONE` when none is left.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER (nothing taken).
#[no_mangle]
pub unsafe extern "C" fn onair_sse_parser_next(
    parser: *mut onair_sse_parser,
    out_item: *mut onair_sse_item,
) -> onair_result {
    boundary_on(parser, |p| {
        let slot = out(out_item)?;
        p.json.clear();
        p.current = p.queue.pop_front();
        let mut v = onair_sse_item {
            kind: onair_sse_item_kind::ONAIR_SSE_NONE,
            event: onair_str::NULL,
            data: onair_str::NULL,
            id: onair_str::NULL,
            last_event_id: onair_str::NULL,
            text: onair_str::NULL,
            retry_ms: 0,
            error_code: onair_str::NULL,
        };
        match p.current.as_ref().map(Owned::item) {
            None => {}
            Some(Item::Event(f)) => {
                v.kind = onair_sse_item_kind::ONAIR_SSE_EVENT;
                v.event = onair_str::of(f.event);
                v.data = onair_str::of(f.data);
                v.id = onair_str::opt(f.id);
                v.last_event_id = onair_str::of(f.last_event_id);
            }
            Some(Item::Comment(text)) => {
                v.kind = onair_sse_item_kind::ONAIR_SSE_COMMENT;
                v.text = onair_str::of(text);
            }
            Some(Item::Retry(ms)) => {
                v.kind = onair_sse_item_kind::ONAIR_SSE_RETRY;
                v.retry_ms = ms;
            }
            Some(Item::Error(e)) => {
                v.kind = onair_sse_item_kind::ONAIR_SSE_ERROR;
                v.event = onair_str::opt(e.event);
                v.id = onair_str::opt(e.id);
                v.text = onair_str::of(e.raw);
                v.error_code = onair_str::of(e.kind.code());
            }
        }
        *slot = v;
        Ok(())
    })
}

/// The JSON line of the item last taken (the line `onair decode --raw`
/// prints), borrowed and NUL-terminated until the next call on the parser.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER; no current item →
/// ONAIR_NO_CURRENT.
#[no_mangle]
pub unsafe extern "C" fn onair_sse_parser_item_json(
    parser: *mut onair_sse_parser,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary_on(parser, |p| {
        let text_out = TextOut::new(out_ptr, out_len)?;
        let current = p.current.as_ref().ok_or(ONAIR_NO_CURRENT)?;
        if p.json.is_empty() {
            p.json = RawItemJson(&current.item()).to_line().into_bytes();
            p.json.push(0);
        }
        text_out.lend(&p.json)
    })
}

/// The stream's last event id (what a reconnect sends as `Last-Event-ID`),
/// borrowed until the next call on the parser; empty before any id.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_sse_parser_last_event_id(
    parser: *mut onair_sse_parser,
    out_id: *mut onair_str,
) -> onair_result {
    boundary_on(parser, |p| {
        let slot = out(out_id)?;
        p.last_event_id = p.parser.last_event_id();
        *slot = onair_str::of(&p.last_event_id);
        Ok(())
    })
}

/// Items parsed and not yet taken; NULL, or a call on it in flight on
/// another thread → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_sse_parser_pending(parser: *const onair_sse_parser) -> usize {
    boundary_on_or(0, parser, |p| p.queue.len())
}
