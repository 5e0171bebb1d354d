//! The entry points the shim implements, one module per part of the API: each a plain
//! `pub unsafe extern "C" fn` under its exported name, its body inside `boundary::entry!`.
//!
//! # Safety
//! Of every entry point: each pointer is valid for what the CUDA driver API documents the call
//! reads or writes.

#![allow(non_snake_case, clippy::missing_safety_doc)]

pub(crate) mod context;
pub(crate) mod copy;
pub(crate) mod device;
pub(crate) mod graph;
pub(crate) mod graph_exec;
pub(crate) mod graph_memory;
pub(crate) mod graph_nodes;
pub(crate) mod host_memory;
pub(crate) mod init;
pub(crate) mod ipc;
pub(crate) mod launch;
pub(crate) mod library;
pub(crate) mod link;
pub(crate) mod memory;
pub(crate) mod module;
pub(crate) mod stream;
pub(crate) mod vmm;

pub use context::*;
pub use copy::*;
pub use device::*;
pub use graph::*;
pub use graph_exec::*;
pub use graph_memory::*;
pub use graph_nodes::*;
pub use host_memory::*;
pub use init::*;
pub use ipc::*;
pub use launch::*;
pub use library::*;
pub use link::*;
pub use memory::*;
pub use module::*;
pub use stream::*;
pub use vmm::*;

/// Every call of peerpool's seam must be exported under the symbol the table names: this fails
/// to compile when one is not.
macro_rules! every_seam_call_is_exported {
    (() $( $(#[$doc:meta])* $safety:ident fn $method:ident($($arg:ident: $ty:ty),*) -> $out:ty
        = $call:ident @ $symbol:ident; )*) => {
        #[allow(dead_code)]
        const SEAM_EXPORTS: &[*const ()] = &[$($symbol as *const ()),*];
    };
}

peerpool::for_each_driver_call!(every_seam_call_is_exported);
