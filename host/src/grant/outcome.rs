//! What a grant, revoke or peer-set update returns: success kinds and typed failures.

use crate::driver::Access;
use crate::error::{CudaError, Error};

/// A successful [`System::grant`](crate::System::grant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// The pool now grants the accessor read-write; `previous` is what it had before.
    Granted {
        /// The accessor's access before the grant (`None`, or `Read` where drivers allow it).
        previous: Access,
    },
    /// The accessor already had read-write access; nothing was changed or verified.
    AlreadyGranted,
    /// The accessor is the owner, which always has read-write access; nothing was changed.
    OwnerAccess,
}

/// A successful [`System::revoke`](crate::System::revoke).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revoke {
    /// The accessor's access is now none; `previous` is what it had.
    Revoked {
        /// The access before the revoke.
        previous: Access,
    },
    /// The accessor had no access; nothing was changed.
    AlreadyNone,
}

/// Which way bytes moved in a verification step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the owner's memory to the accessor (the accessor reads).
    OwnerToAccessor,
    /// From the accessor to the owner's memory (the accessor writes).
    AccessorToOwner,
}

/// How bytes moved in a verification step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// `cuMemcpyDtoDAsync` issued from the accessor's context: the copy engine.
    CopyEngine,
    /// peerpool's kernels running on the accessor, touching the owner's memory.
    AccessorKernel,
    /// peerpool's kernels running on the owner, touching the accessor's memory (the reverse
    /// pair; checked when the owner can access the accessor).
    OwnerKernel,
}

/// A verification step that moved wrong bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// Which way the bytes moved.
    pub direction: Direction,
    /// How they moved.
    pub method: Method,
    /// How many bytes were wrong (counted in 4-byte words: a wrong word counts 4).
    pub bytes_wrong: u64,
    /// Byte offset of the first wrong word in the probe buffer.
    pub first_bad_offset: u64,
    /// Bytes the step moved.
    pub bytes_checked: u64,
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let direction = match self.direction {
            Direction::OwnerToAccessor => "owner to accessor",
            Direction::AccessorToOwner => "accessor to owner",
        };
        let method = match self.method {
            Method::CopyEngine => "the copy engine",
            Method::AccessorKernel => "the accessor's kernels",
            Method::OwnerKernel => "the owner's kernels",
        };
        write!(
            f,
            "{} of {} bytes moved {direction} by {method} came back wrong, the first at byte {}",
            self.bytes_wrong, self.bytes_checked, self.first_bad_offset
        )
    }
}

/// Where in an operation a driver call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Reading capability or the pool's current access.
    Query,
    /// The byte-transfer verification (probe pools, copies, kernels).
    Verify,
    /// The `cuMemPoolSetAccess` that applies the change.
    Apply,
}

/// Why a grant, revoke or peer-set update did not happen.
///
/// Argument errors (`InvalidDevice`, `OwnerRevoke`) are raised before any
/// state changes. For the others, the pool's permissions are as they were, except where a
/// `Cuda` error at [`Stage::Apply`] leaves them unknown (read them back to know).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    /// A device ordinal out of range.
    #[error("device {ordinal} does not exist: {count} device(s) visible")]
    InvalidDevice {
        /// The ordinal given.
        ordinal: usize,
        /// Devices visible.
        count: usize,
    },
    /// The owner's own access cannot be revoked (the driver rejects the whole call).
    #[error("the owner gpu{owner} always has read-write access to its pool; it cannot be revoked")]
    OwnerRevoke {
        /// The owner.
        owner: usize,
    },
    /// The accessor cannot reach the owner's memory at all (`cuDeviceCanAccessPeer` is 0).
    #[error("gpu{accessor} cannot access gpu{owner} as a peer (reverse direction capable: {reverse_capable})")]
    Unsupported {
        /// The pool's device.
        owner: usize,
        /// The device that asked.
        accessor: usize,
        /// Whether the owner could access the accessor (the other direction).
        reverse_capable: bool,
    },
    /// The driver refuses read-only access for device pools (`CUDA_ERROR_NOT_SUPPORTED` on the
    /// H200s); nothing was changed.
    #[error("read-only pool access is not supported for gpu{accessor} on gpu{owner}'s pool")]
    ReadOnlyUnsupported {
        /// The pool's device.
        owner: usize,
        /// The device that asked.
        accessor: usize,
    },
    /// Bytes moved between the pair came back wrong; nothing was granted.
    #[error("verification of gpu{owner} <-> gpu{accessor} rejected: {rejection}")]
    Rejected {
        /// The pool's device.
        owner: usize,
        /// The device that asked.
        accessor: usize,
        /// The failing step.
        rejection: Rejection,
    },
    /// A driver call failed; `error` keeps the call, the code and whether it was sticky.
    #[error("{stage:?} failed: {error}")]
    Cuda {
        /// Where it failed.
        stage: Stage,
        /// The driver's error.
        error: CudaError,
    },
    /// Another peerpool error (kept whole rather than folded into a boolean).
    #[error(transparent)]
    Other(Error),
}

impl GrantError {
    /// The failed driver call inside, if there is one.
    pub fn cuda(&self) -> Option<&CudaError> {
        match self {
            GrantError::Cuda { error, .. } => Some(error),
            GrantError::Other(e) => e.cuda(),
            _ => None,
        }
    }

    /// Whether the process's CUDA context is lost.
    pub fn is_sticky(&self) -> bool {
        self.cuda().is_some_and(|e| e.sticky)
    }

    /// Whether this is an argument error, raised before anything was touched.
    pub fn is_invalid_argument(&self) -> bool {
        matches!(self, GrantError::InvalidDevice { .. } | GrantError::OwnerRevoke { .. })
    }

    /// Wraps a library error met at `stage`, keeping driver errors typed.
    pub(crate) fn at(stage: Stage, error: Error) -> GrantError {
        match error {
            Error::Cuda(error) => GrantError::Cuda { stage, error },
            Error::InvalidDevice { ordinal, count } => GrantError::InvalidDevice { ordinal, count },
            other => GrantError::Other(other),
        }
    }
}
