//! The C side of the boundary: handles as pointers, out-parameters, and the driver's structs read
//! through mirrors whose enum fields are plain integers (a C caller may put any value there,
//! which a Rust enum may not hold).

use crate::boundary::Answer;
use cudarc::driver::sys::{self, CUresult};
use peerpool::driver::{
    Access, AccessDesc, AllocationProps, Context, Event, Function, HandleKind, HandleKinds, MemHandle, Module, Pool,
    PoolProps, Stream,
};
use std::ffi::c_void;

/// Writes `value` through an out-parameter; a null one is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// A non-null `ptr` is valid for a write of a `T`.
pub(crate) unsafe fn out<T>(ptr: *mut T, value: T) -> Answer {
    if ptr.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: the caller's.
    unsafe { ptr.write(value) };
    Ok(())
}

/// Writes through `ptr` what `make` answers; a null `ptr` is `CUDA_ERROR_INVALID_VALUE` before
/// `make` runs, whatever it would answer or do.
///
/// # Safety
/// A non-null `ptr` is valid for a write of a `T`.
pub(crate) unsafe fn out_with<T>(ptr: *mut T, make: impl FnOnce() -> Result<T, CUresult>) -> Answer {
    if ptr.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: the caller's.
    unsafe { out(ptr, make()?) }
}

/// Writes the handles `found` to the array `into`, which may be null only when none is found.
///
/// # Safety
/// A non-null `into` is valid for writes of `found.len()` handles.
pub(crate) unsafe fn out_handles<T>(into: *mut *mut T, found: Vec<u64>) -> Answer {
    if into.is_null() && !found.is_empty() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    for (i, handle) in found.into_iter().enumerate() {
        // SAFETY: the caller's.
        unsafe { into.add(i).write(as_ptr(handle)) };
    }
    Ok(())
}

/// The C string at `ptr`; a null one is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// A non-null `ptr` is NUL-terminated and stays unchanged for `'a`.
pub(crate) unsafe fn c_str<'a>(ptr: *const std::ffi::c_char) -> Result<&'a std::ffi::CStr, CUresult> {
    match ptr.is_null() {
        true => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        // SAFETY: the caller's.
        false => Ok(unsafe { std::ffi::CStr::from_ptr(ptr) }),
    }
}

/// A handle as the pointer a client holds.
pub(crate) fn as_ptr<T>(handle: u64) -> *mut T {
    handle as usize as *mut T
}

fn raw<T>(ptr: *mut T) -> u64 {
    ptr as usize as u64
}

pub(crate) fn context(c: sys::CUcontext) -> Context {
    Context(raw(c))
}

pub(crate) fn pool(p: sys::CUmemoryPool) -> Pool {
    Pool(raw(p))
}

pub(crate) fn event(e: sys::CUevent) -> Event {
    Event(raw(e))
}

pub(crate) fn module(m: sys::CUmodule) -> Module {
    Module(raw(m))
}

pub(crate) fn function(f: sys::CUfunction) -> Function {
    Function(raw(f))
}

/// A library's handle (no seam type: libraries are beyond peerpool's seam).
pub(crate) fn library(l: sys::CUlibrary) -> u64 {
    raw(l)
}

/// A library kernel's handle.
pub(crate) fn kernel(k: sys::CUkernel) -> u64 {
    raw(k)
}

/// `name` as a C string that lives as long as the process: what `cuFuncGetName` and
/// `cuKernelGetName` hand out (the driver's strings live as long as the module; each distinct
/// name is kept once).
pub(crate) fn lasting_name(name: &str) -> Result<*const std::ffi::c_char, CUresult> {
    use std::collections::HashMap;
    use std::ffi::CString;
    use std::sync::Mutex;
    static NAMES: Mutex<Option<HashMap<String, &'static std::ffi::CStr>>> = Mutex::new(None);
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let names = names.get_or_insert_with(HashMap::new);
    if let Some(kept) = names.get(name) {
        return Ok(kept.as_ptr());
    }
    let owned = CString::new(name).map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
    let kept: &'static std::ffi::CStr = Box::leak(owned.into_boxed_c_str());
    names.insert(name.to_owned(), kept);
    Ok(kept.as_ptr())
}

pub(crate) fn mem_handle(h: sys::CUmemGenericAllocationHandle) -> MemHandle {
    MemHandle(h)
}

/// `CU_STREAM_LEGACY` (1) and `CU_STREAM_PER_THREAD` (2) are the null stream here: the
/// simulator runs every stream's work at once, so their orderings cannot differ.
pub(crate) fn stream(s: sys::CUstream) -> Stream {
    match raw(s) {
        0..=2 => Stream::LEGACY,
        handle => Stream(handle),
    }
}

/// `len` bytes at `ptr` (none for a null pointer with no length).
///
/// # Safety
/// A non-null `ptr` is valid for reads of `len` bytes for `'a`.
pub(crate) unsafe fn bytes<'a>(ptr: *const c_void, len: usize) -> Result<&'a [u8], CUresult> {
    match (ptr.is_null(), len) {
        (_, 0) => Ok(&[]),
        (true, _) => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        // SAFETY: the caller's.
        (false, _) => Ok(unsafe { std::slice::from_raw_parts(ptr.cast(), len) }),
    }
}

/// As [`bytes`], writable.
///
/// # Safety
/// A non-null `ptr` is valid for writes of `len` bytes for `'a`, and nothing else uses them.
pub(crate) unsafe fn bytes_mut<'a>(ptr: *mut c_void, len: usize) -> Result<&'a mut [u8], CUresult> {
    match (ptr.is_null(), len) {
        (_, 0) => Ok(&mut []),
        (true, _) => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        // SAFETY: the caller's.
        (false, _) => Ok(unsafe { std::slice::from_raw_parts_mut(ptr.cast(), len) }),
    }
}

/// `CUmemLocation`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Location {
    kind: u32,
    id: i32,
}

impl Location {
    /// The location as the simulator names it.
    fn named(self) -> peerpool_sim::host_memory::Location {
        use peerpool_sim::host_memory::Location as L;
        use sys::CUmemLocationType::*;
        match self.kind {
            k if k == CU_MEM_LOCATION_TYPE_DEVICE as u32 => L::Device(self.id),
            k if k == CU_MEM_LOCATION_TYPE_HOST as u32 => L::Host,
            k if k == CU_MEM_LOCATION_TYPE_HOST_NUMA as u32 => L::HostNuma(self.id),
            k => L::Other(k),
        }
    }

    /// A device location's ordinal (`CU_MEM_LOCATION_TYPE_DEVICE`); anything else is not
    /// simulated.
    fn device(self) -> Result<i32, CUresult> {
        match self.kind == sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE as u32 {
            true => Ok(self.id),
            false => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        }
    }
}

/// `CUmemAccessDesc`.
#[repr(C)]
struct RawAccessDesc {
    location: Location,
    flags: u32,
}

/// `CUmemPoolProps` (CUDA 13.0).
#[repr(C)]
struct RawPoolProps {
    alloc_type: u32,
    handle_types: u32,
    location: Location,
    win32_security_attributes: *mut c_void,
    max_size: usize,
    usage: u16,
    reserved: [u8; 54],
}

/// `CUmemAllocationProp` (CUDA 13.0).
#[repr(C)]
struct RawAllocationProp {
    kind: u32,
    requested_handle_types: u32,
    location: Location,
    win32_handle_meta_data: *mut c_void,
    alloc_flags: [u8; 8],
}

const PINNED: u32 = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED as u32;

/// The access an access-flags value names.
pub(crate) fn access(flags: u32) -> Result<Access, CUresult> {
    use sys::CUmemAccess_flags::*;
    match flags {
        f if f == CU_MEM_ACCESS_FLAGS_PROT_NONE as u32 => Ok(Access::None),
        f if f == CU_MEM_ACCESS_FLAGS_PROT_READ as u32 => Ok(Access::Read),
        f if f == CU_MEM_ACCESS_FLAGS_PROT_READWRITE as u32 => Ok(Access::ReadWrite),
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

/// The flags value for an access.
pub(crate) fn access_flags(access: Access) -> sys::CUmemAccess_flags {
    match access {
        Access::None => sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE,
        Access::Read => sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READ,
        Access::ReadWrite => sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    }
}

/// `count` access descriptors at `map`.
///
/// # Safety
/// A non-null `map` is valid for reads of `count` descriptors.
pub(crate) unsafe fn access_descs(map: *const sys::CUmemAccessDesc, count: usize) -> Result<Vec<AccessDesc>, CUresult> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if map.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: the caller's; the mirror has the descriptor's layout (tested below).
    let raw = unsafe { std::slice::from_raw_parts(map.cast::<RawAccessDesc>(), count) };
    raw.iter().map(|d| Ok(AccessDesc { device: d.location.device()?, access: access(d.flags)? })).collect()
}

/// A device location's ordinal, read from a `CUmemLocation*`.
///
/// # Safety
/// A non-null `location` is valid for a read.
pub(crate) unsafe fn location_device(location: *const sys::CUmemLocation) -> Result<i32, CUresult> {
    // SAFETY: the caller's; the mirror has the location's layout.
    unsafe { read_as::<_, Location>(location) }?.device()
}

/// A `CUmemLocation` passed by value, as the simulator names it.
pub(crate) fn location(location: sys::CUmemLocation) -> peerpool_sim::host_memory::Location {
    Location { kind: location.type_ as u32, id: location.id }.named()
}

/// A `CUmemLocation*`, as the simulator names it.
///
/// # Safety
/// A non-null `location` is valid for a read.
pub(crate) unsafe fn location_at(
    location: *const sys::CUmemLocation,
) -> Result<peerpool_sim::host_memory::Location, CUresult> {
    // SAFETY: the caller's; the mirror has the location's layout.
    Ok(unsafe { read_as::<_, Location>(location) }?.named())
}

/// `*ptr` read through its mirror `M`; a null `ptr` is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// A non-null `ptr` is valid for a read, and `M` has `T`'s layout.
unsafe fn read_as<T, M>(ptr: *const T) -> Result<M, CUresult> {
    if ptr.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: the caller's.
    Ok(unsafe { ptr.cast::<M>().read() })
}

/// What a `CUmemPoolProps` asks for: a pinned device pool (peerpool's seam), or another kind.
pub(crate) enum PoolRequest {
    Device(PoolProps),
    /// Pinned memory on the host, or managed memory (`managed`), at `location`.
    Other {
        location: peerpool_sim::host_memory::Location,
        managed: bool,
        handle_types: HandleKinds,
        max_size: usize,
    },
}

const MANAGED: u32 = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_MANAGED as u32;

/// `CUmemPoolProps`, as the simulator takes it.
///
/// # Safety
/// A non-null `props` is valid for a read.
pub(crate) unsafe fn pool_request(props: *const sys::CUmemPoolProps) -> Result<PoolRequest, CUresult> {
    // SAFETY: the caller's; the mirror has the struct's layout (tested below).
    let raw = unsafe { read_as::<_, RawPoolProps>(props) }?;
    let (handle_types, max_size) = (HandleKinds(raw.handle_types), raw.max_size);
    let device = raw.location.kind == sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE as u32;
    match raw.alloc_type {
        PINNED if device => Ok(PoolRequest::Device(PoolProps { device: raw.location.id, handle_types, max_size })),
        PINNED => Ok(PoolRequest::Other { location: raw.location.named(), managed: false, handle_types, max_size }),
        MANAGED => Ok(PoolRequest::Other { location: raw.location.named(), managed: true, handle_types, max_size }),
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

/// `CUmemAllocationProp` of pinned device memory.
///
/// # Safety
/// A non-null `prop` is valid for a read.
pub(crate) unsafe fn allocation_props(prop: *const sys::CUmemAllocationProp) -> Result<AllocationProps, CUresult> {
    // SAFETY: the caller's; the mirror has the struct's layout (tested below).
    let raw = unsafe { read_as::<_, RawAllocationProp>(prop) }?;
    if raw.kind != PINNED {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    Ok(AllocationProps { device: raw.location.device()?, handle_types: HandleKinds(raw.requested_handle_types) })
}

/// One side of a 2D copy: where its first row starts and how far apart its rows are. `unified`
/// sides (`CU_MEMORYTYPE_UNIFIED`) and host sides are told apart by the address itself.
pub(crate) struct Side2d {
    pub(crate) start: u64,
    pub(crate) pitch: usize,
}

/// A `CUDA_MEMCPY2D`: source, destination, bytes a row and rows. Arrays are not simulated
/// (`CUDA_ERROR_NOT_SUPPORTED`); an unknown memory type is `CUDA_ERROR_INVALID_VALUE`.
pub(crate) struct Copy2d {
    pub(crate) src: Side2d,
    pub(crate) dst: Side2d,
    pub(crate) width: usize,
    pub(crate) height: usize,
}

/// `CUDA_MEMCPY2D`, its memory types as plain integers.
#[repr(C)]
struct RawMemcpy2d {
    src_x: usize,
    src_y: usize,
    src_type: u32,
    src_host: *const c_void,
    src_device: u64,
    src_array: *mut c_void,
    src_pitch: usize,
    dst_x: usize,
    dst_y: usize,
    dst_type: u32,
    dst_host: *mut c_void,
    dst_device: u64,
    dst_array: *mut c_void,
    dst_pitch: usize,
    width: usize,
    height: usize,
}

/// Where a side's first row starts, by its memory type.
fn side(kind: u32, host: u64, device: u64, x: usize, y: usize, pitch: usize) -> Result<Side2d, CUresult> {
    use sys::CUmemorytype::*;
    let base = match kind {
        k if k == CU_MEMORYTYPE_HOST as u32 => host,
        k if k == CU_MEMORYTYPE_DEVICE as u32 || k == CU_MEMORYTYPE_UNIFIED as u32 => device,
        k if k == CU_MEMORYTYPE_ARRAY as u32 => return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED),
        _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    };
    let offset = y.checked_mul(pitch).and_then(|o| o.checked_add(x)).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    let start = base.checked_add(offset as u64).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    Ok(Side2d { start, pitch })
}

/// A `CUDA_MEMCPY2D*`; a row wider than a pitch is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// A non-null `copy` is valid for a read.
pub(crate) unsafe fn copy_2d(copy: *const sys::CUDA_MEMCPY2D) -> Result<Copy2d, CUresult> {
    // SAFETY: the caller's; the mirror has the struct's layout (tested below).
    let c = unsafe { read_as::<_, RawMemcpy2d>(copy) }?;
    let src = side(c.src_type, c.src_host as u64, c.src_device, c.src_x, c.src_y, c.src_pitch)?;
    let dst = side(c.dst_type, c.dst_host as u64, c.dst_device, c.dst_x, c.dst_y, c.dst_pitch)?;
    if c.height > 1 && (c.width > c.src_pitch || c.width > c.dst_pitch) {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    Ok(Copy2d { src, dst, width: c.width, height: c.height })
}

/// The one handle type of a shareable-handle call.
pub(crate) fn share_handle(kind: u32) -> Result<HandleKind, CUresult> {
    match kind {
        k if k == HandleKinds::POSIX_FD.0 => Ok(HandleKind::PosixFd),
        k if k == HandleKinds::FABRIC.0 => Ok(HandleKind::Fabric),
        _ => Err(CUresult::CUDA_ERROR_NOT_SUPPORTED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, size_of};

    #[test]
    fn the_mirrors_have_the_drivers_layouts() {
        assert_eq!(size_of::<RawAccessDesc>(), size_of::<sys::CUmemAccessDesc>());
        assert_eq!(size_of::<Location>(), size_of::<sys::CUmemLocation>());
        assert_eq!(size_of::<RawPoolProps>(), size_of::<sys::CUmemPoolProps>());
        assert_eq!(align_of::<RawPoolProps>(), align_of::<sys::CUmemPoolProps>());
        assert_eq!(size_of::<RawAllocationProp>(), size_of::<sys::CUmemAllocationProp>());
        assert_eq!(std::mem::offset_of!(RawPoolProps, max_size), std::mem::offset_of!(sys::CUmemPoolProps, maxSize));
        assert_eq!(size_of::<RawMemcpy2d>(), size_of::<sys::CUDA_MEMCPY2D>());
        assert_eq!(
            std::mem::offset_of!(RawMemcpy2d, dst_type),
            std::mem::offset_of!(sys::CUDA_MEMCPY2D, dstMemoryType)
        );
        assert_eq!(std::mem::offset_of!(RawMemcpy2d, height), std::mem::offset_of!(sys::CUDA_MEMCPY2D, Height));
    }

    #[test]
    fn a_bad_enum_value_is_refused_not_read() {
        let desc = [RawAccessDesc { location: Location { kind: 1, id: 0 }, flags: 77 }];
        // SAFETY: one live descriptor.
        let read = unsafe { access_descs(desc.as_ptr().cast(), 1) };
        assert_eq!(read, Err(CUresult::CUDA_ERROR_INVALID_VALUE));
    }
}
