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
    pair.system.driver().mem_pool_set_access(
        pool.handle(),
        &[AccessDesc { device: pair.accessor as i32, access: Access::ReadWrite }],
    )?;
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

/// Fails with `what` unless `condition`.
pub fn ensure(condition: bool, what: impl FnOnce() -> String) -> Result<(), Failed> {
    if condition { Ok(()) } else { Err(what().into()) }
}
