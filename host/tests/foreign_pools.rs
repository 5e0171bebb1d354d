//! Pools made outside peerpool, brought in safely: borrowed through `ForeignPool` (the borrow
//! of the allocator's value is the pool's lifetime) and handed over through `IntoForeignPool`
//! (peerpool then revokes and destroys it), on the simulator.

use peerpool::driver::{Access, HandleKinds, Pool, PoolProps};
use peerpool::{ForeignPool, IntoForeignPool, PoolRef, System};
use peerpool_sim::{SimDriver, Topology};
use std::sync::Arc;

/// An allocator's pool as an outside crate would hold it: a raw handle it destroys on drop.
struct TheirPool {
    driver: Arc<SimDriver>,
    handle: Pool,
    device: usize,
}

impl TheirPool {
    fn new(driver: &Arc<SimDriver>, device: usize) -> TheirPool {
        let props = PoolProps { device: device as i32, handle_types: HandleKinds::NONE, max_size: 0 };
        let handle = driver.mem_pool_create(&props).expect("the simulator makes pools");
        TheirPool { driver: driver.clone(), handle, device }
    }

    fn raw(&self) -> cudarc::driver::sys::CUmemoryPool {
        self.handle.0 as usize as cudarc::driver::sys::CUmemoryPool
    }
}

impl Drop for TheirPool {
    fn drop(&mut self) {
        // Our pool, destroyed once, after every borrow (Drop has `&mut self`); the simulator's
        // checked method would panic on a handle destroyed twice.
        self.driver.mem_pool_destroy(self.handle).expect("destroyed");
    }
}

// SAFETY: the handle is live until `Drop`, which cannot run while `&self` is borrowed, and is
// on `device`, of the driver the test's `System` uses.
unsafe impl ForeignPool for TheirPool {
    fn raw_pool(&self) -> cudarc::driver::sys::CUmemoryPool {
        self.raw()
    }
    fn pool_device(&self) -> usize {
        self.device
    }
}

// SAFETY: the handle is live and on `device`; `forget` keeps our `Drop` from destroying it.
unsafe impl IntoForeignPool for TheirPool {
    fn into_raw_pool(self) -> (cudarc::driver::sys::CUmemoryPool, usize) {
        let given = (self.raw(), self.device);
        std::mem::forget(self);
        given
    }
}

fn setup() -> (Arc<SimDriver>, System) {
    let sim = Arc::new(SimDriver::new(Topology::two_h200()));
    let system = System::with_driver(sim.clone()).unwrap();
    system.set_scratch_bytes(4096).unwrap();
    // peerpool's own probe pools (kept for the system's life) are made first, so that the
    // counts below are of their pool alone.
    system.prepare_verification(&[(0, 1), (1, 0)]).unwrap();
    (sim, system)
}

#[test]
fn a_borrowed_pool_is_granted_and_read_back_and_stays_theirs() {
    let (sim, system) = setup();
    let pools_before = sim.stats().pools;
    let theirs = TheirPool::new(&sim, 0);
    {
        let pool: PoolRef<'_> = PoolRef::borrow(&theirs).unwrap();
        assert_eq!(pool.owner(), 0);
        system.grant(pool, 1).unwrap();
        assert_eq!(system.peers(pool).unwrap(), vec![1]);
        let memory = system.alloc(pool, 4096).unwrap();
        system.with_kernels(1, |k| k.fill(memory.as_slice(), 3)).unwrap();
        assert!(system.with_kernels(0, |k| k.compare_pattern(memory.as_slice(), 3)).unwrap().is_clean());
        system.revoke(pool, 1).unwrap();
    }
    assert_eq!(sim.stats().pools, pools_before + 1, "peerpool destroyed nothing of theirs");
    drop(theirs);
    assert_eq!(sim.stats().pools, pools_before, "their Drop destroyed it");
}

#[test]
fn an_adopted_pool_is_revoked_and_destroyed_by_peerpool() {
    let (sim, system) = setup();
    let pools_before = sim.stats().pools;
    let owned = system.adopt_pool(TheirPool::new(&sim, 1)).unwrap();
    assert_eq!((owned.owner(), sim.stats().pools), (1, pools_before + 1));
    system.grant(owned.as_ref(), 0).unwrap();
    assert_eq!(system.pool_access(owned.as_ref(), 0).unwrap(), Access::ReadWrite);
    owned.destroy().unwrap();
    assert_eq!(sim.stats().pools, pools_before, "destroyed once, by peerpool");
}

#[test]
fn an_adopted_pool_named_with_the_wrong_device_is_refused() {
    let (sim, system) = setup();
    struct Mislabelled(cudarc::driver::sys::CUmemoryPool);
    // SAFETY: the handle is live (or null, which is refused); the device named is a lie that
    // peerpool catches, and `theirs` keeps the pool and destroys it.
    unsafe impl IntoForeignPool for Mislabelled {
        fn into_raw_pool(self) -> (cudarc::driver::sys::CUmemoryPool, usize) {
            (self.0, 0)
        }
    }
    let theirs = TheirPool::new(&sim, 1);
    let refused = system.adopt_pool(Mislabelled(theirs.raw()));
    assert!(matches!(&refused, Err(peerpool::Error::InvalidArgument(m)) if m.contains("not on gpu0")), "{refused:?}");
    let unknown = system.adopt_pool(Mislabelled(std::ptr::null_mut()));
    assert!(matches!(unknown, Err(peerpool::Error::InvalidArgument(_))));
    drop(theirs); // still theirs: destroyed here, once
}
