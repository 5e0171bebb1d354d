//! Two real processes, each with a simulator of its own, sharing memory as two processes on
//! GPUs do: this test binary exports and runs itself again as the other process, in one of the
//! child roles below (`peerpool::child`, served by `main` before the harness runs), with a
//! socketpair as its stdin. The importer maps the exporter's shared files, so bytes and
//! system-scope atomics meet; once the exporter has exited its handles name nothing (a known
//! difference: a real exported fd keeps the memory alive).

#[path = "../../tests/role_trials/mod.rs"]
mod role_trials;
mod sim_support;

use peerpool::child::{ChildError, Role, Roles, Running, inherited_channel, spawn_with_channel};
use peerpool::driver::{ExportedHandleRef, HandleKinds, LaunchShape, PointerAttribute};
use peerpool::ipc::{Channel, HandleKind, ShareError, ShareRequest};
use peerpool::kernels::BLOCK;
use peerpool::{CudaCode, PoolOptions, System};
use peerpool_sim::Topology;
use role_trials::roles_or_tests;
use sim_support::sim;
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::time::Duration;

/// Imports, granting gpu1, and adds beside the exporter.
const IMPORTER: Role = Role::new("importer", &[]);
/// Exports pool and `cuMemAlloc` memory, sends both offers and exits.
const EXPORTER: Role = Role::new("exporter", &[]);
/// Imports memory of the exporter's gpu1 with CUDA_VISIBLE_DEVICES showing it the GPUs `view`
/// names (`1`: that GPU alone, `0`: only the other one).
const VIEWER: Role = Role::new("viewer", &["view"]);

const FD: ShareRequest = ShareRequest { handle: HandleKind::PosixFd, allow_staging: false };
const TIMEOUT: Duration = Duration::from_secs(60);
const WORDS: u64 = 1 << 14;
const SLOTS: u64 = 64;
const SHAPE: LaunchShape = LaunchShape { grid: 8, block: BLOCK };
const REPS: u32 = 20;

fn main() -> ExitCode {
    let roles = Roles::new()
        .reporting(IMPORTER, |_| importer())
        .reporting(EXPORTER, |_| exporter())
        .reporting(VIEWER, |call| importer_of_gpu1(call.arg("view")?));
    roles_or_tests(
        roles,
        &[
            ("another_process_reads_writes_and_adds_on_both_gpus", another_process_reads_writes_and_adds_on_both_gpus),
            (
                "handles_from_a_process_that_has_exited_name_nothing",
                handles_from_a_process_that_has_exited_name_nothing,
            ),
            (
                "an_importer_that_sees_other_devices_finds_the_memory_on_the_same_gpu",
                an_importer_that_sees_other_devices_finds_the_memory_on_the_same_gpu,
            ),
        ],
    )
}

/// This binary as the other process, in `role` with `args`.
fn other_process(role: Role, args: &[(&str, &str)]) -> (Channel, Running) {
    let mut command = role.command();
    for (name, value) in args {
        command.arg(name, value);
    }
    let command = command.build().expect("this test binary");
    let (channel, child) = spawn_with_channel(command, TIMEOUT).expect("the other process starts");
    channel.set_timeout(Some(TIMEOUT)).unwrap();
    (channel, child)
}

fn finish(child: Running) {
    let (outcome, _) = child.wait_reporting();
    if let Err(e) = outcome.expect_ok() {
        panic!("the other process: {e}");
    }
}

fn system() -> System {
    let (_, system) = sim(Topology::two_h200());
    system.set_scratch_bytes(4096).unwrap();
    system
}

fn text(channel: &Channel) -> String {
    String::from_utf8_lossy(&channel.recv().expect("a message").bytes).into_owned()
}

fn another_process_reads_writes_and_adds_on_both_gpus() {
    let system = system();
    let options = PoolOptions { handle_types: HandleKinds::POSIX_FD, max_size: 0 };
    let pool = system.create_pool(0, options).unwrap();
    let memory = system.alloc(pool.as_ref(), ((WORDS + SLOTS) * 4) as usize).unwrap();
    let (data, counters) = (memory.words(WORDS).unwrap(), memory.as_slice().range(WORDS * 4, SLOTS * 4).unwrap());
    system.kernels(0).unwrap().fill(data, 11).unwrap();
    let (channel, child) = other_process(IMPORTER, &[]);
    system.export_allocation(&memory, FD).unwrap().send(&channel).unwrap();
    // The importer's GPUs add while this process's GPU adds: one atomic step each, across processes.
    assert_eq!(text(&channel), "adding");
    system.kernels(0).unwrap().atomic_add_sys(counters, REPS, SHAPE).unwrap();
    assert_eq!(text(&channel), "ok");
    finish(child);
    assert!(system.kernels(0).unwrap().compare_pattern(data, 12).unwrap().is_clean(), "the importer's write is here");
    let per_launch = SHAPE.grid as u64 * SHAPE.block as u64 / SLOTS * REPS as u64;
    let seen = memory.read_words((WORDS + SLOTS) as usize).unwrap();
    assert!(
        seen[WORDS as usize..].iter().all(|&c| c as u64 == 3 * per_launch),
        "counters: {:?}",
        &seen[WORDS as usize..]
    );
}

/// Imports, granting gpu1; both GPUs read the exporter's seed, gpu1 writes another, then both
/// add to the counters while the exporter does.
fn importer() -> Result<(), ChildError> {
    let channel = inherited_channel()?;
    channel.set_timeout(Some(TIMEOUT)).unwrap();
    let system = system();
    let imported = system.import(&channel, &[1]).unwrap();
    let buffer = imported.as_slice().unwrap();
    let (data, counters) = (buffer.range(0, WORDS * 4).unwrap(), buffer.range(WORDS * 4, SLOTS * 4).unwrap());
    for device in [0, 1] {
        assert!(system.kernels(device).unwrap().compare_pattern(data, 11).unwrap().is_clean(), "gpu{device} reads");
    }
    system.kernels(1).unwrap().fill(data, 12).unwrap();
    channel.send(b"adding", &[]).unwrap();
    std::thread::scope(|s| {
        let peer = s.spawn(|| system.kernels(1).unwrap().atomic_add_sys(counters, REPS, SHAPE).unwrap());
        system.kernels(0).unwrap().atomic_add_sys(counters, REPS, SHAPE).unwrap();
        peer.join().unwrap();
    });
    channel.send(b"ok", &[])?;
    Ok(())
}

fn handles_from_a_process_that_has_exited_name_nothing() {
    let (channel, child) = other_process(EXPORTER, &[]);
    let (pool, legacy) = (channel.recv().unwrap(), channel.recv().unwrap());
    finish(child);
    let system = system();
    let refused = |r: Result<peerpool::ipc::Imported, ShareError>| r.unwrap_err().cuda().map(|e| (e.call, e.code));
    let invalid = CudaCode::CUDA_ERROR_INVALID_VALUE;
    assert_eq!(refused(system.import_message(pool, &[])), Some(("cuMemPoolImportFromShareableHandle", invalid)));
    assert_eq!(refused(system.import_message(legacy, &[])), Some(("cuIpcOpenMemHandle", invalid)));
}

/// Exports pool memory and `cuMemAlloc` memory, sends both offers and exits.
fn exporter() -> Result<(), ChildError> {
    let channel = inherited_channel()?;
    let system = system();
    let options = PoolOptions { handle_types: HandleKinds::POSIX_FD, max_size: 0 };
    let pool = system.create_pool(0, options).unwrap();
    let memory = system.alloc(pool.as_ref(), 4096).unwrap();
    system.export_allocation(&memory, FD).unwrap().send(&channel).unwrap();
    let legacy = system.alloc_legacy(1, 4096).unwrap();
    system.export_allocation(&legacy, FD).unwrap().send(&channel)?;
    Ok(())
}

fn an_importer_that_sees_other_devices_finds_the_memory_on_the_same_gpu() {
    // This process sees both GPUs and shares memory on gpu1.
    let system = system();
    let options = PoolOptions { handle_types: HandleKinds::POSIX_FD, max_size: 0 };
    let pool = system.create_pool(1, options).unwrap();
    let memory = system.alloc(pool.as_ref(), 4096).unwrap();
    system.kernels(1).unwrap().fill(memory.as_slice(), 21).unwrap();
    for (view, answer) in [("1", "pool; read on its gpu0"), ("0", "CUDA_ERROR_INVALID_DEVICE; not visible")] {
        let (channel, child) = other_process(VIEWER, &[("view", view)]);
        system.export_allocation(&memory, FD).unwrap().send(&channel).unwrap();
        assert_eq!(text(&channel), answer, "seeing gpu {view}");
        finish(child);
    }
}

/// With CUDA_VISIBLE_DEVICES as `view`, receives memory the exporter made on its gpu1 and says
/// what became of it: the driver's own import of the pool handle (on the GPU this process numbers
/// 0 when it sees that GPU, else `CUDA_ERROR_INVALID_DEVICE`), then peerpool's import (read on
/// that GPU, else refused before any driver call).
fn importer_of_gpu1(view: &str) -> Result<(), ChildError> {
    let channel = inherited_channel()?;
    let (_, system) = sim(Topology::two_h200().visible(view).ok_or("a view that names a GPU twice")?);
    let message = channel.recv().unwrap();
    let driver = system.driver();
    let fd = ExportedHandleRef::Fd(message.fds[0].as_fd());
    // SAFETY: the fd is the pool handle the exporter sent; a pool imported is destroyed at once.
    let raw = match unsafe { driver.mem_pool_import_from_shareable_handle(fd) } {
        Ok(pool) => unsafe { driver.mem_pool_destroy(pool) }.map_or_else(|e| e.code.name(), |()| "pool".into()),
        Err(e) => e.code.name(),
    };
    let peerpool = match system.import_message(message, &[]) {
        Ok(imported) => {
            let ptr = imported.as_slice().unwrap().ptr();
            let ordinal = system.driver().pointer_get_attribute(ptr, PointerAttribute::DeviceOrdinal).ok();
            let clean =
                system.kernels(0).unwrap().compare_pattern(imported.as_slice().unwrap(), 21).unwrap().is_clean();
            match (ordinal, clean) {
                (Some(0), true) => "read on its gpu0".to_string(),
                other => format!("imported, but {other:?}"),
            }
        }
        Err(ShareError::DeviceNotVisible { exporter_ordinal: 1, .. }) => "not visible".into(),
        Err(e) => e.to_string(),
    };
    channel.send(format!("{raw}; {peerpool}").as_bytes(), &[])?;
    Ok(())
}
