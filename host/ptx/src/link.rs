//! Calls linked at load: each kernel's body gets, after its own code, the code of every `.func`
//! it reaches, once each, with branch targets moved and every call told where its callee
//! starts, how large its frame is and where its arguments and results go.

use crate::LoadError;
use crate::ir::{Call, Function, Inst, Module, Op, Param};
use std::collections::{BTreeSet, HashMap};

/// Links every kernel of `m`; `headers[id]` holds a function's name and its index in
/// `m.functions` if it has a body; `taken` the functions whose address the module takes, what
/// an indirect call may reach.
pub(crate) fn link(m: &mut Module, headers: &[(&str, Option<usize>)], taken: &BTreeSet<u32>) -> Result<(), LoadError> {
    // Only kernels change: each kernel's body is taken out while its callees are read, unlinked,
    // from the module (no copy of the module's code, which may be large).
    for k in 0..m.functions.len() {
        if !m.functions[k].entry {
            continue;
        }
        let mut f = Linked { body: std::mem::take(&mut m.functions[k].body), reads_grid_workspace: false };
        link_kernel(&mut f, &m.functions, headers, taken)?;
        let kernel = &mut m.functions[k];
        kernel.body = f.body;
        kernel.reads_grid_workspace |= f.reads_grid_workspace;
    }
    Ok(())
}

/// A kernel's body while it is linked.
struct Linked {
    body: Vec<Inst>,
    reads_grid_workspace: bool,
}

/// Links one kernel's body against the module's functions, as they were read.
fn link_kernel(
    f: &mut Linked,
    functions: &[Function],
    headers: &[(&str, Option<usize>)],
    taken: &BTreeSet<u32>,
) -> Result<(), LoadError> {
    let mut placed: HashMap<u32, u32> = HashMap::new();
    let mut i = 0;
    while i < f.body.len() {
        let line = f.body[i].line;
        if let Op::CallIndirect(call) = &f.body[i].op {
            // Every function whose address is taken and whose parameters the call fits.
            let (args, rets) = (call.args.clone(), call.rets.clone());
            let mut callees = Vec::new();
            for &id in taken {
                let Some(callee) = headers[id as usize].1.map(|k| &functions[k]).filter(|c| !c.entry) else {
                    continue;
                };
                let (Some(args), Some(rets)) = (layout(&args, &callee.params), layout(&rets, &callee.returns)) else {
                    continue;
                };
                let target = place(&mut f.body, &mut placed, id, callee);
                f.reads_grid_workspace |= callee.reads_grid_workspace;
                let (registers, local_bytes) = (callee.registers, callee.local_bytes);
                callees.push(Call { callee: id, target, registers, local_bytes, args, rets });
            }
            let Op::CallIndirect(call) = &mut f.body[i].op else { unreachable!() };
            call.callees = callees;
            i += 1;
            continue;
        }
        let Op::Call(call) = &f.body[i].op else {
            i += 1;
            continue;
        };
        let (name, index) = headers[call.callee as usize];
        let unsupported = |what: &str| LoadError::Unsupported { line, what: format!("call of {name}: {what}") };
        let callee = match index.map(|i| &functions[i]) {
            Some(c) if !c.entry => c,
            Some(_) => return Err(unsupported("a kernel cannot be called")),
            // Device printf, which the driver provides.
            None if name == "vprintf" && call.args.len() == 2 && call.rets.len() <= 1 => {
                let (format, args, ret) = (call.args[0].0, call.args[1].0, call.rets.first().map(|r| r.0));
                f.body[i].op = Op::Printf { format, args, ret };
                i += 1;
                continue;
            }
            // A failed device assert.
            None if name == "__assertfail" && call.args.len() == 5 => {
                let at = |k: usize| call.args[k].0;
                f.body[i].op = Op::AssertFail { message: at(0), file: at(1), line: at(2), function: at(3) };
                i += 1;
                continue;
            }
            // The driver's device heap, which is not simulated.
            None if matches!(name, "malloc" | "free") => {
                return Err(unsupported("the device heap (malloc and free)"));
            }
            // Any other function without a body is unresolved: the JIT refuses the module.
            None => return Err(LoadError::Unresolved { line, name: name.to_owned() }),
        };
        let id = call.callee;
        let target = place(&mut f.body, &mut placed, id, callee);
        f.reads_grid_workspace |= callee.reads_grid_workspace;
        let Op::Call(call) = &mut f.body[i].op else { unreachable!() };
        call.target = target;
        call.registers = callee.registers;
        call.local_bytes = callee.local_bytes;
        let bad = |what: &str| LoadError::Syntax { line, what: format!("call of {name}: {what}") };
        call.args = layout(&call.args, &callee.params).ok_or_else(|| bad("arguments do not match"))?;
        call.rets = layout(&call.rets, &callee.returns).ok_or_else(|| bad("results do not match"))?;
        i += 1;
    }
    Ok(())
}

/// Where function `id` (`callee`) starts in `body`: appended once, its branch targets moved.
/// Each piece of code ends in a `ret`, so that a thread that runs off the end of its function
/// (or branches to a label at its end) returns, as it would alone, and never runs on into the
/// next function's code; the kernel's own `ret` is its exit.
fn place(body: &mut Vec<Inst>, placed: &mut HashMap<u32, u32>, id: u32, callee: &Function) -> u32 {
    let ret = |code: &[Inst]| Inst { line: code.last().map_or(0, |i| i.line), guard: None, op: Op::Ret };
    if placed.is_empty() {
        body.push(ret(body));
    }
    *placed.entry(id).or_insert_with(|| {
        let at = body.len() as u32;
        body.extend(callee.body.iter().cloned().map(|mut inst| {
            match &mut inst.op {
                Op::Bra { target } => *target += at,
                Op::Brx { targets, .. } => targets.iter_mut().for_each(|t| *t += at),
                _ => {}
            }
            inst
        }));
        body.push(ret(&callee.body));
        at
    })
}

/// Pairs the caller's offsets with the callee's parameters.
fn layout(caller: &[(u32, u32, u32)], callee: &[Param]) -> Option<Vec<(u32, u32, u32)>> {
    (caller.len() == callee.len())
        .then(|| caller.iter().zip(callee).map(|(&(from, ..), p)| (from, p.offset, p.size)).collect())
}

#[cfg(test)]
mod tests {
    use crate::ir::Op;

    #[test]
    fn a_kernel_holds_each_callee_once_with_moved_branches() {
        let text = ".version 8.0\n.target sm_90\n.address_size 64\n\
            .func (.param .b32 r) f(.param .b32 a);\n\
            .visible .entry k()\n{\n.reg .b32 %r<3>;\n\
            {\n.param .b32 p0;\nst.param.b32 [p0], 1;\n.param .b32 r0;\ncall.uni (r0), f, (p0);\nld.param.b32 %r1, [r0];\n}\n\
            {\n.param .b32 p0;\nst.param.b32 [p0], 2;\n.param .b32 r0;\ncall.uni (r0), f, (p0);\n}\nret;\n}\n\
            .func (.param .b32 r) f(.param .b32 a)\n{\n.reg .b32 %r<2>;\nld.param.u32 %r1, [a];\nL:\nbra L;\n}\n";
        let m = crate::load(text).unwrap();
        let k = m.kernel("k").unwrap();
        let calls: Vec<_> =
            k.body.iter().filter_map(|i| if let Op::Call(c) = &i.op { Some(c) } else { None }).collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].target, calls[1].target);
        assert_eq!(k.body.len(), 6 + 1 + 2 + 1, "the kernel's 6 and f's 2, once, each ended by a ret");
        assert_eq!(k.body[8].op, Op::Bra { target: 8 });
        assert!([6, 9].iter().all(|&i| k.body[i].op == Op::Ret));
        // f's result at 0 and its argument at 4; each call's own .params in the kernel's frame.
        assert_eq!(calls[0].rets, [(4, 0, 4)]);
        assert_eq!(calls[1].args, [(8, 4, 4)]);
    }

    #[test]
    fn calling_what_has_no_body_is_refused_with_the_line_but_vprintf() {
        let header = ".version 8.0\n.target sm_90\n.address_size 64\n\
            .extern .func (.param .b64 r) malloc(.param .b64 a);\n\
            .extern .func (.param .b32 r) vprintf(.param .b64 a, .param .b64 b);\n";
        let text = format!(
            "{header}.visible .entry k()\n{{\n.param .b64 a;\n.param .b64 r;\ncall.uni (r), malloc, (a);\nret;\n}}\n"
        );
        match crate::load(&text) {
            Err(crate::LoadError::Unsupported { line: 10, what }) => assert!(what.contains("malloc"), "{what}"),
            other => panic!("{other:?}"),
        }
        let text = format!(
            "{header}.visible .entry k()\n{{\n.param .b64 a;\n.param .b64 b;\n.param .b32 r;\ncall.uni (r), vprintf, (a, b);\nret;\n}}\n"
        );
        let m = crate::load(&text).expect("vprintf is the driver's");
        assert_eq!(m.kernel("k").unwrap().body[0].op, Op::Printf { format: 0, args: 8, ret: Some(16) });
    }
}
