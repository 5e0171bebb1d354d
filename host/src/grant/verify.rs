//! Byte-transfer verification of an ordered device pair, on private probe pools.
//!
//! Before the first read-write grant from `owner` to `accessor`, bytes are moved both ways
//! through the copy engine and through peerpool's kernels, and checked word by word:
//!
//! | step | moves | by |
//! | --- | --- | --- |
//! | 1 | owner -> accessor | `cuMemcpyDtoDAsync` in the accessor's context |
//! | 2 | accessor -> owner | `cuMemcpyDtoDAsync` in the accessor's context |
//! | 3 | owner -> accessor | the accessor's kernel reads the owner's memory |
//! | 4 | accessor -> owner | the accessor's kernel writes the owner's memory |
//! | 5, 6 | both ways | the owner's kernels read and write the accessor's memory (only when the owner can access the accessor) |
//!
//! The probe pools are the verifier's own: no caller pool is touched, and the evidence is
//! cached per ordered pair, apart from every pool's permissions. It shows that the pair moved
//! these bytes correctly by these paths now; it proves neither bandwidth nor the route of a
//! later copy (CUDA may stage copies through the host), and a later failure is not excluded.

use super::outcome::{Direction, GrantError, Method, Rejection, Stage};
use crate::driver::{Access, AccessDesc, Stream};
use crate::error::Error;
use crate::memory::DeviceSlice;
use crate::pool::{OwnedPool, PoolOptions};
use crate::system::System;
use std::sync::atomic::Ordering;

/// Default probe buffer size: 1 MiB per side ([`System::set_probe_bytes`] changes it).
pub const PROBE_BYTES: u64 = 1 << 20;
/// The largest probe [`System::set_probe_bytes`] accepts.
const MAX_PROBE_BYTES: u64 = 1 << 30;

/// What verifying one ordered pair showed. Cached by the [`System`] until
/// [`System::forget_evidence`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evidence {
    /// The pool owner.
    pub owner: usize,
    /// The accessing device.
    pub accessor: usize,
    /// Bytes checked in each step.
    pub bytes_per_step: u64,
    /// Whether the owner's kernels were checked on the accessor's memory too (steps 5, 6):
    /// false when the owner cannot access the accessor.
    pub reverse_checked: bool,
}

impl System {
    /// The cached evidence for `owner -> accessor`, if that pair was verified.
    pub fn evidence(&self, owner: usize, accessor: usize) -> Option<Evidence> {
        self.inner.evidence.lock().unwrap_or_else(|e| e.into_inner()).get(&(owner, accessor)).copied()
    }

    /// Sets how many bytes each verification step moves (rounded up to 16, at least 16).
    /// Smaller is faster (simulated property tests use a few KiB); larger covers more pages.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] above 1 GiB (each step allocates this much on both devices
    /// and the host); the size stays as it was.
    pub fn set_probe_bytes(&self, bytes: u64) -> Result<(), Error> {
        let rounded = bytes.max(16).checked_next_multiple_of(16).filter(|&b| b <= MAX_PROBE_BYTES);
        let rounded = rounded.ok_or_else(|| {
            Error::InvalidArgument(format!("probe size {bytes} bytes: at most {MAX_PROBE_BYTES} bytes"))
        })?;
        self.inner.probe_bytes.store(rounded, Ordering::Relaxed);
        Ok(())
    }

    /// Bytes each verification step moves.
    pub fn probe_bytes(&self) -> u64 {
        self.inner.probe_bytes.load(Ordering::Relaxed)
    }

    /// Drops all cached evidence: the next grant per pair verifies again.
    pub fn forget_evidence(&self) {
        self.inner.evidence.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Verifies `owner -> accessor` now (whether or not evidence is cached) and caches the
    /// evidence on success. The caller checked capability (`accessor` can access `owner`).
    ///
    /// Side effects: retains both primary contexts and loads peerpool's kernels into them on
    /// first use; creates, grants, uses and destroys two private probe pools; synchronises
    /// both devices' null streams (waiting for work the caller queued there). The caller's
    /// current context is restored. Legacy peer access (`cuCtxEnablePeerAccess`) is not used.
    pub fn verify_pair(&self, owner: usize, accessor: usize) -> Result<Evidence, GrantError> {
        let at = |e: Error| GrantError::at(Stage::Verify, e);
        let reverse = self.driver().device_can_access_peer(owner as i32, accessor as i32).map_err(|e| at(e.into()))?;
        let probe = Probe::new(self, owner, accessor, reverse).map_err(at)?;
        let bytes = probe.bytes;
        let outcome = probe.run();
        // The probe pools are destroyed (their grants revoked first) before reporting.
        let cleanup = probe.finish();
        let reject = |rejection| GrantError::Rejected { owner, accessor, rejection };
        match outcome.map_err(at)? {
            Some(rejection) => Err(reject(rejection)),
            None => {
                cleanup.map_err(at)?;
                let evidence = Evidence { owner, accessor, bytes_per_step: bytes, reverse_checked: reverse };
                self.inner.evidence.lock().unwrap_or_else(|e| e.into_inner()).insert((owner, accessor), evidence);
                Ok(evidence)
            }
        }
    }
}

/// The two probe pools and one buffer in each.
struct Probe<'s> {
    system: &'s System,
    owner: usize,
    accessor: usize,
    reverse: bool,
    bytes: u64,
    // Declared before the pools: buffers are freed first.
    on_owner: crate::Allocation,
    on_accessor: crate::Allocation,
    pools: [OwnedPool; 2],
}

impl<'s> Probe<'s> {
    fn new(system: &'s System, owner: usize, accessor: usize, reverse: bool) -> Result<Probe<'s>, Error> {
        let owner_pool = system.create_pool(owner, PoolOptions::default())?;
        let accessor_pool = system.create_pool(accessor, PoolOptions::default())?;
        let grant = |pool: &OwnedPool, device: usize| {
            let rw = [AccessDesc { device: device as i32, access: Access::ReadWrite }];
            // SAFETY: the probe's own pool, alive until `finish`.
            unsafe { system.driver().mem_pool_set_access(pool.handle(), &rw) }
        };
        grant(&owner_pool, accessor)?;
        if reverse {
            grant(&accessor_pool, owner)?;
        }
        let bytes = system.probe_bytes();
        let on_owner = system.alloc(owner_pool.as_ref(), bytes as usize)?;
        let on_accessor = system.alloc(accessor_pool.as_ref(), bytes as usize)?;
        Ok(Probe { system, owner, accessor, reverse, bytes, on_owner, on_accessor, pools: [owner_pool, accessor_pool] })
    }

    /// Runs the steps in order; the first wrong one is returned.
    fn run(&self) -> Result<Option<Rejection>, Error> {
        use Direction::*;
        use Method::*;
        let (o, a) = (self.on_owner.as_slice(), self.on_accessor.as_slice());
        let (owner, accessor) = (self.owner, self.accessor);
        let copy = |dst: DeviceSlice<'_>, src: DeviceSlice<'_>| -> Result<(), Error> {
            let driver = self.system.driver();
            self.system.within(accessor, || {
                // SAFETY: both buffers are the probe's, `bytes` long, alive until `finish`; the
                // null stream is the accessor's context's, current here.
                unsafe {
                    driver.memcpy_dtod_async(dst.ptr(), src.ptr(), self.bytes as usize, Stream::LEGACY)?;
                    Ok(driver.stream_synchronize(Stream::LEGACY)?)
                }
            })
        };
        let mut steps: Vec<Step> = vec![
            Step {
                seed: 0x5EED_0001,
                fill: (owner, o),
                copy: Some((a, o)),
                check: (accessor, a),
                direction: OwnerToAccessor,
                method: CopyEngine,
            },
            Step {
                seed: 0x5EED_0002,
                fill: (accessor, a),
                copy: Some((o, a)),
                check: (owner, o),
                direction: AccessorToOwner,
                method: CopyEngine,
            },
            Step {
                seed: 0x5EED_0003,
                fill: (owner, o),
                copy: None,
                check: (accessor, o),
                direction: OwnerToAccessor,
                method: AccessorKernel,
            },
            Step {
                seed: 0x5EED_0004,
                fill: (accessor, o),
                copy: None,
                check: (owner, o),
                direction: AccessorToOwner,
                method: AccessorKernel,
            },
        ];
        if self.reverse {
            steps.push(Step {
                seed: 0x5EED_0005,
                fill: (accessor, a),
                copy: None,
                check: (owner, a),
                direction: AccessorToOwner,
                method: OwnerKernel,
            });
            steps.push(Step {
                seed: 0x5EED_0006,
                fill: (owner, a),
                copy: None,
                check: (accessor, a),
                direction: OwnerToAccessor,
                method: OwnerKernel,
            });
        }
        for step in steps {
            self.system.with_kernels(step.fill.0, |k| k.fill(step.fill.1, step.seed))?;
            if let Some((dst, src)) = step.copy {
                copy(dst, src)?;
            }
            let seen = self.system.with_kernels(step.check.0, |k| k.check(step.check.1, step.seed))?;
            if let Some(first) = seen.first_mismatch {
                return Ok(Some(Rejection {
                    direction: step.direction,
                    method: step.method,
                    bytes_wrong: seen.mismatches * 4,
                    first_bad_offset: first * 4,
                    bytes_checked: self.bytes,
                }));
            }
        }
        Ok(None)
    }

    /// Frees the buffers and destroys the pools (revoking their grants first), every step
    /// attempted; the first failure is reported.
    fn finish(self) -> Result<(), Error> {
        let Probe { on_owner, on_accessor, pools, .. } = self;
        let [p, q] = pools;
        let results = [on_owner.free(), on_accessor.free(), p.destroy(), q.destroy()];
        results.into_iter().collect()
    }
}

/// One verification step: fill with `seed` on a device, optionally copy, check on a device.
struct Step<'a> {
    seed: u32,
    fill: (usize, DeviceSlice<'a>),
    copy: Option<(DeviceSlice<'a>, DeviceSlice<'a>)>,
    check: (usize, DeviceSlice<'a>),
    direction: Direction,
    method: Method,
}
