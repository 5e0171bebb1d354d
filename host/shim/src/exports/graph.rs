//! Graphs: made node by node or by stream capture (`stream.rs`), their edges, their user
//! objects, and the parameters of each kind of node as the driver reads them
//! (`graph_nodes.rs` sets and reads nodes back, `graph_exec.rs` instantiates and launches
//! them; `graphs.rs` keeps them).

use crate::abi::{as_ptr, context, kernel, out};
use crate::boundary::{Answer, code, entry, sim};
use crate::exports::launch::{Shape, kernel_work};
use crate::graphs::{self, Extras, Memcpy3d, Work};
use cudarc::driver::sys::{
    CUDA_HOST_NODE_PARAMS, CUDA_KERNEL_NODE_PARAMS, CUDA_MEMCPY3D, CUDA_MEMSET_NODE_PARAMS, CUcontext, CUevent,
    CUgraph, CUgraphEdgeData, CUgraphNode, CUhostFn, CUmemorytype, CUresult, CUstream, CUuserObject,
};
use peerpool_sim::PtxLaunchHow;
use std::ffi::{c_char, c_uint, c_void};

pub(super) fn handle<T>(h: *mut T) -> u64 {
    h as usize as u64
}

/// The `count` node handles at `deps`.
///
/// # Safety
/// A non-null `deps` holds `count` handles.
pub(super) unsafe fn dependencies(deps: *const CUgraphNode, count: usize) -> Result<Vec<u64>, CUresult> {
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
    // SAFETY: the caller's.
    unsafe { add_with(node, graph, deps, count, || Ok((work()?, Extras::default()))) }
}

/// [`add`] of a node that keeps something besides its work (a copy its parameters as given).
///
/// # Safety
/// As [`add`].
pub(super) unsafe fn add_with(
    node: *mut CUgraphNode,
    graph: CUgraph,
    deps: *const CUgraphNode,
    count: usize,
    work: impl FnOnce() -> Result<(Work, Extras), CUresult>,
) -> Answer {
    if node.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: the caller's.
    let deps = unsafe { dependencies(deps, count)? };
    let (work, extras) = work()?;
    let made = graphs::add_with(handle(graph), &deps, work, extras)?;
    // SAFETY: checked non-null; the caller's.
    unsafe { out(node, as_ptr(made)) }
}

/// Adds a child graph node embedding a copy of `child`, or (`moved`) `child` itself.
///
/// # Safety
/// As [`add`].
pub(super) unsafe fn add_child(
    node: *mut CUgraphNode,
    graph: CUgraph,
    deps: *const CUgraphNode,
    count: usize,
    child: u64,
    moved: bool,
) -> Answer {
    if node.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: the caller's.
    let deps = unsafe { dependencies(deps, count)? };
    let made = graphs::add_child(handle(graph), &deps, child, moved)?;
    // SAFETY: checked non-null; the caller's.
    unsafe { out(node, as_ptr(made)) }
}

/// Writes `items` through `into` (room for `*count`), or only their number where `into` is
/// null; fewer written where there is less room, and `*count` says how many.
///
/// # Safety
/// `count` is valid for a read and a write; a non-null `into` for `*count` writes.
pub(super) unsafe fn listed<T: Copy>(items: &[T], into: *mut T, count: *mut usize) -> Answer {
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

/// The graphs its child graph nodes embed go with it; a graph a node embeds is the node's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphDestroy(h_graph: CUgraph) -> CUresult {
    entry!(cuGraphDestroy(h_graph), { graphs::destroy(handle(h_graph)) })
}

/// Child graphs are copied too; each node of the copy remembers the node it copies
/// (`cuGraphNodeFindInClone`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphClone(ph_graph_clone: *mut CUgraph, original_graph: CUgraph) -> CUresult {
    entry!(cuGraphClone(ph_graph_clone, original_graph), {
        out(ph_graph_clone, as_ptr(graphs::clone(handle(original_graph))?))
    })
}

/// A kernel node's work from its parameters, copied now, as the driver copies them (a node
/// runs what it was given), and whether they came as `extra` (a buffer).
///
/// # Safety
/// A non-null `p` is valid for a read, its parameters as `cuLaunchKernel` documents them.
pub(super) unsafe fn kernel_node(p: *const CUDA_KERNEL_NODE_PARAMS) -> Result<(Work, bool), CUresult> {
    // SAFETY: the caller's.
    let p = unsafe { p.as_ref() }.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    // A library's kernel (`kern`, as cuda.core gives it) runs as its function in the current
    // context; one bound to another context (`ctx`) is not taken yet.
    let func = match (p.func.is_null(), p.kern.is_null()) {
        (false, _) => p.func,
        (true, true) => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        (true, false) => {
            let current = code(sim().ctx_get_current())?;
            if !p.ctx.is_null() && current != Some(context(p.ctx)) {
                return Err(
                    crate::boundary::not_simulated("a kernel node of a CUkernel in another context").unwrap_err()
                );
            }
            as_ptr(code(sim().kernel_get_function(kernel(p.kern)))?.0)
        }
    };
    let shape = Shape {
        grid: [p.gridDimX, p.gridDimY, p.gridDimZ],
        block: [p.blockDimX, p.blockDimY, p.blockDimZ],
        shared: p.sharedMemBytes,
    };
    // SAFETY: the caller's.
    let work = unsafe { kernel_work(func, shape, p.kernelParams, p.extra, PtxLaunchHow::default())? };
    Ok((work, p.kernelParams.is_null() && !p.extra.is_null()))
}

/// A memcpy node's work, and its parameters as given (`CUDA_MEMCPY3D` read through a mirror
/// whose memory types are plain integers). One-dimensional copies (a height and depth of 1)
/// between any addresses unified addressing tells apart; others answer
/// `CUDA_ERROR_NOT_SUPPORTED`, named once.
///
/// # Safety
/// A non-null `p` is valid for a read.
pub(super) unsafe fn memcpy_node(p: *const CUDA_MEMCPY3D) -> Result<(Work, Memcpy3d), CUresult> {
    const _: () = assert!(size_of::<Memcpy3d>() == size_of::<CUDA_MEMCPY3D>());
    if p.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: the caller's; the mirror has the struct's layout (its size checked above, its
    // fields in the header's order), with integers where the struct has enums.
    let c = unsafe { p.cast::<Memcpy3d>().read() };
    // A side's address; `Err(true)` for an array (not simulated), `Err(false)` for no memory type.
    let side = |kind: u32, host: usize, device: u64, x: usize| match kind {
        k if k == CUmemorytype::CU_MEMORYTYPE_HOST as u32 => (host as u64).checked_add(x as u64).ok_or(false),
        k if k == CUmemorytype::CU_MEMORYTYPE_DEVICE as u32 || k == CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32 => {
            device.checked_add(x as u64).ok_or(false)
        }
        k if k == CUmemorytype::CU_MEMORYTYPE_ARRAY as u32 => Err(true),
        _ => Err(false),
    };
    let one_row = c.height <= 1 && c.depth <= 1 && c.src_y == 0 && c.src_z == 0 && c.dst_y == 0 && c.dst_z == 0;
    match (
        one_row,
        side(c.src_type, c.src_host, c.src_device, c.src_x),
        side(c.dst_type, c.dst_host, c.dst_device, c.dst_x),
    ) {
        (true, Ok(src), Ok(dst)) => Ok((Work::Memcpy { dst, src, bytes: c.width }, c)),
        (_, Err(false), _) | (_, _, Err(false)) => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        _ => Err(crate::boundary::not_simulated("a memcpy node of arrays or more than one row").unwrap_err()),
    }
}

/// A memset node's work: one value of 1, 2 or 4 bytes over `height` rows (at least one).
///
/// # Safety
/// A non-null `p` is valid for a read.
pub(super) unsafe fn memset_node(p: *const CUDA_MEMSET_NODE_PARAMS) -> Result<Work, CUresult> {
    // SAFETY: the caller's.
    let p = unsafe { p.as_ref() }.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    let unit = match p.elementSize {
        1 => (p.value as u8).to_le_bytes().to_vec(),
        2 => (p.value as u16).to_le_bytes().to_vec(),
        4 => p.value.to_le_bytes().to_vec(),
        _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    };
    Ok(Work::Memset { dst: p.dst, pitch: p.pitch, unit, width: p.width, height: p.height.max(1) })
}

/// A host node's work: its function (not null) and data.
///
/// # Safety
/// A non-null `p` is valid for a read.
pub(super) unsafe fn host_node(p: *const CUDA_HOST_NODE_PARAMS) -> Result<Work, CUresult> {
    // SAFETY: the caller's.
    let p = unsafe { p.as_ref() }.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    let f = p.fn_.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    Ok(Work::Host { f, data: p.userData as usize })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddKernelNode_v2(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    num_dependencies: usize,
    node_params: *const CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    entry!(cuGraphAddKernelNode_v2(ph_graph_node, h_graph, dependencies, num_dependencies, node_params), {
        add_with(ph_graph_node, h_graph, dependencies, num_dependencies, || {
            let (work, via_extra) = kernel_node(node_params)?;
            Ok((work, Extras { via_extra, ..Extras::default() }))
        })
    })
}

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
        add_with(ph_graph_node, h_graph, dependencies, num_dependencies, || {
            let (work, copy) = memcpy_node(copy_params)?;
            Ok((work, Extras { copy: Some(Box::new(copy)), ..Extras::default() }))
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
        add(ph_graph_node, h_graph, dependencies, num_dependencies, || memset_node(memset_params))
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
        add(ph_graph_node, h_graph, dependencies, num_dependencies, || host_node(node_params))
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

/// The child graph is copied now: later changes to it do not reach the node. A graph with
/// allocation or free nodes is refused, as the driver documents.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddChildGraphNode(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    num_dependencies: usize,
    child_graph: CUgraph,
) -> CUresult {
    entry!(cuGraphAddChildGraphNode(ph_graph_node, h_graph, dependencies, num_dependencies, child_graph), {
        add_child(ph_graph_node, h_graph, dependencies, num_dependencies, handle(child_graph), false)
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
pub(super) unsafe fn default_edge_data(data: *const CUgraphEdgeData, count: usize, what: &'static str) -> Answer {
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
pub(super) unsafe fn edges(
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    count: usize,
) -> Result<Vec<(u64, u64)>, CUresult> {
    // SAFETY: the caller's.
    let (from, to) = unsafe { (dependencies(from, count)?, dependencies(to, count)?) };
    Ok(from.into_iter().zip(to).collect())
}

/// # Safety
/// As [`edges`].
unsafe fn add_edges(g: CUgraph, from: *const CUgraphNode, to: *const CUgraphNode, count: usize) -> Answer {
    // SAFETY: the caller's.
    graphs::add_edges(handle(g), &unsafe { edges(from, to, count)? })
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
    // SAFETY: the caller's.
    unsafe { listed(&froms, from, count)? };
    if !to.is_null() {
        // SAFETY: the caller's: `count` checked valid above; `to` as `from`.
        unsafe {
            count.write(room);
            listed(&tos, to, count)?;
        }
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
            // SAFETY: the caller's: room for as many edges' data as edges written.
            std::ptr::write_bytes(edge_data, 0, *num_edges);
        }
        Ok(())
    })
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
