//! One block: its warps, run in turn until each lane exits or waits at a barrier or a
//! warp-synchronous instruction (`schedule.rs`); a barrier releases its waiters when as many
//! threads as it counts (by default every thread that has not exited) have arrived, and a
//! warp's lanes meet as `warp.rs` says.

use super::fast::Code;
use super::thread::{Shared, State, ThreadState};
use super::{Launch, Memory, Thread, Trap, TrapKind, schedule, warp};
use crate::ir::{BarRedOp, Function};

/// Runs block `index` of the launch; the instructions it ran. `threads` holds the states of
/// the last block run, whose allocations are kept.
pub(super) fn run(
    kernel: &Function,
    code: &Code,
    launch: &Launch<'_>,
    index: [u32; 3],
    memory: &mut dyn Memory,
    budget: &mut u64,
    threads: &mut Vec<ThreadState>,
) -> Result<u64, Trap> {
    let [bx, by, bz] = launch.shape.block;
    threads.truncate((bx * by * bz) as usize);
    for z in 0..bz {
        for y in 0..by {
            for x in 0..bx {
                let linear = x + bx * (y + by * z);
                let who = Thread { block: index, thread: [x, y, z] };
                match threads.get_mut(linear as usize) {
                    Some(t) => t.reset(kernel, code, launch, who, linear),
                    None => threads.push(ThreadState::new(kernel, code, launch, who, linear)),
                }
            }
        }
    }
    let threads = &mut threads[..];
    let size = kernel.shared_bytes as usize + launch.shape.shared as usize;
    let mut shared = Shared { launch, memory, bytes: vec![0; size], clock: 0, arrived: [0; 16] };
    let mut ran = 0;
    // The threads that wait at each barrier, in order.
    let mut waiting: [Vec<usize>; 16] = Default::default();
    loop {
        waiting.iter_mut().for_each(Vec::clear);
        let (mut live, mut in_warp, mut barriers, mut yielded) = (0u32, false, 0u16, false);
        for lanes in threads.chunks_mut(32) {
            if lanes.iter().any(|t| t.state == State::Running) {
                ran += schedule::run(kernel, code, lanes, &mut shared, budget)?;
            }
        }
        for (i, t) in threads.iter_mut().enumerate() {
            match t.state {
                State::Exited => continue,
                State::Warp => in_warp = true,
                State::Waiting { id, .. } => {
                    barriers |= 1 << id;
                    waiting[id as usize].push(i);
                }
                // It runs again now that the rest of the block has run.
                State::Yield => {
                    t.state = State::Running;
                    yielded = true;
                }
                State::Running => {}
            }
            live += 1;
        }
        if live == 0 {
            return Ok(ran);
        }
        // Every live thread waits: complete the warp meetings and release each barrier whose
        // count is met. A thread that yielded goes on anyway: its wait is a loop of its own,
        // which the budget bounds.
        let mut released = (in_warp && warp::release(kernel, threads, &shared)?) || yielded;
        for id in (0..16).filter(|id| barriers & 1 << id != 0) {
            let waiting = &waiting[id];
            let State::Waiting { count, .. } = threads[waiting[0]].state else { continue };
            let needed = if count == 0 { live } else { count };
            if waiting.len() as u32 + shared.arrived[id] >= needed {
                reduce(threads, waiting);
                for &i in waiting {
                    threads[i].state = State::Running;
                }
                shared.arrived[id] = 0;
                released = true;
            }
        }
        if !released {
            if let Some(trap) = warp::mismatch(kernel, threads, &shared) {
                return Err(trap);
            }
            let stuck = threads.iter().find(|t| t.state != State::Exited).expect("live threads");
            let at = if stuck.state == State::Warp { stuck.pc } else { stuck.pc.saturating_sub(1) };
            let line = kernel.body.get(at as usize).map_or(0, |i| i.line);
            return Err(Trap { kind: TrapKind::Deadlock, line, who: stuck.who, addr: 0 });
        }
    }
}

/// `bar.red`: every waiter that brought a predicate gets the reduction over all of them.
fn reduce(threads: &mut [ThreadState], waiting: &[usize]) {
    let preds = || waiting.iter().filter_map(|&i| threads[i].red);
    let Some((op, ..)) = preds().next() else { return };
    let (count, all) = preds().fold((0u64, 0u64), |(c, n), p| (c + p.2 as u64, n + 1));
    let v = match op {
        BarRedOp::Popc => count,
        BarRedOp::And => (count == all) as u64,
        BarRedOp::Or => (count > 0) as u64,
    };
    for &i in waiting {
        if let Some((_, d, _)) = threads[i].red.take() {
            threads[i].set(d, v);
        }
    }
}
