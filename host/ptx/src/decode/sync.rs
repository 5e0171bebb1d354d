//! The block's and the cluster's barriers, `mbarrier` objects, and the asynchronous copies that
//! arrive at them (`cp.async`, `cp.async.bulk`): each copy done when issued.

use super::{Decoder, Mods};
use crate::LoadError;
use crate::ir::{BarRed, BarRedOp, MBarrierOp, Op, Src, Ty};
use crate::operand::Operand;

/// A cluster's barrier, `barrier.cluster.arrive` and `.wait`.
pub(super) fn cluster_barrier(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&["arrive", "wait"]).map_err(|w| d.unsupported(w))?;
    Ok(match (mods.has("arrive"), mods.has("wait"), d.ops.len()) {
        (true, false, 0) => Op::ClusterBarrier { wait: false },
        (false, true, 0) => Op::ClusterBarrier { wait: true },
        _ => return Err(d.unsupported("this form")),
    })
}

/// `bar` and `barrier` of the block: `.sync`, `.arrive`, `.red` (`.popc`, `.and`, `.or`).
pub(super) fn bar(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&["sync", "arrive", "red", "cta", "popc", "and", "or"]).map_err(|w| d.unsupported(w))?;
    // bar.red d, id[, count], {!}p: the destination comes first, the predicate last.
    let red = match (mods.has("red"), ["popc", "and", "or"].iter().position(|m| mods.has(m))) {
        (false, None) => None,
        (true, Some(i)) => {
            let (p, negated) = d.pred(d.ops.len().saturating_sub(1))?;
            Some(BarRed { op: [BarRedOp::Popc, BarRedOp::And, BarRedOp::Or][i], d: d.reg(0)?, p, negated })
        }
        _ => return Err(d.unsupported("this form")),
    };
    let first = red.is_some() as usize;
    let counted = d.ops.len() - 2 * first; // id and count, without d and p
    let id = if counted == 0 { Src::Imm(0) } else { d.src(first, Ty::U32)? };
    let threads = if counted > 1 { Some(d.src(first + 1, Ty::U32)?) } else { None };
    Ok(Op::Bar { id, threads, wait: !mods.has("arrive"), red })
}

/// `cp.async`: copies of 4, 8 or 16 bytes from global to shared memory (with a source size, or
/// `ignore-src`), their groups' commits and waits (fences here), their arrival at a barrier,
/// and the bulk copies ([`bulk`]).
pub(super) fn copy_async(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    Ok(match mods.words.get(1).map(String::as_str) {
        Some("commit_group" | "wait_group" | "wait_all") => Op::Fence,
        // The thread's copies arrive at a barrier once done, and here they are done when
        // issued: at once. Without `.noinc` the barrier's pending count first grows by the
        // arrival it then gets, which changes nothing.
        Some("mbarrier") if mods.words.get(2).is_some_and(|w| w == "arrive") => {
            mods.only(&["async", "mbarrier", "arrive", "noinc", "shared", "shared::cta"])
                .map_err(|w| d.unsupported(w))?;
            let op = MBarrierOp::Arrive { d: None, count: Src::Imm(1), drop: false, tx: None };
            match mods.has("noinc") {
                true => Op::MBarrier { space: mods.space(), at: d.addr(0)?, op },
                false => Op::Fence,
            }
        }
        Some("bulk") => bulk(mods, d)?,
        Some("shared" | "shared::cta") if mods.words.get(2).is_some_and(|w| w == "global") => {
            mods.only(&["async", "shared", "shared::cta", "global"]).map_err(|w| d.unsupported(w))?;
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
        "init",
        "arrive",
        "arrive_drop",
        "expect_tx",
        "complete_tx",
        "test_wait",
        "try_wait",
        "parity",
        "inval",
        "shared",
        "shared::cta",
    ];
    mods.only(&known).map_err(|w| d.unsupported(w))?;
    if mods.ty() != Some(Ty::B64) {
        return Err(d.unsupported("a type other than .b64"));
    }
    let space = mods.space();
    let (at, op) = match mods.words.first().map(String::as_str) {
        Some("init") if ops.len() == 2 => (d.addr(0)?, MBarrierOp::Init { count: d.src(1, Ty::U32)? }),
        Some(kind @ ("arrive" | "arrive_drop")) if matches!(ops.len(), 2 | 3) => {
            let state = match ops.first() {
                Some(Operand::Sink) => None,
                _ => Some(d.reg(0)?),
            };
            // The third operand: a count of arrivals, or with `.expect_tx` the bytes expected.
            let third = if ops.len() == 3 { Some(d.src(2, Ty::U32)?) } else { None };
            let (count, tx) = match mods.has("expect_tx") {
                true => (Src::Imm(1), Some(third.ok_or_else(|| d.unsupported("no transaction count"))?)),
                false => (third.unwrap_or(Src::Imm(1)), None),
            };
            (d.addr(1)?, MBarrierOp::Arrive { d: state, count, drop: kind == "arrive_drop", tx })
        }
        Some(kind @ ("expect_tx" | "complete_tx")) if ops.len() == 2 => {
            (d.addr(0)?, MBarrierOp::Transact { bytes: d.src(1, Ty::U32)?, complete: kind == "complete_tx" })
        }
        // `try_wait`'s fourth operand is a hint of how long to suspend, which nothing here does.
        Some("test_wait" | "try_wait") if matches!(ops.len(), 3 | 4) => {
            let parity = mods.has("parity");
            let token = d.src(2, if parity { Ty::U32 } else { Ty::B64 })?;
            (d.addr(1)?, MBarrierOp::Wait { d: d.reg(0)?, token, parity })
        }
        Some("inval") if ops.len() == 1 => (d.addr(0)?, MBarrierOp::Inval),
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
    let words: Vec<&str> = mods.words.iter().map(String::as_str).collect();
    Ok(match words[2..] {
        ["commit_group"] | ["wait_group"] | ["wait_group", "read"] | ["prefetch", "L2", "global"] => Op::Fence,
        ["shared::cluster" | "shared::cta", "global", "mbarrier::complete_tx::bytes"] if operands == 4 => {
            Op::CopyBulk { dst: d.addr(0)?, src: d.addr(1)?, size: d.src(2, Ty::U32)?, barrier: Some(d.addr(3)?) }
        }
        ["global", "shared::cta", "bulk_group"] if operands == 3 => {
            Op::CopyBulk { dst: d.addr(0)?, src: d.addr(1)?, size: d.src(2, Ty::U32)?, barrier: None }
        }
        _ => return Err(d.unsupported("this form")),
    })
}
