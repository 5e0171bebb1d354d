//! peerpool's `libcudart.so.12`: the runtime of `peerpool-cudart` with the CUDA 12.x layouts,
//! and an answer for every other export of NVIDIA's library of that major (`build_lib.rs`).

#![allow(non_snake_case)]

pub use peerpool_cudart;
use peerpool_cudart::error::{Error, cudaError_t};
use peerpool_cudart::memory;
use peerpool_cudart::types::{Default, cudaStream_t as Stream, stream};
use std::ffi::{c_int, c_void};

/// `cudaMemLocation` and `cudaMemcpyAttributes`, laid out as the driver's.
type Location = peerpool_cudart::types::MemLocation;
type Attributes = peerpool_cudart::types::MemcpyAttributes;

/// The CUDA version whose headers this library's layouts follow.
const RUNTIME_VERSION: c_int = 12090;

/// # Safety
/// A non-null `version` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaRuntimeGetVersion(version: *mut c_int) -> cudaError_t {
    if version.is_null() {
        return peerpool_cudart::error::record(Error(peerpool_cudart::error::INVALID_VALUE));
    }
    // SAFETY: the caller's.
    unsafe { version.write(RUNTIME_VERSION) };
    0
}

/// # Safety
/// A non-null `out` is valid for a write of CUDA 12's `cudaPointerAttributes`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaPointerGetAttributes(
    out: *mut peerpool_cudart::memory::PointerAttributes,
    p: *const c_void,
) -> cudaError_t {
    // SAFETY: the caller's (CUDA 12's struct is the common part alone).
    unsafe { peerpool_cudart::memory::get_pointer_attributes(out, p) }
}

/// # Safety
/// A non-null `out` is valid for a write of CUDA 12's `cudaDeviceProp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetDeviceProperties(
    out: *mut peerpool_cudart::properties::DeviceProp12,
    device: c_int,
) -> cudaError_t {
    // SAFETY: the caller's.
    peerpool_cudart::error::run(|| unsafe {
        peerpool_cudart::error::put(out, peerpool_cudart::properties::device_prop12(device)?)
    })
}

/// # Safety
/// As [`cudaGetDeviceProperties`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetDeviceProperties_v2(
    out: *mut peerpool_cudart::properties::DeviceProp12,
    device: c_int,
) -> cudaError_t {
    // SAFETY: the caller's.
    peerpool_cudart::error::run(|| unsafe {
        peerpool_cudart::error::put(out, peerpool_cudart::properties::device_prop12(device)?)
    })
}

/// # Safety
/// A non-null `ms` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaEventElapsedTime_v2(ms: *mut f32, start: *mut c_void, end: *mut c_void) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { peerpool_cudart::streams::cudaEventElapsedTime(ms, start.cast(), end.cast()) }
}

/// CUDA 12's old name for `cudaDeviceSynchronize`.
#[unsafe(no_mangle)]
pub extern "C" fn cudaThreadSynchronize() -> cudaError_t {
    peerpool_cudart::device::cudaDeviceSynchronize()
}

/// CUDA 12's old name for `cudaDeviceReset`.
#[unsafe(no_mangle)]
pub extern "C" fn cudaThreadExit() -> cudaError_t {
    peerpool_cudart::device::cudaDeviceReset()
}

/// # Safety
/// `symbol` is NUL-terminated; `out` is valid for a write, a non-null `status` too.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetDriverEntryPoint(
    symbol: *const std::ffi::c_char,
    out: *mut *mut c_void,
    flags: u64,
    status: *mut c_int,
) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { peerpool_cudart::device::entry_point(symbol, out, RUNTIME_VERSION, flags, status, false) }
}

/// # Safety
/// As [`cudaGetDriverEntryPoint`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetDriverEntryPoint_ptsz(
    symbol: *const std::ffi::c_char,
    out: *mut *mut c_void,
    flags: u64,
    status: *mut c_int,
) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { peerpool_cudart::device::entry_point(symbol, out, RUNTIME_VERSION, flags, status, true) }
}

/// CUDA 12's prefetch: to a device, or the host as `cudaCpuDeviceId`.
///
/// # Safety
/// The range is the caller's managed memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPrefetchAsync(p: *const c_void, count: usize, device: c_int, s: Stream) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { memory::prefetch(p, count, memory::location_of(device), 0, s, Default::Legacy) }
}

/// # Safety
/// As [`cudaMemPrefetchAsync`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPrefetchAsync_ptsz(
    p: *const c_void,
    count: usize,
    device: c_int,
    s: Stream,
) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { memory::prefetch(p, count, memory::location_of(device), 0, s, Default::PerThread) }
}

/// # Safety
/// As [`cudaMemPrefetchAsync`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPrefetchAsync_v2(
    p: *const c_void,
    count: usize,
    location: Location,
    flags: u32,
    s: Stream,
) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { memory::prefetch(p, count, location, flags, s, Default::Legacy) }
}

/// # Safety
/// As [`cudaMemPrefetchAsync`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPrefetchAsync_v2_ptsz(
    p: *const c_void,
    count: usize,
    location: Location,
    flags: u32,
    s: Stream,
) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { memory::prefetch(p, count, location, flags, s, Default::PerThread) }
}

/// # Safety
/// The range is the caller's managed memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemAdvise(p: *const c_void, count: usize, advice: c_int, device: c_int) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { memory::advise(p, count, advice, memory::location_of(device)) }
}

/// # Safety
/// The range is the caller's managed memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemAdvise_v2(
    p: *const c_void,
    count: usize,
    advice: c_int,
    location: Location,
) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { memory::advise(p, count, advice, location) }
}

/// CUDA 12's batch copy, with the index of a failing copy (`SIZE_MAX`: none known).
///
/// # Safety
/// Each array holds `count` (attributes: `num_attrs`) entries; `fail` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemcpyBatchAsync(
    dsts: *const *mut c_void,
    srcs: *const *const c_void,
    sizes: *const usize,
    count: usize,
    attrs: *mut Attributes,
    attrs_idxs: *mut usize,
    num_attrs: usize,
    fail: *mut usize,
    s: Stream,
) -> cudaError_t {
    if !fail.is_null() {
        // SAFETY: the caller's.
        unsafe { fail.write(usize::MAX) };
    }
    // SAFETY: the caller's.
    unsafe { memory::batch(dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs, stream(s, Default::Legacy)) }
}

include!(concat!(env!("OUT_DIR"), "/unserved.rs"));
