//! The JIT options a caller hands `cuModuleLoadDataEx`, `cuLibraryLoadData` and `cuLinkCreate`
//! that the simulator answers: the error and info logs (`CU_JIT_ERROR_LOG_BUFFER`,
//! `CU_JIT_INFO_LOG_BUFFER`, with their sizes). The rest (verbosity, optimisation levels,
//! targets, caches) change nothing a simulator compiles and are passed over.
//!
//! A log is written as the driver writes it: NUL-terminated within its buffer, and the size
//! option's value in the caller's array replaced by the log's length, or by the buffer's size
//! where the log was cut to fit (`docs/hardware/2026-12-07-modules-h100`).

use cudarc::driver::sys::CUjit_option;
use peerpool_sim::jit::JitLog;
use std::ffi::{c_char, c_uint, c_void};

/// One log's buffer: where it is, how large, and the slot of the caller's values that holds its
/// size (written back).
#[derive(Clone, Copy, Default)]
struct Buffer {
    at: usize,
    size: usize,
    size_slot: usize,
}

/// The options read from a caller's arrays. Addresses are kept as integers: the caller
/// promised they stay valid until the call that writes them (`cuLinkComplete` for a link).
#[derive(Clone, Copy, Default)]
pub(crate) struct JitOptions {
    error: Buffer,
    info: Buffer,
}

impl JitOptions {
    /// Reads `count` options and their values.
    ///
    /// # Safety
    /// Where `count` is not 0, `options` and `values` hold `count` entries each, as the CUDA
    /// driver API documents; a log buffer is valid for writes of its size, and the arrays and
    /// buffers stay valid until [`JitOptions::write`].
    pub(crate) unsafe fn read(count: c_uint, options: *const CUjit_option, values: *mut *mut c_void) -> JitOptions {
        let mut read = JitOptions::default();
        if count == 0 || options.is_null() || values.is_null() {
            return read;
        }
        for i in 0..count as usize {
            // SAFETY: the caller's: both arrays hold `count` entries. An option is read as its
            // integer: a C caller may pass any value.
            let (option, slot) = unsafe { (options.add(i).cast::<c_uint>().read(), values.add(i)) };
            // SAFETY: as above.
            let value = unsafe { slot.read() } as usize;
            match option {
                o if o == CUjit_option::CU_JIT_ERROR_LOG_BUFFER as c_uint => read.error.at = value,
                o if o == CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES as c_uint => {
                    (read.error.size, read.error.size_slot) = (value & 0xffff_ffff, slot as usize)
                }
                o if o == CUjit_option::CU_JIT_INFO_LOG_BUFFER as c_uint => read.info.at = value,
                o if o == CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES as c_uint => {
                    (read.info.size, read.info.size_slot) = (value & 0xffff_ffff, slot as usize)
                }
                _ => {}
            }
        }
        read
    }

    /// Writes `log` into the caller's buffers and the bytes written into their size options.
    ///
    /// # Safety
    /// The promise [`JitOptions::read`] was given still holds.
    pub(crate) unsafe fn write(&self, log: &JitLog) {
        // SAFETY: the caller's.
        unsafe {
            write_one(self.error, &log.error);
            write_one(self.info, &log.info);
        }
    }
}

/// # Safety
/// `buffer` is as [`JitOptions::read`] found it, still valid.
unsafe fn write_one(buffer: Buffer, text: &str) {
    if buffer.at == 0 || buffer.size == 0 {
        return;
    }
    let bytes = &text.as_bytes()[..text.len().min(buffer.size - 1)];
    // SAFETY: the caller's: the buffer holds `size` bytes, of which this writes at most all.
    unsafe {
        let at = buffer.at as *mut c_char;
        std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), at, bytes.len());
        at.add(bytes.len()).write(0);
        if buffer.size_slot != 0 {
            (buffer.size_slot as *mut *mut c_void).write(text.len().min(buffer.size) as *mut c_void);
        }
    }
}
