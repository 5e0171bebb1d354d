//! Grant cost, side by side in one run: the engine's warm grant against a raw
//! `cuMemPoolSetAccess` on an equal fresh pool, repeated grants, revokes, verification and the
//! cold first grant (module loads and the devices' probe pools included; the accessor's CUDA
//! context creation, which the first grant also pays, timed apart); the first grant of the
//! other ordered pair, whose devices are ready (contexts, kernels, probes); and the cost of
//! proving a pair today against how it was proved before (two fresh probe pools per pair,
//! emulated with the same calls). Prints JSON (medians in microseconds).
//!
//! `cargo run --release --example grant_bench [rounds]` on a machine with two GPUs.
//
// SAFETY (every `unsafe` block below): the pools are this example's own, alive while timed.

use peerpool::bench::median;
use peerpool::driver::{Access, AccessDesc};
use peerpool::{PoolOptions, System};
use std::time::Instant;

fn micros(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e6
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = std::env::args().nth(1).map_or(Ok(200), |a| a.parse())?;
    let t = Instant::now();
    let sys = System::open()?;
    let open_us = t.elapsed().as_secs_f64() * 1e6;
    if sys.device_count() < 2 {
        return Err("needs two GPUs".into());
    }
    let d = sys.driver().clone();
    let rw = [AccessDesc { device: 1, access: Access::ReadWrite }];
    let none = [AccessDesc { device: 1, access: Access::None }];

    // Cold: the first grant in this process verifies the pair and loads the kernels. The
    // owner's context exists (its pool does); the accessor's is created first, timed apart:
    // CUDA's cost for using a device at all, which an application using both GPUs has paid.
    let pool = sys.create_pool(0, PoolOptions::default())?;
    let mut entered = Ok(());
    let context_us = micros(|| entered = sys.enter(1).map(drop));
    entered?;
    let mut cold = Ok(());
    let cold_us = micros(|| cold = sys.grant(pool.as_ref(), 1).map(drop));
    cold?;
    let images = [sys.kernels(0)?.image(), sys.kernels(1)?.image()].map(|i| format!("{i:?}"));
    drop(pool);
    // A new ordered pair whose devices are ready: contexts, kernels and probes (the first
    // grant made both devices' probe pools and mapped each into the other).
    let other = sys.create_pool(1, PoolOptions::default())?;
    let mut first = Ok(());
    let new_pair_us = micros(|| first = sys.grant(other.as_ref(), 0).map(drop));
    first?;
    drop(other);
    // A second system on the same driver (contexts exist; kernels loaded again, no probes):
    // what readying both devices' probes for both pairs costs up front, as `peerpool check` and
    // `grant_all_visible` do, and the first grant after it.
    let fresh = System::with_driver(sys.driver().clone())?;
    drop((fresh.kernels(0)?, fresh.kernels(1)?));
    let mut ready = Ok(());
    let prepare_us = micros(|| ready = fresh.prepare_verification(&[(0, 1), (1, 0)]));
    ready?;
    let pool = fresh.create_pool(0, PoolOptions::default())?;
    let mut first = Ok(());
    let after_prepare_us = micros(|| first = fresh.grant(pool.as_ref(), 1).map(drop));
    first?;
    drop((pool, fresh));

    let (mut engine, mut raw, mut engine_revoke, mut raw_revoke) = (vec![], vec![], vec![], vec![]);
    let (mut engine_repeat, mut raw_repeat) = (vec![], vec![]);
    for round in 0..rounds {
        let a = sys.create_pool(0, PoolOptions::default())?;
        let b = sys.create_pool(0, PoolOptions::default())?;
        // Alternate which goes first, so neither always meets a warmer driver.
        let mut ok = Ok(());
        let mut step_engine = |v: &mut Vec<f64>| v.push(micros(|| ok = sys.grant(a.as_ref(), 1).map(drop)));
        let step_raw = |v: &mut Vec<f64>| v.push(micros(|| unsafe { d.mem_pool_set_access(b.handle(), &rw) }.unwrap()));
        if round % 2 == 0 {
            step_engine(&mut engine);
            step_raw(&mut raw);
        } else {
            step_raw(&mut raw);
            step_engine(&mut engine);
        }
        ok?;
        for _ in 0..10 {
            engine_repeat.push(micros(|| drop(sys.grant(a.as_ref(), 1))));
            raw_repeat.push(micros(|| unsafe { d.mem_pool_set_access(b.handle(), &rw) }.unwrap()));
        }
        let mut revoke_engine = || engine_revoke.push(micros(|| drop(sys.revoke(a.as_ref(), 1))));
        let mut revoke_raw =
            || raw_revoke.push(micros(|| unsafe { d.mem_pool_set_access(b.handle(), &none) }.unwrap()));
        if round % 2 == 0 {
            revoke_engine();
            revoke_raw();
        } else {
            revoke_raw();
            revoke_engine();
        }
        a.destroy()?;
        b.destroy()?;
    }
    let mut verify = vec![];
    for _ in 0..20 {
        let mut ok = Ok(());
        verify.push(micros(|| ok = sys.verify_pair(0, 1).map(drop)));
        ok?;
    }
    // How a pair was proved before the probes were kept: two fresh pools, each granted to the
    // other device, a buffer in each (the driver maps it into the peer), the same steps, then
    // everything freed and destroyed. Emulated here with the same calls around today's
    // verification (whose own steps run on the kept probes: same kernels and copies).
    let mut fresh = vec![];
    for _ in 0..20 {
        let mut ok = Ok(());
        fresh.push(micros(|| ok = fresh_pools_verification(&sys)));
        ok?;
    }
    let (e, r) = (median(engine), median(raw));
    let report = serde_json::json!({
        "rounds": rounds,
        "unit": "microseconds (median)",
        "system_open": open_us,
        "cold_first_grant_with_verification_and_module_load": context_us + cold_us,
        "cold_accessor_context_creation": context_us,
        "cold_first_grant_contexts_ready": cold_us,
        "kernel_images": images,
        "warm_grant_engine": e,
        "warm_grant_raw_cuMemPoolSetAccess": r,
        "warm_grant_engine_over_raw": e / r,
        "repeated_grant_engine": median(engine_repeat),
        "repeated_grant_raw": median(raw_repeat),
        "revoke_engine": median(engine_revoke),
        "revoke_raw": median(raw_revoke),
        "verify_pair_0_to_1": median(verify),
        "verify_pair_with_fresh_probe_pools_as_before": median(fresh),
        "first_grant_new_pair_devices_ready": new_pair_us,
        "prepare_verification_two_devices": prepare_us,
        "first_grant_after_prepare": after_prepare_us,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

/// The pools, grants, allocations, frees and destroys a verification made before its probes
/// were kept, around today's verification of 0 -> 1 (its steps).
fn fresh_pools_verification(sys: &System) -> Result<(), Box<dyn std::error::Error>> {
    let pools = [sys.create_pool(0, PoolOptions::default())?, sys.create_pool(1, PoolOptions::default())?];
    for (device, pool) in pools.iter().enumerate() {
        let other = [AccessDesc { device: 1 - device as i32, access: Access::ReadWrite }];
        // SAFETY: as above.
        unsafe { sys.driver().mem_pool_set_access(pool.handle(), &other) }?;
    }
    let buffers = [sys.alloc(pools[0].as_ref(), 1 << 20)?, sys.alloc(pools[1].as_ref(), 1 << 20)?];
    sys.verify_pair(0, 1)?;
    for buffer in buffers {
        buffer.free()?;
    }
    for pool in pools {
        pool.destroy()?;
    }
    Ok(())
}
