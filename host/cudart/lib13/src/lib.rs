//! peerpool's `libcudart.so.13`: the runtime of `peerpool-cudart` with the CUDA 13.x layouts,
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
const RUNTIME_VERSION: c_int = 13000;

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

/// CUDA 13's `cudaPointerAttributes`: the common part, then reserved words.
#[repr(C)]
pub struct PointerAttributes13 {
    common: peerpool_cudart::memory::PointerAttributes,
    reserved: [std::ffi::c_long; 8],
}

/// # Safety
/// A non-null `out` is valid for a write of CUDA 13's `cudaPointerAttributes`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaPointerGetAttributes(out: *mut PointerAttributes13, p: *const c_void) -> cudaError_t {
    if !out.is_null() {
        // SAFETY: the caller's.
        unsafe { (&raw mut (*out).reserved).write([0; 8]) };
    }
    // SAFETY: the caller's; the common part comes first.
    unsafe { peerpool_cudart::memory::get_pointer_attributes(out.cast(), p) }
}

/// # Safety
/// A non-null `out` is valid for a write of CUDA 13's `cudaDeviceProp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGetDeviceProperties(
    out: *mut peerpool_cudart::properties::DeviceProp13,
    device: c_int,
) -> cudaError_t {
    // SAFETY: the caller's.
    peerpool_cudart::error::run(|| unsafe {
        peerpool_cudart::error::put(out, peerpool_cudart::properties::device_prop13(device)?)
    })
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

/// # Safety
/// The range is the caller's managed memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemPrefetchAsync(
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
pub unsafe extern "C" fn cudaMemPrefetchAsync_ptsz(
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
pub unsafe extern "C" fn cudaMemAdvise(
    p: *const c_void,
    count: usize,
    advice: c_int,
    location: Location,
) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { memory::advise(p, count, advice, location) }
}

/// # Safety
/// Each array holds `count` (attributes: `num_attrs`) entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemcpyBatchAsync(
    dsts: *const *mut c_void,
    srcs: *const *const c_void,
    sizes: *const usize,
    count: usize,
    attrs: *mut Attributes,
    attrs_idxs: *mut usize,
    num_attrs: usize,
    s: Stream,
) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { memory::batch(dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs, stream(s, Default::Legacy)) }
}

/// # Safety
/// As [`cudaMemcpyBatchAsync`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaMemcpyBatchAsync_ptsz(
    dsts: *const *mut c_void,
    srcs: *const *const c_void,
    sizes: *const usize,
    count: usize,
    attrs: *mut Attributes,
    attrs_idxs: *mut usize,
    num_attrs: usize,
    s: Stream,
) -> cudaError_t {
    // SAFETY: the caller's.
    unsafe { memory::batch(dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs, stream(s, Default::PerThread)) }
}

include!(concat!(env!("OUT_DIR"), "/unserved.rs"));
