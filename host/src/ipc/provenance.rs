//! Where a device pointer's memory came from, told from the pointer attributes the driver
//! reports: pure logic, so a simulated driver or a test can feed it as well as libcuda.
//!
//! Users cannot be expected to know which allocator made a buffer (the CUDA.jl/UCX report in
//! `shared/seeds/003`), so the sharing path is chosen from what the driver says about it.
//!
//! # Decision table ([`classify`])
//! | driver answer | `MEMPOOL_HANDLE` | `IS_LEGACY_CUDA_IPC_CAPABLE` | `ALLOWED_HANDLE_TYPES` | result |
//! | --- | --- | --- | --- | --- |
//! | `CUDA_ERROR_INVALID_VALUE` | | | | [`Provenance::NotDeviceMemory`] (host memory, null, freed) |
//! | any other error | | | | [`ProvenanceError::Driver`]: the driver cannot say |
//! | facts | pool | 1 | any | [`ProvenanceError::Inconsistent`]: pool memory is never legacy-IPC capable |
//! | facts | pool | 0 | ≠ 0 | [`Provenance::ExportablePool`] (pool created with handle types) |
//! | facts | pool | 0 | 0 | [`Provenance::PrivatePool`] (e.g. the default pool) |
//! | facts | null | 1 | any | [`Provenance::LegacyIpc`] (`cuMemAlloc`; measured: handle types 0) |
//! | facts | null | 0 | any | [`Provenance::VirtualMemory`] (`cuMemCreate` + `cuMemMap`; measured: 0x1 with the POSIX-fd type) |
//!
//! The last row also catches device-addressable memory that no pointer attribute here tells
//! apart from unexportable virtual memory (pinned host memory, managed memory); the sharing
//! path is the same for them: a staged copy.

use crate::driver::codes::CudaCode;
use crate::driver::{HandleKinds, PointerAttribute, Pool};

/// What the driver reports about one device pointer (`cuPointerGetAttribute`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PointerFacts {
    /// `CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE`; `None` for the null handle (not pool memory).
    pub mempool: Option<Pool>,
    /// `CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE`.
    pub legacy_ipc: bool,
    /// `CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES`.
    pub handle_types: HandleKinds,
    /// `CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`.
    pub device: i32,
}

impl PointerFacts {
    /// The attributes peerpool classifies by, in the order they are read.
    pub const ATTRIBUTES: [PointerAttribute; 4] = [
        PointerAttribute::MempoolHandle,
        PointerAttribute::IsLegacyCudaIpcCapable,
        PointerAttribute::AllowedHandleTypes,
        PointerAttribute::DeviceOrdinal,
    ];

    /// The facts from `query`, which answers one attribute as `Driver::pointer_get_attribute`
    /// does (widened to `u64`); the first error stops the reading and is returned.
    pub fn read(mut query: impl FnMut(PointerAttribute) -> Result<u64, CudaCode>) -> Result<PointerFacts, CudaCode> {
        let mempool = query(PointerAttribute::MempoolHandle)?;
        let legacy_ipc = query(PointerAttribute::IsLegacyCudaIpcCapable)?;
        let handle_types = query(PointerAttribute::AllowedHandleTypes)?;
        let device = query(PointerAttribute::DeviceOrdinal)?;
        Ok(PointerFacts {
            mempool: (mempool != 0).then_some(Pool(mempool)),
            legacy_ipc: legacy_ipc != 0,
            // Both are C ints / enums zero-extended to 64 bits; the low 32 bits are the value.
            handle_types: HandleKinds(handle_types as u32),
            device: device as u32 as i32,
        })
    }
}

/// Where a pointer's memory came from, as far as sharing it is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provenance {
    /// `cuMemAlloc` memory: `cuIpcGetMemHandle` works on it.
    LegacyIpc {
        /// Owning device.
        device: i32,
    },
    /// From a pool created with handle types: the pool can be exported, then the pointer.
    ExportablePool {
        /// The pool.
        pool: Pool,
        /// Owning device.
        device: i32,
        /// How the pool can be exported.
        handle_types: HandleKinds,
    },
    /// From a pool without handle types (the default pool, or one created without): no export.
    PrivatePool {
        /// The pool.
        pool: Pool,
        /// Owning device.
        device: i32,
    },
    /// Outside any pool and not legacy-IPC capable: a `cuMemCreate` mapping, exportable with
    /// `handle_types` (none when created without).
    VirtualMemory {
        /// Owning device.
        device: i32,
        /// How the backing allocation can be exported.
        handle_types: HandleKinds,
    },
    /// The driver does not know the address as device memory (`CUDA_ERROR_INVALID_VALUE`).
    NotDeviceMemory,
}

/// Why a pointer could not be classified.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProvenanceError {
    /// The attribute query failed with something other than "not device memory".
    #[error("cuPointerGetAttribute failed: {code:?}")]
    Driver {
        /// What the driver returned.
        code: CudaCode,
    },
    /// Facts no known allocator produces; sharing by guesswork could hand out the wrong memory.
    #[error("inconsistent pointer attributes ({why}): {facts:?}")]
    Inconsistent {
        /// What the driver reported.
        facts: PointerFacts,
        /// Which facts contradict each other.
        why: &'static str,
    },
}

/// The [`Provenance`] for the driver's answer about a pointer (see the table above).
pub fn classify(answer: Result<PointerFacts, CudaCode>) -> Result<Provenance, ProvenanceError> {
    let facts = match answer {
        Ok(facts) => facts,
        Err(CudaCode::CUDA_ERROR_INVALID_VALUE) => return Ok(Provenance::NotDeviceMemory),
        Err(code) => return Err(ProvenanceError::Driver { code }),
    };
    let PointerFacts { mempool, legacy_ipc, handle_types, device } = facts;
    Ok(match (mempool, legacy_ipc) {
        (Some(_), true) => {
            return Err(ProvenanceError::Inconsistent { facts, why: "pool memory reported legacy-IPC capable" });
        }
        (Some(pool), false) if handle_types != HandleKinds::NONE => {
            Provenance::ExportablePool { pool, device, handle_types }
        }
        (Some(pool), false) => Provenance::PrivatePool { pool, device },
        (None, true) => Provenance::LegacyIpc { device },
        (None, false) => Provenance::VirtualMemory { device, handle_types },
    })
}
