//! One block: its threads, run in turn until each exits or waits at a barrier or a
//! warp-synchronous instruction; a barrier releases its waiters when as many threads as it
//! counts (by default every thread that has not exited) have arrived, and a warp's lanes meet
//! as `warp.rs` says.

use super::fast::Code;
use super::thread::{Shared, State, ThreadState};
use super::{Launch, Memory, Thread, Trap, TrapKind, warp};
use crate::ir::{BarRedOp, Function};

/// Runs block `index` of the launch; the instructions it ran.
pub(super) fn run(
    kernel: &Function,
    code: &Code,
    launch: &Launch<'_>,
    index: [u32; 3],
    memory: &mut dyn Memory,
    budget: &mut u64,
) -> Result<u64, Trap> {
    let [bx, by, bz] = launch.block;
    let mut threads = Vec::with_capacity((bx * by * bz) as usize);
    for z in 0..bz {
        for y in 0..by {
            for x in 0..bx {
                let linear = x + bx * (y + by * z);
                threads.push(ThreadState::new(
                    kernel,
                    code,
                    launch,
                    Thread { block: index, thread: [x, y, z] },
                    linear,
                ));
            }
        }
    }
    let size = kernel.shared_bytes as usize + launch.dynamic_shared as usize;
    let mut shared = Shared { launch, memory, bytes: vec![0; size], clock: 0, arrived: [0; 16] };
    let mut ran = 0;
    loop {
        for t in threads.iter_mut().filter(|t| t.state == State::Running) {
            ran += t.run(kernel, code, &mut shared, budget)?;
        }
        let live = threads.iter().filter(|t| t.state != State::Exited).count() as u32;
        if live == 0 {
            return Ok(ran);
        }
        // Every live thread waits: complete the warp meetings and release each barrier whose
        // count is met.
        let in_warp = threads.iter().any(|t| t.state == State::Warp);
        let mut released = in_warp && warp::release(kernel, &mut threads, &shared)?;
        // The barriers some thread waits at.
        let barriers = threads.iter().fold(0u16, |m, t| match t.state {
            State::Waiting { id, .. } => m | 1 << id,
            _ => m,
        });
        let mut waiting = Vec::new();
        for id in (0..16u32).filter(|id| barriers & 1 << id != 0) {
            waiting.clear();
            waiting.extend(
                (0..threads.len()).filter(|&i| matches!(threads[i].state, State::Waiting { id: w, .. } if w == id)),
            );
            let Some(&first) = waiting.first() else { continue };
            let State::Waiting { count, .. } = threads[first].state else { continue };
            let needed = if count == 0 { live } else { count };
            if waiting.len() as u32 + shared.arrived[id as usize] >= needed {
                reduce(&mut threads, &waiting);
                for &i in &waiting {
                    threads[i].state = State::Running;
                }
                shared.arrived[id as usize] = 0;
                released = true;
            }
        }
        if !released {
            if let Some(trap) = warp::mismatch(kernel, &threads, &shared) {
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
    let preds: Vec<(crate::ir::BarRed, bool)> = waiting.iter().filter_map(|&i| threads[i].red).collect();
    let Some(&(first, _)) = preds.first() else { return };
    let count = preds.iter().filter(|p| p.1).count() as u64;
    let v = match first.op {
        BarRedOp::Popc => count,
        BarRedOp::And => (count == preds.len() as u64) as u64,
        BarRedOp::Or => (count > 0) as u64,
    };
    for &i in waiting {
        if let Some((red, _)) = threads[i].red.take() {
            threads[i].set(red.d, v);
        }
    }
}
