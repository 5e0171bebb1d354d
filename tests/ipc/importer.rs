//! The importing process of `tests/ipc.rs`: the test binary re-executed with the role in
//! [`ROLE_ENV`], the pair in [`PAIR_ENV`] and the channel as its stdin. It imports one offer,
//! runs its role, and sends back one line: `ok`, `fail: <why>`, or
//! `cuda: <call> <code> sticky=<bool>` for a driver error (an expected fault included).

use peerpool::driver::LaunchShape;
use peerpool::ipc::{Channel, ShareError, inherited_channel};
use peerpool::kernels::BLOCK;
use peerpool::{CudaError, DeviceSlice, PoolOptions, System};
use std::process::ExitCode;
use std::time::Duration;

/// Set to the importer's role in the child.
pub const ROLE_ENV: &str = "PEERPOOL_IPC_IMPORTER";
/// `<owner>,<accessor>` in the child.
pub const PAIR_ENV: &str = "PEERPOOL_IPC_PAIR";

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
pub enum Role {
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

const ROLES: [Role; 5] = [Role::ReadWriteAdd, Role::Ungranted, Role::Legacy, Role::Closed, Role::Garbage];

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::ReadWriteAdd => "read_write_add",
            Role::Ungranted => "ungranted",
            Role::Legacy => "legacy",
            Role::Closed => "closed",
            Role::Garbage => "garbage",
        }
    }
}

/// The child's whole life: import, run the role, report, exit.
pub fn main(role: &str) -> ExitCode {
    let channel = match inherited_channel() {
        Ok(channel) => channel,
        Err(e) => {
            eprintln!("ipc importer: no channel on stdin: {e}");
            return ExitCode::FAILURE;
        }
    };
    let _ = channel.set_timeout(Some(Duration::from_secs(90)));
    let pair = std::env::var(PAIR_ENV).ok().and_then(|p| {
        let (o, a) = p.split_once(',')?;
        Some((o.parse().ok()?, a.parse().ok()?))
    });
    let report = match (ROLES.into_iter().find(|r| r.name() == role), pair) {
        (Some(role), Some((owner, accessor))) => run(&channel, role, owner, accessor).unwrap_or_else(|e| e),
        _ => format!("fail: bad role {role:?} or pair {pair:?}"),
    };
    let _ = channel.send(report.as_bytes(), &[]);
    ExitCode::SUCCESS
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

fn run(channel: &Channel, role: Role, owner: usize, accessor: usize) -> Result<String, String> {
    let system = System::open().map_err(api)?;
    let report = run_on(&system, channel, role, owner, accessor);
    // On a simulated machine (the libcuda shim) this process's projected wall time, on stdout,
    // for the exporter to charge: it waited for this process.
    if let Some(timeline) = system.driver().timeline() {
        println!("{}", peerpool::child::wall_line(timeline.wall()));
    }
    report
}

/// The role on `system`: the real driver in the child, a simulator in the stand-in mode.
pub fn run_on(system: &System, channel: &Channel, role: Role, owner: usize, accessor: usize) -> Result<String, String> {
    let system = system.clone();
    match role {
        Role::ReadWriteAdd => {
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
        Role::Ungranted => {
            let imported = system.import(channel, &[]).map_err(share)?;
            let buffer = imported.as_slice().map_err(share)?;
            reads(&system, owner, buffer, Layout::SEED)?;
            match system.with_kernels(accessor, |k| k.compare_pattern(Layout::data(buffer)?, Layout::SEED)) {
                Err(e) => Ok(api(e)),
                Ok(seen) => Ok(format!("fail: the accessor read ungranted memory: {seen:?}")),
            }
        }
        Role::Legacy => {
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
        Role::Closed => {
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
        Role::Garbage => match system.import(channel, &[]) {
            Ok(imported) => Err(format!("fail: garbage export data imported: {imported:?}")),
            Err(refused) => {
                still_alive(&system, owner)?;
                Ok(share(refused))
            }
        },
    }
}
