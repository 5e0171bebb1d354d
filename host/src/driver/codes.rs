//! [`CudaCode`], and every `CUresult` of CUDA 13.0 listed once (those the bindings of 12.x lack
//! only on 13.x's): peerpool's names for the codes,
//! what the fault-rule parser reads by name and a libcuda built on peerpool names and describes
//! (`cuGetErrorName`, `cuGetErrorString`) from a C value, which need not be a valid Rust enum
//! value.

use cudarc::driver::sys::CUresult;
use std::fmt;

/// A CUDA driver result code (`CUresult`), as peerpool's own type: its API does not change with
/// the bindings it is built on. The constants carry `cuda.h`'s names (`CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS`);
/// `Debug` prints that name.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CudaCode(CUresult);

macro_rules! codes {
    ($($(#[$only:meta])* $code:ident,)*) => {
        /// Every code, in the header's order.
        pub const ALL: &[CudaCode] = &[$($(#[$only])* CudaCode::$code),*];

        #[allow(missing_docs)] // named as in cuda.h
        impl CudaCode {
            $($(#[$only])* pub const $code: CudaCode = CudaCode(CUresult::$code);)*
        }
    };
}

impl CudaCode {
    /// The name in `cuda.h`, e.g. `"CUDA_ERROR_ILLEGAL_ADDRESS"`.
    pub fn name(self) -> String {
        format!("{:?}", self.0)
    }

    /// The C value.
    pub fn raw(self) -> u32 {
        self.0 as u32
    }

    /// Whether CUDA documents that after this code "the process must be terminated and
    /// relaunched": the context is lost for good.
    pub fn is_sticky(self) -> bool {
        matches!(
            self,
            CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS
                | CudaCode::CUDA_ERROR_LAUNCH_FAILED
                | CudaCode::CUDA_ERROR_HARDWARE_STACK_ERROR
                | CudaCode::CUDA_ERROR_ILLEGAL_INSTRUCTION
                | CudaCode::CUDA_ERROR_MISALIGNED_ADDRESS
                | CudaCode::CUDA_ERROR_INVALID_ADDRESS_SPACE
                | CudaCode::CUDA_ERROR_INVALID_PC
                | CudaCode::CUDA_ERROR_ASSERT
                | CudaCode::CUDA_ERROR_ECC_UNCORRECTABLE
        )
    }

    /// The code of the bindings peerpool calls libcuda through (its driver, and a libcuda built
    /// on peerpool, convert at that boundary; not for other crates: the bindings' type may change).
    #[doc(hidden)]
    pub fn from_bindings(code: CUresult) -> CudaCode {
        CudaCode(code)
    }

    /// The code as the bindings' type (see [`CudaCode::from_bindings`]).
    #[doc(hidden)]
    pub fn to_bindings(self) -> CUresult {
        self.0
    }
}

impl fmt::Debug for CudaCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

codes! {
    CUDA_SUCCESS,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_OUT_OF_MEMORY,
    CUDA_ERROR_NOT_INITIALIZED,
    CUDA_ERROR_DEINITIALIZED,
    CUDA_ERROR_PROFILER_DISABLED,
    CUDA_ERROR_PROFILER_NOT_INITIALIZED,
    CUDA_ERROR_PROFILER_ALREADY_STARTED,
    CUDA_ERROR_PROFILER_ALREADY_STOPPED,
    CUDA_ERROR_STUB_LIBRARY,
    #[cfg(any(feature = "cuda-13000", feature = "cuda-13010"))] // new in 13.0
    CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER,
    CUDA_ERROR_DEVICE_UNAVAILABLE,
    CUDA_ERROR_NO_DEVICE,
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_DEVICE_NOT_LICENSED,
    CUDA_ERROR_INVALID_IMAGE,
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_CONTEXT_ALREADY_CURRENT,
    CUDA_ERROR_MAP_FAILED,
    CUDA_ERROR_UNMAP_FAILED,
    CUDA_ERROR_ARRAY_IS_MAPPED,
    CUDA_ERROR_ALREADY_MAPPED,
    CUDA_ERROR_NO_BINARY_FOR_GPU,
    CUDA_ERROR_ALREADY_ACQUIRED,
    CUDA_ERROR_NOT_MAPPED,
    CUDA_ERROR_NOT_MAPPED_AS_ARRAY,
    CUDA_ERROR_NOT_MAPPED_AS_POINTER,
    CUDA_ERROR_ECC_UNCORRECTABLE,
    CUDA_ERROR_UNSUPPORTED_LIMIT,
    CUDA_ERROR_CONTEXT_ALREADY_IN_USE,
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
    CUDA_ERROR_INVALID_PTX,
    CUDA_ERROR_INVALID_GRAPHICS_CONTEXT,
    CUDA_ERROR_NVLINK_UNCORRECTABLE,
    CUDA_ERROR_JIT_COMPILER_NOT_FOUND,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
    CUDA_ERROR_JIT_COMPILATION_DISABLED,
    CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
    CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC,
    CUDA_ERROR_CONTAINED,
    CUDA_ERROR_INVALID_SOURCE,
    CUDA_ERROR_FILE_NOT_FOUND,
    CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
    CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
    CUDA_ERROR_OPERATING_SYSTEM,
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_ILLEGAL_STATE,
    CUDA_ERROR_LOSSY_QUERY,
    CUDA_ERROR_NOT_FOUND,
    CUDA_ERROR_NOT_READY,
    CUDA_ERROR_ILLEGAL_ADDRESS,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
    CUDA_ERROR_LAUNCH_TIMEOUT,
    CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
    CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE,
    CUDA_ERROR_CONTEXT_IS_DESTROYED,
    CUDA_ERROR_ASSERT,
    CUDA_ERROR_TOO_MANY_PEERS,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
    CUDA_ERROR_HARDWARE_STACK_ERROR,
    CUDA_ERROR_ILLEGAL_INSTRUCTION,
    CUDA_ERROR_MISALIGNED_ADDRESS,
    CUDA_ERROR_INVALID_ADDRESS_SPACE,
    CUDA_ERROR_INVALID_PC,
    CUDA_ERROR_LAUNCH_FAILED,
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
    CUDA_ERROR_TENSOR_MEMORY_LEAK,
    CUDA_ERROR_NOT_PERMITTED,
    CUDA_ERROR_NOT_SUPPORTED,
    CUDA_ERROR_SYSTEM_NOT_READY,
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
    CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
    CUDA_ERROR_MPS_CONNECTION_FAILED,
    CUDA_ERROR_MPS_RPC_FAILURE,
    CUDA_ERROR_MPS_SERVER_NOT_READY,
    CUDA_ERROR_MPS_MAX_CLIENTS_REACHED,
    CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED,
    CUDA_ERROR_MPS_CLIENT_TERMINATED,
    CUDA_ERROR_CDP_NOT_SUPPORTED,
    CUDA_ERROR_CDP_VERSION_MISMATCH,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
    CUDA_ERROR_STREAM_CAPTURE_MERGE,
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
    CUDA_ERROR_CAPTURED_EVENT,
    CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
    CUDA_ERROR_TIMEOUT,
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
    CUDA_ERROR_EXTERNAL_DEVICE,
    CUDA_ERROR_INVALID_CLUSTER_SIZE,
    CUDA_ERROR_FUNCTION_NOT_LOADED,
    CUDA_ERROR_INVALID_RESOURCE_TYPE,
    CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
    CUDA_ERROR_KEY_ROTATION,
    CUDA_ERROR_UNKNOWN,
}

/// The code a C client passed, if the bindings have it.
pub fn from_raw(raw: u32) -> Option<CudaCode> {
    ALL.iter().copied().find(|&c| c.raw() == raw)
}

/// The code named `name`, with or without its `CUDA_ERROR_` prefix: `"OUT_OF_MEMORY"`.
pub fn from_name(name: &str) -> Option<CudaCode> {
    ALL.iter().copied().find(|c| {
        let full = c.name();
        full == name || full.strip_prefix("CUDA_ERROR_") == Some(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_round_trip() {
        assert_eq!(from_name("CUDA_ERROR_OUT_OF_MEMORY"), Some(CudaCode::CUDA_ERROR_OUT_OF_MEMORY));
        assert_eq!(from_name("ILLEGAL_ADDRESS"), Some(CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert_eq!(from_name("NOT_A_CODE"), None);
        assert_eq!(from_raw(2), Some(CudaCode::CUDA_ERROR_OUT_OF_MEMORY));
        assert_eq!(from_raw(0xdead), None);
        assert!(ALL.iter().all(|&c| from_raw(c.raw()) == Some(c)));
        assert_eq!(format!("{:?}", CudaCode::CUDA_ERROR_INVALID_VALUE), "CUDA_ERROR_INVALID_VALUE");
        assert!(CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS.is_sticky() && !CudaCode::CUDA_ERROR_INVALID_VALUE.is_sticky());
    }
}
