//! Graphs: made node by node or by stream capture (`stream.rs`), instantiated and launched on
//! a stream, where their work runs in an order the edges allow through the same paths as the
//! stream calls it stands for (`graphs.rs` keeps them).

use crate::abi::{as_ptr, out, stream};
use crate::boundary::{Answer, code, entry, sim};
use crate::exports::copy::{memcpy_on, memset_on};
use crate::exports::launch::{Shape, kernel_work, replay_kernel};
use crate::graph_memory;
use crate::graphs::{self, Work};
use crate::host_functions;
use cudarc::driver::sys::{
    CUDA_GRAPH_INSTANTIATE_PARAMS, CUDA_HOST_NODE_PARAMS, CUDA_KERNEL_NODE_PARAMS, CUDA_MEMCPY3D,
    CUDA_MEMSET_NODE_PARAMS, CUcontext, CUevent, CUgraph, CUgraphEdgeData, CUgraphExec, CUgraphNode, CUgraphNodeType,
    CUhostFn, CUmemorytype, CUresult, CUstream, CUuserObject,
};
use peerpool_sim::PtxLaunchHow;
use std::ffi::{c_char, c_uint, c_ulonglong, c_void};

pub(super) fn handle<T>(h: *mut T) -> u64 {
    h as usize as u64
}

/// The `count` node handles at `deps`.
///
/// # Safety
/// A non-null `deps` holds `count` handles.
unsafe fn dependencies(deps: *const CUgraphNode, count: usize) -> Result<Vec<u64>, CUresult> {
    match (deps.is_null(), count) {
        (_, 0) => Ok(Vec::new()),
        (true, _) => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        // SAFETY: the caller's.
        (false, n) => Ok(unsafe { std::slice::from_raw_parts(deps, n) }.iter().map(|&d| handle(d)).collect()),
    }
}

/// Adds `work` to `graph` after the dependencies, its handle written through `node`.
///
/// # Safety
/// As [`dependencies`]; `node` is valid for a write or null.
pub(super) unsafe fn add(
    node: *mut CUgraphNode,
    graph: CUgraph,
    deps: *const CUgraphNode,
    count: usize,
    work: impl FnOnce() -> Result<Work, CUresult>,
) -> Answer {
    if node.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: the caller's.
    let deps = unsafe { dependencies(deps, count)? };
    let made = graphs::add(handle(graph), &deps, work()?)?;
    // SAFETY: checked non-null; the caller's.
    unsafe { out(node, as_ptr(made)) }
}

/// Writes `items` through `into` (room for `*count`), or only their number where `into` is
/// null; fewer written where there is less room, and `*count` says how many.
///
/// # Safety
/// `count` is valid for a read and a write; a non-null `into` for `*count` writes.
unsafe fn listed<T: Copy>(items: &[T], into: *mut T, count: *mut usize) -> Answer {
    // SAFETY: the caller's.
    let room = unsafe { count.as_mut() }.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    if !into.is_null() {
        let n = items.len().min(*room);
        // SAFETY: the caller's: room for `*room` items.
        unsafe { std::ptr::copy_nonoverlapping(items.as_ptr(), into, n) };
        *room = n;
    } else {
        *room = items.len();
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphCreate(ph_graph: *mut CUgraph, flags: c_uint) -> CUresult {
    entry!(cuGraphCreate(ph_graph, flags), {
        if flags != 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        out(ph_graph, as_ptr(graphs::create()))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphDestroy(h_graph: CUgraph) -> CUresult {
    entry!(cuGraphDestroy(h_graph), { graphs::destroy(handle(h_graph)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphClone(ph_graph_clone: *mut CUgraph, original_graph: CUgraph) -> CUresult {
    entry!(cuGraphClone(ph_graph_clone, original_graph), {
        out(ph_graph_clone, as_ptr(graphs::clone(handle(original_graph))?))
    })
}

/// The parameters are copied now, as the driver copies them: a node runs what it was given.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddKernelNode_v2(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    num_dependencies: usize,
    node_params: *const CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    entry!(cuGraphAddKernelNode_v2(ph_graph_node, h_graph, dependencies, num_dependencies, node_params), {
        add(ph_graph_node, h_graph, dependencies, num_dependencies, || {
            let p = node_params.as_ref().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
            if p.func.is_null() {
                // A library kernel (`kern`) or a context of its own is not taken yet.
                return Err(crate::boundary::not_simulated("cuGraphAddKernelNode with a CUkernel").unwrap_err());
            }
            let shape = Shape {
                grid: [p.gridDimX, p.gridDimY, p.gridDimZ],
                block: [p.blockDimX, p.blockDimY, p.blockDimZ],
                shared: p.sharedMemBytes,
            };
            kernel_work(p.func, shape, p.kernelParams, p.extra, PtxLaunchHow::default())
        })
    })
}

/// One-dimensional copies (a height and depth of 1), between any addresses unified addressing
/// tells apart; others answer `CUDA_ERROR_NOT_SUPPORTED`, named once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddMemcpyNode(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    num_dependencies: usize,
    copy_params: *const CUDA_MEMCPY3D,
    ctx: CUcontext,
) -> CUresult {
    entry!(cuGraphAddMemcpyNode(ph_graph_node, h_graph, dependencies, num_dependencies, copy_params, ctx), {
        add(ph_graph_node, h_graph, dependencies, num_dependencies, || {
            let p = copy_params.as_ref().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
            let side = |kind: CUmemorytype, host: *const c_void, device: u64, x: usize| match kind {
                CUmemorytype::CU_MEMORYTYPE_HOST => Some(host as u64 + x as u64),
                CUmemorytype::CU_MEMORYTYPE_DEVICE | CUmemorytype::CU_MEMORYTYPE_UNIFIED => Some(device + x as u64),
                _ => None,
            };
            let one_row = p.Height <= 1 && p.Depth <= 1 && p.srcY == 0 && p.srcZ == 0 && p.dstY == 0 && p.dstZ == 0;
            let src = side(p.srcMemoryType, p.srcHost, p.srcDevice, p.srcXInBytes);
            let dst = side(p.dstMemoryType, p.dstHost as *const c_void, p.dstDevice, p.dstXInBytes);
            match (one_row, src, dst) {
                (true, Some(src), Some(dst)) => Ok(Work::Memcpy { dst, src, bytes: p.WidthInBytes }),
                _ => {
                    Err(crate::boundary::not_simulated("cuGraphAddMemcpyNode of arrays or more than one row")
                        .unwrap_err())
                }
            }
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddMemsetNode(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    num_dependencies: usize,
    memset_params: *const CUDA_MEMSET_NODE_PARAMS,
    ctx: CUcontext,
) -> CUresult {
    entry!(cuGraphAddMemsetNode(ph_graph_node, h_graph, dependencies, num_dependencies, memset_params, ctx), {
        add(ph_graph_node, h_graph, dependencies, num_dependencies, || {
            let p = memset_params.as_ref().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
            let unit = match p.elementSize {
                1 => (p.value as u8).to_le_bytes().to_vec(),
                2 => (p.value as u16).to_le_bytes().to_vec(),
                4 => p.value.to_le_bytes().to_vec(),
                _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
            };
            Ok(Work::Memset { dst: p.dst, pitch: p.pitch, unit, width: p.width, height: p.height.max(1) })
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddHostNode(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    num_dependencies: usize,
    node_params: *const CUDA_HOST_NODE_PARAMS,
) -> CUresult {
    entry!(cuGraphAddHostNode(ph_graph_node, h_graph, dependencies, num_dependencies, node_params), {
        add(ph_graph_node, h_graph, dependencies, num_dependencies, || {
            let p = node_params.as_ref().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
            let f = p.fn_.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
            Ok(Work::Host { f, data: p.userData as usize })
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddEmptyNode(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    num_dependencies: usize,
) -> CUresult {
    entry!(cuGraphAddEmptyNode(ph_graph_node, h_graph, dependencies, num_dependencies), {
        add(ph_graph_node, h_graph, dependencies, num_dependencies, || Ok(Work::Empty))
    })
}

/// The child graph is copied now: later changes to it do not reach the node.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddChildGraphNode(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    num_dependencies: usize,
    child_graph: CUgraph,
) -> CUresult {
    entry!(cuGraphAddChildGraphNode(ph_graph_node, h_graph, dependencies, num_dependencies, child_graph), {
        add(ph_graph_node, h_graph, dependencies, num_dependencies, || {
            Ok(Work::Child(graphs::copy_of(handle(child_graph))?))
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddEventRecordNode(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    num_dependencies: usize,
    event: CUevent,
) -> CUresult {
    entry!(cuGraphAddEventRecordNode(ph_graph_node, h_graph, dependencies, num_dependencies, event), {
        add(ph_graph_node, h_graph, dependencies, num_dependencies, || Ok(Work::EventRecord(handle(event))))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddEventWaitNode(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    num_dependencies: usize,
    event: CUevent,
) -> CUresult {
    entry!(cuGraphAddEventWaitNode(ph_graph_node, h_graph, dependencies, num_dependencies, event), {
        add(ph_graph_node, h_graph, dependencies, num_dependencies, || Ok(Work::EventWait(handle(event))))
    })
}

/// Edge data other than the default (all zeros) is `CUDA_ERROR_NOT_SUPPORTED`, named once as
/// `what`.
///
/// # Safety
/// A non-null `data` holds `count` edges' data.
unsafe fn default_edge_data(data: *const CUgraphEdgeData, count: usize, what: &'static str) -> Answer {
    if data.is_null() {
        return Ok(());
    }
    // SAFETY: the caller's.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), count * size_of::<CUgraphEdgeData>()) };
    match bytes.iter().any(|&b| b != 0) {
        true => crate::boundary::not_simulated(what),
        false => Ok(()),
    }
}

/// The `count` edges `from[i] -> to[i]`.
///
/// # Safety
/// `from` and `to` hold `count` handles each, or `count` is 0.
unsafe fn add_edges(g: CUgraph, from: *const CUgraphNode, to: *const CUgraphNode, count: usize) -> Answer {
    // SAFETY: the caller's.
    let (from, to) = unsafe { (dependencies(from, count)?, dependencies(to, count)?) };
    graphs::add_edges(handle(g), &from.into_iter().zip(to).collect::<Vec<_>>())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddDependencies(
    h_graph: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    num_dependencies: usize,
) -> CUresult {
    entry!(cuGraphAddDependencies(h_graph, from, to, num_dependencies), {
        add_edges(h_graph, from, to, num_dependencies)
    })
}

/// Edge data other than the default (all zeros) is `CUDA_ERROR_NOT_SUPPORTED`, named once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddDependencies_v2(
    h_graph: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    edge_data: *const CUgraphEdgeData,
    num_dependencies: usize,
) -> CUresult {
    entry!(cuGraphAddDependencies_v2(h_graph, from, to, edge_data, num_dependencies), {
        default_edge_data(edge_data, num_dependencies, "cuGraphAddDependencies_v2 with edge data")?;
        add_edges(h_graph, from, to, num_dependencies)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphGetNodes(h_graph: CUgraph, nodes: *mut CUgraphNode, num_nodes: *mut usize) -> CUresult {
    entry!(cuGraphGetNodes(h_graph, nodes, num_nodes), {
        let found: Vec<CUgraphNode> = graphs::nodes(handle(h_graph))?.into_iter().map(as_ptr).collect();
        listed(&found, nodes, num_nodes)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphGetRootNodes(
    h_graph: CUgraph,
    root_nodes: *mut CUgraphNode,
    num_root_nodes: *mut usize,
) -> CUresult {
    entry!(cuGraphGetRootNodes(h_graph, root_nodes, num_root_nodes), {
        let found: Vec<CUgraphNode> = graphs::roots(handle(h_graph))?.into_iter().map(as_ptr).collect();
        listed(&found, root_nodes, num_root_nodes)
    })
}

/// # Safety
/// As `cuGraphGetEdges` documents its pointers.
unsafe fn get_edges(g: CUgraph, from: *mut CUgraphNode, to: *mut CUgraphNode, count: *mut usize) -> Answer {
    let edges = graphs::edges(handle(g))?;
    if from.is_null() != to.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let froms: Vec<CUgraphNode> = edges.iter().map(|&(a, _)| as_ptr(a)).collect();
    let tos: Vec<CUgraphNode> = edges.iter().map(|&(_, b)| as_ptr(b)).collect();
    // SAFETY: the caller's.
    let room = unsafe { count.as_ref() }.copied().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    unsafe { listed(&froms, from, count)? };
    if !to.is_null() {
        unsafe { count.write(room) };
        unsafe { listed(&tos, to, count)? };
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphGetEdges(
    h_graph: CUgraph,
    from: *mut CUgraphNode,
    to: *mut CUgraphNode,
    num_edges: *mut usize,
) -> CUresult {
    entry!(cuGraphGetEdges(h_graph, from, to, num_edges), { get_edges(h_graph, from, to, num_edges) })
}

/// Every edge has the default data: zeros are written where edge data is asked for.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphGetEdges_v2(
    h_graph: CUgraph,
    from: *mut CUgraphNode,
    to: *mut CUgraphNode,
    edge_data: *mut CUgraphEdgeData,
    num_edges: *mut usize,
) -> CUresult {
    entry!(cuGraphGetEdges_v2(h_graph, from, to, edge_data, num_edges), {
        get_edges(h_graph, from, to, num_edges)?;
        if !edge_data.is_null() && !from.is_null() {
            std::ptr::write_bytes(edge_data, 0, *num_edges);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeGetType(h_node: CUgraphNode, type_: *mut CUgraphNodeType) -> CUresult {
    entry!(cuGraphNodeGetType(h_node, type_), {
        let t = graphs::node_type(handle(h_node))?;
        if type_.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: the caller's; the type is one of the enum's values.
        type_.cast::<u32>().write(t);
        Ok(())
    })
}

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
const AUTO_FREE_ON_LAUNCH: u64 = 0x1;

/// # Safety
/// `exec` is valid for a write or null.
unsafe fn instantiate(exec: *mut CUgraphExec, g: CUgraph, flags: u64) -> Answer {
    if flags & !INSTANTIATE_FLAGS != 0 {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    if flags & DEVICE_LAUNCH != 0 {
        return crate::boundary::not_simulated("cuGraphInstantiate for device launch");
    }
    let made = graphs::instantiate(handle(g), flags & AUTO_FREE_ON_LAUNCH != 0)?;
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
        let p = instantiate_params.as_mut().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let made = instantiate(ph_graph_exec, h_graph, p.flags);
        p.result_out = match made {
            Ok(()) => cudarc::driver::sys::CUgraphInstantiateResult::CUDA_GRAPH_INSTANTIATE_SUCCESS,
            Err(_) => cudarc::driver::sys::CUgraphInstantiateResult::CUDA_GRAPH_INSTANTIATE_ERROR,
        };
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

/// The graph's work in order on the stream. On a stream in capture it is
/// `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`, as an H100's driver answered for a graph of host,
/// copy and memset nodes; the capture is invalidated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphLaunch(h_graph_exec: CUgraphExec, h_stream: CUstream) -> CUresult {
    entry!(cuGraphLaunch(h_graph_exec, h_stream), {
        let exec = handle(h_graph_exec);
        if graphs::invalidate(handle(h_stream)) {
            return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        }
        let (work, auto_free) = graphs::exec_work(exec)?;
        // An allocation still live from the last launch is freed first with auto-free, and
        // refuses the launch without.
        let live: Vec<u64> = work
            .iter()
            .filter_map(|w| match w {
                &Work::MemAlloc(va) if graph_memory::live(va) => Some(va),
                _ => None,
            })
            .collect();
        match (live.is_empty(), auto_free) {
            (true, _) => {}
            (false, true) => live.iter().try_for_each(|&va| graph_memory::unmap(sim(), va))?,
            (false, false) => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        }
        for w in work.iter() {
            replay(w, h_stream)?;
        }
        Ok(())
    })
}

/// # Safety
/// `count` is valid for a read and a write; a non-null `into` for `*count` writes.
unsafe fn neighbours(node: CUgraphNode, upstream: bool, into: *mut CUgraphNode, count: *mut usize) -> Answer {
    let found: Vec<CUgraphNode> = graphs::neighbours(handle(node), upstream)?.into_iter().map(as_ptr).collect();
    // SAFETY: the caller's.
    unsafe { listed(&found, into, count) }
}

/// # Safety
/// As [`neighbours`]; a non-null `edge_data` for `*count` writes.
unsafe fn neighbours_v2(
    node: CUgraphNode,
    upstream: bool,
    into: *mut CUgraphNode,
    edge_data: *mut CUgraphEdgeData,
    count: *mut usize,
) -> Answer {
    // SAFETY: the caller's.
    unsafe {
        neighbours(node, upstream, into, count)?;
        if !edge_data.is_null() && !into.is_null() {
            std::ptr::write_bytes(edge_data, 0, *count);
        }
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeGetDependencies(
    h_node: CUgraphNode,
    dependencies: *mut CUgraphNode,
    num_dependencies: *mut usize,
) -> CUresult {
    entry!(cuGraphNodeGetDependencies(h_node, dependencies, num_dependencies), {
        neighbours(h_node, true, dependencies, num_dependencies)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeGetDependencies_v2(
    h_node: CUgraphNode,
    dependencies: *mut CUgraphNode,
    edge_data: *mut CUgraphEdgeData,
    num_dependencies: *mut usize,
) -> CUresult {
    entry!(cuGraphNodeGetDependencies_v2(h_node, dependencies, edge_data, num_dependencies), {
        neighbours_v2(h_node, true, dependencies, edge_data, num_dependencies)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeGetDependentNodes(
    h_node: CUgraphNode,
    dependent_nodes: *mut CUgraphNode,
    num_dependent_nodes: *mut usize,
) -> CUresult {
    entry!(cuGraphNodeGetDependentNodes(h_node, dependent_nodes, num_dependent_nodes), {
        neighbours(h_node, false, dependent_nodes, num_dependent_nodes)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeGetDependentNodes_v2(
    h_node: CUgraphNode,
    dependent_nodes: *mut CUgraphNode,
    edge_data: *mut CUgraphEdgeData,
    num_dependent_nodes: *mut usize,
) -> CUresult {
    entry!(cuGraphNodeGetDependentNodes_v2(h_node, dependent_nodes, edge_data, num_dependent_nodes), {
        neighbours_v2(h_node, false, dependent_nodes, edge_data, num_dependent_nodes)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphDestroyNode(h_node: CUgraphNode) -> CUresult {
    entry!(cuGraphDestroyNode(h_node), { graphs::destroy_node(handle(h_node)) })
}

/// The graph in Graphviz's language (each node's type and handle, and the edges); the flags'
/// extra detail is not written.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphDebugDotPrint(h_graph: CUgraph, path: *const c_char, flags: c_uint) -> CUresult {
    entry!(cuGraphDebugDotPrint(h_graph, path, flags), {
        if path.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let text = graphs::dot(handle(h_graph))?;
        let path = std::ffi::CStr::from_ptr(path).to_str().map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
        // The driver writes where it is told, as the caller may.
        std::fs::write(path, text).map_err(|_| CUresult::CUDA_ERROR_OPERATING_SYSTEM)
    })
}

/// `CU_STREAM_SET_CAPTURE_DEPENDENCIES`; 0 adds to them.
const SET_CAPTURE_DEPENDENCIES: c_uint = 1;

/// # Safety
/// A non-null `nodes` holds `count` handles.
unsafe fn update_capture(s: CUstream, nodes: *const CUgraphNode, count: usize, flags: c_uint) -> Answer {
    if flags > SET_CAPTURE_DEPENDENCIES {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: the caller's.
    let nodes = unsafe { dependencies(nodes, count)? };
    graphs::update_dependencies(handle(s), &nodes, flags == SET_CAPTURE_DEPENDENCIES)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamUpdateCaptureDependencies(
    h_stream: CUstream,
    dependencies: *mut CUgraphNode,
    num_dependencies: usize,
    flags: c_uint,
) -> CUresult {
    entry!(cuStreamUpdateCaptureDependencies(h_stream, dependencies, num_dependencies, flags), {
        update_capture(h_stream, dependencies, num_dependencies, flags)
    })
}

/// Edge data other than the default (all zeros) is `CUDA_ERROR_NOT_SUPPORTED`, named once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamUpdateCaptureDependencies_v2(
    h_stream: CUstream,
    dependencies: *mut CUgraphNode,
    dependency_data: *const CUgraphEdgeData,
    num_dependencies: usize,
    flags: c_uint,
) -> CUresult {
    entry!(cuStreamUpdateCaptureDependencies_v2(h_stream, dependencies, dependency_data, num_dependencies, flags), {
        let what = "cuStreamUpdateCaptureDependencies_v2 with edge data";
        default_edge_data(dependency_data, num_dependencies, what)?;
        update_capture(h_stream, dependencies, num_dependencies, flags)
    })
}

/// The destructor runs once the last reference goes, on the thread that lets it go (it may not
/// call CUDA, as the driver documents).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuUserObjectCreate(
    object_out: *mut CUuserObject,
    ptr: *mut c_void,
    destroy: CUhostFn,
    initial_refcount: c_uint,
    flags: c_uint,
) -> CUresult {
    entry!(cuUserObjectCreate(object_out, ptr, destroy, initial_refcount, flags), {
        // CU_USER_OBJECT_NO_DESTRUCTOR_SYNC is required.
        let destroy = destroy.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if flags != 1 || initial_refcount == 0 || object_out.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        out(object_out, as_ptr(graphs::user_create(ptr as usize, destroy, initial_refcount)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuUserObjectRetain(object: CUuserObject, count: c_uint) -> CUresult {
    entry!(cuUserObjectRetain(object, count), { graphs::user_retain(handle(object), nonzero(count)?) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuUserObjectRelease(object: CUuserObject, count: c_uint) -> CUresult {
    entry!(cuUserObjectRelease(object, count), { graphs::user_release(handle(object), nonzero(count)?) })
}

/// `CU_GRAPH_USER_OBJECT_MOVE`: the caller's references move to the graph.
const USER_OBJECT_MOVE: c_uint = 1;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphRetainUserObject(
    graph: CUgraph,
    object: CUuserObject,
    count: c_uint,
    flags: c_uint,
) -> CUresult {
    entry!(cuGraphRetainUserObject(graph, object, count, flags), {
        if flags & !USER_OBJECT_MOVE != 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        graphs::graph_retain_user(handle(graph), handle(object), nonzero(count)?, flags == USER_OBJECT_MOVE)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphReleaseUserObject(graph: CUgraph, object: CUuserObject, count: c_uint) -> CUresult {
    entry!(cuGraphReleaseUserObject(graph, object, count), {
        graphs::graph_release_user(handle(graph), handle(object), nonzero(count)?)
    })
}

fn nonzero(count: c_uint) -> Result<u32, CUresult> {
    match count {
        0 => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        n => Ok(n),
    }
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
        Work::Empty | Work::Child(_) => Ok(()),
    }
}
