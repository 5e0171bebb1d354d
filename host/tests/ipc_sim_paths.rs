//! One export call for every kind of memory: the provenance check picks pool export, virtual-
//! memory export, legacy IPC or a staged copy (or says why none applies), and each path works
//! end to end between two simulated processes. Legacy `cuIpcGetMemHandle` refuses pool memory
//! with `CUDA_ERROR_INVALID_VALUE` (the seed's bug) and works on `cuMemAlloc` memory.

mod ipc_support;

use ipc_support::{BYTES, FABRIC, FD, Process, STAGED, WORDS, bytes, channel, host_sees, leak_checked_pair, words};
use peerpool::driver::{DevicePtr, HandleKind, HandleKinds};
use peerpool::ipc::{ImportKind, NoExport, ShareError, ShareRequest, SharingError, SharingPath};
use peerpool::{CudaCode, Grant, PoolOptions};

fn no_path(why: NoExport, handle: HandleKind) -> Result<SharingPath, ShareError> {
    Err(ShareError::NoPath(SharingError::NotExportable { handle, why }))
}

#[test]
fn provenance_picks_the_path_for_each_kind_of_memory() {
    let p = Process::new();
    let s = &p.system;
    let (exportable, pool_memory) = p.filled_pool(0, 1);
    let path = |ptr: DevicePtr, request: ShareRequest| s.sharing_path(ptr, request);
    let pool = exportable.handle();
    assert_eq!(path(pool_memory.ptr(), FD), Ok(SharingPath::PoolExport { pool, handle: HandleKind::PosixFd }));
    let missing = NoExport::HandleTypeMissing { available: HandleKinds::POSIX_FD };
    assert_eq!(path(pool_memory.ptr(), FABRIC), no_path(missing, HandleKind::Fabric));

    let default = s.alloc(s.default_pool(1).unwrap(), 4096).unwrap();
    assert_eq!(path(default.ptr(), FD), no_path(NoExport::PrivatePool, HandleKind::PosixFd));
    let staged = SharingPath::StagedCopy { handle: HandleKind::PosixFd, why: NoExport::PrivatePool };
    assert_eq!(path(default.ptr(), STAGED), Ok(staged));
    let private = s.create_pool(0, PoolOptions::default()).unwrap();
    let private_memory = s.alloc(private.as_ref(), 4096).unwrap();
    assert_eq!(path(private_memory.ptr(), FD), no_path(NoExport::PrivatePool, HandleKind::PosixFd));

    let legacy = s.alloc_legacy(0, 4096).unwrap();
    assert_eq!(path(legacy.ptr(), FD), Ok(SharingPath::LegacyIpc));
    assert_eq!(path(legacy.ptr(), FABRIC), no_path(NoExport::LegacyOnly, HandleKind::Fabric));

    let exportable_vm = s.alloc_virtual(0, 4096, HandleKinds::POSIX_FD).unwrap();
    let vm = SharingPath::VirtualMemoryExport { handle: HandleKind::PosixFd };
    assert_eq!(path(exportable_vm.ptr(), FD), Ok(vm));
    let private_vm = s.alloc_virtual(0, 4096, HandleKinds::NONE).unwrap();
    assert_eq!(path(private_vm.ptr(), FD), no_path(NoExport::PrivateVirtualMemory, HandleKind::PosixFd));

    assert_eq!(path(DevicePtr(0x1000), STAGED), Err(ShareError::NoPath(SharingError::NotDeviceMemory)));
    assert!(matches!(s.export(bytes(DevicePtr(0x1000), 16), STAGED), Err(ShareError::NoPath(_))));
}

#[test]
fn legacy_ipc_refuses_pool_memory_and_opens_cu_mem_alloc_memory() {
    leak_checked_pair(|exporter, importer| {
        let (_pool, pool_memory) = exporter.filled_pool(0, 1);
        let default = exporter.system.alloc(exporter.system.default_pool(0).unwrap(), 4096).unwrap();
        let legacy = exporter.system.alloc_legacy(0, BYTES).unwrap();
        let driver = &exporter.sim;
        {
            let _current = exporter.system.enter(0).unwrap();
            for ptr in [pool_memory.ptr(), default.ptr()] {
                let error = driver.ipc_get_mem_handle(ptr).unwrap_err();
                assert_eq!((error.call, error.code), ("cuIpcGetMemHandle", CudaCode::CUDA_ERROR_INVALID_VALUE));
            }
            driver.ipc_get_mem_handle(legacy.ptr()).unwrap();
        }
        // Through the API, the legacy path is chosen by itself.
        exporter.system.kernels(0).unwrap().fill(legacy.words(WORDS).unwrap(), 71).unwrap();
        let exported = exporter.system.export_allocation(&legacy, FD).unwrap();
        assert_eq!(exported.path(), SharingPath::LegacyIpc);
        assert!(exported.fd().is_none());
        let (a, b) = channel();
        exported.send(&a).unwrap();
        let mut imported = importer.system.import(&b, &[]).unwrap();
        assert_eq!((imported.kind(), imported.owner()), (ImportKind::Legacy, 0));
        let ptr = imported.ptr().unwrap();
        assert!(importer.compare(0, ptr, WORDS, 71).unwrap().is_clean());
        importer.system.kernels(0).unwrap().fill(words(ptr, WORDS), 72).unwrap();
        assert!(host_sees(&legacy.read_words(128).unwrap(), 72), "the exporter sees the importer's writes");
        assert_eq!(imported.grant(0), Ok(Grant::OwnerAccess));
        assert_eq!(imported.grant(1), Err(ShareError::LegacyNotGrantable { owner: 0, accessor: 1 }));
        imported.close().unwrap();
        assert_eq!(imported.ptr(), Err(ShareError::Closed));
    });
}

#[test]
fn legacy_memory_cannot_be_granted_to_a_peer_at_import() {
    leak_checked_pair(|exporter, importer| {
        let legacy = exporter.system.alloc_legacy(0, BYTES).unwrap();
        let before = importer.stats();
        let (a, b) = channel();
        exporter.system.export_allocation(&legacy, FD).unwrap().send(&a).unwrap();
        let refused = importer.system.import(&b, &[1]).unwrap_err();
        assert_eq!(refused, ShareError::LegacyNotGrantable { owner: 0, accessor: 1 });
        assert_eq!(importer.stats().allocations, before.allocations, "the handle was closed again");
    });
}

#[test]
fn an_interior_legacy_range_travels_with_its_offset() {
    leak_checked_pair(|exporter, importer| {
        let legacy = exporter.system.alloc_legacy(1, BYTES).unwrap();
        let inner = legacy.ptr().offset(1024);
        exporter.system.kernels(1).unwrap().fill(words(inner, 256), 81).unwrap();
        let (a, b) = channel();
        exporter.system.export(bytes(inner, 1024), FD).unwrap().send(&a).unwrap();
        let imported = importer.system.import(&b, &[]).unwrap();
        assert_eq!((imported.owner(), imported.len()), (1, 1024));
        assert!(importer.compare(1, imported.ptr().unwrap(), 256, 81).unwrap().is_clean());
    });
}

#[test]
fn a_staged_copy_is_shared_when_the_memory_itself_cannot_be() {
    leak_checked_pair(|exporter, importer| {
        let default = exporter.system.alloc(exporter.system.default_pool(0).unwrap(), BYTES).unwrap();
        exporter.system.kernels(0).unwrap().fill(default.words(WORDS).unwrap(), 91).unwrap();
        let pools = exporter.stats().pools;
        let exported = exporter.system.export_allocation(&default, STAGED).unwrap();
        assert!(matches!(exported.path(), SharingPath::StagedCopy { why: NoExport::PrivatePool, .. }));
        assert_eq!(exporter.stats().pools, pools + 1, "a staging pool");
        let copy = exported.staged().expect("a staged copy");
        let (a, b) = channel();
        exported.send(&a).unwrap();
        let imported = importer.system.import(&b, &[1]).unwrap();
        assert!(imported.is_staged_copy());
        let ptr = imported.ptr().unwrap();
        assert!(importer.compare(1, ptr, WORDS, 91).unwrap().is_clean());
        // The importer writes the copy, not the original.
        importer.system.kernels(1).unwrap().fill(words(ptr, WORDS), 92).unwrap();
        assert!(host_sees(&copy.read_words(64).unwrap(), 92));
        assert!(host_sees(&default.read_words(64).unwrap(), 91));
        drop(imported);
        drop(exported);
        assert_eq!(exporter.stats().pools, pools, "the staging pool goes with the export");
    });
}

#[test]
fn legacy_and_private_virtual_memory_are_staged_for_fabric_and_fd() {
    leak_checked_pair(|exporter, importer| {
        let legacy = exporter.system.alloc_legacy(0, BYTES).unwrap();
        exporter.system.kernels(0).unwrap().fill(legacy.words(WORDS).unwrap(), 93).unwrap();
        let fabric = ShareRequest { handle: HandleKind::Fabric, allow_staging: true };
        let exported = exporter.system.export_allocation(&legacy, fabric).unwrap();
        assert!(matches!(exported.path(), SharingPath::StagedCopy { why: NoExport::LegacyOnly, .. }));
        assert!(exported.fd().is_none() && exported.offer().fabric.is_some());
        let (a, b) = channel();
        exported.send(&a).unwrap();
        let imported = importer.system.import(&b, &[]).unwrap();
        assert!(importer.compare(0, imported.ptr().unwrap(), WORDS, 93).unwrap().is_clean());

        let private = exporter.system.alloc_virtual(1, BYTES, HandleKinds::NONE).unwrap();
        exporter.system.kernels(1).unwrap().fill(private.as_slice(), 94).unwrap();
        let exported = exporter.system.export(bytes(private.ptr(), BYTES), STAGED).unwrap();
        assert!(matches!(exported.path(), SharingPath::StagedCopy { why: NoExport::PrivateVirtualMemory, .. }));
        exported.send(&a).unwrap();
        let imported = importer.system.import(&b, &[0]).unwrap();
        assert_eq!(imported.owner(), 1);
        assert!(importer.compare(0, imported.ptr().unwrap(), WORDS, 94).unwrap().is_clean());
    });
}
