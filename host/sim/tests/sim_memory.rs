//! Simulated memory: real bytes through every copy, unique 256-byte-aligned addresses, capacity
//! and pool limits, frees; and the simulator's thread-safety and determinism.

mod sim_support;

use peerpool::driver::{PeerCopy, PointerAttribute, PoolProps, Stream};
use peerpool::fault::FaultInjector;
use peerpool::{PoolOptions, System};
use peerpool_sim::{DeviceSpec, Link, SimDriver, Topology};
use sim_support::{code, grant, pool_alloc, sim};
use std::collections::BTreeSet;

#[test]
fn simulator_and_injector_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<SimDriver>();
    send_sync::<FaultInjector>();
}

#[test]
fn bytes_survive_every_kind_of_copy() {
    let (sim, system) = sim(Topology::two_h200());
    let d = &sim;
    let a = system.create_pool(0, PoolOptions::default()).unwrap();
    grant(&system, &a, 1).unwrap();
    let on0 = system.alloc(a.as_ref(), 4096).unwrap();
    let also0 = system.alloc(a.as_ref(), 4096).unwrap();
    let b = system.create_pool(1, PoolOptions::default()).unwrap();
    let on1 = system.alloc(b.as_ref(), 4096).unwrap();
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 13 % 251) as u8).collect();
    on0.write(&data).unwrap();
    {
        let _ctx = system.enter(0).unwrap();
        d.memcpy_dtod_async(also0.ptr(), on0.ptr(), 4096, Stream::LEGACY).unwrap();
    }
    {
        let _ctx = system.enter(1).unwrap();
        d.memcpy_dtod_async(on1.ptr(), also0.ptr(), 4096, Stream::LEGACY).unwrap(); // granted: the engine reaches gpu0
        d.memset_d32_async(on1.ptr().offset(1024), 0xDEAD_BEEF, 2, Stream::LEGACY).unwrap();
    }
    let mut back = vec![0u8; 4096];
    on1.read(&mut back).unwrap();
    let mut want = data.clone();
    want[1024..1032].copy_from_slice(&[0xEF, 0xBE, 0xAD, 0xDE, 0xEF, 0xBE, 0xAD, 0xDE]);
    assert_eq!(back, want);
    // Overlapping copies inside one allocation behave as memmove.
    let _ctx = system.enter(0).unwrap();
    d.memcpy_dtod_async(on0.ptr().offset(1), on0.ptr(), 100, Stream::LEGACY).unwrap();
    let mut moved = [0u8; 101];
    d.memcpy_dtoh(&mut moved, on0.ptr()).unwrap();
    assert_eq!(moved[1..], data[..100]);
}

#[test]
fn copies_must_stay_inside_one_allocation() {
    let (sim, system) = sim(Topology::two_h200());
    let d = &sim;
    let (_pool, memory) = pool_alloc(&system, 0, 1000);
    let _ctx = system.enter(0).unwrap();
    let invalid = Some("CUDA_ERROR_INVALID_VALUE");
    assert_eq!(code(d.memcpy_htod(memory.ptr().offset(999), &[0u8; 2])).as_deref(), invalid);
    assert_eq!(code(d.memset_d32_async(memory.ptr().offset(2), 0, 1, Stream::LEGACY)).as_deref(), invalid, "unaligned");
    assert_eq!(code(d.memcpy_htod(peerpool::DevicePtr(0), &[0u8; 2])).as_deref(), invalid);
    let ctx = system.enter(0).unwrap().context();
    let copy = PeerCopy { dst: memory.ptr(), dst_ctx: ctx, src: memory.ptr().offset(900), src_ctx: ctx, bytes: 200 };
    assert_eq!(code(d.memcpy_peer_async(copy, Stream::LEGACY)).as_deref(), invalid);
    d.memcpy_htod(memory.ptr().offset(998), &[1, 2]).unwrap();
    d.memcpy_htod(peerpool::DevicePtr(0), &[]).unwrap();
}

#[test]
fn addresses_are_aligned_and_unique_among_live_allocations() {
    let (sim, system) = sim(Topology::two_h200());
    let d = &sim;
    let _ctx = system.enter(1).unwrap();
    let pool = d.device_get_default_mem_pool(1).unwrap();
    let mut seen = BTreeSet::new();
    for size in [1usize, 255, 256, 257, 4096, 1 << 20] {
        let a = d.mem_alloc_from_pool_async(size, pool, Stream::LEGACY).unwrap();
        let b = d.mem_alloc(size).unwrap();
        for p in [a, b] {
            assert_eq!(p.0 % 256, 0, "{p:?}");
            assert!(seen.insert(p.0), "{p:?} is another live allocation's");
            assert_eq!(d.pointer_get_attribute(p, PointerAttribute::DeviceOrdinal).unwrap(), 1);
            assert_eq!(d.pointer_get_attribute(p, PointerAttribute::RangeSize).unwrap(), size as u64);
            assert_eq!(
                d.pointer_get_attribute(p.offset(size as u64 - 1), PointerAttribute::RangeStartAddr).unwrap(),
                p.0
            );
            assert_eq!(
                code(d.pointer_get_attribute(p.offset(size as u64), PointerAttribute::RangeStartAddr)).as_deref(),
                Some("CUDA_ERROR_INVALID_VALUE")
            );
        }
        d.mem_free_async(a, Stream::LEGACY).unwrap();
        d.mem_free(b).unwrap();
        seen.clear(); // freed: the driver may give their addresses again
    }
    assert_eq!(code(d.mem_alloc(0)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
    let p = d.mem_alloc(512).unwrap();
    assert_eq!(code(d.mem_free(p.offset(256))).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"), "interior pointer");
    d.mem_free(p).unwrap();
}

#[test]
fn device_memory_and_pool_limits_hold() {
    let small = DeviceSpec { total_memory: 1 << 20, ..DeviceSpec::h200() };
    let (sim, system) = sim(Topology::uniform("small", 2, small, Link::NVLINK));
    let d = &sim;
    let _ctx = system.enter(0).unwrap();
    let capped = d.mem_pool_create(&PoolProps { device: 0, max_size: 4096, ..PoolProps::default() }).unwrap();
    let first = d.mem_alloc_from_pool_async(4096, capped, Stream::LEGACY).unwrap();
    let over = d.mem_alloc_from_pool_async(1, capped, Stream::LEGACY);
    assert_eq!(code(over).as_deref(), Some("CUDA_ERROR_OUT_OF_MEMORY"));
    d.mem_free_async(first, Stream::LEGACY).unwrap();
    d.mem_alloc_from_pool_async(4096, capped, Stream::LEGACY).unwrap();
    assert_eq!(code(d.mem_alloc(1 << 20)).as_deref(), Some("CUDA_ERROR_OUT_OF_MEMORY"), "4 KiB already live");
    let rest = d.mem_alloc((1 << 20) - 4096).unwrap();
    assert_eq!(sim.stats().allocated_bytes, 1 << 20);
    d.mem_free(rest).unwrap();
    // Unsupported handle types are refused.
    let fd_only = DeviceSpec { pool_handle_types: peerpool::driver::HandleKinds::POSIX_FD, ..DeviceSpec::h200() };
    let sim2 = SimDriver::new(Topology::uniform("fd only", 1, fd_only, Link::NONE));
    let fabric = PoolProps { device: 0, handle_types: peerpool::driver::HandleKinds::FABRIC, max_size: 0 };
    assert_eq!(code(sim2.mem_pool_create(&fabric)).as_deref(), Some("CUDA_ERROR_NOT_SUPPORTED"));
}

#[test]
fn a_destroyed_current_pool_falls_back_to_the_default() {
    let (sim, system) = sim(Topology::two_h200());
    let d = &sim;
    let pool = system.create_pool(0, PoolOptions::default()).unwrap();
    d.device_set_mem_pool(0, pool.handle()).unwrap();
    let memory = system.alloc(pool.as_ref(), 256).unwrap();
    pool.destroy().unwrap();
    assert_eq!(d.device_get_mem_pool(0).unwrap(), d.device_get_default_mem_pool(0).unwrap());
    // Its live allocation stays usable until freed.
    memory.write(&[7u8; 256]).unwrap();
    drop(memory);
    assert_eq!(sim.stats().allocations, 0);
}

/// The same calls give the same handles, addresses and bytes: the simulator is deterministic.
#[test]
fn two_runs_are_identical() {
    let run = || {
        let sim = std::sync::Arc::new(SimDriver::new(Topology::two_h200()));
        let system = System::with_driver(sim.clone()).unwrap();
        let (pool, memory) = pool_alloc(&system, 1, 4096);
        system.kernels(1).unwrap().fill(memory.words(1024).unwrap(), 3).unwrap();
        (pool.handle(), memory.ptr(), sim.peek(memory.ptr(), 4096).unwrap())
    };
    assert_eq!(run(), run());
}

#[test]
fn more_than_this_machine_can_back_is_out_of_memory_not_an_abort() {
    // A simulated GPU larger than a 64-bit host's address space can hold (256 TiB): an
    // allocation of 128 TiB cannot be placed, and the simulator must say so as the driver
    // would, instead of aborting the process.
    let mut topology = Topology::two_h200();
    topology.devices[0].total_memory = 1 << 48;
    let (_sim, system) = sim(topology);
    let pool = system.create_pool(0, PoolOptions::default()).unwrap();
    let error = system.alloc(pool.as_ref(), 1 << 47).expect_err("128 TiB cannot be placed here");
    assert_eq!(error.cuda().map(|e| e.code.name()).as_deref(), Some("CUDA_ERROR_OUT_OF_MEMORY"), "{error}");
    // What was charged for it is given back: a small allocation still succeeds.
    system.alloc(pool.as_ref(), 4096).expect("the device is not left charged");
}

/// A process that allocates and frees for a long time never runs out: freed addresses are
/// reused (before, 255 cycles of 1 GiB used up a device's address range).
#[test]
fn allocate_and_free_for_ever() {
    let (d, system) = sim(Topology::two_h200());
    let _ctx = system.enter(0).unwrap();
    let first = d.mem_alloc(1 << 30).unwrap();
    d.mem_free(first).unwrap();
    for cycle in 0..1_000 {
        let p = d.mem_alloc(1 << 30).unwrap_or_else(|e| panic!("cycle {cycle}: {e}"));
        assert_eq!(p, first, "a freed range is the next allocation's of its size, as the driver's");
        d.mem_free(p).unwrap();
    }
    // Small ones, past the 262,080 that used up the range before, and stream-ordered ones.
    for cycle in 0..300_000 {
        let p = d.mem_alloc(1 << 20).unwrap_or_else(|e| panic!("cycle {cycle}: {e}"));
        d.mem_free(p).unwrap();
    }
    let pool = system.create_pool(0, PoolOptions::default()).unwrap();
    for cycle in 0..1_000 {
        let a = system.alloc(pool.as_ref(), 1 << 30).unwrap_or_else(|e| panic!("pool cycle {cycle}: {e}"));
        drop(a);
    }
    assert_eq!(d.stats().allocated_bytes, 0, "everything freed");
}

/// A simulated GPU holds far more than the host: its bytes are committed where they are
/// written. 100 GiB on an H200 (a CI runner has a few GiB), its first and last bytes written.
#[test]
fn a_gpu_holds_more_than_the_host() {
    let (d, system) = sim(Topology::two_h200());
    let _ctx = system.enter(0).unwrap();
    let (free, total) = d.mem_get_info().unwrap();
    let huge = 100usize << 30;
    let p = d.mem_alloc(huge).unwrap();
    assert_eq!(d.mem_get_info().unwrap(), (free - huge as u64, total));
    d.memcpy_htod(p, &[7u8; 16]).unwrap();
    d.memcpy_htod(p.offset(huge as u64 - 16), &[9u8; 16]).unwrap();
    let mut back = [0u8; 16];
    d.memcpy_dtoh(&mut back, p.offset(huge as u64 - 16)).unwrap();
    assert_eq!(back, [9u8; 16]);
    d.memcpy_dtoh(&mut back, p.offset(1 << 35)).unwrap();
    assert_eq!(back, [0u8; 16], "never written: zero");
    d.mem_free(p).unwrap();
}

/// A topology's 16 TiB GPU holds 16 TiB (before, a device's range held 255 GiB).
#[test]
fn a_sixteen_tib_gpu_holds_it_all() {
    let mut spec = DeviceSpec::h200();
    spec.total_memory = 16 << 40;
    let (d, system) = sim(Topology::uniform("big", 1, spec, Link::NVLINK));
    let _ctx = system.enter(0).unwrap();
    let held: Vec<_> = (0..15).map(|i| d.mem_alloc(1 << 40).unwrap_or_else(|e| panic!("TiB {i}: {e}"))).collect();
    let (free, total) = d.mem_get_info().unwrap();
    assert_eq!((free, total), ((1 << 40), 16 << 40));
    for p in held {
        d.mem_free(p).unwrap();
    }
}

/// `cuMemGetInfo` counts what a pool keeps in reserve beyond its allocations.
#[test]
fn a_pools_reserve_is_not_free() {
    let (d, system) = sim(Topology::two_h200());
    let pool = system.create_pool(0, PoolOptions::default()).unwrap();
    let _ctx = system.enter(0).unwrap();
    d.mem_pool_set_attribute(pool.handle(), peerpool::driver::PoolAttribute::ReleaseThreshold, u64::MAX).unwrap();
    let (before, _) = d.mem_get_info().unwrap();
    drop(system.alloc(pool.as_ref(), 1 << 30).unwrap());
    d.ctx_synchronize().unwrap();
    let (after, _) = d.mem_get_info().unwrap();
    assert_eq!(before - after, 1 << 30, "the freed GiB stays in the pool's reserve");
    d.mem_pool_trim_to(pool.handle(), 0).unwrap();
    assert_eq!(d.mem_get_info().unwrap().0, before, "trimmed, it is free again");
}

use proptest::strategy::Strategy as _;

#[derive(Clone, Debug)]
enum Churn {
    /// On device `0 or 1`, of `256 << n` bytes, from the device's pool or `cuMemAlloc`.
    Alloc(usize, u32, bool),
    Free(usize),
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Any churn of allocations and frees, reusing freed ranges: live allocations never overlap
    /// and each keeps its own bytes.
    #[test]
    fn churn_never_aliases(steps in proptest::collection::vec(
        proptest::prop_oneof![
            (0usize..2, 0u32..12, proptest::bool::ANY).prop_map(|(d, n, p)| Churn::Alloc(d, n, p)),
            proptest::prelude::any::<usize>().prop_map(Churn::Free),
        ],
        1..120,
    )) {
        let (d, system) = sim(Topology::two_h200());
        let pools = [d.device_get_default_mem_pool(0).unwrap(), d.device_get_default_mem_pool(1).unwrap()];
        let mut live: Vec<(peerpool::DevicePtr, u64, usize, bool, u64)> = Vec::new();
        for (i, step) in steps.into_iter().enumerate() {
            match step {
                Churn::Alloc(device, n, pooled) => {
                    let _ctx = system.enter(device).unwrap();
                    let bytes = 256u64 << n;
                    let p = match pooled {
                        true => d.mem_alloc_from_pool_async(bytes as usize, pools[device], Stream::LEGACY).unwrap(),
                        false => d.mem_alloc(bytes as usize).unwrap(),
                    };
                    for &(q, len, ..) in &live {
                        proptest::prop_assert!(p.0 + bytes <= q.0 || q.0 + len <= p.0, "{:?} overlaps {:?}", p, q);
                    }
                    let mark = (i as u64 + 1) * 0x0101_0101_0101;
                    d.memcpy_htod(p, &mark.to_le_bytes()).unwrap();
                    d.memcpy_htod(p.offset(bytes - 8), &mark.to_le_bytes()).unwrap();
                    live.push((p, bytes, device, pooled, mark));
                }
                Churn::Free(k) if !live.is_empty() => {
                    let (p, _, device, pooled, _) = live.swap_remove(k % live.len());
                    let _ctx = system.enter(device).unwrap();
                    match pooled {
                        true => d.mem_free_async(p, Stream::LEGACY).unwrap(),
                        false => d.mem_free(p).unwrap(),
                    }
                }
                Churn::Free(_) => {}
            }
            for &(p, bytes, device, _, mark) in &live {
                let _ctx = system.enter(device).unwrap();
                let (mut first, mut last) = ([0u8; 8], [0u8; 8]);
                d.memcpy_dtoh(&mut first, p).unwrap();
                d.memcpy_dtoh(&mut last, p.offset(bytes - 8)).unwrap();
                proptest::prop_assert_eq!((u64::from_le_bytes(first), u64::from_le_bytes(last)), (mark, mark));
            }
        }
    }
}
