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
pub mod codes;
mod cuda;
mod documented_calls;
mod image;
mod names;
pub mod timeline;
mod types;
pub mod virtual_clock;

pub use calls::Call;
pub use codes::CudaCode;
pub use cuda::{CudaDriver, libcuda_exports};
pub use image::{Cubin, ImageError, ModuleImage, elf_extent};
pub use names::{DOCUMENTED_CALLS, documented_name, is_documented, nearest_documented};
pub use timeline::Timeline;
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
        ///
        /// # Safety
        /// The seam hands handles and addresses to the driver as they are: the real driver may
        /// crash or write where it should not when they are wrong (on the H200s a destroyed
        /// pool's handle crashed `cuMemPoolSetAccess`). Every call that takes one is `unsafe`,
        /// and its caller promises:
        /// 1. every handle it passes (context, pool, stream, event, module, function, physical
        ///    allocation, export handle or export data) is live and belongs to this driver: made
        ///    by it, imported into it, or built in (a device's primary context or default pool,
        ///    [`Stream::LEGACY`]), and stays live until the call and the work it queues are done;
        /// 2. every device address range lies inside one live allocation or mapping for as long
        ///    as the call and its queued work use it;
        /// 3. a launch's arguments match the kernel's parameters in number and size.
        ///
        /// peerpool's safe types ([`System`](crate::System), [`OwnedPool`](crate::OwnedPool),
        /// [`PoolRef`](crate::PoolRef), [`Allocation`](crate::Allocation),
        /// [`Kernels`](crate::Kernels)) keep these promises; other callers say how they keep
        /// them in a `// SAFETY:` comment. [`CudaDriver`] also checks promise 3 against
        /// `cuFuncGetParamInfo`, and the simulator checks all three.
        ///
        /// Safe code cannot hand the driver a handle it made up:
        /// ```compile_fail,E0133
        /// # use peerpool::driver::{Driver, Pool};
        /// fn destroy_any(driver: &dyn Driver) {
        ///     let _ = driver.mem_pool_destroy(Pool(0x1234)); // error: call to unsafe function
        /// }
        /// ```
        /// nor an address it made up:
        /// ```compile_fail,E0133
        /// # use peerpool::driver::{DevicePtr, Driver};
        /// fn write_anywhere(driver: &dyn Driver) {
        ///     let _ = driver.memcpy_htod(DevicePtr(0x7f00_0000_0000), &[0u8; 64]); // error: unsafe
        /// }
        /// ```
        /// The same calls compile once the caller takes on the promise (so the two examples
        /// above fail for that reason alone):
        /// ```no_run
        /// # use peerpool::driver::{DevicePtr, Driver, Pool};
        /// /// # Safety
        /// /// `pool` is a live pool of `driver`, and `dst` the start of 64 bytes of its memory.
        /// unsafe fn promised(driver: &dyn Driver, pool: Pool, dst: DevicePtr) {
        ///     let _ = unsafe { driver.memcpy_htod(dst, &[0u8; 64]) };
        ///     let _ = unsafe { driver.mem_pool_destroy(pool) };
        /// }
        /// ```
        pub trait Driver: Send + Sync {
            /// What this driver is, for reports: `"CUDA 13.0"`, `"simulated: 2 x H200 (NVLink)"`.
            fn describe(&self) -> String;

            /// The driver's virtual time, when it models how long calls take (the simulator
            /// does); `None` for a driver whose time is real.
            fn timeline(&self) -> Option<&dyn Timeline> {
                None
            }

            $( crate::seam_fn! { $safety $(#[$doc])* fn $method(&self, $($arg: $ty),*) -> DriverResult<$out>; } )*
        }
    };
}

crate::for_each_driver_call!(define_driver_trait);
