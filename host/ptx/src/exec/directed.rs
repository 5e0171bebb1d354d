//! f32 `add`, `mul`, `fma`, `div` and `sqrt` in the directed modes (`.rz`, `.rm`, `.rp`)
//! through the host's f64 arithmetic: a product of two f32s is exact in f64, a sum's rounding
//! error is recovered exactly (TwoSum), and so is the remainder of a quotient or a square root
//! (by a fused multiply-add), so where the exact result lies is known and it is rounded once. Operands that
//! are not both finite and nonzero go to `round.rs`, which this must equal bit for bit (a test
//! checks it).

use super::round::{self, Format};
use crate::ir::Round;

/// Whether f32 `bits` are neither zero, infinite nor NaN.
pub(super) fn finite_nonzero(bits: u64) -> bool {
    let field = bits & 0x7f80_0000;
    field != 0x7f80_0000 && bits & 0x7fff_ffff != 0
}

fn value(bits: u64) -> f64 {
    f32::from_bits(bits as u32) as f64
}

/// `a + b` exactly, as the rounded sum and its error.
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// The f32 bits of `s + e` (exact, `e` below half an f64 ulp of `s`, `s` nonzero) rounded in
/// a directed `mode`.
fn directed(s: f64, e: f64, mode: Round) -> u64 {
    let r = s as f32;
    let near = r as f64;
    // Where the exact value lies from the nearest f32: on the side of `s` when `s` is not
    // that f32 (it cannot pass a neighbouring f32), else on the side of the error.
    let side = if near != s { s.partial_cmp(&near) } else { e.partial_cmp(&0.0) };
    let bits = r.to_bits();
    let below = side == Some(std::cmp::Ordering::Less);
    let above = side == Some(std::cmp::Ordering::Greater);
    let toward_zero = |b: u32| b - 1; // a magnitude one step smaller, either sign
    let down = |b: u32| match b {
        0 | 0x8000_0000 => 0x8000_0001,
        b if b & 0x8000_0000 == 0 => b - 1,
        b => b + 1,
    };
    let up = |b: u32| match b {
        0 | 0x8000_0000 => 1,
        b if b & 0x8000_0000 == 0 => b + 1,
        b => b - 1,
    };
    let out = match mode {
        Round::Zero if r != 0.0 && ((r > 0.0 && below) || (r < 0.0 && above)) => toward_zero(bits),
        Round::Down if below => down(bits),
        Round::Up if above => up(bits),
        _ => bits,
    };
    out as u64
}

/// An exact zero sum: +0 but when rounding down.
fn zero(mode: Round) -> u64 {
    if mode == Round::Down { 0x8000_0000 } else { 0 }
}

pub(crate) fn add(a: u64, b: u64, mode: Round) -> u64 {
    if mode == Round::Nearest || !finite_nonzero(a) || !finite_nonzero(b) {
        return round::add(a, b, Format::Single, mode);
    }
    let (s, e) = two_sum(value(a), value(b));
    if s == 0.0 { zero(mode) } else { directed(s, e, mode) }
}

pub(crate) fn mul(a: u64, b: u64, mode: Round) -> u64 {
    if mode == Round::Nearest || !finite_nonzero(a) || !finite_nonzero(b) {
        return round::mul(a, b, Format::Single, mode);
    }
    directed(value(a) * value(b), 0.0, mode)
}

pub(crate) fn fma(a: u64, b: u64, c: u64, mode: Round) -> u64 {
    if mode == Round::Nearest || !finite_nonzero(a) || !finite_nonzero(b) {
        return round::fma(a, b, c, Format::Single, mode);
    }
    let p = value(a) * value(b);
    if !finite_nonzero(c) {
        return match c & 0x7fff_ffff {
            0 => directed(p, 0.0, mode),
            _ => round::fma(a, b, c, Format::Single, mode),
        };
    }
    let (s, e) = two_sum(p, value(c));
    if s == 0.0 { zero(mode) } else { directed(s, e, mode) }
}

pub(crate) fn div(a: u64, b: u64, mode: Round) -> u64 {
    if mode == Round::Nearest || !finite_nonzero(a) || !finite_nonzero(b) {
        return round::div(a, b, Format::Single, mode);
    }
    let (x, y) = (value(a), value(b));
    let q = x / y;
    // x - q y, exact: the quotient lies above q when it has the sign of y.
    let rest = (-q).mul_add(y, x);
    directed(q, rest * y.signum(), mode)
}

pub(crate) fn sqrt(a: u64, mode: Round) -> u64 {
    if mode == Round::Nearest || !finite_nonzero(a) || a & 0x8000_0000 != 0 {
        return round::sqrt(a, Format::Single, mode);
    }
    let x = value(a);
    let r = x.sqrt();
    // x - r r, exact: the root lies above r when it is positive.
    directed(r, (-r).mul_add(r, x), mode)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// f32 bits with exponents near each other, at the ends of the range and subnormal, zeros,
    /// infinities and NaNs.
    pub(in crate::exec) fn operand(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let r = *seed;
        let exp = match r % 8 {
            0 => 0,
            1 => 1,
            2 => 0xfe,
            3 => 0xff,
            4 => 0x7f,
            _ => 0x60 + (r >> 8) % 0x40,
        };
        let mant = match (r >> 20) % 4 {
            0 => 0,
            1 => 0x7f_ffff,
            2 => 1 << ((r >> 24) % 23),
            _ => (r >> 32) & 0x7f_ffff,
        };
        ((r >> 63) << 31) | exp << 23 | mant
    }

    #[test]
    fn directed_f32_equals_the_soft_float_core_bit_for_bit() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..300_000 {
            let (a, b, c) = (operand(&mut seed), operand(&mut seed), operand(&mut seed));
            for mode in [Round::Zero, Round::Down, Round::Up] {
                let text = format!("{a:#x} {b:#x} {c:#x} {mode:?}");
                assert_eq!(add(a, b, mode), round::add(a, b, Format::Single, mode), "add {text}");
                assert_eq!(
                    add(a, a ^ 0x8000_0000, mode),
                    round::add(a, a ^ 0x8000_0000, Format::Single, mode),
                    "{text}"
                );
                assert_eq!(mul(a, b, mode), round::mul(a, b, Format::Single, mode), "mul {text}");
                assert_eq!(fma(a, b, c, mode), round::fma(a, b, c, Format::Single, mode), "fma {text}");
                assert_eq!(div(a, b, mode), round::div(a, b, Format::Single, mode), "div {text}");
                assert_eq!(sqrt(a, mode), round::sqrt(a, Format::Single, mode), "sqrt {text}");
            }
        }
    }
}
