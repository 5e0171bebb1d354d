//! Helpers shared by peerpool's own suites (the test targets beside this file).

use peerpool::driver::{Access, AccessDesc};
use peerpool::{OwnedPool, PoolOptions, System};
use peerpool_fixtures::{Failed, Pair};

/// Words in each probe buffer: 4 MiB.
pub const WORDS: u64 = 1 << 20;

/// A fresh pool on the pair's owner, with the accessor granted read-write by a raw
/// `cuMemPoolSetAccess` (the grant engine is tested elsewhere). Checks the table before and after.
pub fn granted_pool(pair: &Pair) -> Result<OwnedPool, Failed> {
    let pool = pair.system.create_pool(pair.owner, PoolOptions::default())?;
    expect_access(&pair.system, &pool, pair.accessor, Access::None)?;
    let rw = [AccessDesc { device: pair.accessor as i32, access: Access::ReadWrite }];
    // SAFETY: the pool was just made and lives in the value returned.
    unsafe { pair.system.driver().mem_pool_set_access(pool.handle(), &rw) }?;
    expect_access(&pair.system, &pool, pair.accessor, Access::ReadWrite)?;
    Ok(pool)
}

/// Fails unless `device`'s access to `pool` is `expected`.
pub fn expect_access(system: &System, pool: &OwnedPool, device: usize, expected: Access) -> Result<(), Failed> {
    let found = system.pool_access(pool.as_ref(), device)?;
    if found != expected {
        return Err(format!("gpu{device} has {found:?} on gpu{}'s pool, expected {expected:?}", pool.owner()).into());
    }
    Ok(())
}

/// A file in `tests/regressions/`, found at run time through `CARGO_MANIFEST_DIR` (cargo and
/// nextest set it, also for an archive run elsewhere); `None` when neither did.
pub fn regressions_file(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("CARGO_MANIFEST_DIR").map(|dir| std::path::Path::new(&dir).join("regressions").join(name))
}

/// The verdict on a sandboxed child that must end in a sticky `CUDA_ERROR_ILLEGAL_ADDRESS`.
pub fn expect_illegal_address(outcome: &peerpool_fixtures::ChildOutcome) -> Result<(), String> {
    outcome.expect_cuda_error("CUDA_ERROR_ILLEGAL_ADDRESS", true)
}

/// Fails with `what` unless `condition`.
pub fn ensure(condition: bool, what: impl FnOnce() -> String) -> Result<(), Failed> {
    if condition { Ok(()) } else { Err(what().into()) }
}

/// A simulated target for the model: the simulator wrapped in a fault injector, small probes.
pub fn sim_target(
    sim: std::sync::Arc<peerpool_sim::SimDriver>,
    allocator: std::sync::Arc<dyn peerpool_fixtures::model::ModelAllocator>,
    prober: Option<std::sync::Arc<dyn peerpool_fixtures::model::NegativeProber>>,
) -> Result<peerpool_fixtures::model::Target, String> {
    let injector = std::sync::Arc::new(peerpool::fault::FaultInjector::new(sim));
    let system = System::with_driver(injector.clone()).map_err(|e| e.to_string())?;
    system.set_scratch_bytes(4096).map_err(|e| e.to_string())?;
    Ok(peerpool_fixtures::model::Target { system, injector: Some(injector), allocator, prober })
}

/// Negative probes on a fork of the simulated process: the fork dies, the original lives on.
pub struct SimProber(pub std::sync::Arc<peerpool_sim::SimDriver>);

impl peerpool_fixtures::model::NegativeProber for SimProber {
    fn probe(
        &self,
        _system: &System,
        alloc: &peerpool::Allocation,
        accessor: usize,
    ) -> Result<Option<(String, bool)>, String> {
        let fork = System::with_driver(std::sync::Arc::new(self.0.fork())).map_err(|e| e.to_string())?;
        match fork.with_kernels(accessor, |k| k.compare_pattern(alloc.as_slice(), 0)) {
            Ok(_) => Ok(None),
            Err(e) => Ok(e.cuda().map(|c| (c.code_name(), c.sticky))),
        }
    }
}

#[cfg(doctest)]
mod guide;
