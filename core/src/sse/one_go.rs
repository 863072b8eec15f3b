//! The service's frame shape, read in one go: `id` and `event` lines (any
//! order), exactly one `data` line, then the blank line (spec 4.6).
//!
//! These are pure scans over bytes; [`Parser`](super::Parser) decides what to
//! do with what they find. Anything they do not recognise is left to the
//! line-by-line path, which reads every stream, so a scan may always give up.

use memchr::memchr2;

use super::{find_line_end, has_nul};

/// A value's byte range in the scanned bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
}

/// Where the pieces of a whole frame are.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spans {
    /// The frame's text is `bytes[..end]` (the blank line starts there).
    pub(super) end: usize,
    /// The blank line ends here.
    pub(super) next: usize,
    pub(super) data: Span,
    pub(super) event: Option<Span>,
    pub(super) id: Option<Span>,
}

/// What [`scan`] found at the front of some bytes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Scan {
    /// A whole frame of the service's shape.
    Frame(Spans),
    /// The bytes end inside a frame that has the service's shape so far: at a
    /// line start, inside a line whose field name was read, or after a CR
    /// that ends a field line. `id` is the last whole `id` line's value.
    Cut { id: Option<Span> },
    /// Anything else: a comment, `retry`, a second `data` line, a frame
    /// without data, a NUL in an id, a blank line that is a CR ending the
    /// bytes (it may be half of a CRLF), or bytes ending inside a field name.
    Other,
}

/// Scans one frame of the service's shape at the front of `bytes`.
/// Always inlined: on the hot path the race measured framing 0.73 -> 0.71 ms.
#[inline(always)]
pub(super) fn scan(bytes: &[u8]) -> Scan {
    let mut pos = 0;
    let mut data = None;
    let mut event = None;
    let mut id = None;
    loop {
        let Some(rest) = bytes.get(pos..) else {
            return Scan::Other;
        };
        let Some(&first) = rest.first() else {
            return Scan::Cut { id };
        };
        // One look at the first byte picks the line's field.
        let (slot, prefix, found) = match first {
            b'\n' | b'\r' => {
                let next = match (first, rest.get(1)) {
                    (b'\r', None) => return Scan::Other,
                    (b'\r', Some(b'\n')) => pos + 2,
                    _ => pos + 1,
                };
                let Some(data) = data else {
                    return Scan::Other;
                };
                let end = pos;
                return Scan::Frame(Spans {
                    end,
                    next,
                    data,
                    event,
                    id,
                });
            }
            // The service's data lines are long: straight to the vector search.
            b'd' if data.is_none() && rest.starts_with(b"data:") => {
                let found = rest.get(5..).and_then(|value| memchr2(b'\n', b'\r', value));
                (&mut data, 5, found.map(|len| 5 + len))
            }
            // Short lines are searched from their start: the word holding the
            // line end then depends less on the value's length.
            b'i' if rest.starts_with(b"id:") => (&mut id, 3, find_line_end(rest)),
            b'e' if rest.starts_with(b"event:") => (&mut event, 6, find_line_end(rest)),
            _ => return Scan::Other,
        };
        let Some(len) = found else {
            return Scan::Cut { id };
        };
        let Some(line) = rest.get(..len) else {
            return Scan::Other;
        };
        if prefix == 3 && has_nul(line) {
            return Scan::Other;
        }
        let mut next = pos + len + 1;
        if rest.get(len) == Some(&b'\r') {
            match rest.get(len + 1) {
                Some(b'\n') => next += 1,
                Some(_) => {}
                // The line is whole; whether an LF follows is the next chunk's.
                None => {
                    *slot = Some(value_span(rest, pos, prefix, len));
                    return Scan::Cut { id };
                }
            }
        }
        *slot = Some(value_span(rest, pos, prefix, len));
        pos = next;
    }
}

/// The value of the line `rest[..len]` (at `pos` in the scanned bytes) after
/// its `prefix` and one optional space.
fn value_span(rest: &[u8], pos: usize, prefix: usize, len: usize) -> Span {
    // `rest[prefix]` is the line end when the value is empty.
    let space = rest.get(prefix) == Some(&b' ');
    Span {
        start: pos + prefix + usize::from(space),
        end: pos + len,
    }
}

/// Block size of simdutf8's validator.
const UTF8_BLOCK: usize = 64;

/// `bytes[..end]` as text. simdutf8 copies a tail shorter than its block aside
/// and checks it in a branchy loop; when `bytes` holds more after the frame,
/// the text is validated up to a block multiple instead (ending on a
/// character boundary), which skips that tail.
#[inline]
pub(super) fn frame_text(bytes: &[u8], end: usize) -> Option<&str> {
    let padded = end.next_multiple_of(UTF8_BLOCK);
    if let (Some(extended), Some(&next)) = (bytes.get(..padded), bytes.get(padded)) {
        // `next` starts a character unless it is a continuation byte.
        if (next as i8) >= -0x40 {
            if let Ok(text) = simdutf8::basic::from_utf8(extended) {
                return text.get(..end);
            }
        }
    }
    simdutf8::basic::from_utf8(bytes.get(..end)?).ok()
}

/// Bytes worth appending after a frame's end at `len` so that [`frame_text`]
/// can validate up to a block multiple: the padding plus the byte after it.
pub(super) fn padding(len: usize) -> usize {
    len.next_multiple_of(UTF8_BLOCK) - len + 1
}

/// What [`frame_end`] found in the next chunk of a cut frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FrameEnd {
    /// The frame's blank line ends at this offset of the chunk.
    At(usize),
    /// Every line of the chunk goes on with the frame's shape (`id`,
    /// `event`, `data` field names); its end is in a later chunk.
    Later,
    /// A line that is not `id`, `event` or `data` (a comment, `retry` are
    /// items of their own), a field name cut by the chunk's end, or a blank
    /// line that is a CR ending the chunk.
    Other,
}

/// Finds the end of a cut frame in `chunk`, the frame's bytes so far ending
/// in `last` (a byte of a line in progress, or the CR or LF ending a line).
pub(super) fn frame_end(chunk: &[u8], last: u8) -> FrameEnd {
    let (mut pos, mut at_line_start) = match last {
        b'\n' => (0, true),
        // The CR ended a line; an LF opening this chunk belongs to it.
        b'\r' => (usize::from(chunk.first() == Some(&b'\n')), true),
        _ => (0, false),
    };
    loop {
        let Some(rest) = chunk.get(pos..) else {
            return FrameEnd::Other;
        };
        let Some(&first) = rest.first() else {
            return FrameEnd::Later;
        };
        if at_line_start {
            match first {
                b'\n' => return FrameEnd::At(pos + 1),
                b'\r' => {
                    return match rest.get(1) {
                        Some(b'\n') => FrameEnd::At(pos + 2),
                        Some(_) => FrameEnd::At(pos + 1),
                        None => FrameEnd::Other,
                    }
                }
                _ => {}
            }
            let named = [&b"id:"[..], b"event:", b"data:"]
                .iter()
                .any(|name| rest.starts_with(name));
            if !named {
                return FrameEnd::Other;
            }
        }
        let Some(len) = find_line_end(rest) else {
            return FrameEnd::Later;
        };
        pos += len + 1;
        if rest.get(len) == Some(&b'\r') && rest.get(len + 1) == Some(&b'\n') {
            pos += 1;
        }
        at_line_start = true;
    }
}
