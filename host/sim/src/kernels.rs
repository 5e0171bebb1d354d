//! peerpool's kernels run natively on the simulator's bytes, with the semantics of
//! `kernels/device/lib.rs`: every memory range a kernel touches is checked against the
//! launching device's access first; a denied or out-of-bounds access kills the simulated
//! process with a sticky error and changes no byte.

use super::device_access::{ILLEGAL, Trap, load, probe_write, store, update};
use super::state::{SimResult, State};
use super::timing::Traffic;
use peerpool::CudaCode;
use peerpool::driver::{KernelArg, LaunchShape};
pub(super) use peerpool_kernels::Kernel;
use peerpool_kernels::pattern::pattern;

/// The most parameters a kernel has: launches are decoded into this many values.
pub(super) const MAX_PARAMS: usize = 4;
const _: () = {
    let mut i = 0;
    while i < Kernel::ALL.len() {
        assert!(Kernel::ALL[i].params().len() <= MAX_PARAMS, "raise MAX_PARAMS for the new kernel");
        i += 1;
    }
};

/// The launch's argument values, by parameter, as the driver reads its parameter buffer. A bad
/// shape or argument list is `CUDA_ERROR_INVALID_VALUE`, refused at launch (not sticky).
pub(super) fn arguments(kernel: Kernel, shape: LaunchShape, args: &[KernelArg]) -> SimResult<[u64; MAX_PARAMS]> {
    let invalid = || CudaCode::CUDA_ERROR_INVALID_VALUE.into();
    if shape.grid == 0 || shape.grid > i32::MAX as u32 || shape.block == 0 || shape.block > 1024 {
        return Err(invalid());
    }
    let params = kernel.params();
    if args.len() != params.len() {
        return Err(invalid());
    }
    let mut values = [0u64; MAX_PARAMS];
    // By width, as the driver reads its parameter buffer: an address and a count are both 8
    // bytes to it (a C caller through the shim passes bytes, not kinds).
    for ((arg, param), value) in args.iter().zip(params).zip(values.iter_mut()) {
        *value = match (*arg, param.kind.width()) {
            (KernelArg::Ptr(p), 8) => p.0,
            (KernelArg::U64(v), 8) => v,
            (KernelArg::U32(v), 4) => v as u64,
            _ => return Err(invalid()),
        };
    }
    // `rem` by zero: unspecified on the GPU.
    if kernel == Kernel::AtomicAddSys && values[1] == 0 {
        return Err(invalid());
    }
    Ok(values)
}

/// The parameter buffer of `values`, each aligned to its width, as the driver lays it out.
pub(super) fn buffer(kernel: Kernel, values: &[u64; MAX_PARAMS]) -> Vec<u8> {
    let mut buffer = Vec::new();
    for (value, param) in values.iter().zip(kernel.params()) {
        let width = param.kind.width();
        buffer.resize(buffer.len().next_multiple_of(width), 0);
        buffer.extend(&value.to_le_bytes()[..width]);
    }
    buffer
}

/// `cuLaunchKernel` on `device`, by the kernel's hand-written semantics, with the values
/// [`arguments`] read. A fault inside the kernel kills the process, so the error surfaces at
/// the next call, as a real launch's does at the next synchronise.
pub(super) fn launch(state: &mut State, device: usize, kernel: Kernel, shape: LaunchShape, values: [u64; MAX_PARAMS]) {
    let threads = shape.grid as u64 * shape.block as u64;
    let [a, b, c, d] = values;
    let run = match kernel {
        Kernel::Fill => fill(state, device, a, b, c as u32),
        Kernel::Check => check(state, device, a, b, c as u32, d),
        Kernel::Copy16 => copy16(state, device, a, b, c),
        Kernel::AtomicAddSys => atomic_add_sys(state, device, a, b, c as u32, threads),
        // Both folds are the xor of every word a thread read: the load path is all that differs.
        Kernel::Read16 | Kernel::Read16Nc => read16(state, device, a, b, c, d as u32, threads),
        Kernel::Chase => chase(state, device, a, b, c),
    };
    if let Err(Trap(code)) = run {
        state.dead = Some(code);
    }
}

/// What a launch that succeeded moved, by whose memory (for the clock): the kernels' own
/// arguments give the ranges, as `launch` read them.
pub(super) fn traffic(state: &State, device: usize, kernel: Kernel, shape: LaunchShape, args: &[KernelArg]) -> Traffic {
    let value = |i: usize| match args.get(i) {
        Some(KernelArg::Ptr(p)) => p.0,
        Some(KernelArg::U64(v)) => *v,
        Some(KernelArg::U32(v)) => *v as u64,
        None => 0,
    };
    let local = |addr: u64| state.memory.find(addr).is_none_or(|b| b.device == device);
    let mut t = Traffic::default();
    let mut bytes = |addr: u64, n: u64| {
        let side = t.side(local(addr));
        side.bytes = side.bytes.saturating_add(n);
    };
    match kernel {
        Kernel::Fill | Kernel::Check => bytes(value(0), value(1).saturating_mul(4)),
        Kernel::Copy16 => {
            bytes(value(1), value(2).saturating_mul(16));
            bytes(value(0), value(2).saturating_mul(16));
        }
        Kernel::Read16 | Kernel::Read16Nc => bytes(value(0), value(1).saturating_mul(16)),
        Kernel::AtomicAddSys => {
            t.side(local(value(0))).atomics = (shape.grid as u64 * shape.block as u64).saturating_mul(value(2));
        }
        Kernel::Chase => t.side(local(value(0))).loads = value(1),
    }
    t
}

/// `words[i] = pattern(i, seed)` for `i < len`.
fn fill(state: &mut State, device: usize, words: u64, len: u64, seed: u32) -> Result<(), Trap> {
    let bytes = len.checked_mul(4).ok_or(ILLEGAL)?;
    probe_write(state, device, words, bytes, 4)?;
    let mut data = vec![0u8; bytes as usize];
    for (i, word) in data.chunks_exact_mut(4).enumerate() {
        word.copy_from_slice(&pattern(i as u64, seed).to_le_bytes());
    }
    store(state, device, words, data);
    Ok(())
}

/// `result[0] +=` mismatching words, `result[1] = min(result[1], first)`; `result` is touched
/// only when a word mismatches, as on the GPU.
fn check(state: &mut State, device: usize, words: u64, len: u64, seed: u32, result: u64) -> Result<(), Trap> {
    let bytes = len.checked_mul(4).ok_or(ILLEGAL)?;
    let seen = load(state, device, words, bytes, 4)?;
    let mut bad = 0u64;
    let mut first = u64::MAX;
    for (i, w) in seen.chunks_exact(4).enumerate() {
        if u32::from_le_bytes([w[0], w[1], w[2], w[3]]) != pattern(i as u64, seed) {
            first = first.min(i as u64);
            bad += 1;
        }
    }
    if bad == 0 {
        return Ok(());
    }
    update(state, device, result, 16, 8, |r| {
        let count = u64::from_le_bytes(word8(&r[..8])).wrapping_add(bad);
        let least = u64::from_le_bytes(word8(&r[8..])).min(first);
        r[..8].copy_from_slice(&count.to_le_bytes());
        r[8..].copy_from_slice(&least.to_le_bytes());
    })
}

/// `dst[i] = src[i]` for `len` 16-byte vectors (memmove semantics where the GPU would race).
fn copy16(state: &mut State, device: usize, dst: u64, src: u64, len: u64) -> Result<(), Trap> {
    let bytes = len.checked_mul(16).ok_or(ILLEGAL)?;
    let data = load(state, device, src, bytes, 16)?;
    probe_write(state, device, dst, bytes, 16)?;
    store(state, device, dst, data);
    Ok(())
}

/// Thread `t < threads` adds 1 to `counters[t % slots]` `reps` times: counter `s` gains
/// `reps` × (the number of such threads), modulo 2^32.
fn atomic_add_sys(
    state: &mut State,
    device: usize,
    counters: u64,
    slots: u64,
    reps: u32,
    threads: u64,
) -> Result<(), Trap> {
    let touched = slots.min(threads);
    let (per, extra) = (threads / slots, threads % slots);
    update(state, device, counters, touched * 4, 4, |bytes| {
        for (s, c) in bytes.chunks_exact_mut(4).enumerate() {
            let adds = (per + u64::from((s as u64) < extra)).wrapping_mul(reps as u64) as u32;
            let value = u32::from_le_bytes([c[0], c[1], c[2], c[3]]).wrapping_add(adds);
            c.copy_from_slice(&value.to_le_bytes());
        }
    })
}

/// Reads `len` vectors; thread `t` writes its xor-fold to `sink[t]` only when it equals `never`.
fn read16(
    state: &mut State,
    device: usize,
    src: u64,
    len: u64,
    sink: u64,
    never: u32,
    threads: u64,
) -> Result<(), Trap> {
    let bytes = len.checked_mul(16).ok_or(ILLEGAL)?;
    let data = load(state, device, src, bytes, 16)?;
    let mut folds = vec![0u32; threads.min(len) as usize];
    for (i, v) in data.chunks_exact(4).enumerate() {
        let t = (i as u64 / 4) % threads;
        folds[t as usize] ^= u32::from_le_bytes([v[0], v[1], v[2], v[3]]);
    }
    folds.resize(threads as usize, 0);
    for (t, fold) in folds.into_iter().enumerate().filter(|&(_, f)| f == never) {
        update(state, device, sink + t as u64 * 4, 4, 4, |w| w.copy_from_slice(&fold.to_le_bytes()))?;
    }
    Ok(())
}

/// One thread: `index = next[index]` from 0, `steps` times; `out[0] = index`.
fn chase(state: &mut State, device: usize, next: u64, steps: u64, out: u64) -> Result<(), Trap> {
    let mut index = 0u32;
    for _ in 0..steps {
        let word = load(state, device, next + index as u64 * 4, 4, 4)?;
        index = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
    }
    update(state, device, out, 4, 4, |w| w.copy_from_slice(&index.to_le_bytes()))
}

fn word8(b: &[u8]) -> [u8; 8] {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[..8]);
    w
}
