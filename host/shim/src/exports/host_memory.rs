//! Memory the host reads and writes itself: page-locked memory (allocated or registered),
//! managed memory with its advice, prefetches and range attributes, and the driver's own pools
//! by location and allocation type (`peerpool_sim::host_memory`).

use crate::abi::{as_ptr, location, location_at, out, out_with, stream};
use crate::boundary::{Answer, code, entry, sim};
use cudarc::driver::sys::{
    CUdevice, CUdeviceptr, CUmemAllocationType, CUmemLocation, CUmemoryPool, CUresult, CUstream,
};
use peerpool_sim::host_memory::{Advise, Location, RangeValue};
use std::ffi::{c_int, c_uint, c_void};

/// Whether a `CUmemAllocationType` asks for managed memory (`None`: neither pinned nor managed).
fn managed(kind: CUmemAllocationType) -> Option<bool> {
    match kind as u32 {
        k if k == CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED as u32 => Some(false),
        k if k == CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_MANAGED as u32 => Some(true),
        _ => None,
    }
}

/// The device an older advice or prefetch call names: `CU_DEVICE_CPU` (-1) is the host.
fn device_or_host(device: CUdevice) -> Location {
    match device {
        -1 => Location::Host,
        d => Location::Device(d),
    }
}

/// `cuMemAdvise` in either form: `advice` is read as a plain integer (a C caller may pass any
/// value), `at` is where it points.
fn advise(dptr: CUdeviceptr, count: usize, advice: c_uint, at: Location) -> Answer {
    let advice = Advise::from_raw(advice).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    code(sim().mem_advise(dptr, count, advice, at))
}

/// Writes what `cuMemRangeGetAttribute` read into the caller's `size` bytes: an `int`, or the
/// devices (then -2 for every slot past them).
///
/// # Safety
/// A non-null `data` is valid for writes of `size` bytes.
unsafe fn write_range(data: *mut c_void, size: usize, value: RangeValue) -> Result<(), CUresult> {
    if data.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    match value {
        RangeValue::Int(v) if size == 4 => {
            // SAFETY: the caller's: 4 bytes.
            unsafe { data.cast::<c_int>().write_unaligned(v) };
            Ok(())
        }
        RangeValue::Devices(devices) if size > 0 && size.is_multiple_of(4) => {
            for slot in 0..size / 4 {
                let v = devices.get(slot).copied().unwrap_or(-2);
                // SAFETY: the caller's: `size` bytes, slot by slot.
                unsafe { data.cast::<c_int>().add(slot).write_unaligned(v) };
            }
            Ok(())
        }
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocHost_v2(pp: *mut *mut c_void, bytes: usize) -> CUresult {
    entry!(cuMemAllocHost_v2(pp, bytes), { out_with(pp, || code(sim().mem_host_alloc(bytes, 0)).map(as_ptr)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostAlloc(pp: *mut *mut c_void, bytes: usize, flags: c_uint) -> CUresult {
    entry!(cuMemHostAlloc(pp, bytes, flags), { out_with(pp, || code(sim().mem_host_alloc(bytes, flags)).map(as_ptr)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeHost(p: *mut c_void) -> CUresult {
    entry!(cuMemFreeHost(p), { code(sim().mem_free_host(p as u64)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostGetFlags(flags: *mut c_uint, p: *mut c_void) -> CUresult {
    entry!(cuMemHostGetFlags(flags, p), { out(flags, code(sim().mem_host_get_flags(p as u64))?) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostGetDevicePointer_v2(
    dptr: *mut CUdeviceptr,
    p: *mut c_void,
    flags: c_uint,
) -> CUresult {
    entry!(cuMemHostGetDevicePointer_v2(dptr, p, flags), {
        out(dptr, code(sim().mem_host_get_device_pointer(p as u64, flags))?)
    })
}

/// The simulator reads and writes the caller's range until it is unregistered, as the
/// driver API documents for registered memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostRegister_v2(p: *mut c_void, bytes: usize, flags: c_uint) -> CUresult {
    entry!(cuMemHostRegister_v2(p, bytes, flags), { code(sim().mem_host_register(p as u64, bytes, flags)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostUnregister(p: *mut c_void) -> CUresult {
    entry!(cuMemHostUnregister(p), { code(sim().mem_host_unregister(p as u64)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocManaged(dptr: *mut CUdeviceptr, bytes: usize, flags: c_uint) -> CUresult {
    entry!(cuMemAllocManaged(dptr, bytes, flags), { out(dptr, code(sim().mem_alloc_managed(bytes, flags))?) })
}

/// CUDA 13's form, with a location.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAdvise_v2(
    dptr: CUdeviceptr,
    count: usize,
    advice: c_uint,
    loc: CUmemLocation,
) -> CUresult {
    entry!(cuMemAdvise_v2(dptr, count, advice, loc), { advise(dptr, count, advice, location(loc)) })
}

/// The form before CUDA 12.2, with a device (`CU_DEVICE_CPU` for the host).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAdvise(dptr: CUdeviceptr, count: usize, advice: c_uint, device: CUdevice) -> CUresult {
    entry!(cuMemAdvise(dptr, count, advice, device), { advise(dptr, count, advice, device_or_host(device)) })
}

/// CUDA 13's form, with a location; flags must be 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPrefetchAsync_v2(
    dptr: CUdeviceptr,
    count: usize,
    loc: CUmemLocation,
    flags: c_uint,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemPrefetchAsync_v2(dptr, count, loc, flags, h_stream), {
        if flags != 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        code(sim().mem_prefetch_async(dptr, count, location(loc), stream(h_stream)))
    })
}

/// The form before CUDA 12.2, with a device (`CU_DEVICE_CPU` for the host).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemPrefetchAsync(
    dptr: CUdeviceptr,
    count: usize,
    device: CUdevice,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemPrefetchAsync(dptr, count, device, h_stream), {
        code(sim().mem_prefetch_async(dptr, count, device_or_host(device), stream(h_stream)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemRangeGetAttribute(
    data: *mut c_void,
    size: usize,
    attribute: c_uint,
    dptr: CUdeviceptr,
    count: usize,
) -> CUresult {
    entry!(cuMemRangeGetAttribute(data, size, attribute, dptr, count), {
        let value = code(sim().mem_range_attribute(dptr, count, attribute))?;
        write_range(data, size, value)
    })
}

/// Each attribute in turn, into its own buffer of its own size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemRangeGetAttributes(
    data: *mut *mut c_void,
    sizes: *mut usize,
    attributes: *mut c_uint,
    count: usize,
    dptr: CUdeviceptr,
    bytes: usize,
) -> CUresult {
    entry!(cuMemRangeGetAttributes(data, sizes, attributes, count, dptr, bytes), {
        if count == 0 || data.is_null() || sizes.is_null() || attributes.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        for i in 0..count {
            let value = code(sim().mem_range_attribute(dptr, bytes, attributes.add(i).read()))?;
            write_range(data.add(i).read(), sizes.add(i).read(), value)?;
        }
        Ok(())
    })
}

/// The pool `cuMemAllocAsync` would use for a location and allocation type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetMemPool(
    pool_out: *mut CUmemoryPool,
    loc: *mut CUmemLocation,
    kind: CUmemAllocationType,
) -> CUresult {
    entry!(cuMemGetMemPool(pool_out, loc, kind), { mem_pool(pool_out, loc, kind, false) })
}

/// The driver's own pool for a location and allocation type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetDefaultMemPool(
    pool_out: *mut CUmemoryPool,
    loc: *mut CUmemLocation,
    kind: CUmemAllocationType,
) -> CUresult {
    entry!(cuMemGetDefaultMemPool(pool_out, loc, kind), { mem_pool(pool_out, loc, kind, true) })
}

/// Writes the pool for a location and allocation type to `pool_out`: the driver's own
/// (`default`), or the one `cuMemAllocAsync` would use.
///
/// # Safety
/// `pool_out` is valid for a write and `loc` for a read, as the two calls document.
unsafe fn mem_pool(
    pool_out: *mut CUmemoryPool,
    loc: *mut CUmemLocation,
    kind: CUmemAllocationType,
    default: bool,
) -> Answer {
    let managed = managed(kind).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    // SAFETY: the caller's.
    unsafe { out(pool_out, as_ptr(code(sim().mem_get_mem_pool(location_at(loc)?, managed, default))?.0)) }
}
