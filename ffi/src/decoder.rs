//! The SSE framer and event decoder: bytes in, typed items out.

use std::collections::VecDeque;
use std::ffi::c_char;

use onair_core::event::{Decoder, Item};
use onair_core::json::ItemJson;
use onair_core::sse::Parser;

use crate::handle::{free, handles, new_handle, Guarded};
use crate::onair_result::{self, *};
use crate::view::{onair_event, onair_str};
use crate::{boundary, boundary_on, boundary_on_or, bytes_in, out, TextOut};

/// An SSE framer plus event decoder (`onair_decoder_new`).
///
/// Threads: a decoder may be used by one thread at a time (move it between
/// threads freely). A second thread's call while one is in flight returns
/// ONAIR_BUSY (`onair_decoder_pending`: 0) and changes nothing. The text
/// of `_take_json` is
/// valid until the next call on the decoder by any thread that is not
/// refused with ONAIR_BUSY; the item of `onair_decoder_next` (with its
/// event and `_item_json` text) until the next call that takes items (see
/// there). A caller sharing a decoder holds its own lock until it has read
/// what was lent.
/// `onair_decoder_free` while another thread is in a call is refused (ONAIR_BUSY).
#[derive(Debug)]
pub struct onair_decoder(Guarded<DecoderState>);

handles! { onair_decoder => DecoderState, tag 3 }

/// The state behind an `onair_decoder`.
#[derive(Debug)]
pub(crate) struct DecoderState {
    decoder: Decoder,
    queue: VecDeque<Item>,
    current: Option<Item>,
    /// The current item's JSON line, NUL-terminated.
    json: Vec<u8>,
    /// The batch last taken by `onair_decoder_take_json` (NUL-terminated).
    batch: Vec<u8>,
}

/// What an `onair_item` holds.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum onair_item_kind {
    /// No item: everything fed so far has been taken.
    ONAIR_ITEM_NONE = 0,
    /// A typed event: see `event`.
    ONAIR_ITEM_EVENT = 1,
    /// A frame whose event name this version does not know: `name`, `id`, `text` (its data).
    ONAIR_ITEM_UNKNOWN = 2,
    /// The service's `:heartbeat` comment.
    ONAIR_ITEM_HEARTBEAT = 3,
    /// Any other comment: `text`.
    ONAIR_ITEM_COMMENT = 4,
    /// A `retry:` field: `retry_ms`.
    ONAIR_ITEM_RETRY = 5,
    /// A frame that did not decode: `error_code` (`invalid_json`,
    /// `invalid_event`, `frame_too_large`, `incomplete_frame`),
    /// `error_message`, `name` and `id` when known, `text` (the raw data).
    /// The stream goes on.
    ONAIR_ITEM_ERROR = 6,
}

/// One decoded stream item as borrowed fields; fields the kind does not
/// use are zero / NULL. Valid until the next call on the decoder.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct onair_item {
    /// What it is.
    pub kind: onair_item_kind,
    /// `ONAIR_ITEM_EVENT`: the event (its `id` is the frame id).
    pub event: onair_event,
    /// UNKNOWN / ERROR: the frame's event name, or NULL.
    pub name: onair_str,
    /// UNKNOWN / ERROR: the frame's id, or NULL.
    pub id: onair_str,
    /// COMMENT: its text; UNKNOWN: the data; ERROR: the raw data.
    pub text: onair_str,
    /// RETRY: milliseconds.
    pub retry_ms: u64,
    /// ERROR: the error's code.
    pub error_code: onair_str,
    /// ERROR: a description for logs.
    pub error_message: onair_str,
}

impl onair_item {
    const NONE: onair_item = onair_item {
        kind: onair_item_kind::ONAIR_ITEM_NONE,
        event: onair_event::NONE,
        name: onair_str::NULL,
        id: onair_str::NULL,
        text: onair_str::NULL,
        retry_ms: 0,
        error_code: onair_str::NULL,
        error_message: onair_str::NULL,
    };

    /// The view of `item`.
    fn view(item: &Item) -> onair_item {
        use onair_item_kind::*;
        let mut v = Self::NONE;
        match item {
            Item::Event { id, event } => {
                v.kind = ONAIR_ITEM_EVENT;
                v.event = onair_event::view(id.as_ref(), event);
                v.id = v.event.id;
            }
            Item::Unknown { event, id, data } => {
                v.kind = ONAIR_ITEM_UNKNOWN;
                v.name = onair_str::of(event);
                v.id = onair_str::opt(id.as_ref().map(|i| i.as_str()));
                v.text = onair_str::of(data);
            }
            Item::Heartbeat => v.kind = ONAIR_ITEM_HEARTBEAT,
            Item::Comment(text) => {
                v.kind = ONAIR_ITEM_COMMENT;
                v.text = onair_str::of(text);
            }
            Item::Retry(ms) => {
                v.kind = ONAIR_ITEM_RETRY;
                v.retry_ms = *ms;
            }
            Item::Error(e) => {
                v.kind = ONAIR_ITEM_ERROR;
                v.name = onair_str::opt(e.event.as_deref());
                v.id = onair_str::opt(e.id.as_ref().map(|i| i.as_str()));
                v.text = onair_str::of(&e.raw);
                v.error_code = onair_str::of(e.kind.code());
                v.error_message = onair_str::of(&e.message);
            }
        }
        v
    }
}

/// A new decoder whose frames may hold at most `max_frame_bytes` (0: the
/// core's default, 1 MiB; values under 64 count as 64). A larger frame is
/// skipped as an `frame_too_large` error item; memory stays bounded.
/// Free it with `onair_decoder_free`.
///
/// Errors: NULL `out` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_decoder_new(
    max_frame_bytes: usize,
    out_decoder: *mut *mut onair_decoder,
) -> onair_result {
    boundary(|| {
        let slot = out(out_decoder)?;
        let parser = if max_frame_bytes == 0 {
            Parser::new()
        } else {
            Parser::with_max_frame_bytes(max_frame_bytes)
        };
        *slot = new_handle::<onair_decoder>(DecoderState {
            decoder: Decoder::with_parser(parser),
            queue: VecDeque::new(),
            current: None,
            json: Vec::new(),
            batch: Vec::new(),
        })?;
        Ok(())
    })
}

/// Frees a decoder.
///
/// Returns ONAIR_OK (NULL included); ONAIR_FREED_HANDLE when it was freed
/// already (a double free, or a stale handle whose slot now holds another
/// object, which is left alone); ONAIR_INVALID_HANDLE for a pointer that is
/// no handle of this kind; ONAIR_BUSY when another thread is in a call on
/// it (nothing is freed: free it once that call is over).
#[no_mangle]
pub unsafe extern "C" fn onair_decoder_free(decoder: *mut onair_decoder) -> onair_result {
    // SAFETY: NULL or a handle from this library, freed once.
    boundary(|| unsafe { free(decoder) })
}

/// Feeds a chunk of the stream's body, split anywhere (no NUL needed; any
/// bytes). The items it completes are queued for `onair_decoder_next`.
/// The chunk is not kept.
///
/// Errors: NULL `decoder`, or NULL `bytes` with `len` > 0 → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_decoder_feed(
    decoder: *mut onair_decoder,
    bytes: *const u8,
    len: usize,
) -> onair_result {
    boundary_on(decoder, |d| {
        // SAFETY: the caller promises `len` bytes.
        let input = unsafe { bytes_in(bytes, len) }?;
        d.queue.extend(d.decoder.items(input));
        Ok(())
    })
}

/// Ends the stream: queues an `incomplete_frame` error item when a frame
/// was cut off. Feeding again afterwards starts a new stream.
///
/// Errors: NULL `decoder` → ONAIR_NULL_PARAMETER.
#[no_mangle]
pub unsafe extern "C" fn onair_decoder_finish(decoder: *mut onair_decoder) -> onair_result {
    boundary_on(decoder, |d| {
        if let Some(item) = d.decoder.finish() {
            d.queue.push_back(item);
        }
        Ok(())
    })
}

/// Takes the next decoded item into `*out_item` (borrowed fields). When
/// everything fed has been taken, `out_item->kind` is `ONAIR_ITEM_NONE`.
///
/// The item — its views, its event (and `onair_event_json` of it),
/// its `onair_decoder_item_json` text — stays valid until the next
/// `onair_decoder_next`, `_take_json` or `_free`: feeding more, `_finish`, `_pending` and `_item_json` leave it
/// as it is.
///
/// Errors: NULL `decoder` or `out_item` → ONAIR_NULL_PARAMETER (nothing taken).
#[no_mangle]
pub unsafe extern "C" fn onair_decoder_next(
    decoder: *mut onair_decoder,
    out_item: *mut onair_item,
) -> onair_result {
    boundary_on(decoder, |d| {
        let slot = out(out_item)?;
        d.json.clear();
        d.current = d.queue.pop_front();
        *slot = d
            .current
            .as_ref()
            .map_or(onair_item::NONE, onair_item::view);
        Ok(())
    })
}

/// The canonical JSON line of the item last taken by `onair_decoder_next`
/// (the line `onair decode` prints, without the newline), borrowed and
/// NUL-terminated, valid until the next call on this decoder.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER; no current item →
/// ONAIR_NO_CURRENT.
#[no_mangle]
pub unsafe extern "C" fn onair_decoder_item_json(
    decoder: *mut onair_decoder,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary_on(decoder, |d| {
        let text_out = TextOut::new(out_ptr, out_len)?;
        let item = d.current.as_ref().ok_or(ONAIR_NO_CURRENT)?;
        if d.json.is_empty() {
            d.json = ItemJson(item).to_line().into_bytes();
            d.json.push(0);
        }
        text_out.lend(&d.json)
    })
}

/// Takes every item decoded and not yet taken, as their canonical JSON
/// lines (the lines `onair decode` prints, each ending with `\n`), borrowed
/// and NUL-terminated, valid until the next call on this decoder; length 0
/// when nothing is pending. One call per chunk instead of one per item, for
/// callers whose every call across the boundary costs more than decoding
/// the item (Python's ctypes). Afterwards there is no current item.
///
/// Errors: NULL argument → ONAIR_NULL_PARAMETER (nothing taken).
#[no_mangle]
pub unsafe extern "C" fn onair_decoder_take_json(
    decoder: *mut onair_decoder,
    out_ptr: *mut *const c_char,
    out_len: *mut usize,
) -> onair_result {
    boundary_on(decoder, |d| {
        let text_out = TextOut::new(out_ptr, out_len)?;
        d.json.clear();
        d.current = None;
        d.batch.clear();
        // The batch was just cleared: empty, so UTF-8 (its buffer is reused).
        let mut text = String::from_utf8(std::mem::take(&mut d.batch)).unwrap_or_default();
        for item in d.queue.drain(..) {
            ItemJson(&item).append_to(&mut text);
            text.push('\n');
        }
        d.batch = text.into_bytes();
        d.batch.push(0);
        text_out.lend(&d.batch)
    })
}

/// Items decoded and not yet taken.
///
/// Errors: NULL `decoder`, or a call on it in flight on another thread → 0.
#[no_mangle]
pub unsafe extern "C" fn onair_decoder_pending(decoder: *const onair_decoder) -> usize {
    boundary_on_or(0, decoder, |d| d.queue.len())
}
