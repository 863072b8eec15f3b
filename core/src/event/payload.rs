//! The reader of the payloads of `chat`, `presence`, `like`, `donation` and
//! `end`: every event the stream carries is read here, and every decoding
//! error comes from here.
//!
//! [`read`] is serde_json over the event types' derived `Deserialize`: any
//! key order, whitespace, escapes, unknown fields skipped; a missing or
//! duplicate field, a wrong type or text that is not JSON is a [`DecodeError`]
//! kept with the frame.
//!
//! [`documented`] is a fenced fast path in front of it, for the one shape the
//! service sends: compact objects with the documented keys in the documented
//! order and strings without escapes. It reads that template with one
//! comparison per key and answers `None` for anything else, which then goes
//! to [`read`]. It buys 1.55× serde_json alone on the typed race (framing
//! and decoding together, `ONAIR_RACE`, BENCHMARKS.md "Typed events"); the
//! core keeps it only while that figure is at least 1.5×. serde_json is its
//! oracle in the tests and in the `fast_json` fuzz target (wherever the
//! template answers, the two agree).
//!
//! [`DecodeError`]: super::DecodeError

use serde::de::DeserializeOwned;

use super::{Chat, DecodeErrorKind, Donation, End, EndReason, Event, Like, Presence, User};
use super::{LikeType, PresenceType};
use crate::proto::time::Timestamp;
use crate::wire::{JsonFault, Object};

/// Reads `data` of a frame named `name` with serde_json: the event, `None`
/// for a name that is not one of the service's events, or why it failed.
pub(super) fn read(name: &str, data: &str) -> Result<Option<Event>, (DecodeErrorKind, String)> {
    let event = match name {
        "chat" => from_json::<Chat>(data).map(Event::Chat),
        "presence" => from_json::<Presence>(data).map(Event::Presence),
        "like" => from_json::<Like>(data).map(Event::Like),
        "donation" => from_json::<Donation>(data).map(Event::Donation),
        "end" => end(data).map(Event::End),
        _ => return Ok(None),
    };
    event.map(Some)
}

/// A frame's data read as one JSON object of `T`'s shape (an array of its
/// fields is the wrong shape, though serde's derive would take it).
fn from_json<T: DeserializeOwned>(data: &str) -> Result<T, (DecodeErrorKind, String)> {
    read_json::<Object<T>>(data).map(|o| o.0)
}

/// A frame's data read as JSON of `T`'s shape; a fault sorted into not JSON
/// (`invalid_json`) or JSON of another shape (`invalid_event`).
fn read_json<T: DeserializeOwned>(data: &str) -> Result<T, (DecodeErrorKind, String)> {
    serde_json::from_str(data).map_err(|e| {
        let fault = JsonFault::of(data.as_bytes(), &e);
        let kind = if fault.syntax {
            DecodeErrorKind::InvalidJson
        } else {
            DecodeErrorKind::InvalidEvent
        };
        (kind, fault.message)
    })
}

/// The end frame's data: the documented `{"reason":…}` object. A bare reason
/// (`LIVE_ENDED` or `"LIVE_ENDED"`) is accepted too, because the spec writes the
/// frame as `data:{reason}` and missing an end frame would break reconnection.
fn end(data: &str) -> Result<End, (DecodeErrorKind, String)> {
    let trimmed = data.trim();
    let bare = !trimmed.is_empty()
        && trimmed
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if bare {
        return Ok(End {
            reason: EndReason::from_wire(trimmed),
        });
    }
    if trimmed.starts_with('"') {
        return read_json::<EndReason>(data).map(|reason| End { reason });
    }
    from_json::<End>(data)
}

/// The payload in exactly the documented shape (spec 2.6): compact, every
/// field present, in the documented order, no escape in any string. Read as
/// a template: each key is one comparison with a constant. Anything else
/// returns `None` and [`read`] reads it.
pub(super) fn documented(name: &str, data: &str) -> Option<Event> {
    let mut t = Template { text: data, at: 0 };
    let event = match name {
        "chat" => {
            t.lit(b"{\"user\":")?;
            let user = t.user()?;
            t.lit(b",\"isDj\":")?;
            let is_dj = t.bool()?;
            t.lit(b",\"message\":")?;
            let message = t.string()?.to_owned();
            t.lit(b",\"sentTime\":")?;
            let sent_time = Timestamp::new(t.string()?);
            Event::Chat(Chat {
                user,
                is_dj,
                message,
                sent_time,
            })
        }
        "like" => {
            t.lit(b"{\"user\":")?;
            let user = t.user()?;
            t.lit(b",\"type\":")?;
            let kind = LikeType::from_wire(t.string()?);
            t.lit(b",\"totalAmount\":")?;
            let total_amount = t.u64()?;
            t.lit(b",\"amount\":")?;
            let amount = t.u64()?;
            t.lit(b",\"extraAmount\":")?;
            let extra_amount = t.u64()?;
            t.lit(b",\"combo\":")?;
            let combo = t.nullable(Template::u64)?;
            t.lit(b",\"time\":")?;
            let time = Timestamp::new(t.string()?);
            Event::Like(Like {
                user,
                kind,
                total_amount,
                amount,
                extra_amount,
                combo,
                time,
            })
        }
        "presence" => {
            t.lit(b"{\"user\":")?;
            let user = t.user()?;
            t.lit(b",\"type\":")?;
            let kind = PresenceType::from_wire(t.string()?);
            t.lit(b",\"fanRank\":")?;
            let fan_rank = t.nullable(Template::u64)?;
            t.lit(b",\"isManager\":")?;
            let is_manager = t.bool()?;
            t.lit(b",\"favoriteTemperature\":")?;
            let favorite_temperature = t.nullable(Template::f64)?;
            t.lit(b",\"time\":")?;
            let time = Timestamp::new(t.string()?);
            Event::Presence(Presence {
                user,
                kind,
                fan_rank,
                is_manager,
                favorite_temperature,
                time,
            })
        }
        "donation" => {
            t.lit(b"{\"user\":")?;
            let user = t.user()?;
            t.lit(b",\"amount\":")?;
            let amount = t.u64()?;
            t.lit(b",\"message\":")?;
            let message = t.nullable(Template::string)?.map(str::to_owned);
            t.lit(b",\"time\":")?;
            let time = Timestamp::new(t.string()?);
            Event::Donation(Donation {
                user,
                amount,
                message,
                time,
            })
        }
        _ => return None,
    };
    t.lit(b"}")?;
    (t.at == t.text.len()).then_some(event)
}

/// A cursor over the template: every method reads one value of the
/// documented shape or answers `None` (then serde_json reads the text).
struct Template<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Template<'a> {
    fn rest(&self) -> &'a [u8] {
        self.text.as_bytes().get(self.at..).unwrap_or_default()
    }

    fn lit(&mut self, literal: &[u8]) -> Option<()> {
        self.rest().starts_with(literal).then(|| {
            self.at += literal.len();
        })
    }

    /// `{"id":"…","nickname":"…"|null}`.
    fn user(&mut self) -> Option<User> {
        self.lit(b"{\"id\":")?;
        let id = self.string()?.to_owned();
        self.lit(b",\"nickname\":")?;
        let nickname = self.nullable(Self::string)?.map(str::to_owned);
        self.lit(b"}")?;
        Some(User { id, nickname })
    }

    /// A string without escapes or control characters (those go to serde).
    fn string(&mut self) -> Option<&'a str> {
        self.lit(b"\"")?;
        let start = self.at;
        let end = string_end(self.text.as_bytes(), start)?;
        if self.text.as_bytes().get(end) != Some(&b'"') {
            return None;
        }
        self.at = end + 1;
        // Both ends are ASCII quotes: char boundaries.
        self.text.get(start..end)
    }

    fn bool(&mut self) -> Option<bool> {
        if self.lit(b"true").is_some() {
            Some(true)
        } else {
            self.lit(b"false").map(|()| false)
        }
    }

    fn nullable<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.lit(b"null").is_some() {
            return Some(None);
        }
        read(self).map(Some)
    }

    /// The run of bytes that may belong to a number.
    fn number_text(&mut self) -> &'a str {
        let len = self
            .rest()
            .iter()
            .take_while(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .count();
        let text = self.text.get(self.at..self.at + len).unwrap_or_default();
        self.at += len;
        text
    }

    /// A whole number: digits, no leading zero, no sign, no overflow.
    fn u64(&mut self) -> Option<u64> {
        let digits = self.number_text();
        let plain = digits.bytes().all(|b| b.is_ascii_digit());
        if !plain || digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
            return None;
        }
        digits.parse().ok()
    }

    /// A JSON number (RFC 8259 grammar checked here), read by std's exact
    /// parser; a value out of `f64`'s range goes to serde.
    fn f64(&mut self) -> Option<f64> {
        let text = self.number_text();
        if !is_json_number(text.as_bytes()) {
            return None;
        }
        text.parse::<f64>().ok().filter(|v| v.is_finite())
    }
}

/// RFC 8259's `number`: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
fn is_json_number(b: &[u8]) -> bool {
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// The position of the first quote, backslash or control byte at or after
/// `from`, eight bytes at a time: where a JSON string's plain run ends.
fn string_end(bytes: &[u8], from: usize) -> Option<usize> {
    use crate::swar;
    let rest = bytes.get(from..)?;
    let mut words = rest.chunks_exact(8);
    let mut offset = from;
    for word in &mut words {
        let word = swar::load(word);
        let hits = swar::equal(word, b'"') | swar::equal(word, b'\\') | swar::below(word, 0x20);
        if hits != 0 {
            return Some(offset + swar::first(hits));
        }
        offset += 8;
    }
    let tail = words.remainder();
    let pos = tail
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    Some(offset + pos)
}

#[cfg(test)]
mod tests;
