//! A group's `ld` and `st` of one register a lane: where every lane's access goes to the
//! caller's [`Memory`](super::Memory) (global or constant memory, or generic addresses that
//! all fall there, each aligned), the lanes' accesses go in one call, in lane order; else
//! lane by lane, each as the thread would make it alone.

use super::access::{Access, Shared};
use super::fast::{Opnd, get};
use super::thread::ThreadState;
use super::{Fault, SHARED_WINDOW, Trap, TrapKind, lanes, width, word};
use crate::ir::{Space, Ty};

/// Lane `t`'s address `at + offset`.
#[inline(always)]
fn address(t: &ThreadState, (at, offset): (Opnd, i64)) -> u64 {
    get(&t.regs, t.base, at).wrapping_add(offset as u64)
}

/// Each lane of `active`'s address `at + offset` (and value of `s`, if any), in `each` in lane
/// order; whether every one goes to the caller's memory, aligned to `size`.
#[inline(always)]
fn fill(
    each: &mut [(u64, u64); 32],
    warp: &[ThreadState],
    active: u32,
    (at, offset): (Opnd, i64),
    s: Option<Opnd>,
    (space, size): (Space, usize),
) -> bool {
    // Generic addresses in the shared or local window stay with the executor.
    let limit = if space == Space::Generic { SHARED_WINDOW } else { u64::MAX };
    let (mut odd, mut inside) = (0u64, false);
    let mut one = |each: &mut (u64, u64), t: &ThreadState| {
        let addr = address(t, (at, offset));
        (odd, inside) = (odd | addr, inside | (addr >= limit));
        *each = (addr, s.map_or(0, |s| get(&t.regs, t.base, s)));
    };
    // Every lane of the warp, the common case, without picking lanes out of the mask.
    match active == u32::MAX >> (32 - warp.len()) {
        true => each.iter_mut().zip(warp).for_each(|(e, t)| one(e, t)),
        false => each.iter_mut().zip(lanes(active)).for_each(|(e, l)| one(e, &warp[l])),
    }
    odd & (size as u64 - 1) == 0 && !inside
}

/// The thread of the `i`th lane of `active`.
fn who(warp: &[ThreadState], active: u32) -> impl Fn(usize) -> super::Thread + '_ {
    move |i| warp[lanes(active).nth(i).expect("an access of a lane")].who
}

/// The trap of the `i`th lane of `active` at `addr`.
fn trap(warp: &[ThreadState], active: u32, (i, fault): (usize, Fault), addr: u64) -> Trap {
    Trap { kind: TrapKind::Fault(fault), line: 0, who: who(warp, active)(i), addr }
}

/// `st` of register `s` at `at + offset` of `space`, `ty` wide, by the lanes of `active`.
pub(super) fn store(
    warp: &mut [ThreadState],
    active: u32,
    (s, at, offset): (Opnd, Opnd, i64),
    space: Space,
    ty: Ty,
    sh: &mut Shared<'_, '_>,
) -> Result<(), Trap> {
    let size = ty.bytes();
    let one = |t: &mut ThreadState, sh: &mut Shared<'_, '_>, addr: u64, value: u64| {
        Access { local: &mut t.local, who: t.who, sh }.write(space, addr, &value.to_le_bytes()[..size], 0)
    };
    if !matches!(space, Space::Global | Space::Generic) {
        for l in lanes(active) {
            let t = &mut warp[l];
            let (addr, value) = (address(t, (at, offset)), get(&t.regs, t.base, s));
            one(t, sh, addr, value)?;
        }
        return Ok(());
    }
    let (mut each, n) = ([(0u64, 0u64); 32], active.count_ones() as usize);
    if fill(&mut each, warp, active, (at, offset), Some(s), (space, size)) {
        let result = sh.memory.write_lanes(size, &each[..n], &who(warp, active));
        return result.map_err(|f| trap(warp, active, f, each[f.0].0));
    }
    for (l, &(addr, value)) in lanes(active).zip(&each) {
        one(&mut warp[l], sh, addr, value)?;
    }
    Ok(())
}

/// `ld` into register `d` from `at + offset` of `space`, `ty` wide, by the lanes of
/// `active`; a narrow signed load sign-extends into its register.
pub(super) fn load(
    warp: &mut [ThreadState],
    active: u32,
    (d, at, offset): (u32, Opnd, i64),
    space: Space,
    ty: Ty,
    sh: &mut Shared<'_, '_>,
) -> Result<(), Trap> {
    let size = ty.bytes();
    let extend = |raw: u64| if ty.signed() { width::extend(ty, raw) as u64 } else { raw };
    let one = |t: &mut ThreadState, sh: &mut Shared<'_, '_>, addr: u64| {
        let mut buf = [0u8; 8];
        Access { local: &mut t.local, who: t.who, sh }.read(space, addr, &mut buf[..size], 0)?;
        t.regs[t.base + d as usize] = extend(word(&buf[..size]));
        Ok(())
    };
    // Global or constant memory: the lanes together where they can go so; else (a misaligned
    // lane, generic addresses in a window, other spaces) lane by lane.
    let together = matches!(space, Space::Global | Space::Const | Space::Generic);
    let (mut each, n) = ([(0u64, 0u64); 32], active.count_ones() as usize);
    if together && fill(&mut each, warp, active, (at, offset), None, (space, size)) {
        // A generic address outside the windows is global.
        let space = if space == Space::Generic { Space::Global } else { space };
        if let Err(f) = sh.memory.read_lanes(space, size, &mut each[..n], &who(warp, active)) {
            return Err(trap(warp, active, f, each[f.0].0));
        }
        for (l, &(_, raw)) in lanes(active).zip(&each) {
            let t = &mut warp[l];
            t.regs[t.base + d as usize] = extend(raw);
        }
        return Ok(());
    }
    for l in lanes(active) {
        let t = &mut warp[l];
        let addr = address(t, (at, offset));
        one(t, sh, addr)?;
    }
    Ok(())
}
