//! Conversions between the seam's types and libcuda's, for [`super::CudaDriver`].

use super::super::*;
use cudarc::driver::sys;
use std::ffi::c_void;
use std::mem::MaybeUninit;

/// Turns a `CUresult` into `Ok(())` or a [`CudaError`] naming `call`.
pub(super) fn check(call: Call, code: sys::CUresult) -> DriverResult<()> {
    match code {
        sys::CUresult::CUDA_SUCCESS => Ok(()),
        code => Err(CudaError::new(call.name(), CudaCode::from_bindings(code))),
    }
}

pub(super) fn cu_device(ordinal: i32) -> DriverResult<sys::CUdevice> {
    let mut device = 0;
    // SAFETY: writes one int.
    check(Call::cuDeviceGet, unsafe { sys::cuDeviceGet(&mut device, ordinal) })?;
    Ok(device)
}

pub(super) fn ctx(c: Context) -> sys::CUcontext {
    c.0 as usize as sys::CUcontext
}
pub(super) fn pool(p: Pool) -> sys::CUmemoryPool {
    p.0 as usize as sys::CUmemoryPool
}
pub(super) fn stream(s: Stream) -> sys::CUstream {
    s.0 as usize as sys::CUstream
}
pub(super) fn event(e: Event) -> sys::CUevent {
    e.0 as usize as sys::CUevent
}
pub(super) fn raw<T>(p: *mut T) -> u64 {
    p as usize as u64
}

pub(super) fn location(device: i32) -> sys::CUmemLocation {
    sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: device }
}

pub(super) fn access_flags(access: Access) -> sys::CUmemAccess_flags {
    match access {
        Access::None => sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE,
        Access::Read => sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READ,
        Access::ReadWrite => sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    }
}

pub(super) fn handle_type(kind: HandleKind) -> sys::CUmemAllocationHandleType {
    match kind {
        HandleKind::PosixFd => sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        HandleKind::Fabric => sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_FABRIC,
    }
}

pub(super) fn access_descs(map: &[AccessDesc]) -> Vec<sys::CUmemAccessDesc> {
    map.iter().map(|d| sys::CUmemAccessDesc { location: location(d.device), flags: access_flags(d.access) }).collect()
}

/// `CUmemAllocationProp` for pinned memory on `props.device`, zeroed elsewhere.
pub(super) fn allocation_prop(props: &AllocationProps) -> MaybeUninit<sys::CUmemAllocationProp> {
    let mut raw_props = MaybeUninit::<sys::CUmemAllocationProp>::zeroed();
    let p = raw_props.as_mut_ptr();
    // SAFETY: fields written in place into zeroed memory; the handle types are a bit set
    // written as the u32 they are in C (see `mem_pool_create`).
    unsafe {
        (&raw mut (*p).type_).write(sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED);
        (&raw mut (*p).requestedHandleTypes).cast::<u32>().write(props.handle_types.0);
        (&raw mut (*p).location).write(location(props.device));
    }
    raw_props
}

/// Where an export call writes its handle: an `int` fd, or a fabric handle's 64 bytes.
/// Refuses a fabric export, as the driver would (`CUDA_ERROR_NOT_PERMITTED`), without calling
/// it, when there is no IMEX channel. On the H200s of the run records (no IMEX) the driver's own refusal left
/// the process broken: freeing the pool's memory afterwards crashed it with SIGSEGV, while the
/// same pool without the export attempt lived and died cleanly
/// (`docs/hardware/2026-11-30-full-2/driver_probe_fabric*.txt`).
pub(super) fn fabric_needs_imex(call: Call, kind: HandleKind) -> DriverResult<()> {
    match kind {
        HandleKind::Fabric if !std::path::Path::new(IMEX_CHANNELS).exists() => {
            Err(CudaError::new(call.name(), CudaCode::CUDA_ERROR_NOT_PERMITTED))
        }
        _ => Ok(()),
    }
}

pub(super) struct HandleOut {
    fd: i32,
    fabric: sys::CUmemFabricHandle,
}

impl HandleOut {
    pub(super) fn new() -> HandleOut {
        HandleOut { fd: -1, fabric: sys::CUmemFabricHandle { data: [0; 64] } }
    }

    pub(super) fn ptr(&mut self, kind: HandleKind) -> *mut c_void {
        match kind {
            HandleKind::PosixFd => (&raw mut self.fd).cast(),
            HandleKind::Fabric => (&raw mut self.fabric).cast(),
        }
    }

    /// The handle written. The fd is made close-on-exec here: the driver's may not be, and a
    /// child spawned later must not inherit device memory by accident.
    pub(super) fn take(self, call: Call, kind: HandleKind) -> DriverResult<ExportedHandle> {
        match kind {
            HandleKind::Fabric => Ok(ExportedHandle::Fabric(FabricHandle(self.fabric.data))),
            HandleKind::PosixFd if self.fd < 0 => Err(CudaError::new(call.name(), CudaCode::CUDA_ERROR_UNKNOWN)),
            HandleKind::PosixFd => {
                // SAFETY: the driver returned a new descriptor that nothing else owns.
                let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(self.fd) };
                let _ = rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC);
                Ok(ExportedHandle::Fd(fd))
            }
        }
    }
}

/// The `void *` an import call takes: the fd's number for a POSIX fd, a pointer to the bytes
/// for a fabric handle (`fabric` must outlive the call).
pub(super) fn os_handle(handle: ExportedHandleRef<'_>, fabric: &mut sys::CUmemFabricHandle) -> *mut c_void {
    match handle {
        ExportedHandleRef::Fd(fd) => std::os::fd::AsRawFd::as_raw_fd(&fd) as usize as *mut c_void,
        ExportedHandleRef::Fabric(bytes) => {
            fabric.data = bytes.0;
            (fabric as *mut sys::CUmemFabricHandle).cast()
        }
    }
}
