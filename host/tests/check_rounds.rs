//! `peerpool check`'s pairs in rounds, on the simulator: every ordered pair is checked exactly
//! once, no two pairs that share a device run at once while pairs on other devices do, a
//! failure in one pair of a round is that pair's alone, and the projected wall time shows the
//! rounds' concurrency.

use peerpool::System;
use peerpool::check::{self, Isolate, PairResult, StepResult};
use peerpool::driver::Timeline;
use peerpool::report::Status;
use peerpool::rounds::Schedule;
use peerpool_sim::{LinkFault, SimDriver, Topology, catalog_topology};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Negative probes in a new simulated process, as `peerpool check` runs them, recording when
/// each ran; one pair's probe can be made to fail.
struct Probes {
    sim: Arc<SimDriver>,
    /// `(owner, accessor, start, end)`, real time.
    ran: Mutex<Vec<(usize, usize, Instant, Instant)>>,
    /// Long enough for the probes of one round to overlap in real time.
    hold: Duration,
    broken: Option<(usize, usize)>,
}

impl Probes {
    fn new(sim: &Arc<SimDriver>, hold: Duration, broken: Option<(usize, usize)>) -> Probes {
        Probes { sim: sim.clone(), ran: Mutex::new(Vec::new()), hold, broken }
    }
}

impl Isolate for Probes {
    fn negative_probe(&self, owner: usize, accessor: usize) -> Result<Option<(String, bool)>, String> {
        let start = Instant::now();
        std::thread::sleep(self.hold);
        let child = Arc::new(self.sim.child_process());
        let system = System::with_driver(child.clone()).map_err(|e| e.to_string())?;
        let outcome = check::negative_probe(&system, owner, accessor)
            .err()
            .and_then(|e| e.cuda().map(|c| (c.code_name(), c.sticky)));
        drop(system);
        self.sim.wait_for(&child);
        self.ran.lock().unwrap().push((owner, accessor, start, Instant::now()));
        match self.broken == Some((owner, accessor)) {
            true => Err("a planted failure of this pair's probe".into()),
            false => Ok(outcome),
        }
    }
}

fn simulated(topology: Topology) -> (Arc<SimDriver>, System) {
    let sim = Arc::new(SimDriver::new(topology));
    sim.init(0).unwrap();
    let system = System::with_driver(sim.clone()).unwrap();
    (sim, system)
}

fn check_all(system: &System, isolate: &dyn Isolate) -> Vec<PairResult> {
    let facts = system.facts().unwrap();
    let steps = Mutex::new(Vec::new());
    let results = check::check_all(system, &facts, isolate, &|o, a, step: &StepResult| {
        steps.lock().unwrap().push((o, a, step.step));
    });
    // Every step of every pair was reported once.
    let reported = steps.into_inner().unwrap();
    assert_eq!(reported.len(), results.iter().map(|p| p.steps.len()).sum::<usize>());
    results
}

fn all_pairs(n: usize) -> BTreeSet<(usize, usize)> {
    (0..n).flat_map(|o| (0..n).filter(move |&a| a != o).map(move |a| (o, a))).collect()
}

#[test]
fn every_ordered_pair_once_and_no_device_in_two_pairs_at_once() {
    let (sim, system) = simulated(catalog_topology("eight_gpu_nvswitch").unwrap());
    let probes = Probes::new(&sim, Duration::from_millis(40), None);
    let results = check_all(&system, &probes);
    let checked: Vec<(usize, usize)> = results.iter().map(|p| (p.owner, p.accessor)).collect();
    assert_eq!(checked.len(), 56);
    assert_eq!(checked.iter().copied().collect::<BTreeSet<_>>(), all_pairs(8), "each ordered pair once");
    assert!(results.iter().all(|p| p.verdict() == "OK"), "{results:?}");
    assert!(results.iter().all(|p| p.steps.iter().map(|s| s.step).eq(check::STEPS)), "every step, in order");
    let ran = probes.ran.into_inner().unwrap();
    assert_eq!(ran.iter().map(|&(o, a, ..)| (o, a)).collect::<BTreeSet<_>>(), all_pairs(8));
    let mut overlapping_other_pairs = 0;
    for (i, &(o, a, s, e)) in ran.iter().enumerate() {
        for &(p, q, s2, e2) in &ran[i + 1..] {
            let together = s < e2 && s2 < e;
            let same_pair = BTreeSet::from([o, a]) == BTreeSet::from([p, q]);
            let share = [o, a].iter().any(|d| [p, q].contains(d));
            assert!(!together || same_pair || !share, "{o}->{a} and {p}->{q} share a device and ran at once");
            overlapping_other_pairs += usize::from(together && !share);
        }
    }
    assert!(overlapping_other_pairs > 0, "the pairs of a round ran at once");
}

#[test]
fn a_failure_in_one_pair_of_a_round_is_that_pairs_alone() {
    // Bytes flowing gpu2 -> gpu5 are corrupted: both directions of that device pair fail their
    // verification; gpu0 -> gpu7's probe fails on its own. Both are in rounds with other pairs.
    let mut topology = catalog_topology("eight_gpu_nvswitch").unwrap();
    topology.set_fault(2, 5, Some(LinkFault::corrupt()));
    let (sim, system) = simulated(topology);
    let probes = Probes::new(&sim, Duration::ZERO, Some((0, 7)));
    let results = check_all(&system, &probes);
    let failed: BTreeMap<(usize, usize), Vec<&str>> = results
        .iter()
        .filter(|p| p.verdict() == "FAIL")
        .map(|p| {
            ((p.owner, p.accessor), p.steps.iter().filter(|s| s.status == Status::Failed).map(|s| s.step).collect())
        })
        .collect();
    let expected: BTreeMap<(usize, usize), Vec<&str>> =
        [((0, 7), vec!["negative_probe"]), ((2, 5), vec!["grant"]), ((5, 2), vec!["grant"])].into_iter().collect();
    assert_eq!(failed, expected);
    let rejected = results.iter().find(|p| (p.owner, p.accessor) == (2, 5)).unwrap();
    assert!(
        rejected.steps[0].detail.contains("rejected") || rejected.steps[0].detail.contains("wrong"),
        "{rejected:?}"
    );
    // The pairs that met 2->5, 5->2 and 0->7 in their rounds passed.
    let schedule = Schedule::round_robin(8);
    for round in schedule.rounds() {
        let broken = round.pairs.iter().any(|p| [(2, 5), (0, 7)].contains(&(p.low, p.high)));
        for pair in round.pairs.iter().filter(|_| broken) {
            for &(o, a) in pair.directions.iter().filter(|d| !expected.contains_key(d)) {
                let result = results.iter().find(|p| (p.owner, p.accessor) == (o, a)).unwrap();
                assert_eq!(result.verdict(), "OK", "{o}->{a}, in a round with a failing pair: {result:?}");
            }
        }
    }
}

#[test]
fn the_projection_shows_the_rounds_running_at_once() {
    // The same pairs checked one after another on a second, identical machine.
    let topology = catalog_topology("eight_gpu_nvswitch").unwrap();
    let (sim, system) = simulated(topology.clone());
    check_all(&system, &Probes::new(&sim, Duration::ZERO, None));
    let rounds = sim.elapsed();
    let (sim, system) = simulated(topology);
    let facts = system.facts().unwrap();
    let probes = Probes::new(&sim, Duration::ZERO, None);
    for (o, a) in all_pairs(8) {
        check::check_pair(&system, &facts, o, a, &probes, &mut |_| {});
    }
    let sequential = sim.elapsed();
    assert!(rounds * 3 < sequential, "rounds {rounds:?}, one pair after another {sequential:?}");
    // The timeline is the driver's, seen through the system.
    assert_eq!(system.driver().timeline().map(|t| t.elapsed()), Some(sequential));
}
