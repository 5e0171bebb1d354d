//! A kernel's body compiled once a launch into [`Fast`] instructions, one for each of the body's,
//! so that the common ones run without decoding operands: every operand an index relative to
//! the frame's registers, where immediates, addresses known for the whole launch and special
//! registers that stay the same for a thread sit in a pool just below each frame's registers
//! (negative indices; a call copies it, so a value a `mov` or an access's address takes whole
//! is kept in the step instead), widths resolved to shifts. The arithmetic without a fast form of its own
//! calls the same functions as the decoded instruction; anything else is [`Fast::Slow`] and runs
//! as decoded ([`crate::ir::Op`]).

// Constants are hashed by the hundred thousand in a large kernel: Fx, not SipHash.
use rustc_hash::FxHashMap as HashMap;

use super::float::Directed;
use super::{LOCAL_WINDOW, Launch, SHARED_WINDOW};
use crate::ir::{
    Address, BinOp, Cmp, Conversion, FloatMode, Function, Op, Place, Round, Space, Special, Src, TerOp, Ty, UnOp, Video,
};

/// A register, or (negative) a constant of the pool, relative to the frame's base.
pub(super) type Opnd = i32;

/// Operand `o` of the frame at `base` of `regs`.
#[inline(always)]
pub(super) fn get(regs: &[u64], base: usize, o: Opnd) -> u64 {
    regs[base.wrapping_add_signed(o as isize)]
}

/// One compiled instruction. `pad` is 64 minus the type's width in bits (63 for a predicate), the
/// register's bits above the type: `u64::MAX >> pad` masks a result to the type.
#[derive(Clone, Copy, Debug)]
pub(super) enum Fast {
    /// Run the decoded instruction.
    Slow,
    Mov {
        d: u32,
        a: Opnd,
        pad: u8,
    },
    /// A value known when the launch is compiled (an immediate, a variable's address): kept in
    /// the step rather than the pool, which every call copies.
    Set {
        d: u32,
        v: u64,
    },
    Add {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
    },
    Sub {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
    },
    Mul {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
    },
    And {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
    },
    Or {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
    },
    Xor {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
    },
    Shl {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
    },
    /// Unsigned (logical) right shift.
    Shr {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
    },
    /// Signed (arithmetic) right shift.
    Sar {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
    },
    /// Integer division (by zero: all ones).
    Div {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
        signed: bool,
    },
    /// Integer remainder (by zero: the dividend).
    Rem {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
        signed: bool,
    },
    /// The high half of the product.
    MulHi {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
        signed: bool,
    },
    /// The full product of operands of at most 32 bits.
    MulWide {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
        signed: bool,
    },
    /// `min`, or `max` where `max` is set.
    MinMax {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
        signed: bool,
        max: bool,
    },
    Mad {
        d: u32,
        a: Opnd,
        b: Opnd,
        c: Opnd,
        pad: u8,
    },
    /// An integer `setp`: `table` holds the result for greater (bit 0), less (bit 1) and equal
    /// (bit 2).
    Setp {
        d: u32,
        a: Opnd,
        b: Opnd,
        pad: u8,
        signed: bool,
        table: u8,
    },
    Selp {
        d: u32,
        a: Opnd,
        b: Opnd,
        p: Opnd,
        pad: u8,
    },
    /// Integer to integer `cvt` without saturation: extended from `from` bits, masked to `to`.
    Cvt {
        d: u32,
        a: Opnd,
        from: u8,
        signed: bool,
        to: u8,
    },
    /// Float `add`/`sub`/`mul`/`fma` to nearest without `.ftz` or `.sat` (`wide`: f64).
    FAdd {
        d: u32,
        a: Opnd,
        b: Opnd,
        wide: bool,
    },
    FSub {
        d: u32,
        a: Opnd,
        b: Opnd,
        wide: bool,
    },
    FMul {
        d: u32,
        a: Opnd,
        b: Opnd,
        wide: bool,
    },
    FDiv {
        d: u32,
        a: Opnd,
        b: Opnd,
        wide: bool,
    },
    FFma {
        d: u32,
        a: Opnd,
        b: Opnd,
        c: Opnd,
        wide: bool,
    },
    /// A float's `abs` or `neg` without `.ftz` ([`float::abs_neg`]).
    FSign {
        d: u32,
        a: Opnd,
        neg: bool,
        wide: bool,
    },
    FSetp {
        d: u32,
        a: Opnd,
        b: Opnd,
        cmp: Cmp,
        ty: Ty,
        ftz: bool,
    },
    /// Arithmetic without a form of its own, computed as decoded.
    Unary {
        op: UnOp,
        ty: Ty,
        fm: FloatMode,
        d: u32,
        a: Opnd,
    },
    Binary {
        op: BinOp,
        ty: Ty,
        fm: FloatMode,
        d: u32,
        a: Opnd,
        b: Opnd,
    },
    Ternary {
        op: TerOp,
        ty: Ty,
        fm: FloatMode,
        d: u32,
        a: Opnd,
        b: Opnd,
        c: Opnd,
    },
    Video {
        v: Video,
        d: u32,
        a: Opnd,
        b: Opnd,
        c: Opnd,
    },
    Convert {
        conv: Conversion,
        d: u32,
        a: Opnd,
    },
    Bfi {
        ty: Ty,
        d: u32,
        a: Opnd,
        b: Opnd,
        pos: Opnd,
        len: Opnd,
    },
    /// f32 arithmetic in a directed rounding without `.ftz` or `.sat` (`sqrt` of `a`; `c` the
    /// addend of `fma`).
    FDirected {
        op: Directed,
        round: Round,
        d: u32,
        a: Opnd,
        b: Opnd,
        c: Opnd,
    },
    /// A load of one register.
    Ld {
        d: u32,
        at: Opnd,
        offset: i64,
        space: Space,
        ty: Ty,
    },
    /// A store of one value.
    St {
        s: Opnd,
        at: Opnd,
        offset: i64,
        space: Space,
        ty: Ty,
    },
    /// `mov.b64 {lo, hi}, a` (or narrower): `a` split into two halves of `bits` each.
    Split {
        lo: u32,
        hi: u32,
        a: Opnd,
        bits: u8,
    },
    Bra {
        target: u32,
    },
    /// `bar.sync id` with neither a thread count nor a reduction.
    Bar {
        id: Opnd,
    },
    /// A warp-synchronous instruction: the lane stops on it.
    Warp,
}

/// One instruction: its guard and what it does.
#[derive(Clone, Copy, Debug)]
pub(super) struct Step {
    pub(super) guard: Option<(u32, bool)>,
    pub(super) op: Fast,
}

/// A body compiled for one launch.
pub(super) struct Code {
    pub(super) steps: Vec<Step>,
    /// The pool that sits below every frame's registers.
    pub(super) constants: Vec<u64>,
    /// The pool's slots that hold a thread's own special registers.
    pub(super) specials: Vec<(usize, Special)>,
}

// A step stays within half a cache line.
const _: () = assert!(size_of::<Step>() <= 32);

impl Code {
    pub(super) fn new(kernel: &Function, launch: &Launch<'_>) -> Code {
        // One pass: slot k is the k-th value below the frame, so an operand is known before the
        // pool's size; the pool is laid out reversed, its last value first.
        let mut pool = Pool::default();
        let steps = (kernel.body.iter())
            .map(|inst| Step { guard: inst.guard, op: compile(&inst.op, launch, &mut pool).unwrap_or(Fast::Slow) })
            .collect();
        let last = pool.values.len().saturating_sub(1);
        pool.values.reverse();
        let specials = pool.specials.into_iter().map(|(k, s)| (last - k, s)).collect();
        Code { steps, constants: pool.values, specials }
    }
}

/// The values below each frame, and the slots of those a thread sets for itself.
#[derive(Default)]
struct Pool {
    values: Vec<u64>,
    index: HashMap<u64, usize>,
    specials: Vec<(usize, Special)>,
}

impl Pool {
    /// The operand of pool slot `k`: the k-th value below the frame.
    fn slot(&self, k: usize) -> Opnd {
        -(k as i32) - 1
    }

    fn constant(&mut self, v: u64) -> Opnd {
        let k = match self.index.get(&v) {
            Some(&k) => k,
            None => {
                self.values.push(v);
                self.index.insert(v, self.values.len() - 1);
                self.values.len() - 1
            }
        };
        self.slot(k)
    }

    /// A special register whose value a thread keeps; `%clock` and its kin change.
    fn special(&mut self, s: Special) -> Option<Opnd> {
        if matches!(s, Special::Clock | Special::Clock64 | Special::GlobalTimer) {
            return None;
        }
        let k = match self.specials.iter().find(|&&(_, t)| t == s) {
            Some(&(k, _)) => k,
            None => {
                self.values.push(0);
                self.specials.push((self.values.len() - 1, s));
                self.values.len() - 1
            }
        };
        Some(self.slot(k))
    }

    /// The operand a source is, if it needs nothing of the thread but its registers.
    fn src(&mut self, s: Src, launch: &Launch<'_>) -> Option<Opnd> {
        match s {
            Src::Reg(r) => i32::try_from(r).ok(),
            Src::Imm(v) => Some(self.constant(v)),
            Src::Addr(Place::Module(i)) => Some(self.constant(launch.variables.get(i as usize).copied().unwrap_or(0))),
            Src::Addr(Place::Param(at) | Place::Shared(at)) => Some(self.constant(at as u64)),
            Src::Special(s) => self.special(s),
            Src::Addr(Place::Local(_)) => None,
        }
    }
}

/// The value of `s` when it is the same for every thread of the launch.
fn known(s: Src, launch: &Launch<'_>) -> Option<u64> {
    match s {
        Src::Imm(v) => Some(v),
        Src::Addr(Place::Module(i)) => Some(launch.variables.get(i as usize).copied().unwrap_or(0)),
        Src::Addr(Place::Param(at) | Place::Shared(at)) => Some(at as u64),
        _ => None,
    }
}

/// The base operand and offset of an access.
fn address(at: Address, launch: &Launch<'_>, pool: &mut Pool) -> Option<(Opnd, i64)> {
    match known(at.base, launch) {
        Some(v) => Some((pool.constant(0), at.offset.wrapping_add(v as i64))),
        None => Some((pool.src(at.base, launch)?, at.offset)),
    }
}

/// The truth table of an integer comparison over (greater, less, equal).
fn table(cmp: Cmp) -> u8 {
    match cmp {
        Cmp::Eq | Cmp::Equ => 0b100,
        Cmp::Ne | Cmp::Neu => 0b011,
        Cmp::Lt | Cmp::Ltu => 0b010,
        Cmp::Le | Cmp::Leu => 0b110,
        Cmp::Gt | Cmp::Gtu => 0b001,
        Cmp::Ge | Cmp::Geu => 0b101,
        Cmp::Num => 0b111,
        Cmp::Nan => 0b000,
    }
}

/// The fast form of `op`, if it has one.
fn compile(op: &Op, launch: &Launch<'_>, pool: &mut Pool) -> Option<Fast> {
    let mut src = |s: Src| pool.src(s, launch);
    let pad = |ty: Ty| (64 - ty.bits()) as u8;
    let d32 = |r: u32| i32::try_from(r).ok().map(|_| r);
    Some(match *op {
        Op::Mov { ty, d, a } => match known(a, launch) {
            Some(v) => Fast::Set { d: d32(d)?, v: v & (u64::MAX >> pad(ty)) },
            None => Fast::Mov { d: d32(d)?, a: src(a)?, pad: pad(ty) },
        },
        Op::Binary { op, ty, fm, d, a, b } if ty.half() => {
            Fast::Binary { op, ty, fm, d: d32(d)?, a: src(a)?, b: src(b)? }
        }
        Op::Binary { op, ty, fm, d, a, b } if ty.float() => {
            let (d, a, b, wide) = (d32(d)?, src(a)?, src(b)?, ty == Ty::F64);
            let directed = !wide && !fm.ftz && !fm.sat && fm.round != Round::Nearest;
            let round = fm.round;
            match op {
                BinOp::Add if directed => Fast::FDirected { op: Directed::Add, round, d, a, b, c: a },
                BinOp::Sub if directed => Fast::FDirected { op: Directed::Sub, round, d, a, b, c: a },
                BinOp::MulLo if directed => Fast::FDirected { op: Directed::Mul, round, d, a, b, c: a },
                BinOp::Div if directed => Fast::FDirected { op: Directed::Div, round, d, a, b, c: a },
                BinOp::Add if fm == FloatMode::default() => Fast::FAdd { d, a, b, wide },
                BinOp::Sub if fm == FloatMode::default() => Fast::FSub { d, a, b, wide },
                BinOp::MulLo if fm == FloatMode::default() => Fast::FMul { d, a, b, wide },
                BinOp::Div if fm == FloatMode::default() => Fast::FDiv { d, a, b, wide },
                op => Fast::Binary { op, ty, fm, d, a, b },
            }
        }
        Op::Binary { op, ty, fm, d, a, b } => {
            let (d, a, b, pad) = (d32(d)?, src(a)?, src(b)?, pad(ty));
            match op {
                BinOp::Add => Fast::Add { d, a, b, pad },
                BinOp::Sub => Fast::Sub { d, a, b, pad },
                BinOp::MulLo => Fast::Mul { d, a, b, pad },
                BinOp::And => Fast::And { d, a, b, pad },
                BinOp::Or => Fast::Or { d, a, b, pad },
                BinOp::Xor => Fast::Xor { d, a, b, pad },
                BinOp::Shl => Fast::Shl { d, a, b, pad },
                BinOp::Shr if ty.signed() => Fast::Sar { d, a, b, pad },
                BinOp::Shr => Fast::Shr { d, a, b, pad },
                BinOp::Div => Fast::Div { d, a, b, pad, signed: ty.signed() },
                BinOp::Rem => Fast::Rem { d, a, b, pad, signed: ty.signed() },
                BinOp::MulHi => Fast::MulHi { d, a, b, pad, signed: ty.signed() },
                BinOp::MulWide if ty.bits() <= 32 => Fast::MulWide { d, a, b, pad, signed: ty.signed() },
                BinOp::Min => Fast::MinMax { d, a, b, pad, signed: ty.signed(), max: false },
                BinOp::Max => Fast::MinMax { d, a, b, pad, signed: ty.signed(), max: true },
                op => Fast::Binary { op, ty, fm, d, a, b },
            }
        }
        Op::Ternary { op: TerOp::MadLo, ty, d, a, b, c, .. } if !ty.float() => {
            Fast::Mad { d: d32(d)?, a: src(a)?, b: src(b)?, c: src(c)?, pad: pad(ty) }
        }
        Op::Ternary { op: TerOp::Fma, ty, fm, d, a, b, c } if fm == FloatMode::default() && !ty.half() => {
            Fast::FFma { d: d32(d)?, a: src(a)?, b: src(b)?, c: src(c)?, wide: ty == Ty::F64 }
        }
        Op::Ternary { op: TerOp::Fma, ty: Ty::F32, fm, d, a, b, c } if !fm.ftz && !fm.sat => {
            let (d, a, b, c) = (d32(d)?, src(a)?, src(b)?, src(c)?);
            Fast::FDirected { op: Directed::Fma, round: fm.round, d, a, b, c }
        }
        Op::Setp { cmp, ty, ftz, d, d2: None, a, b, with: None } => match ty.float() {
            true => Fast::FSetp { d: d32(d)?, a: src(a)?, b: src(b)?, cmp, ty, ftz },
            false => {
                Fast::Setp { d: d32(d)?, a: src(a)?, b: src(b)?, pad: pad(ty), signed: ty.signed(), table: table(cmp) }
            }
        },
        Op::Selp { ty, d, a, b, p } => Fast::Selp { d: d32(d)?, a: src(a)?, b: src(b)?, p: src(p)?, pad: pad(ty) },
        Op::Cvt { conv: Conversion { to, from, fm: FloatMode { sat: false, .. }, .. }, d, a }
            if !to.float() && !from.float() && !to.fp8() && !from.fp8() =>
        {
            Fast::Cvt { d: d32(d)?, a: src(a)?, from: pad(from), signed: from.signed(), to: pad(to) }
        }
        Op::Cvta { to, space, d, a } => {
            let window = match space {
                Space::Shared => SHARED_WINDOW,
                Space::Local => LOCAL_WINDOW,
                _ => 0,
            };
            let add = if to { window.wrapping_neg() } else { window };
            let (d, a) = (d32(d)?, src(a)?);
            Fast::Add { d, a, b: pool.constant(add), pad: 0 }
        }
        // An address known at compile time goes into the offset, the base a zero.
        Op::Ld { space, ty, ref d, at } => match d[..] {
            [Some(r)] => {
                let (at, offset) = address(at, launch, pool)?;
                Fast::Ld { d: d32(r)?, at, offset, space, ty }
            }
            _ => return None,
        },
        Op::St { space, ty, ref s, at } => match s[..] {
            [v] => {
                let (at, offset) = address(at, launch, pool)?;
                Fast::St { s: pool.src(v, launch)?, at, offset, space, ty }
            }
            _ => return None,
        },
        Op::Unary { op: UnOp::Sqrt, ty: Ty::F32, fm, d, a } if !fm.ftz && !fm.sat && fm.round != Round::Nearest => {
            let a = src(a)?;
            Fast::FDirected { op: Directed::Sqrt, round: fm.round, d: d32(d)?, a, b: a, c: a }
        }
        Op::Unary { op: op @ (UnOp::Abs | UnOp::Neg), ty: ty @ (Ty::F32 | Ty::F64), fm, d, a } if !fm.ftz => {
            Fast::FSign { d: d32(d)?, a: src(a)?, neg: op == UnOp::Neg, wide: ty == Ty::F64 }
        }
        Op::Unary { op, ty, fm, d, a } => Fast::Unary { op, ty, fm, d: d32(d)?, a: src(a)? },
        Op::Ternary { op, ty, fm, d, a, b, c } => {
            Fast::Ternary { op, ty, fm, d: d32(d)?, a: src(a)?, b: src(b)?, c: src(c)? }
        }
        Op::Video { v, d, a, b, c } => Fast::Video { v, d: d32(d)?, a: src(a)?, b: src(b)?, c: src(c)? },
        Op::Cvt { conv, d, a } => Fast::Convert { conv, d: d32(d)?, a: src(a)? },
        Op::Bfi { ty, d, a, b, pos, len } => {
            Fast::Bfi { ty, d: d32(d)?, a: src(a)?, b: src(b)?, pos: src(pos)?, len: src(len)? }
        }
        Op::Unpack { ty, ref d, a } => match d[..] {
            [Some(lo), Some(hi)] if ty.bits() < 64 => {
                Fast::Split { lo: d32(lo)?, hi: d32(hi)?, a: src(a)?, bits: ty.bits() as u8 }
            }
            _ => return None,
        },
        Op::Bra { target } => Fast::Bra { target },
        Op::Bar { id, threads: None, wait: true, red: None } => Fast::Bar { id: src(id)? },
        Op::Warp { .. } => Fast::Warp,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Shape;

    /// A call copies the pool: values a `mov` or an access takes whole stay out of it, so the
    /// pool does not grow with a module's variables.
    #[test]
    fn moved_values_and_known_addresses_stay_out_of_the_pool() {
        let text = ".version 8.0\n.target sm_90\n.address_size 64\n.global .u32 a[2];\n.global .u32 b;\n\
                    .visible .entry k()\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<2>;\nmov.u64 %rd1, a;\nmov.u16 %r1, 0x12345;\n\
                    ld.global.u32 %r2, [b];\nst.global.u32 [a+4], %r2;\nadd.s32 %r3, %r2, 5;\nret;\n}\n";
        let module = crate::load(text).unwrap();
        let shape = Shape { grid: [1; 3], block: [1; 3], shared: 0, params: &[] };
        let launch = Launch {
            shape,
            variables: &[0x1000, 0x2000],
            budget: 1,
            grid_sync: None,
            cluster: None,
            resident_blocks: 1,
        };
        let code = Code::new(module.kernel("k").unwrap(), &launch);
        assert_eq!(code.constants, [5, 0], "a zero base for the accesses, and the add's immediate");
        let ops: Vec<Fast> = code.steps.iter().map(|s| s.op).collect();
        assert!(matches!(ops[0], Fast::Set { v: 0x1000, .. }), "{:?}", ops[0]);
        assert!(matches!(ops[1], Fast::Set { v: 0x2345, .. }), "masked to 16 bits: {:?}", ops[1]);
        assert!(matches!(ops[2], Fast::Ld { at: -1, offset: 0x2000, .. }), "{:?}", ops[2]);
        assert!(matches!(ops[3], Fast::St { at: -1, offset: 0x1004, .. }), "{:?}", ops[3]);
    }
}
