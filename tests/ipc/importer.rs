//! The importing process of `tests/ipc.rs`: the test binary run again as its own child in the
//! role [`IMPORTER`] (`peerpool::child`), its task and the pair as arguments, the channel as its
//! stdin. It imports one offer, runs its task, and sends back one line: `ok`, `fail: <why>`, or
//! `cuda: <call> <code> sticky=<bool>` for a driver error (an expected fault included).

use peerpool::child::{Call, ChildError, Role, inherited_channel};
use peerpool::driver::LaunchShape;
use peerpool::ipc::{Channel, ShareError};
use peerpool::kernels::BLOCK;
use peerpool::{CudaError, DeviceSlice, PoolOptions, System};
use std::time::Duration;

/// The importer: `task` (a [`Task`]'s name), and the pair in the parent's numbering.
pub const IMPORTER: Role = Role::new("ipc-importer", &["task", "owner", "accessor"]);

/// The shared buffer: data words, then system-atomic counters.
pub struct Layout;

impl Layout {
    /// Data words (4 MiB).
    pub const WORDS: u64 = 1 << 20;
    /// Counters after the data.
    pub const SLOTS: u64 = 64;
    pub const BYTES: usize = ((Self::WORDS + Self::SLOTS) * 4) as usize;
    /// What the exporter writes first, and what the importer writes over it.
    pub const SEED: u32 = 0x1d;
    pub const WRITTEN: u32 = 0x2e;
    const SHAPE: LaunchShape = LaunchShape { grid: 132, block: BLOCK };
    const REPS: u32 = 100;

    /// The data words of the shared buffer.
    pub fn data(buffer: DeviceSlice<'_>) -> peerpool::Result<DeviceSlice<'_>> {
        buffer.range(0, Self::WORDS * 4)
    }

    /// The counters after the data.
    pub fn counters(buffer: DeviceSlice<'_>) -> peerpool::Result<DeviceSlice<'_>> {
        buffer.range(Self::WORDS * 4, Self::SLOTS * 4)
    }

    /// Each counter after `devices` launches of the atomic kernel.
    pub fn expected_count(devices: u64) -> u64 {
        devices * (Self::SHAPE.grid as u64 * Self::SHAPE.block as u64 / Self::SLOTS) * Self::REPS as u64
    }
}

/// What the importer does with the memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// Grant the accessor; read on both GPUs, write on the accessor, add atomically on both.
    ReadWriteAdd,
    /// No grant: the owner reads, then the accessor's read must fault.
    Ungranted,
    /// Legacy IPC memory: the owner reads and writes; the accessor cannot be granted.
    Legacy,
    /// Close, then every use is a typed error and the process's CUDA context stays usable.
    Closed,
    /// The offer's export data is garbage: a typed, non-sticky error.
    Garbage,
}

const TASKS: [Task; 5] = [Task::ReadWriteAdd, Task::Ungranted, Task::Legacy, Task::Closed, Task::Garbage];

impl Task {
    pub fn name(self) -> &'static str {
        match self {
            Task::ReadWriteAdd => "read_write_add",
            Task::Ungranted => "ungranted",
            Task::Legacy => "legacy",
            Task::Closed => "closed",
            Task::Garbage => "garbage",
        }
    }
}

/// The child's whole life: import, run its task, send the report over the channel. Its own
/// result (the child's report line) is whether that conversation took place.
pub fn serve(call: &Call) -> Result<(), ChildError> {
    let channel = inherited_channel().map_err(|e| format!("no channel on stdin: {e}"))?;
    channel.set_timeout(Some(Duration::from_secs(90)))?;
    let task = call.arg("task")?;
    let (owner, accessor) = (call.value("owner")?, call.value("accessor")?);
    let report = match TASKS.into_iter().find(|t| t.name() == task) {
        Some(task) => run(&channel, task, owner, accessor).unwrap_or_else(|e| e),
        None => format!("fail: no task {task:?}"),
    };
    Ok(channel.send(report.as_bytes(), &[])?)
}

fn cuda(e: &CudaError) -> String {
    format!("cuda: {} {} sticky={}", e.call, e.code_name(), e.sticky)
}

fn api(e: peerpool::Error) -> String {
    e.cuda().map_or_else(|| format!("fail: {e}"), cuda)
}

fn share(e: ShareError) -> String {
    e.cuda().map_or_else(|| format!("fail: {e}"), cuda)
}

/// The data words of `buffer` read back as `seed` on `device`.
fn reads(system: &System, device: usize, buffer: DeviceSlice<'_>, seed: u32) -> Result<(), String> {
    let seen = system.with_kernels(device, |k| k.compare_pattern(Layout::data(buffer)?, seed)).map_err(api)?;
    if seen.is_clean() { Ok(()) } else { Err(format!("fail: gpu{device} read {seen:?}")) }
}

/// The context still works: a private pool, a fill and a check on `device`.
fn still_alive(system: &System, device: usize) -> Result<(), String> {
    let pool = system.create_pool(device, PoolOptions::default()).map_err(api)?;
    let memory = system.alloc(pool.as_ref(), 4096).map_err(api)?;
    system.with_kernels(device, |k| k.fill(memory.as_slice(), 9)).map_err(api)?;
    let seen = system.with_kernels(device, |k| k.compare_pattern(memory.as_slice(), 9)).map_err(api)?;
    if seen.is_clean() { Ok(()) } else { Err("fail: the context misbehaves after the error".into()) }
}

fn run(channel: &Channel, task: Task, owner: usize, accessor: usize) -> Result<String, String> {
    let system = System::open().map_err(api)?;
    let report = run_on(&system, channel, task, owner, accessor);
    // On a simulated machine (the libcuda shim) this process's projected wall time, on stdout,
    // for the exporter to charge: it waited for this process.
    if let Some(timeline) = system.driver().timeline() {
        println!("{}", peerpool::child::wall_line(timeline.wall()));
    }
    report
}

/// The task on `system`: the real driver in the child, a simulator in the stand-in mode.
pub fn run_on(system: &System, channel: &Channel, task: Task, owner: usize, accessor: usize) -> Result<String, String> {
    let system = system.clone();
    match task {
        Task::ReadWriteAdd => {
            let imported = system.import(channel, &[accessor]).map_err(share)?;
            let buffer = imported.as_slice().map_err(share)?;
            reads(&system, owner, buffer, Layout::SEED)?;
            reads(&system, accessor, buffer, Layout::SEED)?;
            system.with_kernels(accessor, |k| k.fill(Layout::data(buffer)?, Layout::WRITTEN)).map_err(api)?;
            reads(&system, owner, buffer, Layout::WRITTEN)?;
            let (counters, reps, shape) = (Layout::counters(buffer).map_err(api)?, Layout::REPS, Layout::SHAPE);
            std::thread::scope(|s| {
                let other = s.spawn(|| system.with_kernels(accessor, |k| k.atomic_add_sys(counters, reps, shape)));
                let here = system.with_kernels(owner, |k| k.atomic_add_sys(counters, reps, shape));
                here.and(other.join().unwrap_or_else(|_| Err(peerpool::Error::InvalidArgument("panic".into()))))
            })
            .map_err(api)?;
            Ok("ok".into())
        }
        Task::Ungranted => {
            let imported = system.import(channel, &[]).map_err(share)?;
            let buffer = imported.as_slice().map_err(share)?;
            reads(&system, owner, buffer, Layout::SEED)?;
            match system.with_kernels(accessor, |k| k.compare_pattern(Layout::data(buffer)?, Layout::SEED)) {
                Err(e) => Ok(api(e)),
                Ok(seen) => Ok(format!("fail: the accessor read ungranted memory: {seen:?}")),
            }
        }
        Task::Legacy => {
            let mut imported = system.import(channel, &[]).map_err(share)?;
            let refused = imported.grant(accessor);
            if refused != Err(ShareError::LegacyNotGrantable { owner, accessor }) {
                return Err(format!("fail: granting legacy memory to gpu{accessor} gave {refused:?}"));
            }
            let buffer = imported.as_slice().map_err(share)?;
            reads(&system, owner, buffer, Layout::SEED)?;
            system.with_kernels(owner, |k| k.fill(Layout::data(buffer)?, Layout::WRITTEN)).map_err(api)?;
            Ok("ok".into())
        }
        Task::Closed => {
            let mut imported = system.import(channel, &[accessor]).map_err(share)?;
            reads(&system, accessor, imported.as_slice().map_err(share)?, Layout::SEED)?;
            imported.close().map_err(share)?;
            let uses = [imported.ptr().err(), imported.grant(accessor).err(), imported.read_at(0, &mut [0; 4]).err()];
            if uses.iter().any(|e| *e != Some(ShareError::Closed)) {
                return Err(format!("fail: a closed import answered {uses:?}"));
            }
            imported.close().map_err(share)?;
            still_alive(&system, accessor)?;
            Ok("ok".into())
        }
        Task::Garbage => match system.import(channel, &[]) {
            Ok(imported) => Err(format!("fail: garbage export data imported: {imported:?}")),
            Err(refused) => {
                still_alive(&system, owner)?;
                Ok(share(refused))
            }
        },
    }
}
