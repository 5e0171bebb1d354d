//! PTX images linked into one, as the driver's JIT linker links them: a function or variable
//! that one image declares `.extern` is the one another image defines. The images' statements
//! follow one another under one header (the newest `.version`, the highest `.target`), so the
//! result reads as one module. NVIDIA's linker keeps each image's internal names apart; here a
//! name that two images both define (a helper or a string constant both carry) is refused,
//! naming it.

use super::{Refusal, parse_target, statements, strip_comments, tokens};
use std::collections::HashMap;

/// One PTX text from `images` (each PTX text up to its first NUL).
pub fn link(images: &[&[u8]]) -> Result<String, Refusal> {
    let mut version = (0u32, 0u32);
    let mut target: Option<(super::ComputeCapability, String)> = None;
    let mut body = String::new();
    let mut defined: HashMap<String, usize> = HashMap::new();
    for (i, image) in images.iter().enumerate() {
        let text = super::text(image).ok_or(Refusal::NotAnImage("text that is not UTF-8"))?;
        let text = strip_comments(text);
        let (mut v, mut t) = (None, None);
        let mut own = String::with_capacity(text.len());
        for line in text.lines() {
            let mut words = line.split_whitespace();
            match words.next() {
                Some(".version") => v = words.next().and_then(super::isa_version),
                Some(".target") => t = Some(line.trim().trim_start_matches(".target").trim().to_owned()),
                Some(".address_size") => {}
                _ => {
                    own.push_str(line);
                    own.push('\n');
                }
            }
        }
        let (Some(v), Some(t)) = (v, t) else {
            return Err(Refusal::NotAnImage("text without a PTX .version and .target"));
        };
        let first = t.split([',', ' ']).next().unwrap_or_default();
        let cc = parse_target(first).ok_or_else(|| Refusal::InvalidPtx(format!(".target {t}")))?.cc;
        version = version.max(v);
        if target.as_ref().is_none_or(|(most, _)| cc > *most) {
            target = Some((cc, t));
        }
        let tokens = tokens(&own);
        for s in statements(&tokens)? {
            for name in defines(&s.head, s.body.is_some())? {
                if let Some(j) = defined.insert(name.to_owned(), i).filter(|&j| j != i) {
                    return Err(Refusal::Link(format!(
                        "images {} and {} both define {name}; NVIDIA's linker keeps internal names apart, \
                         the simulator does not",
                        j + 1,
                        i + 1
                    )));
                }
            }
        }
        body.push_str(&own);
    }
    let (_, target) = target.ok_or(Refusal::NotAnImage("no image to link"))?;
    Ok(format!(".version {}.{}\n.target {target}\n.address_size 64\n{body}", version.0, version.1))
}

/// The names a module-level statement defines: a kernel or function with its body, a variable
/// that is not `.extern`.
fn defines<'t>(head: &[&'t str], has_body: bool) -> Result<Vec<&'t str>, Refusal> {
    let Some(first) = head.iter().position(|t| !matches!(*t, ".visible" | ".weak" | ".common")) else {
        return Ok(Vec::new());
    };
    let head = &head[first..];
    Ok(match head.first().copied() {
        Some(".entry" | ".func") if has_body => {
            // `.func (.param .b32 r) name (...)`: the name follows the return parameters.
            let mut i = 1;
            if head.get(i) == Some(&"(") {
                i = super::closing(head, i)? + 1;
            }
            head.get(i).copied().into_iter().collect()
        }
        Some(".global" | ".const" | ".shared") if !has_body => {
            super::declarators(&head[1..])?.into_iter().map(|d| d.name).collect()
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
        let contents = super::super::read(text.as_bytes(), (9, 0)).unwrap();
        assert_eq!(contents.kernels.len(), 1);
        let names: Vec<&str> = contents.globals.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["$str", "bias"], "the extern declaration is not a second global");
        assert_eq!(contents.globals[1].init, 7u32.to_le_bytes());
    }

    #[test]
    fn a_name_two_images_define_is_refused_by_name() {
        let again = CALLER.replace("k(", "k2(");
        let err = link(&[CALLER.as_bytes(), again.as_bytes()]).unwrap_err();
        assert!(matches!(&err, Refusal::Link(why) if why.contains("both define $str")), "{err}");
        assert_eq!(err.code(), peerpool::CudaCode::CUDA_ERROR_NOT_SUPPORTED);
        let kernel_twice = link(&[CALLEE.as_bytes(), CALLER.as_bytes(), CALLER.as_bytes()]).unwrap_err();
        assert!(kernel_twice.to_string().contains("images 2 and 3"), "{kernel_twice}");
        assert!(matches!(link(&[b"not ptx"]), Err(Refusal::NotAnImage(_))));
        assert!(matches!(link(&[]), Err(Refusal::NotAnImage(_))));
    }
}
