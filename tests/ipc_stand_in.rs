//! `tests/ipc.rs`'s checks on simulators, in every `cargo test`: the exporter on one simulator,
//! the importer in a thread on another (two simulators stand for two processes; they map the
//! same shared files). This checks the hardware suite's own logic where there is no GPU;
//! process boundaries and the real driver are not exercised here (`tests/ipc.rs` through the
//! libcuda shim exercises the first, `ci/shim-matrix.sh`).

mod ipc {
    pub mod importer;
    pub mod suite;
}

fn main() -> std::process::ExitCode {
    ipc::suite::main(true)
}
