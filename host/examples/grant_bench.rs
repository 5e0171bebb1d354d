//! Grant cost, side by side in one run: the engine's warm grant against a raw
//! `cuMemPoolSetAccess` on an equal fresh pool, repeated grants, revokes, verification and the
//! cold first grant (module loads included; the accessor's CUDA context creation, which the
//! first grant also pays, timed apart). Prints JSON (medians in microseconds).
//!
//! `cargo run --release --example grant_bench [rounds]` on a machine with two GPUs.
//
// SAFETY (every `unsafe` block below): the pools are this example's own, alive while timed.

use peerpool::driver::{Access, AccessDesc};
use peerpool::{PoolOptions, System};
use std::time::Instant;

fn micros(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e6
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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
    let cold_us = micros(|| cold = sys.grant(pool.as_ref(), 0, 1).map(drop));
    cold?;
    let images = [sys.kernels(0)?.image(), sys.kernels(1)?.image()].map(|i| format!("{i:?}"));
    drop(pool);

    let (mut engine, mut raw, mut engine_revoke, mut raw_revoke) = (vec![], vec![], vec![], vec![]);
    let (mut engine_repeat, mut raw_repeat) = (vec![], vec![]);
    for round in 0..rounds {
        let a = sys.create_pool(0, PoolOptions::default())?;
        let b = sys.create_pool(0, PoolOptions::default())?;
        // Alternate which goes first, so neither always meets a warmer driver.
        let mut ok = Ok(());
        let mut step_engine = |v: &mut Vec<f64>| v.push(micros(|| ok = sys.grant(a.as_ref(), 0, 1).map(drop)));
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
            engine_repeat.push(micros(|| drop(sys.grant(a.as_ref(), 0, 1))));
            raw_repeat.push(micros(|| unsafe { d.mem_pool_set_access(b.handle(), &rw) }.unwrap()));
        }
        let mut revoke_engine = || engine_revoke.push(micros(|| drop(sys.revoke(a.as_ref(), 0, 1))));
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
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
