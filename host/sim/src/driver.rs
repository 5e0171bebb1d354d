//! [`SimDriver`]: the [`Driver`] seam answered from a [`Topology`] and the simulator's state.

use super::kernels;
use super::memory::{ALIGN, Exhausted, Origin};
use super::state::{EventRec, Fail, PoolPlace, SimResult, State};
use super::timing::{self, LaneCosts, Latencies, Machine, Path, ProcessTime, Work};
use super::topology::Topology;
use super::{copies, modules, pools, ptx_kernels, share, vmm};
use cudarc::driver::sys::CUevent_flags_enum as EventFlag;
use peerpool::CudaCode;
use peerpool::CudaError;
use peerpool::driver::*;
use std::ffi::CStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How the simulator departs from the measured driver, on purpose.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimOptions {
    /// A new pool takes the handle of the last destroyed pool, with that pool's access table
    /// still attached: the driver bug nvbug 5698116 (seen on other drivers, not on the recorded
    /// H200s), for tests of code that must survive it.
    pub recycle_pool_handles: bool,
}

/// What is live in the simulator, for leak checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Pools created and not destroyed, default pools included.
    pub pools: usize,
    /// Allocations not freed (pool and `cuMemAlloc`).
    pub allocations: usize,
    /// Their bytes.
    pub allocated_bytes: u64,
    /// Loaded modules.
    pub modules: usize,
    /// Created streams.
    pub streams: usize,
    /// Primary-context retains not released, over all devices.
    pub context_retains: u32,
    /// `cuMemCreate` and imported allocations not yet released and unmapped.
    pub physical_allocations: usize,
    /// `cuMemAddressReserve` ranges not freed.
    pub reservations: usize,
}

/// A simulated multi-GPU CUDA driver. Deterministic, `Send + Sync` (one lock inside), and
/// proportional in cost to the bytes each call moves.
///
/// Every call also advances a virtual clock by what it would have taken on real GPUs
/// ([`crate::timing`]; the H200 calibration unless [`SimDriver::timed`] names another): the
/// driver's [`Timeline`] gives each thread's time and the projected wall time.
pub struct SimDriver {
    state: Mutex<State>,
    /// The clock's part shared with forked processes: devices, machine-wide locks, the model.
    machine: Arc<Mutex<Machine>>,
    /// The machine's model's price of the calls that only move a lane, read without its lock.
    lane_costs: Arc<LaneCosts>,
}

impl SimDriver {
    /// The machine `topology` describes, behaving as the measured driver does.
    pub fn new(topology: Topology) -> SimDriver {
        SimDriver::with_options(topology, SimOptions::default())
    }

    /// With deliberate departures (see [`SimOptions`]).
    pub fn with_options(topology: Topology, options: SimOptions) -> SimDriver {
        SimDriver::built(topology, options, Latencies::h200())
    }

    fn built(topology: Topology, options: SimOptions, model: Latencies) -> SimDriver {
        let n = topology.device_count();
        let timing = ProcessTime::new(timing::us(model.process_start_us), n);
        SimDriver {
            state: Mutex::new(State::new(topology, options.recycle_pool_handles, timing)),
            lane_costs: Arc::new(LaneCosts::of(&model)),
            machine: Arc::new(Mutex::new(Machine::new(model, n))),
        }
    }

    /// The same machine, timed by `model` instead of the H200 calibration. Meant right after
    /// construction: the clock restarts at the model's process start.
    pub fn timed(self, model: Latencies) -> SimDriver {
        let n = self.lock().count();
        self.lock().timing = ProcessTime::new(timing::us(model.process_start_us), n);
        self.lane_costs.set(&model);
        *self.machine() = Machine::new(model, n);
        self
    }

    /// The timing model in use.
    pub fn latencies(&self) -> Latencies {
        self.machine().model.clone()
    }

    /// A new process on the same machine, as a parent starts a child program (what
    /// `peerpool check` and the fixtures start for a negative probe): its own simulator state,
    /// empty (no context, pool or memory of this one; the same topology and options), and on
    /// the clock a child started by the calling thread now, after the model's process start,
    /// which calls `cuInit` at once and shares the machine's devices and machine-wide locks
    /// with this process. [`SimDriver::wait_for`] puts the parent's thread at its end.
    pub fn child_process(&self) -> SimDriver {
        let visible = self.lock().count();
        self.child_process_seeing(visible)
    }

    /// [`SimDriver::child_process`] for a child started with only `visible` GPUs visible
    /// (`peerpool check` starts a negative probe's child seeing its pair): its `cuInit` is
    /// priced for that many. It keeps this process's numbering, since the caller runs the
    /// child's work in process with this process's ordinals.
    pub fn child_process_seeing(&self, visible: usize) -> SimDriver {
        let start = timing::us(self.machine().model.process_start_us);
        let state = {
            let parent = self.lock();
            State::new(parent.topo.clone(), parent.recycle, parent.timing.child(start))
        };
        let child =
            SimDriver { state: Mutex::new(state), machine: self.machine.clone(), lane_costs: self.lane_costs.clone() };
        // A new process is alive: its cuInit succeeds.
        let _ = child.run("cuInit", |s| {
            s.work = Some(Work::Init(visible.clamp(1, s.count().max(1))));
            Ok(())
        });
        child
    }

    /// After `child` (a [`SimDriver::fork`] or [`SimDriver::child_process`] of this one) has
    /// done its work: the calling thread waits for the child's last call and its exit (a
    /// faulted one's when a sticky error killed it), as a parent waiting for a child process.
    pub fn wait_for(&self, child: &SimDriver) {
        let last = child.lock().timing.latest();
        let end = Duration::from_nanos(last) + child.exit();
        let end = u64::try_from(end.as_nanos()).unwrap_or(u64::MAX);
        let mut state = self.lock();
        let now = state.timing.now();
        state.timing.set_now(now.max(end));
    }

    /// What this process's exit takes: a clean one's, or one whose context a fault killed.
    fn exit(&self) -> Duration {
        let dead = self.lock().dead.is_some();
        let model = &self.machine().model;
        Duration::from_nanos(timing::us(if dead { model.fault_exit_us } else { model.process_exit_us }))
    }

    fn machine(&self) -> MutexGuard<'_, Machine> {
        self.machine.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A destroyed pool's handle answers `CUDA_ERROR_INVALID_HANDLE` and is named once on
    /// stderr, instead of panicking: for the libcuda shim, inside programs of any language.
    pub fn refusing_destroyed_pools(self) -> SimDriver {
        self.lock().destroyed_pool_panics = false;
        self
    }

    /// Makes a new pool reuse the last destroyed handle with its old access table.
    pub fn recycling_pool_handles(self) -> SimDriver {
        self.lock().recycle = true;
        self
    }

    /// The CUDA version the simulated driver answers (`cuDriverGetVersion`), without a call.
    pub fn driver_version(&self) -> i32 {
        self.lock().topo.driver_version
    }

    /// The topology simulated.
    pub fn topology(&self) -> Topology {
        self.lock().topo.clone()
    }

    /// The sticky error that killed the simulated process, if a kernel faulted.
    pub fn sticky_error(&self) -> Option<CudaCode> {
        self.lock().dead
    }

    /// What is live now.
    pub fn stats(&self) -> SimStats {
        let s = self.lock();
        let (allocations, allocated_bytes) = s.memory.totals();
        SimStats {
            pools: s.live_pool_count(),
            allocations,
            allocated_bytes,
            modules: s.modules.len(),
            streams: s.streams.len(),
            context_retains: s.retained_contexts(),
            physical_allocations: s.shares.physical.len(),
            reservations: s.memory.reservation_count(),
        }
    }

    /// A copy of the simulated process as it is now, as `fork(2)` would make it: same handles,
    /// addresses, bytes, grants and retains, and the calling thread's current context. What
    /// happens in one (a sticky fault, a grant) never reaches the other, so a negative probe
    /// can kill the fork and leave this one alive. Costs a copy of every allocated byte.
    ///
    /// On the clock the fork is a child process started by the calling thread now (what a
    /// real negative probe needs, CUDA not surviving `fork`): it starts after the model's
    /// process start, calls `cuInit` at once, creates each context again on its first retain,
    /// and shares the machine's devices and machine-wide locks with this process.
    /// [`SimDriver::wait_for`] puts the parent's thread at its end.
    pub fn fork(&self) -> SimDriver {
        let start = timing::us(self.machine().model.process_start_us);
        let state = {
            let parent = self.lock();
            let mut state = parent.fork();
            state.timing = parent.timing.child(start);
            state
        };
        let child =
            SimDriver { state: Mutex::new(state), machine: self.machine.clone(), lane_costs: self.lane_costs.clone() };
        let _ = child.init(0); // a dead parent's fork is dead too: nothing to start
        child
    }

    /// The bytes at `[ptr, ptr + len)` if one allocation holds them, read directly: no
    /// context, grant or link is involved and a dead process still answers. For tests.
    pub fn peek(&self, ptr: DevicePtr, len: usize) -> Option<Vec<u8>> {
        let s = self.lock();
        let (block, offset) = s.memory.span(ptr.0, len as u64)?;
        Some(block.read(offset, len))
    }

    /// The state, its `caller` the calling thread.
    fn lock(&self) -> MutexGuard<'_, State> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.caller = crate::threads::current();
        state
    }

    /// The state, for what reads it without being a driver call (no clock, no sticky error).
    pub(super) fn lock_state(&self) -> MutexGuard<'_, State> {
        self.lock()
    }

    /// Runs one call: a dead process fails every call with its sticky error but those that
    /// need no working context ([`ANSWERED_WHEN_DEAD`]); otherwise `f`'s
    /// failure is reported under `call` (or the call it names). Either way the clock advances
    /// by the call's cost: what `f` recorded in `State::work`, else a plain call's.
    pub(super) fn run<T>(&self, call: &'static str, f: impl FnOnce(&mut State) -> SimResult<T>) -> DriverResult<T> {
        let mut state = self.lock();
        state.work = None;
        let result = match state.dead {
            Some(code) if !ANSWERED_WHEN_DEAD.contains(&call) => Err(CudaError { call, code, sticky: true }),
            _ => f(&mut state).map_err(|Fail { code, call: named }| CudaError::new(named.unwrap_or(call), code)),
        };
        // Matched in place, so that the common call, which records no work, moves none.
        let plain = match (&state.work, &result) {
            (Some(work), Ok(_)) => self.lane_costs.of_work(work),
            _ if CONTEXT_SWITCHES.contains(&call) => self.lane_costs.of_work(&Work::ContextSwitch),
            _ => self.lane_costs.of_work(&Work::Call),
        };
        match plain {
            Some(time) => {
                state.work = None;
                let caller = state.caller;
                state.timing.pass_on(caller, time);
            }
            None => self.price_on_machine(&mut state),
        }
        result
    }

    /// The end of [`SimDriver::run`] for recorded work priced on the machine: it occupies a
    /// device or a lock, or loads PTX. Kept out of `run`, which every call inlines, so that a
    /// cheap call's frame holds only what it uses.
    #[inline(never)]
    fn price_on_machine(&self, state: &mut State) {
        if let Some(work) = state.work.take() {
            let mut machine = self.machine();
            let cost = timing::price(&machine.model, &work);
            state.timing.advance(&mut machine, &cost);
        }
    }
}

impl std::fmt::Debug for SimDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimDriver").field("topology", &self.lock().topo.name).finish()
    }
}

fn fail<T>(code: CudaCode) -> SimResult<T> {
    Err(code.into())
}

const CU_EVENT_BLOCKING_SYNC: u32 = EventFlag::CU_EVENT_BLOCKING_SYNC as u32;
const CU_EVENT_DISABLE_TIMING: u32 = EventFlag::CU_EVENT_DISABLE_TIMING as u32;
const CU_EVENT_INTERPROCESS: u32 = EventFlag::CU_EVENT_INTERPROCESS as u32;

/// Calls that answer as usual after a kernel's fault has killed the process: what one H200
/// answered (`docs/hardware/recorded/one-h200/kernels.txt`). Device queries and the current
/// context's identity need no working context; memory, streams and synchronisation fail.
pub const ANSWERED_WHEN_DEAD: &[&str] = &[
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDeviceGetName",
    "cuDriverGetVersion",
    "cuDevicePrimaryCtxGetState",
    "cuDeviceGetDefaultMemPool",
    "cuCtxGetCurrent",
    "cuCtxGetDevice",
];

/// Calls that only read or change the calling thread's current context.
const CONTEXT_SWITCHES: &[&str] = &["cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxPushCurrent", "cuCtxPopCurrent"];

impl Timeline for SimDriver {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.lock().timing.now())
    }

    fn set_now(&self, at: Duration) {
        self.lock().timing.set_now(u64::try_from(at.as_nanos()).unwrap_or(u64::MAX));
    }

    fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.lock().timing.latest())
    }

    fn wall(&self) -> Duration {
        let last = self.lock().timing.latest();
        Duration::from_nanos(last) + self.exit()
    }

    fn describe(&self) -> String {
        self.machine().model.machine.clone()
    }
}

fn out_of_memory(_: Exhausted) -> Fail {
    CudaCode::CUDA_ERROR_OUT_OF_MEMORY.into()
}

impl Driver for SimDriver {
    fn describe(&self) -> String {
        format!("simulated: {}", self.lock().topo.name)
    }

    fn timeline(&self) -> Option<&dyn Timeline> {
        Some(self)
    }

    /// Flags must be 0, as the real driver requires; the simulator needs no start (its clock
    /// counts `cuInit`'s cost, every time: peerpool calls it once per process).
    fn init(&self, flags: u32) -> DriverResult<()> {
        self.run("cuInit", |s| {
            if flags != 0 {
                return fail(CudaCode::CUDA_ERROR_INVALID_VALUE);
            }
            s.work = Some(Work::Init(s.count()));
            Ok(())
        })
    }

    fn driver_get_version(&self) -> DriverResult<i32> {
        self.run("cuDriverGetVersion", |s| Ok(s.topo.driver_version))
    }

    fn device_get_count(&self) -> DriverResult<i32> {
        self.run("cuDeviceGetCount", |s| Ok(s.count() as i32))
    }

    fn device_get(&self, ordinal: i32) -> DriverResult<i32> {
        self.run("cuDeviceGet", |s| s.device(ordinal).map(|d| d as i32))
    }

    fn device_get_name(&self, device: i32) -> DriverResult<String> {
        self.run("cuDeviceGetName", |s| Ok(s.topo.devices[s.device(device)?].name.clone()))
    }

    fn device_get_attribute(&self, device: i32, attribute: DeviceAttribute) -> DriverResult<i32> {
        self.run("cuDeviceGetAttribute", |s| Ok(super::attributes::of(&s.topo.devices[s.device(device)?], attribute)))
    }

    /// Synthetic ([`Topology::uuid`]): the same device has the same UUID in every process.
    fn device_get_uuid(&self, device: i32) -> DriverResult<[u8; 16]> {
        self.run("cuDeviceGetUuid", |s| {
            let d = s.device(device)?;
            s.topo.uuid(d).ok_or_else(|| Fail::from(CudaCode::CUDA_ERROR_INVALID_DEVICE))
        })
    }

    fn mem_get_info(&self) -> DriverResult<(u64, u64)> {
        self.run("cuMemGetInfo", |s| {
            let d = s.current_device()?;
            let total = s.topo.devices[d].total_memory;
            let used = s.memory.live(d).saturating_add(super::pools::unused_reserve(s, d));
            Ok((total.saturating_sub(used), total))
        })
    }

    fn device_total_mem(&self, device: i32) -> DriverResult<u64> {
        self.run("cuDeviceTotalMem", |s| Ok(s.topo.devices[s.device(device)?].total_memory))
    }

    fn device_can_access_peer(&self, device: i32, peer: i32) -> DriverResult<bool> {
        self.run("cuDeviceCanAccessPeer", |s| Ok(s.topo.link(s.device(device)?, s.device(peer)?).access))
    }

    fn device_get_p2p_attribute(&self, attribute: P2pAttribute, src: i32, dst: i32) -> DriverResult<i32> {
        self.run("cuDeviceGetP2PAttribute", |s| {
            let (src, dst) = (s.device(src)?, s.device(dst)?);
            if src == dst {
                return fail(CudaCode::CUDA_ERROR_INVALID_DEVICE);
            }
            let link = s.topo.link(src, dst);
            Ok(match attribute {
                P2pAttribute::PerformanceRank => link.rank,
                P2pAttribute::AccessSupported => link.access as i32,
                P2pAttribute::NativeAtomicSupported => (link.access && link.atomics) as i32,
            })
        })
    }

    fn primary_ctx_retain(&self, device: i32) -> DriverResult<Context> {
        self.run("cuDevicePrimaryCtxRetain", |s| {
            let d = s.device(device)?;
            if !std::mem::replace(&mut s.timing.contexts[d], true) {
                s.work = Some(Work::Context(d));
            }
            Ok(Context(s.retain(d)))
        })
    }

    unsafe fn primary_ctx_release(&self, device: i32) -> DriverResult<()> {
        self.run("cuDevicePrimaryCtxRelease", |s| {
            let d = s.device(device)?;
            s.release(d)
        })
    }

    fn ctx_get_current(&self) -> DriverResult<Option<Context>> {
        self.run("cuCtxGetCurrent", |s| Ok(s.current_context().map(Context)))
    }

    unsafe fn ctx_set_current(&self, context: Option<Context>) -> DriverResult<()> {
        self.run("cuCtxSetCurrent", |s| s.set_current(context.map(|c| c.0)))
    }

    fn ctx_get_device(&self) -> DriverResult<i32> {
        self.run("cuCtxGetDevice", |s| Ok(s.current_device()? as i32))
    }

    fn ctx_synchronize(&self) -> DriverResult<()> {
        self.run("cuCtxSynchronize", |s| {
            let device = s.current_device()?;
            pools::release_on_sync(s, device);
            s.work = Some(Work::Sync(device));
            Ok(())
        })
    }

    fn primary_ctx_get_state(&self, device: i32) -> DriverResult<(u32, bool)> {
        self.run("cuDevicePrimaryCtxGetState", |s| Ok(s.contexts.primary_state(s.device(device)?)))
    }

    fn primary_ctx_set_flags(&self, device: i32, flags: u32) -> DriverResult<()> {
        self.run("cuDevicePrimaryCtxSetFlags", |s| {
            let d = s.device(device)?;
            s.contexts.set_primary_flags(d, flags);
            Ok(())
        })
    }

    unsafe fn primary_ctx_reset(&self, device: i32) -> DriverResult<()> {
        self.run("cuDevicePrimaryCtxReset", |s| {
            let d = s.device(device)?;
            let handle = s.contexts.reset(d);
            s.tear_down(handle);
            s.timing.contexts[d] = false;
            Ok(())
        })
    }

    fn ctx_create(&self, device: i32, _flags: u32) -> DriverResult<Context> {
        self.run("cuCtxCreate", |s| {
            let d = s.device(device)?;
            let handle = s.mint();
            s.contexts.create(handle, d);
            s.work = Some(Work::Context(d));
            Ok(Context(handle))
        })
    }

    unsafe fn ctx_destroy(&self, context: Context) -> DriverResult<()> {
        self.run("cuCtxDestroy", |s| {
            s.contexts.destroy(context.0)?;
            s.tear_down(context.0);
            Ok(())
        })
    }

    unsafe fn ctx_push_current(&self, context: Context) -> DriverResult<()> {
        self.run("cuCtxPushCurrent", |s| Ok(s.contexts.push(context.0)?))
    }

    fn ctx_pop_current(&self) -> DriverResult<Option<Context>> {
        self.run("cuCtxPopCurrent", |s| Ok(Some(Context(s.contexts.pop()?))))
    }

    /// Legacy peer access is kept per pair of devices (the real driver keeps it per context).
    unsafe fn ctx_enable_peer_access(&self, peer: Context, flags: u32) -> DriverResult<()> {
        self.run("cuCtxEnablePeerAccess", |s| {
            let d = s.current_device()?;
            let Some(p) = s.context_device(peer.0) else { return fail(CudaCode::CUDA_ERROR_INVALID_CONTEXT) };
            if flags != 0 {
                return fail(CudaCode::CUDA_ERROR_INVALID_VALUE);
            }
            if p == d {
                return fail(CudaCode::CUDA_ERROR_INVALID_DEVICE);
            }
            if !s.topo.link(d, p).access {
                return fail(CudaCode::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
            }
            Ok(s.contexts.enable_peer(d, p)?)
        })
    }

    unsafe fn ctx_disable_peer_access(&self, peer: Context) -> DriverResult<()> {
        self.run("cuCtxDisablePeerAccess", |s| {
            let d = s.current_device()?;
            let Some(p) = s.context_device(peer.0) else { return fail(CudaCode::CUDA_ERROR_INVALID_CONTEXT) };
            Ok(s.contexts.disable_peer(d, p)?)
        })
    }

    fn device_get_default_mem_pool(&self, device: i32) -> DriverResult<Pool> {
        self.run("cuDeviceGetDefaultMemPool", |s| Ok(Pool(s.pools[s.default_pools[s.device(device)?]].handle)))
    }

    fn device_get_mem_pool(&self, device: i32) -> DriverResult<Pool> {
        self.run("cuDeviceGetMemPool", |s| Ok(Pool(s.pools[s.current_pools[s.device(device)?]].handle)))
    }

    unsafe fn device_set_mem_pool(&self, device: i32, pool: Pool) -> DriverResult<()> {
        self.run("cuDeviceSetMemPool", |s| {
            let d = s.device(device)?;
            let id = s.pool(pool.0)?;
            if s.pools[id].device != d || s.shares.imported_pools.contains_key(&id) {
                return fail(CudaCode::CUDA_ERROR_INVALID_VALUE);
            }
            s.current_pools[d] = id;
            Ok(())
        })
    }

    fn mem_pool_create(&self, props: &PoolProps) -> DriverResult<Pool> {
        self.run("cuMemPoolCreate", |s| {
            let Some(d) = s.in_range(props.device) else { return fail(CudaCode::CUDA_ERROR_INVALID_VALUE) };
            let spec = &s.topo.devices[d];
            if !spec.pools_supported || !spec.pool_handle_types.contains(props.handle_types) {
                return fail(CudaCode::CUDA_ERROR_NOT_SUPPORTED);
            }
            let id = s.new_pool(d, props.handle_types, props.max_size as u64);
            s.work = Some(Work::PoolCreate);
            Ok(Pool(s.pools[id].handle))
        })
    }

    unsafe fn mem_pool_destroy(&self, pool: Pool) -> DriverResult<()> {
        self.run("cuMemPoolDestroy", |s| {
            s.destroy_pool(pool.0)?;
            s.work = Some(Work::PoolDestroy);
            Ok(())
        })
    }

    unsafe fn mem_pool_set_access(&self, pool: Pool, map: &[AccessDesc]) -> DriverResult<()> {
        self.run("cuMemPoolSetAccess", |s| {
            let id = s.pool(pool.0)?;
            let owner = s.pools[id].device;
            // A pool on the host has no owner: any device may be granted or revoked.
            let owned = !matches!(s.pools[id].place, PoolPlace::Host { .. });
            // Every entry is checked before any is applied: the driver applies all or none.
            for desc in map {
                let Some(d) = s.in_range(desc.device) else { return fail(CudaCode::CUDA_ERROR_INVALID_DEVICE) };
                match desc.access {
                    Access::Read => return fail(CudaCode::CUDA_ERROR_NOT_SUPPORTED),
                    Access::None if owned && d == owner => return fail(CudaCode::CUDA_ERROR_INVALID_DEVICE),
                    Access::ReadWrite if owned && d != owner && !s.topo.link(d, owner).access => {
                        return fail(CudaCode::CUDA_ERROR_INVALID_DEVICE);
                    }
                    _ => {}
                }
            }
            let before = s.pools[id].access.clone();
            for desc in map {
                if let Some(d) = s.in_range(desc.device).filter(|&d| !owned || d != owner) {
                    s.pools[id].access[d] = desc.access; // in order: the last entry for a device wins
                }
            }
            s.work = Some(access_work(&mut s.pools[id], owner, &before));
            Ok(())
        })
    }

    unsafe fn mem_pool_get_access(&self, pool: Pool, device: i32) -> DriverResult<Access> {
        self.run("cuMemPoolGetAccess", |s| {
            let id = s.pool(pool.0)?;
            let Some(d) = s.in_range(device) else { return fail(CudaCode::CUDA_ERROR_INVALID_VALUE) };
            Ok(s.pools[id].access[d])
        })
    }

    fn mem_alloc(&self, bytes: usize) -> DriverResult<DevicePtr> {
        self.run("cuMemAlloc", |s| {
            let d = s.current_device()?;
            if bytes == 0 {
                return fail(CudaCode::CUDA_ERROR_INVALID_VALUE);
            }
            let capacity = s.topo.devices[d].total_memory;
            let base = s.memory.alloc(d, bytes as u64, capacity, None).map_err(out_of_memory)?;
            let ctx = s.current_context().unwrap_or_default();
            s.legacy_owner.insert(base, ctx);
            s.work = Some(Work::LegacyAlloc);
            Ok(DevicePtr(base))
        })
    }

    unsafe fn mem_free(&self, ptr: DevicePtr) -> DriverResult<()> {
        self.run("cuMemFree", |s| {
            s.current_device()?;
            free(s, ptr)?;
            s.work = Some(Work::Free);
            Ok(())
        })
    }

    unsafe fn mem_alloc_from_pool_async(&self, bytes: usize, pool: Pool, stream: Stream) -> DriverResult<DevicePtr> {
        self.run("cuMemAllocFromPoolAsync", |s| {
            s.stream_device(stream)?;
            let id = s.pool(pool.0)?;
            pool_alloc(s, id, bytes).map(DevicePtr)
        })
    }

    unsafe fn mem_alloc_async(&self, bytes: usize, stream: Stream) -> DriverResult<DevicePtr> {
        self.run("cuMemAllocAsync", |s| {
            let device = s.stream_device(stream)?;
            let id = s.current_pools[device];
            pool_alloc(s, id, bytes).map(DevicePtr)
        })
    }

    unsafe fn mem_pool_set_attribute(&self, pool: Pool, attribute: PoolAttribute, value: u64) -> DriverResult<()> {
        self.run("cuMemPoolSetAttribute", |s| {
            let id = s.pool(pool.0)?;
            pools::set(s, id, attribute, value)
        })
    }

    unsafe fn mem_pool_get_attribute(&self, pool: Pool, attribute: PoolAttribute) -> DriverResult<u64> {
        self.run("cuMemPoolGetAttribute", |s| {
            let id = s.pool(pool.0)?;
            Ok(pools::get(s, id, attribute))
        })
    }

    unsafe fn mem_pool_trim_to(&self, pool: Pool, keep: usize) -> DriverResult<()> {
        self.run("cuMemPoolTrimTo", |s| {
            let id = s.pool(pool.0)?;
            pools::trim(s, id, keep as u64);
            Ok(())
        })
    }

    unsafe fn mem_free_async(&self, ptr: DevicePtr, stream: Stream) -> DriverResult<()> {
        self.run("cuMemFreeAsync", |s| {
            s.stream_device(stream)?;
            free(s, ptr)?;
            s.work = Some(Work::Free);
            Ok(())
        })
    }

    fn stream_create(&self) -> DriverResult<Stream> {
        self.run("cuStreamCreate", |s| {
            let owner = s.current_owner()?;
            let handle = s.mint();
            s.streams.insert(handle, owner);
            Ok(Stream(handle))
        })
    }

    unsafe fn stream_destroy(&self, stream: Stream) -> DriverResult<()> {
        self.run("cuStreamDestroy", |s| match s.streams.remove(&stream.0) {
            Some(_) => {
                s.stream_settings.remove(&stream.0);
                Ok(())
            }
            None => fail(CudaCode::CUDA_ERROR_INVALID_HANDLE),
        })
    }

    unsafe fn stream_synchronize(&self, stream: Stream) -> DriverResult<()> {
        self.run("cuStreamSynchronize", |s| {
            let device = s.stream_device(stream)?;
            pools::release_on_sync(s, device);
            s.work = Some(Work::Sync(device));
            Ok(())
        })
    }

    /// Work is done when it is queued: every stream is always idle.
    unsafe fn stream_query(&self, stream: Stream) -> DriverResult<()> {
        self.run("cuStreamQuery", |s| s.stream_device(stream).map(drop))
    }

    unsafe fn stream_wait_event(&self, stream: Stream, event: Event, _flags: u32) -> DriverResult<()> {
        self.run("cuStreamWaitEvent", |s| {
            let device = s.stream_device(stream)?;
            match s.events.get(&event.0) {
                Some(e) => {
                    // An event never recorded is complete: nothing to wait for.
                    if let Some(at) = e.recorded {
                        s.timing.wait_until(device, at);
                    }
                    Ok(())
                }
                None => fail(CudaCode::CUDA_ERROR_INVALID_HANDLE),
            }
        })
    }

    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> DriverResult<()> {
        self.run("cuMemcpyHtoD", |s| {
            host_copy(s, s.current_device()?, src.len(), |s, d| copies::htod(s, d, dst.0, src))
        })
    }

    unsafe fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> DriverResult<()> {
        let len = dst.len();
        self.run("cuMemcpyDtoH", |s| host_copy(s, s.current_device()?, len, |s, d| copies::dtoh(s, d, dst, src.0)))
    }

    unsafe fn memcpy_dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize) -> DriverResult<()> {
        self.run("cuMemcpyDtoD", |s| device_copy(s, s.current_device()?, dst.0, src.0, bytes, false))
    }

    unsafe fn memcpy_htod_async(&self, dst: DevicePtr, src: &[u8], stream: Stream) -> DriverResult<()> {
        self.run("cuMemcpyHtoDAsync", |s| {
            host_copy(s, s.stream_device(stream)?, src.len(), |s, d| copies::htod(s, d, dst.0, src))
        })
    }

    unsafe fn memcpy_dtoh_async(&self, dst: &mut [u8], src: DevicePtr, stream: Stream) -> DriverResult<()> {
        let len = dst.len();
        self.run("cuMemcpyDtoHAsync", |s| {
            host_copy(s, s.stream_device(stream)?, len, |s, d| copies::dtoh(s, d, dst, src.0))
        })
    }

    unsafe fn memcpy_dtod_async(
        &self,
        dst: DevicePtr,
        src: DevicePtr,
        bytes: usize,
        stream: Stream,
    ) -> DriverResult<()> {
        self.run("cuMemcpyDtoDAsync", |s| device_copy(s, s.stream_device(stream)?, dst.0, src.0, bytes, true))
    }

    unsafe fn memcpy_peer_async(&self, c: PeerCopy, stream: Stream) -> DriverResult<()> {
        self.run("cuMemcpyPeerAsync", |s| {
            let device = s.stream_device(stream)?;
            copies::peer(s, c)?;
            s.work = Some(Work::Copy { device, bytes: c.bytes as u64, path: Path::Peer, queued: true });
            Ok(())
        })
    }

    unsafe fn memcpy_peer(&self, c: PeerCopy) -> DriverResult<()> {
        self.run("cuMemcpyPeer", |s| {
            let device = s.current_device()?;
            copies::peer(s, c)?;
            s.work = Some(Work::Copy { device, bytes: c.bytes as u64, path: Path::Peer, queued: false });
            Ok(())
        })
    }

    unsafe fn memset_d32_async(&self, dst: DevicePtr, value: u32, words: usize, stream: Stream) -> DriverResult<()> {
        self.memset_async(dst.0, value.to_le_bytes(), words, stream)
    }

    unsafe fn memset_d8_async(&self, dst: DevicePtr, value: u8, bytes: usize, stream: Stream) -> DriverResult<()> {
        self.memset_async(dst.0, [value], bytes, stream)
    }

    /// Any image loads (`modules.rs`); peerpool's kernels in it run natively.
    fn module_load_data(&self, image: ModuleImage<'_>) -> DriverResult<Module> {
        let bytes = match image {
            ModuleImage::Ptx(text) => text.to_bytes(),
            ModuleImage::Cubin(cubin) => cubin.elf(),
        };
        self.module_load_image(bytes)
    }

    unsafe fn module_unload(&self, module: Module) -> DriverResult<()> {
        self.run("cuModuleUnload", |s| modules::unload(s, module.0))
    }

    unsafe fn module_get_function(&self, module: Module, name: &CStr) -> DriverResult<Function> {
        self.run("cuModuleGetFunction", |s| modules::function(s, module.0, name.to_bytes()).map(Function))
    }

    unsafe fn launch_kernel(
        &self,
        function: Function,
        shape: LaunchShape,
        stream: Stream,
        args: &[KernelArg],
    ) -> DriverResult<()> {
        self.run("cuLaunchKernel", |s| {
            let device = s.current_device()?;
            let Some(f) = s.functions.get(&function.0).copied() else {
                return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
            };
            if f.device != device || s.stream_device(stream)? != device {
                return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
            }
            // A kernel that is not peerpool's is known by name, not run.
            let Some(kernel) = f.kernel else { return fail(CudaCode::CUDA_ERROR_NOT_SUPPORTED) };
            let values = kernels::arguments(kernel, shape, args)?;
            // Built with `ptx-kernels`, the PTX that ships runs instead of the hand-written
            // semantics (the fast path `tests/sim_native_kernels.rs` proves equal to it).
            match cfg!(feature = "ptx-kernels") {
                true => ptx_kernels::launch_own(s, device, kernel.entry(), shape, &kernels::buffer(kernel, &values))?,
                false => kernels::launch(s, device, kernel, shape, values),
            }
            s.work = Some(match s.dead {
                Some(_) => Work::Fault(device),
                None => Work::Kernel { device, traffic: kernels::traffic(s, device, kernel, shape, args) },
            });
            Ok(())
        })
    }

    unsafe fn func_get_param_info(&self, function: Function, index: usize) -> DriverResult<(usize, usize)> {
        self.run("cuFuncGetParamInfo", |s| modules::param_info(s, function.0, index))
    }

    /// Flags as the real driver checks them: `CU_EVENT_INTERPROCESS` needs timing disabled.
    fn event_create(&self, flags: u32) -> DriverResult<Event> {
        self.run("cuEventCreate", |s| {
            let known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
            let timed = flags & CU_EVENT_DISABLE_TIMING == 0;
            if flags & !known != 0 || (flags & CU_EVENT_INTERPROCESS != 0 && timed) {
                return fail(CudaCode::CUDA_ERROR_INVALID_VALUE);
            }
            let owner = s.current_owner()?;
            let handle = s.mint();
            s.events.insert(handle, EventRec { owner, timed, recorded: None });
            Ok(Event(handle))
        })
    }

    unsafe fn event_record(&self, event: Event, stream: Stream) -> DriverResult<()> {
        self.run("cuEventRecord", |s| {
            let Some(&EventRec { owner, .. }) = s.events.get(&event.0) else {
                return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
            };
            if s.stream_device(stream)? != owner.device {
                return fail(CudaCode::CUDA_ERROR_INVALID_HANDLE);
            }
            // The event happens when the device's queue reaches it.
            let at = s.timing.reached(owner.device);
            s.events.entry(event.0).and_modify(|e| e.recorded = Some(at));
            Ok(())
        })
    }

    unsafe fn event_synchronize(&self, event: Event) -> DriverResult<()> {
        self.run("cuEventSynchronize", |s| match s.events.get(&event.0) {
            Some(&EventRec { owner, recorded, .. }) => {
                pools::release_on_sync(s, owner.device);
                s.work = Some(Work::EventSync(recorded.unwrap_or(0)));
                Ok(())
            }
            None => fail(CudaCode::CUDA_ERROR_INVALID_HANDLE),
        })
    }

    /// Every recorded event has happened (see `stream_query`).
    unsafe fn event_query(&self, event: Event) -> DriverResult<()> {
        self.run("cuEventQuery", |s| match s.events.contains_key(&event.0) {
            true => Ok(()),
            false => fail(CudaCode::CUDA_ERROR_INVALID_HANDLE),
        })
    }

    /// Milliseconds of virtual time between the two events' last records; an event never
    /// recorded, or made without timing, is an invalid handle here, as it is to the real driver.
    unsafe fn event_elapsed_time(&self, start: Event, end: Event) -> DriverResult<f32> {
        self.run("cuEventElapsedTime", |s| {
            let recorded = |e: Event| s.events.get(&e.0).filter(|e| e.timed).and_then(|e| e.recorded);
            match (recorded(start), recorded(end)) {
                (Some(a), Some(b)) => Ok(((b as f64 - a as f64) / 1e6) as f32),
                _ => fail(CudaCode::CUDA_ERROR_INVALID_HANDLE),
            }
        })
    }

    unsafe fn event_destroy(&self, event: Event) -> DriverResult<()> {
        self.run("cuEventDestroy", |s| match s.events.remove(&event.0) {
            Some(_) => Ok(()),
            None => fail(CudaCode::CUDA_ERROR_INVALID_HANDLE),
        })
    }

    fn pointer_get_attribute(&self, ptr: DevicePtr, attribute: PointerAttribute) -> DriverResult<u64> {
        self.run("cuPointerGetAttribute", |s| share::attribute(s, ptr.0, attribute))
    }

    unsafe fn mem_pool_export_to_shareable_handle(
        &self,
        pool: Pool,
        handle: HandleKind,
    ) -> DriverResult<ExportedHandle> {
        self.run("cuMemPoolExportToShareableHandle", |s| share::pool_export(s, pool.0, handle))
    }

    unsafe fn mem_pool_import_from_shareable_handle(&self, handle: ExportedHandleRef<'_>) -> DriverResult<Pool> {
        self.run("cuMemPoolImportFromShareableHandle", |s| share::pool_import(s, handle).map(Pool))
    }

    unsafe fn mem_pool_export_pointer(&self, ptr: DevicePtr) -> DriverResult<PoolPtrExportData> {
        self.run("cuMemPoolExportPointer", |s| share::pointer_export(s, ptr.0))
    }

    unsafe fn mem_pool_import_pointer(&self, pool: Pool, data: &PoolPtrExportData) -> DriverResult<DevicePtr> {
        self.run("cuMemPoolImportPointer", |s| share::pointer_import(s, pool.0, data).map(DevicePtr))
    }

    unsafe fn ipc_get_mem_handle(&self, ptr: DevicePtr) -> DriverResult<IpcMemHandle> {
        self.run("cuIpcGetMemHandle", |s| share::ipc_get(s, ptr.0))
    }

    unsafe fn ipc_open_mem_handle(&self, handle: &IpcMemHandle) -> DriverResult<DevicePtr> {
        self.run("cuIpcOpenMemHandle", |s| share::ipc_open(s, handle).map(DevicePtr))
    }

    unsafe fn ipc_close_mem_handle(&self, ptr: DevicePtr) -> DriverResult<()> {
        self.run("cuIpcCloseMemHandle", |s| share::ipc_close(s, ptr.0))
    }

    fn mem_get_allocation_granularity(&self, props: &AllocationProps, _option: Granularity) -> DriverResult<usize> {
        self.run("cuMemGetAllocationGranularity", |s| vmm::granularity(s, props))
    }

    fn mem_create(&self, bytes: usize, props: &AllocationProps) -> DriverResult<MemHandle> {
        self.run("cuMemCreate", |s| vmm::create(s, bytes, props).map(MemHandle))
    }

    fn mem_address_reserve(&self, bytes: usize, alignment: usize) -> DriverResult<DevicePtr> {
        self.run("cuMemAddressReserve", |s| vmm::reserve(s, bytes, alignment).map(DevicePtr))
    }

    unsafe fn mem_map(&self, ptr: DevicePtr, bytes: usize, offset: usize, handle: MemHandle) -> DriverResult<()> {
        self.run("cuMemMap", |s| vmm::map(s, ptr.0, bytes, offset, handle.0))
    }

    unsafe fn mem_set_access(&self, ptr: DevicePtr, bytes: usize, map: &[AccessDesc]) -> DriverResult<()> {
        self.run("cuMemSetAccess", |s| vmm::set_access(s, ptr.0, bytes, map))
    }

    unsafe fn mem_unmap(&self, ptr: DevicePtr, bytes: usize) -> DriverResult<()> {
        self.run("cuMemUnmap", |s| vmm::unmap(s, ptr.0, bytes))
    }

    unsafe fn mem_address_free(&self, ptr: DevicePtr, bytes: usize) -> DriverResult<()> {
        self.run("cuMemAddressFree", |s| vmm::address_free(s, ptr.0, bytes))
    }

    unsafe fn mem_release(&self, handle: MemHandle) -> DriverResult<()> {
        self.run("cuMemRelease", |s| vmm::release(s, handle.0))
    }

    unsafe fn mem_export_to_shareable_handle(
        &self,
        handle: MemHandle,
        kind: HandleKind,
    ) -> DriverResult<ExportedHandle> {
        self.run("cuMemExportToShareableHandle", |s| vmm::export(s, handle.0, kind))
    }

    unsafe fn mem_import_from_shareable_handle(&self, handle: ExportedHandleRef<'_>) -> DriverResult<MemHandle> {
        self.run("cuMemImportFromShareableHandle", |s| vmm::import(s, handle).map(MemHandle))
    }

    unsafe fn mem_retain_allocation_handle(&self, ptr: DevicePtr) -> DriverResult<MemHandle> {
        self.run("cuMemRetainAllocationHandle", |s| vmm::retain(s, ptr.0).map(MemHandle))
    }
}

/// Frees the allocation starting at `ptr` (pool or `cuMemAlloc` memory, through either call);
/// an interior, unknown or already freed address is `CUDA_ERROR_INVALID_VALUE`.
fn free(s: &mut State, ptr: DevicePtr) -> SimResult<()> {
    if !ptr.0.is_multiple_of(ALIGN) {
        return fail(CudaCode::CUDA_ERROR_INVALID_VALUE);
    }
    let Some(block) = s.memory.free(ptr.0) else { return fail(CudaCode::CUDA_ERROR_INVALID_VALUE) };
    s.legacy_owner.remove(&ptr.0);
    if let (Some(p), Origin::Allocated | Origin::Host(_)) = (block.pool, &block.origin) {
        pools::freed(s, p, block.size());
    }
    if let Some(p) = block.pool {
        s.count_pool_allocation(p, -1);
    }
    Ok(())
}

/// An allocation from pool `id`, with its cost: the first one from a pool that holds no memory
/// maps it into every peer the pool grants.
fn pool_alloc(s: &mut State, id: usize, bytes: usize) -> SimResult<u64> {
    let first = s.pools[id].stats.reserved == 0;
    let owner = s.pools[id].device;
    let base = pools::alloc(s, id, bytes)?;
    let pool = &mut s.pools[id];
    let peers: Vec<usize> = match first && bytes > 0 {
        true => (0..pool.access.len()).filter(|&d| d != owner && pool.access[d] == Access::ReadWrite).collect(),
        false => Vec::new(),
    };
    for &peer in &peers {
        pool.mapped[peer] = true;
    }
    s.work = Some(Work::Alloc { device: owner, first: first && bytes > 0, peers });
    Ok(base)
}

/// What a `cuMemPoolSetAccess` changed from `before`, for its cost; marks peers now mapped.
fn access_work(pool: &mut super::state::PoolRec, owner: usize, before: &[Access]) -> Work {
    let live = pool.stats.reserved;
    let (mut map_first, mut map_again, mut granted_empty, mut revoked) = (Vec::new(), Vec::new(), false, 0);
    for d in (0..before.len()).filter(|&d| d != owner) {
        match (before[d], pool.access[d]) {
            (old, Access::ReadWrite) if old != Access::ReadWrite => {
                if live == 0 {
                    granted_empty = true;
                } else if std::mem::replace(&mut pool.mapped[d], true) {
                    map_again.push(d);
                } else {
                    map_first.push(d);
                }
            }
            (Access::ReadWrite, new) if new != Access::ReadWrite => revoked += 1,
            _ => {}
        }
    }
    Work::Access { owner, live, map_first, map_again, granted_empty, revoked }
}

/// A copy between the host and `device`, `len` bytes.
fn host_copy(
    s: &mut State,
    device: usize,
    len: usize,
    copy: impl FnOnce(&mut State, usize) -> SimResult<()>,
) -> SimResult<()> {
    copy(s, device)?;
    s.work = Some(Work::Copy { device, bytes: len as u64, path: Path::Host, queued: false });
    Ok(())
}

/// A copy between device addresses by `device`'s engine: a peer copy when the two ends lie on
/// different devices; `queued` for the asynchronous call.
fn device_copy(s: &mut State, device: usize, dst: u64, src: u64, bytes: usize, queued: bool) -> SimResult<()> {
    copies::dtod(s, device, dst, src, bytes)?;
    let on = |addr: u64| s.memory.find(addr).map(|b| b.device);
    let path = if on(dst) == on(src) { Path::Local } else { Path::Peer };
    s.work = Some(Work::Copy { device, bytes: bytes as u64, path, queued });
    Ok(())
}
