//! `peerpool`: what the GPUs, their peers and their pools allow, and run reports.

use clap::{Parser, Subcommand};
use peerpool::report::Report;
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
    /// Print the devices, the peer-capability matrix and each default pool's access (the default).
    Facts,
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
}

fn main() -> ExitCode {
    match Cli::parse().command.unwrap_or(Command::Facts) {
        Command::Facts => facts(),
        Command::Report { dir, json, markdown } => report(dir, json, markdown),
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

fn report(dir: Option<PathBuf>, json: Option<PathBuf>, markdown: Option<PathBuf>) -> ExitCode {
    let dir = dir.unwrap_or_else(peerpool::report::report_dir);
    let report = match Report::collect(&dir) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("peerpool: cannot read reports in {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    };
    let json = json.unwrap_or_else(|| dir.join("report.json"));
    let markdown = markdown.unwrap_or_else(|| dir.join("report.md"));
    let text = serde_json::to_string_pretty(&report).expect("reports serialise");
    if let Err(e) = std::fs::write(&json, text).and_then(|()| std::fs::write(&markdown, report.to_markdown())) {
        eprintln!("peerpool: cannot write the report: {e}");
        return ExitCode::FAILURE;
    }
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
