//! The JSON cursor the fast reader is built on: exact where it answers,
//! `None` (leave it to serde) wherever serde_json's answer is in doubt.

use std::borrow::Cow;

use crate::time::Timestamp;

/// A cursor over JSON text. Every method returns `None` on anything it does
/// not read exactly as serde_json would.
pub(super) struct Json<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Json<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Json { text, at: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte after whitespace (not consumed).
    fn peek(&mut self) -> Option<u8> {
        while let Some(&byte) = self.bytes().get(self.at) {
            if !matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    /// Consumes `literal` when the text continues with exactly it.
    pub(super) fn after(&mut self, literal: &[u8]) -> Option<()> {
        let end = self.at + literal.len();
        (self.bytes().get(self.at..end)? == literal).then(|| self.at = end)
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Only whitespace may follow the value.
    pub(super) fn end(&mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }

    /// Reads an object, calling `field` with each key (its raw text; a key
    /// with an escape ends the fast path) positioned at the value.
    pub(super) fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, &[u8]) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            self.eat(b'"')?;
            let start = self.at;
            let (end, escaped) = string_end(self.bytes(), start)?;
            if escaped {
                return None;
            }
            let key = self.bytes().get(start..end)?;
            self.at = end + 1;
            self.eat(b':')?;
            field(self, key)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string value, borrowed when it has no escapes.
    pub(super) fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let start = self.at;
        let (end, escaped) = string_end(self.bytes(), start)?;
        if !escaped {
            self.at = end + 1;
            return self.text.get(start..end).map(Cow::Borrowed);
        }
        let mut out = String::with_capacity(end - start + 16);
        out.push_str(self.text.get(start..end)?);
        self.at = end;
        loop {
            // At a backslash.
            self.at += 1;
            let escape = *self.bytes().get(self.at)?;
            self.at += 1;
            match escape {
                b'"' => out.push('"'),
                b'\\' => out.push('\\'),
                b'/' => out.push('/'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'n' => out.push('\n'),
                b'r' => out.push('\r'),
                b't' => out.push('\t'),
                b'u' => out.push(self.unicode_escape()?),
                _ => return None,
            }
            let from = self.at;
            let (end, escaped) = string_end(self.bytes(), from)?;
            out.push_str(self.text.get(from..end)?);
            self.at = end;
            if !escaped {
                self.at += 1;
                return Some(Cow::Owned(out));
            }
        }
    }

    /// The character of a `\uXXXX` escape (after the `u`), joining a surrogate
    /// pair; a lone surrogate ends the fast path (serde rejects it).
    fn unicode_escape(&mut self) -> Option<char> {
        let high = self.hex4()?;
        if !(0xD800..0xDC00).contains(&high) {
            return char::from_u32(high);
        }
        if self.bytes().get(self.at..self.at + 2)? != b"\\u" {
            return None;
        }
        self.at += 2;
        let low = self.hex4()?;
        if !(0xDC00..0xE000).contains(&low) {
            return None;
        }
        char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes().get(self.at..self.at + 4)?;
        self.at += 4;
        digits.iter().try_fold(0u32, |acc, &d| {
            let value = char::from(d).to_digit(16)?;
            Some(acc << 4 | value)
        })
    }

    pub(super) fn timestamp(&mut self) -> Option<Timestamp> {
        Some(Timestamp::new(self.string()?))
    }

    pub(super) fn bool(&mut self) -> Option<bool> {
        if self.literal("true") {
            Some(true)
        } else if self.literal("false") {
            Some(false)
        } else {
            None
        }
    }

    /// `null` as `Some(None)`, else the value `read` reads.
    pub(super) fn nullable<T>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<Option<T>> {
        if self.literal("null") {
            return Some(None);
        }
        read(self).map(Some)
    }

    /// Consumes `word` when it comes next and is not run into more letters.
    fn literal(&mut self, word: &str) -> bool {
        if self.peek().is_none() {
            return false;
        }
        let end = self.at + word.len();
        let matches = self.bytes().get(self.at..end) == Some(word.as_bytes())
            && !self.bytes().get(end).is_some_and(u8::is_ascii_alphanumeric);
        if matches {
            self.at = end;
        }
        matches
    }

    /// A non-negative integer in plain form (`0` or no leading zero, no
    /// fraction or exponent), within `u64`.
    pub(super) fn u64(&mut self) -> Option<u64> {
        self.peek()?;
        let digits = self.digits();
        let value = match digits {
            [] => return None,
            [b'0', _, ..] => return None,
            _ => digits.iter().try_fold(0u64, |acc, &d| {
                acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
            })?,
        };
        if matches!(self.bytes().get(self.at), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(value)
    }

    /// A number with at most 15 significant digits and no exponent, computed
    /// as serde_json does for that case (`significand / 10^k`, one rounding).
    pub(super) fn f64(&mut self) -> Option<f64> {
        self.peek()?;
        let negative = self.bytes().get(self.at) == Some(&b'-');
        if negative {
            self.at += 1;
        }
        let whole = self.digits();
        if whole.is_empty() || (whole.len() > 1 && whole[0] == b'0') {
            return None;
        }
        let fraction = if self.bytes().get(self.at) == Some(&b'.') {
            self.at += 1;
            let fraction = self.digits();
            if fraction.is_empty() {
                return None;
            }
            fraction
        } else {
            &[]
        };
        if matches!(self.bytes().get(self.at), Some(b'e' | b'E'))
            || whole.len() + fraction.len() > 15
        {
            return None;
        }
        let significand = whole
            .iter()
            .chain(fraction)
            .fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
        // Exact: significand < 10^15 < 2^53, and 10^k for k <= 15 is exact.
        let value = significand as f64 / POW10[fraction.len()];
        Some(if negative { -value } else { value })
    }

    fn digits(&mut self) -> &'a [u8] {
        let bytes = self.bytes();
        let start = self.at;
        while bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        &bytes[start..self.at]
    }

    /// Skips an unknown field's value, checked as serde checks a value it
    /// ignores (grammar only: any number, any escape).
    pub(super) fn skip(&mut self) -> Option<()> {
        self.skip_nested(0)
    }

    fn skip_nested(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b't' | b'f' => self.bool().map(drop),
            b'n' => self.literal("null").then_some(()),
            b'-' | b'0'..=b'9' => self.skip_number(),
            // Deeper nesting is left to serde and its recursion limit.
            _ if depth >= MAX_SKIP_DEPTH => None,
            b'{' => self.object(|json, _| json.skip_nested(depth + 1)),
            b'[' => self.skip_array(depth + 1),
            _ => None,
        }
    }

    /// A string checked as serde checks one it ignores: valid escapes, four
    /// hex digits after `\u` (a lone surrogate is fine), no control bytes.
    fn skip_string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            let (end, escaped) = string_end(self.bytes(), self.at)?;
            self.at = end + 1;
            if !escaped {
                return Some(());
            }
            match *self.bytes().get(self.at)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
                b'u' => {
                    self.at += 1;
                    self.hex4()?;
                }
                _ => return None,
            }
        }
    }

    fn skip_array(&mut self, depth: usize) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            self.skip_nested(depth)?;
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A JSON number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn skip_number(&mut self) -> Option<()> {
        if self.bytes().get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let whole = self.digits();
        if whole.is_empty() || (whole.len() > 1 && whole[0] == b'0') {
            return None;
        }
        if self.bytes().get(self.at) == Some(&b'.') {
            self.at += 1;
            if self.digits().is_empty() {
                return None;
            }
        }
        if matches!(self.bytes().get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.bytes().get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if self.digits().is_empty() {
                return None;
            }
        }
        Some(())
    }
}

/// Nesting of an unknown field's value read here (serde allows up to 128).
const MAX_SKIP_DEPTH: usize = 16;

/// Powers of ten that are exact in `f64`.
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// From just inside a string at `from`: the position of the byte that ends
/// its plain run (a quote, or a backslash: `true`). A control character, or
/// no end, is not a string serde accepts.
fn string_end(bytes: &[u8], from: usize) -> Option<(usize, bool)> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_ne_bytes([b'"'; 8]);
    const BACKSLASHES: u64 = u64::from_ne_bytes([b'\\'; 8]);
    const SPACES: u64 = u64::from_ne_bytes([0x20; 8]);
    let rest = bytes.get(from..)?;
    let mut words = rest.chunks_exact(8);
    let mut offset = from;
    for word in &mut words {
        let mut le = [0u8; 8];
        le.copy_from_slice(word);
        let word = u64::from_le_bytes(le);
        let (quote, backslash) = (word ^ QUOTES, word ^ BACKSLASHES);
        // Lowest set high bit = first quote, backslash or byte below 0x20
        // (borrows only run upward, so the lowest hit is exact).
        let hits = (quote.wrapping_sub(ONES) & !quote
            | backslash.wrapping_sub(ONES) & !backslash
            | word.wrapping_sub(SPACES) & !word)
            & HIGHS;
        if hits != 0 {
            return classify(bytes, offset + (hits.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    let tail = words.remainder();
    let pos = tail
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    classify(bytes, offset + pos)
}

fn classify(bytes: &[u8], at: usize) -> Option<(usize, bool)> {
    match bytes.get(at)? {
        b'"' => Some((at, false)),
        b'\\' => Some((at, true)),
        _ => None,
    }
}
