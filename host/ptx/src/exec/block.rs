//! One block: its warps, run in turn until each lane exits or waits at a barrier or a
//! warp-synchronous instruction (`schedule.rs`), a warp whose time slice ran out going on after
//! the others; a barrier releases its waiters when as many
//! threads as it counts (by default every thread that has not exited) have arrived, and a
//! warp's lanes meet as `warp.rs` says.

use super::access::Shared;
use super::cluster::Cluster;
use super::fast::Code;
use super::thread::{State, ThreadState};
use super::{Launch, Memory, Thread, Trap, TrapKind, schedule, warp};
use crate::ir::{BarRedOp, Function};

/// A block's threads and what they share, kept between its turns (its shared memory is its
/// cluster's to keep).
pub(super) struct Block {
    pub(super) threads: Vec<ThreadState>,
    clock: u64,
    arrived: [u32; 16],
    /// Instructions run so far.
    pub(super) ran: u64,
}

/// Where a turn left its block.
pub(super) enum Turn {
    /// Every thread has exited.
    Done,
    /// Threads wait for other blocks (they spin, or wait at an `mbarrier`).
    More,
}

impl Block {
    /// Block `index` of the launch at its start, in `threads`' allocations (those of a block
    /// run before, or none).
    pub(super) fn new(
        kernel: &Function,
        code: &Code,
        launch: &Launch<'_>,
        index: [u32; 3],
        mut threads: Vec<ThreadState>,
    ) -> Block {
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
        Block { threads, clock: 0, arrived: [0; 16], ran: 0 }
    }

    /// Runs the block, of rank `rank` in `cluster`, until its threads have exited or, where
    /// `others` (other blocks are resident), until a pass over its warps leaves one that must
    /// wait for them: a warp whose time slice ran out (it may spin on memory another block
    /// writes) or that yielded (at the cluster's barrier).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn turn(
        &mut self,
        kernel: &Function,
        code: &Code,
        launch: &Launch<'_>,
        memory: &mut dyn Memory,
        (cluster, rank): (&mut Cluster, usize),
        budget: &mut u64,
        others: bool,
    ) -> Result<Turn, Trap> {
        let bytes = std::mem::take(&mut cluster.bytes[rank]);
        let (clock, arrived) = (self.clock, self.arrived);
        let mut shared = Shared { launch, memory, bytes, clock, arrived, cluster, rank };
        let result = passes(kernel, code, &mut self.threads, &mut shared, budget, &mut self.ran, others);
        let Shared { bytes, clock, arrived, cluster, .. } = shared;
        (cluster.bytes[rank], self.clock, self.arrived) = (bytes, clock, arrived);
        result
    }
}

/// [`Block::turn`]'s loop: passes over the warps, each followed by the barriers' releases.
fn passes(
    kernel: &Function,
    code: &Code,
    threads: &mut [ThreadState],
    shared: &mut Shared<'_, '_>,
    budget: &mut u64,
    ran: &mut u64,
    others: bool,
) -> Result<Turn, Trap> {
    loop {
        // A warp whose slice ran out: it goes on in the next pass, after the others.
        let mut paused = false;
        for lanes in threads.chunks_mut(32) {
            if lanes.iter().any(|t| t.state == State::Running) {
                let (done, more) = schedule::run(kernel, code, lanes, shared, budget)?;
                *ran += done;
                paused |= more;
            }
        }
        // One pass over the block: who lives, and who waits at which barrier. A barrier's
        // count is its first waiter's (in thread order).
        let (mut live, mut in_warp, mut yielded) = (0u32, false, false);
        let (mut barriers, mut reds, mut waiting, mut needed) = (0u16, 0u16, [0u32; 16], [0u32; 16]);
        for t in threads.iter_mut() {
            match t.state {
                State::Exited => continue,
                State::Warp => in_warp = true,
                State::Waiting { id, count } => {
                    let bit = 1 << id;
                    if barriers & bit == 0 {
                        (barriers, needed[id as usize]) = (barriers | bit, count);
                    }
                    waiting[id as usize] += 1;
                    reds |= if t.red.is_some() { bit } else { 0 };
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
            return Ok(Turn::Done);
        }
        // Every live thread waits: complete the warp meetings and release each barrier whose
        // count is met. A thread that yielded or was paused goes on anyway: its wait is a loop
        // of its own, which the budget bounds.
        let mut released = (in_warp && warp::release(kernel, threads, shared)?) || yielded || paused;
        let mut open = 0u16;
        for id in (0..16).filter(|id| barriers & 1 << id != 0) {
            let need = if needed[id] == 0 { live } else { needed[id] };
            if waiting[id] + shared.arrived[id] >= need {
                open |= 1 << id;
                shared.arrived[id] = 0;
            }
        }
        if open != 0 {
            for id in (0..16).filter(|id| open & reds & 1 << id != 0) {
                reduce(threads, id);
            }
            for t in threads.iter_mut() {
                if matches!(t.state, State::Waiting { id, .. } if open & 1 << id != 0) {
                    t.state = State::Running;
                }
            }
            released = true;
        }
        if !released {
            if let Some(trap) = warp::mismatch(kernel, threads, shared) {
                return Err(trap);
            }
            let stuck = threads.iter().find(|t| t.state != State::Exited).expect("live threads");
            let at = if stuck.state == State::Warp { stuck.pc } else { stuck.pc.saturating_sub(1) };
            let line = kernel.body.get(at as usize).map_or(0, |i| i.line);
            return Err(Trap { kind: TrapKind::Deadlock, line, who: stuck.who, addr: 0 });
        }
        if others && (paused || yielded) {
            return Ok(Turn::More);
        }
    }
}

/// `bar.red` at barrier `id`: every waiter that brought a predicate gets the reduction over all
/// of them.
fn reduce(threads: &mut [ThreadState], id: usize) {
    let at = |t: &ThreadState| matches!(t.state, State::Waiting { id: i, .. } if i as usize == id);
    let preds = || threads.iter().filter(|t| at(t)).filter_map(|t| t.red);
    let Some((op, ..)) = preds().next() else { return };
    let (count, all) = preds().fold((0u64, 0u64), |(c, n), p| (c + p.2 as u64, n + 1));
    let v = match op {
        BarRedOp::Popc => count,
        BarRedOp::And => (count == all) as u64,
        BarRedOp::Or => (count > 0) as u64,
    };
    for t in threads.iter_mut().filter(|t| at(t)) {
        if let Some((_, d, _)) = t.red.take() {
            t.set(d, v);
        }
    }
}
