//! The one line a child prints on how its work ended ([`ChildResult`]), the line with its
//! projected wall time on a simulated machine, and how its parent reads both.
//!
//! The result line is found in the child's raw stdout: a stray byte that is not UTF-8 cannot
//! hide it (text is made lossily, for display only).

use crate::ipc::ShareError;
use crate::{CudaError, Error, GrantError};
use serde::{Deserialize, Serialize};
use std::process::ExitStatus;
use std::time::Duration;

/// What starts the one line a child reports on, followed by the [`ChildResult`] as JSON.
pub const RESULT_PREFIX: &str = "peerpool-child-result: ";

/// What a child's work may return: any error; driver errors are found inside peerpool's types.
pub type ChildError = Box<dyn std::error::Error + Send + Sync>;

/// What the work in the child returned: the one line the child prints after [`RESULT_PREFIX`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ChildResult {
    /// The work returned `Ok`.
    Ok,
    /// A driver call failed.
    CudaError {
        /// The call, e.g. `"cuStreamSynchronize"`.
        call: String,
        /// The `CudaCode` name.
        code: String,
        /// Whether the error was sticky.
        sticky: bool,
    },
    /// Another peerpool error, or a failed assertion in the child.
    Failed {
        /// The error, displayed.
        message: String,
    },
}

impl ChildResult {
    /// The result for an error: a driver error inside any of peerpool's error types (one per
    /// layer, each saying where its driver error is through `cuda()`) is reported as that
    /// driver error.
    pub fn from_result(result: Result<(), ChildError>) -> ChildResult {
        let Err(error) = result else { return ChildResult::Ok };
        fn inside<E: std::error::Error + 'static>(
            error: &ChildError,
            cuda: fn(&E) -> Option<&CudaError>,
        ) -> Option<&CudaError> {
            error.downcast_ref::<E>().and_then(cuda)
        }
        let cuda = inside(&error, CudaError::cuda)
            .or_else(|| inside(&error, Error::cuda))
            .or_else(|| inside(&error, GrantError::cuda))
            .or_else(|| inside(&error, ShareError::cuda));
        match cuda {
            Some(e) => ChildResult::CudaError { call: e.call.into(), code: e.code_name(), sticky: e.sticky },
            None => ChildResult::Failed { message: error.to_string() },
        }
    }

    /// The line the child prints: [`RESULT_PREFIX`] and the result as JSON.
    pub fn line(&self) -> String {
        // Serialising strings and a bool cannot fail; an empty object would read as no result.
        format!("{RESULT_PREFIX}{}", serde_json::to_string(self).unwrap_or_default())
    }

    /// The first result line in a child's stdout, wherever it is among other bytes.
    pub fn find(stdout: &[u8]) -> Option<ChildResult> {
        stdout
            .split(|&b| b == b'\n')
            .filter_map(|line| line.strip_prefix(RESULT_PREFIX.as_bytes()))
            .find_map(|json| serde_json::from_slice(json.trim_ascii_end()).ok())
    }
}

/// How a child that was to print its result ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChildOutcome {
    /// It ran its work and reported.
    Returned(ChildResult),
    /// It did not finish in time and was killed, with its process group.
    TimedOut {
        /// The timeout.
        after: Duration,
    },
    /// It exited without a result line (a crash, a panic, a signal).
    NoResult {
        /// Its exit status, displayed.
        status: String,
        /// The last lines of what it wrote to stderr.
        stderr: String,
    },
    /// It could not be started.
    SpawnFailed(String),
}

impl ChildOutcome {
    /// `Ok` when the child reported exactly this CUDA error code (by name), sticky or not as given.
    pub fn expect_cuda_error(&self, code: &str, sticky: bool) -> Result<(), String> {
        match self {
            ChildOutcome::Returned(ChildResult::CudaError { code: c, sticky: s, .. }) if c == code && *s == sticky => {
                Ok(())
            }
            other => Err(format!("expected the child to fail with {code} (sticky: {sticky}), got {other:?}")),
        }
    }

    /// `Ok` when the child reported that its work returned `Ok`; otherwise how it ended.
    pub fn expect_ok(&self) -> Result<(), String> {
        match self {
            ChildOutcome::Returned(ChildResult::Ok) => Ok(()),
            ChildOutcome::NoResult { status, stderr } => {
                Err(format!("the child exited ({status}) without a result line:\n{stderr}"))
            }
            other => Err(format!("the child did not succeed: {other:?}")),
        }
    }
}

/// What starts the line in which a child on a simulated machine reports its projected wall
/// time (nanoseconds): the time its parent waits for it there
/// ([`run_reporting_timed`](super::run_reporting_timed)).
pub const ELAPSED_PREFIX: &str = "peerpool-child-wall-ns: ";

/// The line a child on a simulated machine prints with its projected wall time.
pub fn wall_line(wall: Duration) -> String {
    format!("{ELAPSED_PREFIX}{}", wall.as_nanos())
}

/// The projected wall time a child printed ([`wall_line`]), if it did.
pub fn find_wall(stdout: &[u8]) -> Option<Duration> {
    stdout
        .split(|&b| b == b'\n')
        .filter_map(|line| line.strip_prefix(ELAPSED_PREFIX.as_bytes()))
        .find_map(|n| std::str::from_utf8(n.trim_ascii_end()).ok()?.parse::<u64>().ok())
        .map(Duration::from_nanos)
}

/// How a child that exited with `status` and this output ended: its result, or how it ended
/// without one.
pub(super) fn reported(status: ExitStatus, stdout: &[u8], stderr: &[u8]) -> ChildOutcome {
    match ChildResult::find(stdout) {
        Some(result) => ChildOutcome::Returned(result),
        None => {
            let stderr = String::from_utf8_lossy(stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
            let stderr = tail.into_iter().rev().collect::<Vec<_>>().join("\n");
            ChildOutcome::NoResult { status: status.to_string(), stderr }
        }
    }
}
