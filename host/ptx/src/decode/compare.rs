//! Comparisons and selections: `setp`, `set` (of halves), `selp`, `testp`.

use super::{Decoder, Mod, Mods, half_mode};
use crate::LoadError;
use crate::ir::{BoolOp, Cmp, FloatClass, FloatMode, Op, Ty, UnOp};

/// `testp`: a class of float (`.finite`, `.normal`, ...) tested into a predicate.
pub(super) fn testp(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    let classes = [
        (Mod::Finite, FloatClass::Finite),
        (Mod::Infinite, FloatClass::Infinite),
        (Mod::Number, FloatClass::Number),
        (Mod::NotANumber, FloatClass::NotANumber),
        (Mod::Normal, FloatClass::Normal),
        (Mod::Subnormal, FloatClass::Subnormal),
    ];
    let class = mods.pick(&classes).ok_or_else(|| d.unsupported("no class"))?;
    mods.only(&classes.map(|(m, _)| m)).map_err(|w| d.unsupported(w))?;
    if !ty.float() || ty.half() {
        return Err(d.unsupported("this type"));
    }
    Ok(Op::Unary { op: UnOp::Test(class), ty, fm: FloatMode::default(), d: d.reg(0)?, a: d.src(1, ty)? })
}

/// `setp`: a comparison into a predicate (a pair of them for two halves), maybe combined with
/// another predicate (`.and`, `.or`, `.xor`).
pub(super) fn setp(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    let cmp = mods.first(comparison).ok_or_else(|| d.unsupported("no comparison"))?;
    let with = mods.first(bool_op);
    // A comparison, a combining operation, `.ftz`.
    mods.only_where(|m| comparison(m).is_some() || bool_op(m).is_some() || m == Mod::Ftz)
        .map_err(|w| d.unsupported(w))?;
    let (dst, d2) = match d.reg_pair(0)? {
        (_, None) if matches!(ty, Ty::F16x2 | Ty::BF16x2) => return Err(d.bad("two halves need p|q")),
        pair => pair,
    };
    half_mode(ty, FloatMode { ftz: mods.has(Mod::Ftz), ..FloatMode::default() }).map_err(|w| d.unsupported(w))?;
    let with = match with {
        Some(op) => {
            let (pred, negated) = d.pred(3)?;
            Some((op, pred, negated))
        }
        None => None,
    };
    Ok(Op::Setp { cmp, ty, ftz: mods.has(Mod::Ftz), d: dst, d2, a: d.src(1, ty)?, b: d.src(2, ty)?, with })
}

/// `set` of halves: a comparison into halves (1.0 or 0.0 each) or into a 32-bit mask.
pub(super) fn set(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    // Of halves only: into halves (1.0 or 0.0 each) or into a 32-bit mask.
    let (to, ty) = mods.two_types().ok_or_else(|| d.unsupported("needs two types"))?;
    let cmp = mods.first(comparison).ok_or_else(|| d.unsupported("no comparison"))?;
    // A float comparison (not the unsigned integers' `.lo`, `.ls`, `.hi`, `.hs`), `.ftz`.
    let unsigned = |m| matches!(m, Mod::Lo | Mod::Ls | Mod::Hi | Mod::Hs);
    mods.only_where(|m| (comparison(m).is_some() && !unsigned(m)) || m == Mod::Ftz).map_err(|w| d.unsupported(w))?;
    let pairs = |t: Ty| matches!(t, Ty::F16x2 | Ty::BF16x2);
    let mask = matches!(to, Ty::U32 | Ty::S32 | Ty::B32);
    if !ty.half() || !(to.half() && pairs(to) == pairs(ty) || mask) {
        return Err(d.unsupported("this form (only of halves)"));
    }
    let ftz = mods.has(Mod::Ftz);
    half_mode(ty, FloatMode { ftz, ..FloatMode::default() }).map_err(|w| d.unsupported(w))?;
    Ok(Op::Set { cmp, ty, to, ftz, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, ty)? })
}

/// `selp`: one of two values, as a predicate says.
pub(super) fn selp(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    mods.only(&[]).map_err(|w| d.unsupported(w))?;
    Ok(Op::Selp { ty, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, ty)?, p: d.pred(3)?.0 })
}

fn comparison(m: Mod) -> Option<Cmp> {
    Some(match m {
        Mod::Eq => Cmp::Eq,
        Mod::Ne => Cmp::Ne,
        Mod::Lt | Mod::Lo => Cmp::Lt,
        Mod::Le | Mod::Ls => Cmp::Le,
        Mod::Gt | Mod::Hi => Cmp::Gt,
        Mod::Ge | Mod::Hs => Cmp::Ge,
        Mod::Equ => Cmp::Equ,
        Mod::Neu => Cmp::Neu,
        Mod::Ltu => Cmp::Ltu,
        Mod::Leu => Cmp::Leu,
        Mod::Gtu => Cmp::Gtu,
        Mod::Geu => Cmp::Geu,
        Mod::Num => Cmp::Num,
        Mod::Nan => Cmp::Nan,
        _ => return None,
    })
}

fn bool_op(m: Mod) -> Option<BoolOp> {
    Some(match m {
        Mod::And => BoolOp::And,
        Mod::Or => BoolOp::Or,
        Mod::Xor => BoolOp::Xor,
        _ => return None,
    })
}
