//! `peerpool sim` checks every setting as the libcuda shim will read it, those of its options
//! and those the environment already holds, and refuses a mistake with exit status 2 and one
//! line before it runs anything.

mod support;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

/// `peerpool sim ARGS --print-env` with a stand-in shim (only its path is used), the shim's
/// settings cleared and then `env` set.
fn sim(shim_dir: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Command {
    let shim = shim_dir.join("libpeerpool_shim.so");
    std::fs::write(&shim, b"a stand-in").unwrap();
    let mut command = support::command();
    command.arg("sim").arg("--shim").arg(&shim).args(args).arg("--print-env");
    for name in peerpool_sim::env::VARIABLES.iter().chain(&["CUDA_VISIBLE_DEVICES"]) {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    command
}

fn refused(output: &Output, says: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{says}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(says), "{says}: {stderr}");
}

/// A socket, or a terminal the process does not have, was called "a FIFO with no reader".
#[test]
fn a_trace_that_cannot_be_opened_is_named_for_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let output = sim(dir.path(), &["--trace", socket.to_str().unwrap()], &[]).output().unwrap();
    refused(&output, "is a socket");
    // In a session of its own the command has no controlling terminal: /dev/tty names none.
    let mut detached = sim(dir.path(), &["--trace", "/dev/tty"], &[]);
    // SAFETY: setsid is async-signal-safe and touches only the child between fork and exec.
    unsafe {
        detached.pre_exec(|| match libc::setsid() {
            -1 => Err(std::io::Error::last_os_error()),
            _ => Ok(()),
        })
    };
    let output = detached.output().unwrap();
    refused(&output, "no controlling terminal");
}

/// The environment's own settings reach the program too: they are checked as the options are
/// (a topology given by the environment once was not).
#[test]
fn settings_the_environment_holds_are_checked_before_the_program_runs() {
    use std::ffi::{OsStr, OsString};
    use std::os::unix::ffi::OsStringExt;
    let dir = tempfile::tempdir().unwrap();
    let not_utf8 = OsString::from_vec(b"0\xff".to_vec());
    let cases: [(&str, &OsStr, &str); 7] = [
        ("PEERPOOL_TOPOLOGY", OsStr::new("no_such_machine"), "no such catalog topology"),
        ("PEERPOOL_TOPOLOGY", OsStr::new("./nowhere.toml"), "does not exist"),
        ("PEERPOOL_SIM_TOPOLOGY", OsStr::new("no_such_machine"), "no such catalog topology"),
        ("PEERPOOL_SIM_FAULTS", OsStr::new("cuMemPoolSetAcess=OUT_OF_MEMORY"), "did you mean cuMemPoolSetAccess"),
        ("PEERPOOL_SIM_SEED", OsStr::new("many"), "not a number"),
        ("CUDA_VISIBLE_DEVICES", &not_utf8, "not UTF-8"),
        ("PEERPOOL_TOPOLOGY", &not_utf8, "not UTF-8"),
    ];
    for (name, value, says) in cases {
        let output = sim(dir.path(), &[], &[(name, value)]).output().unwrap();
        refused(&output, says);
        assert!(String::from_utf8_lossy(&output.stderr).contains(name), "{name}");
    }
    // What the options give wins over the environment, as it does for the program.
    let topology = [("PEERPOOL_TOPOLOGY", OsStr::new("no_such_machine"))];
    let output = sim(dir.path(), &["--topology", "four_gpu_islands"], &topology).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains("export PEERPOOL_TOPOLOGY='four_gpu_islands'"));
    let good = [("PEERPOOL_TOPOLOGY", OsStr::new("four_gpu_islands"))];
    assert_eq!(sim(dir.path(), &[], &good).output().unwrap().status.code(), Some(0));
    // A deprecated name that disagrees with the option is refused, not overridden in silence.
    let stale = [("PEERPOOL_HARDWARE", OsStr::new("one_gpu"))];
    let output = sim(dir.path(), &["--topology", "four_gpu_islands"], &stale).output().unwrap();
    refused(&output, "PEERPOOL_TOPOLOGY=four_gpu_islands and PEERPOOL_HARDWARE=one_gpu disagree");
}

/// The shim goes first on the library path as the driver, and, when it simulates, next as
/// nvJitLink (`peerpool_sim::env::NVJITLINK_NAMES` says why); the path the environment held
/// follows. Passing calls to NVIDIA's driver, nvJitLink is left as it is.
#[test]
fn the_library_path_holds_the_driver_and_when_simulating_nvjitlink() {
    let dir = tempfile::tempdir().unwrap();
    let held = std::ffi::OsStr::new("/opt/held");
    let path = |args: &[&str], libcuda: Option<&Path>| {
        let mut command = sim(dir.path(), args, &[("LD_LIBRARY_PATH", held)]);
        command.args(libcuda.map(|l| vec![std::ffi::OsStr::new("--libcuda"), l.as_os_str()]).unwrap_or_default());
        let output = command.output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let text = String::from_utf8(output.stdout).unwrap();
        let line = text.lines().find(|l| l.starts_with("export LD_LIBRARY_PATH=")).expect("the path").to_owned();
        line.trim_start_matches("export LD_LIBRARY_PATH=").trim_matches('\'').to_owned()
    };
    let simulated = path(&[], None);
    let dirs: Vec<&str> = simulated.split(':').collect();
    assert_eq!(dirs.len(), 3, "{simulated}");
    assert!(dirs[0].ends_with("/peerpool-libcuda") && dirs[1].ends_with("/peerpool-nvjitlink"), "{simulated}");
    assert_eq!(dirs[2], "/opt/held");
    for name in peerpool_sim::env::NVJITLINK_NAMES {
        assert_eq!(std::fs::read_link(Path::new(dirs[1]).join(name)).unwrap(), dir.path().join("libpeerpool_shim.so"));
    }
    let libcuda = dir.path().join("libcuda.so.1");
    std::fs::write(&libcuda, shared_object_header()).unwrap();
    let real = path(&["--real"], Some(&libcuda));
    assert!(real.ends_with("/peerpool-libcuda:/opt/held") && !real.contains("nvjitlink"), "{real}");
}

/// The first bytes of an ELF shared object: enough for `peerpool sim` to take a file for a
/// library (the loader reads the rest).
fn shared_object_header() -> Vec<u8> {
    let mut header = b"\x7fELF\x02\x01\x01".to_vec();
    header.resize(16, 0);
    header.extend(3u16.to_le_bytes()); // ET_DYN
    header
}

/// What would fail only in the program's first `cuInit` is refused before it starts: a trace
/// FIFO that no process reads (the program's calls would wait on it, or lose their trace), a
/// `--libcuda` that is not a library.
#[test]
fn a_trace_fifo_without_a_reader_and_a_libcuda_that_is_no_library_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trace.fifo");
    let made = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(made.as_ptr(), 0o600) }, 0);
    let output = sim(dir.path(), &["--trace", fifo.to_str().unwrap()], &[]).output().unwrap();
    refused(&output, "a FIFO that no process reads");
    // With a reader it is taken (opened without waiting for a writer, before the command runs).
    use std::os::unix::fs::OpenOptionsExt;
    let reader = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
    let output = sim(dir.path(), &["--trace", fifo.to_str().unwrap()], &[]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    drop(reader);
    let text = dir.path().join("libcuda.so.1");
    std::fs::write(&text, b"not a library").unwrap();
    let output = sim(dir.path(), &["--real", "--libcuda", text.to_str().unwrap()], &[]).output().unwrap();
    refused(&output, "not a shared library");
}
