//! Every driver call of the seam as a safe method of [`SimDriver`].
//!
//! The seam's calls are `unsafe` because a real driver trusts its handles and addresses. The
//! simulator trusts nothing: it looks every handle up, checks every range against its
//! allocations, checks launch arguments against the kernel, and panics on a destroyed pool's
//! handle. So each call is also an inherent method here, safe with any argument, and tests of
//! the simulator call them directly (inherent methods come before the trait's in resolution).

use super::SimDriver;
use peerpool::driver::*;

macro_rules! safe_calls {
    (() $( $(#[$doc:meta])* $safety:ident fn $method:ident($($arg:ident: $ty:ty),*) -> $out:ty
        = $call:ident @ $symbol:ident; )*) => {
        impl SimDriver {
            $(
                $(#[$doc])*
                ///
                /// Safe on the simulator, whatever the arguments (see `checked.rs`).
                #[allow(unused_unsafe)]
                pub fn $method(&self, $($arg: $ty),*) -> DriverResult<$out> {
                    // SAFETY: the simulator's implementation of every call checks its handles,
                    // ranges and arguments itself and touches no memory but its own.
                    unsafe { <SimDriver as Driver>::$method(self, $($arg),*) }
                }
            )*
        }
    };
}

peerpool::for_each_driver_call!(safe_calls);
