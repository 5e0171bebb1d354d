//! `cudaError_t`: the driver's results as the runtime's, the per-thread last error, and the
//! names and texts NVIDIA's runtime gives them.

use crate::error_table::ERRORS;
use cudarc::driver::sys::CUresult;
use std::cell::Cell;
use std::ffi::{CStr, c_char};
use std::sync::Mutex;

/// `cudaError_t`.
pub type cudaError_t = u32;

pub const SUCCESS: cudaError_t = 0;
pub const INVALID_VALUE: cudaError_t = 1;
pub const MEMORY_ALLOCATION: cudaError_t = 2;
pub const INITIALIZATION: cudaError_t = 3;
pub const INVALID_MEMCPY_DIRECTION: cudaError_t = 21;
pub const INSUFFICIENT_DRIVER: cudaError_t = 35;
pub const NO_DEVICE: cudaError_t = 100;
pub const INVALID_DEVICE: cudaError_t = 101;
pub const INVALID_RESOURCE_HANDLE: cudaError_t = 400;
pub const INVALID_SYMBOL: cudaError_t = 13;
pub const INVALID_DEVICE_FUNCTION: cudaError_t = 98;
pub const INVALID_KERNEL_IMAGE: cudaError_t = 200;
pub const MISSING_CONFIGURATION: cudaError_t = 52;
pub const NOT_SUPPORTED: cudaError_t = 801;
pub const UNKNOWN: cudaError_t = 999;

/// A runtime error: never `cudaSuccess`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error(pub cudaError_t);

/// The driver's numbers are the runtime's wherever the runtime names the number (CUDA aligned
/// them); a driver result the runtime has no name for is `cudaErrorUnknown`.
impl From<CUresult> for Error {
    fn from(result: CUresult) -> Self {
        let n = result as u32;
        Error(if named(n).is_some() { n } else { UNKNOWN })
    }
}

fn named(n: cudaError_t) -> Option<&'static (u32, &'static str, &'static str)> {
    ERRORS.binary_search_by_key(&n, |e| e.0).ok().map(|i| &ERRORS[i])
}

thread_local! {
    static LAST: Cell<cudaError_t> = const { Cell::new(SUCCESS) };
}

/// Records `e` as the thread's last error and returns it.
pub fn record(e: Error) -> cudaError_t {
    LAST.with(|l| l.set(e.0));
    e.0
}

/// Runs a call's body: its error becomes the thread's last error.
pub fn run(body: impl FnOnce() -> Result<(), Error>) -> cudaError_t {
    match body() {
        Ok(()) => SUCCESS,
        Err(e) => record(e),
    }
}

/// Writes `value` through `out`, or refuses a null `out` with `cudaErrorInvalidValue`.
///
/// # Safety
/// A non-null `out` is valid for a write of a `T`.
pub unsafe fn put<T>(out: *mut T, value: T) -> Result<(), Error> {
    if out.is_null() {
        return Err(Error(INVALID_VALUE));
    }
    // SAFETY: the caller's.
    unsafe { out.write(value) };
    Ok(())
}

/// The answer for an export of NVIDIA's runtime that peerpool's does not serve: named once on
/// standard error, `cudaErrorNotSupported`.
pub fn unserved(name: &CStr) -> cudaError_t {
    static SAID: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let name = name.to_str().unwrap_or("?");
    let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
    if !said.contains(&name) {
        said.push(String::leak(name.to_string()));
        eprintln!("peerpool-cudart: {name} is not served by peerpool's CUDA runtime; it answers cudaErrorNotSupported");
    }
    record(Error(NOT_SUPPORTED))
}

/// Reads and resets the thread's last error, a sticky one too (as NVIDIA's runtime does): an
/// error that lost the context comes back from the driver on every later call instead.
#[unsafe(no_mangle)]
pub extern "C" fn cudaGetLastError() -> cudaError_t {
    LAST.with(|l| l.replace(SUCCESS))
}

#[unsafe(no_mangle)]
pub extern "C" fn cudaPeekAtLastError() -> cudaError_t {
    LAST.with(Cell::get)
}

/// NVIDIA's texts are NUL-terminated here once, on first use.
fn c_text(i: usize, which: usize) -> *const c_char {
    static TEXTS: std::sync::OnceLock<Vec<[std::ffi::CString; 2]>> = std::sync::OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        let c = |s: &str| std::ffi::CString::new(s).unwrap_or_default();
        let mut v: Vec<[std::ffi::CString; 2]> = ERRORS.iter().map(|e| [c(e.1), c(e.2)]).collect();
        v.push([c("unrecognized error code"), c("unrecognized error code")]);
        v
    });
    texts[i.min(texts.len() - 1)][which].as_ptr()
}

fn index(e: cudaError_t) -> usize {
    ERRORS.binary_search_by_key(&e, |x| x.0).unwrap_or(ERRORS.len())
}

#[unsafe(no_mangle)]
pub extern "C" fn cudaGetErrorName(e: cudaError_t) -> *const c_char {
    c_text(index(e), 0)
}

#[unsafe(no_mangle)]
pub extern "C" fn cudaGetErrorString(e: cudaError_t) -> *const c_char {
    c_text(index(e), 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_driver_results_map_by_number() {
        assert!(ERRORS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(Error::from(CUresult::CUDA_ERROR_OUT_OF_MEMORY), Error(MEMORY_ALLOCATION));
        assert_eq!(Error::from(CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED), Error(704));
        assert_eq!(Error::from(CUresult::CUDA_ERROR_INVALID_CONTEXT), Error(201));
        // A driver result the runtime does not name (CUDA_ERROR_CONTEXT_ALREADY_CURRENT).
        assert_eq!(Error::from(CUresult::CUDA_ERROR_CONTEXT_ALREADY_CURRENT), Error(UNKNOWN));
    }

    #[test]
    fn names_and_texts_as_nvidia_gives_them() {
        let name = |e| unsafe { CStr::from_ptr(cudaGetErrorName(e)) }.to_str().unwrap();
        let text = |e| unsafe { CStr::from_ptr(cudaGetErrorString(e)) }.to_str().unwrap();
        assert_eq!(name(1), "cudaErrorInvalidValue");
        assert_eq!(text(2), "out of memory");
        assert_eq!(name(12345), "unrecognized error code");
    }

    #[test]
    fn the_last_error_is_reset_when_read_sticky_or_not() {
        record(Error(INVALID_VALUE));
        assert_eq!(cudaPeekAtLastError(), INVALID_VALUE);
        assert_eq!(cudaGetLastError(), INVALID_VALUE);
        assert_eq!(cudaGetLastError(), SUCCESS);
        record(Error(700));
        assert_eq!(cudaPeekAtLastError(), 700);
        assert_eq!(cudaGetLastError(), 700);
        assert_eq!(cudaGetLastError(), SUCCESS);
    }
}
