//! The model-based property suite on every catalog topology, simulated: thousands of generated
//! sequences of pool operations, grants, probes and injected faults, each step checked against
//! the reference model. Failing sequences are shrunk and persisted in `tests/regressions/`.

use libtest_mimic::{Arguments, Trial};
use peerpool_fixtures::model::{
    Caps, Mix, NegativeProber, OwnedPools, SequenceConfig, Target, run_sequences, take_coverage,
};
use peerpool_sim::{SimDriver, catalog};
use peerpool_tests::{SimProber, regressions_file, sim_target};
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
                let config = SequenceConfig {
                    cases: cases(topology.device_count()),
                    min_steps: 1,
                    max_steps: 50,
                    mix: Mix::default(),
                    regressions: regressions_file(&format!("model_{}.txt", entry.stem())),
                    seed: None,
                };
                let make = || {
                    let sim = Arc::new(SimDriver::new(topology.clone()));
                    sim_target(sim.clone(), Arc::new(OwnedPools), Some(Arc::new(SimProber(sim))))
                };
                take_coverage();
                let ran = run_sequences(caps, &config, make).map_err(|f| f.to_string())?;
                println!("{}: {ran} sequences passed; outcomes checked: {:?}", entry.stem(), take_coverage());
                Ok(())
            })
        })
        .chain(std::iter::once(Trial::test("model::sim::reused_system", reused_system)))
        .collect();
    libtest_mimic::run(&args, trials).exit_code()
}

/// The hardware runner's shape (one system reset between sequences, no sticky faults) on the
/// simulated H200 pair, so the reset itself is tested where CI can run it.
fn reused_system() -> Result<(), libtest_mimic::Failed> {
    let topology = peerpool_sim::Topology::two_h200();
    let sim = Arc::new(SimDriver::new(topology.clone()));
    let injector = Arc::new(peerpool::fault::FaultInjector::new(sim.clone()));
    let system = peerpool::System::with_driver(injector.clone())?;
    system.set_scratch_bytes(4096)?;
    let config = SequenceConfig {
        cases: 300,
        min_steps: 1,
        max_steps: 30,
        mix: Mix { sticky_faults: 0, ..Mix::default() },
        regressions: None,
        seed: None,
    };
    let prober = || Some(Arc::new(SimProber(sim.clone())) as Arc<dyn NegativeProber>);
    let make = || Target::reset(&system, &injector, Arc::new(OwnedPools), prober());
    let ran = run_sequences(Arc::new(Caps::of_topology(&topology)), &config, make).map_err(|f| f.to_string())?;
    println!("reused system: {ran} sequences passed");
    Ok(())
}
