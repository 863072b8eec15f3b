//! How [`crate::decoder::Decoder`] hands items to JS: a tape of numbers
//! plus one text buffer, from which `bot.js` builds the very objects
//! `JSON.parse` would make of [`onair::json::ItemJson`] (same keys, same
//! order, same values), without a JSON parse on the JS side.
//!
//! The oracle is the core's JSON serializer, in the bot module
//! (`JsonDecoder`, `crate::http`): the Node tests compare both on every
//! fixture and on random chunkings.
//!
//! The tape is a list of `f64`. A string is two numbers: its start and end
//! in UTF-16 units of the text buffer (`end` = -1 for `null`). A nullable
//! number is a flag (0 null, 1 present) and the number. Opcodes: see `Op`.

use onair::event::{DecodeError, Event, Item, User};

/// The opcode that starts each item on the tape; `bot.js` mirrors it.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Op {
    Chat = 0,
    Presence = 1,
    Like = 2,
    Donation = 3,
    End = 4,
    Unknown = 5,
    Heartbeat = 6,
    Comment = 7,
    Retry = 8,
    Error = 9,
}

/// Numbers and text of one batch of items.
#[derive(Debug, Default)]
pub(crate) struct Tape {
    pub(crate) nums: Vec<f64>,
    pub(crate) text: String,
    /// Length of `text` in UTF-16 units.
    units: usize,
}

impl Tape {
    pub(crate) fn clear(&mut self) {
        self.nums.clear();
        self.text.clear();
        self.units = 0;
    }

    fn op(&mut self, op: Op) {
        self.nums.push(f64::from(op as u8));
    }

    fn str(&mut self, s: &str) {
        let len = if s.is_ascii() {
            s.len()
        } else {
            s.chars().map(char::len_utf16).sum()
        };
        self.text.push_str(s);
        self.nums.push(self.units as f64);
        self.units += len;
        self.nums.push(self.units as f64);
    }

    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.str(s),
            None => self.nums.extend_from_slice(&[0.0, -1.0]),
        }
    }

    fn num(&mut self, n: u64) {
        self.nums.push(n as f64);
    }

    fn opt_num(&mut self, n: Option<f64>) {
        match n {
            Some(n) => self.nums.extend_from_slice(&[1.0, n]),
            None => self.nums.extend_from_slice(&[0.0, 0.0]),
        }
    }

    fn bool(&mut self, b: bool) {
        self.nums.push(if b { 1.0 } else { 0.0 });
    }

    fn user(&mut self, user: &User) {
        self.str(&user.id);
        self.opt_str(user.nickname.as_deref());
    }

    /// Writes one item.
    pub(crate) fn item(&mut self, item: &Item) {
        match item {
            Item::Event { id, event } => {
                let id = id.as_ref().map(|id| id.as_str());
                match event {
                    Event::Chat(c) => {
                        self.op(Op::Chat);
                        self.opt_str(id);
                        self.user(&c.user);
                        self.bool(c.is_dj);
                        self.str(&c.message);
                        self.str(c.sent_time.as_str());
                    }
                    Event::Presence(p) => {
                        self.op(Op::Presence);
                        self.opt_str(id);
                        self.user(&p.user);
                        self.str(p.kind.as_str());
                        self.opt_num(p.fan_rank.map(|n| n as f64));
                        self.bool(p.is_manager);
                        self.opt_num(p.favorite_temperature);
                        self.str(p.time.as_str());
                    }
                    Event::Like(l) => {
                        self.op(Op::Like);
                        self.opt_str(id);
                        self.user(&l.user);
                        self.str(l.kind.as_str());
                        self.num(l.total_amount);
                        self.num(l.amount);
                        self.num(l.extra_amount);
                        self.opt_num(l.combo.map(|n| n as f64));
                        self.str(l.time.as_str());
                    }
                    Event::Donation(d) => {
                        self.op(Op::Donation);
                        self.opt_str(id);
                        self.user(&d.user);
                        self.num(d.amount);
                        self.opt_str(d.message.as_deref());
                        self.str(d.time.as_str());
                    }
                    Event::End(e) => {
                        self.op(Op::End);
                        self.opt_str(id);
                        self.str(e.reason.as_str());
                    }
                }
            }
            Item::Unknown { event, id, data } => {
                self.op(Op::Unknown);
                self.str(event);
                self.opt_str(id.as_ref().map(|id| id.as_str()));
                self.str(data);
            }
            Item::Heartbeat => self.op(Op::Heartbeat),
            Item::Comment(text) => {
                self.op(Op::Comment);
                self.str(text);
            }
            Item::Retry(ms) => {
                self.op(Op::Retry);
                self.num(*ms);
            }
            Item::Error(e) => self.error(e),
        }
    }

    fn error(&mut self, e: &DecodeError) {
        self.op(Op::Error);
        self.str(e.kind.code());
        self.opt_str(e.event.as_deref());
        self.opt_str(e.id.as_ref().map(|id| id.as_str()));
        self.str(&e.raw);
        self.str(&e.message);
    }
}
