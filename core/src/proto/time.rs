//! The service's timestamps and stream frame ids, kept as sent and parsed on demand.
//!
//! Timestamps are ISO-8601 UTC with a trailing `Z` and any number of
//! fractional-second digits (spec 2). A [`Timestamp`] keeps the wire string, so a
//! bot can log or echo it verbatim, and parses it only when asked.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

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
        parse_rfc3339_nanos(self.as_str())
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

/// A unix-ms instant as an HTTP date (`Sun, 29 Nov 2026 00:00:00 GMT`), for
/// log lines; `httpdate` writes it.
pub(crate) fn utc(ms: u64) -> String {
    let at = std::time::UNIX_EPOCH
        .checked_add(std::time::Duration::from_millis(ms))
        .unwrap_or(std::time::UNIX_EPOCH);
    httpdate::fmt_http_date(at)
}

/// RFC 3339 as the `time` crate parses it, plus two forms always accepted
/// here that it does not take as they are: a `,` before the fraction
/// (ISO 8601) and a leap second `60` at any minute, counted as the next
/// minute's first second (`time` takes one only at the end of a month, as
/// that month's last nanosecond). Between date and time `time` takes any
/// byte; only `T`, `t` and a space are accepted here.
fn parse_rfc3339_nanos(wire: &str) -> Option<i128> {
    let bytes = wire.as_bytes();
    if !matches!(bytes.get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    let comma = bytes.get(19) == Some(&b',');
    let leap = bytes.get(17..19) == Some(b"60");
    let at = if comma || leap {
        let mut shimmed = wire.to_owned().into_bytes();
        if let Some(b) = shimmed.get_mut(19).filter(|_| comma) {
            *b = b'.';
        }
        if let Some(s) = shimmed.get_mut(17..19).filter(|_| leap) {
            s.copy_from_slice(b"59");
        }
        OffsetDateTime::parse(std::str::from_utf8(&shimmed).ok()?, &Rfc3339)
    } else {
        OffsetDateTime::parse(wire, &Rfc3339)
    }
    .ok()?;
    Some(at.unix_timestamp_nanos() + if leap { 1_000_000_000 } else { 0 })
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
    fn accepted_variants_of_the_form() {
        let base = 1_732_250_000_000;
        // `t` or a space between date and time; `z`; a `,` before the fraction.
        assert_eq!(ms("2024-11-22t04:33:20Z"), Some(base));
        assert_eq!(ms("2024-11-22 04:33:20z"), Some(base));
        assert_eq!(ms("2024-11-22T04:33:20,5Z"), Some(base + 500));
        assert_eq!(ms("2024-11-22 04:33:20,25+00:00"), Some(base + 250));
        // A leap second counts as the next minute's first, at any minute.
        assert_eq!(ms("2016-12-31T23:59:60Z"), Some(1_483_228_800_000));
        assert_eq!(ms("2016-12-31T23:59:60.5Z"), Some(1_483_228_800_500));
        assert_eq!(ms("2024-11-22T04:33:60Z"), Some(base + 40_000));
        assert_eq!(ms("2024-11-22T04:33:60,1-00:00"), Some(base + 40_100));
        // Offsets either way, to the minute.
        assert_eq!(ms("2024-11-22T04:33:20-05:30"), Some(base + 19_800_000));
        assert_eq!(ms("2024-11-22T04:33:20+23:59"), Some(base - 86_340_000));
        assert_eq!(ms("2024-11-22T04:33:20.5-00:00"), Some(base + 500));
        // The whole range of four-digit years.
        assert_eq!(ms("0000-01-01T00:00:00Z"), Some(-62_167_219_200_000));
        assert_eq!(
            Timestamp::new("9999-12-31T23:59:59.999999999Z").unix_nanos(),
            Some(253_402_300_799_999_999_999)
        );
        assert_eq!(
            Timestamp::new("1969-12-31T23:59:59.000000001Z").unix_nanos(),
            Some(-999_999_999)
        );
    }

    #[test]
    fn refused_variants_of_the_form() {
        for bad in [
            "2024-11-22X04:33:20Z",
            "2024-11-22_04:33:20Z",
            "2024-11-22\u{e9}04:33:20Z",
            "2024-11-22T04:33:61Z",
            "2024-11-22T04:60:00Z",
            "2024-11-22T04:33:20,Z",
            "2024-11-22T04:33:20.5",
            "2024-11-22T04:33:20.5z+01:00",
            "2024-11-22T04:33:20+24:00",
            "2024-11-22T04:33:20+09:60",
            "2024-11-22T04:33:20+09",
            "2024-11-22T04:33:20 Z",
            "2024-11-31T04:33:20Z",
            "2024-00-22T04:33:20Z",
            "2024-11-00T04:33:20Z",
            "-002-11-22T04:33:20Z",
            "+2024-11-22T04:33:20Z",
            "02024-11-22T04:33:20Z",
            "2024-1-22T04:33:20Z",
            "2024-11-22T4:33:20Z",
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
        const DAY: i64 = 86_400_000;
        assert_eq!(ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(ms("2000-03-01T00:00:00Z"), Some(11_017 * DAY));
        assert_eq!(ms("1969-12-31T00:00:00Z"), Some(-DAY));
    }

    proptest::proptest! {
        /// Any instant `time` writes in RFC 3339, at any offset and with any
        /// fraction, parses back to the same nanosecond.
        #[test]
        fn what_time_writes_parses_back(
            nanos in -62_167_219_200_000_000_000i128..253_402_300_800_000_000_000,
            offset_minutes in -(23 * 60 + 59)..=(23 * 60 + 59),
            whole_ms in proptest::bool::ANY,
        ) {
            let nanos = if whole_ms { nanos - nanos.rem_euclid(1_000_000) } else { nanos };
            let offset = time::UtcOffset::from_whole_seconds(offset_minutes * 60)
                .map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            let at = OffsetDateTime::from_unix_timestamp_nanos(nanos)
                .map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?
                .to_offset(offset);
            // RFC 3339 writes four-digit years only: the local date must be one.
            proptest::prop_assume!((0..=9999).contains(&at.year()));
            let wire = at
                .format(&Rfc3339)
                .map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            proptest::prop_assert_eq!(Timestamp::new(&wire).unix_nanos(), Some(nanos), "{}", wire);
            proptest::prop_assert_eq!(
                Timestamp::new(&wire).unix_ms(),
                Some(i64::try_from(nanos.div_euclid(1_000_000)).unwrap_or(i64::MAX)),
                "{}", wire
            );
        }
    }
}
