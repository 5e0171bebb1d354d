//! PTX images linked into one, as the driver's JIT linker links them: a function or variable
//! that one image declares `.extern` is the one another image defines. The images' statements
//! follow one another under one header (the newest `.version`, the highest `.target`), so the
//! result reads as one module. An image's internal names (a `.func` or variable without
//! `.visible`, such as CUDA's math helpers or printf's strings) and its `.weak` functions are
//! its own, as NVIDIA's linker keeps them: one that another image also defines is renamed in
//! the later image (in the earlier one when the later defines it `.visible`). A name two images
//! define `.visible`, a kernel both define, or a `.weak` or `.common` variable both define (one
//! object to NVIDIA's linker) is refused by name.

use super::Refusal;
use super::ptx::{Header, closing, declarators, header, isa_version, parse_target, pieces, statements, text};
use std::collections::HashMap;

/// How other images see a name an image defines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Linkage {
    /// Internal (no linkage written), or a `.weak` function: its image's own. Weak functions of
    /// one name are the same code, so each image may keep its own.
    Own,
    /// A `.weak` or `.common` variable: one object wherever it is defined.
    SharedVariable,
    /// `.visible`, or a kernel.
    Visible,
}

/// One PTX text from `images` (each PTX text up to its first NUL).
pub fn link(images: &[&[u8]]) -> Result<String, Refusal> {
    let mut version = (0u32, 0u32);
    let mut target: Option<(super::ComputeCapability, String)> = None;
    let (mut texts, mut defined_by) = (Vec::new(), Vec::new());
    for image in images {
        let text = text(image).ok_or(Refusal::NotAnImage("text that is not UTF-8"))?;
        let Header { version: v, target: t, rest: own } = header(text)?;
        let v = isa_version(&v).ok_or_else(|| Refusal::InvalidPtx(format!(".version {v}")))?;
        let cc = parse_target(&t).ok_or_else(|| Refusal::InvalidPtx(format!(".target {t}")))?.cc;
        version = version.max(v);
        if target.as_ref().is_none_or(|(most, _)| cc > *most) {
            target = Some((cc, t));
        }
        let mut defines = Vec::new();
        for s in statements(&own)? {
            defines.extend(self::defines(&s.head, s.body.is_some())?.into_iter().map(|(n, v)| (n.to_owned(), v)));
        }
        texts.push(own);
        defined_by.push(defines);
    }
    let (_, target) = target.ok_or(Refusal::NotAnImage("no image to link"))?;
    // Where each name is defined so far, and how.
    let mut defined: HashMap<String, (usize, Linkage)> = HashMap::new();
    for (i, defines) in defined_by.iter().enumerate() {
        for &(ref name, linkage) in defines {
            let Some(&(j, earlier)) = defined.get(name).filter(|&&(j, _)| j != i) else {
                defined.insert(name.clone(), (i, linkage));
                continue;
            };
            let both = format!("images {} and {} both define {name}", j + 1, i + 1);
            match (earlier, linkage) {
                (Linkage::Visible, Linkage::Visible) => return Err(Refusal::Link(both)),
                (Linkage::SharedVariable, _) | (_, Linkage::SharedVariable) => {
                    return Err(Refusal::Link(format!(
                        "{both}, a .weak or .common variable, which NVIDIA's linker makes one"
                    )));
                }
                // This image's own (or weak: the same code) goes under another name.
                (_, Linkage::Own) => texts[i] = rename(&texts[i], name, &format!("{name}$linked{i}")),
                // Visible here: the earlier image's own keeps to that image under another.
                (_, Linkage::Visible) => {
                    let renamed = format!("{name}$linked{j}");
                    texts[j] = rename(&texts[j], name, &renamed);
                    defined.insert(renamed, (j, earlier));
                    defined.insert(name.clone(), (i, linkage));
                }
            }
        }
    }
    Ok(format!(".version {}.{}\n.target {target}\n.address_size 64\n{}", version.0, version.1, texts.concat()))
}

/// `text` with every token `from` (outside quotes) made `to`.
fn rename(text: &str, from: &str, to: &str) -> String {
    pieces(text).map(|piece| if piece == from { to } else { piece }).collect()
}

/// The names a module-level statement defines (a kernel or function with its body, a variable
/// that is not `.extern`), each with its linkage.
fn defines<'t>(head: &[&'t str], has_body: bool) -> Result<Vec<(&'t str, Linkage)>, Refusal> {
    let Some(first) = head.iter().position(|t| !matches!(*t, ".visible" | ".weak" | ".common")) else {
        return Ok(Vec::new());
    };
    let (written, head) = (&head[..first], &head[first..]);
    let linkage = |variable: bool| match written {
        w if w.contains(&".visible") => Linkage::Visible,
        [] => Linkage::Own,
        _ if variable => Linkage::SharedVariable,
        _ => Linkage::Own,
    };
    Ok(match head.first().copied() {
        Some(kind @ (".entry" | ".func")) if has_body => {
            // `.func (.param .b32 r) name (...)`: the name follows the return parameters.
            let mut i = 1;
            if head.get(i) == Some(&"(") {
                i = closing(head, i)? + 1;
            }
            let linkage = if kind == ".entry" { Linkage::Visible } else { linkage(false) };
            head.get(i).map(|&n| (n, linkage)).into_iter().collect()
        }
        Some(".global" | ".const" | ".shared") if !has_body => {
            declarators(&head[1..])?.into_iter().map(|d| (d.name, linkage(true))).collect()
        }
        _ => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALLER: &str = ".version 8.0\n.target sm_80\n.address_size 64\n\
        .extern .func (.param .b32 r) twice (.param .b32 a);\n.extern .global .align 4 .u32 bias;\n\
        .global .align 1 .b8 $str[2] = {104, 0};\n\
        .visible .entry k(.param .u64 p)\n{\nret;\n}\n";
    const CALLEE: &str = ".version 8.5\n.target sm_90\n.address_size 64\n// a comment\n\
        .visible .global .align 4 .u32 bias = 7;\n\
        .visible .func (.param .b32 r) twice (.param .b32 a)\n{\nret;\n}\n";

    #[test]
    fn images_join_under_the_newest_header_and_externs_meet_their_definitions() {
        let text = link(&[CALLER.as_bytes(), CALLEE.as_bytes()]).unwrap();
        assert!(text.starts_with(".version 8.5\n.target sm_90\n.address_size 64\n"), "{text}");
        assert_eq!(text.matches(".version").count(), 1);
        let contents = crate::image::ptx::read(text.as_bytes(), (9, 0), crate::image::ptx::NEWEST_ISA).unwrap();
        assert_eq!(contents.kernels.len(), 1);
        let names: Vec<&str> = contents.globals.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["$str", "bias"], "the extern declaration is not a second global");
        assert_eq!(contents.globals[1].init, 7u32.to_le_bytes());
    }

    #[test]
    fn internal_names_stay_each_images_own_and_visible_clashes_are_refused() {
        // Both carry an internal `$str`; the second's is renamed, and the first's kernel still
        // names its own.
        let second = CALLER.replace("k(", "k2(").replace(".extern .global .align 4 .u32 bias;\n", "");
        let text = link(&[CALLER.as_bytes(), second.as_bytes(), CALLEE.as_bytes()]).unwrap();
        let contents = crate::image::ptx::read(text.as_bytes(), (9, 0), crate::image::ptx::NEWEST_ISA).unwrap();
        let names: Vec<&str> = contents.globals.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["$str", "$str$linked1", "bias"]);
        // An internal helper defined before a visible one of the same name gives way to it.
        let helper = ".version 8.0\n.target sm_90\n.func (.param .b32 r) twice (.param .b32 a)\n{\nret;\n}\n\
            .visible .entry h(.param .u64 p)\n{\ncall.uni (r0), twice, (a0);\nret;\n}\n";
        let text = link(&[helper.as_bytes(), CALLEE.as_bytes()]).unwrap();
        assert!(text.contains("call.uni (r0), twice$linked0, (a0);"), "{text}");
        assert!(text.contains(".visible .func (.param .b32 r) twice (.param .b32 a)"), "{text}");
        // Kernels and visible names are refused when two images define them.
        let err = link(&[CALLER.as_bytes(), CALLER.as_bytes()]).unwrap_err();
        assert!(matches!(&err, Refusal::Link(why) if why.contains("images 1 and 2 both define k")), "{err}");
        assert_eq!(err.code(), peerpool::CudaCode::CUDA_ERROR_NOT_SUPPORTED);
        let err = link(&[CALLEE.as_bytes(), CALLER.as_bytes(), CALLEE.as_bytes()]).unwrap_err();
        assert!(err.to_string().contains("images 1 and 3 both define bias"), "{err}");
        assert!(matches!(link(&[b"not ptx"]), Err(Refusal::NotAnImage(_))));
        assert!(matches!(link(&[]), Err(Refusal::NotAnImage(_))));
    }

    #[test]
    fn weak_functions_stay_each_images_own_and_weak_variables_are_refused() {
        let weak = ".version 8.0\n.target sm_90\n.weak .func (.param .b32 r) twice (.param .b32 a)\n{\nret;\n}\n";
        let text = link(&[weak.as_bytes(), weak.as_bytes()]).unwrap();
        assert!(text.contains(".weak .func (.param .b32 r) twice$linked1 (.param .b32 a)"), "{text}");
        let common = ".version 8.0\n.target sm_90\n.common .global .align 8 .u64 env;\n";
        let err = link(&[common.as_bytes(), common.as_bytes()]).unwrap_err();
        assert!(err.to_string().contains("images 1 and 2 both define env, a .weak or .common variable"), "{err}");
    }

    #[test]
    fn a_rename_changes_whole_tokens_only() {
        let text = "mov.u64 %rd1, $str;\nmov.u64 %rd2, $str$1;\nld.u8 %r1, [$str+1];\n.pragma \"$str\";\n";
        let want = "mov.u64 %rd1, s2;\nmov.u64 %rd2, $str$1;\nld.u8 %r1, [s2+1];\n.pragma \"$str\";\n";
        assert_eq!(rename(text, "$str", "s2"), want);
    }

    proptest::proptest! {
        /// Texts after a PTX header, cut or damaged PTX, and peerpool's own: linked or refused,
        /// never a panic; what links reads as one module or is refused.
        #[test]
        fn any_texts_are_linked_or_refused_without_a_panic(
            tails in proptest::collection::vec("[ -~\n\t]{0,200}", 1..4),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let own = peerpool_kernels::PTX;
            let mut texts: Vec<String> =
                tails.iter().map(|t| format!(".version 8.0\n.target sm_90\n.address_size 64\n{t}")).collect();
            texts.push(own[..cut.index(own.len() + 1)].to_owned());
            let images: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
            if let Ok(text) = link(&images) {
                let _ = crate::image::ptx::read(text.as_bytes(), (9, 0), crate::image::ptx::NEWEST_ISA);
            }
        }
    }
}
