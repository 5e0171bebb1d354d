//! peerpool's GPU kernels: Rust, `#![no_core]`, compiled to PTX by rustc's nvptx64 backend.
//!
//! Built by `kernels/build.rs` (never by cargo as a crate of its own). Every kernel walks its
//! buffer grid-stride, so any launch shape covers any length. Entry names start with `pp_` and
//! are listed once in `kernels/src/lib.rs` (the `kernels!` table), which a test checks against the PTX.
#![feature(
    no_core,
    lang_items,
    abi_ptx,
    link_llvm_intrinsics,
    intrinsics,
    rustc_attrs,
    repr_simd,
    asm_experimental_arch,
    decl_macro
)]
#![allow(internal_features)]
#![no_core]
#![crate_type = "lib"]

mod gpu;
mod lang;
#[path = "../src/pattern.rs"]
mod pattern;

use gpu::{V4, at, grid_stride, thread_index};
use pattern::pattern;

/// `words[i] = pattern(i, seed)` for every `i < len`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn pp_fill(words: *mut u32, len: u64, seed: u32) {
    let mut i = thread_index();
    let stride = grid_stride();
    while i < len {
        unsafe { *at(words, i) = pattern(i, seed) };
        i += stride;
    }
}

/// Compares `words` with the pattern. `result[0]` (start 0) gains the number of mismatching
/// words and `result[1]` (start `u64::MAX`) becomes the first mismatching word index. Only
/// threads that saw a mismatch touch `result`, so a clean buffer costs no atomics.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn pp_check(words: *const u32, len: u64, seed: u32, result: *mut u64) {
    let mut i = thread_index();
    let stride = grid_stride();
    let mut bad = 0u64;
    let mut first = 0xFFFF_FFFF_FFFF_FFFFu64;
    while i < len {
        if unsafe { *at(words, i) } != pattern(i, seed) {
            if bad == 0 {
                first = i; // grid-stride visits this thread's indices in increasing order
            }
            bad += 1;
        }
        i += stride;
    }
    if bad != 0 {
        unsafe {
            gpu::atomic_add_u64(at(result, 0), bad);
            gpu::atomic_min_u64(at(result, 1), first);
        }
    }
}

/// `dst[i] = src[i]` in 16-byte vectors (`ld.global.v4` / `st.global.v4`); `len` counts vectors.
///
/// Four loads are issued before the first store. On the H200s one load per round read just as
/// fast: NVLink's packet protocol, not loads in flight, holds kernels at 0.94 of the copy engine
/// (README, `docs/hardware/2026-11-30-nvlink-paths`). The unrolled form stays because it is the
/// one measured.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn pp_copy16(dst: *mut V4, src: *const V4, len: u64) {
    let mut i = thread_index();
    let stride = grid_stride();
    while i + 3 * stride < len {
        let (j, k, l) = (i + stride, i + 2 * stride, i + 3 * stride);
        let (a, b, c, d) = unsafe { (*at(src, i), *at(src, j), *at(src, k), *at(src, l)) };
        unsafe {
            *at(dst, i) = a;
            *at(dst, j) = b;
            *at(dst, k) = c;
            *at(dst, l) = d;
        }
        i += 4 * stride;
    }
    while i < len {
        unsafe { *at(dst, i) = *at(src, i) };
        i += stride;
    }
}

/// Every thread adds 1 to `counters[thread % slots]`, `reps` times, with system-scope atomics
/// (`atom.add.sys`), so increments from several GPUs on one allocation all count.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn pp_atomic_add_sys(counters: *mut u32, slots: u64, reps: u32) {
    let slot = unsafe { gpu::rem(thread_index(), slots) };
    let counter = unsafe { at(counters, slot) };
    let mut r = 0u32;
    while r < reps {
        unsafe { gpu::atomic_add_sys_u32(counter, 1) };
        r += 1;
    }
}

/// Reads `len` 16-byte vectors and folds them into one word per thread, stored to
/// `sink[thread]` only when it equals `never` (the host picks a value it never is), so the
/// loads cannot be optimised away while nothing is written: a pure read, for bandwidth.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn pp_read16(src: *const V4, len: u64, sink: *mut u32, never: u32) {
    let t = thread_index();
    let mut i = t;
    let stride = grid_stride();
    let mut folded = V4([0; 4]);
    // Four independent loads per round, as in `pp_copy16` (measured no faster than one).
    while i + 3 * stride < len {
        let (a, b, c, d) = unsafe { (*at(src, i), *at(src, i + stride), *at(src, i + 2 * stride), *at(src, i + 3 * stride)) };
        folded = unsafe { gpu::simd_xor(gpu::simd_xor(folded, gpu::simd_xor(a, b)), gpu::simd_xor(c, d)) };
        i += 4 * stride;
    }
    while i < len {
        folded = unsafe { gpu::simd_xor(folded, *at(src, i)) };
        i += stride;
    }
    let folded: u32 = unsafe { gpu::simd_reduce_xor(folded) };
    if folded == never {
        unsafe { *at(sink, t) = folded };
    }
}

/// `pp_read16` through the non-coherent read-only path (`ld.global.nc.v4`): a variant the
/// benchmark measures beside it, to see which load path reads peer memory fastest.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn pp_read16_nc(src: *const V4, len: u64, sink: *mut u32, never: u32) {
    let t = thread_index();
    let mut i = t;
    let stride = grid_stride();
    let mut folded = 0u32;
    while i + 3 * stride < len {
        let (a, b, c, d) = unsafe {
            (gpu::load_nc(at(src, i)), gpu::load_nc(at(src, i + stride)), gpu::load_nc(at(src, i + 2 * stride)), gpu::load_nc(at(src, i + 3 * stride)))
        };
        folded = folded ^ a ^ b ^ c ^ d;
        i += 4 * stride;
    }
    while i < len {
        folded = folded ^ unsafe { gpu::load_nc(at(src, i)) };
        i += stride;
    }
    if folded == never {
        unsafe { *at(sink, t) = folded };
    }
}

/// One thread follows `next` from index 0 for `steps` hops and stores where it ended in
/// `out[0]`: each load depends on the last, so the time per hop is the access latency.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn pp_chase(next: *const u32, steps: u64, out: *mut u32) {
    if thread_index() != 0 {
        return;
    }
    let mut index = 0u32;
    let mut hop = 0u64;
    while hop < steps {
        index = unsafe { *at(next, index as u64) };
        hop += 1;
    }
    unsafe { *out = index };
}
