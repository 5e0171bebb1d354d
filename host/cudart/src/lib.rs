//! peerpool's CUDA runtime: the runtime API lowered to the public driver API, for programs that
//! link the runtime dynamically (`nvcc -cudart shared`, CMake's `CMAKE_CUDA_RUNTIME_LIBRARY=Shared`,
//! PyTorch's wheels). It reaches the driver through whichever libcuda the process loads: the
//! simulator's under `peerpool sim`, NVIDIA's on a GPU machine.
//!
//! This crate holds what both majors share; `lib12` and `lib13` make `libcudart.so.12` and
//! `libcudart.so.13` of it, each adding the calls whose layout differs between the majors and
//! an answer for every export of NVIDIA's that is not served here (`cudaErrorNotSupported`,
//! named once on standard error).
//!
//! As NVIDIA's runtime: each host thread has a current device (0 until `cudaSetDevice`), whose
//! primary context the first call needing one makes current, unless the thread has a context
//! current already (then that context's device is the thread's); every call's error is the
//! thread's last error (read and cleared by `cudaGetLastError`), and an error that kills the context
//! (a fault in a kernel) comes back from every later call.

#![allow(non_snake_case, non_camel_case_types)]

pub mod device;
mod driver;
pub mod error;
mod error_table;
pub mod graphs;
pub mod launch;
pub mod memory;
pub mod pools;
pub mod properties;
mod registry;
pub mod streams;
pub mod types;

pub use error::unserved;
