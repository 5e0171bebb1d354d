//! What each operation computes on register bits: integers of PTX's widths with its wrapping,
//! saturation and shift rules, floats as IEEE values rounded to nearest (Rust's own), with
//! `.ftz` flushing subnormal inputs and results to zero.

use crate::ir::{AtomOp, BinOp, BoolOp, Cmp, Round, TerOp, Ty, UnOp};

/// The bits of a register seen as `ty`: masked to its width.
pub(crate) fn mask(ty: Ty, v: u64) -> u64 {
    match ty.bits() {
        64 => v,
        1 => v & 1,
        b => v & ((1u64 << b) - 1),
    }
}

/// A value of `ty` sign-extended to 64 bits (signed types) or zero-extended.
pub(crate) fn extend(ty: Ty, v: u64) -> i128 {
    let v = mask(ty, v);
    match ty.signed() {
        true => {
            let shift = 64 - ty.bits();
            (((v << shift) as i64) >> shift) as i128
        }
        false => v as i128,
    }
}

fn f32_of(v: u64) -> f32 {
    f32::from_bits(v as u32)
}

fn bits32(f: f32) -> u64 {
    f.to_bits() as u64
}

/// `f` with subnormals flushed to a zero of the same sign when `ftz`.
fn flush32(f: f32, ftz: bool) -> f32 {
    match ftz && f.is_subnormal() {
        true => f32::from_bits(f.to_bits() & 0x8000_0000),
        false => f,
    }
}

/// A canonical NaN, as the GPU returns from arithmetic on NaNs.
const NAN32: u64 = 0x7fff_ffff;
const NAN64: u64 = 0x7fff_ffff_ffff_ffff;

fn float_result32(f: f32, ftz: bool) -> u64 {
    match f.is_nan() {
        true => NAN32,
        false => bits32(flush32(f, ftz)),
    }
}

fn float_result64(f: f64) -> u64 {
    match f.is_nan() {
        true => NAN64,
        false => f.to_bits(),
    }
}

pub(crate) fn unary(op: UnOp, ty: Ty, ftz: bool, a: u64) -> u64 {
    if ty == Ty::F32 {
        let x = flush32(f32_of(a), ftz);
        return match op {
            UnOp::Neg => bits32(-x),
            UnOp::Abs => bits32(x.abs()),
            UnOp::Sqrt => float_result32(x.sqrt(), ftz),
            UnOp::Rcp => float_result32(1.0 / x, ftz),
            UnOp::Rsqrt => float_result32(1.0 / x.sqrt(), ftz),
            UnOp::Sin => float_result32(x.sin(), ftz),
            UnOp::Cos => float_result32(x.cos(), ftz),
            UnOp::Lg2 => float_result32(x.log2(), ftz),
            UnOp::Ex2 => float_result32(x.exp2(), ftz),
            _ => unreachable!("decode refuses {op:?} on floats"),
        };
    }
    if ty == Ty::F64 {
        let x = f64::from_bits(a);
        return match op {
            UnOp::Neg => (-x).to_bits(),
            UnOp::Abs => x.abs().to_bits(),
            UnOp::Sqrt => float_result64(x.sqrt()),
            UnOp::Rcp => float_result64(1.0 / x),
            UnOp::Rsqrt => float_result64(1.0 / x.sqrt()),
            _ => unreachable!("decode refuses {op:?} on f64"),
        };
    }
    let bits = ty.bits();
    let v = mask(ty, a);
    mask(
        ty,
        match op {
            UnOp::Neg => (v as i64).wrapping_neg() as u64,
            UnOp::Abs => (extend(ty, v) as i64).unsigned_abs(),
            UnOp::Not if ty == Ty::Pred => (v == 0) as u64,
            UnOp::Not => !v,
            UnOp::Cnot => (v == 0) as u64,
            UnOp::Popc => v.count_ones() as u64,
            UnOp::Clz => (v.leading_zeros() - (64 - bits)) as u64,
            UnOp::Brev => v.reverse_bits() >> (64 - bits),
            UnOp::Bfind => match ty.signed() {
                // The position of the most significant bit that differs from the sign.
                true => {
                    let s = extend(ty, v) as i64;
                    let m = if s < 0 { !s } else { s } as u64;
                    if m == 0 { u64::MAX } else { 63 - m.leading_zeros() as u64 }
                }
                false if v == 0 => u64::MAX,
                false => 63 - v.leading_zeros() as u64,
            },
            _ => unreachable!("decode refuses {op:?} on integers"),
        },
    )
}

pub(crate) fn binary(op: BinOp, ty: Ty, ftz: bool, a: u64, b: u64) -> u64 {
    if ty == Ty::F32 {
        let (x, y) = (flush32(f32_of(a), ftz), flush32(f32_of(b), ftz));
        return match op {
            BinOp::Add => float_result32(x + y, ftz),
            BinOp::Sub => float_result32(x - y, ftz),
            BinOp::MulLo => float_result32(x * y, ftz),
            BinOp::Div => float_result32(x / y, ftz),
            BinOp::Min => bits32(flush32(
                if x.is_nan() {
                    y
                } else if y.is_nan() {
                    x
                } else {
                    x.min(y)
                },
                ftz,
            )),
            BinOp::Max => bits32(flush32(
                if x.is_nan() {
                    y
                } else if y.is_nan() {
                    x
                } else {
                    x.max(y)
                },
                ftz,
            )),
            BinOp::CopySign => bits32(y.copysign(x)),
            _ => unreachable!("decode refuses {op:?} on f32"),
        };
    }
    if ty == Ty::F64 {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        return match op {
            BinOp::Add => float_result64(x + y),
            BinOp::Sub => float_result64(x - y),
            BinOp::MulLo => float_result64(x * y),
            BinOp::Div => float_result64(x / y),
            BinOp::Min => (if x.is_nan() {
                y
            } else if y.is_nan() {
                x
            } else {
                x.min(y)
            })
            .to_bits(),
            BinOp::Max => (if x.is_nan() {
                y
            } else if y.is_nan() {
                x
            } else {
                x.max(y)
            })
            .to_bits(),
            BinOp::CopySign => y.copysign(x).to_bits(),
            _ => unreachable!("decode refuses {op:?} on f64"),
        };
    }
    let bits = ty.bits();
    let (x, y) = (extend(ty, a), extend(ty, b));
    let (ua, ub) = (mask(ty, a), mask(ty, b));
    let result: u64 = match op {
        BinOp::Add => ua.wrapping_add(ub),
        BinOp::Sub => ua.wrapping_sub(ub),
        BinOp::AddSat => (x + y).clamp(i32::MIN as i128, i32::MAX as i128) as u64,
        BinOp::SubSat => (x - y).clamp(i32::MIN as i128, i32::MAX as i128) as u64,
        BinOp::MulLo => (x.wrapping_mul(y)) as u64,
        BinOp::MulHi => ((x * y) >> bits) as u64,
        BinOp::MulWide => return (x * y) as u64 & wide_mask(bits),
        // Division by zero gives all ones (unsigned) as on the GPU; signed gives -1.
        BinOp::Div if ub == 0 => u64::MAX,
        BinOp::Div => (x / y) as u64,
        BinOp::Rem if ub == 0 => ua,
        BinOp::Rem => (x % y) as u64,
        BinOp::Min => x.min(y) as u64,
        BinOp::Max => x.max(y) as u64,
        BinOp::And => ua & ub,
        BinOp::Or => ua | ub,
        BinOp::Xor => ua ^ ub,
        // Shifts past the width fill with zeros (or the sign, for signed right shifts).
        BinOp::Shl => {
            if ub >= bits as u64 {
                0
            } else {
                ua << ub
            }
        }
        BinOp::Shr if ty.signed() => (x >> ub.min(bits as u64 - 1).min(127)) as u64,
        BinOp::Shr => {
            if ub >= bits as u64 {
                0
            } else {
                ua >> ub
            }
        }
        BinOp::CopySign => unreachable!("decode refuses copysign on integers"),
    };
    mask(ty, result)
}

/// The mask of a result twice `bits` wide.
fn wide_mask(bits: u32) -> u64 {
    match bits * 2 {
        64 => u64::MAX,
        b => (1u64 << b) - 1,
    }
}

pub(crate) fn ternary(op: TerOp, ty: Ty, ftz: bool, a: u64, b: u64, c: u64) -> u64 {
    match op {
        TerOp::Fma if ty == Ty::F32 => {
            let (x, y, z) = (flush32(f32_of(a), ftz), flush32(f32_of(b), ftz), flush32(f32_of(c), ftz));
            float_result32(x.mul_add(y, z), ftz)
        }
        TerOp::Fma => float_result64(f64::from_bits(a).mul_add(f64::from_bits(b), f64::from_bits(c))),
        TerOp::MadLo => binary(BinOp::Add, ty, false, binary(BinOp::MulLo, ty, false, a, b), c),
        TerOp::MadHi => binary(BinOp::Add, ty, false, binary(BinOp::MulHi, ty, false, a, b), c),
        TerOp::MadWide => {
            let product = binary(BinOp::MulWide, ty, false, a, b);
            let wide = if ty.bits() == 32 { Ty::U64 } else { Ty::U32 };
            binary(BinOp::Add, wide, false, product, c)
        }
    }
}

pub(crate) fn compare(cmp: Cmp, ty: Ty, ftz: bool, a: u64, b: u64) -> bool {
    if ty.float() {
        let (x, y) = match ty {
            Ty::F32 => (flush32(f32_of(a), ftz) as f64, flush32(f32_of(b), ftz) as f64),
            _ => (f64::from_bits(a), f64::from_bits(b)),
        };
        let unordered = x.is_nan() || y.is_nan();
        return match cmp {
            Cmp::Eq => x == y,
            Cmp::Ne => !unordered && x != y,
            Cmp::Lt => x < y,
            Cmp::Le => x <= y,
            Cmp::Gt => x > y,
            Cmp::Ge => x >= y,
            Cmp::Equ => unordered || x == y,
            Cmp::Neu => unordered || x != y,
            Cmp::Ltu => unordered || x < y,
            Cmp::Leu => unordered || x <= y,
            Cmp::Gtu => unordered || x > y,
            Cmp::Geu => unordered || x >= y,
            Cmp::Num => !unordered,
            Cmp::Nan => unordered,
        };
    }
    let (x, y) = (extend(ty, a), extend(ty, b));
    match cmp {
        Cmp::Eq | Cmp::Equ => x == y,
        Cmp::Ne | Cmp::Neu => x != y,
        Cmp::Lt | Cmp::Ltu => x < y,
        Cmp::Le | Cmp::Leu => x <= y,
        Cmp::Gt | Cmp::Gtu => x > y,
        Cmp::Ge | Cmp::Geu => x >= y,
        Cmp::Num => true,
        Cmp::Nan => false,
    }
}

pub(crate) fn combine(op: BoolOp, a: bool, b: bool) -> bool {
    match op {
        BoolOp::And => a && b,
        BoolOp::Or => a || b,
        BoolOp::Xor => a ^ b,
    }
}

/// `cvt` from `from` to `to`.
pub(crate) fn convert(to: Ty, from: Ty, round: Option<Round>, sat: bool, ftz: bool, a: u64) -> u64 {
    match (to.float(), from.float()) {
        (true, true) => {
            let x = match from {
                Ty::F32 => flush32(f32_of(a), ftz) as f64,
                _ => f64::from_bits(a),
            };
            let x = match round {
                Some(r) => round_float(x, r),
                None => x,
            };
            let x = if sat { if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) } } else { x };
            match to {
                Ty::F32 => float_result32(x as f32, ftz),
                _ => float_result64(x),
            }
        }
        (true, false) => {
            let v = extend(from, a);
            match to {
                Ty::F32 => bits32(v as f32),
                _ => (v as f64).to_bits(),
            }
        }
        (false, true) => {
            let x = match from {
                Ty::F32 => flush32(f32_of(a), ftz) as f64,
                _ => f64::from_bits(a),
            };
            let x = round_float(x, round.unwrap_or(Round::Zero));
            // Out of range saturates to the type's bounds; NaN becomes 0, as on the GPU.
            let (lo, hi) = bounds(to);
            if x.is_nan() { 0 } else { mask(to, (x.clamp(lo as f64, hi as f64) as i128).clamp(lo, hi) as u64) }
        }
        (false, false) => {
            let v = extend(from, a);
            let v = match sat {
                true => {
                    let (lo, hi) = bounds(to);
                    v.clamp(lo, hi)
                }
                false => v,
            };
            mask(to, v as u64)
        }
    }
}

fn round_float(x: f64, r: Round) -> f64 {
    match r {
        Round::Nearest => x.round_ties_even(),
        Round::Zero => x.trunc(),
        Round::Down => x.floor(),
        Round::Up => x.ceil(),
    }
}

/// The smallest and largest value of an integer type.
fn bounds(ty: Ty) -> (i128, i128) {
    let bits = ty.bits();
    match ty.signed() {
        true => (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
        false => (0, (1i128 << bits) - 1),
    }
}

/// An atomic operation on `old` with `b` (and `c` for compare-and-swap): the new value.
pub(crate) fn atomic(op: AtomOp, ty: Ty, old: u64, b: u64, c: u64) -> u64 {
    let (x, y) = (extend(ty, old), extend(ty, b));
    mask(
        ty,
        match op {
            AtomOp::Add if ty == Ty::F32 => bits32(f32_of(old) + f32_of(b)),
            AtomOp::Add if ty == Ty::F64 => (f64::from_bits(old) + f64::from_bits(b)).to_bits(),
            AtomOp::Add => old.wrapping_add(b),
            AtomOp::Min => x.min(y) as u64,
            AtomOp::Max => x.max(y) as u64,
            // inc: old >= b ? 0 : old + 1; dec: (old == 0 || old > b) ? b : old - 1 (unsigned).
            AtomOp::Inc => {
                if mask(ty, old) >= mask(ty, b) {
                    0
                } else {
                    old + 1
                }
            }
            AtomOp::Dec => {
                if mask(ty, old) == 0 || mask(ty, old) > mask(ty, b) {
                    b
                } else {
                    old - 1
                }
            }
            AtomOp::And => old & b,
            AtomOp::Or => old | b,
            AtomOp::Xor => old ^ b,
            AtomOp::Exch => b,
            AtomOp::Cas => {
                if mask(ty, old) == mask(ty, b) {
                    c
                } else {
                    old
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_wrap_saturate_and_shift_as_ptx_says() {
        assert_eq!(binary(BinOp::Add, Ty::U32, false, 0xffff_ffff, 1), 0);
        assert_eq!(binary(BinOp::AddSat, Ty::S32, false, i32::MAX as u64, 1), i32::MAX as u64);
        assert_eq!(binary(BinOp::Shl, Ty::B32, false, 1, 40), 0);
        assert_eq!(binary(BinOp::Shr, Ty::S32, false, (-8i32) as u32 as u64, 40), 0xffff_ffff);
        assert_eq!(binary(BinOp::MulWide, Ty::S32, false, (-2i32) as u32 as u64, 3), (-6i64) as u64);
        assert_eq!(binary(BinOp::MulHi, Ty::U32, false, 0x8000_0000, 4), 2);
        assert_eq!(binary(BinOp::Div, Ty::U32, false, 7, 0), 0xffff_ffff);
        assert_eq!(binary(BinOp::Min, Ty::S32, false, (-1i32) as u32 as u64, 1), 0xffff_ffff);
        assert_eq!(binary(BinOp::Min, Ty::U32, false, (-1i32) as u32 as u64, 1), 1);
    }

    #[test]
    fn floats_round_once_and_flush_when_asked() {
        let (a, b, c) = (bits32(1.0 + f32::EPSILON), bits32(1.0 - f32::EPSILON), bits32(-1.0));
        // fma rounds once: (1+e)(1-e) - 1 = -e^2, which a separate multiply would lose.
        assert_eq!(f32_of(ternary(TerOp::Fma, Ty::F32, false, a, b, c)), -(f32::EPSILON * f32::EPSILON));
        let tiny = bits32(f32::MIN_POSITIVE / 2.0);
        assert_eq!(binary(BinOp::Add, Ty::F32, true, tiny, 0), 0);
        assert_ne!(binary(BinOp::Add, Ty::F32, false, tiny, 0), 0);
        assert_eq!(convert(Ty::S32, Ty::F32, Some(Round::Nearest), false, false, bits32(2.5)), 2);
        assert_eq!(convert(Ty::S32, Ty::F32, Some(Round::Down), false, false, bits32(-2.5)), (-3i32) as u32 as u64);
        assert_eq!(convert(Ty::U8, Ty::F32, Some(Round::Zero), false, false, bits32(300.0)), 255);
        assert_eq!(convert(Ty::S32, Ty::F32, Some(Round::Zero), false, false, NAN32), 0);
        assert_eq!(convert(Ty::U16, Ty::S32, None, true, false, (-5i32) as u32 as u64), 0);
    }

    #[test]
    fn comparisons_know_nan_and_signs() {
        assert!(compare(Cmp::Lt, Ty::S32, false, (-1i32) as u32 as u64, 0));
        assert!(!compare(Cmp::Lt, Ty::U32, false, (-1i32) as u32 as u64, 0));
        assert!(!compare(Cmp::Ne, Ty::F32, false, NAN32, 0));
        assert!(compare(Cmp::Neu, Ty::F32, false, NAN32, 0));
    }
}
