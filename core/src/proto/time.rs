//! The service's timestamps and stream frame ids, kept as sent and parsed on demand.
//!
//! Timestamps are ISO-8601 UTC with a trailing `Z` and any number of
//! fractional-second digits (spec 2). A [`Timestamp`] keeps the wire string, so a
//! bot can log or echo it verbatim, and parses it only when asked.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::wire::{ShortText, StrVisitor};

/// An ISO-8601 timestamp as the service sent it.
///
/// ```
/// use onair::Timestamp;
///
/// let t = Timestamp::new("2024-11-22T04:33:20.123456789Z");
/// assert_eq!(t.unix_ms(), Some(1_732_250_000_123));
/// assert_eq!(t.as_str(), "2024-11-22T04:33:20.123456789Z");
/// assert_eq!(Timestamp::new("yesterday").unix_ms(), None);
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
pub struct Timestamp(ShortText);

/// A string, as on the wire.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

impl Timestamp {
    /// Wraps a wire string; nothing is validated until you parse it.
    pub fn new(wire: impl AsRef<str>) -> Self {
        Self(ShortText::new(wire.as_ref()))
    }

    /// The string exactly as received.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Unix time in milliseconds (fraction truncated), or `None` when the string
    /// is not an RFC 3339 / ISO-8601 date-time with `Z` or a numeric offset.
    pub fn unix_ms(&self) -> Option<i64> {
        let nanos = self.unix_nanos()?;
        i64::try_from(nanos.div_euclid(1_000_000)).ok()
    }

    /// Unix time in nanoseconds (digits past the ninth are truncated).
    pub fn unix_nanos(&self) -> Option<i128> {
        parse_rfc3339_nanos(self.as_str().as_bytes())
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor(|s: &str| Timestamp::new(s)))
    }
}

/// A stream frame id, `<epochMillis>-<offset>` on this service (spec 4.6).
///
/// ```
/// use onair::FrameId;
///
/// let id = FrameId::new("1732250000000-17");
/// assert_eq!(id.parts(), Some((1_732_250_000_000, 17)));
/// assert_eq!(FrameId::new("abc").parts(), None);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
pub struct FrameId(ShortText);

/// A string, as on the wire.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for FrameId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FrameId".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

impl FrameId {
    /// Wraps an id as it appeared on the `id:` line.
    pub fn new(raw: impl AsRef<str>) -> Self {
        Self(ShortText::new(raw.as_ref()))
    }

    /// The id exactly as received.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// `(epoch_millis, offset)` when the id has the service's form.
    pub fn parts(&self) -> Option<(u64, u64)> {
        let (ms, offset) = self.as_str().split_once('-')?;
        Some((parse_digits(ms)?, parse_digits(offset)?))
    }
}

impl fmt::Debug for FrameId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for FrameId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FrameId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FrameId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor(|s: &str| FrameId::new(s)))
    }
}

/// A non-empty run of ASCII digits as `u64` (no sign, no overflow).
fn parse_digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A unix-ms instant as an HTTP date (`Sun, 29 Nov 2026 00:00:00 GMT`), for
/// log lines; `httpdate` writes it.
pub(crate) fn utc(ms: u64) -> String {
    let at = std::time::UNIX_EPOCH
        .checked_add(std::time::Duration::from_millis(ms))
        .unwrap_or(std::time::UNIX_EPOCH);
    httpdate::fmt_http_date(at)
}

pub(crate) fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// A cursor over ASCII bytes for the fixed-width fields of a date-time.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn number(&mut self, width: usize) -> Option<u32> {
        let digits = self.bytes.get(self.pos..self.pos + width)?;
        self.pos += width;
        digits.iter().try_fold(0u32, |acc, &b| {
            b.is_ascii_digit().then(|| acc * 10 + u32::from(b - b'0'))
        })
    }

    fn expect(&mut self, allowed: &[u8]) -> Option<u8> {
        let b = *self.bytes.get(self.pos)?;
        self.pos += 1;
        allowed.contains(&b).then_some(b)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }
}

fn parse_rfc3339_nanos(bytes: &[u8]) -> Option<i128> {
    let mut c = Cursor { bytes, pos: 0 };
    let year = i64::from(c.number(4)?);
    c.expect(b"-")?;
    let month = c.number(2)?;
    c.expect(b"-")?;
    let day = c.number(2)?;
    c.expect(b"Tt ")?;
    let hour = c.number(2)?;
    c.expect(b":")?;
    let minute = c.number(2)?;
    c.expect(b":")?;
    let second = c.number(2)?;
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut nanos: i128 = 0;
    if matches!(c.peek(), Some(b'.' | b',')) {
        c.pos += 1;
        let start = c.pos;
        let mut scale = 100_000_000i128;
        while let Some(b) = c.peek().filter(u8::is_ascii_digit) {
            nanos += i128::from(b - b'0') * scale;
            scale /= 10;
            c.pos += 1;
        }
        if c.pos == start {
            return None;
        }
    }
    let offset_secs: i64 = match c.expect(b"Zz+-")? {
        b'Z' | b'z' => 0,
        sign => {
            let oh = c.number(2)?;
            c.expect(b":")?;
            let om = c.number(2)?;
            if oh > 23 || om > 59 {
                return None;
            }
            let secs = i64::from(oh * 3600 + om * 60);
            if sign == b'+' {
                secs
            } else {
                -secs
            }
        }
    };
    if c.pos != bytes.len() {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second) - offset_secs;
    Some(i128::from(secs) * 1_000_000_000 + nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> Option<i64> {
        Timestamp::new(s).unix_ms()
    }

    #[test]
    fn any_count_of_fraction_digits() {
        let base = 1_732_250_000_000;
        assert_eq!(ms("2024-11-22T04:33:20Z"), Some(base));
        assert_eq!(ms("2024-11-22T04:33:20.1Z"), Some(base + 100));
        assert_eq!(ms("2024-11-22T04:33:20.123Z"), Some(base + 123));
        assert_eq!(ms("2024-11-22T04:33:20.123456Z"), Some(base + 123));
        assert_eq!(ms("2024-11-22T04:33:20.123456789Z"), Some(base + 123));
        assert_eq!(ms("2024-11-22T04:33:20.1234567891234Z"), Some(base + 123));
        assert_eq!(
            Timestamp::new("2024-11-22T04:33:20.123456789Z").unix_nanos(),
            Some(1_732_250_000_123_456_789)
        );
    }

    #[test]
    fn offsets_and_epoch() {
        assert_eq!(ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(ms("1970-01-01T09:00:00+09:00"), Some(0));
        assert_eq!(ms("1969-12-31T23:59:59.5Z"), Some(-500));
        assert_eq!(ms("2000-02-29T00:00:00z"), Some(951_782_400_000));
    }

    #[test]
    fn rejects_what_is_not_a_date_time() {
        for bad in [
            "",
            "2024-11-22",
            "2024-11-22T04:33:20",
            "2024-11-22T04:33:20.Z",
            "2024-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-11-22T24:00:00Z",
            "2024-11-22T04:33:20Zjunk",
            "2024-11-22T04:33:20+0900",
            "２０２４-11-22T04:33:20Z",
        ] {
            assert_eq!(ms(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn frame_id_parts() {
        assert_eq!(
            FrameId::new("1732250000000-0").parts(),
            Some((1_732_250_000_000, 0))
        );
        for bad in [
            "",
            "-",
            "1-",
            "-1",
            "1-2-3",
            "a-1",
            "+1-2",
            "99999999999999999999-1",
        ] {
            assert_eq!(FrameId::new(bad).parts(), None, "{bad:?}");
        }
    }

    #[test]
    fn utc_writes_the_civil_date_and_time() {
        assert_eq!(super::utc(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(super::utc(951_782_400_000), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(
            super::utc(1_795_827_845_999),
            "Sat, 28 Nov 2026 01:04:05 GMT"
        );
    }

    #[test]
    fn civil_days_match_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
    }
}
