//! Comparisons and selections: `setp`, `set` (of halves), `selp`, `testp`.

use super::{Decoder, Mods, half_mode};
use crate::LoadError;
use crate::ir::{BoolOp, Cmp, FloatClass, FloatMode, Op, Ty, UnOp};

/// `testp`: a class of float (`.finite`, `.normal`, ...) tested into a predicate.
pub(super) fn testp(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    let classes = [
        ("finite", FloatClass::Finite),
        ("infinite", FloatClass::Infinite),
        ("number", FloatClass::Number),
        ("notanumber", FloatClass::NotANumber),
        ("normal", FloatClass::Normal),
        ("subnormal", FloatClass::Subnormal),
    ];
    let class = mods.pick(&classes).ok_or_else(|| d.unsupported("no class"))?;
    mods.only(&["finite", "infinite", "number", "notanumber", "normal", "subnormal"]).map_err(|w| d.unsupported(w))?;
    if !ty.float() || ty.half() {
        return Err(d.unsupported("this type"));
    }
    Ok(Op::Unary { op: UnOp::Test(class), ty, fm: FloatMode::default(), d: d.reg(0)?, a: d.src(1, ty)? })
}

/// `setp`: a comparison into a predicate (a pair of them for two halves), maybe combined with
/// another predicate (`.and`, `.or`, `.xor`).
pub(super) fn setp(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    let cmp = mods.words.iter().find_map(|w| comparison(w)).ok_or_else(|| d.unsupported("no comparison"))?;
    let with = mods.words.iter().find_map(|w| bool_op(w));
    mods.only(&[
        "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu", "gtu", "geu", "num",
        "nan", "and", "or", "xor", "ftz",
    ])
    .map_err(|w| d.unsupported(w))?;
    let (dst, d2) = match d.reg_pair(0)? {
        (_, None) if matches!(ty, Ty::F16x2 | Ty::BF16x2) => return Err(d.bad("two halves need p|q")),
        pair => pair,
    };
    half_mode(ty, FloatMode { ftz: mods.has("ftz"), ..FloatMode::default() }).map_err(|w| d.unsupported(w))?;
    let with = match with {
        Some(op) => {
            let (pred, negated) = d.pred(3)?;
            Some((op, pred, negated))
        }
        None => None,
    };
    Ok(Op::Setp { cmp, ty, ftz: mods.has("ftz"), d: dst, d2, a: d.src(1, ty)?, b: d.src(2, ty)?, with })
}

/// `set` of halves: a comparison into halves (1.0 or 0.0 each) or into a 32-bit mask.
pub(super) fn set(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    // Of halves only: into halves (1.0 or 0.0 each) or into a 32-bit mask.
    let (to, ty) = mods.two_types().ok_or_else(|| d.unsupported("needs two types"))?;
    let cmp = mods.words.iter().find_map(|w| comparison(w)).ok_or_else(|| d.unsupported("no comparison"))?;
    mods.only(&["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan", "ftz"])
        .map_err(|w| d.unsupported(w))?;
    let pairs = |t: Ty| matches!(t, Ty::F16x2 | Ty::BF16x2);
    let mask = matches!(to, Ty::U32 | Ty::S32 | Ty::B32);
    if !ty.half() || !(to.half() && pairs(to) == pairs(ty) || mask) {
        return Err(d.unsupported("this form (only of halves)"));
    }
    let ftz = mods.has("ftz");
    half_mode(ty, FloatMode { ftz, ..FloatMode::default() }).map_err(|w| d.unsupported(w))?;
    Ok(Op::Set { cmp, ty, to, ftz, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, ty)? })
}

/// `selp`: one of two values, as a predicate says.
pub(super) fn selp(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    mods.only(&[]).map_err(|w| d.unsupported(w))?;
    Ok(Op::Selp { ty, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, ty)?, p: d.pred(3)?.0 })
}

fn comparison(w: &str) -> Option<Cmp> {
    Some(match w {
        "eq" => Cmp::Eq,
        "ne" => Cmp::Ne,
        "lt" | "lo" => Cmp::Lt,
        "le" | "ls" => Cmp::Le,
        "gt" | "hi" => Cmp::Gt,
        "ge" | "hs" => Cmp::Ge,
        "equ" => Cmp::Equ,
        "neu" => Cmp::Neu,
        "ltu" => Cmp::Ltu,
        "leu" => Cmp::Leu,
        "gtu" => Cmp::Gtu,
        "geu" => Cmp::Geu,
        "num" => Cmp::Num,
        "nan" => Cmp::Nan,
        _ => return None,
    })
}

fn bool_op(w: &str) -> Option<BoolOp> {
    Some(match w {
        "and" => BoolOp::And,
        "or" => BoolOp::Or,
        "xor" => BoolOp::Xor,
        _ => return None,
    })
}
