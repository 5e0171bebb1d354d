//! Graph memory's entry points: allocation and free nodes, their parameters, and the device's
//! graph-memory attributes and trim (`graph_memory.rs` keeps the allocations).

use super::graph::{add, handle};
use crate::abi::{PoolRequest, access_descs, out, pool_request};
use crate::boundary::{code, entry, sim};
use crate::graph_memory::{self, Request};
use crate::graphs::{self, Work};
use cudarc::driver::sys::{
    CUDA_MEM_ALLOC_NODE_PARAMS, CUdevice, CUdeviceptr, CUgraph, CUgraphNode, CUmemAllocationType, CUmemLocationType,
    CUresult,
};
use std::ffi::{c_uint, c_void};

/// Pinned memory on a device, with the access of `accessDescs` besides the owner's; the
/// address is written to `dptr`, as the driver writes it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddMemAllocNode(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    num_dependencies: usize,
    node_params: *mut CUDA_MEM_ALLOC_NODE_PARAMS,
) -> CUresult {
    entry!(cuGraphAddMemAllocNode(ph_graph_node, h_graph, dependencies, num_dependencies, node_params), {
        let p = node_params.as_mut().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let PoolRequest::Device(props) = pool_request(&p.poolProps)? else {
            return crate::boundary::not_simulated("cuGraphAddMemAllocNode of memory not on a device");
        };
        let access = access_descs(p.accessDescs, p.accessDescCount)?;
        let request = Request { bytes: p.bytesize, device: props.device, handle_types: props.handle_types, access };
        let mut va = 0;
        add(ph_graph_node, h_graph, dependencies, num_dependencies, || {
            va = graph_memory::reserve(sim(), request)?;
            Ok(Work::MemAlloc(va))
        })?;
        p.dptr = va;
        Ok(())
    })
}

/// The parameters the node was made with; its access descriptors stay the node's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphMemAllocNodeGetParams(
    h_node: CUgraphNode,
    params_out: *mut CUDA_MEM_ALLOC_NODE_PARAMS,
) -> CUresult {
    entry!(cuGraphMemAllocNodeGetParams(h_node, params_out), {
        let Work::MemAlloc(va) = graphs::work_of(handle(h_node))? else {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        };
        let p = params_out.as_mut().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let request = graph_memory::request(va).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let descs = graph_memory::descriptors(va);
        // SAFETY: all-zero is a valid `CUmemPoolProps` (plain integers, a null pointer).
        p.poolProps = unsafe { std::mem::zeroed() };
        p.poolProps.allocType = CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        p.poolProps.location.type_ = CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        p.poolProps.location.id = request.device;
        // The handle types are bits, which the binding's enum cannot hold: written as the integer.
        std::ptr::addr_of_mut!(p.poolProps.handleTypes).cast::<u32>().write(request.handle_types.0);
        p.accessDescs = descs.0;
        p.accessDescCount = descs.1;
        p.bytesize = request.bytes;
        p.dptr = va;
        Ok(())
    })
}

/// A free node for a graph allocation not freed by another free node.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddMemFreeNode(
    ph_graph_node: *mut CUgraphNode,
    h_graph: CUgraph,
    dependencies: *const CUgraphNode,
    num_dependencies: usize,
    dptr: CUdeviceptr,
) -> CUresult {
    entry!(cuGraphAddMemFreeNode(ph_graph_node, h_graph, dependencies, num_dependencies, dptr), {
        add(ph_graph_node, h_graph, dependencies, num_dependencies, || {
            graph_memory::free_by_node(dptr)?;
            Ok(Work::MemFree(dptr))
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphMemFreeNodeGetParams(h_node: CUgraphNode, dptr_out: *mut CUdeviceptr) -> CUresult {
    entry!(cuGraphMemFreeNodeGetParams(h_node, dptr_out), {
        match graphs::work_of(handle(h_node))? {
            Work::MemFree(va) => out(dptr_out, va),
            _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        }
    })
}

/// The device's ordinal, checked against the machine.
fn device_of(device: CUdevice) -> Result<i32, CUresult> {
    match (0..code(sim().device_get_count())?).contains(&device) {
        true => Ok(device),
        false => Err(CUresult::CUDA_ERROR_INVALID_DEVICE),
    }
}

/// `CUgraphMem_attribute`'s four, each a `cuuint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetGraphMemAttribute(device: CUdevice, attr: c_uint, value: *mut c_void) -> CUresult {
    entry!(cuDeviceGetGraphMemAttribute(device, attr, value), {
        let v = graph_memory::attribute(device_of(device)?, attr)?;
        out(value.cast::<u64>(), v)
    })
}

/// A high-water mark reset, by the value 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceSetGraphMemAttribute(device: CUdevice, attr: c_uint, value: *mut c_void) -> CUresult {
    entry!(cuDeviceSetGraphMemAttribute(device, attr, value), {
        let v = value.cast::<u64>().as_ref().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        graph_memory::reset_high(device_of(device)?, attr, *v)
    })
}

/// The memory graphs keep for their next allocations given back.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGraphMemTrim(device: CUdevice) -> CUresult {
    entry!(cuDeviceGraphMemTrim(device), { graph_memory::trim(sim(), device_of(device)?) })
}
