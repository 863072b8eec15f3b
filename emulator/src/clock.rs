//! Emulator time: a virtual clock that runs at a chosen speed relative to
//! real time and can be pushed forward by the control API.
//!
//! Every expiry of the spec (codes 60 s, access tokens 3600 s, refresh tokens
//! 30 days), the heartbeat interval and the daily quota reset at midnight UTC
//! are measured on this clock, so a test can cross an hour in a millisecond.
//!
//! ```
//! use onair_emulator::clock::Clock;
//!
//! let clock = Clock::new(1_700_000_000_000, 0.0); // speed 0: frozen
//! assert_eq!(clock.now_ms(), 1_700_000_000_000);
//! clock.advance(60_000);
//! assert_eq!(clock.now_ms(), 1_700_000_060_000);
//! let running = Clock::new(0, 1.0);
//! running.pause();
//! let held = running.now_ms();
//! std::thread::sleep(std::time::Duration::from_millis(5));
//! assert_eq!(running.now_ms(), held); // paused: nothing happens
//! running.resume();
//! assert_eq!(onair_emulator::clock::iso(0), "1970-01-01T00:00:00.000Z");
//! ```

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use time::format_description::modifier::{Subsecond, SubsecondDigits};
use time::format_description::{BorrowedFormatItem as Item, Component};
use time::macros::{datetime, format_description};
use time::OffsetDateTime;

/// One day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

/// The virtual clock: `start + (elapsed_real − paused) × speed + advanced`.
#[derive(Debug)]
pub struct Clock {
    start_real: Instant,
    start_ms: i64,
    speed: f64,
    advanced_ms: AtomicI64,
    /// Real nanoseconds spent in finished pauses.
    paused_ns: AtomicU64,
    /// When the current pause began (real ns since `start_real`, plus one;
    /// 0: running).
    pause_began_ns: AtomicU64,
    /// One pause or resume at a time.
    pausing: std::sync::Mutex<()>,
}

impl Clock {
    /// A clock reading `start_ms` (epoch milliseconds) now, running at `speed`
    /// times real time (1.0 = real time; 0.0 = frozen, moved only by
    /// [`Clock::advance`]). A negative or non-finite speed counts as 1.0;
    /// speeds above a million are capped there.
    pub fn new(start_ms: i64, speed: f64) -> Self {
        let speed = if speed.is_finite() && speed >= 0.0 {
            speed.min(1e6)
        } else {
            1.0
        };
        Self {
            start_real: Instant::now(),
            start_ms,
            speed,
            advanced_ms: AtomicI64::new(0),
            paused_ns: AtomicU64::new(0),
            pause_began_ns: AtomicU64::new(0),
            pausing: std::sync::Mutex::new(()),
        }
    }

    fn real_ns(&self) -> u64 {
        u64::try_from(self.start_real.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Holds emulator time where it is (nothing is due meanwhile: no step,
    /// no heartbeat, no expiry) until [`Clock::resume`]; `false` when
    /// already paused. A test quiesces the service this way, e.g. so a bot
    /// restarted meanwhile has read every frame written to it.
    pub fn pause(&self) -> bool {
        let _one = self.pausing.lock().unwrap_or_else(|e| e.into_inner());
        let began = self.real_ns().saturating_add(1);
        self.pause_began_ns
            .compare_exchange(0, began, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Lets emulator time run on from where it was held; `false` when it
    /// was not paused.
    pub fn resume(&self) -> bool {
        let _one = self.pausing.lock().unwrap_or_else(|e| e.into_inner());
        let began = self.pause_began_ns.load(Ordering::SeqCst);
        if began == 0 {
            return false;
        }
        let held = self.real_ns().saturating_sub(began - 1);
        self.paused_ns.fetch_add(held, Ordering::SeqCst);
        self.pause_began_ns
            .compare_exchange(began, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Whether emulator time is held by [`Clock::pause`].
    pub fn is_paused(&self) -> bool {
        self.pause_began_ns.load(Ordering::SeqCst) != 0
    }

    /// The real wall clock in epoch milliseconds (the default start).
    pub fn wall_ms() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }

    /// Emulator time now, in epoch milliseconds.
    pub fn now_ms(&self) -> i64 {
        let began = self.pause_began_ns.load(Ordering::SeqCst);
        let until = if began == 0 {
            self.real_ns()
        } else {
            began - 1
        };
        let running = until.saturating_sub(self.paused_ns.load(Ordering::SeqCst));
        let real = running as f64 / 1e6 * self.speed;
        self.start_ms
            .saturating_add(real as i64)
            .saturating_add(self.advanced_ms.load(Ordering::Relaxed))
    }

    /// The speed factor relative to real time.
    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// Jumps forward by `ms` (negative values are ignored: time never runs back).
    pub fn advance(&self, ms: i64) -> i64 {
        if ms > 0 {
            self.advanced_ms.fetch_add(ms, Ordering::Relaxed);
        }
        self.now_ms()
    }

    /// How long to sleep in real time before emulator time reaches `target_ms`,
    /// capped at `cap` so that a jump of the clock is noticed soon. `None`
    /// when the target is reached.
    pub fn real_wait(&self, target_ms: i64, cap: Duration) -> Option<Duration> {
        let left = target_ms.saturating_sub(self.now_ms());
        if left <= 0 {
            return None;
        }
        if self.speed <= 0.0 || self.is_paused() {
            return Some(cap);
        }
        let real = Duration::from_secs_f64((left as f64 / self.speed / 1000.0).max(0.0005));
        Some(real.min(cap))
    }
}

/// `ms` of emulator time said in real time at `speed`: "60 s" at real
/// speed, "60 s of emulator time = 15 real s" at 4×, "60 s of emulator
/// time (frozen clock: until advanced)" at 0.
///
/// ```
/// use onair_emulator::clock::real_time;
/// assert_eq!(real_time(60_000, 1.0), "60 s");
/// assert_eq!(real_time(60_000, 4.0), "60 s of emulator time = 15 real s");
/// assert_eq!(real_time(60_000, 0.0), "60 s of emulator time (frozen clock: until advanced)");
/// ```
pub fn real_time(ms: i64, speed: f64) -> String {
    let secs = ms as f64 / 1000.0;
    if speed <= 0.0 {
        format!("{secs} s of emulator time (frozen clock: until advanced)")
    } else if (speed - 1.0).abs() < f64::EPSILON {
        format!("{secs} s")
    } else {
        let real = secs / speed;
        let real = if real >= 10.0 {
            format!("{real:.0}")
        } else {
            format!("{real:.1}")
        };
        format!("{secs} s of emulator time = {real} real s")
    }
}

/// The next midnight UTC strictly after `ms` (the daily quota reset).
pub fn next_midnight_ms(ms: i64) -> i64 {
    (ms.div_euclid(DAY_MS) + 1) * DAY_MS
}

/// ISO-8601 UTC with milliseconds and a trailing `Z` (spec 2: timestamps).
pub fn iso(ms: i64) -> String {
    iso_digits(ms, 3)
}

/// ISO-8601 UTC with `digits` fractional-second digits (0 = none, at most 9;
/// digits past milliseconds are zeros). Spec 2: parsers must not assume a
/// fixed number, so the wire variation `fractionDigits` uses this. An
/// instant before the year 0 or after 9999 is written as the first or last
/// millisecond of that range.
pub fn iso_digits(ms: i64, digits: u8) -> String {
    const FIRST: OffsetDateTime = datetime!(0000-01-01 0:00 UTC);
    const LAST: OffsetDateTime = datetime!(9999-12-31 23:59:59.999 UTC);
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(if ms < 0 { FIRST } else { LAST })
        .clamp(FIRST, LAST);
    let digits = match digits {
        0 => None,
        1 => Some(SubsecondDigits::One),
        2 => Some(SubsecondDigits::Two),
        3 => Some(SubsecondDigits::Three),
        4 => Some(SubsecondDigits::Four),
        5 => Some(SubsecondDigits::Five),
        6 => Some(SubsecondDigits::Six),
        7 => Some(SubsecondDigits::Seven),
        8 => Some(SubsecondDigits::Eight),
        _ => Some(SubsecondDigits::Nine),
    };
    let written = match digits {
        None => at.format(&[Item::Compound(DATE_TIME), Item::StringLiteral("Z")][..]),
        Some(n) => {
            let fraction = Component::Subsecond(Subsecond::default().with_digits(n));
            at.format(
                &[
                    Item::Compound(DATE_TIME),
                    Item::StringLiteral("."),
                    Item::Component(fraction),
                    Item::StringLiteral("Z"),
                ][..],
            )
        }
    };
    // Only a writer's I/O error fails `format`; a `String` has none.
    written.unwrap_or_default()
}

/// `YYYY-MM-DDTHH:MM:SS`, what every timestamp starts with.
const DATE_TIME: &[Item<'_>] = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_holds_time_and_a_resume_goes_on_from_there() {
        let clock = Clock::new(1_000, 1000.0);
        assert!(clock.pause() && !clock.pause(), "paused once");
        let held = clock.now_ms();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(clock.now_ms(), held);
        assert_eq!(
            clock.real_wait(held + 1, Duration::from_millis(7)),
            Some(Duration::from_millis(7))
        );
        assert_eq!(clock.advance(500), held + 500, "advance still moves it");
        assert!(clock.resume() && !clock.resume(), "resumed once");
        let after = clock.now_ms();
        assert!(
            (held + 500..held + 500 + 15_000).contains(&after),
            "{held} {after}"
        );
    }

    #[test]
    fn iso_dates() {
        assert_eq!(iso(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(next_midnight_ms(DAY_MS - 1), DAY_MS);
        assert_eq!(next_midnight_ms(DAY_MS), 2 * DAY_MS);
        assert_eq!(iso_digits(1_700_000_000_123, 0), "2023-11-14T22:13:20Z");
        assert_eq!(iso_digits(1_700_000_000_123, 1), "2023-11-14T22:13:20.1Z");
        assert_eq!(
            iso_digits(1_700_000_000_123, 6),
            "2023-11-14T22:13:20.123000Z"
        );
        assert_eq!(
            iso_digits(1_700_000_000_123, 9),
            "2023-11-14T22:13:20.123000000Z"
        );
        assert_eq!(
            iso_digits(1_700_000_000_123, 200),
            "2023-11-14T22:13:20.123000000Z"
        );
        assert_eq!(iso(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(iso(-62_167_219_200_000), "0000-01-01T00:00:00.000Z");
        assert_eq!(iso(-62_167_219_200_001), "0000-01-01T00:00:00.000Z");
        assert_eq!(iso(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(iso(i64::MAX), "9999-12-31T23:59:59.999Z");
    }
}
