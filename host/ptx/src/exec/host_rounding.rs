//! f32 arithmetic in a directed rounding by the host's own instructions, where it has them
//! (x86-64 with AVX-512F, whose scalar instructions carry their rounding: `{rz-sae}`,
//! `{rd-sae}`, `{ru-sae}`). Operands that are not finite and nonzero (or a negative square
//! root, an infinite or NaN addend) go the portable way ([`super::float::directed32`]), so every
//! result is the one it gives; a test checks them against each other.

use super::float::Directed;
use crate::ir::Round;

/// One operation in one rounding, done by the host's instruction. Made only by [`Host::of`],
/// and only where the host has the instruction.
#[derive(Clone, Copy, Debug)]
pub(super) struct Host(unsafe fn(u64, u64, u64) -> u64);

impl Host {
    /// The host's instruction for `op` in `round` (directed), if it has one.
    pub(super) fn of(op: Directed, round: Round) -> Option<Host> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            return x86::of(op, round).map(Host);
        }
        let _ = (op, round);
        None
    }

    /// `op` of the f32 bits `a`, `b` (and `c`), as [`super::float::directed32`] computes it.
    #[inline(always)]
    pub(super) fn run(self, a: u64, b: u64, c: u64) -> u64 {
        // SAFETY: `of` makes a `Host` only where the host has the instructions it runs.
        unsafe { (self.0)(a, b, c) }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Directed, Round};
    use crate::exec::directed::finite_nonzero;
    use crate::exec::float;
    use std::arch::asm;

    /// An `op` of two operands in `mode`: where both are finite and nonzero (for a square
    /// root, `a` positive, and `b` ignored), the instruction `ins`.
    macro_rules! two {
        ($name:ident, $op:ident, $round:ident, $ins:literal, $mode:literal) => {
            #[target_feature(enable = "avx512f")]
            fn $name(a: u64, b: u64, c: u64) -> u64 {
                let sqrt = matches!(Directed::$op, Directed::Sqrt);
                let b = if sqrt { a } else { b };
                if !finite_nonzero(a) || !finite_nonzero(b) || (sqrt && a & 0x8000_0000 != 0) {
                    return float::directed32(Directed::$op, Round::$round, a, b, c);
                }
                let (mut r, b) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
                // SAFETY: AVX-512F (this function's feature); it reads and writes only the
                // registers named.
                unsafe {
                    asm!(concat!($ins, " {r}, {r}, {b}, {{", $mode, "}}"), r = inout(xmm_reg) r, b = in(xmm_reg) b,
                        options(pure, nomem, nostack));
                }
                r.to_bits() as u64
            }
        };
    }

    /// `fma` in `mode`: where `a` and `b` are finite and nonzero and `c` finite.
    macro_rules! fma {
        ($name:ident, $round:ident, $mode:literal) => {
            #[target_feature(enable = "avx512f")]
            fn $name(a: u64, b: u64, c: u64) -> u64 {
                if !finite_nonzero(a) || !finite_nonzero(b) || c & 0x7f80_0000 == 0x7f80_0000 {
                    return float::directed32(Directed::Fma, Round::$round, a, b, c);
                }
                let f = |bits: u64| f32::from_bits(bits as u32);
                let (mut r, b, c) = (f(a), f(b), f(c));
                // SAFETY: AVX-512F (this function's feature); it reads and writes only the
                // registers named.
                unsafe {
                    asm!(concat!("vfmadd213ss {r}, {b}, {c}, {{", $mode, "}}"), r = inout(xmm_reg) r,
                        b = in(xmm_reg) b, c = in(xmm_reg) c, options(pure, nomem, nostack));
                }
                r.to_bits() as u64
            }
        };
    }

    two!(add_rz, Add, Zero, "vaddss", "rz-sae");
    two!(add_rd, Add, Down, "vaddss", "rd-sae");
    two!(add_ru, Add, Up, "vaddss", "ru-sae");
    two!(sub_rz, Sub, Zero, "vsubss", "rz-sae");
    two!(sub_rd, Sub, Down, "vsubss", "rd-sae");
    two!(sub_ru, Sub, Up, "vsubss", "ru-sae");
    two!(mul_rz, Mul, Zero, "vmulss", "rz-sae");
    two!(mul_rd, Mul, Down, "vmulss", "rd-sae");
    two!(mul_ru, Mul, Up, "vmulss", "ru-sae");
    two!(div_rz, Div, Zero, "vdivss", "rz-sae");
    two!(div_rd, Div, Down, "vdivss", "rd-sae");
    two!(div_ru, Div, Up, "vdivss", "ru-sae");
    two!(sqrt_rz, Sqrt, Zero, "vsqrtss", "rz-sae");
    two!(sqrt_rd, Sqrt, Down, "vsqrtss", "rd-sae");
    two!(sqrt_ru, Sqrt, Up, "vsqrtss", "ru-sae");
    fma!(fma_rz, Zero, "rz-sae");
    fma!(fma_rd, Down, "rd-sae");
    fma!(fma_ru, Up, "ru-sae");

    /// The function for `op` in `round`; the caller has checked for AVX-512F.
    pub(super) fn of(op: Directed, round: Round) -> Option<unsafe fn(u64, u64, u64) -> u64> {
        use Directed::*;
        use Round::*;
        let f: unsafe fn(u64, u64, u64) -> u64 = match (op, round) {
            (_, Nearest) => return None,
            (Add, Zero) => add_rz,
            (Add, Down) => add_rd,
            (Add, Up) => add_ru,
            (Sub, Zero) => sub_rz,
            (Sub, Down) => sub_rd,
            (Sub, Up) => sub_ru,
            (Mul, Zero) => mul_rz,
            (Mul, Down) => mul_rd,
            (Mul, Up) => mul_ru,
            (Div, Zero) => div_rz,
            (Div, Down) => div_rd,
            (Div, Up) => div_ru,
            (Sqrt, Zero) => sqrt_rz,
            (Sqrt, Down) => sqrt_rd,
            (Sqrt, Up) => sqrt_ru,
            (Fma, Zero) => fma_rz,
            (Fma, Down) => fma_rd,
            (Fma, Up) => fma_ru,
        };
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::directed::tests::operand;
    use crate::exec::float;

    #[test]
    fn the_hosts_instructions_round_as_the_portable_way_does() {
        let ops = [Directed::Add, Directed::Sub, Directed::Mul, Directed::Div, Directed::Sqrt, Directed::Fma];
        let Some(_) = Host::of(Directed::Add, Round::Zero) else {
            eprintln!("this host has no AVX-512F: only the portable way runs");
            return;
        };
        let mut seed = 0x5851_f42d_4c95_7f2du64;
        for _ in 0..200_000 {
            let (a, b, c) = (operand(&mut seed), operand(&mut seed), operand(&mut seed));
            for op in ops {
                for round in [Round::Zero, Round::Down, Round::Up] {
                    let host = Host::of(op, round).expect("every directed operation");
                    let want = float::directed32(op, round, a, b, c);
                    assert_eq!(host.run(a, b, c), want, "{op:?} {round:?} {a:#x} {b:#x} {c:#x}");
                }
            }
        }
    }
}
