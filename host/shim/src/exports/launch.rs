//! Launches. peerpool's own kernels run natively on the simulator (one-dimensional, as peerpool
//! launches them); every other kernel runs from its module's PTX on the simulator's executor,
//! with the parameter buffer built here from `kernelParams` or `extra` as the driver builds it.

use crate::abi::{function, out, stream};
use crate::boundary::{code, entry, name_once_owned, sim};
use crate::graphs::{self, Work};
use cudarc::driver::sys::{CUfunction, CUlaunchAttribute, CUlaunchConfig, CUoccupancyB2DSize, CUresult, CUstream};
use peerpool::driver::{KernelArg, LaunchShape};
use peerpool_sim::{PtxLaunch, PtxLaunchHow};
use std::ffi::{c_int, c_uint, c_void};

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernel(
    f: CUfunction,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared: c_uint,
    h_stream: CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    entry!(cuLaunchKernel(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared, h_stream, params, extra), {
        let shape = Shape { grid: [grid_x, grid_y, grid_z], block: [block_x, block_y, block_z], shared };
        launch(f, shape, h_stream, params, extra, PtxLaunchHow::default())
    })
}

/// Every block resident at once, with a grid workspace, so that `grid.sync()` works.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchCooperativeKernel(
    f: CUfunction,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared: c_uint,
    h_stream: CUstream,
    params: *mut *mut c_void,
) -> CUresult {
    entry!(cuLaunchCooperativeKernel(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared, h_stream, params), {
        let shape = Shape { grid: [grid_x, grid_y, grid_z], block: [block_x, block_y, block_z], shared };
        let how = PtxLaunchHow { cooperative: true, cluster: None };
        launch(f, shape, h_stream, params, std::ptr::null_mut(), how)
    })
}

/// Attributes that do not change what a kernel computes are accepted and have no effect on
/// the simulator (its launches run in order, to their end); the cooperative one makes the
/// launch [`cuLaunchCooperativeKernel`]'s, the cluster dimension launches in clusters; the
/// others are `CUDA_ERROR_NOT_SUPPORTED`, named once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernelEx(
    config: *const CUlaunchConfig,
    f: CUfunction,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    entry!(cuLaunchKernelEx(config, f, params, extra), {
        let Some(c) = config.as_ref() else { return Err(CUresult::CUDA_ERROR_INVALID_VALUE) };
        let how = how_of(c)?;
        let shape = Shape {
            grid: [c.gridDimX, c.gridDimY, c.gridDimZ],
            block: [c.blockDimX, c.blockDimY, c.blockDimZ],
            shared: c.sharedMemBytes,
        };
        launch(f, shape, c.hStream, params, extra, how)
    })
}

/// What `c`'s attributes ask of a launch.
///
/// # Safety
/// `c.attrs` points at `c.numAttrs` attributes, or is null.
unsafe fn how_of(c: &CUlaunchConfig) -> Result<PtxLaunchHow, CUresult> {
    if c.numAttrs > 0 && c.attrs.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let mut how = PtxLaunchHow::default();
    for i in 0..c.numAttrs as usize {
        // Read as bytes: a C caller may pass an id this build's enum does not have.
        // SAFETY: the caller's: attribute `i` is there.
        let at = unsafe { c.attrs.cast::<u8>().add(i * size_of::<CUlaunchAttribute>()) };
        // SAFETY: as above; an attribute's value starts 8 bytes in.
        unsafe { attribute(at.cast::<u32>().read_unaligned(), at.add(8), &mut how)? };
    }
    Ok(how)
}

/// A launch's dimensions and dynamic shared memory.
#[derive(Clone, Copy)]
pub(crate) struct Shape {
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) shared: u32,
}

/// A launch of `f` as a graph node's work: its parameters copied now.
///
/// # Safety
/// As [`launch`].
pub(crate) unsafe fn kernel_work(
    f: CUfunction,
    shape: Shape,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    how: PtxLaunchHow,
) -> Result<Work, CUresult> {
    let layout = sim().param_layout(function(f).0).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    // SAFETY: the caller's.
    let buffer = unsafe { parameter_buffer(&layout, params, extra)? };
    let (grid, block, shared) = (shape.grid, shape.block, shape.shared);
    Ok(Work::Kernel(graphs::Kernel { function: f as usize, grid, block, shared, how, buffer, layout }))
}

/// A kernel node's launch on `h_stream`, from the parameters it copied.
pub(crate) fn replay_kernel(k: &graphs::Kernel, h_stream: CUstream) -> crate::boundary::Answer {
    let d = sim();
    let f = function(k.function as CUfunction);
    if !d.runs_natively(f) {
        // The buffer as the driver would build it: launched as it is.
        let launch = PtxLaunch { grid: k.grid, block: k.block, shared: k.shared, params: &k.buffer };
        return code(d.launch_ptx_how(f, &launch, stream(h_stream), k.how));
    }
    let mut buffer = k.buffer.clone();
    let base = buffer.as_mut_ptr();
    let mut params: Vec<*mut c_void> = k.layout.iter().map(|&(offset, _)| base.wrapping_add(offset).cast()).collect();
    let shape = Shape { grid: k.grid, block: k.block, shared: k.shared };
    let f = k.function as CUfunction;
    // SAFETY: each parameter's pointer is into the buffer, at its offset, with its size there
    // (the buffer was built by this layout).
    unsafe { launch(f, shape, h_stream, params.as_mut_ptr(), std::ptr::null_mut(), k.how) }
}

/// Launches `f`: natively for peerpool's kernels (which never synchronise their grid or use
/// clusters, so `how` changes nothing for them), from PTX for the others.
///
/// # Safety
/// `params` and `extra` are as `cuLaunchKernel` documents them for `f`'s parameters.
unsafe fn launch(
    f: CUfunction,
    shape: Shape,
    h_stream: CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    how: PtxLaunchHow,
) -> crate::boundary::Answer {
    // SAFETY: the caller's.
    if let Some(done) =
        graphs::capture(h_stream as usize as u64, || unsafe { kernel_work(f, shape, params, extra, how) })
    {
        return done;
    }
    let d = sim();
    let layout = d.param_layout(function(f).0).unwrap_or_default();
    if !d.runs_natively(function(f)) {
        // SAFETY: the caller's.
        let buffer = unsafe { parameter_buffer(&layout, params, extra)? };
        let launch = PtxLaunch { grid: shape.grid, block: shape.block, shared: shape.shared, params: &buffer };
        return code(d.launch_ptx_how(function(f), &launch, stream(h_stream), how));
    }
    if shape.grid[1..] != [1, 1] || shape.block[1..] != [1, 1] || shape.shared != 0 || !extra.is_null() {
        return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
    }
    if params.is_null() && !layout.is_empty() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let args: Vec<KernelArg> = (0..layout.len())
        .map(|i| {
            // SAFETY: the caller's: `params[i]` points at parameter `i`, of its size.
            let at = unsafe { params.add(i).read() };
            match layout[i].1 {
                4 => KernelArg::U32(unsafe { at.cast::<u32>().read_unaligned() }),
                _ => KernelArg::U64(unsafe { at.cast::<u64>().read_unaligned() }),
            }
        })
        .collect();
    let shape = LaunchShape { grid: shape.grid[0], block: shape.block[0] };
    code(d.launch_kernel(function(f), shape, stream(h_stream), &args))
}

/// `CU_LAUNCH_PARAM_*`: the keys of `extra`.
const PARAM_END: usize = 0;
const PARAM_BUFFER_POINTER: usize = 1;
const PARAM_BUFFER_SIZE: usize = 2;
/// The most bytes of parameters a kernel may take (CUDA 12.1 and later).
const MOST_PARAM_BYTES: usize = 32_764;
/// The most threads a block may have.
const MOST_BLOCK_THREADS: c_int = 1024;

/// The kernel's parameter buffer: each parameter copied from `params[i]` to its offset, or the
/// buffer `extra` names. One of the two, not both.
///
/// # Safety
/// A non-null `params` holds a pointer to each parameter, of its size; a non-null `extra` is a
/// `CU_LAUNCH_PARAM_END`-terminated list of keys and values.
unsafe fn parameter_buffer(
    layout: &[(usize, usize)],
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Result<Vec<u8>, CUresult> {
    let invalid = Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    let len = layout.iter().map(|&(offset, size)| offset + size).max().unwrap_or(0);
    if !params.is_null() {
        if !extra.is_null() {
            return invalid;
        }
        let mut buffer = vec![0u8; len];
        for (i, &(offset, size)) in layout.iter().enumerate() {
            // SAFETY: the caller's: `params[i]` points at `size` bytes.
            let from = unsafe { std::slice::from_raw_parts(params.add(i).read().cast::<u8>(), size) };
            buffer[offset..offset + size].copy_from_slice(from);
        }
        return Ok(buffer);
    }
    if extra.is_null() {
        return match len {
            0 => Ok(Vec::new()),
            _ => invalid,
        };
    }
    let (mut pointer, mut size) = (None, None);
    // Each key at most once, then the end: a longer list is not one the driver takes.
    for pair in 0..3 {
        // SAFETY: the caller's: keys and values until the end key.
        let (key, value) = unsafe { (extra.add(2 * pair).read() as usize, extra.add(2 * pair + 1)) };
        match key {
            PARAM_END => break,
            PARAM_BUFFER_POINTER => pointer = Some(unsafe { value.read() }),
            PARAM_BUFFER_SIZE => size = Some(unsafe { value.read().cast::<usize>().read_unaligned() }),
            _ => return invalid,
        }
    }
    match (pointer, size) {
        (Some(p), Some(n)) if !p.is_null() && n <= MOST_PARAM_BYTES => {
            // SAFETY: the caller's: the buffer holds `n` bytes.
            Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n) }.to_vec())
        }
        _ => invalid,
    }
}

/// What a launch attribute asks, into `how`; an error for one the simulator cannot honour.
/// It honours by ignoring them hints about caches, scheduling, priority and
/// memory-synchronisation domains. Programmatic serialisation only lets a launch overlap the
/// one before it, which the simulator's in-order launches never do.
///
/// # Safety
/// `value` points at the attribute's 64-byte value.
unsafe fn attribute(id: u32, value: *const u8, how: &mut PtxLaunchHow) -> crate::boundary::Answer {
    use cudarc::driver::sys::CUlaunchAttributeID::*;
    // SAFETY: the caller's.
    let word = |i: usize| unsafe { value.cast::<u32>().add(i).read_unaligned() };
    let hints = [
        CU_LAUNCH_ATTRIBUTE_IGNORE,
        CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
        CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY,
        CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
        CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        CU_LAUNCH_ATTRIBUTE_PRIORITY,
        CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP,
        CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
    ];
    match id {
        _ if hints.iter().any(|&hint| hint as u32 == id) => return Ok(()),
        c if c == CU_LAUNCH_ATTRIBUTE_COOPERATIVE as u32 => {
            how.cooperative = word(0) != 0;
            return Ok(());
        }
        c if c == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION as u32 => {
            how.cluster = Some([word(0), word(1), word(2)]);
            return Ok(());
        }
        _ => {}
    }
    let what = "changes what a launch does and is not simulated: CUDA_ERROR_NOT_SUPPORTED";
    name_once_owned(format!("cuLaunchKernelEx: launch attribute {id}"), what);
    Err(CUresult::CUDA_ERROR_NOT_SUPPORTED)
}

/// How many blocks of `f` a multiprocessor holds at once, by an H200's limits; registers as
/// `cuFuncGetAttribute` gives them (for PTX, the simulator's assumption).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessor(
    blocks: *mut c_int,
    f: CUfunction,
    threads: c_int,
    dynamic: usize,
) -> CUresult {
    entry!(cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, f, threads, dynamic), {
        out(blocks, code(sim().occupancy_max_active_blocks(function(f), threads, dynamic))?)
    })
}

/// [`cuOccupancyMaxActiveBlocksPerMultiprocessor`]: its flags only concern caches.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    blocks: *mut c_int,
    f: CUfunction,
    threads: c_int,
    dynamic: usize,
    flags: c_uint,
) -> CUresult {
    entry!(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, f, threads, dynamic, flags), {
        occupancy_flags(flags)?;
        out(blocks, code(sim().occupancy_max_active_blocks(function(f), threads, dynamic))?)
    })
}

/// How many clusters of `f` the device holds at once with `config`'s block size, dynamic
/// shared memory and cluster dimension (or the kernel's own): the sum, over an H200's groups of
/// multiprocessors, of the clusters each holds. 0 without a cluster dimension.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxActiveClusters(
    clusters: *mut c_int,
    f: CUfunction,
    config: *const CUlaunchConfig,
) -> CUresult {
    entry!(cuOccupancyMaxActiveClusters(clusters, f, config), {
        let Some(c) = config.as_ref() else { return Err(CUresult::CUDA_ERROR_INVALID_VALUE) };
        let how = how_of(c)?;
        let launch = PtxLaunch {
            grid: [c.gridDimX, c.gridDimY, c.gridDimZ],
            block: [c.blockDimX, c.blockDimY, c.blockDimZ],
            shared: c.sharedMemBytes,
            params: &[],
        };
        out(clusters, code(sim().occupancy_max_active_clusters(function(f), &launch, how.cluster))?)
    })
}

/// The most blocks a cluster of `f` may have: 8, or 16 where it allows non-portable sizes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxPotentialClusterSize(
    size: *mut c_int,
    f: CUfunction,
    config: *const CUlaunchConfig,
) -> CUresult {
    entry!(cuOccupancyMaxPotentialClusterSize(size, f, config), {
        let Some(c) = config.as_ref() else { return Err(CUresult::CUDA_ERROR_INVALID_VALUE) };
        how_of(c)?;
        out(size, code(sim().occupancy_max_potential_cluster_size(function(f)))?)
    })
}

/// The occupancy calls' flags: none, or the one about caches, which changes nothing here.
fn occupancy_flags(flags: c_uint) -> crate::boundary::Answer {
    let caches = cudarc::driver::sys::CUoccupancy_flags::CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE as c_uint;
    match flags & !caches {
        0 => Ok(()),
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

/// The block size that lets a multiprocessor hold the most threads of `f`, and the grid that
/// fills the device. The caller's `bytes_of` is asked first, for every size a block may have
/// (each multiple of a warp, and the limit), so that none of its code runs inside the
/// simulator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxPotentialBlockSize(
    grid: *mut c_int,
    block: *mut c_int,
    f: CUfunction,
    bytes_of: CUoccupancyB2DSize,
    bytes: usize,
    limit: c_int,
) -> CUresult {
    entry!(cuOccupancyMaxPotentialBlockSize(grid, block, f, bytes_of, bytes, limit), {
        potential_block_size(grid, block, f, bytes_of, bytes, limit)
    })
}

/// [`cuOccupancyMaxPotentialBlockSize`]: its flags only concern caches.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuOccupancyMaxPotentialBlockSizeWithFlags(
    grid: *mut c_int,
    block: *mut c_int,
    f: CUfunction,
    bytes_of: CUoccupancyB2DSize,
    bytes: usize,
    limit: c_int,
    flags: c_uint,
) -> CUresult {
    entry!(cuOccupancyMaxPotentialBlockSizeWithFlags(grid, block, f, bytes_of, bytes, limit, flags), {
        occupancy_flags(flags)?;
        potential_block_size(grid, block, f, bytes_of, bytes, limit)
    })
}

/// # Safety
/// `grid` and `block` are null or writable; `bytes_of`, if given, may be called with any block
/// size.
unsafe fn potential_block_size(
    grid: *mut c_int,
    block: *mut c_int,
    f: CUfunction,
    bytes_of: CUoccupancyB2DSize,
    bytes: usize,
    limit: c_int,
) -> crate::boundary::Answer {
    if grid.is_null() || block.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let most = MOST_BLOCK_THREADS;
    let sizes: Vec<c_int> =
        (1..=most / 32).map(|w| w * 32).chain((limit > 0 && limit % 32 != 0).then_some(limit)).collect();
    // SAFETY: the caller's: `bytes_of` takes a block size.
    let table: Vec<(c_int, usize)> = sizes.iter().map(|&t| (t, bytes_of.map_or(bytes, |b| unsafe { b(t) }))).collect();
    let lookup = |t: c_int| table.iter().find(|e| e.0 == t).map_or(bytes, |e| e.1);
    let (g, b) = code(sim().occupancy_max_potential_block_size(function(f), &lookup, limit))?;
    // SAFETY: both checked non-null; the caller's: writable.
    unsafe {
        out(grid, g)?;
        out(block, b)
    }
}
