//! What this process times itself: plain calls through the fault injector's stopwatch, a
//! pool's first grant and allocation, grants over live bytes, transfers, mapping from threads.

// SAFETY (every `unsafe` block below): pools, buffers and streams are this program's own,
// alive while used; copies stay inside allocations of at least the sizes copied.

use super::{Res, set};
use peerpool::bench::median;
use peerpool::bench::micros;
use peerpool::driver::{Access, AccessDesc, DeviceAttribute, Stream};
use peerpool::fault::FaultInjector;
use peerpool::{PoolOptions, System};
use peerpool_sim::{Latencies, Serial};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Instant;

/// The base cost of plain calls, from the stopwatch over a representative workload: two
/// verifications and `peerpool check`'s steps for both ordered pairs.
pub(super) fn plain_calls(system: &System, injector: &FaultInjector, model: &mut Latencies) -> Res<Value> {
    let driver = system.driver();
    injector.reset();
    for _ in 0..2000 {
        driver.ctx_get_current()?;
        driver.device_get_attribute(0, DeviceAttribute::MultiprocessorCount)?;
    }
    for (o, a) in [(0, 1), (1, 0)] {
        system.forget_evidence();
        let pool = system.create_pool(o, PoolOptions::default())?;
        system.grant(pool.as_ref(), a)?;
        let m = system.alloc(pool.as_ref(), 4 << 20)?;
        system.with_kernels(a, |k| k.fill(m.as_slice(), 1))?;
        system.with_kernels(o, |k| k.compare_pattern(m.as_slice(), 1))?;
        m.free()?;
        pool.destroy()?;
    }
    let times = injector.times();
    let counts = injector.counts();
    let per_call: BTreeMap<&str, f64> = times
        .iter()
        .filter_map(|(name, t)| {
            let n = *counts.get(name)?;
            (n > 0).then(|| (*name, t.as_secs_f64() * 1e6 / n as f64))
        })
        .collect();
    let get = |n: &str| per_call.get(n).copied().unwrap_or(f64::NAN);
    set(&mut model.context_switch_us, get("cuCtxGetCurrent"));
    set(&mut model.call_us, get("cuDeviceGetAttribute"));
    set(&mut model.launch_us, get("cuLaunchKernel"));
    set(&mut model.sync_us, get("cuStreamSynchronize"));
    set(&mut model.free_us, get("cuMemFreeAsync"));
    set(&mut model.memset_us, get("cuMemsetD32Async"));
    set(&mut model.pool_create_us, get("cuMemPoolCreate"));
    set(&mut model.pool_destroy_us, get("cuMemPoolDestroy"));
    Ok(json!({ "per_call_us": per_call, "counts": counts }))
}

/// A new pool's first grant, an unchanged grant, first allocations with and without a peer,
/// allocating first and granting after.
pub(super) fn pool_costs(system: &System, model: &mut Latencies) -> Res<Value> {
    let driver = system.driver().clone();
    let rw = [AccessDesc { device: 1, access: Access::ReadWrite }];
    let mut s: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for _ in 0..7 {
        // No peer.
        let pool = system.create_pool(0, PoolOptions::default())?;
        let t = Instant::now();
        let a = system.alloc(pool.as_ref(), 1 << 20)?;
        s.entry("alloc_first_no_peer").or_default().push(micros(t));
        let t = Instant::now();
        let b = system.alloc(pool.as_ref(), 1 << 20)?;
        s.entry("alloc_later").or_default().push(micros(t));
        drop((a, b));
        pool.destroy()?;
        // Grant, then allocate.
        let pool = system.create_pool(0, PoolOptions::default())?;
        let t = Instant::now();
        unsafe { driver.mem_pool_set_access(pool.handle(), &rw) }?;
        s.entry("grant_empty").or_default().push(micros(t));
        let t = Instant::now();
        unsafe { driver.mem_pool_set_access(pool.handle(), &rw) }?;
        s.entry("grant_unchanged").or_default().push(micros(t));
        let t = Instant::now();
        let a = system.alloc(pool.as_ref(), 1 << 20)?;
        s.entry("alloc_first_after_grant").or_default().push(micros(t));
        drop(a);
        pool.destroy()?;
        // Allocate, then grant.
        let pool = system.create_pool(0, PoolOptions::default())?;
        let a = system.alloc(pool.as_ref(), 1 << 20)?;
        let t = Instant::now();
        unsafe { driver.mem_pool_set_access(pool.handle(), &rw) }?;
        s.entry("grant_over_live_first").or_default().push(micros(t));
        drop(a);
        pool.destroy()?;
    }
    let m: BTreeMap<&str, f64> = s.iter().map(|(k, v)| (*k, median(v.clone()))).collect();
    set(&mut model.alloc_first_us, m["alloc_first_no_peer"]);
    set(&mut model.alloc_us, m["alloc_later"]);
    set(&mut model.grant_empty_us, m["grant_empty"]);
    set(&mut model.set_access_unchanged_us, m["grant_unchanged"]);
    set(&mut model.map_on_alloc_us, m["alloc_first_after_grant"] - m["alloc_first_no_peer"]);
    set(&mut model.map_on_grant_first_us, m["grant_over_live_first"]);
    Ok(json!({ "medians_us": m, "samples_us": s }))
}

/// Grant and revoke again over 1 and 8 GiB live: the growth with live bytes.
pub(super) fn live_bytes(system: &System, model: &mut Latencies) -> Res<Value> {
    let driver = system.driver().clone();
    let rw = [AccessDesc { device: 1, access: Access::ReadWrite }];
    let none = [AccessDesc { device: 1, access: Access::None }];
    let mut points = BTreeMap::new();
    for gib in [1u64, 8] {
        let pool = system.create_pool(0, PoolOptions::default())?;
        let live = system.alloc(pool.as_ref(), (gib << 30) as usize)?;
        unsafe { driver.mem_pool_set_access(pool.handle(), &rw) }?;
        let (mut grant, mut revoke) = (vec![], vec![]);
        for _ in 0..5 {
            let t = Instant::now();
            unsafe { driver.mem_pool_set_access(pool.handle(), &none) }?;
            revoke.push(micros(t));
            let t = Instant::now();
            unsafe { driver.mem_pool_set_access(pool.handle(), &rw) }?;
            grant.push(micros(t));
        }
        points.insert(gib, (median(grant), median(revoke)));
        drop(live);
        pool.destroy()?;
    }
    let ((g1, r1), (g8, r8)) = (points[&1], points[&8]);
    let (grant_slope, revoke_slope) = ((g8 - g1) / 7.0, (r8 - r1) / 7.0);
    set(&mut model.map_per_gib_us, grant_slope);
    set(&mut model.map_on_grant_again_us, g1 - grant_slope.max(0.0));
    set(&mut model.revoke_per_gib_us, revoke_slope);
    set(&mut model.revoke_us, r1 - revoke_slope.max(0.0));
    Ok(json!({ "grant_us_by_gib": { "1": g1, "8": g8 }, "revoke_us_by_gib": { "1": r1, "8": r8 } }))
}

/// Kernels and copies, small and large: their fixed cost and their rate.
pub(super) fn transfers(system: &System, model: &mut Latencies) -> Res<Value> {
    let driver = system.driver().clone();
    let (small, big) = (4096usize, 256usize << 20);
    let pools = [system.create_pool(0, PoolOptions::default())?, system.create_pool(1, PoolOptions::default())?];
    let rw = [AccessDesc { device: 1, access: Access::ReadWrite }];
    unsafe { driver.mem_pool_set_access(pools[0].handle(), &rw) }?;
    let on0 = system.alloc(pools[0].as_ref(), big)?;
    let on1 = system.alloc(pools[1].as_ref(), big)?;
    let time = |f: &mut dyn FnMut() -> Res<()>| -> Res<f64> {
        f()?; // warm
        let mut v = vec![];
        for _ in 0..5 {
            let t = Instant::now();
            f()?;
            v.push(micros(t));
        }
        Ok(median(v))
    };
    let words = |bytes: usize| (bytes / 4) as u64;
    let fill = |device: usize, bytes: usize| -> Res<f64> {
        time(&mut || Ok(system.with_kernels(device, |k| k.fill(on0.words(words(bytes))?, 7))?))
    };
    let (local_small, local_big) = (fill(0, small)?, fill(0, big)?);
    let (peer_small, peer_big) = (fill(1, small)?, fill(1, big)?);
    let copy = |bytes: usize| -> Res<f64> {
        time(&mut || {
            let _current = system.enter(1)?;
            unsafe {
                driver.memcpy_dtod_async(on1.ptr(), on0.ptr(), bytes, Stream::LEGACY)?;
                driver.stream_synchronize(Stream::LEGACY)?;
            }
            Ok(())
        })
    };
    let (copy_small, copy_big) = (copy(small)?, copy(big)?);
    let host = |bytes: usize| -> Res<f64> {
        let mut buffer = vec![0u8; bytes];
        time(&mut || Ok(on0.read(&mut buffer)?))
    };
    let (host_small, host_big) = (host(small)?, host(64 << 20)?);
    let gbps = |bytes: usize, t_big: f64, t_small: f64| (bytes - small) as f64 / ((t_big - t_small) * 1e3);
    set(&mut model.local_gbps, gbps(big, local_big, local_small));
    set(&mut model.peer_kernel_gbps, gbps(big, peer_big, peer_small));
    set(&mut model.peer_copy_gbps, gbps(big, copy_big, copy_small));
    set(&mut model.host_copy_gbps, gbps(64 << 20, host_big, host_small));
    set(&mut model.copy_us, copy_small - model.sync_us);
    Ok(json!({
        "fill_local_us": { "4KiB": local_small, "256MiB": local_big },
        "fill_peer_us": { "4KiB": peer_small, "256MiB": peer_big },
        "copy_peer_us": { "4KiB": copy_small, "256MiB": copy_big },
        "read_to_host_us": { "4KiB": host_small, "64MiB": host_big },
    }))
}

/// Two threads making the first allocation after a grant in two new pools, one per device:
/// does the mapping serialise within a process?
pub(super) fn mapping_threads(system: &System, model: &mut Latencies) -> Res<Value> {
    let mut apart = vec![];
    let mut together = vec![];
    for round in 0..6 {
        let pools = [system.create_pool(0, PoolOptions::default())?, system.create_pool(1, PoolOptions::default())?];
        for (device, pool) in pools.iter().enumerate() {
            let other = [AccessDesc { device: 1 - device as i32, access: Access::ReadWrite }];
            unsafe { system.driver().mem_pool_set_access(pool.handle(), &other) }?;
        }
        let t = Instant::now();
        let made = if round % 2 == 0 {
            [system.alloc(pools[0].as_ref(), 1 << 20), system.alloc(pools[1].as_ref(), 1 << 20)]
        } else {
            std::thread::scope(|s| {
                let second = s.spawn(|| system.alloc(pools[1].as_ref(), 1 << 20));
                let first = system.alloc(pools[0].as_ref(), 1 << 20);
                [first, second.join().unwrap_or_else(|_| Err(peerpool::Error::InvalidArgument("thread".into())))]
            })
        };
        let took = micros(t);
        if round % 2 == 0 {
            apart.push(took)
        } else {
            together.push(took)
        }
        for m in made {
            m?.free()?;
        }
        for pool in pools {
            pool.destroy()?;
        }
    }
    let (apart, together) = (median(apart), median(together));
    // Two threads no faster than one after the other: one at a time.
    model.map_serial = Serial::one_at_a_time(false, together > 0.8 * apart, false);
    Ok(json!({ "one_after_the_other_us": apart, "two_threads_us": together, "decided": model.map_serial }))
}
