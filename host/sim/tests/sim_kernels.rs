//! peerpool's kernels on the simulator, through the public API: a granted peer reads, writes and
//! atomically updates the owner's pool memory with the exact results; an ungranted peer's kernel
//! kills the simulated process with a sticky `CUDA_ERROR_ILLEGAL_ADDRESS`, after which every call
//! that works in a context fails, even unrelated ones (`docs/hardware/2026-11-30-foundation`,
//! and `docs/hardware/recorded/one-h200/kernels.txt` for the calls that still answer).

mod sim_support;

use peerpool::driver::{Access, AccessDesc, KernelArg, LaunchShape, ModuleImage, Stream};
use peerpool::kernels::BLOCK;
use peerpool::kernels::pattern::pattern;
use peerpool::{Allocation, OwnedPool, PoolOptions, System, ptx_image};
use peerpool_sim::{SimDriver, Topology};
use sim_support::{api_code, code, compare_pattern, fill_pattern, grant, is_dead_call, pool_alloc, sim};
use std::ffi::CString;
use std::sync::Arc;

const WORDS: u64 = 1 << 16;
const BYTES: usize = (WORDS * 4) as usize;

/// A simulated 2 x H200 with a pool on gpu0, granted read-write to gpu1 where `granted`, and
/// `BYTES` allocated from it.
fn pool_memory(granted: bool) -> (Arc<SimDriver>, System, OwnedPool, Allocation) {
    let (sim, system) = sim(Topology::two_h200());
    let pool = system.create_pool(0, PoolOptions::default()).unwrap();
    if granted {
        grant(&system, &pool, 1).unwrap();
    }
    let memory = system.alloc(pool.as_ref(), BYTES).unwrap();
    (sim, system, pool, memory)
}

#[test]
fn granted_peer_writes_are_seen_by_owner_and_host() {
    let (_, system, _pool, memory) = pool_memory(true);
    fill_pattern(&system, 1, &memory, WORDS, 11).unwrap();
    assert!(compare_pattern(&system, 0, &memory, WORDS, 11).unwrap().is_clean());
    let words = memory.read_words(64).unwrap();
    assert!(words.iter().enumerate().all(|(i, &w)| w == pattern(i as u64, 11)), "{words:x?}");
}

#[test]
fn granted_peer_reads_find_a_planted_word() {
    let (_, system, _pool, memory) = pool_memory(true);
    fill_pattern(&system, 0, &memory, WORDS, 22).unwrap();
    assert!(compare_pattern(&system, 1, &memory, WORDS, 22).unwrap().is_clean());
    for bad in [WORDS - 3, 5] {
        memory.write_at(bad as usize * 4, &(!pattern(bad, 22)).to_le_bytes()).unwrap();
    }
    let seen = compare_pattern(&system, 1, &memory, WORDS, 22).unwrap();
    assert_eq!((seen.mismatches, seen.first_mismatch), (2, Some(5)));
    // A different seed mismatches everywhere (the pattern depends on it).
    let other = compare_pattern(&system, 1, &memory, WORDS, 23).unwrap();
    assert_eq!((other.mismatches, other.first_mismatch), (WORDS, Some(0)));
}

#[test]
fn granted_vector_copies_both_ways() {
    let (_, system, _pool, remote) = pool_memory(true);
    let local_pool = system.create_pool(1, PoolOptions::default()).unwrap();
    let local = system.alloc(local_pool.as_ref(), BYTES).unwrap();
    fill_pattern(&system, 0, &remote, WORDS, 33).unwrap();
    let k1 = system.kernels(1).unwrap();
    k1.copy16(local.as_slice(), remote.as_slice()).unwrap();
    assert!(k1.compare_pattern(local.words(WORDS).unwrap(), 33).unwrap().is_clean());
    k1.fill(local.words(WORDS).unwrap(), 34).unwrap();
    k1.copy16(remote.as_slice(), local.as_slice()).unwrap();
    drop(k1);
    assert!(compare_pattern(&system, 0, &remote, WORDS, 34).unwrap().is_clean());
}

#[test]
fn system_atomics_from_both_devices_give_exact_totals() {
    let (_, system) = sim(Topology::two_h200());
    let pool = system.create_pool(0, PoolOptions::default()).unwrap();
    grant(&system, &pool, 1).unwrap();
    let slots = 64u64;
    let counters = system.alloc(pool.as_ref(), (slots * 4) as usize).unwrap();
    counters.write(&vec![0u8; (slots * 4) as usize]).unwrap();
    let shape = LaunchShape { grid: 132, block: BLOCK };
    let reps = 100u32;
    std::thread::scope(|s| {
        let other = s.spawn(|| system.with_kernels(1, |k| k.atomic_add_sys(counters.words(slots)?, reps, shape)));
        system.kernels(0).unwrap().atomic_add_sys(counters.words(slots).unwrap(), reps, shape).unwrap();
        other.join().unwrap().unwrap();
    });
    let expected = 2 * (shape.grid as u64 * shape.block as u64 / slots) * reps as u64;
    assert!(counters.read_words(slots as usize).unwrap().iter().all(|&w| w as u64 == expected));
}

#[test]
fn atomics_with_uneven_slots_count_threads_per_slot() {
    let (_, system) = sim(Topology::two_h200());
    let (_pool, counters) = pool_alloc(&system, 0, 16 * 4);
    counters.write(&[0u8; 64]).unwrap();
    // 10 threads over 4 slots: slots 0 and 1 get 3 threads, slots 2 and 3 get 2.
    let shape = LaunchShape { grid: 1, block: 10 };
    system.kernels(0).unwrap().atomic_add_sys(counters.words(4).unwrap(), 7, shape).unwrap();
    assert_eq!(counters.read_words(5).unwrap(), vec![21, 21, 14, 14, 0]);
}

#[test]
fn ungranted_peer_read_kills_the_process_stickily() {
    let (sim, system, pool, memory) = pool_memory(false);
    fill_pattern(&system, 0, &memory, WORDS, 44).unwrap();
    assert_eq!(system.pool_access(pool.as_ref(), 1).unwrap(), Access::None);
    let result = compare_pattern(&system, 1, &memory, WORDS, 44);
    let error = result.unwrap_err();
    assert!(error.is_sticky(), "{error}");
    assert_eq!(error.cuda().unwrap().code_name(), "CUDA_ERROR_ILLEGAL_ADDRESS");
    // The launch "succeeded"; the synchronise after it reported the fault, as on hardware.
    assert_eq!(error.cuda().unwrap().call, "cuStreamSynchronize");
    assert_eq!(sim.sticky_error().map(|c| format!("{c:?}")).as_deref(), Some("CUDA_ERROR_ILLEGAL_ADDRESS"));
    // Every later call that works in a context fails, unrelated ones included, and module loads;
    // device queries and the current context's identity still answer, as on an H200.
    let d = &sim;
    assert!(is_dead_call(d.module_load_data(ModuleImage::Ptx(ptx_image()))));
    assert!(is_dead_call(d.mem_pool_get_access(pool.handle(), 0)));
    assert_eq!(d.device_get_count().unwrap(), 2);
    assert!(d.driver_get_version().is_ok());
    assert!(d.ctx_get_current().is_ok());
    assert!(api_code(system.create_pool(1, PoolOptions::default())).is_some());
    let mut out = [0u8; 4];
    assert!(memory.read(&mut out).unwrap_err().is_sticky());
}

#[test]
fn peer_write_after_revoke_faults() {
    let (sim, system, pool, memory) = pool_memory(true);
    fill_pattern(&system, 1, &memory, WORDS, 1).unwrap();
    let revoke = [AccessDesc { device: 1, access: Access::None }];
    sim.mem_pool_set_access(pool.handle(), &revoke).unwrap();
    assert!(fill_pattern(&system, 1, &memory, WORDS, 2).unwrap_err().is_sticky());
    assert!(sim.sticky_error().is_some());
}

#[test]
fn legacy_memory_of_another_device_is_unreachable() {
    let (sim, system) = sim(Topology::two_h200());
    let legacy = system.alloc_legacy(0, BYTES).unwrap();
    assert!(system.kernels(1).unwrap().fill(legacy.words(WORDS).unwrap(), 3).unwrap_err().is_sticky());
    assert!(sim.sticky_error().is_some());
}

#[test]
fn a_kernel_running_past_its_allocation_faults() {
    let (sim, system, _pool, memory) = pool_memory(false);
    assert!(memory.words(WORDS + 1).is_err(), "the safe slice refuses to run past the end");
    let past_the_end = sim_support::words(memory.ptr(), WORDS + 1);
    assert!(system.kernels(0).unwrap().fill(past_the_end, 3).unwrap_err().is_sticky());
    assert!(sim.sticky_error().is_some());
}

#[test]
fn a_faulting_kernel_changes_no_byte() {
    let (sim, system, _pool, memory) = pool_memory(false);
    fill_pattern(&system, 0, &memory, WORDS, 9).unwrap();
    let _ = fill_pattern(&system, 1, &memory, WORDS, 10);
    assert!(sim.sticky_error().is_some());
    // The process is dead, so read the bytes behind its back: still seed 9's pattern.
    let bytes = sim.peek(memory.ptr(), BYTES).unwrap();
    assert!(bytes.chunks_exact(4).enumerate().all(|(i, w)| w == pattern(i as u64, 9).to_le_bytes()));
}

#[test]
fn raw_launch_rules() {
    let (sim, system) = sim(Topology::two_h200());
    let d = &sim;
    let (_pool, memory) = pool_alloc(&system, 0, 4096);
    // No context: nothing can load or launch.
    assert_eq!(code(d.module_load_data(ModuleImage::Ptx(ptx_image()))).as_deref(), Some("CUDA_ERROR_INVALID_CONTEXT"));
    let _ctx = system.enter(0).unwrap();
    assert_eq!(code(d.module_load_data(ModuleImage::Ptx(c"not ptx"))).as_deref(), Some("CUDA_ERROR_INVALID_IMAGE"));
    let module = d.module_load_data(ModuleImage::Ptx(ptx_image())).unwrap();
    let unknown = CString::new("pp_nonexistent").unwrap();
    assert_eq!(code(d.module_get_function(module, &unknown)).as_deref(), Some("CUDA_ERROR_NOT_FOUND"));
    for name in peerpool::kernels::ENTRY_POINTS {
        d.module_get_function(module, &CString::new(name).unwrap()).unwrap();
    }
    let fill = d.module_get_function(module, c"pp_fill").unwrap();
    let shape = LaunchShape { grid: 1, block: 32 };
    let args = [KernelArg::Ptr(memory.ptr()), KernelArg::U64(1024), KernelArg::U32(5)];
    // Wrong argument lists and shapes are refused at launch, not sticky.
    let short = &args[..2];
    assert_eq!(code(d.launch_kernel(fill, shape, Stream::LEGACY, short)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
    let zero = LaunchShape { grid: 0, block: 32 };
    assert_eq!(code(d.launch_kernel(fill, zero, Stream::LEGACY, &args)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
    let wide = LaunchShape { grid: 1, block: 2048 };
    assert_eq!(code(d.launch_kernel(fill, wide, Stream::LEGACY, &args)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
    d.launch_kernel(fill, shape, Stream::LEGACY, &args).unwrap();
    d.stream_synchronize(Stream::LEGACY).unwrap();
    // A function of gpu0's module is not valid in gpu1's context.
    let ctx1 = system.enter(1).unwrap();
    assert_eq!(code(d.launch_kernel(fill, shape, Stream::LEGACY, &args)).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"));
    drop(ctx1);
    d.module_unload(module).unwrap();
    assert_eq!(code(d.launch_kernel(fill, shape, Stream::LEGACY, &args)).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"));
    assert_eq!(code(d.module_unload(module)).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"));
    assert!(sim.sticky_error().is_none());
    // Misaligned kernel access is its own sticky error.
    let module = d.module_load_data(ModuleImage::Ptx(ptx_image())).unwrap();
    let fill = d.module_get_function(module, c"pp_fill").unwrap();
    let odd = [KernelArg::Ptr(memory.ptr().offset(2)), KernelArg::U64(4), KernelArg::U32(5)];
    d.launch_kernel(fill, shape, Stream::LEGACY, &odd).unwrap();
    let error = d.stream_synchronize(Stream::LEGACY).unwrap_err();
    assert!(error.sticky);
    assert_eq!(error.code_name(), "CUDA_ERROR_MISALIGNED_ADDRESS");
}

#[test]
fn a_fork_dies_alone() {
    let (sim, system, pool, memory) = pool_memory(false);
    fill_pattern(&system, 0, &memory, WORDS, 12).unwrap();
    let fork = std::sync::Arc::new(sim.fork());
    let forked = peerpool::System::with_driver(fork.clone()).unwrap();
    // Same addresses and bytes in the fork: the owner reads them clean there.
    assert!(forked.kernels(0).unwrap().compare_pattern(memory.words(WORDS).unwrap(), 12).unwrap().is_clean());
    assert!(forked.kernels(1).unwrap().compare_pattern(memory.words(WORDS).unwrap(), 12).unwrap_err().is_sticky());
    assert!(fork.sticky_error().is_some());
    assert!(sim.sticky_error().is_none(), "the original lives on");
    assert!(compare_pattern(&system, 0, &memory, WORDS, 12).unwrap().is_clean());
    // A grant in the original does not reach the fork.
    grant(&system, &pool, 1).unwrap();
    assert!(compare_pattern(&system, 1, &memory, WORDS, 12).unwrap().is_clean());
}
