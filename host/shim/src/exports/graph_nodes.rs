//! Graph nodes one by one: their type, neighbours and removal; each kind's parameters read
//! back and set (a node keeps its kind), a node of any kind added or set through the generic
//! `CUgraphNodeParams`; dependencies removed; a clone's node found from its original; kernel
//! nodes' launch attributes (`graphs.rs` keeps them).

use super::graph::{
    add, add_child, add_with, default_edge_data, handle, host_node, kernel_node, listed, memcpy_node, memset_node,
};
use crate::abi::{PoolRequest, access_descs, as_ptr, out, pool_request};
use crate::boundary::{Answer, code, entry, not_simulated, sim};
use crate::graph_memory::{self, Request};
use crate::graphs::{self, Extras, Memcpy3d, Node, Work};
use cudarc::driver::sys::{
    CUDA_HOST_NODE_PARAMS, CUDA_HOST_NODE_PARAMS_v2, CUDA_KERNEL_NODE_PARAMS, CUDA_KERNEL_NODE_PARAMS_v3,
    CUDA_MEM_ALLOC_NODE_PARAMS_v2, CUDA_MEMCPY_NODE_PARAMS, CUDA_MEMCPY3D, CUDA_MEMSET_NODE_PARAMS,
    CUDA_MEMSET_NODE_PARAMS_v2, CUevent, CUgraph, CUgraphEdgeData, CUgraphNode, CUgraphNodeParams, CUgraphNodeType,
    CUkernelNodeAttrValue, CUresult,
};
use std::ffi::{c_uint, c_void};
use std::mem::offset_of;

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

/// What kind of node `node` is, checked, and what it does: `f` on the node (the store's lock
/// held: `f` calls nothing else).
fn of_kind<T>(node: CUgraphNode, kind: u32, f: impl FnOnce(&mut Node) -> Result<T, CUresult>) -> Result<T, CUresult> {
    graphs::with_node(handle(node), |n| match n.work.node_type() == kind {
        true => f(n),
        false => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    })
}

/// `CUgraphNodeType` of the kinds set here.
const KERNEL: u32 = 0;
const MEMCPY: u32 = 1;
const MEMSET: u32 = 2;
const HOST: u32 = 3;
const GRAPH: u32 = 4;
const EVENT_WAIT: u32 = 6;
const EVENT_RECORD: u32 = 7;
const MEM_ALLOC: u32 = 10;
const MEM_FREE: u32 = 11;

/// Node `node` (of the same kind) does `work` from now on, its parameters given as `extras`
/// says; a kernel keeps its launch attributes. What the node handed out before is let go.
pub(super) fn set_work(node: CUgraphNode, mut work: Work, extras: Extras) -> Answer {
    of_kind(node, work.node_type(), |n| {
        if let (Work::Kernel(new), Work::Kernel(old)) = (&mut work, &n.work) {
            new.how = old.how;
        }
        n.work = work;
        (n.extras.copy, n.extras.via_extra, n.extras.handed) = (extras.copy, extras.via_extra, None);
        Ok(())
    })
}

/// `CU_LAUNCH_PARAM_*`: the keys of an `extra` array.
const PARAM_END: usize = 0;
const PARAM_BUFFER_POINTER: usize = 1;
const PARAM_BUFFER_SIZE: usize = 2;

/// The array a kernel node hands out for its parameters, into its buffer: a pointer to each
/// parameter, or (`extra`) the keys and values of an `extra` array, the buffer's size last.
fn handed_out(buffer: &[u8], layout: &[(usize, usize)], extra: bool) -> Box<[usize]> {
    let base = buffer.as_ptr() as usize;
    if !extra {
        return layout.iter().map(|&(offset, _)| base + offset).collect();
    }
    let mut array = vec![PARAM_BUFFER_POINTER, base, PARAM_BUFFER_SIZE, 0, PARAM_END, buffer.len()].into_boxed_slice();
    // The size's value is a pointer to the size, which the array holds itself.
    array[3] = std::ptr::addr_of!(array[5]) as usize;
    array
}

/// The parameters the node holds: `kernelParams` (or `extra`, as they were last given) point at
/// the node's copies, valid until its parameters change or it goes, as the driver documents.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphKernelNodeGetParams_v2(
    h_node: CUgraphNode,
    node_params: *mut CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    entry!(cuGraphKernelNodeGetParams_v2(h_node, node_params), {
        if node_params.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let ctx = code(sim().ctx_get_current())?.map_or(0, |c| c.0);
        let made = of_kind(h_node, KERNEL, |n| {
            let Work::Kernel(k) = &n.work else { return Err(CUresult::CUDA_ERROR_INVALID_VALUE) };
            let extra = n.extras.via_extra;
            let array = n.extras.handed.get_or_insert_with(|| handed_out(&k.buffer, &k.layout, extra));
            let array = if array.is_empty() { 0 } else { array.as_ptr() as usize };
            let (params, extra) = if extra { (0, array) } else { (array, 0) };
            Ok(CUDA_KERNEL_NODE_PARAMS {
                func: k.function as _,
                gridDimX: k.grid[0],
                gridDimY: k.grid[1],
                gridDimZ: k.grid[2],
                blockDimX: k.block[0],
                blockDimY: k.block[1],
                blockDimZ: k.block[2],
                sharedMemBytes: k.shared,
                kernelParams: params as _,
                extra: extra as _,
                kern: std::ptr::null_mut(),
                ctx: as_ptr(ctx),
            })
        })?;
        // SAFETY: the caller's: checked non-null, valid for a write of the struct.
        node_params.write(made);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphKernelNodeSetParams_v2(
    h_node: CUgraphNode,
    node_params: *const CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    entry!(cuGraphKernelNodeSetParams_v2(h_node, node_params), {
        let (work, via_extra) = kernel_node(node_params)?;
        set_work(h_node, work, Extras { via_extra, ..Extras::default() })
    })
}

/// The parameters as given; a copy captured from a stream reads back as one between unified
/// addresses.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphMemcpyNodeGetParams(h_node: CUgraphNode, node_params: *mut CUDA_MEMCPY3D) -> CUresult {
    entry!(cuGraphMemcpyNodeGetParams(h_node, node_params), {
        if node_params.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let given = of_kind(h_node, MEMCPY, |n| match (&n.work, &n.extras.copy) {
            (_, Some(given)) => Ok(**given),
            (&Work::Memcpy { dst, src, bytes }, None) => {
                let unified = cudarc::driver::sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32;
                Ok(Memcpy3d {
                    src_type: unified,
                    src_device: src,
                    dst_type: unified,
                    dst_device: dst,
                    width: bytes,
                    height: 1,
                    depth: 1,
                    ..Memcpy3d::default()
                })
            }
            _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        })?;
        // SAFETY: the caller's; the mirror has the struct's layout (`graph::memcpy_node`).
        node_params.cast::<Memcpy3d>().write(given);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphMemcpyNodeSetParams(
    h_node: CUgraphNode,
    node_params: *const CUDA_MEMCPY3D,
) -> CUresult {
    entry!(cuGraphMemcpyNodeSetParams(h_node, node_params), {
        let (work, copy) = memcpy_node(node_params)?;
        set_work(h_node, work, Extras { copy: Some(Box::new(copy)), ..Extras::default() })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphMemsetNodeGetParams(
    h_node: CUgraphNode,
    node_params: *mut CUDA_MEMSET_NODE_PARAMS,
) -> CUresult {
    entry!(cuGraphMemsetNodeGetParams(h_node, node_params), {
        if node_params.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let made = of_kind(h_node, MEMSET, |n| match &n.work {
            Work::Memset { dst, pitch, unit, width, height } => {
                let mut value = [0u8; 4];
                value[..unit.len().min(4)].copy_from_slice(&unit[..unit.len().min(4)]);
                Ok(CUDA_MEMSET_NODE_PARAMS {
                    dst: *dst,
                    pitch: *pitch,
                    value: u32::from_le_bytes(value),
                    elementSize: unit.len() as u32,
                    width: *width,
                    height: *height,
                })
            }
            _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        })?;
        // SAFETY: the caller's: checked non-null, valid for a write of the struct.
        node_params.write(made);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphMemsetNodeSetParams(
    h_node: CUgraphNode,
    node_params: *const CUDA_MEMSET_NODE_PARAMS,
) -> CUresult {
    entry!(cuGraphMemsetNodeSetParams(h_node, node_params), {
        set_work(h_node, memset_node(node_params)?, Extras::default())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphHostNodeGetParams(
    h_node: CUgraphNode,
    node_params: *mut CUDA_HOST_NODE_PARAMS,
) -> CUresult {
    entry!(cuGraphHostNodeGetParams(h_node, node_params), {
        if node_params.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let made = of_kind(h_node, HOST, |n| match n.work {
            Work::Host { f, data } => Ok(CUDA_HOST_NODE_PARAMS { fn_: Some(f), userData: data as *mut c_void }),
            _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        })?;
        // SAFETY: the caller's: checked non-null, valid for a write of the struct.
        node_params.write(made);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphHostNodeSetParams(
    h_node: CUgraphNode,
    node_params: *const CUDA_HOST_NODE_PARAMS,
) -> CUresult {
    entry!(cuGraphHostNodeSetParams(h_node, node_params), {
        set_work(h_node, host_node(node_params)?, Extras::default())
    })
}

/// The graph the node owns, not a copy: changes to it reach the node, as the driver documents.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphChildGraphNodeGetGraph(h_node: CUgraphNode, ph_graph: *mut CUgraph) -> CUresult {
    entry!(cuGraphChildGraphNodeGetGraph(h_node, ph_graph), {
        out(ph_graph, as_ptr(graphs::child_graph(handle(h_node))?))
    })
}

/// The event of an event record (`record`) or wait node.
fn event_of(node: CUgraphNode, record: bool) -> Result<u64, CUresult> {
    of_kind(node, if record { EVENT_RECORD } else { EVENT_WAIT }, |n| match n.work {
        Work::EventRecord(e) | Work::EventWait(e) => Ok(e),
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphEventRecordNodeGetEvent(h_node: CUgraphNode, event_out: *mut CUevent) -> CUresult {
    entry!(cuGraphEventRecordNodeGetEvent(h_node, event_out), { out(event_out, as_ptr(event_of(h_node, true)?)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphEventRecordNodeSetEvent(h_node: CUgraphNode, event: CUevent) -> CUresult {
    entry!(cuGraphEventRecordNodeSetEvent(h_node, event), {
        set_work(h_node, Work::EventRecord(handle(event)), Extras::default())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphEventWaitNodeGetEvent(h_node: CUgraphNode, event_out: *mut CUevent) -> CUresult {
    entry!(cuGraphEventWaitNodeGetEvent(h_node, event_out), { out(event_out, as_ptr(event_of(h_node, false)?)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphEventWaitNodeSetEvent(h_node: CUgraphNode, event: CUevent) -> CUresult {
    entry!(cuGraphEventWaitNodeSetEvent(h_node, event), {
        set_work(h_node, Work::EventWait(handle(event)), Extras::default())
    })
}

/// What a `CUgraphNodeParams` asks for.
pub(super) enum Params {
    /// A node whose work its parameters make alone, and what it keeps besides.
    Work(Work, Extras),
    /// A child graph node embedding a copy of the graph, or (`moved`) the graph itself.
    Child { graph: u64, moved: bool },
    /// An allocation node: its parameters, whose `dptr` the node's address is written to.
    Alloc(*mut CUDA_MEM_ALLOC_NODE_PARAMS_v2),
    /// A free node of a graph allocation.
    Free(u64),
}

/// Reads the tagged union `p`, its type and its member as the driver reads them: reserved
/// fields must be zero. Kinds the simulator does not model (external semaphores, batch memory
/// operations, conditional nodes) answer `CUDA_ERROR_NOT_SUPPORTED`, named once.
///
/// # Safety
/// A non-null `p` is valid for a read of the struct.
pub(super) unsafe fn read_params(p: *mut CUgraphNodeParams) -> Result<Params, CUresult> {
    // The union's members read through the structs of the kind's own calls: the same layouts,
    // or (memset) the same fields first.
    const _: () = assert!(size_of::<CUDA_KERNEL_NODE_PARAMS_v3>() == size_of::<CUDA_KERNEL_NODE_PARAMS>());
    const _: () = assert!(size_of::<CUDA_HOST_NODE_PARAMS_v2>() == size_of::<CUDA_HOST_NODE_PARAMS>());
    const _: () = assert!(offset_of!(CUDA_MEMSET_NODE_PARAMS_v2, ctx) == size_of::<CUDA_MEMSET_NODE_PARAMS>());
    if p.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // Read as integers: a C caller may pass a type this build's enum does not have.
    // SAFETY: the caller's: the struct is there; the type is its first field, an enum's 4 bytes.
    let kind = unsafe { p.cast::<u32>().read() };
    // SAFETY: as above; the reserved fields are integers.
    let (reserved0, reserved2) = unsafe { ((*p).reserved0, (*p).reserved2) };
    if reserved0 != [0; 3] || reserved2 != 0 {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: the member starts here; each kind's struct is read below as the caller wrote it.
    let member = unsafe { p.cast::<u8>().add(offset_of!(CUgraphNodeParams, __bindgen_anon_1)) };
    // SAFETY (each read below): the member is the kind's parameters, as the caller's contract
    // says; a handle or an address is read as the pointer-sized integer it is.
    unsafe {
        Ok(match kind {
            KERNEL => {
                let (work, via_extra) = kernel_node(member.cast())?;
                Params::Work(work, Extras { via_extra, ..Extras::default() })
            }
            MEMCPY => {
                if member.cast::<i32>().read() != 0 {
                    return Err(CUresult::CUDA_ERROR_INVALID_VALUE); // its flags
                }
                let (work, copy) = memcpy_node(member.add(offset_of!(CUDA_MEMCPY_NODE_PARAMS, copyParams)).cast())?;
                Params::Work(work, Extras { copy: Some(Box::new(copy)), ..Extras::default() })
            }
            MEMSET => Params::Work(memset_node(member.cast())?, Extras::default()),
            HOST => Params::Work(host_node(member.cast())?, Extras::default()),
            GRAPH => {
                let graph = member.cast::<u64>().read();
                match member.add(size_of::<CUgraph>()).cast::<u32>().read() {
                    0 => Params::Child { graph, moved: false },
                    1 => Params::Child { graph, moved: true },
                    _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
                }
            }
            5 => Params::Work(Work::Empty, Extras::default()),
            EVENT_WAIT => Params::Work(Work::EventWait(member.cast::<u64>().read()), Extras::default()),
            EVENT_RECORD => Params::Work(Work::EventRecord(member.cast::<u64>().read()), Extras::default()),
            8 | 9 => return Err(not_simulated("a graph node of external semaphores").unwrap_err()),
            MEM_ALLOC => Params::Alloc(member.cast()),
            MEM_FREE => Params::Free(member.cast::<u64>().read()),
            12 => return Err(not_simulated("a graph node of batch memory operations").unwrap_err()),
            13 => return Err(not_simulated("a conditional graph node").unwrap_err()),
            _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        })
    }
}

/// `cuGraphAddNode`: a node of any kind the store has; an allocation's address is written back
/// to the parameters, as the driver writes it.
///
/// # Safety
/// As `cuGraphAddNode` documents its pointers.
unsafe fn add_node(
    node: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    count: usize,
    p: *mut CUgraphNodeParams,
) -> Answer {
    // SAFETY: the caller's.
    let params = unsafe { read_params(p)? };
    match params {
        // SAFETY: the caller's.
        Params::Work(work, extras) => unsafe { add_with(node, g, deps, count, || Ok((work, extras))) },
        // SAFETY: the caller's.
        Params::Child { graph, moved } => unsafe { add_child(node, g, deps, count, graph, moved) },
        // SAFETY: the caller's.
        Params::Free(va) => unsafe {
            add(node, g, deps, count, || {
                graph_memory::free_by_node(va)?;
                Ok(Work::MemFree(va))
            })
        },
        Params::Alloc(a) => {
            // As `cuGraphAddMemAllocNode`; fields read one by one (the pool's properties hold
            // enums, read as integers).
            let (props, descs, count_descs, bytes) =
                // SAFETY: the caller's: `a` points at the allocation's parameters.
                unsafe { (std::ptr::addr_of!((*a).poolProps), (*a).accessDescs, (*a).accessDescCount, (*a).bytesize) };
            // SAFETY: as above.
            let PoolRequest::Device(props) = (unsafe { pool_request(props)? }) else {
                return not_simulated("cuGraphAddNode of memory not on a device");
            };
            // SAFETY: the caller's: `count_descs` descriptors there.
            let access = unsafe { access_descs(descs, count_descs)? };
            let request = Request { bytes, device: props.device, handle_types: props.handle_types, access };
            let mut va = 0;
            // SAFETY: the caller's; `a` points at the parameters, its address theirs to write.
            unsafe {
                add(node, g, deps, count, || {
                    va = graph_memory::reserve(sim(), request)?;
                    Ok(Work::MemAlloc(va))
                })?;
                std::ptr::addr_of_mut!((*a).dptr).write(va);
            }
            Ok(())
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddNode(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    num_dependencies: usize,
    node_params: *mut CUgraphNodeParams,
) -> CUresult {
    entry!(cuGraphAddNode(ph_graph_node, h_graph, dependencies, num_dependencies, node_params), {
        add_node(ph_graph_node, h_graph, dependencies, num_dependencies, node_params)
    })
}

/// Edge data other than the default (all zeros) is `CUDA_ERROR_NOT_SUPPORTED`, named once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddNode_v2(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    dependency_data: *const CUgraphEdgeData,
    num_dependencies: usize,
    node_params: *mut CUgraphNodeParams,
) -> CUresult {
    entry!(cuGraphAddNode_v2(ph_graph_node, h_graph, dependencies, dependency_data, num_dependencies, node_params), {
        default_edge_data(dependency_data, num_dependencies, "cuGraphAddNode_v2 with edge data")?;
        add_node(ph_graph_node, h_graph, dependencies, num_dependencies, node_params)
    })
}

/// The type must be the node's; allocation and free nodes cannot be set, as the driver
/// documents (`CUDA_ERROR_NOT_SUPPORTED`). A child graph node's graph becomes a copy of the one
/// given, under the handle it had.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeSetParams(h_node: CUgraphNode, node_params: *mut CUgraphNodeParams) -> CUresult {
    entry!(cuGraphNodeSetParams(h_node, node_params), {
        match read_params(node_params)? {
            Params::Work(work, extras) => set_work(h_node, work, extras),
            Params::Child { moved: true, .. } => not_simulated("cuGraphNodeSetParams moving a child graph"),
            Params::Child { graph, moved: false } => graphs::set_child(handle(h_node), graph),
            Params::Alloc(_) | Params::Free(_) => Err(CUresult::CUDA_ERROR_NOT_SUPPORTED),
        }
    })
}

/// # Safety
/// `from` and `to` hold `count` handles each, or `count` is 0.
unsafe fn remove_edges(g: CUgraph, from: *const CUgraphNode, to: *const CUgraphNode, count: usize) -> Answer {
    // SAFETY: the caller's.
    graphs::remove_edges(handle(g), &unsafe { super::graph::edges(from, to, count)? })
}

/// Each edge must be there (once); none goes from a graph with memory nodes, as the driver
/// documents; nothing goes unless all can.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphRemoveDependencies(
    h_graph: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    num_dependencies: usize,
) -> CUresult {
    entry!(cuGraphRemoveDependencies(h_graph, from, to, num_dependencies), {
        remove_edges(h_graph, from, to, num_dependencies)
    })
}

/// Every edge has the default data: an edge named with other data is not there
/// (`CUDA_ERROR_INVALID_VALUE`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphRemoveDependencies_v2(
    h_graph: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    edge_data: *const CUgraphEdgeData,
    num_dependencies: usize,
) -> CUresult {
    entry!(cuGraphRemoveDependencies_v2(h_graph, from, to, edge_data, num_dependencies), {
        if !edge_data.is_null() {
            // SAFETY: the caller's: `num_dependencies` edges' data.
            let bytes =
                std::slice::from_raw_parts(edge_data.cast::<u8>(), num_dependencies * size_of::<CUgraphEdgeData>());
            if bytes.iter().any(|&b| b != 0) {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
        }
        remove_edges(h_graph, from, to, num_dependencies)
    })
}

/// Nodes of child graphs copied into the clone are found too.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeFindInClone(
    ph_node: *mut CUgraphNode,
    h_original_node: CUgraphNode,
    h_cloned_graph: CUgraph,
) -> CUresult {
    entry!(cuGraphNodeFindInClone(ph_node, h_original_node, h_cloned_graph), {
        out(ph_node, as_ptr(graphs::find_in_clone(handle(h_original_node), handle(h_cloned_graph))?))
    })
}

/// `CUlaunchAttributeID`s valid for graph nodes, as the header marks them; the cooperative one
/// and the cluster dimension change how the kernel runs, a device-updatable node is not
/// simulated, and the others are hints the simulator honours by keeping them.
const NODE_ATTRIBUTES: [u32; 11] = [1, 2, 4, 5, 8, 9, 10, 11, 13, 14, 16];
const COOPERATIVE: u32 = 2;
const CLUSTER_DIMENSION: u32 = 4;
const DEVICE_UPDATABLE: u32 = 13;

/// The `i`th 32-bit word of an attribute's value.
fn word(value: &[u8; 64], i: usize) -> u32 {
    u32::from_ne_bytes([value[4 * i], value[4 * i + 1], value[4 * i + 2], value[4 * i + 3]])
}

/// Kernel node `node`'s attribute `id`: the launch's own for cooperative and the cluster
/// dimension, else as set (zeros until then).
fn attribute(node: CUgraphNode, id: u32) -> Result<[u8; 64], CUresult> {
    of_kind(node, KERNEL, |n| {
        let Work::Kernel(k) = &n.work else { return Err(CUresult::CUDA_ERROR_INVALID_VALUE) };
        let mut value = [0u8; 64];
        match id {
            _ if !NODE_ATTRIBUTES.contains(&id) => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
            COOPERATIVE => value[..4].copy_from_slice(&u32::from(k.how.cooperative).to_ne_bytes()),
            CLUSTER_DIMENSION => {
                for (i, d) in k.how.cluster.unwrap_or([0; 3]).iter().enumerate() {
                    value[4 * i..4 * i + 4].copy_from_slice(&d.to_ne_bytes());
                }
            }
            _ => value = n.extras.attrs.iter().find(|a| a.0 == id).map_or(value, |a| a.1),
        }
        Ok(value)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphKernelNodeGetAttribute(
    h_node: CUgraphNode,
    attr: c_uint,
    value_out: *mut CUkernelNodeAttrValue,
) -> CUresult {
    entry!(cuGraphKernelNodeGetAttribute(h_node, attr, value_out), {
        const _: () = assert!(size_of::<CUkernelNodeAttrValue>() == 64);
        let value = attribute(h_node, attr)?;
        out(value_out.cast::<[u8; 64]>(), value)
    })
}

/// Kept on the node (an instantiation takes them with it); cooperative and the cluster
/// dimension change how the kernel runs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphKernelNodeSetAttribute(
    h_node: CUgraphNode,
    attr: c_uint,
    value: *const CUkernelNodeAttrValue,
) -> CUresult {
    entry!(cuGraphKernelNodeSetAttribute(h_node, attr, value), {
        // SAFETY: the caller's: a value (its 64 bytes) there, or null.
        let value = value.cast::<[u8; 64]>().as_ref().copied().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if attr == DEVICE_UPDATABLE && word(&value, 0) != 0 {
            return not_simulated("cuGraphKernelNodeSetAttribute of a device-updatable kernel node");
        }
        of_kind(h_node, KERNEL, |n| {
            let Work::Kernel(k) = &mut n.work else { return Err(CUresult::CUDA_ERROR_INVALID_VALUE) };
            match attr {
                _ if !NODE_ATTRIBUTES.contains(&attr) => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
                COOPERATIVE => k.how.cooperative = word(&value, 0) != 0,
                CLUSTER_DIMENSION => {
                    let dims = [word(&value, 0), word(&value, 1), word(&value, 2)];
                    k.how.cluster = (dims != [0; 3]).then_some(dims);
                }
                _ => {
                    n.extras.attrs.retain(|a| a.0 != attr);
                    n.extras.attrs.push((attr, value));
                }
            }
            Ok(())
        })
    })
}

/// Every attribute of `src`, cooperative and the cluster dimension too.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphKernelNodeCopyAttributes(dst: CUgraphNode, src: CUgraphNode) -> CUresult {
    entry!(cuGraphKernelNodeCopyAttributes(dst, src), {
        let (how, attrs) = of_kind(src, KERNEL, |n| match &n.work {
            Work::Kernel(k) => Ok((k.how, n.extras.attrs.clone())),
            _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        })?;
        of_kind(dst, KERNEL, |n| {
            if let Work::Kernel(k) = &mut n.work {
                k.how = how;
            }
            n.extras.attrs = attrs;
            Ok(())
        })
    })
}
