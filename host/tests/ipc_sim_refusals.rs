//! Bad inputs to export and import between two simulated processes: garbage export data, fds
//! of the wrong kind, a closed socket, a peer with other credentials, malformed offers, and
//! every driver call of an export or import failed in turn. Each gives a typed error, leaves
//! no pool, allocation, mapping or reservation behind, and leaks no file descriptor.

mod ipc_support;

use ipc_support::{BYTES, FD, Process, STAGED, bytes, channel, leak_checked, leak_checked_pair};
use peerpool::driver::{DevicePtr, Driver, HandleKinds};
use peerpool::fault::{FaultInjector, FaultPlan, Rule};
use peerpool::ipc::{Channel, Exported, FdKind, IpcError, Offer, OfferPath, PeerCheck, ShareError};
use peerpool::{CudaCode, Error, System};
use peerpool_sim::{SimDriver, SimStats, Topology};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

/// What must come back after a failed import: everything but context retains and modules.
fn footprint(stats: SimStats) -> (usize, usize, u64, usize, usize) {
    (stats.pools, stats.allocations, stats.allocated_bytes, stats.physical_allocations, stats.reservations)
}

fn send_raw(channel: &Channel, offer: &Offer, fds: &[BorrowedFd<'_>]) {
    channel.send(&offer.encode(), fds).unwrap();
}

fn cuda_of(error: &ShareError) -> (&'static str, CudaCode) {
    let cuda = error.cuda().unwrap_or_else(|| panic!("not a driver error: {error:?}"));
    (cuda.call, cuda.code)
}

/// Sends a pool allocation's offer (with its fd) and a legacy allocation's offer, each altered
/// by `alter` (told which it is: `true` for legacy), to a new importer; `judge` gets each
/// refusal the same way. Afterwards the importer holds nothing more than before, and the genuine
/// pool offer still imports.
fn altered_offers_are_refused(alter: impl Fn(Offer, bool) -> Offer, judge: impl Fn(ShareError, bool)) {
    leak_checked_pair(|exporter, importer| {
        let (_pool, memory) = exporter.filled_pool(0, 1);
        let legacy = exporter.system.alloc_legacy(0, BYTES).unwrap();
        let before = footprint(importer.stats());
        let (a, b) = channel();
        let exported = exporter.system.export_allocation(&memory, FD).unwrap();
        send_raw(&a, &alter(*exported.offer(), false), &[exported.fd().unwrap()]);
        judge(importer.system.import(&b, &[1]).unwrap_err(), false);
        let legacy = exporter.system.export_allocation(&legacy, FD).unwrap();
        send_raw(&a, &alter(*legacy.offer(), true), &[]);
        judge(importer.system.import(&b, &[]).unwrap_err(), true);
        assert_eq!(footprint(importer.stats()), before);
        exported.send(&a).unwrap();
        assert_eq!(importer.system.import(&b, &[1]).unwrap().len(), BYTES, "the genuine offer imports");
    });
}

#[test]
fn garbage_export_data_is_refused_by_the_importing_driver() {
    altered_offers_are_refused(
        |offer, legacy| Offer { data: [if legacy { 0x5A } else { 0xA5 }; 64], ..offer },
        |refused, legacy| {
            let call = if legacy { "cuIpcOpenMemHandle" } else { "cuMemPoolImportPointer" };
            assert_eq!(cuda_of(&refused), (call, CudaCode::CUDA_ERROR_INVALID_VALUE));
        },
    );
}

#[test]
fn fds_of_the_wrong_kind_are_refused_before_the_driver_sees_them() {
    leak_checked_pair(|exporter, importer| {
        let (_pool, _memory, exported) = exporter.filled_export(0, 1);
        let offer = *exported.offer();
        let before = footprint(importer.stats());
        let (a, b) = channel();
        let (pipe, _writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        let file = OwnedFd::from(std::fs::File::open("/proc/self/exe").unwrap());
        let (socket, _other) = Channel::pair().unwrap();
        let epoll = rustix::event::epoll::create(rustix::event::epoll::CreateFlags::CLOEXEC).unwrap();
        for (fd, kind) in [
            (pipe.as_fd(), FdKind::Fifo),
            (file.as_fd(), FdKind::Regular),
            (socket.as_fd(), FdKind::Socket),
            (epoll.as_fd(), FdKind::Anonymous),
        ] {
            send_raw(&a, &offer, &[fd]);
            let refused = importer.system.import(&b, &[]).unwrap_err();
            assert!(
                matches!(refused, ShareError::Channel(IpcError::WrongFdKind { found, .. }) if found == kind),
                "{refused:?}"
            );
        }
        // An eventfd that is no export handle reaches the driver, which refuses it.
        let stranger = rustix::event::eventfd(7, rustix::event::EventfdFlags::CLOEXEC).unwrap();
        send_raw(&a, &offer, &[stranger.as_fd()]);
        let refused = importer.system.import(&b, &[]).unwrap_err();
        assert_eq!(cuda_of(&refused), ("cuMemPoolImportFromShareableHandle", CudaCode::CUDA_ERROR_INVALID_VALUE));
        assert_eq!(footprint(importer.stats()), before);
    });
}

#[test]
fn a_closed_socket_and_a_stranger_are_typed_errors() {
    leak_checked_pair(|exporter, importer| {
        let (_pool, _memory, exported) = exporter.filled_export(0, 1);
        let (a, b) = channel();
        drop(a);
        assert_eq!(importer.system.import(&b, &[]).unwrap_err(), ShareError::Channel(IpcError::PeerClosed));
        assert_eq!(exported.send(&b).unwrap_err(), ShareError::Channel(IpcError::PeerClosed));

        // Only the expected process may send: a message from anyone else is dropped, fds closed.
        let stranger = if std::process::id() == 1 { 2 } else { 1 };
        let (a, b) = channel();
        exported.send(&a).unwrap();
        let picky = b.with_peer(PeerCheck::pid(stranger));
        let refused = importer.system.import(&picky, &[]).unwrap_err();
        assert!(matches!(refused, ShareError::Channel(IpcError::CredentialMismatch { .. })), "{refused:?}");
        // And the exporter refuses to send to a peer it does not trust.
        let refused = exported.send(&a.with_peer(PeerCheck::pid(stranger))).unwrap_err();
        assert!(matches!(refused, ShareError::Channel(IpcError::CredentialMismatch { .. })), "{refused:?}");
    });
}

#[test]
fn malformed_offers_and_bad_arguments_touch_nothing() {
    leak_checked_pair(|exporter, importer| {
        let (_pool, memory, exported) = exporter.filled_export(0, 1);
        let offer = *exported.offer();
        let fd = exported.fd().unwrap();
        let before = footprint(importer.stats());
        let (a, b) = channel();
        a.send(b"not an offer at all", &[]).unwrap();
        assert!(matches!(importer.system.import(&b, &[]), Err(ShareError::Malformed(_))));
        send_raw(&a, &offer, &[]);
        assert!(matches!(importer.system.import(&b, &[]), Err(ShareError::Malformed(_))), "the fd is missing");
        send_raw(&a, &offer, &[fd, fd]);
        assert!(matches!(importer.system.import(&b, &[]), Err(ShareError::Malformed(_))), "one fd too many");
        send_raw(&a, &Offer { path: OfferPath::VirtualMemory, ..offer }, &[fd]);
        let refused = importer.system.import(&b, &[]).unwrap_err();
        assert_eq!(cuda_of(&refused).0, "cuMemImportFromShareableHandle", "a pool handle is no allocation handle");
        send_raw(&a, &Offer { uuid: [0xEE; 16], ..offer }, &[fd]);
        let refused = importer.system.import(&b, &[]).unwrap_err();
        let uuid = "GPU-eeeeeeee-eeee-eeee-eeee-eeeeeeeeeeee".to_string();
        assert_eq!(
            refused,
            ShareError::DeviceNotVisible { exporter_ordinal: 0, uuid },
            "a GPU this process does not see"
        );
        // The exporter's ordinal is only for messages: the UUID names the device.
        send_raw(&a, &Offer { device: 7, ..offer }, &[fd]);
        importer.system.import(&b, &[]).expect("imported on the device with the UUID").close().unwrap();
        exported.send(&a).unwrap();
        let refused = importer.system.import(&b, &[5]).unwrap_err();
        assert!(matches!(refused, ShareError::Api(Error::InvalidDevice { ordinal: 5, .. })), "{refused:?}");
        assert_eq!(footprint(importer.stats()), before);

        let s = &exporter.system;
        assert!(matches!(s.export(bytes(memory.ptr(), 0), FD), Err(ShareError::Api(Error::InvalidArgument(_)))));
        assert!(matches!(
            s.export(bytes(memory.ptr(), BYTES + 1), FD),
            Err(ShareError::Api(Error::InvalidArgument(_)))
        ));
        let inner = s.export(bytes(memory.ptr().offset(256), 256), FD).unwrap_err();
        assert_eq!(cuda_of(&inner).0, "cuMemPoolExportPointer", "pool memory goes from its allocation's start");
        assert!(matches!(s.export(bytes(DevicePtr(0x1000), 16), FD), Err(ShareError::NoPath(_))));
    });
}

/// An offer claiming more bytes than the exporter's allocation holds (1 MiB over 256 KiB) is
/// refused after the import, by the imported pointer's own range, and nothing stays imported.
#[test]
fn a_forged_length_is_refused_by_the_imported_range() {
    let forged = 1u64 << 20;
    altered_offers_are_refused(
        |offer, _| Offer { len: forged, span: forged, ..offer },
        |refused, _| {
            assert_eq!(refused, ShareError::BeyondAllocation { claimed: forged, available: BYTES as u64 });
            assert!(refused.to_string().contains("claims 1048576 bytes"), "{refused}");
        },
    );
}

/// `(call, n)` for every call in `calls`: the nth call of that name.
fn sites(calls: &[&'static str]) -> Vec<(&'static str, u64)> {
    let nth = |i: usize| calls[..=i].iter().filter(|&&c| c == calls[i]).count() as u64;
    (0..calls.len()).map(|i| (calls[i], nth(i))).collect()
}

/// An importer whose driver calls can be failed, with its pair already verified (so that
/// modules and evidence are not part of what must be given back).
fn injected_importer() -> (Arc<SimDriver>, Arc<FaultInjector>, System) {
    let sim = Arc::new(SimDriver::new(Topology::two_h200()));
    let injector = Arc::new(FaultInjector::new(sim.clone()));
    let system = System::with_driver(injector.clone()).unwrap();
    system.set_scratch_bytes(4096).expect("a valid probe size");
    system.verify_pair(0, 1).unwrap();
    (sim, injector, system)
}

fn sweep_import(exported: &Exported, peers: &[usize]) {
    let (sim, injector, importer) = injected_importer();
    let (a, b) = channel();
    let before = footprint(sim.stats());
    injector.reset();
    exported.send(&a).unwrap();
    let imported = importer.import(&b, peers).unwrap();
    let calls = injector.calls(); // the import's calls, not the drop's
    drop(imported);
    assert!(calls.len() >= 4, "an import makes several calls: {calls:?}");
    assert_eq!(footprint(sim.stats()), before, "a clean import and drop give everything back");
    for (call, nth) in sites(&calls) {
        injector.arm(FaultPlan::new().with(Rule::nth(call, nth, CudaCode::CUDA_ERROR_INVALID_VALUE)));
        exported.send(&a).unwrap();
        match importer.import(&b, peers) {
            Err(error) => assert_eq!(cuda_of(&error), (call, CudaCode::CUDA_ERROR_INVALID_VALUE), "{call} #{nth}"),
            // Unseen: restoring the caller's context (a guard's drop cannot report), and a
            // release that succeeded when tried again.
            Ok(imported) => {
                assert!(call == "cuCtxSetCurrent" || call == "cuMemRelease", "{call} #{nth} failed unseen");
                drop(imported);
            }
        }
        assert_eq!(footprint(sim.stats()), before, "{call} #{nth} left something behind");
    }
}

#[test]
fn every_import_call_failed_in_turn_leaves_nothing_behind() {
    leak_checked(|| {
        let exporter = Process::new();
        let (_pool, memory) = exporter.filled_pool(0, 1);
        let virtual_memory = exporter.system.alloc_virtual(0, BYTES, HandleKinds::POSIX_FD).unwrap();
        let legacy = exporter.system.alloc_legacy(0, BYTES).unwrap();
        let default = exporter.system.alloc(exporter.system.default_pool(0).unwrap(), BYTES).unwrap();
        sweep_import(&exporter.system.export_allocation(&memory, FD).unwrap(), &[1]);
        sweep_import(&exporter.system.export(bytes(virtual_memory.ptr(), BYTES), FD).unwrap(), &[1]);
        sweep_import(&exporter.system.export_allocation(&legacy, FD).unwrap(), &[]);
        sweep_import(&exporter.system.export_allocation(&default, STAGED).unwrap(), &[1]);
    });
}

#[test]
fn every_export_call_failed_in_turn_leaves_nothing_behind() {
    leak_checked(|| {
        let sim = Arc::new(SimDriver::new(Topology::two_h200()));
        let injector = Arc::new(FaultInjector::new(sim.clone()));
        let exporter = System::with_driver(injector.clone()).unwrap();
        let pool = exporter.create_pool(0, peerpool::PoolOptions { handle_types: HandleKinds::POSIX_FD, max_size: 0 });
        let pool = pool.unwrap();
        let memory = exporter.alloc(pool.as_ref(), BYTES).unwrap();
        let virtual_memory = exporter.alloc_virtual(0, BYTES, HandleKinds::POSIX_FD).unwrap();
        let legacy = exporter.alloc_legacy(0, BYTES).unwrap();
        let default = exporter.alloc(exporter.default_pool(0).unwrap(), BYTES).unwrap();
        for (ptr, request) in
            [(memory.ptr(), FD), (virtual_memory.ptr(), FD), (legacy.ptr(), FD), (default.ptr(), STAGED)]
        {
            let before = footprint(sim.stats());
            injector.reset();
            let exported = exporter.export(bytes(ptr, BYTES), request).unwrap();
            let calls = injector.calls();
            drop(exported);
            for (call, nth) in sites(&calls) {
                injector.arm(FaultPlan::new().with(Rule::nth(call, nth, CudaCode::CUDA_ERROR_INVALID_VALUE)));
                match exporter.export(bytes(ptr, BYTES), request) {
                    Err(ShareError::NoPath(_)) => assert_eq!(call, "cuPointerGetAttribute"),
                    Err(error) => assert_eq!(cuda_of(&error).0, call, "{call} #{nth}"),
                    Ok(exported) => {
                        assert!(call == "cuCtxSetCurrent" || call == "cuMemRelease", "{call} #{nth} unseen");
                        drop(exported);
                    }
                }
                assert_eq!(footprint(sim.stats()), before, "{call} #{nth} left something behind");
            }
        }
        let _: &dyn Driver = injector.as_ref();
    });
}
