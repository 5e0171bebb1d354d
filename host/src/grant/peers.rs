//! Set semantics (the pool's peers become a given list) and the all-visible helper.

use super::outcome::{Grant, GrantError, Stage};
use crate::driver::{Access, AccessDesc};
use crate::pool::PoolRef;
use crate::rounds::{self, Schedule};
use crate::system::System;
use std::collections::BTreeMap;

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
pub struct VisibleGrants {
    /// The pool's owner.
    pub owner: usize,
    /// One entry per other visible device, by ordinal: the grant's own result.
    pub results: Vec<(usize, Result<Grant, GrantError>)>,
}

impl VisibleGrants {
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
    pub fn set_peers(&self, pool: PoolRef<'_>, peers: &[usize]) -> Result<PeerUpdate, GrantError> {
        let (owner, count) = (pool.owner(), self.device_count());
        if let Some(&ordinal) = peers.iter().chain([&owner]).find(|&&d| d >= count) {
            return Err(GrantError::InvalidDevice { ordinal, count });
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
    /// (contexts retained and kernels loaded on every visible device), first readying the
    /// probes of all of them at once ([`System::prepare_verification`]: the owner's probe pool
    /// is mapped into every such peer before its memory is allocated), then verifying them in
    /// rounds ([`crate::rounds`]; they all share the owner, so one after another). It grants
    /// only `pool`: the owner's default or current pool and other pools are not touched (the
    /// helper it replaces also changed the owner's current pool). A peer whose verification
    /// failed gets that error and no grant.
    pub fn grant_all_visible(&self, pool: PoolRef<'_>) -> Result<VisibleGrants, GrantError> {
        let owner = pool.owner();
        if owner >= self.device_count() {
            return Err(GrantError::InvalidDevice { ordinal: owner, count: self.device_count() });
        }
        let peers: Vec<usize> = (0..self.device_count()).filter(|&d| d != owner).collect();
        // The pairs a grant would verify: not granted yet, capable, no evidence. A driver error
        // on the way is that peer's result (its grant is not tried).
        let mut failed: BTreeMap<usize, GrantError> = BTreeMap::new();
        let mut needs: Vec<(usize, usize)> = Vec::new();
        for &d in &peers {
            let needed = self.query(pool, d).and_then(|access| match access {
                Access::ReadWrite => Ok(false),
                _ => self
                    .driver()
                    .device_can_access_peer(d as i32, owner as i32)
                    .map_err(|error| GrantError::Cuda { stage: Stage::Query, error }),
            });
            match needed {
                Ok(true) if self.evidence(owner, d).is_none() => needs.push((owner, d)),
                Ok(_) => {}
                Err(error) => {
                    failed.insert(d, error);
                }
            }
        }
        if !needs.is_empty() {
            // A probe that could not be readied fails the pairs it serves: all of them for the
            // owner's, one for a peer's.
            if let Err((device, error)) = self.prepare_probes(&needs) {
                for &(_, d) in needs.iter().filter(|&&(_, d)| device == owner || device == d) {
                    failed.insert(d, error.clone());
                }
                needs.retain(|(_, d)| !failed.contains_key(d));
            }
            let schedule = Schedule::for_ordered_pairs(self.device_count(), &needs);
            let outcomes = rounds::run(&schedule, self.driver().timeline(), |pair| {
                pair.directions.iter().map(|&(o, a)| (a, self.verify_pair(o, a))).collect::<Vec<_>>()
            });
            // A verification that panicked (an `Err` outcome): its grant verifies again and reports.
            for verified in outcomes.into_iter().flatten().flatten() {
                failed.extend(verified.into_iter().filter_map(|(a, r)| r.err().map(|e| (a, e))));
            }
        }
        let results = peers
            .into_iter()
            .map(|d| match failed.remove(&d) {
                Some(error) => (d, Err(error)),
                None => (d, self.grant(pool, d)),
            })
            .collect();
        Ok(VisibleGrants { owner, results })
    }
}
