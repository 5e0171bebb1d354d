//! Pools: [`OwnedPool`] (created, reset and destroyed by peerpool) and [`PoolRef`] (a borrowed
//! handle to any pool, peerpool's or not: it never creates, replaces or destroys one).

use crate::driver::{Access, AccessDesc, CudaCode, DevicePtr, HandleKinds, PointerAttribute, Pool, PoolProps};
use crate::error::{Error, Result};
use crate::system::System;
use std::marker::PhantomData;

/// A borrowed pool handle and the device that owns the pool.
///
/// The lifetime ties the handle to whatever keeps the pool alive: an [`OwnedPool`], or the
/// [`System`] for a device's default or current pool (a current pool set and destroyed by code
/// outside peerpool is that code's promise to keep), or the caller's promise
/// ([`PoolRef::from_raw`], [`System::pool_of`]). peerpool never destroys a pool through a
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

/// A pool made outside peerpool (by cudarc, RMM, your allocator), borrowed by peerpool for as long
/// as the value is borrowed: [`PoolRef::borrow`] turns `&value` into a [`PoolRef`] with the
/// borrow's lifetime, safely, because implementing this trait is the promise that makes it
/// sound. The allocator's type implements it once, next to the code that owns the pool (an
/// optional `peerpool` feature of the allocator's crate is the usual place; see
/// `fixtures/examples/cudarc-allocator`).
///
/// # Safety
/// While `&self` is borrowed, [`ForeignPool::raw_pool`] returns the same live `CUmemoryPool`
/// of the CUDA driver the [`System`] using it talks to (the process's libcuda for
/// [`System::open`]), whose memory is on device [`ForeignPool::pool_device`], and nothing
/// destroys that pool: it is destroyed only after every borrow ends (typically in the
/// allocator's `Drop`, which needs `&mut self` or `self`).
pub unsafe trait ForeignPool {
    /// The pool's handle.
    fn raw_pool(&self) -> cudarc::driver::sys::CUmemoryPool;
    /// The ordinal of the device whose memory the pool hands out.
    fn pool_device(&self) -> usize;
}

/// A pool made outside peerpool and handed over whole: [`System::adopt_pool`] takes it and
/// returns an [`OwnedPool`], which revokes every peer before destroying it, on drop or
/// [`OwnedPool::destroy`].
///
/// # Safety
/// [`IntoForeignPool::into_raw_pool`] returns a live `CUmemoryPool` of the CUDA driver the
/// [`System`] adopting it talks to, whose memory is on the device returned with it, and gives up
/// every claim on it: after the call, nothing but the returned [`OwnedPool`] destroys it (the
/// value's own `Drop` must not, e.g. `std::mem::forget` after releasing what else it held).
pub unsafe trait IntoForeignPool {
    /// The handle and its device, ownership passing to the caller.
    fn into_raw_pool(self) -> (cudarc::driver::sys::CUmemoryPool, usize);
}

impl<'a> PoolRef<'a> {
    /// Borrows a pool made outside peerpool for as long as `pool` is borrowed. Safe: the
    /// [`ForeignPool`] implementation made the promise [`PoolRef::from_raw`] asks of its caller.
    /// An allocation from the pool keeps its memory, not the pool, alive: the allocator must not
    /// destroy the pool while this borrow lives, which the borrow of `pool` enforces.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a null handle.
    pub fn borrow<P: ForeignPool + ?Sized>(pool: &'a P) -> Result<PoolRef<'a>> {
        // SAFETY: `ForeignPool`'s contract: live, of this driver, on this device, for `'a`.
        unsafe { PoolRef::from_raw(Pool(pool.raw_pool() as usize as u64), pool.pool_device()) }
    }
}

/// Options for [`System::create_pool`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolOptions {
    /// Handle types the pool may be exported with (`HandleKinds::POSIX_FD` for IPC).
    pub handle_types: HandleKinds,
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
        destroy(&self.system, self.handle, self.owner, &mut self.destroyed)
    }
}

impl Drop for OwnedPool {
    fn drop(&mut self) {
        if !self.destroyed {
            let _ = destroy(&self.system, self.handle, self.owner, &mut self.destroyed);
        }
    }
}

/// Revokes the peers and destroys the pool; `destroyed` is set the moment the driver has
/// destroyed it, whatever fails after (the handle must never reach the driver again).
fn destroy(system: &System, handle: Pool, owner: usize, destroyed: &mut bool) -> Result<()> {
    let driver = system.driver();
    system.within(owner, || {
        let mut revoke = Vec::new();
        for device in 0..system.device_count() {
            // SAFETY: the pool is the `OwnedPool`'s, not yet destroyed.
            if device != owner && unsafe { driver.mem_pool_get_access(handle, device as i32) }? != Access::None {
                revoke.push(AccessDesc { device: device as i32, access: Access::None });
            }
        }
        if !revoke.is_empty() {
            // SAFETY: as above.
            unsafe { driver.mem_pool_set_access(handle, &revoke) }?;
        }
        // SAFETY: as above; it is marked destroyed the moment this succeeds, and a `PoolRef`
        // borrowing it cannot outlive it.
        unsafe { driver.mem_pool_destroy(handle) }?;
        *destroyed = true;
        Ok(())
    })
}

impl System {
    /// Creates a pinned device pool on `owner` (`cuMemPoolCreate`), in its primary context.
    pub fn create_pool(&self, owner: usize, options: PoolOptions) -> Result<OwnedPool> {
        let device = self.device_handle(owner)?;
        let props = PoolProps { device, handle_types: options.handle_types, max_size: options.max_size };
        // Owned inside the context: if restoring the caller's context fails, the drop destroys
        // the new pool rather than leak it.
        self.within(owner, || {
            let handle = self.driver().mem_pool_create(&props)?;
            Ok(OwnedPool { system: self.clone(), handle, owner, destroyed: false })
        })
    }

    /// Takes a pool made outside peerpool (cudarc's `cuMemPoolCreate`, another allocator) into
    /// an [`OwnedPool`]: from then on peerpool destroys it, after revoking every peer, when the
    /// `OwnedPool` drops. Its allocations must be freed first or be freed by the driver with the
    /// pool (pool memory still allocated is released when freed). Checks that `owner` exists and
    /// has read-write access to the pool, as its owning device always has.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a null handle or a pool not on `owner`; driver errors. A
    /// refused pool is neither destroyed nor given back (peerpool cannot tell whose it is).
    pub fn adopt_pool(&self, pool: impl IntoForeignPool) -> Result<OwnedPool> {
        let (raw, owner) = pool.into_raw_pool();
        let handle = Pool(raw as usize as u64);
        if handle.0 == 0 {
            return Err(Error::InvalidArgument("null pool handle".into()));
        }
        let ordinal = self.device_handle(owner)?;
        // SAFETY: `IntoForeignPool`'s contract: a live pool of this driver.
        let access = unsafe { self.driver().mem_pool_get_access(handle, ordinal) }?;
        if access != Access::ReadWrite {
            return Err(Error::InvalidArgument(format!(
                "the pool is not on gpu{owner} (its access there: {access:?})"
            )));
        }
        Ok(OwnedPool { system: self.clone(), handle, owner, destroyed: false })
    }

    /// The device's default pool (`cuDeviceGetDefaultMemPool`).
    pub fn default_pool(&self, device: usize) -> Result<PoolRef<'_>> {
        let ordinal = self.device_handle(device)?;
        let handle = self.driver().device_get_default_mem_pool(ordinal)?;
        Ok(PoolRef { handle, owner: device, _borrow: PhantomData })
    }

    /// The device's current pool (`cuDeviceGetMemPool`): the default unless one was set.
    pub fn current_pool(&self, device: usize) -> Result<PoolRef<'_>> {
        let ordinal = self.device_handle(device)?;
        let handle = self.driver().device_get_mem_pool(ordinal)?;
        Ok(PoolRef { handle, owner: device, _borrow: PhantomData })
    }

    /// The pool an address was allocated from (`CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE`), with the
    /// owner from `CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`. `None` when the memory is not from a
    /// pool (`cuMemAlloc`, virtual-memory mappings) or the driver does not know the address.
    ///
    /// # Safety
    /// The pool found must stay alive (not destroyed) for as long as the returned borrow is
    /// used: peerpool cannot tell from an address who owns the pool or when it goes. An
    /// allocation keeps its memory, not its pool, alive, so this cannot be safe:
    /// ```compile_fail,E0133
    /// # use peerpool::{PoolOptions, System};
    /// # fn f(system: &System) -> peerpool::Result<()> {
    /// let pool = system.create_pool(0, PoolOptions::default())?;
    /// let memory = system.alloc(pool.as_ref(), 4096)?;
    /// let found = system.pool_of(memory.ptr())?.unwrap(); // error: call to unsafe function
    /// drop(pool); // destroys the pool while `found` still names it
    /// let _ = system.grant(found, 1);
    /// # Ok(()) }
    /// ```
    /// (It compiles with `unsafe { system.pool_of(memory.ptr()) }` and the promise kept.)
    pub unsafe fn pool_of(&self, ptr: DevicePtr) -> Result<Option<PoolRef<'_>>> {
        let driver = self.driver();
        let handle = match driver.pointer_get_attribute(ptr, PointerAttribute::MempoolHandle) {
            Ok(0) => return Ok(None),
            Ok(handle) => Pool(handle),
            Err(e) if e.code == CudaCode::CUDA_ERROR_INVALID_VALUE => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let owner = driver.pointer_get_attribute(ptr, PointerAttribute::DeviceOrdinal)? as usize;
        self.device_handle(owner)?;
        Ok(Some(PoolRef { handle, owner, _borrow: PhantomData }))
    }

    /// A pool's access for one device (`cuMemPoolGetAccess`).
    pub fn pool_access(&self, pool: PoolRef<'_>, device: usize) -> Result<Access> {
        let ordinal = self.device_handle(device)?;
        // SAFETY: a `PoolRef` is live for its lifetime.
        Ok(unsafe { self.driver().mem_pool_get_access(pool.handle(), ordinal) }?)
    }

    /// A pool's access for every device, indexed by ordinal.
    pub fn pool_access_table(&self, pool: PoolRef<'_>) -> Result<Vec<Access>> {
        (0..self.device_count()).map(|device| self.pool_access(pool, device)).collect()
    }
}
