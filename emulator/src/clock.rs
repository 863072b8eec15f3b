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
    let days = ms.div_euclid(DAY_MS);
    let rem = ms.rem_euclid(DAY_MS);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// ISO-8601 UTC with `digits` fractional-second digits (0 = none, at most 9;
/// digits past milliseconds are zeros). Spec 2: parsers must not assume a
/// fixed number, so the wire variation `fractionDigits` uses this.
pub fn iso_digits(ms: i64, digits: u8) -> String {
    let full = iso(ms);
    let (head, frac) = full.split_at(19); // "YYYY-MM-DDTHH:MM:SS" | ".mmmZ"
    let millis = frac.trim_start_matches('.').trim_end_matches('Z');
    match digits.min(9) {
        0 => format!("{head}Z"),
        n => {
            let mut f = millis.to_owned();
            while f.len() < usize::from(n) {
                f.push('0');
            }
            f.truncate(usize::from(n));
            format!("{head}.{f}Z")
        }
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

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
    }
}
