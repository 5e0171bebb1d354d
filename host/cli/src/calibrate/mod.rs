//! `peerpool calibrate OUT_DIR`: the simulator's timing model (`peerpool_sim::Latencies`)
//! calibrated on a real machine with two GPUs: what each kind of driver call costs, what the
//! costs depend on, and how processes, threads and devices serialise them.
//!
//! It writes `OUT_DIR/timing.json` (the model: what `peerpool check --timing` and
//! `peerpool sim --timing` read) and `OUT_DIR/calibration.json` (every measurement behind it,
//! raw). It runs itself as child processes for what only a fresh process shows (the child role
//! `calibrate-child`, `peerpool::child`: `PEERPOOL_CHILD_ROLE=calibrate-child peerpool -- MODE
//! ...`, one JSON line each, with wall-clock timestamps): process start and exit, `cuInit`,
//! context creation, and a negative probe's whole run, alone and several at once
//! (`children.rs`, `processes.rs`).
//!
//! In this process the driver runs behind a `FaultInjector` with no faults: its stopwatch
//! (`times()`) gives the cost of plain calls over a representative workload; conditional
//! costs (a new pool's first grant, the first allocation after a grant, a grant over live
//! bytes, kernels and copies by size) are timed one by one (`in_process.rs`). Medians
//! throughout.
//!
//! Every experiment reports an error instead of stopping the rest; a model field whose
//! measurement failed keeps its built-in value and `calibration.json` says why.

mod children;
mod in_process;
mod processes;

use crate::exit;
use children::epoch;
use peerpool::System;
use peerpool::driver::CudaDriver;
use peerpool::fault::FaultInjector;
use peerpool::owned_dir::OwnedDir;
use peerpool_sim::Latencies;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

pub(crate) use children::{CHILD, child};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Calibrates into `out`: the command's exit status. The directory is made and held to the
/// output rules, and the recorded variables read, before any measurement (exit 2); no CUDA
/// driver is exit 69 at once. Both files are written whatever failed; fewer than two GPUs is
/// exit 69 after the process costs were measured, any other failed experiment exit 1.
pub(crate) fn run(out: &Path) -> ExitCode {
    let out = match OwnedDir::create(out)
        .and_then(|dir| ["timing.json", "calibration.json"].iter().try_for_each(|f| dir.check_target(f)).map(|()| dir))
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("peerpool calibrate: {}", peerpool::text::escaped(&e.to_string()));
            return exit::code(exit::BAD_INPUT);
        }
    };
    let recorded = ["PEERPOOL_COMMIT", "PEERPOOL_CALIBRATION_DATE"].map(peerpool::env::var);
    let [commit, date] = match recorded {
        [Ok(commit), Ok(date)] => [commit, date],
        [Err(e), _] | [_, Err(e)] => {
            eprintln!("peerpool calibrate: {e}");
            return exit::code(exit::BAD_INPUT);
        }
    };
    if !peerpool::driver::libcuda_exports("cuInit") {
        eprintln!(
            "peerpool calibrate: no CUDA driver (libcuda could not be loaded): it calibrates on real GPUs, or on \
             simulated ones under `peerpool sim`"
        );
        return exit::code(exit::NO_GPU);
    }
    let source = format!(
        "peerpool calibrate at {} on {}; raw measurements in calibration.json",
        commit.as_deref().unwrap_or("an unknown commit"),
        date.unwrap_or_else(|| format!("epoch {}", epoch() / 1_000_000_000))
    );
    match calibrate(&out, source) {
        Ok(()) => exit::code(exit::SUCCESS),
        Err(Failed::Gpus(e)) => {
            eprintln!("peerpool calibrate: {e}: only the process costs were calibrated");
            exit::code(exit::NO_GPU)
        }
        Err(Failed::Other(e)) => {
            eprintln!("peerpool calibrate: {}", peerpool::text::escaped(&e));
            exit::code(exit::FAILURE)
        }
    }
}

/// Why a calibration is incomplete.
enum Failed {
    /// Fewer than two GPUs: what needs a pair was not measured.
    Gpus(String),
    /// An experiment, or writing a file, failed.
    Other(String),
}

/// What this process measures needs two GPUs.
const NEEDS_TWO: &str = "needs two GPUs";

fn calibrate(out: &OwnedDir, source: String) -> Result<(), Failed> {
    let mut raw: BTreeMap<String, Value> = BTreeMap::new();
    let mut model = Latencies::default();
    let record = |raw: &mut BTreeMap<String, Value>, name: &str, r: Res<Value>| {
        let v = r.unwrap_or_else(|e| json!({ "error": e.to_string() }));
        eprintln!("peerpool calibrate: {name}: {v}");
        raw.insert(name.into(), v);
    };

    // Children alone, five of each, one after another.
    let r = processes::processes_alone(&mut model);
    record(&mut raw, "processes_alone", r);
    // Children at once.
    let r = processes::processes_at_once(&mut model);
    record(&mut raw, "processes_at_once", r);
    // Which devices a child sees when CUDA_VISIBLE_DEVICES lists UUIDs, and in which order.
    let r = processes::visible_by_uuid();
    record(&mut raw, "visible_by_uuid", r);

    // This process.
    let opened = (|| -> Res<(Arc<FaultInjector>, System)> {
        let injector = Arc::new(FaultInjector::new(Arc::new(CudaDriver::load()?)));
        let system = System::with_driver(injector.clone())?;
        if system.device_count() < 2 {
            return Err(NEEDS_TWO.into());
        }
        for d in 0..2 {
            drop(system.kernels(d)?);
        }
        Ok((injector, system))
    })();
    let failed = match &opened {
        Ok((injector, system)) => {
            let r = in_process::plain_calls(system, injector, &mut model);
            record(&mut raw, "plain_calls", r);
            let r = in_process::pool_costs(system, &mut model);
            record(&mut raw, "pool_costs", r);
            let r = in_process::live_bytes(system, &mut model);
            record(&mut raw, "live_bytes", r);
            let r = in_process::transfers(system, &mut model);
            record(&mut raw, "transfers", r);
            let r = in_process::mapping_threads(system, &mut model);
            record(&mut raw, "mapping_threads", r);
            let name = system.driver().device_get_name(0).unwrap_or_default();
            let version = system.driver().driver_get_version().unwrap_or(0);
            model.machine = format!("2 x {name} (calibrated), CUDA {}.{}", version / 1000, (version % 1000) / 10);
            None
        }
        Err(e) => {
            raw.insert("this_process".into(), json!({ "error": e.to_string() }));
            model.machine = format!("{} (only the process costs calibrated: {e})", model.machine);
            Some(e.to_string())
        }
    };
    model.source = source;
    let text = |v: serde_json::Result<String>| v.map(|t| t + "\n").map_err(|e| Failed::Other(e.to_string()));
    let (timing, raw) = (text(serde_json::to_string_pretty(&model))?, text(serde_json::to_string_pretty(&raw))?);
    for (name, bytes) in [("timing.json", timing), ("calibration.json", raw)] {
        let written = out.write(name, bytes.as_bytes()).map_err(|e| Failed::Other(format!("writing {name}: {e}")))?;
        println!("peerpool calibrate: wrote {}", written.display());
    }
    match failed {
        Some(e) if e == NEEDS_TWO => Err(Failed::Gpus(e)),
        Some(e) => Err(Failed::Other(e)),
        None => Ok(()),
    }
}

pub(super) fn set(field: &mut f64, value: f64) {
    if value.is_finite() && value > 0.0 {
        *field = value;
    }
}
