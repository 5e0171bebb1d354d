//! Kernel launches: nvcc's launch protocol (a configuration pushed at `<<<...>>>`, popped in the
//! stub, the stub's kernel launched), `cudaLaunchKernel`, cooperative and extended launches,
//! symbols, function attributes and occupancy.

use crate::driver::{self, cu, ok};
use crate::error::{self, Error, cudaError_t, put, run};
use crate::registry::{self, Kernel, in_context};
use crate::types::{Default, cudaFunction_t, cudaStream_t, dim3, stream};
use std::cell::RefCell;
use std::ffi::{c_int, c_void};

/// A configuration pushed by `<<<grid, block, shared, stream>>>`.
#[derive(Clone, Copy)]
struct Configuration {
    grid: dim3,
    block: dim3,
    shared: usize,
    stream: *mut c_void,
}

thread_local! {
    static PUSHED: RefCell<Vec<Configuration>> = const { RefCell::new(Vec::new()) };
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __cudaPushCallConfiguration(
    grid: dim3,
    block: dim3,
    shared: usize,
    stream: *mut c_void,
) -> u32 {
    PUSHED.with(|p| p.borrow_mut().push(Configuration { grid, block, shared, stream }));
    0
}

/// # Safety
/// Each pointer is valid for a write of its value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __cudaPopCallConfiguration(
    grid: *mut dim3,
    block: *mut dim3,
    shared: *mut usize,
    stream: *mut *mut c_void,
) -> cudaError_t {
    let Some(c) = PUSHED.with(|p| p.borrow_mut().pop()) else {
        return error::record(Error(error::MISSING_CONFIGURATION));
    };
    // SAFETY: the caller's (nvcc's stub passes its locals).
    unsafe {
        grid.write(c.grid);
        block.write(c.block);
        shared.write(c.shared);
        stream.write(c.stream);
    }
    error::SUCCESS
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __cudaGetKernel(out: *mut cu::CUkernel, host: *const c_void) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { put(out, registry::kernel(host)?.handle()?) })
}

/// # Safety
/// As [`__cudaGetKernel`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetKernel(out: *mut cu::CUkernel, host: *const c_void) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { __cudaGetKernel(out, host) }
}

/// # Safety
/// `args` holds a pointer to each of the kernel's arguments.
unsafe fn launch(
    f: cu::CUfunction,
    grid: dim3,
    block: dim3,
    args: *mut *mut c_void,
    shared: usize,
    s: cu::CUstream,
    cooperative: bool,
) -> Result<(), Error> {
    let shared = u32::try_from(shared).map_err(|_| Error(error::INVALID_VALUE))?;
    // SAFETY: the caller's arguments; the driver checks the shape.
    ok(unsafe {
        if cooperative {
            cu::cuLaunchCooperativeKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared, s, args)
        } else {
            cu::cuLaunchKernel(
                f,
                grid.x,
                grid.y,
                grid.z,
                block.x,
                block.y,
                block.z,
                shared,
                s,
                args,
                std::ptr::null_mut(),
            )
        }
    })
}

/// # Safety
/// `args` holds a pointer to each of the kernel's arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __cudaLaunchKernel(
    kernel: cu::CUkernel,
    grid: dim3,
    block: dim3,
    args: *mut *mut c_void,
    shared: usize,
    s: cudaStream_t,
) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { launch(in_context(kernel)?, grid, block, args, shared, stream(s, Default::Legacy), false) })
}

/// # Safety
/// As [`__cudaLaunchKernel`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __cudaLaunchKernel_ptsz(
    kernel: cu::CUkernel,
    grid: dim3,
    block: dim3,
    args: *mut *mut c_void,
    shared: usize,
    s: cudaStream_t,
) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { launch(in_context(kernel)?, grid, block, args, shared, stream(s, Default::PerThread), false) })
}

fn function(host: *const c_void) -> Result<cu::CUfunction, Error> {
    registry::kernel(host).and_then(Kernel::function)
}

/// # Safety
/// `func` is a kernel's host stub; `args` holds a pointer to each of its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaLaunchKernel(
    func: *const c_void,
    grid: dim3,
    block: dim3,
    args: *mut *mut c_void,
    shared: usize,
    s: cudaStream_t,
) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { launch(function(func)?, grid, block, args, shared, stream(s, Default::Legacy), false) })
}

/// # Safety
/// `func` is a kernel's host stub; `args` holds a pointer to each of its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaLaunchKernel_ptsz(
    func: *const c_void,
    grid: dim3,
    block: dim3,
    args: *mut *mut c_void,
    shared: usize,
    s: cudaStream_t,
) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { launch(function(func)?, grid, block, args, shared, stream(s, Default::PerThread), false) })
}

/// # Safety
/// `func` is a kernel's host stub; `args` holds a pointer to each of its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaLaunchCooperativeKernel(
    func: *const c_void,
    grid: dim3,
    block: dim3,
    args: *mut *mut c_void,
    shared: usize,
    s: cudaStream_t,
) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { launch(function(func)?, grid, block, args, shared, stream(s, Default::Legacy), true) })
}

/// # Safety
/// `func` is a kernel's host stub; `args` holds a pointer to each of its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaLaunchCooperativeKernel_ptsz(
    func: *const c_void,
    grid: dim3,
    block: dim3,
    args: *mut *mut c_void,
    shared: usize,
    s: cudaStream_t,
) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { launch(function(func)?, grid, block, args, shared, stream(s, Default::PerThread), true) })
}

/// `cudaLaunchConfig_t`.
#[repr(C)]
pub struct LaunchConfig {
    grid: dim3,
    block: dim3,
    shared: usize,
    stream: cudaStream_t,
    attrs: *mut cu::CUlaunchAttribute,
    num_attrs: u32,
}

const _: () = assert!(size_of::<LaunchConfig>() == 56 && size_of::<FuncAttributes>() == 144);

/// # Safety
/// `config` is valid for a read, its attributes (laid out as the driver's) for `num_attrs`
/// reads; `args` holds a pointer to each of the kernel's arguments.
unsafe fn launch_ex(
    config: *const LaunchConfig,
    func: *const c_void,
    args: *mut *mut c_void,
    default: Default,
) -> Result<(), Error> {
    // SAFETY: the caller's.
    let c = unsafe { config.as_ref() }.ok_or(Error(error::INVALID_VALUE))?;
    let f = function(func)?;
    let driver_config = cu::CUlaunchConfig {
        gridDimX: c.grid.x,
        gridDimY: c.grid.y,
        gridDimZ: c.grid.z,
        blockDimX: c.block.x,
        blockDimY: c.block.y,
        blockDimZ: c.block.z,
        sharedMemBytes: u32::try_from(c.shared).map_err(|_| Error(error::INVALID_VALUE))?,
        hStream: stream(c.stream, default),
        attrs: c.attrs,
        numAttrs: c.num_attrs,
    };
    // SAFETY: the caller's attributes and arguments.
    ok(unsafe { cu::cuLaunchKernelEx(&driver_config, f, args, std::ptr::null_mut()) })
}

/// # Safety
/// `config` is valid for a read, its attributes for `num_attrs` reads; `args` holds a pointer
/// to each of the kernel's arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaLaunchKernelExC(
    config: *const LaunchConfig,
    func: *const c_void,
    args: *mut *mut c_void,
) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { launch_ex(config, func, args, Default::Legacy) })
}

/// # Safety
/// `config` is valid for a read, its attributes for `num_attrs` reads; `args` holds a pointer
/// to each of the kernel's arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaLaunchKernelExC_ptsz(
    config: *const LaunchConfig,
    func: *const c_void,
    args: *mut *mut c_void,
) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { launch_ex(config, func, args, Default::PerThread) })
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetFuncBySymbol(out: *mut cudaFunction_t, func: *const c_void) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { put(out, function(func)?) })
}

/// `cudaFuncAttributes`.
#[repr(C)]
#[derive(Default)]
pub struct FuncAttributes {
    shared_size_bytes: usize,
    const_size_bytes: usize,
    local_size_bytes: usize,
    max_threads_per_block: c_int,
    num_regs: c_int,
    ptx_version: c_int,
    binary_version: c_int,
    cache_mode_ca: c_int,
    max_dynamic_shared_size_bytes: c_int,
    preferred_shmem_carveout: c_int,
    cluster_dim_must_be_set: c_int,
    required_cluster_width: c_int,
    required_cluster_height: c_int,
    required_cluster_depth: c_int,
    cluster_scheduling_policy_preference: c_int,
    non_portable_cluster_size_allowed: c_int,
    reserved: [c_int; 16],
}

/// # Safety
/// A non-null `out` is valid for a write of a `cudaFuncAttributes`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaFuncGetAttributes(out: *mut FuncAttributes, func: *const c_void) -> cudaError_t {
    run(|| {
        let f = function(func)?;
        let get = |attr: c_int| -> Result<c_int, Error> {
            let mut v = 0;
            // SAFETY: a valid out-pointer; a function the driver gave.
            ok(unsafe { driver::cuFuncGetAttribute(&mut v, attr, f) })?;
            Ok(v)
        };
        let a = FuncAttributes {
            max_threads_per_block: get(0)?,
            shared_size_bytes: get(1)? as usize,
            const_size_bytes: get(2)? as usize,
            local_size_bytes: get(3)? as usize,
            num_regs: get(4)?,
            ptx_version: get(5)?,
            binary_version: get(6)?,
            cache_mode_ca: get(7)?,
            max_dynamic_shared_size_bytes: get(8)?,
            preferred_shmem_carveout: get(9)?,
            cluster_dim_must_be_set: get(10)?,
            required_cluster_width: get(11)?,
            required_cluster_height: get(12)?,
            required_cluster_depth: get(13)?,
            non_portable_cluster_size_allowed: get(14)?,
            cluster_scheduling_policy_preference: get(15)?,
            reserved: [0; 16],
        };
        // SAFETY: the caller's.
        unsafe { put(out, a) }
    })
}

/// `cudaFuncAttribute`'s values are the driver's `CUfunction_attribute`'s. Set on the kernel
/// in the thread's context.
///
/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaFuncSetAttribute(func: *const c_void, attr: c_int, value: c_int) -> cudaError_t {
    run(|| {
        let f = function(func)?;
        // SAFETY: a function the driver gave.
        ok(unsafe { driver::cuFuncSetAttribute(f, attr, value) })
    })
}

/// `cudaFuncCache`'s values are the driver's `CUfunc_cache`'s.
///
/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaFuncSetCacheConfig(func: *const c_void, config: c_int) -> cudaError_t {
    run(|| {
        let f = function(func)?;
        // SAFETY: a function the driver gave.
        ok(unsafe { driver::cuFuncSetCacheConfig(f, config) })
    })
}

fn occupancy(out: *mut c_int, func: *const c_void, block: c_int, shared: usize, flags: u32) -> Result<(), Error> {
    let f = function(func)?;
    let mut n = 0;
    // SAFETY: a valid out-pointer; a function the driver gave.
    ok(unsafe { cu::cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&mut n, f, block, shared, flags) })?;
    // SAFETY: the caller's.
    unsafe { put(out, n) }
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaOccupancyMaxActiveBlocksPerMultiprocessor(
    out: *mut c_int,
    func: *const c_void,
    block: c_int,
    shared: usize,
) -> cudaError_t {
    run(|| occupancy(out, func, block, shared, 0))
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    out: *mut c_int,
    func: *const c_void,
    block: c_int,
    shared: usize,
    flags: u32,
) -> cudaError_t {
    run(|| occupancy(out, func, block, shared, flags))
}

fn symbol_copy(
    to_device: bool,
    symbol: *const c_void,
    host: *mut c_void,
    count: usize,
    offset: usize,
    kind: c_int,
    on: Option<cu::CUstream>,
) -> Result<(), Error> {
    let wanted = if to_device { [1, 3, 4] } else { [2, 3, 4] };
    if !wanted.contains(&kind) {
        return Err(Error(error::INVALID_MEMCPY_DIRECTION));
    }
    let (base, size) = registry::variable(symbol)?;
    if offset.checked_add(count).is_none_or(|end| end > size) {
        return Err(Error(error::INVALID_VALUE));
    }
    let (dst, src) = match to_device {
        true => (base + offset as u64, host as u64),
        false => (host as u64, base + offset as u64),
    };
    // SAFETY: the variable's range is checked; the host range is the caller's.
    ok(unsafe {
        match on {
            None => cu::cuMemcpy(dst, src, count),
            Some(s) => cu::cuMemcpyAsync(dst, src, count, s),
        }
    })
}

/// # Safety
/// `src` is valid for reads of `count` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemcpyToSymbol(
    symbol: *const c_void,
    src: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
) -> cudaError_t {
    run(|| symbol_copy(true, symbol, src.cast_mut(), count, offset, kind, None))
}

/// # Safety
/// `dst` is valid for writes of `count` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemcpyFromSymbol(
    dst: *mut c_void,
    symbol: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
) -> cudaError_t {
    run(|| symbol_copy(false, symbol, dst, count, offset, kind, None))
}

/// # Safety
/// `src` is valid for reads of `count` bytes until the copy ends.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemcpyToSymbolAsync(
    symbol: *const c_void,
    src: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
    s: cudaStream_t,
) -> cudaError_t {
    run(|| symbol_copy(true, symbol, src.cast_mut(), count, offset, kind, Some(stream(s, Default::Legacy))))
}

/// # Safety
/// `dst` is valid for writes of `count` bytes until the copy ends.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemcpyFromSymbolAsync(
    dst: *mut c_void,
    symbol: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
    s: cudaStream_t,
) -> cudaError_t {
    run(|| symbol_copy(false, symbol, dst, count, offset, kind, Some(stream(s, Default::Legacy))))
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetSymbolAddress(out: *mut *mut c_void, symbol: *const c_void) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { put(out, registry::variable(symbol)?.0 as *mut c_void) })
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetSymbolSize(out: *mut usize, symbol: *const c_void) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { put(out, registry::variable(symbol)?.1) })
}
