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
//!        | record (RS record)* RS tags          (n ≥ 1 items)
//! record = field (US field)*                    (the fields of its kind, in the order below)
//! tags   = one ASCII letter per record, in order
//! ```
//!
//! RS is U+001E ([`RECORD_SEPARATOR`]), US is U+001F ([`FIELD_SEPARATOR`]);
//! a field that is exactly U+001D ([`NULL`]) is `null`. The tags come last so
//! that a reader can split the batch on RS and pop them off the end. A
//! record of no fields (a heartbeat) is the empty string.
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
//! U+001D, U+001E or U+001F, the item is written as a `j` record instead
//! (JSON escapes every control character, so the line holds none of them).
//! A reader needs no other escape rule.
//!
//! ```
//! use onair::event::Item;
//! use onair::packed;
//!
//! let mut out = Vec::new();
//! packed::write_batch(&[Item::Heartbeat, Item::Retry(3000), Item::Comment("a\u{1f}b".into())], &mut out);
//! assert_eq!(out, b"\x1e3000\x1e{\"type\":\"comment\",\"text\":\"a\\u001fb\"}\x1ehrj");
//! ```

use std::io::Write;

use crate::event::{Event, Item, User};
use crate::json::ItemJson;

/// Separates records (and the tags after the last record): U+001E.
pub const RECORD_SEPARATOR: u8 = 0x1E;
/// Separates the fields of a record: U+001F.
pub const FIELD_SEPARATOR: u8 = 0x1F;
/// A field that is exactly this byte is `null`: U+001D.
pub const NULL: u8 = 0x1D;

/// Appends `items` to `out` as one packed batch (nothing when there are none).
pub fn write_batch<'a>(items: impl IntoIterator<Item = &'a Item>, out: &mut Vec<u8>) {
    let mut tags = Vec::new();
    for item in items {
        if !tags.is_empty() {
            out.push(RECORD_SEPARATOR);
        }
        tags.push(write_record(item, out));
    }
    if !tags.is_empty() {
        out.push(RECORD_SEPARATOR);
        out.extend_from_slice(&tags);
    }
}

/// Appends one item's record (no separator around it) and returns its tag.
pub fn write_record(item: &Item, out: &mut Vec<u8>) -> u8 {
    let start = out.len();
    let mut w = Fields { out, clean: true };
    let tag = w.item(item);
    if w.clean {
        return tag;
    }
    out.truncate(start);
    out.extend_from_slice(ItemJson(item).to_line().as_bytes());
    b'j'
}

/// Writes fields, noting any text that holds a separator or the null marker.
struct Fields<'a> {
    out: &'a mut Vec<u8>,
    clean: bool,
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
                self.sep();
                self.opt_text(id.as_ref().map(|i| i.as_str()));
                self.sep();
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
                self.sep();
                self.text(&e.message);
                self.sep();
                self.opt_text(e.event.as_deref());
                self.sep();
                self.opt_text(e.id.as_ref().map(|i| i.as_str()));
                self.sep();
                self.text(&e.raw);
                b'x'
            }
        }
    }

    /// The event's fields after its id.
    fn event(&mut self, event: &Event) -> u8 {
        match event {
            Event::Chat(e) => {
                self.user(&e.user);
                self.flag(e.is_dj);
                self.sep();
                self.text(&e.message);
                self.sep();
                self.text(e.sent_time.as_str());
                b'c'
            }
            Event::Presence(e) => {
                self.user(&e.user);
                self.text(e.kind.as_str());
                self.sep();
                self.opt_int(e.fan_rank);
                self.sep();
                self.flag(e.is_manager);
                self.sep();
                match e.favorite_temperature {
                    // Display of an f64 is its shortest round-trip decimal.
                    Some(t) => {
                        let _ = write!(self.out, "{t}");
                    }
                    None => self.out.push(NULL),
                }
                self.sep();
                self.text(e.time.as_str());
                b'p'
            }
            Event::Like(e) => {
                self.user(&e.user);
                self.text(e.kind.as_str());
                self.sep();
                self.int(e.total_amount);
                self.sep();
                self.int(e.amount);
                self.sep();
                self.int(e.extra_amount);
                self.sep();
                self.opt_int(e.combo);
                self.sep();
                self.text(e.time.as_str());
                b'l'
            }
            Event::Donation(e) => {
                self.user(&e.user);
                self.int(e.amount);
                self.sep();
                self.opt_text(e.message.as_deref());
                self.sep();
                self.text(e.time.as_str());
                b'd'
            }
            Event::End(e) => {
                self.sep();
                self.text(e.reason.as_str());
                self.sep();
                self.flag(e.reason == crate::event::EndReason::LiveEnded);
                b'e'
            }
        }
    }

    /// `US user-id US nickname? US`: the fields between the id and the rest.
    fn user(&mut self, user: &User) {
        self.sep();
        self.text(&user.id);
        self.sep();
        self.opt_text(user.nickname.as_deref());
        self.sep();
    }

    fn sep(&mut self) {
        self.out.push(FIELD_SEPARATOR);
    }

    fn text(&mut self, s: &str) {
        if memchr::memchr3(NULL, RECORD_SEPARATOR, FIELD_SEPARATOR, s.as_bytes()).is_some() {
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

    fn int(&mut self, n: u64) {
        let _ = write!(self.out, "{n}");
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
