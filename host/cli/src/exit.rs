//! The exit codes of every subcommand, and the table `peerpool --help` prints (the README
//! holds the same table).

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
/// Fewer GPUs than required: `bench` needs two, `facts` one, `check --require-gpus N` (or
/// `PEERPOOL_REQUIRE_GPUS=N`) N real ones, with no simulated topology in their place. Test
/// binaries built on peerpool-fixtures exit with it too.
pub const NO_GPU: u8 = 4;

/// The table, for `--help`.
pub const TABLE: &str = "\
Exit codes (every subcommand):
  0  success: everything checked passed
  1  a failure was found (a pair, a trial, a benchmark, writing the results)
  2  bad input, refused before any work (arguments, topology, directories, report files)
  3  nothing was checked (no GPU pair, only pairs without a peer path, no trial that ran)
  4  fewer GPUs than required (bench needs two, facts one; check --require-gpus N
     or PEERPOOL_REQUIRE_GPUS=N: N real ones, no simulated fallback)";

/// `code` as the process's exit status.
pub fn code(code: u8) -> ExitCode {
    ExitCode::from(code)
}
