//! Pool accounting: allocation from a pool (both `cuMemAllocFromPoolAsync` and
//! `cuMemAllocAsync`), the attributes `cuMemPoolGetAttribute` reads and `cuMemPoolSetAttribute`
//! writes, and trimming.
//!
//! The simulator reserves exactly the bytes allocated (a real pool reserves in larger chunks);
//! it keeps freed bytes reserved until a synchronisation releases what exceeds the release
//! threshold, or `cuMemPoolTrimTo` does.

use super::memory::{Advice, Backing, Exhausted, HostKind};
use super::state::{PoolPlace, SimResult, State};
use peerpool::CudaCode;
use peerpool::driver::PoolAttribute;

fn fail<T>(code: CudaCode) -> SimResult<T> {
    Err(code.into())
}

/// `bytes` from pool `id` on the device's memory; `CUDA_ERROR_OUT_OF_MEMORY` past the pool's
/// maximum or the device's memory. Zero bytes give the null pointer, as the driver does.
pub(super) fn alloc(s: &mut State, id: usize, bytes: usize) -> SimResult<u64> {
    if s.shares.imported_pools.contains_key(&id) {
        return fail(CudaCode::CUDA_ERROR_INVALID_VALUE); // imported pools cannot allocate (documented)
    }
    if bytes == 0 {
        return Ok(0);
    }
    let (device, max, used) = (s.pools[id].device, s.pools[id].max_size, s.pools[id].stats.used);
    if max != 0 && used.saturating_add(bytes as u64) > max {
        return fail(CudaCode::CUDA_ERROR_OUT_OF_MEMORY);
    }
    let base = match s.pools[id].place {
        PoolPlace::Device => {
            let capacity = s.topo.devices[device].total_memory;
            s.memory
                .alloc(device, bytes as u64, capacity, Some(id))
                .map_err(|_: Exhausted| CudaCode::CUDA_ERROR_OUT_OF_MEMORY)?
        }
        // Host memory, at its own address: not charged to a device.
        place => {
            let kind = match place {
                PoolPlace::Managed => HostKind::Managed(Advice::default()),
                _ => HostKind::PoolOnHost,
            };
            let backing = Backing::host(bytes).ok_or(CudaCode::CUDA_ERROR_OUT_OF_MEMORY)?;
            s.memory
                .place_host(device, backing, bytes as u64, Some(id), kind)
                .ok_or(CudaCode::CUDA_ERROR_OUT_OF_MEMORY)?
        }
    };
    s.count_pool_allocation(id, 1);
    let stats = &mut s.pools[id].stats;
    stats.used += bytes as u64;
    stats.used_high = stats.used_high.max(stats.used);
    stats.reserved = stats.reserved.max(stats.used);
    stats.reserved_high = stats.reserved_high.max(stats.reserved);
    Ok(base)
}

/// What `device`'s pools keep reserved beyond what is allocated from them: device memory that
/// `cuMemGetInfo` does not count free (the simulator does not refuse an allocation for it).
pub(super) fn unused_reserve(s: &State, device: usize) -> u64 {
    let on_device = s.pools.iter().filter(|p| p.device == device && matches!(p.place, PoolPlace::Device));
    on_device.map(|p| p.stats.reserved.saturating_sub(p.stats.used)).sum()
}

/// Gives `bytes` back to pool `id` (they stay reserved until released).
pub(super) fn freed(s: &mut State, id: usize, bytes: u64) {
    s.pools[id].stats.used -= bytes;
}

/// A synchronisation on `device`: each of its pools gives back what it reserves beyond both
/// its use and its release threshold.
pub(super) fn release_on_sync(s: &mut State, device: usize) {
    for pool in s.pools.iter_mut().filter(|p| p.device == device) {
        let stats = &mut pool.stats;
        if stats.reserved > stats.release_threshold {
            stats.reserved = stats.used.max(stats.release_threshold);
        }
    }
}

/// `cuMemPoolTrimTo`.
pub(super) fn trim(s: &mut State, id: usize, keep: u64) {
    let stats = &mut s.pools[id].stats;
    stats.reserved = stats.used.max(stats.reserved.min(keep));
}

/// `cuMemPoolGetAttribute`.
pub(super) fn get(s: &State, id: usize, attribute: PoolAttribute) -> u64 {
    use PoolAttribute::*;
    let stats = &s.pools[id].stats;
    match attribute {
        ReuseFollowEventDependencies => !stats.reuse_off[0] as u64,
        ReuseAllowOpportunistic => !stats.reuse_off[1] as u64,
        ReuseAllowInternalDependencies => !stats.reuse_off[2] as u64,
        ReleaseThreshold => stats.release_threshold,
        ReservedMemCurrent => stats.reserved,
        ReservedMemHigh => stats.reserved_high,
        UsedMemCurrent => stats.used,
        UsedMemHigh => stats.used_high,
    }
}

/// `cuMemPoolSetAttribute`: the reuse flags take any `int` (non-zero is on), the threshold any
/// size, the high-water marks only 0 (a reset to the current value); the current values are
/// read-only (`CUDA_ERROR_INVALID_VALUE`).
pub(super) fn set(s: &mut State, id: usize, attribute: PoolAttribute, value: u64) -> SimResult<()> {
    use PoolAttribute::*;
    let stats = &mut s.pools[id].stats;
    match attribute {
        ReuseFollowEventDependencies => stats.reuse_off[0] = value as i32 == 0,
        ReuseAllowOpportunistic => stats.reuse_off[1] = value as i32 == 0,
        ReuseAllowInternalDependencies => stats.reuse_off[2] = value as i32 == 0,
        ReleaseThreshold => stats.release_threshold = value,
        ReservedMemHigh if value == 0 => stats.reserved_high = stats.reserved,
        UsedMemHigh if value == 0 => stats.used_high = stats.used,
        _ => return fail(CudaCode::CUDA_ERROR_INVALID_VALUE),
    }
    Ok(())
}

/// What an allocation node captured from `cuMemAllocAsync` or `cuMemAllocFromPoolAsync` takes
/// from its pool: the device, the handle types and, by device ordinal, the access the pool
/// grants at the call (a later `cuMemPoolSetAccess` does not reach the node).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphPool {
    pub device: i32,
    pub handle_types: peerpool::driver::HandleKinds,
    pub access: Vec<peerpool::driver::Access>,
}

impl super::SimDriver {
    /// The pool a capture on `stream` allocates from (`pool`, or the stream's device's current
    /// pool), as [`GraphPool`]. A pool on the host or of managed memory is
    /// `CUDA_ERROR_NOT_SUPPORTED`: graph allocations of device memory only are simulated.
    pub fn graph_pool(
        &self,
        stream: peerpool::driver::Stream,
        pool: Option<peerpool::driver::Pool>,
    ) -> peerpool::driver::DriverResult<GraphPool> {
        self.run("cuMemAllocAsync", |s| {
            let device = s.stream_device_any(stream)?;
            let id = match pool {
                Some(p) => s.pool(p.0)?,
                None => s.current_pools[device],
            };
            let rec = &s.pools[id];
            if rec.place != PoolPlace::Device {
                return fail(CudaCode::CUDA_ERROR_NOT_SUPPORTED);
            }
            Ok(GraphPool { device: rec.device as i32, handle_types: rec.handle_types, access: rec.access.clone() })
        })
    }
}
