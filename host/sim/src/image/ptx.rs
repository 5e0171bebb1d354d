//! PTX text: its ISA version and target, each `.entry` with its parameters and what its body
//! declares (shared and local memory, launch bounds), and the module's `.global` and `.const`
//! variables with their initial bytes. Declarations are read as `ptxas` reads them;
//! instructions are not looked at (nothing is compiled).

use super::choose::{Arch, Offer, Variant};
use super::{Code, ComputeCapability, Contents, Global, Isa, Kernel, Param, Refusal};

/// The newest PTX ISA peerpool's executor reads: CUDA 13.5's.
pub const NEWEST_ISA: Isa = (9, 5);

/// The newest PTX ISA a driver of CUDA `version` (`cuDriverGetVersion`'s `1000 * major + 10 *
/// minor`) compiles, as NVIDIA's release notes pair them: CUDA 11.x reads ISA 7.x and 12.x
/// reads 8.x, minor for minor, but for 12.6 (8.5) and 12.7 to 12.9 (8.6 to 8.8); 13.x reads
/// 9.x. Older drivers are not simulated and are taken as 11.0.
pub fn driver_isa(version: i32) -> Isa {
    let (major, minor) = (version / 1000, (version % 1000 / 10) as u32);
    match major {
        ..=11 => (7, if major == 11 { minor } else { 0 }),
        12 => (8, if minor <= 5 { minor } else { minor - 1 }),
        _ => (9 + (major - 13) as u32, minor),
    }
}

/// The CUDA release whose driver first compiles PTX ISA `isa`, as `cuDriverGetVersion` writes it.
pub fn driver_for_isa(isa: Isa) -> i32 {
    (11_000..=99_990).step_by(10).find(|&v| driver_isa(v) >= isa).unwrap_or(99_990)
}

/// What `text` (up to its first NUL, if any) declares, compiled for a device of compute
/// capability `device` by a driver that compiles PTX up to ISA `isa`.
pub fn read(text: &[u8], device: ComputeCapability, isa: Isa) -> Result<Contents, Refusal> {
    let whole = self::text(text).ok_or(Refusal::NotAnImage("text that is not UTF-8"))?;
    let Header { version, target, rest } = header(whole)?;
    let version = isa_version(&version).ok_or_else(|| Refusal::InvalidPtx(format!(".version {version}")))?;
    if version > isa {
        return Err(Refusal::PtxVersion(version, isa));
    }
    let target = parse_target(&target).ok_or_else(|| Refusal::InvalidPtx(format!(".target {target}")))?;
    if !target.ptx_runs_on(device) {
        return Err(Refusal::PtxTarget(target.cc.0, target.cc.1));
    }
    let mut module = Module::default();
    for statement in statements(&rest)? {
        module.declare(&statement)?;
    }
    let kernels = module.entries.iter().map(|e| e.kernel(&module.shared)).collect();
    let (globals, const_bytes, ptx) = (module.globals, module.const_end, Some(std::sync::Arc::from(whole)));
    let offer = Offer { ptx: true, arch: target };
    Ok(Contents { code: Code::Ptx(target.cc), kernels, globals, const_bytes, ptx, chosen: (offer, Some(offer)) })
}

/// A PTX text without its comments, split: its `.version` and its `.target` (the words after
/// each), and the rest, with those lines, `.address_size`, `.file` and `.loc` (which end at
/// their line, without a `;`) blanked: each line where it was.
pub(super) struct Header {
    pub(super) version: String,
    pub(super) target: String,
    pub(super) rest: String,
}

pub(super) fn header(whole: &str) -> Result<Header, Refusal> {
    // The directives' lines are blanked where they stand, in the one copy without comments.
    let mut text = strip_comments(whole).into_bytes();
    let (mut version, mut target) = (None, None);
    let mut start = 0;
    while start < text.len() {
        let end = text[start..].iter().position(|&c| c == b'\n').map_or(text.len(), |n| start + n);
        // A line of a `str` cut at a newline is UTF-8 itself.
        let mut words = std::str::from_utf8(&text[start..end]).unwrap_or_default().split_whitespace();
        let drop = match words.next() {
            Some(".version") => {
                version = words.next().map(str::to_owned);
                true
            }
            Some(".target") => {
                target = Some(words.collect::<Vec<_>>().join(" "));
                true
            }
            Some(".address_size" | ".file" | ".loc") => true,
            _ => false,
        };
        if drop {
            text[start..end].fill(b' ');
        }
        start = end + 1;
    }
    let rest = String::from_utf8(text).map_err(|_| Refusal::NotAnImage("text that is not UTF-8"))?;
    match (version, target) {
        (Some(version), Some(target)) => Ok(Header { version, target, rest }),
        _ => Err(Refusal::NotAnImage("text without a PTX .version and .target")),
    }
}

/// PTX text: the bytes up to the first NUL, when they are UTF-8.
pub fn text(image: &[u8]) -> Option<&str> {
    std::str::from_utf8(image.split(|&c| c == 0).next().unwrap_or_default()).ok()
}

/// The target a `.target` directive's words name first (`sm_90a, texmode_independent`):
/// architecture-specific with `a` (that compute capability only), family-specific with `f`.
pub(super) fn parse_target(words: &str) -> Option<Arch> {
    let sm = words.split([',', ' ']).next()?.strip_prefix("sm_")?;
    let digits: String = sm.chars().take_while(char::is_ascii_digit).collect();
    let variant = match sm[digits.len()..].chars().next() {
        Some('a') => Variant::Arch,
        Some(_) => Variant::Family,
        None => Variant::Plain,
    };
    let n: i32 = digits.parse().ok()?;
    Some(Arch { cc: (n / 10, n % 10), variant })
}

pub(super) fn isa_version(v: &str) -> Option<(u32, u32)> {
    let (major, minor) = v.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// `text` without `//` and `/* */` comments (a quoted string keeps what it holds).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let (mut i, mut copied, mut quoted) = (0, 0, false);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                quoted = !quoted;
                i += 1;
            }
            // A line comment: up to its newline, which stays.
            b'/' if !quoted && bytes.get(i + 1) == Some(&b'/') => {
                out.push_str(&text[copied..i]);
                i = text[i..].find('\n').map_or(bytes.len(), |end| i + end);
                copied = i;
            }
            // A block comment: one space in its place.
            b'/' if !quoted && bytes.get(i + 1) == Some(&b'*') => {
                out.push_str(&text[copied..i]);
                out.push(' ');
                i = text[i + 2..].find("*/").map_or(bytes.len(), |end| i + 2 + end + 2);
                copied = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Words (`.u32`, `pp_test_add`, `0f40000000`, `%r1`) and single punctuation characters.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    pieces(text).filter(|p| !p.starts_with(char::is_whitespace))
}

/// `text` cut into its tokens and the runs of whitespace between them, which together are the
/// whole text: what [`tokens`] reads and a rewrite of names keeps.
pub(super) fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.');
    let mut rest = text;
    std::iter::from_fn(move || {
        let c = rest.chars().next()?;
        let len = match c {
            '"' => rest[1..].find('"').map_or(rest.len(), |end| end + 2),
            c if word(c) => rest.find(|c: char| !word(c)).unwrap_or(rest.len()),
            c if c.is_whitespace() => rest.find(|c: char| !c.is_whitespace()).unwrap_or(rest.len()),
            c => c.len_utf8(),
        };
        let piece = &rest[..len];
        rest = &rest[len..];
        Some(piece)
    })
}

/// A module-level statement: what precedes its body or `;`, and its body's text (`.entry`,
/// `.func`), read only where it is needed.
pub(super) struct Statement<'t> {
    pub(super) head: Vec<&'t str>,
    pub(super) body: Option<&'t str>,
}

/// The module-level statements of `text`, read a token at a time (a module's code is not held
/// as tokens: a large kernel's would be many times its text). A `{` after `=` opens an
/// initializer, any other a body.
pub(super) fn statements(text: &str) -> Result<Vec<Statement<'_>>, Refusal> {
    let mut out = Vec::new();
    let mut tokens = tokens(text);
    let mut head = Vec::new();
    let mut initialised = false;
    while let Some(token) = tokens.next() {
        match token {
            ";" => {
                out.push(Statement { head: std::mem::take(&mut head), body: None });
                initialised = false;
            }
            "=" => {
                initialised = true;
                head.push(token);
            }
            "{" if initialised => {
                head.push(token);
                let mut depth = 1usize;
                while depth > 0 {
                    let t = tokens.next().ok_or_else(|| Refusal::InvalidPtx("an unmatched {".into()))?;
                    depth = match t {
                        "{" => depth + 1,
                        "}" => depth - 1,
                        _ => depth,
                    };
                    head.push(t);
                }
            }
            "{" => {
                // The body's text: from after its `{` to before the `}` that closes it.
                let from = offset(text, token) + 1;
                let mut depth = 1usize;
                let to = loop {
                    let t = tokens.next().ok_or_else(|| Refusal::InvalidPtx("an unmatched {".into()))?;
                    match t {
                        "{" => depth += 1,
                        "}" if depth == 1 => break offset(text, t),
                        "}" => depth -= 1,
                        _ => {}
                    }
                };
                out.push(Statement { head: std::mem::take(&mut head), body: Some(&text[from..to]) });
                initialised = false;
            }
            "}" => return Err(Refusal::InvalidPtx("an unmatched }".into())),
            _ => head.push(token),
        }
    }
    if !head.is_empty() {
        return Err(Refusal::InvalidPtx("a statement without its end".into()));
    }
    Ok(out)
}

/// Where `piece`, a slice of `text`, starts in it.
fn offset(text: &str, piece: &str) -> usize {
    piece.as_ptr() as usize - text.as_ptr() as usize
}

/// The index of the `}` (or `)`, `]`) that closes the bracket at `open`.
pub(super) fn closing(tokens: &[&str], open: usize) -> Result<usize, Refusal> {
    let (opening, close) = match tokens.get(open) {
        Some(&"(") => ("(", ")"),
        Some(&"[") => ("[", "]"),
        _ => ("{", "}"),
    };
    let mut depth = 0usize;
    for (i, &t) in tokens.iter().enumerate().skip(open) {
        if t == opening {
            depth += 1;
        } else if t == close {
            depth -= 1;
            if depth == 0 {
                return Ok(i);
            }
        }
    }
    Err(Refusal::InvalidPtx(format!("an unmatched {opening}")))
}

/// Dotted words split into their parts: `.v4.f32` is `.v4` `.f32`.
fn split_directives<'t>(tokens: &[&'t str]) -> Vec<&'t str> {
    let mut out = Vec::new();
    for &t in tokens {
        match t.strip_prefix('.') {
            Some(rest) if rest.contains('.') => {
                let mut at = 0;
                for part in rest.split('.') {
                    out.push(&t[at..at + 1 + part.len()]);
                    at += 1 + part.len();
                }
            }
            _ => out.push(t),
        }
    }
    out
}

/// The bytes of a PTX fundamental type, if `t` is one.
fn type_size(t: &str) -> Option<u64> {
    Some(match t {
        ".b8" | ".u8" | ".s8" | ".pred" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" | ".tf32" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" | ".texref" | ".samplerref" | ".surfref" => 8,
        ".b128" => 16,
        _ => return None,
    })
}

/// One declared variable or parameter: its name, bytes, alignment and initializer tokens.
#[derive(Default)]
pub(super) struct Declared<'t> {
    pub(super) name: &'t str,
    size: u64,
    align: u64,
    element: u64,
    float: bool,
    /// Declared `.attribute(.managed)`: a `__managed__` variable.
    managed: bool,
    init: Vec<&'t str>,
}

/// Reads `[.align N] [.vN] .type name[dims]* [= init]` from `tokens` (state space and linkage
/// words are passed over; `.align` after `.ptr` is the pointee's and is passed over too).
fn declared<'t>(tokens: &[&'t str]) -> Result<Declared<'t>, Refusal> {
    let bad = |what: &str| Refusal::InvalidPtx(format!("a declaration with {what}"));
    let tokens = split_directives(tokens);
    let mut d = Declared::default();
    let (mut vector, mut element, mut align, mut pointer) = (1u64, None, None, false);
    let mut i = 0;
    while let Some(&t) = tokens.get(i) {
        i += 1;
        match t {
            ".ptr" => pointer = true,
            ".align" => {
                let n: u64 = tokens.get(i).and_then(|n| n.parse().ok()).ok_or_else(|| bad("a bad .align"))?;
                i += 1;
                if !pointer {
                    align = Some(n);
                }
            }
            ".v2" | ".v4" | ".v8" => vector = t[2..].parse().unwrap_or(1),
            ".attribute" if tokens.get(i) == Some(&"(") => {
                let end = closing(&tokens, i)?;
                d.managed |= tokens[i + 1..end].contains(&".managed");
                i = end + 1;
            }
            t if type_size(t).is_some() => {
                element = type_size(t);
                d.float = t.starts_with(".f");
            }
            t if t.starts_with('.') => {}
            name => {
                d.name = name;
                break;
            }
        }
    }
    let element = element.ok_or_else(|| bad("no type"))?;
    let mut count = vector;
    let mut open_dimension = false;
    while tokens.get(i) == Some(&"[") {
        let end = closing(&tokens, i)?;
        match &tokens[i + 1..end] {
            [] => open_dimension = true,
            [n] => {
                count = count
                    .checked_mul(n.parse().map_err(|_| bad("a bad dimension"))?)
                    .ok_or_else(|| bad("a huge size"))?
            }
            _ => return Err(bad("a bad dimension")),
        }
        i = end + 1;
    }
    if tokens.get(i) == Some(&"=") {
        d.init = tokens[i + 1..].to_vec();
        if open_dimension {
            count = count.max(d.init.iter().filter(|t| !matches!(**t, "{" | "}" | "," | "-")).count() as u64);
        }
    }
    d.element = element;
    d.size = count.checked_mul(element).ok_or_else(|| bad("a huge size"))?;
    d.align = align.unwrap_or(element * vector).max(1);
    Ok(d)
}

/// The initial bytes of `d` from its initializer: numbers each `d.element` bytes wide; an
/// address (`generic(x)`, a name, either `+ offset`) is zero, as nothing is linked.
fn initial_bytes(d: &Declared) -> Vec<u8> {
    let mut out = Vec::new();
    let mut negative = false;
    let mut offset = false;
    for &t in &d.init {
        if matches!(t, "{" | "}" | "," | "(" | ")" | "generic") {
            continue;
        }
        // `+` and the offset after it belong to the address before them.
        if t == "+" || std::mem::take(&mut offset) {
            offset = t == "+";
            continue;
        }
        if t == "-" {
            negative = true;
            continue;
        }
        let bits = number_bits(t, d.element, d.float, negative).unwrap_or(0);
        negative = false;
        out.extend_from_slice(&bits.to_le_bytes()[..d.element.min(8) as usize]);
        if out.len() as u64 >= d.size {
            break;
        }
    }
    out.truncate(d.size as usize);
    out
}

/// A PTX constant as the bits of an element `width` bytes wide: `0f`/`0d` hexadecimal floats,
/// hexadecimal, octal, binary and decimal integers (a `U` suffix allowed), decimal floats.
fn number_bits(t: &str, width: u64, float: bool, negative: bool) -> Option<u64> {
    let t = t.trim_end_matches('U');
    let lower = t.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0f").or_else(|| lower.strip_prefix("0d")) {
        return u64::from_str_radix(hex, 16).ok();
    }
    let integer = if let Some(hex) = lower.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok()
    } else if let Some(bin) = lower.strip_prefix("0b") {
        u64::from_str_radix(bin, 2).ok()
    } else if lower.len() > 1 && lower.starts_with('0') && lower.bytes().all(|b| b.is_ascii_digit()) {
        u64::from_str_radix(&lower[1..], 8).ok()
    } else {
        lower.parse::<u64>().ok()
    };
    match (integer, float) {
        (Some(v), false) => Some(if negative { v.wrapping_neg() } else { v }),
        _ => {
            let v: f64 = lower.parse().ok().or(integer.map(|i| i as f64))?;
            let v = if negative { -v } else { v };
            Some(if width == 4 { (v as f32).to_bits() as u64 } else { v.to_bits() })
        }
    }
}

/// What the module-level statements declared.
#[derive(Default)]
struct Module<'t> {
    entries: Vec<Entry<'t>>,
    globals: Vec<Global>,
    /// Module-level `.shared` variables: name and bytes.
    shared: Vec<(&'t str, u64)>,
    const_end: u32,
}

/// An `.entry` with a body.
struct Entry<'t> {
    name: &'t str,
    params: Vec<Param>,
    /// Its directives between the parameters and the body (`.maxntid 256, 1, 1`).
    directives: Vec<&'t str>,
    body: &'t str,
}

impl<'t> Module<'t> {
    fn declare(&mut self, s: &Statement<'t>) -> Result<(), Refusal> {
        let Some(first) = s.head.iter().position(|t| !matches!(*t, ".visible" | ".weak" | ".common")) else {
            return Ok(());
        };
        let head = &s.head[first..];
        match (head.first().copied(), s.body) {
            (Some(".entry"), Some(body)) => self.entry(head, body),
            (Some(".global" | ".const"), None) => self.variables(head),
            (Some(".shared"), None) => {
                for d in declarators(&head[1..])? {
                    self.shared.push((d.name, d.size));
                }
                Ok(())
            }
            _ => Ok(()), // `.extern` declarations, `.func`, `.pragma`, debug sections
        }
    }

    fn entry(&mut self, head: &[&'t str], body: &'t str) -> Result<(), Refusal> {
        let name = *head.get(1).ok_or_else(|| Refusal::InvalidPtx(".entry without a name".into()))?;
        let (params, directives) = match head.get(2) {
            Some(&"(") => {
                let end = closing(head, 2)?;
                (parameters(&head[3..end])?, head[end + 1..].to_vec())
            }
            _ => (Vec::new(), head[2..].to_vec()),
        };
        if self.entries.iter().any(|e| e.name == name) {
            return Err(Refusal::InvalidPtx(format!("{name} is declared twice")));
        }
        self.entries.push(Entry { name, params, directives, body });
        Ok(())
    }

    fn variables(&mut self, head: &[&'t str]) -> Result<(), Refusal> {
        let constant = head[0] == ".const";
        for d in declarators(&head[1..])? {
            if constant {
                let start = u64::from(self.const_end).next_multiple_of(d.align);
                self.const_end = u32::try_from(start.saturating_add(d.size)).unwrap_or(u32::MAX);
            }
            let addresses = d.init.iter().any(|t| t.starts_with(|c: char| c.is_alphabetic() || c == '_' || c == '$'));
            let (name, size, init, managed) = (d.name.to_owned(), d.size, initial_bytes(&d), d.managed);
            self.globals.push(Global { name, size, init, addresses, managed });
        }
        Ok(())
    }
}

/// The declarators of `type a, b[4] = {..}`: each with the qualifiers before the first.
pub(super) fn declarators<'t>(tokens: &[&'t str]) -> Result<Vec<Declared<'t>>, Refusal> {
    let first_name =
        tokens.iter().position(|t| !t.starts_with('.') && t.parse::<u64>().is_err() && *t != "(" && *t != ")");
    let Some(first_name) = first_name else { return Ok(Vec::new()) };
    let qualifiers = &tokens[..first_name];
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = first_name;
    for (i, &t) in tokens.iter().enumerate().skip(first_name) {
        match t {
            "{" => depth += 1,
            "}" => depth = depth.saturating_sub(1),
            "," if depth == 0 => {
                out.push(declared(&[qualifiers, &tokens[start..i]].concat())?);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(declared(&[qualifiers, &tokens[start..]].concat())?);
    Ok(out)
}

/// An entry's parameters, each aligned to its own alignment after the one before.
fn parameters(tokens: &[&str]) -> Result<Vec<Param>, Refusal> {
    let mut out = Vec::new();
    let mut offset = 0u64;
    for decl in tokens.split(|t| *t == ",").filter(|d| !d.is_empty()) {
        let d = declared(decl)?;
        offset = offset.next_multiple_of(d.align);
        let (o, s) = (usize::try_from(offset), usize::try_from(d.size));
        let (Ok(o), Ok(s)) = (o, s) else { return Err(Refusal::InvalidPtx("a huge parameter".into())) };
        out.push(Param { offset: o, size: s });
        offset = offset.saturating_add(d.size);
    }
    Ok(out)
}

impl Entry<'_> {
    /// What the driver reports of the entry: shared memory it declares or uses, its launch
    /// bounds and register limit. Local memory is not counted: `ptxas` keeps small local arrays
    /// in registers (an H200 reported 0 bytes for a 200-byte `__local_depot`).
    fn kernel(&self, module_shared: &[(&str, u64)]) -> Kernel {
        let mut shared = 0u64;
        // The module's shared variables the body names, each counted once.
        let mut named = vec![false; module_shared.len()];
        let mut tokens = tokens(self.body);
        let mut starts = true;
        while let Some(t) = tokens.next() {
            if t == ".shared" && starts {
                let declaration: Vec<&str> = tokens.by_ref().take_while(|t| *t != ";").collect();
                if let Ok(d) = declared(&declaration) {
                    shared = shared.next_multiple_of(d.align).saturating_add(d.size);
                }
                continue;
            }
            starts = matches!(t, ";" | "{" | "}");
            if let Some(i) = module_shared.iter().position(|&(name, _)| name == t) {
                named[i] = true;
            }
        }
        for (&(_, size), named) in module_shared.iter().zip(named) {
            if named {
                shared = shared.saturating_add(size);
            }
        }
        let numbers = |directive: &str| -> Option<Vec<u64>> {
            let at = self.directives.iter().position(|t| *t == directive)?;
            let values: Vec<u64> = self.directives[at + 1..]
                .iter()
                .take_while(|t| !t.starts_with('.'))
                .filter_map(|t| t.parse().ok())
                .collect();
            (!values.is_empty()).then_some(values)
        };
        let threads = numbers(".maxntid").or_else(|| numbers(".reqntid")).map(|v| v.iter().product::<u64>());
        Kernel {
            name: self.name.to_owned(),
            params: self.params.clone(),
            shared_bytes: u32::try_from(shared).unwrap_or(u32::MAX),
            local_bytes: 0,
            registers: numbers(".maxnreg").and_then(|v| u32::try_from(v[0]).ok()),
            max_threads: threads.map(|t| u32::try_from(t).unwrap_or(u32::MAX)),
            cluster: numbers(".reqnctapercluster")
                .map(|v| [0, 1, 2].map(|a| v.get(a).map_or(1, |&d| u32::try_from(d).unwrap_or(u32::MAX)))),
            explicit_cluster: self.directives.contains(&".explicitcluster"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = r#"
// Generated by NVIDIA NVVM Compiler
.version 9.0
.target sm_90
.address_size 64

	// .globl	pp_test_add
.global .align 4 .u32 pp_test_counter;
.const .align 4 .f32 pp_test_scale_by = 0f40000000;
.extern .shared .align 16 .b8 tile[];
.global .align 4 .b8 arr[40] = {1, 0, 0, 0, 2, 0, 0, 0, 3};
.const .align 4 .b8 cvals[16] = {7, 0, 0, 0, 8};
.shared .align 4 .b8 scratch[64];

.visible .entry pp_test_add(
	.param .u64 pp_test_add_param_0,
	.param .u32 pp_test_add_param_1,
	.param .u32 pp_test_add_param_2
)
{
	.reg .b64 	%rd<6>;
	ld.param.u64 	%rd1, [pp_test_add_param_0];
	ret;
}
.visible .entry k_bounded(
	.param .u64 .ptr .align 1 k_bounded_param_0,
	.param .u8 k_bounded_param_1,
	.param .f64 k_bounded_param_2,
	.param .u16 k_bounded_param_3
)
.maxntid 256, 1, 1
{
	.local .align 8 .b8 	__local_depot1[200];
	.shared .align 4 .b8 _ZZ8k_staticE1s[400];
	mov.u32 %r1, scratch;
	ret;
}
.visible .entry k_struct(
	.param .align 4 .b8 k_struct_param_0[160],
	.param .u64 k_struct_param_1
)
{ ret; }
.func helper() { ret; }
"#;

    fn read90(text: &str) -> Result<Contents, Refusal> {
        read(text.as_bytes(), (9, 0), NEWEST_ISA)
    }

    #[test]
    fn entries_with_their_parameters_as_the_driver_lays_them_out() {
        let c = read90(PTX).unwrap();
        let names: Vec<&str> = c.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["pp_test_add", "k_bounded", "k_struct"], "no .func");
        let layout = |name: &str| -> Vec<(usize, usize)> {
            c.kernel(name.as_bytes()).unwrap().params.iter().map(|p| (p.offset, p.size)).collect()
        };
        // As an H200 reported them (images.txt and a probe of these kernels).
        assert_eq!(layout("pp_test_add"), [(0, 8), (8, 4), (12, 4)]);
        assert_eq!(layout("k_bounded"), [(0, 8), (8, 1), (16, 8), (24, 2)]);
        assert_eq!(layout("k_struct"), [(0, 160), (160, 8)]);
        let bounded = c.kernel(b"k_bounded").unwrap();
        assert_eq!((bounded.max_threads, bounded.shared_bytes), (Some(256), 400 + 64));
        assert_eq!(c.kernel(b"pp_test_add").unwrap().shared_bytes, 0);
        assert_eq!(c.code, Code::Ptx((9, 0)));
    }

    #[test]
    fn globals_with_their_sizes_and_first_bytes() {
        let c = read90(PTX).unwrap();
        let g = |name: &str| c.global(name.as_bytes()).unwrap().clone();
        assert_eq!((g("pp_test_counter").size, g("pp_test_counter").init.len()), (4, 0));
        assert_eq!(g("pp_test_scale_by").init, 2.0f32.to_le_bytes());
        assert_eq!(g("arr").size, 40);
        assert_eq!(g("arr").init, [1, 0, 0, 0, 2, 0, 0, 0, 3]);
        assert_eq!(g("cvals").size, 16);
        assert!(c.global(b"tile").is_none(), "extern shared is dynamic, not a global");
        assert!(c.global(b"scratch").is_none());
        assert_eq!(c.const_bytes, 4 + 16);
    }

    #[test]
    fn initializers_of_every_form() {
        let c = read90(
            ".version 8.0\n.target sm_80\n.global .s32 a[3] = {-1, 0x10, 010};\n.global .f64 d = 1.5;\n\
             .global .u16 h[] = {1, 2, 3};\n.global .u64 p = generic(a);\n.global .u32 x, y = 7;\n\
             .global .u64 q[2] = {generic(a)+4, 9};",
        )
        .unwrap();
        let g = |name: &str| c.global(name.as_bytes()).unwrap().clone();
        assert_eq!(g("a").init, [255, 255, 255, 255, 16, 0, 0, 0, 8, 0, 0, 0]);
        assert_eq!(g("d").init, 1.5f64.to_le_bytes());
        assert_eq!((g("h").size, g("h").init.len()), (6, 6));
        assert_eq!(g("p").init, [0; 8], "an address is not linked");
        assert!(g("p").addresses && !g("a").addresses && !g("d").addresses, "but it is marked");
        assert_eq!(g("q").init, [[0; 8], 9u64.to_le_bytes()].concat(), "an offset is the address's");
        assert_eq!((g("x").size, g("y").init.as_slice()), (4, &[7, 0, 0, 0][..]));
    }

    #[test]
    fn what_is_not_ptx_or_not_for_this_device_is_refused() {
        assert!(matches!(read90("this is not PTX"), Err(Refusal::NotAnImage(_))));
        assert!(matches!(read(&[0xff, 0xfe], (9, 0), NEWEST_ISA), Err(Refusal::NotAnImage(_))));
        assert_eq!(read90(".version 9.9\n.target sm_90\n"), Err(Refusal::PtxVersion((9, 9), (9, 5))));
        let cuda_13_0 = driver_isa(13_000);
        assert_eq!(read(b".version 9.5\n.target sm_90\n", (9, 0), cuda_13_0), Err(Refusal::PtxVersion((9, 5), (9, 0))));
        assert!(read(b".version 9.0\n.target sm_90\n", (9, 0), cuda_13_0).is_ok());
        assert_eq!(read90(".version 9.0\n.target sm_100\n"), Err(Refusal::PtxTarget(10, 0)));
        assert_eq!(read(b".version 9.0\n.target sm_90a\n", (10, 0), NEWEST_ISA), Err(Refusal::PtxTarget(9, 0)));
        assert!(read(b".version 9.0\n.target sm_90a\n", (9, 0), NEWEST_ISA).is_ok());
        assert!(read90(".version 7.0\n.target sm_70\n").is_ok(), "an older target compiles");
        assert!(matches!(read90(".version 9.0\n.target sm_90\n.entry k( { ret; }"), Err(Refusal::InvalidPtx(_))));
        assert!(matches!(read90(".version 9.0\n.target sm_90\n}"), Err(Refusal::InvalidPtx(_))));
    }

    #[test]
    fn peerpools_own_ptx_reads_as_its_kernels_declare() {
        let c = read(peerpool_kernels::PTX.as_bytes(), (9, 0), NEWEST_ISA).unwrap();
        for kernel in peerpool_kernels::Kernel::ALL {
            let read = c.kernel(kernel.entry().as_bytes()).unwrap_or_else(|| panic!("{}", kernel.entry()));
            assert_eq!(read.params.len(), kernel.params().len(), "{}", kernel.entry());
            for (p, declared) in read.params.iter().zip(kernel.params()) {
                assert_eq!(p.size, declared.kind.width(), "{}", kernel.entry());
            }
        }
    }

    #[test]
    fn each_driver_compiles_its_releases_isa() {
        let pairs = [(11_080, (7, 8)), (12_000, (8, 0)), (12_040, (8, 4)), (12_050, (8, 5)), (12_060, (8, 5))];
        let later = [(12_080, (8, 7)), (12_090, (8, 8)), (13_000, (9, 0)), (13_050, (9, 5)), (14_000, (10, 0))];
        for (driver, isa) in pairs.into_iter().chain(later) {
            assert_eq!(driver_isa(driver), isa, "CUDA {driver}");
        }
        assert_eq!(driver_for_isa((9, 5)), 13_050);
        assert_eq!(driver_for_isa((8, 6)), 12_070);
        assert_eq!(driver_for_isa((9, 0)), 13_000);
        assert_eq!(
            driver_for_isa(NEWEST_ISA),
            crate::DRIVER_VERSION,
            "the default driver reads what the executor does"
        );
    }

    #[test]
    fn comments_and_strings() {
        assert_eq!(strip_comments("a // b\nc /* d\n e */ f \"//x\""), "a \nc   f \"//x\"");
        assert_eq!(
            tokens(".v4.f32 x[2]={1,2};").collect::<Vec<_>>(),
            [".v4.f32", "x", "[", "2", "]", "=", "{", "1", ",", "2", "}", ";"]
        );
        assert_eq!(split_directives(&[".v4.f32", "x"]), [".v4", ".f32", "x"]);
    }
}
