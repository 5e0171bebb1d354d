//! Copies and memsets: synchronous, on a stream, between contexts, and `cuMemcpy`'s unified
//! addressing (each address classified before it is touched: device memory, host memory, or
//! nothing).

use crate::abi::{Copy2d, Side2d, bytes, bytes_mut, context, copy_2d, stream};
use crate::boundary::{Answer, code, entry, sim};
use crate::graphs::{self, Work};
use cudarc::driver::sys::{CUDA_MEMCPY2D, CUcontext, CUdeviceptr, CUresult, CUstream};
use peerpool::driver::{DevicePtr, DriverResult, PeerCopy, PointerAttribute, Stream};
use peerpool_sim::SimDriver;
use std::ffi::{c_uchar, c_uint, c_ushort, c_void};

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(dst: CUdeviceptr, src: *const c_void, count: usize) -> CUresult {
    entry!(cuMemcpyHtoD_v2(dst, src, count), { code(sim().memcpy_htod(DevicePtr(dst), bytes(src, count)?)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: CUdeviceptr, count: usize) -> CUresult {
    entry!(cuMemcpyDtoH_v2(dst, src, count), { code(sim().memcpy_dtoh(bytes_mut(dst, count)?, DevicePtr(src))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoD_v2(dst: CUdeviceptr, src: CUdeviceptr, count: usize) -> CUresult {
    entry!(cuMemcpyDtoD_v2(dst, src, count), { code(sim().memcpy_dtod(DevicePtr(dst), DevicePtr(src), count)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    count: usize,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemcpyHtoDAsync_v2(dst, src, count, h_stream), {
        if let Some(done) = captured(Some(stream(h_stream)), || Work::Memcpy { dst, src: src as u64, bytes: count }) {
            return done;
        }
        code(sim().memcpy_htod_async(DevicePtr(dst), bytes(src, count)?, stream(h_stream)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: CUdeviceptr,
    count: usize,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemcpyDtoHAsync_v2(dst, src, count, h_stream), {
        if let Some(done) = captured(Some(stream(h_stream)), || Work::Memcpy { dst: dst as u64, src, bytes: count }) {
            return done;
        }
        code(sim().memcpy_dtoh_async(bytes_mut(dst, count)?, DevicePtr(src), stream(h_stream)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    count: usize,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemcpyDtoDAsync_v2(dst, src, count, h_stream), {
        if let Some(done) = captured(Some(stream(h_stream)), || Work::Memcpy { dst, src, bytes: count }) {
            return done;
        }
        code(sim().memcpy_dtod_async(DevicePtr(dst), DevicePtr(src), count, stream(h_stream)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy(dst: CUdeviceptr, src: CUdeviceptr, count: usize) -> CUresult {
    entry!(cuMemcpy(dst, src, count), { unified(dst, src, count, None) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyAsync(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    count: usize,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemcpyAsync(dst, src, count, h_stream), { unified(dst, src, count, Some(stream(h_stream))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyPeer(
    dst: CUdeviceptr,
    dst_ctx: CUcontext,
    src: CUdeviceptr,
    src_ctx: CUcontext,
    count: usize,
) -> CUresult {
    entry!(cuMemcpyPeer(dst, dst_ctx, src, src_ctx, count), {
        code(sim().memcpy_peer(peer_copy(dst, dst_ctx, src, src_ctx, count)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyPeerAsync(
    dst: CUdeviceptr,
    dst_ctx: CUcontext,
    src: CUdeviceptr,
    src_ctx: CUcontext,
    count: usize,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, count, h_stream), {
        code(sim().memcpy_peer_async(peer_copy(dst, dst_ctx, src, src_ctx, count), stream(h_stream)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD8_v2(dst: CUdeviceptr, value: c_uchar, count: usize) -> CUresult {
    entry!(cuMemsetD8_v2(dst, value, count), { memset_1d(dst, value.to_le_bytes(), count, None) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD8Async(
    dst: CUdeviceptr,
    value: c_uchar,
    count: usize,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemsetD8Async(dst, value, count, h_stream), {
        memset_1d(dst, value.to_le_bytes(), count, Some(stream(h_stream)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD32_v2(dst: CUdeviceptr, value: c_uint, count: usize) -> CUresult {
    entry!(cuMemsetD32_v2(dst, value, count), { memset_1d(dst, value.to_le_bytes(), count, None) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD32Async(
    dst: CUdeviceptr,
    value: c_uint,
    count: usize,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemsetD32Async(dst, value, count, h_stream), {
        memset_1d(dst, value.to_le_bytes(), count, Some(stream(h_stream)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD16_v2(dst: CUdeviceptr, value: c_ushort, count: usize) -> CUresult {
    entry!(cuMemsetD16_v2(dst, value, count), { memset_1d(dst, value.to_le_bytes(), count, None) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD16Async(
    dst: CUdeviceptr,
    value: c_ushort,
    count: usize,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemsetD16Async(dst, value, count, h_stream), {
        memset_1d(dst, value.to_le_bytes(), count, Some(stream(h_stream)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD2D8_v2(
    dst: CUdeviceptr,
    pitch: usize,
    value: c_uchar,
    width: usize,
    height: usize,
) -> CUresult {
    entry!(cuMemsetD2D8_v2(dst, pitch, value, width, height), { memset_2d(dst, pitch, [value], width, height, None) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD2D16_v2(
    dst: CUdeviceptr,
    pitch: usize,
    value: c_ushort,
    width: usize,
    height: usize,
) -> CUresult {
    entry!(cuMemsetD2D16_v2(dst, pitch, value, width, height), {
        memset_2d(dst, pitch, value.to_le_bytes(), width, height, None)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD2D32_v2(
    dst: CUdeviceptr,
    pitch: usize,
    value: c_uint,
    width: usize,
    height: usize,
) -> CUresult {
    entry!(cuMemsetD2D32_v2(dst, pitch, value, width, height), {
        memset_2d(dst, pitch, value.to_le_bytes(), width, height, None)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD2D8Async(
    dst: CUdeviceptr,
    pitch: usize,
    value: c_uchar,
    width: usize,
    height: usize,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemsetD2D8Async(dst, pitch, value, width, height, h_stream), {
        memset_2d(dst, pitch, [value], width, height, Some(stream(h_stream)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD2D16Async(
    dst: CUdeviceptr,
    pitch: usize,
    value: c_ushort,
    width: usize,
    height: usize,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemsetD2D16Async(dst, pitch, value, width, height, h_stream), {
        memset_2d(dst, pitch, value.to_le_bytes(), width, height, Some(stream(h_stream)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemsetD2D32Async(
    dst: CUdeviceptr,
    pitch: usize,
    value: c_uint,
    width: usize,
    height: usize,
    h_stream: CUstream,
) -> CUresult {
    entry!(cuMemsetD2D32Async(dst, pitch, value, width, height, h_stream), {
        memset_2d(dst, pitch, value.to_le_bytes(), width, height, Some(stream(h_stream)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy2D_v2(copy: *const CUDA_MEMCPY2D) -> CUresult {
    entry!(cuMemcpy2D_v2(copy), { rows(&copy_2d(copy)?, None) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy2DUnaligned_v2(copy: *const CUDA_MEMCPY2D) -> CUresult {
    entry!(cuMemcpy2DUnaligned_v2(copy), { rows(&copy_2d(copy)?, None) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy2DAsync_v2(copy: *const CUDA_MEMCPY2D, h_stream: CUstream) -> CUresult {
    entry!(cuMemcpy2DAsync_v2(copy, h_stream), { rows(&copy_2d(copy)?, Some(stream(h_stream))) })
}

/// A peer copy's description, each handle as the simulator names it.
fn peer_copy(dst: CUdeviceptr, dst_ctx: CUcontext, src: CUdeviceptr, src_ctx: CUcontext, count: usize) -> PeerCopy {
    PeerCopy {
        dst: DevicePtr(dst),
        dst_ctx: context(dst_ctx),
        src: DevicePtr(src),
        src_ctx: context(src_ctx),
        bytes: count,
    }
}

/// A 1D memset of `count` values (`unit`: one value's bytes) on a stream, or on the null stream
/// and then waited for.
fn memset_1d<const N: usize>(dst: CUdeviceptr, unit: [u8; N], count: usize, on: Option<Stream>) -> Answer {
    if let Some(done) = captured(on, || Work::Memset { dst, pitch: 0, unit: unit.to_vec(), width: count, height: 1 }) {
        return done;
    }
    memset(on, |d, s| d.memset_async(dst, unit, count, s))
}

/// Where the stream `on` is in capture, `work` becomes a node instead of running.
fn captured(on: Option<Stream>, work: impl FnOnce() -> Work) -> Option<Answer> {
    graphs::capture(on?.0, || Ok(work()))
}

/// A memset node's work on stream `s`: `unit` is one value's 1, 2 or 4 bytes.
pub(crate) fn memset_on(dst: u64, pitch: usize, unit: &[u8], width: usize, height: usize, s: Stream) -> Answer {
    match (unit.len(), height) {
        (1, 1) => memset_1d(dst, [unit[0]], width, Some(s)),
        (2, 1) => memset_1d(dst, [unit[0], unit[1]], width, Some(s)),
        (4, 1) => memset_1d(dst, [unit[0], unit[1], unit[2], unit[3]], width, Some(s)),
        (1, _) => memset_2d(dst, pitch, [unit[0]], width, height, Some(s)),
        (2, _) => memset_2d(dst, pitch, [unit[0], unit[1]], width, height, Some(s)),
        _ => memset_2d(dst, pitch, [unit[0], unit[1], unit[2], unit[3]], width, height, Some(s)),
    }
}

/// A copy node's work on stream `s`.
///
/// # Safety
/// As [`unified`].
pub(crate) unsafe fn memcpy_on(dst: u64, src: u64, bytes: usize, s: Stream) -> Answer {
    // SAFETY: the caller's.
    unsafe { unified(dst, src, bytes, Some(s)) }
}

/// A 2D memset on a stream, or on the null stream and then waited for.
fn memset_2d<const N: usize>(
    dst: u64,
    pitch: usize,
    unit: [u8; N],
    width: usize,
    height: usize,
    on: Option<Stream>,
) -> Answer {
    if let Some(done) = captured(on, || Work::Memset { dst, pitch, unit: unit.to_vec(), width, height }) {
        return done;
    }
    memset(on, |d, s| d.memset_2d_async(dst, pitch, unit, width, height, s))
}

/// A memset (`set`, one of the simulator's asynchronous ones) on a stream, or on the null
/// stream and then waited for, as the driver's synchronous memsets return when done.
fn memset(on: Option<Stream>, set: impl FnOnce(&SimDriver, Stream) -> DriverResult<()>) -> Answer {
    let d = sim();
    code(set(d, on.unwrap_or(Stream::LEGACY)))?;
    match on {
        Some(_) => Ok(()),
        None => code(d.ctx_synchronize()),
    }
}

/// A 2D copy, row by row through [`unified`], after every row of both sides is checked: an
/// address in no allocation, or a device row that leaves its allocation, is
/// `CUDA_ERROR_INVALID_VALUE` before any byte moves.
///
/// # Safety
/// Host rows are valid for `width` bytes (read for the source, written for the destination).
unsafe fn rows(c: &Copy2d, on: Option<Stream>) -> Answer {
    let row =
        |side: &Side2d, r: usize| (r as u64).checked_mul(side.pitch as u64).and_then(|o| side.start.checked_add(o));
    let mut starts = Vec::with_capacity(c.height);
    for r in 0..c.height {
        let (Some(src), Some(dst)) = (row(&c.src, r), row(&c.dst, r)) else {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        };
        if !fits(src, c.width) || !fits(dst, c.width) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        starts.push((dst, src));
    }
    for (dst, src) in starts {
        // SAFETY: the caller's, for host rows; device rows were checked above.
        unsafe { unified(dst, src, c.width, on) }?;
    }
    Ok(())
}

/// Whether `len` bytes at `addr` can be copied: host memory, or inside one device allocation.
fn fits(addr: u64, len: usize) -> bool {
    use peerpool_sim::host_memory::AddressKind::{Device, Host, Unknown};
    let d = sim();
    match d.classify(addr) {
        Host { .. } => true,
        Unknown => false,
        Device => {
            let start = d.pointer_get_attribute(DevicePtr(addr), PointerAttribute::RangeStartAddr);
            let size = d.pointer_get_attribute(DevicePtr(addr), PointerAttribute::RangeSize);
            matches!((start, size), (Ok(start), Ok(size)) if addr - start + len as u64 <= size)
        }
    }
}

/// `cuMemcpy`/`cuMemcpyAsync`: each side is classified before any byte is touched, as unified
/// addressing tells them apart: device memory the simulator holds, host memory (the
/// simulator's page-locked, managed or host-pool memory, or the caller's own), or an address
/// in the devices' range that holds nothing (freed, past an allocation's end), which is
/// `CUDA_ERROR_INVALID_VALUE` and never dereferenced.
///
/// # Safety
/// A side that is the caller's host memory is valid for `count` bytes (read for the source,
/// written for the destination).
unsafe fn unified(dst: u64, src: u64, count: usize, on: Option<Stream>) -> Result<(), CUresult> {
    if let Some(done) = captured(on, || Work::Memcpy { dst, src, bytes: count }) {
        return done;
    }
    use peerpool_sim::host_memory::AddressKind::{Device, Host, Unknown};
    let d = sim();
    let s = on.unwrap_or(Stream::LEGACY);
    if count == 0 {
        return Ok(());
    }
    // SAFETY (the host slices): the caller's, or the simulator's own host memory.
    unsafe {
        match (d.classify(dst), d.classify(src)) {
            (Unknown, _) | (_, Unknown) => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
            (Device, Device) => code(d.memcpy_dtod_async(DevicePtr(dst), DevicePtr(src), count, s)),
            (Device, Host { .. }) => {
                code(d.memcpy_htod_async(DevicePtr(dst), bytes(src as usize as *const c_void, count)?, s))
            }
            (Host { writable: false }, _) => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
            (Host { .. }, Device) => {
                code(d.memcpy_dtoh_async(bytes_mut(dst as usize as *mut c_void, count)?, DevicePtr(src), s))
            }
            (Host { .. }, Host { .. }) if src == 0 || dst == 0 => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
            (Host { .. }, Host { .. }) => {
                // The two host ranges may overlap: a memmove.
                std::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, count);
                Ok(())
            }
        }
    }
}
