//! The arithmetic that integers, floats and halves share, one function for each form:
//! `mov`, the operations of two operands (`add` ... `copysign`), of three (`mad`, `fma`, `mad24`,
//! `sad`) and of one (`neg` ... `tanh`, `bfind`). A float's rounding, `.ftz` and `.sat` come
//! from [`float_mode`], what halves allow from [`half_mode`].

use super::{Decoder, Mod, Mods, float_mode, half_mode};
use crate::LoadError;
use crate::ir::{BinOp, FloatMode, Op, Round, Src, TerOp, Ty, UnOp};
use crate::operand::Operand;

/// `mov`: a register's value, or a vector's parts packed into one register or unpacked from it.
pub(super) fn mov(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[]).map_err(|w| d.unsupported(w))?;
    let ty = d.ty(mods)?;
    Ok(match (d.ops.first(), d.ops.get(1)) {
        (Some(Operand::Vector(parts)), _) => {
            let part = d.part(ty, parts.len())?;
            Op::Unpack { ty: part, d: d.regs(0, parts.len())?, a: d.src(1, ty)? }
        }
        (_, Some(Operand::Vector(parts))) => {
            let part = d.part(ty, parts.len())?;
            Op::Pack { ty: part, d: d.reg(0)?, parts: d.srcs(1, parts.len(), part)? }
        }
        _ => Op::Mov { ty, d: d.reg(0)?, a: d.src(1, ty)? },
    })
}

/// The two-operand arithmetic of integers and floats alike: `add`, `sub`, `mul` (`.lo`, `.hi`,
/// `.wide`), `div`, `rem`, `min`/`max` (`.NaN`), `and`, `or`, `xor`, `shl`, `shr`, `copysign`,
/// `mul24`; `.sat` on s32 and on floats, a float's rounding and `.ftz`.
pub(super) fn binary(name: &str, mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    let fm = float_mode(mods, ty);
    let op = match (name, mods.has(Mod::Sat), mods.has(Mod::Lo), mods.has(Mod::Hi), mods.has(Mod::Wide)) {
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
        _ => return Err(d.unsupported("this form")),
    };
    mods.only(&[
        Mod::Sat,
        Mod::Lo,
        Mod::Hi,
        Mod::Wide,
        Mod::Rn,
        Mod::Rz,
        Mod::Rm,
        Mod::Rp,
        Mod::Ftz,
        Mod::Approx,
        Mod::Full,
        Mod::NaN,
    ])
    .map_err(|w| d.unsupported(w))?;
    let float_op =
        matches!(op, BinOp::Add | BinOp::Sub | BinOp::MulLo | BinOp::Div | BinOp::Min | BinOp::Max | BinOp::CopySign);
    if ty.float() && !float_op || ty.half() && matches!(op, BinOp::Div | BinOp::CopySign) {
        return Err(d.unsupported("this operation on floats"));
    }
    if ty == Ty::F64 && fm.sat {
        return Err(d.unsupported("this modifier"));
    }
    half_mode(ty, fm).map_err(|w| d.unsupported(w))?;
    let op = match (op, mods.has(Mod::NaN)) {
        (op, false) => op,
        (BinOp::Min, true) if ty != Ty::F64 && ty.float() => BinOp::MinNaN,
        (BinOp::Max, true) if ty != Ty::F64 && ty.float() => BinOp::MaxNaN,
        _ => return Err(d.unsupported("the modifier .NaN here")),
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
    Ok(Op::Binary { op, ty, fm, d: d.reg(0)?, a, b })
}

/// `mad` (`.lo`, `.hi`, `.wide`), `fma` (`.relu` on halves), `mad24` and `sad`.
pub(super) fn ternary(name: &str, mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    let fm = float_mode(mods, ty);
    mods.only(&[Mod::Lo, Mod::Hi, Mod::Wide, Mod::Rn, Mod::Rz, Mod::Rm, Mod::Rp, Mod::Ftz, Mod::Sat, Mod::Relu])
        .map_err(|w| d.unsupported(w))?;
    let op = match (name, ty.float(), mods.has(Mod::Lo), mods.has(Mod::Hi), mods.has(Mod::Wide)) {
        // A half's fma names its rounding, which is to nearest.
        ("fma", true, ..) if ty.half() && mods.has(Mod::Rn) && mods.has(Mod::Relu) && !fm.sat => TerOp::FmaRelu,
        ("fma", true, ..) if ty.half() && mods.has(Mod::Rn) && !mods.has(Mod::Relu) => TerOp::Fma,
        (_, true, ..) if ty.half() => return Err(d.unsupported("this form")),
        (_, true, ..) if ty.bits() == 32 || !fm.sat => TerOp::Fma,
        ("sad", false, ..) => TerOp::Sad,
        ("mad24", false, true, _, _) if ty.bits() == 32 && !fm.sat => TerOp::Mad24Lo,
        ("mad24", false, _, true, _) if ty.bits() == 32 && !fm.sat => TerOp::Mad24Hi,
        ("mad", false, true, _, _) if !fm.sat => TerOp::MadLo,
        ("mad", false, _, true, _) if !fm.sat => TerOp::MadHi,
        ("mad", false, _, _, true) if !fm.sat => TerOp::MadWide,
        _ => return Err(d.unsupported("this form")),
    };
    half_mode(ty, fm).map_err(|w| d.unsupported(w))?;
    let c_ty = match op {
        TerOp::MadWide => widened(ty).ok_or_else(|| d.unsupported("a type that does not widen"))?,
        _ => ty,
    };
    Ok(Op::Ternary { op, ty, fm, d: d.reg(0)?, a: d.src(1, ty)?, b: d.src(2, ty)?, c: d.src(3, c_ty)? })
}

/// The one-operand operations: `neg`, `abs`, `not`, `cnot`, `popc`, `clz`, `brev`, `bfind`
/// (`.shiftamt`), and of floats `sqrt`, `rcp`, `rsqrt`, `sin`, `cos`, `lg2`, `ex2`, `tanh`.
pub(super) fn unary(name: &str, mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    let ty = d.ty(mods)?;
    let fm = float_mode(mods, ty);
    mods.only(&[Mod::Rn, Mod::Rz, Mod::Rm, Mod::Rp, Mod::Ftz, Mod::Approx, Mod::Full, Mod::Shiftamt])
        .map_err(|w| d.unsupported(w))?;
    let op = match name {
        "bfind" if mods.has(Mod::Shiftamt) => UnOp::BfindShift,
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
    let float_only =
        matches!(op, UnOp::Sqrt | UnOp::Rcp | UnOp::Rsqrt | UnOp::Sin | UnOp::Cos | UnOp::Lg2 | UnOp::Ex2 | UnOp::Tanh);
    let on_halves = matches!(op, UnOp::Neg | UnOp::Abs | UnOp::Ex2 | UnOp::Tanh);
    if float_only != ty.float() && !matches!(op, UnOp::Neg | UnOp::Abs) || ty.half() && !on_halves {
        return Err(d.unsupported("this type"));
    }
    if op == UnOp::Tanh && ty == Ty::F64 {
        return Err(d.unsupported("this type"));
    }
    // `ex2.approx.ftz.bf16` is how PTX spells it: `.ftz` is not refused here.
    half_mode(ty, FloatMode { ftz: false, ..fm }).map_err(|w| d.unsupported(w))?;
    if fm.round != Round::Nearest && !matches!(op, UnOp::Sqrt | UnOp::Rcp) {
        return Err(d.unsupported("a rounding on this operation"));
    }
    Ok(Op::Unary { op, ty, fm, d: d.reg(0)?, a: d.src(1, ty)? })
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
