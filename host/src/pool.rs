//! Pools: [`OwnedPool`] (created, reset and destroyed by peerpool) and [`PoolRef`] (a borrowed
//! handle to any pool, peerpool's or not: it never creates, replaces or destroys one).

use crate::driver::{Access, AccessDesc, HandleTypes, PointerAttribute, Pool, PoolProps};
use crate::error::{Error, Result};
use crate::memory::DevicePtr;
use crate::system::System;
use std::marker::PhantomData;

/// A borrowed pool handle and the device that owns the pool.
///
/// The lifetime ties the handle to whatever keeps the pool alive: an [`OwnedPool`], or the
/// [`System`] for a device's default or current pool. peerpool never destroys a pool through a
/// `PoolRef`. A handle supplied from outside ([`PoolRef::from_raw`]) is used as given: it must
/// be the pool behind the allocations it is meant to vouch for, or a grant on it proves nothing
/// about them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PoolRef<'a> {
    handle: Pool,
    owner: usize,
    _borrow: PhantomData<&'a Pool>,
}

impl<'a> PoolRef<'a> {
    /// A pool handle from outside peerpool (RMM, cuda.core, your own `cuMemPoolCreate`).
    ///
    /// # Safety
    /// `handle` must be a live `CUmemoryPool` of the driver it will be used with, on device
    /// `owner`, and stay alive for `'a`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a null handle.
    pub unsafe fn from_raw(handle: Pool, owner: usize) -> Result<PoolRef<'a>> {
        if handle.0 == 0 {
            return Err(Error::InvalidArgument("null pool handle".into()));
        }
        Ok(PoolRef { handle, owner, _borrow: PhantomData })
    }

    /// The raw `CUmemoryPool`.
    pub fn handle(self) -> Pool {
        self.handle
    }

    /// The ordinal of the device whose memory the pool hands out.
    pub fn owner(self) -> usize {
        self.owner
    }
}

/// Options for [`System::create_pool`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolOptions {
    /// Handle types the pool may be exported with (`HandleTypes::POSIX_FD` for IPC).
    pub handle_types: HandleTypes,
    /// Maximum size in bytes; 0 for the driver's default.
    pub max_size: usize,
}

/// A pool peerpool created, and destroys.
///
/// Before `cuMemPoolDestroy` every peer's access is reset to none: some drivers hand a
/// destroyed pool's handle to the next new pool with the old access table still attached
/// (cuda.core works around the same bug, nvbug 5698116).
#[derive(Debug)]
pub struct OwnedPool {
    system: System,
    handle: Pool,
    owner: usize,
    destroyed: bool,
}

impl OwnedPool {
    /// The pool, borrowed.
    pub fn as_ref(&self) -> PoolRef<'_> {
        PoolRef { handle: self.handle, owner: self.owner, _borrow: PhantomData }
    }

    /// The raw `CUmemoryPool`.
    pub fn handle(&self) -> Pool {
        self.handle
    }

    /// The owning device.
    pub fn owner(&self) -> usize {
        self.owner
    }

    /// Resets every peer's access, then destroys the pool; reports what failed (and the drop
    /// then tries once more). Allocations still live are released by the driver once freed.
    pub fn destroy(mut self) -> Result<()> {
        let result = destroy(&self.system, self.handle, self.owner);
        self.destroyed = result.is_ok();
        result
    }
}

impl Drop for OwnedPool {
    fn drop(&mut self) {
        if !self.destroyed {
            let _ = destroy(&self.system, self.handle, self.owner);
        }
    }
}

fn destroy(system: &System, handle: Pool, owner: usize) -> Result<()> {
    let driver = system.driver();
    let _current = system.enter(owner)?;
    let mut revoke = Vec::new();
    for device in 0..system.device_count() {
        if device != owner && driver.mem_pool_get_access(handle, device as i32)? != Access::None {
            revoke.push(AccessDesc { device: device as i32, access: Access::None });
        }
    }
    if !revoke.is_empty() {
        driver.mem_pool_set_access(handle, &revoke)?;
    }
    driver.mem_pool_destroy(handle)?;
    Ok(())
}

impl System {
    /// Creates a pinned device pool on `owner` (`cuMemPoolCreate`), in its primary context.
    pub fn create_pool(&self, owner: usize, options: PoolOptions) -> Result<OwnedPool> {
        let device = self.check_device(owner)?;
        let _current = self.enter(owner)?;
        let props = PoolProps { device, handle_types: options.handle_types, max_size: options.max_size };
        let handle = self.driver().mem_pool_create(&props)?;
        Ok(OwnedPool { system: self.clone(), handle, owner, destroyed: false })
    }

    /// The device's default pool (`cuDeviceGetDefaultMemPool`).
    pub fn default_pool(&self, device: usize) -> Result<PoolRef<'_>> {
        let ordinal = self.check_device(device)?;
        let handle = self.driver().device_get_default_mem_pool(ordinal)?;
        Ok(PoolRef { handle, owner: device, _borrow: PhantomData })
    }

    /// The device's current pool (`cuDeviceGetMemPool`): the default unless one was set.
    pub fn current_pool(&self, device: usize) -> Result<PoolRef<'_>> {
        let ordinal = self.check_device(device)?;
        let handle = self.driver().device_get_mem_pool(ordinal)?;
        Ok(PoolRef { handle, owner: device, _borrow: PhantomData })
    }

    /// The pool an address was allocated from (`CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE`), with the
    /// owner from `CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`. `None` when the memory is not from a
    /// pool (`cuMemAlloc`, virtual-memory mappings) or the driver does not know the address.
    ///
    /// The borrow is tied to the system; the pool must outlive its use, which peerpool cannot
    /// check for an address.
    pub fn pool_of(&self, ptr: DevicePtr) -> Result<Option<PoolRef<'_>>> {
        let driver = self.driver();
        let handle = match driver.pointer_get_attribute(ptr, PointerAttribute::MempoolHandle) {
            Ok(0) => return Ok(None),
            Ok(handle) => Pool(handle),
            Err(e) if e.code == cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let owner = driver.pointer_get_attribute(ptr, PointerAttribute::DeviceOrdinal)? as usize;
        self.check_device(owner)?;
        Ok(Some(PoolRef { handle, owner, _borrow: PhantomData }))
    }

    /// A pool's access for one device (`cuMemPoolGetAccess`).
    pub fn pool_access(&self, pool: PoolRef<'_>, device: usize) -> Result<Access> {
        let ordinal = self.check_device(device)?;
        Ok(self.driver().mem_pool_get_access(pool.handle(), ordinal)?)
    }

    /// A pool's access for every device, indexed by ordinal.
    pub fn pool_access_table(&self, pool: PoolRef<'_>) -> Result<Vec<Access>> {
        (0..self.device_count()).map(|device| self.pool_access(pool, device)).collect()
    }
}
