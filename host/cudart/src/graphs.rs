//! Stream capture and graphs as a program on the runtime drives them: begin and end a capture
//! (each also as its `_ptsz` twin), the thread's capture mode, create, instantiate, upload,
//! launch and destroy. A graph's nodes are the driver's to make and run.

use crate::device::context;
use crate::driver::{self, cu, ok};
use crate::error::{Error, cudaError_t, put, run};
use crate::types::{Default, cudaStream_t, stream};
use std::ffi::c_int;

pub type cudaGraph_t = cu::CUgraph;
pub type cudaGraphExec_t = cu::CUgraphExec;

/// # Safety
/// Its handles are live ones of the driver's, or ones the driver refuses.
unsafe fn begin(s: cu::CUstream, mode: c_int) -> Result<(), Error> {
    context()?;
    // SAFETY: a handle and a mode the driver checks.
    ok(unsafe { driver::cuStreamBeginCapture_v2(s, mode) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamBeginCapture(s: cudaStream_t, mode: c_int) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { begin(stream(s, Default::Legacy), mode) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamBeginCapture_ptsz(s: cudaStream_t, mode: c_int) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { begin(stream(s, Default::PerThread), mode) })
}

/// # Safety
/// A non-null `out` is valid for a write.
unsafe fn end(s: cu::CUstream, out: *mut cudaGraph_t) -> Result<(), Error> {
    context()?;
    if out.is_null() {
        return Err(Error(crate::error::INVALID_VALUE));
    }
    // SAFETY: the caller's; the driver writes a null graph where the capture failed.
    ok(unsafe { cu::cuStreamEndCapture(s, out) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamEndCapture(s: cudaStream_t, out: *mut cudaGraph_t) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { end(stream(s, Default::Legacy), out) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamEndCapture_ptsz(s: cudaStream_t, out: *mut cudaGraph_t) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { end(stream(s, Default::PerThread), out) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaThreadExchangeStreamCaptureMode(mode: *mut c_int) -> cudaError_t {
    run(|| {
        if mode.is_null() {
            return Err(Error(crate::error::INVALID_VALUE));
        }
        // SAFETY: the caller's.
        ok(unsafe { driver::cuThreadExchangeStreamCaptureMode(mode) })
    })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGraphCreate(out: *mut cudaGraph_t, flags: u32) -> cudaError_t {
    run(|| {
        context()?;
        let mut g = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        ok(unsafe { cu::cuGraphCreate(&mut g, flags) })?;
        // SAFETY: the caller's.
        unsafe { put(out, g) }
    })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGraphDestroy(g: cudaGraph_t) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: a handle the driver checks.
        ok(unsafe { cu::cuGraphDestroy(g) })
    })
}

/// # Safety
/// A non-null `out` is valid for a write.
unsafe fn instantiate(out: *mut cudaGraphExec_t, g: cudaGraph_t, flags: u64) -> Result<(), Error> {
    context()?;
    let mut exec = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; the driver checks the graph and the flags.
    ok(unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, g, flags) })?;
    // SAFETY: the caller's.
    unsafe { put(out, exec) }
}

/// CUDA 12 and 13 alike: `(exec, graph, flags)`.
///
/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGraphInstantiate(out: *mut cudaGraphExec_t, g: cudaGraph_t, flags: u64) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { instantiate(out, g, flags) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGraphInstantiateWithFlags(
    out: *mut cudaGraphExec_t,
    g: cudaGraph_t,
    flags: u64,
) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { instantiate(out, g, flags) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGraphExecDestroy(exec: cudaGraphExec_t) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: a handle the driver checks.
        ok(unsafe { cu::cuGraphExecDestroy(exec) })
    })
}

/// # Safety
/// Its handles are live ones of the driver's, or ones the driver refuses.
unsafe fn launch(exec: cudaGraphExec_t, s: cu::CUstream) -> Result<(), Error> {
    context()?;
    // SAFETY: handles the driver checks.
    ok(unsafe { cu::cuGraphLaunch(exec, s) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGraphLaunch(exec: cudaGraphExec_t, s: cudaStream_t) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { launch(exec, stream(s, Default::Legacy)) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGraphLaunch_ptsz(exec: cudaGraphExec_t, s: cudaStream_t) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { launch(exec, stream(s, Default::PerThread)) })
}

/// # Safety
/// Its handles are live ones of the driver's, or ones the driver refuses.
unsafe fn upload(exec: cudaGraphExec_t, s: cu::CUstream) -> Result<(), Error> {
    context()?;
    // SAFETY: handles the driver checks.
    ok(unsafe { cu::cuGraphUpload(exec, s) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGraphUpload(exec: cudaGraphExec_t, s: cudaStream_t) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { upload(exec, stream(s, Default::Legacy)) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaGraphUpload_ptsz(exec: cudaGraphExec_t, s: cudaStream_t) -> cudaError_t {
    // SAFETY: the caller's.
    run(|| unsafe { upload(exec, stream(s, Default::PerThread)) })
}
