//! Streams and events. The simulator runs work when it is queued, so every stream is idle and
//! every recorded event has happened; their handles are still checked.

use crate::abi::{as_ptr, event, out, stream};
use crate::boundary::{code, exports, sim};
use cudarc::driver::sys;
use std::ffi::{c_int, c_uint};

exports! {
    /// Flags (blocking or not) do not matter where nothing waits.
    fn cuStreamCreate(h_stream: *mut sys::CUstream, _flags: c_uint) {
        out(h_stream, as_ptr(code(sim().stream_create())?.0))
    }

    fn cuStreamCreateWithPriority(h_stream: *mut sys::CUstream, _flags: c_uint, _priority: c_int) {
        out(h_stream, as_ptr(code(sim().stream_create())?.0))
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
