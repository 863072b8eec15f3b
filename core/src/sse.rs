//! Incremental Server-Sent Events framing.
//!
//! [`Parser`] implements the WHATWG "event stream interpretation" rules over
//! byte chunks split at any byte: LF, CR and CRLF line ends (a CRLF split across
//! chunks is one line end), a leading UTF-8 BOM, `field:value` lines, comments,
//! `retry`, and dispatch on a blank line. It is sans-IO: you feed it the bytes
//! your HTTP client hands you and pull [`Item`]s out.
//!
//! Properties a bot relies on:
//! - **No added latency**: a frame is dispatched as soon as the line end that
//!   completes it is fed, even when that line end is a CR at the end of a chunk.
//! - **Linear time, no per-frame allocation** once the buffers are warm: line ends
//!   are found with `memchr`, a partial line is never re-scanned, and items borrow
//!   from the input chunk (zero-copy: the service's frame shape — `id`, `event`,
//!   one `data` line — arriving whole in one chunk, read in one go) or from the
//!   parser's reused buffers (such a frame cut by a chunk's end is carried over
//!   as received and read in one go there; any other frame goes line by line).
//! - **Bounded memory**: the bytes held for one frame never exceed
//!   [`Parser::max_frame_bytes`]; a larger frame yields one
//!   [`FrameErrorKind::TooLarge`] and is skipped up to its blank line.
//! - **Never fails on bad bytes**: invalid UTF-8 becomes U+FFFD in the item.
//!
//! ```
//! use onair::sse::{Item, Parser};
//!
//! let mut parser = Parser::new();
//! let mut names = Vec::new();
//! for chunk in [&b":heartbeat\n\nevent: chat\nda"[..], &b"ta: {}\n\n"[..]] {
//!     let mut rest = chunk;
//!     while let Some(item) = parser.next_item(&mut rest) {
//!         match item {
//!             Item::Event(frame) => names.push(frame.event.to_owned()),
//!             Item::Comment(text) => assert_eq!(text, "heartbeat"),
//!             _ => {}
//!         }
//!     }
//! }
//! assert_eq!(names, ["chat"]);
//! assert!(parser.finish().is_none());
//! ```

use memchr::{memchr, memchr2};

mod field;
mod one_go;

use field::{Field, LastEventId};
use one_go::{FrameEnd, Scan, Span, Spans};

/// Default cap on one frame's buffered bytes: 256 KiB, far above the service's
/// ~200-byte frames and far below what would hurt a process holding many bots.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 256 * 1024;

/// How much of an oversized or unterminated frame an error keeps for logs.
const RAW_PREFIX_BYTES: usize = 256;

/// A buffer whose capacity exceeds this after a frame is shrunk back, so an idle
/// parser between frames holds no large allocation.
const IDLE_CAPACITY: usize = 8 * 1024;

/// Spare capacity the growable buffers may hold together beyond the frame cap,
/// so growth stays amortized while the whole parser stays within
/// `max_frame_bytes + ALLOCATION_SLACK` (plus small idle buffers).
const ALLOCATION_SLACK: usize = 4 * IDLE_CAPACITY;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Most bytes of a frame cut by a chunk's end that are carried over whole
/// (see [`Parser::carry`]); a longer frame goes line by line.
const CARRY_MAX_BYTES: usize = IDLE_CAPACITY;

/// One thing the stream said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// A dispatched frame (it had at least one `data` line).
    Event(Frame<'a>),
    /// A comment line: the text after `:`, verbatim. The service's heartbeat is
    /// `Comment("heartbeat")`.
    Comment(&'a str),
    /// A `retry` field of ASCII digits: the server's reconnection time in ms,
    /// reported as soon as its line is read. Saturates at `u64::MAX`.
    Retry(u64),
    /// A frame that could not be delivered; the stream goes on.
    Error(FrameError<'a>),
}

/// A dispatched event frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The `event` field, or `"message"` when the frame had none.
    pub event: &'a str,
    /// The `data` lines joined with LF (the final LF removed).
    pub data: &'a str,
    /// The `id` this frame itself carried, if any.
    pub id: Option<&'a str>,
    /// The stream's last event id after this frame (ids persist across frames).
    pub last_event_id: &'a str,
}

/// Why a frame was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameErrorKind {
    /// The frame outgrew the cap; it was discarded up to its blank line.
    TooLarge {
        /// The cap in force.
        limit: usize,
    },
    /// The input ended inside a frame (reported by [`Parser::finish`]).
    Incomplete,
}

/// A frame that was not delivered, with what was known of it for logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameError<'a> {
    /// What went wrong.
    pub kind: FrameErrorKind,
    /// The frame's `event` field, if it had been read.
    pub event: Option<&'a str>,
    /// The frame's own `id`, if it had been read.
    pub id: Option<&'a str>,
    /// A prefix of the frame's raw text (at most 256 bytes for an oversized
    /// frame; the whole pending text for an incomplete one).
    pub raw: &'a str,
}

/// What the scanner found, before it is turned into a borrowed [`Item`].
#[derive(Debug, Clone, Copy)]
enum Ready<'i> {
    Event(Body<'i>),
    /// A comment line, borrowed from the input when it arrived whole.
    Comment(Option<&'i [u8]>),
    Retry(u64),
    TooLarge,
    Incomplete,
}

/// What [`Parser::stitch`] made of a carried frame and the next chunk.
#[derive(Debug, Clone, Copy)]
enum Stitched {
    /// The blank line arrived: the frame reads in one go from the carried
    /// bytes (see [`Parser::carried_item`]); the chunk's part is consumed.
    Frame(Spans),
    /// The whole chunk goes on with the frame and was carried too.
    Carried,
    /// The frame was replayed line by line; the chunk is untouched.
    Replayed,
}

/// Where a dispatched frame's text is (`'i`: the input chunk of this call).
#[derive(Debug, Clone, Copy)]
enum Body<'i> {
    /// The service's frame shape, read in one go from the input and validated
    /// in one pass (see [`one_go::scan`]): its data value and its
    /// event name (if it had one) borrowed from the input.
    Text {
        data: &'i str,
        event: Option<&'i str>,
        /// The frame's own id (also the last event id now).
        id: Option<&'i str>,
    },
    /// Everything is in the parser's buffers.
    Stored,
}

/// A `data` line split across chunks whose value goes straight into
/// [`Parser`]'s `data` as it arrives, so a long line is copied once, not
/// gathered first. It stands for the line `data:` (plus the stripped space)
/// followed by `data[at..]`.
#[derive(Debug, Clone, Copy)]
struct SplitData {
    /// Where the line's value starts in `data`.
    at: usize,
    /// Bytes of the line before its value: `data:` (5), or `data: ` (6).
    prefix: usize,
    /// The line so far is exactly `data:`: a space that comes next is stripped.
    space_pending: bool,
}

impl SplitData {
    /// The value bytes of the next piece of the line.
    fn value<'a>(&mut self, piece: &'a [u8]) -> &'a [u8] {
        if piece.is_empty() || !std::mem::take(&mut self.space_pending) {
            return piece;
        }
        match piece.strip_prefix(b" ") {
            Some(value) => {
                self.prefix += 1;
                value
            }
            None => piece,
        }
    }
}

/// Work deferred to the next call, so items can borrow the buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cleanup {
    None,
    Comment,
    /// A frame read in one go from [`Parser::carry`].
    Carried,
    Frame,
    Stream,
}

/// The incremental event-stream parser. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Parser {
    max_frame_bytes: usize,
    /// Bytes of the BOM matched at the very start, or `None` once past it.
    bom_matched: Option<usize>,
    /// The previous chunk ended in CR: an LF opening the next chunk is part of it.
    pending_cr: bool,
    /// A line split across chunks, waiting for its line end.
    line: Vec<u8>,
    /// Discarding an oversized frame up to its blank line.
    discarding: bool,
    /// While discarding: the line in progress already had bytes (so is not blank).
    discarded_partial: bool,
    /// `data` values, each followed by LF, of a frame not read in one go from
    /// the input (several data lines, other fields, spread over chunks).
    data: Vec<u8>,
    /// The last `event` value read; it names the current frame only while
    /// `has_event` (kept between frames so a repeated name costs nothing).
    event: Field,
    /// The current frame has had an `event` line.
    has_event: bool,
    /// Whether the current frame set an id.
    frame_has_id: bool,
    last_event_id: LastEventId,
    comment: Vec<u8>,
    /// The line in progress is a split `data` line going straight to `data`
    /// (then `line` is empty).
    split_data: Option<SplitData>,
    /// A raw excerpt for the last error item.
    err_raw: Vec<u8>,
    /// U+FFFD-repaired copies, used only when a field is not valid UTF-8.
    fix_data: String,
    fix_event: String,
    fix_id: String,
    /// A frame of the service's shape cut by a chunk's end, as received
    /// (empty when none): read in one go once its blank line arrives, or
    /// replayed line by line when something else does. While it holds bytes
    /// the other buffers hold no frame.
    carry: Vec<u8>,
    cleanup: Cleanup,
}

impl Default for Parser {
    fn default() -> Self {
        Self::new()
    }
}

impl Parser {
    /// A parser with the [default frame cap](DEFAULT_MAX_FRAME_BYTES).
    pub fn new() -> Self {
        Self::with_max_frame_bytes(DEFAULT_MAX_FRAME_BYTES)
    }

    /// A parser whose frames may hold at most `max_frame_bytes` (at least 64).
    ///
    /// ```
    /// let parser = onair::sse::Parser::with_max_frame_bytes(64 * 1024);
    /// assert_eq!(parser.max_frame_bytes(), 65536);
    /// ```
    pub fn with_max_frame_bytes(max_frame_bytes: usize) -> Self {
        Self {
            max_frame_bytes: max_frame_bytes.max(64),
            bom_matched: Some(0),
            pending_cr: false,
            line: Vec::new(),
            discarding: false,
            discarded_partial: false,
            data: Vec::new(),
            event: Field::default(),
            has_event: false,
            frame_has_id: false,
            last_event_id: LastEventId::default(),
            comment: Vec::new(),
            split_data: None,
            err_raw: Vec::new(),
            fix_data: String::new(),
            fix_event: String::new(),
            fix_id: String::new(),
            carry: Vec::new(),
            cleanup: Cleanup::None,
        }
    }

    /// The cap on one frame's buffered bytes.
    pub fn max_frame_bytes(&self) -> usize {
        self.max_frame_bytes
    }

    /// The stream's last event id (ids persist across frames; `""` at start).
    pub fn last_event_id(&self) -> String {
        if let Scan::Cut { id: Some(span) } = one_go::scan(&self.carry) {
            let id = self.carry.get(span.start..span.end).unwrap_or_default();
            return String::from_utf8_lossy(id).into_owned();
        }
        self.last_event_id.text(&mut String::new()).to_owned()
    }

    /// Bytes held for the frame in progress (never more than the cap).
    pub fn buffered_bytes(&self) -> usize {
        // A carried frame already delivered (its item lent) is not in progress.
        let carried = match self.cleanup {
            Cleanup::Carried => 0,
            _ => self.carry.len(),
        };
        self.retained() + carried
    }

    /// Bytes allocated by the parser's buffers (capacity, not length).
    pub fn allocated_bytes(&self) -> usize {
        self.growable_capacity()
            + self.err_raw.capacity()
            + self.fix_data.capacity()
            + self.fix_event.capacity()
            + self.fix_id.capacity()
    }

    /// Consumes bytes from the front of `input` until one item is complete and
    /// returns it, or returns `None` once `input` is used up (then feed the
    /// next chunk). Call it in a loop per chunk:
    ///
    /// ```
    /// # let mut parser = onair::sse::Parser::new();
    /// # let chunk = b"data: x\n\n";
    /// let mut rest = &chunk[..];
    /// while let Some(item) = parser.next_item(&mut rest) {
    ///     println!("{item:?}");
    /// }
    /// ```
    ///
    /// The item may borrow from the parser or from the input chunk: a frame of
    /// the service's shape (`id`, `event`, one `data` line) that arrived whole in
    /// this chunk hands out its text without copying it; one that a chunk's end
    /// cut is carried over as received and read the same way. Either way the parser is free
    /// again once the item is dropped, so the loop above compiles as written.
    pub fn next_item<'s: 'c, 'i: 'c, 'c>(&'s mut self, input: &mut &'i [u8]) -> Option<Item<'c>> {
        self.run_cleanup();
        if !self.carry.is_empty() {
            match self.stitch(input) {
                Stitched::Frame(spans) => return Some(self.carried_item(spans)),
                Stitched::Carried => return None,
                Stitched::Replayed => {}
            }
        }
        let ready = self.advance(input)?;
        Some(self.item(ready))
    }

    /// Ends the stream. Returns an [`FrameErrorKind::Incomplete`] error when an
    /// unterminated frame (or line) was pending; such a frame is never
    /// dispatched. The parser is then ready for a new stream (new connection).
    pub fn finish(&mut self) -> Option<Item<'_>> {
        self.run_cleanup();
        self.replay_carry();
        self.pending_cr = false;
        let held_bom = match self.bom_matched {
            Some(n) if n > 0 => n,
            _ => 0,
        };
        let pending = !self.discarding
            && (held_bom > 0
                || !self.line.is_empty()
                || self.split_data.is_some()
                || !self.data.is_empty()
                || self.event_len() > 0
                || self.frame_has_id);
        self.cleanup = Cleanup::Stream;
        if !pending {
            return None;
        }
        let mut raw = std::mem::take(&mut self.err_raw);
        raw.clear();
        raw.extend_from_slice(&BOM[..held_bom]);
        for piece in self.pending_text() {
            raw.extend_from_slice(piece);
        }
        self.err_raw = raw;
        Some(self.item(Ready::Incomplete))
    }

    /// Bytes of the current frame's event name (0 when it has none).
    fn event_len(&self) -> usize {
        if self.has_event {
            self.event.len()
        } else {
            0
        }
    }

    fn retained(&self) -> usize {
        let prefix = self.split_data.map_or(0, |split| split.prefix);
        self.line.len() + prefix + self.data.len() + self.event_len() + self.last_event_id.len()
    }

    /// The frame's pending text as received, in pieces: the data lines so far,
    /// then the line in progress (see [`SplitData`]).
    fn pending_text(&self) -> [&[u8]; 4] {
        match self.split_data {
            Some(split) => {
                let (before, value) = self.data.split_at(split.at.min(self.data.len()));
                [before, &b"data: "[..split.prefix], value, &self.line]
            }
            None => [&self.data, &[], &[], &self.line],
        }
    }

    /// Capacity one growable buffer may take, given what the others hold.
    fn room_beside(&self, own_capacity: usize) -> usize {
        let others = self.growable_capacity() - own_capacity;
        (self.max_frame_bytes + ALLOCATION_SLACK).saturating_sub(others)
    }

    fn growable_capacity(&self) -> usize {
        self.carry.capacity()
            + self.line.capacity()
            + self.data.capacity()
            + self.event.capacity()
            + self.last_event_id.capacity()
            + self.comment.capacity()
    }

    fn run_cleanup(&mut self) {
        match std::mem::replace(&mut self.cleanup, Cleanup::None) {
            Cleanup::None => {}
            Cleanup::Comment => {
                self.comment.clear();
                shrink_idle(&mut self.comment);
                shrink_idle_string(&mut self.fix_data);
            }
            Cleanup::Carried => {
                self.frame_has_id = false;
                self.carry.clear();
                shrink_idle(&mut self.carry);
            }
            Cleanup::Frame => self.clear_frame(),
            Cleanup::Stream => {
                self.clear_frame();
                self.carry.clear();
                shrink_idle(&mut self.carry);
                self.split_data = None;
                self.line.clear();
                shrink_idle(&mut self.line);
                self.last_event_id.clear();
                self.bom_matched = Some(0);
                self.pending_cr = false;
                self.discarding = false;
                self.discarded_partial = false;
            }
        }
    }

    fn clear_frame(&mut self) {
        self.data.clear();
        self.has_event = false;
        self.frame_has_id = false;
        self.comment.clear();
        // One sum instead of a check per buffer: none of them exceeds the idle
        // size unless their sum does.
        let held = self.data.capacity()
            + self.event.capacity()
            + self.comment.capacity()
            + self.err_raw.capacity()
            + self.fix_data.capacity()
            + self.fix_event.capacity()
            + self.fix_id.capacity();
        if held > IDLE_CAPACITY {
            shrink_idle(&mut self.data);
            self.event.shrink_idle();
            shrink_idle(&mut self.comment);
            shrink_idle(&mut self.err_raw);
            shrink_idle_string(&mut self.fix_data);
            shrink_idle_string(&mut self.fix_event);
            shrink_idle_string(&mut self.fix_id);
        }
    }

    /// Scans lines until one yields an item. A parser holding nothing first
    /// tries the service's frame shape in one go ([`one_go::scan`]);
    /// otherwise each line is applied to the parser's buffers.
    fn advance<'i>(&mut self, input: &mut &'i [u8]) -> Option<Ready<'i>> {
        if self.bom_matched.is_some() {
            self.strip_bom(input);
        }
        if self.pending_cr {
            let (&first, rest) = input.split_first()?;
            if first == b'\n' {
                *input = rest;
            }
            self.pending_cr = false;
        }
        let fresh = self.line.is_empty()
            && self.split_data.is_none()
            && !self.discarding
            && !self.discarded_partial
            && self.data.is_empty()
            && !self.has_event
            && !self.frame_has_id;
        if fresh {
            match one_go::scan(input) {
                Scan::Frame(spans) => {
                    if let Some(ready) = self.service_dispatch(input, spans) {
                        return Some(ready);
                    }
                }
                Scan::Cut { .. } if self.start_carry(input) => return None,
                Scan::Cut { .. } | Scan::Other => {}
            }
        }
        self.lines(input)
    }

    /// The line-by-line path: applies each line to the parser's buffers
    /// until one yields an item or `input` is used up.
    fn lines<'i>(&mut self, input: &mut &'i [u8]) -> Option<Ready<'i>> {
        loop {
            let &first = input.first()?;
            // A blank line (the frame's end) is the commonest short line: skip
            // the search call for it.
            let found = match first {
                b'\n' | b'\r' => Some(0),
                _ => find_line_end(input),
            };
            let Some(pos) = found else {
                let part = *input;
                *input = &[];
                return self.stash_partial(part);
            };
            let mut end = pos + 1;
            if input[pos] == b'\r' {
                match input.get(pos + 1) {
                    Some(b'\n') => end += 1,
                    Some(_) => {}
                    None => self.pending_cr = true,
                }
            }
            let line = &input[..pos];
            *input = &input[end..];
            let ready =
                if self.line.is_empty() && self.split_data.is_none() && !self.discarded_partial {
                    self.complete_line(line)
                } else {
                    // The line began in an earlier chunk (it is never blank).
                    self.complete_split_line(line)
                };
            if ready.is_some() {
                return ready;
            }
        }
    }

    /// Delivers a frame of the service's shape that arrived whole in `input`
    /// ([`one_go::scan`]): its text is validated in one pass and its pieces
    /// are borrowed from it. `None` (nothing consumed) when it is not valid
    /// UTF-8 or not within the cap: the line-by-line path reads it then.
    fn service_dispatch<'i>(&mut self, input: &mut &'i [u8], spans: Spans) -> Option<Ready<'i>> {
        let bytes: &'i [u8] = input;
        let after = bytes.get(spans.next..)?;
        // Within the cap however it is counted (the line-by-line path would
        // have held at most the frame's text plus the previous id).
        if spans.end + self.last_event_id.len() > self.max_frame_bytes {
            return None;
        }
        let text = one_go::frame_text(bytes, spans.end)?;
        let (data, event, id) = pieces(text, spans)?;
        if let (Some(id), Some(span)) = (id, spans.id) {
            if !self.last_event_id.copy_or_refill(text, span) {
                let room = self.room_beside(self.last_event_id.capacity());
                self.last_event_id.set_text(id, room);
            }
        }
        // Nothing to clean up: the frame's own id travels in the item.
        *input = after;
        Some(Ready::Event(Body::Text { data, event, id }))
    }

    /// Carries `input`, the start of a frame of the service's shape that the
    /// chunk's end cut, into [`Parser::carry`] and consumes it. `false`
    /// (nothing done) when it is empty, long, or could near the cap.
    fn start_carry(&mut self, input: &mut &[u8]) -> bool {
        if input.is_empty() || !self.may_carry(input.len()) {
            return false;
        }
        self.carry.extend_from_slice(input);
        *input = &[];
        true
    }

    /// Whether `len` bytes may be carried. Bound so that replaying them line by
    /// line ([`Parser::replay_carry`]) cannot reach the cap, which counts the
    /// values held plus the last event id before or after the frame's own.
    fn may_carry(&self, len: usize) -> bool {
        len <= CARRY_MAX_BYTES && 2 * len + self.last_event_id.len() <= self.max_frame_bytes
    }

    /// Goes on with a carried frame in the next chunk.
    fn stitch(&mut self, input: &mut &[u8]) -> Stitched {
        let held = self.carry.len();
        let last = self.carry.last().copied().unwrap_or(b'\n');
        match one_go::frame_end(input, last) {
            FrameEnd::At(end) if self.may_carry(held + end) => {
                let pad = one_go::padding(held + end);
                let upto = input.len().min(end + pad);
                self.carry
                    .extend_from_slice(input.get(..upto).unwrap_or_default());
                match one_go::scan(&self.carry) {
                    Scan::Frame(spans) if spans.next == held + end => {
                        *input = input.get(end..).unwrap_or_default();
                        self.cleanup = Cleanup::Carried;
                        return Stitched::Frame(spans);
                    }
                    _ => self.carry.truncate(held),
                }
            }
            FrameEnd::Later if self.may_carry(held + input.len()) => {
                self.carry.extend_from_slice(input);
                *input = &[];
                return Stitched::Carried;
            }
            FrameEnd::At(_) | FrameEnd::Later | FrameEnd::Other => {}
        }
        self.replay_carry();
        Stitched::Replayed
    }

    /// The item of a carried frame that [`Parser::stitch`] completed: read
    /// in one go like [`Parser::service_dispatch`], or, when it is not valid
    /// UTF-8, exactly as the line-by-line path would have read it.
    fn carried_item(&mut self, spans: Spans) -> Item<'_> {
        let room = self.room_beside(self.last_event_id.capacity());
        let carry = &self.carry;
        let valid = one_go::frame_text(carry, spans.end);
        if let Some((text, (data, event, id))) =
            valid.and_then(|text| Some((text, pieces(text, spans)?)))
        {
            if let (Some(id), Some(span)) = (id, spans.id) {
                if !self.last_event_id.copy_or_refill(text, span) {
                    self.last_event_id.set_text(id, room);
                }
                self.frame_has_id = true;
            }
            return Item::Event(Frame {
                event: event.filter(|name| !name.is_empty()).unwrap_or("message"),
                data,
                id,
                last_event_id: id.unwrap_or_else(|| self.last_event_id.text(&mut self.fix_id)),
            });
        }
        let raw = |span: Span| carry.get(span.start..span.end).unwrap_or_default();
        if let Some(span) = spans.id {
            self.last_event_id.keep(raw(span), room);
            self.frame_has_id = true;
        }
        if let Some(span) = spans.event {
            let room = self.room_beside(self.event.capacity());
            self.event.keep(raw(span), room);
        }
        let event = match spans.event {
            Some(_) if self.event.len() > 0 => self.event.text(&mut self.fix_event),
            _ => "message",
        };
        let last_event_id = self.last_event_id.text(&mut self.fix_id);
        Item::Event(Frame {
            event,
            data: text(raw(spans.data), &mut self.fix_data),
            id: self.frame_has_id.then_some(last_event_id),
            last_event_id,
        })
    }

    /// Hands a carried frame to the line-by-line path, as if its bytes had been
    /// read that way when they arrived (bounded by [`Parser::may_carry`],
    /// they yield no item).
    fn replay_carry(&mut self) {
        if self.carry.is_empty() {
            return;
        }
        let carry = std::mem::take(&mut self.carry);
        let mut rest = &carry[..];
        while !rest.is_empty() {
            let ready = self.lines(&mut rest);
            debug_assert!(ready.is_none(), "a carried frame replays without items");
        }
        self.carry = carry;
        self.carry.clear();
        shrink_idle(&mut self.carry);
    }

    fn push_data(&mut self, value: &[u8]) {
        self.append_data(value);
        self.data.push(b'\n');
    }

    fn append_data(&mut self, value: &[u8]) {
        let room = self.room_beside(self.data.capacity());
        append_bounded(&mut self.data, value, room);
    }

    fn strip_bom(&mut self, input: &mut &[u8]) {
        while let Some(matched) = self.bom_matched {
            let Some((&byte, rest)) = input.split_first() else {
                return;
            };
            if byte == BOM[matched] {
                *input = rest;
                self.bom_matched = (matched + 1 < BOM.len()).then_some(matched + 1);
            } else {
                // Not a BOM after all: the bytes held back start the first line.
                self.bom_matched = None;
                self.line.extend_from_slice(&BOM[..matched]);
            }
        }
    }

    /// Keeps the start of a line whose end has not arrived yet.
    fn stash_partial<'i>(&mut self, part: &[u8]) -> Option<Ready<'i>> {
        if self.discarding {
            self.discarded_partial = true;
            return None;
        }
        if self.retained() + part.len() > self.max_frame_bytes {
            self.discarded_partial = true;
            return Some(self.overflow(part));
        }
        if let Some(split) = &mut self.split_data {
            let value = split.value(part);
            self.append_data(value);
        } else if let (true, Some(rest)) = (self.line.is_empty(), part.strip_prefix(b"data:")) {
            let mut split = SplitData {
                at: self.data.len(),
                prefix: 5,
                space_pending: true,
            };
            let value = split.value(rest);
            self.split_data = Some(split);
            self.append_data(value);
        } else {
            let room = self.room_beside(self.line.capacity());
            append_bounded(&mut self.line, part, room);
        }
        None
    }

    /// A line that started in an earlier chunk ends with `tail`.
    fn complete_split_line<'i>(&mut self, tail: &[u8]) -> Option<Ready<'i>> {
        if self.discarding {
            // Not blank: bytes of it were seen before.
            self.discarded_partial = false;
            self.line.clear();
            shrink_idle(&mut self.line);
            return None;
        }
        if self.retained() + tail.len() > self.max_frame_bytes {
            return Some(self.overflow(tail));
        }
        if let Some(mut split) = self.split_data.take() {
            let value = split.value(tail);
            self.push_data(value);
            return None;
        }
        let mut line = std::mem::take(&mut self.line);
        line.extend_from_slice(tail);
        let ready = self.process_line(&line);
        line.clear();
        shrink_idle(&mut line);
        self.line = line;
        ready
    }

    /// A whole line that arrived in this chunk.
    fn complete_line<'i>(&mut self, line: &'i [u8]) -> Option<Ready<'i>> {
        if self.discarding {
            if line.is_empty() {
                self.discarding = false;
                self.clear_frame();
            }
            return None;
        }
        if self.retained() + line.len() > self.max_frame_bytes {
            return Some(self.overflow(line));
        }
        match line.split_first() {
            None => self.dispatch(),
            Some((b':', comment)) => {
                self.cleanup = Cleanup::Comment;
                Some(Ready::Comment(Some(comment)))
            }
            Some(_) => self.apply_line(line),
        }
    }

    /// Applies one complete line (assembled from several chunks) that fits the cap.
    fn process_line<'i>(&mut self, line: &[u8]) -> Option<Ready<'i>> {
        let Some((&first, _)) = line.split_first() else {
            return self.dispatch();
        };
        if first == b':' {
            self.comment.clear();
            let room = self.room_beside(self.comment.capacity());
            append_bounded(&mut self.comment, &line[1..], room);
            self.cleanup = Cleanup::Comment;
            return Some(Ready::Comment(None));
        }
        self.apply_line(line)
    }

    /// Applies a field line (not blank, not a comment) that fits the cap.
    fn apply_line<'i>(&mut self, line: &[u8]) -> Option<Ready<'i>> {
        let (name, value) = split_field(line);
        match name {
            b"data" => self.push_data(value),
            b"event" => {
                self.has_event = true;
                let room = self.room_beside(self.event.capacity());
                self.event.keep(value, room);
            }
            b"id" if !has_nul(value) => {
                let room = self.room_beside(self.last_event_id.capacity());
                self.last_event_id.keep(value, room);
                self.frame_has_id = true;
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = value.iter().fold(0u64, |acc, &d| {
                    acc.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                });
                return Some(Ready::Retry(ms));
            }
            _ => {}
        }
        None
    }

    /// The blank line: dispatches the frame if it had data.
    fn dispatch<'i>(&mut self) -> Option<Ready<'i>> {
        if self.data.pop().is_none() {
            // No data line: nothing is dispatched (spec 6, rule 6).
            self.has_event = false;
            self.frame_has_id = false;
            return None;
        }
        self.cleanup = Cleanup::Frame;
        Some(Ready::Event(Body::Stored))
    }

    /// Starts discarding the current frame, whose line in progress is
    /// `self.line` followed by `tail`.
    ///
    /// The excerpt kept for logs is the frame's data, then the offending line,
    /// cut to a length every chunking of the same input has seen by the time
    /// it overflows, so the error is the same however the bytes arrived.
    fn overflow<'i>(&mut self, tail: &[u8]) -> Ready<'i> {
        let known = (self.max_frame_bytes + 1)
            .saturating_sub(self.event_len() + self.last_event_id.len())
            .min(RAW_PREFIX_BYTES);
        let mut raw = std::mem::take(&mut self.err_raw);
        raw.clear();
        let [before, prefix, value, line] = self.pending_text();
        for part in [before, prefix, value, line, tail] {
            let room = known - raw.len();
            raw.extend_from_slice(&part[..part.len().min(room)]);
        }
        let keep = utf8_prefix(&raw, known).len();
        raw.truncate(keep);
        self.err_raw = raw;
        self.split_data = None;
        self.data.clear();
        self.line.clear();
        shrink_idle(&mut self.line);
        shrink_idle(&mut self.data);
        self.discarding = true;
        self.cleanup = Cleanup::Frame;
        Ready::TooLarge
    }

    fn item<'s: 'c, 'i: 'c, 'c>(&'s mut self, ready: Ready<'i>) -> Item<'c> {
        match ready {
            Ready::Retry(ms) => Item::Retry(ms),
            Ready::Comment(Some(line)) => Item::Comment(text(line, &mut self.fix_data)),
            Ready::Comment(None) => Item::Comment(text(&self.comment, &mut self.fix_data)),
            Ready::Event(body) => {
                let (data, event, id) = match body {
                    Body::Text { data, event, id } => {
                        (data, event.filter(|name| !name.is_empty()), id)
                    }
                    Body::Stored => {
                        let event = (self.event_len() > 0).then_some(&self.event);
                        let event = event.map(|name| name.text(&mut self.fix_event));
                        (text(&self.data, &mut self.fix_data), event, None)
                    }
                };
                let event = event.unwrap_or("message");
                // A frame read in one go lends its own id (the same text).
                let last_event_id = match id {
                    Some(id) => id,
                    None => self.last_event_id.text(&mut self.fix_id),
                };
                let id = match id {
                    Some(id) => Some(id),
                    None => self.frame_has_id.then_some(last_event_id),
                };
                Item::Event(Frame {
                    event,
                    data,
                    id,
                    last_event_id,
                })
            }
            Ready::TooLarge | Ready::Incomplete => {
                let kind = match ready {
                    Ready::TooLarge => FrameErrorKind::TooLarge {
                        limit: self.max_frame_bytes,
                    },
                    _ => FrameErrorKind::Incomplete,
                };
                let event = match self.event_len() {
                    0 => None,
                    _ => Some(self.event.text(&mut self.fix_event)),
                };
                let id = if self.frame_has_id {
                    Some(self.last_event_id.text(&mut self.fix_id))
                } else {
                    None
                };
                Item::Error(FrameError {
                    kind,
                    event,
                    id,
                    raw: text(&self.err_raw, &mut self.fix_data),
                })
            }
        }
    }
}

impl FrameErrorKind {
    /// The error code `onair decode` prints: `frame_too_large` or `incomplete_frame`.
    pub fn code(self) -> &'static str {
        match self {
            FrameErrorKind::TooLarge { .. } => "frame_too_large",
            FrameErrorKind::Incomplete => "incomplete_frame",
        }
    }
}

impl std::fmt::Display for FrameErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameErrorKind::TooLarge { limit } => {
                write!(f, "frame exceeds {limit} bytes; skipped to its blank line")
            }
            FrameErrorKind::Incomplete => {
                f.write_str("input ended inside a frame; it was not dispatched")
            }
        }
    }
}

/// A non-comment line as (field name, value): the name is everything before the
/// first colon, the value everything after it less one leading space; without a
/// colon the whole line is the name and the value is empty. The service's three
/// fields are matched as prefixes first, which spares a search per line.
fn split_field(line: &[u8]) -> (&[u8], &[u8]) {
    let (name, value) = if let Some(value) = line.strip_prefix(b"data:") {
        (&line[..4], value)
    } else if let Some(value) = line.strip_prefix(b"id:") {
        (&line[..2], value)
    } else if let Some(value) = line.strip_prefix(b"event:") {
        (&line[..5], value)
    } else {
        match memchr(b':', line) {
            Some(colon) => (&line[..colon], &line[colon + 1..]),
            None => return (line, &b""[..]),
        }
    };
    (name, value.strip_prefix(b" ").unwrap_or(value))
}

/// The bytes as text, repairing invalid UTF-8 into `fix` only when needed.
fn text<'a>(bytes: &'a [u8], fix: &'a mut String) -> &'a str {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(valid) => valid,
        Err(_) => {
            fix.clear();
            fix.push_str(&String::from_utf8_lossy(bytes));
            fix
        }
    }
}

/// At most `max` bytes of `bytes`, not cutting a UTF-8 sequence in half.
fn utf8_prefix(bytes: &[u8], max: usize) -> &[u8] {
    if bytes.len() < max {
        return bytes;
    }
    let mut end = max;
    if end == bytes.len() {
        // Cut only if the last character is incomplete.
        return match std::str::from_utf8(bytes) {
            Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
            _ => bytes,
        };
    }
    // Step back over continuation bytes (at most 3) to a character start.
    while end > max.saturating_sub(3) && end > 0 && (bytes[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    &bytes[..end]
}

/// Appends, growing the buffer geometrically but to no more than `room` bytes
/// of capacity unless the content itself needs more (callers have checked the
/// content fits the frame cap). One spare byte is kept for a following LF.
fn append_bounded(buf: &mut Vec<u8>, bytes: &[u8], room: usize) {
    if let Some(extra) = growth(buf.len(), buf.capacity(), bytes.len(), room) {
        buf.reserve_exact(extra);
    }
    buf.extend_from_slice(bytes);
}

/// The `reserve_exact` argument [`append_bounded`] uses for a buffer of `len`
/// and `capacity` receiving `add` bytes, or `None` when it has room already.
fn growth(len: usize, capacity: usize, add: usize, room: usize) -> Option<usize> {
    let needed = len + add + 1;
    (needed > capacity).then(|| (capacity * 2).max(64).min(room).max(needed) - len)
}

/// Whether an id value holds a NUL (such an id is ignored). Ids are short: a
/// branch-free fold beats a search call (`contains` is one, and measured 6 %).
/// The data, event name and id of a frame read in one go, from its text.
fn pieces(text: &str, spans: Spans) -> Option<(&str, Option<&str>, Option<&str>)> {
    let piece = |span: Span| text.get(span.start..span.end);
    let event = match spans.event {
        Some(span) => Some(piece(span)?),
        None => None,
    };
    let id = match spans.id {
        Some(span) => Some(piece(span)?),
        None => None,
    };
    Some((piece(spans.data)?, event, id))
}

/// Whether `value` holds a NUL byte, a word at a time (ids are ~20 bytes).
fn has_nul(value: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // Nonzero exactly when some byte of `word` is zero.
    let zero_in = |word: &[u8]| {
        let mut le = [0u8; 8];
        le.copy_from_slice(word);
        let word = u64::from_le_bytes(le);
        word.wrapping_sub(ONES) & !word & HIGHS
    };
    let Some(last) = value.len().checked_sub(8) else {
        return value.contains(&0);
    };
    let words = value
        .chunks_exact(8)
        .fold(0, |acc, word| acc | zero_in(word));
    // The last word overlaps the whole ones: it covers the remainder.
    (words | zero_in(&value[last..])) != 0
}

/// The first CR or LF in `bytes`. Most lines of the service's stream are short
/// (`id:…`, `event:…`), so the first bytes are checked eight at a time in a
/// register before the vectorized search (whose set-up dominates a short line).
#[inline]
fn find_line_end(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const LFS: u64 = u64::from_ne_bytes([b'\n'; 8]);
    const CRS: u64 = u64::from_ne_bytes([b'\r'; 8]);
    /// Bytes checked word by word before handing over to `memchr2`.
    const SHORT: usize = 32;
    let head = &bytes[..bytes.len().min(SHORT)];
    let mut words = head.chunks_exact(8);
    let mut offset = 0;
    for word in &mut words {
        let mut le = [0u8; 8];
        le.copy_from_slice(word);
        let word = u64::from_le_bytes(le);
        let (lf, cr) = (word ^ LFS, word ^ CRS);
        // The lowest set high bit marks the first zero byte exactly (borrows
        // only run upward, so false positives lie above a true zero byte).
        let hits = (lf.wrapping_sub(ONES) & !lf | cr.wrapping_sub(ONES) & !cr) & HIGHS;
        if hits != 0 {
            return Some(offset + (hits.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    let rest = words.remainder();
    if let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
        return Some(offset + pos);
    }
    offset = head.len();
    memchr2(b'\n', b'\r', &bytes[offset..]).map(|pos| offset + pos)
}

fn shrink_idle(buf: &mut Vec<u8>) {
    if buf.capacity() > IDLE_CAPACITY && buf.is_empty() {
        *buf = Vec::new();
    }
}

fn shrink_idle_string(buf: &mut String) {
    if buf.capacity() > IDLE_CAPACITY {
        *buf = String::new();
    }
}

#[cfg(test)]
mod tests;
