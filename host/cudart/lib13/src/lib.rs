//! peerpool's `libcudart.so.13`: the runtime of `peerpool-cudart` with the CUDA 13.x layouts,
//! and an answer for every other export of NVIDIA's library of that major (`build_lib.rs`).

#![allow(non_snake_case)]

pub use peerpool_cudart;
use peerpool_cudart::error::{Error, cudaError_t};
use std::ffi::{c_int, c_void};

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

include!(concat!(env!("OUT_DIR"), "/unserved.rs"));
