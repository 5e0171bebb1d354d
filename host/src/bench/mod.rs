//! Measurements for `peerpool bench`: bandwidth of the copy engine against
//! peerpool's kernels across each ordered pair (4 KiB to 1 GiB, one direction, and both at
//! once with kernels pulling and pushing), pointer-chase latency, system-scope atomic rates,
//! grant and revoke latency against live bytes, verification and module-load cost (PTX and
//! the sm_90 cubin). Times come from CUDA events where one stream
//! covers the work, else from a stopwatch around work on both GPUs. Medians of repeats. On
//! the simulator both are its virtual clock, so a simulated bench shows what its timing model
//! projects for the machine.
//!
//! `report.rs` holds what a run reports, `clock.rs` how it times, `pair.rs` the per-pair
//! measurements and `costs.rs` the grant and module-load costs; `run` times verification.

mod clock;
mod costs;
mod pair;
mod report;

pub use costs::nvlink_line_rate;
pub use report::{BenchResults, Curve, GrantPoint, PairBench, SkippedPair};

use crate::{CudaError, Error, GrantError, System};
use clock::Stopwatch;
use costs::{cubin_load, grant_curve, ptx_load};

/// The largest transfer size, bytes (64 GiB).
pub const MAX_BYTES: u64 = 1 << 36;
/// The most timed repeats per point.
pub const MAX_REPEATS: usize = 10_000;
/// The most live GiB in the grant curve's pool.
pub const MAX_LIVE_GIB: u64 = 4096;
/// The most pointer-chase hops (a hop takes about a microsecond across NVLink).
pub const MAX_CHASE_HOPS: u64 = 100_000_000;

/// What to measure ([`run`] refuses values outside the ranges below before any work).
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Transfer sizes in bytes: at least one, each a multiple of 16 from 16 to [`MAX_BYTES`].
    pub sizes: Vec<u64>,
    /// Timed repeats per point (after one warm-up): 1 to [`MAX_REPEATS`].
    pub repeats: usize,
    /// Live GiB in the pool for the grant-latency curve: each at most [`MAX_LIVE_GIB`].
    pub live_gib: Vec<u64>,
    /// Pointer-chase hops: 1 to [`MAX_CHASE_HOPS`].
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

impl BenchOptions {
    /// Why these options cannot run, if they cannot.
    fn refusal(&self) -> Option<String> {
        if self.sizes.is_empty() {
            return Some("no transfer size".into());
        }
        if let Some(b) = self.sizes.iter().find(|&&b| b == 0 || b % 16 != 0 || b > MAX_BYTES) {
            return Some(format!("size {b} is not a multiple of 16 from 16 to {MAX_BYTES} (64 GiB)"));
        }
        if !(1..=MAX_REPEATS).contains(&self.repeats) {
            return Some(format!("{} repeats is not 1 to {MAX_REPEATS}", self.repeats));
        }
        if let Some(g) = self.live_gib.iter().find(|&&g| g > MAX_LIVE_GIB) {
            return Some(format!("{g} live GiB is above {MAX_LIVE_GIB}"));
        }
        if !(1..=MAX_CHASE_HOPS).contains(&self.chase_hops) {
            return Some(format!("{} pointer-chase hops is not 1 to {MAX_CHASE_HOPS}", self.chase_hops));
        }
        None
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
pub fn run(system: &System, options: &BenchOptions) -> Result<BenchResults, BenchError> {
    if let Some(why) = options.refusal() {
        return Err(Error::InvalidArgument(format!("bench options: {why}")).into());
    }
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
        pairs.push(pair::pair(system, owner, accessor, max, &BenchOptions { sizes, ..options.clone() })?);
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
    let mut report = BenchResults {
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

/// Microseconds since `start`.
pub fn micros(start: std::time::Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e6
}

/// The median of `samples`' finite values (the upper middle one of an even count); NaN for
/// none. A NaN sample is a measurement that failed: it is left out, not sorted last.
pub fn median(mut samples: Vec<f64>) -> f64 {
    samples.retain(|x| x.is_finite());
    samples.sort_by(f64::total_cmp);
    if samples.is_empty() { f64::NAN } else { samples[samples.len() / 2] }
}
