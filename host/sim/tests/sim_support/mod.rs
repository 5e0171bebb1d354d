//! Helpers shared by the simulator's tests (`host/sim/tests/sim_*.rs`, `fault_*.rs`).
#![allow(dead_code)] // each test crate uses a different subset

use peerpool::driver::{Access, AccessDesc, DevicePtr};
use peerpool::{Allocation, CudaError, DeviceSlice, OwnedPool, PatternComparison, PoolOptions, System};
use peerpool_sim::{SimDriver, Topology};
use std::sync::Arc;

/// A simulator on `topology` and a system over it; the handle stays for inspection.
pub fn sim(topology: Topology) -> (Arc<SimDriver>, System) {
    let driver = Arc::new(SimDriver::new(topology));
    let system = System::with_driver(driver.clone()).expect("a system opens on the simulator");
    (driver, system)
}

/// Grants `device` read-write on `pool` with one raw `cuMemPoolSetAccess`.
pub fn grant(system: &System, pool: &OwnedPool, device: usize) -> Result<(), CudaError> {
    let rw = [AccessDesc { device: device as i32, access: Access::ReadWrite }];
    // SAFETY: the pool is alive while borrowed.
    unsafe { system.driver().mem_pool_set_access(pool.handle(), &rw) }
}

/// A pool on `owner` and `bytes` allocated from it.
pub fn pool_alloc(system: &System, owner: usize, bytes: usize) -> (OwnedPool, Allocation) {
    let pool = system.create_pool(owner, PoolOptions::default()).unwrap();
    let memory = system.alloc(pool.as_ref(), bytes).unwrap();
    (pool, memory)
}

/// A pool on `owner`, granted read-write to `peer`, and `bytes` allocated from it.
pub fn granted_alloc(system: &System, owner: usize, peer: usize, bytes: usize) -> (OwnedPool, Allocation) {
    let pool = system.create_pool(owner, PoolOptions::default()).unwrap();
    grant(system, &pool, peer).unwrap();
    let memory = system.alloc(pool.as_ref(), bytes).unwrap();
    (pool, memory)
}

/// `device`'s kernels fill the first `words` words of `memory` with `seed`'s pattern.
pub fn fill_pattern(
    system: &System,
    device: usize,
    memory: &Allocation,
    words: u64,
    seed: u32,
) -> peerpool::Result<()> {
    system.kernels(device)?.fill(memory.words(words)?, seed)
}

/// `device`'s kernels compare the first `words` words of `memory` with `seed`'s pattern.
pub fn compare_pattern(
    system: &System,
    device: usize,
    memory: &Allocation,
    words: u64,
    seed: u32,
) -> peerpool::Result<PatternComparison> {
    system.kernels(device)?.compare_pattern(memory.words(words)?, seed)
}

/// `words` 32-bit words at `ptr`, for a kernel on the simulator, which checks every range (a
/// slice past an allocation's end is how a test asks for the fault).
pub fn words(ptr: DevicePtr, words: u64) -> DeviceSlice<'static> {
    // SAFETY: only ever given to a simulator, which checks the range itself.
    unsafe { DeviceSlice::from_raw(ptr, words * 4) }
}

/// The `CudaCode` name of a failed call, `None` for success.
pub fn code<T>(r: Result<T, CudaError>) -> Option<String> {
    r.err().map(|e| e.code_name())
}

/// The `CudaCode` name inside a failed peerpool call (`"not a driver error"` otherwise).
pub fn api_code<T>(r: peerpool::Result<T>) -> Option<String> {
    r.err().map(|e| e.cuda().map_or_else(|| format!("not a driver error: {e}"), CudaError::code_name))
}

/// Whether `driver` is a dead process: the call fails sticky with `CUDA_ERROR_ILLEGAL_ADDRESS`.
pub fn is_dead_call<T>(r: Result<T, CudaError>) -> bool {
    r.err().is_some_and(|e| e.sticky && e.code_name() == "CUDA_ERROR_ILLEGAL_ADDRESS")
}
