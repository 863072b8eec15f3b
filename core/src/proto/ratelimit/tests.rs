use super::*;
use crate::proto::endpoint::Endpoint;
use crate::proto::problem::classify;
use crate::proto::quota::QuotaTracker;
use proptest::prelude::*;

const NOW: u64 = 1_700_000_000_000; // Tue, 14 Nov 2023 22:13:20 GMT

#[test]
fn retry_after_delta_seconds() {
    assert_eq!(
        RetryAfter::parse(b"0"),
        Some(RetryAfter::Delay {
            ms: 0,
            capped: false
        })
    );
    assert_eq!(
        RetryAfter::parse(b" 30 "),
        Some(RetryAfter::Delay {
            ms: 30_000,
            capped: false
        })
    );
    assert_eq!(
        RetryAfter::parse(b"86401"),
        Some(RetryAfter::Delay {
            ms: MAX_RETRY_AFTER_MS,
            capped: true
        })
    );
    assert_eq!(
        RetryAfter::parse(b"99999999999999999999999999"),
        Some(RetryAfter::Delay {
            ms: MAX_RETRY_AFTER_MS,
            capped: true
        })
    );
    // Starts with a digit: never falls through to date parsing.
    for junk in [&b"30s"[..], b"1.5", b"06 Nov 1994 08:49:37 GMT", b"3 0"] {
        assert_eq!(
            RetryAfter::parse(junk),
            None,
            "{:?}",
            String::from_utf8_lossy(junk)
        );
    }
    for junk in [&b""[..], b"-1", b"+5", b"soon", b"\xff", b" "] {
        assert_eq!(RetryAfter::parse(junk), None);
    }
}

#[test]
fn retry_after_http_dates() {
    let expected = Some(RetryAfter::Date {
        unix_ms: 1_700_000_020_000,
    });
    for form in [
        &b"Tue, 14 Nov 2023 22:13:40 GMT"[..],
        b"Tuesday, 14-Nov-23 22:13:40 GMT",
        b"Tue Nov 14 22:13:40 2023",
    ] {
        assert_eq!(
            RetryAfter::parse(form),
            expected,
            "{:?}",
            String::from_utf8_lossy(form)
        );
    }
    assert_eq!(
        RetryAfter::parse(b"Thu Jan  1 00:00:01 1970"),
        Some(RetryAfter::Date { unix_ms: 1000 })
    );
    // Dates httpdate does not place after 1970 are no dates (a past date
    // would only mean "now").
    for before in [
        &b"Wednesday, 31-Dec-69 23:59:59 GMT"[..],
        b"Thu, 01 Jan 1901 00:00:00 GMT",
    ] {
        assert_eq!(RetryAfter::parse(before), None);
    }
    for bad in [
        &b"Tue, 14 Nov 2023 22:13:40 UTC"[..],
        b"Tue, 14 Nov 2023 22:13:40",
        b"Tue, 31 Nov 2023 22:13:40 GMT",
        b"Tue, 29 Feb 2023 22:13:40 GMT",
        b"Tue, 14 Nov 2023 24:00:00 GMT",
        b"Tue, 14 Foo 2023 22:13:40 GMT",
        b"Xyz, 14 Nov 2023 22:13:40 GMT",
        b"Tue, 14 Nov 2023 22:13:40 GMT junk",
        b"Tue Nov 14 22:13:40 2023x",
        b"Tue Nov 1 22:13:40 2023",
        b"Tues, 14-Nov-23 22:13:40 GMT",
        b"Tue,",
    ] {
        assert_eq!(
            RetryAfter::parse(bad),
            None,
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn retry_after_delay_from_now() {
    let date = RetryAfter::Date {
        unix_ms: NOW + 5_000,
    };
    assert_eq!(date.delay_ms(NOW), 5_000);
    assert_eq!(date.until_ms(NOW), NOW + 5_000);
    assert_eq!(date.delay_ms(NOW + 10_000), 0, "a date in the past is 0");
    let far = RetryAfter::Date {
        unix_ms: NOW + 10 * MAX_RETRY_AFTER_MS,
    };
    assert_eq!(far.delay_ms(NOW), MAX_RETRY_AFTER_MS);
    assert!(far.is_capped(NOW));
    assert!(!date.is_capped(NOW));
    assert_eq!(far.until_ms(u64::MAX), u64::MAX);
}

#[test]
fn quota_headers_snapshot() {
    let q = QuotaHeaders::parse([
        ("X-RATELIMIT-REMAINING", " 4 "),
        ("x-ratelimit-replenish-rate", "5"),
        ("x-ratelimit-burst-capacity", "10"),
        ("x-ratelimit-daily-limit", "10000"),
        ("x-ratelimit-daily-remaining", "9876"),
        ("x-ratelimit-daily-reset", "1700006400"),
        ("x-ratelimit-remaining", "0"),
        ("x-ratelimit-daily-scope", " chat.send "),
        ("Retry-After", "12"),
        ("x-ratelimit-unknown", "1"),
        ("x-ratelimit", "1"),
        ("content-type", "application/json"),
    ]);
    assert_eq!(
        q,
        QuotaHeaders {
            remaining: Some(4),
            replenish_rate: Some(5),
            burst_capacity: Some(10),
            daily_limit: Some(10_000),
            daily_remaining: Some(9_876),
            daily_reset_s: Some(1_700_006_400),
            daily_scope: Some(Permission::ChatSend),
            retry_after: Some(RetryAfter::Delay {
                ms: 12_000,
                capped: false
            }),
            retry_after_present: true,
        }
    );
    assert!(q.has_counters());
}

#[test]
fn junk_and_minus_one_are_unknown() {
    let q = QuotaHeaders::parse([
        ("x-ratelimit-remaining", "-1"),
        ("x-ratelimit-replenish-rate", "2.5"),
        ("x-ratelimit-burst-capacity", ""),
        ("x-ratelimit-daily-limit", "99999999999999999999999"),
        ("x-ratelimit-daily-remaining", "1,2"),
        ("x-ratelimit-daily-scope", ""),
        ("retry-after", "later"),
    ]);
    assert_eq!(
        q,
        QuotaHeaders {
            retry_after_present: true,
            ..QuotaHeaders::default()
        }
    );
    assert!(!q.has_counters());
    // A junk first value lets a good later duplicate in.
    let q = QuotaHeaders::parse([
        ("x-ratelimit-remaining", "x"),
        ("x-ratelimit-remaining", "3"),
    ]);
    assert_eq!(q.remaining, Some(3));
}

proptest! {
    #[test]
    fn no_bytes_panic_the_quota_parser(
        headers in proptest::collection::vec(
            (
                prop_oneof![
                    Just(b"retry-after".to_vec()),
                    Just(b"X-RateLimit-Remaining".to_vec()),
                    Just(b"x-ratelimit-replenish-rate".to_vec()),
                    Just(b"x-ratelimit-daily-reset".to_vec()),
                    Just(b"x-ratelimit-daily-scope".to_vec()),
                    proptest::collection::vec(any::<u8>(), 0..30),
                ],
                proptest::collection::vec(any::<u8>(), 0..40),
            ),
            0..10,
        ),
        now in any::<u64>(),
    ) {
        let q = QuotaHeaders::parse(&headers);
        if let Some(r) = q.retry_after {
            prop_assert!(r.delay_ms(now) <= MAX_RETRY_AFTER_MS);
            let _ = r.until_ms(now);
        }
        let p = classify(Endpoint::Live, 429, &headers, b"");
        let mut t = QuotaTracker::new(now);
        t.on_response(Endpoint::Live, &p, now);
        prop_assert!(t.next_call_at(&Permission::LiveRead, now) >= now);
    }

    #[test]
    fn date_like_strings_never_panic(s in "[A-Za-z]{3,9},? [0-9 ]{1,2}[- ][A-Za-z]{3}[- ][0-9]{2,4} [0-9:]{5,9}( GMT)?") {
        let _ = RetryAfter::parse(s.as_bytes());
    }

    #[test]
    fn imf_fixdate_round_trips(secs in 0u64..253_402_300_799) {
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        let text = httpdate::fmt_http_date(time);
        prop_assert_eq!(
            RetryAfter::parse(text.as_bytes()),
            Some(RetryAfter::Date { unix_ms: secs * 1000 })
        );
    }
}
