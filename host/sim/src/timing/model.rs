//! [`Latencies`]: the model's per-call costs, read from a calibration's JSON, and the floor they put
//! under `peerpool check`.

use super::{Nanos, ns};
use serde::{Deserialize, Serialize};

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
const H200: &str = include_str!("../../timing/h200.json");

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
