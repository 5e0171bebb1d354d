//! Simulator throughput of the model suite: sequences of 50 steps per second, checked step by
//! step (outcome, whole access table, current context), on the simulated H200 pair, on one
//! thread and on every core. Goal: at least 1,000 sequences per second on a 2-core machine.
//!
//! `cargo bench -p peerpool-tests --bench model_throughput` prints JSON.

use peerpool_fixtures::model::{Caps, CheckConfig, Mix, OwnedPools, check};
use peerpool_sim::{SimDriver, Topology};
use peerpool_tests::{SimProber, sim_target};
use std::sync::Arc;
use std::time::Instant;

const STEPS: usize = 50;

/// Runs `cases` sequences of exactly `STEPS` steps on this thread; returns the seconds taken.
fn run(cases: u32) -> f64 {
    let topology = Topology::two_h200();
    let caps = Arc::new(Caps::of_topology(&topology));
    let config =
        CheckConfig { cases, min_steps: STEPS, max_steps: STEPS, mix: Mix::default(), regressions: None, seed: None };
    let start = Instant::now();
    let make = || {
        let sim = Arc::new(SimDriver::new(topology.clone()));
        sim_target(sim.clone(), Arc::new(OwnedPools), Some(Arc::new(SimProber(sim))))
    };
    check(caps, &config, make).expect("the model suite passes");
    start.elapsed().as_secs_f64()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test` asks benches for their tests
    }
    let cases = 2000;
    run(200); // warm up
    let one = run(cases);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| run(cases));
        }
    });
    let all = start.elapsed().as_secs_f64();
    let report = serde_json::json!({
        "topology": "two_h200_nvlink (simulated)",
        "steps_per_sequence": STEPS,
        "sequences": cases,
        "one_thread_sequences_per_second": cases as f64 / one,
        "threads": threads,
        "all_threads_sequences_per_second": (cases as usize * threads) as f64 / all,
        "goal_sequences_per_second": 1000,
    });
    println!("{}", serde_json::to_string_pretty(&report).expect("serialises"));
}
