//! Copies and memsets: synchronous, on a stream, between contexts, and `cuMemcpy`'s unified
//! addressing (each address classified before it is touched: device memory, host memory, or
//! nothing).

use crate::abi::{bytes, bytes_mut, context, stream};
use crate::boundary::{code, exports, sim};
use cudarc::driver::sys::{self, CUresult};
use peerpool::driver::{DevicePtr, PeerCopy, Stream};
use std::ffi::{c_uchar, c_uint, c_void};

exports! {
    fn cuMemcpyHtoD_v2(dst: sys::CUdeviceptr, src: *const c_void, count: usize) {
        code(sim().memcpy_htod(DevicePtr(dst), bytes(src, count)?))
    }

    fn cuMemcpyDtoH_v2(dst: *mut c_void, src: sys::CUdeviceptr, count: usize) {
        code(sim().memcpy_dtoh(bytes_mut(dst, count)?, DevicePtr(src)))
    }

    fn cuMemcpyDtoD_v2(dst: sys::CUdeviceptr, src: sys::CUdeviceptr, count: usize) {
        code(sim().memcpy_dtod(DevicePtr(dst), DevicePtr(src), count))
    }

    fn cuMemcpyHtoDAsync_v2(dst: sys::CUdeviceptr, src: *const c_void, count: usize, h_stream: sys::CUstream) {
        code(sim().memcpy_htod_async(DevicePtr(dst), bytes(src, count)?, stream(h_stream)))
    }

    fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: sys::CUdeviceptr, count: usize, h_stream: sys::CUstream) {
        code(sim().memcpy_dtoh_async(bytes_mut(dst, count)?, DevicePtr(src), stream(h_stream)))
    }

    fn cuMemcpyDtoDAsync_v2(dst: sys::CUdeviceptr, src: sys::CUdeviceptr, count: usize, h_stream: sys::CUstream) {
        code(sim().memcpy_dtod_async(DevicePtr(dst), DevicePtr(src), count, stream(h_stream)))
    }

    fn cuMemcpy(dst: sys::CUdeviceptr, src: sys::CUdeviceptr, count: usize) {
        unified(dst, src, count, None)
    }

    fn cuMemcpyAsync(dst: sys::CUdeviceptr, src: sys::CUdeviceptr, count: usize, h_stream: sys::CUstream) {
        unified(dst, src, count, Some(stream(h_stream)))
    }

    fn cuMemcpyPeer(dst: sys::CUdeviceptr, dst_ctx: sys::CUcontext, src: sys::CUdeviceptr, src_ctx: sys::CUcontext, count: usize) {
        let copy = PeerCopy { dst: DevicePtr(dst), dst_ctx: context(dst_ctx), src: DevicePtr(src), src_ctx: context(src_ctx), bytes: count };
        code(sim().memcpy_peer(copy))
    }

    fn cuMemcpyPeerAsync(dst: sys::CUdeviceptr, dst_ctx: sys::CUcontext, src: sys::CUdeviceptr, src_ctx: sys::CUcontext, count: usize, h_stream: sys::CUstream) {
        let copy = PeerCopy { dst: DevicePtr(dst), dst_ctx: context(dst_ctx), src: DevicePtr(src), src_ctx: context(src_ctx), bytes: count };
        code(sim().memcpy_peer_async(copy, stream(h_stream)))
    }

    fn cuMemsetD8_v2(dst: sys::CUdeviceptr, value: c_uchar, count: usize) {
        code(sim().memset_d8_async(DevicePtr(dst), value, count, Stream::LEGACY))?;
        code(sim().ctx_synchronize())
    }

    fn cuMemsetD8Async(dst: sys::CUdeviceptr, value: c_uchar, count: usize, h_stream: sys::CUstream) {
        code(sim().memset_d8_async(DevicePtr(dst), value, count, stream(h_stream)))
    }

    fn cuMemsetD32_v2(dst: sys::CUdeviceptr, value: c_uint, count: usize) {
        code(sim().memset_d32_async(DevicePtr(dst), value, count, Stream::LEGACY))?;
        code(sim().ctx_synchronize())
    }

    fn cuMemsetD32Async(dst: sys::CUdeviceptr, value: c_uint, count: usize, h_stream: sys::CUstream) {
        code(sim().memset_d32_async(DevicePtr(dst), value, count, stream(h_stream)))
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
