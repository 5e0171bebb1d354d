//! One warp's lanes, run until none can move without the rest of its block, or for a time
//! slice ([`SLICE`]). The lanes that stand
//! at the lowest instruction run together as one group; the others wait until the group reaches
//! their instruction, where they join it. Lanes that part at a branch thus meet again where their
//! paths join (after an `if`, after a loop), as a GPU's do, and each instruction of a group is
//! dispatched once for all its lanes. A warp-synchronous instruction completes once no lane of the
//! warp can move on ([`super::warp`]), but for a shuffle that every live lane reaches together,
//! which the group's loop computes at once.

use super::access::Shared;
use super::fast::Code;
use super::fast_loop::{self, Group, Stop};
use super::thread::{State, ThreadState};
use super::{Trap, TrapKind, lanes, warp};
use crate::ir::Function;

/// The running lanes at the lowest instruction, if any run.
fn pick(warp: &[ThreadState]) -> Option<Group> {
    let (mut mask, mut pc, mut other) = (0u32, u32::MAX, u32::MAX);
    for (l, t) in warp.iter().enumerate() {
        if t.state != State::Running {
            continue;
        }
        if t.pc < pc {
            (other, pc, mask) = (pc, t.pc, 1 << l);
        } else if t.pc == pc {
            mask |= 1 << l;
        } else {
            other = other.min(t.pc);
        }
    }
    (mask != 0).then_some(Group { mask, pc, other })
}

/// The thread-instructions a warp runs before the other warps of its block (and, in a
/// cooperative launch, the other blocks) have a turn: a warp that spins on memory another
/// writes thus lets the writer run, as a GPU's schedulers do.
pub(super) const SLICE: u64 = 1 << 16;

/// Runs `warp`'s lanes until each has exited or waits (at a barrier, or at a warp-synchronous
/// instruction it cannot complete yet), or for [`SLICE`] thread-instructions; the instructions
/// run, counted against `budget`, and whether the slice ran out with lanes still running.
pub(super) fn run(
    kernel: &Function,
    code: &Code,
    warp: &mut [ThreadState],
    sh: &mut Shared<'_, '_>,
    budget: &mut u64,
) -> Result<(u64, bool), Trap> {
    let (start, clock) = ((*budget).min(SLICE), sh.clock);
    let mut left = start;
    // The slice is what is left of the budget: running out of it ends the launch.
    let last = *budget <= SLICE;
    let result = steps(kernel, code, warp, sh, &mut left, clock, last);
    let ran = start - left;
    (sh.clock, *budget) = (clock + ran, *budget - ran);
    match result {
        Ok(()) => Ok((ran, false)),
        // The slice ran out: the caller may stop the launch here (a watchdog by time).
        Err(None) if !sh.memory.keep_running(sh.launch.budget - *budget) => {
            let t = warp.iter().find(|t| t.state == State::Running).unwrap_or(&warp[0]);
            Err(t.trap(TrapKind::TooLong, kernel.body.get(t.pc as usize).map_or(0, |i| i.line), 0))
        }
        Err(None) => Ok((ran, true)),
        Err(Some(trap)) => Err(trap),
    }
}

/// The loop of [`run`]: `left` counts the slice down, and `sh.clock` is brought up to date
/// (from `clock`, what it was at the start) only where an instruction may read it. `Err(None)`:
/// the slice ran out, the lanes parked where they stand; where it was the `last` of the budget,
/// that is a trap.
fn steps(
    kernel: &Function,
    code: &Code,
    warp: &mut [ThreadState],
    sh: &mut Shared<'_, '_>,
    left: &mut u64,
    clock: u64,
    last: bool,
) -> Result<(), Option<Trap>> {
    let start = *left;
    loop {
        let Some(group) = pick(warp) else {
            // Nothing runs: the warp's meetings that are complete go on.
            if warp.iter().any(|t| t.state == State::Warp) && warp::release(kernel, warp, sh)? {
                continue;
            }
            return Ok(());
        };
        match fast_loop::run(warp, group, &code.steps, left, sh, &kernel.body)? {
            Stop::Regroup => {}
            Stop::Budget if last => {
                let t = &warp[group.mask.trailing_zeros() as usize];
                return Err(Some(t.trap(TrapKind::TooLong, kernel.body[t.pc as usize].line, 0)));
            }
            Stop::Budget => return Err(None),
            Stop::Thread { pc, active } => {
                // An instruction that needs each thread, lane after lane.
                let inst = &kernel.body[pc as usize];
                sh.clock = clock + (start - *left);
                for l in lanes(group.mask) {
                    let t = &mut warp[l];
                    t.pc += 1;
                    if active & 1 << l != 0 {
                        t.step(kernel, &inst.op, inst.line, sh)?;
                    }
                }
            }
        }
    }
}
