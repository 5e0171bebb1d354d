//! Simulated inter-process sharing: pool and pointer export and import, legacy IPC handles,
//! and the pointer attributes that tell them apart (as measured on the H200s, `HARDWARE.md`).
//!
//! An import maps the exporter's bytes (one [`Backing`](super::memory::Backing)) into the
//! importing simulator, so a write on either side is seen by the other. Access does not
//! travel: an imported pool is a new pool in the importer, read-write for its owner only.

use super::memory::{Backing, Origin};
use super::registry::{self, Blob, Entry};
use super::state::{Fail, SimResult, State};
use cudarc::driver::sys::CUresult::{self, *};
use peerpool::driver::{
    FabricHandle, HandleTypes, IpcMemHandle, PointerAttribute, PoolPtrExportData, ShareHandle, ShareableHandle,
    ShareableRef,
};
use std::collections::HashMap;

/// One `cuMemCreate` (or imported) allocation.
#[derive(Clone)]
pub(super) struct Physical {
    pub(super) device: usize,
    pub(super) size: u64,
    pub(super) handle_types: HandleTypes,
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
    /// Exported pools (by index) and their registry tokens.
    pub(super) pool_tokens: HashMap<usize, u64>,
    /// Imported pools (by index) and the tokens they came from.
    pub(super) imported_pools: HashMap<usize, u64>,
    /// Physical allocations by handle.
    pub(super) physical: HashMap<u64, Physical>,
}

pub(super) fn invalid<T>() -> SimResult<T> {
    Err(CUDA_ERROR_INVALID_VALUE.into())
}

pub(super) fn fail<T>(code: CUresult) -> SimResult<T> {
    Err(code.into())
}

/// Private bytes for a forked process, except where they are shared with another process.
pub(super) fn fork_bytes(s: &mut State) {
    let mut copies = HashMap::new();
    s.memory.fork_bytes(&mut copies);
    for physical in s.shares.physical.values_mut() {
        physical.backing = physical.backing.forked(&mut copies);
    }
}

/// An export handle of `kind` for `token`.
pub(super) fn handle_for(token: u64, kind: ShareHandle, fabric: Blob) -> SimResult<ShareableHandle> {
    match kind {
        ShareHandle::PosixFd => registry::export_fd(token).map(ShareableHandle::Fd).map_err(Fail::from),
        ShareHandle::Fabric => Ok(ShareableHandle::Fabric(FabricHandle(registry::seal(fabric, token)))),
    }
}

/// The registry token an export handle carries, and what it names.
pub(super) fn entry_of(handle: ShareableRef<'_>, fabric: Blob) -> Option<(u64, Entry)> {
    let token = match handle {
        ShareableRef::Fd(fd) => registry::fd_token(fd),
        ShareableRef::Fabric(bytes) => registry::unseal(fabric, &bytes.0),
    }?;
    Some((token, registry::lookup(token)?))
}

/// The pool's registry token, registered on first use.
fn pool_token(s: &mut State, id: usize) -> u64 {
    if let Some(&token) = s.shares.pool_tokens.get(&id) {
        return token;
    }
    let pool = &s.pools[id];
    let token = registry::register(Entry::Pool { device: pool.device, handle_types: pool.handle_types });
    s.shares.pool_tokens.insert(id, token);
    token
}

/// `cuMemPoolExportToShareableHandle`: only pools created with `kind`, and not imported ones.
pub(super) fn pool_export(s: &mut State, pool: u64, kind: ShareHandle) -> SimResult<ShareableHandle> {
    let id = s.pool(pool)?;
    if s.shares.imported_pools.contains_key(&id) || !s.pools[id].handle_types.contains(kind.bits()) {
        return invalid();
    }
    let token = pool_token(s, id);
    handle_for(token, kind, Blob::FabricPool)
}

/// `cuMemPoolImportFromShareableHandle`: a new pool here, read-write for its owner only.
pub(super) fn pool_import(s: &mut State, handle: ShareableRef<'_>) -> SimResult<u64> {
    let Some((token, Entry::Pool { device, handle_types })) = entry_of(handle, Blob::FabricPool) else {
        return invalid();
    };
    if !handle_types.contains(handle.kind().bits()) {
        return invalid();
    }
    let Some(device) = s.in_range(device as i32) else { return fail(CUDA_ERROR_INVALID_DEVICE) };
    let id = s.new_pool(device, handle_types, 0);
    s.shares.imported_pools.insert(id, token);
    Ok(s.pools[id].handle)
}

/// `cuMemPoolExportPointer`: the start of a live allocation of a live, exportable pool here.
pub(super) fn pointer_export(s: &mut State, ptr: u64) -> SimResult<PoolPtrExportData> {
    let Some(block) = s.memory.at(ptr) else { return invalid() };
    let (Some(id), Origin::Allocated) = (block.pool, &block.origin) else { return invalid() };
    let (backing, len, device) = (block.backing().clone(), block.size(), block.device);
    if s.pool(s.pools[id].handle).is_err() || s.pools[id].handle_types == HandleTypes::NONE {
        return invalid();
    }
    backing.share();
    let pool = pool_token(s, id);
    let token = registry::register(Entry::Pointer { pool, backing: backing.downgrade(), len, device });
    Ok(PoolPtrExportData(registry::seal(Blob::Pointer, token)))
}

/// `cuMemPoolImportPointer`: data exported from the pool `pool` was imported from, whose
/// allocation is still live in the exporter.
pub(super) fn pointer_import(s: &mut State, pool: u64, data: &PoolPtrExportData) -> SimResult<u64> {
    let id = s.pool(pool)?;
    let Some(&pool_token) = s.shares.imported_pools.get(&id) else { return invalid() };
    let entry = registry::unseal(Blob::Pointer, &data.0).and_then(registry::lookup);
    let Some(Entry::Pointer { pool, backing, len, device }) = entry else { return invalid() };
    let Some(backing) = backing.upgrade().filter(|_| pool == pool_token) else { return invalid() };
    s.memory.place(device, backing, len, Some(id), Origin::Imported).map_err(|_| CUDA_ERROR_OUT_OF_MEMORY.into())
}

/// `cuIpcGetMemHandle`: the start of `cuMemAlloc` memory only. Pool and virtual memory are
/// `CUDA_ERROR_INVALID_VALUE`, as measured for pool memory.
pub(super) fn ipc_get(s: &mut State, ptr: u64) -> SimResult<IpcMemHandle> {
    s.current_device()?;
    let Some(block) = s.memory.at(ptr) else { return invalid() };
    if block.pool.is_some() || block.origin != Origin::Allocated {
        return invalid();
    }
    let (backing, len, device) = (block.backing().clone(), block.size(), block.device);
    backing.share();
    let token = registry::register(Entry::Legacy { backing: backing.downgrade(), len, device });
    Ok(IpcMemHandle(registry::seal(Blob::Legacy, token)))
}

/// `cuIpcOpenMemHandle`: maps the exporter's live `cuMemAlloc` memory here.
pub(super) fn ipc_open(s: &mut State, handle: &IpcMemHandle) -> SimResult<u64> {
    s.current_device()?;
    let entry = registry::unseal(Blob::Legacy, &handle.0).and_then(registry::lookup);
    let Some(Entry::Legacy { backing, len, device }) = entry else { return invalid() };
    let Some(device) = s.in_range(device as i32) else { return fail(CUDA_ERROR_INVALID_DEVICE) };
    let Some(backing) = backing.upgrade() else { return invalid() };
    s.memory.place(device, backing, len, None, Origin::IpcOpened).map_err(|_| CUDA_ERROR_OUT_OF_MEMORY.into())
}

/// `cuIpcCloseMemHandle`: the address `cuIpcOpenMemHandle` returned.
pub(super) fn ipc_close(s: &mut State, ptr: u64) -> SimResult<()> {
    match s.memory.at(ptr) {
        Some(block) if block.origin == Origin::IpcOpened => {
            s.memory.remove(ptr);
            Ok(())
        }
        _ => invalid(),
    }
}

/// `cuPointerGetAttribute`. Measured: pool memory of a POSIX-fd pool is 0 / 0x1 / the pool;
/// `cuMemAlloc` memory 1 / 0 / null; a `cuMemCreate` mapping 0 / its handle types / null.
pub(super) fn attribute(s: &State, ptr: u64, attribute: PointerAttribute) -> SimResult<u64> {
    let Some(block) = s.memory.find(ptr) else { return invalid() };
    let pool = block.pool.map(|p| &s.pools[p]);
    let physical = match &block.origin {
        Origin::Mapped { allocation, .. } => s.shares.physical.get(allocation),
        _ => None,
    };
    let handle_types = pool.map(|p| p.handle_types).or(physical.map(|p| p.handle_types));
    let legacy = pool.is_none() && block.origin == Origin::Allocated;
    Ok(match attribute {
        PointerAttribute::DeviceOrdinal => block.device as u64,
        PointerAttribute::MempoolHandle => pool.map_or(0, |p| p.handle),
        PointerAttribute::IsLegacyCudaIpcCapable => legacy as u64,
        PointerAttribute::AllowedHandleTypes => handle_types.map_or(0, |t| t.0 as u64),
        PointerAttribute::RangeStartAddr => block.base,
        PointerAttribute::RangeSize => block.size(),
        // Device memory (CU_MEMORYTYPE_DEVICE), never managed, addressed as given, mapped.
        PointerAttribute::MemoryType => 2,
        PointerAttribute::IsManaged => 0,
        PointerAttribute::DevicePointer => ptr,
        PointerAttribute::Mapped => 1,
        // Only `cuMemAlloc` memory belongs to a context.
        PointerAttribute::Context => s.legacy_owner.get(&block.base).copied().filter(|_| legacy).unwrap_or(0),
    })
}
