//! Conversions: `cvt` between integers, floats, halves and pairs of them, 8-bit floats and tf32.

use super::{Decoder, Mod, Mods, float_rounding, int_rounding};
use crate::LoadError;
use crate::ir::{Conversion, FloatMode, Op, Round, Ty};

/// `cvt` to and from pairs of 8-bit floats (`.e4m3x2`, `.e5m2x2`).
pub(super) fn fp8(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    // 8-bit floats: two f32s or an f16 pair into two, rounded to nearest and saturated
    // (as PTX requires), or two into an f16 pair.
    let (to, from) = mods.two_types().ok_or_else(|| d.unsupported("needs two types"))?;
    mods.only(&[Mod::Rn, Mod::Satfinite, Mod::Relu]).map_err(|w| d.unsupported(w))?;
    let conv = Conversion { to, from, round_int: None, fm: FloatMode::default(), relu: mods.has(Mod::Relu) };
    Ok(match (to.fp8(), from, mods.has(Mod::Rn), mods.has(Mod::Satfinite)) {
        (true, Ty::F32, true, true) => Op::CvtPair { conv, d: d.reg(0)?, a: d.src(1, from)?, b: d.src(2, from)? },
        (true, Ty::F16x2, true, true) => Op::Cvt { conv, d: d.reg(0)?, a: d.src(1, from)? },
        (false, f, true, false) if to == Ty::F16x2 && f.fp8() => Op::Cvt { conv, d: d.reg(0)?, a: d.src(1, from)? },
        _ => return Err(d.unsupported("this form")),
    })
}

/// `cvt.rna.tf32.f32`.
pub(super) fn tf32(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[Mod::Rna, Mod::Tf32]).map_err(|w| d.unsupported(w))?;
    if !mods.has(Mod::Rna) || mods.ty() != Some(Ty::F32) {
        return Err(d.unsupported("this form"));
    }
    let conv = Conversion { to: Ty::TF32, from: Ty::F32, round_int: None, fm: FloatMode::default(), relu: false };
    Ok(Op::Cvt { conv, d: d.reg(0)?, a: d.src(1, Ty::F32)? })
}

/// `cvt` between integers and floats of every width, halves and pairs of halves included:
/// roundings (`.rn` ... to floats, `.rni` ... to integers), `.sat`, `.ftz` and `.relu`.
pub(super) fn cvt(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let (to, from) = mods.two_types().ok_or_else(|| d.unsupported("needs two types"))?;
    mods.only(&[
        Mod::Rn,
        Mod::Rz,
        Mod::Rm,
        Mod::Rp,
        Mod::Rni,
        Mod::Rzi,
        Mod::Rmi,
        Mod::Rpi,
        Mod::Sat,
        Mod::Ftz,
        Mod::Relu,
    ])
    .map_err(|w| d.unsupported(w))?;
    let (round_int, round_float) = (int_rounding(mods), float_rounding(mods));
    // Two f32s into two halves (`cvt.rn.f16x2.f32 d, a, b`) narrow each.
    let pairs = matches!(to, Ty::F16x2 | Ty::BF16x2);
    let narrower = if pairs { 16 } else { to.bits() };
    // Float to a narrower float, or an integer to a float, rounds (to nearest unless
    // written); a float to an integer rounds as `.rni/.rzi/.rmi/.rpi` say.
    if round_float.is_some() && (!to.float() || (from.float() && narrower >= from.bits())) {
        return Err(d.unsupported("a float rounding on a conversion that does not round"));
    }
    if to.float() && from.float() && to.bits() > from.bits() && (round_float.is_some() || round_int.is_some()) {
        return Err(d.unsupported("a rounding on a widening conversion"));
    }
    let round_int = match (to.float(), from.float(), round_int) {
        (false, true, None) => {
            return Err(d.unsupported("a float to an integer without .rni/.rzi/.rmi/.rpi"));
        }
        (_, _, r) => r,
    };
    let fm =
        FloatMode { round: round_float.unwrap_or(Round::Nearest), ftz: mods.has(Mod::Ftz), sat: mods.has(Mod::Sat) };
    let relu = mods.has(Mod::Relu);
    if relu && !to.half() {
        return Err(d.unsupported("the modifier .relu here"));
    }
    // ptxas refuses `.sat` where every value of the source fits the destination.
    let int = |t: Ty| matches!(t, Ty::U8 | Ty::U16 | Ty::U32 | Ty::U64 | Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64);
    let fits = to.bits() > from.bits() && (to.signed() || !from.signed())
        || to.bits() == from.bits() && to.signed() == from.signed();
    if fm.sat && int(to) && int(from) && fits {
        // ptxas refuses it so: "Illegal modifier '.sat' for instruction 'cvt'".
        return Err(LoadError::Syntax { line: d.line, what: "Illegal modifier '.sat' for instruction 'cvt'".into() });
    }
    let conv = Conversion { to, from, round_int, fm, relu };
    Ok(match (to, from) {
        (Ty::F16x2 | Ty::BF16x2, Ty::F32) if d.ops.len() == 3 && round_int.is_none() => {
            Op::CvtPair { conv, d: d.reg(0)?, a: d.src(1, from)?, b: d.src(2, from)? }
        }
        (Ty::F16x2 | Ty::BF16x2, _) | (_, Ty::F16x2 | Ty::BF16x2) => {
            return Err(d.unsupported("this form"));
        }
        _ => Op::Cvt { conv, d: d.reg(0)?, a: d.src(1, from)? },
    })
}
