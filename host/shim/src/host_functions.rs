//! Host functions (`cuLaunchHostFunc`, `cuStreamAddCallback`) as NVIDIA's driver runs them: on
//! a thread of the driver's, one per stream, in the order they were enqueued there, after the
//! call that enqueued them has returned; so a host function may wait for its enqueuer. Driver
//! calls made from one answer `CUDA_ERROR_NOT_PERMITTED`, as CUDA documents and an H100
//! answered.
//!
//! The simulator runs every other piece of work when it is queued, so stream order is kept by
//! waiting: a call that queues work or synchronises first waits until every pending host
//! function has run (for any stream: a host function on one stream holds back work queued on
//! another, where a GPU would run both; a host function that waits for work of another stream
//! queued after it would wait for ever here). Queries (`cuStreamQuery`, `cuEventQuery`) do not
//! wait: they answer `CUDA_ERROR_NOT_READY` while a host function is pending.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Condvar, Mutex};

/// A host function and what it is called with. The pointer is the program's: CUDA hands it to
/// the driver's thread, and the program promises it is valid there.
pub(crate) struct Job(Box<dyn FnOnce() + 'static>);

// SAFETY: the closure holds the program's function pointer and its argument, which CUDA's
// contract lets the driver call from a thread of its own.
unsafe impl Send for Job {}

impl Job {
    /// # Safety
    /// `run` may be called on another thread: what it holds is valid there until it runs.
    pub(crate) unsafe fn new(run: impl FnOnce() + 'static) -> Job {
        Job(Box::new(run))
    }
}

/// Each stream's worker, by the stream's handle.
static WORKERS: Mutex<Option<HashMap<u64, Sender<Job>>>> = Mutex::new(None);
/// Host functions enqueued and not yet returned, with a condition variable that their end
/// signals.
static PENDING: AtomicUsize = AtomicUsize::new(0);
static DONE: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());

std::thread_local! {
    /// Whether this thread is running a host function.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `job` after every host function enqueued on `stream` before it, on the stream's thread.
pub(crate) fn enqueue(stream: u64, job: Job) {
    PENDING.fetch_add(1, Ordering::SeqCst);
    let mut workers = WORKERS.lock().unwrap_or_else(|e| e.into_inner());
    let worker = workers.get_or_insert_with(HashMap::new).entry(stream).or_insert_with(|| {
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name(format!("peerpool-host-fn-{stream:x}"))
            .spawn(move || {
                INSIDE.set(true);
                for job in rx {
                    (job.0)();
                    PENDING.fetch_sub(1, Ordering::SeqCst);
                    let _guard = DONE.0.lock().unwrap_or_else(|e| e.into_inner());
                    DONE.1.notify_all();
                }
            })
            .expect("a thread for the stream's host functions");
        tx
    });
    // The worker lives as long as the process: a send cannot fail.
    let _ = worker.send(job);
}

/// Whether a host function is enqueued and has not returned.
#[inline]
pub(crate) fn pending() -> bool {
    PENDING.load(Ordering::SeqCst) != 0
}

/// Whether the calling thread is a host function's (whose driver calls are not permitted).
#[inline]
pub(crate) fn inside() -> bool {
    INSIDE.get()
}

/// Waits until every enqueued host function has returned (not from inside one).
pub(crate) fn drain() {
    let mut guard = DONE.0.lock().unwrap_or_else(|e| e.into_inner());
    while pending() {
        guard = DONE.1.wait(guard).unwrap_or_else(|e| e.into_inner());
    }
}

/// Whether the entry point `name` (documented name) queues work or synchronises, and so waits
/// for the host functions before it.
pub(crate) fn waits(name: &str) -> bool {
    name != "cuLaunchHostFunc"
        && (name.contains("Async")
            || name.starts_with("cuLaunch")
            || name.contains("Synchronize")
            || name.starts_with("cuMemcpy")
            || name.starts_with("cuMemset")
            || name.starts_with("cuMemFree")
            || matches!(
                name,
                "cuEventRecord"
                    | "cuEventRecordWithFlags"
                    | "cuStreamWaitEvent"
                    | "cuStreamDestroy"
                    | "cuCtxDestroy"
                    | "cuDevicePrimaryCtxRelease"
                    | "cuDevicePrimaryCtxReset"
                    | "cuModuleUnload"
                    | "cuLibraryUnload"
            ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn a_host_function_runs_on_its_streams_thread_after_its_enqueuer_returns() {
        let (released, ran, order) =
            (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(Vec::new())));
        let enqueuer = std::thread::current().id();
        let (r, a, o) = (released.clone(), ran.clone(), order.clone());
        // SAFETY: the closure holds only what it owns.
        enqueue(0x77, unsafe {
            Job::new(move || {
                assert_ne!(std::thread::current().id(), enqueuer);
                assert!(inside());
                while !r.load(Ordering::SeqCst) {
                    std::thread::yield_now();
                }
                o.lock().unwrap().push(1);
                a.store(true, Ordering::SeqCst);
            })
        });
        let o = order.clone();
        // SAFETY: as above.
        enqueue(0x77, unsafe { Job::new(move || o.lock().unwrap().push(2)) });
        assert!(pending() && !inside());
        released.store(true, Ordering::SeqCst);
        drain();
        assert!(ran.load(Ordering::SeqCst));
        assert_eq!(*order.lock().unwrap(), [1, 2], "in the order enqueued");
        assert!(!pending());
    }

    proptest::proptest! {
        /// Any interleaving of host functions enqueued on a few streams runs every one, each
        /// stream's in the order enqueued, none on the enqueuing thread.
        #[test]
        fn each_streams_host_functions_run_in_order(streams in proptest::collection::vec(0u64..4, 1..64)) {
            let ran = Arc::new(Mutex::new(Vec::new()));
            let enqueuer = std::thread::current().id();
            for (i, &s) in streams.iter().enumerate() {
                let ran = ran.clone();
                // SAFETY: the closure holds only what it owns.
                enqueue(0x1000 + s, unsafe {
                    Job::new(move || {
                        assert_ne!(std::thread::current().id(), enqueuer);
                        ran.lock().unwrap().push((s, i));
                    })
                });
            }
            drain();
            let ran = ran.lock().unwrap().clone();
            proptest::prop_assert_eq!(ran.len(), streams.len());
            for s in 0..4 {
                let order: Vec<usize> = ran.iter().filter(|r| r.0 == s).map(|r| r.1).collect();
                proptest::prop_assert!(order.is_sorted(), "stream {} ran {:?}", s, order);
            }
        }
    }

    #[test]
    fn work_and_synchronisation_wait_and_queries_do_not() {
        for name in [
            "cuMemcpyAsync",
            "cuLaunchKernel",
            "cuStreamSynchronize",
            "cuMemFreeAsync",
            "cuEventRecord",
            "cuMemcpyHtoD",
        ] {
            assert!(waits(name), "{name}");
        }
        for name in ["cuLaunchHostFunc", "cuStreamQuery", "cuEventQuery", "cuDeviceGetCount", "cuCtxGetCurrent"] {
            assert!(!waits(name), "{name}");
        }
    }
}
