//! The simulated virtual-memory API: `cuMemCreate` allocations, reserved address ranges,
//! mappings with their own per-device access, and their export and import.
//!
//! Sizes, addresses and alignments are multiples of the 2 MiB granularity the H200s report.
//! A fresh mapping is reachable by no device, its owner included, until `cuMemSetAccess`.

use super::handles::{self, Blob};
use super::memory::{Backing, GRANULE, Origin};
use super::share::{fail, invalid, machine_index, open_import};
use super::shared_file::{Header, Kind};
use super::state::{Fail, Physical, SimResult, State};
use peerpool::CudaCode;
use peerpool::driver::{Access, AccessDesc, AllocationProps, ExportedHandle, ExportedHandleRef, HandleKind};

/// `cuMemGetAllocationGranularity`: 2 MiB for a device that supports the handle types.
pub(super) fn granularity(s: &State, props: &AllocationProps) -> SimResult<usize> {
    let Some(device) = s.in_range(props.device) else { return invalid() };
    if !s.topo.devices[device].pool_handle_types.contains(props.handle_types) {
        return fail(CudaCode::CUDA_ERROR_NOT_SUPPORTED);
    }
    Ok(GRANULE as usize)
}

/// `cuMemCreate`: a granule multiple, charged to the device.
pub(super) fn create(s: &mut State, bytes: usize, props: &AllocationProps) -> SimResult<u64> {
    granularity(s, props)?;
    let size = bytes as u64;
    if size == 0 || !size.is_multiple_of(GRANULE) {
        return invalid();
    }
    let device = props.device as usize;
    let capacity = s.topo.devices[device].total_memory;
    s.memory.charge(device, size, capacity).map_err(|_| CudaCode::CUDA_ERROR_OUT_OF_MEMORY)?;
    let Some(backing) = Backing::zeroed(bytes) else {
        // This machine's memory runs out before the simulated device's.
        s.memory.uncharge(device, size);
        return Err(CudaCode::CUDA_ERROR_OUT_OF_MEMORY.into());
    };
    let handle = s.mint();
    let physical =
        Physical { device, size, handle_types: props.handle_types, backing, refs: 1, mappings: 0, imported: false };
    s.shares.physical.insert(handle, physical);
    Ok(handle)
}

/// `cuMemAddressReserve`.
pub(super) fn reserve(s: &mut State, bytes: usize, alignment: usize) -> SimResult<u64> {
    let (size, align) = (bytes as u64, alignment as u64);
    if size == 0 || size % GRANULE != 0 || (align != 0 && !align.is_power_of_two()) {
        return invalid();
    }
    s.memory.reserve(size, align).map_err(|_| CudaCode::CUDA_ERROR_OUT_OF_MEMORY.into())
}

/// `cuMemMap`: a free, granule-aligned part of one reservation; no device has access yet.
pub(super) fn map(s: &mut State, ptr: u64, bytes: usize, offset: usize, handle: u64) -> SimResult<()> {
    let size = bytes as u64;
    let Some(physical) = s.shares.physical.get(&handle).filter(|p| p.refs > 0) else { return invalid() };
    if offset != 0 || size == 0 || !size.is_multiple_of(GRANULE) || !ptr.is_multiple_of(GRANULE) || size > physical.size
    {
        return invalid();
    }
    if !s.memory.reserved(ptr, size) || !s.memory.overlapping(ptr, size).is_empty() {
        return invalid();
    }
    let (device, backing) = (physical.device, physical.backing.clone());
    let access = vec![Access::None; s.count()];
    s.memory.map_at(ptr, device, backing, size, Origin::Mapped { allocation: handle, access });
    if let Some(physical) = s.shares.physical.get_mut(&handle) {
        physical.mappings += 1;
    }
    Ok(())
}

/// The mappings that exactly tile `[ptr, ptr + size)`, else `CUDA_ERROR_INVALID_VALUE`.
fn tiling(s: &State, ptr: u64, size: u64) -> SimResult<Vec<u64>> {
    let blocks = s.memory.overlapping(ptr, size);
    let mut at = ptr;
    for block in &blocks {
        if block.base != at || !matches!(block.origin, Origin::Mapped { .. }) {
            return invalid();
        }
        at = block.base + block.size();
    }
    if size == 0 || Some(at) != ptr.checked_add(size) {
        return invalid();
    }
    Ok(blocks.iter().map(|b| b.base).collect())
}

/// `cuMemSetAccess`: every descriptor checked before any applies (as pools do); read-only
/// and peers without a path are refused like `cuMemPoolSetAccess` refuses them.
pub(super) fn set_access(s: &mut State, ptr: u64, bytes: usize, map: &[AccessDesc]) -> SimResult<()> {
    let bases = tiling(s, ptr, bytes as u64)?;
    for desc in map {
        let Some(device) = s.in_range(desc.device) else { return fail(CudaCode::CUDA_ERROR_INVALID_DEVICE) };
        if desc.access == Access::Read {
            return fail(CudaCode::CUDA_ERROR_NOT_SUPPORTED);
        }
        for base in &bases {
            let owner = s.memory.at(*base).map_or(device, |b| b.device);
            if desc.access == Access::ReadWrite && device != owner && !s.topo.link(device, owner).access {
                return fail(CudaCode::CUDA_ERROR_INVALID_DEVICE);
            }
        }
    }
    for base in bases {
        if let Some(Origin::Mapped { access, .. }) = s.memory.at_mut(base).map(|b| &mut b.origin) {
            for desc in map {
                access[desc.device as usize] = desc.access; // in order: the last entry wins
            }
        }
    }
    Ok(())
}

/// Drops the allocation once nothing refers to it, giving back what it charged.
fn settle(s: &mut State, handle: u64) {
    let Some(physical) = s.shares.physical.get(&handle) else { return };
    if physical.refs == 0 && physical.mappings == 0 {
        let (device, size, imported) = (physical.device, physical.size, physical.imported);
        s.shares.physical.remove(&handle);
        if !imported {
            s.memory.uncharge(device, size);
        }
    }
}

/// `cuMemUnmap`: whole mappings exactly tiling the range.
pub(super) fn unmap(s: &mut State, ptr: u64, bytes: usize) -> SimResult<()> {
    for base in tiling(s, ptr, bytes as u64)? {
        let Some(block) = s.memory.remove(base) else { continue };
        if let Origin::Mapped { allocation, .. } = block.origin {
            if let Some(physical) = s.shares.physical.get_mut(&allocation) {
                physical.mappings -= 1;
            }
            settle(s, allocation);
        }
    }
    Ok(())
}

/// `cuMemAddressFree`: exactly one reservation, with nothing mapped in it.
pub(super) fn address_free(s: &mut State, ptr: u64, bytes: usize) -> SimResult<()> {
    if !s.memory.overlapping(ptr, bytes as u64).is_empty() || !s.memory.unreserve(ptr, bytes as u64) {
        return invalid();
    }
    Ok(())
}

/// `cuMemRelease`: one reference; the memory goes with the last reference and mapping.
pub(super) fn release(s: &mut State, handle: u64) -> SimResult<()> {
    let Some(physical) = s.shares.physical.get_mut(&handle).filter(|p| p.refs > 0) else { return invalid() };
    physical.refs -= 1;
    settle(s, handle);
    Ok(())
}

/// `cuMemExportToShareableHandle`: only with a handle type the allocation was created with.
pub(super) fn export(s: &mut State, handle: u64, kind: HandleKind) -> SimResult<ExportedHandle> {
    let Some(physical) = s.shares.physical.get(&handle).filter(|p| p.refs > 0) else { return invalid() };
    if !physical.handle_types.contains(kind.bits()) {
        return invalid();
    }
    let (device, handle_types) = (machine_index(s, physical.device), physical.handle_types);
    let at = physical.backing.share(Header { kind: Kind::Allocation, device, handle_types, pool: 0 })?;
    handles::handle_for(at, kind, Blob::FabricAllocation).map_err(Fail::from)
}

/// `cuMemImportFromShareableHandle`: a new handle here to the exporter's live allocation.
pub(super) fn import(s: &mut State, handle: ExportedHandleRef<'_>) -> SimResult<u64> {
    let (file, header, device) = open_import(s, handle, Blob::FabricAllocation, Kind::Allocation)?;
    let (size, handle_types, backing) = (file.len() as u64, header.handle_types, Backing::mapped(file));
    let minted = s.mint();
    let physical = Physical { device, size, handle_types, backing, refs: 1, mappings: 0, imported: true };
    s.shares.physical.insert(minted, physical);
    Ok(minted)
}

/// `cuMemRetainAllocationHandle`: any address inside a mapping.
pub(super) fn retain(s: &mut State, ptr: u64) -> SimResult<u64> {
    let Some(Origin::Mapped { allocation, .. }) = s.memory.find(ptr).map(|b| &b.origin) else { return invalid() };
    let allocation = *allocation;
    let Some(physical) = s.shares.physical.get_mut(&allocation) else { return invalid() };
    physical.refs += 1;
    Ok(allocation)
}
