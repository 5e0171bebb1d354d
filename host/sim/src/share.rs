//! Simulated inter-process sharing: pool and pointer export and import, legacy IPC handles,
//! and the pointer attributes that tell them apart (as measured on the H200s, `docs/hardware/2026-11-30-foundation`).
//!
//! An export moves the allocation's bytes into a shared file (`shared_file.rs`) and hands out
//! a handle naming it (`handles.rs`); an import, in another process or in another simulator
//! of this one, maps that file, so a write on either side is seen by the other. Access does not
//! travel: an imported pool is a new pool in the importer, read-write for its owner only.

use super::handles::{self, Blob};
use super::memory::{Backing, HostKind, Origin};
use super::shared_file::{Header, Kind, SharedFile};
use super::state::{Fail, SimResult, State};
use peerpool::CudaCode;
use peerpool::driver::{
    ExportedHandle, ExportedHandleRef, HandleKind, HandleKinds, IpcMemHandle, PointerAttribute, PoolPtrExportData,
};
use std::sync::Arc;

pub(super) fn invalid<T>() -> SimResult<T> {
    Err(CudaCode::CUDA_ERROR_INVALID_VALUE.into())
}

pub(super) fn fail<T>(code: CudaCode) -> SimResult<T> {
    Err(code.into())
}

/// The device a received header names (by its index on the machine: processes that see
/// different devices, `CUDA_VISIBLE_DEVICES`, number them differently), if this process sees it.
pub(super) fn device_of(s: &State, header: &Header) -> SimResult<usize> {
    s.topo.ordinal_of(header.device as usize).map_or_else(|| fail(CudaCode::CUDA_ERROR_INVALID_DEVICE), Ok)
}

/// What a header says of this process's `device`: its index on the machine.
pub(super) fn machine_index(s: &State, device: usize) -> u32 {
    s.topo.physical(device).unwrap_or(device) as u32
}

/// The file an imported `handle` of `blob` names, with its header and the device it names here.
/// A handle to something other than `kind`, or of a type its exporter did not allow, is invalid.
pub(super) fn open_import(
    s: &State,
    handle: ExportedHandleRef<'_>,
    blob: Blob,
    kind: Kind,
) -> SimResult<(SharedFile, Header, usize)> {
    let Some(file) = handles::open(handle, blob) else { return invalid() };
    let header = file.header();
    if header.kind != kind || !header.handle_types.contains(handle.kind().bits()) {
        return invalid();
    }
    let device = device_of(s, &header)?;
    Ok((file, header, device))
}

/// The pool's file, made on first use.
fn pool_file(s: &mut State, id: usize) -> SimResult<Arc<SharedFile>> {
    if let Some(file) = s.shares.pool_files.get(&id) {
        return Ok(file.clone());
    }
    let pool = &s.pools[id];
    let header =
        Header { kind: Kind::Pool, device: machine_index(s, pool.device), handle_types: pool.handle_types, pool: 0 };
    let file = Arc::new(SharedFile::create(header, &[]).map_err(|_| CudaCode::CUDA_ERROR_OPERATING_SYSTEM)?);
    s.shares.pool_files.insert(id, file.clone());
    Ok(file)
}

/// `cuMemPoolExportToShareableHandle`: only pools created with `kind`, and not imported ones.
pub(super) fn pool_export(s: &mut State, pool: u64, kind: HandleKind) -> SimResult<ExportedHandle> {
    let id = s.pool(pool)?;
    if s.shares.imported_pools.contains_key(&id) || !s.pools[id].handle_types.contains(kind.bits()) {
        return invalid();
    }
    let at = pool_file(s, id)?.locator();
    handles::handle_for(at, kind, Blob::FabricPool).map_err(Fail::from)
}

/// `cuMemPoolImportFromShareableHandle`: a new pool here, read-write for its owner only.
pub(super) fn pool_import(s: &mut State, handle: ExportedHandleRef<'_>) -> SimResult<u64> {
    let (file, header, device) = open_import(s, handle, Blob::FabricPool, Kind::Pool)?;
    let id = s.new_pool(device, header.handle_types, 0);
    s.shares.imported_pools.insert(id, file.nonce());
    Ok(s.pools[id].handle)
}

/// `cuMemPoolExportPointer`: the start of a live allocation of a live, exportable pool here.
pub(super) fn pointer_export(s: &mut State, ptr: u64) -> SimResult<PoolPtrExportData> {
    let Some(block) = s.memory.at(ptr) else { return invalid() };
    let (Some(id), Origin::Allocated) = (block.pool, &block.origin) else { return invalid() };
    let (backing, device) = (block.backing().clone(), machine_index(s, block.device));
    if s.pool(s.pools[id].handle).is_err() || s.pools[id].handle_types == HandleKinds::NONE {
        return invalid();
    }
    let pool = pool_file(s, id)?.nonce();
    let header = Header { kind: Kind::PoolMemory, device, handle_types: s.pools[id].handle_types, pool };
    let at = backing.share(header)?;
    Ok(PoolPtrExportData(handles::seal(Blob::Pointer, at)))
}

/// `cuMemPoolImportPointer`: data exported from the pool `pool` was imported from, whose
/// allocation is still live in the exporter.
pub(super) fn pointer_import(s: &mut State, pool: u64, data: &PoolPtrExportData) -> SimResult<u64> {
    let id = s.pool(pool)?;
    let Some(&pool_nonce) = s.shares.imported_pools.get(&id) else { return invalid() };
    let Some(file) = handles::open_bytes(Blob::Pointer, &data.0) else { return invalid() };
    let (header, device) = (file.header(), s.pools[id].device);
    if header.kind != Kind::PoolMemory || header.pool != pool_nonce || header.device != machine_index(s, device) {
        return invalid();
    }
    let len = file.len() as u64;
    let base = s
        .memory
        .place(device, Backing::mapped(file), len, Some(id), Origin::Imported)
        .map_err(|_| CudaCode::CUDA_ERROR_OUT_OF_MEMORY)?;
    s.count_pool_allocation(id, 1);
    Ok(base)
}

/// `cuIpcGetMemHandle`: the start of `cuMemAlloc` memory only. Pool and virtual memory are
/// `CUDA_ERROR_INVALID_VALUE`, as measured for pool memory.
pub(super) fn ipc_get(s: &mut State, ptr: u64) -> SimResult<IpcMemHandle> {
    s.current_device()?;
    let Some(block) = s.memory.at(ptr) else { return invalid() };
    if block.pool.is_some() || block.origin != Origin::Allocated {
        return invalid();
    }
    let header =
        Header { kind: Kind::Legacy, device: machine_index(s, block.device), handle_types: HandleKinds::NONE, pool: 0 };
    let at = block.backing().share(header)?;
    Ok(IpcMemHandle(handles::seal(Blob::Legacy, at)))
}

/// `cuIpcOpenMemHandle`: maps the exporter's live `cuMemAlloc` memory here.
pub(super) fn ipc_open(s: &mut State, handle: &IpcMemHandle) -> SimResult<u64> {
    s.current_device()?;
    let Some(file) = handles::open_bytes(Blob::Legacy, &handle.0) else { return invalid() };
    if file.header().kind != Kind::Legacy {
        return invalid();
    }
    let device = device_of(s, &file.header())?;
    let len = file.len() as u64;
    s.memory
        .place(device, Backing::mapped(file), len, None, Origin::IpcOpened)
        .map_err(|_| CudaCode::CUDA_ERROR_OUT_OF_MEMORY.into())
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
    let host = match &block.origin {
        Origin::Host(kind) => Some(kind),
        _ => None,
    };
    let managed = matches!(host, Some(HostKind::Managed(_)));
    Ok(match attribute {
        PointerAttribute::DeviceOrdinal => block.device as u64,
        PointerAttribute::MempoolHandle => pool.map_or(0, |p| p.handle),
        PointerAttribute::IsLegacyCudaIpcCapable => legacy as u64,
        PointerAttribute::AllowedHandleTypes => handle_types.map_or(0, |t| t.0 as u64),
        // A pool on the host's memory has no range start (as the H200s answered).
        PointerAttribute::RangeStartAddr if host == Some(&HostKind::PoolOnHost) => 0,
        PointerAttribute::RangeStartAddr => block.base,
        PointerAttribute::RangeSize => block.size(),
        // Host memory (CU_MEMORYTYPE_HOST), else device memory, managed memory included.
        PointerAttribute::MemoryType => {
            if host.is_some() && !managed {
                1
            } else {
                2
            }
        }
        PointerAttribute::IsManaged => managed as u64,
        PointerAttribute::DevicePointer => ptr,
        PointerAttribute::HostPointer if host.is_some() => ptr,
        PointerAttribute::HostPointer => return invalid(),
        PointerAttribute::Mapped => 1,
        // `cuMemAlloc` memory and page-locked memory belong to the context that made them.
        PointerAttribute::Context => match host {
            Some(HostKind::PageLocked { ctx, .. } | HostKind::Registered { ctx, .. }) => *ctx,
            _ => s.legacy_owner.get(&block.base).copied().filter(|_| legacy).unwrap_or(0),
        },
    })
}
