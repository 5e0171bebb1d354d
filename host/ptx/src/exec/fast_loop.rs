//! The loop that runs compiled instructions ([`Fast`], made by `fast.rs`) for a group of a warp's
//! lanes that stand at the same instruction: each instruction is dispatched once for the group,
//! then computed lane by lane over each lane's registers. The loop stops at the first
//! instruction that needs more of a thread (a call, whatever runs as decoded), where lanes part (a
//! branch some take, a barrier, a warp-synchronous instruction), and where the group reaches the
//! instruction of another lane of its warp, so that lanes meet again ([`super::schedule`]).

use super::access::Shared;
use super::fast::{Fast, Opnd, Step, get};
use super::float::{self, Near};
use super::host_rounding::Host;
use super::thread::{State, ThreadState};
use super::{Trap, arith, bits, gather, lanes};
use crate::ir::{FloatMode, Inst};

/// Lanes of a warp that run together: all stand at `pc`; `other` is the lowest instruction of
/// the warp's other running lanes (`u32::MAX` if none).
#[derive(Clone, Copy, Debug)]
pub(super) struct Group {
    pub(super) mask: u32,
    pub(super) pc: u32,
    pub(super) other: u32,
}

/// Why [`run`] stopped. Each lane's `pc` and state say where it is.
pub(super) enum Stop {
    /// Lanes parted, stopped or met: the warp picks its next group.
    Regroup,
    /// The budget is spent before the instruction at `pc`.
    Budget,
    /// The instruction at `pc`, where the group's lanes stand, needs each thread: the lanes of
    /// `active` run it (its guard holds for them, and it is counted); the others go past it.
    Thread { pc: u32, active: u32 },
}

/// The low `64 - pad` bits of `v`, sign-extended.
#[inline(always)]
fn extend(v: u64, pad: u8) -> i64 {
    (v << pad) as i64 >> pad
}

/// Register `d` of each lane of `mask` set to what `f` computes from the lane's registers.
#[inline(always)]
fn each(warp: &mut [ThreadState], mask: u32, d: u32, f: impl Fn(&[u64], usize) -> u64) {
    let one = |t: &mut ThreadState| {
        let v = f(&t.regs, t.base);
        t.regs[t.base + d as usize] = v;
    };
    // Every lane of the warp, the common case, without picking lanes out of the mask.
    if mask == u32::MAX >> (32 - warp.len()) {
        warp.iter_mut().for_each(one);
    } else {
        lanes(mask).for_each(|l| one(&mut warp[l]));
    }
}

/// Every lane of `mask` to `pc`.
fn park(warp: &mut [ThreadState], mask: u32, pc: u32) {
    lanes(mask).for_each(|l| warp[l].pc = pc);
}

/// Runs compiled instructions for `group`, counting `left` down; a trap names its line from
/// `body`. Each instruction is one arm of one `match`, so that it is dispatched once; the
/// longer integer operations are functions below it.
pub(super) fn run(
    warp: &mut [ThreadState],
    group: Group,
    steps: &[Step],
    left: &mut u64,
    sh: &mut Shared<'_, '_>,
    body: &[Inst],
) -> Result<Stop, Trap> {
    let Group { mask, other, .. } = group;
    let (mut at, mut n, count) = (group.pc as usize, *left, mask.count_ones() as u64);
    // Register `d` of each lane of `active`, from the lane's operands (`$g(o)` reads `o`).
    macro_rules! alu {
        ($active:expr, $d:expr, |$g:ident| $e:expr) => {
            each(warp, $active, $d, |regs, base| {
                let $g = |o: Opnd| get(regs, base, o);
                $e
            })
        };
    }
    let stop = loop {
        let Some(step) = steps.get(at) else {
            // Running off the end is an exit.
            lanes(mask).for_each(|l| warp[l].state = State::Exited);
            break Stop::Regroup;
        };
        if n < count {
            park(warp, mask, at as u32);
            break Stop::Budget;
        }
        n -= count;
        let active = match step.guard {
            None => mask,
            Some((p, negated)) => {
                let holds = |l: usize| (warp[l].regs[warp[l].base + p as usize] & 1 != 0) != negated;
                lanes(mask).filter(|&l| holds(l)).fold(0, |m, l| m | 1 << l)
            }
        };
        match step.op {
            Fast::Slow if active == 0 => {}
            Fast::Slow => {
                park(warp, mask, at as u32);
                break Stop::Thread { pc: at as u32, active };
            }
            Fast::Bar { id } => {
                for l in lanes(active) {
                    let t = &mut warp[l];
                    let id = (get(&t.regs, t.base, id) & 0xf) as u32;
                    (t.red, t.state) = (None, State::Waiting { id, count: 0 });
                }
                park(warp, mask, at as u32 + 1);
                break Stop::Regroup;
            }
            Fast::Warp => {
                // A shuffle of every live lane of the warp is computed here: no lane is missing.
                let whole = active == mask && mask == super::warp::live(warp);
                match whole.then(|| super::warp::exchange(&body[at], warp, mask, sh)).flatten() {
                    Some(Ok(())) => {}
                    Some(Err(trap)) => {
                        *left = n;
                        return Err(trap);
                    }
                    None => {
                        // The warp computes it once every lane it names is there; the pc
                        // stays on it.
                        lanes(active).for_each(|l| warp[l].state = State::Warp);
                        park(warp, active, at as u32);
                        park(warp, mask & !active, at as u32 + 1);
                        break Stop::Regroup;
                    }
                }
            }
            Fast::Ld { d, at: base_of, offset, space, ty } => {
                if let Err(trap) = gather::load(warp, active, (d, base_of, offset), space, ty, sh) {
                    *left = n;
                    return Err(Trap { line: body[at].line, ..trap });
                }
            }
            Fast::St { s, at: base_of, offset, space, ty } => {
                if let Err(trap) = gather::store(warp, active, (s, base_of, offset), space, ty, sh) {
                    *left = n;
                    return Err(Trap { line: body[at].line, ..trap });
                }
            }
            Fast::Bra { target } if active == mask => {
                at = target as usize;
                if at as u32 >= other {
                    // Other lanes of the warp stand before the target: they go first.
                    park(warp, mask, at as u32);
                    break Stop::Regroup;
                }
                continue;
            }
            Fast::Bra { target } => {
                if active != 0 {
                    // The lanes part.
                    park(warp, active, target);
                    park(warp, mask & !active, at as u32 + 1);
                    break Stop::Regroup;
                }
            }
            Fast::Split { lo, hi, a, bits } => split(warp, active, (lo, hi), a, bits),
            Fast::Mov { d, a, pad } => alu!(active, d, |g| g(a) & (u64::MAX >> pad)),
            Fast::Set { d, v } => each(warp, active, d, |_, _| v),
            Fast::Add { d, a, b, pad } => alu!(active, d, |g| g(a).wrapping_add(g(b)) & (u64::MAX >> pad)),
            Fast::Sub { d, a, b, pad } => alu!(active, d, |g| g(a).wrapping_sub(g(b)) & (u64::MAX >> pad)),
            Fast::Mul { d, a, b, pad } => alu!(active, d, |g| g(a).wrapping_mul(g(b)) & (u64::MAX >> pad)),
            Fast::And { d, a, b, pad } => alu!(active, d, |g| g(a) & g(b) & (u64::MAX >> pad)),
            Fast::Or { d, a, b, pad } => alu!(active, d, |g| (g(a) | g(b)) & (u64::MAX >> pad)),
            Fast::Xor { d, a, b, pad } => alu!(active, d, |g| (g(a) ^ g(b)) & (u64::MAX >> pad)),
            Fast::Shl { d, a, b, pad } => alu!(active, d, |g| shl(g, (a, b), pad)),
            Fast::Shr { d, a, b, pad } => alu!(active, d, |g| shr(g, (a, b), pad)),
            Fast::Sar { d, a, b, pad } => alu!(active, d, |g| sar(g, (a, b), pad)),
            Fast::Div { d, a, b, pad, signed } => alu!(active, d, |g| div(g, (a, b), pad, signed)),
            Fast::Rem { d, a, b, pad, signed } => alu!(active, d, |g| rem(g, (a, b), pad, signed)),
            Fast::MulHi { d, a, b, pad, signed } => alu!(active, d, |g| mul_hi(g, (a, b), pad, signed)),
            Fast::MulWide { d, a, b, pad, signed } => alu!(active, d, |g| mul_wide(g, (a, b), pad, signed)),
            Fast::MinMax { d, a, b, pad, signed, max } => alu!(active, d, |g| min_max(g, (a, b), pad, signed, max)),
            Fast::Mad { d, a, b, c, pad } => {
                alu!(active, d, |g| g(a).wrapping_mul(g(b)).wrapping_add(g(c)) & (u64::MAX >> pad))
            }
            Fast::Setp { d, a, b, pad, signed, table } => alu!(active, d, |g| setp(g, (a, b), pad, signed, table)),
            Fast::Selp { d, a, b, p, pad } => {
                alu!(active, d, |g| if g(p) & 1 != 0 { g(a) } else { g(b) } & (u64::MAX >> pad))
            }
            Fast::Cvt { d, a, from, signed, to } => alu!(active, d, |g| cvt(g, a, from, signed, to)),
            Fast::FAdd { d, a, b, wide } => alu!(active, d, |g| float::near(wide, g(a), g(b), Near::Add)),
            Fast::FSub { d, a, b, wide } => alu!(active, d, |g| float::near(wide, g(a), g(b), Near::Sub)),
            Fast::FMul { d, a, b, wide } => alu!(active, d, |g| float::near(wide, g(a), g(b), Near::Mul)),
            Fast::FDiv { d, a, b, wide } => alu!(active, d, |g| float::near(wide, g(a), g(b), Near::Div)),
            Fast::FDirected { op, round, d, a, b, c } => match Host::of(op, round) {
                Some(host) => alu!(active, d, |g| host.run(g(a), g(b), g(c))),
                None => alu!(active, d, |g| float::directed32(op, round, g(a), g(b), g(c))),
            },
            Fast::FSign { d, a, neg, wide } => alu!(active, d, |g| float::abs_neg(neg, wide, g(a))),
            Fast::FFma { d, a, b, c, wide } => {
                alu!(active, d, |g| float::fma(wide, FloatMode::default(), g(a), g(b), g(c)))
            }
            Fast::Unary { op, ty, fm, d, a } => alu!(active, d, |g| arith::unary(op, ty, fm, g(a))),
            Fast::Binary { op, ty, fm, d, a, b } => alu!(active, d, |g| arith::binary(op, ty, fm, g(a), g(b))),
            Fast::Ternary { op, ty, fm, d, a, b, c } => {
                alu!(active, d, |g| arith::ternary(op, ty, fm, g(a), g(b), g(c)))
            }
            Fast::Video { v, d, a, b, c } => alu!(active, d, |g| bits::video(v, g(a), g(b), g(c))),
            Fast::Convert { conv, d, a } => alu!(active, d, |g| arith::convert(conv, g(a))),
            Fast::Bfi { ty, d, a, b, pos, len } => alu!(active, d, |g| bits::bfi(ty, g(a), g(b), g(pos), g(len))),
            Fast::FSetp { d, a, b, cmp, ty, ftz } => {
                alu!(active, d, |g| arith::compare(cmp, ty, ftz, g(a), g(b)) as u64)
            }
        }
        at += 1;
        if at as u32 >= other {
            // The group reached another lane's instruction: they meet there.
            park(warp, mask, at as u32);
            break Stop::Regroup;
        }
    };
    *left = n;
    Ok(stop)
}

/// `lo` and `hi` of each lane of `active` set to the low and high `bits` of `a`.
#[inline(always)]
fn split(warp: &mut [ThreadState], active: u32, (lo, hi): (u32, u32), a: Opnd, bits: u8) {
    for l in lanes(active) {
        let t = &mut warp[l];
        // Both halves from the value before either is written: `hi` may be `a`.
        let (v, m) = (get(&t.regs, t.base, a), u64::MAX >> (64 - bits));
        t.regs[t.base + lo as usize] = v & m;
        t.regs[t.base + hi as usize] = (v >> bits) & m;
    }
}

// The integer operations of the fast forms, on values `64 - pad` bits wide; `g` reads an operand
// (as late as the operation needs it).

/// `a << b`: the amount is a u32; past the width, everything is shifted out.
#[inline(always)]
fn shl(g: impl Fn(Opnd) -> u64, (a, b): (Opnd, Opnd), pad: u8) -> u64 {
    let s = g(b) as u32;
    if s >= 64 - pad as u32 { 0 } else { (g(a) << s) & (u64::MAX >> pad) }
}

/// `a >> b`, unsigned.
#[inline(always)]
fn shr(g: impl Fn(Opnd) -> u64, (a, b): (Opnd, Opnd), pad: u8) -> u64 {
    let m = u64::MAX >> pad;
    let s = g(b) & m;
    if s >= 64 - pad as u64 { 0 } else { (g(a) & m) >> s }
}

/// `a >> b`, signed: past the width, the sign fills the result.
#[inline(always)]
fn sar(g: impl Fn(Opnd) -> u64, (a, b): (Opnd, Opnd), pad: u8) -> u64 {
    let m = u64::MAX >> pad;
    let s = (g(b) & m).min(63 - pad as u64);
    (((g(a) << pad) as i64 >> pad) >> s) as u64 & m
}

/// `a / b`; all ones for a divisor of 0.
#[inline(always)]
fn div(g: impl Fn(Opnd) -> u64, (a, b): (Opnd, Opnd), pad: u8, signed: bool) -> u64 {
    let m = u64::MAX >> pad;
    let (x, y) = (g(a), g(b));
    let v = match (y & m, signed) {
        (0, _) => u64::MAX,
        (_, true) => extend(x, pad).wrapping_div(extend(y, pad)) as u64,
        (_, false) => (x & m) / (y & m),
    };
    v & m
}

/// `a % b`; all ones for a divisor of 0.
#[inline(always)]
fn rem(g: impl Fn(Opnd) -> u64, (a, b): (Opnd, Opnd), pad: u8, signed: bool) -> u64 {
    let m = u64::MAX >> pad;
    let (x, y) = (g(a), g(b));
    let v = match (y & m, signed) {
        (0, _) => u64::MAX,
        (_, true) => extend(x, pad).wrapping_rem(extend(y, pad)) as u64,
        (_, false) => (x & m) % (y & m),
    };
    v & m
}

/// The high half of `a * b`.
#[inline(always)]
fn mul_hi(g: impl Fn(Opnd) -> u64, (a, b): (Opnd, Opnd), pad: u8, signed: bool) -> u64 {
    let m = u64::MAX >> pad;
    let (x, y) = (g(a), g(b));
    let v = match signed {
        true => ((extend(x, pad) as i128 * extend(y, pad) as i128) >> (64 - pad)) as u64,
        false => (((x & m) as u128 * (y & m) as u128) >> (64 - pad)) as u64,
    };
    v & m
}

/// `a * b` twice as wide: operands of at most 32 bits, so the product fits in 64.
#[inline(always)]
fn mul_wide(g: impl Fn(Opnd) -> u64, (a, b): (Opnd, Opnd), pad: u8, signed: bool) -> u64 {
    let (x, y) = (g(a), g(b));
    let v = match signed {
        true => extend(x, pad).wrapping_mul(extend(y, pad)) as u64,
        false => (x << pad >> pad).wrapping_mul(y << pad >> pad),
    };
    v & (u64::MAX >> (2 * pad - 64))
}

/// `max` of `a` and `b` where `max` is set, else `min`.
#[inline(always)]
fn min_max(g: impl Fn(Opnd) -> u64, (a, b): (Opnd, Opnd), pad: u8, signed: bool, max: bool) -> u64 {
    let (x, y) = (g(a), g(b));
    let v = match signed {
        true => pick(extend(x, pad), extend(y, pad), max) as u64,
        false => pick(x << pad >> pad, y << pad >> pad, max),
    };
    v & (u64::MAX >> pad)
}

/// An integer comparison: `table`'s bit for greater (0), less (1) or equal (2), both sides
/// extended as the type says, then ordered as unsigned 64-bit keys.
#[inline(always)]
fn setp(g: impl Fn(Opnd) -> u64, (a, b): (Opnd, Opnd), pad: u8, signed: bool, table: u8) -> u64 {
    let key = |v: u64| match signed {
        true => ((v << pad) as i64 >> pad) as u64 ^ 1 << 63,
        false => (v << pad) >> pad,
    };
    let (x, y) = (key(g(a)), key(g(b)));
    let at = (x < y) as u8 | ((x == y) as u8) << 1;
    (table >> at) as u64 & 1
}

/// An integer conversion: `a`'s low `64 - from` bits, extended as `signed` says, cut to
/// `64 - to` bits.
#[inline(always)]
fn cvt(g: impl Fn(Opnd) -> u64, a: Opnd, from: u8, signed: bool, to: u8) -> u64 {
    let v = g(a) << from;
    let v = if signed { ((v as i64) >> from) as u64 } else { v >> from };
    v & (u64::MAX >> to)
}

/// The larger of `x` and `y` where `max` is set, else the smaller.
#[inline]
fn pick<T: Ord>(x: T, y: T, max: bool) -> T {
    if max { x.max(y) } else { x.min(y) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::fast::Code;
    use crate::exec::width;
    use crate::exec::{Fault, Flat, LOCAL_WINDOW, Launch, SHARED_WINDOW, Shape, Thread};
    use crate::ir::{BinOp, Cmp, Conversion, Function, Inst, Op, Round, Space, Src, TerOp, Ty, UnOp};

    const TYPES: [Ty; 19] = [
        Ty::B8,
        Ty::B16,
        Ty::B32,
        Ty::B64,
        Ty::U8,
        Ty::U16,
        Ty::U32,
        Ty::U64,
        Ty::S8,
        Ty::S16,
        Ty::S32,
        Ty::S64,
        Ty::F32,
        Ty::F64,
        Ty::F16,
        Ty::BF16,
        Ty::F16x2,
        Ty::BF16x2,
        Ty::Pred,
    ];

    /// Runs `op` compiled, with registers 0, 1, 2 holding `v` and the result in register 3.
    fn compiled(op: Op, v: [u64; 3]) -> Option<u64> {
        let body = vec![Inst { line: 1, guard: None, op }];
        let kernel = Function {
            name: "k".into(),
            entry: true,
            params: vec![],
            returns: vec![],
            registers: 4,
            shared_bytes: 0,
            local_bytes: 0,
            body,
            cluster: None,
            reads_grid_workspace: false,
        };
        let shape = Shape { grid: [1; 3], block: [1; 3], shared: 0, params: &[] };
        let launch = Launch { shape, variables: &[], budget: 1, grid_sync: None, cluster: None, resident_blocks: 0 };
        let code = Code::new(&kernel, &launch);
        if matches!(code.steps[0].op, Fast::Slow) {
            return None;
        }
        let who = Thread { block: [0; 3], thread: [0; 3] };
        let mut warp = [ThreadState::new(&kernel, &code, &launch, who, 0)];
        for (r, v) in v.into_iter().enumerate() {
            warp[0].set(r as u32, v);
        }
        let mut left = 1;
        let mut memory = Nothing;
        let cluster = &mut crate::exec::cluster::Cluster::new(1, 0, 1);
        let mut sh = Shared {
            launch: &launch,
            memory: &mut memory,
            bytes: vec![],
            clock: 0,
            arrived: [0; 16],
            cluster,
            rank: 0,
        };
        let group = Group { mask: 1, pc: 0, other: u32::MAX };
        let stop = run(&mut warp, group, &code.steps, &mut left, &mut sh, &kernel.body);
        assert!(matches!(stop, Ok(Stop::Regroup)));
        assert_eq!(warp[0].state, State::Exited);
        Some(warp[0].value(Src::Reg(3), &sh))
    }

    /// Memory where every access faults.
    struct Nothing;

    impl Flat for Nothing {
        fn span(&mut self, _: u64, _: usize) -> Result<&mut [u8], Fault> {
            Err(Fault::Illegal)
        }
    }

    fn values(seed: &mut u64) -> [u64; 3] {
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            match *seed % 8 {
                0 => *seed % 70,
                1 => 1 << (*seed % 64),
                2 => u64::MAX - *seed % 3,
                3 => 0x8000_0000 + *seed % 3,
                4 => 0x7f80_0000 | (*seed % 4),
                _ => *seed,
            }
        };
        [next(), next(), next()]
    }

    /// Every compiled instruction computes what the decoded one does, on every type it takes,
    /// with operands in registers and as immediates.
    #[test]
    fn compiled_instructions_compute_what_decoded_ones_do() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let none = FloatMode::default();
        let mut checked = 0;
        for _ in 0..400 {
            let v = values(&mut seed);
            for ty in TYPES {
                for imm in [false, true] {
                    let (a, b, c) = (
                        Src::Reg(0),
                        if imm { Src::Imm(v[1]) } else { Src::Reg(1) },
                        if imm { Src::Imm(v[2]) } else { Src::Reg(2) },
                    );
                    let mut cases: Vec<(Op, u64)> = vec![(Op::Mov { ty, d: 3, a: b }, width::mask(ty, v[1]))];
                    for op in [
                        BinOp::Add,
                        BinOp::Sub,
                        BinOp::MulLo,
                        BinOp::And,
                        BinOp::Or,
                        BinOp::Xor,
                        BinOp::Shl,
                        BinOp::Shr,
                    ] {
                        if ty.float() && !matches!(op, BinOp::Add | BinOp::Sub | BinOp::MulLo) {
                            continue;
                        }
                        let want = arith::binary(op, ty, none, v[0], v[1]);
                        cases.push((Op::Binary { op, ty, fm: none, d: 3, a, b }, want));
                    }
                    for op in [BinOp::Div, BinOp::Rem, BinOp::MulHi, BinOp::MulWide, BinOp::Min, BinOp::Max] {
                        if ty.float() || ty == Ty::Pred || (op == BinOp::MulWide && ty.bits() > 32) {
                            continue;
                        }
                        let want = arith::binary(op, ty, none, v[0], v[1]);
                        cases.push((Op::Binary { op, ty, fm: none, d: 3, a, b }, want));
                    }
                    for round in [Round::Zero, Round::Down, Round::Up] {
                        let fm = FloatMode { round, ..FloatMode::default() };
                        for op in [BinOp::Add, BinOp::Sub, BinOp::MulLo, BinOp::Div] {
                            // Halves have no division or square root.
                            if ty.float() && !(ty.half() && op == BinOp::Div) {
                                let want = arith::binary(op, ty, fm, v[0], v[1]);
                                cases.push((Op::Binary { op, ty, fm, d: 3, a, b }, want));
                            }
                        }
                        if ty.float() && !ty.half() {
                            let want = arith::unary(UnOp::Sqrt, ty, fm, v[1]);
                            cases.push((Op::Unary { op: UnOp::Sqrt, ty, fm, d: 3, a: b }, want));
                            let want = arith::ternary(TerOp::Fma, ty, fm, v[0], v[1], v[2]);
                            cases.push((Op::Ternary { op: TerOp::Fma, ty, fm, d: 3, a, b, c }, want));
                        }
                    }
                    if ty.float() && !ty.half() {
                        let want = arith::binary(BinOp::Div, ty, none, v[0], v[1]);
                        cases.push((Op::Binary { op: BinOp::Div, ty, fm: none, d: 3, a, b }, want));
                        for op in [UnOp::Abs, UnOp::Neg] {
                            cases.push((Op::Unary { op, ty, fm: none, d: 3, a: b }, arith::unary(op, ty, none, v[1])));
                        }
                    }
                    for op in [TerOp::MadLo, TerOp::Fma] {
                        if ty.float() == (op == TerOp::Fma) && ty != Ty::Pred {
                            let want = arith::ternary(op, ty, none, v[0], v[1], v[2]);
                            cases.push((Op::Ternary { op, ty, fm: none, d: 3, a, b, c }, want));
                        }
                    }
                    for cmp in [Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge, Cmp::Ltu, Cmp::Num, Cmp::Nan] {
                        let want = arith::compare(cmp, ty, false, v[0], v[1]) as u64;
                        let op = Op::Setp { cmp, ty, ftz: false, d: 3, d2: None, a, b, with: None };
                        cases.push((op, want));
                    }
                    let want = width::mask(ty, if v[2] & 1 != 0 { v[0] } else { v[1] });
                    cases.push((Op::Selp { ty, d: 3, a, b, p: c }, want));
                    for from in TYPES {
                        let conv = Conversion { to: ty, from, round_int: None, fm: FloatMode::default(), relu: false };
                        cases.push((Op::Cvt { conv, d: 3, a }, arith::convert(conv, v[0])));
                    }
                    for (space, window) in
                        [(Space::Global, 0), (Space::Shared, SHARED_WINDOW), (Space::Local, LOCAL_WINDOW)]
                    {
                        cases.push((Op::Cvta { to: false, space, d: 3, a }, v[0].wrapping_add(window)));
                        cases.push((Op::Cvta { to: true, space, d: 3, a }, v[0].wrapping_sub(window)));
                    }
                    if ty.bits() < 64 {
                        // Each half in register 3 in turn, and a half written over its source.
                        let half = |v: u64, i: u32| width::mask(ty, v >> (i * ty.bits()));
                        cases.push((Op::Unpack { ty, d: vec![Some(2), Some(3)], a: b }, half(v[1], 1)));
                        cases.push((Op::Unpack { ty, d: vec![Some(3), Some(2)], a: b }, half(v[1], 0)));
                        cases.push((Op::Unpack { ty, d: vec![Some(0), Some(3)], a }, half(v[0], 1)));
                    }
                    for (op, want) in cases {
                        let text = format!("{op:?} on {v:x?}");
                        if let Some(got) = compiled(op, v) {
                            assert_eq!(got, want, "{text}");
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 100_000, "{checked}");
    }
}
