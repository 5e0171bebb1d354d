//! What a benchmark run reports: curves per ordered pair, the pairs skipped and why, the grant
//! curve and load costs, and the ratios derived from them.

use serde::Serialize;

/// One bandwidth curve: GB/s (10^9 bytes per second) at each size.
#[derive(Clone, Debug, Serialize)]
pub struct Curve {
    /// What moved the bytes, and which way.
    pub path: String,
    /// GB/s per size, in the order of `BenchResults::sizes`.
    pub gbps: Vec<f64>,
}

/// One ordered pair's numbers.
#[derive(Clone, Debug, Serialize)]
pub struct PairBench {
    /// The device whose memory is accessed.
    pub owner: usize,
    /// The device that accesses it.
    pub accessor: usize,
    /// Transfer sizes of this pair's curves, bytes (all of `BenchResults::sizes`, or its
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
pub struct BenchResults {
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

impl BenchResults {
    /// The `path` curve of `pair` at the largest size.
    fn at_max(pair: &PairBench, path: &str) -> Option<f64> {
        pair.curves.iter().find(|c| c.path.starts_with(path)).and_then(|c| c.gbps.last().copied())
    }

    /// Kernel over copy engine, both directions over one, copy engine over line rate, remote
    /// over local latency: for every pair, at the largest size.
    pub(super) fn compute_ratios(&mut self) {
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
