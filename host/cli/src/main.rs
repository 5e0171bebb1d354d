//! `peerpool`: prove which GPU may touch which CUDA memory pool.

mod check;

use clap::{Parser, Subcommand};
use peerpool::owned_dir::{self, OwnedDir};
use peerpool::report::{Report, ReportError};
use std::path::PathBuf;
use std::process::ExitCode;

/// Prove which GPU may touch which CUDA memory pool.
#[derive(Parser)]
#[command(name = "peerpool", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Verify every ordered GPU pair: grant a fresh pool, the accessor's kernels write, read and
    /// add atomically, and an ungranted access faults (in a child process). Prints the verdict
    /// matrix, writes check.json and check.md, exits non-zero on any failure. Without a GPU it
    /// runs on the built-in simulated 2 x H200 topology and says so on its first line.
    Check {
        /// Run on a simulated topology instead: a catalog name (e.g. four_gpu_islands) or a TOML file.
        #[arg(long)]
        topology: Option<String>,
        /// Directory for check.json and check.md.
        #[arg(long, default_value = "peerpool-out")]
        out: PathBuf,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Measure on the real GPUs: copy engine against peerpool's kernels across each pair
    /// (4 KiB to 1 GiB, one way and both ways), latency, atomics, grant cost against live
    /// bytes, verification and PTX load. Writes bench.json and prints the headline ratios.
    Bench {
        /// Directory for bench.json.
        #[arg(long, default_value = "peerpool-out")]
        out: PathBuf,
        /// Timed repeats per point.
        #[arg(long, default_value_t = 10)]
        repeats: usize,
    },
    /// Print the devices, the peer-capability matrix and each default pool's access (the default).
    Facts,
    /// List the simulated topologies built in (the catalog in ci/topologies/).
    Topologies,
    /// Merge a report directory written by peerpool's test fixtures into one JSON and Markdown report.
    Report {
        /// The directory (`$PEERPOOL_REPORT_DIR`, or target/peerpool-report).
        dir: Option<PathBuf>,
        /// Where to write the merged JSON (default: <dir>/report.json).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Where to write the Markdown summary (default: <dir>/report.md).
        #[arg(long)]
        markdown: Option<PathBuf>,
    },
    /// Internal: the isolated negative probe `check` runs in a child process.
    #[command(hide = true)]
    NegativeProbe {
        #[arg(long)]
        owner: usize,
        #[arg(long)]
        accessor: usize,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command.unwrap_or(Command::Facts) {
        Command::Check { topology, out, quiet } => check::run(check::Options { topology, out, quiet }),
        Command::Bench { out, repeats } => bench(out, repeats),
        Command::Facts => facts(),
        Command::Topologies => topologies(),
        Command::Report { dir, json, markdown } => report(dir, json, markdown),
        Command::NegativeProbe { owner, accessor } => check::negative_probe(owner, accessor),
    }
}

fn facts() -> ExitCode {
    match peerpool::System::open() {
        Err(e) => {
            println!("peerpool: {e}");
            println!("nothing to inspect on this machine: no GPU is visible to CUDA.");
            ExitCode::SUCCESS
        }
        Ok(system) if system.device_count() == 0 => {
            println!("peerpool: the CUDA driver is installed but reports no GPU.");
            ExitCode::SUCCESS
        }
        Ok(system) => match system.facts() {
            Ok(facts) => {
                print!("{}", facts.render());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("peerpool: reading the driver's facts failed: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

fn bench(out: PathBuf, repeats: usize) -> ExitCode {
    let system = match peerpool::System::open() {
        Ok(system) if system.device_count() >= 2 => system,
        Ok(system) => {
            eprintln!("peerpool bench: needs two GPUs, found {}", system.device_count());
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("peerpool bench: {e}; benchmarks run on real GPUs only");
            return ExitCode::from(2);
        }
    };
    let options = peerpool::bench::BenchOptions { repeats: repeats.max(1), ..Default::default() };
    let report = match peerpool::bench::run(&system, &options) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("peerpool bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    for (name, ratio) in &report.ratios {
        println!("{ratio:>8.3}  {name}");
    }
    let path = out.join("bench.json");
    let written = std::fs::create_dir_all(&out)
        .and_then(|()| std::fs::write(&path, serde_json::to_string_pretty(&report).expect("serialises")));
    match written {
        Ok(()) => {
            println!("wrote {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("peerpool bench: writing {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}

fn topologies() -> ExitCode {
    for entry in peerpool_sim::catalog() {
        match entry.topology() {
            Ok(t) => println!("{:<22} {} ({} GPUs)", entry.stem(), t.name, t.device_count()),
            Err(e) => println!("{:<22} unreadable: {e}", entry.stem()),
        }
    }
    ExitCode::SUCCESS
}

fn report(dir: Option<PathBuf>, json: Option<PathBuf>, markdown: Option<PathBuf>) -> ExitCode {
    let dir = match dir.map_or_else(peerpool::report::report_dir, Ok) {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("peerpool report: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (owned, report) = match OwnedDir::open(&dir).map_err(ReportError::from).and_then(|d| {
        let report = Report::collect_in(&d)?;
        Ok((d, report))
    }) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("peerpool report: cannot read the reports: {e}");
            return ExitCode::FAILURE;
        }
    };
    let text = serde_json::to_string_pretty(&report).unwrap_or_default();
    let write = |path: &Option<PathBuf>, name: &str, bytes: &[u8]| match path {
        Some(path) => owned_dir::write_file(path, bytes).map(|()| path.clone()),
        None => owned.write(name, bytes),
    };
    let written = write(&json, "report.json", text.as_bytes())
        .and_then(|j| Ok((j, write(&markdown, "report.md", report.to_markdown().as_bytes())?)));
    let (json, markdown) = match written {
        Ok(paths) => paths,
        Err(e) => {
            eprintln!("peerpool report: cannot write the report: {e}");
            return ExitCode::FAILURE;
        }
    };
    use peerpool::report::Status::*;
    println!(
        "{} passed, {} failed, {} skipped, {} not run; wrote {} and {}",
        report.count(Passed),
        report.count(Failed),
        report.count(Skipped),
        report.count(NotRun),
        json.display(),
        markdown.display()
    );
    if report.count(Failed) > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
