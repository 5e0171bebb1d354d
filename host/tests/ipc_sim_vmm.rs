//! Virtual-memory allocations on the simulator: the driver semantics (2 MiB granularity,
//! reserve, map, set access, unmap, release), the pointer attributes measured on the H200s, and
//! export and import between two simulated processes with the same kernel proof as for pools.

mod ipc_support;

use ipc_support::{FD, Process, bytes, channel, host_sees, leak_checked_pair, words};
use peerpool::driver::{
    Access, AccessDesc, AllocationProps, DevicePtr, Granularity, HandleKinds, MemHandle, PointerAttribute,
};
use peerpool::ipc::{ImportKind, SharingPath, VirtualAllocation};
use peerpool::kernels::BLOCK;
use peerpool::{CudaCode, Grant};

const MIB2: usize = 2 << 20;
const WORDS: u64 = (MIB2 / 4) as u64;

/// 2 MiB of virtual memory on gpu0, exportable with POSIX fds, filled by `p`'s kernel with `seed`.
fn filled_virtual(p: &Process, seed: u32) -> VirtualAllocation {
    let memory = p.system.alloc_virtual(0, MIB2, HandleKinds::POSIX_FD).unwrap();
    p.system.kernels(0).unwrap().fill(memory.as_slice(), seed).unwrap();
    memory
}

fn rw(device: i32) -> AccessDesc {
    AccessDesc { device, access: Access::ReadWrite }
}

fn code<T: std::fmt::Debug>(r: Result<T, peerpool::CudaError>) -> CudaCode {
    r.unwrap_err().code
}

#[test]
fn attributes_and_granularity_are_the_measured_ones() {
    let p = Process::new();
    let props = AllocationProps { device: 0, handle_types: HandleKinds::POSIX_FD };
    for option in [Granularity::Minimum, Granularity::Recommended] {
        assert_eq!(p.sim.mem_get_allocation_granularity(&props, option).unwrap(), MIB2);
    }
    let memory = p.system.alloc_virtual(1, 4096, HandleKinds::POSIX_FD).unwrap();
    assert_eq!((memory.len(), memory.owner()), (MIB2, 1), "rounded up to the granularity");
    let attribute = |a| p.sim.pointer_get_attribute(memory.ptr(), a).unwrap();
    assert_eq!(attribute(PointerAttribute::IsLegacyCudaIpcCapable), 0);
    assert_eq!(attribute(PointerAttribute::AllowedHandleTypes), 0x1);
    assert_eq!(attribute(PointerAttribute::MempoolHandle), 0);
    assert_eq!(attribute(PointerAttribute::DeviceOrdinal), 1);
    assert_eq!(
        p.system.sharing_path(memory.ptr(), FD).unwrap(),
        SharingPath::VirtualMemoryExport { handle: peerpool::ipc::HandleKind::PosixFd }
    );
    memory.free().unwrap();
    let stats = p.stats();
    assert_eq!((stats.physical_allocations, stats.reservations, stats.allocated_bytes), (0, 0, 0));
}

#[test]
fn a_mapping_is_reachable_only_where_access_was_set() {
    let p = Process::new();
    let d = p.sim.clone();
    let props = AllocationProps { device: 0, handle_types: HandleKinds::NONE };
    for device in [0, 1] {
        p.system.kernels(device).unwrap(); // the modules' scratch memory first
    }
    let baseline = p.stats().allocated_bytes;
    let _current = p.system.enter(0).unwrap();
    let handle = d.mem_create(MIB2, &props).unwrap();
    let base = d.mem_address_reserve(2 * MIB2, 0).unwrap();
    d.mem_map(base, MIB2, 0, handle).unwrap();
    d.mem_release(handle).unwrap();
    assert_eq!(p.stats().physical_allocations, 1, "released but mapped: still there");
    // Not even the owner may touch a fresh mapping.
    let probe = p.fork();
    assert!(probe.system.kernels(0).unwrap().fill(words(base, WORDS), 1).unwrap_err().is_sticky());
    d.mem_set_access(base, MIB2, &[rw(0)]).unwrap();
    p.system.kernels(0).unwrap().fill(words(base, WORDS), 2).unwrap();
    let probe = p.fork();
    assert!(probe.compare(1, base, WORDS, 2).unwrap_err().is_sticky());
    d.mem_set_access(base, MIB2, &[rw(1)]).unwrap();
    assert!(p.compare(1, base, WORDS, 2).unwrap().is_clean());
    d.mem_unmap(base, MIB2).unwrap();
    assert_eq!(p.stats().physical_allocations, 0, "the last mapping took the memory with it");
    d.mem_address_free(base, 2 * MIB2).unwrap();
    assert_eq!((p.stats().reservations, p.stats().allocated_bytes), (0, baseline));
}

#[test]
fn the_virtual_memory_calls_refuse_what_the_driver_refuses() {
    let p = Process::new();
    let d = p.sim.clone();
    let props = AllocationProps { device: 0, handle_types: HandleKinds::POSIX_FD };
    let _current = p.system.enter(0).unwrap();
    let invalid = CudaCode::CUDA_ERROR_INVALID_VALUE;
    assert_eq!(code(d.mem_create(4096, &props)), invalid, "not a granule multiple");
    let bad_device = AllocationProps { device: 7, ..props };
    assert_eq!(code(d.mem_create(MIB2, &bad_device)), invalid);
    assert_eq!(code(d.mem_address_reserve(4096, 0)), invalid);
    let handle = d.mem_create(MIB2, &props).unwrap();
    let base = d.mem_address_reserve(4 * MIB2, 0).unwrap();
    assert_eq!(code(d.mem_map(base, MIB2, 4096, handle)), invalid, "offset must be 0");
    assert_eq!(code(d.mem_map(base.offset(4096), MIB2, 0, handle)), invalid, "misaligned");
    assert_eq!(code(d.mem_map(base, 2 * MIB2, 0, handle)), invalid, "larger than the allocation");
    assert_eq!(code(d.mem_map(DevicePtr(base.0 + (64 << 30)), MIB2, 0, handle)), invalid, "not reserved");
    assert_eq!(code(d.mem_map(base, MIB2, 0, MemHandle(12345))), invalid);
    d.mem_map(base, MIB2, 0, handle).unwrap();
    assert_eq!(code(d.mem_map(base, MIB2, 0, handle)), invalid, "already mapped there");
    assert_eq!(code(d.mem_set_access(base, 2 * MIB2, &[rw(0)])), invalid, "half of it is unmapped");
    let read = AccessDesc { device: 1, access: Access::Read };
    assert_eq!(code(d.mem_set_access(base, MIB2, &[read])), CudaCode::CUDA_ERROR_NOT_SUPPORTED);
    assert_eq!(code(d.mem_set_access(base, MIB2, &[rw(9)])), CudaCode::CUDA_ERROR_INVALID_DEVICE);
    assert_eq!(code(d.mem_address_free(base, 4 * MIB2)), invalid, "still mapped");
    assert_eq!(d.mem_retain_allocation_handle(base.offset(4096)).unwrap(), handle, "any address inside");
    d.mem_release(handle).unwrap();
    assert_eq!(code(d.mem_unmap(base, 2 * MIB2)), invalid, "not all mapped");
    d.mem_unmap(base, MIB2).unwrap();
    assert_eq!(p.stats().physical_allocations, 1, "one reference left");
    d.mem_release(handle).unwrap();
    assert_eq!(code(d.mem_release(handle)), invalid, "released twice");
    assert_eq!(code(d.mem_address_free(base, MIB2)), invalid, "not the reserved size");
    d.mem_address_free(base, 4 * MIB2).unwrap();
    assert_eq!(p.stats().allocated_bytes, 0);
}

#[test]
fn importer_kernels_on_owner_and_peer_read_write_and_add() {
    leak_checked_pair(|exporter, importer| {
        let memory = filled_virtual(&exporter, 31);
        let exported = exporter.system.export(bytes(memory.ptr(), memory.len()), FD).unwrap();
        assert!(matches!(exported.path(), SharingPath::VirtualMemoryExport { .. }));
        let (a, b) = channel();
        exported.send(&a).unwrap();
        let imported = importer.system.import(&b, &[1]).unwrap();
        assert_eq!((imported.kind(), imported.owner()), (ImportKind::VirtualMemory, 0));
        let ptr = imported.ptr().unwrap();
        assert!(importer.compare(0, ptr, WORDS, 31).unwrap().is_clean());
        assert!(importer.compare(1, ptr, WORDS, 31).unwrap().is_clean());
        importer.system.kernels(1).unwrap().fill(words(ptr, WORDS), 32).unwrap();
        assert!(exporter.system.kernels(0).unwrap().compare_pattern(memory.as_slice(), 32).unwrap().is_clean());

        let slots = 64u64;
        imported.write_at(0, &vec![0u8; slots as usize * 4]).unwrap();
        let shape = peerpool::driver::LaunchShape { grid: 4, block: BLOCK };
        for device in [0, 1] {
            importer.system.kernels(device).unwrap().atomic_add_sys(words(ptr, slots), 10, shape).unwrap();
        }
        let mut counters = vec![0u8; slots as usize * 4];
        let _current = exporter.system.enter(0).unwrap();
        exporter.sim.memcpy_dtoh(&mut counters, memory.ptr()).unwrap();
        let expected = 2 * (4 * BLOCK as u64 / slots) * 10;
        assert!(counters.chunks_exact(4).all(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64 == expected));
    });
}

#[test]
fn an_ungranted_importer_faults_on_the_peer_until_it_grants() {
    leak_checked_pair(|exporter, importer| {
        let mut memory = filled_virtual(&exporter, 41);
        // The exporter's peer access stays in the exporter's mapping.
        assert_eq!(memory.grant(1).unwrap(), Grant::Granted { previous: Access::None });
        let (a, b) = channel();
        exporter.system.export(bytes(memory.ptr(), memory.len()), FD).unwrap().send(&a).unwrap();
        let mut imported = importer.system.import(&b, &[]).unwrap();
        let ptr = imported.ptr().unwrap();
        let probe = importer.fork();
        assert!(probe.compare(1, ptr, WORDS, 41).unwrap_err().is_sticky());
        drop(probe);
        assert_eq!(imported.grant(1).unwrap(), Grant::Granted { previous: Access::None });
        assert_eq!(imported.grant(1).unwrap(), Grant::AlreadyGranted);
        assert!(importer.compare(1, ptr, WORDS, 41).unwrap().is_clean());
    });
}

#[test]
fn an_importers_mapping_keeps_the_memory_and_closing_gives_it_back() {
    leak_checked_pair(|exporter, importer| {
        let memory = filled_virtual(&exporter, 51);
        let (a, b) = channel();
        exporter.system.export(bytes(memory.ptr(), memory.len()), FD).unwrap().send(&a).unwrap();
        let mut imported = importer.system.import(&b, &[]).unwrap();
        memory.free().unwrap();
        assert_eq!(exporter.stats().physical_allocations, 0);
        let mut words = vec![0u8; 256];
        imported.read_at(0, &mut words).unwrap();
        let words: Vec<u32> = words.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert!(host_sees(&words, 51), "the importer's mapping still holds the bytes");
        assert_eq!((importer.stats().physical_allocations, importer.stats().reservations), (1, 1));
        imported.close().unwrap();
        assert_eq!((importer.stats().physical_allocations, importer.stats().reservations), (0, 0));
    });
}

#[test]
fn a_range_inside_a_mapping_travels_with_its_offset() {
    leak_checked_pair(|exporter, importer| {
        let memory = exporter.system.alloc_virtual(0, MIB2, HandleKinds::POSIX_FD).unwrap();
        let inner = memory.ptr().offset(4096);
        exporter.system.kernels(0).unwrap().fill(words(inner, 1024), 61).unwrap();
        let (a, b) = channel();
        exporter.system.export(bytes(inner, 4096), FD).unwrap().send(&a).unwrap();
        let imported = importer.system.import(&b, &[]).unwrap();
        assert_eq!(imported.len(), 4096);
        assert!(importer.compare(0, imported.ptr().unwrap(), 1024, 61).unwrap().is_clean());
        assert!(exporter.system.export(bytes(inner, MIB2), FD).is_err(), "past the end of the mapping");
    });
}
