//! The layers of `host/src` as ARCHITECTURE.md lists them, checked against the imports: no
//! module names one of a layer above its own (`use crate::...`, a `crate::` path anywhere in
//! code, or a `super::` that leaves the module). The list is read from ARCHITECTURE.md, so the
//! document and this check cannot disagree; every module must be in it exactly once. Also
//! ARCHITECTURE.md's table of where `System`'s public methods live, against the code, and in
//! every crate of `host/` and in `fixtures/`, no circle of files that import each other.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The header row of the layer table in ARCHITECTURE.md; the table's rows follow it.
const TABLE_HEADER: &str = "| layer | modules of `host/src` |";

/// Modules by layer index (0 is the bottom row).
fn layers(architecture: &str) -> Result<BTreeMap<String, usize>, String> {
    let mut lines = architecture.lines().skip_while(|line| line.trim() != TABLE_HEADER);
    if lines.next().is_none() {
        return Err(format!("ARCHITECTURE.md has no table headed {TABLE_HEADER}"));
    }
    let mut layers = BTreeMap::new();
    for (index, row) in lines.skip(1).take_while(|line| line.starts_with('|')).enumerate() {
        let cells: Vec<&str> = row.split('|').collect();
        let modules = cells.get(2).ok_or_else(|| format!("layer row without modules: {row}"))?;
        for module in modules.split('`').skip(1).step_by(2) {
            if layers.insert(module.to_owned(), index).is_some() {
                return Err(format!("`{module}` is listed twice"));
            }
        }
    }
    Ok(layers)
}

/// The crate root's re-exports: name -> the module it comes from (`None`: another crate's).
fn root_names(lib: &str) -> BTreeMap<String, Option<String>> {
    let mut names = BTreeMap::new();
    for line_start in lib.match_indices("\npub use ").map(|(at, _)| at + "\npub use ".len()) {
        let statement = &lib[line_start..];
        let statement = statement[..statement.find(';').unwrap_or(0)].split_whitespace().collect::<Vec<_>>().join(" ");
        let statement = statement.replace(", ", ",").replace("{ ", "{").replace(" }", "}");
        let (module, rest) = statement.split_once("::").unwrap_or((statement.as_str(), ""));
        let ours = !rest.is_empty() && !["cudarc", "peerpool_kernels", "std"].contains(&module);
        let leaves: Vec<&str> = match rest.rsplit_once("::") {
            _ if rest.contains('{') => rest.trim_matches(['{', '}']).split(',').collect(),
            Some((_, leaf)) => vec![leaf],
            None if rest.is_empty() => vec![module], // `pub use other_crate as name`
            None => vec![rest],
        };
        for leaf in leaves.into_iter().filter(|l| !l.is_empty()) {
            let name = leaf.rsplit(" as ").next().unwrap_or(leaf);
            names.insert(name.to_owned(), ours.then(|| module.to_owned()));
        }
    }
    names
}

/// The code of a file: comments and string literals blanked (so `crate::` in prose is not an
/// import), line structure kept.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_string, mut in_comment) = (false, false);
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                in_comment = false;
                out.push('\n');
            }
            _ if in_comment => {}
            '\\' if in_string => {
                chars.next();
            }
            '"' => in_string = !in_string,
            _ if in_string => {}
            '/' if chars.peek() == Some(&'/') => in_comment = true,
            // A char literal holding a quote would open a string: skip `'"'`.
            '\'' if chars.peek() == Some(&'"') => {
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// The module path of a file under `host/src`: `grant/verify.rs` is `[grant, verify]`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut path: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let file = path.pop().unwrap_or_default();
    if file != "mod.rs" {
        path.push(file.trim_end_matches(".rs").to_owned());
    }
    path
}

/// The top-level modules a file names through `crate::` and `super::` paths, with the line.
fn imports(
    relative: &Path,
    text: &str,
    root: &BTreeMap<String, Option<String>>,
    modules: &BTreeSet<String>,
) -> Result<Vec<(usize, String)>, String> {
    let file_module = module_path(relative);
    let code = code_only(text);
    let mut found = Vec::new();
    // Inline `mod name {` blocks (rustfmt closes them with a `}` at the same indentation).
    let mut inline: Vec<(String, String)> = Vec::new();
    for (number, line) in code.lines().enumerate() {
        let indent = &line[..line.len() - line.trim_start().len()];
        if let Some((_, close)) = inline.last()
            && line == close
        {
            inline.pop();
            continue;
        }
        let trimmed = line.trim_start().trim_start_matches("pub ").trim_start_matches("pub(crate) ");
        if let Some(name) = trimmed.strip_prefix("mod ").and_then(|m| m.strip_suffix(" {")) {
            inline.push((name.to_owned(), format!("{indent}}}")));
            continue;
        }
        let mut module = file_module.clone();
        module.extend(inline.iter().map(|(name, _)| name.clone()));
        for target in names_in_line(line, &code, number, &module)? {
            let resolved = match target {
                Target::Root(name) if modules.contains(&name) => Some(name),
                Target::Root(name) => match root.get(&name) {
                    Some(module) => module.clone(),
                    None => {
                        return Err(format!(
                            "{}:{}: `crate::{name}` is not a module or a re-export",
                            relative.display(),
                            number + 1
                        ));
                    }
                },
                Target::Inside => None,
            };
            if let Some(target) = resolved {
                found.push((number + 1, target));
            }
        }
    }
    Ok(found)
}

enum Target {
    /// A name at the crate root: a module or a re-export.
    Root(String),
    /// Somewhere inside the file's own top-level module.
    Inside,
}

/// The targets of the `crate::` and `super::` paths that start on one line.
fn names_in_line(line: &str, code: &str, number: usize, module: &[String]) -> Result<Vec<Target>, String> {
    let mut targets = Vec::new();
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    for (at, _) in line.match_indices("crate::") {
        if at > 0 && line[..at].ends_with(|c: char| is_ident(c) || c == '$') {
            continue; // `pub(crate)`, `$crate::`, `peerpool_crate::`
        }
        targets.extend(path_heads(&line[at + "crate::".len()..], code, number)?.into_iter().map(Target::Root));
    }
    for (at, _) in line.match_indices("super::") {
        if at > 0 && line[..at].ends_with(|c: char| is_ident(c) || c == ':') {
            continue; // counted with the first `super::` of the path
        }
        let mut rest = &line[at..];
        let mut up = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            (rest, up) = (r, up + 1);
        }
        if up < module.len() {
            targets.push(Target::Inside);
        } else {
            targets.extend(path_heads(rest, code, number)?.into_iter().map(Target::Root));
        }
    }
    Ok(targets)
}

/// The first segments of a path's rest: `grant::Grant` gives `grant`; `{a::b, C}` gives `a`
/// and `C` (the group may span lines); a macro (`name!`) gives nothing.
fn path_heads(rest: &str, code: &str, number: usize) -> Result<Vec<String>, String> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    if rest.starts_with('{') {
        let from: usize = code.lines().take(number).map(|l| l.len() + 1).sum::<usize>()
            + code.lines().nth(number).map_or(0, |l| l.len() - rest.len());
        let group = &code[from + 1..];
        let (mut depth, mut end) = (0, None);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    end = Some(i);
                    break;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        let group = &group[..end.ok_or_else(|| format!("line {}: unclosed `{{`", number + 1))?];
        let mut heads = Vec::new();
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in group.char_indices().chain([(group.len(), ',')]) {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    let item = group[start..i].trim();
                    let head: String = item.chars().take_while(|&c| is_ident(c)).collect();
                    if !head.is_empty() && head != "self" {
                        heads.push(head);
                    }
                    start = i + 1;
                }
                _ => {}
            }
        }
        return Ok(heads);
    }
    let head: String = rest.chars().take_while(|&c| is_ident(c)).collect();
    if head.is_empty() || rest[head.len()..].starts_with('!') {
        return Ok(Vec::new());
    }
    Ok(vec![head])
}

/// Every `.rs` file under `dir`, relative to it.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).expect("host/src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path.strip_prefix(dir).expect("under host/src").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Every import from a layer above the importer's, as `file:line: a (layer i) imports b (layer j)`.
fn violations(files: &[(PathBuf, String)], architecture: &str) -> Result<Vec<String>, String> {
    let layers = layers(architecture)?;
    let lib = files.iter().find(|(p, _)| p == Path::new("lib.rs")).ok_or("no lib.rs")?;
    let root = root_names(&lib.1);
    let modules: BTreeSet<String> =
        files.iter().filter(|(p, _)| p != Path::new("lib.rs")).map(|(p, _)| module_path(p)[0].clone()).collect();
    let listed: BTreeSet<String> = layers.keys().cloned().collect();
    if listed != modules {
        return Err(format!(
            "ARCHITECTURE.md's layers list {listed:?}, host/src has {modules:?}: every module is listed exactly once"
        ));
    }
    let mut out = Vec::new();
    for (path, text) in files.iter().filter(|(p, _)| p != Path::new("lib.rs")) {
        let from = &module_path(path)[0];
        for (line, to) in imports(path, text, &root, &modules)? {
            if layers[&to] > layers[from] {
                out.push(format!(
                    "host/src/{}:{line}: `{from}` (layer row {}) imports `{to}` (layer row {}), a layer above it",
                    path.display(),
                    layers[from] + 1,
                    layers[&to] + 1
                ));
            }
        }
    }
    Ok(out)
}

fn tree() -> (Vec<(PathBuf, String)>, String) {
    // At run time (cargo and nextest set it; an archive run elsewhere has it remapped): the
    // build's path may not exist where the tests run.
    let dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR: run through cargo test or nextest");
    let host = Path::new(&dir);
    let src = host.join("src");
    let files = sources(&src).into_iter().map(|p| (p.clone(), fs::read_to_string(src.join(&p)).unwrap())).collect();
    let architecture = fs::read_to_string(host.join("../ARCHITECTURE.md")).expect("ARCHITECTURE.md beside host/");
    (files, architecture)
}

#[test]
fn no_module_imports_a_layer_above_it() {
    let (files, architecture) = tree();
    let found = violations(&files, &architecture).unwrap();
    assert!(found.is_empty(), "imports against ARCHITECTURE.md's layers:\n{}", found.join("\n"));
}

#[test]
fn every_kind_of_upward_import_is_found() {
    let (files, architecture) = tree();
    let plant = |file: &str, line: &str| {
        let mut planted = files.clone();
        let (_, text) = planted.iter_mut().find(|(p, _)| p == Path::new(file)).expect("the file exists");
        text.push_str(line);
        violations(&planted, &architecture).unwrap()
    };
    // A plain import, a group, a re-export of the root, a path in code, and `super::` from a
    // top-level module's inline module all name the grant engine from below it.
    for (file, line) in [
        ("system.rs", "use crate::grant::Grant;\n"),
        ("system.rs", "use crate::{\n    context::CurrentContext,\n    ipc::ShareError,\n};\n"),
        ("error.rs", "use crate::GrantError;\n"),
        ("pool.rs", "fn f(_: crate::grant::Stage) {}\n"),
        ("memory.rs", "mod inner {\n    use super::super::grant::Grant;\n}\n"),
    ] {
        let found = plant(file, line);
        assert_eq!(found.len(), 1, "{file} + {line:?}: {found:?}");
        assert!(found[0].starts_with(&format!("host/src/{file}:")), "{found:?}");
    }
    // Downward, within a module, in comments, strings and macros: nothing to report.
    for (file, line) in [
        ("grant/verify.rs", "use crate::system::System as S;\nuse super::outcome::Grant as G;\n"),
        ("system.rs", "// use crate::ipc::ShareError;\nconst S: &str = \"crate::ipc::X\";\n"),
        ("driver/mod.rs", "crate::for_each_driver_call!(nothing);\n"),
    ] {
        assert_eq!(plant(file, line), Vec::<String>::new(), "{file} + {line:?}");
    }
    // The root's re-exports, renamed ones and other crates' included.
    let root = root_names(
        "//!\npub use grant::{\n    Grant, Stage as GrantStage,\n};\npub use driver::codes::CudaCode;\npub use other as alias;\n",
    );
    let expected =
        [("Grant", Some("grant")), ("GrantStage", Some("grant")), ("CudaCode", Some("driver")), ("alias", None)];
    assert_eq!(root, expected.into_iter().map(|(n, m)| (n.to_owned(), m.map(str::to_owned))).collect());
    // A module missing from the list is an error of its own.
    let mut planted = files.clone();
    planted.push((PathBuf::from("unlisted.rs"), String::new()));
    assert!(violations(&planted, &architecture).unwrap_err().contains("every module is listed"));
}

/// Header of ARCHITECTURE.md's table of where `System`'s public methods live.
const SURFACE_HEADER: &str = "| concern | file | methods |";

/// Every public method of an `impl System` block, by file (`host/src`-relative).
fn system_methods(files: &[(PathBuf, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in files {
        let mut inside = false;
        for line in text.lines() {
            if line == "impl System {" {
                inside = true;
            } else if line == "}" {
                inside = false;
            } else if inside
                && let Some(rest) = line.strip_prefix("    pub fn ").or_else(|| line.strip_prefix("    pub unsafe fn "))
            {
                let name: String = rest.chars().take_while(|&c| c.is_ascii_alphanumeric() || c == '_').collect();
                out.entry(path.display().to_string()).or_default().insert(name);
            }
        }
    }
    out
}

#[test]
fn every_public_system_method_is_in_the_file_architecture_names() {
    let (files, architecture) = tree();
    let mut listed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let rows = architecture.lines().skip_while(|l| l.trim() != SURFACE_HEADER).skip(2);
    for row in rows.take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let file = cells[2].trim_matches('`').to_owned();
        let methods = cells[3].split(", ").map(|m| m.trim_matches('`').to_owned());
        listed.entry(file).or_default().extend(methods);
    }
    assert!(!listed.is_empty(), "ARCHITECTURE.md has no table headed {SURFACE_HEADER}");
    assert_eq!(system_methods(&files), listed, "System's public methods (left) against ARCHITECTURE.md (right)");
}

/// The paths a file names through `super::` or `crate::` (in `use` statements, braces
/// expanded, and anywhere in code), as module paths from the crate root, lower-case segments
/// only (a type or a value ends one).
fn named_paths(relative: &Path, text: &str) -> Vec<Vec<String>> {
    let mut own = module_path(relative);
    if relative.file_name().is_some_and(|f| f == "mod.rs" || f == "lib.rs") {
        own.push(String::new()); // `super` of a mod.rs is its directory's parent
    }
    let code = code_only(text);
    let mut out = Vec::new();
    let starts = code.match_indices("crate::").chain(code.match_indices("super::")).map(|(at, _)| at);
    for at in starts.filter(|&at| !code[..at].ends_with("super::") && !code[..at].ends_with("crate::")) {
        let mut rest = &code[at..];
        let mut base: Vec<String> = if rest.starts_with("crate::") { Vec::new() } else { own.clone() };
        if rest.starts_with("crate::") {
            rest = &rest["crate::".len()..];
        }
        while let Some(after) = rest.strip_prefix("super::") {
            base.pop();
            rest = after;
        }
        let lower = |s: &str| s.chars().next().is_some_and(|c| c.is_ascii_lowercase());
        let mut segments = Vec::new();
        loop {
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let segment = &rest[..end];
            if segment.is_empty() || !lower(segment) {
                break;
            }
            segments.push(segment.to_owned());
            match rest[end..].strip_prefix("::") {
                Some(next) => rest = next,
                None => break,
            }
        }
        let group: Vec<Vec<String>> = match rest.strip_prefix('{') {
            Some(inner) => inner[..inner.find('}').unwrap_or(0)]
                .split(',')
                .map(|item| item.trim().split("::").take_while(|s| lower(s)).map(str::to_owned).collect())
                .collect(),
            None => vec![Vec::new()],
        };
        for tail in group {
            out.push(base.iter().chain(&segments).chain(&tail).cloned().collect());
        }
    }
    out
}

/// File-level import circles in the crate whose `src/` holds `files`: each as the files in it.
/// A file's import of an enclosing module (its `mod.rs`, the `lib.rs`) is not counted: those
/// declare and re-export their children, so a child's `super::Item` would be a circle by
/// construction.
fn circles(files: &[(PathBuf, String)]) -> Vec<Vec<PathBuf>> {
    let by_module: BTreeMap<Vec<String>, &PathBuf> = files.iter().map(|(p, _)| (module_path(p), p)).collect();
    let encloses = |outer: &Path, inner: &Path| {
        let hub = outer.file_name().is_some_and(|f| f == "mod.rs" || f == "lib.rs");
        hub && outer.parent().is_some_and(|dir| inner.starts_with(dir))
    };
    let mut edges: BTreeMap<&PathBuf, BTreeSet<&PathBuf>> = BTreeMap::new();
    for (path, text) in files {
        for named in named_paths(path, text) {
            let target = (0..=named.len()).rev().find_map(|n| by_module.get(&named[..n]).copied());
            if let Some(target) = target.filter(|t| *t != path && !encloses(t, path)) {
                edges.entry(path).or_default().insert(target);
            }
        }
    }
    // Strongly connected components (Tarjan), larger than one file.
    struct Walk<'a> {
        edges: &'a BTreeMap<&'a PathBuf, BTreeSet<&'a PathBuf>>,
        index: BTreeMap<&'a PathBuf, (usize, usize)>,
        stack: Vec<&'a PathBuf>,
        found: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a PathBuf) {
        let n = w.index.len();
        w.index.insert(v, (n, n));
        w.stack.push(v);
        for &u in w.edges.get(v).into_iter().flatten() {
            if !w.index.contains_key(u) {
                visit(w, u);
                let low = w.index[u].1.min(w.index[v].1);
                w.index.get_mut(v).unwrap().1 = low;
            } else if w.stack.contains(&u) {
                let low = w.index[u].0.min(w.index[v].1);
                w.index.get_mut(v).unwrap().1 = low;
            }
        }
        if w.index[v].0 == w.index[v].1 {
            let at = w.stack.iter().rposition(|&x| x == v).unwrap();
            let component: Vec<PathBuf> = w.stack.drain(at..).map(|p| p.to_path_buf()).collect();
            if component.len() > 1 {
                w.found.push(component);
            }
        }
    }
    let mut walk = Walk { edges: &edges, index: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for (path, _) in files {
        if !walk.index.contains_key(path) {
            visit(&mut walk, path);
        }
    }
    walk.found
}

/// The `.rs` files under `crate_dir/src`, read at run time.
fn crate_sources(crate_dir: &Path) -> Vec<(PathBuf, String)> {
    let src = crate_dir.join("src");
    sources(&src).into_iter().map(|p| (p.clone(), fs::read_to_string(src.join(&p)).unwrap())).collect()
}

/// The directories of the workspace's member crates that have a `src/`, read from the root
/// `Cargo.toml`'s `members`: a crate added there is checked with no list to keep here.
fn workspace_crates(root: &Path) -> Vec<PathBuf> {
    let manifest = fs::read_to_string(root.join("Cargo.toml")).expect("the workspace's Cargo.toml");
    let members = manifest.split("members = [").nth(1).and_then(|rest| rest.split(']').next()).unwrap_or("");
    members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| root.join(m))
        .filter(|dir| dir.join("src").is_dir())
        .collect()
}

#[test]
fn no_file_imports_itself_through_others() {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR: run through cargo test or nextest");
    let host = Path::new(&dir);
    let crates = workspace_crates(&host.join(".."));
    assert!(crates.len() >= 10, "the workspace's members: {crates:?}");
    let found: Vec<String> = crates
        .iter()
        .flat_map(|krate| {
            circles(&crate_sources(krate)).into_iter().map(move |c| format!("{}/src: {c:?}", krate.display()))
        })
        .collect();
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn a_planted_circle_is_found() {
    let file = |path: &str, text: &str| (PathBuf::from(path), text.to_owned());
    let files = vec![
        file("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        file("a.rs", "use super::b::{Thing, helper};\n"),
        file("b.rs", "use crate::c::deep::X;\n"),
        file("c/mod.rs", "pub mod deep;\n"),
        file("c/deep.rs", "fn f() { super::super::a::go(); }\n"),
    ];
    let found = circles(&files);
    assert_eq!(found.len(), 1, "{found:?}");
    let mut members = found[0].clone();
    members.sort();
    assert_eq!(members, [PathBuf::from("a.rs"), PathBuf::from("b.rs"), PathBuf::from("c/deep.rs")]);
    // A child naming its own mod.rs is not a circle (the mod.rs re-exports it); a mod.rs and a
    // file outside it that name each other are.
    let hubbed = vec![file("lib.rs", ""), file("m/mod.rs", "pub use x::X;\n"), file("m/x.rs", "use super::Y;\n")];
    assert!(circles(&hubbed).is_empty());
    let outside = vec![file("lib.rs", ""), file("m/mod.rs", "use crate::o::f;\n"), file("o.rs", "use crate::m::Y;\n")];
    assert_eq!(circles(&outside).len(), 1);
}
