//! Simulator throughput of the model suite (divan): sequences of 50 steps, checked step by step
//! (outcome, whole access table, current context), on the simulated H200 pair, on one thread and
//! on every core. Each sample runs 20 sequences; divan reports the time per run and the
//! throughput in sequences per second (`item/s`). Goal: at least 1,000 sequences per second on
//! a 2-core machine.
//!
//! `cargo bench -p peerpool-tests --bench model_throughput` (add `-- --sample-count N` for a
//! quicker or steadier figure).

use divan::Bencher;
use divan::counter::ItemsCount;
use peerpool_fixtures::model::{Caps, Mix, OwnedPools, SequenceConfig, run_sequences};
use peerpool_sim::{SimDriver, Topology};
use peerpool_tests::{SimProber, sim_target};
use std::sync::Arc;

const STEPS: usize = 50;
/// Sequences per measured run.
const CASES: u32 = 20;

fn main() {
    divan::main();
}

/// Runs `cases` sequences of exactly `STEPS` steps on this thread.
fn run(cases: u32) {
    let topology = Topology::two_h200();
    let caps = Arc::new(Caps::of_topology(&topology));
    let config = SequenceConfig {
        cases,
        min_steps: STEPS,
        max_steps: STEPS,
        mix: Mix::default(),
        regressions: None,
        seed: None,
    };
    let make = || {
        let sim = Arc::new(SimDriver::new(topology.clone()));
        sim_target(sim.clone(), Arc::new(OwnedPools), Some(Arc::new(SimProber(sim))))
    };
    let ran = run_sequences(caps, &config, make).expect("the model suite passes");
    assert_eq!(ran, cases);
}

/// One thread, then every core (`0`: as many threads as the machine has).
#[divan::bench(threads = [1, 0], sample_count = 30)]
fn sequences_of_50_steps_on_two_h200(bencher: Bencher) {
    bencher.counter(ItemsCount::new(CASES)).bench(|| run(CASES));
}
