//! The shim is found as `libcuda.so.1`, the SONAME programs linked with `-lcuda` record.
//! Its source directory goes to the command's build script, which may build and embed it.
//!
//! It also lists every entry point written as a plain `pub unsafe extern "C" fn cu…` in `src/`
//! (`$OUT_DIR/plain_exports.rs`, for `cuGetProcAddress`), so that each is named once, where it
//! is defined.
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
    if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") {
        println!("cargo::metadata=source={}", dir.to_string_lossy());
    }
    let src = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut table = String::from(
        "/// Every entry point written as a plain function in `src/`, by exported name (listed by\n\
         /// `build.rs`).\n\
         fn plain() -> Vec<(&'static str, *const std::ffi::c_void)> {\n    vec![\n",
    );
    for file in &files {
        let module = module_path(file.strip_prefix(&src).expect("below src"));
        let text = std::fs::read_to_string(file).expect("readable source");
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("pub unsafe extern \"C\" fn cu") else { continue };
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            table.push_str(&format!("        (\"cu{name}\", {module}::cu{name} as *const std::ffi::c_void),\n"));
        }
    }
    table.push_str("    ]\n}\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("plain_exports.rs");
    std::fs::write(out, table).expect("OUT_DIR is writable");
}

/// Every `.rs` file below `dir`.
fn sources(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The module a file below `src/` defines, as a path from the crate root.
fn module_path(file: &Path) -> String {
    let mut path = String::from("crate");
    for part in file.with_extension("").components() {
        let part = part.as_os_str().to_string_lossy();
        if part != "mod" && part != "lib" {
            path.push_str("::");
            path.push_str(&part);
        }
    }
    path
}
