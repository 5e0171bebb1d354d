//! The simulator's virtual time, for programs on the shim that ask for it through
//! `cuGetExportTable` ([`peerpool::driver::virtual_clock`]): peerpool's `CudaDriver` does, so
//! peerpool's suites and `peerpool check` print the wall time the timing model projects when they
//! run on the shim. With the real backend (forwarding) NVIDIA's driver is asked, which has no
//! such table: there is no virtual time.

use crate::runtime;
use peerpool::driver::Timeline;
use peerpool::driver::virtual_clock::VirtualClockTable;
use std::ffi::{CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::time::Duration;

/// The table handed out once `cuInit` made the simulator.
pub(crate) fn table() -> Option<&'static VirtualClockTable> {
    static TABLE: VirtualClockTable = VirtualClockTable {
        size: size_of::<VirtualClockTable>(),
        describe,
        model,
        now_ns,
        set_now_ns,
        elapsed_ns,
        wall_ns,
    };
    timeline().map(|_| &TABLE)
}

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

extern "C" fn describe() -> *const c_char {
    c"simulated by peerpool's libcuda shim".as_ptr()
}

/// The timing model's machine, made once (the simulator's model does not change in a process).
extern "C" fn model() -> *const c_char {
    static MODEL: OnceLock<CString> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let text = with(String::new(), |t| t.describe()).replace('\0', " ");
            CString::new(text).unwrap_or_default()
        })
        .as_ptr()
}

extern "C" fn now_ns() -> u64 {
    with(0, |t| nanos(t.now()))
}

extern "C" fn set_now_ns(at: u64) {
    with((), |t| t.set_now(Duration::from_nanos(at)))
}

extern "C" fn elapsed_ns() -> u64 {
    with(0, |t| nanos(t.elapsed()))
}

extern "C" fn wall_ns() -> u64 {
    with(0, |t| nanos(t.wall()))
}
