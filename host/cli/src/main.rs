//! `peerpool`: prove which GPU may touch which CUDA memory pool.

mod calibrate;
mod carried;
mod check;
mod exit;
mod junit;
mod outputs;
mod runtime_lib;
mod sim;
mod trusted;

use clap::{Parser, Subcommand};
use peerpool::bench;
use peerpool::owned_dir::{self, OwnedDir};
use peerpool::report::Report;
use std::path::PathBuf;
use std::process::ExitCode;

/// Prove which GPU may touch which CUDA memory pool.
#[derive(Parser)]
#[command(name = "peerpool", version, about, after_help = exit::TABLE)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Verify every ordered GPU pair: grant a fresh pool, the accessor's kernels write, read and
    /// add atomically, and an ungranted access faults (in a child process). Prints the verdict
    /// matrix, writes check.json and check.md, exits non-zero on any failure. Without a GPU it
    /// runs on the built-in simulated 2 x H200 topology and says so on its first line, unless
    /// GPUs are required. $PEERPOOL_TOPOLOGY (a catalog name or TOML file) simulates a topology
    /// as --topology does (through the libcuda shim, under `peerpool sim`).
    Check {
        /// Run on a simulated topology instead: a catalog name (e.g. four_gpu_islands) or a TOML file.
        #[arg(long)]
        topology: Option<String>,
        /// The timing model of the simulated machine: a calibration JSON file (default: the
        /// H200s', built in). The run prints its projected wall time beside the time it took.
        #[arg(long)]
        timing: Option<PathBuf>,
        /// Directory for check.json and check.md.
        #[arg(long, default_value = "peerpool-out")]
        out: PathBuf,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
        /// Fail (exit 69) unless at least N real GPUs are checked: no simulated fallback, no
        /// --topology. Default: $PEERPOOL_REQUIRE_GPUS.
        #[arg(long, value_name = "N")]
        require_gpus: Option<usize>,
        /// Which ordered pairs' ungranted read is proven to fault, each in a process of its
        /// own: `all` (the default), `sample` (one pair per GPU as the accessor) or a number
        /// of pairs. Pairs not probed are `OK*` in the matrix and skipped in the reports.
        #[arg(long, value_name = "all|sample|N", default_value = "all", value_parser = check::parse_probes)]
        probes: peerpool::check::ProbeChoice,
    },
    /// Measure on the real GPUs (two at least): copy engine against peerpool's kernels across each
    /// ordered pair whose GPUs reach each other both ways, in rounds' order (4 KiB to 1 GiB, one
    /// way and both ways), latency, atomics, grant cost against live bytes, verification and PTX
    /// load; other pairs are listed as skipped. Writes bench.json and prints the headline ratios.
    Bench {
        /// Directory for bench.json.
        #[arg(long, default_value = "peerpool-out")]
        out: PathBuf,
        /// Timed repeats per point.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=bench::MAX_REPEATS as i64))]
        repeats: u32,
        /// The largest transfer, bytes (sizes run from 4 KiB by factors of 4).
        #[arg(long, default_value_t = 1 << 30, value_parser = clap::value_parser!(u64).range(4096..=bench::MAX_BYTES))]
        max_bytes: u64,
        /// Full curves for the first N ordered pairs only (default: every pair); the others at
        /// the largest size alone, enough for the pair heatmap of a machine of many GPUs.
        #[arg(long, value_name = "N")]
        curve_pairs: Option<usize>,
        /// Live GiB in the pool for the grant-latency curve, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = [0u64, 1, 8, 32], value_parser = clap::value_parser!(u64).range(0..=bench::MAX_LIVE_GIB))]
        live_gib: Vec<u64>,
    },
    /// Print the devices, the peer-capability matrix and each default pool's access (the default).
    Facts,
    /// List the simulated topologies built in (the catalog in host/sim/topologies/).
    Topologies,
    /// Merge a report directory written by peerpool's test fixtures into one JSON and Markdown
    /// report and JUnit XML (every skipped trial with its reason, the hardware as properties).
    Report {
        /// The directory (`$PEERPOOL_REPORT_DIR`, or peerpool-report/ in the cargo target directory).
        dir: Option<PathBuf>,
        /// Where to write the merged JSON (default: DIR/report.json).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Where to write the Markdown summary (default: DIR/report.md).
        #[arg(long)]
        markdown: Option<PathBuf>,
        /// Where to write the JUnit XML (default: DIR/junit.xml).
        #[arg(long)]
        junit: Option<PathBuf>,
    },
    /// Run a program on a simulated topology: the libcuda shim (carried by an installed
    /// `peerpool`; in a checkout, `cargo build -p peerpool-shim`) goes first on LD_LIBRARY_PATH, so the program's CUDA driver calls (cudarc,
    /// C with -lcuda, cuda-python) reach simulated GPUs, with fault rules and a call trace. The
    /// program's exit status is this command's. Example:
    /// `peerpool sim --topology eight_gpu_nvswitch -- cargo test`.
    Sim(sim::Options),
    /// Calibrate the simulator's timing model on this machine's real GPUs (two at least): what
    /// each kind of driver call costs, in this process and in fresh child processes, alone and
    /// several at once. Writes timing.json (the model `check --timing` and `sim --timing` read)
    /// and calibration.json (every measurement, raw). A few minutes on two GPUs.
    Calibrate {
        /// Directory for timing.json and calibration.json.
        #[arg(long, default_value = "peerpool-calibration")]
        out: PathBuf,
    },
}

fn main() -> ExitCode {
    // Rust starts with SIGPIPE ignored, so `peerpool check | head` made println! panic on the
    // closed pipe; the default action ends the command quietly, as other Unix tools end.
    // SAFETY: resets one signal to its default disposition, before any other thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // As `check`'s child, this binary runs one negative probe (`check::NEGATIVE_PROBE`); as
    // `calibrate`'s, one measurement in a fresh process; either before any argument is read as
    // a subcommand's.
    let roles = peerpool::child::Roles::new().reporting(check::NEGATIVE_PROBE, check::negative_probe).exiting(
        calibrate::CHILD,
        |call| {
            calibrate::child(call.rest());
            ExitCode::SUCCESS
        },
    );
    if let Some(code) = roles.dispatch() {
        return code;
    }
    match Cli::parse().command.unwrap_or(Command::Facts) {
        Command::Check { topology, timing, out, quiet, require_gpus, probes } => {
            check::run(check::Options { topology, timing, out, quiet, require_gpus, probes })
        }
        Command::Bench { out, repeats, max_bytes, curve_pairs, live_gib } => {
            let sizes = (0..).map(|i| 4096u64 << (2 * i)).take_while(|&b| b <= max_bytes).collect();
            let defaults = bench::BenchOptions::default();
            bench(out, bench::BenchOptions { repeats: repeats as usize, sizes, curve_pairs, live_gib, ..defaults })
        }
        Command::Facts => facts(),
        Command::Topologies => topologies(),
        Command::Report { dir, json, markdown, junit } => report(dir, json, markdown, junit),
        Command::Sim(options) => sim::run(options),
        Command::Calibrate { out } => calibrate::run(&out),
    }
}

fn facts() -> ExitCode {
    match peerpool::System::open() {
        Err(e) => {
            println!("peerpool: {e}");
            println!("nothing to inspect on this machine: no GPU is visible to CUDA.");
            exit::code(exit::NO_GPU)
        }
        Ok(system) if system.device_count() == 0 => {
            println!("peerpool: the CUDA driver is installed but reports no GPU.");
            exit::code(exit::NO_GPU)
        }
        Ok(system) => finish(system.facts(), "peerpool: reading the driver's facts failed", |facts| {
            print!("{}", facts.render());
        }),
    }
}

/// `SUCCESS` once `shown` has shown what `result` holds, or `FAILURE` with `failed: error` on
/// stderr.
fn finish<T, E: std::fmt::Display>(result: Result<T, E>, failed: &str, shown: impl FnOnce(T)) -> ExitCode {
    match result {
        Ok(value) => {
            shown(value);
            exit::code(exit::SUCCESS)
        }
        Err(e) => {
            eprintln!("{failed}: {e}");
            exit::code(exit::FAILURE)
        }
    }
}

fn bench(out: PathBuf, options: bench::BenchOptions) -> ExitCode {
    let out = match OwnedDir::create(&out).and_then(|out| out.check_target("bench.json").map(|()| out)) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("peerpool bench: --out: {}", peerpool::text::escaped(&e.to_string()));
            return exit::code(exit::BAD_INPUT);
        }
    };
    let system = match peerpool::System::open() {
        Ok(system) if system.device_count() >= 2 => system,
        Ok(system) => {
            eprintln!("peerpool bench: needs two GPUs, found {}", system.device_count());
            return exit::code(exit::NO_GPU);
        }
        Err(e) => {
            eprintln!("peerpool bench: {e}; benchmarks run on real GPUs only");
            return exit::code(exit::NO_GPU);
        }
    };
    let report = match bench::run(&system, &options) {
        Ok(report) => report,
        Err(e @ bench::BenchError::NoPair { .. }) => {
            eprintln!("peerpool bench: {e}: nothing to measure");
            return exit::code(exit::NOTHING_CHECKED);
        }
        Err(e) => {
            eprintln!("peerpool bench: {e}");
            if e.cuda().is_some_and(|c| c.code == peerpool::CudaCode::CUDA_ERROR_OUT_OF_MEMORY) {
                let live = options.live_gib.iter().max().copied().unwrap_or(0);
                eprintln!(
                    "peerpool bench: its largest allocation is the grant curve's {live} GiB live in one pool \
                     (--live-gib sets it); a simulated GPU's memory is this host's"
                );
            }
            return exit::code(exit::FAILURE);
        }
    };
    for skipped in &report.skipped {
        println!("skipped gpu{} -> gpu{}: {}", skipped.owner, skipped.accessor, skipped.reason);
    }
    for (name, ratio) in &report.ratios {
        println!("{ratio:>8.3}  {name}");
    }
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string());
    let written = json.and_then(|json| out.write("bench.json", json.as_bytes()).map_err(|e| e.to_string()));
    finish(written, "peerpool bench: writing bench.json", |path| println!("wrote {}", path.display()))
}

fn topologies() -> ExitCode {
    let mut status = exit::SUCCESS;
    for entry in peerpool_sim::catalog() {
        match entry.topology() {
            Ok(t) => {
                println!("{:<22} {} ({} GPUs)", entry.stem(), t.name, t.device_count());
                println!("{:<22} stands for: {}", "", t.stands_for);
            }
            Err(e) => {
                println!("{:<22} unreadable: {e}", entry.stem());
                status = exit::FAILURE;
            }
        }
    }
    exit::code(status)
}

fn report(dir: Option<PathBuf>, json: Option<PathBuf>, markdown: Option<PathBuf>, junit: Option<PathBuf>) -> ExitCode {
    let bad_input = |e: &dyn std::fmt::Display| {
        eprintln!("peerpool report: {}", peerpool::text::escaped(&e.to_string()));
        exit::code(exit::BAD_INPUT)
    };
    let dir = match dir.map_or_else(peerpool::report::report_dir, Ok) {
        Ok(dir) => dir,
        Err(e) => return bad_input(&e),
    };
    // Every output is checked before anything is read: each may be written (absent, or a
    // regular file we may replace), and none overwrites another.
    let named =
        [("--json", json, "report.json"), ("--markdown", markdown, "report.md"), ("--junit", junit, "junit.xml")];
    let targets: Vec<PathBuf> =
        named.iter().map(|(_, path, default)| path.clone().unwrap_or_else(|| dir.join(default))).collect();
    let owned = match OwnedDir::open(&dir) {
        Ok(owned) => owned,
        Err(e) => return bad_input(&format!("cannot read the reports: {e}")),
    };
    let flagged: Vec<(&str, &std::path::Path)> =
        named.iter().zip(&targets).map(|((flag, ..), t)| (*flag, t.as_path())).collect();
    if let Err(e) = outputs::refuse_unwritable(&flagged) {
        return bad_input(&e);
    }
    let report = match Report::collect_in(&owned) {
        Ok(report) => report,
        Err(e) => return bad_input(&format!("cannot read the reports: {e}")),
    };
    let texts = serde_json::to_string_pretty(&report)
        .map_err(|e| format!("the merged report does not serialise: {e}"))
        .and_then(|json| Ok([json, report.to_markdown(), junit::render(&report, "peerpool report")?]));
    let texts = match texts {
        Ok(texts) => texts,
        Err(e) => return bad_input(&e),
    };
    // Defaults go in the report directory through its open descriptor; named files as named.
    let stage = |named: &Option<PathBuf>, default: &str, bytes: &[u8]| match named {
        Some(path) => owned_dir::stage_file(path, bytes),
        None => owned.stage(default, bytes),
    };
    let staged: Result<Vec<_>, _> =
        named.iter().zip(&texts).map(|((_, path, default), text)| stage(path, default, text.as_bytes())).collect();
    let written: Result<Vec<PathBuf>, _> = staged.and_then(|staged| staged.into_iter().map(|s| s.commit()).collect());
    let written = match written {
        Ok(paths) => paths,
        Err(e) => {
            eprintln!("peerpool report: cannot write the report: {e}");
            return exit::code(exit::FAILURE);
        }
    };
    use peerpool::report::Status::*;
    let shown: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    println!(
        "{} passed, {} failed, {} skipped, {} not run; wrote {}",
        report.count(Passed),
        report.count(Failed),
        report.count(Skipped),
        report.count(NotRun),
        shown.join(", ")
    );
    if report.count(Failed) > 0 {
        exit::code(exit::FAILURE)
    } else if report.count(Passed) == 0 {
        eprintln!("peerpool report: no trial ran in {}", peerpool::text::path(&dir));
        exit::code(exit::NOTHING_CHECKED)
    } else {
        exit::code(exit::SUCCESS)
    }
}
