//! What works before `cuInit` (the version, error names, entry-point lookup) and `cuInit`
//! itself, which reads the environment.

use crate::abi::out;
use crate::backend;
use crate::boundary::{self, code, forward_if_real, sim};
use crate::runtime;
use cudarc::driver::sys::CUresult;
use peerpool::driver::codes;
use std::ffi::{CString, c_char, c_int, c_uint};
use std::sync::OnceLock;

/// Reads the environment (the first time) and starts the simulator: a mistake there is one
/// line on stderr and `CUDA_ERROR_INVALID_VALUE`, from this and every later `cuInit`.
///
/// # Safety
/// None needed: takes no pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuInit(flags: c_uint) -> CUresult {
    if backend::get().is_err() {
        return CUresult::CUDA_ERROR_INVALID_VALUE;
    }
    forward_if_real!(cuInit(flags));
    let Ok(runtime) = runtime::init() else { return CUresult::CUDA_ERROR_INVALID_VALUE };
    // As NVIDIA's driver answers: a GPU listed twice in CUDA_VISIBLE_DEVICES, or no device (none
    // left visible). The in-process simulator keeps an empty topology usable. The driver starts
    // only when the call succeeds: a fault rule that fails it leaves every other call
    // CUDA_ERROR_NOT_INITIALIZED, as an unstarted driver answers.
    boundary::enter_on(
        runtime,
        "cuInit",
        || format!("flags={flags}"),
        || {
            let sim = &runtime.sim;
            match sim.device_get_count() {
                _ if runtime.visible_twice => Err(CUresult::CUDA_ERROR_INVALID_DEVICE),
                Ok(0) => Err(CUresult::CUDA_ERROR_NO_DEVICE),
                _ => code(sim.init(flags)),
            }?;
            runtime.started();
            Ok(())
        },
    )
}

/// The simulated topology's driver version; before `cuInit`, the shim's own (13.0).
///
/// # Safety
/// `version` is valid for a write of an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
    forward_if_real!(cuDriverGetVersion(version));
    // SAFETY (the writes): the caller's.
    let answer = match runtime::get() {
        Some(_) => {
            return boundary::enter("cuDriverGetVersion", String::new, || unsafe {
                out(version, code(sim().driver_get_version())?)
            });
        }
        None => unsafe { out(version, runtime::driver_version()) },
    };
    answer.err().unwrap_or(CUresult::CUDA_SUCCESS)
}

/// Every code's name and description, NUL-terminated, kept for the process.
fn texts() -> &'static [(u32, CString, CString)] {
    static TEXTS: OnceLock<Vec<(u32, CString, CString)>> = OnceLock::new();
    TEXTS.get_or_init(|| {
        codes::ALL
            .iter()
            .map(|&c| {
                let name = format!("{c:?}");
                let words = name.trim_start_matches("CUDA_ERROR_").trim_start_matches("CUDA_").replace('_', " ");
                let text = format!("{} (simulated by peerpool)", words.to_lowercase());
                (c.raw(), CString::new(name).expect("no NUL"), CString::new(text).expect("no NUL"))
            })
            .collect()
    })
}

/// Looks `error` up; an unknown code is `CUDA_ERROR_INVALID_VALUE` with a null string.
///
/// # Safety
/// `at` is valid for a write of a pointer.
unsafe fn describe(
    error: c_uint,
    at: *mut *const c_char,
    pick: fn(&(u32, CString, CString)) -> *const c_char,
) -> CUresult {
    let found = texts().iter().find(|t| t.0 == error).map(pick);
    // SAFETY: the caller's.
    match unsafe { out(at, found.unwrap_or(std::ptr::null())) } {
        Err(code) => code,
        Ok(()) if found.is_none() => CUresult::CUDA_ERROR_INVALID_VALUE,
        Ok(()) => CUresult::CUDA_SUCCESS,
    }
}

/// # Safety
/// `name` is valid for a write of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorName(error: c_uint, name: *mut *const c_char) -> CUresult {
    forward_if_real!(cuGetErrorName(error, name));
    // SAFETY: the caller's.
    unsafe { describe(error, name, |t| t.1.as_ptr()) }
}

/// # Safety
/// `text` is valid for a write of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorString(error: c_uint, text: *mut *const c_char) -> CUresult {
    forward_if_real!(cuGetErrorString(error, text));
    // SAFETY: the caller's.
    unsafe { describe(error, text, |t| t.2.as_ptr()) }
}

/// No profiler runs here: starting and stopping it succeed, as with no tool attached.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuProfilerStart() -> CUresult {
    boundary::entry!(cuProfilerStart(), { Ok(()) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuProfilerStop() -> CUresult {
    boundary::entry!(cuProfilerStop(), { Ok(()) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn error_names_and_strings_answer_every_code_and_refuse_others() {
        let mut name = std::ptr::null();
        // SAFETY: a live out-pointer.
        assert_eq!(unsafe { cuGetErrorName(2, &mut name) }, CUresult::CUDA_SUCCESS);
        // SAFETY: the shim's static text.
        assert_eq!(unsafe { CStr::from_ptr(name) }.to_str().unwrap(), "CUDA_ERROR_OUT_OF_MEMORY");
        // SAFETY: as above.
        assert_eq!(unsafe { cuGetErrorString(2, &mut name) }, CUresult::CUDA_SUCCESS);
        // SAFETY: as above.
        assert!(unsafe { CStr::from_ptr(name) }.to_str().unwrap().starts_with("out of memory"));
        // SAFETY: as above.
        assert_eq!(unsafe { cuGetErrorName(0xdead, &mut name) }, CUresult::CUDA_ERROR_INVALID_VALUE);
        assert!(name.is_null());
    }
}
