//! Per-thread state keyed by the calling thread: the context stacks and the clock's lanes are
//! read on every call, so the key is cached per thread and hashed cheaply (a thread's id is a
//! counter the process hands out, not input anyone chooses).

use rustc_hash::FxHashMap;
use std::thread::ThreadId;

/// A map from a thread to its state.
pub(crate) type PerThread<V> = FxHashMap<ThreadId, V>;

/// The calling thread's id.
pub(crate) fn current() -> ThreadId {
    thread_local! {
        static ID: ThreadId = std::thread::current().id();
    }
    ID.with(|id| *id)
}
