//! Negative probes pipelined: each probe is a process of its own that is started early, made
//! ready (its `cuInit`, its context, its pool and allocation) while earlier probes fault, and
//! let go (the faulting read) only once no earlier probe that shares one of its GPUs is still
//! faulting. Context creation, one at a time across the machine on the H200s, is the one
//! serial resource of a check that proves every pair's fault; the pipeline keeps it busy.
//!
//! A [`Plan`] orders the probes and names, for each, the probes before it that share a GPU
//! (at most one per GPU: the latest); [`run`] starts at most `window` probes ahead of the
//! oldest one not yet reported and gates each one's faulting read behind those predecessors.
//! A probe's GPUs are free as soon as it reports its fault; its process's exit (the dead
//! context torn down) is waited for after that, off the gate.
//!
//! ```
//! use peerpool::probes::Plan;
//! let pairs: Vec<(usize, usize)> = (0..4).flat_map(|o| (0..4).filter(move |&a| a != o).map(move |a| (o, a))).collect();
//! let plan = Plan::new(4, &pairs);
//! assert_eq!(plan.len(), 12);
//! // Each probe waits for the latest earlier probe on each of its GPUs, and no other.
//! for (i, &(o, a)) in plan.order().iter().enumerate() {
//!     for &j in plan.after(i) {
//!         let (p, q) = plan.order()[j];
//!         assert!(j < i && [p, q].iter().any(|d| [o, a].contains(d)));
//!     }
//! }
//! ```

use crate::driver::Timeline;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// The order probes are let go in, and whom each waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    order: Vec<(usize, usize)>,
    after: Vec<Vec<usize>>,
}

impl Plan {
    /// The ordered pairs `(owner, accessor)` of `n` devices in pipeline order: greedily, the
    /// next pair is the first left that shares no GPU with the probes just before it and whose
    /// accessor made none of the last contexts (a new context on a GPU whose faulted context is
    /// still being torn down is slower), relaxing those wishes only when no pair left meets
    /// them. Pairs out of range, a device paired with itself, and repeats are left out.
    pub fn new(n: usize, pairs: &[(usize, usize)]) -> Plan {
        let mut seen = std::collections::BTreeSet::new();
        let mut left: Vec<(usize, usize)> =
            pairs.iter().copied().filter(|&(o, a)| o < n && a < n && o != a && seen.insert((o, a))).collect();
        // Start each accessor's pairs at a different owner, so the first pairs spread.
        left.sort_by_key(|&(o, a)| ((o + n - a) % n, a));
        let mut order: Vec<(usize, usize)> = Vec::with_capacity(left.len());
        while !left.is_empty() {
            let penalty = |&(o, a): &(usize, usize)| -> usize {
                let recent = order.iter().rev().take(3).enumerate();
                recent
                    .map(|(back, &(p, q))| {
                        let shares = [p, q].iter().any(|d| *d == o || *d == a);
                        let weight = 3 - back; // the probe just before weighs most
                        usize::from(shares) * 4 * weight + usize::from(q == a) * weight
                    })
                    .sum()
            };
            let mut best = (usize::MAX, 0);
            for (i, pair) in left.iter().enumerate() {
                let p = penalty(pair);
                if p < best.0 {
                    best = (p, i);
                }
                if p == 0 {
                    break;
                }
            }
            order.push(left.remove(best.1));
        }
        let mut last_on = vec![None; n];
        let after = order
            .iter()
            .enumerate()
            .map(|(i, &(o, a))| {
                let mut before: Vec<usize> = [last_on[o], last_on[a]].into_iter().flatten().collect();
                before.sort_unstable();
                before.dedup();
                last_on[o] = Some(i);
                last_on[a] = Some(i);
                before
            })
            .collect();
        Plan { order, after }
    }

    /// The pairs, in the order they are let go.
    pub fn order(&self) -> &[(usize, usize)] {
        &self.order
    }

    /// How many probes.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// No probe at all.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The earlier probes (indices into [`Plan::order`]) probe `i` must see reported before
    /// its faulting read: the latest one on each of its GPUs.
    pub fn after(&self, i: usize) -> &[usize] {
        self.after.get(i).map_or(&[], Vec::as_slice)
    }
}

/// What one probe's work is handed: the gate its faulting read waits at, and the report that
/// frees its GPUs.
pub struct Gate<'g> {
    index: usize,
    shared: &'g Shared,
    plan: &'g Plan,
    timeline: Option<&'g dyn Timeline>,
    reported: bool,
    turned: bool,
}

impl Gate<'_> {
    /// The probe's pair.
    pub fn pair(&self) -> (usize, usize) {
        self.plan.order[self.index]
    }

    /// Runs `f`, the probe's readying, after every earlier probe's readying has run, where
    /// there is a timeline: the simulator then books the machine's locks (`cuInit`, contexts)
    /// in the plan's order, as a first-come driver lock would, whatever order the threads
    /// happen to run in. On real GPUs `f` runs at once: the driver orders its own locks.
    pub fn in_turn<T>(&mut self, f: impl FnOnce() -> T) -> T {
        if self.timeline.is_some() {
            self.wait_turn();
        }
        let out = f();
        self.end_turn();
        out
    }

    fn wait_turn(&self) {
        let mut state = self.shared.lock();
        while state.turns < self.index {
            state = self.shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn end_turn(&mut self) {
        if self.turned {
            return;
        }
        self.turned = true;
        let mut state = self.shared.lock();
        state.turns = state.turns.max(self.index + 1);
        drop(state);
        self.shared.changed.notify_all();
    }

    /// Waits until every earlier probe sharing a GPU with this one has reported; with a
    /// timeline, the calling thread is put at the latest virtual time one of them did, if later.
    pub fn wait(&self) {
        let mut state = self.shared.lock();
        loop {
            let times: Option<Vec<Duration>> = self.plan.after(self.index).iter().map(|&j| state.reported[j]).collect();
            if let Some(times) = times {
                drop(state);
                if let Some(t) = self.timeline {
                    t.set_now(times.into_iter().fold(t.now(), Duration::max));
                }
                return;
            }
            state = self.shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The probe's fault is reported (or it ended without one): its GPUs are free for the
    /// probes that wait for it, from the calling thread's virtual time. Later calls do nothing.
    pub fn report(&mut self) {
        if self.reported {
            return;
        }
        self.reported = true;
        let at = self.timeline.map_or(Duration::ZERO, |t| t.now());
        self.shared.lock().reported[self.index] = Some(at);
        self.shared.changed.notify_all();
    }

    /// Whether this probe has reported.
    pub fn has_reported(&self) -> bool {
        self.reported
    }
}

impl Drop for Gate<'_> {
    /// A probe that ended, or panicked, before reporting frees its GPUs too.
    fn drop(&mut self) {
        if !self.turned && self.timeline.is_some() {
            self.wait_turn();
        }
        self.end_turn();
        self.report();
    }
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    /// Per probe: the virtual time it reported (zero without a timeline).
    reported: Vec<Option<Duration>>,
    /// How many probes, in order, have had their readying's turn.
    turns: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Runs `probe` for every pair of `plan`, each on its own thread: probe `i` starts once probe
/// `i - window` has reported (at most `window` probes started and not reported; at least one),
/// and is handed its [`Gate`]: it readies itself ([`Gate::in_turn`]), [`Gate::wait`]s, makes its faulting read,
/// [`Gate::report`]s, and then waits for its process to end. Returns each probe's value in
/// [`Plan::order`]'s order; a panic in one probe is its value's `Err` (its message), and its
/// gate reports as it unwinds, so the others run on.
///
/// With a `timeline`, a probe's thread starts at the caller's virtual time or when probe
/// `i - window` reported, whichever is later; the caller resumes at the latest time a probe
/// reached.
pub fn run<T: Send>(
    plan: &Plan,
    window: usize,
    timeline: Option<&dyn Timeline>,
    probe: impl Fn(&mut Gate<'_>) -> T + Sync,
) -> Vec<Result<T, String>> {
    let window = window.max(1);
    let shared =
        Shared { state: Mutex::new(State { reported: vec![None; plan.len()], turns: 0 }), changed: Condvar::new() };
    let start = timeline.map_or(Duration::ZERO, |t| t.now());
    let probe = &probe;
    let shared_ref = &shared;
    let ended: Vec<(Result<T, String>, Duration)> = std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(plan.len());
        for index in 0..plan.len() {
            let mut from = start;
            if let Some(oldest) = index.checked_sub(window) {
                let mut state = shared_ref.lock();
                while state.reported[oldest].is_none() {
                    state = shared_ref.changed.wait(state).unwrap_or_else(|e| e.into_inner());
                }
                from = from.max(state.reported[oldest].unwrap_or(start));
            }
            handles.push(s.spawn(move || {
                crate::driver::timeline::from(timeline, from, || {
                    let mut gate = Gate { index, shared: shared_ref, plan, timeline, reported: false, turned: false };
                    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| probe(&mut gate)));
                    drop(gate);
                    out.map_err(|panic| crate::rounds::panic_message(panic.as_ref()))
                })
            }));
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|panic| (Err(crate::rounds::panic_message(panic.as_ref())), start)))
            .collect()
    });
    if let Some(t) = timeline {
        t.set_now(ended.iter().map(|(_, end)| *end).fold(start, Duration::max));
    }
    ended.into_iter().map(|(value, _)| value).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn every_pair(n: usize) -> Vec<(usize, usize)> {
        (0..n).flat_map(|o| (0..n).filter(move |&a| a != o).map(move |a| (o, a))).collect()
    }

    #[test]
    fn a_plan_holds_each_pair_once_and_chains_every_gpu_s_probes() {
        for n in 0..=17 {
            let plan = Plan::new(n, &every_pair(n));
            let unique: BTreeSet<(usize, usize)> = plan.order().iter().copied().collect();
            assert_eq!((plan.len(), unique.len()), (n * n.saturating_sub(1), plan.len()), "n = {n}");
            // For every GPU, each probe on it waits for the one before it on it.
            for d in 0..n {
                let on: Vec<usize> =
                    (0..plan.len()).filter(|&i| [plan.order()[i].0, plan.order()[i].1].contains(&d)).collect();
                for w in on.windows(2) {
                    assert!(plan.after(w[1]).contains(&w[0]), "n = {n}, gpu{d}: {} does not wait for {}", w[1], w[0]);
                }
            }
        }
        let odd = Plan::new(4, &[(0, 1), (0, 1), (2, 2), (5, 1)]);
        assert_eq!(odd.order(), &[(0, 1)]);
    }

    #[test]
    fn on_eight_gpus_neighbours_share_no_gpu_and_accessors_rotate() {
        let plan = Plan::new(8, &every_pair(8));
        let order = plan.order();
        let clashes =
            order.windows(2).filter(|w| [w[1].0, w[1].1].iter().any(|d| [w[0].0, w[0].1].contains(d))).count();
        let same_accessor = order.windows(4).filter(|w| w[..3].iter().any(|p| p.1 == w[3].1)).count();
        assert!(clashes <= 2, "{clashes} neighbours share a GPU: {order:?}");
        assert!(same_accessor <= 4, "{same_accessor} accessors repeat within four: {order:?}");
    }

    #[test]
    fn gated_probes_sharing_a_gpu_never_overlap_and_others_do() {
        let plan = Plan::new(6, &every_pair(6));
        let busy = Mutex::new(Vec::<(usize, usize)>::new());
        let overlapped = Mutex::new(0usize);
        let out = run(&plan, 4, None, |gate| {
            let (o, a) = gate.pair();
            gate.wait();
            {
                let mut now = busy.lock().unwrap();
                assert!(
                    now.iter().all(|&(p, q)| ![p, q].contains(&o) && ![p, q].contains(&a)),
                    "{o}->{a} beside {now:?}"
                );
                *overlapped.lock().unwrap() += usize::from(!now.is_empty());
                now.push((o, a));
            }
            std::thread::sleep(Duration::from_millis(5));
            busy.lock().unwrap().retain(|&p| p != (o, a));
            gate.report();
            (o, a)
        });
        let done: Vec<(usize, usize)> = out.into_iter().map(Result::unwrap).collect();
        assert_eq!(done, plan.order());
        assert!(*overlapped.lock().unwrap() > 0, "probes on other GPUs ran at once");
    }

    #[test]
    fn a_panicking_probe_frees_its_gpus() {
        let plan = Plan::new(3, &every_pair(3));
        let first = plan.order()[0];
        let out = run(&plan, 2, None, |gate| {
            gate.wait();
            assert_ne!(gate.pair(), first, "planted");
            gate.report();
        });
        assert_eq!(out.iter().filter(|o| o.is_err()).count(), 1);
        assert!(out[0].as_ref().is_err_and(|e| e.contains("planted")), "{out:?}");
    }
}
