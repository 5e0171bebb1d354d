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
//! The memory is the verifier's own: each device gets, on its first verification, a private
//! probe pool holding one probe buffer. A verification grants the owner's probe pool to the
//! accessor (and, for steps 5 and 6, the accessor's to the owner) unless an earlier one did;
//! the pools, their grants and buffers stay until the [`System`] drops. No caller pool is
//! touched, and the accessor reaches the owner's probe buffer through that pool's grant alone.
//! Keeping them is what makes a pair cheap to prove: on the H200s, mapping a new pool's memory
//! into a peer cost 8.4 ms per pool in the driver, two of them per pair (most of the 19.3 ms a
//! verification took with fresh pools); now each device's pool is mapped into each peer once,
//! and [`System::prepare_verification`] maps it into all the peers a set of pairs needs before
//! its first allocation. The evidence is cached per ordered pair, apart from every pool's
//! permissions. It shows that the pair moved these bytes correctly by these paths now; it
//! proves neither bandwidth nor the route of a later copy (CUDA may stage copies through the
//! host), and a later failure is not excluded.

use super::outcome::{Direction, GrantError, Method, Rejection, Stage};
use crate::device_state::ScratchSlot;
use crate::driver::{Access, AccessDesc, DevicePtr, HandleKinds, PoolProps, Stream};
use crate::error::Error;
use crate::evidence::Evidence;
use crate::memory::DeviceSlice;
use crate::system::System;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::MutexGuard;
use std::sync::atomic::Ordering;

/// The largest probe [`System::set_scratch_bytes`] accepts.
const MAX_SCRATCH_BYTES: u64 = 1 << 30;

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
    pub fn set_scratch_bytes(&self, bytes: u64) -> Result<(), Error> {
        let rounded = bytes.max(16).checked_next_multiple_of(16).filter(|&b| b <= MAX_SCRATCH_BYTES);
        let rounded = rounded.ok_or_else(|| {
            Error::InvalidArgument(format!("scratch size {bytes} bytes: at most {MAX_SCRATCH_BYTES} bytes"))
        })?;
        self.inner.scratch_bytes.store(rounded, Ordering::Relaxed);
        Ok(())
    }

    /// Bytes each verification step moves.
    pub fn scratch_bytes(&self) -> u64 {
        self.inner.scratch_bytes.load(Ordering::Relaxed)
    }

    /// Drops all cached evidence: the next grant per pair verifies again.
    pub fn forget_evidence(&self) {
        self.inner.evidence.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Verifies `owner -> accessor` now (whether or not evidence is cached) and caches the
    /// evidence on success. The caller checked capability (`accessor` can access `owner`).
    ///
    /// Side effects: retains both primary contexts and loads peerpool's kernels into them on
    /// first use; on a device's first verification creates its private probe pool and one
    /// buffer of [`System::scratch_bytes`] in it (again when the size changed); grants the
    /// owner's probe pool to the accessor and, when the owner can access the accessor, the
    /// accessor's to the owner, unless granted before; the probe pools, grants and buffers stay
    /// until the system drops. Synchronises both devices' null streams (waiting for work the
    /// caller queued there). The caller's current context is restored. Legacy peer access
    /// (`cuCtxEnablePeerAccess`) is not used. Verifications of pairs that share a device take
    /// turns (each device's probe is locked); pairs on four different devices run at once.
    pub fn verify_pair(&self, owner: usize, accessor: usize) -> Result<Evidence, GrantError> {
        let at = |e: Error| GrantError::at(Stage::Verify, e);
        for ordinal in [owner, accessor] {
            self.device_handle(ordinal).map_err(at)?;
        }
        if owner == accessor {
            return Err(at(Error::InvalidArgument(format!("gpu{owner} cannot be verified against itself"))));
        }
        let reverse = self.driver().device_can_access_peer(owner as i32, accessor as i32).map_err(|e| at(e.into()))?;
        let (mut on_owner, mut on_accessor) = self.lock_probes(owner, accessor);
        let owner_buffer = self.ready_probe(owner, &mut on_owner, &[accessor]).map_err(at)?;
        let back: &[usize] = if reverse { &[owner] } else { &[] };
        let accessor_buffer = self.ready_probe(accessor, &mut on_accessor, back).map_err(at)?;
        // Seeds new to this verification: bytes an earlier one left in the probe buffers never
        // pass for the ones this one moves.
        let nonce = self.inner.verifications.fetch_add(1, Ordering::Relaxed);
        let salt = (nonce as u32).wrapping_mul(0x10);
        let probe = Probe { system: self, owner, accessor, reverse, salt, buffers: [owner_buffer, accessor_buffer] };
        let bytes = owner_buffer.1.min(accessor_buffer.1);
        match probe.run().map_err(at)? {
            Some(rejection) => Err(GrantError::Rejected { owner, accessor, rejection }),
            None => {
                let evidence = Evidence { owner, accessor, bytes_per_step: bytes, reverse_checked: reverse };
                self.inner.evidence.lock().unwrap_or_else(|e| e.into_inner()).insert((owner, accessor), evidence);
                Ok(evidence)
            }
        }
    }

    /// Readies the probes that verifying `pairs` (ordered `(owner, accessor)`, each capable)
    /// needs, device by device: each probe pool is created and granted to every peer these
    /// pairs need before its first allocation, so the driver maps the new memory into all of
    /// them at once instead of one verification at a time. Nothing is verified; the pairs'
    /// verifications ([`System::verify_pair`]) are then cheap. Pairs whose devices do not exist,
    /// or an accessor paired with itself, are left out.
    ///
    /// # Errors
    /// The first driver error; devices readied before it stay ready, and the verifications
    /// ready the rest themselves.
    pub fn prepare_verification(&self, pairs: &[(usize, usize)]) -> Result<(), GrantError> {
        self.prepare_probes(pairs).map_err(|(_, e)| e)
    }

    /// [`System::prepare_verification`], its error with the device whose probe failed.
    pub(crate) fn prepare_probes(&self, pairs: &[(usize, usize)]) -> Result<(), (usize, GrantError)> {
        let at = |e: Error| GrantError::at(Stage::Verify, e);
        let mut needs: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        let n = self.device_count();
        for &(owner, accessor) in pairs.iter().filter(|&&(o, a)| o != a && o < n && a < n) {
            needs.entry(owner).or_default().insert(accessor);
            let reverse = self.driver().device_can_access_peer(owner as i32, accessor as i32);
            let entry = needs.entry(accessor).or_default();
            if reverse.map_err(|e| (owner, at(e.into())))? {
                entry.insert(owner);
            }
        }
        for (device, peers) in needs {
            let peers: Vec<usize> = peers.into_iter().collect();
            let mut slot = self.inner.devices[device].probe.lock().unwrap_or_else(|e| e.into_inner());
            self.ready_probe(device, &mut slot, &peers).map_err(|e| (device, at(e)))?;
        }
        Ok(())
    }

    /// Releases the verifier's scratch on every device: buffers freed, grants revoked, pools
    /// destroyed. The next verification makes them again. For a long-lived system that must
    /// start over as if new (a reused test target); waits for running verifications.
    ///
    /// # Errors
    /// The first failure; every device is attempted, and what could not be released stays in
    /// the probe (released when the system drops).
    pub fn release_scratch(&self) -> Result<(), Error> {
        let mut results = Vec::new();
        for (ordinal, slot) in self.inner.devices.iter().enumerate() {
            let mut probe = slot.probe.lock().unwrap_or_else(|e| e.into_inner());
            if probe.is_empty() {
                continue;
            }
            // SAFETY: the slot's handles are this system's driver's; its device's context is
            // current inside `within`; the slot is locked, so no verification uses the buffer.
            results.push(self.within(ordinal, || unsafe { probe.release(self.driver().as_ref()) }));
        }
        results.into_iter().collect()
    }

    /// Both devices' probe slots, locked in ordinal order (so two verifications sharing a
    /// device wait for each other rather than deadlock).
    fn lock_probes(&self, owner: usize, accessor: usize) -> (MutexGuard<'_, ScratchSlot>, MutexGuard<'_, ScratchSlot>) {
        let lock = |d: usize| self.inner.devices[d].probe.lock().unwrap_or_else(|e| e.into_inner());
        if owner < accessor {
            let first = lock(owner);
            (first, lock(accessor))
        } else {
            let first = lock(accessor);
            (lock(owner), first)
        }
    }

    /// Makes `device`'s probe pool (if it has none), grants it to those of `peers` it does
    /// not grant yet (one `cuMemPoolSetAccess`), and allocates its buffer when it has none of
    /// the current scratch size (after the grants: the driver maps new memory into every peer
    /// granted then). Returns the buffer. Every handle made is put in the slot at once, so a
    /// later failure leaves nothing the system's drop would not release.
    fn ready_probe(&self, device: usize, slot: &mut ScratchSlot, peers: &[usize]) -> Result<(DevicePtr, u64), Error> {
        let driver = self.driver();
        let ordinal = self.device_handle(device)?;
        let pool = match slot.pool {
            Some(pool) => pool,
            None => self.within(device, || {
                let props = PoolProps { device: ordinal, handle_types: HandleKinds::NONE, max_size: 0 };
                let pool = driver.mem_pool_create(&props)?;
                slot.pool = Some(pool);
                Ok::<_, Error>(pool)
            })?,
        };
        let missing: Vec<usize> = peers
            .iter()
            .copied()
            .filter(|&p| p != device && !slot.granted.contains(&p))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if !missing.is_empty() {
            let map: Vec<AccessDesc> =
                missing.iter().map(|&p| AccessDesc { device: p as i32, access: Access::ReadWrite }).collect();
            // SAFETY: the probe's own pool, alive until the system drops.
            unsafe { driver.mem_pool_set_access(pool, &map) }?;
            slot.granted.extend(missing);
        }
        let bytes = self.scratch_bytes();
        if let Some((ptr, len)) = slot.buffer
            && len != bytes
        {
            self.within(device, || {
                // SAFETY: the probe's own buffer, freed once (the slot forgets it at once), in
                // its device's context on that context's null stream.
                unsafe { driver.mem_free_async(ptr, Stream::LEGACY) }?;
                slot.buffer = None;
                // SAFETY: as above.
                Ok::<_, Error>(unsafe { driver.stream_synchronize(Stream::LEGACY) }?)
            })?;
        }
        match slot.buffer {
            Some(buffer) => Ok(buffer),
            None => self.within(device, || {
                // SAFETY: the probe's pool, alive until the system drops; the null stream is the
                // device's context's, current here.
                let ptr = unsafe { driver.mem_alloc_from_pool_async(bytes as usize, pool, Stream::LEGACY) }?;
                slot.buffer = Some((ptr, bytes));
                // SAFETY: as above.
                unsafe { driver.stream_synchronize(Stream::LEGACY) }?;
                Ok((ptr, bytes))
            }),
        }
    }
}

/// The two probe buffers of one verification, each `(address, bytes)`; the first on the
/// owner.
struct Probe<'s> {
    system: &'s System,
    owner: usize,
    accessor: usize,
    reverse: bool,
    /// Added to every step's seed (a multiple of 16; the steps' seeds differ below 16).
    salt: u32,
    buffers: [(DevicePtr, u64); 2],
}

impl Probe<'_> {
    /// Runs the steps in order; the first wrong one is returned.
    fn run(&self) -> Result<Option<Rejection>, Error> {
        use Direction::*;
        use Method::*;
        let bytes = self.buffers[0].1.min(self.buffers[1].1);
        // SAFETY: both buffers are the probes', each at least `bytes` long, and stay allocated
        // while the probe slots are locked (for the whole verification).
        let (o, a) = unsafe {
            (DeviceSlice::from_raw(self.buffers[0].0, bytes), DeviceSlice::from_raw(self.buffers[1].0, bytes))
        };
        let (owner, accessor) = (self.owner, self.accessor);
        let copy = |dst: DeviceSlice<'_>, src: DeviceSlice<'_>| -> Result<(), Error> {
            let driver = self.system.driver();
            self.system.within(accessor, || {
                // SAFETY: both buffers are the probe's, `bytes` long, alive while locked; the
                // null stream is the accessor's context's, current here.
                unsafe {
                    driver.memcpy_dtod_async(dst.ptr(), src.ptr(), bytes as usize, Stream::LEGACY)?;
                    Ok(driver.stream_synchronize(Stream::LEGACY)?)
                }
            })
        };
        let step = |n: u32, fill, copy, check, direction, method| Step {
            seed: 0x5EED_0000 + n,
            fill,
            copy,
            check,
            direction,
            method,
        };
        let mut steps: Vec<Step> = vec![
            step(1, (owner, o), Some((a, o)), (accessor, a), OwnerToAccessor, CopyEngine),
            step(2, (accessor, a), Some((o, a)), (owner, o), AccessorToOwner, CopyEngine),
            step(3, (owner, o), None, (accessor, o), OwnerToAccessor, AccessorKernel),
            step(4, (accessor, o), None, (owner, o), AccessorToOwner, AccessorKernel),
        ];
        if self.reverse {
            steps.push(step(5, (accessor, a), None, (owner, a), AccessorToOwner, OwnerKernel));
            steps.push(step(6, (owner, a), None, (accessor, a), OwnerToAccessor, OwnerKernel));
        }
        for mut step in steps {
            step.seed = step.seed.wrapping_add(self.salt);
            self.system.with_kernels(step.fill.0, |k| k.fill(step.fill.1, step.seed))?;
            if let Some((dst, src)) = step.copy {
                copy(dst, src)?;
            }
            let seen = self.system.with_kernels(step.check.0, |k| k.compare_pattern(step.check.1, step.seed))?;
            if let Some(first) = seen.first_mismatch {
                return Ok(Some(Rejection {
                    direction: step.direction,
                    method: step.method,
                    bytes_wrong: seen.mismatches * 4,
                    first_bad_offset: first * 4,
                    bytes_checked: bytes,
                }));
            }
        }
        Ok(None)
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
