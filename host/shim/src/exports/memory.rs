//! Allocation (`cuMemAlloc`, pools, stream-ordered), pools and their access and attributes, and
//! what an address is (pointer attributes, address ranges).

use crate::abi::{PoolRequest, access_descs, access_flags, as_ptr, location_device, out, pool, pool_request, stream};
use crate::boundary::{code, entry, sim};
use crate::graph_memory;
use crate::graphs::{self, Work};
use cudarc::driver::sys::{
    CUdeviceptr, CUmemAccess_flags, CUmemAccessDesc, CUmemLocation, CUmemPoolProps, CUmemoryPool, CUresult, CUstream,
};
use peerpool::driver::{Access, AccessDesc, DevicePtr, PointerAttribute, Pool, PoolAttribute};
use std::ffi::{c_uint, c_void};

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytes: usize) -> CUresult {
    entry!(cuMemAlloc_v2(dptr, bytes), { out(dptr, code(sim().mem_alloc(bytes))?.0) })
}

/// A graph allocation not freed in its graph may be freed here too.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFree_v2(dptr: CUdeviceptr) -> CUresult {
    entry!(cuMemFree_v2(dptr), {
        if let Some(done) = graph_memory::free_outside(sim(), dptr) {
            return done;
        }
        code(sim().mem_free(DevicePtr(dptr)))
    })
}

/// In a capture: an allocation node with the pool's properties and its access at the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocAsync(dptr: *mut CUdeviceptr, bytes: usize, h_stream: CUstream) -> CUresult {
    entry!(cuMemAllocAsync(dptr, bytes, h_stream), {
        if let Some(va) = captured_alloc(h_stream, bytes, None) {
            return out(dptr, va?);
        }
        out(dptr, code(sim().mem_alloc_async(bytes, stream(h_stream)))?.0)
    })
}

/// Where `h_stream` is capturing, the address of a new allocation node of `bytes` from `pool`
/// (the stream device's current pool for `None`); `None`: not capturing.
fn captured_alloc(h_stream: CUstream, bytes: usize, pool: Option<Pool>) -> Option<Result<u64, CUresult>> {
    if !graphs::capturing(h_stream as usize as u64) {
        return None;
    }
    let from = match code(sim().graph_pool(stream(h_stream), pool)) {
        Ok(from) => from,
        Err(e) => return Some(Err(e)),
    };
    let peers = from.access.iter().enumerate().filter(|&(d, a)| d as i32 != from.device && *a != Access::None);
    let access = peers.map(|(d, &access)| AccessDesc { device: d as i32, access }).collect();
    let request = graph_memory::Request { bytes, device: from.device, handle_types: from.handle_types, access };
    let mut va = 0;
    let done = graphs::capture(h_stream as usize as u64, || {
        va = graph_memory::reserve(sim(), request)?;
        Ok(Work::MemAlloc(va))
    })?;
    Some(done.map(|()| va))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocFromPoolAsync(
    dptr: *mut CUdeviceptr,
    bytes: usize,
    memory_pool: CUmemoryPool,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemAllocFromPoolAsync(dptr, bytes, memory_pool, h_stream), {
        if let Some(va) = captured_alloc(h_stream, bytes, Some(pool(memory_pool))) {
            return out(dptr, va?);
        }
        out(dptr, code(sim().mem_alloc_from_pool_async(bytes, pool(memory_pool), stream(h_stream)))?.0)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeAsync(dptr: CUdeviceptr, h_stream: CUstream) -> CUresult {
    entry!(cuMemFreeAsync(dptr, h_stream), {
        // In a capture, a free node: of a graph allocation only.
        let captured = graphs::capture(h_stream as usize as u64, || {
            graph_memory::free_by_node(dptr)?;
            Ok(Work::MemFree(dptr))
        });
        if let Some(done) = captured {
            return done;
        }
        if let Some(done) = graph_memory::free_outside(sim(), dptr) {
            code(sim().stream_settings(stream(h_stream)))?;
            return done;
        }
        code(sim().mem_free_async(DevicePtr(dptr), stream(h_stream)))
    })
}

/// Pinned pools on a device, pools on the host and managed pools.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolCreate(pool_out: *mut CUmemoryPool, props: *const CUmemPoolProps) -> CUresult {
    entry!(cuMemPoolCreate(pool_out, props), {
        let made = match pool_request(props)? {
            PoolRequest::Device(props) => sim().mem_pool_create(&props),
            PoolRequest::Other { location, managed, handle_types, max_size } => {
                sim().mem_pool_create_at(location, managed, handle_types, max_size)
            }
        };
        out(pool_out, as_ptr(code(made)?.0))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolDestroy(memory_pool: CUmemoryPool) -> CUresult {
    entry!(cuMemPoolDestroy(memory_pool), { code(sim().mem_pool_destroy(pool(memory_pool))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolSetAccess(
    memory_pool: CUmemoryPool,
    map: *const CUmemAccessDesc,
    count: usize,
) -> CUresult {
    entry!(cuMemPoolSetAccess(memory_pool, map, count), {
        code(sim().mem_pool_set_access(pool(memory_pool), &access_descs(map, count)?))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolGetAccess(
    flags: *mut CUmemAccess_flags,
    memory_pool: CUmemoryPool,
    location: *mut CUmemLocation,
) -> CUresult {
    entry!(cuMemPoolGetAccess(flags, memory_pool, location), {
        let device = location_device(location)?;
        out(flags, access_flags(code(sim().mem_pool_get_access(pool(memory_pool), device))?))
    })
}

/// The value is read and written at the attribute's own width (`int` or `cuuint64_t`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolSetAttribute(
    memory_pool: CUmemoryPool,
    attribute: c_uint,
    value: *mut c_void,
) -> CUresult {
    entry!(cuMemPoolSetAttribute(memory_pool, attribute, value), {
        let attribute = PoolAttribute::from_raw(attribute).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if value.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let v = match attribute.width() {
            4 => value.cast::<i32>().read_unaligned() as u32 as u64,
            _ => value.cast::<u64>().read_unaligned(),
        };
        code(sim().mem_pool_set_attribute(pool(memory_pool), attribute, v))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolGetAttribute(
    memory_pool: CUmemoryPool,
    attribute: c_uint,
    value: *mut c_void,
) -> CUresult {
    entry!(cuMemPoolGetAttribute(memory_pool, attribute, value), {
        let attribute = PoolAttribute::from_raw(attribute).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let v = code(sim().mem_pool_get_attribute(pool(memory_pool), attribute))?;
        match attribute.width() {
            4 => out(value.cast::<i32>(), v as i32),
            _ => out(value.cast::<u64>(), v),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPoolTrimTo(memory_pool: CUmemoryPool, keep: usize) -> CUresult {
    entry!(cuMemPoolTrimTo(memory_pool, keep), { code(sim().mem_pool_trim_to(pool(memory_pool), keep)) })
}

/// Written at the attribute's width; attributes the simulator does not know are
/// `CUDA_ERROR_INVALID_VALUE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerGetAttribute(data: *mut c_void, attribute: c_uint, ptr: CUdeviceptr) -> CUresult {
    entry!(cuPointerGetAttribute(data, attribute, ptr), {
        if attribute == SYNC_MEMOPS {
            return out(data.cast::<c_uint>(), code(sim().pointer_sync_memops(ptr))? as c_uint);
        }
        let attribute = PointerAttribute::from_raw(attribute).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        write_attribute(data, attribute, code(sim().pointer_get_attribute(DevicePtr(ptr), attribute))?)
    })
}

/// `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`, the one attribute `cuPointerSetAttribute` sets.
const SYNC_MEMOPS: c_uint = 6;

/// Only `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS` may be set (every operation is synchronous here: it
/// reads back, and changes nothing); another is `CUDA_ERROR_INVALID_VALUE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerSetAttribute(value: *const c_void, attribute: c_uint, ptr: CUdeviceptr) -> CUresult {
    entry!(cuPointerSetAttribute(value, attribute, ptr), {
        if attribute != SYNC_MEMOPS || value.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        code(sim().pointer_set_sync_memops(ptr, value.cast::<c_uint>().read() != 0))
    })
}

/// Each attribute in turn. An address the simulator does not know is the caller's host
/// memory, as the driver answers for pageable memory: ordinal -2, its own host pointer, zeros
/// otherwise; an attribute the address has no value for is 0; an attribute the simulator does
/// not know is left as the caller set it (its width is not known here).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerGetAttributes(
    count: c_uint,
    attributes: *mut c_uint,
    data: *mut *mut c_void,
    ptr: CUdeviceptr,
) -> CUresult {
    entry!(cuPointerGetAttributes(count, attributes, data, ptr), {
        if count > 0 && (attributes.is_null() || data.is_null()) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let d = sim();
        let known = match d.pointer_get_attribute(DevicePtr(ptr), PointerAttribute::DevicePointer) {
            Err(e) if e.sticky => return Err(e.code.to_bindings()),
            found => found.is_ok(),
        };
        for i in 0..count as usize {
            let (raw, at) = (attributes.add(i).read(), data.add(i).read());
            if let Some(a) = PointerAttribute::from_raw(raw) {
                let value = match (known, a) {
                    (false, PointerAttribute::DeviceOrdinal) => -2i32 as u32 as u64,
                    (false, PointerAttribute::HostPointer) => ptr,
                    (false, _) => 0,
                    (true, a) => match d.pointer_get_attribute(DevicePtr(ptr), a) {
                        Ok(value) => value,
                        Err(e) if e.sticky => return Err(e.code.to_bindings()),
                        Err(_) => 0,
                    },
                };
                write_attribute(at, a, value)?;
            }
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetAddressRange_v2(
    base: *mut CUdeviceptr,
    size: *mut usize,
    ptr: CUdeviceptr,
) -> CUresult {
    entry!(cuMemGetAddressRange_v2(base, size, ptr), {
        let d = sim();
        let start = code(d.pointer_get_attribute(DevicePtr(ptr), PointerAttribute::RangeStartAddr))?;
        let len = code(d.pointer_get_attribute(DevicePtr(ptr), PointerAttribute::RangeSize))?;
        if !base.is_null() {
            base.write(start);
        }
        if !size.is_null() {
            size.write(len as usize);
        }
        Ok(())
    })
}

/// Writes a pointer attribute's value at its width.
///
/// # Safety
/// A non-null `data` is valid for a write of the attribute's width.
unsafe fn write_attribute(data: *mut c_void, attribute: PointerAttribute, value: u64) -> Result<(), CUresult> {
    // SAFETY: the caller's.
    unsafe {
        match attribute.width() {
            4 => out(data.cast::<u32>(), value as u32),
            _ => out(data.cast::<u64>(), value),
        }
    }
}
