//! The one JSON reader of the core: a cursor over the text that every event
//! payload, REST body, token response and stored state is read with.
//!
//! Each type reads itself field by field with the cursor's primitives
//! (`object`, `string`, `u64`, …), which return `None` at the first thing
//! they cannot read; the cursor keeps the first [`Fault`] (where, and what
//! was expected) for the error. It accepts exactly RFC 8259 JSON: unknown
//! fields are skipped but checked, duplicate fields are refused, nesting is
//! bounded, numbers keep their exact value (tested against serde_json as an
//! oracle, and fuzzed by `fuzz/fast_json`).
//!
//! Why not serde: the per-type visitors serde derives are most of the code a
//! WebAssembly module carries for JSON (BENCHMARKS.md, "Where the bytes are
//! now": about 95 KB of reading became 25), and reading the documented
//! shapes directly is about twice as fast.

use std::borrow::Cow;
use std::fmt;

use crate::swar;

/// A cursor over JSON text. Every method returns `None` on anything it
/// cannot read, after recording why ([`Json::fault`]).
pub(crate) struct Json<'a> {
    text: &'a str,
    at: usize,
    /// Objects and arrays open around the cursor.
    depth: usize,
    fault: Option<Fault>,
}

/// Why and where reading stopped: the first problem met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fault {
    /// Byte offset in the text.
    pub(crate) at: usize,
    /// What was wrong there.
    pub(crate) what: What,
}

/// What a [`Fault`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum What {
    /// The text is not JSON here (the `&str` says what was wanted).
    Syntax(&'static str),
    /// JSON, but not the type this field needs.
    Expected(&'static str),
    /// A required field is absent.
    Missing(&'static str),
    /// A field is given twice.
    Duplicate(&'static str),
    /// A field's value is out of its range or otherwise refused.
    Invalid(&'static str),
}

impl Fault {
    /// Whether the text is not JSON at all (rather than JSON of another shape).
    pub(crate) fn is_syntax(self) -> bool {
        matches!(self.what, What::Syntax(_))
    }

    /// 1-based line and column (in bytes) of the fault in `text`.
    pub(crate) fn line_column(self, text: &[u8]) -> (usize, usize) {
        let before = text.get(..self.at).unwrap_or(text);
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        (line, self.at - line_start + 1)
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.what {
            What::Syntax(wanted) => write!(f, "invalid JSON: expected {wanted}")?,
            What::Expected(wanted) => write!(f, "expected {wanted}")?,
            What::Missing(field) => write!(f, "missing field `{field}`")?,
            What::Duplicate(field) => write!(f, "duplicate field `{field}`")?,
            What::Invalid(why) => f.write_str(why)?,
        }
        write!(f, " at byte {}", self.at)
    }
}

/// Reads a whole document: `read` from the start, then only whitespace.
pub(crate) fn read<'a, T>(
    text: &'a str,
    read: impl FnOnce(&mut Json<'a>) -> Option<T>,
) -> Result<T, Fault> {
    let mut json = Json::new(text);
    match read(&mut json).and_then(|value| json.end().map(|()| value)) {
        Some(value) => Ok(value),
        None => Err(json.fault()),
    }
}

/// [`read`] over bytes, which must be UTF-8.
pub(crate) fn read_bytes<'a, T>(
    bytes: &'a [u8],
    read_value: impl FnOnce(&mut Json<'a>) -> Option<T>,
) -> Result<T, Fault> {
    match std::str::from_utf8(bytes) {
        Ok(text) => read(text, read_value),
        Err(e) => Err(Fault {
            at: e.valid_up_to(),
            what: What::Syntax("UTF-8 text"),
        }),
    }
}

/// Sorts a reader's fault: `Ok` when the text is JSON of another shape
/// (the fault itself), `Err` with the text's syntax fault when it is not
/// JSON at all (a reader stops at the first problem, which may be a wrong
/// type before the broken part).
pub(crate) fn shape_or_syntax(text: &[u8], fault: Fault) -> Result<Fault, Fault> {
    if fault.is_syntax() {
        return Err(fault);
    }
    read_bytes(text, Json::skip).map(|()| fault)
}

/// Why a stored document (token file, kit state) was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoredRefusal {
    /// Not JSON of the expected shape, at this 1-based line and column.
    Json { line: usize, column: usize },
    /// `format` is missing or names another kind of document.
    UnknownFormat,
    /// `version` is missing.
    MissingVersion,
    /// A `version` this build does not read.
    UnsupportedVersion(u64),
}

/// Reads a stored document: its `format` and `version` first, checked
/// against what this build writes, so that a document of another kind or a
/// newer version is told apart from a broken one; then the whole document
/// with `read`.
pub(crate) fn read_stored<'a, T>(
    bytes: &'a [u8],
    format: &str,
    version: u32,
    read: impl FnOnce(&mut Json<'a>) -> Option<T>,
) -> Result<T, StoredRefusal> {
    let json_error = |fault: Fault| {
        let (line, column) = fault.line_column(bytes);
        StoredRefusal::Json { line, column }
    };
    let (found_format, found_version) = read_bytes(bytes, |json| {
        let (mut format, mut version) = (None, None);
        json.object(&mut |json, key| match key {
            b"format" => field(json, &mut format, "format", Json::nullable_string),
            b"version" => field(json, &mut version, "version", |json| {
                json.nullable(Json::u64)
            }),
            _ => json.skip(),
        })?;
        Some((format.flatten(), version.flatten()))
    })
    .map_err(json_error)?;
    if found_format.as_deref() != Some(format) {
        return Err(StoredRefusal::UnknownFormat);
    }
    match found_version {
        Some(v) if v == u64::from(version) => {}
        Some(found) => return Err(StoredRefusal::UnsupportedVersion(found)),
        None => return Err(StoredRefusal::MissingVersion),
    }
    read_bytes(bytes, read).map_err(json_error)
}

/// Reads a field's value with `read` into its slot; a second value for the
/// same field is a duplicate.
pub(crate) fn field<'a, T>(
    json: &mut Json<'a>,
    slot: &mut Option<T>,
    name: &'static str,
    read: impl FnOnce(&mut Json<'a>) -> Option<T>,
) -> Option<()> {
    if slot.is_some() {
        return json.fail(What::Duplicate(name));
    }
    *slot = Some(read(json)?);
    Some(())
}

/// A required field's value, or the fault that it is missing.
pub(crate) fn need<T>(json: &mut Json<'_>, slot: Option<T>, field: &'static str) -> Option<T> {
    match slot {
        Some(value) => Some(value),
        None => json.fail(What::Missing(field)),
    }
}

impl<'a> Json<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Json {
            text,
            at: 0,
            depth: 0,
            fault: None,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The first fault met (a generic syntax fault at the cursor if none
    /// was recorded).
    pub(crate) fn fault(&self) -> Fault {
        self.fault.unwrap_or(Fault {
            at: self.at,
            what: What::Syntax("a value"),
        })
    }

    /// Records `what` at the cursor (the first fault wins) and fails.
    pub(crate) fn fail<T>(&mut self, what: What) -> Option<T> {
        self.record(what);
        None
    }

    /// [`fail`](Json::fail)'s one copy, out of line: it is generic over what
    /// the caller returns and inlined into every reader, and the record
    /// written in place was 2.7 KB of the WASM bot module.
    #[cold]
    #[inline(never)]
    fn record(&mut self, what: What) {
        if self.fault.is_none() {
            self.fault = Some(Fault { at: self.at, what });
        }
    }

    fn syntax<T>(&mut self, wanted: &'static str) -> Option<T> {
        self.fail(What::Syntax(wanted))
    }

    /// Fails with "expected `wanted`" when the next value is JSON of another
    /// type, with a syntax fault when it is not JSON.
    fn expected<T>(&mut self, wanted: &'static str) -> Option<T> {
        match self.peek() {
            Some(b'"' | b'{' | b'[' | b't' | b'f' | b'n' | b'-' | b'0'..=b'9') => {
                self.fail(What::Expected(wanted))
            }
            _ => self.syntax("a value"),
        }
    }

    /// The next byte after whitespace (not consumed).
    pub(crate) fn peek(&mut self) -> Option<u8> {
        while let Some(&byte) = self.bytes().get(self.at) {
            if !matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    /// Consumes `literal` when the text continues with exactly it (no
    /// fault: a template's miss is not an error).
    pub(crate) fn after(&mut self, literal: &[u8]) -> Option<()> {
        let end = self.at + literal.len();
        (self.bytes().get(self.at..end)? == literal).then(|| self.at = end)
    }

    fn eat(&mut self, byte: u8, wanted: &'static str) -> Option<()> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Some(())
        } else {
            self.syntax(wanted)
        }
    }

    /// Only whitespace may follow the value.
    pub(crate) fn end(&mut self) -> Option<()> {
        match self.peek() {
            None => Some(()),
            Some(_) => self.syntax("the end of the text"),
        }
    }

    /// Reads an object, calling `field` with each key, positioned at its
    /// value (which `field` must read or [`skip`](Json::skip)). One copy
    /// for every caller (`field` is called through a pointer).
    pub(crate) fn object(
        &mut self,
        field: &mut dyn FnMut(&mut Self, &[u8]) -> Option<()>,
    ) -> Option<()> {
        self.object_inlined(field)
    }

    /// [`object`](Json::object) compiled for each caller, its `match` on
    /// keys inlined: for the stream's events and skipped values, where the
    /// call through a pointer costs 15 % of the typed race (1.72–1.75 vs
    /// 1.44–1.51 ms, BENCHMARKS.md).
    pub(crate) fn object_inlined(
        &mut self,
        mut field: impl FnMut(&mut Self, &[u8]) -> Option<()>,
    ) -> Option<()> {
        if self.peek() != Some(b'{') {
            return self.expected("an object");
        }
        self.enter()?;
        if self.peek() == Some(b'}') {
            self.at += 1;
            self.depth -= 1;
            return Some(());
        }
        // Written out, not shared with `array` through helpers: the
        // shared form measured 1.68-1.79 ms on the typed race, this one
        // 1.43-1.45 (3.2x sse-stream, issue 17 asks 3x).
        loop {
            if self.peek() != Some(b'"') {
                return self.syntax("a key");
            }
            let key = self.key()?;
            self.eat(b':', "`:`")?;
            field(self, key.as_bytes())?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return self.syntax("`,` or `}`"),
            }
        }
    }

    /// Reads an array whose elements `read` reads.
    pub(crate) fn list<T>(
        &mut self,
        mut read: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<Vec<T>> {
        let mut out = Vec::new();
        self.array(&mut |json| {
            out.push(read(json)?);
            Some(())
        })?;
        Some(out)
    }

    /// An owned string.
    pub(crate) fn owned_string(&mut self) -> Option<String> {
        Some(self.string()?.into_owned())
    }

    /// Reads an array, calling `element` positioned at each element.
    fn array(&mut self, element: &mut dyn FnMut(&mut Self) -> Option<()>) -> Option<()> {
        if self.peek() != Some(b'[') {
            return self.expected("an array");
        }
        self.enter()?;
        if self.peek() == Some(b']') {
            self.at += 1;
            self.depth -= 1;
            return Some(());
        }
        loop {
            element(self)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return self.syntax("`,` or `]`"),
            }
        }
    }

    /// Steps into an object or array (at its opening byte), within the
    /// nesting bound.
    fn enter(&mut self) -> Option<()> {
        if self.depth >= MAX_DEPTH {
            return self.fail(What::Invalid("nested too deep"));
        }
        self.depth += 1;
        self.at += 1;
        Some(())
    }

    /// A string value, borrowed when it has no escapes.
    pub(crate) fn string(&mut self) -> Option<Cow<'a, str>> {
        self.string_as(false)
    }

    /// An object's key: as [`string`](Json::string), but a lone surrogate
    /// reads as U+FFFD instead of failing. A key is only compared with the
    /// names of known fields, and an unknown key of valid JSON is skipped.
    fn key(&mut self) -> Option<Cow<'a, str>> {
        self.string_as(true)
    }

    fn string_as(&mut self, lossy: bool) -> Option<Cow<'a, str>> {
        if self.peek() != Some(b'"') {
            return self.expected("a string");
        }
        self.at += 1;
        let start = self.at;
        let (end, escaped) = self.string_end(start)?;
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
            let Some(&escape) = self.bytes().get(self.at) else {
                return self.syntax("an escape");
            };
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
                b'u' => out.push(self.unicode_escape(lossy)?),
                _ => {
                    self.at -= 1;
                    return self.syntax("an escape");
                }
            }
            let from = self.at;
            let (end, escaped) = self.string_end(from)?;
            out.push_str(self.text.get(from..end)?);
            self.at = end;
            if !escaped {
                self.at += 1;
                return Some(Cow::Owned(out));
            }
        }
    }

    /// An owned string, or `None` for `null` (`Some(None)`).
    pub(crate) fn nullable_string(&mut self) -> Option<Option<String>> {
        self.nullable(|json| Some(json.string()?.into_owned()))
    }

    /// The character of a `\uXXXX` escape (after the `u`), joining a
    /// surrogate pair. A lone surrogate is no character: refused, or U+FFFD
    /// when `lossy` (then an escape after it is read on its own).
    fn unicode_escape(&mut self, lossy: bool) -> Option<char> {
        let high = self.hex4()?;
        if !(0xD800..0xE000).contains(&high) {
            return char::from_u32(high);
        }
        let after_high = self.at;
        if high < 0xDC00 && self.bytes().get(self.at..self.at + 2) == Some(b"\\u") {
            self.at += 2;
            let low = self.hex4()?;
            if (0xDC00..0xE000).contains(&low) {
                return char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00));
            }
            self.at = after_high;
        }
        if lossy {
            Some(char::REPLACEMENT_CHARACTER)
        } else {
            self.fail(What::Invalid("a lone surrogate in a string"))
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let value = self.bytes().get(self.at..self.at + 4).and_then(|digits| {
            digits.iter().try_fold(0u32, |acc, &d| {
                let value = char::from(d).to_digit(16)?;
                Some(acc << 4 | value)
            })
        });
        match value {
            Some(value) => {
                self.at += 4;
                Some(value)
            }
            None => self.syntax("four hex digits"),
        }
    }

    pub(crate) fn bool(&mut self) -> Option<bool> {
        if self.literal("true") {
            Some(true)
        } else if self.literal("false") {
            Some(false)
        } else {
            self.expected("a boolean")
        }
    }

    /// `null` as `Some(None)`, else the value `read` reads.
    pub(crate) fn nullable<T>(
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

    /// A non-negative integer in plain form (no fraction or exponent),
    /// within `u64`.
    pub(crate) fn u64(&mut self) -> Option<u64> {
        if !matches!(self.peek(), Some(b'0'..=b'9')) {
            return self.expected("a whole number");
        }
        let start = self.at;
        let digits = self.digits();
        if self.number_goes_on() || (digits.len() > 1 && digits[0] == b'0') {
            self.at = start;
            self.skip_number()?;
            self.at = start;
            return self.fail(What::Expected("a whole number"));
        }
        let value = digits.iter().try_fold(0u64, |acc, &d| {
            acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        });
        if value.is_none() {
            self.at = start;
            return self.fail(What::Invalid("a number too large"));
        }
        value
    }

    /// Whether a fraction or an exponent follows the digits just read.
    fn number_goes_on(&self) -> bool {
        matches!(self.bytes().get(self.at), Some(b'.' | b'e' | b'E'))
    }

    /// Any finite JSON number, as the nearest `f64`.
    pub(crate) fn f64(&mut self) -> Option<f64> {
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => {}
            _ => return self.expected("a number"),
        }
        let start = self.at;
        if let Some(value) = self.short_f64() {
            return Some(value);
        }
        self.at = start;
        self.skip_number()?;
        match super::decimal::nearest(self.bytes().get(start..self.at)?) {
            Some(value) => Some(value),
            None => {
                self.at = start;
                self.fail(What::Invalid("a number out of range"))
            }
        }
    }

    /// A number with at most 15 significant digits and no exponent, exactly
    /// (`significand / 10^k`: both exact, one rounding); `None` for others.
    fn short_f64(&mut self) -> Option<f64> {
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

    /// Skips any one value (an unknown field's), checked: the text must be
    /// JSON, though any number and any escape will do.
    pub(crate) fn skip(&mut self) -> Option<()> {
        match self.peek() {
            Some(b'"') => self.skip_string(),
            Some(b't') if self.literal("true") => Some(()),
            Some(b'f') if self.literal("false") => Some(()),
            Some(b'n') if self.literal("null") => Some(()),
            Some(b'-' | b'0'..=b'9') => self.skip_number(),
            Some(b'{') => self.object_inlined(|json, _| json.skip()),
            Some(b'[') => self.array(&mut Json::skip),
            _ => self.syntax("a value"),
        }
    }

    /// A string checked but not decoded: valid escapes, four hex digits
    /// after `\u` (a lone surrogate is fine in a skipped value), no control
    /// bytes.
    fn skip_string(&mut self) -> Option<()> {
        self.at += 1;
        loop {
            let (end, escaped) = self.string_end(self.at)?;
            self.at = end + 1;
            if !escaped {
                return Some(());
            }
            match self.bytes().get(self.at) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.at += 1,
                Some(b'u') => {
                    self.at += 1;
                    self.hex4()?;
                }
                _ => return self.syntax("an escape"),
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
            return self.syntax("a number");
        }
        if self.bytes().get(self.at) == Some(&b'.') {
            self.at += 1;
            if self.digits().is_empty() {
                return self.syntax("a digit");
            }
        }
        if matches!(self.bytes().get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.bytes().get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if self.digits().is_empty() {
                return self.syntax("a digit");
            }
        }
        Some(())
    }

    /// From just inside a string at `from`: the position of the byte that
    /// ends its plain run (a quote, or a backslash: `true`). A control
    /// character, or no end, is not a JSON string.
    fn string_end(&mut self, from: usize) -> Option<(usize, bool)> {
        let end = string_end(self.bytes(), from);
        match end.and_then(|at| match self.bytes().get(at) {
            Some(b'"') => Some((at, false)),
            Some(b'\\') => Some((at, true)),
            _ => None,
        }) {
            Some(found) => Some(found),
            None => {
                self.at = end.unwrap_or(self.text.len());
                self.syntax("a closing quote (control characters must be escaped)")
            }
        }
    }
}

/// Nesting of objects and arrays read, counted from the document's top:
/// deeper input is refused, never a stack overflow. No body of the service
/// nests more than three deep; serde_json's `Value` stops at 127.
const MAX_DEPTH: usize = 128;

/// Powers of ten that are exact in `f64`.
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// The position of the first quote, backslash or control byte at or after
/// `from`, eight bytes at a time: where a JSON string's plain run ends, for
/// the reader and for the writer (`write::escaped`) alike.
pub(super) fn string_end(bytes: &[u8], from: usize) -> Option<usize> {
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
