//! Modules, their functions and globals, and launches. Any image loads (PTX, cubins, fatbins;
//! `peerpool_sim::image` reads them) and its kernels are listed and described as NVIDIA's
//! driver did on an H200. Launches are `launch.rs`'s.

use crate::abi::{as_ptr, c_str, function, lasting_name, module, out, out_handles, out_with};
use crate::boundary::{code, entry, sim};
use crate::image_bytes::{Wrapper, image_bytes};
use crate::jit_options::JitOptions;
use cudarc::driver::sys::{
    CUdeviceptr, CUfunc_cache, CUfunction, CUjit_option, CUmodule, CUmoduleLoadingMode, CUresult, CUsharedconfig,
};
use peerpool::driver::{DevicePtr, DriverResult};
use std::ffi::{c_char, c_int, c_uint, c_void};

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadData(h_module: *mut CUmodule, image: *const c_void) -> CUresult {
    entry!(cuModuleLoadData(h_module, image), { load(h_module, &image_bytes(image, Wrapper::Refused)?) })
}

/// The JIT's error and info logs are written as the driver writes them (`jit_options.rs`); its
/// other options change nothing the simulator compiles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    h_module: *mut CUmodule,
    image: *const c_void,
    count: c_uint,
    options: *mut CUjit_option,
    values: *mut *mut c_void,
) -> CUresult {
    entry!(cuModuleLoadDataEx(h_module, image, count, options, values), {
        let jit = JitOptions::read(count, options, values);
        load_with(h_module, &image_bytes(image, Wrapper::Refused)?, jit)
    })
}

/// Any image, as `cuModuleLoadData` takes it (so an H200 answered PTX and a cubin).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadFatBinary(h_module: *mut CUmodule, fat_cubin: *const c_void) -> CUresult {
    entry!(cuModuleLoadFatBinary(h_module, fat_cubin), { load(h_module, &image_bytes(fat_cubin, Wrapper::Refused)?) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoad(h_module: *mut CUmodule, fname: *const c_char) -> CUresult {
    entry!(cuModuleLoad(h_module, fname), { load(h_module, &file(fname)?) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetFunctionCount(count: *mut c_uint, h_module: CUmodule) -> CUresult {
    entry!(cuModuleGetFunctionCount(count, h_module), {
        out(count, code(sim().module_function_count(module(h_module)))?)
    })
}

/// The first `num_functions` functions; fewer when the module has fewer (success either
/// way, as on an H200).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleEnumerateFunctions(
    functions: *mut CUfunction,
    num_functions: c_uint,
    h_module: CUmodule,
) -> CUresult {
    entry!(cuModuleEnumerateFunctions(functions, num_functions, h_module), {
        let found = code(sim().module_functions(module(h_module), num_functions as usize))?;
        out_handles(functions, found.into_iter().map(|f| f.0).collect())
    })
}

/// Either out-parameter may be null, not both (`CUDA_ERROR_INVALID_VALUE`, as on an H200).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetGlobal_v2(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    h_module: CUmodule,
    name: *const c_char,
) -> CUresult {
    entry!(cuModuleGetGlobal_v2(dptr, bytes, h_module, name), {
        write_global(dptr, bytes, name, |name| sim().module_get_global(module(h_module), name))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetName(name: *mut *const c_char, f: CUfunction) -> CUresult {
    entry!(cuFuncGetName(name, f), { out_with(name, || lasting_name(&code(sim().func_name(function(f)))?)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetModule(h_module: *mut CUmodule, f: CUfunction) -> CUresult {
    entry!(cuFuncGetModule(h_module, f), { out(h_module, as_ptr(code(sim().func_get_module(function(f)))?.0)) })
}

/// `attrib` is read as a plain integer: a C caller may pass any value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetAttribute(pi: *mut c_int, attrib: c_int, f: CUfunction) -> CUresult {
    entry!(cuFuncGetAttribute(pi, attrib, f), { out_with(pi, || code(sim().func_get_attribute(function(f), attrib))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncSetAttribute(f: CUfunction, attrib: c_int, value: c_int) -> CUresult {
    entry!(cuFuncSetAttribute(f, attrib, value), { code(sim().func_set_attribute(function(f), attrib, value)) })
}

/// A hint on a live function (the simulator has no cache to split): any of the four settings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncSetCacheConfig(f: CUfunction, config: CUfunc_cache) -> CUresult {
    entry!(cuFuncSetCacheConfig(f, config), { function_hint(f, config as u32, 3) })
}

/// A hint on a live function, deprecated (banks are not simulated): any of the three settings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncSetSharedMemConfig(f: CUfunction, config: CUsharedconfig) -> CUresult {
    entry!(cuFuncSetSharedMemConfig(f, config), { function_hint(f, config as u32, 2) })
}

/// A hint that changes nothing here: `f` must be a live function, and `config` at most `most`.
fn function_hint(f: CUfunction, config: u32, most: u32) -> crate::boundary::Answer {
    code(sim().func_name(function(f)))?;
    match config <= most {
        true => Ok(()),
        false => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleUnload(h_module: CUmodule) -> CUresult {
    entry!(cuModuleUnload(h_module), { code(sim().module_unload(module(h_module))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetFunction(
    h_func: *mut CUfunction,
    h_module: CUmodule,
    name: *const c_char,
) -> CUresult {
    entry!(cuModuleGetFunction(h_func, h_module, name), {
        out(h_func, as_ptr(code(sim().module_get_function(module(h_module), c_str(name)?))?.0))
    })
}

/// Lazy, as the driver's default since CUDA 12.2, unless `CUDA_MODULE_LOADING=EAGER` (read as
/// the driver reads it); the simulator loads every image whole either way.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetLoadingMode(mode: *mut CUmoduleLoadingMode) -> CUresult {
    entry!(cuModuleGetLoadingMode(mode), {
        let eager = std::env::var_os("CUDA_MODULE_LOADING").is_some_and(|v| v == "EAGER");
        out(
            mode,
            match eager {
                true => CUmoduleLoadingMode::CU_MODULE_EAGER_LOADING,
                false => CUmoduleLoadingMode::CU_MODULE_LAZY_LOADING,
            },
        )
    })
}

/// Either out-parameter may be null, not both (an H200 answered a null size with success).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetParamInfo(
    f: CUfunction,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    entry!(cuFuncGetParamInfo(f, index, offset, size), {
        write_found(offset, size, || code(sim().func_get_param_info(function(f), index)).map(|(o, s)| (o as u64, s)))
    })
}

/// Loads `image` into the current context and writes its handle.
///
/// # Safety
/// A non-null `h_module` is valid for a write.
unsafe fn load(h_module: *mut CUmodule, image: &[u8]) -> crate::boundary::Answer {
    // SAFETY: the caller's; no JIT options.
    unsafe { load_with(h_module, image, JitOptions::default()) }
}

/// [`load`], writing the JIT's logs where `jit` says; the trace line names the code the driver
/// takes and the PTX that runs.
///
/// # Safety
/// A non-null `h_module` is valid for a write; `jit`'s promise holds.
unsafe fn load_with(h_module: *mut CUmodule, image: &[u8], jit: JitOptions) -> crate::boundary::Answer {
    let (loaded, log) = sim().module_load_logged(image);
    // SAFETY: the caller's.
    unsafe { jit.write(&log) };
    let loaded = code(loaded)?;
    crate::boundary::trace_detail(|| match sim().module_chosen(loaded) {
        Some((driver, Some(runs))) => format!("the driver takes {driver}; runs {runs}"),
        Some((driver, None)) => format!("the driver takes {driver}; nothing runs"),
        None => String::new(),
    });
    // SAFETY: the caller's.
    unsafe { out(h_module, as_ptr(loaded.0)) }
}

/// Writes an address (or offset) and a size, found by `find`, through whichever out-parameter
/// is not null; both null is `CUDA_ERROR_INVALID_VALUE` before `find` runs (as on an H200).
///
/// # Safety
/// Each non-null pointer is valid for a write.
pub(crate) unsafe fn write_found<A: TryFrom<u64>>(
    at_out: *mut A,
    size_out: *mut usize,
    find: impl FnOnce() -> Result<(u64, usize), CUresult>,
) -> crate::boundary::Answer {
    if at_out.is_null() && size_out.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let (at, size) = find()?;
    let at = A::try_from(at).map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
    // SAFETY: the caller's, for whichever is not null.
    unsafe {
        if !at_out.is_null() {
            at_out.write(at);
        }
        if !size_out.is_null() {
            size_out.write(size);
        }
    }
    Ok(())
}

/// Writes the address and size of the global `name`, found by `find`, as [`write_found`] does;
/// a null `name` is `CUDA_ERROR_INVALID_VALUE` before either.
///
/// # Safety
/// A non-null `name` is NUL-terminated; each non-null out-parameter is valid for a write.
pub(crate) unsafe fn write_global(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    name: *const c_char,
    find: impl FnOnce(&[u8]) -> DriverResult<(DevicePtr, usize)>,
) -> crate::boundary::Answer {
    // SAFETY: the caller's.
    let name = unsafe { c_str(name) }?;
    // SAFETY: the caller's.
    unsafe { write_found(dptr, bytes, || code(find(name.to_bytes())).map(|(at, size)| (at.0, size))) }
}

/// The bytes of the file `name` names: `CUDA_ERROR_FILE_NOT_FOUND` if it cannot be read (as an
/// H200 answered a missing file).
///
/// # Safety
/// A non-null `name` is a NUL-terminated string.
pub(crate) unsafe fn file(name: *const c_char) -> Result<Vec<u8>, CUresult> {
    // SAFETY: the caller's.
    let name = unsafe { c_str(name) }?;
    let path = std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.to_bytes()));
    std::fs::read(path).map_err(|_| CUresult::CUDA_ERROR_FILE_NOT_FOUND)
}
