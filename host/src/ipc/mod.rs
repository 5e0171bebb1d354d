//! Sharing device memory between processes: pool, virtual-memory and legacy allocations.
//!
//! - Fd passing ([`Channel`], [`Listener`]): CUDA's POSIX-fd export handles must reach the
//!   importer as a properly duplicated descriptor (`SCM_RIGHTS`); reopening
//!   `/proc/<pid>/fd/<n>` gives a new open of the device node, whose import fails with
//!   `CUDA_ERROR_UNKNOWN` (measured, `docs/hardware/2026-11-30-foundation`). Both directions check the peer's
//!   credentials, since an export handle grants the memory to whoever holds it.
//! - Provenance ([`classify`], [`choose_path`]): from the pointer attributes the driver reports
//!   to the way the memory can be shared (legacy IPC handle, pool export, virtual-memory
//!   export, or a staged copy), or the reason none applies.
//! - Sharing ([`System::export`](crate::System::export), [`System::import`](crate::System::import)):
//!   the path chosen from the pointer, the driver's export and import calls, the importer's own
//!   grants, and [`Imported`] memory released on drop.
//!
//! # The flow
//! The caller hands over a pointer and a request; how the memory was allocated is found out,
//! not asked. The exporter keeps its memory alive while the importer uses it.
//!
//! | path (chosen by `sharing.rs`) | exporter ([`System::export`](crate::System::export)) | importer ([`System::import`](crate::System::import)) |
//! | --- | --- | --- |
//! | pool | `cuMemPoolExportToShareableHandle`, `cuMemPoolExportPointer` | `cuMemPoolImportFromShareableHandle`, `cuMemPoolImportPointer`, then [`System::grant`](crate::System::grant) on the imported pool per peer asked for |
//! | virtual memory | `cuMemRetainAllocationHandle`, `cuMemExportToShareableHandle`, `cuMemRelease` | `cuMemImportFromShareableHandle`, `cuMemAddressReserve`, `cuMemMap`, `cuMemRelease`, `cuMemSetAccess` for the owner, then per peer after the grant engine's capability check and verification |
//! | legacy (`cuMemAlloc`) | `cuIpcGetMemHandle` on the allocation's start | `cuIpcOpenMemHandle`; the owner only ([`ShareError::LegacyNotGrantable`]) |
//! | staged copy | a pool with the wanted handle type, `cuMemcpyDtoDAsync`, then the pool path | the pool path; [`Imported::is_staged_copy`] |
//!
//! [`Exported::send`] sends an [`Offer`] and the handle's fd in one message; the importer checks
//! the offer, the fd count and kind (a character device or an eventfd, see [`FdKind`]), the
//! memory's device, and the offer's length against the imported allocation's own range
//! ([`ShareError::BeyondAllocation`]) before using it. A failed import
//! leaves nothing imported; [`Imported`] frees, unmaps or closes on drop, and a closed import
//! answers [`ShareError::Closed`]. Access never travels with a handle (measured): the importer
//! grants its own devices. Fabric handles go inside the offer, no fd; they are simulated and
//! were never tried on hardware (they need an IMEX channel).
//!
//! # Tested where
//! Every hardware check also runs on simulators in `tests/ipc_stand_in.rs` (`ipc_sim::…`), which
//! checks the suite's own logic, and `tests/ipc.rs` itself runs between two real processes on
//! simulated GPUs (`peerpool sim`, in CI's simulated matrix); only the hardware run proves the
//! claims about the driver.
//!
//! | claim | CPU: two simulators over a real socketpair | hardware (`tests/ipc.rs`, not yet run) |
//! | --- | --- | --- |
//! | the importer's owner and peer kernels read, write and add; the exporter sees it | `ipc_sim_pool.rs`, `ipc_sim_vmm.rs` | `pool_importer_reads_writes_and_adds`, `vmm_importer_reads_writes_and_adds` |
//! | access does not travel; an ungranted peer kernel faults, sticky | the same (on a fork of the importer) | `*_importer_without_grant_faults` (pool import measured once, `docs/hardware/2026-11-30-foundation`) |
//! | legacy IPC refuses pool memory, opens `cuMemAlloc` memory | `ipc_sim_paths.rs` | `legacy_refuses_pool_memory_and_opens_cu_mem_alloc` (refusal measured) |
//! | the path for each kind of memory; staged copies | `ipc_sim_paths.rs`, `ipc_provenance.rs` | |
//! | closed imports, garbage export data | `ipc_sim_pool.rs`, `ipc_sim_refusals.rs` | `closed_import_fails_cleanly`, `garbage_export_data_is_a_typed_error` |
//! | wrong fds, closed sockets, strangers, malformed offers, every call failed in turn, no fd leaks | `ipc_sim_refusals.rs`, `ipc_channel.rs`, `ipc_process.rs` | |
//! | forged lengths, default timeouts, empty datagrams, a peer in another pid namespace (pid 0) | `ipc_sim_refusals.rs`, `ipc_channel.rs`, `ipc_pid_namespace.rs` (root) | |
//! | fabric handles | `ipc_sim_pool.rs`, `ipc_sim_paths.rs` | `fabric_pool_export_or_typed_refusal` (either outcome passes) |
//! | costs | `ipc_bench --sim` checks the example only | `host/examples/ipc_bench.rs` |

mod channel;
mod cred;
mod error;
mod export;
mod fd_checks;
mod fd_kind;
mod import;
mod listener;
mod offer;
mod private_dir;
mod provenance;
mod recvmsg;
mod share_error;
mod sharing;
mod virtual_memory;
mod wire;

pub use channel::{Channel, Message};
pub use cred::{PeerCheck, peer_credentials};
pub use error::IpcError;
pub use export::Exported;
pub use fd_checks::{expect_device_handle, expect_kind, fd_kind};
pub use fd_kind::FdKind;
pub use import::{ImportKind, Imported};
pub use listener::Listener;
pub use offer::{OFFER_LEN, Offer, OfferPath};
pub use private_dir::PrivateDir;
pub use provenance::{PointerFacts, Provenance, ProvenanceError, classify};
pub use recvmsg::Credentials;
pub use share_error::ShareError;
pub use sharing::{HandleKind, NoExport, ShareRequest, SharingError, SharingPath, choose_path, sharing_path};
pub use virtual_memory::VirtualAllocation;
pub use wire::{Limits, MAX_FDS, MAX_PAYLOAD};

/// How long a [`Channel`] send or receive and a [`Listener`] accept may block unless the
/// caller sets another timeout: long enough for an importer's first grant (verification
/// included, about 10 ms on the H200s) many times over, short enough that a silent peer of
/// our uid cannot stall a process for good.
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
