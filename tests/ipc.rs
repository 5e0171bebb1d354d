//! Inter-process sharing on real GPU pairs, between two real processes: this binary exports
//! memory of the pair's owner GPU and runs itself again as the importer (`ipc/importer.rs`),
//! with one end of a socketpair as its stdin, in the child role `ipc-importer` (`peerpool::child`).
//!
//! The importer's kernels on the owner GPU and on the accessor GPU read, write and atomically
//! update exported pool and virtual memory after the importer's own grant, and the exporter sees
//! every write; without its grant the importer's accessor kernel faults (in the importer, which
//! reports and ends; this process is untouched). Legacy IPC refuses pool memory and works on
//! `cuMemAlloc` memory; closed imports and garbage export data give typed errors. Every child
//! runs under a timeout and is killed past it.
//!
//! Through the libcuda shim (`peerpool sim -- cargo test --test ipc`, as `ci/shim-matrix.sh`
//! runs it) both processes get a simulator of their own, and they share the exported memory.
//! `PEERPOOL_IPC_AGAINST=sim` runs the same checks on simulators (as `tests/ipc_stand_in.rs` does
//! in every `cargo test`).

mod ipc {
    pub mod importer;
    pub mod suite;
}

fn main() -> std::process::ExitCode {
    ipc::suite::main(std::env::var("PEERPOOL_IPC_AGAINST").is_ok_and(|v| v == "sim"))
}
