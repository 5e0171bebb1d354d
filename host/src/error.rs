//! Errors: a driver call that failed ([`CudaError`]), and everything the API can refuse ([`Error`]).

use cudarc::driver::sys::CUresult;

/// A failed driver call: which call, the `CUresult` it returned, and whether the error is sticky.
///
/// A sticky error (`CUDA_ERROR_ILLEGAL_ADDRESS` after a kernel touched memory it may not access,
/// and the other "inconsistent state" codes) leaves the process's CUDA context unusable: every
/// later call returns it too, and only a new process recovers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{call} failed: {}{}", code_name(*.code), if *.sticky { " (sticky: this process's CUDA context is lost)" } else { "" })]
pub struct CudaError {
    /// The driver entry point, e.g. `"cuMemPoolSetAccess"`.
    pub call: &'static str,
    /// What it returned.
    pub code: CUresult,
    /// Whether the process's context is dead from now on.
    pub sticky: bool,
}

impl CudaError {
    /// An error as the real driver would report it: stickiness follows from the code.
    pub fn new(call: &'static str, code: CUresult) -> Self {
        Self { call, code, sticky: is_sticky(code) }
    }

    /// This error: every error type of peerpool has `cuda()`, the driver error inside it.
    pub fn cuda(&self) -> Option<&CudaError> {
        Some(self)
    }

    /// The `CUresult` name, e.g. `"CUDA_ERROR_ILLEGAL_ADDRESS"`.
    pub fn code_name(&self) -> String {
        code_name(self.code)
    }
}

/// `"CUDA_ERROR_INVALID_VALUE"` for `CUDA_ERROR_INVALID_VALUE`.
pub fn code_name(code: CUresult) -> String {
    format!("{code:?}")
}

/// The codes after which CUDA documents that "the process must be terminated and relaunched".
pub fn is_sticky(code: CUresult) -> bool {
    use CUresult::*;
    matches!(
        code,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_ECC_UNCORRECTABLE
    )
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
        let e = CudaError::new("cuStreamSynchronize", CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
        assert!(e.sticky);
        assert_eq!(e.code_name(), "CUDA_ERROR_ILLEGAL_ADDRESS");
        let text = e.to_string();
        assert!(text.starts_with("cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS"), "{text}");
        assert!(text.contains("sticky"), "{text}");
    }

    #[test]
    fn invalid_value_is_not_sticky() {
        let e = CudaError::new("cuMemcpyDtoDAsync", CUresult::CUDA_ERROR_INVALID_VALUE);
        assert!(!e.sticky);
        assert!(!e.to_string().contains("sticky"));
        assert!(!Error::from(e).is_sticky());
    }
}
