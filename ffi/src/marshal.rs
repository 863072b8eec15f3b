//! Stream items as CPython `marshal` data: a batch that one `marshal.loads`
//! turns into Python values — strings, ints, floats, booleans and `None`,
//! built by the interpreter's C code, no JSON parser and no bytecode per
//! field. libonair hands it out (`onair_decoder_feed_marshal`) for the
//! Python package, whose `json.loads` costs more than everything else of
//! decoding an event.
//!
//! # Layout
//!
//! One marshal object (no header, no references): the 2-tuple
//! `(tags, records)`. `tags` is an ASCII string, one letter per item;
//! `records` a tuple holding one tuple per item, its fields in the order of
//! this table (`?`: `None` when null):
//!
//! | tag | item | fields |
//! |---|---|---|
//! | `c` | chat | id: str?, user_id: str, nickname: str?, is_dj: bool, message: str, sent_time: str |
//! | `p` | presence | id: str?, user_id: str, nickname: str?, type: str, fan_rank: int?, is_manager: bool, favorite_temperature: float?, time: str |
//! | `l` | like | id: str?, user_id: str, nickname: str?, type: str, total_amount: int, amount: int, extra_amount: int, combo: int?, time: str |
//! | `d` | donation | id: str?, user_id: str, nickname: str?, amount: int, message: str?, time: str |
//! | `e` | end | id: str?, reason: str, is_live_ended: bool |
//! | `h` | heartbeat | (none: the empty tuple) |
//! | `m` | comment | text: str |
//! | `r` | retry | ms: int |
//! | `u` | unknown event | event: str, id: str?, data: str |
//! | `x` | frame error | code: str, message: str, event: str?, id: str?, raw: str |
//!
//! `id` is the frame id; enum values (`type`, `reason`) are their wire
//! strings, unknown ones kept; `is_live_ended` is `reason == LIVE_ENDED`.
//! Every text is length-prefixed, so no text needs escaping.
//!
//! # The marshal codes written
//!
//! Those of marshal format version 4 (CPython 3.4 and later; PyPy reads
//! them too), all little-endian: `N` None, `T` True, `F` False; `i` + i32
//! for an int in i32 range, else `l` + i32 digit count + 15-bit digits as
//! u16, least significant first; `g` + f64; `z` + u8 length + bytes for an
//! ASCII text under 256 bytes, `a` + i32 length + bytes for a longer ASCII
//! one, `u` + i32 length + UTF-8 otherwise; `)` + u8 count for a tuple of
//! fewer than 256 items, else `(` + i32 count. CPython documents marshal as
//! free to change between versions: the Python package checks at import
//! that `marshal.loads` reads a sample batch as the JSON path does, and
//! falls back to the JSON path when it does not.
//!
//! A text over `i32::MAX` bytes (only possible with a frame cap above
//! 2 GiB) has no marshal form: its item becomes a `frame_too_large` error
//! record (tag `x`) that names the item.
//!
//! A heartbeat and a `retry: 3000` make `("hr", ((), (3000,)))`, the bytes
//! `)\x02z\x02hr)\x02)\x00)\x01i\xb8\x0b\x00\x00` (a unit test holds it).

use onair_core::event::{EndReason, Event, Item, User};

/// Appends `items` to `out` as one marshal batch.
pub fn write_batch<'a>(items: impl IntoIterator<Item = &'a Item>, out: &mut Vec<u8>) {
    let mut batch = Batch::new(out);
    for item in items {
        batch.push(item);
    }
    batch.finish();
}

/// A batch written one item at a time (for a caller that decodes and
/// renders in one pass): [`push`](Self::push) each item, then
/// [`finish`](Self::finish). The records are written as they come; the
/// tuple heads and the tags, which need the count, are written by `finish`.
#[derive(Debug)]
pub struct Batch<'a> {
    out: &'a mut Vec<u8>,
    /// Where the batch starts in `out`.
    start: usize,
    tags: Vec<u8>,
}

impl<'a> Batch<'a> {
    /// A batch appended to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        let start = out.len();
        Self {
            out,
            start,
            tags: Vec::new(),
        }
    }

    /// Appends one item's record.
    pub fn push(&mut self, item: &Item) {
        let tag = write_record(item, self.out);
        self.tags.push(tag);
    }

    /// Items pushed so far.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.tags.len()
    }

    /// Whether no item was pushed.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }

    /// Puts the heads in front of the records: the batch is complete.
    pub fn finish(self) {
        let mut head = Vec::with_capacity(self.tags.len() + 16);
        tuple_head(&mut head, 2);
        // Tags are ASCII letters and at most one per item.
        ascii(&mut head, &self.tags);
        tuple_head(&mut head, self.tags.len());
        self.out.splice(self.start..self.start, head);
    }
}

/// Appends one item's record (a marshal tuple) and returns its tag.
pub fn write_record(item: &Item, out: &mut Vec<u8>) -> u8 {
    write_record_within(item, out, MAX_TEXT)
}

/// The longest text marshal's i32 length takes.
const MAX_TEXT: usize = i32::MAX as usize;

/// [`write_record`] with texts up to `max` bytes (tests use a small one).
fn write_record_within(item: &Item, out: &mut Vec<u8>, max: usize) -> u8 {
    let start = out.len();
    let mut w = Record { out, max };
    match w.item(item) {
        Some(tag) => tag,
        None => {
            w.out.truncate(start);
            w.too_long(item)
        }
    }
}

/// Writes one record; a text over `max` bytes stops it (`None`).
struct Record<'a> {
    out: &'a mut Vec<u8>,
    max: usize,
}

impl Record<'_> {
    fn item(&mut self, item: &Item) -> Option<u8> {
        Some(match item {
            Item::Event { id: frame, event } => match event {
                Event::Chat(e) => {
                    tuple_head(self.out, 6);
                    self.user(frame_id(frame), &e.user)?;
                    boolean(self.out, e.is_dj);
                    self.text(&e.message)?;
                    self.text(e.sent_time.as_str())?;
                    b'c'
                }
                Event::Presence(e) => {
                    tuple_head(self.out, 8);
                    self.user(frame_id(frame), &e.user)?;
                    self.text(e.kind.as_str())?;
                    opt_int(self.out, e.fan_rank);
                    boolean(self.out, e.is_manager);
                    match e.favorite_temperature {
                        Some(t) => float(self.out, t),
                        None => none(self.out),
                    }
                    self.text(e.time.as_str())?;
                    b'p'
                }
                Event::Like(e) => {
                    tuple_head(self.out, 9);
                    self.user(frame_id(frame), &e.user)?;
                    self.text(e.kind.as_str())?;
                    int(self.out, e.total_amount);
                    int(self.out, e.amount);
                    int(self.out, e.extra_amount);
                    opt_int(self.out, e.combo);
                    self.text(e.time.as_str())?;
                    b'l'
                }
                Event::Donation(e) => {
                    tuple_head(self.out, 6);
                    self.user(frame_id(frame), &e.user)?;
                    int(self.out, e.amount);
                    self.opt_text(e.message.as_deref())?;
                    self.text(e.time.as_str())?;
                    b'd'
                }
                Event::End(e) => {
                    tuple_head(self.out, 3);
                    self.opt_text(frame_id(frame))?;
                    self.text(e.reason.as_str())?;
                    boolean(self.out, e.reason == EndReason::LiveEnded);
                    b'e'
                }
            },
            Item::Unknown {
                event,
                id: frame,
                data,
            } => {
                tuple_head(self.out, 3);
                self.text(event)?;
                self.opt_text(frame_id(frame))?;
                self.text(data)?;
                b'u'
            }
            Item::Heartbeat => {
                tuple_head(self.out, 0);
                b'h'
            }
            Item::Comment(t) => {
                tuple_head(self.out, 1);
                self.text(t)?;
                b'm'
            }
            Item::Retry(ms) => {
                tuple_head(self.out, 1);
                int(self.out, *ms);
                b'r'
            }
            Item::Error(e) => {
                tuple_head(self.out, 5);
                self.text(e.kind.code())?;
                self.text(&e.message)?;
                self.opt_text(e.event.as_deref())?;
                self.opt_text(frame_id(&e.id))?;
                self.text(&e.raw)?;
                b'x'
            }
        })
    }

    /// The `frame_too_large` error record of an item with a text over the
    /// limit: its event name and id when short, no raw data.
    fn too_long(&mut self, item: &Item) -> u8 {
        let (event, id) = match item {
            Item::Event { id, event } => (Some(event.name()), id.as_ref().map(|i| i.as_str())),
            Item::Unknown { event, id, .. } => {
                (Some(event.as_str()), id.as_ref().map(|i| i.as_str()))
            }
            Item::Error(e) => (e.event.as_deref(), e.id.as_ref().map(|i| i.as_str())),
            Item::Heartbeat | Item::Comment(_) | Item::Retry(_) => (None, None),
        };
        // Texts of at most 64 bytes always fit.
        self.max = self.max.max(TOO_LONG.len());
        tuple_head(self.out, 5);
        let _ = self.text("frame_too_large");
        let _ = self.text(TOO_LONG);
        let _ = self.opt_text(event.filter(|s| s.len() <= 64));
        let _ = self.opt_text(id.filter(|s| s.len() <= 64));
        let _ = self.text("");
        b'x'
    }

    fn user(&mut self, id: Option<&str>, user: &User) -> Option<()> {
        self.opt_text(id)?;
        self.text(&user.id)?;
        self.opt_text(user.nickname.as_deref())
    }

    fn text(&mut self, s: &str) -> Option<()> {
        let bytes = s.as_bytes();
        if bytes.len() > self.max {
            return None;
        }
        if bytes.is_ascii() {
            ascii(self.out, bytes);
        } else {
            self.out.push(b'u');
            self.out
                .extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            self.out.extend_from_slice(bytes);
        }
        Some(())
    }

    fn opt_text(&mut self, s: Option<&str>) -> Option<()> {
        match s {
            Some(s) => self.text(s),
            None => {
                none(self.out);
                Some(())
            }
        }
    }
}

fn frame_id(id: &Option<onair_core::proto::time::FrameId>) -> Option<&str> {
    id.as_ref().map(|i| i.as_str())
}

/// The message of the error record that replaces an item too long for marshal.
const TOO_LONG: &str = "an item holds a text over 2 GiB, more than Python's marshal form takes";

fn tuple_head(out: &mut Vec<u8>, n: usize) {
    match u8::try_from(n) {
        Ok(small) => out.extend_from_slice(&[b')', small]),
        // Items per batch and fields per record fit in an i32.
        Err(_) => {
            out.push(b'(');
            out.extend_from_slice(&(n.min(i32::MAX as usize) as i32).to_le_bytes());
        }
    }
}

fn none(out: &mut Vec<u8>) {
    out.push(b'N');
}

fn boolean(out: &mut Vec<u8>, b: bool) {
    out.push(if b { b'T' } else { b'F' });
}

/// ASCII bytes (at most `i32::MAX` of them) as `z` or `a`.
fn ascii(out: &mut Vec<u8>, bytes: &[u8]) {
    match u8::try_from(bytes.len()) {
        Ok(n) => out.extend_from_slice(&[b'z', n]),
        Err(_) => {
            out.push(b'a');
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        }
    }
    out.extend_from_slice(bytes);
}

fn int(out: &mut Vec<u8>, n: u64) {
    if let Ok(small) = i32::try_from(n) {
        out.push(b'i');
        out.extend_from_slice(&small.to_le_bytes());
        return;
    }
    // A long: 15-bit digits, least significant first; the count is positive.
    let mut digits = [0u16; 5];
    let mut count = 0;
    let mut rest = n;
    while rest != 0 {
        digits[count] = (rest & 0x7FFF) as u16;
        rest >>= 15;
        count += 1;
    }
    out.push(b'l');
    out.extend_from_slice(&(count as i32).to_le_bytes());
    for d in &digits[..count] {
        out.extend_from_slice(&d.to_le_bytes());
    }
}

fn opt_int(out: &mut Vec<u8>, n: Option<u64>) {
    match n {
        Some(n) => int(out, n),
        None => none(out),
    }
}

fn float(out: &mut Vec<u8>, f: f64) {
    out.push(b'g');
    out.extend_from_slice(&f.to_le_bytes());
}

#[cfg(test)]
mod tests;
