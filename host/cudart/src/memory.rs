//! Memory: device, page-locked, registered and managed; copies and sets, on the legacy stream,
//! a given stream or the thread's own (`_ptsz`); between peers.

use crate::device::{context, primary};
use crate::driver::{cu, ok};
use crate::error::{self, Error, cudaError_t, put, run};
use crate::types::{Default, MemLocation, cudaStream_t, stream};
use std::ffi::{c_int, c_void};

fn dptr(p: *const c_void) -> cu::CUdeviceptr {
    p as cu::CUdeviceptr
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMalloc(out: *mut *mut c_void, size: usize) -> cudaError_t {
    run(|| {
        context()?;
        if out.is_null() {
            return Err(Error(error::INVALID_VALUE));
        }
        // NVIDIA's runtime answers a zero size with a null pointer.
        let mut p = 0;
        if size > 0 {
            // SAFETY: a valid out-pointer; a context is current.
            ok(unsafe { cu::cuMemAlloc_v2(&mut p, size) })?;
        }
        // SAFETY: the caller's.
        unsafe { put(out, p as *mut c_void) }
    })
}

/// A null pointer is no error (`cudaFree(0)` is the usual way to start the runtime).
///
/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaFree(p: *mut c_void) -> cudaError_t {
    run(|| {
        context()?;
        if p.is_null() {
            return Ok(());
        }
        // SAFETY: the driver checks the address.
        ok(unsafe { cu::cuMemFree_v2(dptr(p)) })
    })
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMallocHost(out: *mut *mut c_void, size: usize) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { cudaHostAlloc(out, size, 0) }
}

/// `cudaHostAlloc*` flags are the driver's `CU_MEMHOSTALLOC_*`.
///
/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaHostAlloc(out: *mut *mut c_void, size: usize, flags: u32) -> cudaError_t {
    run(|| {
        context()?;
        if out.is_null() {
            return Err(Error(error::INVALID_VALUE));
        }
        let mut p = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; a context is current.
        ok(unsafe { cu::cuMemHostAlloc(&mut p, size, flags) })?;
        // SAFETY: the caller's.
        unsafe { put(out, p) }
    })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaFreeHost(p: *mut c_void) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the driver checks the address.
        ok(unsafe { cu::cuMemFreeHost(p) })
    })
}

/// # Safety
/// `p` is the caller's memory of `size` bytes, as the driver requires.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaHostRegister(p: *mut c_void, size: usize, flags: u32) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the caller's range; the driver checks it.
        ok(unsafe { cu::cuMemHostRegister_v2(p, size, flags) })
    })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaHostUnregister(p: *mut c_void) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the driver checks the address.
        ok(unsafe { cu::cuMemHostUnregister(p) })
    })
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaHostGetDevicePointer(out: *mut *mut c_void, host: *mut c_void, flags: u32) -> cudaError_t {
    run(|| {
        context()?;
        let mut p = 0;
        // SAFETY: a valid out-pointer; the driver checks the address.
        ok(unsafe { cu::cuMemHostGetDevicePointer_v2(&mut p, host, flags) })?;
        // SAFETY: the caller's.
        unsafe { put(out, p as *mut c_void) }
    })
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMallocManaged(out: *mut *mut c_void, size: usize, flags: u32) -> cudaError_t {
    run(|| {
        context()?;
        if out.is_null() {
            return Err(Error(error::INVALID_VALUE));
        }
        let mut p = 0;
        if size > 0 {
            // SAFETY: a valid out-pointer; a context is current.
            ok(unsafe { cu::cuMemAllocManaged(&mut p, size, flags) })?;
        }
        // SAFETY: the caller's.
        unsafe { put(out, p as *mut c_void) }
    })
}

/// `cudaMemcpyKind`: host-to-host 0 to default 4; with unified addressing the driver tells
/// the pointers apart, so the kind is only checked.
fn kind_checked(kind: c_int) -> Result<(), Error> {
    match kind {
        0..=4 => Ok(()),
        _ => Err(Error(error::INVALID_MEMCPY_DIRECTION)),
    }
}

/// A copy on a stream: `None` is the synchronous `cudaMemcpy`.
fn copy(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
    on: Option<cu::CUstream>,
) -> Result<(), Error> {
    kind_checked(kind)?;
    context()?;
    if count == 0 {
        return Ok(());
    }
    // SAFETY: the driver checks both ranges against what it knows of them.
    ok(unsafe {
        match on {
            None => cu::cuMemcpy(dptr(dst), dptr(src), count),
            Some(s) => cu::cuMemcpyAsync(dptr(dst), dptr(src), count, s),
        }
    })
}

/// # Safety
/// Host ranges are the caller's, valid for `count` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemcpy(dst: *mut c_void, src: *const c_void, count: usize, kind: c_int) -> cudaError_t {
    run(|| copy(dst, src, count, kind, None))
}

/// # Safety
/// Host ranges are the caller's, valid for `count` bytes until the copy ends.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemcpyAsync(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
    s: cudaStream_t,
) -> cudaError_t {
    run(|| copy(dst, src, count, kind, Some(stream(s, Default::Legacy))))
}

/// # Safety
/// As [`cudaMemcpyAsync`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemcpyAsync_ptsz(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
    s: cudaStream_t,
) -> cudaError_t {
    run(|| copy(dst, src, count, kind, Some(stream(s, Default::PerThread))))
}

/// # Safety
/// As [`cudaMemcpy`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemcpy_ptds(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
) -> cudaError_t {
    run(|| on_thread_stream(|s| copy(dst, src, count, kind, Some(s))))
}

/// A `_ptds` call: the work on the thread's own stream, waited for as the plain call waits.
fn on_thread_stream(work: impl FnOnce(cu::CUstream) -> Result<(), Error>) -> Result<(), Error> {
    let s = crate::types::STREAM_PER_THREAD as cu::CUstream;
    work(s)?;
    // SAFETY: the driver's special handle for the thread's stream.
    ok(unsafe { cu::cuStreamSynchronize(s) })
}

fn set(p: *mut c_void, value: c_int, count: usize, on: Option<cu::CUstream>) -> Result<(), Error> {
    context()?;
    if count == 0 {
        return Ok(());
    }
    // SAFETY: the driver checks the range.
    ok(unsafe {
        match on {
            None => cu::cuMemsetD8_v2(dptr(p), value as u8, count),
            Some(s) => cu::cuMemsetD8Async(dptr(p), value as u8, count, s),
        }
    })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemset(p: *mut c_void, value: c_int, count: usize) -> cudaError_t {
    run(|| set(p, value, count, None))
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemset_ptds(p: *mut c_void, value: c_int, count: usize) -> cudaError_t {
    run(|| on_thread_stream(|s| set(p, value, count, Some(s))))
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemsetAsync(p: *mut c_void, value: c_int, count: usize, s: cudaStream_t) -> cudaError_t {
    run(|| set(p, value, count, Some(stream(s, Default::Legacy))))
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemsetAsync_ptsz(
    p: *mut c_void,
    value: c_int,
    count: usize,
    s: cudaStream_t,
) -> cudaError_t {
    run(|| set(p, value, count, Some(stream(s, Default::PerThread))))
}

fn peer_copy(
    dst: *mut c_void,
    dst_device: c_int,
    src: *const c_void,
    src_device: c_int,
    count: usize,
    on: Option<cu::CUstream>,
) -> Result<(), Error> {
    let (dst_ctx, src_ctx) = (primary(dst_device)?, primary(src_device)?);
    context()?;
    if count == 0 {
        return Ok(());
    }
    // SAFETY: contexts the driver gave; it checks both ranges.
    ok(unsafe {
        match on {
            None => cu::cuMemcpyPeer(dptr(dst), dst_ctx, dptr(src), src_ctx, count),
            Some(s) => cu::cuMemcpyPeerAsync(dptr(dst), dst_ctx, dptr(src), src_ctx, count, s),
        }
    })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemcpyPeer(
    dst: *mut c_void,
    dst_device: c_int,
    src: *const c_void,
    src_device: c_int,
    count: usize,
) -> cudaError_t {
    run(|| peer_copy(dst, dst_device, src, src_device, count, None))
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemcpyPeerAsync(
    dst: *mut c_void,
    dst_device: c_int,
    src: *const c_void,
    src_device: c_int,
    count: usize,
    s: cudaStream_t,
) -> cudaError_t {
    run(|| peer_copy(dst, dst_device, src, src_device, count, Some(stream(s, Default::Legacy))))
}

/// `cudaPointerAttributes`' first four fields (`type`, `device`, `devicePointer`,
/// `hostPointer`), which both majors share; 13.x adds reserved words after them.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PointerAttributes {
    pub kind: c_int,
    pub device: c_int,
    pub device_pointer: *mut c_void,
    pub host_pointer: *mut c_void,
}

/// What `cudaPointerGetAttributes` answers for `p`. Memory the driver does not know is
/// `cudaMemoryTypeUnregistered` (0) on device -2, its host pointer `p` itself.
pub fn pointer_attributes(p: *const c_void) -> Result<PointerAttributes, Error> {
    use cu::CUpointer_attribute::*;
    context()?;
    let mut kind: u32 = 0;
    let mut ordinal: c_int = -2;
    let mut device_pointer: u64 = 0;
    let mut host_pointer: *mut c_void = std::ptr::null_mut();
    let mut managed: u64 = 0;
    let mut attrs = [
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
        CU_POINTER_ATTRIBUTE_HOST_POINTER,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,
    ];
    let mut data: [*mut c_void; 5] = [
        (&raw mut kind).cast(),
        (&raw mut ordinal).cast(),
        (&raw mut device_pointer).cast(),
        (&raw mut host_pointer).cast(),
        (&raw mut managed).cast(),
    ];
    // SAFETY: each data pointer is valid for its attribute's value.
    ok(unsafe { cu::cuPointerGetAttributes(5, attrs.as_mut_ptr(), data.as_mut_ptr(), dptr(p)) })?;
    Ok(match (kind, managed != 0) {
        (_, true) => {
            PointerAttributes { kind: 3, device: ordinal, device_pointer: p.cast_mut(), host_pointer: p.cast_mut() }
        }
        (0, false) => {
            PointerAttributes { kind: 0, device: -2, device_pointer: std::ptr::null_mut(), host_pointer: p.cast_mut() }
        }
        (k, false) => PointerAttributes {
            kind: if k == 1 { 1 } else { 2 },
            device: ordinal,
            device_pointer: device_pointer as *mut c_void,
            host_pointer,
        },
    })
}

/// The common part of `cudaPointerGetAttributes`: both majors' exports write its result.
///
/// # Safety
/// A non-null `out` is valid for a write of [`PointerAttributes`].
pub unsafe fn get_pointer_attributes(out: *mut PointerAttributes, p: *const c_void) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { put(out, pointer_attributes(p)?) })
}

/// `cudaCpuDeviceId`: the host, where CUDA 12's prefetch and advice take a device.
pub const CPU_DEVICE: c_int = -1;

/// CUDA 12's device number as a location: the host for [`CPU_DEVICE`].
pub fn location_of(device: c_int) -> MemLocation {
    match device {
        CPU_DEVICE => MemLocation { kind: 2, id: 0 },
        d => MemLocation { kind: 1, id: d },
    }
}

fn checked_location(location: MemLocation) -> Result<cu::CUmemLocation, Error> {
    location.to_driver().ok_or(Error(error::INVALID_VALUE))
}

/// `cudaMemPrefetchAsync` of either major, by location (its values are the driver's).
///
/// # Safety
/// The range and the stream are as the runtime documents for the call.
pub unsafe fn prefetch(
    p: *const c_void,
    count: usize,
    location: MemLocation,
    flags: u32,
    s: cudaStream_t,
    default: Default,
) -> cudaError_t {
    run(|| {
        context()?;
        let location = checked_location(location)?;
        // SAFETY: the driver checks the range, the location and the stream.
        ok(unsafe { cu::cuMemPrefetchAsync_v2(dptr(p), count, location, flags, stream(s, default)) })
    })
}

/// `cudaMemAdvise` of either major, by location (`cudaMemoryAdvise`'s values are the driver's).
///
/// # Safety
/// The range is as the runtime documents for the call.
pub unsafe fn advise(p: *const c_void, count: usize, advice: c_int, location: MemLocation) -> cudaError_t {
    run(|| {
        context()?;
        let location = checked_location(location)?;
        // SAFETY: the driver checks the range, the advice and the location.
        ok(unsafe { crate::driver::cuMemAdvise_v2(dptr(p), count, advice, location) })
    })
}

/// `cudaMemcpyBatchAsync` of either major (`cudaMemcpyAttributes` laid out as the driver's).
///
/// # Safety
/// Each array holds `count` (attributes: `num_attrs`) entries, as the driver reads them.
#[allow(clippy::too_many_arguments)]
pub unsafe fn batch(
    dsts: *const *mut c_void,
    srcs: *const *const c_void,
    sizes: *const usize,
    count: usize,
    attrs: *mut cu::CUmemcpyAttributes,
    attrs_idxs: *mut usize,
    num_attrs: usize,
    s: cu::CUstream,
) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the caller's arrays, as the driver's (addresses are unified); the driver checks them.
        ok(unsafe {
            cu::cuMemcpyBatchAsync_v2(
                dsts as *mut u64,
                srcs as *mut u64,
                sizes.cast_mut(),
                count,
                attrs,
                attrs_idxs,
                num_attrs,
                s,
            )
        })
    })
}

const _: () = assert!(size_of::<PointerAttributes>() == 24);
