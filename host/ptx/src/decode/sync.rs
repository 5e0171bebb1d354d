//! The block's and the cluster's barriers, `mbarrier` objects, and the asynchronous copies that
//! arrive at them (`cp.async`, `cp.async.bulk`): each copy done when issued.

use super::{Decoder, Mod, Mods};
use crate::LoadError;
use crate::ir::{BarRed, BarRedOp, MBarrierOp, Op, Src, Ty};
use crate::operand::Operand;

/// A cluster's barrier, `barrier.cluster.arrive` and `.wait`.
pub(super) fn cluster_barrier(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[Mod::Arrive, Mod::Wait]).map_err(|w| d.unsupported(w))?;
    Ok(match (mods.has(Mod::Arrive), mods.has(Mod::Wait), d.ops.len()) {
        (true, false, 0) => Op::ClusterBarrier { wait: false },
        (false, true, 0) => Op::ClusterBarrier { wait: true },
        _ => return Err(d.unsupported("this form")),
    })
}

/// `bar` and `barrier` of the block: `.sync`, `.arrive`, `.red` (`.popc`, `.and`, `.or`).
pub(super) fn bar(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[Mod::Sync, Mod::Arrive, Mod::Red, Mod::Popc, Mod::And, Mod::Or]).map_err(|w| d.unsupported(w))?;
    // bar.red d, id[, count], {!}p: the destination comes first, the predicate last.
    let ops = [(Mod::Popc, BarRedOp::Popc), (Mod::And, BarRedOp::And), (Mod::Or, BarRedOp::Or)];
    let red = match (mods.has(Mod::Red), mods.pick(&ops)) {
        (false, None) => None,
        (true, Some(op)) => {
            let (p, negated) = d.pred(d.ops.len().saturating_sub(1))?;
            Some(BarRed { op, d: d.reg(0)?, p, negated })
        }
        _ => return Err(d.unsupported("this form")),
    };
    let first = red.is_some() as usize;
    let counted = d.ops.len() - 2 * first; // id and count, without d and p
    let id = if counted == 0 { Src::Imm(0) } else { d.src(first, Ty::U32)? };
    let threads = if counted > 1 { Some(d.src(first + 1, Ty::U32)?) } else { None };
    Ok(Op::Bar { id, threads, wait: !mods.has(Mod::Arrive), red })
}

/// `cp.async`: copies of 4, 8 or 16 bytes from global to shared memory (with a source size, or
/// `ignore-src`), their groups' commits and waits (fences here), their arrival at a barrier,
/// and the bulk copies ([`bulk`]).
pub(super) fn copy_async(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    Ok(match mods.at(1) {
        Some(Mod::CommitGroup | Mod::WaitGroup | Mod::WaitAll) => Op::Fence,
        // The thread's copies arrive at a barrier once done, and here they are done when
        // issued: at once. Without `.noinc` the barrier's pending count first grows by the
        // arrival it then gets, which changes nothing.
        Some(Mod::Mbarrier) if mods.at(2) == Some(Mod::Arrive) => {
            mods.only(&[Mod::Async, Mod::Mbarrier, Mod::Arrive, Mod::Noinc, Mod::Shared, Mod::SharedCta])
                .map_err(|w| d.unsupported(w))?;
            let op = MBarrierOp::Arrive { d: None, count: Src::Imm(1), drop: false, tx: None };
            match mods.has(Mod::Noinc) {
                true => Op::MBarrier { space: mods.space(), at: d.addr(0)?, op },
                false => Op::Fence,
            }
        }
        Some(Mod::Bulk) => bulk(mods, d)?,
        Some(Mod::Shared | Mod::SharedCta) if mods.at(2) == Some(Mod::Global) => {
            mods.only(&[Mod::Async, Mod::Shared, Mod::SharedCta, Mod::Global]).map_err(|w| d.unsupported(w))?;
            let size = match d.ops.get(2) {
                Some(Operand::Int(n @ (4 | 8 | 16))) => *n as u32,
                _ => return Err(d.unsupported("a copy size other than 4, 8 or 16")),
            };
            // With `.L2::cache_hint` the last operand is a cache policy, which changes nothing.
            let hinted = d.opcode.split('.').any(|m| m == "L2::cache_hint");
            let operands = d.ops.len() - hinted as usize;
            // The fourth operand: a source size (a number), or `ignore-src` (a predicate).
            let (keep, ignore) = match d.ops.get(3) {
                _ if operands <= 3 => (None, None),
                Some(Operand::Not(_)) => (None, Some(d.pred(3)?)),
                Some(Operand::Reg(r)) if d.scope.registers.is_predicate(*r) => (None, Some(d.pred(3)?)),
                Some(_) if operands == 4 => (Some(d.src(3, Ty::U32)?), None),
                _ => return Err(d.unsupported("too many operands")),
            };
            Op::CopyAsync { dst: d.addr(0)?, src: d.addr(1)?, size, keep, ignore }
        }
        _ => return Err(d.unsupported("this form")),
    })
}

/// `mbarrier` on a barrier of the block's shared memory: `init`, `arrive`, `arrive_drop`
/// (`.expect_tx` too), `expect_tx`, `complete_tx`, `test_wait` and `try_wait` (with
/// `.parity`), `inval`. Another block's barriers (`.shared::cluster`) and `pending_count` are
/// not simulated.
pub(super) fn mbarrier(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ops = d.ops;
    let known = [
        Mod::Init,
        Mod::Arrive,
        Mod::ArriveDrop,
        Mod::ExpectTx,
        Mod::CompleteTx,
        Mod::TestWait,
        Mod::TryWait,
        Mod::Parity,
        Mod::Inval,
        Mod::Shared,
        Mod::SharedCta,
    ];
    mods.only(&known).map_err(|w| d.unsupported(w))?;
    if mods.ty() != Some(Ty::B64) {
        return Err(d.unsupported("a type other than .b64"));
    }
    let space = mods.space();
    let (at, op) = match mods.at(0) {
        Some(Mod::Init) if ops.len() == 2 => (d.addr(0)?, MBarrierOp::Init { count: d.src(1, Ty::U32)? }),
        Some(kind @ (Mod::Arrive | Mod::ArriveDrop)) if matches!(ops.len(), 2 | 3) => {
            let state = match ops.first() {
                Some(Operand::Sink) => None,
                _ => Some(d.reg(0)?),
            };
            // The third operand: a count of arrivals, or with `.expect_tx` the bytes expected.
            let third = if ops.len() == 3 { Some(d.src(2, Ty::U32)?) } else { None };
            let (count, tx) = match mods.has(Mod::ExpectTx) {
                true => (Src::Imm(1), Some(third.ok_or_else(|| d.unsupported("no transaction count"))?)),
                false => (third.unwrap_or(Src::Imm(1)), None),
            };
            (d.addr(1)?, MBarrierOp::Arrive { d: state, count, drop: kind == Mod::ArriveDrop, tx })
        }
        Some(kind @ (Mod::ExpectTx | Mod::CompleteTx)) if ops.len() == 2 => {
            (d.addr(0)?, MBarrierOp::Transact { bytes: d.src(1, Ty::U32)?, complete: kind == Mod::CompleteTx })
        }
        // `try_wait`'s fourth operand is a hint of how long to suspend, which nothing here does.
        Some(Mod::TestWait | Mod::TryWait) if matches!(ops.len(), 3 | 4) => {
            let parity = mods.has(Mod::Parity);
            let token = d.src(2, if parity { Ty::U32 } else { Ty::B64 })?;
            (d.addr(1)?, MBarrierOp::Wait { d: d.reg(0)?, token, parity })
        }
        Some(Mod::Inval) if ops.len() == 1 => (d.addr(0)?, MBarrierOp::Inval),
        _ => return Err(d.unsupported("this form")),
    };
    Ok(Op::MBarrier { space, at, op })
}

/// `cp.async.bulk` without tensor maps: from global memory to the block's shared memory,
/// completing bytes of a barrier's transaction count, or from shared memory to global (a bulk
/// group, whose commits and waits are fences here, the copies done when issued). A
/// `.shared::cluster` address is the block's own, or another block's of its cluster (`mapa`).
fn bulk(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    // With `.L2::cache_hint` the last operand is a cache policy, which changes nothing.
    let operands = d.ops.len() - d.opcode.split('.').any(|m| m == "L2::cache_hint") as usize;
    Ok(match mods.tail(2).as_deref() {
        Some(
            [Mod::CommitGroup] | [Mod::WaitGroup] | [Mod::WaitGroup, Mod::Read] | [Mod::Prefetch, Mod::L2, Mod::Global],
        ) => Op::Fence,
        Some([Mod::SharedCluster | Mod::SharedCta, Mod::Global, Mod::CompleteTxBytes]) if operands == 4 => {
            Op::CopyBulk { dst: d.addr(0)?, src: d.addr(1)?, size: d.src(2, Ty::U32)?, barrier: Some(d.addr(3)?) }
        }
        Some([Mod::Global, Mod::SharedCta, Mod::BulkGroup]) if operands == 3 => {
            Op::CopyBulk { dst: d.addr(0)?, src: d.addr(1)?, size: d.src(2, Ty::U32)?, barrier: None }
        }
        _ => return Err(d.unsupported("this form")),
    })
}
