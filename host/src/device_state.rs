//! The state a [`System`](crate::System) keeps for each device, filled on first use and
//! released when the system drops: the retained primary context, peerpool's loaded kernels
//! (`kernels.rs` loads and launches them) and the verifier's probe (`grant/verify.rs` makes and
//! uses it). Kept below `system.rs`, which holds one [`DeviceSlot`] per device, so that the
//! system imports nothing from the layers that use it.

use crate::driver::{Access, AccessDesc, Context, DevicePtr, Driver, Function, Module, Pool, Stream};
use crate::error::Error;
use peerpool_kernels::Kernel;
use std::collections::BTreeSet;
use std::sync::Mutex;

/// What peerpool holds for one device. Filled on first use, released when the system drops.
#[derive(Default)]
pub(crate) struct DeviceSlot {
    /// The primary context, retained once (`cuDevicePrimaryCtxRetain`) on first use.
    pub(crate) context: Mutex<Option<Context>>,
    /// peerpool's kernels, loaded into the primary context on first kernel use.
    pub(crate) module: Mutex<Option<LoadedModule>>,
    /// Held from clearing the module's result buffer to reading it back: threads checking
    /// memory on one device at once would otherwise read each other's results.
    pub(crate) scratch: Mutex<()>,
    /// The verifier's probe pool, its grants and buffer on this device, made on the device's
    /// first verification and released when the system drops.
    pub(crate) probe: Mutex<ScratchSlot>,
}

/// The module as loaded into one device's primary context. Kept until the system drops.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LoadedModule {
    pub(crate) module: Module,
    /// Every kernel's function, by [`Kernel::index`].
    pub(crate) functions: [Function; Kernel::ALL.len()],
    /// 16 bytes of `cuMemAlloc` memory for `pp_check`'s result, freed with the context.
    pub(crate) scratch: DevicePtr,
    pub(crate) max_grid: u32,
    pub(crate) image: KernelImage,
}

/// Which image of the kernels a device runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelImage {
    /// The sm_90 cubin ([`peerpool_kernels::SM90_CUBIN`]): no JIT.
    Sm90Cubin,
    /// The PTX, compiled by the driver's JIT (or taken from its disk cache).
    Ptx,
}

impl LoadedModule {
    pub(crate) fn release(&self, driver: &dyn Driver) {
        // SAFETY: the scratch buffer and the module are this device's, released once (the
        // system's drop takes them out of their slot), with the device's context current.
        unsafe {
            let _ = driver.mem_free(self.scratch);
            let _ = driver.module_unload(self.module);
        }
    }
}

/// One device's probe: made on its first verification, kept until the system drops
/// ([`ScratchSlot::release`]).
#[derive(Debug, Default)]
pub(crate) struct ScratchSlot {
    /// The private pool.
    pub(crate) pool: Option<Pool>,
    /// Peers the pool grants read-write.
    pub(crate) granted: BTreeSet<usize>,
    /// The buffer and its size.
    pub(crate) buffer: Option<(DevicePtr, u64)>,
}

impl ScratchSlot {
    /// Frees the buffer, revokes the grants and destroys the pool, every step attempted; the
    /// slot forgets each handle once the driver took it back, and the first failure is returned.
    ///
    /// # Safety
    /// `driver` is the one that made the slot's handles, the device's context is current on
    /// this thread, and nothing uses the buffer any more.
    pub(crate) unsafe fn release(&mut self, driver: &dyn Driver) -> Result<(), Error> {
        let mut results: Vec<Result<(), Error>> = Vec::new();
        if let Some((ptr, _)) = self.buffer {
            // SAFETY: the caller's promise: this driver's buffer, unused, its context current.
            let freed = unsafe { driver.mem_free_async(ptr, Stream::LEGACY) };
            if freed.is_ok() {
                self.buffer = None;
            }
            results.push(freed.map_err(Into::into));
            // SAFETY: as above.
            results.push(unsafe { driver.stream_synchronize(Stream::LEGACY) }.map_err(Into::into));
        }
        if let Some(pool) = self.pool {
            let none: Vec<AccessDesc> =
                self.granted.iter().map(|&p| AccessDesc { device: p as i32, access: Access::None }).collect();
            // SAFETY: the probe's pool, alive until destroyed here; revoked first, as
            // `OwnedPool` does (a recycled handle must not inherit the grants).
            if !none.is_empty() {
                let revoked = unsafe { driver.mem_pool_set_access(pool, &none) };
                if revoked.is_ok() {
                    self.granted.clear();
                }
                results.push(revoked.map_err(Into::into));
            }
            // SAFETY: as above; the slot forgets the pool once it is destroyed.
            let destroyed = unsafe { driver.mem_pool_destroy(pool) };
            if destroyed.is_ok() {
                (self.pool, self.buffer) = (None, None);
                self.granted.clear();
            }
            results.push(destroyed.map_err(Into::into));
        }
        results.into_iter().collect()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pool.is_none() && self.buffer.is_none()
    }
}
