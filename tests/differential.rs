//! The simulator against the real driver, step by step.
//!
//! Each scenario is a fixed list of driver operations on symbolic handles (pool #i, pointer
//! #j), run on the real driver (`System::open()`) and on `SimDriver` with
//! `Topology::two_h200()`. After every step the two results (Ok and its value, or the
//! `CudaCode` name) and every live pool's access table are compared; a scenario fails with
//! each differing step and both answers. Needs two GPUs: elsewhere every trial is listed as
//! ignored with the reason.
//!
//! Nothing here faults a kernel or passes a destroyed pool handle to the driver: either would
//! end (or crash) the real process.
//!
//! Self-check without GPUs: `PEERPOOL_TOPOLOGY=<catalog topology>` makes a simulator on that
//! topology stand in for the real driver (`two_h200_nvlink` must pass, `one_way_pair` must
//! fail), as for every suite on `peerpool_fixtures`.
//!
//! The record: the driver under test is wrapped in the fault injector's recorder, which keeps
//! `call => result` for every call. On the H200s, `PEERPOOL_RECORD_OUT=<dir>` writes each
//! scenario's record there; it is committed as `docs/hardware/recorded/<scenario>.txt`. Every
//! other run (the libcuda shim in CI) compares its record with the committed one, call by call.

use peerpool::driver::{
    Access, AccessDesc, Context, DeviceAttribute, DevicePtr, Driver, HandleKinds, P2pAttribute, PeerCopy,
    PointerAttribute, Pool, PoolProps, Stream,
};
use peerpool::fault::FaultInjector;
use peerpool::{CudaError, System};
use peerpool_fixtures::{Failed, Needs, machine_test};
use peerpool_sim::{SimDriver, Topology};
use std::sync::Arc;

/// An address that is no device memory.
#[derive(Clone, Copy, Debug)]
enum Foreign {
    Null,
    Low,
    Host,
}

/// One driver operation on symbolic handles. Pools and pointers are numbered in the order the
/// steps make them, on both sides alike (a failed make still takes its number).
#[derive(Clone, Debug)]
enum Step {
    Facts,
    Create {
        owner: i32,
        types: u32,
    },
    Default {
        device: i32,
    },
    Destroy {
        pool: usize,
    },
    SetAccess {
        pool: usize,
        map: Vec<(i32, Access)>,
    },
    NullPoolSetAccess,
    NullPoolGetAccess,
    SetCurrentPool {
        device: i32,
        pool: usize,
    },
    CurrentPoolIs {
        device: i32,
        pool: usize,
    },
    Alloc {
        pool: usize,
        bytes: usize,
    },
    AllocLegacy {
        bytes: usize,
    },
    Free {
        ptr: usize,
    },
    FreeLegacy {
        ptr: usize,
    },
    Attributes {
        ptr: usize,
        offset: u64,
    },
    ForeignAttributes {
        addr: Foreign,
    },
    HtoD {
        ptr: usize,
        bytes: usize,
    },
    DtoH {
        ptr: usize,
        bytes: usize,
    },
    DtoD {
        dst: usize,
        src: usize,
        bytes: usize,
    },
    Memset {
        ptr: usize,
        words: usize,
    },
    PeerCopy {
        dst: usize,
        src: usize,
        bytes: usize,
    },
    /// The bytes, read in the owner's context (a digest).
    Contents {
        ptr: usize,
        bytes: usize,
    },
    Sync,
}

/// A step and the device whose primary context is current for it (`None`: no context).
#[derive(Clone, Debug)]
struct Op {
    ctx: Option<usize>,
    step: Step,
}

fn on(ctx: usize, step: Step) -> Op {
    Op { ctx: Some(ctx), step }
}

fn bare(step: Step) -> Op {
    Op { ctx: None, step }
}

const RW: Access = Access::ReadWrite;
const NONE: Access = Access::None;
const MIB: usize = 1 << 20;
const KIB64: usize = 1 << 16;
/// Devices whose access every table check reads: both GPUs and ordinals that do not exist.
const TABLE_DEVICES: [i32; 5] = [0, 1, 2, 99, -1];

fn set(pool: usize, map: &[(i32, Access)]) -> Step {
    Step::SetAccess { pool, map: map.to_vec() }
}

/// Every scenario; each has its `#[machine_test]` at the end of this file.
fn scenarios() -> Vec<(&'static str, Vec<Op>)> {
    use Step::*;
    vec![
        ("facts", vec![bare(Facts)]),
        (
            "grants",
            vec![
                on(0, Create { owner: 0, types: 0 }),
                on(0, Create { owner: 1, types: 0 }),
                on(0, set(0, &[])),
                on(0, set(0, &[(0, RW)])),
                on(0, set(0, &[(0, NONE)])),
                on(0, set(0, &[(1, RW), (0, NONE)])),
                on(0, set(0, &[(0, NONE), (1, RW)])),
                on(0, set(0, &[(1, RW), (99, RW)])),
                on(0, set(0, &[(99, RW)])),
                on(0, set(0, &[(-1, RW)])),
                on(0, set(0, &[(2, RW)])),
                on(0, set(0, &[(1, Access::Read)])),
                on(0, set(0, &[(0, Access::Read)])),
                on(0, set(0, &[(1, RW)])),
                on(0, set(0, &[(1, RW)])),
                on(0, set(0, &[(1, RW), (1, NONE)])),
                on(0, set(0, &[(1, NONE), (1, RW)])),
                on(0, set(0, &[(1, NONE)])),
                on(0, set(0, &[(1, NONE)])),
                on(1, set(0, &[(1, RW)])),
                on(1, set(0, &[(1, NONE)])),
                on(0, set(1, &[(0, RW)])),
                on(0, set(1, &[(0, RW), (1, RW)])),
                on(0, set(1, &[(1, NONE), (0, NONE)])),
                on(0, set(1, &[(0, NONE)])),
                on(0, NullPoolSetAccess),
                on(0, NullPoolGetAccess),
                on(0, Create { owner: 0, types: 0x1 }),
                on(0, set(2, &[(1, RW)])),
                on(0, Alloc { pool: 2, bytes: MIB }),
                on(0, set(2, &[(1, NONE)])),
                on(0, set(2, &[(1, RW)])),
                on(0, Free { ptr: 0 }),
                on(0, set(2, &[(1, NONE)])),
            ],
        ),
        (
            "pools",
            vec![
                on(0, Default { device: 0 }),
                on(0, Default { device: 1 }),
                on(0, CurrentPoolIs { device: 0, pool: 0 }),
                on(0, CurrentPoolIs { device: 1, pool: 1 }),
                on(0, Create { owner: 0, types: 0 }),
                on(0, Create { owner: 0, types: 0 }),
                on(0, set(2, &[(1, RW)])),
                on(0, SetCurrentPool { device: 0, pool: 3 }),
                on(0, CurrentPoolIs { device: 0, pool: 3 }),
                on(0, SetCurrentPool { device: 1, pool: 2 }),
                on(0, CurrentPoolIs { device: 1, pool: 1 }),
                on(0, SetCurrentPool { device: 0, pool: 0 }),
                on(0, CurrentPoolIs { device: 0, pool: 0 }),
                on(0, set(0, &[(1, RW)])),
                on(0, set(0, &[(1, NONE)])),
                on(0, Create { owner: 99, types: 0 }),
                on(0, Create { owner: -1, types: 0 }),
                on(0, Create { owner: 0, types: 0x1 }),
                on(0, Create { owner: 0, types: 0x9 }),
                on(1, Create { owner: 1, types: 0x8 }),
                on(0, Default { device: 99 }),
                on(0, Destroy { pool: 3 }),
                on(0, Create { owner: 0, types: 0 }),
                on(0, SetCurrentPool { device: 0, pool: 2 }),
                on(0, Destroy { pool: 2 }),
                on(0, CurrentPoolIs { device: 0, pool: 0 }),
            ],
        ),
        (
            "pointer_attributes",
            vec![
                on(0, Create { owner: 0, types: 0 }),
                on(0, Create { owner: 0, types: 0x1 }),
                on(0, Alloc { pool: 0, bytes: MIB }),
                on(0, Alloc { pool: 1, bytes: MIB }),
                on(0, AllocLegacy { bytes: MIB }),
                on(0, Alloc { pool: 0, bytes: 0 }),
                on(0, Attributes { ptr: 0, offset: 0 }),
                on(0, Attributes { ptr: 0, offset: 4096 }),
                on(0, Attributes { ptr: 1, offset: 0 }),
                on(0, Attributes { ptr: 2, offset: 0 }),
                on(0, Attributes { ptr: 2, offset: 4096 }),
                on(0, ForeignAttributes { addr: Foreign::Null }),
                on(0, ForeignAttributes { addr: Foreign::Low }),
                on(0, ForeignAttributes { addr: Foreign::Host }),
                on(1, Default { device: 1 }),
                on(1, Alloc { pool: 2, bytes: 4096 }),
                on(1, Attributes { ptr: 4, offset: 0 }),
                on(0, Free { ptr: 0 }),
                on(0, Attributes { ptr: 0, offset: 0 }),
                on(0, Free { ptr: 0 }),
                on(0, FreeLegacy { ptr: 2 }),
                on(0, Attributes { ptr: 2, offset: 0 }),
            ],
        ),
        (
            "copies",
            vec![
                on(0, Create { owner: 0, types: 0 }),
                on(0, Create { owner: 0, types: 0 }),
                on(1, Default { device: 1 }),
                on(0, set(0, &[(1, RW)])),
                on(0, Alloc { pool: 0, bytes: KIB64 }),
                on(0, Alloc { pool: 1, bytes: KIB64 }),
                on(1, Alloc { pool: 2, bytes: KIB64 }),
                on(0, HtoD { ptr: 0, bytes: KIB64 }),
                on(0, HtoD { ptr: 1, bytes: KIB64 }),
                on(1, Sync),
                on(1, DtoD { dst: 2, src: 0, bytes: KIB64 }),
                on(1, Contents { ptr: 2, bytes: KIB64 }),
                on(1, Memset { ptr: 2, words: 1024 }),
                on(1, DtoD { dst: 0, src: 2, bytes: KIB64 }),
                on(0, Contents { ptr: 0, bytes: KIB64 }),
                on(1, DtoD { dst: 2, src: 1, bytes: KIB64 }),
                on(1, DtoD { dst: 1, src: 2, bytes: KIB64 }),
                on(1, Sync),
                on(1, PeerCopy { dst: 2, src: 1, bytes: KIB64 }),
                on(1, Contents { ptr: 2, bytes: KIB64 }),
                on(1, Memset { ptr: 2, words: 16 }),
                on(1, PeerCopy { dst: 1, src: 2, bytes: KIB64 }),
                on(0, Contents { ptr: 1, bytes: KIB64 }),
                on(1, Memset { ptr: 1, words: 16 }),
                on(1, Memset { ptr: 0, words: 16 }),
                on(0, Contents { ptr: 0, bytes: 256 }),
                on(1, DtoH { ptr: 1, bytes: 16 }),
                on(1, HtoD { ptr: 1, bytes: 16 }),
                on(1, DtoH { ptr: 0, bytes: 256 }),
                on(1, HtoD { ptr: 0, bytes: 256 }),
                on(0, set(0, &[(1, NONE)])),
                on(1, DtoD { dst: 2, src: 0, bytes: KIB64 }),
                on(1, DtoH { ptr: 0, bytes: 16 }),
                on(0, DtoD { dst: 1, src: 0, bytes: KIB64 }),
                on(0, Contents { ptr: 1, bytes: KIB64 }),
                on(1, Free { ptr: 0 }),
                on(0, Free { ptr: 1 }),
                on(1, Free { ptr: 2 }),
            ],
        ),
        (
            // Where the simulator's rules are a guess: cuMemAlloc memory of another device.
            "legacy_copies",
            vec![
                on(0, AllocLegacy { bytes: KIB64 }),
                on(1, Default { device: 1 }),
                on(1, Alloc { pool: 0, bytes: KIB64 }),
                on(0, HtoD { ptr: 0, bytes: KIB64 }),
                on(1, DtoD { dst: 1, src: 0, bytes: KIB64 }),
                on(1, PeerCopy { dst: 1, src: 0, bytes: KIB64 }),
                on(1, Contents { ptr: 1, bytes: KIB64 }),
                on(1, DtoH { ptr: 0, bytes: 16 }),
                on(1, Memset { ptr: 0, words: 16 }),
                on(0, FreeLegacy { ptr: 0 }),
                on(1, Free { ptr: 1 }),
            ],
        ),
        (
            // Which calls need a current context (the simulator's answers here are a guess).
            "without_context",
            vec![
                bare(Create { owner: 0, types: 0 }),
                bare(set(0, &[(1, RW)])),
                bare(set(0, &[(1, NONE)])),
                bare(Default { device: 1 }),
                bare(CurrentPoolIs { device: 1, pool: 1 }),
                bare(Alloc { pool: 0, bytes: 4096 }),
                bare(AllocLegacy { bytes: 4096 }),
                bare(Sync),
                bare(ForeignAttributes { addr: Foreign::Null }),
            ],
        ),
    ]
}

/// A pool a step made or looked up.
#[derive(Clone, Copy)]
struct PoolSlot {
    pool: Pool,
    owner: i32,
    /// Made by `cuMemPoolCreate` (destroyed at the end), not a device's default pool.
    created: bool,
    destroyed: bool,
}

/// One driver and the handles its steps made.
struct Side {
    driver: Arc<dyn Driver>,
    contexts: Vec<Context>,
    pools: Vec<Option<PoolSlot>>,
    /// Address, owner device, `cuMemAlloc` memory.
    ptrs: Vec<Option<(DevicePtr, i32, bool)>>,
}

/// `"ok <value>"` or `"err <CudaCode name>"`.
fn show<T: std::fmt::Debug>(r: Result<T, CudaError>) -> String {
    match r {
        Ok(v) => format!("ok {v:?}"),
        Err(e) => format!("err {}", e.code_name()),
    }
}

/// Bytes the host writes: the same on both sides, different per pointer.
fn host_bytes(ptr: usize, bytes: usize) -> Vec<u8> {
    (0..bytes).map(|i| (i * 7 + ptr * 31 + 1) as u8).collect()
}

/// FNV-1a: a short, deterministic digest of a buffer.
fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

impl Side {
    fn open(driver: Arc<dyn Driver>) -> Result<Side, String> {
        let n = driver.device_get_count().map_err(|e| e.to_string())?;
        let contexts =
            (0..n).map(|d| driver.primary_ctx_retain(d)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
        Ok(Side { driver, contexts, pools: Vec::new(), ptrs: Vec::new() })
    }

    /// Pool #i, unless it was not made or was destroyed (its handle must never reach a driver).
    fn slot(&self, i: usize) -> Option<PoolSlot> {
        self.pools.get(i).copied().flatten().filter(|s| !s.destroyed)
    }

    fn pool(&self, i: usize) -> Option<Pool> {
        self.slot(i).map(|s| s.pool)
    }

    fn ptr(&self, i: usize) -> Option<(DevicePtr, i32, bool)> {
        self.ptrs.get(i).copied().flatten()
    }

    fn enter(&self, device: Option<usize>) -> Result<(), CudaError> {
        // SAFETY: the primary contexts retained in `open`, released only in `close`.
        unsafe { self.driver.ctx_set_current(device.map(|d| self.contexts[d])) }
    }

    /// Synchronises the current context after a successful asynchronous call.
    fn then_sync(&self, r: Result<(), CudaError>) -> String {
        show(r.and_then(|()| self.driver.ctx_synchronize()))
    }

    fn run(&mut self, op: &Op) -> String {
        if let Err(e) = self.enter(op.ctx) {
            return format!("entering the context: err {}", e.code_name());
        }
        let d = self.driver.clone();
        let missing = "skipped: its handle was not made";
        // SAFETY: the scripts keep the seam's contract on the real driver: every handle comes
        // from an earlier step and is used while live (`slot` hides destroyed pools), and every
        // range is inside an allocation a step made. The deliberate exceptions (a null pool
        // handle, a read past an allocation's end) are refused by the driver, as measured on
        // the H200s; nothing here faults a kernel or passes a destroyed pool.
        unsafe {
            match op.step {
                Step::Facts => self.facts(),
                Step::Create { owner, types } => {
                    let r =
                        d.mem_pool_create(&PoolProps { device: owner, handle_types: HandleKinds(types), max_size: 0 });
                    self.pools.push(r.as_ref().ok().map(|&pool| PoolSlot {
                        pool,
                        owner,
                        created: true,
                        destroyed: false,
                    }));
                    show(r.map(|_| ()))
                }
                Step::Default { device } => {
                    let r = d.device_get_default_mem_pool(device);
                    let slot = |&pool| PoolSlot { pool, owner: device, created: false, destroyed: false };
                    self.pools.push(r.as_ref().ok().map(slot));
                    show(r.map(|_| ()))
                }
                Step::Destroy { pool } => {
                    let Some(p) = self.pool(pool) else { return missing.into() };
                    let r = d.mem_pool_destroy(p);
                    if let (Ok(()), Some(Some(slot))) = (&r, self.pools.get_mut(pool)) {
                        slot.destroyed = true;
                    }
                    show(r)
                }
                Step::SetAccess { pool, ref map } => {
                    let Some(p) = self.pool(pool) else { return missing.into() };
                    let map: Vec<AccessDesc> =
                        map.iter().map(|&(device, access)| AccessDesc { device, access }).collect();
                    show(d.mem_pool_set_access(p, &map))
                }
                Step::NullPoolSetAccess => {
                    show(d.mem_pool_set_access(Pool(0), &[AccessDesc { device: 1, access: RW }]))
                }
                Step::NullPoolGetAccess => show(d.mem_pool_get_access(Pool(0), 1)),
                Step::SetCurrentPool { device, pool } => {
                    let Some(p) = self.pool(pool) else { return missing.into() };
                    show(d.device_set_mem_pool(device, p))
                }
                Step::CurrentPoolIs { device, pool } => {
                    let want = self.pools.get(pool).copied().flatten().map(|s| s.pool);
                    show(d.device_get_mem_pool(device).map(|p| Some(p) == want))
                }
                Step::Alloc { pool, bytes } => {
                    let Some(slot) = self.slot(pool) else { return missing.into() };
                    let r = d.mem_alloc_from_pool_async(bytes, slot.pool, Stream::LEGACY);
                    self.ptrs.push(r.as_ref().ok().filter(|p| p.0 != 0).map(|&p| (p, slot.owner, false)));
                    let sync = if r.is_ok() { d.ctx_synchronize().err() } else { None };
                    format!(
                        "{}{}",
                        show(r.map(|p| p.0 == 0)),
                        sync.map_or(String::new(), |e| format!("; sync err {}", e.code_name()))
                    )
                }
                Step::AllocLegacy { bytes } => {
                    let r = d.mem_alloc(bytes);
                    self.ptrs.push(r.as_ref().ok().map(|&p| (p, op.ctx.map_or(-1, |c| c as i32), true)));
                    show(r.map(|_| ()))
                }
                Step::Free { ptr } => {
                    let Some((p, ..)) = self.ptr(ptr) else { return missing.into() };
                    self.then_sync(d.mem_free_async(p, Stream::LEGACY))
                }
                Step::FreeLegacy { ptr } => {
                    let Some((p, ..)) = self.ptr(ptr) else { return missing.into() };
                    show(d.mem_free(p))
                }
                Step::Attributes { ptr, offset } => {
                    let Some((p, ..)) = self.ptr(ptr) else { return missing.into() };
                    self.attributes(p.offset(offset))
                }
                Step::ForeignAttributes { addr } => {
                    let host = [0u8; 64];
                    let raw = match addr {
                        Foreign::Null => 0,
                        Foreign::Low => 0x1000,
                        Foreign::Host => host.as_ptr() as u64,
                    };
                    self.attributes(DevicePtr(raw))
                }
                Step::HtoD { ptr, bytes } => {
                    let Some((p, ..)) = self.ptr(ptr) else { return missing.into() };
                    self.then_sync(d.memcpy_htod(p, &host_bytes(ptr, bytes)))
                }
                Step::DtoH { ptr, bytes } => {
                    let Some((p, ..)) = self.ptr(ptr) else { return missing.into() };
                    let mut out = vec![0u8; bytes];
                    show(d.memcpy_dtoh(&mut out, p).map(|()| format!("{:#x}", digest(&out))))
                }
                Step::DtoD { dst, src, bytes } => {
                    let (Some((to, ..)), Some((from, ..))) = (self.ptr(dst), self.ptr(src)) else {
                        return missing.into();
                    };
                    self.then_sync(d.memcpy_dtod_async(to, from, bytes, Stream::LEGACY))
                }
                Step::Memset { ptr, words } => {
                    let Some((p, ..)) = self.ptr(ptr) else { return missing.into() };
                    self.then_sync(d.memset_d32_async(p, 0xA5A5_0000 + ptr as u32, words, Stream::LEGACY))
                }
                Step::PeerCopy { dst, src, bytes } => {
                    let (Some((to, to_dev, _)), Some((from, from_dev, _))) = (self.ptr(dst), self.ptr(src)) else {
                        return missing.into();
                    };
                    let (Some(&dst_ctx), Some(&src_ctx)) =
                        (self.contexts.get(to_dev as usize), self.contexts.get(from_dev as usize))
                    else {
                        return "skipped: owner unknown".into();
                    };
                    self.then_sync(
                        d.memcpy_peer_async(PeerCopy { dst: to, dst_ctx, src: from, src_ctx, bytes }, Stream::LEGACY),
                    )
                }
                Step::Contents { ptr, bytes } => {
                    let Some((p, owner, _)) = self.ptr(ptr) else { return missing.into() };
                    let mut out = vec![0u8; bytes];
                    let read = self.enter(Some(owner as usize)).and_then(|()| d.memcpy_dtoh(&mut out, p));
                    show(read.map(|()| format!("{:#x}", digest(&out))))
                }
                Step::Sync => show(d.stream_synchronize(Stream::LEGACY)),
            }
        }
    }

    /// Every attribute peerpool reads, with handles and addresses made symbolic.
    fn attributes(&self, ptr: DevicePtr) -> String {
        use PointerAttribute::*;
        let attributes =
            [DeviceOrdinal, MempoolHandle, IsLegacyCudaIpcCapable, AllowedHandleTypes, RangeStartAddr, RangeSize];
        let values: Vec<String> = attributes
            .into_iter()
            .map(|a| match self.driver.pointer_get_attribute(ptr, a) {
                Ok(0) if a == MempoolHandle => "pool null".into(),
                Ok(v) if a == MempoolHandle => {
                    match self.pools.iter().position(|s| s.is_some_and(|s| s.pool == Pool(v))) {
                        Some(i) => format!("pool #{i}"),
                        None => "an unknown pool".into(),
                    }
                }
                Ok(v) if a == RangeStartAddr => match self.ptrs.iter().position(|p| p.is_some_and(|p| p.0.0 == v)) {
                    Some(i) => format!("start ptr #{i}"),
                    None => "start unknown".into(),
                },
                r => format!("{a:?} {}", show(r)),
            })
            .collect();
        values.join(", ")
    }

    /// Devices, attributes (PCI bus ids excepted: the simulator's are synthetic) and the peer matrix.
    fn facts(&self) -> String {
        use DeviceAttribute::*;
        let d = &self.driver;
        let mut out =
            vec![format!("version {}", show(d.driver_get_version())), format!("count {}", show(d.device_get_count()))];
        for dev in [0, 1, 2] {
            out.push(format!("{dev} name {}", show(d.device_get_name(dev))));
            out.push(format!("{dev} memory {}", show(d.device_total_mem(dev))));
            for a in [ComputeCapabilityMajor, ComputeCapabilityMinor, MultiprocessorCount, MemoryPoolsSupported] {
                out.push(format!("{dev} {a:?} {}", show(d.device_get_attribute(dev, a))));
            }
            for a in [MempoolSupportedHandleTypes, UnifiedAddressing] {
                out.push(format!("{dev} {a:?} {}", show(d.device_get_attribute(dev, a))));
            }
            for peer in [0, 1, 2] {
                out.push(format!("{dev}->{peer} can access {}", show(d.device_can_access_peer(dev, peer))));
                for a in
                    [P2pAttribute::AccessSupported, P2pAttribute::NativeAtomicSupported, P2pAttribute::PerformanceRank]
                {
                    out.push(format!("{dev}->{peer} {a:?} {}", show(d.device_get_p2p_attribute(a, dev, peer))));
                }
            }
        }
        out.join("\n")
    }

    /// Every live pool's access for each of [`TABLE_DEVICES`].
    fn tables(&self) -> Vec<String> {
        let live = (0..self.pools.len()).filter_map(|i| self.pool(i).map(|p| (i, p)));
        live.flat_map(|(i, p)| {
            TABLE_DEVICES
                // SAFETY: `self.pool` yields live pools only.
                .map(|dev| {
                    format!("pool #{i} device {dev}: {}", show(unsafe { self.driver.mem_pool_get_access(p, dev) }))
                })
        })
        .collect()
    }

    /// Frees, revokes, destroys and restores what the steps left, then releases the contexts.
    fn close(self) {
        let d = &self.driver;
        // SAFETY: what the steps made and did not destroy, released once, then the contexts
        // retained in `open`.
        unsafe {
            for (p, owner, legacy) in self.ptrs.iter().flatten().copied() {
                if self.enter(Some(owner.max(0) as usize)).is_ok() {
                    let _ = if legacy { d.mem_free(p) } else { d.mem_free_async(p, Stream::LEGACY) };
                    let _ = d.ctx_synchronize();
                }
            }
            for (device, &context) in self.contexts.iter().enumerate() {
                let _ = d.ctx_set_current(Some(context));
                if let Ok(default) = d.device_get_default_mem_pool(device as i32) {
                    let _ = d.device_set_mem_pool(device as i32, default);
                }
            }
            for slot in self.pools.iter().flatten().filter(|s| !s.destroyed) {
                let revoke: Vec<AccessDesc> = (0..self.contexts.len() as i32)
                    .filter(|&dev| dev != slot.owner && d.mem_pool_get_access(slot.pool, dev).is_ok_and(|a| a != NONE))
                    .map(|device| AccessDesc { device, access: NONE })
                    .collect();
                if !revoke.is_empty() {
                    let _ = d.mem_pool_set_access(slot.pool, &revoke);
                }
                if slot.created {
                    let _ = d.mem_pool_destroy(slot.pool);
                }
            }
            let _ = d.ctx_set_current(None);
            for device in 0..self.contexts.len() {
                let _ = d.primary_ctx_release(device as i32);
            }
        }
    }
}

/// The lines of `a` that `b` lacks.
fn only(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|l| !b.contains(l)).cloned().collect()
}

/// Where the committed record of `scenario` lives in the checkout the tests run from.
fn committed_record(scenario: &str) -> Option<std::path::PathBuf> {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")?;
    Some(std::path::Path::new(&manifest).join("../docs/hardware/recorded").join(format!("{scenario}.txt")))
}

/// Writes the record (on the GPU machine) or compares it with the committed one.
fn check_record(scenario: &str, record: &[String]) -> Result<(), Failed> {
    if let Some(dir) = std::env::var_os("PEERPOOL_RECORD_OUT") {
        let path = std::path::Path::new(&dir).join(format!("{scenario}.txt"));
        std::fs::create_dir_all(&dir)?;
        return Ok(std::fs::write(path, record.join("\n") + "\n")?);
    }
    let Some(text) = committed_record(scenario).and_then(|p| std::fs::read_to_string(p).ok()) else { return Ok(()) };
    let committed: Vec<&str> = text.lines().collect();
    let differing: Vec<String> = (0..committed.len().max(record.len()))
        .filter(|&i| committed.get(i).copied() != record.get(i).map(String::as_str))
        .map(|i| format!("call {i}: hardware {:?}, here {:?}", committed.get(i), record.get(i)))
        .collect();
    match differing.is_empty() {
        true => Ok(()),
        false => {
            Err(format!("the record differs from the H200s' ({} calls):\n{}", differing.len(), differing.join("\n"))
                .into())
        }
    }
}

/// Runs `ops` on both drivers; returns every difference, step by step, and checks the record of
/// the driver under test.
fn compare(scenario: &str, real: Arc<dyn Driver>, sim: Arc<dyn Driver>, ops: &[Op]) -> Result<(), Failed> {
    let recorder = Arc::new(FaultInjector::recording(real));
    let mut real = Side::open(recorder.clone()).map_err(|e| format!("opening the real driver: {e}"))?;
    let mut sim = Side::open(sim).map_err(|e| format!("opening the simulator: {e}"))?;
    let mut differences = Vec::new();
    for (k, op) in ops.iter().enumerate() {
        let (r, s) = (real.run(op), sim.run(op));
        if r != s && r.contains('\n') {
            let (rl, sl): (Vec<String>, Vec<String>) =
                (r.lines().map(Into::into).collect(), s.lines().map(Into::into).collect());
            differences.push(format!(
                "step {k} {op:?}:\n    real only: {:?}\n    sim only:  {:?}",
                only(&rl, &sl),
                only(&sl, &rl)
            ));
        } else if r != s {
            differences.push(format!("step {k} {op:?}:\n    real: {r}\n    sim:  {s}"));
        }
        let (rt, st) = (real.tables(), sim.tables());
        if rt != st {
            differences.push(format!(
                "after step {k} {op:?}, access tables:\n    real only: {:?}\n    sim only:  {:?}",
                only(&rt, &st),
                only(&st, &rt)
            ));
        }
    }
    real.close();
    sim.close();
    check_record(scenario, &recorder.ledger().outcomes())?;
    if differences.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} difference(s) between the real driver and the simulator:\n{}",
            differences.len(),
            differences.join("\n")
        )
        .into())
    }
}

/// Runs scenario `name` on `system`'s driver against a simulated 2 x H200.
fn scenario(system: &System, name: &str) -> Result<(), Failed> {
    let (_, ops) = scenarios().into_iter().find(|(n, _)| *n == name).ok_or("no such scenario")?;
    let sim: Arc<dyn Driver> = Arc::new(SimDriver::new(Topology::two_h200()));
    compare(name, system.driver().clone(), sim, &ops)
}

/// A machine test named `$name` that runs scenario `$name`. One invocation a line: `line!()` in
/// a macro's output is the invocation's line, and the registry orders trials by file and line
/// (then name), so scenarios listed in one invocation would run in alphabetical order.
macro_rules! scenario_test {
    ($name:ident) => {
        #[machine_test(needs = Needs::gpus(2))]
        fn $name(system: &System) -> Result<(), Failed> {
            scenario(system, stringify!($name))
        }
    };
}

scenario_test!(facts);
scenario_test!(grants);
scenario_test!(pools);
scenario_test!(pointer_attributes);
scenario_test!(copies);
scenario_test!(legacy_copies);
scenario_test!(without_context);

peerpool_fixtures::main!();
