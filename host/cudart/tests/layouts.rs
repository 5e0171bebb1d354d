//! The runtime's `cudaDeviceProp` layouts against NVIDIA's headers: for each major, a C program
//! built against that major's `driver_types.h` prints the struct's size and alignment and each
//! field's offset and size, for the fields the header declares, in its order; the Rust layout
//! must have the same fields, in the same order, at the same offsets, of the same sizes.
//!
//! The headers come from PyPI's runtime wheels: `ci/cuda-headers.sh` installs both and prints
//! their include folders, CUDA 13.0's then CUDA 12.9's. `$PEERPOOL_CUDA13_INCLUDE` and
//! `$PEERPOOL_CUDA12_INCLUDE` name them; without one its trial is skipped, saying so. `$CC`
//! names the C compiler (`cc` if unset).

use libtest_mimic::{Arguments, Failed, Trial};
use peerpool_cudart::properties::{DeviceProp12, DeviceProp13};
use std::path::Path;
use std::process::{Command, ExitCode};

/// One runtime major's layout: the variable naming its headers, its major, and the Rust side.
struct Layout {
    variable: &'static str,
    major: u32,
    fields: &'static [(&'static str, usize, usize)],
    size: usize,
    align: usize,
}

fn main() -> ExitCode {
    let layouts = [
        Layout {
            variable: "PEERPOOL_CUDA12_INCLUDE",
            major: 12,
            fields: DeviceProp12::FIELDS,
            size: size_of::<DeviceProp12>(),
            align: align_of::<DeviceProp12>(),
        },
        Layout {
            variable: "PEERPOOL_CUDA13_INCLUDE",
            major: 13,
            fields: DeviceProp13::FIELDS,
            size: size_of::<DeviceProp13>(),
            align: align_of::<DeviceProp13>(),
        },
    ];
    let trials = layouts
        .into_iter()
        .map(|layout| {
            let name = format!("device_prop{}_is_the_headers_cudaDeviceProp", layout.major);
            match std::env::var_os(layout.variable) {
                Some(include) => Trial::test(name, move || same_layout(&layout, Path::new(&include))),
                None => {
                    eprintln!("skipped: {name}: {} is not set", layout.variable);
                    Trial::test(name, || Ok(())).with_ignored_flag(true)
                }
            }
        })
        .collect();
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

/// `layout` against the C compiler's view of `struct cudaDeviceProp` in `include`'s headers.
fn same_layout(layout: &Layout, include: &Path) -> Result<(), Failed> {
    let version = runtime_version(include)?;
    if version / 1000 != layout.major {
        let (dir, found) = (include.display(), format!("{}.{}", version / 1000, version % 1000 / 10));
        return Err(format!("{dir} holds CUDA {found}'s headers, not CUDA {}'s", layout.major).into());
    }
    let names = header_fields(include)?;
    let printed = c_layout(include, layout.major, &names)?;
    let mut lines = printed.lines();
    let want = format!("{} {}", layout.size, layout.align);
    let whole = lines.next().unwrap_or("(nothing)");
    let mut wrong = Vec::new();
    if whole != want {
        wrong.push(format!("size and alignment: the header's {whole}, Rust's {want}"));
    }
    let c: Vec<&str> = lines.collect();
    let rust: Vec<String> =
        layout.fields.iter().map(|(name, offset, size)| format!("{name} {offset} {size}")).collect();
    for i in 0..c.len().max(rust.len()) {
        let (h, r) = (c.get(i).copied().unwrap_or("(nothing)"), rust.get(i).map_or("(nothing)", String::as_str));
        if h != r {
            wrong.push(format!("field {i} (name offset size): the header's `{h}`, Rust's `{r}`"));
        }
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(wrong.join("\n").into()),
    }
}

/// `CUDART_VERSION` of the headers in `include` (12090 for CUDA 12.9).
fn runtime_version(include: &Path) -> Result<u32, Failed> {
    let text = read(&include.join("cuda_runtime_api.h"))?;
    text.lines()
        .find_map(|line| line.strip_prefix("#define CUDART_VERSION")?.trim().parse().ok())
        .ok_or_else(|| format!("{}: no CUDART_VERSION", include.display()).into())
}

/// The fields of `struct cudaDeviceProp` in `include`'s `driver_types.h`, in order: each
/// declaration's name (`int maxThreadsDim[3];` declares `maxThreadsDim`).
fn header_fields(include: &Path) -> Result<Vec<String>, Failed> {
    let path = include.join("driver_types.h");
    let text = read(&path)?;
    let body = text
        .split_once("struct __device_builtin__ cudaDeviceProp\n{")
        .and_then(|(_, rest)| rest.split_once("\n};"))
        .map(|(body, _)| body)
        .ok_or_else(|| format!("{}: no `struct cudaDeviceProp`", path.display()))?;
    let mut names = Vec::new();
    for line in body.lines() {
        let code = line.split_once("/*").map_or(line, |(code, _)| code).trim();
        if code.is_empty() {
            continue;
        }
        let declarator = code
            .strip_suffix(';')
            .and_then(|d| d.split('[').next()?.split_whitespace().last())
            .ok_or_else(|| format!("{}: not a field's declaration: {line}", path.display()))?;
        names.push(declarator.to_owned());
    }
    Ok(names)
}

/// What a C program built against `include` prints: `size alignment` of the struct, then
/// `name offset size` of each field of `names`.
fn c_layout(include: &Path, major: u32, names: &[String]) -> Result<String, Failed> {
    let dir = std::env::temp_dir().join(format!("peerpool-layouts-{major}-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut source = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include \"driver_types.h\"\n\
         #define FIELD(f) printf(\"%s %zu %zu\\n\", #f, offsetof(struct cudaDeviceProp, f), \
         sizeof(((struct cudaDeviceProp *)0)->f))\n\
         int main(void) {\n    printf(\"%zu %zu\\n\", sizeof(struct cudaDeviceProp), _Alignof(struct cudaDeviceProp));\n",
    );
    for name in names {
        source += &format!("    FIELD({name});\n");
    }
    source += "    return 0;\n}\n";
    let (c, program) = (dir.join("layout.c"), dir.join("layout"));
    std::fs::write(&c, source)?;
    // CUDA 12's runtime wheel has no `crt/`: its compiler's wheel, beside it, has
    // (`ci/cuda12-wheels.sh` installs both), searched after the headers' own folder.
    let crt = include.join("../../cuda_nvcc/include");
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&compiler)
        .args(["-std=c11", "-Wall", "-Werror", "-I"])
        .arg(include)
        .arg("-I")
        .arg(&crt)
        .arg("-o")
        .arg(&program)
        .arg(&c)
        .output()
        .map_err(|e| format!("running {compiler}: {e}"))?;
    if !built.status.success() {
        return Err(format!("{compiler} {}: {}", c.display(), String::from_utf8_lossy(&built.stderr)).into());
    }
    let ran = Command::new(&program).output()?;
    let _ = std::fs::remove_dir_all(&dir);
    if !ran.status.success() {
        return Err(format!("{}: {}", program.display(), ran.status).into());
    }
    Ok(String::from_utf8(ran.stdout)?)
}

fn read(path: &Path) -> Result<String, Failed> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()).into())
}
