//! The JSON writer: every JSON text the core produces (the wire forms of
//! [`crate::json`], the stored token, audience and milestones files, the
//! status, the chat body) is written through [`JsonOut`], each type by its
//! own [`WriteJson`]. The counterpart of the reader ([`super::json`]).
//! Public as `onair::json::{JsonOut, WriteJson}`, for bindings that hand
//! values to another language as JSON.
//!
//! Its output is byte for byte what `serde_json` writes for the same value
//! (compact, the same string escapes, integers in decimal, floats by `zmij`,
//! which is `serde_json`'s float formatter): the types keep their derived
//! `Serialize` for Rust users, and the tests hold the two forms equal. The
//! core writes without serde because serde's per-type, per-serializer
//! monomorphized code was the largest part of the WebAssembly bot module
//! (33 KiB of 257; BENCHMARKS.md).

/// A type's JSON form, written into a [`JsonOut`]: the events, the REST
/// bodies, the kit's records, the status, and the wire-form wrappers of
/// [`crate::json`].
///
/// ```
/// use onair::event::User;
/// use onair::json::{JsonOut, WriteJson};
///
/// let user = User { id: "u1".into(), nickname: None };
/// let mut out = JsonOut::new();
/// user.write_json(&mut out);
/// assert_eq!(out.finish(), r#"{"id":"u1","nickname":null}"#);
/// ```
pub trait WriteJson {
    /// Writes the value as one JSON value.
    fn write_json(&self, out: &mut JsonOut);
}

/// A JSON text being written, left to right: the writer places the commas
/// and colons, the caller names keys and values in order.
///
/// Inside an object, every value is preceded by a [`key`](JsonOut::key);
/// inside an array, values follow one another. The writer does not check
/// the nesting: a caller that forgets a key or an `end_*` writes bad JSON.
///
/// ```
/// use onair::json::JsonOut;
///
/// let mut out = JsonOut::new();
/// out.begin_object();
/// out.key("ok").bool(true);
/// out.key("args").list(["a", "b\"c"]);
/// out.key("temperature").f64(36.5);
/// out.end_object();
/// assert_eq!(out.finish(), r#"{"ok":true,"args":["a","b\"c"],"temperature":36.5}"#);
/// ```
#[derive(Debug)]
pub struct JsonOut {
    text: String,
    /// A value was just completed: the next key or element needs a comma.
    comma: bool,
}

impl Default for JsonOut {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonOut {
    /// An empty text (with room for a short line, as serde_json starts).
    pub fn new() -> Self {
        Self::with_capacity(128)
    }

    /// A writer whose text will hold `capacity` bytes without growing (for
    /// secrets: growing would leave a copy behind in freed memory).
    pub fn with_capacity(capacity: usize) -> Self {
        JsonOut {
            text: String::with_capacity(capacity),
            comma: false,
        }
    }

    /// A writer that goes on at the end of `text` (a new value, no comma).
    pub fn after(text: String) -> Self {
        JsonOut { text, comma: false }
    }

    /// The text written.
    pub fn finish(self) -> String {
        self.text
    }

    /// `value`'s JSON text.
    pub fn text_of<T: WriteJson + ?Sized>(value: &T) -> String {
        let mut out = JsonOut::new();
        value.write_json(&mut out);
        out.finish()
    }

    fn separate(&mut self) {
        if self.comma {
            self.text.push(',');
        }
    }

    /// The start of a value: a comma when one precedes it.
    fn value(&mut self) -> &mut String {
        self.separate();
        self.comma = true;
        &mut self.text
    }

    /// `{`: members follow, each a [`key`](JsonOut::key) and a value.
    pub fn begin_object(&mut self) -> &mut Self {
        self.open('{')
    }

    /// `}`.
    pub fn end_object(&mut self) -> &mut Self {
        self.close('}')
    }

    /// `[`: values follow.
    pub fn begin_array(&mut self) -> &mut Self {
        self.open('[')
    }

    /// `]`.
    pub fn end_array(&mut self) -> &mut Self {
        self.close(']')
    }

    /// An object or array begins: a value, whose first member needs no comma.
    fn open(&mut self, bracket: char) -> &mut Self {
        self.separate();
        self.text.push(bracket);
        self.comma = false;
        self
    }

    /// It ends: the next member of what holds it needs a comma.
    fn close(&mut self, bracket: char) -> &mut Self {
        self.text.push(bracket);
        self.comma = true;
        self
    }

    /// The key of the next member of an object.
    pub fn key(&mut self, key: &str) -> &mut Self {
        self.separate();
        escaped(&mut self.text, key);
        self.text.push(':');
        self.comma = false;
        self
    }

    /// A string, escaped.
    pub fn str(&mut self, value: &str) -> &mut Self {
        escaped(self.value(), value);
        self
    }

    /// A whole number.
    pub fn u64(&mut self, value: u64) -> &mut Self {
        decimal(self.value(), value);
        self
    }

    /// A finite float as `serde_json` writes it (`36.5`, `1e+21`); `null`
    /// for NaN and the infinities, which JSON cannot hold.
    pub fn f64(&mut self, value: f64) -> &mut Self {
        let text = self.value();
        if value.is_finite() {
            text.push_str(zmij::Buffer::new().format_finite(value));
        } else {
            text.push_str("null");
        }
        self
    }

    /// `true` or `false`.
    pub fn bool(&mut self, value: bool) -> &mut Self {
        self.value().push_str(if value { "true" } else { "false" });
        self
    }

    /// `null`.
    pub fn null(&mut self) -> &mut Self {
        self.value().push_str("null");
        self
    }

    /// Any value with a JSON form.
    pub fn put<T: WriteJson + ?Sized>(&mut self, value: &T) -> &mut Self {
        value.write_json(self);
        self
    }

    /// An array of `items`: values or references (`&String`, `&str`, …).
    pub fn list<T: WriteJson>(&mut self, items: impl IntoIterator<Item = T>) -> &mut Self {
        self.begin_array();
        for item in items {
            item.write_json(self);
        }
        self.end_array()
    }
}

impl WriteJson for str {
    fn write_json(&self, out: &mut JsonOut) {
        out.str(self);
    }
}

impl WriteJson for String {
    fn write_json(&self, out: &mut JsonOut) {
        out.str(self);
    }
}

impl WriteJson for u64 {
    fn write_json(&self, out: &mut JsonOut) {
        out.u64(*self);
    }
}

impl WriteJson for f64 {
    fn write_json(&self, out: &mut JsonOut) {
        out.f64(*self);
    }
}

impl WriteJson for bool {
    fn write_json(&self, out: &mut JsonOut) {
        out.bool(*self);
    }
}

impl<T: WriteJson + ?Sized> WriteJson for &T {
    fn write_json(&self, out: &mut JsonOut) {
        (**self).write_json(out);
    }
}

/// `null` for `None`.
impl<T: WriteJson> WriteJson for Option<T> {
    fn write_json(&self, out: &mut JsonOut) {
        match self {
            Some(value) => value.write_json(out),
            None => {
                out.null();
            }
        }
    }
}

/// `value` as a JSON string: `"` and `\` escaped, control characters as
/// `\b \t \n \f \r` or `\u00XX` (lowercase hex), everything else as is.
/// The plain runs are found eight bytes at a time, as the reader finds them.
fn escaped(text: &mut String, value: &str) {
    text.push('"');
    let mut from = 0;
    while let Some(at) = super::json::string_end(value.as_bytes(), from) {
        // `at` holds an ASCII byte: both slices end on char boundaries.
        text.push_str(&value[from..at]);
        let byte = value.as_bytes()[at];
        match byte {
            b'"' => text.push_str("\\\""),
            b'\\' => text.push_str("\\\\"),
            0x08 => text.push_str("\\b"),
            b'\t' => text.push_str("\\t"),
            b'\n' => text.push_str("\\n"),
            0x0c => text.push_str("\\f"),
            b'\r' => text.push_str("\\r"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                text.push_str("\\u00");
                text.push(char::from(HEX[usize::from(byte >> 4)]));
                text.push(char::from(HEX[usize::from(byte & 0xf)]));
            }
        }
        from = at + 1;
    }
    text.push_str(&value[from..]);
    text.push('"');
}

/// `value` in decimal.
fn decimal(text: &mut String, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    for &digit in &digits[at..] {
        text.push(char::from(digit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn one<T: WriteJson + ?Sized>(value: &T) -> String {
        JsonOut::text_of(value)
    }

    #[test]
    fn objects_and_arrays_place_their_commas() {
        let mut out = JsonOut::new();
        out.begin_object();
        out.key("a").u64(1);
        out.key("b").begin_array().str("x").null().bool(true);
        out.begin_object().end_object();
        out.begin_array().end_array().end_array();
        out.key("c").begin_object().key("d").f64(36.5).end_object();
        out.key("e").list(["p", "q"]);
        out.key("f").list([Some(1u64), None]);
        out.end_object();
        assert_eq!(
            out.finish(),
            r#"{"a":1,"b":["x",null,true,{},[]],"c":{"d":36.5},"e":["p","q"],"f":[1,null]}"#
        );
    }

    #[test]
    fn floats_that_json_cannot_hold_are_null() {
        for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(one(&value), "null");
            assert_eq!(one(&value), serde_json::to_string(&value).unwrap());
        }
        assert_eq!(one(&-0.0f64), "-0.0");
        assert_eq!(one(&1e21f64), "1e+21");
    }

    #[test]
    fn every_control_character_and_both_specials_are_escaped_as_serde_json_does() {
        for byte in 0u8..=0x7f {
            let text = char::from(byte).to_string();
            assert_eq!(
                one(text.as_str()),
                serde_json::to_string(&text).unwrap(),
                "{byte:#x}"
            );
        }
    }

    proptest! {
        #[test]
        fn strings_are_written_as_serde_json_writes_them(text in any::<String>()) {
            prop_assert_eq!(one(text.as_str()), serde_json::to_string(&text).unwrap());
        }

        #[test]
        fn integers_are_written_as_serde_json_writes_them(value in any::<u64>()) {
            prop_assert_eq!(one(&value), serde_json::to_string(&value).unwrap());
        }

        #[test]
        fn floats_are_written_as_serde_json_writes_them(bits in any::<u64>()) {
            let value = f64::from_bits(bits);
            prop_assert_eq!(one(&value), serde_json::to_string(&value).unwrap());
        }
    }
}
