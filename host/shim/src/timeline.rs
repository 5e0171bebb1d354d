//! The simulator's virtual time, for programs on the shim that ask for it: peerpool's
//! `CudaDriver` looks these symbols up when it loads a libcuda, so peerpool's suites and
//! `peerpool check` print the wall time the timing model projects when they run on the shim.
//! They are no CUDA entry points; NVIDIA's libcuda has none of them. With the real backend
//! (forwarding) there is no virtual time: [`peerpool_shim_timed`] says 0 and the rest do nothing.

use crate::runtime;
use peerpool::driver::Timeline;
use std::os::raw::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

/// The simulator's timeline, once `cuInit` made the simulator.
fn timeline() -> Option<&'static dyn Timeline> {
    runtime::get().map(|r| &r.sim as &dyn Timeline)
}

/// Runs `f` on the timeline, no panic crossing into C; `fallback` without one.
fn with<T>(fallback: T, f: impl FnOnce(&dyn Timeline) -> T) -> T {
    match timeline() {
        Some(t) => catch_unwind(AssertUnwindSafe(|| f(t))).unwrap_or(fallback),
        None => fallback,
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// 1 when the simulator answers and keeps virtual time (after `cuInit`), else 0.
#[unsafe(no_mangle)]
pub extern "C" fn peerpool_shim_timed() -> c_int {
    c_int::from(timeline().is_some())
}

/// The calling thread's virtual time, nanoseconds.
#[unsafe(no_mangle)]
pub extern "C" fn peerpool_shim_time_now_ns() -> u64 {
    with(0, |t| nanos(t.now()))
}

/// Puts the calling thread at virtual time `at` nanoseconds.
#[unsafe(no_mangle)]
pub extern "C" fn peerpool_shim_time_set_ns(at: u64) {
    with((), |t| t.set_now(Duration::from_nanos(at)))
}

/// The projected wall time so far, nanoseconds.
#[unsafe(no_mangle)]
pub extern "C" fn peerpool_shim_time_elapsed_ns() -> u64 {
    with(0, |t| nanos(t.elapsed()))
}

/// The projected wall time of the whole process were it to end now (its exit included).
#[unsafe(no_mangle)]
pub extern "C" fn peerpool_shim_time_wall_ns() -> u64 {
    with(0, |t| nanos(t.wall()))
}
