//! Streams and events. The simulator runs work when it is queued, so every stream is idle and
//! every recorded event has happened; their handles are still checked.

use crate::abi::{as_ptr, event, out, stream};
use crate::boundary::{code, exports, sim};
use cudarc::driver::sys::{self, CUresult};
use std::ffi::{c_int, c_uint, c_void};

exports! {
    /// Flags (blocking or not) are kept for `cuStreamGetFlags`; nothing waits here either way.
    fn cuStreamCreate(h_stream: *mut sys::CUstream, flags: c_uint) {
        out(h_stream, as_ptr(code(sim().stream_create_with(flags, 0))?.0))
    }

    fn cuStreamCreateWithPriority(h_stream: *mut sys::CUstream, flags: c_uint, priority: c_int) {
        out(h_stream, as_ptr(code(sim().stream_create_with(flags, priority))?.0))
    }

    fn cuStreamGetFlags(h_stream: sys::CUstream, flags: *mut c_uint) {
        out(flags, code(sim().stream_settings(stream(h_stream)))?.0)
    }

    fn cuStreamGetPriority(h_stream: sys::CUstream, priority: *mut c_int) {
        out(priority, code(sim().stream_settings(stream(h_stream)))?.1)
    }

    /// The per-thread default stream has an id of its own; the null stream is the legacy one.
    fn cuStreamGetId(h_stream: sys::CUstream, id: *mut std::ffi::c_ulonglong) {
        let legacy = code(sim().stream_get_id(stream(h_stream)))?;
        out(id, match h_stream as usize {
            2 => peerpool_sim::settings::PER_THREAD_STREAM_ID,
            _ => legacy,
        })
    }

    fn cuStreamGetCtx(h_stream: sys::CUstream, ctx: *mut sys::CUcontext) {
        out(ctx, as_ptr(code(sim().stream_get_ctx(stream(h_stream)))?.0))
    }

    /// No green context is ever simulated.
    fn cuStreamGetCtx_v2(h_stream: sys::CUstream, ctx: *mut sys::CUcontext, green: *mut sys::CUgreenCtx) {
        out(ctx, as_ptr(code(sim().stream_get_ctx(stream(h_stream)))?.0))?;
        if !green.is_null() {
            green.write(std::ptr::null_mut());
        }
        Ok(())
    }

    /// Nothing is ever captured: the status is `CU_STREAM_CAPTURE_STATUS_NONE` and nothing else
    /// is written.
    fn cuStreamGetCaptureInfo_v2(
        h_stream: sys::CUstream, status: *mut sys::CUstreamCaptureStatus, _id: *mut sys::cuuint64_t,
        _graph: *mut sys::CUgraph, _dependencies: *mut *const sys::CUgraphNode, _count: *mut usize,
    ) {
        code(sim().stream_query(stream(h_stream)))?;
        out(status, sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// As [`cuStreamGetCaptureInfo_v2`], with edge data (CUDA 12.3 on).
    fn cuStreamGetCaptureInfo_v3(
        h_stream: sys::CUstream, status: *mut sys::CUstreamCaptureStatus, _id: *mut sys::cuuint64_t,
        _graph: *mut sys::CUgraph, _dependencies: *mut *const sys::CUgraphNode, _edges: *mut *const sys::CUgraphEdgeData,
        _count: *mut usize,
    ) {
        code(sim().stream_query(stream(h_stream)))?;
        out(status, sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// The stream's work is done when queued here, so the function runs now, on this thread
    /// (it may not call CUDA, as the driver documents).
    fn cuLaunchHostFunc(h_stream: sys::CUstream, f: sys::CUhostFn, data: *mut c_void) {
        let f = f.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        code(sim().stream_query(stream(h_stream)))?;
        f(data);
        Ok(())
    }

    /// As [`cuLaunchHostFunc`], told the stream and success; flags must be 0.
    fn cuStreamAddCallback(h_stream: sys::CUstream, callback: sys::CUstreamCallback, data: *mut c_void, flags: c_uint) {
        let callback = callback.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if flags != 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        code(sim().stream_query(stream(h_stream)))?;
        callback(h_stream, CUresult::CUDA_SUCCESS, data);
        Ok(())
    }

    fn cuStreamDestroy_v2(h_stream: sys::CUstream) {
        code(sim().stream_destroy(stream(h_stream)))
    }

    fn cuStreamSynchronize(h_stream: sys::CUstream) {
        code(sim().stream_synchronize(stream(h_stream)))
    }

    fn cuStreamQuery(h_stream: sys::CUstream) {
        code(sim().stream_query(stream(h_stream)))
    }

    /// Nothing is ever captured into a graph here (graphs are not simulated).
    fn cuStreamIsCapturing(h_stream: sys::CUstream, status: *mut sys::CUstreamCaptureStatus) {
        code(sim().stream_query(stream(h_stream)))?;
        out(status, sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    fn cuStreamWaitEvent(h_stream: sys::CUstream, h_event: sys::CUevent, flags: c_uint) {
        code(sim().stream_wait_event(stream(h_stream), event(h_event), flags))
    }

    fn cuEventCreate(ph_event: *mut sys::CUevent, flags: c_uint) {
        out(ph_event, as_ptr(code(sim().event_create(flags))?.0))
    }

    fn cuEventRecord(h_event: sys::CUevent, h_stream: sys::CUstream) {
        code(sim().event_record(event(h_event), stream(h_stream)))
    }

    fn cuEventSynchronize(h_event: sys::CUevent) {
        code(sim().event_synchronize(event(h_event)))
    }

    fn cuEventQuery(h_event: sys::CUevent) {
        code(sim().event_query(event(h_event)))
    }

    fn cuEventElapsedTime(ms: *mut f32, start: sys::CUevent, end: sys::CUevent) {
        out(ms, code(sim().event_elapsed_time(event(start), event(end)))?)
    }

    fn cuEventElapsedTime_v2(ms: *mut f32, start: sys::CUevent, end: sys::CUevent) {
        out(ms, code(sim().event_elapsed_time(event(start), event(end)))?)
    }

    fn cuEventDestroy_v2(h_event: sys::CUevent) {
        code(sim().event_destroy(event(h_event)))
    }
}
