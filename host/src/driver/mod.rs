//! The seam between peerpool and CUDA: [`Driver`] holds every driver call the library makes.
//!
//! Three implementations sit behind it: [`CudaDriver`] (libcuda, loaded at run time), the
//! simulator and the fault injector. The engine above never names libcuda, so any code path
//! can run on a simulated topology or with a failure injected at any call.
//!
//! The calls are listed once, in `calls.rs` ([`for_each_driver_call!`](crate::for_each_driver_call)):
//! the trait below, the call names ([`Call`]), the real driver's symbol list and the fault
//! injector are made from that table.
//!
//! Conventions: every method is one driver call and is named after it; handles are plain
//! integers ([`Handle`] newtypes), so simulated drivers can mint them; device ordinals are the
//! driver's `int`, so out-of-range values reach the driver as they would from C.

mod calls;
mod cuda;
mod types;

pub use calls::Call;
pub use cuda::CudaDriver;
pub use types::*;

use crate::error::CudaError;

/// Where the IMEX channel device nodes live; fabric handles need one.
pub const IMEX_CHANNELS: &str = "/dev/nvidia-caps-imex-channels";

/// What one driver call returns.
pub type DriverResult<T> = Result<T, CudaError>;

macro_rules! define_driver_trait {
    (() $( $(#[$doc:meta])* $safety:ident fn $method:ident($($arg:ident: $ty:ty),*) -> $out:ty
        = $call:ident @ $symbol:ident; )*) => {
        /// Every CUDA driver call peerpool makes. One method per call, named after it (the
        /// table is in `calls.rs`).
        ///
        /// Implementations must be callable from any thread. The current context is per thread, as
        /// in CUDA: [`Driver::ctx_get_current`] and [`Driver::ctx_set_current`] act on the calling
        /// thread, and calls that need a context use the calling thread's.
        pub trait Driver: Send + Sync {
            /// What this driver is, for reports: `"CUDA 13.0"`, `"simulated: 2 x H200 (NVLink)"`.
            fn describe(&self) -> String;

            $( crate::seam_fn! { $safety $(#[$doc])* fn $method(&self, $($arg: $ty),*) -> DriverResult<$out>; } )*
        }
    };
}

crate::for_each_driver_call!(define_driver_trait);
