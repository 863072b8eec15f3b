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
//!   from the parser's reused buffers or, for the service's frame shape (`id`,
//!   `event`, one `data` line) arriving whole in one chunk, from the chunk itself
//!   (the one fast path, fenced in its own module; everything else goes line by
//!   line through one `State` machine that reads as the WHATWG algorithm).
//! - **Bounded memory**: the bytes held for one frame never exceed
//!   [`Parser::max_frame_bytes`]; a larger frame yields one
//!   [`FrameErrorKind::TooLarge`] and is skipped up to its blank line.
//! - **Never fails on bad bytes**: invalid UTF-8 becomes U+FFFD in the item.
//!
//! Feed each chunk as a [`Chunk`] (its text is then validated in one pass);
//! [`Parser::next_item`] over a plain slice says the same, frame by frame.
//! (The example is on [`crate::sse`], the public face of this module.)

use memchr::{memchr, memchr2, memrchr2};

mod one_go;

use one_go::Span;

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

/// Where the parser stands in the byte stream: the line-splitting half of the
/// WHATWG algorithm ("lines end in CRLF, a lone LF or a lone CR"; a BOM
/// starting the stream is dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The stream's first bytes: this many bytes of a UTF-8 BOM matched so far.
    Bom(usize),
    /// At the start of a line.
    LineStart,
    /// A CR just ended a line: an LF next is part of that line end.
    AfterCr,
    /// Inside a line that began in an earlier chunk. Its bytes are in
    /// [`Parser::line`], unless the frame is being skipped.
    InLine,
}

/// What a line (or the fast path) yielded, before it becomes a borrowed
/// [`Item`] (`'i`: the input chunk of this call).
#[derive(Debug, Clone, Copy)]
enum Ready<'i> {
    /// A frame dispatched from the parser's buffers.
    Frame,
    /// A frame read in one go by the fast path, borrowed from the input.
    WholeFrame {
        data: &'i str,
        event: Option<&'i str>,
        id: Option<&'i str>,
    },
    /// A comment line: borrowed from the input when it arrived whole,
    /// `None` when it was assembled in [`Parser::line`].
    Comment(Option<&'i [u8]>),
    Retry(u64),
    TooLarge,
    Incomplete,
}

/// Work deferred to the next call, so items can borrow the buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cleanup {
    None,
    /// A comment assembled in `line` was lent.
    Line,
    /// A frame (or an error about one) was lent: the frame's buffers reset.
    Frame,
    /// `finish` ended the stream: everything resets.
    Stream,
}

/// The incremental event-stream parser. See [`crate::sse`] for what it
/// promises and an example.
#[derive(Debug, Clone)]
pub struct Parser {
    max_frame_bytes: usize,
    state: State,
    /// Skipping an oversized frame up to its blank line.
    skipping: bool,
    /// The line in progress while [`State::InLine`] (empty while skipping).
    line: Vec<u8>,
    /// The data buffer: each `data` value followed by LF.
    data: Vec<u8>,
    /// The event type buffer; it names the frame only while `has_event`
    /// (the allocation is kept between frames).
    event: Vec<u8>,
    has_event: bool,
    /// The current frame had an `id` line (so it reports its own id).
    frame_has_id: bool,
    /// The last event ID buffer: persists across frames.
    last_event_id: Vec<u8>,
    /// A raw excerpt for the last error item.
    err_raw: Vec<u8>,
    /// U+FFFD-repaired copies, used only when a field is not valid UTF-8.
    fix_data: String,
    fix_event: String,
    fix_id: String,
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
            state: State::Bom(0),
            skipping: false,
            line: Vec::new(),
            data: Vec::new(),
            event: Vec::new(),
            has_event: false,
            frame_has_id: false,
            last_event_id: Vec::new(),
            err_raw: Vec::new(),
            fix_data: String::new(),
            fix_event: String::new(),
            fix_id: String::new(),
            cleanup: Cleanup::None,
        }
    }

    /// The cap on one frame's buffered bytes.
    pub fn max_frame_bytes(&self) -> usize {
        self.max_frame_bytes
    }

    /// The stream's last event id (ids persist across frames; `""` at start).
    pub fn last_event_id(&self) -> String {
        String::from_utf8_lossy(&self.last_event_id).into_owned()
    }

    /// Bytes held for the frame in progress (never more than the cap).
    pub fn buffered_bytes(&self) -> usize {
        self.held()
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
    /// The item may borrow from the parser or from the input chunk (a frame of
    /// the service's shape that arrived whole in this chunk hands out its text
    /// without copying it). Either way the parser is free again once the item
    /// is dropped, so the loop above compiles as written.
    pub fn next_item<'s: 'c, 'i: 'c, 'c>(&'s mut self, input: &mut &'i [u8]) -> Option<Item<'c>> {
        // A slice may be handed over again after the caller changed its
        // bytes, so nothing is remembered of its text: each frame is validated.
        let mut chunk = Chunk {
            rest: input,
            validated: Validated {
                chunk_len: input.len(),
                text: Some((0, "")),
            },
        };
        let item = self.next_item_in(&mut chunk);
        *input = chunk.rest;
        item
    }

    /// Like [`Parser::next_item`], over a [`Chunk`]: faster on the service's
    /// stream, because the chunk's text is validated as UTF-8 in one pass
    /// instead of frame by frame. Same items.
    ///
    /// ```
    /// use onair::sse::{Chunk, Item, Parser};
    ///
    /// let mut parser = Parser::new();
    /// let mut data = Vec::new();
    /// for bytes in [&b"id:1\nevent:chat\ndata:{}\n\nda"[..], b"ta: x\n\n"] {
    ///     let mut chunk = Chunk::new(bytes);
    ///     while let Some(item) = parser.next_item_in(&mut chunk) {
    ///         if let Item::Event(frame) = item {
    ///             data.push(frame.data.to_owned());
    ///         }
    ///     }
    /// }
    /// assert_eq!(data, ["{}", "x"]);
    /// ```
    pub fn next_item_in<'s: 'c, 'i: 'c, 'c>(
        &'s mut self,
        chunk: &mut Chunk<'i>,
    ) -> Option<Item<'c>> {
        self.run_cleanup();
        let ready = self.advance(&mut chunk.rest, &mut chunk.validated)?;
        Some(self.item(ready))
    }

    /// Ends the stream. Returns an [`FrameErrorKind::Incomplete`] error when an
    /// unterminated frame (or line) was pending; such a frame is never
    /// dispatched. The parser is then ready for a new stream (new connection).
    pub fn finish(&mut self) -> Option<Item<'_>> {
        self.run_cleanup();
        let held_bom = match self.state {
            State::Bom(matched) => matched,
            _ => 0,
        };
        let pending = !self.skipping
            && (held_bom > 0
                || self.state == State::InLine
                || !self.data.is_empty()
                || self.event_len() > 0
                || self.frame_has_id);
        self.cleanup = Cleanup::Stream;
        if !pending {
            return None;
        }
        let mut raw = std::mem::take(&mut self.err_raw);
        raw.clear();
        for piece in [&BOM[..held_bom], &self.data, &self.line] {
            raw.extend_from_slice(piece);
        }
        self.err_raw = raw;
        Some(self.item(Ready::Incomplete))
    }

    /// Reads lines until one yields an item or `input` is used up.
    fn advance<'i>(
        &mut self,
        input: &mut &'i [u8],
        validated: &mut Validated<'i>,
    ) -> Option<Ready<'i>> {
        loop {
            match self.state {
                State::Bom(matched) => self.strip_bom(matched, input)?,
                State::AfterCr => {
                    let (&first, rest) = input.split_first()?;
                    if first == b'\n' {
                        *input = rest;
                    }
                    self.state = State::LineStart;
                }
                State::LineStart | State::InLine => {
                    if self.state == State::LineStart && self.frame_is_empty() {
                        if let Some(ready) = self.whole_frame(input, validated) {
                            return Some(ready);
                        }
                    }
                    if input.is_empty() {
                        return None;
                    }
                    if let Some(ready) = self.read_line(input) {
                        return Some(ready);
                    }
                }
            }
        }
    }

    /// Drops a BOM at the start of the stream, a byte at a time (it may be
    /// split across chunks). `None` when `input` ran out first.
    fn strip_bom(&mut self, matched: usize, input: &mut &[u8]) -> Option<()> {
        let (&byte, rest) = input.split_first()?;
        if BOM.get(matched) == Some(&byte) {
            *input = rest;
            self.state = match matched + 1 {
                done if done == BOM.len() => State::LineStart,
                more => State::Bom(more),
            };
        } else if matched == 0 {
            self.state = State::LineStart;
        } else {
            // Not a BOM after all: the bytes held back start the first line.
            self.line.extend_from_slice(&BOM[..matched]);
            self.state = State::InLine;
        }
        Some(())
    }

    /// Reads up to one line end from non-empty `input`. A line without its
    /// end yet is held (or, while skipping, passed over) until the next chunk.
    fn read_line<'i>(&mut self, input: &mut &'i [u8]) -> Option<Ready<'i>> {
        let continued = self.state == State::InLine;
        let Some(end) = memchr2(b'\n', b'\r', input) else {
            let part = std::mem::take(input);
            self.state = State::InLine;
            return self.hold_partial(part);
        };
        let bytes: &'i [u8] = input;
        let (line, after) = bytes.split_at(end);
        (*input, self.state) = match after {
            [b'\r', b'\n', rest @ ..] => (rest, State::LineStart),
            // Whether an LF follows is the next chunk's to say.
            [b'\r'] => (&[][..], State::AfterCr),
            [_, rest @ ..] => (rest, State::LineStart),
            [] => (&[][..], State::LineStart),
        };
        if continued {
            self.end_held_line(line)
        } else {
            self.process_line(line)
        }
    }

    /// Keeps the start of a line whose end has not arrived yet.
    fn hold_partial<'i>(&mut self, part: &[u8]) -> Option<Ready<'i>> {
        if self.skipping {
            return None;
        }
        if self.held() + part.len() > self.max_frame_bytes {
            return Some(self.overflow(part));
        }
        let room = self.room_beside(self.line.capacity());
        append_bounded(&mut self.line, part, room);
        None
    }

    /// A line held from earlier chunks ends with `tail` (it is never blank).
    fn end_held_line<'i>(&mut self, tail: &[u8]) -> Option<Ready<'i>> {
        if self.skipping {
            return None;
        }
        if self.held() + tail.len() > self.max_frame_bytes {
            return Some(self.overflow(tail));
        }
        let mut line = std::mem::take(&mut self.line);
        line.extend_from_slice(tail);
        if line.first() == Some(&b':') {
            // The item lends the comment from `line`; cleared next call.
            self.line = line;
            self.cleanup = Cleanup::Line;
            return Some(Ready::Comment(None));
        }
        let ready = self.process_field(&line);
        line.clear();
        shrink_idle(&mut line);
        self.line = line;
        ready
    }

    /// WHATWG: a blank line dispatches, `:` starts a comment, anything else
    /// is a field.
    fn process_line<'i>(&mut self, line: &'i [u8]) -> Option<Ready<'i>> {
        if self.skipping {
            if line.is_empty() {
                self.skipping = false;
                self.reset_frame();
            }
            return None;
        }
        if self.held() + line.len() > self.max_frame_bytes {
            return Some(self.overflow(line));
        }
        match line.split_first() {
            None => self.dispatch(),
            Some((b':', comment)) => Some(Ready::Comment(Some(comment))),
            Some(_) => self.process_field(line),
        }
    }

    /// WHATWG "process the field": `event`, `data`, `id` (unless it holds a
    /// NUL) and `retry` (ASCII digits only); any other field is ignored.
    fn process_field<'i>(&mut self, line: &[u8]) -> Option<Ready<'i>> {
        let (name, value) = split_field(line);
        match name {
            b"data" => {
                let room = self.room_beside(self.data.capacity());
                append_bounded(&mut self.data, value, room);
                self.data.push(b'\n');
            }
            b"event" => {
                let room = self.room_beside(self.event.capacity());
                replace_bounded(&mut self.event, value, room);
                self.has_event = true;
            }
            b"id" if memchr(0, value).is_none() => {
                let room = self.room_beside(self.last_event_id.capacity());
                replace_bounded(&mut self.last_event_id, value, room);
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

    /// WHATWG "dispatch the event": a frame without data dispatches nothing;
    /// otherwise the data's final LF goes and the frame is lent.
    fn dispatch<'i>(&mut self) -> Option<Ready<'i>> {
        if self.data.pop().is_none() {
            self.reset_frame();
            return None;
        }
        self.cleanup = Cleanup::Frame;
        Some(Ready::Frame)
    }

    /// The fast path ([`one_go`]): a frame of the service's shape whole at the
    /// front of `input`, lent from it. `None` (nothing consumed) hands the
    /// bytes to the line-by-line path: not that shape, not valid UTF-8, or
    /// possibly over the cap.
    fn whole_frame<'i>(
        &mut self,
        input: &mut &'i [u8],
        validated: &mut Validated<'i>,
    ) -> Option<Ready<'i>> {
        let bytes: &'i [u8] = input;
        let spans = one_go::scan(bytes)?;
        // Within the cap however it is counted (the line-by-line path holds at
        // most the frame's text plus the previous id).
        if spans.end + self.last_event_id.len() > self.max_frame_bytes {
            return None;
        }
        let text = match validated.text(bytes, spans.end) {
            Some(text) => text,
            None => utf8(bytes.get(..spans.end)?).ok()?,
        };
        let piece = |span: Span| text.get(span.start..span.end);
        let data = piece(spans.data)?;
        let event = match spans.event {
            Some(span) => Some(piece(span)?),
            None => None,
        };
        let id = match spans.id {
            Some(span) => Some(piece(span)?),
            None => None,
        };
        if let Some(id) = id {
            let room = self.room_beside(self.last_event_id.capacity());
            replace_bounded(&mut self.last_event_id, id.as_bytes(), room);
        }
        *input = bytes.get(spans.next..)?;
        Some(Ready::WholeFrame { data, event, id })
    }

    /// Starts skipping the current frame, whose line in progress is
    /// `self.line` followed by `tail`.
    ///
    /// The excerpt kept for logs is the frame's data, then the offending line,
    /// cut to a length every chunking of the same input has seen by the time
    /// it overflows, so the error is the same however the bytes arrived.
    fn overflow<'i>(&mut self, tail: &[u8]) -> Ready<'i> {
        let known = self
            .max_frame_bytes
            .saturating_add(1)
            .saturating_sub(self.event_len() + self.last_event_id.len())
            .min(RAW_PREFIX_BYTES);
        let mut raw = std::mem::take(&mut self.err_raw);
        raw.clear();
        for part in [&self.data[..], &self.line, tail] {
            let room = known - raw.len();
            raw.extend_from_slice(&part[..part.len().min(room)]);
        }
        let keep = utf8_prefix(&raw, known).len();
        raw.truncate(keep);
        self.err_raw = raw;
        self.data.clear();
        self.line.clear();
        shrink_idle(&mut self.line);
        shrink_idle(&mut self.data);
        self.skipping = true;
        self.cleanup = Cleanup::Frame;
        Ready::TooLarge
    }

    fn item<'s: 'c, 'i: 'c, 'c>(&'s mut self, ready: Ready<'i>) -> Item<'c> {
        match ready {
            Ready::Retry(ms) => Item::Retry(ms),
            Ready::Comment(Some(line)) => Item::Comment(text(line, &mut self.fix_data)),
            Ready::Comment(None) => {
                let comment = self.line.get(1..).unwrap_or_default();
                Item::Comment(text(comment, &mut self.fix_data))
            }
            Ready::WholeFrame { data, event, id } => Item::Event(Frame {
                event: event.filter(|name| !name.is_empty()).unwrap_or("message"),
                data,
                id,
                last_event_id: match id {
                    Some(id) => id,
                    None => text(&self.last_event_id, &mut self.fix_id),
                },
            }),
            Ready::Frame => {
                let named = self.event_len() > 0;
                let last_event_id = text(&self.last_event_id, &mut self.fix_id);
                Item::Event(Frame {
                    event: match named {
                        false => "message",
                        true => text(&self.event, &mut self.fix_event),
                    },
                    data: text(&self.data, &mut self.fix_data),
                    id: self.frame_has_id.then_some(last_event_id),
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
                let named = self.event_len() > 0;
                let event = named.then(|| text(&self.event, &mut self.fix_event));
                let id = match self.frame_has_id {
                    true => Some(text(&self.last_event_id, &mut self.fix_id)),
                    false => None,
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

    /// Whether no frame is in progress (the fast path may start one).
    fn frame_is_empty(&self) -> bool {
        !self.skipping && self.data.is_empty() && !self.has_event && !self.frame_has_id
    }

    /// Bytes of the current frame's event name (0 when it has none).
    fn event_len(&self) -> usize {
        if self.has_event {
            self.event.len()
        } else {
            0
        }
    }

    /// Bytes held for the frame in progress: the cap applies to this.
    fn held(&self) -> usize {
        self.line.len() + self.data.len() + self.event_len() + self.last_event_id.len()
    }

    /// Capacity one growable buffer may take, given what the others hold.
    fn room_beside(&self, own_capacity: usize) -> usize {
        let others = self.growable_capacity() - own_capacity;
        self.max_frame_bytes
            .saturating_add(ALLOCATION_SLACK)
            .saturating_sub(others)
    }

    fn growable_capacity(&self) -> usize {
        self.line.capacity()
            + self.data.capacity()
            + self.event.capacity()
            + self.last_event_id.capacity()
    }

    fn run_cleanup(&mut self) {
        match std::mem::replace(&mut self.cleanup, Cleanup::None) {
            Cleanup::None => {}
            Cleanup::Line => {
                self.line.clear();
                shrink_idle(&mut self.line);
                shrink_idle_string(&mut self.fix_data);
            }
            Cleanup::Frame => self.reset_frame(),
            Cleanup::Stream => {
                self.reset_frame();
                self.line.clear();
                shrink_idle(&mut self.line);
                self.last_event_id.clear();
                shrink_idle(&mut self.last_event_id);
                self.state = State::Bom(0);
                self.skipping = false;
            }
        }
    }

    /// Empties the data and event type buffers (the last event id stays),
    /// giving back any large allocation a big frame left.
    fn reset_frame(&mut self) {
        self.data.clear();
        self.has_event = false;
        self.frame_has_id = false;
        // One sum instead of a check per buffer: none of them exceeds the idle
        // size unless their sum does.
        let held = self.data.capacity()
            + self.event.capacity()
            + self.err_raw.capacity()
            + self.fix_data.capacity()
            + self.fix_event.capacity()
            + self.fix_id.capacity();
        if held > IDLE_CAPACITY {
            shrink_idle(&mut self.data);
            if self.event.capacity() > IDLE_CAPACITY {
                self.event = Vec::new();
            }
            shrink_idle(&mut self.err_raw);
            shrink_idle_string(&mut self.fix_data);
            shrink_idle_string(&mut self.fix_event);
            shrink_idle_string(&mut self.fix_id);
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

/// One chunk of the stream as it is read: the bytes not read yet and what
/// is known of their text. See [`Parser::next_item_in`].
#[derive(Debug, Clone)]
pub struct Chunk<'i> {
    rest: &'i [u8],
    validated: Validated<'i>,
}

impl<'i> Chunk<'i> {
    /// A chunk as the HTTP client handed it over.
    pub fn new(bytes: &'i [u8]) -> Self {
        Self {
            rest: bytes,
            validated: Validated {
                chunk_len: bytes.len(),
                text: None,
            },
        }
    }

    /// The bytes not read yet (empty once `next_item_in` said `None`).
    pub fn rest(&self) -> &'i [u8] {
        self.rest
    }
}

/// Fast path: a chunk's text validated as UTF-8 in one pass, the first time a
/// whole frame is looked for in it, up to its last line end (no frame read in
/// one go ends later). Frames read in one go are then sliced from it instead
/// of being validated one by one: one bulk pass over 2 MiB of the service's
/// stream costs ~0.04 ms, frame by frame ~0.15 ms (BENCHMARKS.md).
#[derive(Debug, Clone)]
struct Validated<'i> {
    /// The chunk's length: the position of `rest` is `chunk_len - rest.len()`.
    chunk_len: usize,
    /// Where the validated text starts in the chunk, and the text (empty when
    /// the chunk held invalid UTF-8: its frames are validated one by one).
    text: Option<(usize, &'i str)>,
}

impl<'i> Validated<'i> {
    /// The first `len` bytes of `rest`, as validated text, if they were.
    fn text(&mut self, rest: &'i [u8], len: usize) -> Option<&'i str> {
        let pos = self.chunk_len.checked_sub(rest.len())?;
        let (from, text) = *self.text.get_or_insert_with(|| {
            let lines = memrchr2(b'\n', b'\r', rest).map_or(0, |end| end + 1);
            let text = rest.get(..lines).and_then(|lines| utf8(lines).ok());
            (pos, text.unwrap_or_default())
        });
        let start = pos.checked_sub(from)?;
        text.get(start..start.checked_add(len)?)
    }
}

/// A non-comment line as (field name, value): the name is everything before the
/// first colon, the value everything after it less one leading space; without a
/// colon the whole line is the name and the value is empty.
fn split_field(line: &[u8]) -> (&[u8], &[u8]) {
    match memchr(b':', line) {
        Some(colon) => {
            let value = &line[colon + 1..];
            (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
        }
        None => (line, &[]),
    }
}

/// UTF-8 validation of field values, in one place.
fn utf8(bytes: &[u8]) -> Result<&str, simdutf8::basic::Utf8Error> {
    simdutf8::basic::from_utf8(bytes)
}

/// The bytes as text, repairing invalid UTF-8 into `fix` only when needed.
fn text<'a>(bytes: &'a [u8], fix: &'a mut String) -> &'a str {
    match utf8(bytes) {
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
    let needed = buf.len() + bytes.len() + 1;
    if needed > buf.capacity() {
        let target = (buf.capacity() * 2).max(64).min(room).max(needed);
        buf.reserve_exact(target - buf.len());
    }
    buf.extend_from_slice(bytes);
}

/// Replaces the buffer's content, growing it as [`append_bounded`] does.
fn replace_bounded(buf: &mut Vec<u8>, bytes: &[u8], room: usize) {
    buf.clear();
    append_bounded(buf, bytes, room);
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

/// The WHATWG reference reading, the parser's oracle (the unit tests here and
/// the fuzz bodies of `fuzz-support`); not API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod reference;
#[cfg(test)]
mod tests;
