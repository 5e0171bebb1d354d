//! How many blocks of a kernel a multiprocessor holds at once, by an H200's limits: its threads,
//! blocks, registers and shared memory (with the driver's reserve per block). What
//! `cuOccupancyMaxActiveBlocksPerMultiprocessor` answers, and what bounds a cooperative launch.
//! A PTX kernel's registers are the JIT's choice, taken as `modules::PTX_REGISTERS`, which never
//! binds: a GPU may hold fewer blocks of a kernel that needs more.

use super::attributes::recorded;
use super::modules::{PTX_REGISTERS, attr, attribute, described, fail, registers_per_warp};
use super::state::{SimResult, State};
use peerpool::CudaCode;

/// The raw numbers of the H200 attributes this reads (`attributes/h200.txt`).
const MAX_THREADS_PER_MULTIPROCESSOR: u32 = 39;
const MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: u32 = 81;
const MAX_REGISTERS_PER_MULTIPROCESSOR: u32 = 82;
const MAX_BLOCKS_PER_MULTIPROCESSOR: u32 = 106;
const RESERVED_SHARED_MEMORY_PER_BLOCK: u32 = 111;
/// Threads an H200's multiprocessor holds: no block size can do better.
const SM_THREADS: u64 = 2048;

fn h200(raw: u32) -> u64 {
    recorded(raw).expect("an attribute the H200 answered") as u64
}

/// Blocks of `function` with `threads` threads and `dynamic` bytes of dynamic shared memory that
/// one multiprocessor holds at once: 0 where such a block cannot be launched at all.
pub(super) fn blocks_per_multiprocessor(s: &State, function: u64, threads: u64, dynamic: u64) -> SimResult<u64> {
    let (f, contents, kernel) = described(s, function)?;
    let cc = s.topo.devices[f.device].compute_capability;
    let most = |which| attribute(contents, kernel, &f.settings, cc, which).map(|v| v.max(0) as u64);
    if threads == 0 {
        return fail(CudaCode::CUDA_ERROR_INVALID_VALUE);
    }
    if threads > most(attr::MAX_THREADS_PER_BLOCK)? || dynamic > most(attr::MAX_DYNAMIC_SHARED_SIZE_BYTES)? {
        return Ok(0);
    }
    let warps = threads.div_ceil(32);
    let per_warp = registers_per_warp(kernel.registers.unwrap_or(PTX_REGISTERS));
    let shared = (kernel.shared_bytes as u64 + dynamic).next_multiple_of(128) + h200(RESERVED_SHARED_MEMORY_PER_BLOCK);
    Ok(h200(MAX_BLOCKS_PER_MULTIPROCESSOR)
        .min(h200(MAX_THREADS_PER_MULTIPROCESSOR) / (warps * 32))
        .min(h200(MAX_REGISTERS_PER_MULTIPROCESSOR) / (warps * per_warp))
        .min(h200(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) / shared))
}

/// The block size that lets a multiprocessor hold the most threads of `function` (the largest
/// of those that do), blocks of at most `limit` threads (0: no limit) with `bytes_of` bytes of
/// dynamic shared memory for each size tried; and the grid that fills the device with them.
/// Sizes are tried from the largest down, in steps of a warp, as CUDA's runtime header does.
pub(super) fn potential_block_size(
    s: &State,
    function: u64,
    bytes_of: &dyn Fn(i32) -> usize,
    limit: i32,
) -> SimResult<(i32, i32)> {
    let (f, contents, kernel) = described(s, function)?;
    let cc = s.topo.devices[f.device].compute_capability;
    let most = attribute(contents, kernel, &f.settings, cc, attr::MAX_THREADS_PER_BLOCK)?;
    let limit = if limit <= 0 { most } else { limit.min(most) };
    let (mut best, mut blocks, mut block) = (0, 0, 0);
    for aligned in (1..=(limit.max(0) as u32).div_ceil(32)).rev().map(|w| w * 32) {
        let threads = aligned.min(limit as u32);
        let fit = blocks_per_multiprocessor(s, function, threads as u64, bytes_of(threads as i32) as u64)?;
        if fit * threads as u64 > best {
            (best, blocks, block) = (fit * threads as u64, fit, threads);
        }
        if best == SM_THREADS {
            break;
        }
    }
    Ok(((blocks * s.topo.devices[f.device].sms as u64) as i32, block as i32))
}

/// An H200's multiprocessors in the groups that a cluster's blocks are placed within (each
/// block of a cluster on a multiprocessor of one group). Every answer of
/// `cuOccupancyMaxActiveClusters` measured on one H200 is, for clusters of `c` blocks and `b`
/// blocks a multiprocessor, the sum over the groups of at least `c` multiprocessors of
/// `b * size / c` rounded down (`docs/hardware/2026-12-03-jump-tables-grid-sync/cluster_occupancy.txt`).
const H200_CLUSTER_GROUPS: [u64; 12] = [18, 18, 16, 16, 16, 16, 16, 8, 2, 2, 2, 2];
/// Blocks a multiprocessor holds for clusters: never more than 8 in what the H200 answered,
/// even for blocks of which it holds 32 in an ordinary launch.
const CLUSTER_BLOCKS_PER_MULTIPROCESSOR: u64 = 8;

/// How many clusters of `function` the device holds at once, with blocks of `threads` threads
/// and `dynamic` bytes of dynamic shared memory, in clusters of `asked` (the launch's) or the
/// kernel's own dimensions: 0 without either. A portable kernel's cluster of more than 8 blocks
/// is `CUDA_ERROR_INVALID_CLUSTER_SIZE`; a non-portable one has no limit here (the H200 answered
/// for 17). A device of another size than an H200's is taken as groups of 16 multiprocessors
/// and one of the rest.
pub(super) fn active_clusters(
    s: &State,
    function: u64,
    threads: u64,
    dynamic: u64,
    asked: Option<[u32; 3]>,
) -> SimResult<u64> {
    let (f, _, kernel) = described(s, function)?;
    let Some(dims) = asked.or(kernel.cluster).or(f.settings.set_cluster()) else { return Ok(0) };
    let size = dims.iter().map(|&d| d as u64).product::<u64>();
    if size == 0 || (f.settings.non_portable_cluster == 0 && size > f.settings.most_cluster_blocks()) {
        return fail(CudaCode::CUDA_ERROR_INVALID_CLUSTER_SIZE);
    }
    let b = blocks_per_multiprocessor(s, function, threads, dynamic)?.min(CLUSTER_BLOCKS_PER_MULTIPROCESSOR);
    let sms = s.topo.devices[f.device].sms.max(0) as u64;
    let groups: Vec<u64> = match sms == H200_CLUSTER_GROUPS.iter().sum::<u64>() {
        true => H200_CLUSTER_GROUPS.to_vec(),
        false => (0..sms.div_ceil(16)).map(|g| (sms - g * 16).min(16)).collect(),
    };
    Ok(groups.iter().filter(|&&g| g >= size).map(|&g| b * g / size).sum())
}

/// The most blocks a cluster of `function` may have: 8, or 16 where the kernel allows
/// non-portable sizes, whatever the blocks' size (as the H200 answered).
pub(super) fn potential_cluster_size(s: &State, function: u64) -> SimResult<u64> {
    let (f, _, _) = described(s, function)?;
    Ok(f.settings.most_cluster_blocks())
}
