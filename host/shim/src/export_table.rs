//! `cuGetExportTable`: the driver's private interfaces, each a table of function pointers named
//! by a UUID, which the CUDA runtime (libcudart, static or shared) asks for at start-up.
//!
//! The simulator serves none of NVIDIA's. One of the tables the runtime requires authenticates the
//! driver: the runtime calls it with its version and the time, and refuses to start
//! (`cudaErrorSoftwareValidityNotEstablished`) unless the answer is the keyed value that only
//! NVIDIA's driver computes. peerpool does not impersonate NVIDIA's driver, so programs on the
//! CUDA runtime cannot run on the simulated GPUs; every request is answered
//! `CUDA_ERROR_NOT_SUPPORTED` with one line on stderr that says so. Programs on the driver API
//! (cudarc, cuda.core, C with `-lcuda`) are served.
//!
//! It serves one of its own: the virtual clock ([`peerpool::driver::virtual_clock`]).
//!
//! Forwarding to NVIDIA's libcuda, the real tables pass through untouched: the runtime's
//! authentication covers the tables' addresses, so a copy of one (to trace its slots) makes the
//! runtime refuse NVIDIA's own driver.

use crate::boundary;
use cudarc::driver::sys::{CUresult, CUuuid};
use peerpool::driver::virtual_clock::{VIRTUAL_CLOCK_TABLE, VirtualClockTable};
use std::ffi::c_void;

/// The tables the CUDA runtime asks for, by UUID, named for what they were seen to hold.
const KNOWN: [(&str, [u8; 16]); 10] = [
    ("runtime-start", *b"\xf8\xcf\xf9\x51\x21\x46\x8b\x4e\xb9\xe2\xfb\x46\x9e\x7c\x0d\xd9"),
    ("runtime-interface", *b"\x6b\xd5\xfb\x6c\x5b\xf4\xe7\x4a\x89\x87\xd9\x39\x12\xfd\x9d\xf9"),
    ("tools-tls", *b"\x42\xd8\x5a\x81\x23\xf6\xcb\x47\x82\x98\xf6\xe7\x8a\x3a\xec\xdc"),
    ("tools-callback-hooks", *b"\xa0\x94\x79\x8c\x2e\x74\x2e\x74\x93\xf2\x08\x00\x20\x0c\x0a\x66"),
    ("context-local-storage", *b"\xc6\x93\x33\x6e\x11\x21\xdf\x11\xa8\xc3\x68\xf3\x55\xd8\x95\x93"),
    ("context-create", *b"\x0c\xa5\x0b\x8c\x10\x04\x92\x9a\x89\xa7\xd0\xdf\x10\xe7\x72\x86"),
    ("heap", *b"\x19\x5b\xcb\xf4\xd6\x7d\x02\x4a\xac\xc5\x1d\x29\xce\xa6\x31\xae"),
    ("device-extended", *b"\xb1\x05\x41\xe1\xf7\xc7\xc7\x4a\x9f\x64\xf2\x23\xbe\x99\xf1\xe2"),
    ("driver-authentication", *b"\xd4\x08\x20\x55\xbd\xe6\x70\x4b\x8d\x34\xba\x12\x3c\x66\xe1\xf2"),
    ("context-checks", *b"\x26\x3e\x88\x60\x7c\xd2\x61\x43\x92\xf6\xbb\xd5\x00\x6d\xfa\x7e"),
];

/// A UUID as 32 hex digits, with the table's name where it is known.
fn named(uuid: &[u8; 16]) -> String {
    let hex: String = uuid.iter().map(|b| format!("{b:02x}")).collect();
    match KNOWN.iter().find(|k| k.1 == *uuid) {
        Some((name, _)) => format!("{hex}({name})"),
        None if *uuid == VIRTUAL_CLOCK_TABLE => format!("{hex}(peerpool-virtual-clock)"),
        None => hex,
    }
}

/// What the simulator says, once, to a program that asks for a table the CUDA runtime asks for.
const REFUSAL: &str = "is a private interface of NVIDIA's driver that the simulator does not serve: NVIDIA's CUDA \
    runtime (libcudart) authenticates the driver through one of them, so it cannot run on simulated GPUs. Link the \
    runtime shared (nvcc -cudart shared; CMake: CMAKE_CUDA_RUNTIME_LIBRARY=Shared) and run the program under \
    `peerpool sim`, which gives it peerpool's runtime, or run it through `peerpool sim --real` on GPUs. \
    cuGetExportTable answers CUDA_ERROR_NOT_SUPPORTED";

/// What it says to a library that asks for another table (NVRTC asks for one and goes on).
const OTHER: &str = "is a private interface of NVIDIA's driver that the simulator does not serve; a library that \
    can do without it (NVRTC does) goes on. cuGetExportTable answers CUDA_ERROR_NOT_SUPPORTED";

/// # Safety
/// `table` is valid for a write of a pointer and a non-null `id` for a read of a UUID.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetExportTable(table: *mut *const c_void, id: *const CUuuid) -> CUresult {
    // SAFETY: the caller's.
    let uuid = (!id.is_null()).then(|| unsafe { id.read() }.bytes.map(|b| b as u8));
    if let Some(real) = crate::backend::real() {
        // SAFETY: the caller's pointers, passed on.
        return unsafe { forward(real, table, id, uuid) };
    }
    boundary::enter(
        "cuGetExportTable",
        || format!("id={}", uuid.as_ref().map_or("null".into(), named)),
        || {
            let uuid = uuid.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
            if table.is_null() {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            if uuid == VIRTUAL_CLOCK_TABLE {
                let clock = crate::timeline::table().ok_or(CUresult::CUDA_ERROR_NOT_INITIALIZED)?;
                // SAFETY: `table` is valid for a write (the caller's contract), checked non-null.
                unsafe { table.write((clock as *const VirtualClockTable).cast()) };
                return Ok(());
            }
            let what = if KNOWN.iter().any(|k| k.1 == uuid) { REFUSAL } else { OTHER };
            boundary::name_once_owned(format!("cuGetExportTable: table {}", named(&uuid)), what);
            Err(CUresult::CUDA_ERROR_NOT_SUPPORTED)
        },
    )
}

/// NVIDIA's `cuGetExportTable`, through the fault rules and the trace.
///
/// # Safety
/// As for [`cuGetExportTable`].
unsafe fn forward(
    real: &'static crate::backend::Real,
    table: *mut *const c_void,
    id: *const CUuuid,
    uuid: Option<[u8; 16]>,
) -> CUresult {
    static REAL: crate::backend::Slot = crate::backend::Slot::new();
    type Lookup = unsafe extern "C" fn(*mut *const c_void, *const CUuuid) -> CUresult;
    let args = || format!("id={}", uuid.as_ref().map_or("null".into(), named));
    boundary::forward(real, "cuGetExportTable", &REAL, args, |address| {
        // SAFETY: NVIDIA's cuGetExportTable has this signature; the pointers are the caller's.
        unsafe { std::mem::transmute::<*mut c_void, Lookup>(address)(table, id) }
    })
}
