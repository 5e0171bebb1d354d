//! [`Allocation`]: device memory from a pool (`cuMemAllocFromPoolAsync`) or outside any pool
//! (`cuMemAlloc`), freed on drop in its owner's primary context.

use crate::driver::{DevicePtr, Pool, Stream};
use crate::error::{Error, Result};
use crate::pool::PoolRef;
use crate::system::System;
use std::marker::PhantomData;

/// Where an [`Allocation`]'s memory came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `cuMemAllocFromPoolAsync` on this pool.
    Pool(Pool),
    /// `cuMemAlloc`: no pool, legacy-IPC capable.
    Legacy,
}

/// Device memory, freed when dropped.
///
/// Pool allocations are made and freed stream-ordered on the owner's null stream, which is
/// then synchronised: when `alloc` returns the memory is usable by any device allowed to.
#[derive(Debug)]
pub struct Allocation {
    system: System,
    ptr: DevicePtr,
    bytes: usize,
    owner: usize,
    origin: Origin,
    freed: bool,
}

impl Allocation {
    /// The device address.
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Whether the allocation is zero bytes long (never: [`System::alloc`] refuses that).
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The owning device.
    pub fn owner(&self) -> usize {
        self.owner
    }

    /// Where the memory came from.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// Copies `data` to the start of the allocation.
    pub fn write(&self, data: &[u8]) -> Result<()> {
        self.write_at(0, data)
    }

    /// Copies `data` to byte `offset` of the allocation (`cuMemcpyHtoD`), then synchronises
    /// the owner's context: from pageable memory `cuMemcpyHtoD` may return before its DMA has
    /// landed, and another GPU's kernel could read the old bytes (seen on the H200s).
    pub fn write_at(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check_len(offset.saturating_add(data.len()))?;
        let driver = self.system.driver();
        self.system.within(self.owner, || {
            // SAFETY: `[offset, offset + len)` was checked to lie inside this live allocation.
            unsafe { driver.memcpy_htod(self.ptr.offset(offset as u64), data) }?;
            Ok(driver.ctx_synchronize()?)
        })
    }

    /// Copies the start of the allocation into `out` (`cuMemcpyDtoH`).
    pub fn read(&self, out: &mut [u8]) -> Result<()> {
        self.check_len(out.len())?;
        // SAFETY: `out.len()` bytes were checked to lie inside this live allocation.
        self.system.within(self.owner, || Ok(unsafe { self.system.driver().memcpy_dtoh(out, self.ptr) }?))
    }

    /// The whole allocation, for kernels and copies.
    pub fn as_slice(&self) -> DeviceSlice<'_> {
        DeviceSlice { ptr: self.ptr, len: self.bytes as u64, _memory: PhantomData }
    }

    /// The first `count` 32-bit words, for kernels; an error if they do not fit.
    pub fn words(&self, count: u64) -> Result<DeviceSlice<'_>> {
        self.as_slice().range(0, count.saturating_mul(4))
    }

    /// Reads the first `words` 32-bit words.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when they do not fit the allocation (checked before any
    /// buffer is made).
    pub fn read_words(&self, words: usize) -> Result<Vec<u32>> {
        let len = words.checked_mul(4).ok_or_else(|| Error::InvalidArgument(format!("{words} words overflow")))?;
        self.check_len(len)?;
        let mut bytes = vec![0u8; len];
        self.read(&mut bytes)?;
        Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    fn check_len(&self, len: usize) -> Result<()> {
        if len > self.bytes {
            return Err(Error::InvalidArgument(format!("{len} bytes do not fit an allocation of {}", self.bytes)));
        }
        Ok(())
    }
}

impl Allocation {
    /// Frees the memory now and reports a failure (dropping frees too, but cannot report).
    /// After a failure the drop tries once more.
    pub fn free(mut self) -> Result<()> {
        self.release()
    }

    /// Frees the memory; `freed` is set the moment the driver has taken it back, whatever
    /// fails after (the address may be handed out again and must not be freed twice).
    fn release(&mut self) -> Result<()> {
        let (system, ptr, origin, freed) = (&self.system, self.ptr, self.origin, &mut self.freed);
        let driver = system.driver();
        system.within(self.owner, || {
            // SAFETY: the address is this allocation's, freed once (`freed` guards the drop),
            // in its owner's context; the null stream is the context's own.
            unsafe {
                match origin {
                    Origin::Pool(_) => {
                        driver.mem_free_async(ptr, Stream::LEGACY)?;
                        *freed = true;
                        driver.stream_synchronize(Stream::LEGACY)?;
                    }
                    Origin::Legacy => {
                        driver.mem_free(ptr)?;
                        *freed = true;
                    }
                }
            }
            Ok(())
        })
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        if !self.freed {
            let _ = self.release();
        }
    }
}

impl System {
    /// Allocates `bytes` from `pool`, in the owner's primary context, and waits until the
    /// memory is ready.
    pub fn alloc(&self, pool: PoolRef<'_>, bytes: usize) -> Result<Allocation> {
        check_size(bytes)?;
        let driver = self.driver();
        self.within(pool.owner(), || {
            // SAFETY: a `PoolRef` is live for its lifetime; the null stream is the owner's
            // context's, current here.
            let ptr = unsafe { driver.mem_alloc_from_pool_async(bytes, pool.handle(), Stream::LEGACY) }?;
            // Owned at once: a failure from here on frees it (the drop) rather than leak it.
            let origin = Origin::Pool(pool.handle());
            let memory = Allocation { system: self.clone(), ptr, bytes, owner: pool.owner(), origin, freed: false };
            // SAFETY: as above.
            unsafe { driver.stream_synchronize(Stream::LEGACY) }?;
            Ok(memory)
        })
    }

    /// Allocates `bytes` on `device` outside any pool (`cuMemAlloc`).
    pub fn alloc_legacy(&self, device: usize, bytes: usize) -> Result<Allocation> {
        check_size(bytes)?;
        self.within(device, || {
            let ptr = self.driver().mem_alloc(bytes)?;
            Ok(Allocation { system: self.clone(), ptr, bytes, owner: device, origin: Origin::Legacy, freed: false })
        })
    }
}

fn check_size(bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Err(Error::InvalidArgument("an allocation of zero bytes".into()));
    }
    Ok(())
}

/// A range of device memory that stays mapped while the borrow lives: what kernels are given.
///
/// Made from an [`Allocation`] (or another owner of device memory) with its bounds checked, so
/// a kernel launched on it never writes outside memory the caller holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceSlice<'a> {
    ptr: DevicePtr,
    len: u64,
    _memory: PhantomData<&'a ()>,
}

impl<'a> DeviceSlice<'a> {
    /// A range of memory peerpool does not own (a downstream allocator's).
    ///
    /// # Safety
    /// `[ptr, ptr + len)` lies inside one live allocation or mapping of the driver the slice
    /// will be used with, and stays so for `'a`.
    pub unsafe fn from_raw(ptr: DevicePtr, len: u64) -> DeviceSlice<'a> {
        DeviceSlice { ptr, len, _memory: PhantomData }
    }

    /// The first address.
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the slice holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whole 32-bit words in the slice.
    pub fn words(&self) -> u64 {
        self.len / 4
    }

    /// `len` bytes from byte `offset`; an error if they do not fit.
    pub fn range(&self, offset: u64, len: u64) -> Result<DeviceSlice<'a>> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(DeviceSlice { ptr: self.ptr.offset(offset), len, _memory: PhantomData }),
            _ => Err(Error::InvalidArgument(format!(
                "{len} bytes at offset {offset} do not fit in {} bytes of device memory",
                self.len
            ))),
        }
    }
}
