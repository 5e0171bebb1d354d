//! The measurements of one ordered pair: bandwidth curves (copy engine and kernels, one
//! direction and both at once), pointer-chase latency and system-scope atomic rates.

use super::clock::{Stopwatch, Timer};
use super::report::{Curve, PairBench};
use super::{BenchError, BenchOptions, median};
use crate::kernels::BLOCK;
use crate::{Allocation, DeviceSlice, DeviceStream, LoadPath, PoolOptions, Result, System};

/// Bandwidth, latency and atomics for `owner -> accessor`.
pub(super) fn pair(
    system: &System,
    owner: usize,
    accessor: usize,
    max: u64,
    options: &BenchOptions,
) -> Result<PairBench, BenchError> {
    let remote_pool = system.create_pool(owner, PoolOptions::default())?;
    let local_pool = system.create_pool(accessor, PoolOptions::default())?;
    system.grant(remote_pool.as_ref(), accessor)?;
    system.grant(local_pool.as_ref(), owner)?;
    let remote = system.alloc(remote_pool.as_ref(), max as usize)?;
    let local = system.alloc(local_pool.as_ref(), max as usize)?;
    let (on_accessor, on_owner) = (system.stream(accessor)?, system.stream(owner)?);
    let (r, l) = (remote.as_slice(), local.as_slice());
    let mut curves: Vec<Curve> = Vec::new();
    let mut add = |path: &str, gbps: Vec<f64>| curves.push(Curve { path: path.into(), gbps });

    // One direction, one stream on the accessor: events time the GPU work alone.
    let driver = system.driver().as_ref();
    let copy = |dst: DeviceSlice<'_>, src: DeviceSlice<'_>, bytes: u64, stream: &DeviceStream<'_>| -> Result<()> {
        let (dst, src) = (dst.range(0, bytes)?, src.range(0, bytes)?);
        // SAFETY: both ranges lie in live allocations; the stream is live and its device's
        // context is current (the sweep and `both` enter it).
        Ok(unsafe { driver.memcpy_dtod_async(dst.ptr(), src.ptr(), bytes as usize, stream.handle()) }?)
    };
    let to_accessor = |bytes: u64| copy(l, r, bytes, &on_accessor);
    add("copy engine owner->accessor", sweep(system, accessor, &on_accessor, options, to_accessor)?);
    let to_owner = |bytes: u64| copy(r, l, bytes, &on_accessor);
    add("copy engine accessor->owner", sweep(system, accessor, &on_accessor, options, to_owner)?);
    let grid = system.with_kernels(accessor, |k| Ok(k.shape_for(u64::MAX).grid))?;
    let sink = system.alloc(local_pool.as_ref(), (grid * BLOCK * 4) as usize)?;
    let read = |path: LoadPath| {
        let (sink, on_accessor) = (sink.as_slice(), &on_accessor);
        move |bytes: u64| {
            system.with_kernels(accessor, |k| {
                k.read16_on(path, on_accessor, r.range(0, bytes)?, sink, k.shape_for(bytes / 16))
            })
        }
    };
    add(
        "kernel read (accessor reads owner)",
        sweep(system, accessor, &on_accessor, options, read(LoadPath::Coherent))?,
    );
    let read_nc = read(LoadPath::NonCoherent);
    add("kernel read, ld.global.nc (accessor reads owner)", sweep(system, accessor, &on_accessor, options, read_nc)?);
    let copy16 = |device: usize, stream: &DeviceStream<'_>, dst: DeviceSlice<'_>, src: DeviceSlice<'_>, bytes: u64| {
        system.with_kernels(device, |k| {
            k.copy16_on(stream, dst.range(0, bytes)?, src.range(0, bytes)?, k.shape_for(bytes / 16))
        })
    };
    let pull = |bytes: u64| copy16(accessor, &on_accessor, l, r, bytes);
    add(
        "kernel copy owner->accessor (remote read, local write)",
        sweep(system, accessor, &on_accessor, options, pull)?,
    );
    let push = |bytes: u64| copy16(accessor, &on_accessor, r, l, bytes);
    add(
        "kernel copy accessor->owner (local read, remote write)",
        sweep(system, accessor, &on_accessor, options, push)?,
    );

    // Both directions at once: work queued on both GPUs, timed by the host around both.
    let both = |how: Both| -> Result<Vec<f64>> {
        let mut gbps = Vec::new();
        for &bytes in &options.sizes {
            let once = || -> Result<f64> {
                let watch = Stopwatch::start(system);
                // (destination, source) for the accessor's and the owner's work.
                let ((a_dst, a_src), (o_dst, o_src)) = match how {
                    Both::CopyEngine | Both::KernelsPull => ((l, r), (r, l)),
                    Both::KernelsPush => ((r, l), (l, r)),
                };
                if how == Both::CopyEngine {
                    system.within(accessor, || copy(a_dst, a_src, bytes, &on_accessor))?;
                    system.within(owner, || copy(o_dst, o_src, bytes, &on_owner))?;
                } else {
                    copy16(accessor, &on_accessor, a_dst, a_src, bytes)?;
                    copy16(owner, &on_owner, o_dst, o_src, bytes)?;
                }
                on_accessor.synchronize()?;
                on_owner.synchronize()?;
                Ok(2.0 * bytes as f64 / watch.seconds() / 1e9)
            };
            once()?;
            gbps.push(median((0..options.repeats).map(|_| once()).collect::<Result<Vec<_>>>()?));
        }
        Ok(gbps)
    };
    add("copy engine both directions at once (sum)", both(Both::CopyEngine)?);
    add("kernels both directions at once, pull: each reads the other's memory (sum)", both(Both::KernelsPull)?);
    add("kernels both directions at once, push: each writes the other's memory (sum)", both(Both::KernelsPush)?);

    let latency_remote_ns = chase(system, accessor, &on_accessor, &remote, options.chase_hops)?;
    let latency_local_ns = chase(system, accessor, &on_accessor, &local, options.chase_hops)?;
    let atomics_remote_per_s = atomics(system, accessor, &on_accessor, &remote)?;
    let atomics_local_per_s = atomics(system, accessor, &on_accessor, &local)?;
    Ok(PairBench {
        owner,
        accessor,
        sizes: options.sizes.clone(),
        curves,
        latency_remote_ns,
        latency_local_ns,
        atomics_remote_per_s,
        atomics_local_per_s,
    })
}

/// How both GPUs move bytes at once: the copy engine (each context copies the other's memory
/// into its own), or kernels that read the other's memory (pull) or write it (push). Pushing
/// is faster over NVLink: pulling puts read requests on the link beside the other
/// direction's data (docs/hardware/2026-11-30-nvlink-paths).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Both {
    CopyEngine,
    KernelsPull,
    KernelsPush,
}

/// GB/s of `queue(bytes)` on `stream` at every size: one warm-up, median of the repeats.
fn sweep(
    system: &System,
    device: usize,
    stream: &DeviceStream<'_>,
    options: &BenchOptions,
    queue: impl Fn(u64) -> Result<()>,
) -> Result<Vec<f64>> {
    system.within(device, || {
        let timer = Timer::new(system.driver().as_ref())?;
        let mut gbps = Vec::new();
        for &bytes in &options.sizes {
            timer.time(stream, || queue(bytes))?;
            let times =
                (0..options.repeats).map(|_| timer.time(stream, || queue(bytes))).collect::<Result<Vec<_>>>()?;
            gbps.push(bytes as f64 / median(times) / 1e9);
        }
        Ok(gbps)
    })
}

/// Nanoseconds per dependent load, hopping through `memory` from `device`: a random cycle
/// through 1 Mi slots 256 bytes apart (256 MiB, beyond the 50 MB L2), when `memory` holds it.
fn chase(system: &System, device: usize, stream: &DeviceStream<'_>, memory: &Allocation, hops: u64) -> Result<f64> {
    let spacing = 64u64; // words: 256 bytes
    // Leave the last 256 bytes for the result word.
    let slots = ((memory.len() as u64).saturating_sub(256) / 4 / spacing).clamp(2, 1 << 20);
    // Sattolo's algorithm: a single cycle through every slot, from a fixed seed.
    let mut order: Vec<u64> = (0..slots).collect();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..slots as usize).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % i as u64) as usize);
    }
    let mut next = vec![0u32; (slots * spacing) as usize];
    for (i, &slot) in order.iter().enumerate() {
        let to = order[(i + 1) % order.len()];
        next[(slot * spacing) as usize] = (to * spacing) as u32;
    }
    let bytes: Vec<u8> = next.iter().flat_map(|w| w.to_le_bytes()).collect();
    memory.write(&bytes)?;
    let (next, out) =
        (memory.as_slice().range(0, bytes.len() as u64)?, memory.as_slice().range(bytes.len() as u64, 4)?);
    system.with_kernels(device, |kernels| {
        let timer = Timer::new(system.driver().as_ref())?;
        timer.time(stream, || kernels.chase_on(stream, next, 1000, out))?;
        let seconds = timer.time(stream, || kernels.chase_on(stream, next, hops, out))?;
        Ok(seconds * 1e9 / hops as f64)
    })
}

/// System-scope atomic adds per second by `device` on `memory` (a full grid, 64 Ki counters,
/// fewer when `memory` is smaller than their 256 KiB).
fn atomics(system: &System, device: usize, stream: &DeviceStream<'_>, memory: &Allocation) -> Result<f64> {
    // The counters are a slice of the allocation: a kernel past its end would kill the context.
    let (counters, reps) = (memory.words((1u64 << 16).min(memory.len() as u64 / 4).max(1))?, 64u32);
    system.with_kernels(device, |kernels| {
        let shape = kernels.shape_for(u64::MAX);
        let timer = Timer::new(system.driver().as_ref())?;
        let run = || kernels.atomic_add_sys_on(stream, counters, reps, shape);
        timer.time(stream, run)?;
        let seconds = timer.time(stream, run)?;
        Ok((shape.grid as u64 * shape.block as u64 * reps as u64) as f64 / seconds)
    })
}
