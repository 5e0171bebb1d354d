//! An opcode with its modifiers (`ld.global.nc.v4.u32`) and its operands, checked and decoded
//! into an [`Op`]. What is not implemented is refused here, at load time, with the instruction
//! and its line: nothing is ever run wrong.

use crate::LoadError;
use crate::ir::{
    Address, AtomOp, BarRed, BarRedOp, BinOp, BoolOp, Call, CarryKind, CarryOp, Cmp, Conversion, FloatClass, FloatMode,
    Fragment, IndirectCall, MBarrierOp, Matrix, MatrixRows, Mma, Op, PairOp, Place, PrmtMode, ReduxOp, Round, ShflMode,
    Space, Src, TerOp, Ty, UnOp, Video, VideoOp, VideoThen, VoteMode, WarpOp, function_address,
};
use crate::operand::{Operand, Scope};
use crate::vocabulary;

/// The modifiers of an opcode, split, with the ones that change nothing here dropped: cache
/// operators, memory orders and scopes (every access is seen at once, in program order), `.uni`.
struct Mods {
    words: Vec<String>,
}

const IGNORED: [&str; 35] = [
    "ca",
    "cg",
    "cs",
    "lu",
    "cv",
    "wb",
    "wt",
    "nc",
    "volatile",
    "relaxed",
    "acquire",
    "release",
    "acq_rel",
    "sc",
    "cta",
    "gpu",
    "sys",
    "cluster",
    "uni",
    "aligned",
    "weak",
    // Eviction priorities, prefetch sizes and cache policies: hints to caches there are not.
    "L1::evict_normal",
    "L1::evict_unchanged",
    "L1::evict_first",
    "L1::evict_last",
    "L1::no_allocate",
    "L2::evict_normal",
    "L2::evict_first",
    "L2::evict_last",
    "L2::evict_unchanged",
    "L2::64B",
    "L2::128B",
    "L2::256B",
    "L2::cache_hint",
    "level::prefetch_size",
];

impl Mods {
    fn has(&self, m: &str) -> bool {
        self.words.iter().any(|w| w == m)
    }

    /// The value of the first of `table`'s modifiers that is present.
    fn pick<T: Copy>(&self, table: &[(&str, T)]) -> Option<T> {
        table.iter().find(|(m, _)| self.has(m)).map(|&(_, v)| v)
    }

    /// The last modifier naming a type.
    fn ty(&self) -> Option<Ty> {
        self.words.iter().rev().find_map(|w| Ty::named(w))
    }

    /// The two last type modifiers, `(destination, source)` as `cvt` writes them.
    fn two_types(&self) -> Option<(Ty, Ty)> {
        let tys: Vec<Ty> = self.words.iter().filter_map(|w| Ty::named(w)).collect();
        match tys[..] {
            [.., a, b] => Some((a, b)),
            _ => None,
        }
    }

    fn space(&self) -> Space {
        for w in &self.words {
            match w.as_str() {
                "global" => return Space::Global,
                // A `.shared::cluster` address of the block's own memory is its `::cta` one;
                // another block's is marked with its rank (`mapa`).
                "shared" | "shared::cta" | "shared::cluster" => return Space::Shared,
                "local" => return Space::Local,
                "param" => return Space::Param,
                "const" => return Space::Const,
                _ => {}
            }
        }
        Space::Generic
    }

    fn vector(&self) -> usize {
        match () {
            _ if self.has("v2") => 2,
            _ if self.has("v4") => 4,
            _ if self.has("v8") => 8,
            _ => 1,
        }
    }

    /// Every modifier is one of `known` (or ignorable, or a type).
    fn only(&self, known: &[&str]) -> Result<(), String> {
        match self.words.iter().find(|w| !known.contains(&w.as_str()) && Ty::named(w).is_none()) {
            Some(w) => Err(format!("the modifier .{w}")),
            None => Ok(()),
        }
    }
}

/// Decodes one instruction.
pub(crate) fn op(opcode: &str, ops: &[Operand], scope: &Scope, line: u32) -> Result<Op, LoadError> {
    let unsupported = |what: String| LoadError::Unsupported { line, what: format!("{opcode}: {what}") };
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
    let mods = Mods { words: parts.filter(|m| !IGNORED.contains(m)).map(String::from).collect() };
    let d = Decoder { ops, scope, line, opcode };
    let decoded = match name {
        "mov" => {
            mods.only(&[]).map_err(unsupported)?;
            let ty = d.ty(&mods)?;
            match (ops.first(), ops.get(1)) {
                (Some(Operand::Vector(parts)), _) => {
                    let part = d.part(ty, parts.len())?;
                    Op::Unpack { ty: part, d: d.regs(0, parts.len())?, a: d.src(1, ty)? }
                }
                (_, Some(Operand::Vector(parts))) => {
                    let part = d.part(ty, parts.len())?;
                    Op::Pack { ty: part, d: d.reg(0)?, parts: d.srcs(1, parts.len(), part)? }
                }
                _ => Op::Mov { ty, d: d.reg(0)?, a: d.src(1, ty)? },
            }
        }
        "ld" | "st" => {
            mods.only(&[
                "global",
                "shared",
                "shared::cta",
                "shared::cluster",
                "local",
                "param",
                "const",
                "v2",
                "v4",
                "v8",
            ])
            .map_err(unsupported)?;
            let ty = d.ty(&mods)?;
            let (mut space, n) = (mods.space(), mods.vector());
            // A `.func`'s parameters and a call's `.param`s live in the frame's local memory.
            let at = d.addr(if name == "ld" { 1 } else { 0 })?;
            if space == Space::Param && matches!(at.base, Src::Addr(Place::Local(_))) {
                space = Space::Local;
            }
            if name == "ld" {
                let regs = d.regs(0, n)?;
                Op::Ld { space, ty, d: regs, at }
            } else {
                let srcs = d.srcs(1, n, ty)?;
                Op::St { space, ty, s: srcs, at }
            }
        }
        "add" | "sub" | "mad" if mods.has("cc") => carry(name, &mods, &d, &unsupported)?,
        "addc" | "subc" | "madc" => carry(name, &mods, &d, &unsupported)?,
        "add" | "sub" | "min" | "max" if mods.has("u16x2") || mods.has("s16x2") => {
            let signed = mods.has("s16x2");
            mods.only(&["u16x2", "s16x2", "relu"]).map_err(unsupported)?;
            let op = match name {
                "add" => PairOp::Add,
                "sub" => PairOp::Sub,
                "min" => PairOp::Min,
                _ => PairOp::Max,
            };
            let relu = mods.has("relu");
            if relu && !(signed && matches!(op, PairOp::Min | PairOp::Max)) {
                return Err(unsupported("the modifier .relu here".into()));
            }
            let (ty, fm) = (Ty::B32, FloatMode::default());
            Op::Binary {
                op: BinOp::Pair { op, signed, relu },
                ty,
                fm,
                d: d.reg(0)?,
                a: d.src(1, ty)?,
                b: d.src(2, ty)?,
            }
        }
        "fns" => {
            if d.ty(&mods)? != Ty::B32 {
                return Err(unsupported("this type".into()));
            }
            mods.only(&[]).map_err(unsupported)?;
            let (op, ty, fm) = (TerOp::Fns, Ty::B32, FloatMode::default());
            Op::Ternary { op, ty, fm, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, Ty::U32)?, c: d.src(3, Ty::S32)? }
        }
        "add" | "sub" | "mul" | "div" | "rem" | "min" | "max" | "and" | "or" | "xor" | "shl" | "shr" | "copysign"
        | "mul24" => {
            let ty = d.ty(&mods)?;
            let fm = float_mode(&mods, ty);
            let op = match (name, mods.has("sat"), mods.has("lo"), mods.has("hi"), mods.has("wide")) {
                ("add", true, ..) if ty.float() => BinOp::Add,
                ("sub", true, ..) if ty.float() => BinOp::Sub,
                ("mul", true, ..) if ty.float() => BinOp::MulLo,
                ("add", false, ..) => BinOp::Add,
                ("add", true, ..) if ty == Ty::S32 => BinOp::AddSat,
                ("sub", false, ..) => BinOp::Sub,
                ("sub", true, ..) if ty == Ty::S32 => BinOp::SubSat,
                ("mul24", false, true, _, _) if ty.bits() == 32 => BinOp::Mul24Lo,
                ("mul24", false, _, true, _) if ty.bits() == 32 => BinOp::Mul24Hi,
                ("mul", false, true, _, _) => BinOp::MulLo,
                ("mul", false, _, true, _) => BinOp::MulHi,
                ("mul", false, _, _, true) if ty.bits() <= 32 => BinOp::MulWide,
                ("mul", false, false, false, false) if ty.float() => BinOp::MulLo,
                ("div", false, ..) => BinOp::Div,
                ("rem", false, ..) if !ty.float() => BinOp::Rem,
                ("min", false, ..) => BinOp::Min,
                ("max", false, ..) => BinOp::Max,
                ("and", false, ..) => BinOp::And,
                ("or", false, ..) => BinOp::Or,
                ("xor", false, ..) => BinOp::Xor,
                ("shl", false, ..) => BinOp::Shl,
                ("shr", false, ..) => BinOp::Shr,
                ("copysign", false, ..) if ty.float() => BinOp::CopySign,
                _ => return Err(unsupported("this form".into())),
            };
            mods.only(&["sat", "lo", "hi", "wide", "rn", "rz", "rm", "rp", "ftz", "approx", "full", "NaN"])
                .map_err(unsupported)?;
            let float_op = matches!(
                op,
                BinOp::Add | BinOp::Sub | BinOp::MulLo | BinOp::Div | BinOp::Min | BinOp::Max | BinOp::CopySign
            );
            if ty.float() && !float_op || ty.half() && matches!(op, BinOp::Div | BinOp::CopySign) {
                return Err(unsupported("this operation on floats".into()));
            }
            if ty == Ty::F64 && fm.sat {
                return Err(unsupported("this modifier".into()));
            }
            half_mode(ty, fm).map_err(unsupported)?;
            let op = match (op, mods.has("NaN")) {
                (op, false) => op,
                (BinOp::Min, true) if ty != Ty::F64 && ty.float() => BinOp::MinNaN,
                (BinOp::Max, true) if ty != Ty::F64 && ty.float() => BinOp::MaxNaN,
                _ => return Err(unsupported("the modifier .NaN here".into())),
            };
            let shift = matches!(op, BinOp::Shl | BinOp::Shr);
            let b_ty = if shift { Ty::U32 } else { ty };
            let (a, b) = (d.src(1, ty)?, d.src(2, b_ty)?);
            // ptxas makes the min or max of an f32, f64 or f16 register and itself the register,
            // a NaN as it is; so does the executor. (A bf16 and a pair of halves it computes.)
            let float = matches!(ty, Ty::F32 | Ty::F64 | Ty::F16) && !fm.ftz;
            if matches!(op, BinOp::Min | BinOp::Max) && float && a == b && matches!(a, Src::Reg(_)) {
                return Ok(Op::Mov { ty, d: d.reg(0)?, a });
            }
            Op::Binary { op, ty, fm, d: d.reg(0)?, a, b }
        }
        "mad" | "fma" | "mad24" | "sad" => {
            let ty = d.ty(&mods)?;
            let fm = float_mode(&mods, ty);
            mods.only(&["lo", "hi", "wide", "rn", "rz", "rm", "rp", "ftz", "sat", "relu"]).map_err(unsupported)?;
            let op = match (name, ty.float(), mods.has("lo"), mods.has("hi"), mods.has("wide")) {
                // A half's fma names its rounding, which is to nearest.
                ("fma", true, ..) if ty.half() && mods.has("rn") && mods.has("relu") && !fm.sat => TerOp::FmaRelu,
                ("fma", true, ..) if ty.half() && mods.has("rn") && !mods.has("relu") => TerOp::Fma,
                (_, true, ..) if ty.half() => return Err(unsupported("this form".into())),
                (_, true, ..) if ty.bits() == 32 || !fm.sat => TerOp::Fma,
                ("sad", false, ..) => TerOp::Sad,
                ("mad24", false, true, _, _) if ty.bits() == 32 && !fm.sat => TerOp::Mad24Lo,
                ("mad24", false, _, true, _) if ty.bits() == 32 && !fm.sat => TerOp::Mad24Hi,
                ("mad", false, true, _, _) if !fm.sat => TerOp::MadLo,
                ("mad", false, _, true, _) if !fm.sat => TerOp::MadHi,
                ("mad", false, _, _, true) if !fm.sat => TerOp::MadWide,
                _ => return Err(unsupported("this form".into())),
            };
            half_mode(ty, fm).map_err(unsupported)?;
            let c_ty = match op {
                TerOp::MadWide => widened(ty).ok_or_else(|| unsupported("a type that does not widen".into()))?,
                _ => ty,
            };
            Op::Ternary { op, ty, fm, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, ty)?, c: d.src(3, c_ty)? }
        }
        "bfe" | "prmt" | "lop3" | "shf" | "dp4a" | "dp2a" | "slct" => {
            let tys: Vec<Ty> = mods.words.iter().filter_map(|w| Ty::named(w)).collect();
            let ty = *tys.first().ok_or_else(|| d.bad("no type"))?;
            mods.only(&["l", "r", "clamp", "wrap", "lo", "hi", "f4e", "b4e", "rc8", "ecl", "ecr", "rc16", "ftz"])
                .map_err(unsupported)?;
            let (op, b_ty, c_ty, sources) = match name {
                "bfe" if ty.bits() >= 32 => (TerOp::Bfe, Ty::U32, Ty::U32, 3),
                "prmt" if ty.bits() == 32 => {
                    use PrmtMode::*;
                    let modes = [("f4e", F4e), ("b4e", B4e), ("rc8", Rc8), ("ecl", Ecl), ("ecr", Ecr), ("rc16", Rc16)];
                    (TerOp::Prmt(mods.pick(&modes)), ty, ty, 3)
                }
                "lop3" if ty.bits() == 32 => match ops.get(4) {
                    Some(Operand::Int(lut)) => (TerOp::Lop3(*lut as u8), ty, ty, 3),
                    _ => return Err(unsupported("a look-up table that is not a number".into())),
                },
                "shf" if ty.bits() == 32 && (mods.has("l") || mods.has("r")) => {
                    let op = TerOp::Shf { left: mods.has("l"), clamp: mods.has("clamp") };
                    (op, ty, Ty::U32, 3)
                }
                "dp4a" | "dp2a" if tys.len() == 2 && tys.iter().all(|t| t.bits() == 32) => {
                    let two = (name == "dp2a").then(|| mods.has("hi"));
                    let op = TerOp::Dp { a_signed: tys[0].signed(), b_signed: tys[1].signed(), two };
                    (op, Ty::B32, Ty::B32, 3)
                }
                "slct" if tys.len() == 2 && (tys[1] == Ty::F32 || tys[1] == Ty::S32 && !mods.has("ftz")) => {
                    (TerOp::Slct { float_c: tys[1] == Ty::F32, ftz: mods.has("ftz") }, ty, tys[1], 3)
                }
                _ => return Err(unsupported("this form".into())),
            };
            let prmt_mode = ["f4e", "b4e", "rc8", "ecl", "ecr", "rc16"].iter().any(|m| mods.has(m));
            if prmt_mode && !matches!(op, TerOp::Prmt(_)) || mods.has("ftz") && !matches!(op, TerOp::Slct { .. }) {
                return Err(unsupported("this form".into()));
            }
            let _ = sources;
            let fm = FloatMode::default();
            Op::Ternary { op, ty, fm, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, b_ty)?, c: d.src(3, c_ty)? }
        }
        "vadd2" | "vsub2" | "vavrg2" | "vabsdiff2" | "vmin2" | "vmax2" | "vadd4" | "vsub4" | "vavrg4" | "vabsdiff4"
        | "vmin4" | "vmax4" => {
            let tys: Vec<Ty> = mods.words.iter().filter_map(|w| Ty::named(w)).collect();
            mods.only(&["sat", "add"]).map_err(unsupported)?;
            let [dt, at, bt] = tys[..] else { return Err(d.bad("three types were expected")) };
            if [dt, at, bt].iter().any(|t| !matches!(t, Ty::U32 | Ty::S32)) {
                return Err(unsupported("this type".into()));
            }
            let then = match (mods.has("sat"), mods.has("add")) {
                (false, false) => VideoThen::Merge,
                (true, false) => VideoThen::Saturate,
                (false, true) => VideoThen::Add,
                (true, true) => return Err(d.bad(".sat with .add")),
            };
            let op = match &name[..name.len() - 1] {
                "vadd" => VideoOp::Add,
                "vsub" => VideoOp::Sub,
                "vavrg" => VideoOp::Avrg,
                "vabsdiff" => VideoOp::AbsDiff,
                "vmin" => VideoOp::Min,
                _ => VideoOp::Max,
            };
            let v = Video { op, halves: name.ends_with('2'), signed: [dt, at, bt].map(Ty::signed), then };
            Op::Video { v, d: d.reg(0)?, a: d.src(1, Ty::B32)?, b: d.src(2, Ty::B32)?, c: d.src(3, Ty::B32)? }
        }
        "bmsk" | "szext" => {
            let ty = d.ty(&mods)?;
            mods.only(&["clamp", "wrap"]).map_err(unsupported)?;
            let clamp = mods.has("clamp");
            let op = match name {
                "bmsk" if ty == Ty::B32 => BinOp::Bmsk { clamp },
                "szext" if matches!(ty, Ty::U32 | Ty::S32) => BinOp::Szext { clamp },
                _ => return Err(unsupported("this type".into())),
            };
            if clamp == mods.has("wrap") {
                return Err(unsupported("a mode other than .clamp or .wrap".into()));
            }
            Op::Binary { op, ty, fm: FloatMode::default(), d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, Ty::U32)? }
        }
        "bfi" => {
            let ty = d.ty(&mods)?;
            mods.only(&[]).map_err(unsupported)?;
            if ty.bits() < 32 {
                return Err(unsupported("this type".into()));
            }
            let (a, b) = (d.src(1, ty)?, d.src(2, ty)?);
            Op::Bfi { ty, d: d.reg(0)?, a, b, pos: d.src(3, Ty::U32)?, len: d.src(4, Ty::U32)? }
        }
        "testp" => {
            let ty = d.ty(&mods)?;
            let classes = [
                ("finite", FloatClass::Finite),
                ("infinite", FloatClass::Infinite),
                ("number", FloatClass::Number),
                ("notanumber", FloatClass::NotANumber),
                ("normal", FloatClass::Normal),
                ("subnormal", FloatClass::Subnormal),
            ];
            let class = mods.pick(&classes).ok_or_else(|| unsupported("no class".into()))?;
            mods.only(&["finite", "infinite", "number", "notanumber", "normal", "subnormal"]).map_err(unsupported)?;
            if !ty.float() || ty.half() {
                return Err(unsupported("this type".into()));
            }
            Op::Unary { op: UnOp::Test(class), ty, fm: FloatMode::default(), d: d.reg(0)?, a: d.src(1, ty)? }
        }
        "neg" | "abs" | "not" | "cnot" | "popc" | "clz" | "brev" | "sqrt" | "rcp" | "rsqrt" | "sin" | "cos" | "lg2"
        | "ex2" | "tanh" | "bfind" => {
            let ty = d.ty(&mods)?;
            let fm = float_mode(&mods, ty);
            mods.only(&["rn", "rz", "rm", "rp", "ftz", "approx", "full", "shiftamt"]).map_err(unsupported)?;
            let op = match name {
                "bfind" if mods.has("shiftamt") => UnOp::BfindShift,
                "neg" => UnOp::Neg,
                "abs" => UnOp::Abs,
                "not" => UnOp::Not,
                "cnot" => UnOp::Cnot,
                "popc" => UnOp::Popc,
                "clz" => UnOp::Clz,
                "brev" => UnOp::Brev,
                "sqrt" => UnOp::Sqrt,
                "rcp" => UnOp::Rcp,
                "rsqrt" => UnOp::Rsqrt,
                "sin" => UnOp::Sin,
                "cos" => UnOp::Cos,
                "lg2" => UnOp::Lg2,
                "ex2" => UnOp::Ex2,
                "tanh" => UnOp::Tanh,
                _ => UnOp::Bfind,
            };
            let float_only = matches!(
                op,
                UnOp::Sqrt | UnOp::Rcp | UnOp::Rsqrt | UnOp::Sin | UnOp::Cos | UnOp::Lg2 | UnOp::Ex2 | UnOp::Tanh
            );
            let on_halves = matches!(op, UnOp::Neg | UnOp::Abs | UnOp::Ex2 | UnOp::Tanh);
            if float_only != ty.float() && !matches!(op, UnOp::Neg | UnOp::Abs) || ty.half() && !on_halves {
                return Err(unsupported("this type".into()));
            }
            if op == UnOp::Tanh && ty == Ty::F64 {
                return Err(unsupported("this type".into()));
            }
            // `ex2.approx.ftz.bf16` is how PTX spells it: `.ftz` is not refused here.
            half_mode(ty, FloatMode { ftz: false, ..fm }).map_err(unsupported)?;
            if fm.round != Round::Nearest && !matches!(op, UnOp::Sqrt | UnOp::Rcp) {
                return Err(unsupported("a rounding on this operation".into()));
            }
            Op::Unary { op, ty, fm, d: d.reg(0)?, a: d.src(1, ty)? }
        }
        "setp" => {
            let ty = d.ty(&mods)?;
            let cmp =
                mods.words.iter().find_map(|w| comparison(w)).ok_or_else(|| unsupported("no comparison".into()))?;
            let with = mods.words.iter().find_map(|w| bool_op(w));
            mods.only(&[
                "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu", "gtu", "geu",
                "num", "nan", "and", "or", "xor", "ftz",
            ])
            .map_err(unsupported)?;
            let (dst, d2) = match d.reg_pair(0)? {
                (_, None) if matches!(ty, Ty::F16x2 | Ty::BF16x2) => return Err(d.bad("two halves need p|q")),
                pair => pair,
            };
            half_mode(ty, FloatMode { ftz: mods.has("ftz"), ..FloatMode::default() }).map_err(unsupported)?;
            let with = match with {
                Some(op) => {
                    let (pred, negated) = d.pred(3)?;
                    Some((op, pred, negated))
                }
                None => None,
            };
            Op::Setp { cmp, ty, ftz: mods.has("ftz"), d: dst, d2, a: d.src(1, ty)?, b: d.src(2, ty)?, with }
        }
        "set" => {
            // Of halves only: into halves (1.0 or 0.0 each) or into a 32-bit mask.
            let (to, ty) = mods.two_types().ok_or_else(|| unsupported("needs two types".into()))?;
            let cmp =
                mods.words.iter().find_map(|w| comparison(w)).ok_or_else(|| unsupported("no comparison".into()))?;
            mods.only(&[
                "eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan", "ftz",
            ])
            .map_err(unsupported)?;
            let pairs = |t: Ty| matches!(t, Ty::F16x2 | Ty::BF16x2);
            let mask = matches!(to, Ty::U32 | Ty::S32 | Ty::B32);
            if !ty.half() || !(to.half() && pairs(to) == pairs(ty) || mask) {
                return Err(unsupported("this form (only of halves)".into()));
            }
            let ftz = mods.has("ftz");
            half_mode(ty, FloatMode { ftz, ..FloatMode::default() }).map_err(unsupported)?;
            Op::Set { cmp, ty, to, ftz, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, ty)? }
        }
        "selp" => {
            let ty = d.ty(&mods)?;
            mods.only(&[]).map_err(unsupported)?;
            Op::Selp { ty, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, ty)?, p: d.pred(3)?.0 }
        }
        "cvt" if mods.words.iter().any(|w| matches!(Ty::named(w), Some(Ty::E4M3x2 | Ty::E5M2x2))) => {
            // 8-bit floats: two f32s or an f16 pair into two, rounded to nearest and saturated
            // (as PTX requires), or two into an f16 pair.
            let (to, from) = mods.two_types().ok_or_else(|| unsupported("needs two types".into()))?;
            mods.only(&["rn", "satfinite", "relu"]).map_err(unsupported)?;
            let conv = Conversion { to, from, round_int: None, fm: FloatMode::default(), relu: mods.has("relu") };
            match (to.fp8(), from, mods.has("rn"), mods.has("satfinite")) {
                (true, Ty::F32, true, true) => {
                    Op::CvtPair { conv, d: d.reg(0)?, a: d.src(1, from)?, b: d.src(2, from)? }
                }
                (true, Ty::F16x2, true, true) => Op::Cvt { conv, d: d.reg(0)?, a: d.src(1, from)? },
                (false, f, true, false) if to == Ty::F16x2 && f.fp8() => {
                    Op::Cvt { conv, d: d.reg(0)?, a: d.src(1, from)? }
                }
                _ => return Err(unsupported("this form".into())),
            }
        }
        "cvt" if mods.has("tf32") => {
            mods.only(&["rna", "tf32"]).map_err(unsupported)?;
            if !mods.has("rna") || mods.ty() != Some(Ty::F32) {
                return Err(unsupported("this form".into()));
            }
            let conv =
                Conversion { to: Ty::TF32, from: Ty::F32, round_int: None, fm: FloatMode::default(), relu: false };
            Op::Cvt { conv, d: d.reg(0)?, a: d.src(1, Ty::F32)? }
        }
        "cvt" => {
            let (to, from) = mods.two_types().ok_or_else(|| unsupported("needs two types".into()))?;
            mods.only(&["rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "sat", "ftz", "relu"])
                .map_err(unsupported)?;
            let round_int = ["rni", "rzi", "rmi", "rpi"].iter().position(|r| mods.has(r)).map(rounding);
            let round_float = ["rn", "rz", "rm", "rp"].iter().position(|r| mods.has(r)).map(rounding);
            // Two f32s into two halves (`cvt.rn.f16x2.f32 d, a, b`) narrow each.
            let pairs = matches!(to, Ty::F16x2 | Ty::BF16x2);
            let narrower = if pairs { 16 } else { to.bits() };
            // Float to a narrower float, or an integer to a float, rounds (to nearest unless
            // written); a float to an integer rounds as `.rni/.rzi/.rmi/.rpi` say.
            if round_float.is_some() && (!to.float() || (from.float() && narrower >= from.bits())) {
                return Err(unsupported("a float rounding on a conversion that does not round".into()));
            }
            if to.float() && from.float() && to.bits() > from.bits() && (round_float.is_some() || round_int.is_some()) {
                return Err(unsupported("a rounding on a widening conversion".into()));
            }
            let round_int = match (to.float(), from.float(), round_int) {
                (false, true, None) => {
                    return Err(unsupported("a float to an integer without .rni/.rzi/.rmi/.rpi".into()));
                }
                (_, _, r) => r,
            };
            let fm =
                FloatMode { round: round_float.unwrap_or(Round::Nearest), ftz: mods.has("ftz"), sat: mods.has("sat") };
            let relu = mods.has("relu");
            if relu && !to.half() {
                return Err(unsupported("the modifier .relu here".into()));
            }
            // ptxas refuses `.sat` where every value of the source fits the destination.
            let int = |t: Ty| matches!(t, Ty::U8 | Ty::U16 | Ty::U32 | Ty::U64 | Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64);
            let fits = to.bits() > from.bits() && (to.signed() || !from.signed())
                || to.bits() == from.bits() && to.signed() == from.signed();
            if fm.sat && int(to) && int(from) && fits {
                // ptxas refuses it so: "Illegal modifier '.sat' for instruction 'cvt'".
                return Err(LoadError::Syntax { line, what: "Illegal modifier '.sat' for instruction 'cvt'".into() });
            }
            let conv = Conversion { to, from, round_int, fm, relu };
            match (to, from) {
                (Ty::F16x2 | Ty::BF16x2, Ty::F32) if ops.len() == 3 && round_int.is_none() => {
                    Op::CvtPair { conv, d: d.reg(0)?, a: d.src(1, from)?, b: d.src(2, from)? }
                }
                (Ty::F16x2 | Ty::BF16x2, _) | (_, Ty::F16x2 | Ty::BF16x2) => {
                    return Err(unsupported("this form".into()));
                }
                _ => Op::Cvt { conv, d: d.reg(0)?, a: d.src(1, from)? },
            }
        }
        "cvta" => {
            mods.only(&["to", "global", "shared", "shared::cta", "local", "const", "param"]).map_err(unsupported)?;
            let ty = d.ty(&mods)?;
            if ty.bits() != 64 {
                return Err(unsupported("32-bit addresses".into()));
            }
            Op::Cvta { to: mods.has("to"), space: mods.space(), d: d.reg(0)?, a: d.src(1, ty)? }
        }
        "atom" | "red" => {
            let ty = d.ty(&mods)?;
            let op = mods.words.iter().find_map(|w| atom_op(w)).ok_or_else(|| unsupported("no operation".into()))?;
            mods.only(&[
                "global",
                "shared",
                "shared::cta",
                "shared::cluster",
                "add",
                "min",
                "max",
                "inc",
                "dec",
                "and",
                "or",
                "xor",
                "exch",
                "cas",
                "noftz",
            ])
            .map_err(unsupported)?;
            let space = match mods.space() {
                s @ (Space::Global | Space::Shared | Space::Generic) => s,
                _ => return Err(unsupported("this state space".into())),
            };
            let typed = match ty {
                t if t.half() => op == AtomOp::Add,
                t if t.float() => matches!(op, AtomOp::Add | AtomOp::Exch),
                // `atom.cas.b16` (sm_70 and later); every other operation on 32 or 64 bits.
                t => t.bits() >= 32 || t.bits() == 16 && op == AtomOp::Cas,
            };
            if !typed {
                return Err(unsupported("this type".into()));
            }
            let (dst, first) = if name == "atom" { (Some(d.reg(0)?), 1) } else { (None, 0) };
            let at = d.addr(first)?;
            let b = d.src(first + 1, ty)?;
            let c = if op == AtomOp::Cas { Some(d.src(first + 2, ty)?) } else { None };
            Op::Atom { space, op, ty, d: dst, at, b, c }
        }
        "bra" => {
            mods.only(&[]).map_err(unsupported)?;
            match ops.first() {
                Some(Operand::Name(label)) => Op::Bra {
                    target: *scope
                        .labels
                        .get(label)
                        .ok_or_else(|| LoadError::Syntax { line, what: format!("unknown label {label}") })?,
                },
                _ => return Err(unsupported("an indirect branch".into())),
            }
        }
        // A jump table: `brx.idx index, list`, `list` a `.branchtargets` of the function.
        "brx" => {
            mods.only(&["idx"]).map_err(unsupported)?;
            if !mods.has("idx") {
                return Err(unsupported("an indirect branch other than .idx".into()));
            }
            let names = match ops.get(1) {
                Some(Operand::Name(list)) if ops.len() == 2 => scope
                    .branch_targets
                    .get(list)
                    .ok_or_else(|| LoadError::Syntax { line, what: format!("unknown .branchtargets {list}") })?,
                _ => return Err(unsupported("a target list other than a .branchtargets label".into())),
            };
            let label = |n: &String| {
                scope
                    .labels
                    .get(n)
                    .copied()
                    .ok_or_else(|| LoadError::Syntax { line, what: format!("unknown label {n}") })
            };
            Op::Brx { index: d.src(0, Ty::U32)?, targets: names.iter().map(label).collect::<Result<_, _>>()? }
        }
        "bar" if mods.has("warp") => {
            mods.only(&["warp", "sync"]).map_err(unsupported)?;
            Op::Warp { op: WarpOp::Sync, mask: Some(d.src(0, Ty::U32)?) }
        }
        // A cluster's barrier: `cluster` is among the ignored scopes, so it is told from the name.
        "barrier" if opcode.split('.').nth(1) == Some("cluster") => {
            mods.only(&["arrive", "wait"]).map_err(unsupported)?;
            match (mods.has("arrive"), mods.has("wait"), ops.len()) {
                (true, false, 0) => Op::ClusterBarrier { wait: false },
                (false, true, 0) => Op::ClusterBarrier { wait: true },
                _ => return Err(unsupported("this form".into())),
            }
        }
        "mapa" => {
            mods.only(&["shared::cluster"]).map_err(unsupported)?;
            let ty = d.ty(&mods)?;
            let shared = mods.has("shared::cluster");
            if ty.bits() != if shared { 32 } else { 64 } {
                return Err(unsupported("this address width".into()));
            }
            Op::Mapa { shared, d: d.reg(0)?, a: d.src(1, ty)?, rank: d.src(2, Ty::U32)? }
        }
        "bar" | "barrier" => {
            mods.only(&["sync", "arrive", "red", "cta", "popc", "and", "or"]).map_err(unsupported)?;
            // bar.red d, id[, count], {!}p: the destination comes first, the predicate last.
            let red = match (mods.has("red"), ["popc", "and", "or"].iter().position(|m| mods.has(m))) {
                (false, None) => None,
                (true, Some(i)) => {
                    let (p, negated) = d.pred(ops.len().saturating_sub(1))?;
                    Some(BarRed { op: [BarRedOp::Popc, BarRedOp::And, BarRedOp::Or][i], d: d.reg(0)?, p, negated })
                }
                _ => return Err(unsupported("this form".into())),
            };
            let first = red.is_some() as usize;
            let counted = ops.len() - 2 * first; // id and count, without d and p
            let id = if counted == 0 { Src::Imm(0) } else { d.src(first, Ty::U32)? };
            let threads = if counted > 1 { Some(d.src(first + 1, Ty::U32)?) } else { None };
            Op::Bar { id, threads, wait: !mods.has("arrive"), red }
        }
        "shfl" => {
            if !mods.has("sync") {
                return Err(unsupported("shfl without .sync (not on sm_70 and later)".into()));
            }
            mods.only(&["sync", "up", "down", "bfly", "idx"]).map_err(unsupported)?;
            let modes = [ShflMode::Up, ShflMode::Down, ShflMode::Bfly, ShflMode::Idx];
            let mode = ["up", "down", "bfly", "idx"].iter().position(|m| mods.has(m)).map(|i| modes[i]);
            let mode = mode.ok_or_else(|| unsupported("no mode".into()))?;
            if d.ty(&mods)?.bits() != 32 {
                return Err(unsupported("this type".into()));
            }
            let (dst, p) = d.reg_pair(0)?;
            let (a, b, c) = (d.src(1, Ty::B32)?, d.src(2, Ty::B32)?, d.src(3, Ty::B32)?);
            Op::Warp { op: WarpOp::Shfl { mode, d: dst, p, a, b, c }, mask: Some(d.src(4, Ty::B32)?) }
        }
        "vote" => {
            if !mods.has("sync") {
                return Err(unsupported("vote without .sync (not on sm_70 and later)".into()));
            }
            mods.only(&["sync", "all", "any", "ballot"]).map_err(unsupported)?;
            // `.uni` is dropped with the ignored modifiers (`bra.uni`): here it is the mode.
            let uni = opcode.split('.').any(|m| m == "uni");
            let modes = [VoteMode::All, VoteMode::Any, VoteMode::Ballot];
            let mode = ["all", "any", "ballot"].iter().position(|m| mods.has(m)).map(|i| modes[i]);
            let mode = if uni { Some(VoteMode::Uni) } else { mode };
            let mode = mode.ok_or_else(|| unsupported("no mode".into()))?;
            let (a, negated) = d.pred(1)?;
            Op::Warp { op: WarpOp::Vote { mode, d: d.reg(0)?, a, negated }, mask: Some(d.src(2, Ty::B32)?) }
        }
        "match" => {
            mods.only(&["sync", "any", "all"]).map_err(unsupported)?;
            let ty = d.ty(&mods)?;
            if !mods.has("sync") || !matches!(ty.bits(), 32 | 64) {
                return Err(unsupported("this form".into()));
            }
            let (dst, p) = d.reg_pair(0)?;
            let all = mods.has("all");
            if !all && p.is_some() {
                return Err(unsupported("a predicate on match.any".into()));
            }
            let op = WarpOp::Match { all, wide: ty.bits() == 64, d: dst, p, a: d.src(1, ty)? };
            Op::Warp { op, mask: Some(d.src(2, Ty::B32)?) }
        }
        "redux" => {
            mods.only(&["sync", "add", "min", "max", "and", "or", "xor"]).map_err(unsupported)?;
            let ty = d.ty(&mods)?;
            let ops_ = [ReduxOp::Add, ReduxOp::Min, ReduxOp::Max, ReduxOp::And, ReduxOp::Or, ReduxOp::Xor];
            let op = ["add", "min", "max", "and", "or", "xor"].iter().position(|m| mods.has(m)).map(|i| ops_[i]);
            let op = op.ok_or_else(|| unsupported("no operation".into()))?;
            if !mods.has("sync") || ty.bits() != 32 || ty.float() {
                return Err(unsupported("this form".into()));
            }
            let op = WarpOp::Redux { op, signed: ty.signed(), d: d.reg(0)?, a: d.src(1, ty)? };
            Op::Warp { op, mask: Some(d.src(2, Ty::B32)?) }
        }
        "wmma" => wmma(&mods, &d, &unsupported)?,
        "mma" => mma_sync(&mods, &d, &unsupported)?,
        "ldmatrix" | "stmatrix" => matrix_rows(name == "stmatrix", &mods, &d, &unsupported)?,
        "elect" => {
            if !mods.has("sync") {
                return Err(unsupported("elect without .sync".into()));
            }
            mods.only(&["sync"]).map_err(unsupported)?;
            let (dst, p) = d.sink_pair(0)?;
            Op::Warp { op: WarpOp::Elect { d: dst, p }, mask: Some(d.src(1, Ty::B32)?) }
        }
        "activemask" => {
            mods.only(&[]).map_err(unsupported)?;
            Op::Warp { op: WarpOp::ActiveMask { d: d.reg(0)? }, mask: None }
        }
        "membar" | "fence" => Op::Fence,
        "cp" if mods.has("async") => match mods.words.get(1).map(String::as_str) {
            Some("commit_group" | "wait_group" | "wait_all") => Op::Fence,
            // The thread's copies arrive at a barrier once done, and here they are done when
            // issued: at once. Without `.noinc` the barrier's pending count first grows by the
            // arrival it then gets, which changes nothing.
            Some("mbarrier") if mods.words.get(2).is_some_and(|w| w == "arrive") => {
                mods.only(&["async", "mbarrier", "arrive", "noinc", "shared", "shared::cta"]).map_err(unsupported)?;
                let op = MBarrierOp::Arrive { d: None, count: Src::Imm(1), drop: false, tx: None };
                match mods.has("noinc") {
                    true => Op::MBarrier { space: mods.space(), at: d.addr(0)?, op },
                    false => Op::Fence,
                }
            }
            Some("bulk") => bulk(opcode, &mods, ops, &d, &unsupported)?,
            Some("shared" | "shared::cta") if mods.words.get(2).is_some_and(|w| w == "global") => {
                mods.only(&["async", "shared", "shared::cta", "global"]).map_err(unsupported)?;
                let size = match ops.get(2) {
                    Some(Operand::Int(n @ (4 | 8 | 16))) => *n as u32,
                    _ => return Err(unsupported("a copy size other than 4, 8 or 16".into())),
                };
                // With `.L2::cache_hint` the last operand is a cache policy, which changes nothing.
                let hinted = opcode.split('.').any(|m| m == "L2::cache_hint");
                let operands = ops.len() - hinted as usize;
                // The fourth operand: a source size (a number), or `ignore-src` (a predicate).
                let (keep, ignore) = match ops.get(3) {
                    _ if operands <= 3 => (None, None),
                    Some(Operand::Not(_)) => (None, Some(d.pred(3)?)),
                    Some(Operand::Reg(r)) if scope.registers.is_predicate(*r) => (None, Some(d.pred(3)?)),
                    Some(_) if operands == 4 => (Some(d.src(3, Ty::U32)?), None),
                    _ => return Err(unsupported("too many operands".into())),
                };
                Op::CopyAsync { dst: d.addr(0)?, src: d.addr(1)?, size, keep, ignore }
            }
            _ => return Err(unsupported("this form".into())),
        },
        "call" => {
            mods.only(&[]).map_err(unsupported)?;
            let (rets, rest) = match ops.first() {
                Some(Operand::List(r)) => (r.as_slice(), &ops[1..]),
                _ => (&[][..], ops),
            };
            let frame = |o: &Operand| match o {
                Operand::Place(Place::Local(at)) => Ok((*at, 0, 0)),
                _ => Err(unsupported("an argument that is not a .param variable".into())),
            };
            let frames = |list: &[Operand]| list.iter().map(frame).collect::<Result<Vec<_>, _>>();
            // Through an address: `call (r), %rd, (a, b), prototype;` (the prototype's types are
            // the arguments' own).
            if let Some(Operand::Reg(at)) = rest.first() {
                let args = match rest.get(1..) {
                    Some([Operand::List(a), Operand::Name(_)]) => a.as_slice(),
                    Some([Operand::Name(_)]) => &[][..],
                    _ => return Err(d.bad("an indirect call without its prototype")),
                };
                let (args, rets) = (frames(args)?, frames(rets)?);
                return Ok(Op::CallIndirect(Box::new(IndirectCall {
                    at: Src::Reg(*at),
                    args,
                    rets,
                    callees: Vec::new(),
                })));
            }
            let callee = match rest.first() {
                Some(Operand::Name(n)) => *scope
                    .functions
                    .get(n)
                    .ok_or_else(|| LoadError::Syntax { line, what: format!("unknown function {n}") })?,
                _ => return Err(unsupported("a call of this form".into())),
            };
            let args = match rest.get(1) {
                Some(Operand::List(a)) if rest.len() == 2 => a.as_slice(),
                None => &[][..],
                _ => return Err(unsupported("a call of this form".into())),
            };
            Op::Call(Box::new(Call {
                callee,
                target: 0,
                registers: 0,
                local_bytes: 0,
                args: args.iter().map(frame).collect::<Result<_, _>>()?,
                rets: rets.iter().map(frame).collect::<Result<_, _>>()?,
            }))
        }
        "ret" => Op::Ret,
        "exit" => Op::Exit,
        "trap" => Op::Trap,
        // Hints about caches and their policies, which nothing here has: a policy is any value.
        "prefetch" | "prefetchu" | "discard" | "applypriority" => Op::Fence,
        "createpolicy" => Op::Mov { ty: Ty::B64, d: d.reg(0)?, a: Src::Imm(0) },
        "isspacep" => {
            mods.only(&["global", "shared", "shared::cta", "local"]).map_err(unsupported)?;
            let space = match mods.words.first().map(String::as_str) {
                Some("global") => Space::Global,
                Some("shared" | "shared::cta") => Space::Shared,
                Some("local") => Space::Local,
                _ => return Err(unsupported("this space".into())),
            };
            Op::IsSpace { space, d: d.reg(0)?, a: d.src(1, Ty::U64)? }
        }
        // A thread's pause: nothing here waits on time. A grid's wait for the grid before it
        // (programmatic dependent launch): launches here run one after another, so that grid is
        // done, and a hint that the next may start changes nothing. A performance-monitor event
        // (`__prof_trigger`): nothing here counts them.
        "nanosleep" | "griddepcontrol" | "pmevent" => Op::Fence,
        "mbarrier" => mbarrier(&mods, ops, &d, &unsupported)?,
        _ => return Err(LoadError::Unsupported { line, what: opcode.to_string() }),
    };
    Ok(decoded)
}

/// `mbarrier` on a barrier of the block's shared memory: `init`, `arrive`, `arrive_drop`
/// (`.expect_tx` too), `expect_tx`, `complete_tx`, `test_wait` and `try_wait` (with
/// `.parity`), `inval`. Another block's barriers (`.shared::cluster`) and `pending_count` are
/// not simulated.
fn mbarrier(
    mods: &Mods,
    ops: &[Operand],
    d: &Decoder<'_>,
    unsupported: &dyn Fn(String) -> LoadError,
) -> Result<Op, LoadError> {
    let known = [
        "init",
        "arrive",
        "arrive_drop",
        "expect_tx",
        "complete_tx",
        "test_wait",
        "try_wait",
        "parity",
        "inval",
        "shared",
        "shared::cta",
    ];
    mods.only(&known).map_err(unsupported)?;
    if mods.ty() != Some(Ty::B64) {
        return Err(unsupported("a type other than .b64".into()));
    }
    let space = mods.space();
    let (at, op) = match mods.words.first().map(String::as_str) {
        Some("init") if ops.len() == 2 => (d.addr(0)?, MBarrierOp::Init { count: d.src(1, Ty::U32)? }),
        Some(kind @ ("arrive" | "arrive_drop")) if matches!(ops.len(), 2 | 3) => {
            let state = match ops.first() {
                Some(Operand::Sink) => None,
                _ => Some(d.reg(0)?),
            };
            // The third operand: a count of arrivals, or with `.expect_tx` the bytes expected.
            let third = if ops.len() == 3 { Some(d.src(2, Ty::U32)?) } else { None };
            let (count, tx) = match mods.has("expect_tx") {
                true => (Src::Imm(1), Some(third.ok_or_else(|| unsupported("no transaction count".into()))?)),
                false => (third.unwrap_or(Src::Imm(1)), None),
            };
            (d.addr(1)?, MBarrierOp::Arrive { d: state, count, drop: kind == "arrive_drop", tx })
        }
        Some(kind @ ("expect_tx" | "complete_tx")) if ops.len() == 2 => {
            (d.addr(0)?, MBarrierOp::Transact { bytes: d.src(1, Ty::U32)?, complete: kind == "complete_tx" })
        }
        // `try_wait`'s fourth operand is a hint of how long to suspend, which nothing here does.
        Some("test_wait" | "try_wait") if matches!(ops.len(), 3 | 4) => {
            let parity = mods.has("parity");
            let token = d.src(2, if parity { Ty::U32 } else { Ty::B64 })?;
            (d.addr(1)?, MBarrierOp::Wait { d: d.reg(0)?, token, parity })
        }
        Some("inval") if ops.len() == 1 => (d.addr(0)?, MBarrierOp::Inval),
        _ => return Err(unsupported("this form".into())),
    };
    Ok(Op::MBarrier { space, at, op })
}

/// `cp.async.bulk` without tensor maps: from global memory to the block's shared memory,
/// completing bytes of a barrier's transaction count, or from shared memory to global (a bulk
/// group, whose commits and waits are fences here, the copies done when issued). A
/// `.shared::cluster` address is the block's own, or another block's of its cluster (`mapa`).
fn bulk(
    opcode: &str,
    mods: &Mods,
    ops: &[Operand],
    d: &Decoder<'_>,
    unsupported: &dyn Fn(String) -> LoadError,
) -> Result<Op, LoadError> {
    // With `.L2::cache_hint` the last operand is a cache policy, which changes nothing.
    let operands = ops.len() - opcode.split('.').any(|m| m == "L2::cache_hint") as usize;
    let words: Vec<&str> = mods.words.iter().map(String::as_str).collect();
    Ok(match words[2..] {
        ["commit_group"] | ["wait_group"] | ["wait_group", "read"] | ["prefetch", "L2", "global"] => Op::Fence,
        ["shared::cluster" | "shared::cta", "global", "mbarrier::complete_tx::bytes"] if operands == 4 => {
            Op::CopyBulk { dst: d.addr(0)?, src: d.addr(1)?, size: d.src(2, Ty::U32)?, barrier: Some(d.addr(3)?) }
        }
        ["global", "shared::cta", "bulk_group"] if operands == 3 => {
            Op::CopyBulk { dst: d.addr(0)?, src: d.addr(1)?, size: d.src(2, Ty::U32)?, barrier: None }
        }
        _ => return Err(unsupported("this form".into())),
    })
}

/// `wmma.load.{a,b,c}`, `wmma.store.d` and `wmma.mma` of the shapes m16n16k16, m32n8k16 and
/// m8n32k16, with f16 or bf16 inputs and f16 or f32 accumulators.
fn wmma(mods: &Mods, d: &Decoder<'_>, unsupported: &dyn Fn(String) -> LoadError) -> Result<Op, LoadError> {
    const SHAPES: [&str; 3] = ["m16n16k16", "m32n8k16", "m8n32k16"];
    const KNOWN: [&str; 13] =
        ["load", "store", "mma", "a", "b", "c", "d", "sync", "row", "col", "global", "shared", "shared::cta"];
    let shape_word = mods.words.iter().find(|w| w.starts_with('m') && w.contains('n') && w.contains('k'));
    let shape = match shape_word.map(String::as_str) {
        Some("m16n16k16") => [16, 16, 16],
        Some("m32n8k16") => [32, 8, 16],
        Some("m8n32k16") => [8, 32, 16],
        Some(other) => return Err(unsupported(format!("the shape .{other}"))),
        None => return Err(unsupported("no shape".into())),
    };
    let mut known = KNOWN.to_vec();
    known.extend(SHAPES);
    mods.only(&known).map_err(unsupported)?;
    if !mods.has("sync") {
        return Err(unsupported("wmma without .sync".into()));
    }
    let types: Vec<Ty> = mods.words.iter().filter_map(|w| Ty::named(w)).collect();
    let regs = |i: usize, n: usize| d.all_regs(i, n);
    if mods.has("mma") {
        // The layouts of A and B come first; this executor's fragments do not depend on them.
        let types = match types[..] {
            [dt, ct] => [dt, Ty::F16, Ty::F16, ct],
            [dt, a, b, ct] => [dt, a, b, ct],
            _ => return Err(unsupported("these types".into())),
        };
        return product((false, false), shape, types, d, unsupported);
    }
    let store = mods.has("store");
    let matrix = match () {
        _ if store && mods.has("d") => Matrix::C,
        _ if store => return Err(unsupported("a store of a fragment other than .d".into())),
        _ if mods.has("a") => Matrix::A,
        _ if mods.has("b") => Matrix::B,
        _ if mods.has("c") => Matrix::C,
        _ => return Err(unsupported("no fragment".into())),
    };
    let ty = match types[..] {
        [ty @ (Ty::F16 | Ty::BF16)] if matrix != Matrix::C => ty,
        [ty @ (Ty::F16 | Ty::F32)] if matrix == Matrix::C => ty,
        _ => return Err(unsupported("this type".into())),
    };
    let frag = Fragment { matrix, shape, ty, sync: false };
    let col = match (mods.has("row"), mods.has("col")) {
        (true, false) => false,
        (false, true) => true,
        _ => return Err(unsupported("no layout".into())),
    };
    let (rows, cols) = frag.dims();
    let (at, regs_at) = if store { (d.addr(0)?, 1) } else { (d.addr(1)?, 0) };
    // Without a stride the matrix is packed: its leading dimension.
    let stride = match d.ops.get(2) {
        Some(_) => d.src(2, Ty::U32)?,
        None => Src::Imm(if col { rows } else { cols } as u64),
    };
    let regs = regs(regs_at, frag.regs())?;
    Ok(Op::Wmma { store, frag, col, space: mods.space(), at, stride, regs })
}

/// `D = A B + C` of `[d, a, b, c]` types, `d, a, b, c` as the operands: f16 or bf16 inputs
/// (bf16 only into f32) into f16 or f32 accumulators, or (`mma.sync` only) tf32 into f32 and
/// 8-bit integers into s32, clamped with `saturate`.
fn product(
    (sync, saturate): (bool, bool),
    shape: [u32; 3],
    [dt, input, input_b, ct]: [Ty; 4],
    d: &Decoder<'_>,
    unsupported: &dyn Fn(String) -> LoadError,
) -> Result<Op, LoadError> {
    let accumulators = matches!((dt, ct), (Ty::F16 | Ty::F32, Ty::F16 | Ty::F32));
    let valid = match input {
        Ty::F16 => accumulators && input_b == input && !saturate,
        Ty::BF16 => (dt, ct) == (Ty::F32, Ty::F32) && input_b == input && !saturate,
        Ty::S8 | Ty::U8 => sync && (dt, ct) == (Ty::S32, Ty::S32) && matches!(input_b, Ty::S8 | Ty::U8),
        Ty::TF32 => sync && (dt, ct) == (Ty::F32, Ty::F32) && input_b == input && !saturate,
        _ => false,
    };
    if !valid {
        return Err(unsupported("these types".into()));
    }
    let mut mma = Mma {
        sync,
        saturate,
        shape,
        input,
        input_b,
        c: ct,
        d: dt,
        a_regs: vec![],
        b_regs: vec![],
        c_regs: vec![],
        d_regs: vec![],
    };
    let regs = |i: usize, n: usize| d.all_regs(i, n);
    mma.d_regs = regs(0, Fragment { ty: dt, ..mma.fragment(Matrix::C) }.regs())?;
    mma.a_regs = regs(1, mma.fragment(Matrix::A).regs())?;
    mma.b_regs = regs(2, mma.fragment(Matrix::B).regs())?;
    mma.c_regs = regs(3, mma.fragment(Matrix::C).regs())?;
    Ok(Op::Warp { op: WarpOp::Mma(Box::new(mma)), mask: Some(Src::Imm(u32::MAX as u64)) })
}

/// `mma.sync.aligned.row.col`: m16n8k16 and m16n8k8 of f16 or bf16 into f16 or f32, m16n8k8
/// and m16n8k4 of tf32 into f32, and m16n8k16 and m16n8k32 of 8-bit integers into s32
/// (`.satfinite` too).
fn mma_sync(mods: &Mods, d: &Decoder<'_>, unsupported: &dyn Fn(String) -> LoadError) -> Result<Op, LoadError> {
    mods.only(&["sync", "row", "col", "m16n8k16", "m16n8k8", "m16n8k4", "m16n8k32", "satfinite", "tf32"])
        .map_err(unsupported)?;
    let named = |w: &String| if w == "tf32" { Some(Ty::TF32) } else { Ty::named(w) };
    let types: Vec<Ty> = mods.words.iter().filter_map(named).collect();
    let (int, tf32) = (types.get(1).is_some_and(|t| matches!(t, Ty::S8 | Ty::U8)), types.get(1) == Some(&Ty::TF32));
    let shape = match () {
        _ if mods.has("m16n8k16") && !tf32 => [16, 8, 16],
        _ if mods.has("m16n8k8") && !int => [16, 8, 8],
        _ if mods.has("m16n8k4") && tf32 => [16, 8, 4],
        _ if mods.has("m16n8k32") && int => [16, 8, 32],
        _ => return Err(unsupported("this shape for these types".into())),
    };
    if !(mods.has("sync") && mods.has("row") && mods.has("col")) {
        return Err(unsupported("this form".into()));
    }
    match types[..] {
        [dt, a, b, ct] => product((true, mods.has("satfinite")), shape, [dt, a, b, ct], d, unsupported),
        _ => Err(unsupported("these types".into())),
    }
}

/// `ldmatrix.sync.aligned.m8n8.x1/.x2/.x4[.trans][.shared].b16`.
/// `ldmatrix` (`store`: `stmatrix`, whose address comes first).
fn matrix_rows(
    store: bool,
    mods: &Mods,
    d: &Decoder<'_>,
    unsupported: &dyn Fn(String) -> LoadError,
) -> Result<Op, LoadError> {
    mods.only(&["sync", "m8n8", "x1", "x2", "x4", "trans", "shared", "shared::cta"]).map_err(unsupported)?;
    let count = match () {
        _ if mods.has("x1") => 1,
        _ if mods.has("x2") => 2,
        _ if mods.has("x4") => 4,
        _ => return Err(unsupported("no count".into())),
    };
    if !(mods.has("sync") && mods.has("m8n8") && mods.ty() == Some(Ty::B16)) {
        return Err(unsupported("this form".into()));
    }
    let (at, regs) = if store { (0, 1) } else { (1, 0) };
    let op = MatrixRows {
        store,
        count,
        trans: mods.has("trans"),
        space: mods.space(),
        at: d.addr(at)?,
        regs: d.all_regs(regs, count as usize)?,
    };
    Ok(Op::Warp { op: WarpOp::Rows(Box::new(op)), mask: Some(Src::Imm(u32::MAX as u64)) })
}

fn rounding(i: usize) -> Round {
    [Round::Nearest, Round::Zero, Round::Down, Round::Up][i]
}

/// A float instruction's rounding (to nearest unless written), `.ftz` and `.sat`.
fn float_mode(mods: &Mods, ty: Ty) -> FloatMode {
    let round = ["rn", "rz", "rm", "rp"].iter().position(|r| mods.has(r)).map_or(Round::Nearest, rounding);
    FloatMode { round, ftz: mods.has("ftz"), sat: ty.float() && mods.has("sat") }
}

/// The carry chain's instructions: `add.cc`, `sub.cc`, `mad.lo/.hi.cc` write the carry flag;
/// `addc`, `subc`, `madc.lo/.hi` read it, and write it with `.cc`. On 32- and 64-bit integers.
fn carry(name: &str, mods: &Mods, d: &Decoder<'_>, unsupported: &dyn Fn(String) -> LoadError) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    mods.only(&["cc", "lo", "hi"]).map_err(unsupported)?;
    if ty.float() || ty.bits() < 32 {
        return Err(unsupported("this type".into()));
    }
    let kind = match (name, mods.has("lo"), mods.has("hi")) {
        ("add" | "addc", false, false) => CarryKind::Add,
        ("sub" | "subc", false, false) => CarryKind::Sub,
        ("mad" | "madc", true, false) => CarryKind::MadLo,
        ("mad" | "madc", false, true) => CarryKind::MadHi,
        _ => return Err(unsupported("this form".into())),
    };
    let op = CarryOp { kind, carry_in: name.ends_with('c'), carry_out: mods.has("cc") };
    let c = match kind {
        CarryKind::MadLo | CarryKind::MadHi => Some(d.src(3, ty)?),
        _ => None,
    };
    Ok(Op::Carry { op, ty, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, ty)?, c })
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

fn widened(ty: Ty) -> Option<Ty> {
    Some(match ty {
        Ty::U16 => Ty::U32,
        Ty::S16 => Ty::S32,
        Ty::U32 => Ty::U64,
        Ty::S32 => Ty::S64,
        _ => return None,
    })
}

fn comparison(w: &str) -> Option<Cmp> {
    Some(match w {
        "eq" => Cmp::Eq,
        "ne" => Cmp::Ne,
        "lt" | "lo" => Cmp::Lt,
        "le" | "ls" => Cmp::Le,
        "gt" | "hi" => Cmp::Gt,
        "ge" | "hs" => Cmp::Ge,
        "equ" => Cmp::Equ,
        "neu" => Cmp::Neu,
        "ltu" => Cmp::Ltu,
        "leu" => Cmp::Leu,
        "gtu" => Cmp::Gtu,
        "geu" => Cmp::Geu,
        "num" => Cmp::Num,
        "nan" => Cmp::Nan,
        _ => return None,
    })
}

fn bool_op(w: &str) -> Option<BoolOp> {
    Some(match w {
        "and" => BoolOp::And,
        "or" => BoolOp::Or,
        "xor" => BoolOp::Xor,
        _ => return None,
    })
}

fn atom_op(w: &str) -> Option<AtomOp> {
    Some(match w {
        "add" => AtomOp::Add,
        "min" => AtomOp::Min,
        "max" => AtomOp::Max,
        "inc" => AtomOp::Inc,
        "dec" => AtomOp::Dec,
        "and" => AtomOp::And,
        "or" => AtomOp::Or,
        "xor" => AtomOp::Xor,
        "exch" => AtomOp::Exch,
        "cas" => AtomOp::Cas,
        _ => return None,
    })
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
