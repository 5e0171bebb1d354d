//! What each operation computes on register bits: integers of PTX's widths with its wrapping,
//! saturation and shift rules; floats go to `float.rs` (16-bit ones to `half.rs`), bit fields and
//! byte games to `bits.rs`, masks and extension to a type's width to `width.rs`.

use super::width::{extend, mask};
use super::{bits, float, fp8, half};
use crate::ir::{AtomOp, BinOp, BoolOp, CarryKind, CarryOp, Cmp, Conversion, FloatMode, Round, TerOp, Ty, UnOp};

#[cfg(test)]
fn f32_of(v: u64) -> f32 {
    f32::from_bits(v as u32)
}

#[cfg(test)]
fn bits32(f: f32) -> u64 {
    f.to_bits() as u64
}

#[cfg(test)]
const NAN32: u64 = float::NAN32;

pub(crate) fn unary(op: UnOp, ty: Ty, fm: FloatMode, a: u64) -> u64 {
    if ty.half() {
        return half::unary(op, ty, fm, a);
    }
    if ty.float() {
        return float::unary(op, ty == Ty::F64, fm, a);
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
            UnOp::BfindShift => match unary(UnOp::Bfind, ty, fm, a) {
                r if r == mask(ty, u64::MAX) => r,
                r => bits as u64 - 1 - r,
            },
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

pub(crate) fn binary(op: BinOp, ty: Ty, fm: FloatMode, a: u64, b: u64) -> u64 {
    if ty.half() {
        return half::binary(op, ty, fm, a, b);
    }
    if ty.float() {
        return float::binary(op, ty == Ty::F64, fm, a, b);
    }
    // The common operations need no sign: their low bits are the same either way.
    let m = mask(ty, u64::MAX);
    match op {
        BinOp::Add => return a.wrapping_add(b) & m,
        BinOp::Sub => return a.wrapping_sub(b) & m,
        BinOp::MulLo => return a.wrapping_mul(b) & m,
        BinOp::And => return a & b & m,
        BinOp::Or => return (a | b) & m,
        BinOp::Xor => return (a ^ b) & m,
        // The shift amount is a u32; past the width, everything is shifted out.
        BinOp::Shl => return if b as u32 >= ty.bits() { 0 } else { (a << (b as u32)) & m },
        _ => {}
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
        // A 64-bit unsigned product needs all 128 bits.
        BinOp::MulHi if bits == 64 && !ty.signed() => ((ua as u128 * ub as u128) >> 64) as u64,
        BinOp::MulHi => ((x * y) >> bits) as u64,
        BinOp::Mul24Lo => (extend24(ty, ua) * extend24(ty, ub)) as u64,
        BinOp::Mul24Hi => ((extend24(ty, ua) * extend24(ty, ub)) >> 16) as u64,
        BinOp::Bmsk { clamp } => bits::bmsk(clamp, ua as u32, ub as u32) as u64,
        BinOp::Pair { op, signed, relu } => bits::pair(op, signed, relu, ua as u32, ub as u32) as u64,
        BinOp::Szext { clamp } => bits::szext(clamp, ty.signed(), ua as u32, ub as u32) as u64,
        BinOp::MulWide => return (x * y) as u64 & wide_mask(bits),
        // Division by zero gives all ones, quotient and remainder alike, as on an H200.
        BinOp::Div if ub == 0 => u64::MAX,
        BinOp::Div => (x / y) as u64,
        BinOp::Rem if ub == 0 => u64::MAX,
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
        BinOp::CopySign | BinOp::MinNaN | BinOp::MaxNaN => unreachable!("decode refuses {op:?} on integers"),
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

/// The low 24 bits of a 32-bit operand, sign-extended when signed.
fn extend24(ty: Ty, v: u64) -> i128 {
    let v = (v & 0xff_ffff) as i64;
    (if ty.signed() { (v << 40) >> 40 } else { v }) as i128
}

pub(crate) fn ternary(op: TerOp, ty: Ty, fm: FloatMode, a: u64, b: u64, c: u64) -> u64 {
    let none = FloatMode::default();
    match op {
        TerOp::Fma if ty.half() => half::fma(ty, fm, a, b, c),
        TerOp::FmaRelu => half::relu(ty, half::fma(ty, fm, a, b, c)),
        TerOp::Fma => float::fma(ty == Ty::F64, fm, a, b, c),
        TerOp::MadLo => binary(BinOp::Add, ty, none, binary(BinOp::MulLo, ty, none, a, b), c),
        TerOp::MadHi => binary(BinOp::Add, ty, none, binary(BinOp::MulHi, ty, none, a, b), c),
        TerOp::MadWide => {
            let product = binary(BinOp::MulWide, ty, none, a, b);
            let wide = if ty.bits() == 32 { Ty::U64 } else { Ty::U32 };
            binary(BinOp::Add, wide, none, product, c)
        }
        TerOp::Mad24Lo => binary(BinOp::Add, ty, none, binary(BinOp::Mul24Lo, ty, none, a, b), c),
        TerOp::Mad24Hi => binary(BinOp::Add, ty, none, binary(BinOp::Mul24Hi, ty, none, a, b), c),
        TerOp::Sad => {
            mask(ty, (extend(ty, a) - extend(ty, b)).unsigned_abs() as u64).wrapping_add(c) & mask(ty, u64::MAX)
        }
        TerOp::Bfe => bits::bfe(ty, a, b, c),
        TerOp::Fns => bits::fns(a as u32, b as u32, c as u32 as i32) as u64,
        TerOp::Prmt(None) => bits::prmt(a, b, c),
        TerOp::Prmt(Some(mode)) => bits::prmt_mode(mode, a, b, c),
        TerOp::Lop3(lut) => bits::lop3(lut, a, b, c) & mask(ty, u64::MAX),
        TerOp::Shf { left, clamp } => bits::shf(left, clamp, a, b, c),
        TerOp::Dp { a_signed, b_signed, two } => bits::dp(a_signed, b_signed, two, a, b, c),
        TerOp::Slct { float_c, ftz } => {
            // Under .ftz a negative subnormal is -0, which is not below zero.
            let c32 = if ftz && c as u32 & 0x7f80_0000 == 0 { c as u32 & 0x8000_0000 } else { c as u32 };
            let take_a = if float_c { f32::from_bits(c32) >= 0.0 } else { c as u32 as i32 >= 0 };
            mask(ty, if take_a { a } else { b })
        }
    }
}

pub(crate) fn compare(cmp: Cmp, ty: Ty, ftz: bool, a: u64, b: u64) -> bool {
    if ty.half() {
        return half::compare(cmp, ty, ftz, a, b)[0];
    }
    if ty.float() {
        let (x, y) = match ty {
            Ty::F32 => (
                f32::from_bits(float::flush(a, false, ftz) as u32) as f64,
                f32::from_bits(float::flush(b, false, ftz) as u32) as f64,
            ),
            _ => (f64::from_bits(a), f64::from_bits(b)),
        };
        return float::ordered(cmp, x, y);
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

/// One step of the carry chain on `ty`'s width: the result and the carry flag after it (a
/// borrow for subtraction), `carry` the flag before it.
pub(crate) fn carry(op: CarryOp, ty: Ty, a: u64, b: u64, c: u64, carry: bool) -> (u64, bool) {
    let bits = ty.bits();
    let m = mask(ty, u64::MAX) as u128;
    let (a, b, c) = (a as u128 & m, b as u128 & m, c as u128 & m);
    let cin = (op.carry_in && carry) as u128;
    let (sum, out) = match op.kind {
        CarryKind::Add => {
            let s = a + b + cin;
            (s, s > m)
        }
        CarryKind::Sub => (a.wrapping_sub(b + cin), a < b + cin),
        CarryKind::MadLo | CarryKind::MadHi => {
            let p = a * b;
            let half = if op.kind == CarryKind::MadLo { p & m } else { p >> bits };
            let s = half + c + cin;
            (s, s > m)
        }
    };
    ((sum & m) as u64, if op.carry_out { out } else { carry })
}

pub(crate) fn combine(op: BoolOp, a: bool, b: bool) -> bool {
    match op {
        BoolOp::And => a && b,
        BoolOp::Or => a || b,
        BoolOp::Xor => a ^ b,
    }
}

/// `cvt` of `a` as `conv` says.
pub(crate) fn convert(conv: Conversion, a: u64) -> u64 {
    let Conversion { to, from, round_int, fm, relu } = conv;
    if to.fp8() || from.fp8() {
        return fp8::convert(conv, a);
    }
    if to == Ty::TF32 {
        return tf32(a);
    }
    if relu {
        return half::relu(to, convert(Conversion { relu: false, ..conv }, a));
    }
    let FloatMode { round, ftz, sat } = fm;
    match (to.float(), from.float()) {
        (true, true) if to.half() || from.half() => half::convert(to, from, round_int, fm, a),
        (true, false) if to.half() => half::from_int(extend(from, a), to, fm),
        (true, true) => float::convert(to == Ty::F64, from == Ty::F64, round_int, round, fm, a),
        (true, false) => float::from_int(extend(from, a), to == Ty::F64, round, fm),
        (false, true) => {
            let x = match from {
                Ty::F32 => f32::from_bits(float::flush(a, false, ftz) as u32) as f64,
                Ty::F64 => f64::from_bits(a),
                half => half::value(half, a, ftz),
            };
            let x = float::integral(x, round_int.unwrap_or(Round::Zero));
            // Out of range saturates to the type's bounds. A NaN becomes 0 from f32 and the
            // halves to 32 bits or fewer; from f64 to 32 bits or more, or from anything to 64
            // bits, it becomes the destination's top bit alone, signed or not, as on an H200.
            let (lo, hi) = bounds(to);
            match x.is_nan() {
                true if from == Ty::F64 && to.bits() >= 32 || to.bits() == 64 => 1 << (to.bits() - 1),
                true => 0,
                false => mask(to, (x.clamp(lo as f64, hi as f64) as i128).clamp(lo, hi) as u64),
            }
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

/// `cvt.rna.tf32.f32`: an f32 rounded to tf32's 10 fraction bits, to nearest with ties away
/// from zero (past the largest finite, an infinity), its low 13 bits zero. A NaN keeps its sign
/// and its payload's high bits, as on an H200; one whose payload lies only in the low 13 bits
/// (not seen on the GPU) stays a NaN, quiet.
fn tf32(a: u64) -> u64 {
    let bits = a as u32;
    if f32::from_bits(bits).is_nan() {
        let kept = bits & !0x1fff;
        return if f32::from_bits(kept).is_nan() { kept } else { kept | 0x40_0000 } as u64;
    }
    let magnitude = ((bits & 0x7fff_ffff) + 0x1000) & !0x1fff;
    ((bits & 0x8000_0000) | magnitude) as u64
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
            AtomOp::Add if ty.half() => half::binary(BinOp::Add, ty, FloatMode::default(), old, b),
            AtomOp::Add if ty == Ty::F32 => (f32::from_bits(old as u32) + f32::from_bits(b as u32)).to_bits() as u64,
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
        assert_eq!(binary(BinOp::Add, Ty::U32, FloatMode::default(), 0xffff_ffff, 1), 0);
        assert_eq!(binary(BinOp::AddSat, Ty::S32, FloatMode::default(), i32::MAX as u64, 1), i32::MAX as u64);
        assert_eq!(binary(BinOp::Shl, Ty::B32, FloatMode::default(), 1, 40), 0);
        assert_eq!(binary(BinOp::Shr, Ty::S32, FloatMode::default(), (-8i32) as u32 as u64, 40), 0xffff_ffff);
        assert_eq!(binary(BinOp::MulWide, Ty::S32, FloatMode::default(), (-2i32) as u32 as u64, 3), (-6i64) as u64);
        assert_eq!(binary(BinOp::MulHi, Ty::U32, FloatMode::default(), 0x8000_0000, 4), 2);
        assert_eq!(binary(BinOp::Div, Ty::U32, FloatMode::default(), 7, 0), 0xffff_ffff);
        assert_eq!(binary(BinOp::Min, Ty::S32, FloatMode::default(), (-1i32) as u32 as u64, 1), 0xffff_ffff);
        assert_eq!(binary(BinOp::Min, Ty::U32, FloatMode::default(), (-1i32) as u32 as u64, 1), 1);
    }

    #[test]
    fn floats_round_once_and_flush_when_asked() {
        let (a, b, c) = (bits32(1.0 + f32::EPSILON), bits32(1.0 - f32::EPSILON), bits32(-1.0));
        // fma rounds once: (1+e)(1-e) - 1 = -e^2, which a separate multiply would lose.
        assert_eq!(f32_of(ternary(TerOp::Fma, Ty::F32, FloatMode::default(), a, b, c)), -(f32::EPSILON * f32::EPSILON));
        let tiny = bits32(f32::MIN_POSITIVE / 2.0);
        assert_eq!(binary(BinOp::Add, Ty::F32, FloatMode { ftz: true, ..FloatMode::default() }, tiny, 0), 0);
        assert_ne!(binary(BinOp::Add, Ty::F32, FloatMode::default(), tiny, 0), 0);
        let to_int = |to: Ty, from: Ty, round_int: Option<Round>, sat: bool, a: u64| {
            convert(Conversion { to, from, round_int, fm: FloatMode { sat, ..FloatMode::default() }, relu: false }, a)
        };
        assert_eq!(to_int(Ty::S32, Ty::F32, Some(Round::Nearest), false, bits32(2.5)), 2);
        assert_eq!(to_int(Ty::S32, Ty::F32, Some(Round::Down), false, bits32(-2.5)), (-3i32) as u32 as u64);
        assert_eq!(to_int(Ty::U8, Ty::F32, Some(Round::Zero), false, bits32(300.0)), 255);
        assert_eq!(to_int(Ty::S32, Ty::F32, Some(Round::Zero), false, NAN32), 0);
        assert_eq!(to_int(Ty::U16, Ty::S32, None, true, (-5i32) as u32 as u64), 0);
    }

    #[test]
    fn comparisons_know_nan_and_signs() {
        assert!(compare(Cmp::Lt, Ty::S32, false, (-1i32) as u32 as u64, 0));
        assert!(!compare(Cmp::Lt, Ty::U32, false, (-1i32) as u32 as u64, 0));
        assert!(!compare(Cmp::Ne, Ty::F32, false, NAN32, 0));
        assert!(compare(Cmp::Neu, Ty::F32, false, NAN32, 0));
    }

    #[test]
    fn the_carry_chain_carries_and_borrows_on_each_width() {
        let op = |kind, carry_in, carry_out| CarryOp { kind, carry_in, carry_out };
        let (add, addc) = (op(CarryKind::Add, false, true), op(CarryKind::Add, true, false));
        assert_eq!(carry(add, Ty::U64, u64::MAX, 1, 0, false), (0, true));
        assert_eq!(carry(addc, Ty::U64, 1, 1, 0, true), (3, true), "addc keeps the flag without .cc");
        assert_eq!(carry(add, Ty::U32, u32::MAX as u64, 1, 0, false), (0, true));
        let (sub, subc) = (op(CarryKind::Sub, false, true), op(CarryKind::Sub, true, true));
        assert_eq!(carry(sub, Ty::U32, 0, 1, 0, false), (u32::MAX as u64, true), "a borrow");
        assert_eq!(carry(subc, Ty::S64, 5, 4, 0, true), (0, false));
        let madhi = op(CarryKind::MadHi, true, true);
        assert_eq!(carry(madhi, Ty::U32, 1 << 31, 4, u32::MAX as u64, true), (2, true), "2 + 2^32 - 1 + 1");
        let madlo = op(CarryKind::MadLo, false, true);
        assert_eq!(carry(madlo, Ty::U64, 1 << 63, 3, 1 << 63, false), (0, true));
    }
}
