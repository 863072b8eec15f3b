//! HTTP response headers as the caller has them: a slice of (name, value)
//! pairs.
//!
//! Every binding can build such a slice without copying: C passes
//! (pointer, length) pairs, WASM passes strings, Rust passes whatever its HTTP
//! client exposes. Names compare ASCII case-insensitively; values are bytes,
//! because a server may send bytes that are not UTF-8 (they are never a panic,
//! just a value the parsers ignore).

/// One response header: a name and a value, as bytes or strings.
///
/// Implemented for `(&str, &str)`, `(String, String)`, `(&[u8], &[u8])` and
/// `(Vec<u8>, Vec<u8>)`, so a `&[(&str, &str)]` works everywhere a header list
/// is taken.
///
/// ```
/// use onair::header::{find, Header};
///
/// let headers = [("Retry-After", "30"), ("X-RateLimit-Remaining", "0")];
/// assert_eq!(find(&headers, "retry-after"), Some(&b"30"[..]));
/// assert_eq!(find(&headers, "x-ratelimit-burst-capacity"), None);
/// ```
pub trait Header {
    /// The header name (any case).
    fn name(&self) -> &[u8];
    /// The header value, as received.
    fn value(&self) -> &[u8];
}

impl Header for (&str, &str) {
    fn name(&self) -> &[u8] {
        self.0.as_bytes()
    }
    fn value(&self) -> &[u8] {
        self.1.as_bytes()
    }
}

impl Header for (String, String) {
    fn name(&self) -> &[u8] {
        self.0.as_bytes()
    }
    fn value(&self) -> &[u8] {
        self.1.as_bytes()
    }
}

impl Header for (&[u8], &[u8]) {
    fn name(&self) -> &[u8] {
        self.0
    }
    fn value(&self) -> &[u8] {
        self.1
    }
}

impl Header for (Vec<u8>, Vec<u8>) {
    fn name(&self) -> &[u8] {
        &self.0
    }
    fn value(&self) -> &[u8] {
        &self.1
    }
}

/// The value of the first header named `name` (ASCII case-insensitive).
///
/// The first one wins when a name repeats, so a later duplicate cannot
/// override what the gateway sent first.
pub fn find<'h, H: Header>(headers: &'h [H], name: &str) -> Option<&'h [u8]> {
    headers
        .iter()
        .find(|h| h.name().eq_ignore_ascii_case(name.as_bytes()))
        .map(Header::value)
}

/// A header value with optional whitespace (space, tab) trimmed at both ends.
pub(crate) fn trim_ows(value: &[u8]) -> &[u8] {
    let start = value
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t'))
        .map_or(start, |i| i + 1);
    value.get(start..end).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_case_insensitive_and_first_wins() {
        let headers = [("retry-after", "1"), ("RETRY-AFTER", "2")];
        assert_eq!(find(&headers, "Retry-After"), Some(&b"1"[..]));
        let owned = vec![("A".to_owned(), "x".to_owned())];
        assert_eq!(find(&owned, "a"), Some(&b"x"[..]));
        let bytes: [(&[u8], &[u8]); 1] = [(b"a", b"\xff")];
        assert_eq!(find(&bytes, "A"), Some(&b"\xff"[..]));
    }

    #[test]
    fn trims_optional_whitespace() {
        assert_eq!(trim_ows(b" \t 30 \t"), b"30");
        assert_eq!(trim_ows(b"   "), b"");
        assert_eq!(trim_ows(b""), b"");
        assert_eq!(trim_ows(b"a b"), b"a b");
    }
}
