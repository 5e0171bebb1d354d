//! One block: its threads, run in turn until each exits or waits at a barrier; a barrier
//! releases its waiters when as many threads as it counts (by default every thread that has
//! not exited) have arrived.

use super::thread::{Shared, State, ThreadState};
use super::{Launch, Memory, Thread, Trap, TrapKind};
use crate::ir::Function;

/// Runs block `index` of the launch; the instructions it ran.
pub(super) fn run(
    kernel: &Function,
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
                threads.push(ThreadState::new(kernel, Thread { block: index, thread: [x, y, z] }, linear));
            }
        }
    }
    let size = kernel.shared_bytes as usize + launch.dynamic_shared as usize;
    let mut shared = Shared { launch, memory, bytes: vec![0; size], clock: 0, arrived: [0; 16] };
    let mut ran = 0;
    loop {
        for t in threads.iter_mut().filter(|t| t.state == State::Running) {
            ran += t.run(kernel, &mut shared, budget)?;
        }
        let live = threads.iter().filter(|t| t.state != State::Exited).count() as u32;
        if live == 0 {
            return Ok(ran);
        }
        // Every live thread waits: release each barrier whose count is met.
        let mut released = false;
        for id in 0..16u32 {
            let waiting: Vec<usize> = (0..threads.len())
                .filter(|&i| matches!(threads[i].state, State::Waiting { id: w, .. } if w == id))
                .collect();
            let Some(&first) = waiting.first() else { continue };
            let State::Waiting { count, .. } = threads[first].state else { continue };
            let needed = if count == 0 { live } else { count };
            if waiting.len() as u32 + shared.arrived[id as usize] >= needed {
                for i in waiting {
                    threads[i].state = State::Running;
                }
                shared.arrived[id as usize] = 0;
                released = true;
            }
        }
        if !released {
            let stuck = threads.iter().find(|t| t.state != State::Exited).expect("live threads");
            let line = kernel.body.get(stuck.pc.saturating_sub(1) as usize).map_or(0, |i| i.line);
            return Err(Trap { kind: TrapKind::Deadlock, line, who: stuck.who, addr: 0 });
        }
    }
}
