//! Simulated device memory: one address range per device, allocations holding real bytes, and
//! what a faulty link does to the bytes it carries.
//!
//! Addresses are unique for the simulator's life (a bump allocator per device that never
//! reuses a freed range), so a stale pointer can never reach a newer allocation by accident.

use super::topology::{FaultKind, LinkFault};
use std::collections::BTreeMap;

/// Where device 0's addresses start: far from the host heap and stacks (0x55…, 0x7f…), so a
/// host pointer is never mistaken for device memory.
const BASE: u64 = 0x2000_0000_0000;
/// Address space per device (256 GiB).
const SPAN: u64 = 1 << 38;
/// Allocation alignment, as `cuMemAlloc` documents (256 bytes).
pub(super) const ALIGN: u64 = 256;

/// One allocation.
#[derive(Clone)]
pub(super) struct Block {
    pub(super) base: u64,
    pub(super) device: usize,
    /// The pool's index in the simulator's pool list; `None` for `cuMemAlloc` memory.
    pub(super) pool: Option<usize>,
    pub(super) bytes: Vec<u8>,
}

impl Block {
    pub(super) fn size(&self) -> u64 {
        self.bytes.len() as u64
    }
}

/// Every live allocation of every device.
#[derive(Clone)]
pub(super) struct Memory {
    next: Vec<u64>,
    live: Vec<u64>,
    blocks: BTreeMap<u64, Block>,
}

/// Why memory could not be reserved.
pub(super) enum Exhausted {
    /// More than the device's total memory would be live.
    Capacity,
    /// The device's address range is used up (freed ranges are never reused).
    AddressSpace,
}

impl Memory {
    pub(super) fn new(devices: usize) -> Memory {
        Memory { next: vec![0; devices], live: vec![0; devices], blocks: BTreeMap::new() }
    }

    /// A zeroed allocation of `size > 0` bytes on `device`, `capacity` bytes at most live.
    pub(super) fn alloc(
        &mut self,
        device: usize,
        size: u64,
        capacity: u64,
        pool: Option<usize>,
    ) -> Result<u64, Exhausted> {
        let live = self.live[device];
        if live.checked_add(size).is_none_or(|total| total > capacity) {
            return Err(Exhausted::Capacity);
        }
        // A 256-byte guard gap after each block: a kernel running past its end faults.
        let step = size.div_ceil(ALIGN).saturating_add(1).saturating_mul(ALIGN);
        let offset = self.next[device];
        if offset.saturating_add(step) > SPAN {
            return Err(Exhausted::AddressSpace);
        }
        let len = usize::try_from(size).map_err(|_| Exhausted::Capacity)?;
        let base = BASE + device as u64 * SPAN + offset;
        self.next[device] = offset + step;
        self.live[device] = live + size;
        self.blocks.insert(base, Block { base, device, pool, bytes: vec![0; len] });
        Ok(base)
    }

    /// Removes the allocation starting exactly at `base`.
    pub(super) fn free(&mut self, base: u64) -> Option<Block> {
        let block = self.blocks.remove(&base)?;
        self.live[block.device] -= block.size();
        Some(block)
    }

    /// The allocation holding `addr`.
    pub(super) fn find(&self, addr: u64) -> Option<&Block> {
        let (_, block) = self.blocks.range(..=addr).next_back()?;
        (addr < block.base + block.size()).then_some(block)
    }

    /// The allocation holding all of `[addr, addr + len)` (`len > 0`), and the offset of `addr` in it.
    pub(super) fn span(&self, addr: u64, len: u64) -> Option<(&Block, usize)> {
        let block = self.find(addr)?;
        let offset = addr - block.base;
        (offset.checked_add(len)? <= block.size()).then_some((block, offset as usize))
    }

    /// Mutable [`Memory::span`].
    pub(super) fn span_mut(&mut self, addr: u64, len: u64) -> Option<(&mut Block, usize)> {
        let (_, block) = self.blocks.range_mut(..=addr).next_back()?;
        let offset = addr.checked_sub(block.base)?;
        (offset.checked_add(len)? <= block.size()).then_some((block, offset as usize))
    }

    /// Base addresses of every allocation on `device` outside any pool.
    pub(super) fn legacy_on(&self, device: usize) -> Vec<u64> {
        self.blocks.values().filter(|b| b.device == device && b.pool.is_none()).map(|b| b.base).collect()
    }

    /// How many allocations are live, and their bytes.
    pub(super) fn totals(&self) -> (usize, u64) {
        (self.blocks.len(), self.live.iter().sum())
    }
}

/// Passes one transfer's bytes over a faulty link: the bytes at offsets 0, period, … change.
/// `old` is what the destination held (a write); `None` for a read, where lost bytes read as 0.
/// Touches only the affected bytes: `len / period` of them.
pub(super) fn apply_fault(fault: LinkFault, data: &mut [u8], old: Option<&[u8]>) {
    let period = usize::try_from(fault.period).unwrap_or(usize::MAX).max(1);
    for i in (0..data.len()).step_by(period) {
        data[i] = match fault.kind {
            FaultKind::Corrupt => data[i] ^ fault.xor,
            FaultKind::Drop => old.and_then(|o| o.get(i).copied()).unwrap_or(0),
        };
    }
}
