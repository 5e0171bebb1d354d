//! Rounds: every ordered device pair, scheduled so that no device is in two pairs at once.
//!
//! Per-pair work (a verification, `peerpool check`'s steps, a suite's per-pair trials) used to
//! run one ordered pair after another: N x (N - 1) pairs, a time that grows with the square of
//! the GPU count. A [`Schedule`] is a round-robin tournament (the circle method): N - 1 rounds
//! of N / 2 device pairs for an even N (N rounds of (N - 1) / 2 when N is odd, one device
//! resting in each), every pair of devices in exactly one round, and within a device pair its
//! two directions one after the other (owner the lower ordinal first). The pairs of one round
//! share no device, so they run at once ([`run`]), each device in one pair at a time; the
//! rounds run one after another.
//!
//! ```
//! use peerpool::rounds::Schedule;
//! let schedule = Schedule::round_robin(4);
//! assert_eq!(schedule.rounds().len(), 3);
//! for round in schedule.rounds() {
//!     assert_eq!(round.pairs.len(), 2); // {0,3} and {1,2}, then {1,3} and {0,2}, ...
//! }
//! assert_eq!(schedule.ordered_pairs().len(), 4 * 3);
//! ```

use crate::driver::Timeline;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::Duration;

/// Two devices that meet in a round, and the ordered pairs `(owner, accessor)` to run for them,
/// in turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DevicePair {
    /// The lower ordinal.
    pub low: usize,
    /// The higher ordinal.
    pub high: usize,
    /// `(low, high)`, `(high, low)`, or one of them (a schedule for some pairs only).
    pub directions: Vec<(usize, usize)>,
}

/// Device pairs that share no device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// The device pairs of this round.
    pub pairs: Vec<DevicePair>,
}

impl Round {
    /// Every device this round uses.
    pub fn devices(&self) -> Vec<usize> {
        let mut devices: Vec<usize> = self.pairs.iter().flat_map(|p| [p.low, p.high]).collect();
        devices.sort_unstable();
        devices
    }
}

/// The rounds for `n` devices (see the module's docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    devices: usize,
    rounds: Vec<Round>,
}

impl Schedule {
    /// Every ordered pair of `n` devices: N - 1 rounds (N when odd), both directions of each
    /// device pair. Fewer than two devices give no round.
    pub fn round_robin(n: usize) -> Schedule {
        Schedule::for_pairs(n, |_, _| true)
    }

    /// The ordered pairs `(owner, accessor)` of `n` devices that `wanted` keeps, in the round
    /// they have in [`Schedule::round_robin`]; rounds left empty are dropped. Pairs with a
    /// device at or beyond `n`, or a device paired with itself, never occur.
    pub fn for_pairs(n: usize, mut wanted: impl FnMut(usize, usize) -> bool) -> Schedule {
        let rounds = tournament(n)
            .into_iter()
            .map(|meetings| {
                let pairs = meetings
                    .into_iter()
                    .filter_map(|(low, high)| {
                        let directions: Vec<(usize, usize)> =
                            [(low, high), (high, low)].into_iter().filter(|&(o, a)| wanted(o, a)).collect();
                        (!directions.is_empty()).then_some(DevicePair { low, high, directions })
                    })
                    .collect();
                Round { pairs }
            })
            .filter(|r: &Round| !r.pairs.is_empty())
            .collect();
        Schedule { devices: n, rounds }
    }

    /// The schedule for exactly these ordered pairs (those out of range are left out).
    pub fn for_ordered_pairs(n: usize, pairs: &[(usize, usize)]) -> Schedule {
        let set: BTreeSet<(usize, usize)> = pairs.iter().copied().collect();
        Schedule::for_pairs(n, |o, a| set.contains(&(o, a)))
    }

    /// How many devices the schedule is for.
    pub fn device_count(&self) -> usize {
        self.devices
    }

    /// The rounds, in order.
    pub fn rounds(&self) -> &[Round] {
        &self.rounds
    }

    /// Every ordered pair in schedule order: round by round; within a round the first
    /// direction of every device pair, then the second ones. A pool of K worker threads that
    /// takes pairs in this order starts K pairs that share no device (while K <= N / 2).
    pub fn ordered_pairs(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for round in &self.rounds {
            for turn in 0..2 {
                out.extend(round.pairs.iter().filter_map(|p| p.directions.get(turn).copied()));
            }
        }
        out
    }
}

/// The circle method: for an even count, device `m = n - 1` stays put and the others rotate;
/// an odd count gets a resting slot that meets each device once.
fn tournament(n: usize) -> Vec<Vec<(usize, usize)>> {
    if n < 2 {
        return Vec::new();
    }
    let slots = n + n % 2; // even
    let fixed = slots - 1;
    let rotating = slots - 1; // positions 0..rotating turn
    (0..rotating)
        .map(|r| {
            let mut meetings = vec![(r, fixed)];
            for k in 1..slots / 2 {
                meetings.push(((r + k) % rotating, (r + rotating - k) % rotating));
            }
            meetings
                .into_iter()
                .filter(|&(a, b)| a < n && b < n) // the resting slot meets nobody
                .map(|(a, b)| (a.min(b), a.max(b)))
                .collect()
        })
        .collect()
}

/// How one device pair's work ended: its value, or the panic that ended its thread.
pub type Outcome<T> = Result<T, String>;

/// Runs `work` for every device pair of `schedule`: the pairs of one round at once, each on
/// its own thread, the rounds one after another. Returns each round's outcomes in the
/// round's order. A panic in one pair's work is that pair's outcome (`Err` with the panic's
/// message); the other pairs of its round and the later rounds run on.
///
/// With a `timeline` (a simulated driver's), every worker starts at the virtual time the
/// caller had reached when its round began, and the caller resumes at the latest time a
/// worker of the round reached: the projected wall time is that of rounds run concurrently.
/// Workers inherit nothing else from the caller: no current CUDA context (enter one with
/// [`System::enter`](crate::System::enter) or the operations that do).
pub fn run<T: Send>(
    schedule: &Schedule,
    timeline: Option<&dyn Timeline>,
    work: impl Fn(&DevicePair) -> T + Sync,
) -> Vec<Vec<Outcome<T>>> {
    let work = &work;
    schedule
        .rounds()
        .iter()
        .map(|round| {
            let start = timeline.map_or(Duration::ZERO, |t| t.now());
            let ended: Vec<(Outcome<T>, Duration)> = std::thread::scope(|s| {
                let handles: Vec<_> = round
                    .pairs
                    .iter()
                    .map(|pair| s.spawn(move || crate::driver::timeline::from(timeline, start, || work(pair))))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| match h.join() {
                        Ok((value, end)) => (Ok(value), end),
                        Err(panic) => (Err(panic_message(panic.as_ref())), start),
                    })
                    .collect()
            });
            if let Some(t) = timeline {
                t.set_now(ended.iter().map(|(_, end)| *end).fold(start, Duration::max));
            }
            ended.into_iter().map(|(outcome, _)| outcome).collect()
        })
        .collect()
}

/// The text of a panic's payload (a `&str` or `String`), else a placeholder.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => format!("panicked: {s}"),
        (_, Some(s)) => format!("panicked: {s}"),
        _ => "panicked".to_string(),
    }
}

/// One lock per device, taken several at once: work on a set of devices waits until none of
/// them is in use, so two pairs that share a device never overlap, while pairs that share
/// none run together. Threads that take work in schedule order ([`Schedule::ordered_pairs`])
/// run the pairs of one round at once.
///
/// With a timeline, a holder starts at the virtual time its devices were last released (or
/// when the locks were made), and not before its own thread finished its previous work there
/// (a pool of K threads runs at most K pieces of work at once), so the projected wall time
/// follows the devices' and the threads' availability, not the order the threads happened to
/// run in.
#[derive(Debug)]
pub struct DeviceLocks {
    state: Mutex<LockState>,
    freed: Condvar,
}

#[derive(Debug)]
struct LockState {
    /// Per device: in use, and the virtual time it was last released.
    devices: Vec<(bool, Duration)>,
    /// Per thread: the virtual time it last released devices.
    threads: HashMap<ThreadId, Duration>,
}

/// Devices held by one piece of work; released on drop.
#[derive(Debug)]
pub struct HeldDevices<'l> {
    locks: &'l DeviceLocks,
    devices: Vec<usize>,
    timeline: Option<&'l dyn Timeline>,
}

impl DeviceLocks {
    /// Locks for `n` devices, all free since `origin` (virtual time; zero without a timeline).
    pub fn new(n: usize, origin: Duration) -> DeviceLocks {
        let state = LockState { devices: vec![(false, origin); n], threads: HashMap::new() };
        DeviceLocks { state: Mutex::new(state), freed: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, LockState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until every device in `devices` (ordinals beyond the locks' count are ignored) is
    /// free, then holds them all. With a timeline, the calling thread is put at the latest
    /// virtual time one of them was released, or it released its last ones, if later.
    pub fn hold<'l>(&'l self, devices: &[usize], timeline: Option<&'l dyn Timeline>) -> HeldDevices<'l> {
        let mut devices: Vec<usize> = devices.to_vec();
        devices.sort_unstable();
        devices.dedup();
        let mut state = self.lock();
        devices.retain(|&d| d < state.devices.len());
        while devices.iter().any(|&d| state.devices[d].0) {
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        let mut start = state.threads.get(&std::thread::current().id()).copied().unwrap_or(Duration::ZERO);
        for &d in &devices {
            state.devices[d].0 = true;
            start = start.max(state.devices[d].1);
        }
        drop(state);
        if let Some(t) = timeline {
            t.set_now(start);
        }
        HeldDevices { locks: self, devices, timeline }
    }
}

impl Drop for HeldDevices<'_> {
    fn drop(&mut self) {
        let now = self.timeline.map_or(Duration::ZERO, |t| t.now());
        let mut state = self.locks.lock();
        for &d in &self.devices {
            state.devices[d] = (false, now);
        }
        state.threads.insert(std::thread::current().id(), now);
        drop(state);
        self.locks.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ordered_pair_once_and_no_device_twice_in_a_round() {
        for n in 0..=40 {
            let schedule = Schedule::round_robin(n);
            let expected_rounds = if n < 2 { 0 } else { n - 1 + n % 2 };
            assert_eq!(schedule.rounds().len(), expected_rounds, "n = {n}");
            for round in schedule.rounds() {
                let devices = round.devices();
                let unique: BTreeSet<usize> = devices.iter().copied().collect();
                assert_eq!(unique.len(), devices.len(), "n = {n}: a device twice in {round:?}");
                assert_eq!(round.pairs.len(), n / 2, "n = {n}");
            }
            let pairs = schedule.ordered_pairs();
            let unique: BTreeSet<(usize, usize)> = pairs.iter().copied().collect();
            assert_eq!(pairs.len(), n * n.saturating_sub(1), "n = {n}");
            assert_eq!(unique.len(), pairs.len(), "n = {n}: a pair twice");
            assert!(pairs.iter().all(|&(o, a)| o != a && o < n && a < n));
        }
    }

    #[test]
    fn directions_run_in_turn_lower_owner_first() {
        let schedule = Schedule::round_robin(6);
        for pair in schedule.rounds().iter().flat_map(|r| &r.pairs) {
            assert!(pair.low < pair.high);
            assert_eq!(pair.directions, vec![(pair.low, pair.high), (pair.high, pair.low)]);
        }
        // Within a round: all first directions, then all second ones.
        let first = &schedule.rounds()[0];
        let order = &schedule.ordered_pairs()[..2 * first.pairs.len()];
        assert!(order[..first.pairs.len()].iter().all(|&(o, a)| o < a));
        assert!(order[first.pairs.len()..].iter().all(|&(o, a)| o > a));
    }

    #[test]
    fn a_subset_keeps_its_pairs_rounds_and_drops_empty_ones() {
        let star: Vec<(usize, usize)> = (1..8).map(|p| (0, p)).collect();
        let schedule = Schedule::for_ordered_pairs(8, &star);
        assert_eq!(schedule.rounds().len(), 7, "device 0 meets each peer in its own round");
        assert_eq!(schedule.ordered_pairs().iter().copied().collect::<BTreeSet<_>>(), star.iter().copied().collect());
        assert!(schedule.rounds().iter().all(|r| r.pairs.len() == 1 && r.pairs[0].directions.len() == 1));
        let none = Schedule::for_ordered_pairs(8, &[(9, 1), (3, 3)]);
        assert!(none.rounds().is_empty());
    }

    #[test]
    fn run_isolates_a_panicking_pair() {
        let schedule = Schedule::round_robin(4);
        let outcomes = run(&schedule, None, |pair| {
            if (pair.low, pair.high) == (1, 2) {
                panic!("pair 1-2 broke");
            }
            pair.directions.len()
        });
        let flat: Vec<&Outcome<usize>> = outcomes.iter().flatten().collect();
        assert_eq!(flat.len(), 6);
        let failed: Vec<String> = flat.iter().filter_map(|o| o.as_ref().err().cloned()).collect();
        assert_eq!(failed, vec!["panicked: pair 1-2 broke".to_string()]);
        assert!(flat.iter().filter(|o| o.is_ok()).all(|o| *o.as_ref().unwrap() == 2));
    }

    #[test]
    fn run_runs_a_rounds_pairs_at_once() {
        // Every pair of a round waits for all of them: only possible if they run together.
        let schedule = Schedule::round_robin(8);
        let barrier = std::sync::Barrier::new(4);
        let outcomes = run(&schedule, None, |_| {
            barrier.wait();
        });
        assert_eq!(outcomes.iter().flatten().filter(|o| o.is_ok()).count(), 28);
    }

    #[test]
    fn device_locks_exclude_sharing_work_and_admit_the_rest() {
        let locks = DeviceLocks::new(4, Duration::ZERO);
        let a = locks.hold(&[0, 1], None);
        let b = locks.hold(&[2, 3], None); // disjoint: not blocked
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let _c = locks.hold(&[1, 2], None);
                tx.send(()).unwrap();
            });
            assert!(rx.recv_timeout(Duration::from_millis(100)).is_err(), "1 and 2 are held");
            drop(a);
            assert!(rx.recv_timeout(Duration::from_millis(100)).is_err(), "2 is still held");
            drop(b);
            rx.recv_timeout(Duration::from_secs(10)).expect("both released");
        });
    }
}
