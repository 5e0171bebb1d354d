//! The compiled instructions, run in a loop of their own over a plain slice of the frame's
//! registers and the thread's accesses to memory: it stops, before it, at the first
//! instruction that needs more of the thread (a barrier, a call, whatever runs as decoded).

use super::Trap;
use super::access::Access;
use super::fast::{Fast, Opnd, Step};
use super::float::{self, Near};
use super::{arith, bits};
use crate::ir::{FloatMode, Inst};

/// Why [`run`] stopped, `pc` on the instruction it names.
pub(super) enum Stop {
    /// The program's end: running off it is an exit.
    End,
    /// The budget is spent before this instruction.
    Budget,
    /// The instruction needs the thread.
    Thread,
    /// The thread ran `bar.sync` on this barrier and waits there for every thread.
    Barrier(u32),
    /// The thread waits on this warp-synchronous instruction, counted.
    Warp,
}

/// The low `64 - sh` bits of `v`, sign-extended.
#[inline(always)]
fn extend(v: u64, sh: u8) -> i64 {
    (v << sh) as i64 >> sh
}

/// Runs compiled instructions from `pc`, counting `left` down; a trap names its line from
/// `body`.
pub(super) fn run(
    regs: &mut [u64],
    base: usize,
    steps: &[Step],
    pc: &mut u32,
    left: &mut u64,
    access: &mut Access<'_, '_, '_>,
    body: &[Inst],
) -> Result<Stop, Trap> {
    let (mut at, mut n) = (*pc as usize, *left);
    let get = |regs: &[u64], o: Opnd| regs[base.wrapping_add_signed(o as isize)];
    let stop = loop {
        let Some(step) = steps.get(at) else { break Stop::End };
        if n == 0 {
            break Stop::Budget;
        }
        if let Some((p, negated)) = step.guard
            && (regs[base + p as usize] & 1 != 0) == negated
        {
            (at, n) = (at + 1, n - 1);
            continue;
        }
        let (d, v) = match step.op {
            Fast::Slow => break Stop::Thread,
            Fast::Bar { id } => {
                let id = (get(regs, id) & 0xf) as u32;
                (at, n) = (at + 1, n - 1);
                break Stop::Barrier(id);
            }
            Fast::Warp => {
                n -= 1;
                break Stop::Warp;
            }
            Fast::Ld { d, at: base_of, offset, space, ty } => {
                let addr = get(regs, base_of).wrapping_add(offset as u64);
                let mut buf = [0u8; 8];
                if let Err(trap) = access.read(space, addr, &mut buf[..ty.bytes()], 0) {
                    (*pc, *left) = (at as u32 + 1, n - 1);
                    return Err(Trap { line: body[at].line, ..trap });
                }
                let raw = u64::from_le_bytes(buf);
                // A narrow signed load sign-extends into its register.
                (d, if ty.signed() { arith::extend(ty, raw) as u64 } else { raw })
            }
            Fast::St { s, at: base_of, offset, space, ty } => {
                let addr = get(regs, base_of).wrapping_add(offset as u64);
                let bytes = get(regs, s).to_le_bytes();
                if let Err(trap) = access.write(space, addr, &bytes[..ty.bytes()], 0) {
                    (*pc, *left) = (at as u32 + 1, n - 1);
                    return Err(Trap { line: body[at].line, ..trap });
                }
                (at, n) = (at + 1, n - 1);
                continue;
            }
            Fast::Split { lo, hi, a, bits } => {
                // Both halves from the value before either is written: `hi` may be `a`.
                let (v, m) = (get(regs, a), u64::MAX >> (64 - bits));
                regs[base + lo as usize] = v & m;
                (hi, (v >> bits) & m)
            }
            Fast::Bra { target } => {
                (at, n) = (target as usize, n - 1);
                continue;
            }
            Fast::Mov { d, a, sh } => (d, get(regs, a) & (u64::MAX >> sh)),
            Fast::Add { d, a, b, sh } => (d, get(regs, a).wrapping_add(get(regs, b)) & (u64::MAX >> sh)),
            Fast::Sub { d, a, b, sh } => (d, get(regs, a).wrapping_sub(get(regs, b)) & (u64::MAX >> sh)),
            Fast::Mul { d, a, b, sh } => (d, get(regs, a).wrapping_mul(get(regs, b)) & (u64::MAX >> sh)),
            Fast::And { d, a, b, sh } => (d, get(regs, a) & get(regs, b) & (u64::MAX >> sh)),
            Fast::Or { d, a, b, sh } => (d, (get(regs, a) | get(regs, b)) & (u64::MAX >> sh)),
            Fast::Xor { d, a, b, sh } => (d, (get(regs, a) ^ get(regs, b)) & (u64::MAX >> sh)),
            Fast::Shl { d, a, b, sh } => {
                // The amount is a u32; past the width, everything is shifted out.
                let s = get(regs, b) as u32;
                (d, if s >= 64 - sh as u32 { 0 } else { (get(regs, a) << s) & (u64::MAX >> sh) })
            }
            Fast::Shr { d, a, b, sh } => {
                let m = u64::MAX >> sh;
                let s = get(regs, b) & m;
                (d, if s >= 64 - sh as u64 { 0 } else { (get(regs, a) & m) >> s })
            }
            Fast::Sar { d, a, b, sh } => {
                // Past the width, the sign fills the result.
                let m = u64::MAX >> sh;
                let s = (get(regs, b) & m).min(63 - sh as u64);
                (d, (((get(regs, a) << sh) as i64 >> sh) >> s) as u64 & m)
            }
            Fast::Div { d, a, b, sh, signed } => {
                let m = u64::MAX >> sh;
                let (x, y) = (get(regs, a), get(regs, b));
                let v = match (y & m, signed) {
                    (0, _) => u64::MAX,
                    (_, true) => extend(x, sh).wrapping_div(extend(y, sh)) as u64,
                    (_, false) => (x & m) / (y & m),
                };
                (d, v & m)
            }
            Fast::Rem { d, a, b, sh, signed } => {
                let m = u64::MAX >> sh;
                let (x, y) = (get(regs, a), get(regs, b));
                let v = match (y & m, signed) {
                    (0, _) => x,
                    (_, true) => extend(x, sh).wrapping_rem(extend(y, sh)) as u64,
                    (_, false) => (x & m) % (y & m),
                };
                (d, v & m)
            }
            Fast::MulHi { d, a, b, sh, signed } => {
                let m = u64::MAX >> sh;
                let (x, y) = (get(regs, a), get(regs, b));
                let v = match signed {
                    true => ((extend(x, sh) as i128 * extend(y, sh) as i128) >> (64 - sh)) as u64,
                    false => (((x & m) as u128 * (y & m) as u128) >> (64 - sh)) as u64,
                };
                (d, v & m)
            }
            Fast::MulWide { d, a, b, sh, signed } => {
                // Operands of at most 32 bits: the product fits in 64.
                let (x, y) = (get(regs, a), get(regs, b));
                let v = match signed {
                    true => extend(x, sh).wrapping_mul(extend(y, sh)) as u64,
                    false => (x << sh >> sh).wrapping_mul(y << sh >> sh),
                };
                (d, v & (u64::MAX >> (2 * sh - 64)))
            }
            Fast::MinMax { d, a, b, sh, signed, max } => {
                let (x, y) = (get(regs, a), get(regs, b));
                let v = match signed {
                    true => pick(extend(x, sh), extend(y, sh), max) as u64,
                    false => pick(x << sh >> sh, y << sh >> sh, max),
                };
                (d, v & (u64::MAX >> sh))
            }
            Fast::Mad { d, a, b, c, sh } => {
                let v = get(regs, a).wrapping_mul(get(regs, b)).wrapping_add(get(regs, c));
                (d, v & (u64::MAX >> sh))
            }
            Fast::Setp { d, a, b, sh, signed, table } => {
                // Both sides extended as the type says, then ordered as unsigned 64-bit keys.
                let key = |v: u64| match signed {
                    true => ((v << sh) as i64 >> sh) as u64 ^ 1 << 63,
                    false => (v << sh) >> sh,
                };
                let (x, y) = (key(get(regs, a)), key(get(regs, b)));
                let at = (x < y) as u8 | ((x == y) as u8) << 1;
                (d, (table >> at) as u64 & 1)
            }
            Fast::Selp { d, a, b, p, sh } => {
                let v = if get(regs, p) & 1 != 0 { get(regs, a) } else { get(regs, b) };
                (d, v & (u64::MAX >> sh))
            }
            Fast::Cvt { d, a, from, signed, to } => {
                let v = get(regs, a) << from;
                let v = if signed { ((v as i64) >> from) as u64 } else { v >> from };
                (d, v & (u64::MAX >> to))
            }
            Fast::FAdd { d, a, b, wide } => (d, float::near(wide, get(regs, a), get(regs, b), Near::Add)),
            Fast::FSub { d, a, b, wide } => (d, float::near(wide, get(regs, a), get(regs, b), Near::Sub)),
            Fast::FMul { d, a, b, wide } => (d, float::near(wide, get(regs, a), get(regs, b), Near::Mul)),
            Fast::FDirected { op, round, d, a, b } => (d, float::directed32(op, round, get(regs, a), get(regs, b))),
            Fast::FFma { d, a, b, c, wide } => {
                (d, float::fma(wide, FloatMode::default(), get(regs, a), get(regs, b), get(regs, c)))
            }
            Fast::Unary { op, ty, fm, d, a } => (d, arith::unary(op, ty, fm, get(regs, a))),
            Fast::Binary { op, ty, fm, d, a, b } => (d, arith::binary(op, ty, fm, get(regs, a), get(regs, b))),
            Fast::Ternary { op, ty, fm, d, a, b, c } => {
                (d, arith::ternary(op, ty, fm, get(regs, a), get(regs, b), get(regs, c)))
            }
            Fast::Convert { conv, d, a } => (d, arith::convert(conv, get(regs, a))),
            Fast::Bfi { ty, d, a, b, pos, len } => {
                (d, bits::bfi(ty, get(regs, a), get(regs, b), get(regs, pos), get(regs, len)))
            }
            Fast::FSetp { d, a, b, cmp, ty, ftz } => {
                (d, arith::compare(cmp, ty, ftz, get(regs, a), get(regs, b)) as u64)
            }
        };
        regs[base + d as usize] = v;
        (at, n) = (at + 1, n - 1);
    };
    (*pc, *left) = (at as u32, n);
    Ok(stop)
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
    use crate::exec::thread::Shared;
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
        };
        let shape = Shape { grid: [1; 3], block: [1; 3], shared: 0, params: &[] };
        let launch = Launch { shape, variables: &[], budget: 1 };
        let code = Code::new(&kernel, &launch);
        if matches!(code.steps[0].op, Fast::Slow) {
            return None;
        }
        let mut regs = code.constants.clone();
        let base = regs.len();
        regs.extend(v);
        regs.push(0);
        let (mut pc, mut left) = (0, 1);
        let mut memory = Nothing;
        let mut sh = Shared { launch: &launch, memory: &mut memory, bytes: vec![], clock: 0, arrived: [0; 16] };
        let who = Thread { block: [0; 3], thread: [0; 3] };
        let mut access = Access { local: &mut vec![], who, sh: &mut sh };
        let stop = run(&mut regs, base, &code.steps, &mut pc, &mut left, &mut access, &kernel.body);
        assert!(matches!(stop, Ok(Stop::End)));
        Some(regs[base + 3])
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
                    let mut cases: Vec<(Op, u64)> = vec![(Op::Mov { ty, d: 3, a: b }, arith::mask(ty, v[1]))];
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
                    let want = arith::mask(ty, if v[2] & 1 != 0 { v[0] } else { v[1] });
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
                        let half = |v: u64, i: u32| arith::mask(ty, v >> (i * ty.bits()));
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
