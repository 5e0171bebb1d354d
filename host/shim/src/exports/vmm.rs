//! The virtual-memory API: physical allocations, reserved ranges, mappings and their access,
//! and exporting and importing physical allocations.

use super::ipc::{with_handle, write_handle};
use crate::abi::{access_descs, allocation_props, mem_handle, out, share_handle};
use crate::boundary::{code, exports, sim};
use cudarc::driver::sys::{self, CUresult};
use peerpool::driver::{DevicePtr, Granularity};
use std::ffi::{c_uint, c_void};

exports! {
    fn cuMemGetAllocationGranularity(granularity: *mut usize, prop: *const sys::CUmemAllocationProp, option: c_uint) {
        let option = match option {
            0 => Granularity::Minimum,
            1 => Granularity::Recommended,
            _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        };
        out(granularity, code(sim().mem_get_allocation_granularity(&allocation_props(prop)?, option))?)
    }

    fn cuMemCreate(handle: *mut sys::CUmemGenericAllocationHandle, size: usize, prop: *const sys::CUmemAllocationProp, _flags: u64) {
        out(handle, code(sim().mem_create(size, &allocation_props(prop)?))?.0)
    }

    /// A fixed-address hint is not honoured (the driver may ignore it too).
    fn cuMemAddressReserve(ptr: *mut sys::CUdeviceptr, size: usize, alignment: usize, _addr: sys::CUdeviceptr, _flags: u64) {
        out(ptr, code(sim().mem_address_reserve(size, alignment))?.0)
    }

    fn cuMemMap(ptr: sys::CUdeviceptr, size: usize, offset: usize, handle: sys::CUmemGenericAllocationHandle, _flags: u64) {
        code(sim().mem_map(DevicePtr(ptr), size, offset, mem_handle(handle)))
    }

    fn cuMemSetAccess(ptr: sys::CUdeviceptr, size: usize, desc: *const sys::CUmemAccessDesc, count: usize) {
        code(sim().mem_set_access(DevicePtr(ptr), size, &access_descs(desc, count)?))
    }

    fn cuMemUnmap(ptr: sys::CUdeviceptr, size: usize) {
        code(sim().mem_unmap(DevicePtr(ptr), size))
    }

    fn cuMemAddressFree(ptr: sys::CUdeviceptr, size: usize) {
        code(sim().mem_address_free(DevicePtr(ptr), size))
    }

    fn cuMemRelease(handle: sys::CUmemGenericAllocationHandle) {
        code(sim().mem_release(mem_handle(handle)))
    }

    fn cuMemExportToShareableHandle(handle_out: *mut c_void, handle: sys::CUmemGenericAllocationHandle, handle_type: c_uint, _flags: u64) {
        let kind = share_handle(handle_type)?;
        if handle_out.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        write_handle(handle_out, code(sim().mem_export_to_shareable_handle(mem_handle(handle), kind))?)
    }

    fn cuMemImportFromShareableHandle(handle: *mut sys::CUmemGenericAllocationHandle, os_handle: *mut c_void, handle_type: c_uint) {
        let kind = share_handle(handle_type)?;
        out(handle, with_handle(os_handle, kind, |h| sim().mem_import_from_shareable_handle(h))?.0)
    }

    fn cuMemRetainAllocationHandle(handle: *mut sys::CUmemGenericAllocationHandle, addr: *mut c_void) {
        out(handle, code(sim().mem_retain_allocation_handle(DevicePtr(addr as usize as u64)))?.0)
    }
}
