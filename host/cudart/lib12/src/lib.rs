//! peerpool's `libcudart.so.12`: the runtime of `peerpool-cudart` with the CUDA 12.x layouts,
//! and an answer for every other export of NVIDIA's library of that major (`build_lib.rs`).

#![allow(non_snake_case)]

pub use peerpool_cudart;
use peerpool_cudart::error::{Error, cudaError_t};
use std::ffi::{c_int, c_void};

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

include!(concat!(env!("OUT_DIR"), "/unserved.rs"));
