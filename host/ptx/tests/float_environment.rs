//! The executor's float arithmetic is IEEE whatever floating-point environment the host thread
//! runs in: a program built with fast-math (x86-64's flush-to-zero and denormals-are-zero, or
//! aarch64's flush-to-zero, set at its start) gets the GPU's subnormals, and its own
//! environment back after each launch.
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]

mod common;

use common::{kernel, words};
use std::arch::asm;

/// MXCSR: every exception masked, round to nearest, and flush-to-zero (bit 15) and
/// denormals-are-zero (bit 6), as `-ffast-math` leaves it.
#[cfg(target_arch = "x86_64")]
const FAST_MATH: u64 = 0x1f80 | 1 << 15 | 1 << 6;
/// FPCR: flush-to-zero (bit 24), as `-ffast-math` leaves it.
#[cfg(target_arch = "aarch64")]
const FAST_MATH: u64 = 1 << 24;

/// The thread's float control register.
fn control() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut csr = 0u32;
        // SAFETY: stores MXCSR into `csr`, nothing else.
        unsafe { asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack)) };
        csr as u64
    }
    #[cfg(target_arch = "aarch64")]
    {
        let fpcr: u64;
        // SAFETY: reads FPCR, nothing else.
        unsafe { asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack)) };
        fpcr
    }
}

/// # Safety
/// Only this thread's float environment changes; the caller puts it back.
unsafe fn set_control(value: u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: loads MXCSR, nothing else; the caller restores it.
    unsafe {
        asm!("ldmxcsr [{}]", in(reg) &(value as u32), options(nostack))
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: writes FPCR, nothing else; the caller restores it.
    unsafe {
        asm!("msr fpcr, {}", in(reg) value, options(nomem, nostack))
    };
}

/// Runs `f` with the control register set to `value`; what it returns, and the register as
/// `f` left it.
fn under<R>(value: u64, f: impl FnOnce() -> R) -> (R, u64) {
    let saved = control();
    // SAFETY: restored before returning; `f` is the code under test, whose float results are
    // what is checked.
    unsafe { set_control(value) };
    let r = f();
    let after = control();
    // SAFETY: as above, back to what the thread had.
    unsafe { set_control(saved) };
    (r, after)
}

#[test]
fn subnormals_are_computed_as_on_a_gpu_under_a_fast_math_host_and_its_environment_is_kept() {
    let tiny = 1e-20f32.to_bits();
    let least = 1u32; // the smallest subnormal
    let body = format!(
        "mov.b32 %f1, {tiny};\nmov.b32 %f2, {least};\nmul.rn.f32 %f3, %f1, %f1;\nadd.f32 %f4, %f2, %f2;\n\
         fma.rn.f32 %f5, %f1, %f1, %f2;\ncvt.f64.f32 %fd1, %f2;\nmul.f64 %fd1, %fd1, 0d3FF8000000000000;\n\
         cvt.rn.f32.f64 %f6, %fd1;\nmul.rp.f32 %f0, %f1, %f1;\nsetp.eq.u32 %p1, %r0, 1;\nsetp.eq.u32 %p2, %r0, 2;\n\
         setp.eq.u32 %p3, %r0, 3;\nsetp.eq.u32 %p4, %r0, 4;\nselp.f32 %f7, %f4, %f3, %p1;\nselp.f32 %f7, %f5, %f7, %p2;\n\
         selp.f32 %f7, %f6, %f7, %p3;\nselp.f32 %f7, %f0, %f7, %p4;\nmov.b32 %r1, %f7;\nst.global.u32 [%rd0], %r1;\nret;"
    );
    let module = kernel(&body);
    let (t, l) = (f32::from_bits(tiny), f32::from_bits(least));
    // IEEE, computed here in the default environment: each a nonzero subnormal.
    // The last rounds up: the nearest's neighbour above where the product is inexact.
    let up = (t * t).to_bits() + ((t as f64 * t as f64) > (t * t) as f64) as u32;
    let want = [(t * t).to_bits(), (l + l).to_bits(), t.mul_add(t, l).to_bits(), 2, up];
    assert!([0, 1, 2, 4].iter().all(|&i| want[i] != 0 && want[i] < 0x0080_0000), "subnormal results");
    assert_eq!(words(&module, 5).unwrap(), want, "in the default environment");
    // The environment bites: the host's own product of the same operands is flushed there.
    let (host, _) = under(FAST_MATH, || std::hint::black_box(t) * std::hint::black_box(t));
    assert_eq!(host, 0.0, "the host flushes subnormals under {FAST_MATH:#x}");
    let (got, after) = under(FAST_MATH, || words(&module, 5).unwrap());
    assert_eq!(got, want, "under flush-to-zero");
    assert_eq!(after, FAST_MATH, "the host's environment is left as it was");
}
