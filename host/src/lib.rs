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
//!
//! # Example
//! Grant GPU1 access to a pool on GPU0. The grant is verified by moving bytes both ways, through
//! the copy engine and through kernels, before it is reported:
//!
//! ```no_run
//! use peerpool::{Grant, GrantError, PoolOptions, System};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let gpus = System::open()?; // libcuda, loaded here: `Error::NoDriver` where there is none
//! let pool = gpus.create_pool(0, PoolOptions::default())?;
//! match gpus.grant(pool.as_ref(), 1) {
//!     Ok(Grant::Granted { previous }) => println!("gpu1 may use the pool (it had {previous:?})"),
//!     Ok(other) => println!("nothing to change: {other:?}"),
//!     Err(GrantError::Unsupported { .. }) => println!("gpu1 has no peer path to gpu0"),
//!     Err(e) => return Err(e.into()),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Any implementation of the seam serves: here the simulated driver of `peerpool-sim`, four
//! A100s in two NVLink-bridged pairs, on a machine without GPUs. A grant across the islands is
//! refused with its reason, and another pool of the owner stays private:
//!
//! ```
//! use peerpool::{GrantError, PoolOptions, System};
//! use std::sync::Arc;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let machine = peerpool_sim::catalog_topology("four_gpu_islands")?;
//! let gpus = System::with_driver(Arc::new(peerpool_sim::SimDriver::new(machine)))?;
//! let pool = gpus.create_pool(0, PoolOptions::default())?;
//! gpus.grant(pool.as_ref(), 1)?;
//! assert_eq!(gpus.peers(pool.as_ref())?, vec![1]);
//! assert!(matches!(gpus.grant(pool.as_ref(), 2), Err(GrantError::Unsupported { .. })));
//! let other = gpus.create_pool(0, PoolOptions::default())?;
//! assert!(gpus.peers(other.as_ref())?.is_empty());
//! # Ok(())
//! # }
//! ```
#![cfg(target_endian = "little")] // kernel arguments and pointer attributes are read as LE words

// cudarc builds its bindings for exactly one CUDA version, and a code it lacks must not be
// named: the version is peerpool's to know, not guessed from cudarc's.
#[cfg(not(any(feature = "cuda-12080", feature = "cuda-12090", feature = "cuda-13000", feature = "cuda-13010")))]
compile_error!(
    "peerpool needs the CUDA version of cudarc's bindings: one of its features `cuda-12080`, `cuda-12090`, `cuda-13000` (the default), `cuda-13010`"
);

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
pub mod probes;
pub mod report;
pub mod rounds;
mod stream;
mod system;
pub mod text;

pub use context::CurrentContext;
pub use driver::CudaCode;
pub use driver::DevicePtr;
pub use error::{CudaError, Error, Result};
pub use grant::{Evidence, Grant, GrantError, PROBE_BYTES, PeerUpdate, Rejection, Revoke, VisibleGrants};
pub use kernels::{KernelImage, Kernels, LoadPath, PatternComparison, ptx_image};
pub use memory::{Allocation, DeviceSlice, Origin};
pub use pool::{ForeignPool, IntoForeignPool, OwnedPool, PoolOptions, PoolRef};
pub use stream::DeviceStream;
pub use system::System;
