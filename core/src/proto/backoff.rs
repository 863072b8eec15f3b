//! Exponential backoff with full jitter, deterministic for a seed.
//!
//! The ceiling starts at 1 s and doubles up to 30 s (spec 4.6, 8):
//! 1, 2, 4, 8, 16, 30, 30, … s. Each delay is drawn uniformly from
//! `[0, ceiling]` ("full jitter").
//!
//! **Why full jitter.** When a broadcast server hiccups, every bot connected to
//! it drops at the same moment and reconnects together. AWS's "Exponential
//! Backoff and Jitter" study compared no jitter, equal jitter, full jitter and
//! decorrelated jitter for many clients retrying at once: full jitter spread
//! the retries the most and cost the least total work, at the price of an
//! occasional short delay. A bot loses nothing by a short delay, and the server
//! is spared a synchronized herd, so full jitter is the default here.
//!
//! Randomness comes from [`SplitMix64`], a tiny seeded generator: the same seed
//! gives the same delays, so tests and replays are exact. No global randomness
//! is ever drawn.
//!
//! ```
//! use onair::api::Backoff;
//!
//! let mut backoff = Backoff::new(7);
//! let ceilings: Vec<u64> = (0..7).map(|a| backoff.ceiling_ms(a)).collect();
//! assert_eq!(ceilings, [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
//! let first = backoff.next_delay_ms();
//! assert!(first <= 1_000);
//! backoff.reset(); // after a healthy stream
//! assert_eq!(backoff.attempt(), 0);
//! ```

/// SplitMix64 (Steele, Lea, Flood 2014): a 64-bit generator that passes
/// BigCrush, needs one word of state and has no bad seeds. Plenty for jitter;
/// not for secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `[0, max]`, both ends included (multiply-high mapping;
    /// its bias is below 2^-40 for the millisecond ranges used here).
    pub fn below_or_equal(&mut self, max: u64) -> u64 {
        let span = u128::from(max) + 1;
        let wide = u128::from(self.next_u64()) * span;
        u64::try_from(wide >> 64).unwrap_or(max)
    }

    /// A number in `[low, high]` (swapped if given the other way round).
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        let (low, high) = if low <= high {
            (low, high)
        } else {
            (high, low)
        };
        low + self.below_or_equal(high - low)
    }
}

/// Exponential backoff with full jitter: attempt `n` waits a uniform random
/// time in `[0, min(cap, base · 2^n)]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    base_ms: u64,
    cap_ms: u64,
    attempt: u32,
    rng: SplitMix64,
}

impl Backoff {
    /// The first ceiling: 1 s (spec 8).
    pub const BASE_MS: u64 = 1_000;
    /// The largest ceiling: 30 s (spec 8).
    pub const CAP_MS: u64 = 30_000;

    /// The spec's backoff (1 s doubling to 30 s), jitter drawn from `seed`.
    pub fn new(seed: u64) -> Self {
        Self::with_limits(Self::BASE_MS, Self::CAP_MS, seed)
    }

    /// A backoff with other limits (a cap below the base is raised to it).
    pub fn with_limits(base_ms: u64, cap_ms: u64, seed: u64) -> Self {
        Self {
            base_ms,
            cap_ms: cap_ms.max(base_ms),
            attempt: 0,
            rng: SplitMix64::new(seed),
        }
    }

    /// The un-jittered ceiling of attempt `attempt` (0-based):
    /// `min(cap, base · 2^attempt)`, without overflow.
    pub fn ceiling_ms(&self, attempt: u32) -> u64 {
        let factor = 1u64.checked_shl(attempt).unwrap_or(u64::MAX);
        self.base_ms.saturating_mul(factor).min(self.cap_ms)
    }

    /// The next delay: uniform in `[0, ceiling(attempt)]`; then the attempt
    /// count goes up by one.
    pub fn next_delay_ms(&mut self) -> u64 {
        let ceiling = self.ceiling_ms(self.attempt);
        self.attempt = self.attempt.saturating_add(1);
        self.rng.below_or_equal(ceiling)
    }

    /// How many delays were drawn since the last reset.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Starts again at the first ceiling (call it once a stream has been
    /// healthy). The random sequence continues; it is not re-seeded.
    pub fn reset(&mut self) {
        self.attempt = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn unjittered_schedule() {
        let b = Backoff::new(0);
        let secs: Vec<u64> = (0..7).map(|a| b.ceiling_ms(a) / 1000).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(b.ceiling_ms(63), 30_000);
        assert_eq!(b.ceiling_ms(64), 30_000);
        assert_eq!(b.ceiling_ms(u32::MAX), 30_000);
    }

    #[test]
    fn delays_for_a_fixed_seed() {
        let mut b = Backoff::new(0x0A1B_2C3D);
        let delays: Vec<u64> = (0..10).map(|_| b.next_delay_ms()).collect();
        insta::assert_json_snapshot!("backoff_delays_seed_0a1b2c3d", delays);
        let mut again = Backoff::new(0x0A1B_2C3D);
        let replay: Vec<u64> = (0..10).map(|_| again.next_delay_ms()).collect();
        assert_eq!(delays, replay, "same seed, same delays");
    }

    #[test]
    fn reset_starts_again_at_one_second() {
        let mut b = Backoff::new(3);
        for _ in 0..6 {
            b.next_delay_ms();
        }
        assert_eq!(b.attempt(), 6);
        b.reset();
        assert_eq!(b.attempt(), 0);
        assert!(b.next_delay_ms() <= 1_000);
    }

    #[test]
    fn splitmix_known_values() {
        // Reference values of SplitMix64 seeded with 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.below_or_equal(0), 0);
        assert_eq!(r.between(5, 5), 5);
        let x = r.between(9, 3);
        assert!((3..=9).contains(&x));
        let _ = r.below_or_equal(u64::MAX);
    }

    proptest! {
        #[test]
        fn delays_stay_within_zero_and_thirty_seconds(seed in any::<u64>(), n in 1usize..80) {
            let mut b = Backoff::new(seed);
            for attempt in 0..n {
                let ceiling = b.ceiling_ms(u32::try_from(attempt).unwrap());
                let d = b.next_delay_ms();
                prop_assert!(d <= ceiling && d <= 30_000);
            }
        }
    }
}

/// The examples once in the docs of this crate-private module, kept as tests.
#[cfg(test)]
mod examples {
    #[test]
    fn splitmix64() {
        use super::SplitMix64;

        let mut a = SplitMix64::new(1);
        let mut b = SplitMix64::new(1);
        assert_eq!(a.next_u64(), b.next_u64());
        assert!(a.below_or_equal(10) <= 10);
    }
}
