//! The simulator's mutable state behind its one lock: pools and their access tables,
//! primary contexts and each thread's current one, streams, modules, memory, and whether the
//! simulated process is dead.

use super::contexts::Contexts;
use super::image::{ComputeCapability, Contents};
use super::memory::{Backing, Block, HostKind, Memory, Origin};
use super::shared_file::SharedFile;
use super::timing::{ProcessTime, Work};
use super::topology::Topology;
use peerpool::CudaCode;
use peerpool::driver::{Access, HandleKinds, Stream};
use peerpool_kernels::Kernel;
use rustc_hash::FxHashMap;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::thread::ThreadId;

/// A failed simulated call: its code, and the call to name when it is not the method's own
/// (the real driver checks ordinals with `cuDeviceGet` first).
pub(super) struct Fail {
    pub(super) code: CudaCode,
    pub(super) call: Option<&'static str>,
}

impl From<CudaCode> for Fail {
    fn from(code: CudaCode) -> Fail {
        Fail { code, call: None }
    }
}

pub(super) type SimResult<T> = Result<T, Fail>;

/// What `cuMemPoolGetAttribute` reads, per pool.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PoolStats {
    pub(super) used: u64,
    pub(super) used_high: u64,
    pub(super) reserved: u64,
    pub(super) reserved_high: u64,
    pub(super) release_threshold: u64,
    /// The three reuse policies, off when set.
    pub(super) reuse_off: [bool; 3],
}

/// What one context is set to.
#[derive(Clone, Debug, Default)]
pub(super) struct ContextSettings {
    /// Limits set, by `CUlimit` value.
    pub(super) limits: Vec<(u32, u64)>,
    /// `CUfunc_cache`.
    pub(super) cache_config: u32,
    /// A cooperative launch has run in it: NVIDIA's driver then made the context's grid
    /// workspace, which it gives every later launch of the context.
    pub(super) grid_workspace: bool,
}

/// What one created stream was made with, and the attributes set on it
/// (`cuStreamSetAttribute`), by number: each a `CUstreamAttrValue`'s bytes.
#[derive(Clone, Debug, Default)]
pub(super) struct StreamSettings {
    pub(super) flags: u32,
    pub(super) priority: i32,
    pub(super) attributes: Vec<(u32, [u8; ATTRIBUTE_VALUE_BYTES])>,
}

/// The bytes of a `CUstreamAttrValue` (`CUlaunchAttributeValue`, a 64-byte union).
pub const ATTRIBUTE_VALUE_BYTES: usize = 64;

/// One `cuMemCreate` (or imported) allocation.
#[derive(Clone)]
pub(super) struct Physical {
    pub(super) device: usize,
    pub(super) size: u64,
    pub(super) handle_types: HandleKinds,
    pub(super) backing: Backing,
    /// Handle references: the creating or importing call, and each retain.
    pub(super) refs: u32,
    /// Live `cuMemMap`s of it.
    pub(super) mappings: u32,
    /// Imported: charged to the exporter's device, not here.
    pub(super) imported: bool,
}

/// What a simulated process shares and maps.
#[derive(Clone, Default)]
pub(super) struct Shares {
    /// Exported pools (by index) and the files that name them to importers (a header, no
    /// data), kept open for the simulator's life.
    pub(super) pool_files: HashMap<usize, Arc<SharedFile>>,
    /// Imported pools (by index) and the nonce of the exporter's pool file.
    pub(super) imported_pools: HashMap<usize, u64>,
    /// Physical allocations by handle.
    pub(super) physical: HashMap<u64, Physical>,
}

/// Where a pool's memory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PoolPlace {
    /// On its device (`CU_MEM_LOCATION_TYPE_DEVICE`, pinned).
    Device,
    /// On the host (`CU_MEM_LOCATION_TYPE_HOST`, or `HOST_NUMA` with its node).
    Host { numa: Option<i32> },
    /// Managed memory preferring its device.
    Managed,
}

/// One pool, live or destroyed (destroyed ones stay while their allocations live, and as the
/// source of a recycled handle's stale table).
#[derive(Clone)]
pub(super) struct PoolRec {
    pub(super) handle: u64,
    /// Its device; for a pool on the host, the device current when it was made (whose
    /// synchronisations release its memory).
    pub(super) device: usize,
    pub(super) place: PoolPlace,
    pub(super) handle_types: HandleKinds,
    /// By device ordinal; the owner's entry is always read-write.
    pub(super) access: Vec<Access>,
    pub(super) max_size: u64,
    pub(super) stats: PoolStats,
    /// By device ordinal: whether the pool's memory was ever mapped into that peer (timing).
    pub(super) mapped: Vec<bool>,
    /// Allocations made from it (or imported into it) and not yet freed.
    pub(super) live: u32,
    /// Destroyed: kept only while `live` allocations remain.
    pub(super) destroyed: bool,
}

impl PoolRec {
    /// A slot no pool holds (a destroyed pool whose last allocation went), to be reused.
    fn vacant() -> PoolRec {
        PoolRec {
            handle: 0,
            device: 0,
            place: PoolPlace::Device,
            handle_types: HandleKinds::NONE,
            access: Vec::new(),
            max_size: 0,
            stats: PoolStats::default(),
            mapped: Vec::new(),
            live: 0,
            destroyed: true,
        }
    }
}

/// The low bits every pool handle carries and no other handle does: a pool handle that is not
/// live is a destroyed pool's, told apart without remembering every destroyed handle.
const POOL_TAG: u64 = 0x8;

/// Below every handle the simulator hands out.
const FIRST_HANDLE: u64 = 0x5a00_0000;

/// A loaded module: the context it was loaded into, what its image holds, a function handle
/// for each of its kernels and the address of each of its globals (in the image's order).
#[derive(Clone)]
pub(super) struct ModuleRec {
    pub(super) ctx: u64,
    pub(super) contents: Arc<Contents>,
    pub(super) functions: Vec<u64>,
    pub(super) globals: Vec<u64>,
    /// Its PTX as the executor loaded it, when it was loaded: `None` for machine code alone.
    pub(super) program: Option<Arc<peerpool_ptx::Module>>,
    /// Its managed variables are its library's (one for all contexts), not its own.
    pub(super) library_managed: bool,
}

/// Where each of the program's variables lies: a module global's address, found by name
/// (shared and other variables are the executor's own).
pub(super) fn variables(s: &State, module: u64, program: &peerpool_ptx::Module) -> Vec<u64> {
    let Some(m) = s.modules.get(&module) else { return Vec::new() };
    let placed: std::collections::HashMap<&str, u64> =
        m.contents.globals.iter().map(|g| g.name.as_str()).zip(m.globals.iter().copied()).collect();
    program.variables.iter().map(|v| placed.get(v.name.as_str()).copied().unwrap_or(0)).collect()
}

/// What a function is set to (`cuFuncSetAttribute`), as it reads back.
#[derive(Clone, Copy, Debug)]
pub(super) struct FunctionSettings {
    pub(super) max_dynamic_shared: Option<i32>,
    pub(super) carveout: i32,
    pub(super) cluster: [i32; 3],
    pub(super) non_portable_cluster: i32,
    pub(super) scheduling: i32,
}

impl Default for FunctionSettings {
    fn default() -> Self {
        FunctionSettings {
            max_dynamic_shared: None,
            carveout: -1,
            cluster: [0; 3],
            non_portable_cluster: 0,
            scheduling: 0,
        }
    }
}

impl FunctionSettings {
    /// The cluster dimensions `cuFuncSetAttribute` set, where all three are.
    pub(super) fn set_cluster(&self) -> Option<[u32; 3]> {
        self.cluster.iter().all(|&d| d > 0).then(|| self.cluster.map(|d| d as u32))
    }

    /// The most blocks a cluster may have: 8, or 16 where non-portable sizes are allowed.
    pub(super) fn most_cluster_blocks(&self) -> u64 {
        if self.non_portable_cluster != 0 { 16 } else { 8 }
    }
}

/// A loaded library: its image (or the code a later call answers, for an image the caller's
/// memory did not hold whole), what reading it for each compute capability gave, the module
/// made from it in each context, and its kernels' handles by name.
#[derive(Clone)]
pub(super) struct LibraryRec {
    pub(super) image: Result<Arc<[u8]>, CudaCode>,
    pub(super) read: Vec<(ComputeCapability, Reading)>,
    pub(super) modules: Vec<(u64, u64)>,
    pub(super) kernels: Vec<(String, u64)>,
    /// What `cuKernelSetAttribute` set: by kernel name and device, for its functions there.
    pub(super) settings: Vec<(String, usize, FunctionSettings)>,
    /// Its managed variables by name: one for every context it is loaded in.
    pub(super) managed: Vec<(String, u64)>,
}

/// What reading an image for one compute capability gave.
pub(super) type Reading = Result<super::jit::Compiled, CudaCode>;

/// A library's kernel: the library and the kernel's name.
#[derive(Clone)]
pub(super) struct KernelRec {
    pub(super) library: u64,
    pub(super) name: String,
}

/// A stream or event: the device it runs on and the context that made it.
#[derive(Clone, Copy)]
pub(super) struct Owned {
    pub(super) device: usize,
    pub(super) ctx: u64,
}

/// An event: where it was made, whether it keeps time, and the virtual time it was last
/// recorded at.
#[derive(Clone, Copy)]
pub(super) struct EventRec {
    pub(super) owner: Owned,
    pub(super) timed: bool,
    pub(super) recorded: Option<super::timing::Nanos>,
}

/// A function handle: its module and device, its index among the module's kernels, peerpool's
/// kernel that it runs natively (`None`: a foreign kernel, which the simulator does not run),
/// and what it is set to.
#[derive(Clone, Copy)]
pub(super) struct FunctionRec {
    pub(super) module: u64,
    pub(super) device: usize,
    pub(super) index: usize,
    pub(super) kernel: Option<Kernel>,
    pub(super) settings: FunctionSettings,
}

#[derive(Clone)]
pub(super) struct State {
    /// The thread that holds the state now: read once as the lock is taken (`SimDriver::lock`),
    /// since a thread's id costs a read of thread-local storage, dear in a shared library.
    pub(super) caller: ThreadId,
    pub(super) topo: Topology,
    pub(super) recycle: bool,
    /// The sticky error that killed the simulated process, if one did.
    pub(super) dead: Option<CudaCode>,
    next_handle: u64,
    pub(super) pools: Vec<PoolRec>,
    live_pools: HashMap<u64, usize>,
    /// Slots of `pools` free for the next pool.
    free_pools: Vec<usize>,
    recyclable: Vec<usize>,
    /// What a destroyed pool's handle meets: a panic (the in-process simulator: a bug tests must
    /// see) or `CUDA_ERROR_INVALID_HANDLE` and one line on stderr (the libcuda shim, inside a
    /// program of any language).
    pub(super) destroyed_pool_panics: bool,
    /// Destroyed pools' handles already named on stderr.
    named_destroyed: HashSet<u64>,
    pub(super) default_pools: Vec<usize>,
    pub(super) current_pools: Vec<usize>,
    /// The driver's own pools beyond each device's default: `(place, device, pool index)` of
    /// each device's managed pool and the host's pinned pool, made on first use.
    pub(super) implicit_pools: Vec<(PoolPlace, usize, usize)>,
    pub(super) memory: Memory,
    pub(super) contexts: Contexts,
    /// Created streams, by handle; hashed cheaply, as every stream call looks one up and the
    /// simulator hands the handles out.
    pub(super) streams: FxHashMap<u64, Owned>,
    /// Streams in a graph capture (the shim keeps the capture): work that reaches the simulator
    /// on one was not captured and is refused, the stream kept for the shim to invalidate.
    pub(super) capturing: rustc_hash::FxHashSet<u64>,
    pub(super) capture_refused: std::cell::Cell<Option<u64>>,
    /// What created streams were made with (`settings.rs`), by handle.
    pub(super) stream_settings: FxHashMap<u64, StreamSettings>,
    /// What contexts are set to (`settings.rs`), by handle.
    pub(super) context_settings: HashMap<u64, ContextSettings>,
    pub(super) events: FxHashMap<u64, EventRec>,
    /// The context each `cuMemAlloc` allocation was made in, by base address.
    pub(super) legacy_owner: HashMap<u64, u64>,
    pub(super) modules: HashMap<u64, ModuleRec>,
    pub(super) functions: HashMap<u64, FunctionRec>,
    /// Libraries (`cuLibraryLoadData`) and their kernels' handles (`modules.rs`).
    pub(super) libraries: HashMap<u64, LibraryRec>,
    pub(super) library_kernels: HashMap<u64, KernelRec>,
    /// Exports, imports and virtual-memory allocations.
    pub(super) shares: Shares,
    /// This process's part of the virtual clock.
    pub(super) timing: ProcessTime,
    /// What the call being made did, for its cost (`None`: a plain call).
    pub(super) work: Option<Work>,
}

/// `CUDA_ERROR_INVALID_DEVICE` from `cuDeviceGet`, as the real wrapper reports a bad ordinal.
fn bad_ordinal() -> Fail {
    Fail { code: CudaCode::CUDA_ERROR_INVALID_DEVICE, call: Some("cuDeviceGet") }
}

impl State {
    pub(super) fn new(topo: Topology, recycle: bool, timing: ProcessTime) -> State {
        let n = topo.device_count();
        let mut s = State {
            caller: crate::threads::current(),
            memory: Memory::new(n),
            topo,
            recycle,
            dead: None,
            next_handle: FIRST_HANDLE,
            pools: Vec::new(),
            live_pools: HashMap::new(),
            free_pools: Vec::new(),
            recyclable: Vec::new(),
            destroyed_pool_panics: true,
            named_destroyed: HashSet::new(),
            default_pools: Vec::new(),
            current_pools: Vec::new(),
            implicit_pools: Vec::new(),
            contexts: Contexts::default(),
            streams: FxHashMap::default(),
            capturing: Default::default(),
            capture_refused: std::cell::Cell::new(None),
            stream_settings: FxHashMap::default(),
            context_settings: HashMap::new(),
            events: FxHashMap::default(),
            legacy_owner: HashMap::new(),
            modules: HashMap::new(),
            functions: HashMap::new(),
            libraries: HashMap::new(),
            library_kernels: HashMap::new(),
            shares: Shares::default(),
            timing,
            work: None,
        };
        let primary = (0..n).map(|_| s.mint()).collect();
        s.contexts = Contexts::new(primary);
        for device in 0..n {
            let pool = s.new_pool(device, HandleKinds::NONE, 0);
            s.default_pools.push(pool);
            s.current_pools.push(pool);
        }
        s
    }

    /// A fresh handle: handles of every kind come from one counter, so one kind passed as
    /// another is never valid.
    pub(super) fn mint(&mut self) -> u64 {
        self.next_handle += 0x10;
        self.next_handle
    }

    pub(super) fn count(&self) -> usize {
        self.topo.device_count()
    }

    /// The ordinal, if a device has it.
    pub(super) fn in_range(&self, ordinal: i32) -> Option<usize> {
        usize::try_from(ordinal).ok().filter(|&d| d < self.count())
    }

    /// The device, or `CUDA_ERROR_INVALID_DEVICE` from `cuDeviceGet`.
    pub(super) fn device(&self, ordinal: i32) -> SimResult<usize> {
        self.in_range(ordinal).ok_or_else(bad_ordinal)
    }

    // ---- contexts ----

    pub(super) fn retain(&mut self, device: usize) -> u64 {
        self.contexts.retain(device)
    }

    /// Drops one retain; the last one resets the context: what was made in it goes, as the
    /// driver resets a primary context nobody holds.
    pub(super) fn release(&mut self, device: usize) -> SimResult<()> {
        if self.contexts.release(device)? {
            self.tear_down(self.contexts.primary_handle(device));
            self.timing.contexts[device] = false; // the next retain creates it again
        }
        Ok(())
    }

    /// Takes away the modules, streams, events and `cuMemAlloc` memory made in context `ctx`.
    /// Pools and pool memory belong to the device and stay.
    pub(super) fn tear_down(&mut self, ctx: u64) {
        let modules: Vec<u64> = self.modules.iter().filter(|(_, m)| m.ctx == ctx).map(|(&h, _)| h).collect();
        for module in modules {
            self.drop_module(module);
        }
        self.streams.retain(|_, o| o.ctx != ctx);
        let streams = &self.streams;
        self.stream_settings.retain(|handle, _| streams.contains_key(handle));
        self.context_settings.remove(&ctx);
        self.events.retain(|_, e| e.owner.ctx != ctx);
        let bases: Vec<u64> = self.legacy_owner.iter().filter(|&(_, &c)| c == ctx).map(|(&b, _)| b).collect();
        for base in bases {
            self.legacy_owner.remove(&base);
            self.memory.free(base);
        }
    }

    /// Takes away a module, its functions and its globals' memory; `false` if there is none.
    pub(super) fn drop_module(&mut self, handle: u64) -> bool {
        let Some(module) = self.modules.remove(&handle) else { return false };
        self.functions.retain(|_, f| f.module != handle);
        for (global, base) in module.contents.globals.iter().zip(module.globals) {
            if !(global.managed && module.library_managed) {
                self.memory.remove(base);
            }
        }
        true
    }

    /// The device of a context (primary or ordinary).
    pub(super) fn context_device(&self, handle: u64) -> Option<usize> {
        self.contexts.device_of(handle)
    }

    /// A copy for a forked process: everything but other threads' current contexts (a
    /// forked process has only the thread that forked it).
    pub(super) fn fork(&self) -> State {
        let mut copy = self.clone();
        copy.contexts.keep_only_this_thread();
        // Private bytes for the child, except where they are shared with another process.
        let mut copies = HashMap::new();
        copy.memory.fork_bytes(&mut copies);
        for physical in copy.shares.physical.values_mut() {
            physical.backing = physical.backing.forked(&mut copies);
        }
        copy
    }

    pub(super) fn current_context(&self) -> Option<u64> {
        self.contexts.current_of(self.caller)
    }

    pub(super) fn set_current(&mut self, handle: Option<u64>) -> SimResult<()> {
        Ok(self.contexts.set_current(handle)?)
    }

    /// The calling thread's current context's device; `CUDA_ERROR_INVALID_CONTEXT` when there
    /// is none or nobody retains it.
    pub(super) fn current_device(&self) -> SimResult<usize> {
        Ok(self.contexts.current_device_of(self.caller)?)
    }

    /// The calling thread's current context and its device (for what a call makes in it).
    pub(super) fn current_owner(&self) -> SimResult<Owned> {
        let device = self.current_device()?;
        Ok(Owned { device, ctx: self.current_context().unwrap_or_default() })
    }

    /// The device a stream runs on: the current context's for the null stream.
    /// A stream in capture refuses work here with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`, as
    /// the driver refuses what it cannot capture.
    pub(super) fn stream_device(&self, stream: Stream) -> SimResult<usize> {
        if self.capturing.contains(&stream.0) {
            self.capture_refused.set(Some(stream.0));
            return Err(CudaCode::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.into());
        }
        self.stream_device_any(stream)
    }

    /// [`State::stream_device`] for what a capturing stream may be asked too (its flags, its
    /// context).
    pub(super) fn stream_device_any(&self, stream: Stream) -> SimResult<usize> {
        if stream == Stream::LEGACY {
            return self.current_device();
        }
        self.streams.get(&stream.0).map(|o| o.device).ok_or_else(|| CudaCode::CUDA_ERROR_INVALID_HANDLE.into())
    }

    pub(super) fn retained_contexts(&self) -> u32 {
        self.contexts.retained()
    }

    // ---- pools ----

    /// A new pool on `device`: read-write for the owner, none for every peer; or, when
    /// recycling, the last destroyed pool's handle and access table (nvbug 5698116).
    pub(super) fn new_pool(&mut self, device: usize, handle_types: HandleKinds, max_size: u64) -> usize {
        self.new_pool_at(PoolPlace::Device, device, handle_types, max_size)
    }

    /// [`State::new_pool`] for a pool at `place`. A pool on the host has no owner: every device
    /// starts without access.
    pub(super) fn new_pool_at(
        &mut self,
        place: PoolPlace,
        device: usize,
        handle_types: HandleKinds,
        max_size: u64,
    ) -> usize {
        let (handle, mut access) = match self.recyclable.pop() {
            Some(old) if self.recycle => (self.pools[old].handle, self.pools[old].access.clone()),
            _ => (self.mint() | POOL_TAG, vec![Access::None; self.count()]),
        };
        if !matches!(place, PoolPlace::Host { .. }) {
            access[device] = Access::ReadWrite;
        }
        let mapped = vec![false; self.count()];
        let pool = PoolRec {
            handle,
            device,
            place,
            handle_types,
            access,
            max_size,
            stats: PoolStats::default(),
            mapped,
            live: 0,
            destroyed: false,
        };
        let id = match self.free_pools.pop() {
            Some(slot) => {
                self.pools[slot] = pool;
                slot
            }
            None => {
                self.pools.push(pool);
                self.pools.len() - 1
            }
        };
        self.live_pools.insert(handle, id);
        id
    }

    /// A live pool's index; `CUDA_ERROR_INVALID_VALUE` for null or unknown handles.
    ///
    /// # Panics
    /// On a destroyed pool's handle: on the H200s such a handle returned stale access and then
    /// crashed the process in `cuMemPoolSetAccess`, so a path that sends one is a bug the
    /// simulator makes loud rather than answer politely.
    pub(super) fn pool(&mut self, handle: u64) -> SimResult<usize> {
        if let Some(&id) = self.live_pools.get(&handle) {
            return Ok(id);
        }
        let destroyed = handle & 0xf == POOL_TAG && handle > FIRST_HANDLE && handle <= self.next_handle | POOL_TAG;
        if !destroyed {
            return Err(CudaCode::CUDA_ERROR_INVALID_VALUE.into());
        }
        let why = format!(
            "the destroyed pool {handle:#x} reached the driver (the real driver returned stale access for such a \
             handle and then crashed in cuMemPoolSetAccess)"
        );
        if self.destroyed_pool_panics {
            panic!("peerpool-sim: {why}");
        }
        if self.named_destroyed.insert(handle) {
            peerpool::fault::notice(&format!("peerpool-sim: {why}: CUDA_ERROR_INVALID_HANDLE"));
        }
        Err(CudaCode::CUDA_ERROR_INVALID_HANDLE.into())
    }

    /// Destroys a created pool (a default pool cannot be). Its live allocations stay usable
    /// until freed; a device whose current pool it was falls back to its default pool.
    pub(super) fn destroy_pool(&mut self, handle: u64) -> SimResult<()> {
        let id = self.pool(handle)?;
        if self.default_pools.contains(&id) || self.implicit_pools.iter().any(|&(_, _, p)| p == id) {
            return Err(CudaCode::CUDA_ERROR_INVALID_VALUE.into());
        }
        self.live_pools.remove(&handle);
        self.pools[id].destroyed = true;
        for d in 0..self.count() {
            if self.current_pools[d] == id {
                self.current_pools[d] = self.default_pools[d];
            }
        }
        if self.recycle {
            self.recyclable.push(id);
        }
        self.release_pool_if_done(id);
        Ok(())
    }

    /// One allocation more (`1`) or fewer (`-1`) from pool `id`; a destroyed pool's last one
    /// frees its slot.
    pub(super) fn count_pool_allocation(&mut self, id: usize, change: i32) {
        let pool = &mut self.pools[id];
        pool.live = pool.live.saturating_add_signed(change);
        self.release_pool_if_done(id);
    }

    /// Frees the slot of a destroyed pool that holds no allocation (a recycled pool's record
    /// stays: the next pool takes its handle and table).
    fn release_pool_if_done(&mut self, id: usize) {
        if self.pools[id].destroyed && self.pools[id].live == 0 && !self.recycle {
            self.pools[id] = PoolRec::vacant();
            self.shares.pool_files.remove(&id);
            self.shares.imported_pools.remove(&id);
            self.free_pools.push(id);
        }
    }

    pub(super) fn live_pool_count(&self) -> usize {
        self.live_pools.len()
    }

    // ---- access ----

    /// Whether `device` may touch `block`: its own memory, a pool that grants it read-write, or
    /// another device's `cuMemAlloc` memory after `cuCtxEnablePeerAccess` to it.
    pub(super) fn can_access(&self, device: usize, block: &Block) -> bool {
        match &block.origin {
            Origin::Mapped { access, .. } => return access.get(device) == Some(&Access::ReadWrite), // owner included
            // Mapped for every device, as page-locked memory is under unified addressing, and
            // managed memory on devices with concurrent managed access.
            Origin::Host(HostKind::PageLocked { .. } | HostKind::Registered { .. } | HostKind::Managed(_)) => {
                return true;
            }
            _ => {}
        }
        let legacy = block.pool.is_none() && block.origin == Origin::Allocated;
        block.device == device
            || block.pool.is_some_and(|p| self.pools[p].access.get(device) == Some(&Access::ReadWrite))
            || (legacy && self.contexts.peer_enabled(device, block.device))
    }

    /// For memsets run by `device`: the range lies in one allocation `device` may touch, else
    /// `CUDA_ERROR_INVALID_VALUE` (as the driver answers an ungranted pool).
    pub(super) fn check_engine(&self, device: usize, addr: u64, len: u64) -> SimResult<usize> {
        match self.memory.span(addr, len) {
            Some((block, _)) if self.can_access(device, block) => Ok(block.device),
            _ => Err(CudaCode::CUDA_ERROR_INVALID_VALUE.into()),
        }
    }

    /// For what writes `[addr, addr + len)` (checked otherwise): memory registered read-only is
    /// the host's alone, `CUDA_ERROR_INVALID_VALUE`.
    pub(super) fn check_writable(&self, addr: u64, len: u64) -> SimResult<()> {
        match self.memory.find(addr).map(|b| &b.origin) {
            Some(Origin::Host(HostKind::Registered { read_only: true, .. })) if len > 0 => {
                Err(CudaCode::CUDA_ERROR_INVALID_VALUE.into())
            }
            _ => Ok(()),
        }
    }

    /// For copies (`cuMemcpyHtoD`, `DtoH`, `DtoDAsync`) run by `device`: as for memsets, except
    /// that another device's `cuMemAlloc` memory is reachable (measured on the H200s: a copy
    /// from gpu0's `cuMemAlloc` memory with gpu1's context current succeeds, a memset fails).
    /// A pool on the host holds host memory: the copies that take device memory refuse it (as
    /// on the H200s: `cuMemcpyDtoH` and `cuMemcpyDtoD`), while `cuMemcpy` and memsets use it.
    pub(super) fn check_copy(&self, device: usize, addr: u64, len: u64) -> SimResult<usize> {
        match self.memory.span(addr, len) {
            Some((block, _)) if block.pool.is_none() && matches!(block.origin, Origin::Allocated) => Ok(block.device),
            Some((block, _)) if block.origin == Origin::Host(HostKind::PoolOnHost) => {
                Err(CudaCode::CUDA_ERROR_INVALID_VALUE.into())
            }
            _ => self.check_engine(device, addr, len),
        }
    }
}
