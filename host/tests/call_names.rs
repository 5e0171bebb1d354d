//! The CUDA driver calls peerpool knows by name (`peerpool::driver::DOCUMENTED_CALLS`: what a
//! fault rule may name) are those of cudarc's bindings, every CUDA version they bind, by their
//! documented names; the file holding them is written from the bindings by this test
//! (`PEERPOOL_UPDATE_CALL_NAMES=1 cargo test -p peerpool --test call_names`) and fails it when
//! stale. The seam's own calls are among them.

use peerpool::driver::{Call, DOCUMENTED_CALLS, documented_name};
use std::path::{Path, PathBuf};
use std::process::Command;

/// cudarc's `driver/sys/mod.rs`, as cargo resolved the dependency; `Err` with the reason when
/// this test does not run under cargo (a nextest archive on a machine without it).
fn cudarc_bindings() -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").ok_or("CARGO is unset: not run by cargo")?;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let output = Command::new(cargo)
        .args(["metadata", "--offline", "--format-version", "1", "--manifest-path"])
        .arg(&manifest)
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    assert!(output.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("cargo metadata lists packages");
    let cudarc = packages.iter().find(|p| p["name"] == "cudarc").expect("peerpool depends on cudarc");
    let manifest = Path::new(cudarc["manifest_path"].as_str().expect("a manifest path"));
    Ok(manifest.parent().expect("the crate's directory").join("src/driver/sys/mod.rs"))
}

/// Every `pub unsafe fn cu...` of the bindings, by its documented name, sorted, once each.
fn documented_in(bindings: &str) -> Vec<String> {
    let mut names: Vec<String> = bindings
        .lines()
        .filter_map(|line| line.strip_prefix("pub unsafe fn "))
        .filter_map(|rest| rest.split_once('(').map(|(name, _)| name))
        .filter(|name| name.starts_with("cu"))
        .map(|name| documented_name(name).to_string())
        .collect();
    names.sort();
    names.dedup();
    names
}

fn render(names: &[String]) -> String {
    let mut text = String::from(
        "//! Every CUDA driver API call by the name CUDA documents (`cuMemAlloc`, not the versioned\n\
         //! symbol `cuMemAlloc_v2`), of every CUDA version cudarc's bindings cover: the calls a fault\n\
         //! rule may name.\n\
         //!\n\
         //! Written from cudarc's bindings by `host/tests/call_names.rs`\n\
         //! (`PEERPOOL_UPDATE_CALL_NAMES=1 cargo test -p peerpool --test call_names`), which fails\n\
         //! when this file is stale. Do not edit.\n\
         \n\
         /// The names, sorted.\n\
         pub const DOCUMENTED_CALLS: &[&str] = &[\n",
    );
    for name in names {
        text.push_str(&format!("    \"{name}\",\n"));
    }
    text.push_str("];\n");
    text
}

#[test]
fn the_documented_calls_are_cudarc_s_bindings() {
    let bindings = match cudarc_bindings() {
        Ok(path) => path,
        Err(why) => {
            println!("skipped: {why}; the list is checked where cargo runs the tests (.ci/run)");
            return;
        }
    };
    let text = std::fs::read_to_string(&bindings).unwrap_or_else(|e| panic!("{}: {e}", bindings.display()));
    let names = documented_in(&text);
    assert!(names.len() > 400, "{}: only {} calls found", bindings.display(), names.len());
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/driver/documented_calls.rs");
    let rendered = render(&names);
    if std::env::var_os("PEERPOOL_UPDATE_CALL_NAMES").is_some() {
        std::fs::write(&file, &rendered).unwrap();
    }
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        committed == rendered,
        "{} is stale against {}: run PEERPOOL_UPDATE_CALL_NAMES=1 cargo test -p peerpool --test call_names",
        file.display(),
        bindings.display()
    );
    assert_eq!(
        DOCUMENTED_CALLS,
        names.iter().map(String::as_str).collect::<Vec<_>>(),
        "the compiled list is the file's"
    );
}

#[test]
fn the_seam_calls_by_documented_names() {
    for call in Call::ALL {
        assert!(DOCUMENTED_CALLS.binary_search(&call.name()).is_ok(), "{} is no documented CUDA call", call.name());
    }
    assert!(DOCUMENTED_CALLS.windows(2).all(|w| w[0] < w[1]), "sorted, each once");
    assert!(DOCUMENTED_CALLS.iter().all(|n| documented_name(n) == *n), "no versioned symbol");
}

#[test]
fn versioned_symbols_go_by_their_documented_names() {
    assert_eq!(documented_name("cuMemAlloc_v2"), "cuMemAlloc");
    assert_eq!(documented_name("cuCtxCreate_v4"), "cuCtxCreate");
    assert_eq!(documented_name("cuMemPoolSetAccess"), "cuMemPoolSetAccess");
    assert_eq!(documented_name("cuGraphicsVDPAURegisterVideoSurface"), "cuGraphicsVDPAURegisterVideoSurface");
    assert_eq!(documented_name("cuFoo_v"), "cuFoo_v");
}
