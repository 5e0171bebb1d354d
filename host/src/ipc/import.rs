//! [`System::import`]: an offer received over a [`Channel`] becomes [`Imported`] memory of
//! this process, with read-write access for the devices the importer asks for.
//!
//! Access never travels with a handle: an imported pool grants no peer, whatever the exporter
//! granted, so the importer grants its own devices through the grant engine
//! ([`System::grant`] on the imported pool: capability, verification, one
//! `cuMemPoolSetAccess`); a virtual-memory mapping gets the same steps and `cuMemSetAccess`.

use super::channel::{Channel, Message};
use super::fd_checks::expect_device_handle;
use super::offer::{Offer, OfferPath};
use super::share_error::ShareError;
use super::virtual_memory::{Mapping, granularity, release};
use crate::driver::{
    Access, AccessDesc, DevicePtr, ExportedHandleRef, IpcMemHandle, MemHandle, PointerAttribute, Pool,
    PoolPtrExportData, Stream, uuid_text,
};
use crate::error::Error;
use crate::grant::Grant;
use crate::memory::DeviceSlice;
use crate::pool::PoolRef;
use crate::system::System;
use rustix::fd::AsFd;

/// What an import holds until it is closed.
#[derive(Debug)]
enum Held {
    /// An imported pool and the imported allocation in it.
    Pool { pool: Pool, base: DevicePtr },
    /// The exporter's allocation, mapped here.
    Mapped(Mapping),
    /// An opened legacy IPC handle.
    Legacy { base: DevicePtr },
}

/// Which way imported memory came.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImportKind {
    /// Pool import, then pointer import.
    Pool,
    /// Allocation import, map, set access.
    VirtualMemory,
    /// `cuIpcOpenMemHandle`.
    Legacy,
}

/// Another process's memory, usable here until closed or dropped (which frees the imported
/// pointer and destroys the imported pool, unmaps the mapping, or closes the IPC handle).
/// Using it after [`Imported::close`] is [`ShareError::Closed`].
#[derive(Debug)]
pub struct Imported {
    system: System,
    kind: ImportKind,
    owner: usize,
    offset: u64,
    len: usize,
    staged: bool,
    held: Option<Held>,
}

impl Imported {
    /// The address of the shared bytes in this process.
    pub fn ptr(&self) -> Result<DevicePtr, ShareError> {
        let base = match self.held.as_ref().ok_or(ShareError::Closed)? {
            Held::Pool { base, .. } | Held::Legacy { base } => *base,
            Held::Mapped(mapping) => mapping.base(),
        };
        Ok(base.offset(self.offset))
    }

    /// How many bytes are shared.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The shared bytes, for kernels; [`ShareError::Closed`] after [`Imported::close`].
    pub fn as_slice(&self) -> Result<DeviceSlice<'_>, ShareError> {
        // SAFETY: the range is the imported one (its length checked against the mapping at
        // import), held until `close`, which needs `&mut self`.
        Ok(unsafe { DeviceSlice::from_raw(self.ptr()?, self.len as u64) })
    }

    /// Never empty: offers of zero bytes are refused.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device whose memory it is.
    pub fn owner(&self) -> usize {
        self.owner
    }

    /// How it came.
    pub fn kind(&self) -> ImportKind {
        self.kind
    }

    /// Whether it is the exporter's staged copy (writes here do not reach the original).
    pub fn is_staged_copy(&self) -> bool {
        self.staged
    }

    /// Whether [`Imported::close`] has run.
    pub fn is_closed(&self) -> bool {
        self.held.is_none()
    }

    /// Gives `accessor` (a device of this process) read-write access through the grant engine.
    /// Legacy IPC memory is usable by its owner only ([`ShareError::LegacyNotGrantable`]).
    pub fn grant(&mut self, accessor: usize) -> Result<Grant, ShareError> {
        let owner = self.owner;
        match self.held.as_mut().ok_or(ShareError::Closed)? {
            Held::Pool { pool, .. } => {
                // SAFETY: the imported pool is live while it is held, and only used here.
                let pool = unsafe { PoolRef::from_raw(*pool, owner) }?;
                Ok(self.system.grant(pool, accessor)?)
            }
            Held::Mapped(mapping) => Ok(mapping.grant(accessor)?),
            Held::Legacy { .. } if accessor == owner => Ok(Grant::OwnerAccess),
            Held::Legacy { .. } => Err(ShareError::LegacyNotGrantable { owner, accessor }),
        }
    }

    /// Copies `data` to byte `offset` of the shared range from the host, in the owner's
    /// context, and waits for it.
    pub fn write_at(&self, offset: usize, data: &[u8]) -> Result<(), ShareError> {
        let ptr = self.checked(offset, data.len())?;
        let driver = self.system.driver();
        self.system.within(self.owner, || {
            // SAFETY: `checked` kept the range inside the imported memory, held while `self` is.
            unsafe { driver.memcpy_htod(ptr, data) }?;
            Ok(driver.ctx_synchronize()?)
        })
    }

    /// Copies from byte `offset` of the shared range into `out`.
    pub fn read_at(&self, offset: usize, out: &mut [u8]) -> Result<(), ShareError> {
        let ptr = self.checked(offset, out.len())?;
        // SAFETY: as in `write_at`.
        self.system.within(self.owner, || Ok(unsafe { self.system.driver().memcpy_dtoh(out, ptr) }?))
    }

    fn checked(&self, offset: usize, len: usize) -> Result<DevicePtr, ShareError> {
        let ptr = self.ptr()?;
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(Error::InvalidArgument(format!("{len} bytes at {offset} overrun {} shared", self.len)).into());
        }
        Ok(ptr.offset(offset as u64))
    }

    /// Releases the memory here now and reports the first failure. Closing again does nothing;
    /// a failed close is not retried.
    pub fn close(&mut self) -> Result<(), ShareError> {
        let Some(held) = self.held.take() else { return Ok(()) };
        let driver = self.system.driver();
        let (system, owner) = (&self.system, self.owner);
        // SAFETY: what the import made, released once (`held` is taken), in the owner's context.
        system.within(owner, || unsafe {
            match held {
                Held::Pool { pool, base } => {
                    driver.mem_free_async(base, Stream::LEGACY)?;
                    driver.stream_synchronize(Stream::LEGACY)?;
                    // Peers first, as `OwnedPool` does: some drivers recycle a pool handle with its table.
                    let peers: Vec<AccessDesc> = (0..system.device_count())
                        .filter(|&d| d != owner)
                        .filter(|&d| driver.mem_pool_get_access(pool, d as i32).is_ok_and(|a| a != Access::None))
                        .map(|d| AccessDesc { device: d as i32, access: Access::None })
                        .collect();
                    if !peers.is_empty() {
                        driver.mem_pool_set_access(pool, &peers)?;
                    }
                    driver.mem_pool_destroy(pool)?;
                }
                Held::Mapped(mut mapping) => mapping.release()?,
                Held::Legacy { base } => driver.ipc_close_mem_handle(base)?,
            }
            Ok::<_, ShareError>(())
        })
    }
}

impl Drop for Imported {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl System {
    /// Receives one offer on `channel` and imports it (see [`System::import_message`]).
    pub fn import(&self, channel: &Channel, peers: &[usize]) -> Result<Imported, ShareError> {
        self.import_message(channel.recv()?, peers)
    }

    /// Imports an offer another process sent, on the device with the offer's UUID (this
    /// process may number the GPUs otherwise), then grants each device in `peers` read-write
    /// access (the owner always has it). Pool offers are imported as pool, then pointer;
    /// virtual-memory offers as allocation, mapped at a fresh reservation; legacy offers with
    /// `cuIpcOpenMemHandle`. The message's fds are checked to be device handles (never a file,
    /// pipe or socket) and are closed when this returns; on any failure nothing stays imported.
    ///
    /// Side effects: the owner's primary context is made current for the calls; granting a
    /// peer verifies the pair first on this system (see [`System::grant`]).
    pub fn import_message(&self, message: Message, peers: &[usize]) -> Result<Imported, ShareError> {
        let offer = Offer::decode(&message.bytes)?;
        if message.fds.len() != offer.fd_count() {
            return Err(ShareError::Malformed("the number of fds differs from what the offer needs"));
        }
        for fd in &message.fds {
            expect_device_handle(fd)?;
        }
        let uuid = uuid_text(&offer.uuid);
        let owner = self
            .ordinal_of_uuid(&uuid)?
            .ok_or(ShareError::DeviceNotVisible { exporter_ordinal: offer.device, uuid })?;
        for &peer in peers {
            self.device_handle(peer)?;
        }
        let handle = match (message.fds.first(), &offer.fabric) {
            (Some(fd), _) => Some(ExportedHandleRef::Fd(fd.as_fd())),
            (None, Some(fabric)) => Some(ExportedHandleRef::Fabric(fabric)),
            (None, None) => None,
        };
        // SAFETY (the imports): peerpool trusts the exporter, a process of the same user whose
        // credentials the channel checked; its fds were checked above to be device handles, and
        // the driver is given its export data as received, which the driver validates.
        let mut imported = self.within(owner, || {
            let held = match (offer.path, handle) {
                (OfferPath::Pool, Some(handle)) => unsafe { self.import_pool(handle, &offer) }?,
                (OfferPath::VirtualMemory, Some(handle)) => unsafe { self.import_mapping(handle, &offer, owner) }?,
                (OfferPath::Legacy, _) => {
                    Held::Legacy { base: unsafe { self.driver().ipc_open_mem_handle(&IpcMemHandle(offer.data)) }? }
                }
                (_, None) => return Err(ShareError::Malformed("no handle came with the offer")),
            };
            let kind = match held {
                Held::Pool { .. } => ImportKind::Pool,
                Held::Mapped(_) => ImportKind::VirtualMemory,
                Held::Legacy { .. } => ImportKind::Legacy,
            };
            // Owned at once: a failure from here on closes the import (the drop).
            Ok(Imported {
                system: self.clone(),
                kind,
                owner,
                offset: if kind == ImportKind::Pool { 0 } else { offer.offset },
                len: offer.len as usize,
                staged: offer.staged,
                held: Some(held),
            })
        })?;
        let ptr = imported.ptr()?;
        let device = self.driver().pointer_get_attribute(ptr, PointerAttribute::DeviceOrdinal)?;
        if device != owner as u64 {
            return Err(ShareError::Malformed("the imported memory is on another device than the offer says"));
        }
        // The offer's length is the sender's word; the imported allocation's own range bounds it.
        let start = self.driver().pointer_get_attribute(ptr, PointerAttribute::RangeStartAddr)?;
        let size = self.driver().pointer_get_attribute(ptr, PointerAttribute::RangeSize)?;
        let available = start.checked_add(size).and_then(|end| end.checked_sub(ptr.0)).filter(|_| ptr.0 >= start);
        if available.is_none_or(|available| offer.len > available) {
            return Err(ShareError::BeyondAllocation { claimed: offer.len, available: available.unwrap_or(0) });
        }
        for &peer in peers {
            imported.grant(peer)?;
        }
        Ok(imported)
    }

    /// # Safety
    /// `handle` and the offer's data are a pool export of a trusted process.
    unsafe fn import_pool(&self, handle: ExportedHandleRef<'_>, offer: &Offer) -> Result<Held, ShareError> {
        let driver = self.driver();
        // SAFETY: the caller's; the pool just imported is destroyed once, on failure only.
        unsafe {
            let pool = driver.mem_pool_import_from_shareable_handle(handle)?;
            match driver.mem_pool_import_pointer(pool, &PoolPtrExportData(offer.data)) {
                Ok(base) => Ok(Held::Pool { pool, base }),
                Err(e) => {
                    let _ = driver.mem_pool_destroy(pool);
                    Err(e.into())
                }
            }
        }
    }

    /// # Safety
    /// `handle` is an allocation export of a trusted process, at least the offer's span.
    unsafe fn import_mapping(
        &self,
        handle: ExportedHandleRef<'_>,
        offer: &Offer,
        owner: usize,
    ) -> Result<Held, ShareError> {
        let granule = granularity(self, owner, offer.handle.bits())?;
        let size = usize::try_from(offer.span)
            .ok()
            .and_then(|span| span.checked_next_multiple_of(granule))
            .ok_or(ShareError::Malformed("the mapped span does not fit this process"))?;
        let driver = self.driver();
        // SAFETY: the caller's; the imported reference is released once, here.
        let (mapping, released) = unsafe {
            let allocation: MemHandle = driver.mem_import_from_shareable_handle(handle)?;
            (Mapping::map(self, allocation, size, owner), release(self, allocation))
        };
        let mapping = mapping?;
        released?;
        Ok(Held::Mapped(mapping))
    }
}
