//! Contexts on the simulator: the current context is per thread, primary contexts are
//! retain-counted, and calls that need a context fail with `CUDA_ERROR_INVALID_CONTEXT`
//! without one.

mod sim_support;

use peerpool::PoolOptions;
use peerpool::driver::{Driver, ModuleImage, Stream};
use peerpool::ptx_image;
use peerpool_sim::Topology;
use sim_support::{code, pool_alloc, sim};
use std::sync::{Arc, Barrier};

#[test]
fn the_current_context_is_per_thread() {
    let (sim, _system) = sim(Topology::two_h200());
    let d = &sim;
    let c0 = d.primary_ctx_retain(0).unwrap();
    let c1 = d.primary_ctx_retain(1).unwrap();
    assert_ne!(c0, c1);
    d.ctx_set_current(Some(c0)).unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let (d2, b2) = (d.clone(), barrier.clone());
    let other = std::thread::spawn(move || {
        let fresh = d2.ctx_get_current().unwrap();
        d2.ctx_set_current(Some(c1)).unwrap();
        b2.wait(); // main checks its own context while this thread holds gpu1's
        b2.wait();
        (fresh, d2.ctx_get_device().unwrap())
    });
    barrier.wait();
    assert_eq!(d.ctx_get_current().unwrap(), Some(c0));
    assert_eq!(d.ctx_get_device().unwrap(), 0);
    barrier.wait();
    assert_eq!(other.join().unwrap(), (None, 1));
    d.ctx_set_current(None).unwrap();
    assert_eq!(d.ctx_get_current().unwrap(), None);
}

#[test]
fn calls_needing_a_context_fail_without_one() {
    let (sim, _system) = sim(Topology::two_h200());
    let d = &sim;
    let invalid = Some("CUDA_ERROR_INVALID_CONTEXT");
    assert_eq!(code(d.ctx_get_device()).as_deref(), invalid);
    assert_eq!(code(d.ctx_synchronize()).as_deref(), invalid);
    assert_eq!(code(d.mem_alloc(256)).as_deref(), invalid);
    assert_eq!(code(d.stream_create()).as_deref(), invalid);
    assert_eq!(code(d.stream_synchronize(Stream::LEGACY)).as_deref(), invalid);
    assert_eq!(code(d.module_load_data(ModuleImage::Ptx(ptx_image()))).as_deref(), invalid);
    let pool = d.device_get_default_mem_pool(0).unwrap();
    assert_eq!(code(d.mem_alloc_from_pool_async(256, pool, Stream::LEGACY)).as_deref(), invalid);
    assert_eq!(code(d.ctx_set_current(Some(peerpool::driver::Context(12345)))).as_deref(), invalid);
}

#[test]
fn primary_contexts_are_retain_counted_and_reset_at_zero() {
    let (sim, _system) = sim(Topology::two_h200());
    let d = &sim;
    assert_eq!(code(d.primary_ctx_release(0)).as_deref(), Some("CUDA_ERROR_INVALID_CONTEXT"));
    let c0 = d.primary_ctx_retain(0).unwrap();
    assert_eq!(d.primary_ctx_retain(0).unwrap(), c0, "one primary context per device");
    d.ctx_set_current(Some(c0)).unwrap();
    let module = d.module_load_data(ModuleImage::Ptx(ptx_image())).unwrap();
    let legacy = d.mem_alloc(4096).unwrap();
    let stream = d.stream_create().unwrap();
    d.primary_ctx_release(0).unwrap();
    assert_eq!(d.ctx_get_device().unwrap(), 0, "still retained once");
    d.primary_ctx_release(0).unwrap();
    // Nobody holds it: reset, and unusable while current.
    assert_eq!(code(d.ctx_get_device()).as_deref(), Some("CUDA_ERROR_INVALID_CONTEXT"));
    assert_eq!(d.primary_ctx_retain(0).unwrap(), c0);
    assert_eq!(code(d.module_unload(module)).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"));
    assert_eq!(code(d.stream_destroy(stream)).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"));
    assert_eq!(code(d.mem_free(legacy)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
    assert_eq!(sim.stats().allocations, 0);
}

#[test]
fn streams_run_on_their_own_device() {
    let (sim, system) = sim(Topology::two_h200());
    let d = &sim;
    let pool = system.create_pool(1, PoolOptions::default()).unwrap();
    let ctx1 = system.enter(1).unwrap();
    let stream = d.stream_create().unwrap();
    drop(ctx1);
    // gpu0 is current, but the stream is gpu1's: allocating and setting gpu1 memory works.
    let _ctx0 = system.enter(0).unwrap();
    let ptr = d.mem_alloc_from_pool_async(1024, pool.handle(), stream).unwrap();
    d.memset_d32_async(ptr, 7, 256, stream).unwrap();
    d.stream_synchronize(stream).unwrap();
    assert_eq!(code(d.memset_d32_async(ptr, 7, 256, Stream::LEGACY)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
    d.mem_free_async(ptr, stream).unwrap();
    d.stream_destroy(stream).unwrap();
    assert_eq!(code(d.stream_synchronize(stream)).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"));
}

#[test]
fn a_system_releases_everything_it_took() {
    let (sim, system) = sim(Topology::two_h200());
    {
        let (_pool, memory) = pool_alloc(&system, 0, 4096);
        system.kernels(0).unwrap().fill(memory.words(1024).unwrap(), 1).unwrap();
        system.kernels(1).unwrap();
    }
    let live = sim.stats();
    assert_eq!(
        (live.pools, live.modules, live.allocations),
        (2, 2, 2),
        "default pools; each device's module and scratch"
    );
    drop(system);
    let after = sim.stats();
    assert_eq!(after, peerpool_sim::SimStats { pools: 2, ..Default::default() });
    let d: Arc<dyn Driver> = sim;
    assert_eq!(d.ctx_get_current().unwrap(), None, "every guard restored the caller's (no) context");
}
