//! CUDA graphs and stream capture on the simulator. A graph is its nodes (the work each does,
//! copied when the node is added or captured, as the driver copies node parameters) and its
//! edges; an instantiated graph is its work in an order the edges allow, child graphs flattened,
//! replayed on a stream through the same paths as the stream calls it stands for
//! (`exports/graph.rs`).
//!
//! A stream in capture records work instead of running it. Work a capturing stream is handed
//! that is not captured here is refused with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` and one
//! line, and the capture is invalidated, as the driver does for calls it forbids in capture:
//! never run at capture time.

use cudarc::driver::sys::CUresult;
use peerpool::driver::Stream;
use peerpool_sim::{PtxLaunchHow, SimDriver};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

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
    /// A copy of a graph, made when the node was added.
    Child(Graph),
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

impl Work {
    /// The node's `CUgraphNodeType`.
    pub(crate) fn node_type(&self) -> u32 {
        match self {
            Work::Kernel(_) => 0,
            Work::Memcpy { .. } => 1,
            Work::Memset { .. } => 2,
            Work::Host { .. } => 3,
            Work::Child(_) => 4,
            Work::Empty => 5,
            Work::EventWait(_) => 6,
            Work::EventRecord(_) => 7,
            Work::MemAlloc(_) => 10,
            Work::MemFree(_) => 11,
        }
    }
}

/// A graph: its nodes by handle, in the order they were added, its edges, and the references
/// it holds to user objects.
#[derive(Clone, Default)]
pub(crate) struct Graph {
    nodes: Vec<(u64, Work)>,
    edges: Vec<(u64, u64)>,
    users: Vec<(u64, u32)>,
}

impl Graph {
    fn has(&self, node: u64) -> bool {
        self.nodes.iter().any(|&(h, _)| h == node)
    }

    /// Whether it holds an allocation or free node, here or in a child graph.
    fn has_memory_nodes(&self) -> bool {
        self.nodes.iter().any(|(_, w)| match w {
            Work::MemAlloc(_) | Work::MemFree(_) => true,
            Work::Child(child) => child.has_memory_nodes(),
            _ => false,
        })
    }

    /// The work in an order the edges allow (of the ready nodes, the first added first), child
    /// graphs flattened into it; `None` for a cycle.
    fn order(&self) -> Option<Vec<Work>> {
        let index: HashMap<u64, usize> = self.nodes.iter().enumerate().map(|(i, &(h, _))| (h, i)).collect();
        let mut waiting = vec![0usize; self.nodes.len()];
        for (_, to) in &self.edges {
            waiting[index[to]] += 1;
        }
        let mut done = vec![false; self.nodes.len()];
        let mut out = Vec::new();
        for _ in 0..self.nodes.len() {
            let next = (0..self.nodes.len()).find(|&i| !done[i] && waiting[i] == 0)?;
            done[next] = true;
            let handle = self.nodes[next].0;
            for (_, to) in self.edges.iter().filter(|(from, _)| *from == handle) {
                waiting[index[to]] -= 1;
            }
            match &self.nodes[next].1 {
                Work::Child(child) => out.extend(child.order()?),
                Work::Empty => {}
                work => out.push(work.clone()),
            }
        }
        Some(out)
    }

    /// `node` and every node it depends on, directly or not.
    fn ancestors(&self, node: u64, into: &mut Vec<u64>) {
        if into.contains(&node) {
            return;
        }
        into.push(node);
        for &(from, _) in self.edges.iter().filter(|(_, to)| *to == node) {
            self.ancestors(from, into);
        }
    }
}

/// A stream's part in a capture.
struct Capture {
    id: u64,
    graph: u64,
    mode: u32,
    /// The nodes the stream's next work depends on.
    deps: Vec<u64>,
    /// Whether the capture began on this stream (others joined it through an event).
    origin: bool,
    invalid: bool,
    /// The thread that began it.
    thread: std::thread::ThreadId,
}

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

/// An instantiated graph: its work in order, the user objects it holds, the graph it was made
/// from where that holds memory nodes (one executable at a time), and whether each launch frees
/// the allocations of the one before.
struct Exec {
    work: std::sync::Arc<[Work]>,
    users: Vec<(u64, u32)>,
    memory_of: Option<u64>,
    auto_free: bool,
}

#[derive(Default)]
struct Store {
    next: u64,
    graphs: HashMap<u64, Graph>,
    execs: HashMap<u64, Exec>,
    users: HashMap<u64, User>,
    /// By stream handle.
    captures: HashMap<u64, Capture>,
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
/// How many streams are capturing: the stream paths look no further while it is zero.
static CAPTURING: AtomicUsize = AtomicUsize::new(0);

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

/// Destroys graph `g`, releasing the user objects it holds; a stream capturing into it is left
/// with an invalid capture.
pub(crate) fn destroy(g: u64) -> Result<(), CUresult> {
    releasing(|s, done| {
        let graph = s.graphs.remove(&g).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        s.release_all(&graph.users, done);
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

/// Adds `work` to `g` after `deps` (nodes of `g`); the new node's handle.
pub(crate) fn add(g: u64, deps: &[u64], work: Work) -> Result<u64, CUresult> {
    with(|s| add_in(s, g, deps, work))
}

fn add_in(s: &mut Store, g: u64, deps: &[u64], work: Work) -> Result<u64, CUresult> {
    let node = s.handle();
    let graph = s.graph(g)?;
    if !deps.iter().all(|&d| graph.has(d)) || (1..deps.len()).any(|i| deps[..i].contains(&deps[i])) {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    graph.nodes.push((node, work));
    graph.edges.extend(deps.iter().map(|&d| (d, node)));
    Ok(node)
}

/// A copy of graph `g`: what a child graph node holds.
pub(crate) fn copy_of(g: u64) -> Result<Graph, CUresult> {
    // The copy holds no user objects: the child graph keeps its own references.
    with(|s| s.graph(g).map(|g| Graph { users: Vec::new(), ..g.clone() }))
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

/// `g`'s nodes, its root nodes (no dependency) or its edges.
pub(crate) fn nodes(g: u64) -> Result<Vec<u64>, CUresult> {
    with(|s| Ok(s.graph(g)?.nodes.iter().map(|&(h, _)| h).collect()))
}

pub(crate) fn roots(g: u64) -> Result<Vec<u64>, CUresult> {
    with(|s| {
        let graph = s.graph(g)?;
        Ok(graph.nodes.iter().map(|&(h, _)| h).filter(|&h| !graph.edges.iter().any(|&(_, to)| to == h)).collect())
    })
}

pub(crate) fn edges(g: u64) -> Result<Vec<(u64, u64)>, CUresult> {
    with(|s| Ok(s.graph(g)?.edges.clone()))
}

/// The graph holding `node`, by handle.
fn holder(s: &mut Store, node: u64) -> Result<&mut Graph, CUresult> {
    s.graphs.values_mut().find(|g| g.has(node)).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
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

/// Removes `node` and its edges from its graph.
pub(crate) fn destroy_node(node: u64) -> Result<(), CUresult> {
    with(|s| {
        let graph = holder(s, node)?;
        graph.nodes.retain(|&(h, _)| h != node);
        graph.edges.retain(|&(from, to)| from != node && to != node);
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
        for (h, work) in &graph.nodes {
            let kind = NAMES.get(work.node_type() as usize).copied().unwrap_or("?");
            text += &format!("  \"node_{h:#x}\" [label=\"{kind}\\nnode_{h:#x}\"];\n");
        }
        for (from, to) in &graph.edges {
            text += &format!("  \"node_{from:#x}\" -> \"node_{to:#x}\";\n");
        }
        Ok(text + "}\n")
    })
}

/// `cuStreamUpdateCaptureDependencies`: the nodes of the capture `stream`'s next work depends
/// on, added to (`set` false) or replacing its own.
pub(crate) fn update_dependencies(stream: u64, nodes: &[u64], set: bool) -> Result<(), CUresult> {
    if !capturing(stream) {
        return Err(CUresult::CUDA_ERROR_ILLEGAL_STATE);
    }
    with(|s| {
        let c = s.captures.get(&stream).ok_or(CUresult::CUDA_ERROR_ILLEGAL_STATE)?;
        let graph = s.graphs.get(&c.graph).ok_or(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)?;
        if !nodes.iter().all(|&n| graph.has(n)) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let c = s.captures.get_mut(&stream).ok_or(CUresult::CUDA_ERROR_ILLEGAL_STATE)?;
        if set {
            c.deps.clear();
        }
        for &n in nodes {
            if !c.deps.contains(&n) {
                c.deps.push(n);
            }
        }
        Ok(())
    })
}

/// What node `node` does, in whichever graph holds it.
pub(crate) fn work_of(node: u64) -> Result<Work, CUresult> {
    with(|s| {
        let work = s.graphs.values().flat_map(|g| g.nodes.iter()).find(|&&(h, _)| h == node);
        work.map(|(_, w)| w.clone()).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
    })
}

/// Node `node`'s type, in whichever graph holds it.
pub(crate) fn node_type(node: u64) -> Result<u32, CUresult> {
    with(|s| {
        let work = s.graphs.values().flat_map(|g| g.nodes.iter()).find(|&&(h, _)| h == node);
        work.map(|(_, w)| w.node_type()).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
    })
}

/// A copy of `g` with nodes of its own, edges mapped to them.
pub(crate) fn clone(g: u64) -> Result<u64, CUresult> {
    with(|s| {
        let original = s.graph(g)?.clone();
        let renamed: HashMap<u64, u64> = original.nodes.iter().map(|&(h, _)| (h, s.handle())).collect();
        // The clone holds references of its own to the original's user objects.
        for &(u, n) in &original.users {
            if let Some(user) = s.users.get_mut(&u) {
                user.refs += n;
            }
        }
        let copy = Graph {
            nodes: original.nodes.into_iter().map(|(h, w)| (renamed[&h], w)).collect(),
            edges: original.edges.iter().map(|(a, b)| (renamed[a], renamed[b])).collect(),
            users: original.users,
        };
        let handle = s.handle();
        s.graphs.insert(handle, copy);
        Ok(handle)
    })
}

/// `g` instantiated: its work in order, kept under a handle of its own, holding references of
/// its own to the graph's user objects. A graph with memory nodes has one executable at a time.
pub(crate) fn instantiate(g: u64, auto_free: bool) -> Result<u64, CUresult> {
    with(|s| {
        let graph = s.graph(g)?;
        let work = graph.order().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let users = graph.users.clone();
        let memory_of = graph.has_memory_nodes().then_some(g);
        if memory_of.is_some() && s.execs.values().any(|e| e.memory_of == memory_of) {
            return Err(SECOND_EXECUTABLE);
        }
        for &(u, n) in &users {
            if let Some(user) = s.users.get_mut(&u) {
                user.refs += n;
            }
        }
        let exec = s.handle();
        s.execs.insert(exec, Exec { work: work.into(), users, memory_of, auto_free });
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

/// An instantiated graph's work, to replay, and whether it frees its live allocations first.
pub(crate) fn exec_work(exec: u64) -> Result<(std::sync::Arc<[Work]>, bool), CUresult> {
    with(|s| s.execs.get(&exec).map(|e| (e.work.clone(), e.auto_free)).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE))
}

/// What instantiating a graph with memory nodes a second time answers.
const SECOND_EXECUTABLE: CUresult = CUresult::CUDA_ERROR_NOT_SUPPORTED;

/// Tells the simulator whether `stream` is capturing: work reaching it on one is refused.
fn mark(sim: &SimDriver, stream: u64, capturing: bool) -> Result<(), CUresult> {
    sim.stream_set_capturing(Stream(stream), capturing).map_err(|e| e.code.to_bindings())
}

/// `CUstreamCaptureMode`: global, thread-local, relaxed.
pub(crate) const MODES: u32 = 3;
pub(crate) const GLOBAL: u32 = 0;
pub(crate) const THREAD_LOCAL: u32 = 1;
pub(crate) const RELAXED: u32 = 2;

/// The captures in progress, by the thread that began each and its mode: what the capture
/// rules decide by (`capture_rules.rs`).
pub(crate) fn origins() -> Vec<(std::thread::ThreadId, u32)> {
    with(|s| s.captures.values().filter(|c| c.origin).map(|c| (c.thread, c.mode)).collect())
}

/// Begins a capture on `stream` (not a null stream) into a new graph.
pub(crate) fn begin(sim: &SimDriver, stream: u64, mode: u32) -> Result<(), CUresult> {
    if stream <= 2 {
        return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
    if mode >= MODES {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    with(|s| {
        if s.captures.contains_key(&stream) {
            return Err(CUresult::CUDA_ERROR_ILLEGAL_STATE);
        }
        mark(sim, stream, true)?;
        let graph = s.handle();
        s.graphs.insert(graph, Graph::default());
        let id = s.handle();
        let thread = std::thread::current().id();
        s.captures.insert(stream, Capture { id, graph, mode, deps: Vec::new(), origin: true, invalid: false, thread });
        CAPTURING.fetch_add(1, Ordering::SeqCst);
        Ok(())
    })
}

/// Ends the capture that began on `stream`: its graph, or the capture's error (invalidated, or
/// a stream that joined it and was not joined back: both end the capture).
pub(crate) fn end(sim: &SimDriver, stream: u64) -> Result<u64, CUresult> {
    with(|s| {
        let capture = s.captures.get(&stream).ok_or(CUresult::CUDA_ERROR_ILLEGAL_STATE)?;
        if !capture.origin {
            return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
        }
        if capture.mode != RELAXED && capture.thread != std::thread::current().id() {
            return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
        }
        let (id, graph, invalid) = (capture.id, capture.graph, capture.invalid);
        // Every node another stream of the capture would still add after must be one the
        // origin's next work depends on already.
        let mut joined = Vec::new();
        if let Some(g) = s.graphs.get(&graph) {
            for &d in &capture.deps {
                g.ancestors(d, &mut joined);
            }
        }
        let unjoined =
            s.captures.values().any(|c| c.id == id && !c.origin && !c.deps.iter().all(|d| joined.contains(d)));
        let members: Vec<u64> = s.captures.iter().filter(|(_, c)| c.id == id).map(|(&k, _)| k).collect();
        for m in members {
            s.captures.remove(&m);
            CAPTURING.fetch_sub(1, Ordering::SeqCst);
            // A stream destroyed while it captured is gone from the simulator already.
            let _ = mark(sim, m, false);
        }
        s.events.retain(|_, (capture, _)| *capture != id);
        let failed = match (invalid, unjoined) {
            (true, _) => Some(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
            (_, true) => Some(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNJOINED),
            _ => None,
        };
        match failed {
            Some(code) => {
                s.graphs.remove(&graph);
                Err(code)
            }
            None => {
                s.graphs.contains_key(&graph).then_some(graph).ok_or(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
            }
        }
    })
}

/// What `cuStreamGetCaptureInfo` reports of `stream`: `None` when it is not capturing, else
/// whether the capture is still valid, its id, graph and the stream's dependencies.
pub(crate) fn info(stream: u64) -> Option<(bool, u64, u64, Vec<u64>)> {
    if CAPTURING.load(Ordering::SeqCst) == 0 {
        return None;
    }
    with(|s| s.captures.get(&stream).map(|c| (!c.invalid, c.id, c.graph, c.deps.clone())))
}

/// Whether any stream is capturing.
#[inline]
pub(crate) fn any_capturing() -> bool {
    CAPTURING.load(Ordering::Relaxed) != 0
}

/// Whether `stream` is capturing (a fast answer while no stream is).
pub(crate) fn capturing(stream: u64) -> bool {
    CAPTURING.load(Ordering::SeqCst) != 0 && with(|s| s.captures.contains_key(&stream))
}

/// Where `stream` is capturing, `work` becomes a node after its dependencies and the answer is
/// `Some`: success, or the capture's error once invalidated. `None`: not capturing, run it.
pub(crate) fn capture(stream: u64, work: impl FnOnce() -> Result<Work, CUresult>) -> Option<Result<(), CUresult>> {
    if !capturing(stream) {
        return None;
    }
    let work = match work() {
        Ok(work) => work,
        Err(code) => return Some(Err(code)),
    };
    Some(with(|s| {
        let c = s.captures.get(&stream).ok_or(CUresult::CUDA_ERROR_ILLEGAL_STATE)?;
        if c.invalid {
            return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        }
        let (graph, deps) = (c.graph, c.deps.clone());
        let node = add_in(s, graph, &deps, work).map_err(|_| CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)?;
        if let Some(c) = s.captures.get_mut(&stream) {
            c.deps = vec![node];
        }
        Ok(())
    }))
}

/// `stream`'s capture, if any, invalidated: a call the driver forbids in capture was made on it.
pub(crate) fn invalidate(stream: u64) -> bool {
    capturing(stream)
        && with(|s| {
            let Some(id) = s.captures.get(&stream).map(|c| c.id) else { return false };
            s.captures.values_mut().filter(|c| c.id == id).for_each(|c| c.invalid = true);
            true
        })
}

/// `cuEventRecord` on a capturing stream: the event stands for the stream's dependencies, for
/// other streams to wait on. `None`: not capturing.
pub(crate) fn record(event: u64, stream: u64) -> Option<Result<(), CUresult>> {
    if !capturing(stream) {
        return None;
    }
    Some(with(|s| {
        let c = s.captures.get(&stream).ok_or(CUresult::CUDA_ERROR_ILLEGAL_STATE)?;
        if c.invalid {
            return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        }
        let (id, deps) = (c.id, c.deps.clone());
        s.events.insert(event, (id, deps));
        Ok(())
    }))
}

/// `cuStreamWaitEvent` on an event recorded in a capture: `stream` joins that capture (or, in
/// it already, adds the event's dependencies). `None`: the event was not recorded in a capture.
pub(crate) fn wait(sim: &SimDriver, stream: u64, event: u64) -> Option<Result<(), CUresult>> {
    if CAPTURING.load(Ordering::SeqCst) == 0 {
        return None;
    }
    with(|s| {
        let (id, deps) = s.events.get(&event).cloned()?;
        if stream <= 2 {
            return Some(Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT));
        }
        let (graph, mode) = s.captures.values().find(|c| c.id == id).map(|c| (c.graph, c.mode))?;
        Some(match s.captures.get_mut(&stream) {
            Some(c) if c.id != id => Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_ISOLATION),
            Some(c) => {
                let new: Vec<u64> = deps.iter().copied().filter(|d| !c.deps.contains(d)).collect();
                c.deps.extend(new);
                Ok(())
            }
            None => {
                if let Err(e) = mark(sim, stream, true) {
                    return Some(Err(e));
                }
                let thread = s.captures.values().find(|c| c.id == id).map_or(std::thread::current().id(), |c| c.thread);
                s.captures.insert(stream, Capture { id, graph, mode, deps, origin: false, invalid: false, thread });
                CAPTURING.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
    })
}
