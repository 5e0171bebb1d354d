//! Stream capture: a stream in capture records work as nodes of the capture's graph instead of
//! running it. Work a capturing stream is handed that is not captured here is refused with
//! `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` and one line, and the capture is invalidated, as
//! the driver does for calls it forbids in capture: never run at capture time.

use super::{Extras, Graph, Store, Work, add_in, with};
use cudarc::driver::sys::CUresult;
use peerpool::driver::Stream;
use peerpool_sim::SimDriver;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A stream's part in a capture.
pub(super) struct Capture {
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
    /// Whether the capture made its graph (else the caller's: `cuStreamBeginCaptureToGraph`).
    owned: bool,
}

/// How many streams are capturing: the stream paths look no further while it is zero.
static CAPTURING: AtomicUsize = AtomicUsize::new(0);

/// Tells the simulator whether `stream` is capturing: work reaching it on one is refused.
fn mark(sim: &SimDriver, stream: u64, capturing: bool) -> Result<(), CUresult> {
    sim.stream_set_capturing(Stream(stream), capturing).map_err(|e| e.code.to_bindings())
}

/// `CUstreamCaptureMode`: global, thread-local, relaxed.
pub(crate) const MODES: u32 = 3;
pub(crate) const GLOBAL: u32 = 0;
pub(crate) const THREAD_LOCAL: u32 = 1;
pub(crate) const RELAXED: u32 = 2;

/// The captures in progress, by the stream each began on, the thread that began it and its
/// mode: what the capture rules decide by (`capture_rules.rs`).
pub(crate) fn origins() -> Vec<(u64, std::thread::ThreadId, u32)> {
    with(|s| s.captures.iter().filter(|(_, c)| c.origin).map(|(&stream, c)| (stream, c.thread, c.mode)).collect())
}

/// Begins a capture on `stream` (not a null stream) into a new graph.
pub(crate) fn begin(sim: &SimDriver, stream: u64, mode: u32) -> Result<(), CUresult> {
    begin_into(sim, stream, None, &[], mode)
}

/// Begins a capture on `stream` into `into` (the caller's graph, the captured work after its
/// nodes `deps`: `cuStreamBeginCaptureToGraph`), or a new graph for `None`.
pub(crate) fn begin_into(
    sim: &SimDriver,
    stream: u64,
    into: Option<u64>,
    deps: &[u64],
    mode: u32,
) -> Result<(), CUresult> {
    if stream <= 2 {
        return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
    if mode >= MODES {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    with(|s| {
        if let Some(g) = into {
            let graph = s.graphs.get(&g).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
            if !deps.iter().all(|&d| graph.has(d)) {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
        }
        if s.captures.contains_key(&stream) {
            return Err(CUresult::CUDA_ERROR_ILLEGAL_STATE);
        }
        mark(sim, stream, true)?;
        let graph = into.unwrap_or_else(|| {
            let g = s.handle();
            s.graphs.insert(g, Graph::default());
            g
        });
        let id = s.handle();
        let thread = std::thread::current().id();
        let (deps, owned) = (deps.to_vec(), into.is_none());
        s.captures.insert(stream, Capture { id, graph, mode, deps, origin: true, invalid: false, thread, owned });
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
        let (id, graph, invalid, owned) = (capture.id, capture.graph, capture.invalid, capture.owned);
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
                // A captured graph holds no child graph and no user object: nothing else goes.
                // The caller's graph stays the caller's.
                if owned {
                    s.graphs.remove(&graph);
                }
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
        let node = add_in(s, graph, &deps, work, Extras::default())
            .map_err(|_| CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)?;
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
    with(|s: &mut Store| {
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
                s.captures.insert(
                    stream,
                    Capture { id, graph, mode, deps, origin: false, invalid: false, thread, owned: false },
                );
                CAPTURING.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
    })
}
