//! Fast path: the service's frame shape read in one go.
//!
//! The service sends `id` and `event` lines (any order), exactly one `data`
//! line, then the blank line (spec 4.6). When such a frame sits whole at the
//! front of a chunk, [`scan`] finds its pieces in one pass and the parser lends
//! them straight from the chunk, validated as UTF-8 once: no copy into the
//! frame buffers, no per-line dispatch. What it buys is measured in
//! BENCHMARKS.md ("The parser's fast paths"): without it the line-by-line path
//! reads every frame.
//!
//! This is a pure scan over bytes; [`Parser`](super::Parser) decides what to
//! do with what it finds. Anything it does not recognise (a comment, `retry`,
//! a second `data` line, a NUL in an id, a frame cut by the chunk's end) is
//! `None`, and the line-by-line path reads the bytes instead, so it may always
//! give up: it never decides what a stream means.

use memchr::memchr2;

use crate::swar;

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

/// A whole frame of the service's shape at the front of `bytes`, or `None`.
pub(super) fn scan(bytes: &[u8]) -> Option<Spans> {
    let mut pos = 0;
    let mut data = None;
    let mut event = None;
    let mut id = None;
    loop {
        let rest = bytes.get(pos..)?;
        // One look at the first byte picks the line's field.
        let (slot, prefix) = match rest.first()? {
            b'\n' => {
                return Some(Spans {
                    end: pos,
                    next: pos + 1,
                    data: data?,
                    event,
                    id,
                })
            }
            // A CR ending the bytes may be half of a CRLF: the parser decides.
            b'\r' => {
                let next = match rest.get(1)? {
                    b'\n' => pos + 2,
                    _ => pos + 1,
                };
                return Some(Spans {
                    end: pos,
                    next,
                    data: data?,
                    event,
                    id,
                });
            }
            b'd' if data.is_none() && rest.starts_with(b"data:") => (&mut data, 5),
            b'i' if rest.starts_with(b"id:") => (&mut id, 3),
            b'e' if rest.starts_with(b"event:") => (&mut event, 6),
            _ => return None,
        };
        let len = match prefix {
            5 => memchr2(b'\n', b'\r', rest)?,
            _ => find_short_line_end(rest)?,
        };
        let line = rest.get(..len)?;
        // A NUL ends the short-line search: a NUL in an id makes WHATWG
        // ignore the line (the line-by-line path says so), and one in an
        // event name is too rare to read here.
        match rest.get(len)? {
            0 => return None,
            _ if prefix == 3 && len >= SHORT && memchr::memchr(0, line).is_some() => return None,
            _ => {}
        }
        let after = match (rest.get(len)?, rest.get(len + 1)) {
            (b'\r', Some(b'\n')) => len + 2,
            // Whether an LF follows this CR is the next chunk's to say.
            (b'\r', None) => return None,
            _ => len + 1,
        };
        let space = rest.get(prefix) == Some(&b' ');
        *slot = Some(Span {
            start: pos + prefix + usize::from(space),
            end: pos + len,
        });
        pos += after;
    }
}

/// Bytes of a short line searched a word at a time.
const SHORT: usize = 32;

/// The first CR, LF or NUL of a line expected to be short (`id:…`,
/// `event:…`): the first 32 bytes are checked eight at a time in a register
/// (which also finds a NUL, for free) before the vectorized search for CR and
/// LF, whose set-up dominates a short line. Measured in BENCHMARKS.md.
#[inline]
fn find_short_line_end(bytes: &[u8]) -> Option<usize> {
    let head = &bytes[..bytes.len().min(SHORT)];
    let mut words = head.chunks_exact(8);
    let mut offset = 0;
    for word in &mut words {
        let word = swar::load(word);
        let hits = swar::equal(word, b'\n') | swar::equal(word, b'\r') | swar::below(word, 1);
        if hits != 0 {
            return Some(offset + swar::first(hits));
        }
        offset += 8;
    }
    let rest = words.remainder();
    if let Some(pos) = rest.iter().position(|&b| matches!(b, b'\n' | b'\r' | 0)) {
        return Some(offset + pos);
    }
    offset = head.len();
    memchr2(b'\n', b'\r', &bytes[offset..]).map(|pos| offset + pos)
}
