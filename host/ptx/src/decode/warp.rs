//! Warp-synchronous instructions: `shfl`, `vote`, `match`, `redux`, `elect`, `activemask` and
//! `bar.warp.sync`.

use super::{Decoder, Mods};
use crate::LoadError;
use crate::ir::{Op, ReduxOp, ShflMode, Ty, VoteMode, WarpOp};

/// `bar.warp.sync`.
pub(super) fn sync(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&["warp", "sync"]).map_err(|w| d.unsupported(w))?;
    Ok(Op::Warp { op: WarpOp::Sync, mask: Some(d.src(0, Ty::U32)?) })
}

/// `shfl.sync` in every mode, of 32 bits.
pub(super) fn shfl(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    if !mods.has("sync") {
        return Err(d.unsupported("shfl without .sync (not on sm_70 and later)"));
    }
    mods.only(&["sync", "up", "down", "bfly", "idx"]).map_err(|w| d.unsupported(w))?;
    let modes = [ShflMode::Up, ShflMode::Down, ShflMode::Bfly, ShflMode::Idx];
    let mode = ["up", "down", "bfly", "idx"].iter().position(|m| mods.has(m)).map(|i| modes[i]);
    let mode = mode.ok_or_else(|| d.unsupported("no mode"))?;
    if d.ty(mods)?.bits() != 32 {
        return Err(d.unsupported("this type"));
    }
    let (dst, p) = d.reg_pair(0)?;
    let (a, b, c) = (d.src(1, Ty::B32)?, d.src(2, Ty::B32)?, d.src(3, Ty::B32)?);
    Ok(Op::Warp { op: WarpOp::Shfl { mode, d: dst, p, a, b, c }, mask: Some(d.src(4, Ty::B32)?) })
}

/// `vote.sync` (`.all`, `.any`, `.uni`, `.ballot`).
pub(super) fn vote(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    if !mods.has("sync") {
        return Err(d.unsupported("vote without .sync (not on sm_70 and later)"));
    }
    mods.only(&["sync", "all", "any", "ballot"]).map_err(|w| d.unsupported(w))?;
    // `.uni` is dropped with the ignored modifiers (`bra.uni`): here it is the mode.
    let uni = d.opcode.split('.').any(|m| m == "uni");
    let modes = [VoteMode::All, VoteMode::Any, VoteMode::Ballot];
    let mode = ["all", "any", "ballot"].iter().position(|m| mods.has(m)).map(|i| modes[i]);
    let mode = if uni { Some(VoteMode::Uni) } else { mode };
    let mode = mode.ok_or_else(|| d.unsupported("no mode"))?;
    let (a, negated) = d.pred(1)?;
    Ok(Op::Warp { op: WarpOp::Vote { mode, d: d.reg(0)?, a, negated }, mask: Some(d.src(2, Ty::B32)?) })
}

/// `match.sync` (`.any`, `.all`), of 32 or 64 bits.
pub(super) fn matching(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&["sync", "any", "all"]).map_err(|w| d.unsupported(w))?;
    let ty = d.ty(mods)?;
    if !mods.has("sync") || !matches!(ty.bits(), 32 | 64) {
        return Err(d.unsupported("this form"));
    }
    let (dst, p) = d.reg_pair(0)?;
    let all = mods.has("all");
    if !all && p.is_some() {
        return Err(d.unsupported("a predicate on match.any"));
    }
    let op = WarpOp::Match { all, wide: ty.bits() == 64, d: dst, p, a: d.src(1, ty)? };
    Ok(Op::Warp { op, mask: Some(d.src(2, Ty::B32)?) })
}

/// `redux.sync` of 32-bit integers.
pub(super) fn redux(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&["sync", "add", "min", "max", "and", "or", "xor"]).map_err(|w| d.unsupported(w))?;
    let ty = d.ty(mods)?;
    let ops_ = [ReduxOp::Add, ReduxOp::Min, ReduxOp::Max, ReduxOp::And, ReduxOp::Or, ReduxOp::Xor];
    let op = ["add", "min", "max", "and", "or", "xor"].iter().position(|m| mods.has(m)).map(|i| ops_[i]);
    let op = op.ok_or_else(|| d.unsupported("no operation"))?;
    if !mods.has("sync") || ty.bits() != 32 || ty.float() {
        return Err(d.unsupported("this form"));
    }
    let op = WarpOp::Redux { op, signed: ty.signed(), d: d.reg(0)?, a: d.src(1, ty)? };
    Ok(Op::Warp { op, mask: Some(d.src(2, Ty::B32)?) })
}

/// `elect.sync`.
pub(super) fn elect(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    if !mods.has("sync") {
        return Err(d.unsupported("elect without .sync"));
    }
    mods.only(&["sync"]).map_err(|w| d.unsupported(w))?;
    let (dst, p) = d.sink_pair(0)?;
    Ok(Op::Warp { op: WarpOp::Elect { d: dst, p }, mask: Some(d.src(1, Ty::B32)?) })
}

/// `activemask`.
pub(super) fn active_mask(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[]).map_err(|w| d.unsupported(w))?;
    Ok(Op::Warp { op: WarpOp::ActiveMask { d: d.reg(0)? }, mask: None })
}
