//! The host thread's floating-point environment held at IEEE's defaults while a launch runs.
//! The executor computes floats with the host's own instructions, so a program built with
//! fast-math (which sets flush-to-zero and denormals-are-zero at its start) would see the
//! GPU's subnormals flushed. On x86-64 that is MXCSR; elsewhere the environment is left as it
//! is.

/// While alive, the thread computes in the default environment; dropped, the thread's own
/// environment is back, exactly as it was.
pub(super) struct Ieee {
    #[cfg(target_arch = "x86_64")]
    saved: u32,
}

#[cfg(target_arch = "x86_64")]
mod mxcsr {
    use std::arch::asm;

    /// Every exception masked, round to nearest, no flush to zero, no denormals as zero.
    pub(super) const DEFAULT: u32 = 0x1f80;
    /// The sticky exception flags, status rather than control.
    pub(super) const FLAGS: u32 = 0x3f;

    pub(super) fn read() -> u32 {
        let mut csr = 0u32;
        // SAFETY: stores MXCSR into `csr` and touches nothing else.
        unsafe { asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags)) };
        csr
    }

    /// # Safety
    /// `csr` must be the thread's own saved value or one that differs from [`DEFAULT`] only in
    /// the exception flags: code compiled from Rust assumes that environment.
    pub(super) unsafe fn write(csr: u32) {
        // SAFETY: loads MXCSR from `csr` and touches nothing else; the caller vouches for the value.
        unsafe { asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, preserves_flags)) };
    }
}

impl Ieee {
    #[cfg(target_arch = "x86_64")]
    pub(super) fn hold() -> Ieee {
        let saved = mxcsr::read();
        if saved & !mxcsr::FLAGS != mxcsr::DEFAULT {
            // SAFETY: the default controls, which is what Rust code assumes.
            unsafe { mxcsr::write(mxcsr::DEFAULT | saved & mxcsr::FLAGS) };
        }
        Ieee { saved }
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn hold() -> Ieee {
        Ieee {}
    }
}

impl Drop for Ieee {
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        if self.saved & !mxcsr::FLAGS != mxcsr::DEFAULT {
            // SAFETY: the thread's own environment, as it was when the launch began.
            unsafe { mxcsr::write(self.saved) };
        }
    }
}
