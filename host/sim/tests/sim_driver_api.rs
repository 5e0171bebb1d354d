//! The calls the simulator answers for clients other than peerpool (through the libcuda shim):
//! ordinary contexts and the context stack, pool attributes and trimming, `cuMemAllocAsync`,
//! legacy peer access, and the synchronous and asynchronous copy variants.

mod sim_support;

use peerpool::driver::{Access, DeviceAttribute, PeerCopy, Pool, PoolAttribute, PoolProps, Stream};
use peerpool_sim::{SimDriver, Topology};
use sim_support::code;

fn sim() -> SimDriver {
    SimDriver::new(Topology::two_h200())
}

/// A simulator with `device`'s primary context current and a new pool on `device`.
fn sim_with_pool(device: i32) -> (SimDriver, Pool) {
    let d = sim();
    let primary = d.primary_ctx_retain(device).unwrap();
    d.ctx_set_current(Some(primary)).unwrap();
    let pool = d.mem_pool_create(&PoolProps { device, ..PoolProps::default() }).unwrap();
    (d, pool)
}

#[test]
fn the_context_stack_pushes_pops_and_set_current_replaces_the_top() {
    let d = sim();
    let p0 = d.primary_ctx_retain(0).unwrap();
    let p1 = d.primary_ctx_retain(1).unwrap();
    assert_eq!(d.ctx_get_current().unwrap(), None);
    assert_eq!(code(d.ctx_pop_current()).as_deref(), Some("CUDA_ERROR_INVALID_CONTEXT"), "empty stack");
    d.ctx_push_current(p0).unwrap();
    d.ctx_push_current(p1).unwrap();
    assert_eq!((d.ctx_get_current().unwrap(), d.ctx_get_device().unwrap()), (Some(p1), 1));
    d.ctx_set_current(Some(p0)).unwrap(); // replaces the top: [p0, p0]
    assert_eq!(d.ctx_pop_current().unwrap(), Some(p0));
    assert_eq!(d.ctx_get_current().unwrap(), Some(p0));
    d.ctx_set_current(None).unwrap(); // pops
    assert_eq!(d.ctx_get_current().unwrap(), None);
    assert_eq!(
        code(d.ctx_push_current(peerpool::driver::Context(0x1234))).as_deref(),
        Some("CUDA_ERROR_INVALID_CONTEXT")
    );
}

#[test]
fn an_ordinary_context_owns_what_it_made_and_takes_it_when_destroyed() {
    let d = sim();
    let primary = d.primary_ctx_retain(0).unwrap();
    d.ctx_set_current(Some(primary)).unwrap();
    let kept = d.mem_alloc(4096).unwrap();
    let ordinary = d.ctx_create(0, 0).unwrap();
    assert_eq!(d.ctx_get_current().unwrap(), Some(ordinary), "cuCtxCreate makes it current");
    let (stream, memory) = (d.stream_create().unwrap(), d.mem_alloc(4096).unwrap());
    assert_eq!(
        code(d.ctx_destroy(primary)).as_deref(),
        Some("CUDA_ERROR_INVALID_CONTEXT"),
        "primary: not by cuCtxDestroy"
    );
    d.ctx_destroy(ordinary).unwrap();
    assert_eq!(d.ctx_get_current().unwrap(), Some(primary), "popped off the stack");
    assert_eq!(code(d.stream_synchronize(stream)).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"), "its stream went");
    assert_eq!(code(d.mem_free(memory)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"), "its memory went");
    d.mem_free(kept).unwrap();
    assert_eq!(code(d.ctx_destroy(ordinary)).as_deref(), Some("CUDA_ERROR_INVALID_CONTEXT"), "destroyed once");
}

#[test]
fn a_primary_reset_takes_what_it_made_and_leaves_pools() {
    let (d, pool) = sim_with_pool(1);
    let legacy = d.mem_alloc(4096).unwrap();
    assert_eq!(d.primary_ctx_get_state(1).unwrap(), (0, true));
    d.primary_ctx_set_flags(1, 4).unwrap();
    d.primary_ctx_reset(1).unwrap();
    assert_eq!(d.primary_ctx_get_state(1).unwrap(), (4, false));
    assert_eq!(code(d.mem_free(legacy)).as_deref(), Some("CUDA_ERROR_INVALID_CONTEXT"), "no context is active");
    d.primary_ctx_retain(1).unwrap();
    assert_eq!(code(d.mem_free(legacy)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"), "the memory went");
    d.mem_pool_destroy(pool).unwrap();
}

#[test]
fn pool_attributes_track_use_reservation_threshold_and_trim() {
    let (d, pool) = sim_with_pool(0);
    let get = |a| d.mem_pool_get_attribute(pool, a).unwrap();
    assert_eq!(get(PoolAttribute::ReuseAllowOpportunistic), 1, "on by default");
    let a = d.mem_alloc_from_pool_async(1 << 20, pool, Stream::LEGACY).unwrap();
    let b = d.mem_alloc_from_pool_async(1 << 20, pool, Stream::LEGACY).unwrap();
    d.mem_free_async(a, Stream::LEGACY).unwrap();
    assert_eq!((get(PoolAttribute::UsedMemCurrent), get(PoolAttribute::UsedMemHigh)), (1 << 20, 2 << 20));
    assert_eq!(get(PoolAttribute::ReservedMemCurrent), 2 << 20, "freed bytes stay reserved until a sync");
    d.mem_pool_set_attribute(pool, PoolAttribute::ReleaseThreshold, 1 << 30).unwrap();
    d.ctx_synchronize().unwrap();
    assert_eq!(get(PoolAttribute::ReservedMemCurrent), 2 << 20, "under the threshold: kept");
    d.mem_pool_trim_to(pool, 0).unwrap();
    assert_eq!(get(PoolAttribute::ReservedMemCurrent), 1 << 20, "trimmed to what is used");
    d.mem_pool_set_attribute(pool, PoolAttribute::UsedMemHigh, 0).unwrap();
    assert_eq!(get(PoolAttribute::UsedMemHigh), 1 << 20, "a reset to the current use");
    let refused = d.mem_pool_set_attribute(pool, PoolAttribute::UsedMemCurrent, 5);
    assert_eq!(code(refused).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
    d.mem_pool_set_attribute(pool, PoolAttribute::ReuseAllowOpportunistic, 0).unwrap();
    assert_eq!(get(PoolAttribute::ReuseAllowOpportunistic), 0);
    d.mem_free_async(b, Stream::LEGACY).unwrap();
    d.mem_pool_destroy(pool).unwrap();
}

#[test]
fn alloc_async_takes_the_current_pool_of_the_streams_device() {
    let (d, pool) = sim_with_pool(0);
    d.device_set_mem_pool(0, pool).unwrap();
    let ptr = d.mem_alloc_async(4096, Stream::LEGACY).unwrap();
    let from = d.pointer_get_attribute(ptr, peerpool::driver::PointerAttribute::MempoolHandle).unwrap();
    assert_eq!(from, pool.0);
    d.mem_free_async(ptr, Stream::LEGACY).unwrap();
    d.mem_pool_destroy(pool).unwrap();
}

#[test]
fn legacy_peer_access_opens_cu_mem_alloc_memory_until_disabled() {
    let d = sim();
    let (c0, c1) = (d.primary_ctx_retain(0).unwrap(), d.primary_ctx_retain(1).unwrap());
    d.ctx_set_current(Some(c1)).unwrap();
    let on_gpu1 = d.mem_alloc(4096).unwrap();
    d.ctx_set_current(Some(c0)).unwrap();
    assert_eq!(code(d.memset_d8_async(on_gpu1, 7, 16, Stream::LEGACY)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
    d.ctx_enable_peer_access(c1, 0).unwrap();
    d.memset_d8_async(on_gpu1, 7, 16, Stream::LEGACY).unwrap();
    let again = d.ctx_enable_peer_access(c1, 0);
    assert_eq!(code(again).as_deref(), Some("CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"));
    assert_eq!(code(d.ctx_enable_peer_access(c0, 0)).as_deref(), Some("CUDA_ERROR_INVALID_DEVICE"), "itself");
    // Pools keep their own tables: legacy peer access grants none.
    let pool = d.device_get_default_mem_pool(1).unwrap();
    assert_eq!(d.mem_pool_get_access(pool, 0).unwrap(), Access::None);
    d.ctx_disable_peer_access(c1).unwrap();
    assert_eq!(code(d.ctx_disable_peer_access(c1)).as_deref(), Some("CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"));
    assert_eq!(code(d.memset_d8_async(on_gpu1, 7, 16, Stream::LEGACY)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
}

#[test]
fn copy_variants_move_the_same_bytes() {
    let d = sim();
    let (c0, c1) = (d.primary_ctx_retain(0).unwrap(), d.primary_ctx_retain(1).unwrap());
    d.ctx_set_current(Some(c0)).unwrap();
    let (a, b) = (d.mem_alloc(64).unwrap(), d.mem_alloc(64).unwrap());
    let data: Vec<u8> = (0..64).collect();
    d.memcpy_htod_async(a, &data, Stream::LEGACY).unwrap();
    d.memcpy_dtod(b, a, 64).unwrap();
    let mut back = vec![0u8; 64];
    d.memcpy_dtoh_async(&mut back, b, Stream::LEGACY).unwrap();
    assert_eq!(back, data);
    d.memset_d8_async(b.offset(8), 0xEE, 8, Stream::LEGACY).unwrap();
    d.ctx_set_current(Some(c1)).unwrap();
    let far = d.mem_alloc(64).unwrap();
    d.memcpy_peer(PeerCopy { dst: far, dst_ctx: c1, src: b, src_ctx: c0, bytes: 64 }).unwrap();
    d.memcpy_dtoh(&mut back, far).unwrap();
    assert_eq!(&back[8..16], &[0xEE; 8]);
    assert_eq!(&back[16..], &data[16..]);
    assert_eq!(d.device_get_attribute(0, DeviceAttribute::WarpSize).unwrap(), 32);
    let (free, total) = d.mem_get_info().unwrap();
    assert_eq!(total - free, 64, "gpu1 holds one 64-byte allocation");
    assert_ne!(d.device_get_uuid(0).unwrap(), d.device_get_uuid(1).unwrap());
}

/// Events time the work between their records on the virtual clock: each further 16 MiB of a
/// copy adds the same time, and an event never recorded has no time to give.
#[test]
fn events_time_work_on_the_virtual_clock() {
    let d = sim();
    let c0 = d.primary_ctx_retain(0).unwrap();
    d.ctx_set_current(Some(c0)).unwrap();
    let (a, b) = (d.mem_alloc(64 << 20).unwrap(), d.mem_alloc(64 << 20).unwrap());
    let (start, end) = (d.event_create(0).unwrap(), d.event_create(0).unwrap());
    let timed = |bytes: usize| {
        d.event_record(start, Stream::LEGACY).unwrap();
        d.memcpy_dtod_async(b, a, bytes, Stream::LEGACY).unwrap();
        d.event_record(end, Stream::LEGACY).unwrap();
        d.event_synchronize(end).unwrap();
        d.event_elapsed_time(start, end).unwrap()
    };
    let times = [timed(16 << 20), timed(32 << 20), timed(48 << 20)];
    let (first, second) = (times[1] - times[0], times[2] - times[1]);
    assert!(times[0] > 0.0 && first > 0.0, "{times:?} ms");
    assert!((first / second - 1.0).abs() < 0.01, "16 MiB more adds {first} ms, then {second} ms");
    let fresh = d.event_create(0).unwrap();
    let unrecorded = d.event_elapsed_time(start, fresh);
    assert_eq!(code(unrecorded).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"));
    d.event_destroy(fresh).unwrap();
}

/// Event flags as the real driver takes them: unknown bits and an interprocess event that keeps
/// time are refused, and an event made without timing has no time to give.
#[test]
fn event_flags_are_checked_and_untimed_events_give_no_time() {
    let d = sim();
    let c0 = d.primary_ctx_retain(0).unwrap();
    d.ctx_set_current(Some(c0)).unwrap();
    let (blocking, untimed, interprocess) = (1, 2, 4);
    assert_eq!(code(d.event_create(8)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
    assert_eq!(code(d.event_create(interprocess)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
    let timed = d.event_create(blocking).unwrap();
    for flags in [untimed, untimed | interprocess] {
        let untimed = d.event_create(flags).unwrap();
        d.event_record(timed, Stream::LEGACY).unwrap();
        d.event_record(untimed, Stream::LEGACY).unwrap();
        assert_eq!(code(d.event_elapsed_time(timed, untimed)).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"));
        assert_eq!(code(d.event_elapsed_time(untimed, timed)).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"));
        d.event_destroy(untimed).unwrap();
    }
    assert_eq!(d.event_elapsed_time(timed, timed).unwrap(), 0.0);
}
