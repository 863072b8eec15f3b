//! The rate-limit headers of the service (spec 7.3, 8): the
//! `x-ratelimit-*` counters, `Retry-After` in all its forms and the daily
//! scope. Reading them is a protocol fact; deciding what to do with them is
//! [`crate::proto::quota`]'s.
//!
//! Header names are case-insensitive; junk values are ignored; `-1` reads as
//! unknown (some gateways send it when their limiter store fails); nothing
//! panics.

use crate::proto::http::{trim_ows, Header};
use crate::proto::scope::Permission;

/// The longest wait a `Retry-After` may ask for: one day (the daily quota
/// resets at midnight). Longer values are capped and flagged.
pub const MAX_RETRY_AFTER_MS: u64 = 86_400_000;

/// The longest `x-ratelimit-daily-scope` value read as a permission, in bytes.
pub const MAX_SCOPE_BYTES: usize = 64;

/// A parsed `Retry-After` value (RFC 9110 10.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryAfter {
    /// Delta-seconds, in milliseconds, capped at [`MAX_RETRY_AFTER_MS`].
    Delay {
        /// The delay in milliseconds (after capping).
        ms: u64,
        /// Whether the server asked for more than the cap.
        capped: bool,
    },
    /// An HTTP-date, in unix milliseconds (0 for dates before 1970).
    Date {
        /// The date in unix milliseconds.
        unix_ms: u64,
    },
}

impl RetryAfter {
    /// Reads a `Retry-After` value. Delta-seconds are tried first and, when
    /// the value starts with a digit, never fall through to date parsing; then
    /// the three HTTP-date forms of RFC 9110 (IMF-fixdate, RFC 850, asctime).
    ///
    /// ```
    /// use onair::api::RetryAfter;
    ///
    /// assert_eq!(RetryAfter::parse(b"120"), Some(RetryAfter::Delay { ms: 120_000, capped: false }));
    /// let date = RetryAfter::parse(b"Sun, 06 Nov 1994 08:49:37 GMT");
    /// assert_eq!(date, Some(RetryAfter::Date { unix_ms: 784_111_777_000 }));
    /// assert_eq!(RetryAfter::parse(b"Sunday, 06-Nov-94 08:49:37 GMT"), date);
    /// assert_eq!(RetryAfter::parse(b"Sun Nov  6 08:49:37 1994"), date);
    /// assert_eq!(RetryAfter::parse(b"12 parsecs"), None);
    /// ```
    pub fn parse(value: &[u8]) -> Option<RetryAfter> {
        let value = trim_ows(value);
        let first = *value.first()?;
        if first.is_ascii_digit() {
            let secs = parse_u64_saturating(value)?;
            let wanted = secs.saturating_mul(1000);
            return Some(RetryAfter::Delay {
                ms: wanted.min(MAX_RETRY_AFTER_MS),
                capped: wanted > MAX_RETRY_AFTER_MS,
            });
        }
        parse_http_date(value).map(|unix_ms| RetryAfter::Date { unix_ms })
    }

    /// How long to wait from `now_ms`: a date in the past is 0; anything over
    /// [`MAX_RETRY_AFTER_MS`] is capped.
    pub fn delay_ms(&self, now_ms: u64) -> u64 {
        match *self {
            RetryAfter::Delay { ms, .. } => ms,
            RetryAfter::Date { unix_ms } => unix_ms.saturating_sub(now_ms).min(MAX_RETRY_AFTER_MS),
        }
    }

    /// The time the wait ends: `now_ms + delay_ms(now_ms)`.
    pub fn until_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_add(self.delay_ms(now_ms))
    }

    /// Whether the server asked for more than [`MAX_RETRY_AFTER_MS`].
    pub fn is_capped(&self, now_ms: u64) -> bool {
        match *self {
            RetryAfter::Delay { capped, .. } => capped,
            RetryAfter::Date { unix_ms } => unix_ms.saturating_sub(now_ms) > MAX_RETRY_AFTER_MS,
        }
    }
}

/// Everything the quota headers of one response said (spec 8). Absent, junk
/// and `-1` values are all `None`.
///
/// ```
/// use onair::api::QuotaHeaders;
///
/// let q = QuotaHeaders::parse(&[
///     ("X-RateLimit-Remaining", "0"),
///     ("x-ratelimit-replenish-rate", "10"),
///     ("x-ratelimit-daily-remaining", "-1"),
///     ("x-ratelimit-burst-capacity", "lots"),
/// ]);
/// assert_eq!((q.remaining, q.replenish_rate), (Some(0), Some(10)));
/// assert_eq!((q.daily_remaining, q.burst_capacity), (None, None));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuotaHeaders {
    /// `x-ratelimit-remaining`: per-second tokens left.
    pub remaining: Option<u64>,
    /// `x-ratelimit-replenish-rate`: tokens refilled per second.
    pub replenish_rate: Option<u64>,
    /// `x-ratelimit-burst-capacity`: the burst ceiling.
    pub burst_capacity: Option<u64>,
    /// `x-ratelimit-daily-limit`: daily call limit.
    pub daily_limit: Option<u64>,
    /// `x-ratelimit-daily-remaining`: calls left today.
    pub daily_remaining: Option<u64>,
    /// `x-ratelimit-daily-reset`: next reset, epoch seconds.
    pub daily_reset_s: Option<u64>,
    /// `x-ratelimit-daily-scope`: the permission a daily 429 hit.
    pub daily_scope: Option<Permission>,
    /// `Retry-After`, when it held a delay or a date.
    pub retry_after: Option<RetryAfter>,
    /// Whether a `Retry-After` header was present at all (even unreadable):
    /// the service sends it only on a daily-quota 429.
    pub retry_after_present: bool,
}

impl QuotaHeaders {
    /// Reads the quota headers in one pass; the first of a repeated name wins.
    pub fn parse<H: Header>(headers: impl IntoIterator<Item = H>) -> QuotaHeaders {
        let mut q = QuotaHeaders::default();
        for header in headers {
            let name = header.name();
            let value = header.value();
            if name.eq_ignore_ascii_case(b"retry-after") {
                if !q.retry_after_present {
                    q.retry_after_present = true;
                    q.retry_after = RetryAfter::parse(value);
                }
                continue;
            }
            let Some(rest) = name
                .get(..12)
                .filter(|p| p.eq_ignore_ascii_case(b"x-ratelimit-"))
                .and_then(|_| name.get(12..))
            else {
                continue;
            };
            if rest.eq_ignore_ascii_case(b"daily-scope") {
                if q.daily_scope.is_none() {
                    q.daily_scope = parse_scope(value);
                }
                continue;
            }
            let slot = if rest.eq_ignore_ascii_case(b"remaining") {
                &mut q.remaining
            } else if rest.eq_ignore_ascii_case(b"replenish-rate") {
                &mut q.replenish_rate
            } else if rest.eq_ignore_ascii_case(b"burst-capacity") {
                &mut q.burst_capacity
            } else if rest.eq_ignore_ascii_case(b"daily-limit") {
                &mut q.daily_limit
            } else if rest.eq_ignore_ascii_case(b"daily-remaining") {
                &mut q.daily_remaining
            } else if rest.eq_ignore_ascii_case(b"daily-reset") {
                &mut q.daily_reset_s
            } else {
                continue;
            };
            if slot.is_none() {
                *slot = parse_count(value);
            }
        }
        q
    }

    /// Whether any `x-ratelimit-*` counter was present.
    pub fn has_counters(&self) -> bool {
        self.remaining.is_some()
            || self.replenish_rate.is_some()
            || self.burst_capacity.is_some()
            || self.daily_limit.is_some()
            || self.daily_remaining.is_some()
            || self.daily_reset_s.is_some()
    }
}

/// A counter value: ASCII digits (optional whitespace around) that fit in a
/// `u64`. `-1` and everything else is unknown.
fn parse_count(value: &[u8]) -> Option<u64> {
    let value = trim_ows(value);
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    value.iter().try_fold(0u64, |acc, &b| {
        acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

/// Digits only, saturating at `u64::MAX` (an absurd delay is capped later,
/// not discarded).
fn parse_u64_saturating(value: &[u8]) -> Option<u64> {
    if !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(value.iter().fold(0u64, |acc, &b| {
        acc.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    }))
}

fn parse_scope(value: &[u8]) -> Option<Permission> {
    let value = trim_ows(value);
    if value.is_empty() || value.len() > MAX_SCOPE_BYTES {
        return None;
    }
    std::str::from_utf8(value).ok().map(Permission::from_wire)
}

/// An HTTP-date (RFC 9110 5.6.7) in unix milliseconds, any of its three
/// forms (IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850, asctime), by
/// `httpdate`; `None` for anything else.
fn parse_http_date(value: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(value).ok()?;
    let time = httpdate::parse_http_date(text.trim()).ok()?;
    let ms = time.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
    u64::try_from(ms).ok()
}

#[cfg(test)]
mod tests;
