//! Memory: `ld`, `st`, `atom`/`red`, and addresses (`cvta`, `isspacep`, `mapa`).

use super::{Decoder, Mod, Mods};
use crate::LoadError;
use crate::ir::{AtomOp, Op, Place, Space, Src, Ty};

/// `ld` and `st` of every state space, one register or a vector of 2, 4 or 8.
pub(super) fn load_store(name: &str, mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[
        Mod::Global,
        Mod::Shared,
        Mod::SharedCta,
        Mod::SharedCluster,
        Mod::Local,
        Mod::Param,
        Mod::Const,
        Mod::V2,
        Mod::V4,
        Mod::V8,
    ])
    .map_err(|w| d.unsupported(w))?;
    let ty = d.ty(mods)?;
    let (mut space, n) = (mods.space(), mods.vector());
    // A `.func`'s parameters and a call's `.param`s live in the frame's local memory.
    let at = d.addr(if name == "ld" { 1 } else { 0 })?;
    if space == Space::Param && matches!(at.base, Src::Addr(Place::Local(_))) {
        space = Space::Local;
    }
    Ok(if name == "ld" {
        let regs = d.regs(0, n)?;
        Op::Ld { space, ty, d: regs, at }
    } else {
        let srcs = d.srcs(1, n, ty)?;
        Op::St { space, ty, s: srcs, at }
    })
}

/// `cvta`: a generic address from one of a state space, or (`.to`) back.
pub(super) fn cvta(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[Mod::To, Mod::Global, Mod::Shared, Mod::SharedCta, Mod::Local, Mod::Const, Mod::Param])
        .map_err(|w| d.unsupported(w))?;
    let ty = d.ty(mods)?;
    if ty.bits() != 64 {
        return Err(d.unsupported("32-bit addresses"));
    }
    Ok(Op::Cvta { to: mods.has(Mod::To), space: mods.space(), d: d.reg(0)?, a: d.src(1, ty)? })
}

/// `atom` and `red` on global, shared or generic memory.
pub(super) fn atom(name: &str, mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    let op = mods.first(atom_op).ok_or_else(|| d.unsupported("no operation"))?;
    mods.only(&[
        Mod::Global,
        Mod::Shared,
        Mod::SharedCta,
        Mod::SharedCluster,
        Mod::Add,
        Mod::Min,
        Mod::Max,
        Mod::Inc,
        Mod::Dec,
        Mod::And,
        Mod::Or,
        Mod::Xor,
        Mod::Exch,
        Mod::Cas,
        Mod::Noftz,
    ])
    .map_err(|w| d.unsupported(w))?;
    let space = match mods.space() {
        s @ (Space::Global | Space::Shared | Space::Generic) => s,
        _ => return Err(d.unsupported("this state space")),
    };
    let typed = match ty {
        t if t.half() => op == AtomOp::Add,
        t if t.float() => matches!(op, AtomOp::Add | AtomOp::Exch),
        // `atom.cas.b16` (sm_70 and later); every other operation on 32 or 64 bits.
        t => t.bits() >= 32 || t.bits() == 16 && op == AtomOp::Cas,
    };
    if !typed {
        return Err(d.unsupported("this type"));
    }
    let (dst, first) = if name == "atom" { (Some(d.reg(0)?), 1) } else { (None, 0) };
    let at = d.addr(first)?;
    let b = d.src(first + 1, ty)?;
    let c = if op == AtomOp::Cas { Some(d.src(first + 2, ty)?) } else { None };
    Ok(Op::Atom { space, op, ty, d: dst, at, b, c })
}

/// `mapa`: the address of another block of the cluster's shared memory.
pub(super) fn mapa(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[Mod::SharedCluster]).map_err(|w| d.unsupported(w))?;
    let ty = d.ty(mods)?;
    let shared = mods.has(Mod::SharedCluster);
    if ty.bits() != if shared { 32 } else { 64 } {
        return Err(d.unsupported("this address width"));
    }
    Ok(Op::Mapa { shared, d: d.reg(0)?, a: d.src(1, ty)?, rank: d.src(2, Ty::U32)? })
}

/// `isspacep`: whether a generic address falls in global, shared or local memory.
pub(super) fn isspacep(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[Mod::Global, Mod::Shared, Mod::SharedCta, Mod::Local]).map_err(|w| d.unsupported(w))?;
    let space = match mods.at(0) {
        Some(Mod::Global) => Space::Global,
        Some(Mod::Shared | Mod::SharedCta) => Space::Shared,
        Some(Mod::Local) => Space::Local,
        _ => return Err(d.unsupported("this space")),
    };
    Ok(Op::IsSpace { space, d: d.reg(0)?, a: d.src(1, Ty::U64)? })
}

fn atom_op(m: Mod) -> Option<AtomOp> {
    Some(match m {
        Mod::Add => AtomOp::Add,
        Mod::Min => AtomOp::Min,
        Mod::Max => AtomOp::Max,
        Mod::Inc => AtomOp::Inc,
        Mod::Dec => AtomOp::Dec,
        Mod::And => AtomOp::And,
        Mod::Or => AtomOp::Or,
        Mod::Xor => AtomOp::Xor,
        Mod::Exch => AtomOp::Exch,
        Mod::Cas => AtomOp::Cas,
        _ => return None,
    })
}
