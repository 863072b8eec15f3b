//! Eight bytes at a time in a `u64` ("SIMD within a register"), for scans
//! of short runs where a vectorized search's set-up would dominate: the
//! SSE parser's short lines, the JSON reader's strings.
//!
//! A mask marks a byte with its high bit. Borrows in the subtraction only
//! run upward, so a false mark lies above a true one: the lowest mark of a
//! mask, or of an OR of masks, is exact.

const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// Eight bytes (a `chunks_exact(8)` chunk) as a word, byte 0 lowest.
#[inline(always)]
pub(crate) fn load(chunk: &[u8]) -> u64 {
    let mut le = [0u8; 8];
    le.copy_from_slice(chunk);
    u64::from_le_bytes(le)
}

/// Marks the bytes of `word` equal to `byte`.
#[inline(always)]
pub(crate) fn equal(word: u64, byte: u8) -> u64 {
    below(word ^ u64::from_ne_bytes([byte; 8]), 1)
}

/// Marks the bytes of `word` below `bound` (at most 0x80).
#[inline(always)]
pub(crate) fn below(word: u64, bound: u8) -> u64 {
    word.wrapping_sub(u64::from_ne_bytes([bound; 8])) & !word & HIGHS
}

/// The index of the lowest marked byte of a non-zero mask.
#[inline(always)]
pub(crate) fn first(marks: u64) -> usize {
    (marks.trailing_zeros() / 8) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_lowest_mark_is_the_first_match(bytes in proptest::array::uniform8(any::<u8>()),
                                              byte in any::<u8>(), bound in 0u8..=0x80) {
            let word = load(&bytes);
            let expect = bytes.iter().position(|&b| b == byte || b < bound);
            let marks = equal(word, byte) | below(word, bound);
            prop_assert_eq!((marks != 0).then(|| first(marks)), expect);
        }
    }
}
