//! The grant engine: per-pool, per-peer access with typed outcomes, verified before granting.
//!
//! ```no_run
//! use peerpool::{Grant, PoolOptions, System};
//! let gpus = System::open()?;
//! let pool = gpus.create_pool(0, PoolOptions::default())?;
//! match gpus.grant(pool.as_ref(), 1) {
//!     Ok(Grant::Granted { previous }) => println!("gpu1 may now use the pool (had {previous:?})"),
//!     Ok(other) => println!("nothing to change: {other:?}"),
//!     Err(e) if e.is_sticky() => panic!("CUDA context lost: {e}"),
//!     Err(e) => println!("not granted: {e}"),
//! }
//! assert_eq!(gpus.peers(pool.as_ref())?, vec![1]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A grant changes one pool's permission for one accessor (`cuMemPoolSetAccess` with one
//! descriptor): other pools on the device, the default pool included, are untouched, and peer
//! capability (`cuDeviceCanAccessPeer`) or legacy peer access never stand in for it.

mod outcome;
mod peers;
mod verify;

pub use crate::evidence::{Evidence, PROBE_BYTES};
pub use outcome::{Direction, Grant, GrantError, Method, Rejection, Revoke, Stage};
pub use peers::{PeerUpdate, VisibleGrants};

use crate::driver::codes::CudaCode;
use crate::driver::{Access, AccessDesc};
use crate::pool::PoolRef;
use crate::system::System;

impl System {
    /// Grants `accessor` read-write access to `pool` (owned by `pool.owner()`, the owner below).
    ///
    /// Order: arguments are checked (before anything is touched); the accessor's current
    /// access is read (already read-write: [`Grant::AlreadyGranted`], no verification); peer
    /// capability is read ([`GrantError::Unsupported`]); the pair is verified unless evidence is
    /// cached ([`System::verify_pair`], [`GrantError::Rejected`]); then one
    /// `cuMemPoolSetAccess` with one descriptor. Errors of every driver call, the probe's
    /// included, come back as [`GrantError::Cuda`] with the call, code and stickiness.
    ///
    /// Side effects beyond the pool: those of [`System::verify_pair`] on the first grant per
    /// ordered pair (contexts retained and briefly made current, kernels loaded, probe pools,
    /// both devices' null streams synchronised); none on later grants. The caller's current
    /// context is restored on every path. A failed grant does not prove that the access is
    /// absent, nor that a host-staged fallback is safe: read [`System::pool_access`].
    pub fn grant(&self, pool: PoolRef<'_>, accessor: usize) -> Result<Grant, GrantError> {
        let owner = self.validate_pair(pool, accessor)?;
        if owner == accessor {
            return Ok(Grant::OwnerAccess);
        }
        let previous = self.query(pool, accessor)?;
        if previous == Access::ReadWrite {
            return Ok(Grant::AlreadyGranted);
        }
        self.require_capability(owner, accessor)?;
        if self.evidence(owner, accessor).is_none() {
            self.verify_pair(owner, accessor)?;
        }
        self.apply(pool, &[AccessDesc { device: accessor as i32, access: Access::ReadWrite }])?;
        Ok(Grant::Granted { previous })
    }

    /// Asks for read-only access. The H200s' driver refuses it for device pools
    /// (`CUDA_ERROR_NOT_SUPPORTED`), reported as [`GrantError::ReadOnlyUnsupported`] with nothing
    /// changed. Where a driver allows it, the pair's read direction is verified first.
    pub fn grant_read_only(&self, pool: PoolRef<'_>, accessor: usize) -> Result<Grant, GrantError> {
        let owner = self.validate_pair(pool, accessor)?;
        if owner == accessor {
            return Ok(Grant::OwnerAccess);
        }
        let previous = self.query(pool, accessor)?;
        if previous != Access::None {
            return Ok(Grant::AlreadyGranted);
        }
        self.require_capability(owner, accessor)?;
        let read = [AccessDesc { device: accessor as i32, access: Access::Read }];
        // SAFETY: a `PoolRef` is live for its lifetime.
        match unsafe { self.driver().mem_pool_set_access(pool.handle(), &read) } {
            Ok(()) => Ok(Grant::Granted { previous }),
            Err(e) if e.code == CudaCode::CUDA_ERROR_NOT_SUPPORTED => {
                Err(GrantError::ReadOnlyUnsupported { owner, accessor })
            }
            Err(error) => Err(GrantError::Cuda { stage: Stage::Apply, error }),
        }
    }

    /// Revokes `accessor`'s access to `pool` (one `cuMemPoolSetAccess` to none). Live
    /// allocations stay valid for the owner; an accessor kernel touching them faults afterwards.
    pub fn revoke(&self, pool: PoolRef<'_>, accessor: usize) -> Result<Revoke, GrantError> {
        let owner = self.validate_pair(pool, accessor)?;
        if owner == accessor {
            return Err(GrantError::OwnerRevoke { owner });
        }
        let previous = self.query(pool, accessor)?;
        if previous == Access::None {
            return Ok(Revoke::AlreadyNone);
        }
        self.apply(pool, &[AccessDesc { device: accessor as i32, access: Access::None }])?;
        Ok(Revoke::Revoked { previous })
    }

    /// The pool's peers with read-write access, sorted (the owner is never listed).
    pub fn peers(&self, pool: PoolRef<'_>) -> Result<Vec<usize>, GrantError> {
        let mut peers = Vec::new();
        for device in (0..self.device_count()).filter(|&d| d != pool.owner()) {
            if self.query(pool, device)? == Access::ReadWrite {
                peers.push(device);
            }
        }
        Ok(peers)
    }

    /// Argument checks shared by every operation: both devices exist. Returns the pool's owner.
    fn validate_pair(&self, pool: PoolRef<'_>, accessor: usize) -> Result<usize, GrantError> {
        for ordinal in [pool.owner(), accessor] {
            if ordinal >= self.device_count() {
                return Err(GrantError::InvalidDevice { ordinal, count: self.device_count() });
            }
        }
        Ok(pool.owner())
    }

    fn query(&self, pool: PoolRef<'_>, device: usize) -> Result<Access, GrantError> {
        // SAFETY: a `PoolRef` is live for its lifetime.
        unsafe { self.driver().mem_pool_get_access(pool.handle(), device as i32) }
            .map_err(|error| GrantError::Cuda { stage: Stage::Query, error })
    }

    fn require_capability(&self, owner: usize, accessor: usize) -> Result<(), GrantError> {
        let can = |a: usize, b: usize| {
            self.driver()
                .device_can_access_peer(a as i32, b as i32)
                .map_err(|error| GrantError::Cuda { stage: Stage::Query, error })
        };
        if can(accessor, owner)? {
            return Ok(());
        }
        Err(GrantError::Unsupported { owner, accessor, reverse_capable: can(owner, accessor)? })
    }

    fn apply(&self, pool: PoolRef<'_>, map: &[AccessDesc]) -> Result<(), GrantError> {
        // SAFETY: a `PoolRef` is live for its lifetime.
        unsafe { self.driver().mem_pool_set_access(pool.handle(), map) }
            .map_err(|error| GrantError::Cuda { stage: Stage::Apply, error })
    }
}
