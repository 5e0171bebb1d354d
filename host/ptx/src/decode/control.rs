//! The flow of control: `bra`, `brx.idx` and `call` (`ret`, `exit` and `trap` need nothing
//! decoded).

use super::{Decoder, Mod, Mods};
use crate::LoadError;
use crate::ir::{Call, IndirectCall, Op, Place, Src, Ty};
use crate::operand::Operand;

/// `bra` to a label.
pub(super) fn bra(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[]).map_err(|w| d.unsupported(w))?;
    Ok(match d.ops.first() {
        Some(Operand::Name(label)) => Op::Bra {
            target: *d
                .scope
                .labels
                .get(label)
                .ok_or_else(|| LoadError::Syntax { line: d.line, what: format!("unknown label {label}") })?,
        },
        _ => return Err(d.unsupported("an indirect branch")),
    })
}

/// A jump table: `brx.idx index, list`, `list` a `.branchtargets` of the function.
pub(super) fn brx(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[Mod::Idx]).map_err(|w| d.unsupported(w))?;
    if !mods.has(Mod::Idx) {
        return Err(d.unsupported("an indirect branch other than .idx"));
    }
    let names = match d.ops.get(1) {
        Some(Operand::Name(list)) if d.ops.len() == 2 => d
            .scope
            .branch_targets
            .get(list)
            .ok_or_else(|| LoadError::Syntax { line: d.line, what: format!("unknown .branchtargets {list}") })?,
        _ => return Err(d.unsupported("a target list other than a .branchtargets label")),
    };
    let label = |n: &String| {
        d.scope
            .labels
            .get(n)
            .copied()
            .ok_or_else(|| LoadError::Syntax { line: d.line, what: format!("unknown label {n}") })
    };
    Ok(Op::Brx { index: d.src(0, Ty::U32)?, targets: names.iter().map(label).collect::<Result<_, _>>()? })
}

/// `call` of a function by name or through an address (with its prototype), its arguments and
/// results `.param` variables.
pub(super) fn call(mods: &Mods, d: &Decoder<'_>) -> Result<Op, LoadError> {
    mods.only(&[]).map_err(|w| d.unsupported(w))?;
    let (rets, rest) = match d.ops.first() {
        Some(Operand::List(r)) => (r.as_slice(), &d.ops[1..]),
        _ => (&[][..], d.ops),
    };
    let frame = |o: &Operand| match o {
        Operand::Place(Place::Local(at)) => Ok((*at, 0, 0)),
        _ => Err(d.unsupported("an argument that is not a .param variable")),
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
        return Ok(Op::CallIndirect(Box::new(IndirectCall { at: Src::Reg(*at), args, rets, callees: Vec::new() })));
    }
    let callee = match rest.first() {
        Some(Operand::Name(n)) => *d
            .scope
            .functions
            .get(n)
            .ok_or_else(|| LoadError::Syntax { line: d.line, what: format!("unknown function {n}") })?,
        _ => return Err(d.unsupported("a call of this form")),
    };
    let args = match rest.get(1) {
        Some(Operand::List(a)) if rest.len() == 2 => a.as_slice(),
        None => &[][..],
        _ => return Err(d.unsupported("a call of this form")),
    };
    Ok(Op::Call(Box::new(Call {
        callee,
        target: 0,
        registers: 0,
        local_bytes: 0,
        args: args.iter().map(frame).collect::<Result<_, _>>()?,
        rets: rets.iter().map(frame).collect::<Result<_, _>>()?,
    })))
}
