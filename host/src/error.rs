//! Errors: a driver call that failed ([`CudaError`]), and everything the API can refuse ([`Error`]).

use crate::driver::codes::CudaCode;

/// A failed driver call: which call, the code it returned, and whether the error is sticky.
///
/// A sticky error (`CUDA_ERROR_ILLEGAL_ADDRESS` after a kernel touched memory it may not access,
/// and the other "inconsistent state" codes) leaves the process's CUDA context unusable: every
/// later call returns it too, and only a new process recovers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{call} failed: {}{}", .code.name(), if *.sticky { " (sticky: this process's CUDA context is lost)" } else { "" })]
pub struct CudaError {
    /// The driver entry point, e.g. `"cuMemPoolSetAccess"`.
    pub call: &'static str,
    /// What it returned.
    pub code: CudaCode,
    /// Whether the process's context is dead from now on.
    pub sticky: bool,
}

impl CudaError {
    /// An error as the real driver would report it: stickiness follows from the code.
    pub fn new(call: &'static str, code: CudaCode) -> Self {
        Self { call, code, sticky: code.is_sticky() }
    }

    /// This error: every error type of peerpool has `cuda()`, the driver error inside it.
    pub fn cuda(&self) -> Option<&CudaError> {
        Some(self)
    }

    /// The code's name, e.g. `"CUDA_ERROR_ILLEGAL_ADDRESS"`.
    pub fn code_name(&self) -> String {
        self.code.name()
    }
}

/// Everything peerpool's API can return instead of a result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// libcuda could not be loaded, or lacks an entry point peerpool needs.
    #[error("no CUDA driver: {reason}")]
    NoDriver {
        /// What was missing.
        reason: String,
    },
    /// A driver call failed.
    #[error(transparent)]
    Cuda(#[from] CudaError),
    /// A device ordinal outside `0..count`.
    #[error("device {ordinal} does not exist: {count} device(s) visible")]
    InvalidDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices the driver reports.
        count: usize,
    },
    /// An argument the API refuses before touching any state.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl Error {
    /// The driver error inside, if this is one.
    pub fn cuda(&self) -> Option<&CudaError> {
        match self {
            Error::Cuda(e) => Some(e),
            _ => None,
        }
    }

    /// Whether this error left the process's CUDA context unusable.
    pub fn is_sticky(&self) -> bool {
        self.cuda().is_some_and(|e| e.sticky)
    }
}

/// `Result` with peerpool's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn illegal_address_is_sticky_and_named() {
        let e = CudaError::new("cuStreamSynchronize", CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS);
        assert!(e.sticky);
        assert_eq!(e.code_name(), "CUDA_ERROR_ILLEGAL_ADDRESS");
        let text = e.to_string();
        assert!(text.starts_with("cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS"), "{text}");
        assert!(text.contains("sticky"), "{text}");
    }

    #[test]
    fn invalid_value_is_not_sticky() {
        let e = CudaError::new("cuMemcpyDtoDAsync", CudaCode::CUDA_ERROR_INVALID_VALUE);
        assert!(!e.sticky);
        assert!(!e.to_string().contains("sticky"));
        assert!(!Error::from(e).is_sticky());
    }
}
