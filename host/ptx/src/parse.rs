//! PTX text to a [`Module`]: directives, variables, functions with their parameters, registers,
//! local and shared declarations and labels, and each instruction's operands, which
//! the decoder (`decode/`) turns into an [`Op`](crate::ir::Op).

use crate::LoadError;
use crate::decode;
use crate::ir::{
    Function, Inst, Module, Op, Param, Place, Pointer, Space, Special, Ty, Variable, function_address, function_at,
};
use crate::lex::{Lexer, Tok};
use crate::operand::{Declared, Operand, Scope, Shadowed};
// A module's names are hashed by the million: Fx, not SipHash (the text is the program's own).
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeSet;

/// Every function the module declares or defines, so that calls can be linked once all are
/// read.
#[derive(Default)]
struct Funcs {
    ids: HashMap<String, u32>,
    headers: Vec<Header>,
    /// The functions whose address an instruction takes (`mov.u64 %rd, f`): what an indirect
    /// call may reach, with those in initialisers.
    taken: BTreeSet<u32>,
}

struct Header {
    name: String,
    /// Its index in `Module::functions`, once its body is read.
    body: Option<usize>,
}

impl Funcs {
    fn declare(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.headers.len() as u32;
        self.ids.insert(name.to_string(), id);
        self.headers.push(Header { name: name.to_string(), body: None });
        id
    }
}

struct Parser<'t> {
    lexer: Lexer<'t>,
    /// The next token and its line; `None` at the end of the text.
    ahead: Option<(Tok<'t>, u32)>,
    /// The line of the last token read.
    last_line: u32,
}

impl<'t> Parser<'t> {
    fn new(text: &'t str) -> Result<Parser<'t>, LoadError> {
        let mut lexer = Lexer::new(text);
        let ahead = lexer.next_token()?;
        Ok(Parser { lexer, ahead, last_line: 1 })
    }

    fn peek(&self) -> Option<Tok<'t>> {
        self.ahead.map(|t| t.0)
    }

    /// The next token's line, or the last one's at the end.
    fn line(&self) -> u32 {
        self.ahead.map_or(self.last_line, |t| t.1)
    }

    fn next(&mut self) -> Result<Tok<'t>, LoadError> {
        let Some((t, line)) = self.ahead else {
            return Err(LoadError::Syntax { line: self.line(), what: "the text ends too soon".into() });
        };
        self.last_line = line;
        self.ahead = self.lexer.next_token()?;
        Ok(t)
    }

    /// A token where none of its kind may stand, in ptxas's words.
    fn unexpected<T>(&self, tok: Tok<'_>) -> Result<T, LoadError> {
        let text = match tok {
            Tok::Word(w) => w.to_owned(),
            Tok::Int(v) => v.to_string(),
            Tok::Float { bits, double: true } => format!("0d{bits:016X}"),
            Tok::Float { bits, double: false } => format!("0f{bits:08X}"),
            Tok::Punct(c) => c.to_string(),
            Tok::Str(s) => format!("\"{s}\""),
        };
        self.err(format!("Parsing error near '{text}': syntax error"))
    }

    fn err<T>(&self, what: impl Into<String>) -> Result<T, LoadError> {
        Err(LoadError::Syntax { line: self.line(), what: what.into() })
    }

    fn punct(&mut self, c: char) -> Result<(), LoadError> {
        match self.next()? {
            Tok::Punct(p) if p == c => Ok(()),
            other => self.err(format!("expected `{c}`, found {other:?}")),
        }
    }

    fn is(&self, c: char) -> bool {
        self.peek() == Some(Tok::Punct(c))
    }

    fn word(&mut self) -> Result<&'t str, LoadError> {
        match self.next()? {
            Tok::Word(w) => Ok(w),
            other => self.err(format!("expected a name, found {other:?}")),
        }
    }

    fn int(&mut self) -> Result<i128, LoadError> {
        match self.next()? {
            Tok::Int(v) => Ok(v),
            other => self.err(format!("expected a number, found {other:?}")),
        }
    }

    /// Skips to just after the next `;`.
    fn skip_statement(&mut self) -> Result<(), LoadError> {
        while self.next()? != Tok::Punct(';') {}
        Ok(())
    }

    /// Skips the rest of the line the last token read stands on: `.loc` and `.file` end at
    /// their line, without a `;`.
    fn skip_line(&mut self) -> Result<(), LoadError> {
        while self.ahead.is_some_and(|t| t.1 == self.last_line) {
            self.next()?;
        }
        Ok(())
    }

    /// Skips a `.section name { ... }` (debug information), its braces balanced.
    fn skip_section(&mut self) -> Result<(), LoadError> {
        while !self.is('{') {
            self.next()?;
        }
        let mut depth = 0usize;
        loop {
            match self.next()? {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') if depth == 1 => return Ok(()),
                Tok::Punct('}') => depth -= 1,
                _ => {}
            }
        }
    }
}

/// The most bytes a module may declare for one variable, a function's shared or local memory:
/// an image claiming more is refused rather than allocated.
const MAX_BYTES: u64 = 1 << 30;

/// Parses and decodes a whole module.
pub(crate) fn module(text: &str) -> Result<Module, LoadError> {
    let mut p = Parser::new(text)?;
    let mut m = Module { version: (0, 0), target: String::new(), variables: Vec::new(), functions: Vec::new() };
    let mut names: HashMap<String, u32> = HashMap::default();
    let mut shared: HashMap<String, u32> = HashMap::default();
    let mut shared_bytes = 0u32;
    let mut funcs = Funcs::default();
    while p.peek().is_some() {
        let w = p.word()?;
        match w {
            ".version" => {
                let v = match p.next()? {
                    Tok::Float { bits, .. } => f64::from_bits(bits),
                    Tok::Int(v) => v as f64,
                    _ => return p.err("a version is two numbers"),
                };
                m.version = (v.trunc() as u32, ((v.fract() * 10.0).round()) as u32);
            }
            ".target" => {
                m.target = p.word()?.to_owned();
                while p.is(',') {
                    p.punct(',')?;
                    p.word()?;
                }
            }
            ".address_size" => {
                if p.int()? != 64 {
                    return p.err("only 64-bit addresses are simulated");
                }
            }
            ".visible" | ".extern" | ".weak" | ".common" => {
                let external = w == ".extern";
                let next = p.word()?;
                declaration(&mut p, next, external, &mut m, &mut names, &mut shared, &mut shared_bytes, &mut funcs)?;
            }
            ".global" | ".const" | ".shared" | ".entry" | ".func" => {
                declaration(&mut p, w, false, &mut m, &mut names, &mut shared, &mut shared_bytes, &mut funcs)?
            }
            ".file" | ".loc" => p.skip_line()?,
            ".section" => p.skip_section()?,
            ".pragma" => p.skip_statement()?,
            // A directive newer than this parser (the ISA adds some in each version).
            _ if w.starts_with('.') => {
                return Err(LoadError::Unsupported { line: p.line(), what: format!("the directive {w}") });
            }
            _ => return p.err(format!("unexpected `{w}` at the top level")),
        }
    }
    if m.target.is_empty() {
        return Err(LoadError::Syntax { line: 1, what: "no .target: this is not PTX".into() });
    }
    let headers: Vec<(&str, Option<usize>)> = funcs.headers.iter().map(|h| (h.name.as_str(), h.body)).collect();
    // Addresses in initialisers (vtables, tables of function pointers) are taken too.
    let words = m.variables.iter().flat_map(|v| v.init.chunks_exact(8));
    funcs.taken.extend(words.filter_map(|w| function_at(u64::from_le_bytes(w.try_into().expect("8 bytes")))));
    crate::link::link(&mut m, &headers, &funcs.taken)?;
    Ok(m)
}

/// A declaration after its linkage: a variable or a function.
#[allow(clippy::too_many_arguments)]
fn declaration(
    p: &mut Parser,
    kind: &str,
    external: bool,
    m: &mut Module,
    names: &mut HashMap<String, u32>,
    shared: &mut HashMap<String, u32>,
    shared_bytes: &mut u32,
    funcs: &mut Funcs,
) -> Result<(), LoadError> {
    match kind {
        ".global" | ".const" | ".shared" => {
            let space = match kind {
                ".global" => Space::Global,
                ".const" => Space::Const,
                _ => Space::Shared,
            };
            let var = variable(p, space, external, Names { functions: &funcs.ids, variables: names })?;
            if space == Space::Shared {
                // Module-level shared memory is every kernel's; dynamic shared memory (`.extern`,
                // size 0) starts after the static part, which `Function::shared_bytes` counts.
                let at = align_up(*shared_bytes, var.align);
                shared.insert(var.name.clone(), at);
                *shared_bytes = at.saturating_add(var.size as u32);
            } else {
                // A definition takes an `.extern` declaration's place (linked images declare
                // what another defines); a second definition is an error.
                match names.get(&var.name).map(|&i| i as usize) {
                    Some(i) if m.variables[i].external => m.variables[i] = var,
                    Some(_) if var.external => {}
                    Some(_) => return p.err(format!("{} is defined twice", var.name)),
                    None => {
                        names.insert(var.name.clone(), m.variables.len() as u32);
                        m.variables.push(var);
                    }
                }
            }
            Ok(())
        }
        ".entry" | ".func" => {
            if let Some(f) = function(p, kind == ".entry", names, shared, *shared_bytes, funcs)? {
                let id = funcs.ids[&f.name];
                funcs.headers[id as usize].body = Some(m.functions.len());
                m.functions.push(f);
            }
            Ok(())
        }
        _ => p.err(format!("unexpected `{kind}` in a declaration")),
    }
}

fn align_up(at: u32, align: u32) -> u32 {
    at.next_multiple_of(align.max(1))
}

/// What a declaration says before its array sizes, `[.align N] .type name`: the name, the type
/// and the alignment (the type's when not written, else at most `max_align`). `other` is asked
/// first about each word before the name (`Ok(true)`: it took the word); `what` names the
/// declaration in an error.
fn declared(
    p: &mut Parser,
    max_align: i128,
    what: &str,
    mut other: impl FnMut(&mut Parser, &str) -> Result<bool, LoadError>,
) -> Result<(String, Ty, u32), LoadError> {
    let mut align = 0u32;
    let mut ty = None;
    let name = loop {
        let w = p.word()?;
        match w {
            w if other(p, w)? => {}
            ".align" => align = p.int()?.clamp(1, max_align) as u32,
            t if t.starts_with('.') => {
                ty = Some(Ty::named(&t[1..]).ok_or(()).or_else(|_| p.err(format!("unknown type {t}")))?)
            }
            _ => break w,
        }
    };
    let Some(ty) = ty else { return p.err(format!("{what}{name} has no type")) };
    Ok((name.to_owned(), ty, if align == 0 { ty.bytes() as u32 } else { align }))
}

/// The functions and variables declared so far, by name: what an initialiser may point at.
#[derive(Clone, Copy)]
struct Names<'n> {
    functions: &'n HashMap<String, u32>,
    variables: &'n HashMap<String, u32>,
}

/// `[.align N] .type name[dims] [= init];`
fn variable(p: &mut Parser, space: Space, external: bool, names: Names<'_>) -> Result<Variable, LoadError> {
    let (name, ty, align) = declared(p, 1 << 16, "", |p, w| match w {
        ".v2" | ".v4" => p.err("vector variables are not simulated"),
        // `__managed__`: where it lies is the loader's business; its accesses are plain.
        ".attribute" => {
            p.punct('(')?;
            match p.word()? {
                ".managed" => {}
                other => return p.err(format!("the variable attribute {other}")),
            }
            p.punct(')')?;
            Ok(true)
        }
        _ => Ok(false),
    })?;
    let mut count: u64 = 1;
    let mut unsized_array = false;
    while p.is('[') {
        p.punct('[')?;
        if p.is(']') {
            unsized_array = true;
        } else {
            let n = u64::try_from(p.int()?).ok().filter(|&n| n <= MAX_BYTES);
            count = count.saturating_mul(n.ok_or(()).or_else(|_| p.err("an array size out of range"))?);
        }
        p.punct(']')?;
    }
    let size = if unsized_array { 0 } else { count.saturating_mul(ty.bytes() as u64) };
    if size > MAX_BYTES {
        return p.err(format!("{name} declares more than {MAX_BYTES} bytes"));
    }
    let (mut init, mut pointers) = (Vec::new(), Vec::new());
    if p.is('=') {
        p.punct('=')?;
        (init, pointers) = initialiser(p, ty, names)?;
        if init.len() as u64 > size.max(ty.bytes() as u64) {
            return p.err(format!("{name}'s initialiser is larger than it"));
        }
    }
    p.punct(';')?;
    Ok(Variable { name, space, align, size, init, external, pointers })
}

/// `value` or `{v, v, ...}` as bytes of `ty`. A 64-bit value may be an address, `name`,
/// `generic(name)`, either `+ offset`: a function's (a vtable, a table of function pointers),
/// or a variable's, which the bytes hold as zero and the pointers returned say where.
fn initialiser(p: &mut Parser, ty: Ty, names: Names<'_>) -> Result<(Vec<u8>, Vec<Pointer>), LoadError> {
    let (mut out, mut pointers) = (Vec::new(), Vec::new());
    let braced = p.is('{');
    if braced {
        p.punct('{')?;
    }
    loop {
        let bits = match p.next()? {
            Tok::Int(v) => v as u64,
            Tok::Float { bits, double } => match (ty, double) {
                (Ty::F32, true) => (f64::from_bits(bits) as f32).to_bits() as u64,
                (Ty::F64, false) => (f32::from_bits(bits as u32) as f64).to_bits(),
                _ => bits,
            },
            Tok::Word(w) if ty.bytes() == 8 => {
                let name = match w == "generic" {
                    true => {
                        p.punct('(')?;
                        let name = p.word()?;
                        p.punct(')')?;
                        name
                    }
                    false => w,
                };
                let plus = match p.is('+') {
                    true => {
                        p.punct('+')?;
                        u64::try_from(p.int()?).or_else(|_| p.err("an address's offset out of range"))?
                    }
                    false => 0,
                };
                if let Some(&id) = names.functions.get(name) {
                    function_address(id).wrapping_add(plus)
                } else if let Some(&variable) = names.variables.get(name) {
                    pointers.push(Pointer { at: out.len() as u32, variable, plus });
                    0
                } else {
                    return p.err(format!("{name} in an initialiser names nothing declared before it"));
                }
            }
            Tok::Word(w) => {
                let what = format!("an address ({w}) in an initialiser narrower than 64 bits");
                return Err(LoadError::Unsupported { line: p.line(), what });
            }
            other => return p.unexpected(other),
        };
        out.extend_from_slice(&bits.to_le_bytes()[..ty.bytes()]);
        if !braced || !p.is(',') {
            break;
        }
        p.punct(',')?;
    }
    if braced {
        p.punct('}')?;
    }
    Ok((out, pointers))
}

/// A function: its header, then its body (or `;` for a declaration, which holds nothing to run).
/// A kernel's parameters are in the launch's parameter buffer; a `.func`'s results and then
/// its parameters open its frame's local memory.
fn function(
    p: &mut Parser,
    entry: bool,
    names: &HashMap<String, u32>,
    shared: &HashMap<String, u32>,
    module_shared: u32,
    funcs: &mut Funcs,
) -> Result<Option<Function>, LoadError> {
    let mut places = HashMap::default();
    let mut offset = 0u32;
    let returns = if p.is('(') {
        if entry {
            return p.err("a kernel returns nothing");
        }
        parameters(p, &mut offset)?
    } else {
        Vec::new()
    };
    let name = p.word()?;
    let params = if p.is('(') { parameters(p, &mut offset)? } else { Vec::new() };
    for param in returns.iter().chain(&params) {
        let place = if entry { Place::Param(param.offset) } else { Place::Local(param.offset) };
        places.insert(param.name.clone(), place);
    }
    // Performance directives (.maxntid, .reqntid, .minnctapersm, .maxnreg, .noreturn,
    // .maxclusterrank, ...) do not change what a kernel computes; `.reqnctapercluster` gives the
    // cluster it is launched in.
    let mut cluster = None;
    while let Some(Tok::Word(w)) = p.peek() {
        if !w.starts_with('.') {
            break;
        }
        p.next()?;
        let mut numbers = Vec::new();
        while let Some(Tok::Int(_) | Tok::Punct(',')) = p.peek() {
            if let Tok::Int(v) = p.next()? {
                numbers.push(u32::try_from(v).unwrap_or(0));
            }
        }
        if w == ".reqnctapercluster" {
            let dims = [numbers.first(), numbers.get(1), numbers.get(2)].map(|d| d.copied().unwrap_or(1));
            if numbers.is_empty() || numbers.len() > 3 || dims.contains(&0) {
                return p.err(format!("{w} takes one to three sizes of at least 1"));
            }
            cluster = Some(dims);
        }
    }
    funcs.declare(name);
    if p.is(';') {
        p.punct(';')?;
        return Ok(None);
    }
    if funcs.headers[funcs.ids[name] as usize].body.is_some() {
        return p.err(format!("{name} is defined twice"));
    }
    p.punct('{')?;
    let local_bytes = if entry { 0 } else { offset };
    let shared_bytes = module_shared;
    let mut f = Function {
        name: name.to_owned(),
        entry,
        params,
        returns,
        registers: 0,
        shared_bytes,
        local_bytes,
        body: Vec::new(),
        cluster,
        reads_grid_workspace: false,
    };
    let mut scope = Scope::new(names, shared, &funcs.ids, places);
    let mut taken: Vec<u32> = Vec::new();
    body(p, &mut scope, &mut f, &mut taken)?;
    f.registers = scope.registers.count;
    funcs.taken.extend(taken);
    Ok(Some(f))
}

/// `(.param ..., .param ...)`, laid out from `offset` on.
fn parameters(p: &mut Parser, offset: &mut u32) -> Result<Vec<Param>, LoadError> {
    let mut params = Vec::new();
    p.punct('(')?;
    while !p.is(')') {
        params.push(parameter(p, offset)?);
        if p.is(',') {
            p.punct(',')?;
        }
    }
    p.punct(')')?;
    Ok(params)
}

/// `.param [.align N] .type name[dims]` (or `.param .ptr...`).
fn parameter(p: &mut Parser, offset: &mut u32) -> Result<Param, LoadError> {
    if p.word()? != ".param" {
        return p.err("a parameter is declared `.param`");
    }
    let mut pointer = false;
    let (name, ty, align) = declared(p, 1 << 12, "parameter ", |p, w| match w {
        // After `.ptr`, `.align` is the pointee's alignment, not the parameter's.
        ".align" if pointer => p.int().map(|_| true),
        ".ptr" => {
            pointer = true;
            Ok(true)
        }
        ".global" | ".const" | ".shared" | ".local" => Ok(true),
        _ => Ok(false),
    })?;
    let mut count = 1u32;
    while p.is('[') {
        p.punct('[')?;
        let n = u32::try_from(p.int()?).ok().filter(|&n| n <= 1 << 16);
        count = count.saturating_mul(n.ok_or(()).or_else(|_| p.err("a parameter array out of range"))?);
        p.punct(']')?;
    }
    let size = count.saturating_mul(ty.bytes() as u32);
    let at = align_up(*offset, align);
    *offset = at.saturating_add(size);
    Ok(Param { name, offset: at, size, align })
}

/// A branch as parsed, decoded once the body's labels are all known: its place in the body,
/// line, opcode with modifiers and operands.
type Branch<'t> = (usize, u32, &'t str, Vec<Operand>);

/// The instructions of a `{ ... }` body into `f.body`, decoded as they are read (a branch once
/// the body is read, as it may name a later label), nested blocks flattened (their names
/// scoped); the functions whose address an instruction other than a call takes into `taken`.
fn body(p: &mut Parser, scope: &mut Scope, f: &mut Function, taken: &mut Vec<u32>) -> Result<(), LoadError> {
    let mut branches: Vec<Branch> = Vec::new();
    let mut shadowed: Vec<Vec<Shadowed>> = vec![Vec::new()];
    loop {
        let line = p.line();
        match p.next()? {
            Tok::Punct('}') => {
                for old in shadowed.pop().unwrap_or_default().into_iter().rev() {
                    scope.registers.restore(old);
                }
                if shadowed.is_empty() {
                    for (at, line, opcode, operands) in branches {
                        f.body[at].op = decode::op(opcode, &operands, scope, line)?;
                    }
                    return Ok(());
                }
            }
            Tok::Punct('{') => shadowed.push(Vec::new()),
            // `.reg .b32 r;`, or `.reg.b32 r;` as inline assembly in CUDA's headers writes it.
            Tok::Word(w) if w == ".reg" || w.starts_with(".reg.") => {
                let (kind, names) = registers(p, w.strip_prefix(".reg").filter(|k| !k.is_empty()))?;
                for name in names {
                    let old = scope.registers.declare(name, kind == ".pred");
                    if let Some(level) = shadowed.last_mut() {
                        level.push(old);
                    }
                }
            }
            // A `.param` in a body (a call's arguments and results) lives in the frame's local
            // memory, as the callee's own parameters do.
            Tok::Word(w) if w == ".local" || w == ".shared" || w == ".param" => {
                let space = if w == ".shared" { Space::Shared } else { Space::Local };
                let var = variable(p, space, false, Names { functions: scope.functions, variables: scope.module })?;
                let place = match space {
                    Space::Local => {
                        let at = align_up(f.local_bytes, var.align);
                        f.local_bytes = at.saturating_add(var.size as u32);
                        Place::Local(at)
                    }
                    _ => {
                        let at = align_up(f.shared_bytes, var.align);
                        f.shared_bytes = at.saturating_add(var.size as u32);
                        Place::Shared(at)
                    }
                };
                if u64::from(f.local_bytes) > MAX_BYTES || u64::from(f.shared_bytes) > MAX_BYTES {
                    return p.err("more local or shared memory than can be simulated");
                }
                scope.places.insert(var.name, place);
            }
            Tok::Word(".loc" | ".loc_intermediate") => p.skip_line()?,
            Tok::Word(".pragma") => p.skip_statement()?,
            // The types of an indirect call (a function pointer, a virtual function): the
            // arguments the call names have them already.
            Tok::Word(".callprototype") => p.skip_statement()?,
            Tok::Word(w) if p.is(':') => {
                p.punct(':')?;
                if matches!(p.peek(), Some(Tok::Word(d)) if d == ".branchtargets") {
                    p.next()?;
                    let targets = branch_targets(p)?;
                    scope.branch_targets.insert(w.to_owned(), targets);
                } else {
                    scope.labels.insert(w.to_owned(), f.body.len() as u32);
                }
            }
            Tok::Punct('@') => {
                let negated = p.is('!');
                if negated {
                    p.punct('!')?;
                }
                let pred = p.word()?;
                let reg =
                    scope.registers.get(pred).ok_or(()).or_else(|_| p.err(format!("unknown predicate {pred}")))?;
                let opcode = p.word()?;
                let operands = operands(p, scope)?;
                instruction(f, scope, taken, &mut branches, (line, Some((reg, negated)), opcode, operands))?;
            }
            Tok::Word(opcode) => {
                let operands = operands(p, scope)?;
                instruction(f, scope, taken, &mut branches, (line, None, opcode, operands))?;
            }
            other => return p.unexpected(other),
        }
    }
}

/// One instruction, appended to `f.body`: decoded now, or, a branch, once the labels are known.
fn instruction<'t>(
    f: &mut Function,
    scope: &Scope,
    taken: &mut Vec<u32>,
    branches: &mut Vec<Branch<'t>>,
    (line, guard, opcode, operands): (u32, Option<(u32, bool)>, &'t str, Vec<Operand>),
) -> Result<(), LoadError> {
    let workspace = |o: &Operand| matches!(o, Operand::Special(Special::GridWorkspace(_)));
    f.reads_grid_workspace |= operands.iter().any(|o| match o {
        Operand::Vector(items) => items.iter().flatten().any(workspace),
        o => workspace(o),
    });
    if !opcode.starts_with("call") {
        let functions = operands.iter().filter_map(|o| match o {
            Operand::Name(n) => scope.functions.get(n).copied(),
            _ => None,
        });
        taken.extend(functions);
    }
    if matches!(opcode.split('.').next(), Some("bra" | "brx")) {
        branches.push((f.body.len(), line, opcode, operands));
        f.body.push(Inst { line, guard, op: Op::Ret });
    } else {
        f.body.push(Inst { line, guard, op: decode::op(opcode, &operands, scope, line)? });
    }
    Ok(())
}

/// The labels of `.branchtargets L0, L1, ...;` (its own label already read).
fn branch_targets(p: &mut Parser) -> Result<Vec<String>, LoadError> {
    let mut names = Vec::new();
    loop {
        names.push(p.word()?.to_owned());
        match p.next()? {
            Tok::Punct(',') => {}
            Tok::Punct(';') => return Ok(names),
            other => return p.unexpected(other),
        }
    }
}

/// `.reg .type %name<N>;` or `.reg .type %a, %b;`: the type and the names declared (`kind`:
/// the type, when it came with `.reg`).
fn registers(p: &mut Parser, kind: Option<&str>) -> Result<(String, Vec<Declared>), LoadError> {
    let kind = match kind {
        Some(k) => k.to_string(),
        None => p.word()?.to_owned(),
    };
    if kind.starts_with(".v") {
        return p.err("vector registers are not simulated");
    }
    let mut names = Vec::new();
    loop {
        let name = p.word()?;
        if p.is('<') {
            p.punct('<')?;
            let n = u32::try_from(p.int()?).ok().filter(|&n| n <= 1 << 20);
            let n = n.ok_or(()).or_else(|_| p.err("a register count out of range"))?;
            p.punct('>')?;
            names.push(Declared::Range(name.to_owned(), n));
        } else {
            names.push(Declared::One(name.to_owned()));
        }
        match p.next()? {
            Tok::Punct(',') => {}
            Tok::Punct(';') => return Ok((kind, names)),
            other => return p.unexpected(other),
        }
    }
}

/// The operands up to `;`.
fn operands(p: &mut Parser, scope: &Scope) -> Result<Vec<Operand>, LoadError> {
    let mut out = Vec::new();
    if p.is(';') {
        p.punct(';')?;
        return Ok(out);
    }
    loop {
        out.push(operand(p, scope)?);
        match p.next()? {
            Tok::Punct(',') => {}
            Tok::Punct(';') => return Ok(out),
            other => return p.unexpected(other),
        }
    }
}

fn operand(p: &mut Parser, scope: &Scope) -> Result<Operand, LoadError> {
    match p.next()? {
        Tok::Punct('[') => {
            let base = operand(p, scope)?;
            let mut offset = 0i64;
            while p.is('+') || p.is('-') {
                let sign = if p.is('-') { -1 } else { 1 };
                p.next()?;
                offset += sign
                    * match p.next()? {
                        Tok::Int(v) => i64::try_from(v).ok().ok_or(()).or_else(|_| p.err("an offset out of range"))?,
                        other => return p.unexpected(other),
                    };
            }
            p.punct(']')?;
            Ok(Operand::Addr(Box::new(base), offset))
        }
        Tok::Punct('{') => {
            let mut items = Vec::new();
            loop {
                items.push(match operand(p, scope)? {
                    Operand::Sink => None,
                    o => Some(o),
                });
                match p.next()? {
                    Tok::Punct(',') => {}
                    Tok::Punct('}') => return Ok(Operand::Vector(items)),
                    other => return p.unexpected(other),
                }
            }
        }
        Tok::Punct('!') => Ok(Operand::Not(Box::new(operand(p, scope)?))),
        Tok::Punct('(') => {
            let mut items = Vec::new();
            while !p.is(')') {
                items.push(operand(p, scope)?);
                if p.is(',') {
                    p.punct(',')?;
                }
            }
            p.punct(')')?;
            Ok(Operand::List(items))
        }
        Tok::Int(v) => Ok(Operand::Int(v)),
        Tok::Float { bits, double } => Ok(Operand::Float { bits, double }),
        Tok::Word(w) if w == "_" && p.is('|') => Ok(Operand::Pair(None, pair_second(p, scope)?)),
        Tok::Word("_") => Ok(Operand::Sink),
        Tok::Word(w) => {
            if let Some(r) = scope.registers.get(w) {
                if p.is('|') {
                    return Ok(Operand::Pair(Some(r), pair_second(p, scope)?));
                }
                return Ok(Operand::Reg(r));
            }
            if let Some(s) = special(w) {
                return Ok(Operand::Special(s));
            }
            // A special register this executor lacks, or a register nobody declared.
            if w.starts_with('%') && crate::vocabulary::is_special_register(w) {
                return Err(LoadError::Unsupported { line: p.line(), what: format!("the register {w}") });
            }
            if w.starts_with('%') {
                return p.err(format!("Unknown symbol '{w}'"));
            }
            if let Some(&place) = scope.places.get(w) {
                return Ok(Operand::Place(place));
            }
            Ok(Operand::Name(w.to_owned()))
        }
        other => p.unexpected(other),
    }
}

/// The register after `|` in `a|b`, or `None` for `_`.
fn pair_second(p: &mut Parser, scope: &Scope) -> Result<Option<u32>, LoadError> {
    p.punct('|')?;
    let second = p.word()?;
    if second == "_" {
        return Ok(None);
    }
    match scope.registers.get(second) {
        Some(r) => Ok(Some(r)),
        None => p.err(format!("unknown register {second}")),
    }
}

/// A special register by name.
fn special(name: &str) -> Option<Special> {
    use Special::*;
    let axis = |s: &str| match s {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((reg, a)) = name.rsplit_once('.') {
        let a = axis(a)?;
        return Some(match reg {
            "%tid" => Tid(a),
            "%ntid" => Ntid(a),
            "%ctaid" => Ctaid(a),
            "%nctaid" => Nctaid(a),
            "%cluster_ctaid" => ClusterCtaid(a),
            "%cluster_nctaid" => ClusterNctaid(a),
            "%clusterid" => ClusterId(a),
            "%nclusterid" => NClusterId(a),
            _ => return None,
        });
    }
    Some(match name {
        "%laneid" => LaneId,
        "%warpid" => WarpId,
        "%nwarpid" => NWarpId,
        "%smid" => SmId,
        "%nsmid" => NSmId,
        "%lanemask_eq" => LaneMaskEq,
        "%lanemask_lt" => LaneMaskLt,
        "%lanemask_le" => LaneMaskLe,
        "%lanemask_gt" => LaneMaskGt,
        "%lanemask_ge" => LaneMaskGe,
        "%clock" => Clock,
        "%clock64" => Clock64,
        "%globaltimer" => GlobalTimer,
        "%dynamic_smem_size" => DynamicSharedSize,
        "%total_smem_size" => TotalSharedSize,
        "%cluster_ctarank" => ClusterRank,
        "%cluster_nctarank" => ClusterBlocks,
        "%is_explicit_cluster" => ExplicitCluster,
        // The driver's other environment registers hold what the simulator does not know.
        "%envreg1" => GridWorkspace(true),
        "%envreg2" => GridWorkspace(false),
        _ => return None,
    })
}
