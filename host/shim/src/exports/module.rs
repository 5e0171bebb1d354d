//! Modules and launches: peerpool's own kernels only (the simulator runs them natively; it does
//! not execute foreign PTX or machine code, and refuses such images with
//! `CUDA_ERROR_NOT_SUPPORTED`, named on stderr).

use crate::abi::{as_ptr, function, module, out, stream};
use crate::boundary::{code, exports, sim};
use cudarc::driver::sys::{self, CUresult};
use peerpool::driver::{Cubin, KernelArg, LaunchShape, ModuleImage, elf_extent};
use std::ffi::{CStr, c_char, c_uint, c_void};

exports! {
    fn cuModuleLoadData(h_module: *mut sys::CUmodule, image: *const c_void) {
        out(h_module, as_ptr(code(sim().module_load_data(read_image(image)?))?.0))
    }

    /// JIT options are ignored: the simulator compiles nothing.
    fn cuModuleLoadDataEx(h_module: *mut sys::CUmodule, image: *const c_void, _count: c_uint, _options: *mut sys::CUjit_option, _values: *mut *mut c_void) {
        out(h_module, as_ptr(code(sim().module_load_data(read_image(image)?))?.0))
    }

    fn cuModuleUnload(h_module: sys::CUmodule) {
        code(sim().module_unload(module(h_module)))
    }

    fn cuModuleGetFunction(h_func: *mut sys::CUfunction, h_module: sys::CUmodule, name: *const c_char) {
        if name.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        out(h_func, as_ptr(code(sim().module_get_function(module(h_module), CStr::from_ptr(name)))?.0))
    }

    /// One-dimensional grids and blocks without dynamic shared memory (what peerpool's kernels
    /// use); the parameters are read at the sizes `cuFuncGetParamInfo` gives.
    fn cuLaunchKernel(
        f: sys::CUfunction,
        grid_x: c_uint, grid_y: c_uint, grid_z: c_uint,
        block_x: c_uint, block_y: c_uint, block_z: c_uint,
        shared: c_uint, h_stream: sys::CUstream,
        params: *mut *mut c_void, extra: *mut *mut c_void,
    ) {
        if (grid_y, grid_z, block_y, block_z, shared) != (1, 1, 1, 1, 0) || !extra.is_null() {
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
        }
        let d = sim();
        let mut args = Vec::new();
        while let Ok((_, size)) = d.func_get_param_info(function(f), args.len()) {
            if params.is_null() {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            let at = params.add(args.len()).read();
            args.push(match size {
                4 => KernelArg::U32(at.cast::<u32>().read_unaligned()),
                _ => KernelArg::U64(at.cast::<u64>().read_unaligned()),
            });
        }
        code(d.launch_kernel(function(f), LaunchShape { grid: grid_x, block: block_x }, stream(h_stream), &args))
    }

    /// Lazy, as the driver's default since CUDA 12.2, unless `CUDA_MODULE_LOADING=EAGER` (read as
    /// the driver reads it); the simulator loads every image whole either way.
    fn cuModuleGetLoadingMode(mode: *mut sys::CUmoduleLoadingMode) {
        let eager = std::env::var_os("CUDA_MODULE_LOADING").is_some_and(|v| v == "EAGER");
        out(mode, match eager {
            true => sys::CUmoduleLoadingMode::CU_MODULE_EAGER_LOADING,
            false => sys::CUmoduleLoadingMode::CU_MODULE_LAZY_LOADING,
        })
    }

    fn cuFuncGetParamInfo(f: sys::CUfunction, index: usize, offset: *mut usize, size: *mut usize) {
        let (o, s) = code(sim().func_get_param_info(function(f), index))?;
        out(offset, o)?;
        out(size, s)
    }
}

/// The image behind a `cuModuleLoadData` pointer: a cubin as far as its ELF headers reach, else
/// NUL-terminated PTX. Only peerpool's kernels are accepted.
///
/// # Safety
/// `image` points at a whole image, as `cuModuleLoadData` requires.
unsafe fn read_image(image: *const c_void) -> Result<ModuleImage<'static>, CUresult> {
    if image.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY (the reads): the caller's; each reads no further than the headers read so far say.
    unsafe {
        if std::slice::from_raw_parts(image.cast::<u8>(), 4) == b"\x7fELF" {
            let mut len = 64;
            loop {
                let bytes = std::slice::from_raw_parts(image.cast::<u8>(), len);
                let extent = elf_extent(bytes).map_err(|_| CUresult::CUDA_ERROR_INVALID_IMAGE)?;
                match usize::try_from(extent) {
                    Ok(extent) if extent > len => len = extent,
                    Ok(_) => break,
                    Err(_) => return Err(CUresult::CUDA_ERROR_INVALID_IMAGE),
                }
            }
            let elf = std::slice::from_raw_parts(image.cast::<u8>(), len);
            if Some(elf) != peerpool_kernels::SM90_CUBIN {
                return Err(foreign("a cubin that is not peerpool's"));
            }
            return Ok(ModuleImage::Cubin(Cubin::new(elf).map_err(|_| CUresult::CUDA_ERROR_INVALID_IMAGE)?));
        }
        let text = CStr::from_ptr(image.cast::<c_char>());
        let foreign_entries = entries(text.to_str().unwrap_or_default())
            .filter(|name| !peerpool_kernels::ENTRY_POINTS.contains(name))
            .collect::<Vec<_>>();
        if !foreign_entries.is_empty() {
            return Err(foreign(&format!("PTX declaring {}", foreign_entries.join(", "))));
        }
        Ok(ModuleImage::Ptx(text))
    }
}

/// The kernel entry names a PTX text declares.
fn entries(ptx: &str) -> impl Iterator<Item = &str> {
    ptx.split(".entry")
        .skip(1)
        .filter_map(|rest| rest.split(|c: char| c == '(' || c.is_whitespace()).find(|w| !w.is_empty()))
}

/// A module image other than peerpool's kernels: `CUDA_ERROR_NOT_SUPPORTED`, said on stderr.
fn foreign(what: &str) -> CUresult {
    eprintln!("peerpool-shim: cuModuleLoadData: {what}; the simulator runs peerpool's own kernels only");
    CUresult::CUDA_ERROR_NOT_SUPPORTED
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_entries_of_peerpools_ptx_are_all_known() {
        let names: Vec<&str> = super::entries(peerpool_kernels::PTX).collect();
        assert_eq!(names.len(), peerpool_kernels::ENTRY_POINTS.len(), "{names:?}");
        assert!(names.iter().all(|n| peerpool_kernels::ENTRY_POINTS.contains(n)));
        let foreign = ".version 8.0\n.target sm_90\n.visible .entry my_kernel(\n.param .u64 p)\n{ ret; }";
        assert_eq!(super::entries(foreign).collect::<Vec<_>>(), ["my_kernel"]);
    }
}
