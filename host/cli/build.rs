//! Builds the libcuda shim and has `peerpool` carry it, so that `peerpool sim` works from a
//! `cargo install`, a release archive or a wheel, where no shim lies beside the binary (cargo
//! installs binaries only, and a cdylib is not one).
//!
//! A build from a package (crates.io, `cargo install`) embeds it, and so does one with the
//! `embed-shim` feature (the release archive's and the wheel's builds name it). A build in the
//! repository's workspace does not by default: there `cargo build` puts the shim beside the
//! binary already, and a second build of it would only slow every check.
//! `PEERPOOL_EMBED_SHIM=1` or `0` decides instead of all that.
//!
//! The shim is built by a cargo of its own (the same cargo and rustc, `--offline`: the outer
//! build fetched its dependencies), in a package made under `OUT_DIR` that depends on the
//! shim's source (from its build script's `source` metadata), into a target directory there.

use std::path::{Path, PathBuf};
use std::process::Command;

const SWITCH: &str = "PEERPOOL_EMBED_SHIM";
/// What the command reads the embedded shim's path from.
const EMBEDDED: &str = "PEERPOOL_EMBEDDED_SHIM";
/// And a name for its content (FNV-1a, stable from one build to the next), computed here once
/// rather than over the library's megabytes on every `peerpool sim`.
const EMBEDDED_ID: &str = "PEERPOOL_EMBEDDED_SHIM_ID";

fn main() {
    println!("cargo::rerun-if-env-changed={SWITCH}");
    println!("cargo::rustc-check-cfg=cfg(embedded_shim)");
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    // A packaged crate holds its original manifest beside the normalised one.
    let packaged = manifest_dir.join("Cargo.toml.orig").is_file();
    let embed = match std::env::var(SWITCH).as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        Ok(other) => panic!("{SWITCH} is 1 (embed the shim) or 0 (do not), not {other:?}"),
        Err(_) => packaged || std::env::var_os("CARGO_FEATURE_EMBED_SHIM").is_some(),
    };
    if !embed {
        return;
    }
    let source = PathBuf::from(env("DEP_PEERPOOL_SHIM_SOURCE"));
    println!("cargo::rerun-if-changed={}", source.display());
    if !packaged {
        // The shim's own dependencies are this workspace's too: rebuilt when they change.
        if let Some(host) = manifest_dir.parent() {
            println!("cargo::rerun-if-changed={}", host.display());
            if let Some(root) = host.parent() {
                println!("cargo::rerun-if-changed={}", root.join("kernels").display());
            }
        }
    }
    let shim = build_shim(&source, &manifest_dir);
    println!("cargo::rustc-env={EMBEDDED}={}", shim.display());
    let bytes = std::fs::read(&shim).unwrap_or_else(|e| panic!("reading {}: {e}", shim.display()));
    let id =
        bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3));
    println!("cargo::rustc-env={EMBEDDED_ID}={id:016x}");
    println!("cargo::rustc-cfg=embedded_shim");
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name} for build scripts"))
}

/// Builds `peerpool-shim` from `source` in release mode; its library's path.
fn build_shim(source: &Path, manifest_dir: &Path) -> PathBuf {
    let out = PathBuf::from(env("OUT_DIR"));
    let package = out.join("shim-package");
    std::fs::create_dir_all(package.join("src")).expect("making the shim's build package");
    let manifest = format!(
        "[package]\nname = \"peerpool-shim-build\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [workspace]\n\n[dependencies]\npeerpool-shim = {{ path = {:?} }}\n",
        source.display().to_string()
    );
    write_if_changed(&package.join("Cargo.toml"), &manifest);
    write_if_changed(&package.join("src/lib.rs"), "");
    // The versions this command was resolved with, where a lock file is at hand.
    let lock = [manifest_dir.join("Cargo.lock"), manifest_dir.join("../../Cargo.lock")];
    if let Some(lock) = lock.iter().find(|l| l.is_file()) {
        let _ = std::fs::copy(lock, package.join("Cargo.lock"));
    }
    let target = env("TARGET");
    let target_dir = out.join("shim-target");
    let mut cargo = Command::new(env("CARGO"));
    cargo
        .current_dir(&package)
        .args(["build", "--release", "--offline", "-p", "peerpool-shim", "--target", &target, "--target-dir"])
        .arg(&target_dir);
    // What cargo told this script, not the shim's build: keep the toolchain, the flags and the
    // job server, drop the rest (clippy's wrapper among them).
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let for_this_script = ["CARGO_PKG_", "CARGO_CFG_", "CARGO_FEATURE_", "CARGO_MANIFEST_", "DEP_"]
            .iter()
            .any(|p| name.starts_with(p))
            || [
                "OUT_DIR",
                "TARGET",
                "HOST",
                "NUM_JOBS",
                "OPT_LEVEL",
                "DEBUG",
                "PROFILE",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_CRATE_NAME",
                "CARGO_TARGET_DIR",
                "CARGO_BUILD_TARGET_DIR",
                "RUSTC_WORKSPACE_WRAPPER",
                SWITCH,
            ]
            .contains(&name.as_ref());
        if for_this_script {
            cargo.env_remove(name.as_ref());
        }
    }
    if let Ok(flags) = std::env::var("CARGO_MAKEFLAGS") {
        cargo.env("MAKEFLAGS", flags);
    }
    let status = cargo.status().unwrap_or_else(|e| panic!("running cargo to build the shim: {e}"));
    assert!(
        status.success(),
        "building the libcuda shim for `peerpool sim` failed ({status}); set {SWITCH}=0 to build \
         the command without it (then name a shim with `peerpool sim --shim`)"
    );
    let library = target_dir.join(&target).join("release/libpeerpool_shim.so");
    assert!(library.is_file(), "the shim's build left no {}", library.display());
    library
}

/// Writes `text` unless the file holds it already (its time would make cargo rebuild).
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
        return;
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}
