//! An instruction's operands as written ([`Operand`]) and what names mean where they are
//! written ([`Scope`], with its [`Registers`]): what the parser (`parse.rs`) reads and the
//! decoder (`decode/`) turns into an [`Op`](crate::ir::Op).

use crate::ir::{Place, Special};
// A module's names are hashed by the million: Fx, not SipHash (the text is the program's own).
use rustc_hash::FxHashMap as HashMap;

/// An operand as written, before the instruction's type gives it meaning.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Operand {
    Reg(u32),
    Int(i128),
    Float {
        bits: u64,
        double: bool,
    },
    /// A name: a module variable, label or function.
    Name(String),
    /// A function's own parameter, local, shared or call `.param`, resolved where it is written
    /// (names in nested blocks shadow).
    Place(Place),
    Special(Special),
    /// `[base+offset]`.
    Addr(Box<Operand>, i64),
    /// `{a, b, ...}`; `_` is `None`.
    Vector(Vec<Option<Operand>>),
    /// `_`, a result thrown away.
    Sink,
    /// `a|b`: two results (`setp`'s second, negated predicate); `_` on either side is `None`.
    Pair(Option<u32>, Option<u32>),
    /// `!p`: a negated predicate operand.
    Not(Box<Operand>),
    /// `(a, b, ...)`: a call's arguments or results.
    List(Vec<Operand>),
}

/// What names mean inside one function: registers, parameters, locals, shared variables; and,
/// borrowed from the module, its variables, shared variables and functions (a module of many
/// functions is read in time linear in its size).
pub(crate) struct Scope<'m> {
    pub(crate) registers: Registers,
    pub(crate) places: HashMap<String, Place>,
    pub(crate) labels: HashMap<String, u32>,
    /// `.branchtargets` lists by their labels' names: the targets `brx.idx` may take, by name.
    pub(crate) branch_targets: HashMap<String, Vec<String>>,
    pub(crate) module: &'m HashMap<String, u32>,
    /// The module's shared variables, by name: their offset in the block's shared memory.
    pub(crate) shared: &'m HashMap<String, u32>,
    /// Functions declared so far, by name: their index in the parser's list of them.
    pub(crate) functions: &'m HashMap<String, u32>,
}

impl<'m> Scope<'m> {
    pub(crate) fn new(
        module: &'m HashMap<String, u32>,
        shared: &'m HashMap<String, u32>,
        functions: &'m HashMap<String, u32>,
        places: HashMap<String, Place>,
    ) -> Scope<'m> {
        Scope {
            registers: Registers::default(),
            places,
            labels: HashMap::default(),
            branch_targets: HashMap::default(),
            module,
            shared,
            functions,
        }
    }

    /// What a name used as an operand means: a place, or a label's instruction index.
    pub(crate) fn place(&self, name: &str) -> Option<Place> {
        let shared = || self.shared.get(name).map(|&at| Place::Shared(at));
        self.places.get(name).copied().or_else(shared).or_else(|| self.module.get(name).map(|&i| Place::Module(i)))
    }
}

/// A function's registers by name. A range (`.reg .b32 %r<100>;`: `%r0` to `%r99`) is kept as
/// its prefix, so that a kernel declaring a million registers holds one entry, not a million.
#[derive(Default)]
pub(crate) struct Registers {
    named: HashMap<String, u32>,
    ranges: HashMap<String, (u32, u32)>,
    /// The indices declared `.pred`, as runs `start..end`: an operand that may be a predicate
    /// or a number (`cp.async`'s last) is told by it.
    predicates: Vec<(u32, u32)>,
    /// How many registers are declared: the next one's index.
    pub(crate) count: u32,
}

/// What a name meant before a nested block declared it again, to be put back at its end.
pub(crate) enum Shadowed {
    Named(String, Option<u32>),
    Range(String, Option<(u32, u32)>),
}

impl Registers {
    /// The register `name` names.
    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        if let Some(&r) = self.named.get(name) {
            return Some(r);
        }
        let (prefix, number) = name.split_at(name.trim_end_matches(|c: char| c.is_ascii_digit()).len());
        if number.is_empty() || (number.len() > 1 && number.starts_with('0')) {
            return None;
        }
        let &(first, count) = self.ranges.get(prefix)?;
        let n: u32 = number.parse().ok()?;
        (n < count).then_some(first + n)
    }

    /// Whether register `r` was declared `.pred`.
    pub(crate) fn is_predicate(&self, r: u32) -> bool {
        self.predicates.iter().any(|&(start, end)| (start..end).contains(&r))
    }

    /// Declares `decl` (`count` registers named from `prefix` for a range): what it shadows.
    pub(crate) fn declare(&mut self, decl: Declared, predicate: bool) -> Shadowed {
        let start = self.count;
        let shadowed = match decl {
            Declared::One(name) => {
                self.count += 1;
                let old = self.named.insert(name.clone(), start);
                Shadowed::Named(name, old)
            }
            Declared::Range(prefix, count) => {
                self.count = self.count.saturating_add(count);
                let old = self.ranges.insert(prefix.clone(), (start, count));
                Shadowed::Range(prefix, old)
            }
        };
        if predicate {
            match self.predicates.last_mut() {
                Some(run) if run.1 == start => run.1 = self.count,
                _ => self.predicates.push((start, self.count)),
            }
        }
        shadowed
    }

    /// Puts back what a nested block's declaration shadowed.
    pub(crate) fn restore(&mut self, shadowed: Shadowed) {
        match shadowed {
            Shadowed::Named(name, Some(r)) => _ = self.named.insert(name, r),
            Shadowed::Named(name, None) => _ = self.named.remove(&name),
            Shadowed::Range(prefix, Some(range)) => _ = self.ranges.insert(prefix, range),
            Shadowed::Range(prefix, None) => _ = self.ranges.remove(&prefix),
        }
    }
}

/// One name of a `.reg` declaration: a register, or a range of them by prefix and count.
pub(crate) enum Declared {
    One(String),
    Range(String, u32),
}
