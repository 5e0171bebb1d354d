//! Streams and events, each call also as its `_ptsz` twin (a null stream meaning the thread's
//! own); host functions and callbacks; capture queries.

use crate::device::context;
use crate::driver::{cu, ok};
use crate::error::{Error, cudaError_t, put, run};
use crate::types::{Default, cudaEvent_t, cudaStream_t, stream};
use std::ffi::{c_int, c_void};

fn create(out: *mut cudaStream_t, flags: u32, priority: Option<c_int>) -> Result<(), Error> {
    context()?;
    let mut s = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; a context is current.
    ok(unsafe {
        match priority {
            None => cu::cuStreamCreate(&mut s, flags),
            Some(p) => cu::cuStreamCreateWithPriority(&mut s, flags, p),
        }
    })?;
    // SAFETY: the caller's.
    unsafe { put(out, s) }
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamCreate(out: *mut cudaStream_t) -> cudaError_t {
    run(|| create(out, 0, None))
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamCreateWithFlags(out: *mut cudaStream_t, flags: u32) -> cudaError_t {
    run(|| create(out, flags, None))
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamCreateWithPriority(
    out: *mut cudaStream_t,
    flags: u32,
    priority: c_int,
) -> cudaError_t {
    run(|| create(out, flags, Some(priority)))
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamDestroy(s: cudaStream_t) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the driver checks the handle.
        ok(unsafe { cu::cuStreamDestroy_v2(s) })
    })
}

fn on_stream(s: cu::CUstream, call: unsafe extern "C" fn(cu::CUstream) -> cu::CUresult) -> Result<(), Error> {
    context()?;
    // SAFETY: the driver checks the handle.
    ok(unsafe { call(s) })
}

unsafe extern "C" fn synchronize(s: cu::CUstream) -> cu::CUresult {
    // SAFETY: the driver checks the handle.
    unsafe { cu::cuStreamSynchronize(s) }
}

unsafe extern "C" fn query(s: cu::CUstream) -> cu::CUresult {
    // SAFETY: the driver checks the handle.
    unsafe { cu::cuStreamQuery(s) }
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamSynchronize(s: cudaStream_t) -> cudaError_t {
    run(|| on_stream(stream(s, Default::Legacy), synchronize))
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamSynchronize_ptsz(s: cudaStream_t) -> cudaError_t {
    run(|| on_stream(stream(s, Default::PerThread), synchronize))
}

/// `cudaErrorNotReady` while work is pending (also the thread's last error, as NVIDIA's).
///
/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamQuery(s: cudaStream_t) -> cudaError_t {
    run(|| on_stream(stream(s, Default::Legacy), query))
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamQuery_ptsz(s: cudaStream_t) -> cudaError_t {
    run(|| on_stream(stream(s, Default::PerThread), query))
}

fn wait(s: cu::CUstream, event: cudaEvent_t, flags: u32) -> Result<(), Error> {
    context()?;
    // SAFETY: the driver checks the handles.
    ok(unsafe { cu::cuStreamWaitEvent(s, event, flags) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamWaitEvent(s: cudaStream_t, event: cudaEvent_t, flags: u32) -> cudaError_t {
    run(|| wait(stream(s, Default::Legacy), event, flags))
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamWaitEvent_ptsz(s: cudaStream_t, event: cudaEvent_t, flags: u32) -> cudaError_t {
    run(|| wait(stream(s, Default::PerThread), event, flags))
}

fn flags(s: cu::CUstream, out: *mut u32) -> Result<(), Error> {
    context()?;
    let mut f = 0;
    // SAFETY: a valid out-pointer; the driver checks the handle.
    ok(unsafe { cu::cuStreamGetFlags(s, &mut f) })?;
    // SAFETY: the caller's.
    unsafe { put(out, f) }
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamGetFlags(s: cudaStream_t, out: *mut u32) -> cudaError_t {
    run(|| flags(stream(s, Default::Legacy), out))
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamGetFlags_ptsz(s: cudaStream_t, out: *mut u32) -> cudaError_t {
    run(|| flags(stream(s, Default::PerThread), out))
}

fn priority(s: cu::CUstream, out: *mut c_int) -> Result<(), Error> {
    context()?;
    let mut p = 0;
    // SAFETY: a valid out-pointer; the driver checks the handle.
    ok(unsafe { cu::cuStreamGetPriority(s, &mut p) })?;
    // SAFETY: the caller's.
    unsafe { put(out, p) }
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamGetPriority(s: cudaStream_t, out: *mut c_int) -> cudaError_t {
    run(|| priority(stream(s, Default::Legacy), out))
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamGetPriority_ptsz(s: cudaStream_t, out: *mut c_int) -> cudaError_t {
    run(|| priority(stream(s, Default::PerThread), out))
}

fn capturing(s: cu::CUstream, out: *mut c_int) -> Result<(), Error> {
    context()?;
    let mut status = cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: a valid out-pointer; the driver checks the handle.
    ok(unsafe { cu::cuStreamIsCapturing(s, &mut status) })?;
    // SAFETY: the caller's (`cudaStreamCaptureStatus` has the driver's values).
    unsafe { put(out, status as c_int) }
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamIsCapturing(s: cudaStream_t, out: *mut c_int) -> cudaError_t {
    run(|| capturing(stream(s, Default::Legacy), out))
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamIsCapturing_ptsz(s: cudaStream_t, out: *mut c_int) -> cudaError_t {
    run(|| capturing(stream(s, Default::PerThread), out))
}

type HostFn = unsafe extern "C" fn(*mut c_void);

fn host_func(s: cu::CUstream, f: Option<HostFn>, data: *mut c_void) -> Result<(), Error> {
    context()?;
    // SAFETY: the caller's function and data, called by the driver as the runtime would.
    ok(unsafe { cu::cuLaunchHostFunc(s, f, data) })
}

/// # Safety
/// `f` may be called with `data` on another thread once the stream's work before it ends.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaLaunchHostFunc(s: cudaStream_t, f: Option<HostFn>, data: *mut c_void) -> cudaError_t {
    run(|| host_func(stream(s, Default::Legacy), f, data))
}

/// # Safety
/// As [`cudaLaunchHostFunc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaLaunchHostFunc_ptsz(s: cudaStream_t, f: Option<HostFn>, data: *mut c_void) -> cudaError_t {
    run(|| host_func(stream(s, Default::PerThread), f, data))
}

fn event_create(out: *mut cudaEvent_t, flags: u32) -> Result<(), Error> {
    context()?;
    let mut e = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; a context is current.
    ok(unsafe { cu::cuEventCreate(&mut e, flags) })?;
    // SAFETY: the caller's.
    unsafe { put(out, e) }
}

/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaEventCreate(out: *mut cudaEvent_t) -> cudaError_t {
    run(|| event_create(out, 0))
}

/// `cudaEvent*` flags are the driver's `CU_EVENT_*`.
///
/// # Safety
/// A non-null `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaEventCreateWithFlags(out: *mut cudaEvent_t, flags: u32) -> cudaError_t {
    run(|| event_create(out, flags))
}

fn record(event: cudaEvent_t, s: cu::CUstream, flags: u32) -> Result<(), Error> {
    context()?;
    // SAFETY: the driver checks the handles.
    ok(unsafe { cu::cuEventRecordWithFlags(event, s, flags) })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaEventRecord(event: cudaEvent_t, s: cudaStream_t) -> cudaError_t {
    run(|| record(event, stream(s, Default::Legacy), 0))
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaEventRecord_ptsz(event: cudaEvent_t, s: cudaStream_t) -> cudaError_t {
    run(|| record(event, stream(s, Default::PerThread), 0))
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaEventRecordWithFlags(event: cudaEvent_t, s: cudaStream_t, flags: u32) -> cudaError_t {
    run(|| record(event, stream(s, Default::Legacy), flags))
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaEventRecordWithFlags_ptsz(event: cudaEvent_t, s: cudaStream_t, flags: u32) -> cudaError_t {
    run(|| record(event, stream(s, Default::PerThread), flags))
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaEventQuery(event: cudaEvent_t) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the driver checks the handle.
        ok(unsafe { cu::cuEventQuery(event) })
    })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaEventSynchronize(event: cudaEvent_t) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the driver checks the handle.
        ok(unsafe { cu::cuEventSynchronize(event) })
    })
}

/// # Safety
/// Its handles and pointers are as the CUDA runtime documents for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaEventDestroy(event: cudaEvent_t) -> cudaError_t {
    run(|| {
        context()?;
        // SAFETY: the driver checks the handle.
        ok(unsafe { cu::cuEventDestroy_v2(event) })
    })
}

/// Milliseconds between two events (both majors' `cudaEventElapsedTime`, and 12.x's `_v2`).
///
/// # Safety
/// A non-null `ms` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaEventElapsedTime(ms: *mut f32, start: cudaEvent_t, end: cudaEvent_t) -> cudaError_t {
    run(|| {
        context()?;
        let mut t = 0f32;
        // SAFETY: a valid out-pointer; the driver checks the handles.
        ok(unsafe { cu::cuEventElapsedTime_v2(&mut t, start, end) })?;
        // SAFETY: the caller's.
        unsafe { put(ms, t) }
    })
}

/// `cudaStreamCallback_t`: its status is a `cudaError_t`, an int as the driver's `CUresult` is.
type Callback = unsafe extern "C" fn(cudaStream_t, u32, *mut c_void);

fn add_callback(s: cu::CUstream, callback: Option<Callback>, data: *mut c_void, flags: u32) -> Result<(), Error> {
    context()?;
    // SAFETY: the same C signature: a stream, a status of the driver's (whose numbers the
    // runtime's are), the caller's data.
    let callback = callback.map(|c| unsafe {
        std::mem::transmute::<Callback, unsafe extern "C" fn(cu::CUstream, cu::CUresult, *mut c_void)>(c)
    });
    // SAFETY: the caller's function and data, called by the driver.
    ok(unsafe { cu::cuStreamAddCallback(s, callback, data, flags) })
}

/// # Safety
/// `callback` may be called with `data` on another thread once the stream's work before it ends.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamAddCallback(
    s: cudaStream_t,
    callback: Option<Callback>,
    data: *mut c_void,
    flags: u32,
) -> cudaError_t {
    run(|| add_callback(stream(s, Default::Legacy), callback, data, flags))
}

/// # Safety
/// As [`cudaStreamAddCallback`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cudaStreamAddCallback_ptsz(
    s: cudaStream_t,
    callback: Option<Callback>,
    data: *mut c_void,
    flags: u32,
) -> cudaError_t {
    run(|| add_callback(stream(s, Default::PerThread), callback, data, flags))
}
