//! Simulated device memory: one address range per device, allocations holding real bytes, and
//! what a faulty link does to the bytes it carries.
//!
//! Freed address ranges are reused, as the driver reuses them (a freed range is the next
//! allocation's of its size): a process that allocates and frees for days never runs out of
//! addresses. A stale pointer may then reach a newer allocation, as on a GPU.
//!
//! Bytes live in a [`Backing`] behind its own lock. A large allocation's bytes are reserved, not
//! committed (a mapping without swap reservation): a simulated GPU may hold far more than the
//! host's memory for as long as its pages are not all written. Exported bytes move into a shared file
//! (`shared_file.rs`) that importers map, in another process or in another simulator of this
//! one, so a write through any mapping is seen by all, as with real inter-process sharing.
//!
//! Memory the host reads and writes itself (page-locked, registered and managed memory, pools on
//! the host) lives at a host address, below the devices' ranges: its block starts at the bytes'
//! own address, so a pointer works for the host and for the driver alike, as with unified
//! addressing on a GPU machine.

use super::address_space::AddressSpace;
use super::shared_file::{Header, Locator, SharedFile};
use super::topology::{FaultKind, LinkFault, MAX_DEVICES};
use peerpool::CudaCode;
use peerpool::driver::Access;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// Where device 0's addresses start: above the 47-bit user address space that holds host
/// heaps, stacks and mappings (0x55…, 0x7f…), so a host pointer is never mistaken for device
/// memory.
const BASE: u64 = 1 << 48;
/// Address space per device (64 TiB: four times the most memory a topology's device may have).
const SPAN: u64 = 1 << 46;
/// Where `cuMemAddressReserve` ranges start (after [`MAX_DEVICES`] devices' ranges), and their
/// space.
const VA_BASE: u64 = BASE + MAX_DEVICES as u64 * SPAN;
const VA_SPAN: u64 = 1 << 44;
// Every device range and the reservations fit in 64 bits without meeting.
const _: () = assert!(VA_BASE.checked_add(VA_SPAN).is_some() && BASE > (1 << 47));
/// Whether `addr` lies where the simulator places device memory (and never host memory).
pub(super) fn in_device_range(addr: u64) -> bool {
    addr >= BASE
}

/// Allocation alignment, as `cuMemAlloc` documents (256 bytes).
pub(super) const ALIGN: u64 = 256;
/// The virtual-memory granularity the H200s report (2 MiB).
pub(super) const GRANULE: u64 = 2 << 20;
/// From this size on, an allocation's bytes are a mapping reserved without committing memory
/// (below it, a vector: the fastest to reach).
const RESERVED_FROM: usize = 1 << 20;

/// Where one allocation's bytes are.
enum Store {
    /// In this process alone (never exported): a plain vector, the fastest.
    Private(Vec<u8>),
    /// In a shared file mapped here: exported from here, or imported from another process (or
    /// another simulator of this one). A fork of the simulator keeps sharing it (as it would
    /// `MAP_SHARED` memory).
    Shared(SharedFile),
    /// At a fixed address of this process, where the host reads and writes them too.
    Host(HostBytes),
    /// In a mapping of this process alone whose pages are committed when first written: a
    /// large allocation, which the host's memory need not hold whole.
    Reserved(HostBytes),
}

/// Bytes at a fixed host address: mapped here for the simulator (page-locked, managed, pool
/// memory on the host; unmapped when the last block using them goes), or the caller's own
/// (`cuMemHostRegister`), which the caller keeps mapped until it unregisters them.
pub(super) struct HostBytes {
    at: std::ptr::NonNull<u8>,
    len: usize,
    owned: bool,
}

// SAFETY: the bytes are reached only through the backing's lock (and by the host program, whose
// accesses racing the driver's are its own, as on a GPU).
unsafe impl Send for HostBytes {}

impl HostBytes {
    /// `len > 0` zero bytes in a new anonymous mapping of this process (`flags` beside
    /// `PRIVATE`), or `None` when it cannot be made.
    fn map(len: usize, flags: rustix::mm::MapFlags) -> Option<HostBytes> {
        use rustix::mm::ProtFlags;
        // SAFETY: a new anonymous private mapping touches no existing memory.
        let at =
            unsafe { rustix::mm::mmap_anonymous(std::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, flags) }
                .ok()?;
        Some(HostBytes { at: std::ptr::NonNull::new(at.cast())?, len, owned: true })
    }

    /// `len > 0` zero bytes reserved without committing memory: pages are committed when first
    /// written (and read as zero before), so only what a program writes costs the host.
    fn reserve(len: usize) -> Option<HostBytes> {
        use rustix::mm::MapFlags;
        HostBytes::map(len, MapFlags::PRIVATE | MapFlags::NORESERVE)
    }

    /// All the bytes, to read, for the holder of the backing's lock.
    fn all(&self) -> &[u8] {
        // SAFETY: the bytes stay mapped while this value lives; the backing's lock (held by the
        // caller, who borrows the value) orders the simulator's own accesses.
        unsafe { std::slice::from_raw_parts(self.at.as_ptr(), self.len) }
    }

    /// The bytes, for the holder of the backing's lock.
    fn slice(&mut self, offset: usize, len: usize) -> &mut [u8] {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len), "range checked by the caller");
        // SAFETY: inside the bytes, which stay mapped while this value lives; the backing's lock
        // (held by the caller, who holds `&mut self`) orders the simulator's own accesses.
        unsafe { std::slice::from_raw_parts_mut(self.at.as_ptr().add(offset), len) }
    }
}

impl Drop for HostBytes {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: `mmap_anonymous` gave these `len` bytes in `Backing::host`, and no block
            // holds them any more.
            let _ = unsafe { rustix::mm::munmap(self.at.as_ptr().cast(), self.len) };
        }
    }
}

/// The bytes of one allocation; clones share them. The lock orders this process's threads (and
/// lets an export move the bytes into a shared file under every block that maps them); the
/// shared file's own lock word orders every mapping in every process.
#[derive(Clone)]
pub(super) struct Backing(Arc<Mutex<Store>>);

impl Backing {
    /// `len` zero bytes, or `None` when this machine cannot give them: a simulated GPU may hold
    /// more than the host, and `vec![0; len]` would abort the whole process there.
    pub(super) fn zeroed(len: usize) -> Option<Backing> {
        if len == 0 {
            return Some(Backing(Arc::new(Mutex::new(Store::Private(Vec::new())))));
        }
        if len >= RESERVED_FROM {
            return Some(Backing(Arc::new(Mutex::new(Store::Reserved(HostBytes::reserve(len)?)))));
        }
        let layout = std::alloc::Layout::array::<u8>(len).ok()?;
        // SAFETY: `layout` has a non-zero size. The pages are zeroed lazily by the allocator
        // (calloc), so a large allocation costs only what is touched.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return None;
        }
        // SAFETY: `ptr` came from the global allocator with `u8`'s alignment and `len` bytes, all
        // initialised (zeroed), which is what `Vec<u8>` with capacity `len` owns and frees.
        let bytes = unsafe { Vec::from_raw_parts(ptr, len, len) };
        Some(Backing(Arc::new(Mutex::new(Store::Private(bytes)))))
    }

    /// `len > 0` zero bytes at a new, page-aligned host address, or `None` when this machine
    /// cannot map them.
    pub(super) fn host(len: usize) -> Option<Backing> {
        use rustix::mm::MapFlags;
        let bytes = HostBytes::map(len, MapFlags::PRIVATE)?;
        Some(Backing(Arc::new(Mutex::new(Store::Host(bytes)))))
    }

    /// The caller's `len > 0` bytes at `at`.
    ///
    /// # Safety
    /// `[at, at + len)` stays mapped, readable and writable while any block holds this backing.
    pub(super) unsafe fn registered(at: std::ptr::NonNull<u8>, len: usize) -> Backing {
        Backing(Arc::new(Mutex::new(Store::Host(HostBytes { at, len, owned: false }))))
    }

    /// Where the bytes are in this process, for bytes at a host address.
    pub(super) fn host_address(&self) -> Option<u64> {
        match &*self.lock() {
            Store::Host(bytes) => Some(bytes.at.as_ptr() as u64),
            _ => None,
        }
    }

    /// The bytes of a shared file opened here.
    pub(super) fn mapped(file: SharedFile) -> Backing {
        Backing(Arc::new(Mutex::new(Store::Shared(file))))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on `[offset, offset + len)` with the bytes locked: one atomic step for every
    /// process that maps them. The caller has checked the range.
    pub(super) fn with<R>(&self, offset: usize, len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
        match &mut *self.lock() {
            Store::Private(bytes) => f(&mut bytes[offset..offset + len]),
            Store::Shared(file) => file.with(offset, len, f),
            Store::Host(bytes) | Store::Reserved(bytes) => f(bytes.slice(offset, len)),
        }
    }

    /// Where another process finds these bytes, moving them into a shared file described by
    /// `header` on the first export (every block mapping them follows). Bytes already shared
    /// under another description (another kind, pool or device) are `CUDA_ERROR_INVALID_VALUE`;
    /// a shared file that cannot be made is `CUDA_ERROR_OPERATING_SYSTEM`.
    pub(super) fn share(&self, header: Header) -> Result<Locator, CudaCode> {
        let mut store = self.lock();
        match &*store {
            Store::Shared(file) if file.header() == header => Ok(file.locator()),
            Store::Shared(_) => Err(CudaCode::CUDA_ERROR_INVALID_VALUE),
            Store::Host(_) => Err(CudaCode::CUDA_ERROR_NOT_SUPPORTED),
            Store::Private(bytes) => {
                let file = SharedFile::create(header, bytes).map_err(|_| CudaCode::CUDA_ERROR_OPERATING_SYSTEM)?;
                let at = file.locator();
                *store = Store::Shared(file);
                Ok(at)
            }
            Store::Reserved(bytes) => {
                let file =
                    SharedFile::create(header, bytes.all()).map_err(|_| CudaCode::CUDA_ERROR_OPERATING_SYSTEM)?;
                let at = file.locator();
                *store = Store::Shared(file);
                Ok(at)
            }
        }
    }

    /// For a forked process: the same backing when shared, else a private copy (one per
    /// original, so blocks that shared a backing still share the copy).
    pub(super) fn forked(&self, copies: &mut HashMap<usize, Backing>) -> Backing {
        let key = Arc::as_ptr(&self.0) as usize;
        if let Some(copy) = copies.get(&key) {
            return copy.clone();
        }
        let copy = match &*self.lock() {
            // The host's own memory is one for the process and its fork alike.
            Store::Shared(_) | Store::Host(_) => return self.clone(),
            Store::Private(bytes) => Backing(Arc::new(Mutex::new(Store::Private(bytes.clone())))),
            Store::Reserved(bytes) => {
                let mut copy = HostBytes::reserve(bytes.len).expect("a fork's copy of an allocation is reserved");
                // Only the pages written so far: the rest read as zero in the copy too.
                let len = bytes.len;
                for (page, into) in bytes.all().chunks(4096).zip(copy.slice(0, len).chunks_mut(4096)) {
                    if page.iter().any(|&b| b != 0) {
                        into.copy_from_slice(page);
                    }
                }
                Backing(Arc::new(Mutex::new(Store::Reserved(copy))))
            }
        };
        copies.insert(key, copy.clone());
        copy
    }
}

/// How a block came to be in this process's address space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Origin {
    /// `cuMemAlloc` or `cuMemAllocFromPoolAsync` here; counts against the device's memory.
    Allocated,
    /// `cuMemPoolImportPointer`: another process's pool allocation.
    Imported,
    /// `cuIpcOpenMemHandle`: another process's `cuMemAlloc` memory.
    IpcOpened,
    /// `cuMemMap` of a `cuMemCreate` allocation, with its own per-device access (`cuMemSetAccess`).
    Mapped {
        /// The allocation handle.
        allocation: u64,
        /// By device ordinal.
        access: Vec<Access>,
    },
    /// Memory at a host address, which the host reads and writes itself; never charged to a
    /// device.
    Host(HostKind),
    /// A module's global variable (`cuModuleGetGlobal`): it goes with its module, never by
    /// `cuMemFree`, and is not charged to the device.
    ModuleGlobal,
}

/// What memory at a host address is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum HostKind {
    /// `cuMemAllocHost`, `cuMemHostAlloc`: the flags `cuMemHostGetFlags` reports, and the context
    /// it was made in.
    PageLocked { flags: u32, ctx: u64 },
    /// `cuMemHostRegister`: the caller's memory, as for page-locked memory; the driver may not
    /// write it when registered read-only.
    Registered { flags: u32, ctx: u64, read_only: bool },
    /// `cuMemAllocManaged` or a managed pool's allocation, with the advice given for it.
    Managed(Advice),
    /// An allocation from a pool located on the host.
    PoolOnHost,
}

/// Where managed memory is preferred, was prefetched, or is accessed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    Device(usize),
    Host,
}

/// The advice given for a managed allocation and where it was last prefetched to, as
/// `cuMemRangeGetAttribute` reads them back (kept for the whole allocation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Advice {
    pub(super) read_mostly: bool,
    pub(super) preferred: Option<Place>,
    /// Devices, in the order the advice named them.
    pub(super) accessed_by: Vec<usize>,
    pub(super) last_prefetch: Option<Place>,
}

/// One range of mapped device memory.
#[derive(Clone)]
pub(super) struct Block {
    pub(super) base: u64,
    pub(super) device: usize,
    /// The pool's index in the simulator's pool list; `None` outside pools.
    pub(super) pool: Option<usize>,
    pub(super) origin: Origin,
    /// `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS` as `cuPointerSetAttribute` set it (every operation is
    /// synchronous here: it changes nothing but what reads back).
    pub(super) sync_memops: bool,
    len: u64,
    backing: Backing,
}

impl Block {
    pub(super) fn size(&self) -> u64 {
        self.len
    }

    pub(super) fn backing(&self) -> &Backing {
        &self.backing
    }

    /// A copy of `[offset, offset + len)` (checked by the caller).
    pub(super) fn read(&self, offset: usize, len: usize) -> Vec<u8> {
        self.backing.with(offset, len, |bytes| bytes.to_vec())
    }

    /// Writes `data` at `offset` (checked by the caller).
    pub(super) fn write(&self, offset: usize, data: &[u8]) {
        self.backing.with(offset, data.len(), |bytes| bytes.copy_from_slice(data));
    }
}

/// Every live mapping of every device, and the reserved virtual ranges.
#[derive(Clone)]
pub(super) struct Memory {
    /// Each device's range of addresses, from its start.
    spaces: Vec<AddressSpace>,
    live: Vec<u64>,
    blocks: BTreeMap<u64, Block>,
    /// The reserved virtual ranges' addresses, from [`VA_BASE`].
    va: AddressSpace,
    reservations: BTreeMap<u64, u64>,
}

/// Why memory could not be reserved.
pub(super) enum Exhausted {
    /// More than the device's total memory would be live.
    Capacity,
    /// The device's address range is used up (64 TiB live at once), or this machine could not
    /// map the bytes.
    AddressSpace,
}

/// The addresses a block of `size` bytes takes: rounded up to [`ALIGN`], with a guard gap of
/// [`ALIGN`] after it, so that a kernel running past its end faults.
fn step(size: u64) -> u64 {
    size.div_ceil(ALIGN).saturating_add(1).saturating_mul(ALIGN)
}

impl Memory {
    pub(super) fn new(devices: usize) -> Memory {
        Memory {
            spaces: vec![AddressSpace::default(); devices],
            live: vec![0; devices],
            blocks: BTreeMap::new(),
            va: AddressSpace::default(),
            reservations: BTreeMap::new(),
        }
    }

    /// Counts `size` more bytes against `device`'s `capacity`.
    pub(super) fn charge(&mut self, device: usize, size: u64, capacity: u64) -> Result<(), Exhausted> {
        let live = self.live[device];
        if live.checked_add(size).is_none_or(|total| total > capacity) {
            return Err(Exhausted::Capacity);
        }
        self.live[device] = live + size;
        Ok(())
    }

    /// Bytes live on `device` (allocated here, not imported).
    pub(super) fn live(&self, device: usize) -> u64 {
        self.live[device]
    }

    /// Gives back what [`Memory::charge`] counted.
    pub(super) fn uncharge(&mut self, device: usize, size: u64) {
        self.live[device] -= size;
    }

    /// A zeroed allocation of `size > 0` bytes on `device`, `capacity` bytes at most live.
    pub(super) fn alloc(
        &mut self,
        device: usize,
        size: u64,
        capacity: u64,
        pool: Option<usize>,
    ) -> Result<u64, Exhausted> {
        let len = usize::try_from(size).map_err(|_| Exhausted::Capacity)?;
        self.charge(device, size, capacity)?;
        // This machine cannot map the bytes before the simulated device is full: out of memory
        // too, and said, since the device's own answers show room.
        let Some(backing) = Backing::zeroed(len) else {
            self.uncharge(device, size);
            peerpool::fault::notice(&format!(
                "peerpool-sim: this machine could not map {size} bytes for an allocation on GPU {device} (its \
                 address space or overcommit limit, vm.overcommit_memory): CUDA_ERROR_OUT_OF_MEMORY"
            ));
            return Err(Exhausted::Capacity);
        };
        self.place(device, backing, size, pool, Origin::Allocated).inspect_err(|_| {
            self.uncharge(device, size);
        })
    }

    /// Maps `backing` (at least `size` bytes) at a new address of `device`'s range, without
    /// charging the device: the memory is charged where it was allocated.
    pub(super) fn place(
        &mut self,
        device: usize,
        backing: Backing,
        size: u64,
        pool: Option<usize>,
        origin: Origin,
    ) -> Result<u64, Exhausted> {
        // Devices past the layout's last range get none, rather than another's addresses.
        if device >= MAX_DEVICES {
            return Err(Exhausted::AddressSpace);
        }
        let offset = self.spaces[device].take(step(size), ALIGN, SPAN).ok_or(Exhausted::AddressSpace)?;
        let base = BASE + device as u64 * SPAN + offset;
        self.blocks.insert(base, Block { base, device, pool, origin, sync_memops: false, len: size, backing });
        Ok(base)
    }

    /// Places host-resident `backing` (of [`Backing::host`] or [`Backing::registered`], `size`
    /// bytes) at its own address; `None` if a block is there already.
    pub(super) fn place_host(
        &mut self,
        device: usize,
        backing: Backing,
        size: u64,
        pool: Option<usize>,
        kind: HostKind,
    ) -> Option<u64> {
        let base = backing.host_address()?;
        if !self.overlapping(base, size).is_empty() {
            return None;
        }
        self.blocks.insert(
            base,
            Block { base, device, pool, origin: Origin::Host(kind), sync_memops: false, len: size, backing },
        );
        Some(base)
    }

    /// Maps `backing` at `base` (a reserved range the caller checked is free).
    pub(super) fn map_at(&mut self, base: u64, device: usize, backing: Backing, size: u64, origin: Origin) {
        self.blocks.insert(base, Block { base, device, pool: None, origin, sync_memops: false, len: size, backing });
    }

    /// Removes the allocation starting exactly at `base` if `cuMemFree` may free it (allocated
    /// or imported pool memory, managed memory, a host pool's memory), giving its memory back.
    pub(super) fn free(&mut self, base: u64) -> Option<Block> {
        let origin = &self.blocks.get(&base)?.origin;
        let freeable = matches!(
            origin,
            Origin::Allocated | Origin::Imported | Origin::Host(HostKind::Managed(_) | HostKind::PoolOnHost)
        );
        if !freeable {
            return None;
        }
        self.remove(base)
    }

    /// Removes the block starting exactly at `base`, whatever its origin.
    pub(super) fn remove(&mut self, base: u64) -> Option<Block> {
        let block = self.blocks.remove(&base)?;
        if block.origin == Origin::Allocated {
            self.live[block.device] -= block.size();
        }
        // A device range's addresses go back to it (host memory and reserved ranges are not
        // its: the host's own, and `cuMemAddressFree`'s).
        if (BASE..VA_BASE).contains(&base) {
            let device = ((base - BASE) / SPAN) as usize;
            self.spaces[device].give(base - BASE - device as u64 * SPAN, step(block.size()));
        }
        Some(block)
    }

    /// The block holding `addr`.
    pub(super) fn find(&self, addr: u64) -> Option<&Block> {
        let (_, block) = self.blocks.range(..=addr).next_back()?;
        (addr < block.base + block.size()).then_some(block)
    }

    /// The block starting exactly at `base`.
    pub(super) fn at(&self, base: u64) -> Option<&Block> {
        self.blocks.get(&base)
    }

    /// Mutable [`Memory::at`].
    pub(super) fn at_mut(&mut self, base: u64) -> Option<&mut Block> {
        self.blocks.get_mut(&base)
    }

    /// The block holding all of `[addr, addr + len)` (`len > 0`), and the offset of `addr` in it.
    pub(super) fn span(&self, addr: u64, len: u64) -> Option<(&Block, usize)> {
        let block = self.find(addr)?;
        let offset = addr - block.base;
        (offset.checked_add(len)? <= block.size()).then_some((block, offset as usize))
    }

    /// Blocks overlapping `[addr, addr + len)`, in address order.
    pub(super) fn overlapping(&self, addr: u64, len: u64) -> Vec<&Block> {
        let end = addr.saturating_add(len);
        let first = self.find(addr).map_or(addr, |b| b.base);
        self.blocks.range(first..end).map(|(_, b)| b).filter(|b| b.base + b.size() > addr).collect()
    }

    /// How many allocations are live, and their bytes.
    pub(super) fn totals(&self) -> (usize, u64) {
        (self.blocks.len(), self.live.iter().sum())
    }

    // ---- reserved virtual ranges ----

    /// A new range of `size` bytes aligned to `align` (both multiples of [`GRANULE`]), with a
    /// granule of guard after it.
    pub(super) fn reserve(&mut self, size: u64, align: u64) -> Result<u64, Exhausted> {
        let len = size.checked_add(GRANULE).ok_or(Exhausted::AddressSpace)?;
        let offset = self.va.take(len, align.max(GRANULE), VA_SPAN).ok_or(Exhausted::AddressSpace)?;
        let start = VA_BASE + offset;
        self.reservations.insert(start, size);
        Ok(start)
    }

    /// Whether `[addr, addr + len)` lies inside one reserved range.
    pub(super) fn reserved(&self, addr: u64, len: u64) -> bool {
        let Some((&start, &size)) = self.reservations.range(..=addr).next_back() else { return false };
        addr.checked_add(len).is_some_and(|end| end <= start + size)
    }

    /// Ends the reservation `(base, size)` exactly; `false` if there is none.
    pub(super) fn unreserve(&mut self, base: u64, size: u64) -> bool {
        if self.reservations.get(&base) != Some(&size) {
            return false;
        }
        self.reservations.remove(&base);
        self.va.give(base - VA_BASE, size + GRANULE);
        true
    }

    pub(super) fn reservation_count(&self) -> usize {
        self.reservations.len()
    }

    /// Gives this copy (a forked process) private bytes wherever the bytes are not shared.
    pub(super) fn fork_bytes(&mut self, copies: &mut HashMap<usize, Backing>) {
        for block in self.blocks.values_mut() {
            block.backing = block.backing.forked(copies);
        }
    }
}

/// Passes bytes over a faulty link: those at offsets 0, period, … of the transfer change, where
/// `data` begins `start` bytes into it (a kernel's accesses are placed in their allocation, so
/// they meet the same bytes however a kernel splits them). `old` is what the destination held
/// (a write); `None` for a read, where lost bytes read as 0. Touches only the affected bytes.
pub(super) fn apply_fault(fault: LinkFault, start: usize, data: &mut [u8], old: Option<&[u8]>) {
    let period = usize::try_from(fault.period).unwrap_or(usize::MAX).max(1);
    let first = (period - start % period) % period;
    for i in (first..data.len()).step_by(period) {
        data[i] = match fault.kind {
            FaultKind::Corrupt => data[i] ^ fault.xor,
            FaultKind::Drop => old.and_then(|o| o.get(i).copied()).unwrap_or(0),
        };
    }
}
