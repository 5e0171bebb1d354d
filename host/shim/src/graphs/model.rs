//! What graphs are made of: each node's work and what the driver keeps beside it, a graph's
//! nodes and edges, and how two graphs' nodes are paired when an instantiated graph is updated
//! from another (`cuGraphExecUpdate`). Plain data: the store that holds them is `graphs.rs`'s.

use peerpool_sim::PtxLaunchHow;
use std::collections::HashMap;
use std::ffi::c_void;

/// What one node does.
#[derive(Clone)]
pub(crate) enum Work {
    Kernel(Kernel),
    /// A copy between any two addresses unified addressing tells apart.
    Memcpy {
        dst: u64,
        src: u64,
        bytes: usize,
    },
    /// `height` rows of `width` values (`unit`: one value's 1, 2 or 4 bytes), `pitch` apart.
    Memset {
        dst: u64,
        pitch: usize,
        unit: Vec<u8>,
        width: usize,
        height: usize,
    },
    /// A host function and its data (CUDA's contract: valid when the graph runs).
    Host {
        f: unsafe extern "C" fn(*mut c_void),
        data: usize,
    },
    Empty,
    /// The graph the node embeds, by handle: a graph of the store that the node owns, so that
    /// `cuGraphChildGraphNodeGetGraph` can hand it out and changes to it reach the node.
    Child(u64),
    /// An event recorded, or waited for, where the node runs.
    EventRecord(u64),
    EventWait(u64),
    /// A graph allocation made live, or freed, by its address (`graph_memory.rs`).
    MemAlloc(u64),
    MemFree(u64),
}

/// A kernel launch: the function, its shape and its parameters as copied at the call.
#[derive(Clone)]
pub(crate) struct Kernel {
    pub(crate) function: usize,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) shared: u32,
    pub(crate) how: PtxLaunchHow,
    /// The parameter buffer, and each parameter's offset and size in it.
    pub(crate) buffer: Vec<u8>,
    pub(crate) layout: Vec<(usize, usize)>,
}

/// `CUgraphNodeType` of the kinds a node here can be.
pub(crate) const KERNEL: u32 = 0;
pub(crate) const MEMCPY: u32 = 1;
pub(crate) const MEMSET: u32 = 2;
pub(crate) const HOST: u32 = 3;
pub(crate) const GRAPH: u32 = 4;
pub(crate) const EMPTY: u32 = 5;
pub(crate) const EVENT_WAIT: u32 = 6;
pub(crate) const EVENT_RECORD: u32 = 7;
pub(crate) const MEM_ALLOC: u32 = 10;
pub(crate) const MEM_FREE: u32 = 11;

impl Work {
    /// The node's `CUgraphNodeType`.
    pub(crate) fn node_type(&self) -> u32 {
        match self {
            Work::Kernel(_) => KERNEL,
            Work::Memcpy { .. } => MEMCPY,
            Work::Memset { .. } => MEMSET,
            Work::Host { .. } => HOST,
            Work::Child(_) => GRAPH,
            Work::Empty => EMPTY,
            Work::EventWait(_) => EVENT_WAIT,
            Work::EventRecord(_) => EVENT_RECORD,
            Work::MemAlloc(_) => MEM_ALLOC,
            Work::MemFree(_) => MEM_FREE,
        }
    }
}

/// `CUDA_MEMCPY3D` as a memcpy node was given it, memory types as plain integers and pointers
/// as addresses: what `cuGraphMemcpyNodeGetParams` hands back.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Memcpy3d {
    pub(crate) src_x: usize,
    pub(crate) src_y: usize,
    pub(crate) src_z: usize,
    pub(crate) src_lod: usize,
    pub(crate) src_type: u32,
    pub(crate) src_host: usize,
    pub(crate) src_device: u64,
    pub(crate) src_array: usize,
    pub(crate) reserved0: usize,
    pub(crate) src_pitch: usize,
    pub(crate) src_height: usize,
    pub(crate) dst_x: usize,
    pub(crate) dst_y: usize,
    pub(crate) dst_z: usize,
    pub(crate) dst_lod: usize,
    pub(crate) dst_type: u32,
    pub(crate) dst_host: usize,
    pub(crate) dst_device: u64,
    pub(crate) dst_array: usize,
    pub(crate) reserved1: usize,
    pub(crate) dst_pitch: usize,
    pub(crate) dst_height: usize,
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) depth: usize,
}

/// What the driver keeps of a node besides its work.
#[derive(Default)]
pub(crate) struct Extras {
    /// The node this one is a copy of (`cuGraphClone`, a child graph's copy), for
    /// `cuGraphNodeFindInClone`.
    pub(crate) origin: Option<u64>,
    /// A kernel node's launch attributes as set, by id, each value's 64 bytes (cooperative and
    /// cluster dimension are the kernel's own `how`).
    pub(crate) attrs: Vec<(u32, [u8; 64])>,
    /// A memcpy node's parameters as given.
    pub(crate) copy: Option<Box<Memcpy3d>>,
    /// A kernel node's parameters were last given as `extra` (a buffer), not `kernelParams`.
    pub(crate) via_extra: bool,
    /// The `kernelParams` or `extra` array `cuGraphKernelNodeGetParams` handed out, into the
    /// kernel's buffer: the node's, valid until its parameters change.
    pub(crate) handed: Option<Box<[usize]>>,
}

/// A copy's handed-out array points into the original's buffer: it is not copied.
impl Clone for Extras {
    fn clone(&self) -> Self {
        Extras {
            origin: self.origin,
            attrs: self.attrs.clone(),
            copy: self.copy.clone(),
            via_extra: self.via_extra,
            handed: None,
        }
    }
}

/// One node: its handle, its work and what is kept beside it.
#[derive(Clone)]
pub(crate) struct Node {
    pub(crate) handle: u64,
    pub(crate) work: Work,
    pub(crate) extras: Extras,
}

/// A graph: its nodes in the order they were added, its edges in the order they were added,
/// and the references it holds to user objects.
#[derive(Clone, Default)]
pub(crate) struct Graph {
    pub(crate) nodes: Vec<Node>,
    pub(crate) edges: Vec<(u64, u64)>,
    pub(crate) users: Vec<(u64, u32)>,
    /// For a graph a child graph node embeds: that node, and whether the graph was moved into
    /// it (`CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE`) rather than copied.
    pub(crate) owner: Option<(u64, bool)>,
}

impl Graph {
    pub(crate) fn has(&self, node: u64) -> bool {
        self.nodes.iter().any(|n| n.handle == node)
    }

    pub(crate) fn node_mut(&mut self, node: u64) -> Option<&mut Node> {
        self.nodes.iter_mut().find(|n| n.handle == node)
    }

    /// The indices of the nodes in an order the edges allow (of the ready nodes, the first
    /// added first); `None` for a cycle.
    pub(crate) fn order(&self) -> Option<Vec<usize>> {
        let index: HashMap<u64, usize> = self.nodes.iter().enumerate().map(|(i, n)| (n.handle, i)).collect();
        let mut waiting = vec![0usize; self.nodes.len()];
        for (_, to) in &self.edges {
            waiting[*index.get(to)?] += 1;
        }
        let mut done = vec![false; self.nodes.len()];
        let mut out = Vec::with_capacity(self.nodes.len());
        for _ in 0..self.nodes.len() {
            let next = (0..self.nodes.len()).find(|&i| !done[i] && waiting[i] == 0)?;
            done[next] = true;
            let handle = self.nodes[next].handle;
            for (_, to) in self.edges.iter().filter(|(from, _)| *from == handle) {
                waiting[*index.get(to)?] -= 1;
            }
            out.push(next);
        }
        Some(out)
    }

    /// `node` and every node it depends on, directly or not.
    pub(crate) fn ancestors(&self, node: u64, into: &mut Vec<u64>) {
        if into.contains(&node) {
            return;
        }
        into.push(node);
        for &(from, _) in self.edges.iter().filter(|(_, to)| *to == node) {
            self.ancestors(from, into);
        }
    }
}

/// A graph's shape, kept by an instantiated graph to pair another graph's nodes with its own:
/// its nodes in the order added (handle, type, a child graph's own shape) and its edges.
#[derive(Clone, Default)]
pub(crate) struct Shape {
    pub(crate) nodes: Vec<(u64, u32, Option<Shape>)>,
    pub(crate) edges: Vec<(u64, u64)>,
}

/// `CUgraphExecUpdateResult`s an update can fail with.
pub(crate) const TOPOLOGY_CHANGED: u32 = 2;
pub(crate) const NODE_TYPE_CHANGED: u32 = 3;
pub(crate) const PARAMETERS_CHANGED: u32 = 5;
pub(crate) const ATTRIBUTES_CHANGED: u32 = 8;

/// Why two graphs' nodes cannot be paired, as `CUgraphExecUpdateResultInfo` says it: the
/// result, the node of the updating graph at fault (0: none) and its mismatched dependency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mismatch {
    pub(crate) result: u32,
    pub(crate) node: u64,
    pub(crate) from: u64,
}

impl Mismatch {
    fn topology(node: u64, from: u64) -> Mismatch {
        Mismatch { result: TOPOLOGY_CHANGED, node, from }
    }
}

impl Shape {
    /// The nodes no edge leaves, in the order added.
    fn sinks(&self) -> Vec<u64> {
        self.nodes.iter().map(|n| n.0).filter(|&h| !self.edges.iter().any(|&(from, _)| from == h)).collect()
    }

    /// The nodes `node` depends on, in the order its edges were added.
    fn incoming(&self, node: u64) -> Vec<u64> {
        self.edges.iter().filter(|&&(_, to)| to == node).map(|&(from, _)| from).collect()
    }

    fn kind(&self, node: u64) -> Option<&(u64, u32, Option<Shape>)> {
        self.nodes.iter().find(|n| n.0 == node)
    }
}

/// Pairs the nodes of `new` with those of `old` (this shape's), as the driver documents for
/// `cuGraphExecUpdate`: the sink nodes in order, then each pair's dependencies in edge order;
/// child graphs are paired the same way inside. Every pair as `(new, old)`, or the mismatch.
pub(crate) fn pair(old: &Shape, new: &Shape) -> Result<Vec<(u64, u64)>, Mismatch> {
    if old.nodes.len() != new.nodes.len() {
        return Err(Mismatch::topology(0, 0));
    }
    let (old_sinks, new_sinks) = (old.sinks(), new.sinks());
    if new_sinks.len() > old_sinks.len() {
        return Err(Mismatch::topology(new_sinks[old_sinks.len()], 0));
    }
    let mut to_old: HashMap<u64, u64> = HashMap::new();
    let mut to_new: HashMap<u64, u64> = HashMap::new();
    let mut queue: std::collections::VecDeque<(u64, u64)> = new_sinks.into_iter().zip(old_sinks).collect();
    for &(n, o) in &queue {
        to_old.insert(n, o);
        to_new.insert(o, n);
    }
    let (mut pairs, mut paired) = (Vec::new(), 0);
    while let Some((n, o)) = queue.pop_front() {
        let (new_node, old_node) = match (new.kind(n), old.kind(o)) {
            (Some(a), Some(b)) => (a, b),
            _ => return Err(Mismatch::topology(n, 0)),
        };
        if new_node.1 != old_node.1 {
            return Err(Mismatch { result: NODE_TYPE_CHANGED, node: n, from: 0 });
        }
        let (new_in, old_in) = (new.incoming(n), old.incoming(o));
        if new_in.len() != old_in.len() {
            return Err(Mismatch::topology(n, 0));
        }
        for (&dn, &dold) in new_in.iter().zip(&old_in) {
            match (to_old.get(&dn), to_new.get(&dold)) {
                (Some(&a), Some(&b)) if a == dold && b == dn => {}
                (None, None) => {
                    to_old.insert(dn, dold);
                    to_new.insert(dold, dn);
                    queue.push_back((dn, dold));
                }
                _ => return Err(Mismatch::topology(n, dn)),
            }
        }
        if let (Some(inner_new), Some(inner_old)) = (&new_node.2, &old_node.2) {
            pairs.extend(pair(inner_old, inner_new)?);
        }
        pairs.push((n, o));
        paired += 1;
    }
    match paired == new.nodes.len() {
        true => Ok(pairs),
        false => Err(Mismatch::topology(0, 0)),
    }
}

/// Whether `old`'s work may become `new`'s (a node of the same type) in an instantiated graph,
/// as the driver documents: a memset of more than one row keeps its shape and a one-row one
/// its one row; a copy keeps its memory types; a kernel stays cooperative or not; memory
/// nodes keep their allocation. The result it fails with otherwise.
pub(crate) fn updatable(old: &Node, new: &Node) -> Result<(), u32> {
    match (&old.work, &new.work) {
        (Work::Kernel(a), Work::Kernel(b)) if a.how.cooperative != b.how.cooperative => Err(ATTRIBUTES_CHANGED),
        (Work::Memset { height: 1, .. }, Work::Memset { height, .. }) if *height != 1 => Err(PARAMETERS_CHANGED),
        (
            Work::Memset { pitch, unit, width, height, .. },
            Work::Memset { pitch: p, unit: u, width: w, height: h, .. },
        ) if *height > 1 && (pitch, unit.len(), width, height) != (p, u.len(), w, h) => Err(PARAMETERS_CHANGED),
        (Work::Memcpy { .. }, Work::Memcpy { .. }) => match (&old.extras.copy, &new.extras.copy) {
            (Some(a), Some(b)) if (a.src_type, a.dst_type) != (b.src_type, b.dst_type) => Err(PARAMETERS_CHANGED),
            _ => Ok(()),
        },
        (Work::MemAlloc(a), Work::MemAlloc(b)) | (Work::MemFree(a), Work::MemFree(b)) if a != b => {
            Err(PARAMETERS_CHANGED)
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(nodes: &[(u64, u32)], edges: &[(u64, u64)]) -> Shape {
        Shape { nodes: nodes.iter().map(|&(h, t)| (h, t, None)).collect(), edges: edges.to_vec() }
    }

    #[test]
    fn the_same_topology_pairs_every_node() {
        let old = shape(&[(1, MEMSET), (2, KERNEL), (3, MEMCPY)], &[(1, 2), (2, 3)]);
        let new = shape(&[(11, MEMSET), (12, KERNEL), (13, MEMCPY)], &[(11, 12), (12, 13)]);
        let mut pairs = pair(&old, &new).unwrap();
        pairs.sort();
        assert_eq!(pairs, [(11, 1), (12, 2), (13, 3)]);
    }

    #[test]
    fn changes_are_named_as_the_driver_names_them() {
        let old = shape(&[(1, MEMSET), (2, KERNEL)], &[(1, 2)]);
        let fewer = shape(&[(11, MEMSET)], &[]);
        assert_eq!(pair(&old, &fewer), Err(Mismatch { result: TOPOLOGY_CHANGED, node: 0, from: 0 }));
        let retyped = shape(&[(11, MEMSET), (12, HOST)], &[(11, 12)]);
        assert_eq!(pair(&old, &retyped), Err(Mismatch { result: NODE_TYPE_CHANGED, node: 12, from: 0 }));
        let more_sinks = shape(&[(11, MEMSET), (12, KERNEL)], &[]);
        assert_eq!(pair(&old, &more_sinks), Err(Mismatch { result: TOPOLOGY_CHANGED, node: 12, from: 0 }));
        // Two sinks on a node each against two sinks on one node: the second's dependency is
        // paired already, with the first's.
        let each = shape(&[(1, EMPTY), (2, EMPTY), (3, EMPTY), (4, EMPTY)], &[(1, 3), (2, 4)]);
        let one = shape(&[(11, EMPTY), (12, EMPTY), (13, EMPTY), (14, EMPTY)], &[(11, 13), (11, 14), (12, 11)]);
        assert_eq!(pair(&each, &one), Err(Mismatch { result: TOPOLOGY_CHANGED, node: 14, from: 11 }));
    }

    fn node(work: Work) -> Node {
        Node { handle: 1, work, extras: Extras::default() }
    }

    fn memset(width: usize, height: usize) -> Work {
        Work::Memset { dst: 0x1000, pitch: 4096, unit: vec![0; 4], width, height }
    }

    #[test]
    fn what_an_instantiated_node_may_become() {
        // A one-row memset may change its width, not gain rows; one of more rows keeps its shape.
        assert_eq!(updatable(&node(memset(64, 1)), &node(memset(128, 1))), Ok(()));
        assert_eq!(updatable(&node(memset(64, 1)), &node(memset(64, 2))), Err(PARAMETERS_CHANGED));
        assert_eq!(updatable(&node(memset(64, 2)), &node(memset(32, 2))), Err(PARAMETERS_CHANGED));
        // A copy keeps its memory types.
        let copy = |src_type: u32| {
            let given = Memcpy3d { src_type, dst_type: 1, ..Memcpy3d::default() };
            let work = Work::Memcpy { dst: 0x1000, src: 0x2000, bytes: 64 };
            Node { extras: Extras { copy: Some(Box::new(given)), ..Extras::default() }, ..node(work) }
        };
        assert_eq!(updatable(&copy(2), &copy(2)), Ok(()));
        assert_eq!(updatable(&copy(2), &copy(1)), Err(PARAMETERS_CHANGED));
        // Memory nodes keep their allocation.
        assert_eq!(updatable(&node(Work::MemFree(1)), &node(Work::MemFree(2))), Err(PARAMETERS_CHANGED));
    }
}
