//! The host thread's floating-point environment held at IEEE's defaults while a launch runs.
//! The executor computes floats with the host's own instructions, so a program built with
//! fast-math (which sets flush-to-zero at its start: MXCSR's FTZ and DAZ on x86-64, FPCR's FZ
//! on aarch64) would see the GPU's subnormals flushed. Elsewhere the environment is left as it
//! is.

/// While alive, the thread computes in the default environment; dropped, the thread's own
/// environment is back, exactly as it was.
pub(super) struct Ieee {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    saved: control::Word,
}

#[cfg(target_arch = "x86_64")]
mod control {
    use std::arch::asm;

    /// MXCSR.
    pub(super) type Word = u32;
    /// Every exception masked, round to nearest, no flush to zero, no denormals as zero.
    pub(super) const DEFAULT: Word = 0x1f80;
    /// The sticky exception flags, status rather than control: kept as the thread had them.
    pub(super) const FLAGS: Word = 0x3f;

    pub(super) fn read() -> Word {
        let mut csr: Word = 0;
        // SAFETY: stores MXCSR into `csr` and touches nothing else.
        unsafe { asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags)) };
        csr
    }

    /// # Safety
    /// `csr` must be the thread's own saved value or one that differs from [`DEFAULT`] only in
    /// the exception flags: code compiled from Rust assumes that environment.
    pub(super) unsafe fn write(csr: Word) {
        // SAFETY: loads MXCSR from `csr` and touches nothing else; the caller vouches for the value.
        unsafe { asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, preserves_flags)) };
    }
}

#[cfg(target_arch = "aarch64")]
mod control {
    use std::arch::asm;

    /// FPCR (its exception flags live apart, in FPSR, and are not touched).
    pub(super) type Word = u64;
    /// Round to nearest, no flush to zero (FZ, FZ16), no default NaN, no traps: Linux's start.
    pub(super) const DEFAULT: Word = 0;
    /// FPCR holds no status.
    pub(super) const FLAGS: Word = 0;

    pub(super) fn read() -> Word {
        let fpcr: Word;
        // SAFETY: reads FPCR into a register and touches nothing else.
        unsafe { asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack, preserves_flags)) };
        fpcr
    }

    /// # Safety
    /// `fpcr` must be the thread's own saved value or [`DEFAULT`]: code compiled from Rust
    /// assumes that environment.
    pub(super) unsafe fn write(fpcr: Word) {
        // SAFETY: writes FPCR and touches nothing else; the caller vouches for the value.
        unsafe { asm!("msr fpcr, {}", in(reg) fpcr, options(nomem, nostack, preserves_flags)) };
    }
}

impl Ieee {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub(super) fn hold() -> Ieee {
        let saved = control::read();
        if saved & !control::FLAGS != control::DEFAULT {
            // SAFETY: the default controls, which is what Rust code assumes.
            unsafe { control::write(control::DEFAULT | saved & control::FLAGS) };
        }
        Ieee { saved }
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub(super) fn hold() -> Ieee {
        Ieee {}
    }
}

impl Drop for Ieee {
    fn drop(&mut self) {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        if self.saved & !control::FLAGS != control::DEFAULT {
            // SAFETY: the thread's own environment, as it was when the launch began.
            unsafe { control::write(self.saved) };
        }
    }
}
