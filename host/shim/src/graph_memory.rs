//! Graph memory: the allocations of allocation nodes, made on the simulator's virtual-memory
//! calls as the driver makes them. An allocation's address is reserved when its node is made
//! and kept across instantiations and launches; physical memory is mapped there when the node
//! runs, with the node's access (the owner's, and each descriptor's), and unmapped by a free
//! node, `cuMemFreeAsync` or `cuMemFree`, or a launch with auto-free. Unmapped memory is kept
//! for the device's next graph allocation (what the graph-memory attributes call reserved)
//! until `cuDeviceGraphMemTrim`.
//!
//! A peer without access faults on a graph allocation as on a pool it was not granted: the
//! simulator checks a mapping's access as it checks a pool's.

use cudarc::driver::sys::{CUmemAccessDesc, CUmemLocationType, CUresult};
use peerpool::driver::DriverResult;
use peerpool::driver::{Access, AccessDesc, AllocationProps, DevicePtr, HandleKinds, MemHandle};
use peerpool_sim::SimDriver;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The granularity graph allocations are reserved and mapped in.
const GRANULE: usize = 2 << 20;

/// What an allocation node asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) bytes: usize,
    pub(crate) device: i32,
    pub(crate) handle_types: HandleKinds,
    /// Besides the owner, which always has read-write access.
    pub(crate) access: Vec<AccessDesc>,
}

struct Alloc {
    request: Request,
    /// Its access descriptors as `cuGraphMemAllocNodeGetParams` hands them out: they live as
    /// long as the allocation.
    descs: Box<[CUmemAccessDesc]>,
    /// A granule multiple.
    size: usize,
    /// The physical memory mapped at the address, and its size, while the allocation is live.
    backing: Option<(MemHandle, usize)>,
    /// A free node frees it: nothing outside a graph may.
    freed_by_node: bool,
}

/// By device ordinal: bytes mapped now and at most, bytes of physical memory held now and at
/// most (`CUgraphMem_attribute`'s four).
#[derive(Clone, Copy, Default)]
struct Usage {
    used: u64,
    used_high: u64,
    reserved: u64,
    reserved_high: u64,
}

#[derive(Default)]
struct Store {
    allocs: HashMap<u64, Alloc>,
    /// Physical memory unmapped and kept, by device: handle and size.
    kept: HashMap<i32, Vec<(MemHandle, usize)>>,
    usage: HashMap<i32, Usage>,
}

static STORE: Mutex<Option<Store>> = Mutex::new(None);
/// Whether any graph allocation was ever made: every `cuMemFree` and `cuMemFreeAsync` asks
/// [`free_outside`] first, and a program without graph memory should not take the lock there.
static ANY: AtomicBool = AtomicBool::new(false);

fn with<T>(f: impl FnOnce(&mut Store) -> T) -> T {
    let mut store = STORE.lock().unwrap_or_else(|e| e.into_inner());
    f(store.get_or_insert_with(Store::default))
}

fn code<T>(r: DriverResult<T>) -> Result<T, CUresult> {
    r.map_err(|e| e.code.to_bindings())
}

/// A new allocation node's allocation: its address, reserved now.
pub(crate) fn reserve(sim: &SimDriver, request: Request) -> Result<u64, CUresult> {
    let count = code(sim.device_get_count())?;
    let in_range = |d: i32| (0..count).contains(&d);
    if request.bytes == 0 || !in_range(request.device) || !request.access.iter().all(|a| in_range(a.device)) {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // As for a pool's access: read-only is refused, and a device without a peer link to the
    // owner cannot be given access.
    for a in request.access.iter().filter(|a| a.device != request.device) {
        match a.access {
            Access::Read => return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED),
            Access::ReadWrite if !code(sim.device_can_access_peer(a.device, request.device))? => {
                return Err(CUresult::CUDA_ERROR_INVALID_DEVICE);
            }
            _ => {}
        }
    }
    let size = request.bytes.div_ceil(GRANULE) * GRANULE;
    let va = code(sim.mem_address_reserve(size, 0))?.0;
    let descs = request.access.iter().map(|a| descriptor(a.device, a.access)).collect();
    with(|s| s.allocs.insert(va, Alloc { request, descs, size, backing: None, freed_by_node: false }));
    ANY.store(true, Ordering::Release);
    Ok(va)
}

/// What the allocation node of `va` was made with.
pub(crate) fn request(va: u64) -> Option<Request> {
    with(|s| s.allocs.get(&va).map(|a| a.request.clone()))
}

/// The access descriptors of `va`'s node, valid as long as the allocation: pointer and count.
pub(crate) fn descriptors(va: u64) -> (*const CUmemAccessDesc, usize) {
    with(|s| s.allocs.get(&va).map_or((std::ptr::null(), 0), |a| (a.descs.as_ptr(), a.descs.len())))
}

/// A descriptor as the driver writes one: a device location and its access.
fn descriptor(device: i32, access: Access) -> CUmemAccessDesc {
    // SAFETY: all-zero is a valid `CUmemAccessDesc` (integers and enums whose zero is a variant).
    let mut d: CUmemAccessDesc = unsafe { std::mem::zeroed() };
    d.location.type_ = CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = device;
    d.flags = crate::abi::access_flags(access);
    d
}

/// A free node for `va`: a graph allocation not freed by a free node already.
pub(crate) fn free_by_node(va: u64) -> Result<(), CUresult> {
    with(|s| match s.allocs.get_mut(&va) {
        Some(a) if !a.freed_by_node => {
            a.freed_by_node = true;
            Ok(())
        }
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    })
}

/// Whether `va`'s allocation is live (mapped).
pub(crate) fn live(va: u64) -> bool {
    with(|s| s.allocs.get(&va).is_some_and(|a| a.backing.is_some()))
}

/// The allocation node of `va` runs: physical memory mapped there, kept memory first, with
/// the node's access. A live allocation is `CUDA_ERROR_INVALID_VALUE`.
pub(crate) fn map(sim: &SimDriver, va: u64) -> Result<(), CUresult> {
    let (request, size) = with(|s| match s.allocs.get(&va) {
        Some(a) if a.backing.is_none() => Ok((a.request.clone(), a.size)),
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    })?;
    let device = request.device;
    let kept = with(|s| {
        let kept = s.kept.entry(device).or_default();
        let best = kept.iter().enumerate().filter(|(_, k)| k.1 >= size).min_by_key(|(_, k)| k.1).map(|(i, _)| i);
        best.map(|i| kept.swap_remove(i))
    });
    let (handle, held) = match kept {
        Some(k) => k,
        None => {
            let props = AllocationProps { device, handle_types: request.handle_types };
            let handle = code(sim.mem_create(size, &props))?;
            with(|s| {
                let u = s.usage.entry(device).or_default();
                u.reserved += size as u64;
                u.reserved_high = u.reserved_high.max(u.reserved);
            });
            (handle, size)
        }
    };
    let mut access = vec![AccessDesc { device, access: Access::ReadWrite }];
    access.extend(request.access.iter().filter(|a| a.device != device));
    let mapped =
        sim.mem_map(DevicePtr(va), size, 0, handle).and_then(|()| sim.mem_set_access(DevicePtr(va), size, &access));
    if let Err(e) = mapped {
        with(|s| s.kept.entry(device).or_default().push((handle, held)));
        return Err(e.code.to_bindings());
    }
    with(|s| {
        if let Some(a) = s.allocs.get_mut(&va) {
            a.backing = Some((handle, held));
        }
        let u = s.usage.entry(device).or_default();
        u.used += size as u64;
        u.used_high = u.used_high.max(u.used);
    });
    Ok(())
}

/// `va`'s allocation freed: unmapped, its memory kept for the device. Not live is
/// `CUDA_ERROR_INVALID_VALUE`.
pub(crate) fn unmap(sim: &SimDriver, va: u64) -> Result<(), CUresult> {
    let ((handle, held), size, device) = with(|s| match s.allocs.get_mut(&va) {
        Some(a) => match a.backing.take() {
            Some(b) => Ok((b, a.size, a.request.device)),
            None => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        },
        None => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    })?;
    code(sim.mem_unmap(DevicePtr(va), size))?;
    with(|s| {
        s.kept.entry(device).or_default().push((handle, held));
        let u = s.usage.entry(device).or_default();
        u.used -= size as u64;
    });
    Ok(())
}

/// `cuMemFree` or `cuMemFreeAsync` of `va`: `None` when it is no graph allocation; one a free
/// node frees, or not live, is `CUDA_ERROR_INVALID_VALUE`.
pub(crate) fn free_outside(sim: &SimDriver, va: u64) -> Option<Result<(), CUresult>> {
    if !ANY.load(Ordering::Acquire) {
        return None;
    }
    let freed_by_node = with(|s| s.allocs.get(&va).map(|a| a.freed_by_node))?;
    Some(match freed_by_node {
        true => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        false => unmap(sim, va),
    })
}

/// `cuDeviceGraphMemTrim`: the kept memory of `device` given back.
pub(crate) fn trim(sim: &SimDriver, device: i32) -> Result<(), CUresult> {
    let kept = with(|s| std::mem::take(s.kept.entry(device).or_default()));
    for (handle, size) in kept {
        code(sim.mem_release(handle))?;
        with(|s| s.usage.entry(device).or_default().reserved -= size as u64);
    }
    Ok(())
}

/// `CUgraphMem_attribute`: used now (0), at most (1), reserved now (2), at most (3).
pub(crate) fn attribute(device: i32, attribute: u32) -> Result<u64, CUresult> {
    let u = with(|s| s.usage.get(&device).copied().unwrap_or_default());
    match attribute {
        0 => Ok(u.used),
        1 => Ok(u.used_high),
        2 => Ok(u.reserved),
        3 => Ok(u.reserved_high),
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

/// `cuDeviceSetGraphMemAttribute`: a high-water mark (1 or 3) reset to its current value, by a
/// value of 0 only.
pub(crate) fn reset_high(device: i32, attribute: u32, value: u64) -> Result<(), CUresult> {
    with(|s| {
        let u = s.usage.entry(device).or_default();
        match (attribute, value) {
            (1, 0) => u.used_high = u.used,
            (3, 0) => u.reserved_high = u.reserved,
            _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        }
        Ok(())
    })
}
