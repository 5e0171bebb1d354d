//! What the command's tests share.
// Each test binary that includes it uses its own part.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The built `peerpool` binary, found at run time (tests in an archive run from another path
/// than the build's): nextest names it in `NEXTEST_BIN_EXE_peerpool`; under `cargo test` it lies
/// in `target/<profile>/`, above the `deps/` directory that holds this test.
pub fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("NEXTEST_BIN_EXE_peerpool") {
        return PathBuf::from(path);
    }
    peerpool::child::build_dir().expect("the test lies in target/<profile>/deps").join("peerpool")
}

/// The command, its hardware settings cleared: a GPU job may set them for the whole run
/// (`PEERPOOL_REQUIRE_GPUS` refuses a simulated topology), and these tests pick their own.
pub fn command() -> Command {
    let mut command = Command::new(binary());
    command.env_remove("PEERPOOL_REQUIRE_GPUS");
    for name in std::iter::once(peerpool_sim::env::TOPOLOGY).chain(peerpool_sim::env::TOPOLOGY_ALIASES) {
        command.env_remove(name);
    }
    command
}

/// `command`'s output, where it runs `copy`, a copy of the binary just written. A test thread
/// that forks while the copy's write descriptor is open (between another child's fork and
/// exec) makes the exec fail with ETXTBSY for a moment: it is tried again.
pub fn output_of_copy(command: &mut Command, copy: &Path) -> Output {
    for _ in 0..100 {
        match command.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            result => return result.unwrap(),
        }
    }
    panic!("{} stayed busy for 2 s", copy.display())
}
