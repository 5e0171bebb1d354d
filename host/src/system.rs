//! [`System`]: one driver, its devices, and the per-device state peerpool keeps
//! (the retained primary context, the loaded kernel module, a small scratch buffer).

use crate::context::{CurrentContext, leave};
use crate::device_state::DeviceSlot;
use crate::driver::{Context, CudaDriver, Driver};
use crate::error::{Error, Result};
use crate::evidence::{Evidence, PROBE_BYTES};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

/// The GPUs one driver exposes, and the state peerpool keeps for each.
///
/// Cheap to clone (an `Arc`). Every resource made from a `System` (pools, allocations) holds a
/// clone, so the primary contexts retained here are released only after the last of them.
#[derive(Clone)]
pub struct System {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) driver: Arc<dyn Driver>,
    pub(crate) devices: Vec<DeviceSlot>,
    /// Verified ordered pairs `(owner, accessor)`, kept apart from any pool's permissions.
    pub(crate) evidence: Mutex<HashMap<(usize, usize), Evidence>>,
    /// Bytes each verification step moves (see `System::set_scratch_bytes`).
    pub(crate) scratch_bytes: AtomicU64,
    /// Verifications started: salts each one's seeds.
    pub(crate) verifications: AtomicU64,
}

impl System {
    /// The real driver (libcuda, loaded at run time).
    ///
    /// # Errors
    /// [`Error::NoDriver`] without a usable libcuda; a driver error from `cuInit` or
    /// `cuDeviceGetCount`. A driver without GPUs gives a system with zero devices.
    pub fn open() -> Result<System> {
        System::with_driver(Arc::new(CudaDriver::load()?))
    }

    /// Any implementation of the driver seam: the simulator, a fault injector, the real one.
    pub fn with_driver(driver: Arc<dyn Driver>) -> Result<System> {
        let count = driver.device_get_count()?;
        let devices = (0..count.max(0)).map(|_| DeviceSlot::default()).collect();
        let scratch_bytes = AtomicU64::new(PROBE_BYTES);
        let inner =
            Inner { driver, devices, evidence: Mutex::default(), scratch_bytes, verifications: AtomicU64::new(0) };
        Ok(System { inner: Arc::new(inner) })
    }

    /// The driver behind this system.
    pub fn driver(&self) -> &Arc<dyn Driver> {
        &self.inner.driver
    }

    /// How many devices the driver reports.
    pub fn device_count(&self) -> usize {
        self.inner.devices.len()
    }

    /// `Ok(ordinal as i32)` when the device exists, [`Error::InvalidDevice`] otherwise.
    pub fn device_handle(&self, ordinal: usize) -> Result<i32> {
        if ordinal < self.device_count() {
            Ok(ordinal as i32)
        } else {
            Err(Error::InvalidDevice { ordinal, count: self.device_count() })
        }
    }

    /// `ordinal`'s UUID as `nvidia-smi -L` and `CUDA_VISIBLE_DEVICES` write it: the same GPU
    /// has the same UUID in every process, whatever each one's numbering.
    pub fn uuid(&self, ordinal: usize) -> Result<String> {
        let device = self.device_handle(ordinal)?;
        Ok(crate::driver::uuid_text(&self.driver().device_get_uuid(device)?))
    }

    /// The ordinal of the GPU with `uuid` (as [`System::uuid`] writes it) in this process, if
    /// this process sees it.
    pub fn ordinal_of_uuid(&self, uuid: &str) -> Result<Option<usize>> {
        for ordinal in 0..self.device_count() {
            if self.uuid(ordinal)? == uuid {
                return Ok(Some(ordinal));
            }
        }
        Ok(None)
    }

    /// Makes `ordinal`'s primary context current on this thread until the guard exits or
    /// drops, which restores whatever was current before (also on every error path).
    pub fn enter(&self, ordinal: usize) -> Result<CurrentContext<'_>> {
        let device = self.device_handle(ordinal)?;
        let context = self.primary_context(ordinal, device)?;
        // SAFETY: the primary context stays retained until this system drops, and the guard
        // borrows the system.
        unsafe { CurrentContext::enter(self.inner.driver.as_ref(), context) }
    }

    /// Runs `f` with `ordinal`'s primary context current, then restores the caller's; when `f`
    /// succeeds but the restore fails, the restore's error is the result.
    pub(crate) fn within<T, E: From<Error>>(&self, ordinal: usize, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let guard = self.enter(ordinal)?;
        leave(guard, f())
    }

    /// The primary context of a device, retained on first use and kept until the system drops.
    pub(crate) fn primary_context(&self, ordinal: usize, device: i32) -> Result<Context> {
        let mut slot = self.inner.devices[ordinal].context.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(context) = *slot {
            return Ok(context);
        }
        let context = self.inner.driver.primary_ctx_retain(device)?;
        *slot = Some(context);
        Ok(context)
    }
}

impl fmt::Debug for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("System")
            .field("driver", &self.inner.driver.describe())
            .field("devices", &self.device_count())
            .finish()
    }
}

impl Drop for Inner {
    /// Releases the verifier's probes, unloads the modules and releases the primary contexts
    /// this system retained. Errors are ignored: a sticky error leaves nothing to release, and
    /// a drop cannot report.
    fn drop(&mut self) {
        let driver = self.driver.as_ref();
        for (ordinal, slot) in self.devices.iter_mut().enumerate() {
            let context = *slot.context.get_mut().unwrap_or_else(|e| e.into_inner());
            let module = slot.module.get_mut().unwrap_or_else(|e| e.into_inner()).take();
            let probe = slot.probe.get_mut().unwrap_or_else(|e| e.into_inner());
            if let Some(context) = context
                // SAFETY: the context is still retained: it is released just below.
                && let Ok(_guard) = unsafe { CurrentContext::enter(driver, context) }
            {
                // SAFETY: the probe's handles are this driver's, made in this context, and no
                // verification runs (the system is being dropped).
                let _ = unsafe { probe.release(driver) };
                if let Some(module) = module {
                    module.release(driver);
                }
            }
            if context.is_some() {
                // SAFETY: the one retain this system made, released once; nothing of the system
                // that used the context is left.
                let _ = unsafe { driver.primary_ctx_release(ordinal as i32) };
            }
        }
    }
}
