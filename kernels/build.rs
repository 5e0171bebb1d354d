//! Compiles `device/lib.rs` to PTX with rustc's nvptx64 backend and hands it to `src/lib.rs`.
//!
//! The device crate is `#![no_core]`, so it names compiler lang items that belong to one rustc
//! release: [`PINNED`], the one `rust-toolchain.toml` pins (`tests/ptx.rs` keeps the two
//! equal). Only that rustc rebuilds the kernels. Any other toolchain (a downstream crate's, a
//! nightly) embeds the committed `ptx/peerpool_kernels.ptx` as it is, without trying: another
//! rustc could compile it into different PTX, whose hash would no longer match the cubin's. On
//! the pinned toolchain, `tests/ptx.rs` fails when the committed file is stale, and
//! `PEERPOOL_UPDATE_PTX=1 cargo build` rewrites it from a fresh compile.
//!
//! Beside the PTX sits machine code for sm_90 (`ptx/peerpool_kernels.sm_90.cubin`, made by
//! CUDA's `ptxas` on a GPU machine: `ci/gpu-sass.sh`). It is embedded only while its recorded
//! source hash is the embedded PTX's; a stale cubin is left out with a warning.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

const DEVICE_ROOT: &str = "device/lib.rs";
const COMMITTED: &str = "ptx/peerpool_kernels.ptx";
const OUTPUT: &str = "peerpool_kernels.ptx";
const SM90: &str = "ptx/peerpool_kernels.sm_90.cubin";
const SM90_SOURCE: &str = "ptx/peerpool_kernels.sm_90.cubin.source";
const SM90_OUTPUT: &str = "peerpool_kernels.sm_90.cubin";
/// The rustc release that rebuilds the kernels (`rust-toolchain.toml`'s channel).
const PINNED: &str = "1.95.0";

fn main() {
    for watched in ["device", "src/pattern.rs", COMMITTED, SM90, SM90_SOURCE, "build.rs"] {
        println!("cargo:rerun-if-changed={watched}");
    }
    println!("cargo:rerun-if-env-changed=PEERPOOL_UPDATE_PTX");

    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let built = out_dir.join(OUTPUT);
    let committed = manifest.join(COMMITTED);

    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version =
        Command::new(&rustc).arg("--version").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let pinned = version.as_deref().is_ok_and(|v| v.starts_with(&format!("rustc {PINNED} ")));
    println!("cargo:rustc-env=PEERPOOL_PTX_PINNED={PINNED}");
    println!("cargo:rustc-env=PEERPOOL_PTX_ON_PINNED={}", if pinned { "yes" } else { "no" });
    let compiled = match pinned {
        true => compile(&manifest.join(DEVICE_ROOT), &built),
        false => Err(String::new()),
    };
    match compiled {
        Ok(version) => {
            println!("cargo:rustc-env=PEERPOOL_PTX_ORIGIN=built");
            println!("cargo:rustc-env=PEERPOOL_PTX_RUSTC={version}");
            if env::var_os("PEERPOOL_UPDATE_PTX").is_some() {
                fs::copy(&built, &committed).expect("write the committed PTX");
            }
        }
        Err(why) => {
            // Another toolchain takes the committed files silently; the pinned one failing is news.
            if pinned {
                println!(
                    "cargo:warning=peerpool-kernels: the pinned toolchain could not rebuild the kernels \
                     ({why}); embedding the committed {COMMITTED} instead"
                );
            }
            fs::copy(&committed, &built).expect("the committed PTX is part of the package");
            println!("cargo:rustc-env=PEERPOOL_PTX_ORIGIN=committed");
            println!("cargo:rustc-env=PEERPOOL_PTX_RUSTC=");
        }
    }
    embed_sass(&manifest, &built, &out_dir.join(SM90_OUTPUT));
}

/// Copies the sm_90 cubin to `output` when it was compiled from the PTX at `ptx`, else writes
/// an empty file; sets `PEERPOOL_SASS_SM90` to `fresh` or `stale` for `src/lib.rs`.
fn embed_sass(manifest: &Path, ptx: &Path, output: &Path) {
    use sha2::{Digest, Sha256};
    let text = fs::read(ptx).expect("the embedded PTX was just written");
    let hash: String = Sha256::digest(&text).iter().map(|b| format!("{b:02x}")).collect();
    let source = fs::read_to_string(manifest.join(SM90_SOURCE)).unwrap_or_default();
    let recorded = source.lines().find_map(|l| l.strip_prefix("ptx-sha256 ")).map(str::trim);
    if recorded == Some(hash.as_str()) {
        fs::copy(manifest.join(SM90), output).expect("the committed cubin is part of the package");
        println!("cargo:rustc-env=PEERPOOL_SASS_SM90=fresh");
    } else {
        println!(
            "cargo:warning=peerpool-kernels: {SM90} was compiled from other PTX (sha256 {}, this \
             PTX {hash}); leaving it out, so sm_90 devices JIT the PTX. Regenerate it with \
             ci/gpu-sass.sh on a machine with ptxas.",
            recorded.unwrap_or("none")
        );
        fs::write(output, b"").expect("write into OUT_DIR");
        println!("cargo:rustc-env=PEERPOOL_SASS_SM90=stale");
    }
}

/// Runs rustc for nvptx64 on the device crate; returns that rustc's version line.
fn compile(root: &Path, output: &Path) -> Result<String, String> {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = Command::new(&rustc).arg("--version").output().map_err(|e| format!("cannot run rustc: {e}"))?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();

    let result = Command::new(&rustc)
        // The no_core features are unstable: allow them for this one child process only.
        .env("RUSTC_BOOTSTRAP", "1")
        .args(["--target", "nvptx64-nvidia-cuda", "--crate-type", "lib", "--emit=asm"])
        // sm_70 PTX is JIT-compiled by the driver for any later GPU (Hopper included).
        .args(["-C", "target-cpu=sm_70", "-C", "opt-level=3", "-C", "codegen-units=1"])
        .args(["--cap-lints", "allow", "-o"])
        .arg(output)
        .arg(root)
        .output()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    if !result.status.success() {
        let stderr = String::from_utf8_lossy(&result.stderr);
        let first = stderr.lines().find(|l| l.starts_with("error")).unwrap_or("rustc failed");
        return Err(format!("{version}: {first}"));
    }
    Ok(version)
}
