//! Set semantics (the pool's peers become a given list) and the all-visible helper.

use super::outcome::{Grant, GrantError};
use crate::driver::{Access, AccessDesc};
use crate::pool::PoolRef;
use crate::system::System;

/// What [`System::set_peers`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerUpdate {
    /// Devices that gained read-write access, sorted.
    pub granted: Vec<usize>,
    /// Devices that lost their access, sorted.
    pub revoked: Vec<usize>,
    /// The pool's peers afterwards, sorted: the table read before the update with the update
    /// applied (the driver applies a `cuMemPoolSetAccess` call whole or not at all).
    /// [`System::peers`] reads them back from the driver.
    pub peers: Vec<usize>,
    /// The owner was in the list and was left out (it always has read-write access).
    pub owner_ignored: bool,
    /// The list named some device more than once; each counted once.
    pub duplicates_ignored: bool,
}

/// What [`System::grant_all_visible`] did for each peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VisibleReport {
    /// The pool's owner.
    pub owner: usize,
    /// One entry per other visible device, by ordinal: the grant's own result.
    pub results: Vec<(usize, Result<Grant, GrantError>)>,
}

impl VisibleReport {
    /// Devices that have read-write access now (granted here or before).
    pub fn granted(&self) -> Vec<usize> {
        self.results
            .iter()
            .filter(|(_, r)| matches!(r, Ok(Grant::Granted { .. } | Grant::AlreadyGranted)))
            .map(|(d, _)| *d)
            .collect()
    }

    /// Whether every peer is granted.
    pub fn all_granted(&self) -> bool {
        self.results.iter().all(|(_, r)| r.is_ok())
    }
}

impl System {
    /// Makes `peers` exactly the devices with read-write access to `pool` (besides the owner).
    ///
    /// The list is a set: duplicates count once, and the owner, if listed, is left out (its
    /// access cannot change), both reported in the [`PeerUpdate`]. Every ordinal is checked,
    /// every newly granted pair must be capable and verified (evidence cached or made now),
    /// and only then are all grants and revokes applied in ONE `cuMemPoolSetAccess` call that
    /// never names the owner (the driver would reject the whole call). Any failure leaves the
    /// pool as it was.
    pub fn set_peers(&self, pool: PoolRef<'_>, owner: usize, peers: &[usize]) -> Result<PeerUpdate, GrantError> {
        let count = self.device_count();
        if let Some(&ordinal) = peers.iter().chain([&owner, &pool.owner()]).find(|&&d| d >= count) {
            return Err(GrantError::InvalidDevice { ordinal, count });
        }
        if pool.owner() != owner {
            return Err(GrantError::PoolNotOnOwner { pool_owner: pool.owner(), owner });
        }
        let mut wanted: Vec<usize> = peers.iter().copied().filter(|&d| d != owner).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut update = PeerUpdate {
            owner_ignored: peers.contains(&owner),
            duplicates_ignored: wanted.len() + usize::from(peers.contains(&owner)) < peers.len(),
            ..PeerUpdate::default()
        };
        let mut map = Vec::new();
        let mut after = Vec::new();
        for device in (0..count).filter(|&d| d != owner) {
            let now = self.query(pool, device)?;
            let want = wanted.binary_search(&device).is_ok();
            if want {
                after.push(device);
            }
            if want && now != Access::ReadWrite {
                self.require_capability(owner, device)?;
                if self.evidence(owner, device).is_none() {
                    self.verify_pair(owner, device)?;
                }
                update.granted.push(device);
                map.push(AccessDesc { device: device as i32, access: Access::ReadWrite });
            } else if !want && now != Access::None {
                update.revoked.push(device);
                map.push(AccessDesc { device: device as i32, access: Access::None });
            }
        }
        if !map.is_empty() {
            self.apply(pool, &map)?;
        }
        update.peers = after;
        Ok(update)
    }

    /// Grants every other visible device read-write access to `pool`, one [`System::grant`] per
    /// peer in ordinal order, and reports each result. A failing peer does not stop the others.
    ///
    /// Broader than a single grant: it verifies every pair `owner -> peer` not yet verified
    /// (contexts retained and kernels loaded on every visible device, each pair's probe pools),
    /// and grants only `pool`: the owner's default or current pool and other pools are not
    /// touched (the helper it replaces also changed the owner's current pool).
    pub fn grant_all_visible(&self, pool: PoolRef<'_>, owner: usize) -> Result<VisibleReport, GrantError> {
        if owner >= self.device_count() {
            return Err(GrantError::InvalidDevice { ordinal: owner, count: self.device_count() });
        }
        let results =
            (0..self.device_count()).filter(|&d| d != owner).map(|d| (d, self.grant(pool, owner, d))).collect();
        Ok(VisibleReport { owner, results })
    }
}
