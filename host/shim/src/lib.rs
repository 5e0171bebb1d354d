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
//! One simulated process per process. Two programs that both load the shim share memory as two
//! processes on GPUs do: export handles (an fd passed over a Unix socket, export data, legacy
//! IPC handles) name the exporter's shared memfd, which the importer's simulator maps
//! (`peerpool_sim`'s "Inter-process sharing"); within one program export and import work too.

mod abi;
pub mod backend;
mod boundary;
mod capture_rules;
mod export_table;
pub mod exports;
mod graph_memory;
mod graphs;
mod host_functions;
mod image_bytes;
mod jit_options;
mod per_thread;
mod proc_address;
mod runtime;
pub mod timeline;
pub mod unsupported;
