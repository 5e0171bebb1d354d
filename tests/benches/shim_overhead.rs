//! What the libcuda shim costs: model sequences per second through the real driver's code path
//! (`CudaDriver` over the shim, in a child started by `peerpool sim`) against the same sequences
//! on the in-process simulator, side by side in one run, rounds interleaved. Same seed, steps,
//! mix and topology (two_h200_nvlink) on both sides; no negative probes (through the shim each
//! costs a child process) and no sticky faults (they would end a reused system). Goal: the shim
//! costs at most 2x.
//!
//! ```sh
//! cargo build --release -p peerpool-shim -p peerpool-cli   # the shim and `peerpool sim`
//! cargo bench -p peerpool-tests --bench shim_overhead      # prints JSON
//! ```

use peerpool::driver::{CudaDriver, Driver};
use peerpool::fault::FaultInjector;
use peerpool::{Allocation, System};
use peerpool_fixtures::model::{Caps, Mix, NegativeProber, OwnedPools, SequenceConfig, Target, caps_of, run_sequences};
use peerpool_sim::{SimDriver, Topology};

use peerpool::child::{Finished, Role, Roles};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CASES: u32 = 300;
const STEPS: usize = 30;
const ROUNDS: usize = 5;
const SEED: u64 = 20261201;
/// This binary as the measured child, under the shim: prints its seconds.
const THROUGH_SHIM: Role = Role::new("shim-overhead-child", &[]);
/// How long one measured round may take through the shim (seconds on this 2-core machine).
const ROUND_TIMEOUT: Duration = Duration::from_secs(600);

/// Never asked: the mix has no negative probes.
struct NoProbes;

impl NegativeProber for NoProbes {
    fn probe(&self, _: &System, _: &Allocation, _: usize) -> Result<Option<(String, bool)>, String> {
        Err("this benchmark generates no negative probes".into())
    }
}

/// Seconds that `cases` sequences take on `driver`, after a short warm-up.
fn measure(driver: Arc<dyn Driver>, cases: u32) -> Result<f64, String> {
    let injector = Arc::new(FaultInjector::new(driver));
    let system = System::with_driver(injector.clone()).map_err(|e| e.to_string())?;
    system.set_scratch_bytes(4096).map_err(|e| e.to_string())?;
    let caps: Arc<Caps> = Arc::new(caps_of(&system.facts().map_err(|e| e.to_string())?));
    let mix = Mix { negative_probes: 0, sticky_faults: 0, ..Mix::default() };
    let config =
        |cases| SequenceConfig { cases, min_steps: STEPS, max_steps: STEPS, mix, regressions: None, seed: Some(SEED) };
    let make = || Target::reset(&system, &injector, Arc::new(OwnedPools), Some(Arc::new(NoProbes)));
    run_sequences(caps.clone(), &config(cases / 10), make).map_err(|f| f.to_string())?;
    let start = Instant::now();
    run_sequences(caps, &config(cases), make).map_err(|f| f.to_string())?;
    Ok(start.elapsed().as_secs_f64())
}

/// The `peerpool` command built beside this bench (`target/release`), found at run time.
fn peerpool_command() -> Result<PathBuf, String> {
    let dir = peerpool::child::build_dir().map_err(|e| e.to_string())?;
    let (cli, shim) = (dir.join("peerpool"), dir.join("libpeerpool_shim.so"));
    match cli.is_file() && shim.is_file() {
        true => Ok(cli),
        false => Err(format!(
            "no {} or {} beside this bench: run `cargo build --release -p peerpool-shim -p peerpool-cli` first",
            cli.display(),
            shim.display()
        )),
    }
}

/// One measured round in a child through the shim: its seconds, from its one line of output.
fn through_shim(cli: &PathBuf) -> Result<f64, String> {
    let mut command = THROUGH_SHIM.command();
    command.under(cli, ["sim", "--topology", "two_h200_nvlink", "--"]);
    let command = command.build().map_err(|e| e.to_string())?;
    let finished =
        peerpool::child::run(command, ROUND_TIMEOUT).map_err(|e| format!("running {}: {e}", cli.display()))?;
    let text = String::from_utf8_lossy(finished.stdout());
    match (&finished, text.trim().parse()) {
        (Finished::Exited { status, .. }, Ok(seconds)) if status.success() => Ok(seconds),
        _ => Err(format!(
            "the child through the shim: {:?}{text}{}",
            finished.status(),
            String::from_utf8_lossy(finished.stderr())
        )),
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn bench() -> Result<serde_json::Value, String> {
    let cli = peerpool_command()?;
    let (mut local, mut shim) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        local.push(measure(Arc::new(SimDriver::new(Topology::two_h200())), CASES)?);
        shim.push(through_shim(&cli)?);
    }
    let rate = |seconds: &Vec<f64>| CASES as f64 / median(seconds.clone());
    let ratio = median(shim.clone()) / median(local.clone());
    Ok(serde_json::json!({
        "topology": "two_h200_nvlink",
        "sequences_per_round": CASES,
        "steps_per_sequence": STEPS,
        "rounds": ROUNDS,
        "in_process_seconds": local,
        "through_shim_seconds": shim,
        "in_process_sequences_per_second": rate(&local),
        "through_shim_sequences_per_second": rate(&shim),
        "shim_cost_ratio": ratio,
        "goal_ratio_at_most": 2.0,
        "within_goal": ratio <= 2.0,
    }))
}

fn main() -> ExitCode {
    let measured = Roles::new().exiting(THROUGH_SHIM, |_| {
        let seconds = CudaDriver::load().map_err(|e| e.to_string()).and_then(|driver| measure(Arc::new(driver), CASES));
        report(seconds.map(|seconds| seconds.to_string()))
    });
    if let Some(code) = measured.dispatch() {
        return code;
    }
    if std::env::args().any(|a| a == "--list") {
        return ExitCode::SUCCESS; // `cargo test` asks benches for their tests
    }
    report(bench().map(|report| serde_json::to_string_pretty(&report).expect("serialises")))
}

/// Prints what was measured, or why nothing was.
fn report(result: Result<String, String>) -> ExitCode {
    match result {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("shim_overhead: {e}");
            ExitCode::FAILURE
        }
    }
}
