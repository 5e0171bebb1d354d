//! The model-based property suite on every catalog topology, simulated: thousands of generated
//! sequences of pool operations, grants, probes and injected faults, each step checked against
//! the reference model. Failing sequences are shrunk and persisted in `tests/regressions/`.

use libtest_mimic::{Arguments, Trial};
use peerpool::sim::{SimDriver, catalog};
use peerpool_fixtures::model::{Caps, CheckConfig, Mix, OwnedPools, check, take_coverage};
use peerpool_tests::{SimProber, sim_target};
use std::sync::Arc;

/// Sequences per topology (`PROPTEST_CASES` overrides): more where the machine is small.
fn cases(devices: usize) -> u32 {
    match devices {
        0..=2 => 2000,
        3..=8 => 600,
        _ => 60,
    }
}

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let trials = catalog()
        .iter()
        .map(|entry| {
            Trial::test(format!("model::sim::{}", entry.stem()), move || {
                let topology = entry.topology()?;
                let caps = Arc::new(Caps::of_topology(&topology));
                let regressions = format!("{}/regressions/model_{}.txt", env!("CARGO_MANIFEST_DIR"), entry.stem());
                let config = CheckConfig {
                    cases: cases(topology.device_count()),
                    max_steps: 50,
                    mix: Mix::default(),
                    regressions: Some(Box::leak(regressions.into_boxed_str())),
                };
                let make = || {
                    let sim = Arc::new(SimDriver::new(topology.clone()));
                    sim_target(sim.clone(), Arc::new(OwnedPools), Some(Arc::new(SimProber(sim))))
                };
                take_coverage();
                let ran = check(caps, &config, make).map_err(|f| f.to_string())?;
                println!("{}: {ran} sequences passed; outcomes checked: {:?}", entry.stem(), take_coverage());
                Ok(())
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit_code()
}
