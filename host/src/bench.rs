//! Measurements for `peerpool bench`, on real GPUs: bandwidth of the copy engine against
//! peerpool's kernels across each ordered pair (4 KiB to 1 GiB, one direction, and both at
//! once with kernels pulling and pushing), pointer-chase latency, system-scope atomic rates,
//! grant and revoke latency against live bytes, verification and module-load cost (PTX and
//! the sm_90 cubin). Times come from CUDA events where one stream
//! covers the work, else from a stopwatch around work on both GPUs. Medians of repeats. On
//! the simulator both are its virtual clock, so a simulated bench shows what its timing model
//! projects for the machine.

use crate::driver::{Driver, Event, ModuleImage, Timeline};
use crate::kernels::BLOCK;
use crate::{
    Allocation, CudaError, DeviceSlice, DeviceStream, Error, GrantError, LoadPath, PoolOptions, Result, System,
};
use serde::Serialize;
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Transfer sizes in bytes (multiples of 16).
    pub sizes: Vec<u64>,
    /// Timed repeats per point (after one warm-up).
    pub repeats: usize,
    /// Live GiB in the pool for the grant-latency curve.
    pub live_gib: Vec<u64>,
    /// Pointer-chase hops.
    pub chase_hops: u64,
    /// Full curves for the first this many ordered pairs (`None`: every pair); the others are
    /// measured at the largest size only, enough for the pair heatmap, so that a machine of
    /// many GPUs is benchmarked in minutes.
    pub curve_pairs: Option<usize>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            sizes: (0..11).map(|i| 4096u64 << (2 * i)).take_while(|&b| b <= 1 << 30).collect(),
            repeats: 10,
            live_gib: vec![0, 1, 8, 32],
            chase_hops: 100_000,
            curve_pairs: None,
        }
    }
}

/// One bandwidth curve: GB/s (10^9 bytes per second) at each size.
#[derive(Clone, Debug, Serialize)]
pub struct Curve {
    /// What moved the bytes, and which way.
    pub path: String,
    /// GB/s per size, in the order of `BenchReport::sizes`.
    pub gbps: Vec<f64>,
}

/// One ordered pair's numbers.
#[derive(Clone, Debug, Serialize)]
pub struct PairBench {
    /// The device whose memory is accessed.
    pub owner: usize,
    /// The device that accesses it.
    pub accessor: usize,
    /// Transfer sizes of this pair's curves, bytes (all of `BenchReport::sizes`, or its
    /// largest alone past `BenchOptions::curve_pairs`).
    pub sizes: Vec<u64>,
    /// Bandwidth curves.
    pub curves: Vec<Curve>,
    /// Pointer-chase latency through the owner's memory from the accessor, ns per hop.
    pub latency_remote_ns: f64,
    /// The same chase on the accessor's own memory.
    pub latency_local_ns: f64,
    /// System-scope atomic adds per second by the accessor on the owner's memory.
    pub atomics_remote_per_s: f64,
    /// The same on the accessor's own memory.
    pub atomics_local_per_s: f64,
}

/// An ordered pair the benchmark left out.
#[derive(Clone, Debug, Serialize)]
pub struct SkippedPair {
    /// The device whose memory would be accessed.
    pub owner: usize,
    /// The device that would access it.
    pub accessor: usize,
    /// Why it was not measured.
    pub reason: String,
}

/// Grant and revoke latency with live bytes in the pool.
#[derive(Clone, Debug, Serialize)]
pub struct GrantPoint {
    /// Live GiB allocated from the pool.
    pub live_gib: u64,
    /// `System::grant` (evidence cached), microseconds.
    pub grant_us: f64,
    /// `System::revoke`, microseconds.
    pub revoke_us: f64,
}

/// Everything `peerpool bench` measured.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// The driver.
    pub driver: String,
    /// Transfer sizes, bytes.
    pub sizes: Vec<u64>,
    /// Per ordered pair whose GPUs reach each other both ways, in schedule order.
    pub pairs: Vec<PairBench>,
    /// Ordered pairs not measured, and why (no peer access one way or the other).
    pub skipped: Vec<SkippedPair>,
    /// The ordered pair (owner, accessor) of the grant curve and the verification time: the
    /// first one measured.
    pub grant_pair: (usize, usize),
    /// Grant latency against live bytes (`grant_pair`).
    pub grant_vs_live: Vec<GrantPoint>,
    /// `System::verify_pair` of `grant_pair`, milliseconds (median).
    pub verify_ms: f64,
    /// `cuModuleLoadData` of peerpool's PTX, milliseconds: first in this process, then median.
    pub ptx_load_first_ms: f64,
    /// Later loads (the driver may cache the JIT result).
    pub ptx_load_ms: f64,
    /// `cuModuleLoadData` of the sm_90 cubin in gpu0's context, milliseconds (median), where
    /// gpu0 is compute capability 9.0 and the cubin is embedded.
    pub sm90_cubin_load_ms: Option<f64>,
    /// The NVLink line rate per direction from `nvidia-smi`, GB/s, when known.
    pub nvlink_line_rate_gbps: Option<f64>,
    /// Headline ratios at the largest size, from this one run.
    pub ratios: Vec<(String, f64)>,
}

impl BenchReport {
    /// The `path` curve of `pair` at the largest size.
    fn at_max(pair: &PairBench, path: &str) -> Option<f64> {
        pair.curves.iter().find(|c| c.path.starts_with(path)).and_then(|c| c.gbps.last().copied())
    }

    /// Kernel over copy engine, both directions over one, copy engine over line rate, remote
    /// over local latency: for every pair, at the largest size.
    fn compute_ratios(&mut self) {
        let mut ratios = Vec::new();
        for p in &self.pairs {
            let tag = format!("gpu{}->gpu{}", p.owner, p.accessor);
            let get = |path: &str| Self::at_max(p, path);
            let pairs = [
                ("kernel read / copy engine owner->accessor", get("kernel read ("), get("copy engine owner->accessor")),
                (
                    "kernel read nc / copy engine owner->accessor",
                    get("kernel read, ld.global.nc"),
                    get("copy engine owner->accessor"),
                ),
                (
                    "kernel copy in / copy engine owner->accessor",
                    get("kernel copy owner->accessor"),
                    get("copy engine owner->accessor"),
                ),
                (
                    "kernel copy out / copy engine accessor->owner",
                    get("kernel copy accessor->owner"),
                    get("copy engine accessor->owner"),
                ),
                (
                    "both directions / one direction (copy engine)",
                    get("copy engine both"),
                    get("copy engine owner->accessor"),
                ),
                (
                    "both directions, kernels push / copy engine",
                    get("kernels both directions at once, push"),
                    get("copy engine both"),
                ),
                (
                    "both directions, kernels pull / copy engine",
                    get("kernels both directions at once, pull"),
                    get("copy engine both"),
                ),
                (
                    "copy engine owner->accessor / NVLink line rate",
                    get("copy engine owner->accessor"),
                    self.nvlink_line_rate_gbps,
                ),
            ];
            for (name, a, b) in pairs {
                if let (Some(a), Some(b)) = (a, b) {
                    ratios.push((format!("{tag} {name}"), a / b));
                }
            }
            ratios.push((format!("{tag} latency remote / local"), p.latency_remote_ns / p.latency_local_ns));
            ratios.push((format!("{tag} atomics remote / local"), p.atomics_remote_per_s / p.atomics_local_per_s));
        }
        self.ratios = ratios;
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() { f64::NAN } else { v[v.len() / 2] }
}

/// Host-side time around work, on the clock of the machine the driver stands for: the
/// simulator's virtual clock where the driver keeps one, else this host's.
struct Stopwatch<'s> {
    timeline: Option<&'s dyn Timeline>,
    virtual_start: Duration,
    start: Instant,
}

impl<'s> Stopwatch<'s> {
    fn start(system: &'s System) -> Self {
        let timeline = system.driver().timeline();
        Stopwatch { timeline, virtual_start: timeline.map_or(Duration::ZERO, |t| t.now()), start: Instant::now() }
    }

    /// Seconds since the start, on the calling thread.
    fn seconds(&self) -> f64 {
        match self.timeline {
            Some(t) => t.now().saturating_sub(self.virtual_start).as_secs_f64(),
            None => self.start.elapsed().as_secs_f64(),
        }
    }
}

/// Two events in the current context, timing work queued on one stream of the same device.
struct Timer<'d> {
    driver: &'d dyn Driver,
    start: Event,
    end: Event,
}

impl<'d> Timer<'d> {
    fn new(driver: &'d dyn Driver) -> Result<Self> {
        let start = driver.event_create(0)?;
        let end = driver.event_create(0).inspect_err(|_| {
            // SAFETY: the event just made, destroyed once.
            let _ = unsafe { driver.event_destroy(start) };
        })?;
        Ok(Timer { driver, start, end })
    }

    /// Seconds the work `queue` puts on `stream` takes on the GPU.
    fn time(&self, stream: &DeviceStream<'_>, queue: impl FnOnce() -> Result<()>) -> Result<f64> {
        // SAFETY: both events are this timer's, live until it drops; the stream is live while
        // borrowed (the caller made both in the same device's context).
        unsafe {
            self.driver.event_record(self.start, stream.handle())?;
            queue()?;
            self.driver.event_record(self.end, stream.handle())?;
            self.driver.event_synchronize(self.end)?;
            Ok(self.driver.event_elapsed_time(self.start, self.end)? as f64 / 1e3)
        }
    }
}

impl Drop for Timer<'_> {
    fn drop(&mut self) {
        // SAFETY: this timer's events, destroyed once.
        unsafe {
            let _ = self.driver.event_destroy(self.start);
            let _ = self.driver.event_destroy(self.end);
        }
    }
}

/// Why a benchmark stopped.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// No ordered pair reaches both ways: nothing to measure.
    #[error("no pair of GPUs reaches each other both ways ({reason})")]
    NoPair {
        /// Why the first pair was skipped.
        reason: String,
    },
    /// A grant or a verification the bench makes failed (a verification's wrong bytes too).
    #[error(transparent)]
    Grant(#[from] GrantError),
    /// A driver call or another peerpool error.
    #[error(transparent)]
    Api(#[from] Error),
}

impl BenchError {
    /// The failed driver call inside, if there is one.
    pub fn cuda(&self) -> Option<&CudaError> {
        match self {
            BenchError::NoPair { .. } => None,
            BenchError::Grant(e) => e.cuda(),
            BenchError::Api(e) => e.cuda(),
        }
    }
}

/// Runs every measurement on every ordered pair whose GPUs reach each other both ways (the
/// others are listed as skipped). Needs at least one such pair.
pub fn run(system: &System, options: &BenchOptions) -> Result<BenchReport, BenchError> {
    let (measured, skipped) = split_pairs(&system.facts()?);
    let Some(&(grant_owner, grant_accessor)) = measured.first() else {
        let reason = skipped.first().map_or("fewer than two GPUs".to_string(), |s| s.reason.clone());
        return Err(BenchError::NoPair { reason });
    };
    // First, so that "first" means the first JIT of the PTX in this process (unless the caller
    // already used the kernels on gpu0).
    let (ptx_load_first_ms, ptx_load_ms) = ptx_load(system, options.repeats)?;
    let sm90_cubin_load_ms = cubin_load(system, options.repeats)?;
    let max = options.sizes.iter().copied().max().unwrap_or(4096);
    let mut pairs = Vec::new();
    for (i, &(owner, accessor)) in measured.iter().enumerate() {
        let sizes = match options.curve_pairs {
            Some(n) if i >= n => vec![max],
            _ => options.sizes.clone(),
        };
        pairs.push(pair(system, owner, accessor, max, &BenchOptions { sizes, ..options.clone() })?);
    }
    let grant_vs_live = grant_curve(system, options, grant_owner, grant_accessor)?;
    let verify_once = || system.verify_pair(grant_owner, grant_accessor).map(drop);
    verify_once()?;
    let mut verify = Vec::new();
    for _ in 0..options.repeats {
        let watch = Stopwatch::start(system);
        verify_once()?;
        verify.push(watch.seconds() * 1e3);
    }
    let mut report = BenchReport {
        driver: system.driver().describe(),
        sizes: options.sizes.clone(),
        pairs,
        skipped,
        grant_pair: (grant_owner, grant_accessor),
        grant_vs_live,
        verify_ms: median(verify),
        ptx_load_first_ms,
        ptx_load_ms,
        sm90_cubin_load_ms,
        nvlink_line_rate_gbps: nvlink_line_rate(),
        ratios: Vec::new(),
    };
    report.compute_ratios();
    Ok(report)
}

/// The ordered pairs to measure, in schedule order (round by round), and those left out: a pair
/// is measured both ways, so both directions need peer access.
fn split_pairs(facts: &crate::facts::Facts) -> (Vec<(usize, usize)>, Vec<SkippedPair>) {
    let reaches = |from: usize, to: usize| facts.peers.iter().any(|p| p.from == from && p.to == to && p.can_access);
    let mut measured = Vec::new();
    let mut skipped = Vec::new();
    for (owner, accessor) in crate::rounds::Schedule::round_robin(facts.devices.len()).ordered_pairs() {
        let reason = match (reaches(accessor, owner), reaches(owner, accessor)) {
            (true, true) => {
                measured.push((owner, accessor));
                continue;
            }
            (false, _) => format!("gpu{accessor} cannot access gpu{owner} as a peer"),
            (true, false) => format!("gpu{owner} cannot access gpu{accessor} as a peer (needed for both directions)"),
        };
        skipped.push(SkippedPair { owner, accessor, reason });
    }
    (measured, skipped)
}

/// Bandwidth, latency and atomics for `owner -> accessor`.
fn pair(
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

/// Grant and revoke latency (`owner -> accessor`, evidence cached) with live bytes in the pool.
fn grant_curve(
    system: &System,
    options: &BenchOptions,
    owner: usize,
    accessor: usize,
) -> Result<Vec<GrantPoint>, BenchError> {
    let mut points = Vec::new();
    for &gib in &options.live_gib {
        let pool = system.create_pool(owner, PoolOptions::default())?;
        let _live = if gib > 0 { Some(system.alloc(pool.as_ref(), (gib << 30) as usize)?) } else { None };
        let (mut grant, mut revoke) = (Vec::new(), Vec::new());
        for _ in 0..options.repeats.min(5) {
            let watch = Stopwatch::start(system);
            system.grant(pool.as_ref(), accessor)?;
            grant.push(watch.seconds() * 1e6);
            let watch = Stopwatch::start(system);
            system.revoke(pool.as_ref(), accessor)?;
            revoke.push(watch.seconds() * 1e6);
        }
        points.push(GrantPoint { live_gib: gib, grant_us: median(grant), revoke_us: median(revoke) });
    }
    Ok(points)
}

/// `cuModuleLoadData` of the PTX in gpu0's context: the first load in this process (unless
/// the system already loaded it), then the median of later loads.
fn ptx_load(system: &System, repeats: usize) -> Result<(f64, f64)> {
    let mut times = system.within(0, || load_times(system, ModuleImage::Ptx(crate::ptx_image()), repeats.max(2)))?;
    let first = times.remove(0);
    Ok((first, median(times)))
}

/// Median `cuModuleLoadData` of the sm_90 cubin in gpu0's context, when gpu0 can run it.
fn cubin_load(system: &System, repeats: usize) -> Result<Option<f64>> {
    system.within(0, || match crate::kernels::cubin_for(system.driver().as_ref(), 0)? {
        Some(cubin) => Ok(Some(median(load_times(system, cubin, repeats.max(1))?))),
        None => Ok(None),
    })
}

/// Milliseconds of each of `rounds` loads (and unloads) of `image` in the current context.
fn load_times(system: &System, image: ModuleImage<'_>, rounds: usize) -> Result<Vec<f64>> {
    let driver = system.driver();
    let mut times = Vec::new();
    for _ in 0..rounds {
        let watch = Stopwatch::start(system);
        let module = driver.module_load_data(image)?;
        times.push(watch.seconds() * 1e3);
        // SAFETY: the module just loaded, unloaded once; no function of it was looked up.
        unsafe { driver.module_unload(module) }?;
    }
    Ok(times)
}

/// The NVLink line rate per direction between GPUs, GB/s, from `nvidia-smi nvlink -s -i 0`:
/// the sum of the active links' speeds. `None` where nvidia-smi does not run or shows none.
pub fn nvlink_line_rate() -> Option<f64> {
    let out = std::process::Command::new("nvidia-smi").args(["nvlink", "-s", "-i", "0"]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let total: f64 = text
        .lines()
        .filter_map(|l| l.split(':').nth(1))
        .filter_map(|v| v.trim().strip_suffix("GB/s"))
        .filter_map(|v| v.trim().parse::<f64>().ok())
        .sum();
    (total > 0.0).then_some(total)
}
