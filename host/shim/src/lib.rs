//! peerpool's simulated GPUs behind the CUDA driver API: a `libcuda.so.1` that any program
//! loads in place of NVIDIA's (cudarc, C linked with `-lcuda`, cuda-python), so that it runs on
//! a simulated multi-GPU topology, meets the fault rules it is given and leaves a call trace.
//!
//! `peerpool sim -- <program>` installs it and sets the environment; `peerpool_sim::env` lists
//! the variables. Every entry point crosses `boundary.rs` (the `cuInit` check, the fault rules, the
//! trace, no panic into C); `exports/` implements the calls the simulator models, each through
//! peerpool's driver seam on `peerpool_sim::SimDriver`, and `unsupported.rs` exports the rest
//! of the API as stubs answering `CUDA_ERROR_NOT_SUPPORTED`. `proc_address.rs` answers
//! `cuGetProcAddress` from the same exports.
//!
//! One simulated process per process. Export handles work within it (a pool exported and
//! imported again, as the IPC suites do between two `SimDriver`s); two programs that both load
//! the shim do not yet share memory, because the simulator's export registry is per process.

mod abi;
pub mod backend;
mod boundary;
pub mod exports;
mod proc_address;
mod runtime;
pub mod unsupported;
