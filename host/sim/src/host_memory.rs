//! Memory the host reads and writes itself, beyond peerpool's seam: page-locked memory
//! (`cuMemAllocHost`, `cuMemHostAlloc`, `cuMemHostRegister`), managed memory
//! (`cuMemAllocManaged`, advice, prefetches, range attributes) and pools located on the host or
//! holding managed memory. The libcuda shim serves these calls from here for programs such as
//! cuda.core's pinned and managed memory resources. What each call answers follows NVIDIA's
//! driver on one H200 (`docs/hardware/2026-12-01-clients`), except where this file says it
//! chose.

use super::driver::SimDriver;
use super::memory::{Advice, Backing, HostKind, Origin, Place};
use super::share::{fail, invalid};
use super::state::{PoolPlace, SimResult, State};
use peerpool::CudaCode;
use peerpool::driver::{DriverResult, HandleKinds, Pool, Stream};
use std::ptr::NonNull;

/// `CU_MEMHOSTALLOC_PORTABLE` and `CU_MEMHOSTREGISTER_PORTABLE`.
pub const PORTABLE: u32 = 0x1;
/// `CU_MEMHOSTALLOC_DEVICEMAP` and `CU_MEMHOSTREGISTER_DEVICEMAP`.
pub const DEVICEMAP: u32 = 0x2;
/// `CU_MEMHOSTALLOC_WRITECOMBINED`.
pub const WRITECOMBINED: u32 = 0x4;
/// `CU_MEMHOSTREGISTER_IOMEMORY`: refused (no I/O memory is simulated).
pub const IOMEMORY: u32 = 0x4;
/// `CU_MEMHOSTREGISTER_READ_ONLY`.
pub const READ_ONLY: u32 = 0x8;
/// `CU_MEM_ATTACH_GLOBAL`.
pub const ATTACH_GLOBAL: u32 = 0x1;
/// `CU_MEM_ATTACH_HOST`.
pub const ATTACH_HOST: u32 = 0x2;

/// A memory location as `CUmemLocation` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// `CU_MEM_LOCATION_TYPE_DEVICE` with its ordinal.
    Device(i32),
    /// `CU_MEM_LOCATION_TYPE_HOST`.
    Host,
    /// `CU_MEM_LOCATION_TYPE_HOST_NUMA` with its node.
    HostNuma(i32),
    /// Any other type (`INVALID`, `HOST_NUMA_CURRENT`, unknown values).
    Other(u32),
}

/// What `cuMemAdvise` is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advise {
    SetReadMostly,
    UnsetReadMostly,
    SetPreferredLocation,
    UnsetPreferredLocation,
    SetAccessedBy,
    UnsetAccessedBy,
}

impl Advise {
    /// The `CUmem_advise` value, if it is one.
    pub fn from_raw(raw: u32) -> Option<Advise> {
        use Advise::*;
        Some(match raw {
            1 => SetReadMostly,
            2 => UnsetReadMostly,
            3 => SetPreferredLocation,
            4 => UnsetPreferredLocation,
            5 => SetAccessedBy,
            6 => UnsetAccessedBy,
            _ => return None,
        })
    }
}

/// What `cuMemRangeGetAttribute` reads back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RangeValue {
    /// One `int` (read mostly; a location's id or type).
    Int(i32),
    /// The devices advised to access the range, in order (`-2` fills the rest of the caller's
    /// array, as the driver writes it).
    Devices(Vec<i32>),
}

/// `CUmem_range_attribute` values.
pub mod range {
    pub const READ_MOSTLY: u32 = 1;
    pub const PREFERRED_LOCATION: u32 = 2;
    pub const ACCESSED_BY: u32 = 3;
    pub const LAST_PREFETCH_LOCATION: u32 = 4;
    pub const PREFERRED_LOCATION_TYPE: u32 = 5;
    pub const PREFERRED_LOCATION_ID: u32 = 6;
    pub const LAST_PREFETCH_LOCATION_TYPE: u32 = 7;
    pub const LAST_PREFETCH_LOCATION_ID: u32 = 8;
}

/// The id and `CUmemLocationType` a place reads back as: a device's ordinal and type 1, the host
/// as -1 and type 2, none as -2 and type 0 (what the H200s answered).
fn place_id_and_type(place: Option<Place>) -> (i32, i32) {
    match place {
        Some(Place::Device(d)) => (d as i32, 1),
        Some(Place::Host) => (-1, 2),
        None => (-2, 0),
    }
}

/// `cuMemHostGetFlags` of page-locked memory made with `flags`: mapped always, portable only
/// beside write-combined (as the H200s answered every combination).
fn reported_alloc_flags(flags: u32) -> u32 {
    match flags & WRITECOMBINED != 0 {
        true => DEVICEMAP | WRITECOMBINED | (flags & PORTABLE),
        false => DEVICEMAP,
    }
}

/// Whether `[at, at + len)` is all mapped in this process with the permissions given.
fn mapped_here(at: u64, len: u64, writable: bool) -> bool {
    let Some(end) = at.checked_add(len) else { return false };
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut ranges: Vec<(u64, u64)> = maps
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (range, perms) = (fields.next()?, fields.next()?);
            let (start, stop) = range.split_once('-')?;
            let usable = perms.starts_with('r') && (!writable || perms.as_bytes().get(1) == Some(&b'w'));
            usable.then(|| Some((u64::from_str_radix(start, 16).ok()?, u64::from_str_radix(stop, 16).ok()?)))?
        })
        .collect();
    ranges.sort();
    let mut covered = at;
    for (start, stop) in ranges {
        if start <= covered && stop > covered {
            covered = stop;
        }
    }
    covered >= end
}

/// The block of page-locked or registered memory holding `ptr`, with its base.
fn page_locked(s: &State, ptr: u64) -> Option<(u64, &HostKind)> {
    let block = s.memory.find(ptr)?;
    match &block.origin {
        Origin::Host(kind @ (HostKind::PageLocked { .. } | HostKind::Registered { .. })) => Some((block.base, kind)),
        _ => None,
    }
}

/// The managed allocation holding all of `[ptr, ptr + len)`: its base.
fn managed_range(s: &State, ptr: u64, len: usize) -> SimResult<u64> {
    match s.memory.span(ptr, (len as u64).max(1)) {
        Some((block, _)) if matches!(block.origin, Origin::Host(HostKind::Managed(_))) => Ok(block.base),
        _ => invalid(),
    }
}

/// The advice of the managed allocation at `base`.
fn advice(s: &mut State, base: u64) -> &mut Advice {
    match s.memory.at_mut(base).map(|b| &mut b.origin) {
        Some(Origin::Host(HostKind::Managed(advice))) => advice,
        _ => unreachable!("managed_range found it"),
    }
}

/// A place advice or a prefetch may name: a device this process sees, or the host.
fn place_of(s: &State, location: Location) -> Option<Place> {
    match location {
        Location::Device(d) => s.in_range(d).map(Place::Device),
        Location::Host | Location::HostNuma(0) => Some(Place::Host),
        _ => None,
    }
}

impl SimDriver {
    /// `cuMemHostAlloc` (`cuMemAllocHost` is flags 0): page-locked memory at a host address, in
    /// the current context. Zero bytes give the null pointer; flags beyond portable,
    /// device-mapped and write-combined are `CUDA_ERROR_INVALID_VALUE`.
    pub fn mem_host_alloc(&self, bytes: usize, flags: u32) -> DriverResult<u64> {
        self.run("cuMemHostAlloc", |s| {
            let owner = s.current_owner()?;
            if flags & !(PORTABLE | DEVICEMAP | WRITECOMBINED) != 0 {
                return invalid();
            }
            if bytes == 0 {
                return Ok(0);
            }
            let backing = Backing::host(bytes).ok_or(CudaCode::CUDA_ERROR_OUT_OF_MEMORY)?;
            let kind = HostKind::PageLocked { flags: reported_alloc_flags(flags), ctx: owner.ctx };
            s.memory
                .place_host(owner.device, backing, bytes as u64, None, kind)
                .ok_or(CudaCode::CUDA_ERROR_OUT_OF_MEMORY.into())
        })
    }

    /// `cuMemFreeHost`: the start of page-locked memory (null is a no-op); anything else is
    /// `CUDA_ERROR_INVALID_VALUE`.
    pub fn mem_free_host(&self, ptr: u64) -> DriverResult<()> {
        self.run("cuMemFreeHost", |s| {
            if ptr == 0 {
                return Ok(());
            }
            match s.memory.at(ptr).map(|b| &b.origin) {
                Some(Origin::Host(HostKind::PageLocked { .. })) => {
                    s.memory.remove(ptr);
                    Ok(())
                }
                _ => invalid(),
            }
        })
    }

    /// `cuMemHostGetFlags` of any address in page-locked or registered memory.
    pub fn mem_host_get_flags(&self, ptr: u64) -> DriverResult<u32> {
        self.run("cuMemHostGetFlags", |s| match page_locked(s, ptr) {
            Some((_, HostKind::PageLocked { flags, .. } | HostKind::Registered { flags, .. })) => Ok(*flags),
            _ => invalid(),
        })
    }

    /// `cuMemHostGetDevicePointer`: the same address (unified addressing); flags must be 0.
    pub fn mem_host_get_device_pointer(&self, ptr: u64, flags: u32) -> DriverResult<u64> {
        self.run("cuMemHostGetDevicePointer", |s| {
            s.current_device()?;
            match (flags, page_locked(s, ptr)) {
                (0, Some(_)) => Ok(ptr),
                _ => invalid(),
            }
        })
    }

    /// `cuMemHostRegister`: the caller's memory, page-locked for the driver until unregistered.
    /// Any alignment is taken (as the H200s did); the range must be mapped here (writable unless
    /// read-only is asked: then copies and memsets into it are `CUDA_ERROR_INVALID_VALUE`), overlap no other registered or page-locked memory
    /// (`CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED`; page-locked memory is
    /// `CUDA_ERROR_INVALID_VALUE`) and hold no device memory.
    ///
    /// # Safety
    /// The caller keeps `[ptr, ptr + bytes)` mapped until it unregisters it: the driver reads
    /// and writes it meanwhile, as copies, memsets and kernels ask.
    pub unsafe fn mem_host_register(&self, ptr: u64, bytes: usize, flags: u32) -> DriverResult<()> {
        self.run("cuMemHostRegister", |s| {
            let owner = s.current_owner()?;
            if ptr == 0 || bytes == 0 || flags & !(PORTABLE | DEVICEMAP | READ_ONLY) != 0 {
                return invalid();
            }
            let overlaps = s.memory.overlapping(ptr, bytes as u64);
            if let Some(block) = overlaps.first() {
                return match block.origin {
                    Origin::Host(HostKind::Registered { .. }) => {
                        fail(CudaCode::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
                    }
                    _ => invalid(),
                };
            }
            let read_only = flags & READ_ONLY != 0;
            if !mapped_here(ptr, bytes as u64, !read_only) {
                return invalid();
            }
            let Some(at) = NonNull::new(ptr as usize as *mut u8) else { return invalid() };
            // SAFETY: the caller's: the range stays mapped until unregistered; checked mapped
            // and writable now.
            let backing = unsafe { Backing::registered(at, bytes) };
            let kind = HostKind::Registered { flags: DEVICEMAP | (flags & PORTABLE), ctx: owner.ctx, read_only };
            s.memory
                .place_host(owner.device, backing, bytes as u64, None, kind)
                .map(drop)
                .ok_or_else(|| CudaCode::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED.into())
        })
    }

    /// `cuMemHostUnregister`: the start of registered memory. Inside it is
    /// `CUDA_ERROR_INVALID_VALUE`, elsewhere `CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED`.
    pub fn mem_host_unregister(&self, ptr: u64) -> DriverResult<()> {
        self.run("cuMemHostUnregister", |s| match page_locked(s, ptr) {
            Some((base, HostKind::Registered { .. })) if base == ptr => {
                s.memory.remove(ptr);
                Ok(())
            }
            Some((_, HostKind::Registered { .. })) => invalid(),
            _ => fail(CudaCode::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED),
        })
    }

    /// `cuMemAllocManaged`: memory the host and every device reach at one address, attached
    /// globally or to the host (the simulator treats both alike). Zero bytes, or flags other
    /// than exactly one of the two, are `CUDA_ERROR_INVALID_VALUE`.
    pub fn mem_alloc_managed(&self, bytes: usize, flags: u32) -> DriverResult<u64> {
        self.run("cuMemAllocManaged", |s| {
            let owner = s.current_owner()?;
            if bytes == 0 || (flags != ATTACH_GLOBAL && flags != ATTACH_HOST) {
                return invalid();
            }
            let backing = Backing::host(bytes).ok_or(CudaCode::CUDA_ERROR_OUT_OF_MEMORY)?;
            let kind = HostKind::Managed(Advice::default());
            s.memory
                .place_host(owner.device, backing, bytes as u64, None, kind)
                .ok_or(CudaCode::CUDA_ERROR_OUT_OF_MEMORY.into())
        })
    }

    /// `cuMemAdvise` on managed memory: kept for the whole allocation holding the range. A
    /// location that is no device here or the host is `CUDA_ERROR_INVALID_VALUE`.
    pub fn mem_advise(&self, ptr: u64, bytes: usize, advise: Advise, location: Location) -> DriverResult<()> {
        self.run("cuMemAdvise", |s| {
            let base = managed_range(s, ptr, bytes)?;
            let place = place_of(s, location);
            let needs_device = matches!(advise, Advise::SetAccessedBy | Advise::UnsetAccessedBy);
            let device = match place {
                Some(Place::Device(d)) => Some(d),
                _ => None,
            };
            if (needs_device && device.is_none()) || (advise == Advise::SetPreferredLocation && place.is_none()) {
                return invalid();
            }
            let advice = advice(s, base);
            match advise {
                Advise::SetReadMostly => advice.read_mostly = true,
                Advise::UnsetReadMostly => advice.read_mostly = false,
                Advise::SetPreferredLocation => advice.preferred = place,
                Advise::UnsetPreferredLocation => advice.preferred = None,
                Advise::SetAccessedBy => {
                    let d = device.expect("checked above");
                    if !advice.accessed_by.contains(&d) {
                        advice.accessed_by.push(d);
                    }
                }
                Advise::UnsetAccessedBy => advice.accessed_by.retain(|&d| Some(d) != device),
            }
            Ok(())
        })
    }

    /// `cuMemPrefetchAsync`: remembered as the range's last prefetch location (the bytes are
    /// one for host and devices here, so nothing moves). A device this process does not see is
    /// `CUDA_ERROR_INVALID_DEVICE`.
    pub fn mem_prefetch_async(&self, ptr: u64, bytes: usize, location: Location, stream: Stream) -> DriverResult<()> {
        self.run("cuMemPrefetchAsync", |s| {
            s.stream_device(stream)?;
            let base = managed_range(s, ptr, bytes)?;
            let Some(place) = place_of(s, location) else {
                return match location {
                    Location::Device(_) => fail(CudaCode::CUDA_ERROR_INVALID_DEVICE),
                    _ => invalid(),
                };
            };
            advice(s, base).last_prefetch = Some(place);
            Ok(())
        })
    }

    /// `cuMemRangeGetAttribute` of managed memory (`range::*` attributes).
    pub fn mem_range_attribute(&self, ptr: u64, bytes: usize, attribute: u32) -> DriverResult<RangeValue> {
        self.run("cuMemRangeGetAttribute", |s| {
            let base = managed_range(s, ptr, bytes)?;
            let advice = advice(s, base).clone();
            let (preferred, preferred_type) = place_id_and_type(advice.preferred);
            let (last, last_type) = place_id_and_type(advice.last_prefetch);
            Ok(match attribute {
                range::READ_MOSTLY => RangeValue::Int(advice.read_mostly as i32),
                range::PREFERRED_LOCATION | range::PREFERRED_LOCATION_ID => RangeValue::Int(preferred),
                range::PREFERRED_LOCATION_TYPE => RangeValue::Int(preferred_type),
                range::LAST_PREFETCH_LOCATION | range::LAST_PREFETCH_LOCATION_ID => RangeValue::Int(last),
                range::LAST_PREFETCH_LOCATION_TYPE => RangeValue::Int(last_type),
                range::ACCESSED_BY => RangeValue::Devices(advice.accessed_by.iter().map(|&d| d as i32).collect()),
                _ => return invalid(),
            })
        })
    }

    /// `cuMemPoolCreate` of a pool that is not pinned device memory: pinned memory on the host
    /// (`HOST`, which cannot be shared, or `HOST_NUMA` node 0), or managed memory on a device or
    /// with no preferred location.
    pub fn mem_pool_create_at(
        &self,
        location: Location,
        managed: bool,
        handle_types: HandleKinds,
        max_size: usize,
    ) -> DriverResult<Pool> {
        self.run("cuMemPoolCreate", |s| {
            let place = match (location, managed) {
                (Location::Device(d), true) => {
                    let d = s.in_range(d).ok_or(CudaCode::CUDA_ERROR_INVALID_VALUE)?;
                    (PoolPlace::Managed, d)
                }
                // No preferred location (`CU_MEM_LOCATION_TYPE_NONE`, cuda.core's
                // `ManagedMemoryResource`): managed memory the current device's synchronisations
                // release.
                (Location::Other(0), true) => (PoolPlace::Managed, host_pool_device(s)?),
                (Location::Host, false) if handle_types == HandleKinds::NONE => {
                    (PoolPlace::Host { numa: None }, host_pool_device(s)?)
                }
                (Location::HostNuma(0), false) if HandleKinds::POSIX_FD.contains(handle_types) => {
                    (PoolPlace::Host { numa: Some(0) }, host_pool_device(s)?)
                }
                _ => return invalid(),
            };
            let id = s.new_pool_at(place.0, place.1, handle_types, max_size as u64);
            Ok(Pool(s.pools[id].handle))
        })
    }

    /// `cuMemGetMemPool` (`default`: `cuMemGetDefaultMemPool`) for a location and an allocation
    /// type: a device's pinned pools as `cuDeviceGetMemPool` and `cuDeviceGetDefaultMemPool`
    /// answer; a device's managed pool (with no location: the current device's) and the host's
    /// pinned pool, made on first use (one each; no other pool is ever current for them).
    pub fn mem_get_mem_pool(&self, location: Location, managed: bool, default: bool) -> DriverResult<Pool> {
        self.run("cuMemGetMemPool", |s| {
            let id = match (location, managed) {
                (Location::Device(d), false) => {
                    let d = s.in_range(d).ok_or(CudaCode::CUDA_ERROR_INVALID_VALUE)?;
                    if default { s.default_pools[d] } else { s.current_pools[d] }
                }
                (Location::Device(d), true) => {
                    let d = s.in_range(d).ok_or(CudaCode::CUDA_ERROR_INVALID_VALUE)?;
                    implicit_pool(s, PoolPlace::Managed, d)
                }
                // No preferred location (`CU_MEM_LOCATION_TYPE_INVALID`, what cuda.core's
                // managed memory resource asks for): the current device's managed pool.
                (Location::Other(0), true) => {
                    let d = host_pool_device(s)?;
                    implicit_pool(s, PoolPlace::Managed, d)
                }
                (Location::Host, false) => {
                    let d = host_pool_device(s)?;
                    implicit_pool(s, PoolPlace::Host { numa: None }, d)
                }
                _ => return invalid(),
            };
            Ok(Pool(s.pools[id].handle))
        })
    }
}

/// The device whose synchronisations release a pool on the host: the current context's, else 0.
fn host_pool_device(s: &State) -> SimResult<usize> {
    match s.count() {
        0 => fail(CudaCode::CUDA_ERROR_NO_DEVICE),
        _ => Ok(s.current_device().unwrap_or(0)),
    }
}

/// The driver's own pool at `place` for `device`, made the first time it is asked for.
fn implicit_pool(s: &mut State, place: PoolPlace, device: usize) -> usize {
    let found = s.implicit_pools.iter().find(|&&(p, d, _)| p == place && d == device).map(|&(_, _, id)| id);
    found.unwrap_or_else(|| {
        let id = s.new_pool_at(place, device, HandleKinds::NONE, 0);
        s.implicit_pools.push((place, device, id));
        id
    })
}

/// What an address is to the driver, before any byte of it is touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressKind {
    /// Device memory the simulator holds.
    Device,
    /// Host memory: the simulator's page-locked, registered, managed or host-pool memory, or the
    /// caller's own; `writable` unless registered read-only.
    Host { writable: bool },
    /// In the devices' address range but in no allocation (freed, or past an allocation's end):
    /// never dereferenced.
    Unknown,
}

impl SimDriver {
    /// What `addr` is (`cuMemcpy`'s unified addressing tells the two sides apart this way).
    pub fn classify(&self, addr: u64) -> AddressKind {
        let s = self.lock_state();
        match s.memory.find(addr).map(|b| &b.origin) {
            Some(Origin::Host(HostKind::Registered { read_only, .. })) => AddressKind::Host { writable: !read_only },
            Some(Origin::Host(_)) => AddressKind::Host { writable: true },
            Some(_) => AddressKind::Device,
            None if super::memory::in_device_range(addr) => AddressKind::Unknown,
            None => AddressKind::Host { writable: true },
        }
    }
}
