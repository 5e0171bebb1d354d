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
        // keeps loaded for the process.
        unsafe {
            let get = lib.get::<GetExportTable>(b"cuGetExportTable").ok()?;
            let mut table: *const std::ffi::c_void = std::ptr::null();
            if get(&mut table, &VIRTUAL_CLOCK_TABLE) != 0 {
                return None;
            }
            Self::from_table(table)
        }
    }

    /// The clock of a table a driver handed out, unless it is null, shorter than a
    /// `VirtualClockTable`, missing a function or a text.
    ///
    /// # Safety
    /// `table` is null, or points to a readable word holding the table's size in bytes, and to
    /// that many readable bytes, alive for the rest of the process; each function slot that is
    /// not null is a function of its field's signature.
    unsafe fn from_table(table: *const std::ffi::c_void) -> Option<VirtualClock> {
        // The six functions after `size`, each a pointer-sized slot.
        const FUNCTIONS: usize = 6;
        const _: () = assert!(size_of::<VirtualClockTable>() == (1 + FUNCTIONS) * size_of::<usize>());
        if table.is_null() {
            return None;
        }
        // SAFETY: by the contract, the size word is readable, and the slots are once the size
        // is found large enough. They are read as plain words and found non-null before the
        // table is taken as a `VirtualClockTable`, whose `fn` fields may not be null; a null
        // text is not read.
        unsafe {
            let words = table.cast::<usize>();
            if words.read() < size_of::<VirtualClockTable>() || (1..=FUNCTIONS).any(|i| words.add(i).read() == 0) {
                return None;
            }
            let table = &*table.cast::<VirtualClockTable>();
            let text = |f: extern "C" fn() -> *const c_char| {
                let p = f();
                (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
            };
            Some(VirtualClock { table, describe: text(table.describe)?, model: text(table.model)? })
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

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn zero() -> u64 {
        0
    }
    extern "C" fn set(_: u64) {}
    extern "C" fn named() -> *const c_char {
        c"simulated by a test".as_ptr()
    }
    extern "C" fn unnamed() -> *const c_char {
        std::ptr::null()
    }

    /// A function's address, as a table's word.
    fn word(f: *const ()) -> usize {
        f as usize
    }

    /// A table's words: its size, then `describe`, `model` and the four clock functions.
    fn table(size: usize, describe: usize) -> &'static [usize; 7] {
        let (named, zero, set) = (word(named as *const ()), word(zero as *const ()), word(set as *const ()));
        Box::leak(Box::new([size, describe, named, zero, set, zero, zero]))
    }

    #[test]
    fn a_table_short_or_with_a_null_function_or_text_is_not_taken() {
        let take = |words: &'static [usize; 7]| {
            // SAFETY: seven live words, each function slot null or a function of its signature.
            unsafe { VirtualClock::from_table(words.as_ptr().cast()) }.map(|c| c.describe)
        };
        let size = size_of::<VirtualClockTable>();
        assert_eq!(take(table(size, word(named as *const ()))).as_deref(), Some("simulated by a test"));
        assert!(take(table(size - 8, word(named as *const ()))).is_none(), "too short");
        assert!(take(table(size, 0)).is_none(), "a null function");
        assert!(take(table(size, word(unnamed as *const ()))).is_none(), "a null text");
        // SAFETY: null is allowed.
        assert!(unsafe { VirtualClock::from_table(std::ptr::null()) }.is_none());
    }
}
