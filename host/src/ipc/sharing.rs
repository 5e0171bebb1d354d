//! Which way a pointer of a given [`Provenance`] can reach another process.
//!
//! # Decision table ([`choose_path`])
//! `wanted` is the request's handle type; "staging" is [`ShareRequest::allow_staging`].
//!
//! | provenance | condition | path, or error when staging is not allowed |
//! | --- | --- | --- |
//! | `NotDeviceMemory` | | [`SharingError::NotDeviceMemory`] (staging or not) |
//! | `LegacyIpc` | wanted POSIX fd | [`SharingPath::LegacyIpc`] (same node, like an fd) |
//! | `LegacyIpc` | wanted fabric | staged, else [`NoExport::LegacyOnly`] |
//! | `ExportablePool` | allows wanted | [`SharingPath::PoolExport`] |
//! | `ExportablePool` | allows others only | staged, else [`NoExport::HandleTypeMissing`] |
//! | `PrivatePool` | | staged, else [`NoExport::PrivatePool`] |
//! | `VirtualMemory` | allows wanted | [`SharingPath::VirtualMemoryExport`] |
//! | `VirtualMemory` | allows others only | staged, else [`NoExport::HandleTypeMissing`] |
//! | `VirtualMemory` | allows none | staged, else [`NoExport::PrivateVirtualMemory`] |
//!
//! "Staged" is [`SharingPath::StagedCopy`]: a copy into memory allocated exportable with the
//! wanted handle type (a pool created with it), which is then shared by pool export.

use super::provenance::{Provenance, ProvenanceError};
/// The handle type the importing process can use (defined with the driver calls that take it).
pub use crate::driver::HandleKind;
use crate::driver::{HandleKinds, Pool};

/// What the caller wants and permits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShareRequest {
    /// The handle type the importer will open.
    pub handle: HandleKind,
    /// Whether a copy into exportable memory is acceptable when the memory itself cannot be
    /// exported (it costs an allocation and a copy, and the importer sees the copy, not the
    /// original: writes do not travel back).
    pub allow_staging: bool,
}

/// How the memory reaches the importer ([`System::export`](crate::System::export) makes the calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SharingPath {
    /// `cuIpcGetMemHandle` → 64 opaque bytes → `cuIpcOpenMemHandle` in the importer.
    LegacyIpc,
    /// `cuMemPoolExportToShareableHandle(pool, handle)` and `cuMemPoolExportPointer` → pool
    /// handle and 64 bytes of export data → `cuMemPoolImportFromShareableHandle` and
    /// `cuMemPoolImportPointer`. Peer access does not travel: the importer grants its own.
    PoolExport {
        /// The pool to export.
        pool: Pool,
        /// With which handle type.
        handle: HandleKind,
    },
    /// `cuMemRetainAllocationHandle` and `cuMemExportToShareableHandle` → handle →
    /// `cuMemImportFromShareableHandle`, `cuMemMap` and `cuMemSetAccess` in the importer.
    VirtualMemoryExport {
        /// With which handle type.
        handle: HandleKind,
    },
    /// A copy into a pool created with `handle`, then [`SharingPath::PoolExport`] of the copy.
    StagedCopy {
        /// The staging pool's handle type.
        handle: HandleKind,
        /// Why the memory itself cannot go.
        why: NoExport,
    },
}

/// Why memory cannot be exported as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum NoExport {
    /// From a pool without handle types (the default pool is one).
    #[error("its pool was created without handle types")]
    PrivatePool,
    /// Virtual memory created without handle types (or other non-exportable device memory).
    #[error("it was created without handle types")]
    PrivateVirtualMemory,
    /// Exportable, but not with the handle type asked for.
    #[error("it is exportable only with handle types {:#x}", available.0)]
    HandleTypeMissing {
        /// What it can be exported with.
        available: HandleKinds,
    },
    /// `cuMemAlloc` memory: legacy IPC handles reach this node only, never a fabric.
    #[error("it has only a legacy IPC handle, which does not cross a fabric")]
    LegacyOnly,
}

/// Why no path applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SharingError {
    /// The address is not device memory; there is nothing to export.
    #[error("not device memory")]
    NotDeviceMemory,
    /// The memory cannot be exported and the caller did not allow a staged copy.
    #[error("cannot share the memory as {handle:?}: {why}, and staging is not allowed")]
    NotExportable {
        /// The handle type asked for.
        handle: HandleKind,
        /// Why.
        why: NoExport,
    },
    /// The pointer could not be classified.
    #[error(transparent)]
    Provenance(#[from] ProvenanceError),
}

/// The sharing path for memory of `provenance` (see the table above).
pub fn choose_path(provenance: Provenance, request: ShareRequest) -> Result<SharingPath, SharingError> {
    let handle = request.handle;
    let blocked = match provenance {
        Provenance::NotDeviceMemory => return Err(SharingError::NotDeviceMemory),
        Provenance::LegacyIpc { .. } if handle == HandleKind::PosixFd => return Ok(SharingPath::LegacyIpc),
        Provenance::LegacyIpc { .. } => NoExport::LegacyOnly,
        Provenance::ExportablePool { pool, handle_types, .. } if handle_types.contains(handle.bits()) => {
            return Ok(SharingPath::PoolExport { pool, handle });
        }
        Provenance::ExportablePool { handle_types, .. } => NoExport::HandleTypeMissing { available: handle_types },
        Provenance::PrivatePool { .. } => NoExport::PrivatePool,
        Provenance::VirtualMemory { handle_types, .. } if handle_types.contains(handle.bits()) => {
            return Ok(SharingPath::VirtualMemoryExport { handle });
        }
        Provenance::VirtualMemory { handle_types: HandleKinds::NONE, .. } => NoExport::PrivateVirtualMemory,
        Provenance::VirtualMemory { handle_types, .. } => NoExport::HandleTypeMissing { available: handle_types },
    };
    if request.allow_staging {
        Ok(SharingPath::StagedCopy { handle, why: blocked })
    } else {
        Err(SharingError::NotExportable { handle, why: blocked })
    }
}

/// [`classify`](super::classify) then [`choose_path`]: from the driver's answer to a path.
pub fn sharing_path(
    answer: Result<super::PointerFacts, crate::driver::codes::CudaCode>,
    request: ShareRequest,
) -> Result<SharingPath, SharingError> {
    choose_path(super::classify(answer)?, request)
}
