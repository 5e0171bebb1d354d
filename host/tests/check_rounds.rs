//! `peerpool check`'s pairs on the simulator: every ordered pair is checked exactly once, no
//! two pairs that share a device run their in-process steps at once while pairs on other
//! devices do, no GPU is ever in two faulting negative probes at once (in real time and on the
//! virtual clock) while probes on other GPUs fault together, a failure in one pair is that
//! pair's alone, and the projected wall time shows the concurrency.

use peerpool::System;
use peerpool::check::{self, Isolate, PairResult, PreparedProbe, ProbeChoice, ReadyProbe, StepResult};
use peerpool::driver::Timeline;
use peerpool::report::Status;
use peerpool::rounds::Schedule;
use peerpool_sim::{LinkFault, SimDriver, Topology, catalog_topology};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Negative probes in a new simulated process, as `peerpool check` runs them, recording when
/// each one's faulting read ran (real and virtual time) and which probes were faulting at
/// that moment; one pair's probe can be made to fail.
struct Probes {
    sim: Arc<SimDriver>,
    /// `(owner, accessor, start, end)` of each read, real time.
    ran: Mutex<Vec<(usize, usize, Instant, Instant)>>,
    /// `(owner, accessor, let go, reported)`, the parent's virtual time.
    virtual_reads: Mutex<Vec<(usize, usize, Duration, Duration)>>,
    /// The pairs reading now.
    faulting: Mutex<Vec<(usize, usize)>>,
    /// Reads that began while another read on one of their GPUs had not reported.
    clashes: Mutex<Vec<String>>,
    /// Long enough for reads on other GPUs to overlap in real time.
    hold: Duration,
    broken: Option<(usize, usize)>,
}

impl Probes {
    fn new(sim: &Arc<SimDriver>, hold: Duration, broken: Option<(usize, usize)>) -> Probes {
        Probes {
            sim: sim.clone(),
            ran: Mutex::new(Vec::new()),
            virtual_reads: Mutex::new(Vec::new()),
            faulting: Mutex::new(Vec::new()),
            clashes: Mutex::new(Vec::new()),
            hold,
            broken,
        }
    }
}

struct Probe<'p> {
    probes: &'p Probes,
    pair: (usize, usize),
    child: Arc<SimDriver>,
    ready: Option<ReadyProbe>,
}

impl Isolate for Probes {
    fn prepare(&self, owner: usize, accessor: usize) -> Result<Box<dyn PreparedProbe + '_>, String> {
        let child = Arc::new(self.sim.child_process_seeing(2));
        let system = System::with_driver(child.clone()).map_err(|e| e.to_string())?;
        let ready = ReadyProbe::prepare(&system, owner, accessor).map_err(|e| e.to_string())?;
        Ok(Box::new(Probe { probes: self, pair: (owner, accessor), child, ready: Some(ready) }))
    }
}

impl PreparedProbe for Probe<'_> {
    fn go(&mut self) -> Result<Option<(String, bool)>, String> {
        let (o, a) = self.pair;
        let p = self.probes;
        {
            let mut faulting = p.faulting.lock().unwrap();
            for &(q, r) in faulting.iter().filter(|(q, r)| [q, r].iter().any(|d| **d == o || **d == a)) {
                p.clashes.lock().unwrap().push(format!("{o}->{a} let go while {q}->{r} was faulting"));
            }
            faulting.push((o, a));
        }
        let start = Instant::now();
        let go = Timeline::now(&*p.sim).max(Timeline::now(&*self.child));
        self.child.set_now(go);
        std::thread::sleep(p.hold);
        let outcome = self
            .ready
            .take()
            .ok_or("let go twice")?
            .read()
            .err()
            .and_then(|e| e.cuda().map(|c| (c.code_name(), c.sticky)));
        let reported = Timeline::now(&*self.child);
        p.sim.set_now(reported);
        p.virtual_reads.lock().unwrap().push((o, a, go, reported));
        p.ran.lock().unwrap().push((o, a, start, Instant::now()));
        p.faulting.lock().unwrap().retain(|&pair| pair != (o, a));
        match p.broken == Some((o, a)) {
            true => Err("a planted failure of this pair's probe".into()),
            false => Ok(outcome),
        }
    }

    fn reap(self: Box<Self>) -> Result<(), String> {
        self.probes.sim.wait_for(&self.child);
        Ok(())
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
    let results = check::check_all(system, &facts, isolate, ProbeChoice::All, &|o, a, step: &StepResult| {
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
fn every_ordered_pair_once_and_no_gpu_in_two_faulting_probes_at_once() {
    for name in ["four_gpu_islands", "eight_gpu_nvswitch", "sixteen_gpu_nvswitch"] {
        let topology = catalog_topology(name).unwrap();
        let n = topology.device_count();
        let (sim, system) = simulated(topology);
        let probes = Probes::new(&sim, Duration::from_millis(2), None);
        let results = check_all(&system, &probes);
        let checked: Vec<(usize, usize)> = results.iter().map(|p| (p.owner, p.accessor)).collect();
        assert_eq!(checked.iter().copied().collect::<BTreeSet<_>>(), all_pairs(n), "{name}: each ordered pair once");
        assert!(results.iter().all(|p| p.steps.iter().map(|s| s.step).eq(check::STEPS)), "every step, in order");
        let probed: BTreeSet<(usize, usize)> =
            results.iter().filter(|p| p.fault_proven()).map(|p| (p.owner, p.accessor)).collect();
        let capable: BTreeSet<(usize, usize)> =
            results.iter().filter(|p| p.verdict() != "N/A").map(|p| (p.owner, p.accessor)).collect();
        assert_eq!(probed, capable, "{name}: every pair with a peer path has its fault proven");
        // Real time: no read began while a read sharing one of its GPUs was on.
        assert_eq!(probes.clashes.lock().unwrap().clone(), Vec::<String>::new(), "{name}");
        // Virtual time: the same, on the projected machine.
        let reads = probes.virtual_reads.into_inner().unwrap();
        let mut together = 0;
        for (i, &(o, a, s, e)) in reads.iter().enumerate() {
            assert!(s < e, "{name}: {o}->{a} read from {s:?} to {e:?}");
            for &(p, q, s2, e2) in &reads[i + 1..] {
                let overlap = s < e2 && s2 < e;
                let share = [o, a].iter().any(|d| [p, q].contains(d));
                assert!(!overlap || !share, "{name}: {o}->{a} and {p}->{q} share a GPU and faulted at once");
                together += usize::from(overlap);
            }
        }
        assert!(together > 0, "{name}: probes on other GPUs faulted at once");
        // The in-process steps' rounds still put pairs of other devices at once: the projection
        // is far below the pairs one after another (below).
        assert!(results.iter().filter(|p| p.verdict() == "OK").count() == capable.len(), "{name}: {results:?}");
    }
}

#[test]
fn a_sample_of_probes_proves_those_pairs_and_marks_the_rest() {
    let (sim, system) = simulated(catalog_topology("eight_gpu_nvswitch").unwrap());
    let probes = Probes::new(&sim, Duration::ZERO, None);
    let facts = system.facts().unwrap();
    let results = check::check_all(&system, &facts, &probes, ProbeChoice::PerGpu, &|_, _, _| {});
    let proven: Vec<(usize, usize)> =
        results.iter().filter(|p| p.fault_proven()).map(|p| (p.owner, p.accessor)).collect();
    assert_eq!(proven.len(), 8, "one pair per GPU: {proven:?}");
    assert_eq!(proven.iter().map(|p| p.1).collect::<BTreeSet<_>>(), (0..8).collect(), "each GPU the accessor once");
    for p in results.iter().filter(|p| !p.fault_proven()) {
        assert_eq!(p.verdict(), "OK*", "{p:?}");
        let probe = p.steps.iter().find(|s| s.step == "negative_probe").unwrap();
        assert_eq!(probe.status, Status::Skipped);
        assert!(probe.detail.contains("not probed (--probes sample)"), "{}", probe.detail);
    }
    let matrix = check::render_matrix(&facts, &results);
    assert_eq!(matrix.matches("OK*").count(), 48 + 1, "48 cells and the legend: {matrix}");
    let counted = check::check_all(&system, &facts, &probes, ProbeChoice::Count(5), &|_, _, _| {});
    assert_eq!(counted.iter().filter(|p| p.fault_proven()).count(), 5);
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
