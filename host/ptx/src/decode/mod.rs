//! An opcode with its modifiers (`ld.global.nc.v4.u32`) and its operands, checked and decoded
//! into an [`Op`]. What is not implemented is refused here, at load time, with the instruction
//! and its line: nothing is ever run wrong.
//!
//! [`op`] checks that the opcode is PTX, reads its modifiers once into [`Mods`] (each a typed
//! [`Mod`], `mods.rs`) and hands it to its family's function, which reads the operands through a
//! [`Decoder`]: `arith.rs` (what integers, floats and halves share), `integer.rs`, `compare.rs`,
//! `convert.rs`, `memory.rs`, `control.rs`, `warp.rs`, `sync.rs` (barriers and asynchronous
//! copies) and `matrix.rs` (tensor cores). A new instruction is a line of [`op`] and a function
//! in its family's file, a new modifier a line of `mods.rs`.

mod arith;
mod compare;
mod control;
mod convert;
mod integer;
mod matrix;
mod memory;
mod mods;
mod sync;
mod warp;

use crate::LoadError;
use crate::ir::{Address, FloatMode, Op, Round, Src, Ty, function_address};
use crate::operand::{Operand, Scope};
use crate::vocabulary;
use mods::{Mod, Mods};

/// Decodes one instruction.
pub(crate) fn op(opcode: &str, ops: &[Operand], scope: &Scope, line: u32) -> Result<Op, LoadError> {
    let mut parts = opcode.split('.');
    let name = parts.next().unwrap_or_default();
    // What is not PTX at all is the program's error, as ptxas reports it; what is PTX and is
    // not implemented below is the executor's refusal.
    // (In ptxas's words, as the JIT's error log gives them.)
    let not_ptx = |what: String| LoadError::Syntax { line, what };
    if !vocabulary::is_instruction(name) {
        return Err(not_ptx(format!("Not a name of any known instruction: '{name}'")));
    }
    if let Some(m) = opcode.split('.').skip(1).find(|m| !vocabulary::is_modifier(m)) {
        return Err(not_ptx(format!("Unknown modifier '.{m}'")));
    }
    let mods = Mods::new(parts);
    let (d, mods) = (&Decoder { ops, scope, line, opcode }, &mods);
    // An opcode's forms in the order they are told apart: a name may have several (`add.cc`,
    // `add.u16x2`, `add`), each a family's.
    match name {
        "mov" => arith::mov(mods, d),
        "ld" | "st" => memory::load_store(name, mods, d),
        "add" | "sub" | "mad" if mods.has(Mod::Cc) => integer::carry(name, mods, d),
        "addc" | "subc" | "madc" => integer::carry(name, mods, d),
        "add" | "sub" | "min" | "max" if mods.has(Mod::U16x2) || mods.has(Mod::S16x2) => integer::pair(name, mods, d),
        "fns" => integer::fns(mods, d),
        "add" | "sub" | "mul" | "div" | "rem" | "min" | "max" | "and" | "or" | "xor" | "shl" | "shr" | "copysign"
        | "mul24" => arith::binary(name, mods, d),
        "mad" | "fma" | "mad24" | "sad" => arith::ternary(name, mods, d),
        "bfe" | "prmt" | "lop3" | "shf" | "dp4a" | "dp2a" | "slct" => integer::bits(name, mods, d),
        "vadd2" | "vsub2" | "vavrg2" | "vabsdiff2" | "vmin2" | "vmax2" | "vadd4" | "vsub4" | "vavrg4" | "vabsdiff4"
        | "vmin4" | "vmax4" => integer::video(name, mods, d),
        "bmsk" | "szext" => integer::mask_or_extend(name, mods, d),
        "bfi" => integer::bfi(mods, d),
        "testp" => compare::testp(mods, d),
        "neg" | "abs" | "not" | "cnot" | "popc" | "clz" | "brev" | "sqrt" | "rcp" | "rsqrt" | "sin" | "cos" | "lg2"
        | "ex2" | "tanh" | "bfind" => arith::unary(name, mods, d),
        "setp" => compare::setp(mods, d),
        "set" => compare::set(mods, d),
        "selp" => compare::selp(mods, d),
        "cvt" if mods.types(false).iter().any(|t| matches!(t, Ty::E4M3x2 | Ty::E5M2x2)) => convert::fp8(mods, d),
        "cvt" if mods.has(Mod::Tf32) => convert::tf32(mods, d),
        "cvt" => convert::cvt(mods, d),
        "cvta" => memory::cvta(mods, d),
        "atom" | "red" => memory::atom(name, mods, d),
        "bra" => control::bra(mods, d),
        "brx" => control::brx(mods, d),
        "bar" if mods.has(Mod::Warp) => warp::sync(mods, d),
        // A cluster's barrier: `cluster` is among the ignored scopes, so it is told from the name.
        "barrier" if opcode.split('.').nth(1) == Some("cluster") => sync::cluster_barrier(mods, d),
        "mapa" => memory::mapa(mods, d),
        "bar" | "barrier" => sync::bar(mods, d),
        "shfl" => warp::shfl(mods, d),
        "vote" => warp::vote(mods, d),
        "match" => warp::matching(mods, d),
        "redux" => warp::redux(mods, d),
        "wmma" => matrix::wmma(mods, d),
        "mma" => matrix::mma_sync(mods, d),
        "ldmatrix" | "stmatrix" => matrix::matrix_rows(name == "stmatrix", mods, d),
        "elect" => warp::elect(mods, d),
        "activemask" => warp::active_mask(mods, d),
        "membar" | "fence" => Ok(Op::Fence),
        "cp" if mods.has(Mod::Async) => sync::copy_async(mods, d),
        "call" => control::call(mods, d),
        "ret" => Ok(Op::Ret),
        "exit" => Ok(Op::Exit),
        "trap" => Ok(Op::Trap),
        // Hints about caches and their policies, which nothing here has: a policy is any value.
        "prefetch" | "prefetchu" | "discard" | "applypriority" => Ok(Op::Fence),
        "createpolicy" => Ok(Op::Mov { ty: Ty::B64, d: d.reg(0)?, a: Src::Imm(0) }),
        "isspacep" => memory::isspacep(mods, d),
        // A thread's pause: nothing here waits on time. A grid's wait for the grid before it
        // (programmatic dependent launch): launches here run one after another, so that grid is
        // done, and a hint that the next may start changes nothing. A performance-monitor event
        // (`__prof_trigger`): nothing here counts them.
        "nanosleep" | "griddepcontrol" | "pmevent" => Ok(Op::Fence),
        "mbarrier" => sync::mbarrier(mods, d),
        _ => Err(LoadError::Unsupported { line, what: opcode.to_string() }),
    }
}

/// A float's rounding as written: `.rn`, `.rz`, `.rm` or `.rp` (the first of them, in that order).
fn float_rounding(mods: &Mods) -> Option<Round> {
    mods.pick(&[(Mod::Rn, Round::Nearest), (Mod::Rz, Round::Zero), (Mod::Rm, Round::Down), (Mod::Rp, Round::Up)])
}

/// A float's rounding to an integer as written: `.rni`, `.rzi`, `.rmi` or `.rpi`.
fn int_rounding(mods: &Mods) -> Option<Round> {
    mods.pick(&[(Mod::Rni, Round::Nearest), (Mod::Rzi, Round::Zero), (Mod::Rmi, Round::Down), (Mod::Rpi, Round::Up)])
}

/// A float instruction's rounding (to nearest unless written), `.ftz` and `.sat`.
fn float_mode(mods: &Mods, ty: Ty) -> FloatMode {
    let round = float_rounding(mods).unwrap_or(Round::Nearest);
    FloatMode { round, ftz: mods.has(Mod::Ftz), sat: ty.float() && mods.has(Mod::Sat) }
}

/// What a half's arithmetic may say: rounding to nearest only, and `.ftz`/`.sat` only on
/// `f16` (bf16 arithmetic has neither).
fn half_mode(ty: Ty, fm: FloatMode) -> Result<(), String> {
    match ty {
        _ if !ty.half() => Ok(()),
        _ if fm.round != Round::Nearest => Err("a rounding other than .rn on halves".into()),
        Ty::BF16 | Ty::BF16x2 if fm.ftz || fm.sat => Err("this modifier on bf16".into()),
        _ => Ok(()),
    }
}

/// Reads one instruction's operands.
struct Decoder<'a> {
    ops: &'a [Operand],
    scope: &'a Scope<'a>,
    line: u32,
    opcode: &'a str,
}

impl Decoder<'_> {
    fn bad(&self, what: &str) -> LoadError {
        LoadError::Syntax { line: self.line, what: format!("{}: {what}", self.opcode) }
    }

    /// The refusal of a form the executor does not implement, `what` saying which.
    fn unsupported(&self, what: impl std::fmt::Display) -> LoadError {
        LoadError::Unsupported { line: self.line, what: format!("{}: {what}", self.opcode) }
    }

    fn ty(&self, mods: &Mods) -> Result<Ty, LoadError> {
        mods.ty().ok_or_else(|| self.bad("no type"))
    }

    fn get(&self, i: usize) -> Result<&Operand, LoadError> {
        self.ops.get(i).ok_or_else(|| self.bad("too few operands"))
    }

    fn reg(&self, i: usize) -> Result<u32, LoadError> {
        match self.get(i)? {
            Operand::Reg(r) => Ok(*r),
            _ => Err(self.bad("a register was expected")),
        }
    }

    /// `n` destination registers: a register, or `{a, b, ...}` with `_` for none.
    fn regs(&self, i: usize, n: usize) -> Result<Vec<Option<u32>>, LoadError> {
        match (self.get(i)?, n) {
            (Operand::Reg(r), 1) => Ok(vec![Some(*r)]),
            (Operand::Vector(items), n) if items.len() == n => items
                .iter()
                .map(|o| match o {
                    None => Ok(None),
                    Some(Operand::Reg(r)) => Ok(Some(*r)),
                    _ => Err(self.bad("a vector of registers was expected")),
                })
                .collect(),
            _ => Err(self.bad("registers matching the vector width were expected")),
        }
    }

    /// `n` registers, `{a, b, ...}`, none left out.
    fn all_regs(&self, i: usize, n: usize) -> Result<Vec<u32>, LoadError> {
        self.regs(i, n)?.into_iter().map(|r| r.ok_or_else(|| self.bad("a register was expected"))).collect()
    }

    /// A destination that may carry a predicate too: `d` or `d|p`.
    fn reg_pair(&self, i: usize) -> Result<(u32, Option<u32>), LoadError> {
        match self.get(i)? {
            Operand::Pair(Some(a), b) => Ok((*a, *b)),
            Operand::Pair(None, _) => Err(self.bad("a register before |")),
            _ => Ok((self.reg(i)?, None)),
        }
    }

    /// `a|b` where either may be `_`, or one register `a`.
    fn sink_pair(&self, i: usize) -> Result<(Option<u32>, Option<u32>), LoadError> {
        match self.get(i)? {
            Operand::Pair(a, b) => Ok((*a, *b)),
            Operand::Sink => Ok((None, None)),
            _ => Ok((Some(self.reg(i)?), None)),
        }
    }

    /// The type of each of `n` parts of a `ty` packed by `mov`.
    fn part(&self, ty: Ty, n: usize) -> Result<Ty, LoadError> {
        match (ty.bits(), n) {
            (64, 2) => Ok(Ty::B32),
            (64, 4) | (32, 2) => Ok(Ty::B16),
            (32, 4) => Ok(Ty::B8),
            _ => Err(self.bad("a vector that does not pack into this type")),
        }
    }

    /// `n` sources, as for [`Decoder::regs`].
    fn srcs(&self, i: usize, n: usize, ty: Ty) -> Result<Vec<Src>, LoadError> {
        match (self.get(i)?, n) {
            (Operand::Vector(items), n) if items.len() == n => items
                .iter()
                .map(|o| o.as_ref().ok_or_else(|| self.bad("a value was expected")).and_then(|o| self.value(o, ty)))
                .collect(),
            (o, 1) => Ok(vec![self.value(o, ty)?]),
            _ => Err(self.bad("values matching the vector width were expected")),
        }
    }

    fn src(&self, i: usize, ty: Ty) -> Result<Src, LoadError> {
        self.value(self.get(i)?, ty)
    }

    fn value(&self, o: &Operand, ty: Ty) -> Result<Src, LoadError> {
        Ok(match o {
            Operand::Reg(r) => Src::Reg(*r),
            Operand::Special(s) => Src::Special(*s),
            Operand::Int(v) => Src::Imm(match ty {
                Ty::F32 => (*v as f32).to_bits() as u64,
                Ty::F64 => (*v as f64).to_bits(),
                _ => *v as u64,
            }),
            Operand::Float { .. } if ty.half() => return Err(self.bad("a float literal for a 16-bit float")),
            Operand::Float { bits, double } => Src::Imm(match (ty, double) {
                (Ty::F32, true) => (f64::from_bits(*bits) as f32).to_bits() as u64,
                (Ty::F64, false) => (f32::from_bits(*bits as u32) as f64).to_bits(),
                _ => *bits,
            }),
            Operand::Place(place) => Src::Addr(*place),
            // A function's name is its address, as a function pointer holds it.
            Operand::Name(n) if self.scope.place(n).is_none() && self.scope.functions.contains_key(n) => {
                Src::Imm(function_address(self.scope.functions[n]))
            }
            Operand::Name(n) => Src::Addr(self.scope.place(n).ok_or_else(|| self.bad(&format!("unknown name {n}")))?),
            _ => return Err(self.bad("a value was expected")),
        })
    }

    /// A predicate operand, maybe negated.
    fn pred(&self, i: usize) -> Result<(Src, bool), LoadError> {
        match self.get(i)? {
            Operand::Not(inner) => Ok((self.value(inner, Ty::Pred)?, true)),
            o => Ok((self.value(o, Ty::Pred)?, false)),
        }
    }

    fn addr(&self, i: usize) -> Result<Address, LoadError> {
        match self.get(i)? {
            Operand::Addr(base, offset) => address(base, *offset, self.scope, self.line),
            _ => Err(self.bad("an address `[...]` was expected")),
        }
    }
}

/// The address an `[...]` operand names.
fn address(base: &Operand, offset: i64, scope: &Scope, line: u32) -> Result<Address, LoadError> {
    let base = match base {
        Operand::Reg(r) => Src::Reg(*r),
        Operand::Int(v) => Src::Imm(*v as u64),
        Operand::Place(place) => Src::Addr(*place),
        Operand::Name(n) => match scope.place(n) {
            Some(place) => Src::Addr(place),
            None => return Err(LoadError::Syntax { line, what: format!("unknown name {n} in an address") }),
        },
        other => return Err(LoadError::Syntax { line, what: format!("{other:?} cannot be an address") }),
    };
    Ok(Address { base, offset })
}
