//! The model-based property suite on the real GPUs: fewer, shorter sequences than on the
//! simulator, injected faults (never sticky: an injected sticky fault would strand real pools),
//! and negative probes sampled, each in a child process.

use peerpool::System;
use peerpool::fault::FaultInjector;
use peerpool::report::HardwareRecord;
use peerpool_fixtures::model::{CheckConfig, Mix, NegativeProber, caps_of, check, take_coverage};
use peerpool_fixtures::sandbox::run_in_child;
use peerpool_fixtures::{ChildOutcome, ChildReport, Failed, Hardware, Needs, PairSuite};
use peerpool_tests::{regressions_file, reused_target};
use std::sync::Arc;
use std::time::Duration;

const NEGATIVE: &str = "model::negative_probe";

fn main() -> std::process::ExitCode {
    PairSuite::new(Hardware::detect())
        .machine_check("model::hardware_sequences", Needs { gpus: 2, ..Needs::default() }, sequences)
        .sandboxed(
            NEGATIVE,
            Needs::peer_pair(),
            Duration::from_secs(60),
            |pair| Ok(peerpool::check::negative_probe(&pair.system, pair.owner, pair.accessor)?),
            |outcome: &ChildOutcome| outcome.expect_cuda_error("CUDA_ERROR_ILLEGAL_ADDRESS", true),
        )
        .main()
}

/// The negative probe of a pair, run as this binary's sandboxed trial in a child process.
struct ChildProber;

impl NegativeProber for ChildProber {
    fn probe(
        &self,
        _: &System,
        alloc: &peerpool::Allocation,
        accessor: usize,
    ) -> Result<Option<(String, bool)>, String> {
        let trial = PairSuite::trial_name(NEGATIVE, alloc.owner(), accessor);
        match run_in_child(&trial, Duration::from_secs(60)) {
            ChildOutcome::Reported(ChildReport::CudaError { code, sticky, .. }) => Ok(Some((code, sticky))),
            ChildOutcome::Reported(ChildReport::Ok) => Ok(None),
            other => Err(format!("the negative probe child: {other:?}")),
        }
    }
}

fn sequences(system: &System) -> Result<(), Failed> {
    // A crash of the real driver kills this process before proptest can record the failing
    // seed, so the seed is fixed and printed first (PROPTEST_RNG_SEED replays it).
    let seed = std::env::var("PROPTEST_RNG_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_secs())
    });
    println!("model::hardware_sequences seed {seed} (replay: PROPTEST_RNG_SEED={seed})");
    let facts = system.facts()?;
    println!("hardware: {:?}", HardwareRecord::from_facts(&facts).devices);
    // One process-wide system for all sequences (kernel modules load once); each sequence
    // starts from a clean slate: no evidence, default pools without peers, no armed fault.
    let injector = Arc::new(FaultInjector::new(system.driver().clone()));
    let target_system = System::with_driver(injector.clone())?;
    let caps = Arc::new(caps_of(&facts));
    let config = CheckConfig {
        cases: 40,
        min_steps: 1,
        max_steps: 30,
        mix: Mix { negative_probes: 1, faults: 2, sticky_faults: 0, max_pools: 6, ..Mix::default() },
        regressions: regressions_file("model_hardware.txt"),
        seed: Some(seed),
    };
    let make = || reused_target(&target_system, &injector, Arc::new(ChildProber));
    take_coverage();
    let ran = check(caps, &config, make).map_err(|f| f.to_string())?;
    println!("{ran} sequences passed on the real GPUs; outcomes checked: {:?}", take_coverage());
    Ok(())
}
