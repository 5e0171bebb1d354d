//! The driver, through whichever libcuda the process loads (cudarc's dynamic loading): the
//! simulator's under `peerpool sim`, NVIDIA's on a GPU machine.

pub(crate) use cudarc::driver::sys as cu;
pub(crate) use cudarc::driver::sys::CUresult;

use crate::error::Error;
use std::ffi::{c_int, c_void};

/// A driver call's result as the runtime's.
pub(crate) fn ok(result: CUresult) -> Result<(), Error> {
    match result {
        CUresult::CUDA_SUCCESS => Ok(()),
        other => Err(other.into()),
    }
}

/// Whether a libcuda can be loaded at all (cudarc aborts a call into a library it cannot find).
pub(crate) fn present() -> bool {
    // SAFETY: it only tries to open the library by its usual names.
    unsafe { cu::is_culib_present() }
}

/// Driver calls whose enum arguments the runtime passes on as plain numbers: a number outside
/// cudarc's enums must reach the driver (which refuses it) rather than become an invalid enum
/// here. Each is looked up once by name; a library without it answers `NOT_SUPPORTED`.
macro_rules! untyped {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {$(
        $(#[$doc])*
        /// # Safety
        /// The pointers are valid as the driver's documentation of the call requires.
        pub(crate) unsafe fn $name($($arg: $ty),*) -> CUresult {
            type F = unsafe extern "C" fn($($ty),*) -> CUresult;
            static CALL: std::sync::OnceLock<Option<F>> = std::sync::OnceLock::new();
            // SAFETY: F is the call's C signature, its enums C ints.
            let call = CALL.get_or_init(|| unsafe {
                cu::culib().get::<F>(concat!(stringify!($name), "\0").as_bytes()).ok().map(|s| *s)
            });
            match call {
                // SAFETY: the caller's.
                Some(f) => unsafe { f($($arg),*) },
                None => CUresult::CUDA_ERROR_NOT_SUPPORTED,
            }
        }
    )*};
}

untyped! {
    fn cuDeviceGetAttribute(value: *mut c_int, attr: c_int, device: cu::CUdevice);
    fn cuMemPoolSetAttribute(pool: cu::CUmemoryPool, attr: c_int, value: *mut c_void);
    fn cuMemPoolGetAttribute(pool: cu::CUmemoryPool, attr: c_int, value: *mut c_void);
    fn cuMemPoolGetAccess(flags: *mut c_int, pool: cu::CUmemoryPool, location: *mut c_void);
    fn cuMemPoolExportToShareableHandle(handle: *mut c_void, pool: cu::CUmemoryPool, kind: c_int, flags: u64);
    fn cuMemPoolImportFromShareableHandle(pool: *mut cu::CUmemoryPool, handle: *mut c_void, kind: c_int, flags: u64);
    fn cuFuncGetAttribute(value: *mut c_int, attr: c_int, function: cu::CUfunction);
    fn cuFuncSetAttribute(function: cu::CUfunction, attr: c_int, value: c_int);
    fn cuFuncSetCacheConfig(function: cu::CUfunction, config: c_int);
    fn cuMemAdvise_v2(p: cu::CUdeviceptr, count: usize, advice: c_int, location: cu::CUmemLocation);
    fn cuStreamBeginCapture_v2(stream: cu::CUstream, mode: c_int);
    fn cuThreadExchangeStreamCaptureMode(mode: *mut c_int);
    fn cuGetProcAddress_v2(symbol: *const std::ffi::c_char, out: *mut *mut c_void, version: c_int, flags: u64, status: *mut c_int);
}
