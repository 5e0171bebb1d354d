//! Where a cold first grant's time goes: each phase of the first grant in a fresh process,
//! timed one by one (`sequential`, the default) or with both devices' set-up on two threads at
//! once (`parallel`). Prints one JSON object, milliseconds.
//!
//! `cargo run --release --example cold_start [sequential|parallel]` on a machine with two GPUs;
//! run each mode in its own process (only a fresh process is cold), and with
//! `CUDA_CACHE_DISABLE=1` to include the PTX JIT. The driver runs behind a
//! [`FaultInjector`] with no faults, which times every driver call: the report lists the calls
//! that took longest in the first grant and in a second verification.

use peerpool::driver::CudaDriver;
use peerpool::fault::FaultInjector;
use peerpool::{PoolOptions, System};
use std::sync::Arc;
use std::time::Instant;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Retains `device`'s primary context and loads peerpool's kernels there: (context ms, module ms).
fn set_up(system: &System, device: usize) -> Result<(f64, f64), peerpool::Error> {
    let t = Instant::now();
    let _current = system.enter(device)?;
    let context = ms(t);
    let t = Instant::now();
    drop(system.kernels(device)?);
    Ok((context, ms(t)))
}

/// The eight driver calls with the most time since the last reset: `(name, count, ms)`.
fn slowest(injector: &FaultInjector) -> Vec<(String, u64, f64)> {
    let counts = injector.counts();
    let mut calls: Vec<_> = injector
        .times()
        .into_iter()
        .map(|(name, time)| (name.to_string(), counts.get(name).copied().unwrap_or(0), time.as_secs_f64() * 1e3))
        .collect();
    calls.sort_by(|a, b| b.2.total_cmp(&a.2));
    calls.truncate(8);
    calls
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "sequential".into());
    let t = Instant::now();
    let injector = Arc::new(FaultInjector::new(Arc::new(CudaDriver::load()?)));
    let system = System::with_driver(injector.clone())?;
    let open = ms(t);
    if system.device_count() < 2 {
        return Err("needs two GPUs".into());
    }
    let t = Instant::now();
    let phases = match mode.as_str() {
        "sequential" => [set_up(&system, 0)?, set_up(&system, 1)?],
        "parallel" => std::thread::scope(|s| {
            let second = s.spawn(|| set_up(&system, 1));
            let first = set_up(&system, 0);
            Ok::<_, peerpool::Error>([first?, second.join().expect("set-up thread")?])
        })?,
        other => return Err(format!("unknown mode {other}: sequential or parallel").into()),
    };
    let set_up_total = ms(t);
    let images = [system.kernels(0)?.image(), system.kernels(1)?.image()].map(|i| format!("{i:?}"));
    let pool = system.create_pool(0, PoolOptions::default())?;
    injector.reset();
    let t = Instant::now();
    system.grant(pool.as_ref(), 1)?;
    let first_grant = ms(t);
    let first_grant_calls = slowest(&injector);
    injector.reset();
    let t = Instant::now();
    system.verify_pair(0, 1)?;
    let second_verify = ms(t);
    let second_verify_calls = slowest(&injector);
    let report = serde_json::json!({
        "mode": mode,
        "jit_cache_disabled": std::env::var("CUDA_CACHE_DISABLE").is_ok_and(|v| v == "1"),
        "unit": "milliseconds",
        "system_open": open,
        "context_gpu0": phases[0].0,
        "module_gpu0": phases[0].1,
        "context_gpu1": phases[1].0,
        "module_gpu1": phases[1].1,
        "set_up_both_devices": set_up_total,
        "first_grant_after_set_up": first_grant,
        "cold_grant_total": set_up_total + first_grant,
        "second_verify": second_verify,
        "kernel_images": images,
        "first_grant_slowest_calls_ms": first_grant_calls,
        "second_verify_slowest_calls_ms": second_verify_calls,
    });
    println!("{report}");
    Ok(())
}
