//! [`ShareError`]: why an export, an import or a use of imported memory failed.

use super::error::IpcError;
use super::sharing::SharingError;
use crate::error::{CudaError, Error};
use crate::grant::GrantError;

/// Everything [`System::export`](crate::System::export), [`System::import`](crate::System::import)
/// and [`Imported`](super::Imported) can refuse. A failed export or import leaves nothing
/// behind: no pool, mapping, handle or file descriptor.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShareError {
    /// The channel failed or refused the peer (credentials, truncation, a wrong fd kind).
    #[error(transparent)]
    Channel(#[from] IpcError),
    /// The memory cannot be shared as asked (and staging was not allowed).
    #[error(transparent)]
    NoPath(#[from] SharingError),
    /// The message is not an offer this version of peerpool makes.
    #[error("malformed offer: {0}")]
    Malformed(&'static str),
    /// A driver call (named inside) or an argument check failed.
    #[error(transparent)]
    Api(#[from] Error),
    /// Granting a device of the importing process failed.
    #[error(transparent)]
    Grant(#[from] GrantError),
    /// Legacy IPC memory reaches other devices only through legacy peer access, which
    /// peerpool never enables: only its owner may use it.
    #[error("legacy IPC memory of gpu{owner} cannot be granted to gpu{accessor}")]
    LegacyNotGrantable {
        /// The memory's device.
        owner: usize,
        /// The device asked for.
        accessor: usize,
    },
    /// The offer claims more bytes than the imported allocation holds, as the driver reports
    /// it (`CU_POINTER_ATTRIBUTE_RANGE_START_ADDR` and `RANGE_SIZE` of the imported pointer): a
    /// forged or mistaken offer. Nothing stays imported.
    #[error("the offer claims {claimed} bytes, but the imported allocation holds {available} from the shared address")]
    BeyondAllocation {
        /// Bytes the offer claims.
        claimed: u64,
        /// Bytes from the shared address to the end of the imported allocation.
        available: u64,
    },
    /// The offer's device is not one this process sees (its `CUDA_VISIBLE_DEVICES` leaves it
    /// out): nothing was imported.
    #[error("the exporter's gpu{exporter_ordinal} ({uuid}) is not a device this process sees")]
    DeviceNotVisible {
        /// Its ordinal in the exporter.
        exporter_ordinal: u32,
        /// Its UUID, as `nvidia-smi -L` and `CUDA_VISIBLE_DEVICES` write it.
        uuid: String,
    },
    /// The import was closed; its address is no longer valid here.
    #[error("the imported memory was closed")]
    Closed,
}

impl From<CudaError> for ShareError {
    fn from(error: CudaError) -> ShareError {
        ShareError::Api(Error::Cuda(error))
    }
}

impl ShareError {
    /// The failed driver call inside, if there is one.
    pub fn cuda(&self) -> Option<&CudaError> {
        match self {
            ShareError::Api(e) => e.cuda(),
            ShareError::Grant(e) => e.cuda(),
            _ => None,
        }
    }

    /// Whether this process's CUDA context is lost.
    pub fn is_sticky(&self) -> bool {
        self.cuda().is_some_and(|e| e.sticky)
    }
}
