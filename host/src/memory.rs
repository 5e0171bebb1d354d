//! [`Allocation`]: device memory from a pool (`cuMemAllocFromPoolAsync`) or outside any pool
//! (`cuMemAlloc`), freed on drop in its owner's primary context.

pub use crate::driver::DevicePtr;
use crate::driver::{Pool, Stream};
use crate::error::{Error, Result};
use crate::pool::PoolRef;
use crate::system::System;

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
        let _current = self.system.enter(self.owner)?;
        let driver = self.system.driver();
        driver.memcpy_htod(self.ptr.offset(offset as u64), data)?;
        Ok(driver.ctx_synchronize()?)
    }

    /// Copies the start of the allocation into `out` (`cuMemcpyDtoH`).
    pub fn read(&self, out: &mut [u8]) -> Result<()> {
        self.check_len(out.len())?;
        let _current = self.system.enter(self.owner)?;
        Ok(self.system.driver().memcpy_dtoh(out, self.ptr)?)
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
        let result = self.release();
        self.freed = result.is_ok();
        result
    }

    fn release(&self) -> Result<()> {
        let _current = self.system.enter(self.owner)?;
        let driver = self.system.driver();
        match self.origin {
            Origin::Pool(_) => {
                driver.mem_free_async(self.ptr, Stream::LEGACY)?;
                driver.stream_synchronize(Stream::LEGACY)?;
            }
            Origin::Legacy => driver.mem_free(self.ptr)?,
        }
        Ok(())
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
        let _current = self.enter(pool.owner())?;
        let driver = self.driver();
        let ptr = driver.mem_alloc_from_pool_async(bytes, pool.handle(), Stream::LEGACY)?;
        if let Err(e) = driver.stream_synchronize(Stream::LEGACY) {
            let _ = driver.mem_free_async(ptr, Stream::LEGACY);
            return Err(e.into());
        }
        Ok(Allocation {
            system: self.clone(),
            ptr,
            bytes,
            owner: pool.owner(),
            origin: Origin::Pool(pool.handle()),
            freed: false,
        })
    }

    /// Allocates `bytes` on `device` outside any pool (`cuMemAlloc`).
    pub fn alloc_legacy(&self, device: usize, bytes: usize) -> Result<Allocation> {
        check_size(bytes)?;
        let _current = self.enter(device)?;
        let ptr = self.driver().mem_alloc(bytes)?;
        Ok(Allocation { system: self.clone(), ptr, bytes, owner: device, origin: Origin::Legacy, freed: false })
    }
}

fn check_size(bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Err(Error::InvalidArgument("an allocation of zero bytes".into()));
    }
    Ok(())
}
