//! The driver's clock: the bot takes time as an argument, so a driver can
//! run it on the wall clock or on an emulator's virtual clock.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of time for the bot (unix milliseconds).
pub trait Clock: Send + Sync + 'static {
    /// The time now, in unix milliseconds.
    fn now_ms(&self) -> u64;

    /// How long to sleep in real time until `at_ms` on this clock. The
    /// default is the plain difference; a clock that runs faster than real
    /// time divides it by its speed.
    fn real_delay(&self, at_ms: u64) -> Duration {
        Duration::from_millis(at_ms.saturating_sub(self.now_ms()))
    }
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A seed that differs between processes and runs, without a dependency:
/// std's `RandomState` is keyed from the operating system's randomness.
pub(crate) fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(SystemClock.now_ms());
    hasher.write_u32(std::process::id());
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_clock_is_unix_milliseconds_and_seeds_differ() {
        assert!(SystemClock.now_ms() > 1_700_000_000_000);
        assert!(SystemClock.real_delay(0).is_zero());
        assert_ne!(random_seed(), random_seed());
    }
}
