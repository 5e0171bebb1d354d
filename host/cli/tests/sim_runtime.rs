//! `peerpool sim` puts peerpool's CUDA runtime in front of a program that needs
//! `libcudart.so.N`, even one whose RPATH names NVIDIA's; refuses such a program in one line
//! when peerpool's runtime library is not found; and tells a program that carries NVIDIA's
//! runtime statically from others, with an exit status of its own. The programs and libraries
//! are small C files built here with the system's compiler.

mod support;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `peerpool sim`'s status for a program carrying NVIDIA's runtime statically.
const STATIC_RUNTIME: i32 = 65;
const BAD_INPUT: i32 = 2;

/// Runs the system's C compiler in `dir`.
fn cc(dir: &Path, args: &[&str]) {
    let status = Command::new("cc").current_dir(dir).args(args).status().unwrap_or_else(|e| {
        panic!("these tests build small programs with the system's C compiler, and `cc` cannot be run: {e}")
    });
    assert!(status.success(), "cc {args:?}: {status}");
}

fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

/// `peerpool sim ARGS -- PROGRAM` with a stand-in shim (the programs here load no libcuda),
/// the settings cleared and peerpool's runtime looked for in `cudart_dir`.
fn sim(base: &Path, cudart_dir: &Path, args: &[&OsStr]) -> Command {
    let shim = base.join("shim/libpeerpool_shim.so");
    if !shim.exists() {
        write(&shim, "a stand-in");
    }
    let mut command = support::command();
    command.arg("sim").arg("--shim").arg(&shim);
    for name in peerpool_sim::env::VARIABLES.iter().chain(&["CUDA_VISIBLE_DEVICES", "PEERPOOL_SHIM"]) {
        command.env_remove(name);
    }
    command.env_remove("LD_PRELOAD").env_remove("LD_LIBRARY_PATH").env("PEERPOOL_CUDART_DIR", cudart_dir);
    command.args(args);
    command
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The first bytes of an ELF shared object: `--real` takes the file for NVIDIA's libcuda
/// (the programs here never load it).
fn libcuda_stand_in(base: &Path) -> PathBuf {
    let mut header = b"\x7fELF\x02\x01\x01".to_vec();
    header.resize(16, 0);
    header.extend(3u16.to_le_bytes()); // ET_DYN
    let path = base.join("libcuda.so.1");
    std::fs::write(&path, header).unwrap();
    path
}

#[test]
fn a_program_carrying_nvidias_runtime_statically_is_refused_with_its_own_status() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    write(
        &base.join("static.c"),
        "#include <stdio.h>\n\
         void __cudaRegisterFatBinary(void) {}\n\
         int cudaGetDeviceCount(int *n) { *n = 0; return 0; }\n\
         int main(void) { puts(\"the static look-alike ran\"); return 0; }\n",
    );
    cc(base, &["-o", "static", "static.c"]);
    let program = base.join("static");
    let empty = base.join("no-runtime");
    std::fs::create_dir(&empty).unwrap();
    let output = sim(base, &empty, &["--".as_ref(), program.as_os_str()]).output().unwrap();
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(STATIC_RUNTIME), "{text}");
    assert_eq!(
        text,
        format!(
            "peerpool sim: {} carries NVIDIA's CUDA runtime statically, which cannot run on simulated GPUs: rebuild \
             it with -cudart shared (CMake: CMAKE_CUDA_RUNTIME_LIBRARY=Shared) so that peerpool's runtime serves it, \
             or run it on GPUs with --real\n",
            program.display()
        )
    );
    assert!(!stdout(&output).contains("ran"), "the program did not run");
    // On real GPUs NVIDIA's driver serves it: it runs as it is.
    let libcuda = libcuda_stand_in(base);
    let real = ["--real".as_ref(), "--libcuda".as_ref(), libcuda.as_os_str(), "--".as_ref(), program.as_os_str()];
    let output = sim(base, &empty, &real).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "the static look-alike ran\n");
    // With --print-env there is no program to read.
    let output = sim(base, &empty, &["--print-env".as_ref(), "--".as_ref(), program.as_os_str()]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn a_program_on_the_shared_runtime_gets_peerpools_past_its_rpath() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    let runtime = |text: &str| {
        format!("#include <stdio.h>\nint cudaRuntimeGetVersion(int *v) {{ puts(\"{text}\"); *v = 13000; return 0; }}\n")
    };
    // NVIDIA's runtime, as the program is linked with it, its directory in the program's
    // RPATH (DT_RPATH, which goes before LD_LIBRARY_PATH, not DT_RUNPATH, which goes after).
    write(&base.join("nvidia/runtime.c"), &runtime("NVIDIA's runtime answered"));
    cc(
        &base.join("nvidia"),
        &["-shared", "-fPIC", "-Wl,-soname,libcudart.so.13", "-o", "libcudart.so.13", "runtime.c"],
    );
    std::os::unix::fs::symlink("libcudart.so.13", base.join("nvidia/libcudart.so")).unwrap();
    write(
        &base.join("bin/app.c"),
        "#include <stdio.h>\n#include <stdlib.h>\n\
         int cudaRuntimeGetVersion(int *v);\n\
         int main(void) {\n\
           int v = 0;\n\
           cudaRuntimeGetVersion(&v);\n\
           const char *preload = getenv(\"LD_PRELOAD\");\n\
           printf(\"LD_PRELOAD=%s\\n\", preload ? preload : \"\");\n\
           return 0;\n\
         }\n",
    );
    let nvidia = base.join("nvidia").display().to_string();
    let rpath = format!("-Wl,-rpath,{nvidia}");
    cc(
        &base.join("bin"),
        &["-o", "app", "app.c", &format!("-L{nvidia}"), "-lcudart", &rpath, "-Wl,--disable-new-dtags"],
    );
    let program = base.join("bin/app");
    // peerpool's runtime, as its build names it.
    write(&base.join("peerpool/runtime.c"), &runtime("peerpool's runtime answered"));
    cc(
        &base.join("peerpool"),
        &["-shared", "-fPIC", "-Wl,-soname,libcudart.so.13", "-o", "libpeerpool_cudart13.so", "runtime.c"],
    );
    // A library the environment preloads already: it stays, after peerpool's.
    write(&base.join("extra/extra.c"), "int peerpool_test_extra = 1;\n");
    cc(&base.join("extra"), &["-shared", "-fPIC", "-o", "libextra.so", "extra.c"]);
    let extra = base.join("extra/libextra.so");

    // Without peerpool sim, the RPATH wins over LD_LIBRARY_PATH: the preload is what decides.
    std::fs::create_dir(base.join("links")).unwrap();
    std::os::unix::fs::symlink(base.join("peerpool/libpeerpool_cudart13.so"), base.join("links/libcudart.so.13"))
        .unwrap();
    let direct = Command::new(&program).env("LD_LIBRARY_PATH", base.join("links")).env_remove("LD_PRELOAD").output();
    let direct = direct.unwrap();
    assert!(stdout(&direct).starts_with("NVIDIA's runtime answered\n"), "{}", stdout(&direct));

    let empty = base.join("no-runtime");
    std::fs::create_dir(&empty).unwrap();
    let peerpool = base.join("peerpool");
    let installed = base.join("shim/peerpool-libcuda/libcudart.so.13");
    let libcuda = libcuda_stand_in(base);
    let run = [
        &["--".as_ref(), program.as_os_str()][..],
        &["--real".as_ref(), "--libcuda".as_ref(), libcuda.as_os_str(), "--".as_ref(), program.as_os_str()],
    ];
    for args in run {
        let output = sim(base, &peerpool, args).env("LD_PRELOAD", &extra).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}: {}", stderr(&output));
        let expected = format!("peerpool's runtime answered\nLD_PRELOAD={}:{}\n", installed.display(), extra.display());
        assert_eq!(stdout(&output), expected, "{args:?}: {}", stderr(&output));
        assert_eq!(std::fs::read_link(&installed).unwrap(), peerpool.join("libpeerpool_cudart13.so"));
    }
    // Named without a slash, the program is found on PATH as the shell would find it.
    let path = std::env::join_paths([base.join("bin"), "/usr/bin".into(), "/bin".into()]).unwrap();
    let output = sim(base, &peerpool, &["--".as_ref(), "app".as_ref()]).env("PATH", path).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("peerpool's runtime answered\nLD_PRELOAD={}\n", installed.display()));

    // Without peerpool's runtime the program is refused in one line, and the link an earlier
    // run made is gone.
    for args in run {
        let output = sim(base, &empty, args).output().unwrap();
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(BAD_INPUT), "{args:?}: {text}");
        assert_eq!(
            text,
            format!(
                "peerpool sim: {} needs libcudart.so.13 and peerpool's runtime library for it was not found (build it \
                 with cargo build -p peerpool-cudart13, or set PEERPOOL_CUDART_DIR)\n",
                program.display()
            )
        );
        assert!(stdout(&output).is_empty());
        assert!(std::fs::symlink_metadata(&installed).is_err(), "{} is left", installed.display());
    }
}

/// A program that is no ELF file, a script, is run as it is, whatever the runtime.
#[test]
fn a_script_runs_as_it_is() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    let script = write(&base.join("script"), "#!/bin/sh\necho \"a script ran\"\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Once it has run, no other test's child holds the descriptor it was written through.
    let direct = support::output_of_copy(&mut Command::new(&script), &script);
    assert!(direct.status.success());
    let empty = base.join("no-runtime");
    std::fs::create_dir(&empty).unwrap();
    let output = sim(base, &empty, &["--".as_ref(), script.as_os_str()]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "a script ran\n");
}

/// `--cudart MAJOR` preloads that runtime for a program whose own file does not need it (an
/// interpreter whose libraries load it); without the library it is refused in one line.
#[test]
fn cudart_preloads_the_runtime_asked_for() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    let script = write(&base.join("script"), "#!/bin/sh\necho \"LD_PRELOAD=$LD_PRELOAD\"\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let direct = support::output_of_copy(&mut Command::new(&script), &script);
    assert!(direct.status.success());
    let peerpool = base.join("peerpool");
    std::fs::create_dir(&peerpool).unwrap();
    cc(
        &peerpool,
        &["-shared", "-fPIC", "-Wl,-soname,libcudart.so.12", "-o", "libpeerpool_cudart12.so", "-x", "c", "/dev/null"],
    );
    let installed = base.join("shim/peerpool-libcuda/libcudart.so.12");
    let args = ["--cudart".as_ref(), "12".as_ref(), "--".as_ref(), script.as_os_str()];
    let output = sim(base, &peerpool, &args).env_remove("LD_PRELOAD").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("LD_PRELOAD={}\n", installed.display()));
    let empty = base.join("no-runtime");
    std::fs::create_dir(&empty).unwrap();
    let output = sim(base, &empty, &args).output().unwrap();
    assert_eq!(output.status.code(), Some(BAD_INPUT), "{}", stderr(&output));
    assert!(stderr(&output).contains("needs libcudart.so.12 and peerpool's runtime library for it was not found"));
}
