//! [`System::export`]: from any device pointer to an [`Exported`] offer, by the path its
//! provenance allows (see `sharing.rs`'s decision table), staging a copy where allowed.

use super::channel::Channel;
use super::offer::{Offer, OfferPath};
use super::provenance::PointerFacts;
use super::share_error::ShareError;
use super::sharing::{HandleKind, ShareRequest, SharingPath, sharing_path};
use super::virtual_memory::release;
use crate::driver::{DevicePtr, ExportedHandle, PointerAttribute, Stream};
use crate::error::Error;
use crate::memory::{Allocation, DeviceSlice};
use crate::pool::{OwnedPool, PoolOptions};
use crate::system::System;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};

/// A staged copy and the pool it lives in (the allocation drops first).
#[derive(Debug)]
struct Staging {
    memory: Allocation,
    _pool: OwnedPool,
}

/// Memory made ready for another process: the offer, the handle's fd, and a staged copy when
/// one was made. Send it with [`Exported::send`] as often as needed.
///
/// The exporter keeps the memory alive while importers use it: the caller's allocation for
/// the pool, virtual-memory and legacy paths, this value for a staged copy.
#[derive(Debug)]
pub struct Exported {
    path: SharingPath,
    offer: Offer,
    fd: Option<OwnedFd>,
    staging: Option<Staging>,
}

impl Exported {
    /// The path the provenance check chose.
    pub fn path(&self) -> SharingPath {
        self.path
    }

    /// What the importer receives besides the fd.
    pub fn offer(&self) -> &Offer {
        &self.offer
    }

    /// The handle's fd (POSIX-fd pool and virtual-memory paths).
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.fd.as_ref().map(AsFd::as_fd)
    }

    /// The staged copy, when the memory itself could not be exported.
    pub fn staged(&self) -> Option<&Allocation> {
        self.staging.as_ref().map(|s| &s.memory)
    }

    /// Sends the offer and its fd as one message (the channel checks the peer first).
    pub fn send(&self, channel: &Channel) -> Result<(), ShareError> {
        let fds: Vec<BorrowedFd<'_>> = self.fd().into_iter().collect();
        Ok(channel.send(&self.offer.encode(), &fds)?)
    }
}

/// An export handle split into what travels: an fd, or fabric bytes inside the offer.
fn split(handle: ExportedHandle) -> (Option<OwnedFd>, Option<crate::driver::FabricHandle>) {
    match handle {
        ExportedHandle::Fd(fd) => (Some(fd), None),
        ExportedHandle::Fabric(bytes) => (None, Some(bytes)),
    }
}

impl System {
    /// The path `ptr`'s memory would take for `request` (nothing is exported).
    pub fn sharing_path(&self, ptr: DevicePtr, request: ShareRequest) -> Result<SharingPath, ShareError> {
        let facts = PointerFacts::read(|a| self.driver().pointer_get_attribute(ptr, a).map_err(|e| e.code));
        Ok(sharing_path(facts, request)?)
    }

    /// Exports `memory` for another process, however it was allocated:
    /// pool memory by pool export (POSIX fd or fabric) and pointer export, virtual memory by
    /// allocation export, `cuMemAlloc` memory by a legacy IPC handle, and anything else by a
    /// staged copy into a new exportable pool when `request.allow_staging` (see
    /// `ipc::sharing`'s table). Pool memory must be exported from the start of its allocation.
    ///
    /// Side effects: the owner's primary context is made current for the calls; a staged copy
    /// allocates a pool and `len` bytes on the owner, freed when the [`Exported`] drops.
    pub fn export(&self, memory: DeviceSlice<'_>, request: ShareRequest) -> Result<Exported, ShareError> {
        let (ptr, len) = (memory.ptr(), memory.len() as usize);
        if len == 0 {
            return Err(Error::InvalidArgument("nothing to export: zero bytes".into()).into());
        }
        let path = self.sharing_path(ptr, request)?;
        let driver = self.driver();
        let attribute = |a: PointerAttribute| driver.pointer_get_attribute(ptr, a);
        let device = attribute(PointerAttribute::DeviceOrdinal)? as u32;
        let (start, size) = (attribute(PointerAttribute::RangeStartAddr)?, attribute(PointerAttribute::RangeSize)?);
        let offset = ptr.0 - start.min(ptr.0);
        if offset.checked_add(len as u64).is_none_or(|end| end > size) {
            let why = format!("{len} bytes at {:#x} overrun the allocation ({size} bytes at {start:#x})", ptr.0);
            return Err(Error::InvalidArgument(why).into());
        }
        let base = Offer {
            path: OfferPath::Pool,
            handle: HandleKind::PosixFd,
            staged: false,
            device,
            uuid: driver.device_get_uuid(device as i32)?,
            offset: 0,
            len: len as u64,
            span: len as u64,
            data: [0; 64],
            fabric: None,
        };
        // SAFETY (the calls below): `memory` is live while borrowed and was checked above to lie
        // inside the allocation the driver reports at `start`; the pool handle is the one the
        // driver reports for that live allocation.
        let (offer, fd) = match path {
            SharingPath::StagedCopy { handle, .. } => {
                return self.export_staged(memory, device as usize, handle, path);
            }
            SharingPath::PoolExport { pool, handle } => self.within(device as usize, || {
                let (fd, fabric) = split(unsafe { driver.mem_pool_export_to_shareable_handle(pool, handle) }?);
                let data = unsafe { driver.mem_pool_export_pointer(ptr) }?.0;
                Ok::<_, ShareError>((Offer { handle, data, fabric, ..base }, fd))
            })?,
            SharingPath::VirtualMemoryExport { handle } => self.within(device as usize, || {
                let allocation = unsafe { driver.mem_retain_allocation_handle(ptr) }?;
                let exported = unsafe { driver.mem_export_to_shareable_handle(allocation, handle) };
                unsafe { release(self, allocation) }?;
                let (fd, fabric) = split(exported?);
                let path = OfferPath::VirtualMemory;
                Ok::<_, ShareError>((Offer { path, handle, offset, span: size, fabric, ..base }, fd))
            })?,
            SharingPath::LegacyIpc => self.within(device as usize, || {
                let data = unsafe { driver.ipc_get_mem_handle(DevicePtr(start)) }?.0;
                Ok::<_, ShareError>((Offer { path: OfferPath::Legacy, offset, span: size, data, ..base }, None))
            })?,
        };
        Ok(Exported { path, offer, fd, staging: None })
    }

    /// [`System::export`] of a whole allocation.
    pub fn export_allocation(&self, memory: &Allocation, request: ShareRequest) -> Result<Exported, ShareError> {
        self.export(memory.as_slice(), request)
    }

    /// Copies the range into a new pool exportable with `handle` (the copy engine, in the
    /// owner's context) and exports the copy.
    fn export_staged(
        &self,
        source: DeviceSlice<'_>,
        owner: usize,
        handle: HandleKind,
        path: SharingPath,
    ) -> Result<Exported, ShareError> {
        let len = source.len() as usize;
        let pool = self.create_pool(owner, PoolOptions { handle_types: handle.bits(), max_size: 0 })?;
        let memory = self.alloc(pool.as_ref(), len)?;
        let driver = self.driver();
        self.within(owner, || {
            // SAFETY: both ranges are live and `len` bytes long; the null stream is the owner's.
            unsafe {
                driver.memcpy_dtod_async(memory.ptr(), source.ptr(), len, Stream::LEGACY)?;
                driver.stream_synchronize(Stream::LEGACY)
            }
            .map_err(Error::from)
        })?;
        let request = ShareRequest { handle, allow_staging: false };
        let mut exported = self.export(memory.as_slice(), request)?;
        exported.path = path;
        exported.offer.staged = true;
        exported.staging = Some(Staging { memory, _pool: pool });
        Ok(exported)
    }
}
