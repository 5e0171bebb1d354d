//! peerpool: prove which GPU may touch which CUDA memory pool.
//!
//! Layers, bottom up (see `ARCHITECTURE.md`):
//! - [`driver`]: the seam. [`driver::Driver`] holds every CUDA driver call peerpool makes;
//!   [`driver::CudaDriver`] is libcuda loaded at run time (no toolkit at build time, no link
//!   to libcuda), and other implementations simulate GPUs or inject faults.
//! - [`System`] and the safe types over it: contexts ([`CurrentContext`]), pools
//!   ([`OwnedPool`], [`PoolRef`]), memory ([`Allocation`]) and kernels ([`Kernels`]).
//! - The grant engine ([`System::grant`], [`System::set_peers`], [`System::grant_all_visible`]):
//!   per-pool, per-peer access with typed outcomes, verified by moving bytes first.
//! - [`facts`]: what the driver reports about devices, peers and pools.
#![cfg(target_endian = "little")] // kernel arguments and pointer attributes are read as LE words

pub mod bench;
pub mod check;
pub mod child;
mod context;
mod device_state;
pub mod driver;
pub mod env;
mod error;
mod evidence;
pub mod facts;
pub mod fault;
pub mod grant;
pub mod ipc;
pub mod kernels;
pub mod links;
mod memory;
pub mod owned_dir;
mod pool;
pub mod report;
pub mod rounds;
mod stream;
mod system;
pub mod text;

pub use context::CurrentContext;
pub use driver::CudaCode;
pub use driver::DevicePtr;
pub use error::{CudaError, Error, Result};
pub use grant::{Evidence, Grant, GrantError, PROBE_BYTES, PeerUpdate, Rejection, Revoke, VisibleReport};
pub use kernels::{KernelImage, Kernels, LoadPath, PatternComparison, ptx_image};
pub use memory::{Allocation, DeviceSlice, Origin};
pub use pool::{ForeignPool, IntoForeignPool, OwnedPool, PoolOptions, PoolRef};
pub use stream::DeviceStream;
pub use system::System;
