//! Sharing between processes: pool export and import (POSIX fd or fabric handle), pointer
//! export and import, and legacy IPC handles for `cuMemAlloc` memory.

use crate::abi::{as_ptr, out, pool, share_handle};
use crate::boundary::{code, entry, sim};
use cudarc::driver::sys::{CUdeviceptr, CUipcMemHandle, CUmemPoolPtrExportData, CUmemoryPool, CUresult};
use peerpool::driver::{
    DevicePtr, ExportedHandle, ExportedHandleRef, FabricHandle, HandleKind, IpcMemHandle, PoolPtrExportData,
};
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::os::fd::{BorrowedFd, IntoRawFd};

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolExportToShareableHandle(
    handle_out: *mut c_void,
    memory_pool: CUmemoryPool,
    handle_type: c_uint,
    _flags: u64,
) -> CUresult {
    entry!(cuMemPoolExportToShareableHandle(handle_out, memory_pool, handle_type, _flags), {
        export_handle(handle_out, handle_type, |kind| {
            sim().mem_pool_export_to_shareable_handle(pool(memory_pool), kind)
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolImportFromShareableHandle(
    pool_out: *mut CUmemoryPool,
    os_handle: *mut c_void,
    handle_type: c_uint,
    _flags: u64,
) -> CUresult {
    entry!(cuMemPoolImportFromShareableHandle(pool_out, os_handle, handle_type, _flags), {
        let imported =
            with_handle(os_handle, handle_type, |handle| sim().mem_pool_import_from_shareable_handle(handle))?;
        out(pool_out, as_ptr(imported.0))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolExportPointer(data: *mut CUmemPoolPtrExportData, ptr: CUdeviceptr) -> CUresult {
    entry!(cuMemPoolExportPointer(data, ptr), {
        let exported = code(sim().mem_pool_export_pointer(DevicePtr(ptr)))?;
        out(data, CUmemPoolPtrExportData { reserved: exported.0 })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolImportPointer(
    ptr_out: *mut CUdeviceptr,
    memory_pool: CUmemoryPool,
    data: *mut CUmemPoolPtrExportData,
) -> CUresult {
    entry!(cuMemPoolImportPointer(ptr_out, memory_pool, data), {
        if data.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let data = PoolPtrExportData(data.read().reserved);
        out(ptr_out, code(sim().mem_pool_import_pointer(pool(memory_pool), &data))?.0)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuIpcGetMemHandle(handle: *mut CUipcMemHandle, ptr: CUdeviceptr) -> CUresult {
    entry!(cuIpcGetMemHandle(handle, ptr), {
        let bytes = code(sim().ipc_get_mem_handle(DevicePtr(ptr)))?.0;
        out(handle, CUipcMemHandle { reserved: bytes.map(|b| b as c_char) })
    })
}

/// Opened memory is reachable from its own device; the flags (lazy peer access) change
/// nothing the simulator models.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuIpcOpenMemHandle_v2(
    ptr_out: *mut CUdeviceptr,
    handle: CUipcMemHandle,
    _flags: c_uint,
) -> CUresult {
    entry!(cuIpcOpenMemHandle_v2(ptr_out, handle, _flags), {
        let handle = IpcMemHandle(handle.reserved.map(|c| c as u8));
        out(ptr_out, code(sim().ipc_open_mem_handle(&handle))?.0)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuIpcCloseMemHandle(ptr: CUdeviceptr) -> CUresult {
    entry!(cuIpcCloseMemHandle(ptr), { code(sim().ipc_close_mem_handle(DevicePtr(ptr))) })
}

/// Exports through `export` as the C handle type `handle_type` names, and writes the handle
/// where the caller asked: the fd as an `int` (now the caller's to close), or the fabric
/// handle's 64 bytes. A null `at` is `CUDA_ERROR_INVALID_VALUE` before anything is exported.
///
/// # Safety
/// `at` is valid for a write of an `int` (POSIX fd) or 64 bytes (fabric), as the handle type.
pub(crate) unsafe fn export_handle(
    at: *mut c_void,
    handle_type: c_uint,
    export: impl FnOnce(HandleKind) -> peerpool::driver::DriverResult<ExportedHandle>,
) -> Result<(), CUresult> {
    let kind = share_handle(handle_type)?;
    if at.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let handle = code(export(kind))?;
    // SAFETY: the caller's.
    unsafe {
        match handle {
            ExportedHandle::Fd(fd) => out(at.cast::<c_int>(), fd.into_raw_fd()),
            ExportedHandle::Fabric(bytes) => out(at.cast::<[u8; 64]>(), bytes.0),
        }
    }
}

/// Runs `import` on the handle a caller passed as `void*`, of the C handle type `handle_type`:
/// the fd's number for a POSIX fd, a pointer to the 64 bytes of a fabric handle.
///
/// # Safety
/// For a POSIX fd, `os_handle` is an open file descriptor for the call; for a fabric handle,
/// a pointer valid for 64 bytes.
pub(crate) unsafe fn with_handle<T>(
    os_handle: *mut c_void,
    handle_type: c_uint,
    import: impl FnOnce(ExportedHandleRef<'_>) -> peerpool::driver::DriverResult<T>,
) -> Result<T, CUresult> {
    match share_handle(handle_type)? {
        HandleKind::PosixFd => {
            let fd = c_int::try_from(os_handle as usize).map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
            if fd < 0 {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            // SAFETY: the caller's: the fd is open for the call.
            code(import(ExportedHandleRef::Fd(unsafe { BorrowedFd::borrow_raw(fd) })))
        }
        HandleKind::Fabric => {
            if os_handle.is_null() {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            // SAFETY: the caller's: 64 readable bytes.
            let bytes = FabricHandle(unsafe { os_handle.cast::<[u8; 64]>().read_unaligned() });
            code(import(ExportedHandleRef::Fabric(&bytes)))
        }
    }
}
