//! Thread indexing, pointer arithmetic and atomics: the few device primitives the kernels use.

use crate::lang::Copy;

/// Sixteen bytes moved as one vector load or store (`.v4.b32`).
#[repr(simd)]
pub struct V4(pub [u32; 4]);
impl Copy for V4 {}

#[rustc_builtin_macro]
pub macro asm("assembly template", $(operands,)* $(options($(option),*))?) {
    /* compiler built-in */
}

#[rustc_intrinsic]
unsafe fn offset<Ptr, Delta>(dst: Ptr, offset: Delta) -> Ptr;
#[rustc_intrinsic]
unsafe fn unchecked_rem<T: Copy>(x: T, y: T) -> T;
/// Lane-wise `a ^ b` of two vectors.
#[rustc_intrinsic]
pub unsafe fn simd_xor<T>(a: T, b: T) -> T;
/// The xor of a vector's lanes.
#[rustc_intrinsic]
pub unsafe fn simd_reduce_xor<T, U>(x: T) -> U;

unsafe extern "C" {
    #[link_name = "llvm.nvvm.read.ptx.sreg.tid.x"]
    safe fn tid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ntid.x"]
    safe fn ntid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ctaid.x"]
    safe fn ctaid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.nctaid.x"]
    safe fn nctaid_x() -> u32;
}

/// This thread's index in the whole one-dimensional grid.
#[inline(always)]
pub fn thread_index() -> u64 {
    // Widen before multiplying: a large grid times its block size can pass 2^32.
    (ctaid_x() as u64) * (ntid_x() as u64) + (tid_x() as u64)
}

/// The number of threads in the grid: the step of a grid-stride loop.
#[inline(always)]
pub fn grid_stride() -> u64 {
    (nctaid_x() as u64) * (ntid_x() as u64)
}

/// `base + index` elements. Caller: `base` points to at least `index + 1` elements.
#[inline(always)]
pub unsafe fn at<T>(base: *const T, index: u64) -> *mut T {
    unsafe { offset(base, index as isize) as *mut T }
}

/// `a % b`. Caller: `b != 0`.
#[inline(always)]
pub unsafe fn rem(a: u64, b: u64) -> u64 {
    unsafe { unchecked_rem(a, b) }
}

#[inline(always)]
pub unsafe fn atomic_add_u64(target: *mut u64, value: u64) {
    let _old: u64;
    unsafe { asm!("atom.global.add.u64 {0}, [{1}], {2};", out(reg64) _old, in(reg64) target, in(reg64) value) };
}

#[inline(always)]
pub unsafe fn atomic_min_u64(target: *mut u64, value: u64) {
    let _old: u64;
    unsafe { asm!("atom.global.min.u64 {0}, [{1}], {2};", out(reg64) _old, in(reg64) target, in(reg64) value) };
}

/// A system-scope atomic add on a generic address: coherent with other GPUs and the host.
#[inline(always)]
pub unsafe fn atomic_add_sys_u32(target: *mut u32, value: u32) {
    let _old: u32;
    unsafe { asm!("atom.add.sys.u32 {0}, [{1}], {2};", out(reg32) _old, in(reg64) target, in(reg32) value) };
}

/// Loads 16 bytes through the non-coherent read-only path and returns their xor (the caller
/// only folds them). Caller: `p` is 16-byte aligned and readable for the kernel's lifetime.
#[inline(always)]
pub unsafe fn load_nc(p: *mut V4) -> u32 {
    let (a, b, c, d): (u32, u32, u32, u32);
    unsafe {
        asm!("ld.global.nc.v4.u32 {{{0}, {1}, {2}, {3}}}, [{4}];", out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) p)
    };
    a ^ b ^ c ^ d
}
