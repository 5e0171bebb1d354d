//! Warp-synchronous instructions: `shfl`, `vote`, `match`, `redux`, `elect`, `activemask` and
//! `bar.warp.sync`.

use super::{Decoder, Mod, Mods};
use crate::LoadError;
use crate::ir::{Op, ReduxOp, ShflMode, Ty, VoteMode, WarpOp};

/// `bar.warp.sync`.
pub(super) fn sync(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[Mod::Warp, Mod::Sync]).map_err(|w| d.unsupported(w))?;
    Ok(Op::Warp { op: WarpOp::Sync, mask: Some(d.src(0, Ty::U32)?) })
}

/// `shfl.sync` in every mode, of 32 bits.
pub(super) fn shfl(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    if !mods.has(Mod::Sync) {
        return Err(d.unsupported("shfl without .sync (not on sm_70 and later)"));
    }
    mods.only(&[Mod::Sync, Mod::Up, Mod::Down, Mod::Bfly, Mod::Idx]).map_err(|w| d.unsupported(w))?;
    let modes =
        [(Mod::Up, ShflMode::Up), (Mod::Down, ShflMode::Down), (Mod::Bfly, ShflMode::Bfly), (Mod::Idx, ShflMode::Idx)];
    let mode = mods.pick(&modes).ok_or_else(|| d.unsupported("no mode"))?;
    if d.ty(mods)?.bits() != 32 {
        return Err(d.unsupported("this type"));
    }
    let (dst, p) = d.reg_pair(0)?;
    let (a, b, c) = (d.src(1, Ty::B32)?, d.src(2, Ty::B32)?, d.src(3, Ty::B32)?);
    Ok(Op::Warp { op: WarpOp::Shfl { mode, d: dst, p, a, b, c }, mask: Some(d.src(4, Ty::B32)?) })
}

/// `vote.sync` (`.all`, `.any`, `.uni`, `.ballot`).
pub(super) fn vote(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    if !mods.has(Mod::Sync) {
        return Err(d.unsupported("vote without .sync (not on sm_70 and later)"));
    }
    mods.only(&[Mod::Sync, Mod::All, Mod::Any, Mod::Ballot]).map_err(|w| d.unsupported(w))?;
    // `.uni` is dropped with the ignored modifiers (`bra.uni`): here it is the mode.
    let uni = d.opcode.split('.').any(|m| m == "uni");
    let mode = mods.pick(&[(Mod::All, VoteMode::All), (Mod::Any, VoteMode::Any), (Mod::Ballot, VoteMode::Ballot)]);
    let mode = if uni { Some(VoteMode::Uni) } else { mode };
    let mode = mode.ok_or_else(|| d.unsupported("no mode"))?;
    let (a, negated) = d.pred(1)?;
    Ok(Op::Warp { op: WarpOp::Vote { mode, d: d.reg(0)?, a, negated }, mask: Some(d.src(2, Ty::B32)?) })
}

/// `match.sync` (`.any`, `.all`), of 32 or 64 bits.
pub(super) fn matching(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[Mod::Sync, Mod::Any, Mod::All]).map_err(|w| d.unsupported(w))?;
    let ty = d.ty(mods)?;
    if !mods.has(Mod::Sync) || !matches!(ty.bits(), 32 | 64) {
        return Err(d.unsupported("this form"));
    }
    let (dst, p) = d.reg_pair(0)?;
    let all = mods.has(Mod::All);
    if !all && p.is_some() {
        return Err(d.unsupported("a predicate on match.any"));
    }
    let op = WarpOp::Match { all, wide: ty.bits() == 64, d: dst, p, a: d.src(1, ty)? };
    Ok(Op::Warp { op, mask: Some(d.src(2, Ty::B32)?) })
}

/// `redux.sync` of 32-bit integers.
pub(super) fn redux(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[Mod::Sync, Mod::Add, Mod::Min, Mod::Max, Mod::And, Mod::Or, Mod::Xor]).map_err(|w| d.unsupported(w))?;
    let ty = d.ty(mods)?;
    let ops = [
        (Mod::Add, ReduxOp::Add),
        (Mod::Min, ReduxOp::Min),
        (Mod::Max, ReduxOp::Max),
        (Mod::And, ReduxOp::And),
        (Mod::Or, ReduxOp::Or),
        (Mod::Xor, ReduxOp::Xor),
    ];
    let op = mods.pick(&ops).ok_or_else(|| d.unsupported("no operation"))?;
    if !mods.has(Mod::Sync) || ty.bits() != 32 || ty.float() {
        return Err(d.unsupported("this form"));
    }
    let op = WarpOp::Redux { op, signed: ty.signed(), d: d.reg(0)?, a: d.src(1, ty)? };
    Ok(Op::Warp { op, mask: Some(d.src(2, Ty::B32)?) })
}

/// `elect.sync`.
pub(super) fn elect(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    if !mods.has(Mod::Sync) {
        return Err(d.unsupported("elect without .sync"));
    }
    mods.only(&[Mod::Sync]).map_err(|w| d.unsupported(w))?;
    let (dst, p) = d.sink_pair(0)?;
    Ok(Op::Warp { op: WarpOp::Elect { d: dst, p }, mask: Some(d.src(1, Ty::B32)?) })
}

/// `activemask`.
pub(super) fn active_mask(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[]).map_err(|w| d.unsupported(w))?;
    Ok(Op::Warp { op: WarpOp::ActiveMask { d: d.reg(0)? }, mask: None })
}
