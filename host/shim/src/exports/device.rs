//! Devices: count, names, attributes, memory, peer capability, and their pools.

use crate::abi::{as_ptr, out, pool};
use crate::boundary::{code, entry, forward_if_real, sim};
use cudarc::driver::sys::{CUdevice, CUdevice_attribute, CUmemoryPool, CUresult, CUuuid};
use peerpool::driver::{DeviceAttribute, P2pAttribute};
use std::ffi::{c_char, c_int, c_uint};

/// `(domain, bus, device, function)` of `[domain:]bus:device.function` (hex).
fn pci_address(text: &str) -> Option<(i32, i32, i32, i32)> {
    let hex = |s: &str| (!s.is_empty() && s.len() <= 8).then(|| i32::from_str_radix(s, 16).ok()).flatten();
    let (rest, function) = text.rsplit_once('.')?;
    let parts: Vec<&str> = rest.split(':').collect();
    let (domain, bus, device) = match parts[..] {
        [domain, bus, device] => (hex(domain)?, hex(bus)?, hex(device)?),
        [bus, device] => (0, hex(bus)?, hex(device)?),
        _ => return None,
    };
    Some((domain, bus, device, hex(function)?))
}

/// `cuDeviceGet`: a device is its ordinal.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGet(device: *mut CUdevice, ordinal: c_int) -> CUresult {
    entry!(cuDeviceGet(device, ordinal), { out(device, code(sim().device_get(ordinal))?) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    entry!(cuDeviceGetCount(count), { out(count, code(sim().device_get_count())?) })
}

/// The name, cut to `len - 1` bytes and NUL-terminated, as the driver does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, device: CUdevice) -> CUresult {
    entry!(cuDeviceGetName(name, len, device), {
        let text = code(sim().device_get_name(device))?;
        let room = usize::try_from(len).map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if name.is_null() || room == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let kept = &text.as_bytes()[..text.len().min(room - 1)];
        std::ptr::copy_nonoverlapping(kept.as_ptr().cast::<c_char>(), name, kept.len());
        name.add(kept.len()).write(0);
        Ok(())
    })
}

/// Every attribute an H200 answers; others are `CUDA_ERROR_INVALID_VALUE`, as the driver
/// answers an unknown one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetAttribute(value: *mut c_int, attribute: c_uint, device: CUdevice) -> CUresult {
    entry!(cuDeviceGetAttribute(value, attribute, device), {
        out(value, code(sim().device_get_attribute_raw(device, attribute))?)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, device: CUdevice) -> CUresult {
    entry!(cuDeviceTotalMem_v2(bytes, device), { out(bytes, code(sim().device_total_mem(device))? as usize) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceCanAccessPeer(can: *mut c_int, device: CUdevice, peer: CUdevice) -> CUresult {
    entry!(cuDeviceCanAccessPeer(can, device, peer), {
        out(can, code(sim().device_can_access_peer(device, peer))? as c_int)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetP2PAttribute(
    value: *mut c_int,
    attribute: c_uint,
    src: CUdevice,
    dst: CUdevice,
) -> CUresult {
    entry!(cuDeviceGetP2PAttribute(value, attribute, src, dst), {
        let attribute = P2pAttribute::from_raw(attribute).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        out(value, code(sim().device_get_p2p_attribute(attribute, src, dst))?)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetUuid(uuid: *mut CUuuid, device: CUdevice) -> CUresult {
    entry!(cuDeviceGetUuid(uuid, device), {
        let bytes = code(sim().device_get_uuid(device))?;
        out(uuid, CUuuid { bytes: bytes.map(|b| b as c_char) })
    })
}

/// CUDA 11.4's form: on the simulator, [`cuDeviceGetUuid`] itself.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(uuid: *mut CUuuid, device: CUdevice) -> CUresult {
    forward_if_real!(cuDeviceGetUuid_v2(uuid, device));
    // SAFETY: the caller's.
    unsafe { cuDeviceGetUuid(uuid, device) }
}

/// `0000:BB:00.0` from the PCI attributes, NUL-terminated in `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetPCIBusId(id: *mut c_char, len: c_int, device: CUdevice) -> CUresult {
    entry!(cuDeviceGetPCIBusId(id, len, device), {
        let d = sim();
        let bus = code(d.device_get_attribute(device, DeviceAttribute::PciBusId))?;
        let domain = code(d.device_get_attribute(device, DeviceAttribute::PciDomainId))?;
        let dev = code(d.device_get_attribute(device, DeviceAttribute::PciDeviceId))?;
        let text = format!("{domain:08x}:{bus:02x}:{dev:02x}.0\0");
        if id.is_null() || usize::try_from(len).map_or(true, |room| room < text.len()) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), id, text.len());
        Ok(())
    })
}

/// `[domain:]bus:device.function` in hex, as `cuDeviceGetPCIBusId` writes it: a form that
/// names no simulated GPU is `CUDA_ERROR_INVALID_DEVICE`, text that is no bus id
/// `CUDA_ERROR_INVALID_VALUE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetByPCIBusId(device: *mut CUdevice, id: *const c_char) -> CUresult {
    entry!(cuDeviceGetByPCIBusId(device, id), {
        if id.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let text = std::ffi::CStr::from_ptr(id).to_str().map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let wanted = pci_address(text).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let d = sim();
        for ordinal in 0..code(d.device_get_count())? {
            let at = |a| code(d.device_get_attribute(ordinal, a));
            let address = (
                at(DeviceAttribute::PciDomainId)?,
                at(DeviceAttribute::PciBusId)?,
                at(DeviceAttribute::PciDeviceId)?,
                0,
            );
            if address == wanted {
                return out(device, ordinal);
            }
        }
        Err(CUresult::CUDA_ERROR_INVALID_DEVICE)
    })
}

/// Locally unique ids are Windows's: on Linux the driver answers `CUDA_ERROR_NOT_SUPPORTED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetLuid(_luid: *mut c_char, _mask: *mut c_uint, device: CUdevice) -> CUresult {
    entry!(cuDeviceGetLuid(_luid, _mask, device), {
        code(sim().device_get(device))?;
        Err(CUresult::CUDA_ERROR_NOT_SUPPORTED)
    })
}

/// The device's 1D linear texture width (attribute 69), whatever the format: textures are not
/// simulated, only their limits answered.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetTexture1DLinearMaxWidth(
    width: *mut usize,
    _format: c_uint,
    _channels: c_uint,
    device: CUdevice,
) -> CUresult {
    entry!(cuDeviceGetTexture1DLinearMaxWidth(width, _format, _channels, device), {
        let linear = CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH as c_uint;
        out(width, code(sim().device_get_attribute_raw(device, linear))? as usize)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetDefaultMemPool(pool_out: *mut CUmemoryPool, device: CUdevice) -> CUresult {
    entry!(cuDeviceGetDefaultMemPool(pool_out, device), {
        out(pool_out, as_ptr(code(sim().device_get_default_mem_pool(device))?.0))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetMemPool(pool_out: *mut CUmemoryPool, device: CUdevice) -> CUresult {
    entry!(cuDeviceGetMemPool(pool_out, device), { out(pool_out, as_ptr(code(sim().device_get_mem_pool(device))?.0)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceSetMemPool(device: CUdevice, memory_pool: CUmemoryPool) -> CUresult {
    entry!(cuDeviceSetMemPool(device, memory_pool), { code(sim().device_set_mem_pool(device, pool(memory_pool))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    entry!(cuMemGetInfo_v2(free, total), {
        let (f, t) = code(sim().mem_get_info())?;
        out(free, f as usize)?;
        out(total, t as usize)
    })
}
