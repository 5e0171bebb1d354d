//! Every row of the provenance and sharing-path decision tables (`ipc::provenance`,
//! `ipc::sharing`), with the attribute values measured on the H200s where there are some.

use peerpool::CudaCode;
use peerpool::driver::{HandleKinds, PointerAttribute, Pool};
use peerpool::ipc::{
    HandleKind, NoExport, PointerFacts, Provenance, ProvenanceError, ShareRequest, SharingError, SharingPath,
    choose_path, classify, sharing_path,
};

const POOL: Pool = Pool(0x5555_0000_1000);
const BOTH: HandleKinds = HandleKinds(0x9);

fn facts(mempool: Option<Pool>, legacy_ipc: bool, handle_types: HandleKinds) -> PointerFacts {
    PointerFacts { mempool, legacy_ipc, handle_types, device: 1 }
}

fn request(handle: HandleKind, allow_staging: bool) -> ShareRequest {
    ShareRequest { handle, allow_staging }
}

const FD: ShareRequest = ShareRequest { handle: HandleKind::PosixFd, allow_staging: false };

/// Memory of provenance `from` shares as `handle` only by a staged copy (for `why`): refused
/// without staging, staged with it.
fn assert_staged_only(from: Provenance, handle: HandleKind, why: NoExport) {
    assert_eq!(choose_path(from, request(handle, false)), Err(SharingError::NotExportable { handle, why }));
    assert_eq!(choose_path(from, request(handle, true)), Ok(SharingPath::StagedCopy { handle, why }));
}

// classify: one test per row of the table.

#[test]
fn invalid_value_is_not_device_memory() {
    assert_eq!(classify(Err(CudaCode::CUDA_ERROR_INVALID_VALUE)), Ok(Provenance::NotDeviceMemory));
}

#[test]
fn other_driver_errors_are_passed_on() {
    for code in [CudaCode::CUDA_ERROR_NOT_INITIALIZED, CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS] {
        assert_eq!(classify(Err(code)), Err(ProvenanceError::Driver { code }));
    }
}

#[test]
fn pool_memory_claiming_legacy_ipc_is_inconsistent() {
    for types in [HandleKinds::NONE, HandleKinds::POSIX_FD] {
        let reported = facts(Some(POOL), true, types);
        assert!(
            matches!(classify(Ok(reported)), Err(ProvenanceError::Inconsistent { facts, .. }) if facts == reported)
        );
    }
}

#[test]
fn pool_with_handle_types_is_exportable() {
    // Measured: a pool created with the POSIX-fd handle type reports 0 / 0x1 / the pool.
    let got = classify(Ok(facts(Some(POOL), false, HandleKinds::POSIX_FD)));
    assert_eq!(got, Ok(Provenance::ExportablePool { pool: POOL, device: 1, handle_types: HandleKinds::POSIX_FD }));
}

#[test]
fn pool_without_handle_types_is_private() {
    // Measured: the probe's pool without handle types reports 0 / 0 / the pool.
    let got = classify(Ok(facts(Some(POOL), false, HandleKinds::NONE)));
    assert_eq!(got, Ok(Provenance::PrivatePool { pool: POOL, device: 1 }));
}

#[test]
fn cu_mem_alloc_is_legacy_ipc() {
    // Measured: cuMemAlloc reports legacy 1, handle types 0, no pool.
    assert_eq!(classify(Ok(facts(None, true, HandleKinds::NONE))), Ok(Provenance::LegacyIpc { device: 1 }));
    assert_eq!(classify(Ok(facts(None, true, HandleKinds::POSIX_FD))), Ok(Provenance::LegacyIpc { device: 1 }));
}

#[test]
fn unpooled_non_legacy_memory_is_virtual_memory() {
    // Measured: cuMemCreate with the POSIX-fd type + cuMemMap reports legacy 0, 0x1, no pool.
    for types in [HandleKinds::POSIX_FD, HandleKinds::FABRIC, BOTH, HandleKinds::NONE] {
        let got = classify(Ok(facts(None, false, types)));
        assert_eq!(got, Ok(Provenance::VirtualMemory { device: 1, handle_types: types }));
    }
}

// PointerFacts::read: the driver's widened u64 answers.

#[test]
fn facts_are_read_from_widened_attributes() {
    let answer = |attribute| {
        Ok(match attribute {
            PointerAttribute::MempoolHandle => POOL.0,
            PointerAttribute::IsLegacyCudaIpcCapable => 0,
            PointerAttribute::AllowedHandleTypes => 0x9,
            PointerAttribute::DeviceOrdinal => 1,
            other => panic!("{other:?} is not needed"),
        })
    };
    assert_eq!(
        PointerFacts::read(answer),
        Ok(PointerFacts { mempool: Some(POOL), legacy_ipc: false, handle_types: BOTH, device: 1 })
    );
    let legacy = |attribute| Ok(u64::from(attribute == PointerAttribute::IsLegacyCudaIpcCapable));
    assert_eq!(
        PointerFacts::read(legacy),
        Ok(PointerFacts { mempool: None, legacy_ipc: true, handle_types: HandleKinds::NONE, device: 0 })
    );
}

#[test]
fn the_first_failed_attribute_stops_the_reading() {
    let mut asked = Vec::new();
    let host = |attribute| {
        asked.push(attribute);
        Err(CudaCode::CUDA_ERROR_INVALID_VALUE)
    };
    assert_eq!(PointerFacts::read(host), Err(CudaCode::CUDA_ERROR_INVALID_VALUE));
    assert_eq!(asked, [PointerAttribute::MempoolHandle]);
    assert_eq!(PointerFacts::ATTRIBUTES.len(), 4);
}

// choose_path: one test per row of the table, staging allowed and not.

#[test]
fn not_device_memory_has_no_path_even_with_staging() {
    for req in [FD, request(HandleKind::PosixFd, true), request(HandleKind::Fabric, true)] {
        assert_eq!(choose_path(Provenance::NotDeviceMemory, req), Err(SharingError::NotDeviceMemory));
    }
}

#[test]
fn legacy_memory_for_an_fd_request_uses_a_legacy_handle() {
    let legacy = Provenance::LegacyIpc { device: 0 };
    assert_eq!(choose_path(legacy, FD), Ok(SharingPath::LegacyIpc));
    assert_eq!(choose_path(legacy, request(HandleKind::PosixFd, true)), Ok(SharingPath::LegacyIpc));
}

#[test]
fn legacy_memory_for_a_fabric_request_needs_staging() {
    assert_staged_only(Provenance::LegacyIpc { device: 0 }, HandleKind::Fabric, NoExport::LegacyOnly);
}

#[test]
fn exportable_pool_with_the_wanted_type_is_exported() {
    let pool = Provenance::ExportablePool { pool: POOL, device: 0, handle_types: BOTH };
    for handle in [HandleKind::PosixFd, HandleKind::Fabric] {
        for allow_staging in [false, true] {
            assert_eq!(
                choose_path(pool, request(handle, allow_staging)),
                Ok(SharingPath::PoolExport { pool: POOL, handle })
            );
        }
    }
}

#[test]
fn fabric_only_pool_for_an_fd_request_needs_staging() {
    let pool = Provenance::ExportablePool { pool: POOL, device: 0, handle_types: HandleKinds::FABRIC };
    let why = NoExport::HandleTypeMissing { available: HandleKinds::FABRIC };
    assert_staged_only(pool, HandleKind::PosixFd, why);
    let text = choose_path(pool, FD).unwrap_err().to_string();
    assert_eq!(
        text,
        "cannot share the memory as PosixFd: it is exportable only with handle types 0x8, and staging is not allowed"
    );
}

#[test]
fn private_pool_needs_staging() {
    let pool = Provenance::PrivatePool { pool: POOL, device: 0 };
    for handle in [HandleKind::PosixFd, HandleKind::Fabric] {
        assert_staged_only(pool, handle, NoExport::PrivatePool);
    }
}

#[test]
fn virtual_memory_with_the_wanted_type_is_exported() {
    let vmm = Provenance::VirtualMemory { device: 0, handle_types: HandleKinds::POSIX_FD };
    assert_eq!(choose_path(vmm, FD), Ok(SharingPath::VirtualMemoryExport { handle: HandleKind::PosixFd }));
    let vmm = Provenance::VirtualMemory { device: 0, handle_types: BOTH };
    assert_eq!(
        choose_path(vmm, request(HandleKind::Fabric, true)),
        Ok(SharingPath::VirtualMemoryExport { handle: HandleKind::Fabric })
    );
}

#[test]
fn virtual_memory_with_other_types_only_needs_staging() {
    let vmm = Provenance::VirtualMemory { device: 0, handle_types: HandleKinds::POSIX_FD };
    let why = NoExport::HandleTypeMissing { available: HandleKinds::POSIX_FD };
    assert_staged_only(vmm, HandleKind::Fabric, why);
}

#[test]
fn virtual_memory_without_types_needs_staging() {
    let vmm = Provenance::VirtualMemory { device: 0, handle_types: HandleKinds::NONE };
    let why = NoExport::PrivateVirtualMemory;
    assert_staged_only(vmm, HandleKind::PosixFd, why);
}

// sharing_path: the two steps together, errors included.

#[test]
fn sharing_path_chains_classification_and_choice() {
    assert_eq!(
        sharing_path(Ok(facts(Some(POOL), false, HandleKinds::POSIX_FD)), FD),
        Ok(SharingPath::PoolExport { pool: POOL, handle: HandleKind::PosixFd })
    );
    assert_eq!(sharing_path(Err(CudaCode::CUDA_ERROR_INVALID_VALUE), FD), Err(SharingError::NotDeviceMemory));
    let code = CudaCode::CUDA_ERROR_NOT_INITIALIZED;
    assert_eq!(sharing_path(Err(code), FD), Err(SharingError::Provenance(ProvenanceError::Driver { code })));
    assert!(matches!(
        sharing_path(Ok(facts(Some(POOL), true, HandleKinds::NONE)), FD),
        Err(SharingError::Provenance(ProvenanceError::Inconsistent { .. }))
    ));
}

#[test]
fn share_handles_are_single_bits() {
    assert_eq!(HandleKind::PosixFd.bits(), HandleKinds::POSIX_FD);
    assert_eq!(HandleKind::Fabric.bits(), HandleKinds::FABRIC);
}
