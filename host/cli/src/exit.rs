//! The exit codes of every subcommand, and the table `peerpool --help` prints (the user guide's
//! exit-codes chapter holds the same table).
//!
//! None of them means something else to the tools a suite runs under: nextest's own codes (4 for
//! no tests run, 70, 80, 90-96, 100-106, 110), libtest's and cargo's 101, and the shell's 126,
//! 127 and 128 + a signal. So fewer GPUs than required is sysexits' EX_UNAVAILABLE, not 4: a CI
//! log must tell a GPU runner without its GPUs from nextest finding no test to run.

use std::process::ExitCode;

/// Everything checked passed (or the listing or merge asked for was made).
pub const SUCCESS: u8 = 0;
/// A failure was found: a pair, a trial, a benchmark, or writing the results.
pub const FAILURE: u8 = 1;
/// Bad input, refused before any work: arguments (clap's own errors included), a topology,
/// an output or report directory, a report file.
pub const BAD_INPUT: u8 = 2;
/// Nothing was checked: no GPU pair, only pairs without a peer path, or no trial that ran.
pub const NOTHING_CHECKED: u8 = 3;
/// Fewer GPUs than required: `bench` and `calibrate` need two, `facts` one, `check --require-gpus N` (or
/// `PEERPOOL_REQUIRE_GPUS=N`) N real ones, with no simulated topology in their place. Test
/// binaries built on peerpool-fixtures exit with it too (`EXIT_GPUS_REQUIRED` there).
pub const NO_GPU: u8 = 69;
/// `peerpool sim`'s program carries NVIDIA's CUDA runtime statically, which simulated GPUs
/// cannot serve: sysexits' EX_DATAERR, the input (the program) is not of a form that can run.
pub const STATIC_RUNTIME: u8 = 65;

/// The table, for `--help`.
pub const TABLE: &str = "\
Exit codes (every subcommand):
   0  success: everything checked passed
   1  a failure was found (a pair, a trial, a benchmark, writing the results)
   2  bad input, refused before any work (arguments, topology, directories, report files)
   3  nothing was checked (no GPU pair, only pairs without a peer path, no trial that ran)
  65  peerpool sim: the program carries NVIDIA's CUDA runtime statically (rebuild it with
      -cudart shared, or run it with --real)
  69  fewer GPUs than required (bench and calibrate need two, facts one; check --require-gpus N
      or PEERPOOL_REQUIRE_GPUS=N: N real ones, no simulated fallback)
  peerpool sim exits with its program's status (2 when its own settings are wrong).";

/// `code` as the process's exit status.
pub fn code(code: u8) -> ExitCode {
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What nextest, libtest (through cargo) and the shell mean by a status of their own.
    const TAKEN: [u8; 21] =
        [4, 70, 80, 90, 91, 92, 93, 94, 95, 96, 100, 101, 102, 103, 104, 105, 106, 110, 126, 127, 128];

    #[test]
    fn codes_are_distinct_and_mean_nothing_else_to_the_tools_around() {
        let ours = [SUCCESS, FAILURE, BAD_INPUT, NOTHING_CHECKED, STATIC_RUNTIME, NO_GPU];
        for (i, a) in ours.iter().enumerate() {
            assert!(!ours[i + 1..].contains(a), "{a} twice");
            assert!(!TAKEN.contains(a) && *a < 128, "{a} means something else under nextest, cargo or a shell");
            assert!(TABLE.contains(&format!("\n{a:>4}  ")), "{a} is not in the --help table");
        }
    }
}
