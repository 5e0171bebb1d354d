//! Libraries (`cuLibraryLoadData`, what the CUDA runtime loads a program's fatbins with) and
//! their kernels, on the simulator's modules: a library loads lazily, as the driver's default
//! mode does, and its kernel's function in a context is that context's module's.

use crate::abi::{as_ptr, c_str, kernel, lasting_name, library, out, out_handles, out_with};
use crate::boundary::{code, entry, sim};
use crate::exports::module::{file, write_found, write_global};
use crate::image_bytes::{Wrapper, image_bytes};
use crate::jit_options::JitOptions;
use cudarc::driver::sys::{
    CUdevice, CUdeviceptr, CUfunction, CUjit_option, CUkernel, CUlibrary, CUlibraryOption, CUmodule, CUresult,
};
use std::ffi::{c_char, c_int, c_uint, c_void};

/// Any bytes load (an H200 took garbage in either loading mode): what they hold is read when a
/// later call needs it, and that call answers what the reading found. PTX is compiled at once
/// for the current context's device, its error log written where the JIT options say, and the
/// load still succeeds, as NVIDIA's driver does. Library options are ignored. A fatbin wrapper
/// is followed to its fatbin.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryLoadData(
    lib: *mut CUlibrary,
    image: *const c_void,
    jit_options: *mut CUjit_option,
    jit_values: *mut *mut c_void,
    jit_count: c_uint,
    _options: *mut CUlibraryOption,
    _values: *mut *mut c_void,
    _count: c_uint,
) -> CUresult {
    entry!(cuLibraryLoadData(lib, image, jit_options, jit_values, jit_count, _options, _values, _count), {
        if image.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let jit = JitOptions::read(jit_count, jit_options, jit_values);
        let bytes = image_bytes(image, Wrapper::Followed).map_err(peerpool::CudaCode::from_bindings);
        let (loaded, log) = sim().library_load_logged(bytes);
        jit.write(&log);
        out(lib, as_ptr(code(loaded)?))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryLoadFromFile(
    lib: *mut CUlibrary,
    name: *const c_char,
    jit_options: *mut CUjit_option,
    jit_values: *mut *mut c_void,
    jit_count: c_uint,
    _options: *mut CUlibraryOption,
    _values: *mut *mut c_void,
    _count: c_uint,
) -> CUresult {
    entry!(cuLibraryLoadFromFile(lib, name, jit_options, jit_values, jit_count, _options, _values, _count), {
        let jit = JitOptions::read(jit_count, jit_options, jit_values);
        let (loaded, log) = sim().library_load_logged(Ok(file(name)?));
        jit.write(&log);
        out(lib, as_ptr(code(loaded)?))
    })
}

/// A second unload is `CUDA_ERROR_INVALID_HANDLE` (NVIDIA's driver crashed the process).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryUnload(lib: CUlibrary) -> CUresult {
    entry!(cuLibraryUnload(lib), { code(sim().library_unload(library(lib))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetKernelCount(count: *mut c_uint, lib: CUlibrary) -> CUresult {
    entry!(cuLibraryGetKernelCount(count, lib), { out(count, code(sim().library_kernel_count(library(lib)))?) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryEnumerateKernels(
    kernels: *mut CUkernel,
    num_kernels: c_uint,
    lib: CUlibrary,
) -> CUresult {
    entry!(cuLibraryEnumerateKernels(kernels, num_kernels, lib), {
        out_handles(kernels, code(sim().library_kernels(library(lib), num_kernels as usize))?)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetKernel(p_kernel: *mut CUkernel, lib: CUlibrary, name: *const c_char) -> CUresult {
    entry!(cuLibraryGetKernel(p_kernel, lib, name), {
        out(p_kernel, as_ptr(code(sim().library_get_kernel(library(lib), c_str(name)?.to_bytes()))?))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetModule(p_mod: *mut CUmodule, lib: CUlibrary) -> CUresult {
    entry!(cuLibraryGetModule(p_mod, lib), { out(p_mod, as_ptr(code(sim().library_get_module(library(lib)))?.0)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetGlobal(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    lib: CUlibrary,
    name: *const c_char,
) -> CUresult {
    entry!(cuLibraryGetGlobal(dptr, bytes, lib, name), {
        write_global(dptr, bytes, name, |name| sim().library_get_global(library(lib), name))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetFunction(p_func: *mut CUfunction, k: CUkernel) -> CUresult {
    entry!(cuKernelGetFunction(p_func, k), { out(p_func, as_ptr(code(sim().kernel_get_function(kernel(k)))?.0)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetName(name: *mut *const c_char, k: CUkernel) -> CUresult {
    entry!(cuKernelGetName(name, k), { out_with(name, || lasting_name(&code(sim().kernel_name(kernel(k)))?)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetLibrary(p_lib: *mut CUlibrary, k: CUkernel) -> CUresult {
    entry!(cuKernelGetLibrary(p_lib, k), { out(p_lib, as_ptr(code(sim().kernel_get_library(kernel(k)))?)) })
}

/// Either out-parameter may be null, not both.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetParamInfo(
    k: CUkernel,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    entry!(cuKernelGetParamInfo(k, index, offset, size), {
        write_found(offset, size, || code(sim().kernel_get_param_info(kernel(k), index)).map(|(o, s)| (o as u64, s)))
    })
}

/// A `__managed__` variable of the library: one address for all contexts.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetManaged(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    lib: CUlibrary,
    name: *const c_char,
) -> CUresult {
    entry!(cuLibraryGetManaged(dptr, bytes, lib, name), {
        write_global(dptr, bytes, name, |name| sim().library_get_managed(library(lib), name))
    })
}

/// `attrib` is read as a plain integer: a C caller may pass any value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelSetAttribute(attrib: c_int, value: c_int, k: CUkernel, dev: CUdevice) -> CUresult {
    entry!(cuKernelSetAttribute(attrib, value, k, dev), {
        code(sim().kernel_set_attribute(kernel(k), attrib, value, dev))
    })
}

/// `attrib` is read as a plain integer: a C caller may pass any value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetAttribute(pi: *mut c_int, attrib: c_int, k: CUkernel, dev: CUdevice) -> CUresult {
    entry!(cuKernelGetAttribute(pi, attrib, k, dev), {
        out_with(pi, || code(sim().kernel_get_attribute(kernel(k), attrib, dev)))
    })
}
