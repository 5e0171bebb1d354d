//! What the command's tests share.

use std::path::PathBuf;
use std::process::Command;

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
