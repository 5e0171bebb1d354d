//! Streams and events. The simulator runs work when it is queued, so every stream is idle and
//! every recorded event has happened; their handles are still checked.

use crate::abi::{as_ptr, event, out, stream};
use crate::boundary::{Answer, code, entry, forward_if_real, sim};
use crate::graphs;
use crate::host_functions;
use cudarc::driver::sys::{
    self, CUcontext, CUevent, CUgraph, CUgraphEdgeData, CUgraphNode, CUgreenCtx, CUhostFn, CUresult, CUstream,
    CUstreamCallback, CUstreamCaptureMode, CUstreamCaptureStatus,
};
use std::ffi::{c_int, c_uint, c_void};
use std::ptr::null_mut;

/// Flags (blocking or not) are kept for `cuStreamGetFlags`; nothing waits here either way.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreate(h_stream: *mut CUstream, flags: c_uint) -> CUresult {
    entry!(cuStreamCreate(h_stream, flags), { out(h_stream, as_ptr(code(sim().stream_create_with(flags, 0))?.0)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    h_stream: *mut CUstream,
    flags: c_uint,
    priority: c_int,
) -> CUresult {
    entry!(cuStreamCreateWithPriority(h_stream, flags, priority), {
        out(h_stream, as_ptr(code(sim().stream_create_with(flags, priority))?.0))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetFlags(h_stream: CUstream, flags: *mut c_uint) -> CUresult {
    entry!(cuStreamGetFlags(h_stream, flags), { out(flags, code(sim().stream_settings(stream(h_stream)))?.0) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetPriority(h_stream: CUstream, priority: *mut c_int) -> CUresult {
    entry!(cuStreamGetPriority(h_stream, priority), { out(priority, code(sim().stream_settings(stream(h_stream)))?.1) })
}

/// The per-thread default stream has an id of its own; the null stream is the legacy one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetId(h_stream: CUstream, id: *mut std::ffi::c_ulonglong) -> CUresult {
    entry!(cuStreamGetId(h_stream, id), {
        let legacy = code(sim().stream_get_id(stream(h_stream)))?;
        out(
            id,
            match h_stream as usize {
                2 => peerpool_sim::settings::PER_THREAD_STREAM_ID,
                _ => legacy,
            },
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCtx(h_stream: CUstream, ctx: *mut CUcontext) -> CUresult {
    entry!(cuStreamGetCtx(h_stream, ctx), { out(ctx, as_ptr(code(sim().stream_get_ctx(stream(h_stream)))?.0)) })
}

/// No green context is ever simulated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCtx_v2(
    h_stream: CUstream,
    ctx: *mut CUcontext,
    green: *mut CUgreenCtx,
) -> CUresult {
    entry!(cuStreamGetCtx_v2(h_stream, ctx, green), {
        out(ctx, as_ptr(code(sim().stream_get_ctx(stream(h_stream)))?.0))?;
        if !green.is_null() {
            green.write(std::ptr::null_mut());
        }
        Ok(())
    })
}

/// The stream's capture: its status, and where asked and capturing, the capture's id and graph
/// and the nodes the stream's next work will depend on (valid until the next call on it).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v2(
    h_stream: CUstream,
    status: *mut CUstreamCaptureStatus,
    id: *mut sys::cuuint64_t,
    graph: *mut CUgraph,
    dependencies: *mut *const CUgraphNode,
    count: *mut usize,
) -> CUresult {
    entry!(cuStreamGetCaptureInfo_v2(h_stream, status, id, graph, dependencies, count), {
        capture_info(h_stream, status, id, graph, dependencies, std::ptr::null_mut(), count)
    })
}

/// As [`cuStreamGetCaptureInfo_v2`], with edge data (CUDA 12.3 on).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v3(
    h_stream: CUstream,
    status: *mut CUstreamCaptureStatus,
    id: *mut sys::cuuint64_t,
    graph: *mut CUgraph,
    dependencies: *mut *const CUgraphNode,
    edges: *mut *const CUgraphEdgeData,
    count: *mut usize,
) -> CUresult {
    entry!(cuStreamGetCaptureInfo_v3(h_stream, status, id, graph, dependencies, edges, count), {
        capture_info(h_stream, status, id, graph, dependencies, edges, count)
    })
}

/// What `cuStreamGetCaptureInfo` writes; the dependencies' and edges' arrays live in a buffer
/// per thread until the next such call.
///
/// # Safety
/// Each non-null pointer is valid for a write.
unsafe fn capture_info(
    h_stream: CUstream,
    status: *mut CUstreamCaptureStatus,
    id: *mut sys::cuuint64_t,
    graph: *mut CUgraph,
    dependencies: *mut *const CUgraphNode,
    edges: *mut *const CUgraphEdgeData,
    count: *mut usize,
) -> Answer {
    std::thread_local! {
        static KEPT: std::cell::RefCell<(Vec<CUgraphNode>, Vec<CUgraphEdgeData>)> = Default::default();
    }
    let Some((valid, capture, into, deps)) = graphs::info(h_stream as usize as u64) else {
        // SAFETY: the caller's.
        return unsafe { not_capturing(h_stream, status) };
    };
    use CUstreamCaptureStatus::{CU_STREAM_CAPTURE_STATUS_ACTIVE, CU_STREAM_CAPTURE_STATUS_INVALIDATED};
    // SAFETY: the caller's, for each.
    unsafe {
        out(status, if valid { CU_STREAM_CAPTURE_STATUS_ACTIVE } else { CU_STREAM_CAPTURE_STATUS_INVALIDATED })?;
        if !id.is_null() {
            id.write(capture);
        }
        if !graph.is_null() {
            graph.write(as_ptr(into));
        }
        if !count.is_null() {
            count.write(deps.len());
        }
    }
    KEPT.with_borrow_mut(|(nodes, data)| {
        *nodes = deps.iter().map(|&d| as_ptr(d)).collect();
        *data = vec![unsafe { std::mem::zeroed() }; deps.len()];
        // SAFETY: the caller's.
        unsafe {
            if !dependencies.is_null() {
                dependencies.write(nodes.as_ptr());
            }
            if !edges.is_null() {
                edges.write(data.as_ptr());
            }
        }
    });
    Ok(())
}

/// Global, thread-local and relaxed capture are taken alike: the calls global capture forbids
/// elsewhere in the process are not refused yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamBeginCapture_v2(h_stream: CUstream, mode: CUstreamCaptureMode) -> CUresult {
    entry!(cuStreamBeginCapture_v2(h_stream, mode), { graphs::begin(sim(), h_stream as usize as u64, mode as u32) })
}

/// A capture into the caller's graph, its work after `dependencies` (edges of default data).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamBeginCaptureToGraph(
    h_stream: CUstream,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    dependency_data: *const CUgraphEdgeData,
    num_dependencies: usize,
    mode: c_uint,
) -> CUresult {
    entry!(cuStreamBeginCaptureToGraph(h_stream, h_graph, dependencies, dependency_data, num_dependencies, mode), {
        let what = "cuStreamBeginCaptureToGraph with edge data";
        crate::exports::graph::default_edge_data(dependency_data, num_dependencies, what)?;
        let deps = crate::exports::graph::dependencies(dependencies, num_dependencies)?;
        let graph = h_graph as usize as u64;
        graphs::begin_into(sim(), h_stream as usize as u64, Some(graph), &deps, mode)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamEndCapture(h_stream: CUstream, ph_graph: *mut CUgraph) -> CUresult {
    entry!(cuStreamEndCapture(h_stream, ph_graph), {
        if ph_graph.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let graph = graphs::end(sim(), h_stream as usize as u64);
        // The driver writes a null graph where the capture failed.
        ph_graph.write(graph.map_or(std::ptr::null_mut(), as_ptr));
        graph.map(drop)
    })
}

/// The thread's capture mode, exchanged: kept per thread, as the driver keeps it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuThreadExchangeStreamCaptureMode(mode: *mut CUstreamCaptureMode) -> CUresult {
    entry!(cuThreadExchangeStreamCaptureMode(mode), {
        // Read as the integer it is: a mode out of range is refused, not taken for an enum.
        let wanted = mode.cast::<u32>().as_mut().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        *wanted = crate::capture_rules::exchange_mode(*wanted)?;
        Ok(())
    })
}

/// The stream's work is done when queued here, so the function runs now, on this thread
/// (it may not call CUDA, as the driver documents).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchHostFunc(h_stream: CUstream, f: CUhostFn, data: *mut c_void) -> CUresult {
    entry!(cuLaunchHostFunc(h_stream, f, data), {
        let f = f.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let data = data as usize;
        if let Some(done) = graphs::capture(h_stream as usize as u64, || Ok(graphs::Work::Host { f, data })) {
            return done;
        }
        code(sim().stream_query(stream(h_stream)))?;
        // SAFETY: CUDA's contract: the function and its data are valid on the driver's thread.
        host_functions::enqueue(stream(h_stream).0, host_functions::Job::new(move || f(data as *mut c_void)));
        Ok(())
    })
}

/// As [`cuLaunchHostFunc`], told the stream and success; flags must be 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamAddCallback(
    h_stream: CUstream,
    callback: CUstreamCallback,
    data: *mut c_void,
    flags: c_uint,
) -> CUresult {
    entry!(cuStreamAddCallback(h_stream, callback, data, flags), {
        let callback = callback.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if flags != 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        code(sim().stream_query(stream(h_stream)))?;
        let (handle, data) = (h_stream as usize, data as usize);
        // SAFETY: as for cuLaunchHostFunc.
        host_functions::enqueue(
            stream(h_stream).0,
            host_functions::Job::new(move || callback(handle as CUstream, CUresult::CUDA_SUCCESS, data as *mut c_void)),
        );
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamDestroy_v2(h_stream: CUstream) -> CUresult {
    entry!(cuStreamDestroy_v2(h_stream), { code(sim().stream_destroy(stream(h_stream))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamSynchronize(h_stream: CUstream) -> CUresult {
    entry!(cuStreamSynchronize(h_stream), { code(sim().stream_synchronize(stream(h_stream))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamQuery(h_stream: CUstream) -> CUresult {
    entry!(cuStreamQuery(h_stream), {
        code(sim().stream_query(stream(h_stream)))?;
        match host_functions::pending() {
            true => Err(CUresult::CUDA_ERROR_NOT_READY),
            false => Ok(()),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamIsCapturing(h_stream: CUstream, status: *mut CUstreamCaptureStatus) -> CUresult {
    entry!(cuStreamIsCapturing(h_stream, status), {
        capture_info(h_stream, status, null_mut(), null_mut(), null_mut(), null_mut(), null_mut())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamWaitEvent(h_stream: CUstream, h_event: CUevent, flags: c_uint) -> CUresult {
    entry!(cuStreamWaitEvent(h_stream, h_event, flags), {
        if let Some(joined) = graphs::wait(sim(), h_stream as usize as u64, h_event as usize as u64) {
            return joined;
        }
        code(sim().stream_wait_event(stream(h_stream), event(h_event), flags))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventCreate(ph_event: *mut CUevent, flags: c_uint) -> CUresult {
    entry!(cuEventCreate(ph_event, flags), { out(ph_event, as_ptr(code(sim().event_create(flags))?.0)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventRecord(h_event: CUevent, h_stream: CUstream) -> CUresult {
    entry!(cuEventRecord(h_event, h_stream), {
        if let Some(recorded) = graphs::record(h_event as usize as u64, h_stream as usize as u64) {
            return recorded;
        }
        code(sim().event_record(event(h_event), stream(h_stream)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventSynchronize(h_event: CUevent) -> CUresult {
    entry!(cuEventSynchronize(h_event), { code(sim().event_synchronize(event(h_event))) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventQuery(h_event: CUevent) -> CUresult {
    entry!(cuEventQuery(h_event), {
        code(sim().event_query(event(h_event)))?;
        match host_functions::pending() {
            true => Err(CUresult::CUDA_ERROR_NOT_READY),
            false => Ok(()),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventElapsedTime(ms: *mut f32, start: CUevent, end: CUevent) -> CUresult {
    entry!(cuEventElapsedTime(ms, start, end), { out(ms, code(sim().event_elapsed_time(event(start), event(end)))?) })
}

/// CUDA 12.8's form: on the simulator, [`cuEventElapsedTime`] itself.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventElapsedTime_v2(ms: *mut f32, start: CUevent, end: CUevent) -> CUresult {
    forward_if_real!(cuEventElapsedTime_v2(ms, start, end));
    // SAFETY: the caller's.
    unsafe { cuEventElapsedTime(ms, start, end) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventDestroy_v2(h_event: CUevent) -> CUresult {
    entry!(cuEventDestroy_v2(h_event), { code(sim().event_destroy(event(h_event))) })
}

/// Writes `CU_STREAM_CAPTURE_STATUS_NONE` for a live stream: nothing is ever captured.
///
/// # Safety
/// A non-null `status` is valid for a write.
unsafe fn not_capturing(h_stream: CUstream, status: *mut CUstreamCaptureStatus) -> Answer {
    code(sim().stream_query(stream(h_stream)))?;
    // SAFETY: the caller's.
    unsafe { out(status, CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE) }
}

/// A `CUstreamAttrValue`'s bytes, as the simulator keeps them.
const ATTRIBUTE_VALUE_BYTES: usize = 64;
const _: () = assert!(size_of::<sys::CUstreamAttrValue>() == ATTRIBUTE_VALUE_BYTES);

/// The attributes a stream has, kept for `cuStreamGetAttribute` (none changes what the
/// simulator does: its streams run in order); another is `CUDA_ERROR_INVALID_VALUE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamSetAttribute(
    h_stream: CUstream,
    attr: sys::CUstreamAttrID,
    value: *const sys::CUstreamAttrValue,
) -> CUresult {
    entry!(cuStreamSetAttribute(h_stream, attr, value), {
        if value.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let mut bytes = [0u8; ATTRIBUTE_VALUE_BYTES];
        std::ptr::copy_nonoverlapping(value.cast::<u8>(), bytes.as_mut_ptr(), bytes.len());
        code(sim().stream_set_attribute(stream(h_stream), attr as u32, bytes))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetAttribute(
    h_stream: CUstream,
    attr: sys::CUstreamAttrID,
    value_out: *mut sys::CUstreamAttrValue,
) -> CUresult {
    entry!(cuStreamGetAttribute(h_stream, attr, value_out), {
        if value_out.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let bytes = code(sim().stream_get_attribute(stream(h_stream), attr as u32))?;
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), value_out.cast::<u8>(), bytes.len());
        Ok(())
    })
}

/// `CU_EVENT_RECORD_DEFAULT` records as `cuEventRecord`; `CU_EVENT_RECORD_EXTERNAL` (for graph
/// capture, which is not simulated) the same.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventRecordWithFlags(h_event: CUevent, h_stream: CUstream, flags: c_uint) -> CUresult {
    entry!(cuEventRecordWithFlags(h_event, h_stream, flags), {
        if flags > 1 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        if let Some(recorded) = graphs::record(h_event as usize as u64, h_stream as usize as u64) {
            return recorded;
        }
        code(sim().event_record(event(h_event), stream(h_stream)))
    })
}
