//! Virtual-memory allocations (`cuMemCreate`, `cuMemAddressReserve`, `cuMemMap`,
//! `cuMemSetAccess`): the other kind of exportable memory, and how an importer maps one.
//!
//! Unlike a pool, a mapping carries its own access, device by device, and a fresh mapping is
//! reachable by no device until access is set, its owner included. [`VirtualAllocation::grant`]
//! applies the grant engine's rules to a mapping: capability, then byte-transfer verification
//! of the pair (cached per ordered pair), then one `cuMemSetAccess`.

use crate::driver::{Access, AccessDesc, AllocationProps, DevicePtr, Granularity, HandleKinds, MemHandle};
use crate::error::{Error, Result};
use crate::grant::{Grant, GrantError, Stage};
use crate::memory::DeviceSlice;
use crate::system::System;

/// A mapped range of one allocation, unmapped and unreserved on drop.
#[derive(Debug)]
pub(crate) struct Mapping {
    system: System,
    base: DevicePtr,
    size: usize,
    owner: usize,
    /// Devices given read-write, the owner first.
    granted: Vec<usize>,
    released: bool,
}

impl Mapping {
    /// Maps `size` bytes of `handle` at a fresh reservation, read-write for `owner`. The handle
    /// stays the caller's to release; the mapping keeps the memory alive on its own.
    ///
    /// # Safety
    /// `handle` is a live physical allocation of this system's driver, at least `size` bytes.
    pub(crate) unsafe fn map(system: &System, handle: MemHandle, size: usize, owner: usize) -> Result<Mapping> {
        let driver = system.driver();
        system.within(owner, || {
            let base = driver.mem_address_reserve(size, 0)?;
            // SAFETY: `base` is the fresh reservation of `size` bytes; the caller vouches for
            // `handle`.
            if let Err(e) = unsafe { driver.mem_map(base, size, 0, handle) } {
                let _ = unsafe { driver.mem_address_free(base, size) };
                return Err(e.into());
            }
            // From here on, dropping the mapping unmaps and unreserves.
            let mapping = Mapping { system: system.clone(), base, size, owner, granted: vec![owner], released: false };
            let owner_rw = [AccessDesc { device: owner as i32, access: Access::ReadWrite }];
            // SAFETY: the whole mapping just made.
            unsafe { driver.mem_set_access(base, size, &owner_rw) }?;
            Ok(mapping)
        })
    }

    /// The whole mapping, borrowed.
    pub(crate) fn as_slice(&self) -> DeviceSlice<'_> {
        // SAFETY: the mapping stays until `release` or drop, which need `&mut self`.
        unsafe { DeviceSlice::from_raw(self.base, self.size as u64) }
    }

    pub(crate) fn base(&self) -> DevicePtr {
        self.base
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Read-write for `accessor`, after the pair's capability and verification.
    pub(crate) fn grant(&mut self, accessor: usize) -> std::result::Result<Grant, GrantError> {
        let (system, owner) = (&self.system, self.owner);
        let count = system.device_count();
        if accessor >= count {
            return Err(GrantError::InvalidDevice { ordinal: accessor, count });
        }
        if accessor == owner {
            return Ok(Grant::OwnerAccess);
        }
        if self.granted.contains(&accessor) {
            return Ok(Grant::AlreadyGranted);
        }
        let can = |a: usize, b: usize| {
            system
                .driver()
                .device_can_access_peer(a as i32, b as i32)
                .map_err(|error| GrantError::Cuda { stage: Stage::Query, error })
        };
        if !can(accessor, owner)? {
            return Err(GrantError::Unsupported { owner, accessor, reverse_capable: can(owner, accessor)? });
        }
        if system.evidence(owner, accessor).is_none() {
            system.verify_pair(owner, accessor)?;
        }
        let map = [AccessDesc { device: accessor as i32, access: Access::ReadWrite }];
        system
            .within(owner, || {
                // SAFETY: the whole mapping, live while `self` is.
                Ok::<_, Error>(unsafe { system.driver().mem_set_access(self.base, self.size, &map) }?)
            })
            .map_err(|e| GrantError::at(Stage::Apply, e))?;
        self.granted.push(accessor);
        Ok(Grant::Granted { previous: Access::None })
    }

    /// Unmaps and unreserves; reports the first failure (the drop does not retry).
    pub(crate) fn release(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.released, true) {
            return Ok(());
        }
        let driver = self.system.driver();
        self.system.within(self.owner, || {
            // SAFETY: the mapping and reservation made by `map`, released once (`released`).
            unsafe {
                driver.mem_unmap(self.base, self.size)?;
                Ok(driver.mem_address_free(self.base, self.size)?)
            }
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// `cuMemRelease`, tried once more after a failure: a handle reference that is never released
/// keeps the memory for the process's life.
///
/// # Safety
/// `handle` is a live physical allocation handle of this system's driver whose reference the
/// caller holds and gives up here.
pub(crate) unsafe fn release(system: &System, handle: MemHandle) -> Result<()> {
    let driver = system.driver();
    // SAFETY: the caller's reference; a failed release released nothing, so one retry is sound.
    Ok(unsafe { driver.mem_release(handle).or_else(|_| driver.mem_release(handle)) }?)
}

/// The allocation granularity for `handle_types` memory on `device`.
pub(crate) fn granularity(system: &System, device: usize, handle_types: HandleKinds) -> Result<usize> {
    let props = AllocationProps { device: system.device_handle(device)?, handle_types };
    let bytes = system.driver().mem_get_allocation_granularity(&props, Granularity::Minimum)?;
    if bytes == 0 {
        return Err(Error::InvalidArgument("the driver reports a granularity of 0".into()));
    }
    Ok(bytes)
}

/// Device memory from the virtual-memory API: one `cuMemCreate` allocation mapped once,
/// read-write for its owner. Exportable with the handle types it was created with.
#[derive(Debug)]
pub struct VirtualAllocation {
    mapping: Mapping,
    handle_types: HandleKinds,
}

impl VirtualAllocation {
    /// The device address.
    pub fn ptr(&self) -> DevicePtr {
        self.mapping.base()
    }

    /// The size in bytes (the request rounded up to the granularity).
    pub fn len(&self) -> usize {
        self.mapping.size()
    }

    /// Never empty: [`System::alloc_virtual`] refuses zero bytes.
    pub fn is_empty(&self) -> bool {
        self.mapping.size() == 0
    }

    /// The owning device.
    pub fn owner(&self) -> usize {
        self.mapping.owner
    }

    /// The whole mapping, for kernels and exports.
    pub fn as_slice(&self) -> DeviceSlice<'_> {
        self.mapping.as_slice()
    }

    /// The handle types it can be exported with.
    pub fn handle_types(&self) -> HandleKinds {
        self.handle_types
    }

    /// Gives `accessor` read-write access to this mapping (see the module docs).
    pub fn grant(&mut self, accessor: usize) -> std::result::Result<Grant, GrantError> {
        self.mapping.grant(accessor)
    }

    /// Unmaps and frees now, reporting a failure (dropping does the same silently).
    pub fn free(mut self) -> Result<()> {
        self.mapping.release()
    }
}

impl System {
    /// `bytes` (rounded up to the granularity) of `device` memory from `cuMemCreate`, exportable
    /// with `handle_types`, mapped and read-write for `device` only.
    ///
    /// The physical handle is released once mapped: the mapping holds the memory, and dropping
    /// the allocation unmaps it, which frees it (an importer's mapping keeps it alive there).
    pub fn alloc_virtual(&self, device: usize, bytes: usize, handle_types: HandleKinds) -> Result<VirtualAllocation> {
        if bytes == 0 {
            return Err(Error::InvalidArgument("an allocation of zero bytes".into()));
        }
        let granule = granularity(self, device, handle_types)?;
        let size = bytes
            .checked_next_multiple_of(granule)
            .ok_or_else(|| Error::InvalidArgument(format!("{bytes} bytes cannot be rounded to {granule}")))?;
        let props = AllocationProps { device: device as i32, handle_types };
        self.within(device, || {
            let handle = self.driver().mem_create(size, &props)?;
            // SAFETY: the handle was just made, `size` bytes, and released once, here, whatever
            // the mapping did; the mapping keeps the memory on its own.
            let (mapping, released) = unsafe { (Mapping::map(self, handle, size, device), release(self, handle)) };
            let allocation = VirtualAllocation { mapping: mapping?, handle_types };
            released?;
            Ok(allocation)
        })
    }
}
