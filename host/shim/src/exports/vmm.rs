//! The virtual-memory API: physical allocations, reserved ranges, mappings and their access,
//! and exporting and importing physical allocations.

use super::ipc::{export_handle, with_handle};
use crate::abi::{access_descs, allocation_props, mem_handle, out};
use crate::boundary::{code, entry, sim};
use cudarc::driver::sys::{CUdeviceptr, CUmemAccessDesc, CUmemAllocationProp, CUmemGenericAllocationHandle, CUresult};
use peerpool::driver::{DevicePtr, Granularity};
use std::ffi::{c_uint, c_void};

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetAllocationGranularity(
    granularity: *mut usize,
    prop: *const CUmemAllocationProp,
    option: c_uint,
) -> CUresult {
    entry!(cuMemGetAllocationGranularity(granularity, prop, option), {
        let option = match option {
            0 => Granularity::Minimum,
            1 => Granularity::Recommended,
            _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        };
        out(granularity, code(sim().mem_get_allocation_granularity(&allocation_props(prop)?, option))?)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemCreate(
    handle: *mut CUmemGenericAllocationHandle,
    size: usize,
    prop: *const CUmemAllocationProp,
    _flags: u64,
) -> CUresult {
    entry!(cuMemCreate(handle, size, prop, _flags), {
        out(handle, code(sim().mem_create(size, &allocation_props(prop)?))?.0)
    })
}

/// A fixed-address hint is not honoured (the driver may ignore it too).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAddressReserve(
    ptr: *mut CUdeviceptr,
    size: usize,
    alignment: usize,
    _addr: CUdeviceptr,
    _flags: u64,
) -> CUresult {
    entry!(cuMemAddressReserve(ptr, size, alignment, _addr, _flags), {
        out(ptr, code(sim().mem_address_reserve(size, alignment))?.0)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemMap(
    ptr: CUdeviceptr,
    size: usize,
    offset: usize,
    handle: CUmemGenericAllocationHandle,
    _flags: u64,
) -> CUresult {
    entry!(cuMemMap(ptr, size, offset, handle, _flags), {
        code(sim().mem_map(DevicePtr(ptr), size, offset, mem_handle(handle)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemSetAccess(
    ptr: CUdeviceptr,
    size: usize,
    desc: *const CUmemAccessDesc,
    count: usize,
) -> CUresult {
    entry!(cuMemSetAccess(ptr, size, desc, count), {
        code(sim().mem_set_access(DevicePtr(ptr), size, &access_descs(desc, count)?))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemUnmap(ptr: CUdeviceptr, size: usize) -> CUresult {
    entry!(cuMemUnmap(ptr, size), { code(sim().mem_unmap(DevicePtr(ptr), size)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAddressFree(ptr: CUdeviceptr, size: usize) -> CUresult {
    entry!(cuMemAddressFree(ptr, size), { code(sim().mem_address_free(DevicePtr(ptr), size)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemRelease(handle: CUmemGenericAllocationHandle) -> CUresult {
    entry!(cuMemRelease(handle), { code(sim().mem_release(mem_handle(handle))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemExportToShareableHandle(
    handle_out: *mut c_void,
    handle: CUmemGenericAllocationHandle,
    handle_type: c_uint,
    _flags: u64,
) -> CUresult {
    entry!(cuMemExportToShareableHandle(handle_out, handle, handle_type, _flags), {
        export_handle(handle_out, handle_type, |kind| sim().mem_export_to_shareable_handle(mem_handle(handle), kind))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemImportFromShareableHandle(
    handle: *mut CUmemGenericAllocationHandle,
    os_handle: *mut c_void,
    handle_type: c_uint,
) -> CUresult {
    entry!(cuMemImportFromShareableHandle(handle, os_handle, handle_type), {
        out(handle, with_handle(os_handle, handle_type, |h| sim().mem_import_from_shareable_handle(h))?.0)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemRetainAllocationHandle(
    handle: *mut CUmemGenericAllocationHandle,
    addr: *mut c_void,
) -> CUresult {
    entry!(cuMemRetainAllocationHandle(handle, addr), {
        out(handle, code(sim().mem_retain_allocation_handle(DevicePtr(addr as usize as u64)))?.0)
    })
}
