//! The timing model: what each simulated driver call would have taken on real GPUs, and a
//! virtual clock that adds it up into a projected wall time.
//!
//! [`Latencies`] are per-call costs and what they depend on, calibrated on the lent 2 x H200
//! machine (`host/sim/timing/h200.json`, from `host/examples/calibrate.rs` by
//! `ci/gpu-calibrate.sh`: `docs/hardware/2026-12-01-calibration`): process start and `cuInit`
//! (growing with the GPUs a process sees), a context's
//! creation, a module's load, a pool's creation and its first access change, mapping a pool's
//! memory into a peer (the first allocation after a grant, or a grant over live bytes, growing
//! with them), kernels and copies by bytes and path, and a small base cost for everything else.
//!
//! The clock (a machine part shared by every simulated process, and a part per process)
//! follows these rules:
//! - every thread of a simulated process has its own virtual time (a lane); a call starts when
//!   its lane is there, when every device whose engines it occupies is free (work on one device
//!   is serialised, devices run in parallel), and when the locks its kind of work takes are
//!   free ([`Serial`]: per device, per process, per machine, as calibrated), then moves all of
//!   them to its end;
//! - work the real driver queues (launches, asynchronous copies between devices, memsets) is
//!   queued per device and process: the lane moves by the call's own cost only, the device works
//!   on, a synchronisation waits for the device's queue, and an event happens when the queue
//!   reaches it (so events time device work, as on a GPU);
//! - a lane first seen starts at the end of the latest call of its process (a thread spawned
//!   just now); code that knows better says so through [`peerpool::driver::Timeline::set_now`]
//!   (`peerpool::rounds::run` does);
//! - a fork ([`crate::SimDriver::fork`]) is a child process: it starts at its parent's thread's
//!   time plus the process start, calls `cuInit`, creates its contexts and loads its modules
//!   again, and shares the machine's devices and machine-wide locks with its parent;
//! - nothing really sleeps: the clock is a model, computed under the simulator's lock.

use crate::threads::{self, PerThread};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

/// Nanoseconds of virtual time.
pub(crate) type Nanos = u64;

fn ns(micros: f64) -> Nanos {
    if micros.is_finite() && micros > 0.0 { (micros * 1e3).round() as Nanos } else { 0 }
}

/// Which work serialises with which, for one kind of expensive driver work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Serial {
    /// One at a time per device, across every process on the machine.
    pub device: bool,
    /// One at a time per process (libcuda's own lock), whatever the device.
    pub process: bool,
    /// One at a time on the whole machine (the kernel driver's lock), whatever the process;
    /// [`Serial::at_once`] at a time where that is more than one.
    pub machine: bool,
    /// With `machine`: how many may run at once across the machine (1 when absent). `cuInit`
    /// in 2, 4 and 8 processes at once gained 1.8x, 3.0x and 3.0x on the H200s: 3.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub at_once: u32,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl Serial {
    /// One at a time where the flags say so.
    pub const fn one_at_a_time(device: bool, process: bool, machine: bool) -> Serial {
        Serial { device, process, machine, at_once: 1 }
    }
}

/// Per-call latencies of a real machine and what they depend on, in microseconds unless a
/// name says otherwise. Read from JSON (every field optional: missing ones keep the
/// defaults, which are the H200s' as calibrated; unknown ones are refused).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Latencies {
    /// The machine the numbers were measured on.
    pub machine: String,
    /// Where they come from (runs, commits).
    pub source: String,
    /// From `exec` to the first driver call: loading the program and its libraries.
    pub process_start_us: f64,
    /// `cuInit`, libcuda's loading included, with [`Latencies::init_devices`] devices visible
    /// (`System::open` on the two H200s: 230-240 ms).
    pub init_us: f64,
    /// How many devices a process saw when `init_us` was measured.
    pub init_devices: u32,
    /// What each visible device more than [`Latencies::init_devices`] adds to `cuInit` (and
    /// each fewer takes off): `calibrate` times `cuInit` with one device visible and with all
    /// (on the two H200s 120-124 ms and 232-236 ms: 112 ms a device).
    pub init_per_device_us: f64,
    /// From a CUDA process's last call to its parent seeing it gone (its contexts torn down).
    pub process_exit_us: f64,
    /// A kernel's fault surfacing: from the faulting launch to the sticky error (the driver's
    /// recovery; 170-180 ms for a negative probe's on the H200s). Taken under
    /// [`Latencies::fault_serial`]. A file with `fault_exit_us` and without this field is one
    /// written before the two were apart: its fault is in `fault_exit_us`, and this is 0.
    pub fault_us: f64,
    /// From the last call of a process a sticky fault killed (a negative probe) to its parent
    /// seeing it gone: its dead context torn down.
    pub fault_exit_us: f64,
    /// The first `cuDevicePrimaryCtxRetain` of a device in a process, or any `cuCtxCreate`
    /// (95-127 ms on the H200s).
    pub context_create_us: f64,
    /// A context made on a GPU while another process's faulted context there is torn down
    /// ([`Latencies::fault_exit_us`] from its fault): 152-178 ms against 99-114 ms alone on
    /// one H200 (`docs/hardware/2026-12-01-probe-contexts`, `after_fault`). A context that
    /// overlaps such a teardown takes this instead of [`Latencies::context_create_us`].
    pub context_beside_fault_exit_us: f64,
    /// Whether a faulted context's teardown slows new contexts on every GPU, not only its own.
    /// Measured on one H200 only, where the two are the same GPU: false keeps to what was seen.
    pub fault_exit_slows_every_gpu: bool,
    /// `cuModuleLoadData` of a cubin (0.2-0.5 ms).
    pub module_cubin_us: f64,
    /// `cuModuleLoadData` of PTX the driver's JIT cache holds.
    pub module_ptx_cached_us: f64,
    /// The first PTX load for a compute capability on the machine: the JIT (50-112 ms).
    pub module_ptx_jit_us: f64,
    /// Any call not listed here (attributes, queries).
    pub call_us: f64,
    /// `cuCtxGetCurrent`, `cuCtxSetCurrent`, push and pop.
    pub context_switch_us: f64,
    /// `cuMemPoolCreate`.
    pub pool_create_us: f64,
    /// `cuMemPoolDestroy`.
    pub pool_destroy_us: f64,
    /// A `cuMemPoolSetAccess` that grants a peer on a pool holding no memory (0.74 ms).
    pub grant_empty_us: f64,
    /// A `cuMemPoolSetAccess` that changes nothing.
    pub set_access_unchanged_us: f64,
    /// A revoke, plus [`Latencies::revoke_per_gib_us`] per GiB the pool holds.
    pub revoke_us: f64,
    /// A revoke's growth with live bytes.
    pub revoke_per_gib_us: f64,
    /// Mapping a pool's new memory into one peer that has access: the first allocation from
    /// a pool after a grant costs this per peer granted (8.4 ms on the H200s).
    pub map_on_alloc_us: f64,
    /// A grant of a peer over a pool's live memory, the first time that peer is mapped (17.9
    /// ms: allocating first and granting after).
    pub map_on_grant_first_us: f64,
    /// The same grant again after a revoke (9.0 ms with 1 GiB live).
    pub map_on_grant_again_us: f64,
    /// A grant over live memory: growth per GiB the pool holds.
    pub map_per_gib_us: f64,
    /// The first allocation from a pool with no peer (0.06 ms).
    pub alloc_first_us: f64,
    /// An allocation from a pool that already holds memory.
    pub alloc_us: f64,
    /// `cuMemAlloc`.
    pub legacy_alloc_us: f64,
    /// A free (pool or `cuMemAlloc` memory).
    pub free_us: f64,
    /// A stream, context or event synchronisation with nothing left to wait for.
    pub sync_us: f64,
    /// `cuLaunchKernel`'s own cost, before the kernel's work.
    pub launch_us: f64,
    /// A copy call's own cost, before its bytes.
    pub copy_us: f64,
    /// A memset call's own cost, before its bytes.
    pub memset_us: f64,
    /// Bytes per second a kernel reads or writes its own device's memory, GB/s.
    pub local_gbps: f64,
    /// A kernel reading or writing a peer's memory, GB/s.
    pub peer_kernel_gbps: f64,
    /// The copy engine between devices, GB/s.
    pub peer_copy_gbps: f64,
    /// Copies between host and device, GB/s.
    pub host_copy_gbps: f64,
    /// System-scope atomic adds per second on the device's own memory.
    pub atomics_local_per_s: f64,
    /// System-scope atomic adds per second on a peer's memory.
    pub atomics_peer_per_s: f64,
    /// One dependent load of the pointer chase, local / peer, nanoseconds.
    pub chase_local_ns: f64,
    /// See [`Latencies::chase_local_ns`].
    pub chase_peer_ns: f64,
    /// How `cuInit` serialises with other processes' `cuInit`.
    pub init_serial: Serial,
    /// How context creation serialises.
    pub context_serial: Serial,
    /// How mapping pool memory into peers serialises.
    pub map_serial: Serial,
    /// How faults on different GPUs, or in one process, wait for each other. On one GPU they
    /// are one at a time whatever this says: a fault holds its GPU's engines while it surfaces
    /// (`docs/hardware/2026-12-01-probe-contexts`: N at once on one H200 took N times one).
    /// On the H200s two GPUs' faults surfaced at once (`docs/hardware/2026-12-01-one-context-probe`).
    pub fault_serial: Serial,
}

impl Default for Latencies {
    /// The H200s as calibrated (`host/sim/timing/h200.json`, rounded: a test keeps the two
    /// within 1%): what a timing file's missing fields keep, and what `calibrate` starts from.
    fn default() -> Latencies {
        Latencies {
            machine: "2 x NVIDIA H200 (NV18), driver 580.159.04, CUDA 13.0".into(),
            source: "host/sim/timing/h200.json, rounded (docs/hardware/2026-12-01-calibration)".into(),
            process_start_us: 1_136.0,
            init_us: 236_000.0,
            init_devices: 2,
            init_per_device_us: 112_000.0,
            process_exit_us: 63_300.0,
            fault_us: 174_000.0,
            fault_exit_us: 163_400.0,
            context_create_us: 113_000.0,
            context_beside_fault_exit_us: 165_000.0,
            fault_exit_slows_every_gpu: false,
            module_cubin_us: 272.0,
            module_ptx_cached_us: 2_000.0,
            module_ptx_jit_us: 112_000.0,
            call_us: 0.0993,
            context_switch_us: 0.0653,
            pool_create_us: 302.0,
            pool_destroy_us: 72.4,
            grant_empty_us: 7.44,
            set_access_unchanged_us: 2.40,
            revoke_us: 0.401,
            revoke_per_gib_us: 35.8,
            map_on_alloc_us: 95.5,
            map_on_grant_first_us: 144.0,
            map_on_grant_again_us: 2.14,
            map_per_gib_us: 53.0,
            alloc_first_us: 103.0,
            alloc_us: 7.56,
            legacy_alloc_us: 60.0,
            free_us: 6.52,
            sync_us: 24.7,
            launch_us: 11.07,
            copy_us: 14.0,
            memset_us: 2.55,
            local_gbps: 3_700.0,
            peer_kernel_gbps: 365.0,
            peer_copy_gbps: 393.0,
            host_copy_gbps: 12.7,
            atomics_local_per_s: 3.7e11,
            atomics_peer_per_s: 7.1e10,
            chase_local_ns: 333.0,
            chase_peer_ns: 997.0,
            init_serial: Serial { device: false, process: false, machine: true, at_once: 3 },
            context_serial: Serial::one_at_a_time(true, true, true),
            map_serial: Serial::one_at_a_time(false, true, false),
            fault_serial: Serial::one_at_a_time(true, false, false),
        }
    }
}

/// The calibration committed with the simulator (`host/sim/timing/h200.json`).
const H200: &str = include_str!("../timing/h200.json");

impl Latencies {
    /// The model the simulator uses unless told otherwise: the committed H200 calibration.
    ///
    /// # Panics
    /// If the committed file does not parse (a test keeps it parsing).
    pub fn h200() -> Latencies {
        Latencies::from_json(H200).expect("host/sim/timing/h200.json parses")
    }

    /// Parses the JSON form (fields missing keep [`Latencies::default`]'s values). Every number,
    /// at any depth, must be finite and in its unit's range (times 0 to 10^9, rates 0 or 10^-3 to
    /// 10^15, counts 1 to 1024), so that no sum of costs leaves the clock's 64-bit nanoseconds
    /// and no lock is given more slots than a machine has devices; a key given twice is refused
    /// (which one was meant?).
    pub fn from_json(text: &str) -> Result<Latencies, String> {
        let value = crate::input::json_without_repeats(text)?;
        Latencies::check_ranges("", &value)?;
        // Files written before faults were timed apart (the calibrations of
        // docs/hardware/2026-12-01-calibration*) hold the fault in `fault_exit_us`.
        let lumped = value.get("fault_exit_us").is_some() && value.get("fault_us").is_none();
        let mut model: Latencies =
            serde_json::from_value(value).map_err(|e| peerpool::text::clipped(&e.to_string(), 1200))?;
        if lumped {
            model.fault_us = 0.0;
        }
        Ok(model)
    }

    /// Checks every number in `value` (an object whose path from the top is `path`), named by
    /// its path: `init_serial.at_once`.
    fn check_ranges(path: &str, value: &serde_json::Value) -> Result<(), String> {
        let Some(fields) = value.as_object() else { return Ok(()) };
        for (name, v) in fields {
            let at = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
            match v {
                serde_json::Value::Number(number) => {
                    Latencies::check_range(name, &peerpool::text::echo(&at), number.as_f64().unwrap_or(f64::INFINITY))?
                }
                serde_json::Value::Object(_) => Latencies::check_ranges(&at, v)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// The range of a field by its unit: times (`_us`, `_ns`) 0 to 10^9 (a thousand seconds in
    /// microseconds), rates (`_gbps`, `_per_s`) 0 (not modelled: free) or 10^-3 to 10^15,
    /// counts of devices or slots (`init_devices`, `at_once`) 1 to [`crate::MAX_DEVICES`].
    /// `at` names the field in errors.
    fn check_range(name: &str, at: &str, number: f64) -> Result<(), String> {
        let max_count = crate::MAX_DEVICES as f64;
        let (within, ranges) = match name.rsplit('_').next() {
            _ if name == "init_devices" || name == "at_once" => {
                ((1.0..=max_count).contains(&number), format!("counts 1 to {max_count}"))
            }
            Some("us" | "ns") => ((0.0..=1e9).contains(&number), "times 0 to 1e9".into()),
            Some("gbps" | "s") => (number == 0.0 || (1e-3..=1e15).contains(&number), "rates 0 or 1e-3 to 1e15".into()),
            _ => (true, String::new()),
        };
        match within {
            true => Ok(()),
            false => Err(format!("{at}: {number:e} is out of range ({ranges})")),
        }
    }

    /// Reads a JSON file (at most 1 MiB).
    pub fn load(path: &std::path::Path) -> Result<Latencies, String> {
        let shown = peerpool::text::path(path);
        let text = crate::input::read_text(path, 1 << 20).map_err(|e| format!("{shown}: {e}"))?;
        Latencies::from_json(&text).map_err(|e| format!("{shown}: {e}"))
    }

    /// Nanoseconds for `bytes` at `gbps` GB/s.
    pub(crate) fn transfer(bytes: u64, gbps: f64) -> Nanos {
        if gbps > 0.0 { (bytes as f64 / gbps).round() as Nanos } else { 0 }
    }
}

/// The least wall time `peerpool check` can take on a machine, whatever its schedule: what its
/// serial resources alone hold, from the model's measured constants (not from a run of the
/// model). [`Latencies::check_floor`] makes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Floor {
    /// The floor.
    pub wall: std::time::Duration,
    /// What sets it, in words.
    pub bound: String,
}

impl Latencies {
    /// `cuInit` in a process that sees `devices` GPUs (never less than nothing).
    fn init_seeing(&self, devices: usize) -> f64 {
        let more = devices as f64 - f64::from(self.init_devices.max(1));
        (self.init_us + more * self.init_per_device_us).max(0.0)
    }

    /// The floor of `peerpool check` on `devices` GPUs whose negative probes are `probes`
    /// (ordered pairs `(owner, accessor)`): every probe is a process of its own that makes one
    /// context, the accessor's (a fault ends its process's CUDA), and the parent makes one
    /// context per GPU. The largest of:
    /// - contexts: with context creation one at a time across the machine
    ///   ([`Latencies::context_serial`]`.machine`, [`Serial::at_once`] at a time), all
    ///   `devices + probes` contexts one after another; one at a time per GPU only, the busiest
    ///   GPU's; otherwise one. Before the first, a process start and the cheapest `cuInit` of a
    ///   process that makes one (a probe's sees its pair); after the last, at least a process's
    ///   exit;
    /// - faults: one at a time on a GPU, so the GPU that is the accessor of the most probes
    ///   holds that many [`Latencies::fault_us`] after its first probe's start and context, and
    ///   its last probe's exit after them.
    ///
    /// Contexts made beside a faulted context's teardown cost more only where a schedule puts
    /// them there, so the floor counts none of them.
    pub fn check_floor(&self, devices: usize, probes: &[(usize, usize)]) -> Floor {
        let mut per_gpu = vec![0usize; devices];
        for &(_, a) in probes {
            if let Some(count) = per_gpu.get_mut(a) {
                *count += 1;
            }
        }
        let busiest = per_gpu.iter().copied().max().unwrap_or(0);
        let head = self.process_start_us + self.init_seeing(devices.min(2));
        let serial = self.context_serial;
        let (contexts, over) = if serial.machine {
            let all = devices + probes.len();
            (all.div_ceil(serial.at_once.max(1) as usize), "the machine")
        } else if serial.device {
            (busiest + usize::from(devices > 0), "the busiest GPU")
        } else {
            (1, "any GPU")
        };
        let context_bound = head + contexts as f64 * self.context_create_us + self.process_exit_us;
        let fault_bound = match busiest {
            0 => 0.0,
            _ => head + self.context_create_us + busiest as f64 * self.fault_us + self.fault_exit_us,
        };
        let micros = context_bound.max(fault_bound);
        let bound = if fault_bound > context_bound {
            format!("{busiest} faults one at a time on the busiest GPU")
        } else {
            format!("{contexts} contexts one at a time on {over}, after a cuInit")
        };
        Floor { wall: std::time::Duration::from_nanos(ns(micros)), bound }
    }
}

/// The kind of lock an expensive piece of driver work takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Lock {
    Init,
    Context,
    Map,
    Fault,
}

/// What one call did, for the clock: set by the call (or the default: a base cost, no device).
#[derive(Clone, Debug, Default)]
pub(crate) struct Cost {
    /// Nanoseconds.
    pub(crate) time: Nanos,
    /// Devices whose engines the call occupies.
    pub(crate) devices: Vec<usize>,
    /// The lock it takes, and on which devices (per-device scope).
    pub(crate) lock: Option<(Lock, Vec<usize>)>,
    /// A PTX load for this compute capability: costs the JIT the first time on the machine.
    pub(crate) ptx: Option<(i32, i32)>,
    /// Work queued on the devices' streams (a launch, an asynchronous copy or memset): the
    /// calling thread goes on after this many nanoseconds, the call's own cost, while the
    /// devices work on to the end of [`Cost::time`]. `None`: the thread waits for the end.
    pub(crate) queued: Option<Nanos>,
    /// The call starts no earlier than this (an event synchronisation: the event's time).
    pub(crate) not_before: Nanos,
    /// A fault that kills its process: its dead context on this device is torn down for this
    /// long from the fault's end, and contexts made there meanwhile are slower.
    pub(crate) teardown: Option<(usize, Nanos)>,
}

impl Cost {
    pub(crate) fn on(time: Nanos, devices: Vec<usize>) -> Cost {
        Cost { time, devices, ..Cost::default() }
    }

    pub(crate) fn locked(mut self, lock: Lock, devices: Vec<usize>) -> Cost {
        self.lock = Some((lock, devices));
        self
    }

    /// The same work queued: the calling thread pays only `own` of it.
    pub(crate) fn queued(mut self, own: Nanos) -> Cost {
        self.queued = Some(own.min(self.time));
        self
    }
}

/// When one resource (a device's engines, a lock) is busy: sorted, disjoint intervals. Work
/// takes the earliest gap that fits it from the time it is ready, so work that the simulator
/// happens to run later in real time can still go first in virtual time, as it would on the
/// machine (two processes each creating a context on the other's device first, say).
///
/// At most [`Busy::KEPT`] intervals are kept: past that, the two earliest merge, the gap between
/// them counted busy. A long-running program's bookkeeping stays bounded; only work ready that
/// far back in virtual time, behind thousands of later bookings, could be placed later than
/// the gap would have allowed.
#[derive(Clone, Debug, Default)]
struct Busy(Vec<(Nanos, Nanos)>);

impl Busy {
    const KEPT: usize = 4096;

    /// The end of the first busy interval that `[at, at + len)` overlaps, if any.
    fn conflict(&self, at: Nanos, len: Nanos) -> Option<Nanos> {
        let i = self.0.partition_point(|&(_, end)| end <= at);
        match self.0.get(i) {
            Some(&(start, end)) if start < at.saturating_add(len) || (len == 0 && start <= at) => Some(end),
            _ => None,
        }
    }

    /// Marks `[at, at + len)` busy (merged with the intervals it touches).
    fn take(&mut self, at: Nanos, len: Nanos) {
        if len == 0 {
            return;
        }
        let end = at.saturating_add(len);
        let first = self.0.partition_point(|&(_, e)| e < at);
        let last = self.0.partition_point(|&(s, _)| s <= end);
        let (mut start, mut stop) = (at, end);
        if first < last {
            start = start.min(self.0[first].0);
            stop = stop.max(self.0[last - 1].1);
        }
        self.0.splice(first..last, [(start, stop)]);
        if self.0.len() > Busy::KEPT {
            let (merged_start, merged_end) = (self.0[0].0, self.0[1].1);
            self.0.splice(0..2, [(merged_start, merged_end)]);
        }
    }
}

/// The earliest time from `ready` at which `len` fits in every one of `resources`.
fn fit(ready: Nanos, len: Nanos, resources: &[&Busy]) -> Nanos {
    let mut at = ready;
    loop {
        let moved = resources.iter().filter_map(|r| r.conflict(at, len)).max();
        match moved {
            Some(end) if end > at => at = end,
            _ => return at,
        }
    }
}

/// The part of the clock every process on the machine shares.
#[derive(Debug)]
pub(crate) struct Machine {
    pub(crate) model: Latencies,
    /// When each device's engines are busy.
    devices: Vec<Busy>,
    /// Per lock kind: per-device locks, and the machine-wide ones' slots ([`Serial::at_once`]).
    device_locks: HashMap<(Lock, usize), Busy>,
    machine_locks: HashMap<(Lock, u32), Busy>,
    /// Compute capabilities whose PTX was compiled by the JIT already.
    jitted: BTreeSet<(i32, i32)>,
    /// Per device: when faulted contexts are being torn down there.
    teardowns: Vec<Busy>,
}

impl Machine {
    pub(crate) fn new(model: Latencies, devices: usize) -> Machine {
        Machine {
            model,
            devices: vec![Busy::default(); devices],
            device_locks: HashMap::new(),
            machine_locks: HashMap::new(),
            jitted: BTreeSet::new(),
            teardowns: vec![Busy::default(); devices],
        }
    }

    /// Whether a context made on `device` over `[at, at + len)` overlaps a faulted context's
    /// teardown that slows it.
    fn beside_teardown(&self, device: usize, at: Nanos, len: Nanos) -> bool {
        match self.model.fault_exit_slows_every_gpu {
            true => self.teardowns.iter().any(|t| t.conflict(at, len).is_some()),
            false => self.teardowns.get(device).is_some_and(|t| t.conflict(at, len).is_some()),
        }
    }

    fn serial(&self, lock: Lock) -> Serial {
        match lock {
            Lock::Init => self.model.init_serial,
            Lock::Context => self.model.context_serial,
            Lock::Map => self.model.map_serial,
            Lock::Fault => self.model.fault_serial,
        }
    }
}

/// One simulated process's part of the clock: its threads' lanes and its own locks.
#[derive(Clone, Debug)]
pub(crate) struct ProcessTime {
    /// When the process started (its first lane's time).
    origin: Nanos,
    lanes: PerThread<Nanos>,
    /// The end of the latest call, in the order calls were made: where a new lane starts.
    last_end: Nanos,
    /// The latest time any lane reached.
    latest: Nanos,
    process_locks: HashMap<Lock, Busy>,
    /// Per device: when the work this process queued on it ends (its streams are one queue
    /// here, an approximation that only makes work on one device wait longer).
    queues: Vec<Nanos>,
    /// Devices whose primary context this process has created.
    pub(crate) contexts: Vec<bool>,
}

/// A resource a call needs, named so that its busy intervals can be found and updated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resource {
    Device(usize),
    DeviceLock(Lock, usize),
    ProcessLock(Lock),
    /// One slot of a machine-wide lock.
    MachineLock(Lock, u32),
}

impl ProcessTime {
    pub(crate) fn new(origin: Nanos, devices: usize) -> ProcessTime {
        ProcessTime {
            origin,
            lanes: PerThread::default(),
            last_end: origin,
            latest: origin,
            process_locks: HashMap::new(),
            queues: vec![origin; devices],
            contexts: vec![false; devices],
        }
    }

    /// A child process started by the calling thread now, after `start` nanoseconds of
    /// process start-up: no lane, lock or context of this one.
    pub(crate) fn child(&self, start: Nanos) -> ProcessTime {
        ProcessTime::new(self.now().saturating_add(start), self.contexts.len())
    }

    /// The calling thread's time.
    pub(crate) fn now(&self) -> Nanos {
        self.lanes.get(threads::current()).copied().unwrap_or(self.last_end)
    }

    pub(crate) fn set_now(&mut self, at: Nanos) {
        *self.lanes.get_or_insert_with(threads::current(), || at) = at;
        self.latest = self.latest.max(at);
    }

    /// When `device`'s queue reaches what the calling thread queues now (an event's time).
    pub(crate) fn reached(&self, device: usize) -> Nanos {
        self.now().max(self.queues.get(device).copied().unwrap_or(0))
    }

    /// Work queued on `device` from now on starts no earlier than `at` (a stream waiting
    /// for an event).
    pub(crate) fn wait_until(&mut self, device: usize, at: Nanos) {
        if let Some(queue) = self.queues.get_mut(device) {
            *queue = (*queue).max(at);
        }
    }

    /// The latest time anything in this process reached.
    pub(crate) fn latest(&self) -> Nanos {
        self.latest.max(self.origin)
    }

    fn busy<'a>(&'a self, machine: &'a Machine, r: Resource) -> Option<&'a Busy> {
        match r {
            Resource::Device(d) => machine.devices.get(d),
            Resource::DeviceLock(lock, d) => machine.device_locks.get(&(lock, d)),
            Resource::ProcessLock(lock) => self.process_locks.get(&lock),
            Resource::MachineLock(lock, slot) => machine.machine_locks.get(&(lock, slot)),
        }
    }

    fn take(&mut self, machine: &mut Machine, r: Resource, at: Nanos, len: Nanos) {
        let busy = match r {
            Resource::Device(d) => match machine.devices.get_mut(d) {
                Some(busy) => busy,
                None => return,
            },
            Resource::DeviceLock(lock, d) => machine.device_locks.entry((lock, d)).or_default(),
            Resource::ProcessLock(lock) => self.process_locks.entry(lock).or_default(),
            Resource::MachineLock(lock, slot) => machine.machine_locks.entry((lock, slot)).or_default(),
        };
        busy.take(at, len);
    }

    /// Runs one call of `cost` on the calling thread: it takes the earliest time from the
    /// lane's (and from the end of the work queued on its devices, and `not_before`) at
    /// which its devices and its locks are all free; all of them are busy until its end, where
    /// the lane moves, unless the work is queued: then the lane moves by the call's own cost.
    pub(crate) fn advance(&mut self, machine: &mut Machine, cost: &Cost) {
        let mut time = cost.time;
        if let Some(cc) = cost.ptx
            && machine.jitted.insert(cc)
        {
            time = ns(machine.model.module_ptx_jit_us);
        }
        // Most calls occupy no device and take no lock: only the lane moves.
        if cost.devices.is_empty() && cost.lock.is_none() {
            let now = self.now();
            return self.finish(now, now.max(cost.not_before).saturating_add(time), cost.queued);
        }
        let mut needs: Vec<Resource> = cost.devices.iter().map(|&d| Resource::Device(d)).collect();
        let mut slots = None;
        if let Some((lock, devices)) = &cost.lock {
            let serial = machine.serial(*lock);
            if serial.device {
                needs.extend(devices.iter().map(|&d| Resource::DeviceLock(*lock, d)));
            }
            if serial.process {
                needs.push(Resource::ProcessLock(*lock));
            }
            if serial.machine {
                slots = Some((*lock, serial.at_once.max(1)));
            }
        }
        let now = self.now();
        let queue = |d: &usize| self.queues.get(*d).copied().unwrap_or(0);
        let ready = cost.devices.iter().map(queue).fold(now.max(cost.not_before), Nanos::max);
        let start_with = |extra: Option<Resource>| {
            let sets: Vec<&Busy> = needs.iter().chain(&extra).filter_map(|&r| self.busy(machine, r)).collect();
            fit(ready, time, &sets)
        };
        // A machine-wide lock: the slot free soonest (the lowest of equals).
        let (start, slot) = match slots {
            None => (start_with(None), None),
            Some((lock, n)) => (0..n)
                .map(|i| (start_with(Some(Resource::MachineLock(lock, i))), Some(Resource::MachineLock(lock, i))))
                .min_by_key(|&(at, _)| at)
                .unwrap_or((ready, None)),
        };
        // A context made beside a faulted context's teardown is slower: priced again, and
        // placed again at the longer length (never earlier than the first fit).
        let mut start = start;
        if let Some((Lock::Context, devices)) = &cost.lock {
            let slower = ns(machine.model.context_beside_fault_exit_us);
            if slower > time && devices.iter().any(|&d| machine.beside_teardown(d, start, time)) {
                time = slower;
                let sets: Vec<&Busy> = needs.iter().chain(&slot).filter_map(|&r| self.busy(machine, r)).collect();
                start = fit(start, time, &sets);
            }
        }
        needs.extend(slot);
        for &r in &needs {
            self.take(machine, r, start, time);
        }
        let end = start.saturating_add(time);
        if let Some((device, len)) = cost.teardown
            && let Some(t) = machine.teardowns.get_mut(device)
        {
            t.take(end, len);
        }
        for &d in &cost.devices {
            if let Some(queue) = self.queues.get_mut(d) {
                *queue = (*queue).max(end);
            }
        }
        self.finish(now, end, cost.queued);
    }

    /// [`ProcessTime::advance`] for a call `time` long that occupies no device, takes no lock and
    /// waits for nothing ([`LaneCosts`]): only the calling thread's lane moves, found once.
    pub(crate) fn pass(&mut self, time: Nanos) {
        let fresh = self.last_end;
        let lane = self.lanes.get_or_insert_with(threads::current(), || fresh);
        let end = lane.saturating_add(time);
        *lane = end;
        self.latest = self.latest.max(end);
        self.last_end = end;
    }

    /// A call that began at `now` on the calling thread's lane ends at `end`; its lane moves
    /// there, or only by `queued`, the call's own cost, when its work is queued.
    fn finish(&mut self, now: Nanos, end: Nanos, queued: Option<Nanos>) {
        self.latest = self.latest.max(end);
        let lane = queued.map_or(end, |own| now.saturating_add(own));
        self.set_now(lane);
        self.last_end = lane;
    }
}

/// What a call did that its cost depends on, as the driver saw it; [`price`] turns it into a
/// [`Cost`] under a model.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Work {
    /// A call with only its base cost.
    Call,
    /// `cuCtxGetCurrent`, `cuCtxSetCurrent`, push, pop.
    ContextSwitch,
    /// `cuInit`, on a machine of this many devices.
    Init(usize),
    /// A context created on this device (a primary context's first retain in the process).
    Context(usize),
    /// A module loaded on `device`; PTX for the given compute capability, or a cubin.
    Module {
        ptx: Option<(i32, i32)>,
    },
    PoolCreate,
    PoolDestroy,
    /// `cuMemPoolSetAccess` on a pool of `owner` holding `live` bytes.
    Access {
        owner: usize,
        live: u64,
        /// Peers granted over live memory for the first time / again.
        map_first: Vec<usize>,
        map_again: Vec<usize>,
        /// A peer granted while the pool holds no memory.
        granted_empty: bool,
        revoked: usize,
    },
    /// An allocation from a pool on `device`; the first one from memory-less pool maps the
    /// memory into every peer with access.
    Alloc {
        device: usize,
        first: bool,
        peers: Vec<usize>,
    },
    LegacyAlloc,
    Free,
    /// A synchronisation that waits for `device`'s work.
    Sync(usize),
    /// An event synchronisation: it waits until the event's time, not for later work.
    EventSync(Nanos),
    /// A kernel on `device` and what it moved (queued, as every launch is).
    Kernel {
        device: usize,
        traffic: Traffic,
    },
    /// A launch whose kernel faulted on `device`: the calling thread waits for the fault to
    /// surface (the simulator runs kernels in the launch), under the fault lock, and the
    /// device's engines wait with it.
    Fault(usize),
    /// A copy by `device`'s engine: `bytes` between two devices' memory (`peer`), within one
    /// device's, or to or from the host; `queued` for an asynchronous call between devices
    /// (the simulator's host memory is pageable, so host copies are synchronous, as the real
    /// driver's are for pageable memory).
    Copy {
        device: usize,
        bytes: u64,
        path: Path,
        queued: bool,
    },
    /// A memset by `device`'s engine (queued: only the asynchronous calls are modelled).
    Memset {
        device: usize,
        bytes: u64,
    },
}

/// Where a copy's bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    Host,
    Local,
    Peer,
}

/// What a kernel touched, split by whose memory.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Traffic {
    pub(crate) local_bytes: u64,
    pub(crate) peer_bytes: u64,
    pub(crate) local_atomics: u64,
    pub(crate) peer_atomics: u64,
    pub(crate) local_loads: u64,
    pub(crate) peer_loads: u64,
}

/// What `work` costs under `m`.
pub(crate) fn price(m: &Latencies, work: &Work) -> Cost {
    let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
    match work {
        Work::Call => Cost::on(ns(m.call_us), vec![]),
        Work::ContextSwitch => Cost::on(ns(m.context_switch_us), vec![]),
        Work::Init(devices) => {
            let more = *devices as f64 - f64::from(m.init_devices.max(1));
            Cost::on(ns(m.init_us + more * m.init_per_device_us), vec![]).locked(Lock::Init, (0..*devices).collect())
        }
        Work::Context(d) => Cost::on(ns(m.context_create_us), vec![]).locked(Lock::Context, vec![*d]),
        Work::Module { ptx: None } => Cost::on(ns(m.module_cubin_us), vec![]),
        Work::Module { ptx } => Cost { ptx: *ptx, ..Cost::on(ns(m.module_ptx_cached_us), vec![]) },
        Work::PoolCreate => Cost::on(ns(m.pool_create_us), vec![]),
        Work::PoolDestroy => Cost::on(ns(m.pool_destroy_us), vec![]),
        Work::Access { owner, live, map_first, map_again, granted_empty, revoked } => {
            let per_gib = gib(*live);
            let mut micros = 0.0;
            if *granted_empty {
                micros += m.grant_empty_us;
            }
            micros += map_first.len() as f64 * (m.map_on_grant_first_us + m.map_per_gib_us * per_gib);
            micros += map_again.len() as f64 * (m.map_on_grant_again_us + m.map_per_gib_us * per_gib);
            micros += *revoked as f64 * (m.revoke_us + m.revoke_per_gib_us * per_gib);
            if micros == 0.0 {
                micros = m.set_access_unchanged_us;
            }
            let cost = Cost::on(ns(micros), vec![]);
            let mapped: Vec<usize> = map_first.iter().chain(map_again).copied().collect();
            match mapped.is_empty() {
                true => cost,
                false => cost.locked(Lock::Map, std::iter::once(*owner).chain(mapped).collect()),
            }
        }
        Work::Alloc { device, first: true, peers } => {
            let cost = Cost::on(ns(m.alloc_first_us + m.map_on_alloc_us * peers.len() as f64), vec![]);
            match peers.is_empty() {
                true => cost,
                false => cost.locked(Lock::Map, std::iter::once(*device).chain(peers.iter().copied()).collect()),
            }
        }
        Work::Alloc { first: false, .. } => Cost::on(ns(m.alloc_us), vec![]),
        Work::LegacyAlloc => Cost::on(ns(m.legacy_alloc_us), vec![]),
        Work::Free => Cost::on(ns(m.free_us), vec![]),
        // On its device, so it starts when the device's queue ends.
        Work::Sync(d) => Cost::on(ns(m.sync_us), vec![*d]),
        Work::EventSync(at) => Cost { not_before: *at, ..Cost::on(ns(m.sync_us), vec![]) },
        Work::Kernel { device, traffic: t } => {
            let rate = |count: u64, per_s: f64| if per_s > 0.0 { (count as f64 / per_s * 1e9) as Nanos } else { 0 };
            let time = [
                ns(m.launch_us),
                Latencies::transfer(t.local_bytes, m.local_gbps),
                Latencies::transfer(t.peer_bytes, m.peer_kernel_gbps),
                rate(t.local_atomics, m.atomics_local_per_s),
                rate(t.peer_atomics, m.atomics_peer_per_s),
                (t.local_loads as f64 * m.chase_local_ns + t.peer_loads as f64 * m.chase_peer_ns) as Nanos,
            ]
            .into_iter()
            .fold(0, Nanos::saturating_add);
            Cost::on(time, vec![*device]).queued(ns(m.launch_us))
        }
        // The device's engines too: another process's allocation on a GPU waited out a fault's
        // recovery there (docs/hardware/2026-12-01-one-context-probe, the first pair at once).
        Work::Fault(d) => Cost {
            teardown: Some((*d, ns(m.fault_exit_us))),
            ..Cost::on(ns(m.fault_us), vec![*d]).locked(Lock::Fault, vec![*d])
        },
        Work::Copy { device, bytes, path, queued } => {
            let gbps = match path {
                Path::Host => m.host_copy_gbps,
                Path::Local => m.local_gbps / 2.0, // read and write on one device
                Path::Peer => m.peer_copy_gbps,
            };
            let cost = Cost::on(ns(m.copy_us).saturating_add(Latencies::transfer(*bytes, gbps)), vec![*device]);
            if *queued { cost.queued(ns(m.copy_us)) } else { cost }
        }
        Work::Memset { device, bytes } => {
            let time = ns(m.memset_us).saturating_add(Latencies::transfer(*bytes, m.local_gbps));
            Cost::on(time, vec![*device]).queued(ns(m.memset_us))
        }
    }
}

/// What [`price`] gives [`Work::Call`] and [`Work::ContextSwitch`] under one model, priced when
/// the model is set: most calls are these, and [`ProcessTime::pass`] runs them without the
/// machine's lock. Shared by the processes that share a machine, as its model is.
#[derive(Debug)]
pub(crate) struct LaneCosts {
    call: AtomicU64,
    context_switch: AtomicU64,
}

impl LaneCosts {
    pub(crate) fn of(m: &Latencies) -> LaneCosts {
        LaneCosts { call: AtomicU64::new(ns(m.call_us)), context_switch: AtomicU64::new(ns(m.context_switch_us)) }
    }

    /// Prices `m`'s calls from now on.
    pub(crate) fn set(&self, m: &Latencies) {
        let LaneCosts { call, context_switch } = LaneCosts::of(m);
        self.call.store(call.into_inner(), Ordering::Relaxed);
        self.context_switch.store(context_switch.into_inner(), Ordering::Relaxed);
    }

    /// `work`'s time, when it is one of these calls.
    #[inline]
    pub(crate) fn of_work(&self, work: &Work) -> Option<Nanos> {
        match work {
            Work::Call => Some(self.call.load(Ordering::Relaxed)),
            Work::ContextSwitch => Some(self.context_switch.load(Ordering::Relaxed)),
            _ => None,
        }
    }
}

/// Nanoseconds from microseconds, for the driver's cost table.
pub(crate) fn us(micros: f64) -> Nanos {
    ns(micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Latencies {
        Latencies { context_serial: Serial::one_at_a_time(true, true, false), ..Latencies::default() }
    }

    /// A context creation on `device`: 100 ns under its context lock.
    fn ctx(device: usize) -> Cost {
        Cost::on(100, vec![]).locked(Lock::Context, vec![device])
    }

    #[test]
    fn busy_intervals_stay_bounded_and_conservative() {
        let mut busy = Busy::default();
        for i in 0..(Busy::KEPT as u64 + 10) {
            busy.take(i * 10, 5); // each a separate interval: [0,5), [10,15), ...
        }
        assert_eq!(busy.0.len(), Busy::KEPT);
        // The earliest intervals merged: their gaps now count busy, never free.
        assert_eq!(busy.conflict(5, 1), Some(busy.0[0].1));
        assert!(busy.0.windows(2).all(|w| w[0].1 < w[1].0), "sorted and disjoint");
        // The latest gaps are kept.
        let last = Busy::KEPT as u64 + 9;
        assert_eq!(busy.conflict(last * 10 - 4, 3), None);
    }

    #[test]
    fn the_committed_calibration_parses_and_unknown_fields_are_refused() {
        let h200 = Latencies::h200();
        assert!(h200.context_create_us > 0.0 && h200.map_on_alloc_us > 0.0);
        assert!(Latencies::from_json(r#"{"context_create_us": 1.0, "typo_us": 2.0}"#).is_err());
        let partial = Latencies::from_json(r#"{"context_create_us": 1.0}"#).unwrap();
        assert_eq!((partial.context_create_us, partial.init_us), (1.0, Latencies::default().init_us));
    }

    #[test]
    fn the_defaults_are_the_committed_calibration_rounded() {
        let (d, h) =
            (serde_json::to_value(Latencies::default()).unwrap(), serde_json::to_value(Latencies::h200()).unwrap());
        for (name, value) in d.as_object().unwrap() {
            match (value.as_f64(), h[name].as_f64()) {
                (Some(a), Some(b)) => assert!((a - b).abs() <= 0.01 * b.abs(), "{name}: {a} against {b}"),
                _ if name == "machine" || name == "source" => {}
                _ => assert_eq!(value, &h[name], "{name}"),
            }
        }
    }

    #[test]
    fn cu_init_grows_with_the_devices_a_process_sees_as_calibrated() {
        let price_init = |m: &Latencies, devices| price(m, &Work::Init(devices)).time;
        let h200 = Latencies::h200();
        assert!(price_init(&h200, 16) > price_init(&h200, 2), "the H200s: each GPU more adds to cuInit");
        let flat = Latencies { init_per_device_us: 0.0, ..h200.clone() };
        assert_eq!(price_init(&flat, 1), price_init(&flat, 16), "without growth: one cuInit per machine");
        let growing = Latencies { init_us: 230_000.0, init_devices: 2, init_per_device_us: 125_000.0, ..h200 };
        assert_eq!(price_init(&growing, 2), 230_000_000);
        assert_eq!(price_init(&growing, 1), 105_000_000);
        assert_eq!(price_init(&growing, 8), 980_000_000);
        let steep = Latencies { init_per_device_us: 1e6, ..growing };
        assert_eq!(price_init(&steep, 1), 0, "fewer devices never cost less than nothing");
    }

    #[test]
    fn numbers_out_of_their_units_range_are_refused_by_name() {
        for bad in [
            r#"{"init_us": -1}"#,
            r#"{"init_us": 1e300}"#,
            r#"{"local_gbps": 1e-300}"#,
            r#"{"atomics_peer_per_s": 1e20}"#,
            r#"{"chase_peer_ns": 2e9}"#,
        ] {
            let field = bad.split('"').nth(1).unwrap();
            let error = Latencies::from_json(bad).expect_err(bad);
            assert!(error.starts_with(field) && error.contains("out of range"), "{bad}: {error}");
        }
        let edges = r#"{"init_us": 1e9, "local_gbps": 0, "peer_copy_gbps": 1e-3, "atomics_local_per_s": 1e15}"#;
        let model = Latencies::from_json(edges).expect("the ends of each range");
        // The slowest rate over a terabyte and the longest times, summed: no overflow.
        let traffic =
            Traffic { peer_bytes: 1 << 40, peer_atomics: u64::MAX, peer_loads: u64::MAX, ..Traffic::default() };
        let slow = Latencies { launch_us: 1e9, peer_kernel_gbps: 1e-3, chase_peer_ns: 1e9, ..model };
        let cost = price(&slow, &Work::Kernel { device: 0, traffic });
        assert_eq!(cost.time, Nanos::MAX);
        let mut machine = Machine::new(slow, 1);
        let mut p = ProcessTime::new(0, 1);
        p.advance(&mut machine, &cost);
        p.advance(&mut machine, &cost);
        assert_eq!(p.latest(), Nanos::MAX, "the clock saturates");
    }

    /// `init_serial.at_once = 4294967295` made every `cuInit` try four billion slots.
    #[test]
    fn nested_numbers_and_counts_are_range_checked_by_their_path() {
        let serial = |at_once: &str| {
            format!(
                r#"{{"init_serial": {{"device": false, "process": false, "machine": true, "at_once": {at_once}}}}}"#
            )
        };
        for (bad, field) in [
            (serial("4294967295"), "init_serial.at_once"),
            (serial("0"), "init_serial.at_once"),
            (serial("1025"), "init_serial.at_once"),
            (
                r#"{"map_serial": {"device": true, "process": true, "machine": true, "at_once": 1e10}}"#.into(),
                "map_serial.at_once",
            ),
            (r#"{"init_devices": 4294967295}"#.into(), "init_devices"),
            (r#"{"init_devices": 0}"#.into(), "init_devices"),
        ] {
            let error = Latencies::from_json(&bad).expect_err(&bad);
            assert!(error.starts_with(field) && error.contains("out of range"), "{bad}: {error}");
            assert!(!error.contains('\n'), "one line: {error}");
        }
        let model = Latencies::from_json(&serial("1024")).expect("the top of the range");
        assert_eq!(model.init_serial.at_once, 1024);
        assert!(Latencies::from_json(r#"{"init_devices": 1024}"#).is_ok());
    }

    #[test]
    fn a_refused_timing_file_is_echoed_escaped_and_cut() {
        let key = format!("\\u001b[2J\\u001b]0;t\\u0007{}", "k".repeat(1 << 16));
        for bad in [
            format!(r#"{{"{key}": 1}}"#),
            format!(r#"{{"init_serial": {{"{key}": true}}}}"#),
            format!(r#"{{"machine": 1, "{key}": 2}}"#),
            format!(r#"{{"{key}": 1, "{key}": 1}}"#),
        ] {
            let error = Latencies::from_json(&bad).expect_err("refused");
            assert!(!error.chars().any(char::is_control), "{:?}", &error[..error.len().min(300)]);
            assert!(error.len() < 2048, "{} bytes", error.len());
        }
    }

    #[test]
    fn a_key_given_twice_is_refused_at_any_depth() {
        for bad in [
            r#"{"init_us": 5.0, "init_us": 6.0}"#,
            r#"{"init_serial": {"device": false, "device": true, "process": false, "machine": true}}"#,
            r#"{"machine": "a", "source": "b", "machine": "a"}"#,
        ] {
            let error = Latencies::from_json(bad).expect_err(bad);
            assert!(error.contains("given twice"), "{bad}: {error}");
        }
    }

    #[test]
    fn calls_on_one_device_serialise_and_devices_run_in_parallel() {
        let mut machine = Machine::new(model(), 2);
        let mut p = ProcessTime::new(0, 2);
        let kernel = |d| Cost::on(1_000, vec![d]);
        p.advance(&mut machine, &kernel(0));
        assert_eq!(p.now(), 1_000);
        // Threads (lanes) of the same process, each starting at 0.
        std::thread::scope(|s| {
            s.spawn(|| {
                p.set_now(0);
                p.advance(&mut machine, &kernel(1));
                assert_eq!(p.now(), 1_000, "device 1 was free: in parallel with device 0");
            });
        });
        std::thread::scope(|s| {
            s.spawn(|| {
                p.set_now(0);
                p.advance(&mut machine, &kernel(0));
                assert_eq!(p.now(), 2_000, "device 0 was busy until 1 us");
                p.advance(&mut machine, &kernel(1));
                assert_eq!(p.now(), 3_000, "device 1 was free, the lane was not");
            });
        });
        assert_eq!(p.now(), 1_000, "the first lane kept its time");
        assert_eq!(p.latest(), 3_000);
        // A lane first seen starts where the latest call ended.
        std::thread::scope(|s| {
            s.spawn(|| assert_eq!(p.now(), 3_000));
        });
    }

    #[test]
    fn queued_work_lets_the_thread_go_on_and_a_synchronisation_waits_for_it() {
        let mut machine = Machine::new(model(), 2);
        let mut p = ProcessTime::new(0, 2);
        let copy = |d| Cost::on(1_000, vec![d]).queued(10);
        p.advance(&mut machine, &copy(0));
        assert_eq!((p.now(), p.reached(0), p.reached(1)), (10, 1_000, 10), "the thread went on");
        p.advance(&mut machine, &copy(1));
        assert_eq!((p.now(), p.reached(1)), (20, 1_010), "devices 0 and 1 work at once");
        p.advance(&mut machine, &copy(0));
        assert_eq!(p.reached(0), 2_000, "device 0's queue runs in order");
        assert_eq!(p.latest(), 2_000, "the projected wall time waits for queued work");
        let sync = |d| Cost::on(5, vec![d]);
        p.advance(&mut machine, &sync(1));
        assert_eq!(p.now(), 1_015, "device 1's work, not device 0's");
        p.advance(&mut machine, &sync(0));
        assert_eq!(p.now(), 2_005);
        // An event synchronisation waits for the event, not for what was queued after it.
        let event = p.reached(0);
        p.advance(&mut machine, &copy(0));
        p.advance(&mut machine, &Cost { not_before: event, ..Cost::on(5, vec![]) });
        assert_eq!((p.now(), p.reached(0)), (2_020, 3_005));
        // A stream waiting for an event: device 1's next work starts after it.
        p.wait_until(1, 5_000);
        p.advance(&mut machine, &copy(1));
        assert_eq!((p.now(), p.reached(1)), (2_030, 6_000));
    }

    #[test]
    fn context_creation_serialises_per_process_and_per_device() {
        let mut machine = Machine::new(model(), 2);
        let mut parent = ProcessTime::new(0, 2);
        parent.advance(&mut machine, &ctx(0));
        // The same process, another thread, another device: libcuda's lock makes it wait.
        std::thread::scope(|s| {
            s.spawn(|| {
                parent.set_now(0);
                parent.advance(&mut machine, &ctx(1));
                assert_eq!(parent.now(), 200);
            });
        });
        // A child process starting at 0 on device 1 needs device 1's lock only, not the
        // parent's: free before the parent took it at 100.
        let mut child = ProcessTime::new(0, 2);
        child.advance(&mut machine, &ctx(1));
        assert_eq!(child.now(), 100);
        let mut other = ProcessTime::new(0, 2);
        other.advance(&mut machine, &ctx(0));
        assert_eq!(other.now(), 200, "device 0 was free from 100");
    }

    #[test]
    fn a_context_beside_a_faulted_context_s_teardown_on_its_gpu_is_slower() {
        let m = Latencies {
            context_create_us: 0.1,
            context_beside_fault_exit_us: 0.25,
            fault_us: 0.05,
            fault_exit_us: 0.2,
            context_serial: Serial::one_at_a_time(true, false, false),
            ..Latencies::default()
        };
        let mut machine = Machine::new(m.clone(), 2);
        // A probe faults on GPU 0 from 0 to 50: its dead context goes away from 50 to 250.
        let mut probe = ProcessTime::new(0, 2);
        probe.advance(&mut machine, &price(&m, &Work::Fault(0)));
        assert_eq!(probe.now(), 50);
        let mut next = ProcessTime::new(60, 2);
        next.advance(&mut machine, &price(&m, &Work::Context(0)));
        assert_eq!(next.now(), 60 + 250, "on the faulted GPU, during its teardown");
        let mut other = ProcessTime::new(60, 2);
        other.advance(&mut machine, &price(&m, &Work::Context(1)));
        assert_eq!(other.now(), 60 + 100, "another GPU: as measured, not slowed");
        let mut after = ProcessTime::new(400, 2);
        after.advance(&mut machine, &price(&m, &Work::Context(0)));
        assert_eq!(after.now(), 500, "after the teardown: a context alone");
        // Where a model says a teardown slows every GPU, the other GPU's context is slower too.
        let every = Latencies { fault_exit_slows_every_gpu: true, ..m.clone() };
        let mut machine = Machine::new(every.clone(), 2);
        ProcessTime::new(0, 2).advance(&mut machine, &price(&every, &Work::Fault(0)));
        let mut other = ProcessTime::new(60, 2);
        other.advance(&mut machine, &price(&every, &Work::Context(1)));
        assert_eq!(other.now(), 60 + 250);
    }

    #[test]
    fn the_check_floor_is_the_serial_resources_from_the_constants() {
        let m = Latencies::h200();
        let all: Vec<(usize, usize)> =
            (0..8).flat_map(|o| (0..8).filter(move |&a| a != o).map(move |a| (o, a))).collect();
        let floor = m.check_floor(8, &all);
        let expected = m.process_start_us + m.init_us + 64.0 * m.context_create_us + m.process_exit_us;
        assert!((floor.wall.as_secs_f64() * 1e6 - expected).abs() < 1.0, "{floor:?} against {expected} us");
        assert!(floor.bound.contains("64 contexts"), "{}", floor.bound);
        // Three contexts at once cut it below half. One at a time per GPU only: the busiest
        // GPU's seven faults, one at a time there, bind before its eight contexts do; with
        // quick faults, the eight contexts.
        let three = Latencies { context_serial: Serial { at_once: 3, ..m.context_serial }, ..m.clone() };
        assert!(three.check_floor(8, &all).wall < floor.wall / 2);
        let per_gpu = Latencies { context_serial: Serial::one_at_a_time(true, true, false), ..m.clone() };
        let head = m.process_start_us + m.init_us;
        let faults = head + m.context_create_us + 7.0 * m.fault_us + m.fault_exit_us;
        let bound = per_gpu.check_floor(8, &all);
        assert!((bound.wall.as_secs_f64() * 1e6 - faults).abs() < 1.0, "{bound:?} against {faults}");
        assert!(bound.bound.contains("7 faults"), "{bound:?}");
        let quick = Latencies { fault_us: 1_000.0, ..per_gpu };
        let contexts = head + 8.0 * m.context_create_us + m.process_exit_us;
        assert!((quick.check_floor(8, &all).wall.as_secs_f64() * 1e6 - contexts).abs() < 1.0);
        // Fewer probes, a lower floor.
        assert!(m.check_floor(8, &all[..8]).wall < floor.wall);
    }

    #[test]
    fn faults_surface_one_at_a_time_on_a_device_and_at_once_on_two() {
        // No fault lock at all: a fault's GPU engines alone put faults on one GPU in a row.
        let m = Latencies {
            fault_us: 100.0,
            fault_serial: Serial::one_at_a_time(false, false, false),
            ..Latencies::default()
        };
        let mut machine = Machine::new(m.clone(), 2);
        let fault = |d| price(&m, &Work::Fault(d));
        let at = |machine: &mut Machine, d| {
            let mut p = ProcessTime::new(0, 2); // a process of its own, ready at 0
            p.advance(machine, &fault(d));
            p.now()
        };
        assert_eq!(at(&mut machine, 0), 100_000);
        assert_eq!(at(&mut machine, 0), 200_000, "device 0's first fault surfaced first");
        assert_eq!(at(&mut machine, 1), 100_000, "device 1 recovers beside device 0");
        // Other work on a recovering device waits: device 0 is busy until 200 us.
        let mut p = ProcessTime::new(0, 2);
        p.advance(&mut machine, &Cost::on(1_000, vec![0]));
        assert_eq!(p.now(), 201_000);
        // A machine-wide fault lock puts two GPUs' faults in a row too.
        let machine_wide = Latencies { fault_serial: Serial::one_at_a_time(false, false, true), ..m.clone() };
        let mut machine = Machine::new(machine_wide, 2);
        assert_eq!((at(&mut machine, 0), at(&mut machine, 1)), (100_000, 200_000));
    }

    #[test]
    fn a_file_from_before_faults_were_apart_keeps_its_fault_in_the_exit() {
        let old = Latencies::from_json(r#"{"fault_exit_us": 337000.0}"#).unwrap();
        assert_eq!((old.fault_us, old.fault_exit_us), (0.0, 337_000.0));
        let new = Latencies::from_json(r#"{"fault_us": 1.0, "fault_exit_us": 2.0}"#).unwrap();
        assert_eq!((new.fault_us, new.fault_exit_us), (1.0, 2.0));
        let neither = Latencies::from_json("{}").unwrap();
        assert_eq!((neither.fault_us, neither.fault_exit_us), (174_000.0, 163_400.0));
    }

    #[test]
    fn a_machine_lock_of_three_slots_lets_three_run_at_once() {
        let m = Latencies::default();
        assert_eq!(m.init_serial, Serial { device: false, process: false, machine: true, at_once: 3 });
        let mut machine = Machine::new(m.clone(), 2);
        let init = price(&m, &Work::Init(2));
        let ends: Vec<Nanos> = (0..7)
            .map(|_| {
                let mut p = ProcessTime::new(0, 2);
                p.advance(&mut machine, &init);
                p.now()
            })
            .collect();
        let t = init.time;
        assert_eq!(ends, [t, t, t, 2 * t, 2 * t, 2 * t, 3 * t]);
        // One slot: one at a time.
        let m = Latencies { init_serial: Serial::one_at_a_time(false, false, true), ..m };
        let mut machine = Machine::new(m.clone(), 2);
        let mut p = ProcessTime::new(0, 2);
        p.advance(&mut machine, &init);
        let mut q = ProcessTime::new(0, 2);
        q.advance(&mut machine, &init);
        assert_eq!((p.now(), q.now()), (t, 2 * t));
        // A file may leave `at_once` out: one.
        let read: Serial = serde_json::from_str(r#"{"device": false, "process": false, "machine": true}"#).unwrap();
        assert_eq!(read.at_once, 1);
    }

    #[test]
    fn work_ready_earlier_takes_an_earlier_gap_whatever_the_order_it_is_made_in() {
        let mut machine = Machine::new(model(), 2);
        // Child A creates contexts on 0 then 1; child B, simulated after A, on 1 then 0.
        let mut a = ProcessTime::new(0, 2);
        a.advance(&mut machine, &ctx(0));
        a.advance(&mut machine, &ctx(1));
        let mut b = ProcessTime::new(0, 2);
        b.advance(&mut machine, &ctx(1));
        assert_eq!(b.now(), 100, "device 1 was free until A needed it at 100");
        b.advance(&mut machine, &ctx(0));
        assert_eq!(b.now(), 200);
        // A third one finds both devices' locks busy until 200.
        let mut c = ProcessTime::new(0, 2);
        c.advance(&mut machine, &ctx(0));
        assert_eq!(c.now(), 300);
    }

    #[test]
    fn busy_intervals_merge_and_leave_gaps() {
        let mut busy = Busy::default();
        busy.take(10, 10);
        busy.take(30, 10);
        assert_eq!(fit(0, 10, &[&busy]), 0);
        assert_eq!(fit(0, 11, &[&busy]), 40);
        assert_eq!(fit(15, 5, &[&busy]), 20);
        busy.take(20, 10);
        assert_eq!(busy.0, vec![(10, 40)]);
        assert_eq!(fit(12, 0, &[&busy]), 40, "nothing starts inside a busy interval");
    }

    #[test]
    fn the_first_ptx_load_per_compute_capability_pays_the_jit() {
        let mut machine = Machine::new(model(), 2);
        let mut p = ProcessTime::new(0, 2);
        let load = Cost { ptx: Some((8, 0)), ..Cost::on(us(2_000.0), vec![]) };
        p.advance(&mut machine, &load);
        assert_eq!(p.now(), us(112_000.0));
        p.advance(&mut machine, &load);
        assert_eq!(p.now(), us(114_000.0));
    }

    #[test]
    fn a_lane_only_call_passes_as_advance_moves_it() {
        let m = Latencies::h200();
        let costs = LaneCosts::of(&m);
        let mut machine = Machine::new(m.clone(), 2);
        let mut times = [ProcessTime::new(500, 2), ProcessTime::new(500, 2)];
        let mut both = |[advanced, passed]: &mut [ProcessTime; 2], work: &Work| {
            advanced.advance(&mut machine, &price(&m, work));
            passed.pass(costs.of_work(work).expect("a lane-only call"));
            assert_eq!(advanced.lanes.to_map(), passed.lanes.to_map());
            assert_eq!((advanced.last_end, advanced.latest), (passed.last_end, passed.latest));
        };
        both(&mut times, &Work::Call); // a lane first seen: it starts where the latest call ended
        both(&mut times, &Work::ContextSwitch);
        std::thread::scope(|s| {
            s.spawn(|| both(&mut times, &Work::ContextSwitch));
        });
        times.iter_mut().for_each(|t| t.set_now(0));
        both(&mut times, &Work::Call); // behind the latest call: the latest stays
        assert_eq!(costs.of_work(&Work::Sync(0)), None);
        let slow = Latencies { call_us: 2.5, ..m.clone() };
        costs.set(&slow);
        assert_eq!(costs.of_work(&Work::Call), Some(price(&slow, &Work::Call).time));
    }
}
