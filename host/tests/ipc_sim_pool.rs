//! Pool memory shared between two simulated processes over a real socketpair: pool export,
//! pool import, pointer import; the importer grants its own peer through the grant engine, then
//! its kernels on the owner GPU and on the peer GPU read, write and atomically update the
//! memory, and the exporter sees every write. Access does not travel with the handle.

mod ipc_support;

use ipc_support::{BYTES, FABRIC, FD, WORDS, channel, host_sees, leak_checked_pair, words};
use peerpool::driver::{Access, HandleKind, HandleKinds, PointerAttribute, Stream};
use peerpool::ipc::{ImportKind, ShareError, SharingPath};
use peerpool::kernels::BLOCK;
use peerpool::{CudaCode, Grant, PoolOptions};

#[test]
fn importer_kernels_on_owner_and_peer_read_write_and_add() {
    leak_checked_pair(|exporter, importer| {
        let (pool, memory, exported) = exporter.filled_export(0, 11);
        assert_eq!(exported.path(), SharingPath::PoolExport { pool: pool.handle(), handle: HandleKind::PosixFd });
        assert!(exported.fd().is_some() && exported.staged().is_none());
        let (to_importer, from_exporter) = channel();
        exported.send(&to_importer).unwrap();
        let imported = importer.system.import(&from_exporter, &[1]).unwrap();
        assert_eq!((imported.kind(), imported.owner(), imported.len()), (ImportKind::Pool, 0, BYTES));
        let ptr = imported.ptr().unwrap();

        // Reads on both of the importer's GPUs see the exporter's bytes.
        assert!(importer.compare(0, ptr, WORDS, 11).unwrap().is_clean());
        assert!(importer.compare(1, ptr, WORDS, 11).unwrap().is_clean());
        // The peer GPU's writes reach the exporter, through its own kernel and the host.
        importer.system.kernels(1).unwrap().fill(words(ptr, WORDS), 12).unwrap();
        assert!(
            exporter.system.kernels(0).unwrap().compare_pattern(memory.words(WORDS).unwrap(), 12).unwrap().is_clean()
        );
        assert!(host_sees(&memory.read_words(256).unwrap(), 12));
        // And the owner GPU's writes in the importer too.
        importer.system.kernels(0).unwrap().fill(words(ptr, WORDS), 13).unwrap();
        assert!(host_sees(&memory.read_words(256).unwrap(), 13));

        // System-scope atomics from three places at once: both importer GPUs and the exporter.
        let slots = 64u64;
        memory.write(&vec![0u8; slots as usize * 4]).unwrap();
        let shape = peerpool::driver::LaunchShape { grid: 8, block: BLOCK };
        let reps = 50u32;
        std::thread::scope(|s| {
            let peer =
                s.spawn(|| importer.system.with_kernels(1, |k| k.atomic_add_sys(words(ptr, slots), reps, shape)));
            let there =
                s.spawn(|| exporter.system.with_kernels(0, |k| k.atomic_add_sys(memory.words(slots)?, reps, shape)));
            importer.system.kernels(0).unwrap().atomic_add_sys(words(ptr, slots), reps, shape).unwrap();
            peer.join().unwrap().unwrap();
            there.join().unwrap().unwrap();
        });
        let expected = 3 * (shape.grid as u64 * shape.block as u64 / slots) * reps as u64;
        let counters = memory.read_words(slots as usize).unwrap();
        assert!(counters.iter().all(|&c| c as u64 == expected), "expected {expected}: {counters:?}");
    });
}

#[test]
fn imported_pointer_has_the_importers_pool_and_the_pools_handle_types() {
    leak_checked_pair(|exporter, importer| {
        let (_pool, memory) = exporter.filled_pool(1, 3);
        let imported = exporter.share(&memory, &importer);
        let ptr = imported.ptr().unwrap();
        let attribute = |a| importer.sim.pointer_get_attribute(ptr, a).unwrap();
        let imported_pool = attribute(PointerAttribute::MempoolHandle);
        let defaults = [0, 1].map(|d| importer.system.default_pool(d).unwrap().handle().0);
        assert!(imported_pool != 0 && !defaults.contains(&imported_pool), "a new pool of the importer's own");
        assert_eq!(attribute(PointerAttribute::AllowedHandleTypes), 0x1);
        assert_eq!(attribute(PointerAttribute::IsLegacyCudaIpcCapable), 0);
        assert_eq!(attribute(PointerAttribute::DeviceOrdinal), 1);
        assert_eq!(imported.owner(), 1);
    });
}

#[test]
fn access_does_not_travel_and_an_ungranted_importer_faults_on_the_peer() {
    leak_checked_pair(|exporter, importer| {
        let (pool, memory) = exporter.filled_pool(0, 21);
        // The exporter's own grant stays in the exporter.
        exporter.system.grant(pool.as_ref(), 1).unwrap();
        let mut imported = exporter.share(&memory, &importer);
        let ptr = imported.ptr().unwrap();
        // SAFETY: the imported pool lives until `imported` closes, after this borrow.
        let there = unsafe { importer.system.pool_of(ptr) }.unwrap().unwrap();
        assert_eq!(importer.system.pool_access_table(there).unwrap(), vec![Access::ReadWrite, Access::None]);

        // A copy of the importer dies probing the peer GPU; the importer itself lives on.
        let probe = importer.fork();
        let error = probe.compare(1, ptr, WORDS, 21).unwrap_err();
        assert!(error.is_sticky(), "{error}");
        assert_eq!(probe.sim.sticky_error(), Some(CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS));
        drop(probe);
        assert!(importer.compare(0, ptr, WORDS, 21).unwrap().is_clean());

        // Granting through the grant engine: typed outcomes, then the peer reads.
        assert_eq!(imported.grant(1).unwrap(), Grant::Granted { previous: Access::None });
        assert!(importer.system.evidence(0, 1).is_some(), "the importer verified the pair itself");
        assert_eq!(imported.grant(1).unwrap(), Grant::AlreadyGranted);
        assert_eq!(imported.grant(0).unwrap(), Grant::OwnerAccess);
        assert!(importer.compare(1, ptr, WORDS, 21).unwrap().is_clean());
        // The importer's grant does not reach the exporter's table either.
        exporter.system.revoke(pool.as_ref(), 1).unwrap();
        assert_eq!(importer.system.pool_access(there, 1).unwrap(), Access::ReadWrite);
    });
}

#[test]
fn fabric_pool_offers_travel_without_fds() {
    leak_checked_pair(|exporter, importer| {
        let options = PoolOptions { handle_types: HandleKinds::FABRIC, max_size: 0 };
        let pool = exporter.system.create_pool(0, options).unwrap();
        let memory = exporter.system.alloc(pool.as_ref(), BYTES).unwrap();
        exporter.system.kernels(0).unwrap().fill(memory.words(WORDS).unwrap(), 5).unwrap();
        let exported = exporter.system.export_allocation(&memory, FABRIC).unwrap();
        assert!(exported.fd().is_none() && exported.offer().fabric.is_some());
        let (a, b) = channel();
        exported.send(&a).unwrap();
        let imported = importer.system.import(&b, &[1]).unwrap();
        assert!(importer.compare(1, imported.ptr().unwrap(), WORDS, 5).unwrap().is_clean());
        // A POSIX-fd request for a fabric-only pool has no path without staging.
        let refused = exporter.system.export_allocation(&memory, FD).unwrap_err();
        assert!(matches!(refused, ShareError::NoPath(_)), "{refused:?}");
    });
}

#[test]
fn closed_import_fails_cleanly_and_gives_everything_back() {
    leak_checked_pair(|exporter, importer| {
        let (_pool, memory) = exporter.filled_pool(0, 7);
        importer.system.verify_pair(0, 1).unwrap(); // modules and evidence first: they allocate
        let before = importer.stats();
        let (a, b) = channel();
        exporter.system.export_allocation(&memory, FD).unwrap().send(&a).unwrap();
        let mut imported = importer.system.import(&b, &[1]).unwrap();
        assert_eq!(importer.stats().pools, before.pools + 1);
        imported.close().unwrap();
        assert!(imported.is_closed());
        assert_eq!(imported.ptr(), Err(ShareError::Closed));
        assert_eq!(imported.grant(1), Err(ShareError::Closed));
        assert_eq!(imported.read_at(0, &mut [0u8; 4]), Err(ShareError::Closed));
        imported.close().unwrap();
        let after = importer.stats();
        assert_eq!((after.pools, after.allocations), (before.pools, before.allocations));
        // The exporter's memory is untouched by the importer's close.
        assert!(host_sees(&memory.read_words(64).unwrap(), 7));

        // Dropping without closing gives everything back too.
        exporter.system.export_allocation(&memory, FD).unwrap().send(&a).unwrap();
        drop(importer.system.import(&b, &[]).unwrap());
        assert_eq!(importer.stats().pools, before.pools);
    });
}

#[test]
fn importer_host_copies_and_imported_pools_refuse_new_allocations() {
    leak_checked_pair(|exporter, importer| {
        let (_pool, memory) = exporter.filled_pool(0, 1);
        let imported = exporter.share(&memory, &importer);
        imported.write_at(8, &[0xAB; 8]).unwrap();
        let mut there = [0u8; 16];
        memory.read(&mut there).unwrap();
        assert_eq!(there[8..], [0xAB; 8], "the exporter sees the importer's host write");
        let mut seen = [0u8; 16];
        imported.read_at(0, &mut seen).unwrap();
        assert_eq!(seen[8..], [0xAB; 8]);
        assert!(imported.read_at(BYTES - 4, &mut [0u8; 8]).is_err(), "past the shared range");
        // Documented: imported pools cannot allocate.
        // SAFETY: the imported pool lives until `imported` closes, after this borrow.
        let pool = unsafe { importer.system.pool_of(imported.ptr().unwrap()) }.unwrap().unwrap();
        let _current = importer.system.enter(0).unwrap();
        let refused = importer.sim.mem_alloc_from_pool_async(4096, pool.handle(), Stream::LEGACY);
        assert_eq!(refused.unwrap_err().code, CudaCode::CUDA_ERROR_INVALID_VALUE);
    });
}

#[test]
fn an_allocation_freed_before_the_import_cannot_be_imported() {
    leak_checked_pair(|exporter, importer| {
        let (_pool, memory) = exporter.filled_pool(0, 1);
        let before = importer.stats();
        let (a, b) = channel();
        exporter.system.export_allocation(&memory, FD).unwrap().send(&a).unwrap();
        memory.free().unwrap();
        let refused = importer.system.import(&b, &[]).unwrap_err();
        let error = refused.cuda().copied().unwrap_or_else(|| panic!("not a driver error: {refused:?}"));
        assert_eq!((error.call, error.code), ("cuMemPoolImportPointer", CudaCode::CUDA_ERROR_INVALID_VALUE));
        let after = importer.stats();
        assert_eq!((after.pools, after.allocations), (before.pools, before.allocations), "nothing stays imported");
    });
}
