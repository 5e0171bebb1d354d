//! Sharing pool and virtual-memory allocations between processes: the CPU side.
//!
//! - Fd passing ([`Channel`], [`Listener`]): CUDA's POSIX-fd export handles must reach the
//!   importer as a properly duplicated descriptor (`SCM_RIGHTS`); reopening
//!   `/proc/<pid>/fd/<n>` gives a new open of the device node, whose import fails with
//!   `CUDA_ERROR_UNKNOWN` (measured, `shared/HARDWARE.md`). Both directions check the peer's
//!   credentials, since an export handle grants the memory to whoever holds it.
//!
//! The driver calls themselves (export, import) are not here.

mod channel;
mod cred;
mod error;
mod fd_kind;
mod listener;
mod private_dir;
mod wire;

pub use channel::{Channel, Message};
pub use cred::{Credentials, PeerCheck, peer_credentials};
pub use error::IpcError;
pub use fd_kind::{FdKind, expect_device_handle, expect_kind, fd_kind};
pub use listener::Listener;
pub use private_dir::PrivateDir;
pub use wire::{Limits, MAX_FDS, MAX_PAYLOAD};
