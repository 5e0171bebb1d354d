//! What a kernel on a device may touch, and how its accesses move bytes: every range checked
//! against the device's view first (a pool it was not granted, memory past an allocation's end
//! or registered read-only is a fault), then read or written through the link between the
//! device and the memory's owner, whose faults apply. peerpool's kernels (`kernels.rs`) and
//! kernels run from PTX (`ptx_kernels.rs`) both access memory here.

use super::memory::apply_fault;
use super::state::State;
use peerpool::CudaCode;

/// A device fault: the code the whole simulated process dies with.
pub(super) struct Trap(pub(super) CudaCode);

pub(super) const ILLEGAL: Trap = Trap(CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS);

/// Checks that `device` may touch `[addr, addr + len)`, aligned to `align`.
pub(super) fn probe(state: &State, device: usize, addr: u64, len: u64, align: u64) -> Result<(), Trap> {
    if len == 0 {
        return Ok(());
    }
    if !addr.is_multiple_of(align) {
        return Err(Trap(CudaCode::CUDA_ERROR_MISALIGNED_ADDRESS));
    }
    match state.memory.span(addr, len) {
        Some((block, _)) if state.can_access(device, block) => Ok(()),
        _ => Err(ILLEGAL),
    }
}

/// As [`probe`], for a write: memory registered read-only faults too.
pub(super) fn probe_write(state: &State, device: usize, addr: u64, len: u64, align: u64) -> Result<(), Trap> {
    probe(state, device, addr, len, align)?;
    state.check_writable(addr, len).map_err(|_| ILLEGAL)
}

/// What `device` reads at `[addr, addr + len)`, after the link from the memory's device.
pub(super) fn load(state: &State, device: usize, addr: u64, len: u64, align: u64) -> Result<Vec<u8>, Trap> {
    probe(state, device, addr, len, align)?;
    let Some((block, offset)) = state.memory.span(addr, len) else { return Ok(Vec::new()) };
    let mut data = block.read(offset, len as usize);
    if let Some(fault) = state.topo.fault(block.device, device) {
        apply_fault(fault, offset, &mut data, None);
    }
    Ok(data)
}

/// Writes `data` at `addr` from `device`, through the link to the memory's device. The range
/// has been probed.
pub(super) fn store(state: &mut State, device: usize, addr: u64, mut data: Vec<u8>) {
    let owner = state.memory.find(addr).map(|b| b.device);
    let fault = owner.and_then(|owner| state.topo.fault(device, owner));
    if let Some((block, offset)) = state.memory.span(addr, data.len() as u64) {
        block.backing().with(offset, data.len(), |target| {
            if let Some(fault) = fault {
                apply_fault(fault, offset, &mut data, Some(target));
            }
            target.copy_from_slice(&data);
        });
    }
}

/// An atomic read-modify-write of `[addr, addr + len)` from `device`: done at the memory, so
/// only the updated bytes cross the link back (faults apply to them as to a write).
pub(super) fn update(
    state: &mut State,
    device: usize,
    addr: u64,
    len: u64,
    align: u64,
    f: impl FnOnce(&mut [u8]),
) -> Result<(), Trap> {
    probe_write(state, device, addr, len, align)?;
    let Some((block, offset)) = state.memory.span(addr, len) else { return Ok(()) };
    let fault = state.topo.fault(device, block.device);
    // Under the bytes' lock from read to write: atomic for every process that maps them.
    block.backing().with(offset, len as usize, |target| {
        let mut data = target.to_vec();
        f(&mut data);
        if let Some(fault) = fault {
            apply_fault(fault, offset, &mut data, Some(target));
        }
        target.copy_from_slice(&data);
    });
    Ok(())
}
