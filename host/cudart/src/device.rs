//! Devices and the thread's current one: the driver started on first use, each device's
//! primary context retained once and made current on the thread that needs it.

use crate::driver::{self, cu, ok};
use crate::error::{self, Error, cudaError_t, put, run};
use std::cell::Cell;
use std::ffi::c_int;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

thread_local! {
    /// The thread's device for when no context is current on it.
    static DEVICE: Cell<c_int> = const { Cell::new(0) };
}

/// What starting the driver gave: its device count, or the runtime's error.
static STARTED: OnceLock<Result<c_int, Error>> = OnceLock::new();
/// Each device's primary context, once retained (never released: NVIDIA's runtime keeps them
/// for the process's life).
static PRIMARY: OnceLock<Vec<AtomicPtr<cu::CUctx_st>>> = OnceLock::new();

/// Starts the driver once; the number of devices.
pub(crate) fn started() -> Result<c_int, Error> {
    *STARTED.get_or_init(|| {
        if !driver::present() {
            return Err(Error(error::INSUFFICIENT_DRIVER));
        }
        // SAFETY: plain driver calls with valid out-pointers.
        unsafe {
            match cu::cuInit(0) {
                cu::CUresult::CUDA_SUCCESS => {}
                cu::CUresult::CUDA_ERROR_NO_DEVICE => return Err(Error(error::NO_DEVICE)),
                other => {
                    return Err(match Error::from(other) {
                        Error(error::UNKNOWN) => Error(error::INITIALIZATION),
                        e => e,
                    });
                }
            }
            let mut count = 0;
            ok(cu::cuDeviceGetCount(&mut count))?;
            if count == 0 {
                return Err(Error(error::NO_DEVICE));
            }
            Ok(count)
        }
    })
}

/// `device` as the driver's, or `cudaErrorInvalidDevice`.
pub(crate) fn checked(device: c_int) -> Result<cu::CUdevice, Error> {
    let count = started()?;
    if !(0..count).contains(&device) {
        return Err(Error(error::INVALID_DEVICE));
    }
    let mut d = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuDeviceGet(&mut d, device) })?;
    Ok(d)
}

/// `device`'s primary context, retained on first use.
pub(crate) fn primary(device: c_int) -> Result<cu::CUcontext, Error> {
    let dev = checked(device)?;
    let slots = PRIMARY.get_or_init(|| {
        let count = started().unwrap_or(0).max(0) as usize;
        (0..count).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect()
    });
    let slot = &slots[device as usize];
    let held = slot.load(Ordering::Acquire);
    if !held.is_null() {
        return Ok(held);
    }
    let mut ctx = std::ptr::null_mut();
    // SAFETY: a valid out-pointer and device.
    ok(unsafe { cu::cuDevicePrimaryCtxRetain(&mut ctx, dev) })?;
    match slot.compare_exchange(std::ptr::null_mut(), ctx, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(ctx),
        Err(other) => {
            // Another thread retained it first: one retain is kept.
            // SAFETY: the retain just made.
            unsafe { cu::cuDevicePrimaryCtxRelease_v2(dev) };
            Ok(other)
        }
    }
}

/// The context the thread's calls run in: the one current on it, else its device's primary
/// context, made current.
pub(crate) fn context() -> Result<cu::CUcontext, Error> {
    started()?;
    let mut ctx = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuCtxGetCurrent(&mut ctx) })?;
    if !ctx.is_null() {
        return Ok(ctx);
    }
    let ctx = primary(DEVICE.with(Cell::get))?;
    // SAFETY: a context the driver gave.
    ok(unsafe { cu::cuCtxSetCurrent(ctx) })?;
    Ok(ctx)
}

/// The thread's device: that of the context current on it, else the one it set (0 at first).
pub(crate) fn current() -> Result<c_int, Error> {
    started()?;
    let mut ctx = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cu::cuCtxGetCurrent(&mut ctx) })?;
    if ctx.is_null() {
        return Ok(DEVICE.with(Cell::get));
    }
    if let Some(slots) = PRIMARY.get()
        && let Some(i) = slots.iter().position(|s| s.load(Ordering::Relaxed) == ctx)
    {
        return Ok(i as c_int);
    }
    let mut d = 0;
    // SAFETY: a valid out-pointer; the context is current.
    ok(unsafe { cu::cuCtxGetDevice(&mut d) })?;
    Ok(d)
}

/// # Safety
/// A non-null `count` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetDeviceCount(count: *mut c_int) -> cudaError_t {
    run(|| match started() {
        // SAFETY: the caller's.
        Ok(n) => unsafe { put(count, n) },
        Err(e) => {
            // SAFETY: the caller's.
            unsafe { put(count, 0) }?;
            Err(e)
        }
    })
}

/// # Safety
/// A non-null `device` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetDevice(device: *mut c_int) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { put(device, current()?) })
}

#[unsafe(no_mangle)]
pub extern "C" fn cudaSetDevice(device: c_int) -> cudaError_t {
    run(|| {
        let ctx = primary(device)?;
        // SAFETY: a context the driver gave.
        ok(unsafe { cu::cuCtxSetCurrent(ctx) })?;
        DEVICE.with(|d| d.set(device));
        Ok(())
    })
}

/// `cudaInitDevice`: the device's primary context, made ready without becoming current.
#[unsafe(no_mangle)]
pub extern "C" fn cudaInitDevice(device: c_int, _device_flags: u32, _flags: u32) -> cudaError_t {
    run(|| primary(device).map(drop))
}

#[unsafe(no_mangle)]
pub extern "C" fn cudaDeviceSynchronize() -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: a context is current.
        ok(unsafe { cu::cuCtxSynchronize() })
    })
}

/// Destroys every allocation and all state of the thread's device: its primary context is
/// reset, and retained again, fresh, for the calls after it.
#[unsafe(no_mangle)]
pub extern "C" fn cudaDeviceReset() -> cudaError_t {
    run(|| {
        let device = current()?;
        let dev = checked(device)?;
        // SAFETY: a device the driver gave.
        ok(unsafe { cu::cuDevicePrimaryCtxReset_v2(dev) })?;
        if let Some(slot) = PRIMARY.get().and_then(|slots| slots.get(device as usize)) {
            slot.store(std::ptr::null_mut(), Ordering::Release);
        }
        let ctx = primary(device)?;
        // The thread's last error stays, as NVIDIA's runtime keeps it across a reset.
        // SAFETY: a context the driver gave.
        ok(unsafe { cu::cuCtxSetCurrent(ctx) })
    })
}

/// # Safety
/// A non-null `can` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaDeviceCanAccessPeer(can: *mut c_int, device: c_int, peer: c_int) -> cudaError_t {
    run(|| {
        let (d, p) = (checked(device)?, checked(peer)?);
        let mut v = 0;
        // SAFETY: a valid out-pointer and devices.
        ok(unsafe { cu::cuDeviceCanAccessPeer(&mut v, d, p) })?;
        // SAFETY: the caller's.
        unsafe { put(can, v) }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cudaDeviceEnablePeerAccess(peer: c_int, flags: u32) -> cudaError_t {
    run(|| {
        let peer_ctx = primary(peer)?;
        context()?;
        // SAFETY: a context the driver gave; one is current.
        ok(unsafe { cu::cuCtxEnablePeerAccess(peer_ctx, flags) })
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cudaDeviceDisablePeerAccess(peer: c_int) -> cudaError_t {
    run(|| {
        let peer_ctx = primary(peer)?;
        context()?;
        // SAFETY: a context the driver gave; one is current.
        ok(unsafe { cu::cuCtxDisablePeerAccess(peer_ctx) })
    })
}

/// `cudaDeviceAttr`'s values are the driver's `CUdevice_attribute`'s.
///
/// # Safety
/// A non-null `value` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaDeviceGetAttribute(value: *mut c_int, attr: c_int, device: c_int) -> cudaError_t {
    run(|| {
        let d = checked(device)?;
        if value.is_null() {
            return Err(Error(error::INVALID_VALUE));
        }
        let mut v = 0;
        // SAFETY: a valid out-pointer.
        ok(unsafe { driver::cuDeviceGetAttribute(&mut v, attr, d) })?;
        // SAFETY: the caller's.
        unsafe { put(value, v) }
    })
}

/// # Safety
/// A non-null `version` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaDriverGetVersion(version: *mut c_int) -> cudaError_t {
    run(|| {
        if version.is_null() {
            return Err(Error(error::INVALID_VALUE));
        }
        if !driver::present() {
            // SAFETY: the caller's.
            return unsafe { put(version, 0) };
        }
        let mut v = 0;
        // SAFETY: a valid out-pointer (the driver answers before cuInit).
        ok(unsafe { cu::cuDriverGetVersion(&mut v) })?;
        // SAFETY: the caller's.
        unsafe { put(version, v) }
    })
}

/// # Safety
/// Non-null pointers are valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemGetInfo(free: *mut usize, total: *mut usize) -> cudaError_t {
    run(|| {
        context()?;
        let (mut f, mut t) = (0, 0);
        // SAFETY: valid out-pointers; a context is current.
        ok(unsafe { cu::cuMemGetInfo_v2(&mut f, &mut t) })?;
        // SAFETY: the caller's.
        unsafe {
            put(free, f)?;
            put(total, t)
        }
    })
}

/// # Safety
/// Non-null pointers are valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaDeviceGetStreamPriorityRange(least: *mut c_int, greatest: *mut c_int) -> cudaError_t {
    run(|| {
        context()?;
        let (mut l, mut g) = (0, 0);
        // SAFETY: valid out-pointers; a context is current.
        ok(unsafe { cu::cuCtxGetStreamPriorityRange(&mut l, &mut g) })?;
        // SAFETY: the caller's (either may be null).
        unsafe {
            if !least.is_null() {
                least.write(l);
            }
            if !greatest.is_null() {
                greatest.write(g);
            }
        }
        Ok(())
    })
}

/// `cudaLimit`'s values are the driver's `CUlimit`'s.
#[unsafe(no_mangle)]
pub extern "C" fn cudaDeviceSetLimit(limit: c_int, value: usize) -> cudaError_t {
    run(|| {
        context()?;
        let limit = limit_of(limit)?;
        // SAFETY: a context is current.
        ok(unsafe { cu::cuCtxSetLimit(limit, value) })
    })
}

/// # Safety
/// A non-null `value` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaDeviceGetLimit(value: *mut usize, limit: c_int) -> cudaError_t {
    run(|| {
        context()?;
        let limit = limit_of(limit)?;
        let mut v = 0;
        // SAFETY: a valid out-pointer; a context is current.
        ok(unsafe { cu::cuCtxGetLimit(&mut v, limit) })?;
        // SAFETY: the caller's.
        unsafe { put(value, v) }
    })
}

fn limit_of(limit: c_int) -> Result<cu::CUlimit, Error> {
    use cu::CUlimit::*;
    [
        CU_LIMIT_STACK_SIZE,
        CU_LIMIT_PRINTF_FIFO_SIZE,
        CU_LIMIT_MALLOC_HEAP_SIZE,
        CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH,
        CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT,
        CU_LIMIT_MAX_L2_FETCH_GRANULARITY,
        CU_LIMIT_PERSISTING_L2_CACHE_SIZE,
    ]
    .into_iter()
    .find(|l| *l as c_int == limit)
    .ok_or(Error(error::INVALID_VALUE))
}

/// `cudaGetDriverEntryPoint*`: the driver's function `symbol` for CUDA `version`, as
/// `cuGetProcAddress` answers (`flags` and the query result have the driver's values; a `_ptsz`
/// call's default is the per-thread stream's variants).
///
/// # Safety
/// `symbol` is NUL-terminated; `out` is valid for a write, a non-null `status` too.
pub unsafe fn entry_point(
    symbol: *const std::ffi::c_char,
    out: *mut *mut std::ffi::c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
    per_thread: bool,
) -> cudaError_t {
    run(|| {
        started()?;
        // cudaEnableDefault: the legacy stream's variants, or the thread's in a `_ptsz` call.
        let flags = match (flags, per_thread) {
            (0, false) => 1,
            (0, true) => 2,
            (f, _) => f,
        };
        // SAFETY: the caller's.
        ok(unsafe { driver::cuGetProcAddress_v2(symbol, out, version, flags, status) })
    })
}

/// # Safety
/// `symbol` is NUL-terminated; `out` is valid for a write, a non-null `status` too.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetDriverEntryPointByVersion(
    symbol: *const std::ffi::c_char,
    out: *mut *mut std::ffi::c_void,
    version: u32,
    flags: u64,
    status: *mut c_int,
) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { entry_point(symbol, out, version as c_int, flags, status, false) }
}

/// # Safety
/// As [`cudaGetDriverEntryPointByVersion`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetDriverEntryPointByVersion_ptsz(
    symbol: *const std::ffi::c_char,
    out: *mut *mut std::ffi::c_void,
    version: u32,
    flags: u64,
    status: *mut c_int,
) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { entry_point(symbol, out, version as c_int, flags, status, true) }
}

/// `cudaDeviceFlags`' values are the driver's context flags; `cudaDeviceMapHost` is always on.
#[unsafe(no_mangle)]
pub extern "C" fn cudaSetDeviceFlags(flags: u32) -> cudaError_t {
    run(|| {
        let dev = checked(current()?)?;
        // SAFETY: a device the driver gave; it checks the flags.
        ok(unsafe { cu::cuDevicePrimaryCtxSetFlags_v2(dev, flags & !0x08) })
    })
}

/// # Safety
/// A non-null `flags` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetDeviceFlags(flags: *mut u32) -> cudaError_t {
    run(|| {
        context()?;
        let mut f = 0;
        // SAFETY: a valid out-pointer; a context is current.
        ok(unsafe { cu::cuCtxGetFlags(&mut f) })?;
        // SAFETY: the caller's.
        unsafe { put(flags, f | 0x08) }
    })
}

/// # Safety
/// `id` is valid for writes of `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaDeviceGetPCIBusId(id: *mut std::ffi::c_char, len: c_int, device: c_int) -> cudaError_t {
    run(|| {
        let d = checked(device)?;
        // SAFETY: the caller's buffer; the driver writes at most `len` bytes.
        ok(unsafe { cu::cuDeviceGetPCIBusId(id, len, d) })
    })
}
