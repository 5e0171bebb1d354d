//! [`price`]: what a call's [`Work`] costs under a model.

use super::{Cost, Latencies, Lock, Nanos, ns};
use std::sync::atomic::{AtomicU64, Ordering};

/// What a call did that its cost depends on, as the driver saw it; [`price`] turns it into a
/// [`Cost`] under a model.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Work {
    /// A call with only its base cost.
    Call,
    /// `cuCtxGetCurrent`, `cuCtxSetCurrent`, push, pop.
    ContextSwitch,
    /// `cuInit`, on a machine of this many devices.
    Init(usize),
    /// A context created on this device (a primary context's first retain in the process).
    Context(usize),
    /// A module loaded on `device`; PTX for the given compute capability, or a cubin.
    Module {
        ptx: Option<(i32, i32)>,
    },
    PoolCreate,
    PoolDestroy,
    /// `cuMemPoolSetAccess` on a pool of `owner` holding `live` bytes.
    Access {
        owner: usize,
        live: u64,
        /// Peers granted over live memory for the first time / again.
        map_first: Vec<usize>,
        map_again: Vec<usize>,
        /// A peer granted while the pool holds no memory.
        granted_empty: bool,
        revoked: usize,
    },
    /// An allocation from a pool on `device`; the first one from memory-less pool maps the
    /// memory into every peer with access.
    Alloc {
        device: usize,
        first: bool,
        peers: Vec<usize>,
    },
    LegacyAlloc,
    Free,
    /// A synchronisation that waits for `device`'s work.
    Sync(usize),
    /// An event synchronisation: it waits until the event's time, not for later work.
    EventSync(Nanos),
    /// A kernel on `device` and what it moved (queued, as every launch is).
    Kernel {
        device: usize,
        traffic: Traffic,
    },
    /// A launch whose kernel faulted on `device`: the calling thread waits for the fault to
    /// surface (the simulator runs kernels in the launch), under the fault lock, and the
    /// device's engines wait with it.
    Fault(usize),
    /// A copy by `device`'s engine: `bytes` between two devices' memory (`peer`), within one
    /// device's, or to or from the host; `queued` for an asynchronous call between devices
    /// (the simulator's host memory is pageable, so host copies are synchronous, as the real
    /// driver's are for pageable memory).
    Copy {
        device: usize,
        bytes: u64,
        path: Path,
        queued: bool,
    },
    /// A memset by `device`'s engine (queued: only the asynchronous calls are modelled).
    Memset {
        device: usize,
        bytes: u64,
    },
}

/// Where a copy's bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    Host,
    Local,
    Peer,
}

/// What a kernel touched, split by whose memory.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Traffic {
    /// The launching device's own memory.
    pub(crate) local: Touched,
    /// Peers' memory.
    pub(crate) peer: Touched,
}

impl Traffic {
    /// The launching device's side (`local`) or the peers'.
    pub(crate) fn side(&mut self, local: bool) -> &mut Touched {
        match local {
            true => &mut self.local,
            false => &mut self.peer,
        }
    }
}

/// What a kernel did to one side's memory: bytes moved, atomic operations, and the loads of a
/// pointer chase (each waits for the one before it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Touched {
    pub(crate) bytes: u64,
    pub(crate) atomics: u64,
    pub(crate) loads: u64,
}

/// What `work` costs under `m`.
pub(crate) fn price(m: &Latencies, work: &Work) -> Cost {
    let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
    match work {
        Work::Call => Cost::on(ns(m.call_us), vec![]),
        Work::ContextSwitch => Cost::on(ns(m.context_switch_us), vec![]),
        Work::Init(devices) => {
            let more = *devices as f64 - f64::from(m.init_devices.max(1));
            Cost::on(ns(m.init_us + more * m.init_per_device_us), vec![]).locked(Lock::Init, (0..*devices).collect())
        }
        Work::Context(d) => Cost::on(ns(m.context_create_us), vec![]).locked(Lock::Context, vec![*d]),
        Work::Module { ptx: None } => Cost::on(ns(m.module_cubin_us), vec![]),
        Work::Module { ptx } => Cost { ptx: *ptx, ..Cost::on(ns(m.module_ptx_cached_us), vec![]) },
        Work::PoolCreate => Cost::on(ns(m.pool_create_us), vec![]),
        Work::PoolDestroy => Cost::on(ns(m.pool_destroy_us), vec![]),
        Work::Access { owner, live, map_first, map_again, granted_empty, revoked } => {
            let per_gib = gib(*live);
            let mut micros = 0.0;
            if *granted_empty {
                micros += m.grant_empty_us;
            }
            micros += map_first.len() as f64 * (m.map_on_grant_first_us + m.map_per_gib_us * per_gib);
            micros += map_again.len() as f64 * (m.map_on_grant_again_us + m.map_per_gib_us * per_gib);
            micros += *revoked as f64 * (m.revoke_us + m.revoke_per_gib_us * per_gib);
            if micros == 0.0 {
                micros = m.set_access_unchanged_us;
            }
            let cost = Cost::on(ns(micros), vec![]);
            let mapped: Vec<usize> = map_first.iter().chain(map_again).copied().collect();
            match mapped.is_empty() {
                true => cost,
                false => cost.locked(Lock::Map, std::iter::once(*owner).chain(mapped).collect()),
            }
        }
        Work::Alloc { device, first: true, peers } => {
            let cost = Cost::on(ns(m.alloc_first_us + m.map_on_alloc_us * peers.len() as f64), vec![]);
            match peers.is_empty() {
                true => cost,
                false => cost.locked(Lock::Map, std::iter::once(*device).chain(peers.iter().copied()).collect()),
            }
        }
        Work::Alloc { first: false, .. } => Cost::on(ns(m.alloc_us), vec![]),
        Work::LegacyAlloc => Cost::on(ns(m.legacy_alloc_us), vec![]),
        Work::Free => Cost::on(ns(m.free_us), vec![]),
        // On its device, so it starts when the device's queue ends.
        Work::Sync(d) => Cost::on(ns(m.sync_us), vec![*d]),
        Work::EventSync(at) => Cost { not_before: *at, ..Cost::on(ns(m.sync_us), vec![]) },
        Work::Kernel { device, traffic: t } => {
            let rate = |count: u64, per_s: f64| if per_s > 0.0 { (count as f64 / per_s * 1e9) as Nanos } else { 0 };
            let time = [
                ns(m.launch_us),
                Latencies::transfer(t.local.bytes, m.local_gbps),
                Latencies::transfer(t.peer.bytes, m.peer_kernel_gbps),
                rate(t.local.atomics, m.atomics_local_per_s),
                rate(t.peer.atomics, m.atomics_peer_per_s),
                (t.local.loads as f64 * m.chase_local_ns + t.peer.loads as f64 * m.chase_peer_ns) as Nanos,
            ]
            .into_iter()
            .fold(0, Nanos::saturating_add);
            Cost::on(time, vec![*device]).queued(ns(m.launch_us))
        }
        // The device's engines too: another process's allocation on a GPU waited out a fault's
        // recovery there (docs/hardware/2026-12-01-one-context-probe, the first pair at once).
        Work::Fault(d) => Cost {
            teardown: Some((*d, ns(m.fault_exit_us))),
            ..Cost::on(ns(m.fault_us), vec![*d]).locked(Lock::Fault, vec![*d])
        },
        Work::Copy { device, bytes, path, queued } => {
            let gbps = match path {
                Path::Host => m.host_copy_gbps,
                Path::Local => m.local_gbps / 2.0, // read and write on one device
                Path::Peer => m.peer_copy_gbps,
            };
            let cost = Cost::on(ns(m.copy_us).saturating_add(Latencies::transfer(*bytes, gbps)), vec![*device]);
            if *queued { cost.queued(ns(m.copy_us)) } else { cost }
        }
        Work::Memset { device, bytes } => {
            let time = ns(m.memset_us).saturating_add(Latencies::transfer(*bytes, m.local_gbps));
            Cost::on(time, vec![*device]).queued(ns(m.memset_us))
        }
    }
}

/// What [`price`] gives [`Work::Call`] and [`Work::ContextSwitch`] under one model, priced when
/// the model is set: most calls are these, and [`super::ProcessTime::pass`] runs them without
/// the machine's lock. Shared by the processes that share a machine, as its model is.
#[derive(Debug)]
pub(crate) struct LaneCosts {
    call: AtomicU64,
    context_switch: AtomicU64,
}

impl LaneCosts {
    pub(crate) fn of(m: &Latencies) -> LaneCosts {
        LaneCosts { call: AtomicU64::new(ns(m.call_us)), context_switch: AtomicU64::new(ns(m.context_switch_us)) }
    }

    /// Prices `m`'s calls from now on.
    pub(crate) fn set(&self, m: &Latencies) {
        let LaneCosts { call, context_switch } = LaneCosts::of(m);
        self.call.store(call.into_inner(), Ordering::Relaxed);
        self.context_switch.store(context_switch.into_inner(), Ordering::Relaxed);
    }

    /// `work`'s time, when it is one of these calls.
    #[inline]
    pub(crate) fn of_work(&self, work: &Work) -> Option<Nanos> {
        match work {
            Work::Call => Some(self.call.load(Ordering::Relaxed)),
            Work::ContextSwitch => Some(self.context_switch.load(Ordering::Relaxed)),
            _ => None,
        }
    }
}
