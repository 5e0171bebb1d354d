//! The virtual time peerpool's libcuda shim keeps, read through the functions it exports beside
//! the CUDA API, so that runs through the shim can report the projected wall time.

use crate::driver::Timeline;

/// The virtual time the libcuda shim keeps (`peerpool-shim`'s `timeline.rs`), through the
/// functions it exports beside the CUDA API.
#[derive(Debug)]
pub(super) struct ShimTime {
    now: unsafe extern "C" fn() -> u64,
    set: unsafe extern "C" fn(u64),
    elapsed: unsafe extern "C" fn() -> u64,
    wall: unsafe extern "C" fn() -> u64,
}

impl ShimTime {
    /// The shim's functions, when `lib` has them and its simulator keeps time (called after
    /// `cuInit`, which makes the simulator).
    pub(super) fn find(lib: &libloading::Library) -> Option<ShimTime> {
        // SAFETY: each symbol, when present, is the shim's function of exactly this signature
        // (`host/shim/src/timeline.rs`); the library stays loaded for the process (`library` keeps
        // it in a static), so the pointers stay valid. `peerpool_shim_timed` only reads.
        unsafe {
            let timed = lib.get::<unsafe extern "C" fn() -> std::ffi::c_int>(b"peerpool_shim_timed").ok()?;
            if timed() != 1 {
                return None;
            }
            Some(ShimTime {
                now: *lib.get(b"peerpool_shim_time_now_ns").ok()?,
                set: *lib.get(b"peerpool_shim_time_set_ns").ok()?,
                elapsed: *lib.get(b"peerpool_shim_time_elapsed_ns").ok()?,
                wall: *lib.get(b"peerpool_shim_time_wall_ns").ok()?,
            })
        }
    }
}

// SAFETY (every `unsafe` block of this impl): the shim's functions found by `ShimTime::find`,
// which take and return plain integers and never unwind into Rust.
impl Timeline for ShimTime {
    fn now(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(unsafe { (self.now)() })
    }

    fn set_now(&self, at: std::time::Duration) {
        unsafe { (self.set)(u64::try_from(at.as_nanos()).unwrap_or(u64::MAX)) }
    }

    fn elapsed(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(unsafe { (self.elapsed)() })
    }

    fn wall(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(unsafe { (self.wall)() })
    }

    fn describe(&self) -> String {
        "the libcuda shim's simulator".into()
    }
}
