//! Helpers shared by the simulator's tests (`host/sim/tests/sim_*.rs`, `fault_*.rs`).
#![allow(dead_code)] // each test crate uses a different subset

use peerpool::driver::{Access, AccessDesc, Driver};
use peerpool::{CudaError, OwnedPool, System};
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
    system
        .driver()
        .mem_pool_set_access(pool.handle(), &[AccessDesc { device: device as i32, access: Access::ReadWrite }])
}

/// The `CUresult` name of a failed call, `None` for success.
pub fn code<T>(r: Result<T, CudaError>) -> Option<String> {
    r.err().map(|e| e.code_name())
}

/// The `CUresult` name inside a failed peerpool call (`"not a driver error"` otherwise).
pub fn api_code<T>(r: peerpool::Result<T>) -> Option<String> {
    r.err().map(|e| e.cuda().map_or_else(|| format!("not a driver error: {e}"), CudaError::code_name))
}

/// Whether `driver` is a dead process: the call fails sticky with `CUDA_ERROR_ILLEGAL_ADDRESS`.
pub fn is_dead_call<T>(r: Result<T, CudaError>) -> bool {
    r.err().is_some_and(|e| e.sticky && e.code_name() == "CUDA_ERROR_ILLEGAL_ADDRESS")
}

/// `driver` as the trait object the library uses.
pub fn dyn_driver(driver: &Arc<SimDriver>) -> Arc<dyn Driver> {
    driver.clone()
}
