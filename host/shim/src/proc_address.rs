//! `cuGetProcAddress`: how cuda-python and the CUDA runtime find every entry point.
//!
//! A client asks for a documented name (`cuMemAlloc`) and the CUDA version whose ABI it wants
//! (3020 means `cuMemAlloc_v2`). The shim answers with the newest of its exports of that name
//! whose ABI is not newer than asked; names it does not simulate get their stub (which answers
//! `CUDA_ERROR_NOT_SUPPORTED` and names itself); unknown names get null and
//! `CUDA_ERROR_NOT_FOUND`. It works before `cuInit`, as the driver's does.
//!
//! Forwarding to NVIDIA's libcuda, the real `cuGetProcAddress` answers (it knows every version
//! and flag), and an address it gives that is one of its exported entry points is swapped for
//! the shim's entry point of the same name, so that calls made through it meet the fault rules
//! and the trace too. Addresses of anything else (the per-thread default-stream variants,
//! entry points newer than the shim's list) pass through unchanged: those calls are forwarded
//! by the loader alone, untraced.
use crate::backend::{self, Real, Slot};
use crate::boundary;
use crate::unsupported;
use cudarc::driver::sys::{self, CUresult};
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

/// The CUDA version that introduced each versioned symbol the shim implements (an older request
/// means the older ABI, which the shim does not have).
fn since(symbol: &str) -> c_int {
    match symbol {
        "cuCtxSynchronize_v2" => 13000,
        "cuEventElapsedTime_v2" => 12080,
        "cuCtxCreate_v4" => 12050,
        "cuCtxCreate_v3" => 11040,
        "cuGetProcAddress_v2" => 12000,
        "cuDeviceGetUuid_v2" => 11040,
        "cuDevicePrimaryCtxRelease_v2"
        | "cuDevicePrimaryCtxSetFlags_v2"
        | "cuDevicePrimaryCtxReset_v2"
        | "cuIpcOpenMemHandle_v2" => 11000,
        "cuCtxDestroy_v2"
        | "cuCtxPushCurrent_v2"
        | "cuCtxPopCurrent_v2"
        | "cuStreamDestroy_v2"
        | "cuEventDestroy_v2" => 4000,
        s if s.ends_with("_v2") => 3020,
        _ => 0,
    }
}

include!(concat!(env!("OUT_DIR"), "/plain_exports.rs"));

/// Every exported symbol: the implemented ones (this module's own among them), the per-thread
/// default stream's variants, then the stubs.
fn symbols() -> &'static HashMap<&'static str, usize> {
    static SYMBOLS: OnceLock<HashMap<&'static str, usize>> = OnceLock::new();
    SYMBOLS.get_or_init(|| {
        let all = plain().into_iter().chain(crate::per_thread::table()).chain(unsupported::table());
        all.map(|(name, f)| (name, f as usize)).collect()
    })
}

/// The entry point for `name` at `version`, or why there is none.
pub(crate) fn lookup(name: &str, version: c_int) -> Result<*const c_void, sys::CUdriverProcAddressQueryResult> {
    use sys::CUdriverProcAddressQueryResult::*;
    let symbols = symbols();
    let variants = std::iter::once(name.to_string()).chain((2..=4).map(|v| format!("{name}_v{v}")));
    let mut found = None;
    let mut too_new = false;
    for variant in variants {
        let Some((&symbol, &f)) = symbols.get_key_value(variant.as_str()) else { continue };
        if since(symbol) > version {
            too_new = true;
        } else if found.is_none_or(|(s, _)| since(symbol) >= s) {
            found = Some((since(symbol), f));
        }
    }
    match (found, too_new) {
        (Some((_, f)), _) => Ok(f as *const c_void),
        (None, true) => Err(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT),
        (None, false) => Err(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND),
    }
}

/// # Safety
/// `symbol` is NUL-terminated; `pfn` and a non-null `status` are valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut sys::CUdriverProcAddressQueryResult,
) -> CUresult {
    if let Some(real) = backend::real() {
        // The real call, with the shim's entry points swapped in for NVIDIA's.
        static REAL: Slot = Slot::new();
        let args = || {
            // SAFETY: a non-null symbol is NUL-terminated, the caller's promise.
            let name = (!symbol.is_null()).then(|| unsafe { CStr::from_ptr(symbol) }.to_string_lossy());
            format!("symbol={} version={version} flags={flags}", name.unwrap_or_default())
        };
        let code = boundary::forward(real, "cuGetProcAddress_v2", &REAL, args, |address| {
            // SAFETY: NVIDIA's cuGetProcAddress_v2 has this function's signature (`Lookup`); the
            // pointers are the caller's.
            unsafe { std::mem::transmute::<*mut c_void, Lookup>(address)(symbol, pfn, version, flags, status) }
        });
        if code == CUresult::CUDA_SUCCESS && !pfn.is_null() {
            // SAFETY: the real call succeeded and wrote `*pfn`, the caller's pointer.
            unsafe {
                if let Some(&ours) = shim_for_real(real).get(&(*pfn as usize)) {
                    pfn.write(ours as *mut c_void);
                }
            }
        }
        return code;
    }
    if symbol.is_null() || pfn.is_null() {
        return CUresult::CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: the caller's.
    let name = unsafe { CStr::from_ptr(symbol) }.to_str().unwrap_or_default();
    // A driver knows only the entry points of its own release and before.
    let (f, answer, code) = match lookup(name, version.min(crate::runtime::driver_version())) {
        Ok(f) => (f, sys::CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS, CUresult::CUDA_SUCCESS),
        Err(why) => (std::ptr::null(), why, CUresult::CUDA_ERROR_NOT_FOUND),
    };
    // SAFETY: the caller's.
    unsafe {
        pfn.write(f.cast_mut());
        if !status.is_null() {
            status.write(answer);
        }
    }
    code
}

/// `cuGetProcAddress_v2`'s C type.
type Lookup = unsafe extern "C" fn(
    *const c_char,
    *mut *mut c_void,
    c_int,
    u64,
    *mut sys::CUdriverProcAddressQueryResult,
) -> CUresult;
// The exported function has that type (checked here, relied on by the transmute above).
const _: Lookup = cuGetProcAddress_v2;

/// The shim's entry point for each address of a real entry point of the same name.
fn shim_for_real(real: &Real) -> &'static HashMap<usize, usize> {
    static MAP: OnceLock<HashMap<usize, usize>> = OnceLock::new();
    MAP.get_or_init(|| {
        let ours = symbols();
        ours.iter().filter_map(|(name, &f)| Some((real.address(name)? as usize, f))).collect()
    })
}

/// The CUDA 11.3 form, without the status.
///
/// # Safety
/// As for [`cuGetProcAddress_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
) -> CUresult {
    // SAFETY: the caller's.
    unsafe { cuGetProcAddress_v2(symbol, pfn, version, flags, std::ptr::null_mut()) }
}

/// The per-thread default stream's name for the lookup (what a program compiled with
/// `CUDA_API_PER_THREAD_DEFAULT_STREAM` calls): the same lookup.
///
/// # Safety
/// As for [`cuGetProcAddress_v2`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress_v2_ptsz(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut sys::CUdriverProcAddressQueryResult,
) -> CUresult {
    // SAFETY: the caller's.
    unsafe { cuGetProcAddress_v2(symbol, pfn, version, flags, status) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exports;

    #[test]
    fn a_documented_name_finds_the_abi_asked_for() {
        let v2 = exports::cuMemAlloc_v2 as *const c_void;
        assert_eq!(lookup("cuMemAlloc", 3020), Ok(v2));
        assert_eq!(lookup("cuMemAlloc", 13000), Ok(v2));
        // The pre-3.2 ABI (32-bit sizes) is not there.
        assert_eq!(
            lookup("cuMemAlloc", 2000),
            Err(sys::CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
        );
        assert_eq!(lookup("cuEventElapsedTime", 12000), Ok(exports::cuEventElapsedTime as *const c_void));
        assert_eq!(lookup("cuEventElapsedTime", 12080), Ok(exports::cuEventElapsedTime_v2 as *const c_void));
        assert_eq!(lookup("cuMemPoolSetAccess", 11020), Ok(exports::cuMemPoolSetAccess as *const c_void));
        assert_eq!(
            lookup("cuNoSuchCall", 13000),
            Err(sys::CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
        );
        assert!(lookup("cuGraphCreate", 13000).is_ok(), "a stub answers for what is not simulated");
    }
}
