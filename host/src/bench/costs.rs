//! What one-off operations cost: grant and revoke against live bytes, module loads (PTX and
//! the sm_90 cubin), and the NVLink line rate the ratios are read against.

use super::clock::Stopwatch;
use super::report::GrantPoint;
use super::{BenchError, BenchOptions, median};
use crate::driver::ModuleImage;
use crate::{PoolOptions, Result, System};

/// Grant and revoke latency (`owner -> accessor`, evidence cached) with live bytes in the pool.
pub(super) fn grant_curve(
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
pub(super) fn ptx_load(system: &System, repeats: usize) -> Result<(f64, f64)> {
    let mut times = system.within(0, || load_times(system, ModuleImage::Ptx(crate::ptx_image()), repeats.max(2)))?;
    let first = times.remove(0);
    Ok((first, median(times)))
}

/// Median `cuModuleLoadData` of the sm_90 cubin in gpu0's context, when gpu0 can run it.
pub(super) fn cubin_load(system: &System, repeats: usize) -> Result<Option<f64>> {
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
