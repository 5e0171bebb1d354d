//! Instructions of integers alone: the carry chain, pairs of 16-bit integers, and the bit games
//! (`fns`, `bfe`, `bfi`, `prmt`, `lop3`, `shf`, `dp4a`/`dp2a`, `slct`, `bmsk`, `szext`, the SIMD
//! video instructions).

use super::{Decoder, Mod, Mods};
use crate::LoadError;
use crate::ir::{BinOp, CarryKind, CarryOp, FloatMode, Op, PairOp, PrmtMode, TerOp, Ty, Video, VideoOp, VideoThen};
use crate::operand::Operand;

/// The carry chain's instructions: `add.cc`, `sub.cc`, `mad.lo/.hi.cc` write the carry flag;
/// `addc`, `subc`, `madc.lo/.hi` read it, and write it with `.cc`. On 32- and 64-bit integers.
pub(super) fn carry(name: &str, mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    mods.only(&[Mod::Cc, Mod::Lo, Mod::Hi]).map_err(|w| d.unsupported(w))?;
    if ty.float() || ty.bits() < 32 {
        return Err(d.unsupported("this type"));
    }
    let kind = match (name, mods.has(Mod::Lo), mods.has(Mod::Hi)) {
        ("add" | "addc", false, false) => CarryKind::Add,
        ("sub" | "subc", false, false) => CarryKind::Sub,
        ("mad" | "madc", true, false) => CarryKind::MadLo,
        ("mad" | "madc", false, true) => CarryKind::MadHi,
        _ => return Err(d.unsupported("this form")),
    };
    let op = CarryOp { kind, carry_in: name.ends_with('c'), carry_out: mods.has(Mod::Cc) };
    let c = match kind {
        CarryKind::MadLo | CarryKind::MadHi => Some(d.src(3, ty)?),
        _ => None,
    };
    Ok(Op::Carry { op, ty, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, ty)?, c })
}

/// `add`, `sub`, `min` and `max` of two 16-bit integers in a word (`.u16x2`, `.s16x2`; `.relu` on
/// a signed `min` or `max`).
pub(super) fn pair(name: &str, mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let signed = mods.has(Mod::S16x2);
    mods.only(&[Mod::U16x2, Mod::S16x2, Mod::Relu]).map_err(|w| d.unsupported(w))?;
    let op = match name {
        "add" => PairOp::Add,
        "sub" => PairOp::Sub,
        "min" => PairOp::Min,
        _ => PairOp::Max,
    };
    let relu = mods.has(Mod::Relu);
    if relu && !(signed && matches!(op, PairOp::Min | PairOp::Max)) {
        return Err(d.unsupported("the modifier .relu here"));
    }
    let (ty, fm) = (Ty::B32, FloatMode::default());
    Ok(Op::Binary { op: BinOp::Pair { op, signed, relu }, ty, fm, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, ty)? })
}

/// `fns.b32`: the position of the n-th set bit.
pub(super) fn fns(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    if d.ty(mods)? != Ty::B32 {
        return Err(d.unsupported("this type"));
    }
    mods.only(&[]).map_err(|w| d.unsupported(w))?;
    let (op, ty, fm) = (TerOp::Fns, Ty::B32, FloatMode::default());
    Ok(Op::Ternary { op, ty, fm, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, Ty::U32)?, c: d.src(3, Ty::S32)? })
}

/// Bit games of three operands: `bfe`, `prmt` in every mode, `lop3`, `shf`, `dp4a`/`dp2a`, and
/// `slct`.
pub(super) fn bits(name: &str, mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let tys = mods.types(false);
    let ty = *tys.first().ok_or_else(|| d.bad("no type"))?;
    mods.only(&[
        Mod::L,
        Mod::R,
        Mod::Clamp,
        Mod::Wrap,
        Mod::Lo,
        Mod::Hi,
        Mod::F4e,
        Mod::B4e,
        Mod::Rc8,
        Mod::Ecl,
        Mod::Ecr,
        Mod::Rc16,
        Mod::Ftz,
    ])
    .map_err(|w| d.unsupported(w))?;
    let (op, b_ty, c_ty, sources) = match name {
        "bfe" if ty.bits() >= 32 => (TerOp::Bfe, Ty::U32, Ty::U32, 3),
        "prmt" if ty.bits() == 32 => {
            use PrmtMode::*;
            let modes = [
                (Mod::F4e, F4e),
                (Mod::B4e, B4e),
                (Mod::Rc8, Rc8),
                (Mod::Ecl, Ecl),
                (Mod::Ecr, Ecr),
                (Mod::Rc16, Rc16),
            ];
            (TerOp::Prmt(mods.pick(&modes)), ty, ty, 3)
        }
        "lop3" if ty.bits() == 32 => match d.ops.get(4) {
            Some(Operand::Int(lut)) => (TerOp::Lop3(*lut as u8), ty, ty, 3),
            _ => return Err(d.unsupported("a look-up table that is not a number")),
        },
        "shf" if ty.bits() == 32 && (mods.has(Mod::L) || mods.has(Mod::R)) => {
            let op = TerOp::Shf { left: mods.has(Mod::L), clamp: mods.has(Mod::Clamp) };
            (op, ty, Ty::U32, 3)
        }
        "dp4a" | "dp2a" if tys.len() == 2 && tys.iter().all(|t| t.bits() == 32) => {
            let two = (name == "dp2a").then(|| mods.has(Mod::Hi));
            let op = TerOp::Dp { a_signed: tys[0].signed(), b_signed: tys[1].signed(), two };
            (op, Ty::B32, Ty::B32, 3)
        }
        "slct" if tys.len() == 2 && (tys[1] == Ty::F32 || tys[1] == Ty::S32 && !mods.has(Mod::Ftz)) => {
            (TerOp::Slct { float_c: tys[1] == Ty::F32, ftz: mods.has(Mod::Ftz) }, ty, tys[1], 3)
        }
        _ => return Err(d.unsupported("this form")),
    };
    let prmt_mode = [Mod::F4e, Mod::B4e, Mod::Rc8, Mod::Ecl, Mod::Ecr, Mod::Rc16].into_iter().any(|m| mods.has(m));
    if prmt_mode && !matches!(op, TerOp::Prmt(_)) || mods.has(Mod::Ftz) && !matches!(op, TerOp::Slct { .. }) {
        return Err(d.unsupported("this form"));
    }
    let _ = sources;
    let fm = FloatMode::default();
    Ok(Op::Ternary { op, ty, fm, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, b_ty)?, c: d.src(3, c_ty)? })
}

/// The SIMD video instructions `vadd2/4`, `vsub`, `vavrg`, `vabsdiff`, `vmin`, `vmax`, with
/// `.sat` or `.add`.
pub(super) fn video(name: &str, mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let tys = mods.types(false);
    mods.only(&[Mod::Sat, Mod::Add]).map_err(|w| d.unsupported(w))?;
    let [dt, at, bt] = tys[..] else { return Err(d.bad("three types were expected")) };
    if [dt, at, bt].iter().any(|t| !matches!(t, Ty::U32 | Ty::S32)) {
        return Err(d.unsupported("this type"));
    }
    let then = match (mods.has(Mod::Sat), mods.has(Mod::Add)) {
        (false, false) => VideoThen::Merge,
        (true, false) => VideoThen::Saturate,
        (false, true) => VideoThen::Add,
        (true, true) => return Err(d.bad(".sat with .add")),
    };
    let op = match &name[..name.len() - 1] {
        "vadd" => VideoOp::Add,
        "vsub" => VideoOp::Sub,
        "vavrg" => VideoOp::Avrg,
        "vabsdiff" => VideoOp::AbsDiff,
        "vmin" => VideoOp::Min,
        _ => VideoOp::Max,
    };
    let v = Video { op, halves: name.ends_with('2'), signed: [dt, at, bt].map(Ty::signed), then };
    Ok(Op::Video { v, d: d.reg(0)?, a: d.src(1, Ty::B32)?, b: d.src(2, Ty::B32)?, c: d.src(3, Ty::B32)? })
}

/// `bmsk` and `szext`, with `.clamp` or `.wrap`.
pub(super) fn mask_or_extend(name: &str, mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    mods.only(&[Mod::Clamp, Mod::Wrap]).map_err(|w| d.unsupported(w))?;
    let clamp = mods.has(Mod::Clamp);
    let op = match name {
        "bmsk" if ty == Ty::B32 => BinOp::Bmsk { clamp },
        "szext" if matches!(ty, Ty::U32 | Ty::S32) => BinOp::Szext { clamp },
        _ => return Err(d.unsupported("this type")),
    };
    if clamp == mods.has(Mod::Wrap) {
        return Err(d.unsupported("a mode other than .clamp or .wrap"));
    }
    Ok(Op::Binary { op, ty, fm: FloatMode::default(), d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, Ty::U32)? })
}

/// `bfi`: a bit field inserted, of 32 or 64 bits.
pub(super) fn bfi(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    mods.only(&[]).map_err(|w| d.unsupported(w))?;
    if ty.bits() < 32 {
        return Err(d.unsupported("this type"));
    }
    let (a, b) = (d.src(1, ty)?, d.src(2, ty)?);
    Ok(Op::Bfi { ty, d: d.reg(0)?, a, b, pos: d.src(3, Ty::U32)?, len: d.src(4, Ty::U32)? })
}
