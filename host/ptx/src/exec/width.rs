//! An integer of a PTX type in a 64-bit register: its bits masked to the type's width, or
//! extended to a wider integer as its signedness says. Below every other module of numbers.

use crate::ir::Ty;

/// The bits of a register seen as `ty`: masked to its width.
pub(crate) fn mask(ty: Ty, v: u64) -> u64 {
    match ty.bits() {
        64 => v,
        1 => v & 1,
        b => v & ((1u64 << b) - 1),
    }
}

/// A value of `ty` sign-extended to 64 bits (signed types) or zero-extended.
pub(crate) fn extend(ty: Ty, v: u64) -> i128 {
    let v = mask(ty, v);
    match ty.signed() {
        true => {
            let shift = 64 - ty.bits();
            (((v << shift) as i64) >> shift) as i128
        }
        false => v as i128,
    }
}
