//! Copies and memsets: what each moves, which device's engine moves it, and what a faulty link
//! does to the bytes on the way.

use super::memory::apply_fault;
use super::state::{SimResult, State};
use super::topology::LinkFault;
use peerpool::CudaCode;
use peerpool::driver::PeerCopy;

/// Host to device, run by `device`'s engine.
pub(super) fn htod(s: &mut State, device: usize, dst: u64, src: &[u8]) -> SimResult<()> {
    if src.is_empty() {
        return Ok(());
    }
    s.check_copy(device, dst, src.len() as u64)?;
    s.check_writable(dst, src.len() as u64)?;
    if let Some((block, offset)) = s.memory.span(dst, src.len() as u64) {
        block.write(offset, src);
    }
    Ok(())
}

/// Device to host, run by `device`'s engine.
pub(super) fn dtoh(s: &mut State, device: usize, dst: &mut [u8], src: u64) -> SimResult<()> {
    if dst.is_empty() {
        return Ok(());
    }
    s.check_copy(device, src, dst.len() as u64)?;
    if let Some((block, offset)) = s.memory.span(src, dst.len() as u64) {
        block.backing().with(offset, dst.len(), |bytes| dst.copy_from_slice(bytes));
    }
    Ok(())
}

/// Device to device on unified addresses, run by `device`'s engine.
pub(super) fn dtod(s: &mut State, device: usize, dst: u64, src: u64, bytes: usize) -> SimResult<()> {
    if bytes == 0 {
        return Ok(());
    }
    s.check_copy(device, src, bytes as u64)?;
    s.check_copy(device, dst, bytes as u64)?;
    s.check_writable(dst, bytes as u64)?;
    copy(s, dst, src, bytes);
    Ok(())
}

/// `cuMemcpyPeer`: contexts named explicitly; the driver stages the copy itself, granted or not.
pub(super) fn peer(s: &mut State, c: PeerCopy) -> SimResult<()> {
    if s.context_device(c.dst_ctx.0).is_none() || s.context_device(c.src_ctx.0).is_none() {
        return Err(CudaCode::CUDA_ERROR_INVALID_CONTEXT.into());
    }
    if c.bytes == 0 {
        return Ok(());
    }
    if s.memory.span(c.src.0, c.bytes as u64).is_none() || s.memory.span(c.dst.0, c.bytes as u64).is_none() {
        return Err(CudaCode::CUDA_ERROR_INVALID_VALUE.into());
    }
    s.check_writable(c.dst.0, c.bytes as u64)?;
    copy(s, c.dst.0, c.src.0, c.bytes);
    Ok(())
}

/// `count` copies of `unit` (1, 2 or 4 bytes, aligned to its size) at `dst`, by `device`'s engine.
pub(super) fn memset(s: &mut State, device: usize, dst: u64, unit: &[u8], count: usize) -> SimResult<()> {
    if count == 0 {
        return Ok(());
    }
    let Some(bytes) = count.checked_mul(unit.len()) else { return Err(CudaCode::CUDA_ERROR_INVALID_VALUE.into()) };
    if !dst.is_multiple_of(unit.len() as u64) {
        return Err(CudaCode::CUDA_ERROR_INVALID_VALUE.into());
    }
    let owner = s.check_engine(device, dst, bytes as u64)?;
    s.check_writable(dst, bytes as u64)?;
    let data: Vec<u8> = unit.iter().copied().cycle().take(bytes).collect();
    land(s, dst, data, s.topo.fault(device, owner));
    Ok(())
}

/// `height` rows of `width` copies of `unit`, `pitch` bytes apart, from `dst`: every row is
/// checked before any is written, so a bad row changes nothing.
#[allow(clippy::too_many_arguments)]
pub(super) fn memset_2d(
    s: &mut State,
    device: usize,
    dst: u64,
    pitch: usize,
    unit: &[u8],
    width: usize,
    height: usize,
) -> SimResult<()> {
    let row_bytes = width.checked_mul(unit.len()).ok_or(CudaCode::CUDA_ERROR_INVALID_VALUE)?;
    if width == 0 || height == 0 {
        return Ok(());
    }
    if pitch < row_bytes || !dst.is_multiple_of(unit.len() as u64) || !pitch.is_multiple_of(unit.len()) {
        return Err(CudaCode::CUDA_ERROR_INVALID_VALUE.into());
    }
    let rows: Vec<u64> = (0..height as u64)
        .map(|r| r.checked_mul(pitch as u64).and_then(|o| dst.checked_add(o)))
        .collect::<Option<_>>()
        .ok_or(CudaCode::CUDA_ERROR_INVALID_VALUE)?;
    for &row in &rows {
        s.check_engine(device, row, row_bytes as u64)?;
        s.check_writable(row, row_bytes as u64)?;
    }
    for row in rows {
        memset(s, device, row, unit, width)?;
    }
    Ok(())
}

/// Copies `bytes` from `src` to `dst` (both checked), through the link between their devices.
fn copy(s: &mut State, dst: u64, src: u64, bytes: usize) {
    let Some((from, offset)) = s.memory.span(src, bytes as u64) else { return };
    let (src_device, data) = (from.device, from.read(offset, bytes));
    let dst_device = s.memory.find(dst).map_or(src_device, |b| b.device);
    land(s, dst, data, s.topo.fault(src_device, dst_device));
}

/// Writes `data` at `dst` (checked), damaged on the way where the link has a `fault`.
fn land(s: &State, dst: u64, mut data: Vec<u8>, fault: Option<LinkFault>) {
    let bytes = data.len();
    if let Some((block, offset)) = s.memory.span(dst, bytes as u64) {
        block.backing().with(offset, bytes, |target| {
            if let Some(fault) = fault {
                apply_fault(fault, 0, &mut data, Some(target));
            }
            target.copy_from_slice(&data);
        });
    }
}
