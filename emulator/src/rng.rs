//! A small deterministic generator (SplitMix64) for ids, secrets, tokens and
//! the scenario generator. Seeded at random by default (`rand`), so tokens
//! differ between runs; with a seed (`--seed`) a whole run draws the same ids,
//! tokens and payloads again (the pinned bodies rely on it), and scenarios
//! seed their own copy, so replays are equal.
//!
//! ```
//! use onair_emulator::rng::Rng;
//! let mut a = Rng::new(7);
//! let mut b = Rng::new(7);
//! assert_eq!(a.uuid(), b.uuid());
//! assert_eq!(a.uuid().len(), 36);
//! ```

/// SplitMix64: tiny, fast, good enough for an emulator (not for real secrets).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed; the same seed gives the same sequence.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A version-4 UUID in its canonical lowercase form (app client ids).
    pub fn uuid(&mut self) -> String {
        let a = self.next_u64();
        let b = self.next_u64();
        let a = (a & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000;
        let b = (b & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xFFFF,
            a & 0xFFFF,
            b >> 48,
            b & 0xFFFF_FFFF_FFFF
        )
    }

    /// `prefix` then `words` × 64 random bits in hex (tokens, secrets, codes).
    pub fn token(&mut self, prefix: &str, words: usize) -> String {
        let mut out = String::from(prefix);
        for _ in 0..words {
            out.push_str(&format!("{:016x}", self.next_u64()));
        }
        out
    }
}
