//! The model-based property suite on the real GPUs (or the topology `PEERPOOL_TOPOLOGY` names):
//! fewer, shorter sequences than on the simulator, injected faults (never sticky: an injected
//! sticky fault would strand real pools), and negative probes sampled, each in a child process.

use peerpool_fixtures::model::{Mix, ModelTest, OwnedPools};
use peerpool_fixtures::{ChildError, Pair, model_test, pair_test};
use peerpool_tests::{expect_illegal_address, regressions_file};

/// Sequences on peerpool's own pools; the seed is printed first (`PROPTEST_RNG_SEED` replays it).
#[model_test(name = "model::hardware_sequences")]
fn hardware_sequences() -> ModelTest {
    let mix = Mix { negative_probes: 1, faults: 2, sticky_faults: 0, max_pools: 6, ..Mix::default() };
    let test = ModelTest::new(OwnedPools).cases(40).max_steps(30).mix(mix);
    match regressions_file("model_hardware.txt") {
        Some(path) => test.regressions(path),
        None => test,
    }
}

/// An ungranted read faults, on every pair: the probe the sequences sample, as a trial of its own.
#[pair_test(name = "model::negative_probe", sandboxed(judge = expect_illegal_address, timeout_secs = 60))]
fn negative_probe(pair: &Pair) -> Result<(), ChildError> {
    Ok(peerpool::check::negative_probe(&pair.system, pair.owner, pair.accessor)?)
}

peerpool_fixtures::main!();
