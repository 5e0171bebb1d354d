//! IEEE arithmetic rounded in any of PTX's four modes, in software: the exact result as an
//! integer significand with a sticky bit, rounded once. f32 and f64 to nearest use the host's
//! own floats, which are IEEE-correct, and come here only in the directed modes (`.rz`, `.rm`,
//! `.rp`); 16-bit floats come here in every mode. Every operation works on the bits of one
//! [`Format`].

use crate::ir::Round;

/// A finite value `(-1)^neg * mant * 2^exp`, and `sticky` when nonzero bits lie below `mant`.
#[derive(Clone, Copy, Debug)]
struct Exact {
    neg: bool,
    mant: u128,
    exp: i32,
    sticky: bool,
}

/// A float format the core rounds to: f16, bf16, f32, f64, or an 8-bit one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Half,
    Brain,
    Single,
    Double,
    /// e4m3's precision and bias with a wider exponent, so that nothing overflows on the way to
    /// its saturation (at 448, below its all-ones NaN).
    E4m3Wide,
    /// e5m2: f16's top byte.
    E5m2,
}

impl Format {
    /// f64 when `wide`, else f32.
    pub(crate) fn of(wide: bool) -> Format {
        if wide { Format::Double } else { Format::Single }
    }
}

/// Precision (with the hidden bit), exponent bias and width of the exponent field.
fn format(f: Format) -> (u32, i32, u32) {
    match f {
        Format::Half => (11, 15, 5),
        Format::Brain => (8, 127, 8),
        Format::Single => (24, 127, 8),
        Format::Double => (53, 1023, 11),
        Format::E4m3Wide => (4, 7, 5),
        Format::E5m2 => (3, 15, 5),
    }
}

/// The GPU's canonical NaN: every bit but the sign.
pub(crate) fn nan(f: Format) -> u64 {
    sign_bit(f) - 1
}

pub(crate) fn sign_bit(f: Format) -> u64 {
    let (p, _, e) = format(f);
    1 << (p + e - 1)
}

fn inf(f: Format, neg: bool) -> u64 {
    let (p, _, e) = format(f);
    (((1u64 << e) - 1) << (p - 1)) | if neg { sign_bit(f) } else { 0 }
}

fn zero(f: Format, neg: bool) -> u64 {
    if neg { sign_bit(f) } else { 0 }
}

/// What the bits of a float are.
enum Class {
    Nan,
    Inf(bool),
    Zero(bool),
    Finite(Exact),
}

fn class(bits: u64, f: Format) -> Class {
    let (p, bias, e) = format(f);
    let neg = bits & sign_bit(f) != 0;
    let frac = bits & ((1u64 << (p - 1)) - 1);
    let field = ((bits >> (p - 1)) & ((1 << e) - 1)) as i32;
    match field {
        f if f == (1 << e) - 1 && frac != 0 => Class::Nan,
        f if f == (1 << e) - 1 => Class::Inf(neg),
        0 if frac == 0 => Class::Zero(neg),
        0 => Class::Finite(Exact { neg, mant: frac as u128, exp: 1 - bias - (p as i32 - 1), sticky: false }),
        f => Class::Finite(Exact {
            neg,
            mant: (frac | 1 << (p - 1)) as u128,
            exp: f - bias - (p as i32 - 1),
            sticky: false,
        }),
    }
}

/// `x` rounded once to the format, in `mode`.
fn round(x: Exact, f: Format, mode: Round) -> u64 {
    let (p, bias, e) = format(f);
    if x.mant == 0 && !x.sticky {
        return zero(f, x.neg);
    }
    let top = x.exp + 127 - x.mant.leading_zeros() as i32; // the exponent of the leading bit
    let min_lsb = 1 - bias - (p as i32 - 1);
    let lsb = (top - (p as i32 - 1)).max(min_lsb);
    let (mut kept, half, rest) = match lsb - x.exp {
        s if s <= 0 => (x.mant << -s, false, x.sticky),
        s if s > 128 => (0, false, true),
        128 => (0, x.mant >> 127 != 0, x.sticky || x.mant << 1 != 0),
        s => (x.mant >> s, (x.mant >> (s - 1)) & 1 != 0, x.sticky || x.mant & ((1u128 << (s - 1)) - 1) != 0),
    };
    let inexact = half || rest;
    let up = match mode {
        Round::Nearest => half && (rest || kept & 1 != 0),
        Round::Zero => false,
        Round::Up => inexact && !x.neg,
        Round::Down => inexact && x.neg,
    };
    kept += up as u128;
    let mut lsb = lsb;
    if kept >> p != 0 {
        kept >>= 1;
        lsb += 1;
    }
    let sign = if x.neg { sign_bit(f) } else { 0 };
    if kept >> (p - 1) == 0 {
        return sign | kept as u64; // subnormal (or zero)
    }
    let field = lsb + p as i32 - 1 + bias;
    if field >= (1 << e) - 1 {
        // Overflow: to infinity, or to the largest finite value when the mode rounds away from it.
        let toward_inf = match mode {
            Round::Nearest => true,
            Round::Zero => false,
            Round::Up => !x.neg,
            Round::Down => x.neg,
        };
        return if toward_inf { inf(f, x.neg) } else { inf(f, x.neg) - 1 };
    }
    sign | (field as u64) << (p - 1) | (kept as u64 & ((1 << (p - 1)) - 1))
}

/// The exact sum of two exact values (significands below 2^107, no sticky bits).
fn sum(x: Exact, y: Exact, mode: Round) -> Exact {
    if x.mant == 0 {
        return y;
    }
    if y.mant == 0 {
        return x;
    }
    let top = |v: &Exact| v.exp + 127 - v.mant.leading_zeros() as i32;
    let (x, y) = if top(&x) >= top(&y) { (x, y) } else { (y, x) };
    // x's leading bit goes to bit 125: ample guard bits for either format.
    let shift = 125 - (127 - x.mant.leading_zeros() as i32);
    let (big, exp) = (x.mant << shift, x.exp - shift);
    let (small, sticky) = match exp - y.exp {
        s if s <= 0 => (y.mant << -s, false),
        s if s >= 128 => (0, true),
        s => (y.mant >> s, y.mant & ((1u128 << s) - 1) != 0),
    };
    if x.neg == y.neg {
        return Exact { neg: x.neg, mant: big + small, exp, sticky };
    }
    // big > small when sticky (y is far below x), so the difference stays positive.
    match big.cmp(&small) {
        std::cmp::Ordering::Greater => Exact { neg: x.neg, mant: big - small - sticky as u128, exp, sticky },
        std::cmp::Ordering::Less => Exact { neg: y.neg, mant: small - big, exp, sticky },
        // An exact zero is +0 but when rounding down.
        std::cmp::Ordering::Equal => Exact { neg: mode == Round::Down, mant: 0, exp: 0, sticky: false },
    }
}

pub(crate) fn add(a: u64, b: u64, f: Format, mode: Round) -> u64 {
    match (class(a, f), class(b, f)) {
        (Class::Nan, _) | (_, Class::Nan) => nan(f),
        (Class::Inf(x), Class::Inf(y)) if x != y => nan(f),
        (Class::Inf(x), _) | (_, Class::Inf(x)) => inf(f, x),
        (Class::Zero(x), Class::Zero(y)) => zero(f, if x == y { x } else { mode == Round::Down }),
        (Class::Zero(_), _) => b,
        (_, Class::Zero(_)) => a,
        (Class::Finite(x), Class::Finite(y)) => round(sum(x, y, mode), f, mode),
    }
}

/// `a * b`, exactly: what `mul` rounds and `fma` adds to.
fn product(a: u64, b: u64, f: Format) -> Class {
    let neg = (a ^ b) & sign_bit(f) != 0;
    match (class(a, f), class(b, f)) {
        (Class::Nan, _) | (_, Class::Nan) => Class::Nan,
        (Class::Inf(_), Class::Zero(_)) | (Class::Zero(_), Class::Inf(_)) => Class::Nan,
        (Class::Inf(_), _) | (_, Class::Inf(_)) => Class::Inf(neg),
        (Class::Zero(_), _) | (_, Class::Zero(_)) => Class::Zero(neg),
        (Class::Finite(x), Class::Finite(y)) => {
            Class::Finite(Exact { neg, mant: x.mant * y.mant, exp: x.exp + y.exp, sticky: false })
        }
    }
}

pub(crate) fn mul(a: u64, b: u64, f: Format, mode: Round) -> u64 {
    match product(a, b, f) {
        Class::Nan => nan(f),
        Class::Inf(neg) => inf(f, neg),
        Class::Zero(neg) => zero(f, neg),
        Class::Finite(x) => round(x, f, mode),
    }
}

pub(crate) fn fma(a: u64, b: u64, c: u64, f: Format, mode: Round) -> u64 {
    match (product(a, b, f), class(c, f)) {
        (Class::Nan, _) | (_, Class::Nan) => nan(f),
        (Class::Inf(x), Class::Inf(y)) if x != y => nan(f),
        (Class::Inf(x), _) | (_, Class::Inf(x)) => inf(f, x),
        (Class::Zero(x), Class::Zero(y)) => zero(f, if x == y { x } else { mode == Round::Down }),
        (Class::Zero(_), _) => c,
        (Class::Finite(p), Class::Zero(_)) => round(p, f, mode),
        (Class::Finite(p), Class::Finite(z)) => round(sum(p, z, mode), f, mode),
    }
}

pub(crate) fn div(a: u64, b: u64, f: Format, mode: Round) -> u64 {
    let neg = (a ^ b) & sign_bit(f) != 0;
    match (class(a, f), class(b, f)) {
        (Class::Nan, _) | (_, Class::Nan) => nan(f),
        (Class::Inf(_), Class::Inf(_)) | (Class::Zero(_), Class::Zero(_)) => nan(f),
        (Class::Inf(_), _) | (_, Class::Zero(_)) => inf(f, neg),
        (Class::Zero(_), _) | (_, Class::Inf(_)) => zero(f, neg),
        (Class::Finite(x), Class::Finite(y)) => {
            // The dividend's leading bit at 125: a quotient of 72 bits or more, and a remainder.
            let shift = 125 - (127 - x.mant.leading_zeros() as i32);
            let n = x.mant << shift;
            let quotient = n / y.mant;
            let exact = quotient * y.mant == n; // no second division for the remainder
            let q = Exact { neg, mant: quotient, exp: x.exp - shift - y.exp, sticky: !exact };
            round(q, f, mode)
        }
    }
}

pub(crate) fn sqrt(a: u64, f: Format, mode: Round) -> u64 {
    match class(a, f) {
        Class::Nan | Class::Inf(true) => nan(f),
        Class::Inf(false) | Class::Zero(_) => a,
        Class::Finite(x) if x.neg => nan(f),
        Class::Finite(x) => {
            // An even exponent and the leading bit at 124 or 125: a root of 62 bits or more.
            let mut shift = 124 - (127 - x.mant.leading_zeros() as i32);
            if (x.exp - shift) % 2 != 0 {
                shift += 1;
            }
            let n = x.mant << shift;
            let r = isqrt(n);
            round(Exact { neg: false, mant: r, exp: (x.exp - shift) / 2, sticky: r * r != n }, f, mode)
        }
    }
}

/// The integer square root (rounded down) of `n`.
fn isqrt(n: u128) -> u128 {
    // The f64 root is within a few hundred of the integer one here (n has 124 or more bits);
    // one step of Newton's method brings it within one, and the loops make it exact.
    let mut r = (n as f64).sqrt() as u128;
    if r > 0 {
        r = (r + n / r) / 2;
    }
    while r * r > n {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= n {
        r += 1;
    }
    r
}

/// A float of either width converted to the other (or the same), rounded in `mode`.
pub(crate) fn convert(a: u64, from: Format, to: Format, mode: Round) -> u64 {
    match class(a, from) {
        Class::Nan => nan(to),
        Class::Inf(neg) => inf(to, neg),
        Class::Zero(neg) => zero(to, neg),
        Class::Finite(x) => round(x, to, mode),
    }
}

/// An integer (as an i128 holding any PTX integer) converted to a float, rounded in `mode`.
pub(crate) fn from_int(v: i128, f: Format, mode: Round) -> u64 {
    round(Exact { neg: v < 0, mant: v.unsigned_abs(), exp: 0, sticky: false }, f, mode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Format::{Double, Single};

    /// A generator of float bits that reaches every class: zeros, subnormals, normals of every
    /// exponent, infinities and NaNs.
    struct Bits(u64);

    impl Bits {
        fn next(&mut self, wide: bool) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = self.0 ^ (self.0 >> 29);
            let f = Format::of(wide);
            let (p, _, _) = format(f);
            match r % 16 {
                0 => r & (sign_bit(f) | ((1 << (p - 1)) - 1)), // subnormal or zero
                1 => (r & sign_bit(f)) | (inf(f, false) - (r >> 60) % 3), // near or at infinity
                _ if wide => r,
                _ => r & 0xffff_ffff,
            }
        }
    }

    /// Rounding to nearest agrees bit for bit with the host's IEEE arithmetic.
    #[test]
    fn nearest_matches_the_hosts_ieee_arithmetic() {
        let mut g = Bits(7);
        let canon = |v: u64, wide: bool| if class(v, Format::of(wide)).is_nan() { nan(Format::of(wide)) } else { v };
        for _ in 0..200_000 {
            let (a, b, c) = (g.next(false), g.next(false), g.next(false));
            let (x, y, z) = (f32::from_bits(a as u32), f32::from_bits(b as u32), f32::from_bits(c as u32));
            let n = Round::Nearest;
            assert_eq!(add(a, b, Single, n), canon((x + y).to_bits() as u64, false), "{x:e} + {y:e}");
            assert_eq!(mul(a, b, Single, n), canon((x * y).to_bits() as u64, false), "{x:e} * {y:e}");
            assert_eq!(div(a, b, Single, n), canon((x / y).to_bits() as u64, false), "{x:e} / {y:e}");
            assert_eq!(sqrt(a, Single, n), canon(x.sqrt().to_bits() as u64, false), "sqrt {x:e}");
            assert_eq!(
                fma(a, b, c, Single, n),
                canon(x.mul_add(y, z).to_bits() as u64, false),
                "fma {x:e} {y:e} {z:e}"
            );
            let (a, b, c) = (g.next(true), g.next(true), g.next(true));
            let (x, y, z) = (f64::from_bits(a), f64::from_bits(b), f64::from_bits(c));
            assert_eq!(add(a, b, Double, n), canon((x + y).to_bits(), true), "{x:e} + {y:e}");
            assert_eq!(mul(a, b, Double, n), canon((x * y).to_bits(), true), "{x:e} * {y:e}");
            assert_eq!(div(a, b, Double, n), canon((x / y).to_bits(), true), "{x:e} / {y:e}");
            assert_eq!(sqrt(a, Double, n), canon(x.sqrt().to_bits(), true), "sqrt {x:e}");
            assert_eq!(fma(a, b, c, Double, n), canon(x.mul_add(y, z).to_bits(), true), "fma {x:e} {y:e} {z:e}");
            assert_eq!(convert(a, Double, Single, n), canon((x as f32).to_bits() as u64, false), "{x:e} as f32");
            let i = a as i64;
            assert_eq!(from_int(i as i128, Single, n), (i as f32).to_bits() as u64);
            assert_eq!(from_int(i as i128, Double, n), (i as f64).to_bits());
        }
    }

    /// The directed modes bracket the exact value: down <= exact <= up, adjacent or equal,
    /// and toward zero is one of them; checked where f64 holds f32 results exactly.
    #[test]
    fn directed_modes_bracket_the_exact_value() {
        let mut g = Bits(11);
        for _ in 0..200_000 {
            let (a, b) = (g.next(false), g.next(false));
            let (x, y) = (f32::from_bits(a as u32) as f64, f32::from_bits(b as u32) as f64);
            if !x.is_finite() || !y.is_finite() {
                continue;
            }
            // f32 products and square roots' squares are exact in f64.
            check(mul(a, b, Single, Round::Down), mul(a, b, Single, Round::Up), mul(a, b, Single, Round::Zero), |r| {
                r.partial_cmp(&(x * y))
            });
            if x >= 0.0 {
                check(sqrt(a, Single, Round::Down), sqrt(a, Single, Round::Up), sqrt(a, Single, Round::Zero), |r| {
                    (r * r).partial_cmp(&x)
                });
            }
            if y != 0.0 {
                // r versus x / y: compare r * y with x (exact in f64), flipped when y < 0.
                check(
                    div(a, b, Single, Round::Down),
                    div(a, b, Single, Round::Up),
                    div(a, b, Single, Round::Zero),
                    |r| {
                        let o = (r * y).partial_cmp(&x)?;
                        Some(if y < 0.0 { o.reverse() } else { o })
                    },
                );
            }
        }
    }

    /// `down <= exact <= up`, the two equal or adjacent, and `zero` the one nearer zero.
    fn check(down: u64, up: u64, zero: u64, cmp: impl Fn(f64) -> Option<std::cmp::Ordering>) {
        use std::cmp::Ordering::*;
        let (d, u, z) = (f32::from_bits(down as u32), f32::from_bits(up as u32), f32::from_bits(zero as u32));
        if !d.is_finite() || !u.is_finite() {
            return;
        }
        assert!(matches!(cmp(d as f64), Some(Less | Equal)), "down {d:e}");
        assert!(matches!(cmp(u as f64), Some(Greater | Equal)), "up {u:e}");
        assert!(d == u || d.next_up() == u, "{d:e} and {u:e} not adjacent");
        assert!(z == if d >= 0.0 { d } else { u } || (d == 0.0 && u == 0.0), "zero {z:e} of {d:e} {u:e}");
    }

    #[test]
    fn overflow_and_exact_zeros_follow_the_mode() {
        let max = f32::MAX.to_bits() as u64;
        assert_eq!(add(max, max, Single, Round::Zero), max);
        assert_eq!(add(max, max, Single, Round::Up), inf(Single, false));
        assert_eq!(mul(max, max | 1 << 31, Single, Round::Up), max | 1 << 31);
        let one = 1f32.to_bits() as u64;
        assert_eq!(add(one, one | 1 << 31, Single, Round::Down), 1 << 31);
        assert_eq!(add(one, one | 1 << 31, Single, Round::Up), 0);
        // 1 + 2^-30 rounds up only upward; 1/3 and sqrt 2 bracket.
        let tiny = 2f32.powi(-30).to_bits() as u64;
        assert_eq!(add(one, tiny, Single, Round::Up), 1f32.next_up().to_bits() as u64);
        assert_eq!(add(one, tiny, Single, Round::Down), one);
        let three = 3f64.to_bits();
        assert_eq!(div(1f64.to_bits(), three, Double, Round::Up), (1.0f64 / 3.0).next_up().to_bits());
        assert_eq!(from_int(16_777_217, Single, Round::Up), 16_777_218f32.to_bits() as u64);
        assert_eq!(from_int(-16_777_217, Single, Round::Zero), (-16_777_216f32).to_bits() as u64);
    }

    impl Class {
        fn is_nan(&self) -> bool {
            matches!(self, Class::Nan)
        }
    }
}
