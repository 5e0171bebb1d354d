//! Stream-ordered allocation and memory pools (default, current and created: attributes,
//! access, trimming, shareable handles, pointer export and import) and legacy IPC. The
//! runtime's pool structs (`cudaMemPoolProps`, `cudaMemAccessDesc`, `cudaMemLocation`) are laid
//! out as the driver's, so they pass through.

use crate::device::{checked, context};
use crate::driver::{self, cu, ok};
use crate::error::{Error, cudaError_t, put, run};
use crate::types::{Default, cudaMemPool_t, cudaStream_t, stream};
use std::ffi::{c_int, c_void};

fn alloc(out: *mut *mut c_void, size: usize, pool: Option<cudaMemPool_t>, s: cu::CUstream) -> Result<(), Error> {
    context()?;
    let mut p = 0;
    // SAFETY: a valid out-pointer; the driver checks the pool and stream.
    ok(unsafe {
        match pool {
            None => cu::cuMemAllocAsync(&mut p, size, s),
            Some(pool) => cu::cuMemAllocFromPoolAsync(&mut p, size, pool, s),
        }
    })?;
    // SAFETY: the caller's.
    unsafe { put(out, p as *mut c_void) }
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMallocAsync(out: *mut *mut c_void, size: usize, s: cudaStream_t) -> cudaError_t {
    run(|| alloc(out, size, None, stream(s, Default::Legacy)))
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMallocAsync_ptsz(out: *mut *mut c_void, size: usize, s: cudaStream_t) -> cudaError_t {
    run(|| alloc(out, size, None, stream(s, Default::PerThread)))
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMallocFromPoolAsync(
    out: *mut *mut c_void,
    size: usize,
    pool: cudaMemPool_t,
    s: cudaStream_t,
) -> cudaError_t {
    run(|| alloc(out, size, Some(pool), stream(s, Default::Legacy)))
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMallocFromPoolAsync_ptsz(
    out: *mut *mut c_void,
    size: usize,
    pool: cudaMemPool_t,
    s: cudaStream_t,
) -> cudaError_t {
    run(|| alloc(out, size, Some(pool), stream(s, Default::PerThread)))
}

fn free(p: *mut c_void, s: cu::CUstream) -> Result<(), Error> {
    context()?;
    // SAFETY: the driver checks the address and stream.
    ok(unsafe { cu::cuMemFreeAsync(p as cu::CUdeviceptr, s) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaFreeAsync(p: *mut c_void, s: cudaStream_t) -> cudaError_t {
    run(|| free(p, stream(s, Default::Legacy)))
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaFreeAsync_ptsz(p: *mut c_void, s: cudaStream_t) -> cudaError_t {
    run(|| free(p, stream(s, Default::PerThread)))
}

/// # Safety
/// `out` is valid for a write, `props` for a read of a `cudaMemPoolProps`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPoolCreate(out: *mut cudaMemPool_t, props: *const cu::CUmemPoolProps) -> cudaError_t {
    run(|| {
        context()?;
        let mut pool = std::ptr::null_mut();
        // SAFETY: the caller's props, laid out as the driver's.
        ok(unsafe { cu::cuMemPoolCreate(&mut pool, props) })?;
        // SAFETY: the caller's.
        unsafe { put(out, pool) }
    })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPoolDestroy(pool: cudaMemPool_t) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the driver checks the handle.
        ok(unsafe { cu::cuMemPoolDestroy(pool) })
    })
}

/// # Safety
/// `descs` is valid for reads of `count` descriptors.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPoolSetAccess(
    pool: cudaMemPool_t,
    descs: *const cu::CUmemAccessDesc,
    count: usize,
) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the caller's descriptors, laid out as the driver's.
        ok(unsafe { cu::cuMemPoolSetAccess(pool, descs, count) })
    })
}

/// # Safety
/// `flags` is valid for a write, `location` for a read of a `cudaMemLocation`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPoolGetAccess(
    flags: *mut c_int,
    pool: cudaMemPool_t,
    location: *mut c_void,
) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the caller's.
        ok(unsafe { driver::cuMemPoolGetAccess(flags, pool, location) })
    })
}

/// `cudaMemPoolAttr`'s values are the driver's.
///
/// # Safety
/// `value` is valid for the attribute's type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPoolSetAttribute(pool: cudaMemPool_t, attr: c_int, value: *mut c_void) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the caller's.
        ok(unsafe { driver::cuMemPoolSetAttribute(pool, attr, value) })
    })
}

/// # Safety
/// `value` is valid for the attribute's type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPoolGetAttribute(pool: cudaMemPool_t, attr: c_int, value: *mut c_void) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the caller's.
        ok(unsafe { driver::cuMemPoolGetAttribute(pool, attr, value) })
    })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPoolTrimTo(pool: cudaMemPool_t, keep: usize) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the driver checks the handle.
        ok(unsafe { cu::cuMemPoolTrimTo(pool, keep) })
    })
}

fn device_pool(
    out: *mut cudaMemPool_t,
    device: c_int,
    get: unsafe extern "C" fn(*mut cudaMemPool_t, cu::CUdevice) -> cu::CUresult,
) -> Result<(), Error> {
    let d = checked(device)?;
    context()?;
    let mut pool = std::ptr::null_mut();
    // SAFETY: a valid out-pointer and device.
    ok(unsafe { get(&mut pool, d) })?;
    // SAFETY: the caller's.
    unsafe { put(out, pool) }
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaDeviceGetDefaultMemPool(out: *mut cudaMemPool_t, device: c_int) -> cudaError_t {
    run(|| device_pool(out, device, default_pool))
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaDeviceGetMemPool(out: *mut cudaMemPool_t, device: c_int) -> cudaError_t {
    run(|| device_pool(out, device, current_pool))
}

unsafe extern "C" fn default_pool(out: *mut cudaMemPool_t, d: cu::CUdevice) -> cu::CUresult {
    // SAFETY: the caller's.
    unsafe { cu::cuDeviceGetDefaultMemPool(out, d) }
}

unsafe extern "C" fn current_pool(out: *mut cudaMemPool_t, d: cu::CUdevice) -> cu::CUresult {
    // SAFETY: the caller's.
    unsafe { cu::cuDeviceGetMemPool(out, d) }
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaDeviceSetMemPool(device: c_int, pool: cudaMemPool_t) -> cudaError_t {
    run(|| {
        let d = checked(device)?;
        context()?;
        // SAFETY: the driver checks the handle.
        ok(unsafe { cu::cuDeviceSetMemPool(d, pool) })
    })
}

/// # Safety
/// `handle` is valid for the handle type's write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPoolExportToShareableHandle(
    handle: *mut c_void,
    pool: cudaMemPool_t,
    kind: c_int,
    flags: u32,
) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the caller's.
        ok(unsafe { driver::cuMemPoolExportToShareableHandle(handle, pool, kind, flags.into()) })
    })
}

/// # Safety
/// `out` is valid for a write; `handle` is as the handle type needs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPoolImportFromShareableHandle(
    out: *mut cudaMemPool_t,
    handle: *mut c_void,
    kind: c_int,
    flags: u32,
) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the caller's.
        ok(unsafe { driver::cuMemPoolImportFromShareableHandle(out, handle, kind, flags.into()) })
    })
}

/// # Safety
/// `data` is valid for a write of a `cudaMemPoolPtrExportData`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPoolExportPointer(
    data: *mut cu::CUmemPoolPtrExportData,
    p: *mut c_void,
) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the caller's.
        ok(unsafe { cu::cuMemPoolExportPointer(data, p as cu::CUdeviceptr) })
    })
}

/// # Safety
/// `out` is valid for a write, `data` for a read of a `cudaMemPoolPtrExportData`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPoolImportPointer(
    out: *mut *mut c_void,
    pool: cudaMemPool_t,
    data: *mut cu::CUmemPoolPtrExportData,
) -> cudaError_t {
    run(|| {
        context()?;
        let mut p = 0;
        // SAFETY: the caller's.
        ok(unsafe { cu::cuMemPoolImportPointer(&mut p, pool, data) })?;
        // SAFETY: the caller's.
        unsafe { put(out, p as *mut c_void) }
    })
}

/// # Safety
/// `handle` is valid for a write of a `cudaIpcMemHandle_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaIpcGetMemHandle(handle: *mut cu::CUipcMemHandle, p: *mut c_void) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the caller's.
        ok(unsafe { cu::cuIpcGetMemHandle(handle, p as cu::CUdeviceptr) })
    })
}

/// # Safety
/// `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaIpcOpenMemHandle(
    out: *mut *mut c_void,
    handle: cu::CUipcMemHandle,
    flags: u32,
) -> cudaError_t {
    run(|| {
        context()?;
        let mut p = 0;
        // SAFETY: a valid out-pointer.
        ok(unsafe { cu::cuIpcOpenMemHandle_v2(&mut p, handle, flags) })?;
        // SAFETY: the caller's.
        unsafe { put(out, p as *mut c_void) }
    })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaIpcCloseMemHandle(p: *mut c_void) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the driver checks the address.
        ok(unsafe { cu::cuIpcCloseMemHandle(p as cu::CUdeviceptr) })
    })
}

/// # Safety
/// `handle` is valid for a write of a `cudaIpcEventHandle_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaIpcGetEventHandle(handle: *mut cu::CUipcEventHandle, event: cu::CUevent) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the caller's.
        ok(unsafe { cu::cuIpcGetEventHandle(handle, event) })
    })
}

/// # Safety
/// `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaIpcOpenEventHandle(out: *mut cu::CUevent, handle: cu::CUipcEventHandle) -> cudaError_t {
    run(|| {
        context()?;
        let mut e = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        ok(unsafe { cu::cuIpcOpenEventHandle(&mut e, handle) })?;
        // SAFETY: the caller's.
        unsafe { put(out, e) }
    })
}
