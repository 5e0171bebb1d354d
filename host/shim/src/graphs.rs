//! CUDA graphs on the simulator. A graph is its nodes (the work each does, copied when the node
//! is added or captured, as the driver copies node parameters) and its edges; a child graph
//! node owns a graph of its own, kept here beside the others. An instantiated graph is its
//! work in an order the edges allow, child graphs flattened, each node's work still known by its
//! node, replayed on a stream through the same paths as the stream calls it stands for
//! (`exports/graph_exec.rs`).
//!
//! What nodes and graphs are is `graphs/model.rs`'s; instantiated graphs are
//! `graphs/exec.rs`'s, stream capture `graphs/capture.rs`'s.

mod capture;
mod exec;
mod model;

pub(crate) use capture::{
    GLOBAL, MODES, RELAXED, THREAD_LOCAL, any_capturing, begin, begin_into, capture, capturing, end, info, invalidate,
    origins, record, update_dependencies, wait,
};
pub(crate) use exec::{
    UPDATE_ERROR, enabled, exec_destroy, exec_flags, exec_set, exec_set_child, exec_update, exec_work, instantiate,
    set_enabled,
};
pub(crate) use model::{Extras, Graph, Kernel, Memcpy3d, Mismatch, Node, Work};

use cudarc::driver::sys::CUresult;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Mutex;

/// A user object: its data, the function that destroys it, and its references.
struct User {
    ptr: usize,
    destroy: unsafe extern "C" fn(*mut c_void),
    refs: u32,
}

/// A user object's destructor, to run once the store's lock is let go.
pub(crate) struct Destroy(unsafe extern "C" fn(*mut c_void), usize);

impl Destroy {
    /// Runs the destructors, as the driver does once the last reference goes.
    pub(crate) fn run_all(all: Vec<Destroy>) {
        for Destroy(f, ptr) in all {
            // SAFETY: CUDA's contract: the function and its data are valid until it runs.
            unsafe { f(ptr as *mut c_void) };
        }
    }
}

#[derive(Default)]
struct Store {
    next: u64,
    graphs: HashMap<u64, Graph>,
    execs: HashMap<u64, exec::Exec>,
    users: HashMap<u64, User>,
    /// By stream handle.
    captures: HashMap<u64, capture::Capture>,
    /// Events recorded in a capture, by handle: the capture and the nodes the record stands for.
    events: HashMap<u64, (u64, Vec<u64>)>,
}

impl Store {
    fn handle(&mut self) -> u64 {
        self.next += 1;
        0x6a00_0000 + self.next * 8
    }

    fn graph(&mut self, g: u64) -> Result<&mut Graph, CUresult> {
        self.graphs.get_mut(&g).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
    }

    /// Drops `count` references to user object `u`; its destructor once none is left.
    fn release(&mut self, u: u64, count: u32, done: &mut Vec<Destroy>) -> Result<(), CUresult> {
        let user = self.users.get_mut(&u).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        user.refs = user.refs.checked_sub(count).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if user.refs == 0 {
            let gone = self.users.remove(&u).expect("looked up above");
            done.push(Destroy(gone.destroy, gone.ptr));
        }
        Ok(())
    }

    fn release_all(&mut self, users: &[(u64, u32)], done: &mut Vec<Destroy>) {
        for &(u, count) in users {
            let _ = self.release(u, count, done);
        }
    }
}

static STORE: Mutex<Option<Store>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut Store) -> T) -> T {
    let mut store = STORE.lock().unwrap_or_else(|e| e.into_inner());
    f(store.get_or_insert_with(Store::default))
}

/// [`with`] for a call that may let user objects go: their destructors run after the lock is
/// let go.
fn releasing<T>(f: impl FnOnce(&mut Store, &mut Vec<Destroy>) -> T) -> T {
    let mut done = Vec::new();
    let result = with(|s| f(s, &mut done));
    Destroy::run_all(done);
    result
}

pub(crate) fn create() -> u64 {
    with(|s| {
        let g = s.handle();
        s.graphs.insert(g, Graph::default());
        g
    })
}

/// Graph `g` and the graphs its child nodes embed, gone; the user objects they hold released.
fn remove_graph(s: &mut Store, g: u64, done: &mut Vec<Destroy>) {
    let Some(graph) = s.graphs.remove(&g) else { return };
    s.release_all(&graph.users, done);
    for n in &graph.nodes {
        if let Work::Child(c) = n.work {
            remove_graph(s, c, done);
        }
    }
}

/// Destroys graph `g` (not one a child graph node embeds: the node owns that) and the graphs
/// its child nodes embed, releasing the user objects they hold; a stream capturing into it is
/// left with an invalid capture.
pub(crate) fn destroy(g: u64) -> Result<(), CUresult> {
    releasing(|s, done| {
        if s.graph(g)?.owner.is_some() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        remove_graph(s, g, done);
        Ok(())
    })
}

/// A user object of `refs` references, destroyed by `destroy(ptr)` when the last goes.
pub(crate) fn user_create(ptr: usize, destroy: unsafe extern "C" fn(*mut c_void), refs: u32) -> u64 {
    with(|s| {
        let u = s.handle();
        s.users.insert(u, User { ptr, destroy, refs });
        u
    })
}

pub(crate) fn user_retain(u: u64, count: u32) -> Result<(), CUresult> {
    with(|s| {
        let user = s.users.get_mut(&u).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        user.refs = user.refs.checked_add(count).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        Ok(())
    })
}

pub(crate) fn user_release(u: u64, count: u32) -> Result<(), CUresult> {
    releasing(|s, done| s.release(u, count, done))
}

/// Graph `g` takes `count` references to `u`: new ones, or (`moved`) the caller's.
pub(crate) fn graph_retain_user(g: u64, u: u64, count: u32, moved: bool) -> Result<(), CUresult> {
    with(|s| {
        s.graph(g)?;
        let user = s.users.get_mut(&u).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if !moved {
            user.refs = user.refs.checked_add(count).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        }
        let graph = s.graph(g)?;
        match graph.users.iter_mut().find(|(held, _)| *held == u) {
            Some((_, n)) => *n += count,
            None => graph.users.push((u, count)),
        }
        Ok(())
    })
}

/// Graph `g` gives back `count` of its references to `u`.
pub(crate) fn graph_release_user(g: u64, u: u64, count: u32) -> Result<(), CUresult> {
    releasing(|s, done| {
        let graph = s.graph(g)?;
        let Some(at) = graph.users.iter().position(|&(held, n)| held == u && n >= count) else {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        };
        graph.users[at].1 -= count;
        if graph.users[at].1 == 0 {
            graph.users.remove(at);
        }
        s.release(u, count, done)
    })
}

/// Adds `work` to `g` after `deps` (nodes of `g`), with what the node keeps besides its work
/// (a copy's parameters as given); the new node's handle.
pub(crate) fn add_with(g: u64, deps: &[u64], work: Work, extras: Extras) -> Result<u64, CUresult> {
    with(|s| add_in(s, g, deps, work, extras))
}

/// Allocation and free nodes cannot be added to a graph a child graph node embeds, as the
/// driver documents.
fn add_in(s: &mut Store, g: u64, deps: &[u64], work: Work, extras: Extras) -> Result<u64, CUresult> {
    let node = s.handle();
    let graph = s.graph(g)?;
    let memory = matches!(work, Work::MemAlloc(_) | Work::MemFree(_));
    if (memory && graph.owner.is_some())
        || !deps.iter().all(|&d| graph.has(d))
        || (1..deps.len()).any(|i| deps[..i].contains(&deps[i]))
    {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    graph.nodes.push(Node { handle: node, work, extras });
    graph.edges.extend(deps.iter().map(|&d| (d, node)));
    Ok(node)
}

/// A copy of graph `g` under `owner`, with nodes of its own, each remembering the node it
/// copies (`cuGraphNodeFindInClone`), the graphs its child nodes embed copied likewise; not in
/// the store yet, and holding no user object.
fn copy_graph(s: &mut Store, g: u64, owner: Option<(u64, bool)>) -> Result<Graph, CUresult> {
    let original = s.graphs.get(&g).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?.clone();
    let renamed: HashMap<u64, u64> = original.nodes.iter().map(|n| (n.handle, s.handle())).collect();
    let mut nodes = Vec::with_capacity(original.nodes.len());
    for n in original.nodes {
        let handle = renamed.get(&n.handle).copied().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let work = match n.work {
            Work::Child(c) => {
                let inner = copy_graph(s, c, Some((handle, false)))?;
                let embedded = s.handle();
                s.graphs.insert(embedded, inner);
                Work::Child(embedded)
            }
            work => work,
        };
        let extras = Extras { origin: Some(n.handle), ..n.extras };
        nodes.push(Node { handle, work, extras });
    }
    let edges = original.edges.iter().filter_map(|(a, b)| Some((*renamed.get(a)?, *renamed.get(b)?))).collect();
    Ok(Graph { nodes, edges, users: Vec::new(), owner })
}

/// Whether graph `g` is `outer` or embedded in it, however deep.
fn embedded_in(s: &Store, mut g: u64, outer: u64) -> bool {
    for _ in 0..=s.graphs.len() {
        if g == outer {
            return true;
        }
        let Some((node, _)) = s.graphs.get(&g).and_then(|graph| graph.owner) else { return false };
        let Some((&holding, _)) = s.graphs.iter().find(|(_, graph)| graph.has(node)) else { return false };
        g = holding;
    }
    false
}

/// Adds a child graph node to `g` after `deps`, embedding a copy of `child` or (`moved`)
/// `child` itself, which the node then owns. As the driver documents, a copy of a graph with
/// memory nodes is refused; so is moving a graph embedded already, or one `g` is part of.
pub(crate) fn add_child(g: u64, deps: &[u64], child: u64, moved: bool) -> Result<u64, CUresult> {
    releasing(|s, done| {
        let source = s.graphs.get(&child).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        // A moved graph is its node's alone: it is neither moved again nor copied.
        let refused = matches!(source.owner, Some((_, true)))
            || match moved {
                true => source.owner.is_some() || embedded_in(s, g, child),
                false => exec::has_memory_nodes(&s.graphs, source),
            };
        if refused {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let embedded = match moved {
            true => child,
            false => {
                let copy = copy_graph(s, child, None)?;
                let handle = s.handle();
                s.graphs.insert(handle, copy);
                handle
            }
        };
        match add_in(s, g, deps, Work::Child(embedded), Extras::default()) {
            Ok(node) => {
                s.graph(embedded)?.owner = Some((node, moved));
                Ok(node)
            }
            Err(e) => {
                if !moved {
                    remove_graph(s, embedded, done);
                }
                Err(e)
            }
        }
    })
}

/// `cuGraphNodeSetParams` of child graph node `node`: the graph it embeds becomes a copy of
/// `child`, under the same handle (a graph with memory nodes is refused, as for a new node).
pub(crate) fn set_child(node: u64, child: u64) -> Result<(), CUresult> {
    releasing(|s, done| {
        let embedded = match holder(s, node)?.node_mut(node).map(|n| &n.work) {
            Some(&Work::Child(c)) => c,
            _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        };
        let source = s.graphs.get(&child).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if exec::has_memory_nodes(&s.graphs, source) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let mut copy = copy_graph(s, child, None)?;
        let old = s.graphs.remove(&embedded).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        for n in &old.nodes {
            if let Work::Child(c) = n.work {
                remove_graph(s, c, done);
            }
        }
        (copy.owner, copy.users) = (old.owner, old.users);
        s.graphs.insert(embedded, copy);
        Ok(())
    })
}

/// The graph child graph node `node` embeds.
pub(crate) fn child_graph(node: u64) -> Result<u64, CUresult> {
    with_node(node, |n| match n.work {
        Work::Child(c) => Ok(c),
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    })
}

/// Adds the edges `from[i] -> to[i]`, each between nodes of `g`; an edge already there, or one
/// from a node to itself, is `CUDA_ERROR_INVALID_VALUE` and adds nothing.
pub(crate) fn add_edges(g: u64, edges: &[(u64, u64)]) -> Result<(), CUresult> {
    with(|s| {
        let graph = s.graph(g)?;
        let fine = edges.iter().enumerate().all(|(i, e)| {
            graph.has(e.0) && graph.has(e.1) && e.0 != e.1 && !graph.edges.contains(e) && !edges[..i].contains(e)
        });
        if !fine {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        graph.edges.extend_from_slice(edges);
        Ok(())
    })
}

/// Removes the edges `from[i] -> to[i]` of `g`, each one there (once); none is removed from a
/// graph with memory nodes, as the driver documents. Nothing is removed unless all can be.
pub(crate) fn remove_edges(g: u64, edges: &[(u64, u64)]) -> Result<(), CUresult> {
    with(|s| {
        let graph = s.graphs.get(&g).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let fine = edges.iter().enumerate().all(|(i, e)| graph.edges.contains(e) && !edges[..i].contains(e));
        if !fine || exec::has_memory_nodes(&s.graphs, graph) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        s.graph(g)?.edges.retain(|e| !edges.contains(e));
        Ok(())
    })
}

/// `g`'s nodes, its root nodes (no dependency) or its edges.
pub(crate) fn nodes(g: u64) -> Result<Vec<u64>, CUresult> {
    with(|s| Ok(s.graph(g)?.nodes.iter().map(|n| n.handle).collect()))
}

pub(crate) fn roots(g: u64) -> Result<Vec<u64>, CUresult> {
    with(|s| {
        let graph = s.graph(g)?;
        Ok(graph.nodes.iter().map(|n| n.handle).filter(|&h| !graph.edges.iter().any(|&(_, to)| to == h)).collect())
    })
}

pub(crate) fn edges(g: u64) -> Result<Vec<(u64, u64)>, CUresult> {
    with(|s| Ok(s.graph(g)?.edges.clone()))
}

/// The graph holding `node`, by handle.
fn holder(s: &mut Store, node: u64) -> Result<&mut Graph, CUresult> {
    s.graphs.values_mut().find(|g| g.has(node)).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
}

/// `f` on node `node`, in whichever graph holds it.
pub(crate) fn with_node<T>(node: u64, f: impl FnOnce(&mut Node) -> Result<T, CUresult>) -> Result<T, CUresult> {
    with(|s| f(holder(s, node)?.node_mut(node).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?))
}

/// The nodes `node` depends on (`upstream`), or those that depend on it.
pub(crate) fn neighbours(node: u64, upstream: bool) -> Result<Vec<u64>, CUresult> {
    with(|s| {
        let graph = holder(s, node)?;
        let pick = |&(from, to): &(u64, u64)| match upstream {
            true => (to == node).then_some(from),
            false => (from == node).then_some(to),
        };
        Ok(graph.edges.iter().filter_map(pick).collect())
    })
}

/// Removes `node` and its edges from its graph; a child graph node's graph goes with it.
pub(crate) fn destroy_node(node: u64) -> Result<(), CUresult> {
    releasing(|s, done| {
        let graph = holder(s, node)?;
        let embedded = graph.nodes.iter().find(|n| n.handle == node).and_then(|n| match n.work {
            Work::Child(c) => Some(c),
            _ => None,
        });
        graph.nodes.retain(|n| n.handle != node);
        graph.edges.retain(|&(from, to)| from != node && to != node);
        if let Some(c) = embedded {
            remove_graph(s, c, done);
        }
        Ok(())
    })
}

/// `g` in Graphviz's language, a node a line with its type, then its edges.
pub(crate) fn dot(g: u64) -> Result<String, CUresult> {
    const NAMES: [&str; 12] = [
        "KERNEL",
        "MEMCPY",
        "MEMSET",
        "HOST",
        "GRAPH",
        "EMPTY",
        "WAIT_EVENT",
        "EVENT_RECORD",
        "EXT_SEMAS_SIGNAL",
        "EXT_SEMAS_WAIT",
        "MEM_ALLOC",
        "MEM_FREE",
    ];
    with(|s| {
        let graph = s.graph(g)?;
        let mut text = format!("digraph dot {{\n  label=\"graph_{g:#x}\";\n");
        for n in &graph.nodes {
            let (h, kind) = (n.handle, NAMES.get(n.work.node_type() as usize).copied().unwrap_or("?"));
            text += &format!("  \"node_{h:#x}\" [label=\"{kind}\\nnode_{h:#x}\"];\n");
        }
        for (from, to) in &graph.edges {
            text += &format!("  \"node_{from:#x}\" -> \"node_{to:#x}\";\n");
        }
        Ok(text + "}\n")
    })
}

/// What node `node` does, in whichever graph holds it.
pub(crate) fn work_of(node: u64) -> Result<Work, CUresult> {
    with_node(node, |n| Ok(n.work.clone()))
}

/// Node `node`'s type, in whichever graph holds it.
pub(crate) fn node_type(node: u64) -> Result<u32, CUresult> {
    with_node(node, |n| Ok(n.work.node_type()))
}

/// A copy of `g` with nodes of its own, edges mapped to them, child graphs copied too; it holds
/// references of its own to the original's user objects. A graph with memory nodes is not
/// cloned (documented): its allocations' addresses are its own.
pub(crate) fn clone(g: u64) -> Result<u64, CUresult> {
    with(|s| {
        let graph = s.graphs.get(&g).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if exec::has_memory_nodes(&s.graphs, graph) {
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
        }
        let users = s.graph(g)?.users.clone();
        let mut copy = copy_graph(s, g, None)?;
        for &(u, n) in &users {
            if let Some(user) = s.users.get_mut(&u) {
                user.refs += n;
            }
        }
        copy.users = users;
        let handle = s.handle();
        s.graphs.insert(handle, copy);
        Ok(handle)
    })
}

/// The node of graph `copy` (or of a graph embedded in it) made as a copy of `original`.
pub(crate) fn find_in_clone(original: u64, copy: u64) -> Result<u64, CUresult> {
    fn find(graphs: &HashMap<u64, Graph>, g: &Graph, original: u64) -> Option<u64> {
        g.nodes.iter().find_map(|n| match n.work {
            _ if n.extras.origin == Some(original) => Some(n.handle),
            Work::Child(c) => find(graphs, graphs.get(&c)?, original),
            _ => None,
        })
    }
    with(|s| {
        let graph = s.graphs.get(&copy).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        find(&s.graphs, graph, original).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
    })
}
