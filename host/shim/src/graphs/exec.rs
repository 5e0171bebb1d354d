//! Instantiated graphs: each node's work copied in an order the edges allow, child graphs
//! flattened into it, each still known by the handle of the node it came from, so that the
//! exec setters, `cuGraphNodeSetEnabled` and `cuGraphExecUpdate` reach it; and the graph's
//! shape as instantiated, which an update's graph must have.

use super::model::{self, GRAPH, KERNEL, MEMCPY, MEMSET, Mismatch, Shape};
use super::{Graph, Node, Store, Work, releasing, with};
use cudarc::driver::sys::CUresult;
use std::collections::HashMap;
use std::sync::Arc;

/// One node's work in an instantiated graph: a copy of the node (a child graph's nodes by their
/// own handles), and whether it runs (a disabled node runs as an empty one).
#[derive(Clone)]
pub(crate) struct Step {
    pub(crate) node: Node,
    pub(crate) enabled: bool,
}

/// An instantiated graph: its steps in order, the shape it was made from, its instantiation
/// flags, the user objects it holds, and the graph it was made from where that holds memory
/// nodes (one executable at a time).
pub(super) struct Exec {
    steps: Arc<[Step]>,
    shape: Shape,
    flags: u64,
    users: Vec<(u64, u32)>,
    memory_of: Option<u64>,
}

/// `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH` and `_UPLOAD` (which the driver does not
/// report back: it changes nothing in the executable graph).
const AUTO_FREE_ON_LAUNCH: u64 = 0x1;
const UPLOAD: u64 = 0x2;

/// What instantiating a graph with memory nodes a second time answers.
const SECOND_EXECUTABLE: CUresult = CUresult::CUDA_ERROR_NOT_SUPPORTED;

/// `CU_GRAPH_EXEC_UPDATE_ERROR`: an update given an invalid value.
pub(crate) const UPDATE_ERROR: u32 = 1;

/// Whether `g`, or a graph a child node of it embeds, holds an allocation or free node.
pub(super) fn has_memory_nodes(graphs: &HashMap<u64, Graph>, g: &Graph) -> bool {
    g.nodes.iter().any(|n| match &n.work {
        Work::MemAlloc(_) | Work::MemFree(_) => true,
        Work::Child(c) => graphs.get(c).is_some_and(|child| has_memory_nodes(graphs, child)),
        _ => false,
    })
}

/// `g`'s shape, child graphs' inside.
pub(super) fn shape_of(graphs: &HashMap<u64, Graph>, g: &Graph) -> Option<Shape> {
    let mut nodes = Vec::with_capacity(g.nodes.len());
    for n in &g.nodes {
        let inner = match &n.work {
            Work::Child(c) => Some(shape_of(graphs, graphs.get(c)?)?),
            _ => None,
        };
        nodes.push((n.handle, n.work.node_type(), inner));
    }
    Some(Shape { nodes, edges: g.edges.clone() })
}

/// `g`'s steps in an order its edges allow, child graphs' in their place; `None` for a cycle.
fn steps_of(graphs: &HashMap<u64, Graph>, g: &Graph, out: &mut Vec<Step>) -> Option<()> {
    for i in g.order()? {
        let node = &g.nodes[i];
        match &node.work {
            Work::Child(c) => steps_of(graphs, graphs.get(c)?, out)?,
            _ => out.push(Step { node: node.clone(), enabled: true }),
        }
    }
    Some(())
}

/// Every node of `g` and of the graphs its child nodes embed, by handle.
fn nodes_of<'a>(graphs: &'a HashMap<u64, Graph>, g: &'a Graph, into: &mut HashMap<u64, &'a Node>) {
    for n in &g.nodes {
        into.insert(n.handle, n);
        if let Work::Child(c) = &n.work
            && let Some(child) = graphs.get(c)
        {
            nodes_of(graphs, child, into);
        }
    }
}

/// `g` instantiated with `flags`: its steps, kept under a handle of their own, holding
/// references of its own to the graph's user objects. A graph with memory nodes has one
/// executable at a time; a graph moved into a child graph node has none.
pub(crate) fn instantiate(g: u64, flags: u64) -> Result<u64, CUresult> {
    with(|s| {
        let graph = s.graphs.get(&g).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if matches!(graph.owner, Some((_, true))) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let mut steps = Vec::new();
        steps_of(&s.graphs, graph, &mut steps).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let shape = shape_of(&s.graphs, graph).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let users = graph.users.clone();
        let memory_of = has_memory_nodes(&s.graphs, graph).then_some(g);
        if memory_of.is_some() && s.execs.values().any(|e| e.memory_of == memory_of) {
            return Err(SECOND_EXECUTABLE);
        }
        for &(u, n) in &users {
            if let Some(user) = s.users.get_mut(&u) {
                user.refs += n;
            }
        }
        let exec = s.handle();
        let flags = flags & !UPLOAD;
        s.execs.insert(exec, Exec { steps: steps.into(), shape, flags, users, memory_of });
        Ok(exec)
    })
}

pub(crate) fn exec_destroy(exec: u64) -> Result<(), CUresult> {
    releasing(|s, done| {
        let gone = s.execs.remove(&exec).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        s.release_all(&gone.users, done);
        Ok(())
    })
}

/// An instantiated graph's steps, to replay, and whether it frees its live allocations first.
pub(crate) fn exec_work(exec: u64) -> Result<(Arc<[Step]>, bool), CUresult> {
    with(|s| {
        let e = s.execs.get(&exec).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        Ok((e.steps.clone(), e.flags & AUTO_FREE_ON_LAUNCH != 0))
    })
}

/// The flags `exec` was instantiated with (less upload).
pub(crate) fn exec_flags(exec: u64) -> Result<u64, CUresult> {
    with(|s| s.execs.get(&exec).map(|e| e.flags).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE))
}

/// `exec` and the type of its node `node`: a node of the graph it was instantiated from (not
/// of a child graph), still in that graph.
fn exec_node(s: &mut Store, exec: u64, node: u64) -> Result<(&mut Exec, u32), CUresult> {
    if !s.graphs.values().any(|g| g.has(node)) {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let e = s.execs.get_mut(&exec).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    let kind = e.shape.nodes.iter().find(|n| n.0 == node).map(|n| n.1).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    Ok((e, kind))
}

/// The steps of `e` given the work of `new` (by the handle of the step each replaces), each
/// checked as the driver checks an update first: nothing changes unless all may.
fn apply(e: &mut Exec, new: &[(u64, Node)]) -> Result<(), Mismatch> {
    let mut steps = e.steps.to_vec();
    let mut changes = Vec::with_capacity(new.len());
    for (old, node) in new {
        let Some(at) = steps.iter().position(|st| st.node.handle == *old) else { continue };
        let mut work = node.work.clone();
        if let (Work::Kernel(k), Work::Kernel(was)) = (&mut work, &steps[at].node.work)
            && node.handle == *old
        {
            // Through a setter: the node's attributes are the instantiated ones.
            k.how = was.how;
        }
        let candidate = Node { handle: *old, work, extras: node.extras.clone() };
        model::updatable(&steps[at].node, &candidate).map_err(|result| Mismatch {
            result,
            node: node.handle,
            from: 0,
        })?;
        changes.push((at, candidate));
    }
    for (at, node) in changes {
        steps[at].node = node;
    }
    e.steps = steps.into();
    Ok(())
}

/// An exec setter: node `node` of `exec` (a top-level node of `work`'s type) runs `work` from
/// the next launch, its memcpy parameters as given in `extras`.
pub(crate) fn exec_set(exec: u64, node: u64, work: Work, extras: model::Extras) -> Result<(), CUresult> {
    with(|s| {
        let (e, kind) = exec_node(s, exec, node)?;
        if kind != work.node_type() || kind == GRAPH {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        apply(e, &[(node, Node { handle: node, work, extras })]).map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)
    })
}

/// `cuGraphExecChildGraphNodeSetParams`: the child graph node `node` of `exec` runs as though
/// it had embedded `child` (of the same shape) at instantiation.
pub(crate) fn exec_set_child(exec: u64, node: u64, child: u64) -> Result<(), CUresult> {
    with(|s| {
        let graph = s.graphs.get(&child).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let new_shape = shape_of(&s.graphs, graph).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let mut by_handle = HashMap::new();
        nodes_of(&s.graphs, graph, &mut by_handle);
        let new: Vec<(u64, Node)> = {
            let e = s.execs.get(&exec).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
            let Some((_, GRAPH, Some(old_shape))) = e.shape.nodes.iter().find(|n| n.0 == node) else {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            };
            let pairs = model::pair(old_shape, &new_shape).map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
            pairs.iter().filter_map(|&(n, o)| by_handle.get(&n).map(|&found| (o, found.clone()))).collect()
        };
        let (e, _) = exec_node(s, exec, node)?;
        apply(e, &new).map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)
    })
}

/// `cuGraphExecUpdate`: `exec`'s steps given the work of `g`'s nodes, paired with its own as
/// the driver pairs them; what failed otherwise (`UPDATE_ERROR` for an invalid value).
pub(crate) fn exec_update(exec: u64, g: u64) -> Result<(), Mismatch> {
    let invalid = Mismatch { result: UPDATE_ERROR, node: 0, from: 0 };
    with(|s| {
        let graph = s.graphs.get(&g).ok_or(invalid)?;
        if matches!(graph.owner, Some((_, true))) {
            return Err(invalid);
        }
        let new_shape = shape_of(&s.graphs, graph).ok_or(invalid)?;
        let mut by_handle = HashMap::new();
        nodes_of(&s.graphs, graph, &mut by_handle);
        let e = s.execs.get_mut(&exec).ok_or(invalid)?;
        let pairs = model::pair(&e.shape, &new_shape)?;
        let new: Vec<(u64, Node)> =
            pairs.iter().filter_map(|&(n, o)| by_handle.get(&n).map(|&found| (o, found.clone()))).collect();
        apply(e, &new)
    })
}

/// Whether node `node` of `exec` runs; only kernel, memset and copy nodes can be told apart,
/// as the driver documents.
pub(crate) fn enabled(exec: u64, node: u64) -> Result<bool, CUresult> {
    with(|s| {
        let (e, kind) = exec_node(s, exec, node)?;
        if ![KERNEL, MEMCPY, MEMSET].contains(&kind) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        Ok(e.steps.iter().find(|st| st.node.handle == node).is_none_or(|st| st.enabled))
    })
}

/// `cuGraphNodeSetEnabled`: node `node` of `exec` (a kernel, memset or copy node) runs, or runs
/// as an empty node, from the next launch.
pub(crate) fn set_enabled(exec: u64, node: u64, on: bool) -> Result<(), CUresult> {
    with(|s| {
        let (e, kind) = exec_node(s, exec, node)?;
        if ![KERNEL, MEMCPY, MEMSET].contains(&kind) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let mut steps = e.steps.to_vec();
        steps.iter_mut().filter(|st| st.node.handle == node).for_each(|st| st.enabled = on);
        e.steps = steps.into();
        Ok(())
    })
}
