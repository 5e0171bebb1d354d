//! A libcuda that simulates GPUs and keeps virtual time offers it through the driver API's own
//! extension mechanism: `cuGetExportTable` with [`VIRTUAL_CLOCK_TABLE`] hands out a
//! [`VirtualClockTable`]. NVIDIA's driver knows no such table and refuses it, so there is no
//! virtual time on GPUs: wall time is measured. [`CudaDriver`](super::CudaDriver) asks for the
//! table once, after `cuInit`; runs on a simulator then report the wall time its timing model
//! projects, and the driver is described as simulated.

use super::Timeline;
use std::ffi::{CStr, c_char};
use std::time::Duration;

/// The UUID of the table (random bytes, peerpool's own): `"peerpool virtual clock v1"` has
/// no meaning to NVIDIA's driver.
pub const VIRTUAL_CLOCK_TABLE: [u8; 16] = *b"\x5e\x3a\x0b\x9d\x61\x4c\x4f\x2e\x9a\x17\xc2\x88\x40\x6d\xe1\x73";

/// What a driver that keeps virtual time hands out for [`VIRTUAL_CLOCK_TABLE`]: plain functions
/// of integers, each safe to call from any thread, none unwinding.
#[repr(C)]
#[derive(Debug)]
pub struct VirtualClockTable {
    /// `size_of::<VirtualClockTable>()` as the driver built it: a shorter table is not taken.
    pub size: usize,
    /// What the driver is, a static NUL-terminated text starting with `simulated`
    /// (`simulated by ...`): reports and the GPUs-required mode tell simulated GPUs by it.
    pub describe: extern "C" fn() -> *const c_char,
    /// What the timing model stands for (the machine it was calibrated on), a static
    /// NUL-terminated text.
    pub model: extern "C" fn() -> *const c_char,
    /// The calling thread's virtual time, nanoseconds.
    pub now_ns: extern "C" fn() -> u64,
    /// Puts the calling thread at a virtual time, nanoseconds.
    pub set_now_ns: extern "C" fn(u64),
    /// The projected wall time so far, nanoseconds.
    pub elapsed_ns: extern "C" fn() -> u64,
    /// The projected wall time of the whole process were it to end now, nanoseconds.
    pub wall_ns: extern "C" fn() -> u64,
}

/// `cuGetExportTable`'s signature.
type GetExportTable = unsafe extern "C" fn(*mut *const std::ffi::c_void, *const [u8; 16]) -> i32;

/// The virtual clock of a driver that keeps one, with what the driver says it is.
#[derive(Debug)]
pub(super) struct VirtualClock {
    table: &'static VirtualClockTable,
    describe: String,
    model: String,
}

impl VirtualClock {
    /// The table of `lib`, when it hands one out (asked after `cuInit`).
    pub(super) fn find(lib: &libloading::Library) -> Option<VirtualClock> {
        // SAFETY: `cuGetExportTable` is the driver API's entry point of this signature; it
        // writes one pointer to a live local. A driver that answers success for this UUID
        // hands out a `VirtualClockTable` that lives as long as the library, which `library`
        // keeps loaded for the process; its size is checked before any field is read.
        unsafe {
            let get = lib.get::<GetExportTable>(b"cuGetExportTable").ok()?;
            let mut table: *const std::ffi::c_void = std::ptr::null();
            if get(&mut table, &VIRTUAL_CLOCK_TABLE) != 0 || table.is_null() {
                return None;
            }
            if table.cast::<usize>().read() < size_of::<VirtualClockTable>() {
                return None;
            }
            let table = &*table.cast::<VirtualClockTable>();
            let text = |f: extern "C" fn() -> *const c_char| CStr::from_ptr(f()).to_string_lossy().into_owned();
            Some(VirtualClock { table, describe: text(table.describe), model: text(table.model) })
        }
    }

    /// What the driver says it is.
    pub(super) fn describe(&self) -> &str {
        &self.describe
    }
}

impl Timeline for VirtualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos((self.table.now_ns)())
    }

    fn set_now(&self, at: Duration) {
        (self.table.set_now_ns)(u64::try_from(at.as_nanos()).unwrap_or(u64::MAX))
    }

    fn elapsed(&self) -> Duration {
        Duration::from_nanos((self.table.elapsed_ns)())
    }

    fn wall(&self) -> Duration {
        Duration::from_nanos((self.table.wall_ns)())
    }

    fn describe(&self) -> String {
        self.model.clone()
    }
}
