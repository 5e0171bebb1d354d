//! Instantiated graphs: made from a graph, launched on a stream, where their work runs in an
//! order the edges allow through the same paths as the stream calls it stands for; their
//! nodes' parameters set one by one or all at once from a graph of the same shape
//! (`cuGraphExecUpdate`), their nodes disabled and enabled (`graphs.rs` keeps them).

use super::graph::{handle, host_node, kernel_node, memcpy_node, memset_node};
use super::graph_nodes::{Params, read_params};
use crate::abi::{as_ptr, out, stream};
use crate::boundary::{Answer, code, entry, sim};
use crate::exports::copy::{memcpy_on, memset_on};
use crate::exports::launch::replay_kernel;
use crate::graph_memory;
use crate::graphs::{self, Extras, Work};
use crate::host_functions;
use cudarc::driver::sys::{
    CUDA_GRAPH_INSTANTIATE_PARAMS, CUDA_HOST_NODE_PARAMS, CUDA_KERNEL_NODE_PARAMS, CUDA_MEMCPY3D,
    CUDA_MEMSET_NODE_PARAMS, CUcontext, CUevent, CUgraph, CUgraphExec, CUgraphExecUpdateResultInfo,
    CUgraphInstantiateResult, CUgraphNode, CUgraphNodeParams, CUresult, CUstream, cuuint64_t,
};
use std::ffi::{c_uint, c_ulonglong, c_void};

/// Flags that change nothing on the simulator (auto-free on launch, upload, node priority) are
/// taken; device launch is `CUDA_ERROR_NOT_SUPPORTED`, named once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphInstantiateWithFlags(
    ph_graph_exec: *mut CUgraphExec,
    h_graph: CUgraph,
    flags: c_ulonglong,
) -> CUresult {
    entry!(cuGraphInstantiateWithFlags(ph_graph_exec, h_graph, flags), { instantiate(ph_graph_exec, h_graph, flags) })
}

/// `CUDA_GRAPH_INSTANTIATE_FLAG_*`: auto-free on launch, upload, device launch, node priority.
const INSTANTIATE_FLAGS: u64 = 0x1 | 0x2 | 0x4 | 0x8;
const DEVICE_LAUNCH: u64 = 0x4;

/// # Safety
/// `exec` is valid for a write or null.
unsafe fn instantiate(exec: *mut CUgraphExec, g: CUgraph, flags: u64) -> Answer {
    if flags & !INSTANTIATE_FLAGS != 0 {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    if flags & DEVICE_LAUNCH != 0 {
        return crate::boundary::not_simulated("cuGraphInstantiate for device launch");
    }
    let made = graphs::instantiate(handle(g), flags)?;
    // SAFETY: the caller's.
    unsafe { out(exec, as_ptr(made)) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphInstantiateWithParams(
    ph_graph_exec: *mut CUgraphExec,
    h_graph: CUgraph,
    instantiate_params: *mut CUDA_GRAPH_INSTANTIATE_PARAMS,
) -> CUresult {
    entry!(cuGraphInstantiateWithParams(ph_graph_exec, h_graph, instantiate_params), {
        let p = instantiate_params;
        if p.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: the caller's: checked non-null, the struct there; its flags an integer.
        let made = instantiate(ph_graph_exec, h_graph, (*p).flags);
        let result = match made {
            Ok(()) => CUgraphInstantiateResult::CUDA_GRAPH_INSTANTIATE_SUCCESS,
            Err(_) => CUgraphInstantiateResult::CUDA_GRAPH_INSTANTIATE_ERROR,
        };
        // Written as the integer: the struct is the caller's, its result not read.
        // SAFETY: as above.
        std::ptr::addr_of_mut!((*p).result_out).cast::<u32>().write(result as u32);
        made
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecDestroy(h_graph_exec: CUgraphExec) -> CUresult {
    entry!(cuGraphExecDestroy(h_graph_exec), { graphs::exec_destroy(handle(h_graph_exec)) })
}

/// Nothing to upload ahead on the simulator: the graph is checked and the stream too.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphUpload(h_graph_exec: CUgraphExec, h_stream: CUstream) -> CUresult {
    entry!(cuGraphUpload(h_graph_exec, h_stream), {
        graphs::exec_work(handle(h_graph_exec))?;
        code(sim().stream_query(stream(h_stream)))
    })
}

/// The graph's work in order on the stream, its disabled nodes left out. On a stream in capture it is
/// `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`, as an H100's driver answered for a graph of host,
/// copy and memset nodes; the capture is invalidated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphLaunch(h_graph_exec: CUgraphExec, h_stream: CUstream) -> CUresult {
    entry!(cuGraphLaunch(h_graph_exec, h_stream), {
        let exec = handle(h_graph_exec);
        if graphs::invalidate(handle(h_stream)) {
            return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        }
        let (steps, auto_free) = graphs::exec_work(exec)?;
        // An allocation still live from the last launch is freed first with auto-free, and
        // refuses the launch without.
        let live: Vec<u64> = steps
            .iter()
            .filter_map(|st| match st.node.work {
                Work::MemAlloc(va) if graph_memory::live(va) => Some(va),
                _ => None,
            })
            .collect();
        match (live.is_empty(), auto_free) {
            (true, _) => {}
            (false, true) => live.iter().try_for_each(|&va| graph_memory::unmap(sim(), va))?,
            (false, false) => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        }
        // A disabled node runs as an empty one.
        for st in steps.iter().filter(|st| st.enabled) {
            replay(&st.node.work, h_stream)?;
        }
        Ok(())
    })
}

/// The instantiation flags, less upload (which changes nothing in an executable graph), as
/// the driver reports them.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecGetFlags(h_graph_exec: CUgraphExec, flags: *mut cuuint64_t) -> CUresult {
    entry!(cuGraphExecGetFlags(h_graph_exec, flags), { out(flags, graphs::exec_flags(handle(h_graph_exec))?) })
}

/// A node of the graph `exec` was made from (not of a child graph) runs `work` from the next
/// launch; its kind and anything the driver does not update (a copy's memory types, a memset's
/// shape) must stay, else `CUDA_ERROR_INVALID_VALUE`. The node itself is not changed.
fn exec_set(exec: CUgraphExec, node: CUgraphNode, work: Work, extras: Extras) -> Answer {
    graphs::exec_set(handle(exec), handle(node), work, extras)
}

/// The launch attributes stay those the node was instantiated with.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecKernelNodeSetParams_v2(
    h_graph_exec: CUgraphExec,
    h_node: CUgraphNode,
    node_params: *const CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    entry!(cuGraphExecKernelNodeSetParams_v2(h_graph_exec, h_node, node_params), {
        let (work, via_extra) = kernel_node(node_params)?;
        exec_set(h_graph_exec, h_node, work, Extras { via_extra, ..Extras::default() })
    })
}

/// One-dimensional, of at least a byte, between memory of the types the node had.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecMemcpyNodeSetParams(
    h_graph_exec: CUgraphExec,
    h_node: CUgraphNode,
    copy_params: *const CUDA_MEMCPY3D,
    ctx: CUcontext,
) -> CUresult {
    entry!(cuGraphExecMemcpyNodeSetParams(h_graph_exec, h_node, copy_params, ctx), {
        let (work, copy) = memcpy_node(copy_params)?;
        if matches!(work, Work::Memcpy { bytes: 0, .. }) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        exec_set(h_graph_exec, h_node, work, Extras { copy: Some(Box::new(copy)), ..Extras::default() })
    })
}

/// Address and value; a one-row memset stays one row, and one of more rows keeps its shape.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecMemsetNodeSetParams(
    h_graph_exec: CUgraphExec,
    h_node: CUgraphNode,
    memset_params: *const CUDA_MEMSET_NODE_PARAMS,
    ctx: CUcontext,
) -> CUresult {
    entry!(cuGraphExecMemsetNodeSetParams(h_graph_exec, h_node, memset_params, ctx), {
        let work = memset_node(memset_params)?;
        if matches!(work, Work::Memset { width: 0, .. }) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        exec_set(h_graph_exec, h_node, work, Extras::default())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecHostNodeSetParams(
    h_graph_exec: CUgraphExec,
    h_node: CUgraphNode,
    node_params: *const CUDA_HOST_NODE_PARAMS,
) -> CUresult {
    entry!(cuGraphExecHostNodeSetParams(h_graph_exec, h_node, node_params), {
        exec_set(h_graph_exec, h_node, host_node(node_params)?, Extras::default())
    })
}

/// `child_graph` must have the shape of the graph the node embeds (nodes paired as
/// `cuGraphExecUpdate` pairs them); its nodes' parameters become those of the node's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecChildGraphNodeSetParams(
    h_graph_exec: CUgraphExec,
    h_node: CUgraphNode,
    child_graph: CUgraph,
) -> CUresult {
    entry!(cuGraphExecChildGraphNodeSetParams(h_graph_exec, h_node, child_graph), {
        graphs::exec_set_child(handle(h_graph_exec), handle(h_node), handle(child_graph))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecEventRecordNodeSetEvent(
    h_graph_exec: CUgraphExec,
    h_node: CUgraphNode,
    event: CUevent,
) -> CUresult {
    entry!(cuGraphExecEventRecordNodeSetEvent(h_graph_exec, h_node, event), {
        exec_set(h_graph_exec, h_node, Work::EventRecord(handle(event)), Extras::default())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecEventWaitNodeSetEvent(
    h_graph_exec: CUgraphExec,
    h_node: CUgraphNode,
    event: CUevent,
) -> CUresult {
    entry!(cuGraphExecEventWaitNodeSetEvent(h_graph_exec, h_node, event), {
        exec_set(h_graph_exec, h_node, Work::EventWait(handle(event)), Extras::default())
    })
}

/// As the kind's own setter; allocation and free nodes cannot be set, as the driver documents
/// (`CUDA_ERROR_NOT_SUPPORTED`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecNodeSetParams(
    h_graph_exec: CUgraphExec,
    h_node: CUgraphNode,
    node_params: *mut CUgraphNodeParams,
) -> CUresult {
    entry!(cuGraphExecNodeSetParams(h_graph_exec, h_node, node_params), {
        match read_params(node_params)? {
            Params::Work(work, extras) => exec_set(h_graph_exec, h_node, work, extras),
            Params::Child { graph, .. } => graphs::exec_set_child(handle(h_graph_exec), handle(h_node), graph),
            Params::Alloc(_) | Params::Free(_) => Err(CUresult::CUDA_ERROR_NOT_SUPPORTED),
        }
    })
}

/// The graph's nodes are paired with the executable graph's as the driver documents (the sink
/// nodes in order, then each one's dependencies in edge order) and must have their kinds;
/// then each takes the graph's parameters. Otherwise nothing changes, `result_info` says why
/// (the graph's node at fault, and its mismatched dependency) and the answer is
/// `CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecUpdate_v2(
    h_graph_exec: CUgraphExec,
    h_graph: CUgraph,
    result_info: *mut CUgraphExecUpdateResultInfo,
) -> CUresult {
    entry!(cuGraphExecUpdate_v2(h_graph_exec, h_graph, result_info), {
        if result_info.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let done = graphs::exec_update(handle(h_graph_exec), handle(h_graph));
        let why = done.err().unwrap_or(graphs::Mismatch { result: 0, node: 0, from: 0 });
        // The result written as the integer it is; the struct is the caller's to fill.
        // SAFETY: the caller's: checked non-null, valid for a write of the struct.
        std::ptr::addr_of_mut!((*result_info).result).cast::<u32>().write(why.result);
        std::ptr::addr_of_mut!((*result_info).errorNode).write(as_ptr(why.node));
        std::ptr::addr_of_mut!((*result_info).errorFromNode).write(as_ptr(why.from));
        match why.result {
            0 => Ok(()),
            graphs::UPDATE_ERROR => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
            _ => Err(CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE),
        }
    })
}

/// Kernel, memset and copy nodes only, as the driver documents; a disabled node runs as an
/// empty one, its parameters kept.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeSetEnabled(
    h_graph_exec: CUgraphExec,
    h_node: CUgraphNode,
    is_enabled: c_uint,
) -> CUresult {
    entry!(cuGraphNodeSetEnabled(h_graph_exec, h_node, is_enabled), {
        graphs::set_enabled(handle(h_graph_exec), handle(h_node), is_enabled != 0)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeGetEnabled(
    h_graph_exec: CUgraphExec,
    h_node: CUgraphNode,
    is_enabled: *mut c_uint,
) -> CUresult {
    entry!(cuGraphNodeGetEnabled(h_graph_exec, h_node, is_enabled), {
        let on = graphs::enabled(handle(h_graph_exec), handle(h_node))?;
        out(is_enabled, c_uint::from(on))
    })
}

/// One node's work on `h_stream`, as the stream call it stands for would do it.
///
/// # Safety
/// What the node holds is valid now (host memory, host functions and their data).
unsafe fn replay(work: &Work, h_stream: CUstream) -> Answer {
    let s = stream(h_stream);
    match work {
        Work::Kernel(k) => replay_kernel(k, h_stream),
        // SAFETY: the caller's.
        &Work::Memcpy { dst, src, bytes } => unsafe { memcpy_on(dst, src, bytes, s) },
        Work::Memset { dst, pitch, unit, width, height } => memset_on(*dst, *pitch, unit, *width, *height, s),
        &Work::Host { f, data } => {
            code(sim().stream_query(s))?;
            // SAFETY: CUDA's contract: the function and its data are valid when the graph runs.
            host_functions::enqueue(s.0, unsafe { host_functions::Job::new(move || f(data as *mut c_void)) });
            Ok(())
        }
        &Work::EventRecord(e) => code(sim().event_record(crate::abi::event(as_ptr(e)), s)),
        &Work::EventWait(e) => code(sim().stream_wait_event(s, crate::abi::event(as_ptr(e)), 0)),
        &Work::MemAlloc(va) => graph_memory::map(sim(), va),
        &Work::MemFree(va) => graph_memory::unmap(sim(), va),
        // A child graph's nodes are steps of their own.
        Work::Empty | Work::Child(_) => Ok(()),
    }
}
