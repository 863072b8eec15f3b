//! Decimal text to the nearest `f64`, exactly, with a little big-integer
//! arithmetic and no tables.
//!
//! Why not `str::parse::<f64>`: std's parser carries a 10 KiB table of
//! powers of five and its own fast paths, 17 KiB of the WASM bot module in
//! all (BENCHMARKS.md), for a value the service sends one of per join
//! (`favoriteTemperature`, a short number that [`super::json`] reads on its
//! own fast path). This is the long way round for every other number: the
//! quotient of two big integers to 54 bits, rounded to nearest, ties to even.
//! It agrees with std bit for bit (proptest and the `fast_json` fuzz target).

/// The nearest `f64` to a JSON number (`-?digits(.digits)?([eE][+-]?digits)?`,
/// checked by the caller); `None` when it is too large for an `f64`:
/// `-2.5e-3` is `Some(-0.0025)`, `1e-400` is `Some(0.0)`, `1e400` is `None`.
pub(crate) fn nearest(text: &[u8]) -> Option<f64> {
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let mantissa_end = text
        .iter()
        .position(|b| matches!(b, b'e' | b'E'))
        .unwrap_or(text.len());
    let (mantissa, exponent) = text.split_at(mantissa_end);
    let exponent = read_exponent(exponent.get(1..).unwrap_or_default());
    // The significant digits, and the power of ten they are scaled by.
    let fraction_digits = mantissa
        .iter()
        .skip_while(|&&b| b != b'.')
        .count()
        .saturating_sub(1);
    let mut scale = exponent.saturating_sub(fraction_digits as i64);
    let mut digits = mantissa.iter().filter(|b| b.is_ascii_digit()).copied();
    let mut digits: Vec<u8> = digits.by_ref().skip_while(|&d| d == b'0').collect();
    while digits.last() == Some(&b'0') {
        digits.pop();
        scale = scale.saturating_add(1);
    }
    // Past MAX_DIGITS, only whether anything non-zero follows matters (every
    // halfway point between two `f64`s has at most 767 significant digits):
    // the tail becomes one trailing 1.
    if digits.len() > MAX_DIGITS {
        let cut = digits.len() - MAX_DIGITS;
        scale = scale.saturating_add(cut as i64 - 1);
        digits.truncate(MAX_DIGITS);
        digits.push(b'1');
    }
    let magnitude = scale.saturating_add(digits.len() as i64); // value < 10^magnitude
    let value = if digits.is_empty() || magnitude < -330 {
        0.0
    } else if magnitude > 310 {
        return None;
    } else {
        quotient(&digits, scale)?
    };
    Some(if negative { -value } else { value })
}

/// Significant digits kept exactly (767 suffice; see [`nearest`]).
const MAX_DIGITS: usize = 800;

/// The exponent's digits (`[+-]?digits`), saturating far past any `f64`.
fn read_exponent(text: &[u8]) -> i64 {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    let value = (digits.iter())
        .filter(|d| d.is_ascii_digit())
        .fold(0i64, |acc, &d| {
            (acc * 10 + i64::from(d - b'0')).min(1 << 40)
        });
    if negative {
        -value
    } else {
        value
    }
}

/// `digits × 10^scale` (no leading or trailing zeros, `10^-331 < value <
/// 10^311`) rounded to the nearest `f64`; `None` past `f64::MAX`.
fn quotient(digits: &[u8], scale: i64) -> Option<f64> {
    let mut num = Big::from_digits(digits);
    let mut den = Big::one();
    let ten_to = |big: &mut Big, mut power: u64| {
        while power > 0 {
            let step = power.min(9);
            big.mul_small(10u32.pow(step as u32));
            power -= step;
        }
    };
    if scale >= 0 {
        ten_to(&mut num, scale.unsigned_abs());
    } else {
        ten_to(&mut den, scale.unsigned_abs());
    }
    // value = q × 2^k with 2^52 <= q < 2^54 (or k = -1074 for subnormals).
    let mut k = (num.bits() as i64 - den.bits() as i64 - 53).max(-1074);
    if k >= 0 {
        den.shl(k as u32);
    } else {
        num.shl(k.unsigned_abs() as u32);
    }
    // Long division, one bit at a time: the quotient has at most 54 bits.
    let mut q = 0u64;
    den.shl(53);
    for bit in (0..54).rev() {
        if bit < 53 {
            den.shr1(); // exact: the 53 bits shifted in are zeros
        }
        if num.cmp(&den) != std::cmp::Ordering::Less {
            num.sub(&den);
            q |= 1 << bit;
        }
    }
    // `num` is now the remainder and `den` the divisor again.
    let round_up = if q >= 1 << 53 {
        let odd = q & 1 == 1;
        q >>= 1;
        k += 1;
        odd && (!num.is_zero() || q & 1 == 1)
    } else {
        num.shl(1);
        match num.cmp(&den) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => q & 1 == 1,
            std::cmp::Ordering::Less => false,
        }
    };
    if round_up {
        q += 1;
        if q == 1 << 53 {
            q >>= 1;
            k += 1;
        }
    }
    let bits = if q < 1 << 52 {
        q // subnormal (k = -1074) or zero
    } else {
        let biased = k + 1075;
        if biased >= 0x7ff {
            return None;
        }
        (biased as u64) << 52 | (q & ((1 << 52) - 1))
    };
    Some(f64::from_bits(bits))
}

/// An unsigned big integer, base 2^32, least significant limb first, no
/// trailing zero limbs.
struct Big(Vec<u32>);

impl Big {
    fn one() -> Self {
        Big(vec![1])
    }

    fn from_digits(digits: &[u8]) -> Self {
        let mut big = Big(Vec::with_capacity(digits.len() / 9 + 2));
        for chunk in digits.chunks(9) {
            let value = chunk
                .iter()
                .fold(0u32, |acc, &d| acc * 10 + u32::from(d - b'0'));
            big.mul_small(10u32.pow(chunk.len() as u32));
            big.add_small(value);
        }
        big
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn bits(&self) -> u64 {
        match self.0.last() {
            Some(top) => self.0.len() as u64 * 32 - u64::from(top.leading_zeros()),
            None => 0,
        }
    }

    fn mul_small(&mut self, factor: u32) {
        let mut carry = 0u64;
        for limb in &mut self.0 {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
        self.trim();
    }

    fn add_small(&mut self, addend: u32) {
        let mut carry = u64::from(addend);
        for limb in &mut self.0 {
            if carry == 0 {
                break;
            }
            let sum = u64::from(*limb) + carry;
            *limb = sum as u32;
            carry = sum >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }

    fn shl(&mut self, shift: u32) {
        if self.is_zero() {
            return;
        }
        let bits = shift % 32;
        let mut shifted = vec![0; (shift / 32) as usize];
        shifted.reserve(self.0.len() + 1);
        let mut carry = 0u32;
        for &limb in &self.0 {
            // `checked_shr`: a shift by 32 (bits = 0) carries nothing.
            shifted.push(limb << bits | carry);
            carry = limb.checked_shr(32 - bits).unwrap_or(0);
        }
        shifted.push(carry);
        self.0 = shifted;
        self.trim();
    }

    fn shr1(&mut self) {
        let mut carry = 0u32;
        for limb in self.0.iter_mut().rev() {
            let next = *limb << 31;
            *limb = *limb >> 1 | carry;
            carry = next;
        }
        self.trim();
    }

    /// `self -= other`, with `other <= self`.
    fn sub(&mut self, other: &Big) {
        let mut borrow = false;
        for (i, limb) in self.0.iter_mut().enumerate() {
            let (value, b1) = limb.overflowing_sub(other.0.get(i).copied().unwrap_or(0));
            let (value, b2) = value.overflowing_sub(u32::from(borrow));
            *limb = value;
            borrow = b1 || b2;
        }
        self.trim();
    }

    fn cmp(&self, other: &Big) -> std::cmp::Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::nearest;
    use proptest::prelude::*;

    fn std_parse(text: &str) -> Option<u64> {
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(f64::to_bits)
    }

    #[track_caller]
    fn agrees(text: &str) {
        assert_eq!(
            nearest(text.as_bytes()).map(f64::to_bits),
            std_parse(text),
            "{text}"
        );
    }

    #[test]
    fn edges_of_the_f64_range() {
        for text in [
            "0", "-0", "0.0", "0e5", "1", "-1", "0.1", "0.2", "0.3", "36.5", "-40.25",
            "123456789012345678901234567890", "9007199254740993", "9007199254740992",
            "9007199254740995", "1e308", "1.7976931348623157e308", "1.7976931348623158e308",
            "1.7976931348623159e308", "2e308", "1e309", "1e-307", "2.2250738585072014e-308",
            "2.2250738585072011e-308", "4.9406564584124654e-324", "5e-324", "2.4703282292062328e-324",
            "2.4703282292062327e-324", "2.4703282292062327e-324", "1e-324", "3e-324", "1e-400",
            "1e99999999999999999999", "1e-99999999999999999999", "0.000000000000000000000000001e27",
            "100000000000000000000000000000000000000000000000000000e-50",
            // a tie (2^53 + 1) and just above it, written long
            "9007199254740993.0000000000000000000000000000000000000000000000001",
            "9007199254740993.0000000000000000000000000000000000000000000000000",
            "2.225073858507201136057409796709131975934819546351645648023426109724822222021076945516529523908135087914149158913039621106870086438694594645527657207407820621743379988141063267329253552286881372149012981122451451889849057222307285255133155755015914397476397983411801999323962548289017107081850690630666655994938275772572015763062690663332647565300009245888316433037779791869612049497390377829704905051080609940730262937128958950003583799967207254304360284078895771796150945516748243471030702609144621572289880258182545180325707018860872113128079512233426288368622321503775666622503982534335974568884423900265498198385487948292206894721689831099698365846814022854243330660339850886445804001034933970427567186443383770486037861622771738545623065874679014086723327636718751e-308",
        ] {
            agrees(text);
        }
    }

    #[test]
    fn past_eight_hundred_digits_only_the_tail_being_non_zero_counts() {
        let tie = "9007199254740993";
        let zeros = "0".repeat(900);
        agrees(&format!("{tie}.{zeros}"));
        agrees(&format!("{tie}.{zeros}1"));
        agrees(&format!("0.{}1e10", "0".repeat(2000)));
        agrees(&format!("{}e-1000", "7".repeat(1000)));
    }

    proptest! {
        #[test]
        fn agrees_with_std_on_any_decimal(
            whole in "-?(0|[1-9][0-9]{0,30})",
            fraction in proptest::option::of("[0-9]{1,40}"),
            exponent in proptest::option::of(-350i32..350),
        ) {
            let mut text = whole;
            if let Some(fraction) = fraction {
                text = format!("{text}.{fraction}");
            }
            if let Some(exponent) = exponent {
                text = format!("{text}e{exponent}");
            }
            agrees(&text);
        }

        #[test]
        fn reads_back_every_f64_std_writes(bits in any::<u64>()) {
            let value = f64::from_bits(bits);
            prop_assume!(value.is_finite());
            for text in [format!("{value:e}"), format!("{value}")] {
                prop_assert_eq!(nearest(text.as_bytes()).map(f64::to_bits), Some(bits), "{}", text);
            }
        }

        #[test]
        fn halfway_points_round_to_even(bits in 1u64..0x7fe0_0000_0000_0000) {
            // The exact midpoint between an f64 and the next one up.
            let low = f64::from_bits(bits);
            let high = f64::from_bits(bits + 1);
            let text = midpoint(low, high);
            agrees(&text);
        }
    }

    /// The exact decimal midpoint of two adjacent positive `f64`s.
    fn midpoint(low: f64, high: f64) -> String {
        // Both are m × 2^e exactly; the midpoint is (m_low + m_high) × 2^(e-1).
        let (m_low, e_low) = parts(low);
        let (m_high, e_high) = parts(high);
        let e = e_low.min(e_high);
        let sum = (u128::from(m_low) << (e_low - e)) + (u128::from(m_high) << (e_high - e));
        exact_decimal(sum, e - 1)
    }

    fn parts(value: f64) -> (u64, i32) {
        let bits = value.to_bits();
        let exponent = ((bits >> 52) & 0x7ff) as i32;
        let fraction = bits & ((1 << 52) - 1);
        if exponent == 0 {
            (fraction, -1074)
        } else {
            (fraction | 1 << 52, exponent - 1075)
        }
    }

    /// `m × 2^e` written out exactly in decimal.
    fn exact_decimal(m: u128, e: i32) -> String {
        // Decimal digits as a little-endian base-10^9 vector.
        let mut digits: Vec<u64> = vec![];
        let mut rest = m;
        while rest > 0 {
            digits.push((rest % 1_000_000_000) as u64);
            rest /= 1_000_000_000;
        }
        let mul = |digits: &mut Vec<u64>, factor: u64| {
            let mut carry = 0;
            for d in digits.iter_mut() {
                let v = *d * factor + carry;
                *d = v % 1_000_000_000;
                carry = v / 1_000_000_000;
            }
            while carry > 0 {
                digits.push(carry % 1_000_000_000);
                carry /= 1_000_000_000;
            }
        };
        // m × 2^e = m × 5^-e / 10^-e when e < 0.
        let scale = if e >= 0 {
            for _ in 0..e {
                mul(&mut digits, 2);
            }
            0
        } else {
            for _ in 0..-e {
                mul(&mut digits, 5);
            }
            -e
        };
        let mut text = String::new();
        for (i, d) in digits.iter().rev().enumerate() {
            if i == 0 {
                text.push_str(&d.to_string());
            } else {
                text.push_str(&format!("{d:09}"));
            }
        }
        format!("{text}e-{scale}")
    }
}
