//! The entry points the shim implements, one module per part of the API. Each module's
//! `table()` lists its symbols for `cuGetProcAddress`.

pub(crate) mod context;
pub(crate) mod copy;
pub(crate) mod device;
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

use std::ffi::c_void;

/// Every implemented entry point of these modules, by exported name (`cuGetProcAddress`'s own
/// are `proc_address`'s).
pub(crate) fn implemented() -> Vec<(&'static str, *const c_void)> {
    [
        init::table(),
        device::table(),
        host_memory::table(),
        context::table(),
        memory::table(),
        copy::table(),
        stream::table(),
        launch::table(),
        link::table(),
        module::table(),
        library::table(),
        ipc::table(),
        vmm::table(),
    ]
    .concat()
}

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
