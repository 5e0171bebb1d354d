//! Warp-synchronous instructions under independent scheduling. A lane that reaches one stops
//! there (its pc stays on it). Once no lane of its warp can move on, the lanes meet (a
//! shuffle that every live lane reaches together is computed where they stand, [`exchange`]):
//! a lane's meeting is complete when every lane its member mask names that has not
//! exited waits at an instruction of the same kind with the same mask; then all of them
//! compute at once, each with its own operands, and go on. `activemask` names no lanes: the
//! lanes waiting at that same instruction meet there once nothing else in their warp can
//! move, so lanes that diverged and would come back together are counted together.

use super::access::Shared;
use super::thread::{State, ThreadState};
use super::{Trap, TrapKind, WarpFault, lanes, matrix};
use crate::ir::{Function, Inst, Op, ReduxOp, ShflMode, Src, VoteMode, WarpOp};

/// One waiting lane: the instruction it waits at and the lanes it names.
#[derive(Clone, Copy)]
struct Arrival<'k> {
    op: &'k WarpOp,
    mask: u32,
    pc: u32,
    line: u32,
}

fn arrivals<'k>(kernel: &'k Function, warp: &[ThreadState], sh: &Shared<'_, '_>) -> [Option<Arrival<'k>>; 32] {
    let mut out = [None; 32];
    for (lane, t) in warp.iter().enumerate() {
        if t.state != State::Warp {
            continue;
        }
        let inst = &kernel.body[t.pc as usize];
        if let Op::Warp { op, mask } = &inst.op {
            let mask = mask.map_or(0, |m| t.value(m, sh) as u32);
            out[lane] = Some(Arrival { op, mask, pc: t.pc, line: inst.line });
        }
    }
    out
}

pub(super) fn live(warp: &[ThreadState]) -> u32 {
    warp.iter().enumerate().filter(|(_, t)| t.state != State::Exited).fold(0, |m, (i, _)| m | 1 << i)
}

/// The lanes that meet with `lane`, if its meeting is complete.
fn meeting(lane: usize, all: &[Option<Arrival<'_>>; 32], live: u32) -> Option<u32> {
    let me = all[lane]?;
    let matching = |other: &Arrival| match me.op {
        WarpOp::ActiveMask { .. } => other.pc == me.pc,
        _ => other.op.same_kind(me.op) && other.mask == me.mask,
    };
    let group = (0..32).filter(|&i| all[i].as_ref().is_some_and(matching)).fold(0u32, |m, i| m | 1 << i);
    match me.op {
        WarpOp::ActiveMask { .. } => Some(group),
        _ => (group & me.mask == me.mask & live).then_some(group & me.mask),
    }
}

/// Completes every meeting that can be; whether any did.
pub(super) fn release(kernel: &Function, threads: &mut [ThreadState], sh: &mut Shared<'_, '_>) -> Result<bool, Trap> {
    let mut progressed = false;
    for warp in threads.chunks_mut(32) {
        if let Some(shuffled) = shuffle(kernel, warp, sh) {
            shuffled?;
            progressed = true;
            continue;
        }
        let all = arrivals(kernel, warp, sh);
        let live = live(warp);
        let mut done = 0u32;
        // Meetings of named lanes first; `activemask` only once nothing else in the warp can
        // move, so that lanes that would come to it together do.
        for named in [true, false] {
            for lane in 0..warp.len() {
                let Some(me) = all[lane] else { continue };
                let active = matches!(me.op, WarpOp::ActiveMask { .. });
                if done & 1 << lane != 0 || active == named {
                    continue;
                }
                if !active && me.mask & 1 << lane == 0 {
                    return Err(warp[lane].trap(TrapKind::Warp(WarpFault::NotInMask), me.line, me.mask as u64));
                }
                let Some(group) = meeting(lane, &all, live) else { continue };
                compute(warp, &all, group, sh)?;
                done |= group;
            }
            if done != 0 {
                progressed = true;
                break;
            }
        }
    }
    Ok(progressed)
}

/// The common meeting, computed as [`compute`] would: every live lane of the warp waits at the
/// same `shfl.sync` with the same member mask, which names them all. `None` when the warp is
/// not in that state.
fn shuffle(kernel: &Function, warp: &mut [ThreadState], sh: &Shared<'_, '_>) -> Option<Result<(), Trap>> {
    let first = warp.iter().find(|t| t.state != State::Exited)?;
    let pc = first.pc;
    if !warp.iter().all(|t| t.state == State::Exited || (t.state == State::Warp && t.pc == pc)) {
        return None;
    }
    let group = live(warp);
    if let Err(trap) = exchange(&kernel.body[pc as usize], warp, group, sh)? {
        return Some(Err(trap));
    }
    for l in lanes(group) {
        (warp[l].pc, warp[l].state) = (pc + 1, State::Running);
    }
    Some(Ok(()))
}

/// `inst` computed for `group`, every live lane of the warp, which all stand at it, if it is a
/// `shfl.sync` whose member mask, the same for every lane, names them all; their registers
/// are written, their places left as they are. `None` when it is not such a shuffle.
pub(super) fn exchange(
    inst: &Inst,
    warp: &mut [ThreadState],
    group: u32,
    sh: &Shared<'_, '_>,
) -> Option<Result<(), Trap>> {
    let Op::Warp { op: WarpOp::Shfl { mode, d, p, a, b, c }, mask: Some(m) } = inst.op else { return None };
    let mask = warp[group.trailing_zeros() as usize].value(m, sh) as u32;
    if group & !mask != 0 {
        return None;
    }
    // Every lane's operands and source lane first, then every lane's result: a lane's `d` may
    // be another's `a`.
    let (mut values, mut sources) = ([0u64; 32], [(0u8, false); 32]);
    for l in lanes(group) {
        let t = &warp[l];
        if t.value(m, sh) as u32 != mask {
            return None;
        }
        values[l] = t.value(a, sh) & 0xffff_ffff;
        let (j, pval) = source(mode, l as u32, t.value(b, sh) as u32, t.value(c, sh) as u32);
        let j = if pval { j } else { l as u32 };
        if group & 1 << j == 0 {
            return Some(Err(t.trap(TrapKind::Warp(WarpFault::Inactive), inst.line, mask as u64)));
        }
        sources[l] = (j as u8, pval);
    }
    for l in lanes(group) {
        let (t, (j, pval)) = (&mut warp[l], sources[l]);
        t.set(d, values[j as usize]);
        if let Some(p) = p {
            t.set(p, pval as u64);
        }
    }
    Some(Ok(()))
}

/// Why nothing can move, if a warp meeting is the reason: two lanes that wait for each other
/// at instructions that can never meet.
pub(super) fn mismatch(kernel: &Function, threads: &[ThreadState], sh: &Shared<'_, '_>) -> Option<Trap> {
    for warp in threads.chunks(32) {
        let all = arrivals(kernel, warp, sh);
        let live = live(warp);
        for (lane, me) in all.iter().enumerate() {
            let Some(me) = me else { continue };
            if matches!(me.op, WarpOp::ActiveMask { .. }) {
                continue;
            }
            let mut others = (0..32).filter(|&i| me.mask & live & 1 << i != 0).filter_map(|i| all[i]);
            if others.any(|o| !o.op.same_kind(me.op) || o.mask != me.mask) {
                return Some(warp[lane].trap(TrapKind::Warp(WarpFault::Mismatch), me.line, me.mask as u64));
            }
        }
    }
    None
}

/// Computes a complete meeting: every lane reads its operands first, then every lane writes.
fn compute(
    warp: &mut [ThreadState],
    all: &[Option<Arrival<'_>>; 32],
    group: u32,
    sh: &mut Shared<'_, '_>,
) -> Result<(), Trap> {
    let op_of = |lane: usize| all[lane].expect("lanes of a meeting wait").op;
    let mut results = [(0u64, None::<bool>); 32];
    // What an instruction that writes several registers of each lane writes.
    let mut several: Option<[Vec<u64>; 32]> = None;
    let first = lanes(group).next().expect("a meeting has a lane");
    let line = all[first].map_or(0, |m| m.line);
    // Matrix instructions take every lane of the warp.
    if matches!(op_of(first), WarpOp::Mma(_) | WarpOp::Rows(_)) && group != u32::MAX {
        return Err(warp[first].trap(TrapKind::Warp(WarpFault::Inactive), line, u32::MAX as u64));
    }
    match *op_of(first) {
        WarpOp::Shfl { .. } => {
            let mut a = [0u64; 32];
            for l in lanes(group) {
                let WarpOp::Shfl { a: src, .. } = *op_of(l) else { unreachable!() };
                a[l] = warp[l].value(src, sh) & 0xffff_ffff;
            }
            for l in lanes(group) {
                let WarpOp::Shfl { mode, b, c, p, .. } = *op_of(l) else { unreachable!() };
                let (b, c) = (warp[l].value(b, sh) as u32, warp[l].value(c, sh) as u32);
                let (j, pval) = source(mode, l as u32, b, c);
                let j = if pval { j } else { l as u32 };
                if group & 1 << j == 0 {
                    let mask = all[l].map_or(0, |m| m.mask);
                    return Err(warp[l].trap(
                        TrapKind::Warp(WarpFault::Inactive),
                        all[l].map_or(0, |m| m.line),
                        mask as u64,
                    ));
                }
                results[l] = (a[j as usize], p.map(|_| pval));
            }
        }
        WarpOp::Vote { mode, .. } => {
            let mut ballot = 0u32;
            for l in lanes(group) {
                let WarpOp::Vote { a, negated, .. } = *op_of(l) else { unreachable!() };
                if (warp[l].value(a, sh) & 1 != 0) != negated {
                    ballot |= 1 << l;
                }
            }
            let v = match mode {
                VoteMode::All => (ballot == group) as u64,
                VoteMode::Any => (ballot != 0) as u64,
                VoteMode::Uni => (ballot == group || ballot == 0) as u64,
                VoteMode::Ballot => ballot as u64,
            };
            lanes(group).for_each(|l| results[l] = (v, None));
        }
        WarpOp::Match { all: every, wide, .. } => {
            let mut v = [0u64; 32];
            for l in lanes(group) {
                let WarpOp::Match { a, .. } = *op_of(l) else { unreachable!() };
                v[l] = warp[l].value(a, sh) & if wide { u64::MAX } else { 0xffff_ffff };
            }
            let first = v[lanes(group).next().unwrap_or(0)];
            let same = lanes(group).all(|l| v[l] == first);
            for l in lanes(group) {
                let equal = lanes(group).filter(|&k| v[k] == v[l]).fold(0u32, |m, k| m | 1 << k);
                results[l] = match every {
                    true => (if same { group as u64 } else { 0 }, Some(same)),
                    false => (equal as u64, None),
                };
            }
        }
        WarpOp::Redux { op, signed, .. } => {
            let values = lanes(group).map(|l| {
                let WarpOp::Redux { a, .. } = *op_of(l) else { unreachable!() };
                warp[l].value(a, sh) as u32
            });
            let v = values.reduce(|x, y| redux(op, signed, x, y)).unwrap_or(0);
            lanes(group).for_each(|l| results[l] = (v as u64, None));
        }
        WarpOp::Sync => {}
        WarpOp::Elect { .. } => {
            let leader = group.trailing_zeros() as usize;
            lanes(group).for_each(|l| results[l] = (leader as u64, Some(l == leader)));
        }
        WarpOp::ActiveMask { .. } => lanes(group).for_each(|l| results[l] = (group as u64, None)),
        WarpOp::Mma(ref mma) => {
            let read =
                |l: usize, regs: &[u32]| regs.iter().map(|&r| warp[l].value(Src::Reg(r), sh)).collect::<Vec<_>>();
            let values: Vec<[Vec<u64>; 3]> =
                (0..32).map(|l| [read(l, &mma.a_regs), read(l, &mma.b_regs), read(l, &mma.c_regs)]).collect();
            let operands = std::array::from_fn(|l| {
                let [a, b, c] = &values[l];
                matrix::Operands { a, b, c }
            });
            several = Some(matrix::multiply(mma, &operands));
        }
        WarpOp::Rows(ref m) => {
            // Lane 8 i + r gives the address of row r of matrix i.
            let count = 8 * m.count as usize;
            let mut rows = [[0u8; 16]; 32];
            if m.store {
                for (i, matrix) in rows.chunks_mut(8).take(m.count as usize).enumerate() {
                    let words: [u64; 32] = std::array::from_fn(|l| warp[l].value(Src::Reg(m.regs[i]), sh));
                    matrix::stmatrix_rows(&words, matrix, m.trans);
                }
            }
            for (src, row) in rows.iter_mut().enumerate().take(count) {
                let addr = warp[src].address(&m.at, sh);
                match m.store {
                    true => warp[src].access(sh).write(m.space, addr, row, line)?,
                    false => warp[src].access(sh).read(m.space, addr, row, line)?,
                }
            }
            if !m.store {
                several = Some(std::array::from_fn(|l| {
                    let matrices = rows.chunks(8).take(m.count as usize);
                    matrices.map(|rows| matrix::ldmatrix_word(rows, l, m.trans)).collect()
                }));
            }
        }
    }
    for l in lanes(group) {
        let t = &mut warp[l];
        let (v, p) = results[l];
        match *op_of(l) {
            WarpOp::Shfl { d, p: pd, .. } | WarpOp::Match { d, p: pd, .. } => {
                t.set(d, v);
                if let (Some(pd), Some(p)) = (pd, p) {
                    t.set(pd, p as u64);
                }
            }
            WarpOp::Vote { d, .. } | WarpOp::Redux { d, .. } | WarpOp::ActiveMask { d } => t.set(d, v),
            WarpOp::Mma(ref mma) => set_all(t, &mma.d_regs, several.as_ref().map_or(&[][..], |p| &p[l][..])),
            WarpOp::Rows(ref m) if !m.store => set_all(t, &m.regs, several.as_ref().map_or(&[][..], |p| &p[l][..])),
            WarpOp::Rows(_) => {}
            WarpOp::Elect { d, p: pd } => {
                d.into_iter().for_each(|d| t.set(d, v));
                if let (Some(pd), Some(p)) = (pd, p) {
                    t.set(pd, p as u64);
                }
            }
            WarpOp::Sync => {}
        }
        t.pc += 1;
        t.state = State::Running;
    }
    Ok(())
}

/// Registers `regs` of `t` set to `values`, in turn.
fn set_all(t: &mut ThreadState, regs: &[u32], values: &[u64]) {
    regs.iter().zip(values).for_each(|(&r, &v)| t.set(r, v));
}

/// `shfl.sync`'s source lane for `lane` and whether it is in range, as the PTX ISA defines
/// them: `c` packs the clamp (bits 0-4) and the segment mask (bits 8-12).
pub(crate) fn source(mode: ShflMode, lane: u32, b: u32, c: u32) -> (u32, bool) {
    let (bval, clamp, seg) = (b & 0x1f, c & 0x1f, (c >> 8) & 0x1f);
    let max_lane = (lane & seg) | (clamp & !seg);
    let min_lane = lane & seg;
    match mode {
        ShflMode::Up => {
            let j = lane as i32 - bval as i32;
            (j.max(0) as u32, j >= max_lane as i32)
        }
        ShflMode::Down => (lane + bval, lane + bval <= max_lane),
        ShflMode::Bfly => (lane ^ bval, lane ^ bval <= max_lane),
        ShflMode::Idx => {
            let j = min_lane | (bval & !seg);
            (j, j <= max_lane)
        }
    }
}

fn redux(op: ReduxOp, signed: bool, x: u32, y: u32) -> u32 {
    match op {
        ReduxOp::Add => x.wrapping_add(y),
        ReduxOp::Min if signed => (x as i32).min(y as i32) as u32,
        ReduxOp::Max if signed => (x as i32).max(y as i32) as u32,
        ReduxOp::Min => x.min(y),
        ReduxOp::Max => x.max(y),
        ReduxOp::And => x & y,
        ReduxOp::Or => x | y,
        ReduxOp::Xor => x ^ y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffle_sources_follow_the_clamp_and_segment_mask() {
        // Whole warp: c = 0x1f for down/bfly/idx, 0 for up.
        assert_eq!(source(ShflMode::Down, 30, 1, 0x1f), (31, true));
        assert_eq!(source(ShflMode::Down, 31, 1, 0x1f), (32, false));
        assert_eq!(source(ShflMode::Up, 0, 1, 0), (0, false));
        assert_eq!(source(ShflMode::Up, 5, 2, 0), (3, true));
        assert_eq!(source(ShflMode::Bfly, 5, 3, 0x1f), (6, true));
        assert_eq!(source(ShflMode::Idx, 9, 33, 0x1f), (1, true));
        // Segments of 8 (width 8): c = (32 - 8) << 8 | clamp.
        assert_eq!(source(ShflMode::Down, 13, 3, 0x1800 | 0x1f), (16, false));
        assert_eq!(source(ShflMode::Down, 12, 3, 0x1800 | 0x1f), (15, true));
        assert_eq!(source(ShflMode::Up, 17, 2, 0x1800), (15, false));
        assert_eq!(source(ShflMode::Idx, 21, 3, 0x1800 | 0x1f), (19, true));
        // A clamp below the lane: out of range, the lane keeps its own value.
        assert_eq!(source(ShflMode::Idx, 3, 9, 0x7), (9, false));
    }
}
