//! What sharing a pool allocation with another process costs, measured across two processes:
//! export (pool handle and pointer), then in the importer pool import, pointer import, the first
//! kernel access on the owner GPU and, with a second GPU, the importer's grant and first kernel
//! access from the peer. Medians in microseconds, printed as JSON. A last allocation goes
//! through peerpool's own import (`System::import_message`: the owner found by its UUID, the
//! range checked), timed once.
//!
//! `cargo run --release --example ipc_bench [rounds]` on a machine with a GPU (two for the peer
//! figures): about 3 s with the default 20 rounds. The example runs itself again as the
//! importer (the child role `ipc-bench-importer`, `peerpool::child`), with the channel as its
//! stdin; every wait has a 25 s timeout, and the importer 25 s per round in all.
//
// SAFETY (every `unsafe` block below): the pools, pointers and handles are what this example made or imported, each used while
// live and released once.

use peerpool::bench::micros;
use peerpool::child::{ChildOutcome, Role, Roles, inherited_channel, spawn_with_channel};
use peerpool::driver::{ExportedHandleRef, HandleKind, HandleKinds, PoolPtrExportData, Stream};
use peerpool::ipc::{Channel, Offer, ShareRequest};
use peerpool::{PoolOptions, PoolRef, System};
use peerpool_sim::{SimDriver, Topology};
use rustix::fd::AsFd;
use serde_json::{Value, json};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// This example as the importing process of `rounds` rounds.
const IMPORTER: Role = Role::new("ipc-bench-importer", &["rounds"]);
const BYTES: usize = 4 << 20;
const TIMEOUT: Duration = Duration::from_secs(25);

type Failure = Box<dyn std::error::Error>;

/// The median of `v` in the report: null for no samples.
fn median(v: Vec<f64>) -> Value {
    json!(peerpool::bench::median(v))
}

fn main() -> ExitCode {
    let importer =
        |call: &peerpool::child::Call| importer_process(call.value("rounds")?).map_err(|e| e.to_string().into());
    if let Some(code) = Roles::new().reporting(IMPORTER, importer).dispatch() {
        return code;
    }
    match exporter_process() {
        Ok(report) => {
            println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{}", json!({ "error": e.to_string() }));
            ExitCode::FAILURE
        }
    }
}

/// `[rounds] [--sim]`: `--sim` runs both sides on simulators in one process (two threads), to
/// check the example itself where there is no GPU; its timings mean nothing.
fn exporter_process() -> Result<Value, Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.iter().find(|a| *a != "--sim").map_or(Ok(20), |a| a.parse())?;
    if args.iter().any(|a| a == "--sim") {
        let open = || System::with_driver(Arc::new(SimDriver::new(Topology::two_h200())));
        let (exporter, importer) = (open()?, open()?);
        let (ours, theirs) = Channel::pair()?;
        let started = Instant::now();
        return std::thread::scope(|s| {
            let child = s.spawn(move || importer_side(&importer, &theirs, rounds).map_err(|e| e.to_string()));
            let report = exporter_side(&exporter, &ours, rounds, started);
            let child = child.join().map_err(|_| "the importer thread panicked")?;
            child?;
            report
        });
    }
    let sys = System::open()?;
    let command = IMPORTER.command().arg("rounds", rounds).build()?;
    let started = Instant::now();
    let limit = TIMEOUT.saturating_mul(u32::try_from(rounds).unwrap_or(u32::MAX).saturating_add(1));
    let (channel, child) = spawn_with_channel(command, limit)?;
    channel.set_timeout(Some(TIMEOUT))?;
    let report = exporter_side(&sys, &channel, rounds, started);
    drop(channel);
    let (outcome, _) = child.wait_reporting();
    let report = report?;
    if let ChildOutcome::TimedOut { .. } = outcome {
        return Err("the importer ran past its timeout and was killed".into());
    }
    Ok(report)
}

fn exporter_side(sys: &System, channel: &Channel, rounds: usize, started: Instant) -> Result<Value, Failure> {
    if sys.device_count() == 0 {
        return Err("no GPU".into());
    }
    let driver = sys.driver().clone();
    let pool = sys.create_pool(0, PoolOptions { handle_types: HandleKinds::POSIX_FD, max_size: 0 })?;
    let request = ShareRequest { handle: HandleKind::PosixFd, allow_staging: false };
    let ready = channel.recv()?;
    let child_ready_ms = started.elapsed().as_secs_f64() * 1e3;
    if ready.bytes != b"ready" {
        return Err(format!("importer: {}", String::from_utf8_lossy(&ready.bytes)).into());
    }

    let (mut export, mut pool_export, mut pointer_export) = (vec![], vec![], vec![]);
    for _ in 0..rounds {
        let memory = sys.alloc(pool.as_ref(), BYTES)?;
        sys.with_kernels(0, |k| k.fill(memory.words(1024)?, 1))?;
        let t = Instant::now();
        let exported = sys.export_allocation(&memory, request)?;
        export.push(micros(t));
        {
            // The two driver calls inside, timed alone (their handles are dropped unused).
            let _current = sys.enter(0)?;
            let t = Instant::now();
            drop(unsafe { driver.mem_pool_export_to_shareable_handle(pool.handle(), HandleKind::PosixFd) }?);
            pool_export.push(micros(t));
            let t = Instant::now();
            unsafe { driver.mem_pool_export_pointer(memory.ptr()) }?;
            pointer_export.push(micros(t));
        }
        exported.send(channel)?;
        let done = channel.recv()?; // the importer is done with this allocation
        if done.bytes != b"done" {
            return Err(format!("importer: {}", String::from_utf8_lossy(&done.bytes)).into());
        }
    }
    // One more through peerpool's import: it finds the owner by UUID and checks the range.
    let memory = sys.alloc(pool.as_ref(), BYTES)?;
    sys.with_kernels(0, |k| k.fill(memory.words(1024)?, 2))?;
    sys.export_allocation(&memory, request)?.send(channel)?;
    let importer: Value = serde_json::from_slice(&channel.recv()?.bytes)?;
    Ok(json!({
        "rounds": rounds,
        "bytes": BYTES,
        "unit": "microseconds (median)",
        "driver": sys.driver().describe(),
        "devices": sys.device_count(),
        "importer_start_to_ready_ms": child_ready_ms,
        "export_total": median(export),
        "export_pool_handle": median(pool_export),
        "export_pointer": median(pointer_export),
        "importer": importer,
    }))
}

/// The importer process: the channel on stdin, the real driver. Its medians go to the exporter
/// over the channel.
fn importer_process(rounds: usize) -> Result<(), Failure> {
    let channel = inherited_channel()?;
    channel.set_timeout(Some(TIMEOUT))?;
    importer_side(&System::open()?, &channel, rounds).map(drop)
}

/// One raw import per round, each step timed; the medians go back to the exporter. A failure is
/// sent too, so the exporter reports it instead of waiting for its timeout.
fn importer_side(sys: &System, channel: &Channel, rounds: usize) -> Result<Value, Failure> {
    let report = import_rounds(sys, channel, rounds);
    match &report {
        Ok(report) => channel.send(serde_json::to_string(report)?.as_bytes(), &[])?,
        Err(e) => {
            let _ = channel.send(format!("failed: {e}").as_bytes(), &[]);
        }
    }
    report
}

fn import_rounds(sys: &System, channel: &Channel, rounds: usize) -> Result<Value, Failure> {
    let peer = (sys.device_count() > 1 && sys.driver().device_can_access_peer(1, 0)?).then_some(1usize);
    // Module loads and the pair's verification happen once per process: not per import.
    let warm = sys.create_pool(0, PoolOptions::default())?;
    let scratch = sys.alloc(warm.as_ref(), 4096)?;
    sys.with_kernels(0, |k| k.fill(scratch.words(1024)?, 1))?;
    if let Some(peer) = peer {
        sys.verify_pair(0, peer)?;
        sys.kernels(peer)?;
    }
    channel.send(b"ready", &[])?;
    let driver = sys.driver().clone();
    let (mut pool_import, mut pointer_import, mut first_owner) = (vec![], vec![], vec![]);
    let (mut grant, mut first_peer, mut release) = (vec![], vec![], vec![]);
    for _ in 0..rounds {
        let message = channel.recv()?;
        let offer = Offer::decode(&message.bytes)?;
        let fd = message.fds.first().ok_or("no fd came with the offer")?;
        let _current = sys.enter(0)?;
        let t = Instant::now();
        let pool = unsafe { driver.mem_pool_import_from_shareable_handle(ExportedHandleRef::Fd(fd.as_fd())) }?;
        pool_import.push(micros(t));
        let t = Instant::now();
        let ptr = unsafe { driver.mem_pool_import_pointer(pool, &PoolPtrExportData(offer.data)) }?;
        pointer_import.push(micros(t));
        let t = Instant::now();
        // SAFETY: the imported allocation, `BYTES` long, held until it is freed below.
        let imported = unsafe { peerpool::DeviceSlice::from_raw(ptr, 4096) };
        let seen = sys.with_kernels(0, |k| k.compare_pattern(imported, 1))?;
        first_owner.push(micros(t));
        if !seen.is_clean() {
            return Err(format!("the importer read wrong bytes: {seen:?}").into());
        }
        if let Some(peer) = peer {
            // SAFETY: the imported pool is live until destroyed below.
            let pool_ref = unsafe { PoolRef::from_raw(pool, 0) }?;
            let t = Instant::now();
            sys.grant(pool_ref, peer)?;
            grant.push(micros(t));
            let t = Instant::now();
            sys.with_kernels(peer, |k| k.compare_pattern(imported, 1))?;
            first_peer.push(micros(t));
        }
        let t = Instant::now();
        unsafe { driver.mem_free_async(ptr, Stream::LEGACY) }?;
        unsafe { driver.stream_synchronize(Stream::LEGACY) }?;
        if let Some(peer) = peer {
            let none = [peerpool::driver::AccessDesc { device: peer as i32, access: peerpool::driver::Access::None }];
            unsafe { driver.mem_pool_set_access(pool, &none) }?;
        }
        unsafe { driver.mem_pool_destroy(pool) }?;
        release.push(micros(t));
        drop(message);
        channel.send(b"done", &[])?;
    }
    let t = Instant::now();
    let imported = sys.import(channel, &[])?;
    let peerpool_import = micros(t);
    let head = imported.as_slice()?.range(0, 4096)?;
    let seen = sys.with_kernels(imported.owner(), |k| k.compare_pattern(head, 2))?;
    if !seen.is_clean() {
        return Err(format!("peerpool's import read wrong bytes: {seen:?}").into());
    }
    Ok(json!({
        "peerpool_import_once": peerpool_import,
        "peerpool_import_owner": imported.owner(),
        "pool_import": median(pool_import),
        "pointer_import": median(pointer_import),
        "first_kernel_access_owner": median(first_owner),
        "grant_peer_on_imported_pool": median(grant),
        "first_kernel_access_peer": median(first_peer),
        "free_pointer_and_destroy_pool": median(release),
    }))
}
