//! The packed wire form of stream items: a batch of items as one UTF-8
//! text that a binding splits with two calls of its language's string
//! split, no JSON parser involved. libonair hands it out
//! (`onair_decoder_take_packed`) for Python, whose `json.loads` costs more
//! than everything else of decoding an event.
//!
//! A contract like [`crate::json`]'s: tags and field orders are fixed; a
//! new item kind gets a new tag.
//!
//! # Layout
//!
//! ```text
//! batch  = ""                                   (no items)
//!        | (field US){WIDTH × n} tags           (n ≥ 1 items)
//! tags   = one ASCII letter per item, in order
//! ```
//!
//! Every item is a record of exactly [`WIDTH`] fields: the fields of its kind
//! in the order below, then empty fields up to the width. Each field ends
//! with US, U+001F ([`FIELD_SEPARATOR`]); a field that is exactly U+001D
//! ([`NULL`]) is `null`. So a reader splits the whole batch once on US, pops
//! the tags off the end and takes the fields [`WIDTH`] at a time — in
//! Python, `zip` over one iterator does that grouping inside C, which is why
//! records have one width and no separator of their own.
//!
//! Field forms: *text* verbatim; *text?* text or NULL; *int* an unsigned
//! decimal; *int?* decimal or NULL; *flag* `1` or `0`; *float?* a decimal
//! that reads back as the same `f64` (Rust's shortest round-trip form,
//! never an exponent) or NULL.
//!
//! | tag | item | fields |
//! |---|---|---|
//! | `c` | chat | id *text?*, user id *text*, nickname *text?*, isDj *flag*, message *text*, sentTime *text* |
//! | `p` | presence | id *text?*, user id *text*, nickname *text?*, type *text*, fanRank *int?*, isManager *flag*, favoriteTemperature *float?*, time *text* |
//! | `l` | like | id *text?*, user id *text*, nickname *text?*, type *text*, totalAmount *int*, amount *int*, extraAmount *int*, combo *int?*, time *text* |
//! | `d` | donation | id *text?*, user id *text*, nickname *text?*, amount *int*, message *text?*, time *text* |
//! | `e` | end | id *text?*, reason *text*, is LIVE_ENDED *flag* |
//! | `h` | heartbeat | (none) |
//! | `m` | comment | text *text* |
//! | `r` | retry | ms *int* |
//! | `u` | unknown event | event *text*, id *text?*, data *text* |
//! | `x` | frame error | code *text*, message *text*, event *text?*, id *text?*, raw *text* |
//! | `j` | any item, as JSON | its canonical JSON line ([`crate::json::ItemJson`]) |
//!
//! `id` is the frame id; enum values (`type`, `reason`) are their wire
//! strings, unknown ones kept. **Fallback:** when any text of an item holds
//! U+001D or U+001F, the item is written as a `j` record instead (JSON
//! escapes every control character, so the line holds neither). A reader
//! needs no other escape rule.
//!
//! ```
//! use onair::event::Item;
//! use onair::packed::{self, WIDTH};
//!
//! let mut out = Vec::new();
//! packed::write_batch(&[Item::Retry(3000), Item::Comment("a\u{1f}b".into())], &mut out);
//! let pad = "\u{1f}".repeat(WIDTH - 1);
//! let expected = format!("3000\u{1f}{pad}{{\"type\":\"comment\",\"text\":\"a\\u001fb\"}}\u{1f}{pad}rj");
//! assert_eq!(String::from_utf8(out).unwrap(), expected);
//! ```

use std::io::Write;

use crate::event::{Event, Item, User};
use crate::json::ItemJson;

/// Ends every field: U+001F.
pub const FIELD_SEPARATOR: u8 = 0x1F;
/// A field that is exactly this byte is `null`: U+001D.
pub const NULL: u8 = 0x1D;
/// The fields of every record: the most any kind has (a like's nine).
pub const WIDTH: usize = 9;

/// Appends `items` to `out` as one packed batch (nothing when there are none).
pub fn write_batch<'a>(items: impl IntoIterator<Item = &'a Item>, out: &mut Vec<u8>) {
    let mut batch = Batch::new(out);
    for item in items {
        batch.push(item);
    }
    batch.finish();
}

/// A batch written one item at a time (for a caller that decodes and
/// renders in one pass): [`push`](Self::push) each item, then
/// [`finish`](Self::finish) writes the tags. Unfinished, the text is no batch.
#[derive(Debug)]
pub struct Batch<'a> {
    out: &'a mut Vec<u8>,
    tags: Vec<u8>,
}

impl<'a> Batch<'a> {
    /// A batch appended to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        Self {
            out,
            tags: Vec::new(),
        }
    }

    /// Appends one item's record.
    pub fn push(&mut self, item: &Item) {
        let tag = write_record(item, self.out);
        self.tags.push(tag);
    }

    /// Items pushed so far.
    pub fn len(&self) -> usize {
        self.tags.len()
    }

    /// Whether no item was pushed.
    pub fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }

    /// Appends the tags: the batch is complete.
    pub fn finish(self) {
        self.out.extend_from_slice(&self.tags);
    }
}

/// Appends one item's record ([`WIDTH`] fields, each ending with US) and
/// returns its tag.
pub fn write_record(item: &Item, out: &mut Vec<u8>) -> u8 {
    let start = out.len();
    let mut w = Fields {
        out,
        clean: true,
        ended: 0,
    };
    let mut tag = w.item(item);
    w.end();
    if !w.clean {
        w.out.truncate(start);
        w.ended = 0;
        w.out.extend_from_slice(ItemJson(item).to_line().as_bytes());
        w.end();
        tag = b'j';
    }
    debug_assert!(w.ended <= WIDTH, "{} fields", w.ended);
    while w.ended < WIDTH {
        w.end();
    }
    tag
}

/// Writes fields, noting any text that holds the separator or the null marker.
struct Fields<'a> {
    out: &'a mut Vec<u8>,
    clean: bool,
    /// Fields ended so far.
    ended: usize,
}

impl Fields<'_> {
    fn item(&mut self, item: &Item) -> u8 {
        match item {
            Item::Event { id, event } => {
                self.opt_text(id.as_ref().map(|i| i.as_str()));
                self.event(event)
            }
            Item::Unknown { event, id, data } => {
                self.text(event);
                self.end();
                self.opt_text(id.as_ref().map(|i| i.as_str()));
                self.end();
                self.text(data);
                b'u'
            }
            Item::Heartbeat => b'h',
            Item::Comment(text) => {
                self.text(text);
                b'm'
            }
            Item::Retry(ms) => {
                self.int(*ms);
                b'r'
            }
            Item::Error(e) => {
                self.text(e.kind.code());
                self.end();
                self.text(&e.message);
                self.end();
                self.opt_text(e.event.as_deref());
                self.end();
                self.opt_text(e.id.as_ref().map(|i| i.as_str()));
                self.end();
                self.text(&e.raw);
                b'x'
            }
        }
    }

    /// The event's fields after its id (the last one not ended).
    fn event(&mut self, event: &Event) -> u8 {
        match event {
            Event::Chat(e) => {
                self.user(&e.user);
                self.flag(e.is_dj);
                self.end();
                self.text(&e.message);
                self.end();
                self.text(e.sent_time.as_str());
                b'c'
            }
            Event::Presence(e) => {
                self.user(&e.user);
                self.text(e.kind.as_str());
                self.end();
                self.opt_int(e.fan_rank);
                self.end();
                self.flag(e.is_manager);
                self.end();
                match e.favorite_temperature {
                    // Display of an f64 is its shortest round-trip decimal.
                    Some(t) => {
                        let _ = write!(self.out, "{t}");
                    }
                    None => self.out.push(NULL),
                }
                self.end();
                self.text(e.time.as_str());
                b'p'
            }
            Event::Like(e) => {
                self.user(&e.user);
                self.text(e.kind.as_str());
                self.end();
                self.int(e.total_amount);
                self.end();
                self.int(e.amount);
                self.end();
                self.int(e.extra_amount);
                self.end();
                self.opt_int(e.combo);
                self.end();
                self.text(e.time.as_str());
                b'l'
            }
            Event::Donation(e) => {
                self.user(&e.user);
                self.int(e.amount);
                self.end();
                self.opt_text(e.message.as_deref());
                self.end();
                self.text(e.time.as_str());
                b'd'
            }
            Event::End(e) => {
                self.end();
                self.text(e.reason.as_str());
                self.end();
                self.flag(e.reason == crate::event::EndReason::LiveEnded);
                b'e'
            }
        }
    }

    /// Ends the id; writes and ends the user id and the nickname.
    fn user(&mut self, user: &User) {
        self.end();
        self.text(&user.id);
        self.end();
        self.opt_text(user.nickname.as_deref());
        self.end();
    }

    /// Ends the field being written.
    fn end(&mut self) {
        self.out.push(FIELD_SEPARATOR);
        self.ended += 1;
    }

    fn text(&mut self, s: &str) {
        if memchr::memchr2(NULL, FIELD_SEPARATOR, s.as_bytes()).is_some() {
            self.clean = false;
        }
        self.out.extend_from_slice(s.as_bytes());
    }

    fn opt_text(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.text(s),
            None => self.out.push(NULL),
        }
    }

    fn int(&mut self, mut n: u64) {
        // Decimal digits, last first (a u64 has at most 20).
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.out.extend_from_slice(&digits[at..]);
    }

    fn opt_int(&mut self, n: Option<u64>) {
        match n {
            Some(n) => self.int(n),
            None => self.out.push(NULL),
        }
    }

    fn flag(&mut self, b: bool) {
        self.out.push(if b { b'1' } else { b'0' });
    }
}

#[cfg(test)]
mod tests;
