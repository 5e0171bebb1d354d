//! Kernels in Rust for rustc's nvptx64 backend, whose `match` statements become jump tables
//! (`brx.idx` over a `.branchtargets` list), which nvcc and NVRTC do not emit. Each takes the
//! corpus's parameters `(const u32 *in, u32 *out, u32 n)` (`../corpus/README.md`). Built as
//! `README.md` says; the lang items and thread indexing are peerpool's own kernels'.
#![feature(no_core, lang_items, abi_ptx, link_llvm_intrinsics, intrinsics, rustc_attrs, repr_simd, asm_experimental_arch, decl_macro)]
#![allow(internal_features)]
#![no_core]
#![crate_type = "lib"]

#[path = "../../../../kernels/device/gpu.rs"]
#[allow(dead_code)]
mod gpu;
#[path = "../../../../kernels/device/lang.rs"]
mod lang;

use gpu::{at, grid_stride, thread_index};

/// One of twelve functions of `v`, chosen by `k`.
#[inline(always)]
fn pick(k: u32, v: u32) -> u32 {
    match k {
        0 => v * 3,
        1 => v ^ 0x55,
        2 => v + 100,
        3 => v * 7,
        4 => v * v,
        5 => v ^ 0xffff,
        6 => v + 9,
        7 => v * 13,
        8 => v ^ 0x1000,
        9 => v & 0xff,
        10 => v * 11,
        11 => v + 77,
        _ => 42,
    }
}

/// `out[i] = pick(in[i] & 15, in[i])`: each lane of a warp takes its own arm.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn rs_jump_table(input: *const u32, out: *mut u32, n: u32) {
    let mut i = thread_index();
    while i < n as u64 {
        let v = unsafe { *at(input, i) };
        unsafe { *at(out, i) = pick(v & 15, v) };
        i += grid_stride();
    }
}

/// `out[i] = pick(w, in[i])` with `w` the thread's warp in the grid modulo 16: every lane of
/// a warp takes the same arm.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn rs_warp_table(input: *const u32, out: *mut u32, n: u32) {
    let mut i = thread_index();
    while i < n as u64 {
        let v = unsafe { *at(input, i) };
        unsafe { *at(out, i) = pick(((i >> 5) & 15) as u32, v) };
        i += grid_stride();
    }
}

/// A bytecode machine: thread `i` runs sixteen 3-bit instructions read from `in[i]` and
/// `in[i + 1]` on an accumulator that starts as `i`, a `match` in a loop.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn rs_bytecode(input: *const u32, out: *mut u32, n: u32) {
    let mut i = thread_index();
    while i < n as u64 {
        let v = unsafe { *at(input, i) };
        let next = if i + 1 < n as u64 { i + 1 } else { 0 };
        let mut code = (v as u64) + (unsafe { *at(input, next) } as u64) * 0x1_0000_0000;
        let mut acc = i as u32;
        let mut step = 0u32;
        while step < 16 {
            acc = match (code & 7) as u32 {
                0 => acc + v,
                1 => acc * 3,
                2 => acc ^ 0xdead_beef,
                3 => acc * acc,
                4 => acc ^ ((acc as u64 >> 7) as u32),
                5 => acc + 0x0123_4567,
                6 => acc * 0x0100_0193,
                _ => acc ^ v,
            };
            code = code >> 3;
            step += 1;
        }
        unsafe { *at(out, i) = acc };
        i += grid_stride();
    }
}
