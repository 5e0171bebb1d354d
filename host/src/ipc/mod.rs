//! Sharing device memory between processes: pool, virtual-memory and legacy allocations.
//!
//! - Fd passing ([`Channel`], [`Listener`]): CUDA's POSIX-fd export handles must reach the
//!   importer as a properly duplicated descriptor (`SCM_RIGHTS`); reopening
//!   `/proc/<pid>/fd/<n>` gives a new open of the device node, whose import fails with
//!   `CUDA_ERROR_UNKNOWN` (measured, `shared/HARDWARE.md`). Both directions check the peer's
//!   credentials, since an export handle grants the memory to whoever holds it.
//! - Provenance ([`classify`], [`choose_path`]): from the pointer attributes the driver reports
//!   to the way the memory can be shared (legacy IPC handle, pool export, virtual-memory
//!   export, or a staged copy), or the reason none applies.
//! - Sharing ([`System::export`](crate::System::export), [`System::import`](crate::System::import)):
//!   the path chosen from the pointer, the driver's export and import calls, the importer's own
//!   grants, and [`Imported`] memory released on drop.

mod channel;
mod cred;
mod error;
mod export;
mod fd_kind;
mod import;
mod listener;
mod offer;
mod private_dir;
mod provenance;
mod share_error;
mod sharing;
mod virtual_memory;
mod wire;

pub use channel::{Channel, Message};
pub use cred::{Credentials, PeerCheck, peer_credentials};
pub use error::IpcError;
pub use export::Exported;
pub use fd_kind::{FdKind, expect_device_handle, expect_kind, fd_kind};
pub use import::{ImportKind, Imported};
pub use listener::Listener;
pub use offer::{OFFER_LEN, Offer, OfferPath};
pub use private_dir::PrivateDir;
pub use provenance::{PointerFacts, Provenance, ProvenanceError, classify};
pub use share_error::ShareError;
pub use sharing::{NoExport, ShareHandle, ShareRequest, SharingError, SharingPath, choose_path, sharing_path};
pub use virtual_memory::VirtualAllocation;
pub use wire::{Limits, MAX_FDS, MAX_PAYLOAD};
