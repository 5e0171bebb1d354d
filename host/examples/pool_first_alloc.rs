//! What the first allocation from a new pool costs, and what changes it: the peer grant before
//! or after it, the pool's maximum size, the allocation's size. Verification allocates from
//! two fresh probe pools, and on the H200s those two first allocations were most of its time.
//! Prints one JSON line per variant: medians over fresh pools, milliseconds.
//!
//! `cargo run --release --example pool_first_alloc [rounds]` on a machine with two GPUs.
//
// SAFETY (every `unsafe` block below): the pools are this example's own, alive while granted.

use peerpool::bench::median;
use peerpool::driver::{Access, AccessDesc};
use peerpool::{PoolOptions, System};
use std::time::Instant;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

struct Variant {
    name: &'static str,
    bytes: usize,
    max_size: usize,
    /// Grant gpu1 before the first allocation (`Some(true)`), after it (`Some(false)`), never.
    grant_first: Option<bool>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = std::env::args().nth(1).map_or(Ok(7), |a| a.parse())?;
    let system = System::open()?;
    if system.device_count() < 2 {
        return Err("needs two GPUs".into());
    }
    drop(system.kernels(0)?);
    drop(system.kernels(1)?);
    let (mib, gib) = (1usize << 20, 1usize << 30);
    let variants = [
        Variant { name: "1 MiB, no grant", bytes: mib, max_size: 0, grant_first: None },
        Variant {
            name: "1 MiB, grant then alloc (verification today)",
            bytes: mib,
            max_size: 0,
            grant_first: Some(true),
        },
        Variant { name: "1 MiB, alloc then grant", bytes: mib, max_size: 0, grant_first: Some(false) },
        Variant { name: "64 KiB, grant then alloc", bytes: 64 << 10, max_size: 0, grant_first: Some(true) },
        Variant { name: "32 MiB, grant then alloc", bytes: 32 * mib, max_size: 0, grant_first: Some(true) },
        Variant {
            name: "1 MiB, max_size 32 MiB, grant then alloc",
            bytes: mib,
            max_size: 32 * mib,
            grant_first: Some(true),
        },
        Variant {
            name: "1 MiB, max_size 2 MiB, grant then alloc",
            bytes: mib,
            max_size: 2 * mib,
            grant_first: Some(true),
        },
        Variant { name: "1 MiB, max_size 1 GiB, grant then alloc", bytes: mib, max_size: gib, grant_first: Some(true) },
        Variant { name: "1 MiB, max_size 2 MiB, no grant", bytes: mib, max_size: 2 * mib, grant_first: None },
    ];
    for v in &variants {
        match measure(&system, v, rounds) {
            Ok(line) => println!("{line}"),
            Err(e) => println!("{}", serde_json::json!({ "variant": v.name, "error": e.to_string() })),
        }
    }
    // Verification's two probe pools, one per GPU, each granted to the other: their first
    // allocations one after the other, then on two threads.
    for parallel in [false, true] {
        let mut total = vec![];
        for _ in 0..rounds {
            let pools =
                [system.create_pool(0, PoolOptions::default())?, system.create_pool(1, PoolOptions::default())?];
            for (device, pool) in pools.iter().enumerate() {
                let other = [AccessDesc { device: 1 - device as i32, access: Access::ReadWrite }];
                unsafe { system.driver().mem_pool_set_access(pool.handle(), &other) }?;
            }
            let t = Instant::now();
            let allocations = if parallel {
                std::thread::scope(|s| {
                    let second = s.spawn(|| system.alloc(pools[1].as_ref(), 1 << 20));
                    let first = system.alloc(pools[0].as_ref(), 1 << 20);
                    [first, second.join().expect("thread")]
                })
            } else {
                [system.alloc(pools[0].as_ref(), 1 << 20), system.alloc(pools[1].as_ref(), 1 << 20)]
            };
            total.push(ms(t));
            for a in allocations {
                a?.free()?;
            }
            for pool in pools {
                pool.destroy()?;
            }
        }
        let line = serde_json::json!({ "variant": "two probe pools' first allocations", "parallel": parallel, "rounds": rounds, "both_ms": median(total) });
        println!("{line}");
    }
    Ok(())
}

/// One variant over `rounds` fresh pools on gpu0.
fn measure(system: &System, v: &Variant, rounds: usize) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    let d = system.driver().clone();
    let rw = [AccessDesc { device: 1, access: Access::ReadWrite }];
    let (mut create, mut grant, mut first, mut second, mut destroy) = (vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        let t = Instant::now();
        let pool = system.create_pool(0, PoolOptions { max_size: v.max_size, ..PoolOptions::default() })?;
        create.push(ms(t));
        let mut grant_ms = 0.0;
        if v.grant_first == Some(true) {
            let t = Instant::now();
            unsafe { d.mem_pool_set_access(pool.handle(), &rw) }?;
            grant_ms = ms(t);
        }
        let t = Instant::now();
        let a = system.alloc(pool.as_ref(), v.bytes)?;
        first.push(ms(t));
        if v.grant_first == Some(false) {
            let t = Instant::now();
            unsafe { d.mem_pool_set_access(pool.handle(), &rw) }?;
            grant_ms = ms(t);
        }
        grant.push(grant_ms);
        let t = Instant::now();
        let b = system.alloc(pool.as_ref(), v.bytes)?;
        second.push(ms(t));
        a.free()?;
        b.free()?;
        let t = Instant::now();
        pool.destroy()?;
        destroy.push(ms(t));
    }
    Ok(serde_json::json!({
        "variant": v.name,
        "rounds": rounds,
        "create_ms": median(create),
        "grant_ms": median(grant),
        "first_alloc_ms": median(first),
        "second_alloc_ms": median(second),
        "destroy_ms": median(destroy),
    }))
}
