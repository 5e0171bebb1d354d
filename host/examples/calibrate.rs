//! Calibrates the simulator's timing model (`peerpool_sim::timing`) on a real machine with two
//! GPUs: what each kind of driver call costs, what the costs depend on, and how processes,
//! threads and devices serialise them.
//!
//! `calibrate OUT_DIR` writes `OUT_DIR/timing.json` (the model, `peerpool_sim::Latencies`:
//! what `peerpool check --timing` and `peerpool sim --timing` read) and
//! `OUT_DIR/calibration.json` (every measurement behind it, raw). It runs itself as child
//! processes for what only a fresh process shows (the child role `calibrate-child`,
//! `peerpool::child`: `PEERPOOL_CHILD_ROLE=calibrate-child calibrate -- MODE ...`, one JSON line
//! each, with wall-clock timestamps): process start and exit, `cuInit`, context creation, and a
//! negative probe's whole run, alone and several at once.
//!
//! In this process the driver runs behind a `FaultInjector` with no faults: its stopwatch
//! (`times()`) gives the cost of plain calls over a representative workload; conditional
//! costs (a new pool's first grant, the first allocation after a grant, a grant over live
//! bytes, kernels and copies by size) are timed one by one. Medians throughout.
//!
//! Every experiment reports an error instead of stopping the rest; a model field whose
//! measurement failed keeps its built-in value and `calibration.json` says why.
//
// SAFETY (every `unsafe` block below): pools, buffers and streams are this program's own,
// alive while used; copies stay inside allocations of at least the sizes copied.

use peerpool::child::{Finished, Role, Roles};
use peerpool::driver::{Access, AccessDesc, CudaDriver, DeviceAttribute, Stream};
use peerpool::fault::FaultInjector;
use peerpool::{PoolOptions, System};
use peerpool_sim::{Latencies, Serial};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod samples;

use samples::{median, micros};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Wall-clock nanoseconds since the epoch: comparable between processes on one machine.
fn epoch() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// This program as one of its own children: `MODE DEVICE...` after `--`.
const CHILD: Role = Role::new("calibrate-child", &[]).with_rest();
/// How long a child may take in all (a few seconds at most on the H200s).
const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

fn main() -> ExitCode {
    let child_role = Roles::new().exiting(CHILD, |call| {
        child(call.rest());
        ExitCode::SUCCESS
    });
    if let Some(code) = child_role.dispatch() {
        return code;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(out) = args.first() else {
        eprintln!("usage: calibrate OUT_DIR");
        return ExitCode::from(2);
    };
    match calibrate(Path::new(out)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("calibrate: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Children: one JSON line of timestamps (epoch nanoseconds), then exit.

fn child(args: &[String]) {
    let main = epoch();
    let mode = args.first().cloned().unwrap_or_default();
    let devices: Vec<usize> = args.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    let mut phases: BTreeMap<String, Value> = BTreeMap::new();
    phases.insert("main".into(), json!(main));
    let result = run_child(&mode, &devices, &mut phases);
    phases.insert("end".into(), json!(epoch()));
    let error = result.err().map(|e| e.to_string());
    println!("{}", json!({ "mode": mode, "devices": devices, "phases": phases, "error": error }));
}

/// Runs `f` and records when it started and ended, if it succeeded: a phase that failed (a
/// device that is not there) took no time worth measuring, and its parent must not count it.
fn stamp(phases: &mut BTreeMap<String, Value>, name: &str, f: impl FnOnce() -> Res<()>) -> Res<()> {
    let start = epoch();
    f()?;
    phases.insert(name.into(), json!([start, epoch()]));
    Ok(())
}

fn run_child(mode: &str, devices: &[usize], phases: &mut BTreeMap<String, Value>) -> Res<()> {
    if mode == "noop" {
        return Ok(());
    }
    let mut system = None;
    stamp(phases, "init", || {
        system = Some(System::with_driver(Arc::new(CudaDriver::load()?))?);
        Ok(())
    })?;
    let system = system.ok_or("no system")?;
    phases.insert("visible".into(), json!(system.device_count()));
    match mode {
        "init" => Ok(()),
        "context" => {
            for &d in devices {
                stamp(phases, &format!("context{d}"), || system.enter(d).map(drop).map_err(Into::into))?;
            }
            Ok(())
        }
        // Two threads, one context each, at once.
        "context_threads" => {
            let stamps: Vec<(usize, u64, u64, Result<(), String>)> = std::thread::scope(|s| {
                let handles: Vec<_> = devices
                    .iter()
                    .map(|&d| {
                        let system = &system;
                        s.spawn(move || {
                            let start = epoch();
                            let r = system.enter(d).map(drop).map_err(|e| e.to_string());
                            (d, start, epoch(), r)
                        })
                    })
                    .collect();
                handles.into_iter().filter_map(|h| h.join().ok()).collect()
            });
            let mut failed = None;
            for (d, start, end, r) in stamps {
                match r {
                    Ok(()) => drop(phases.insert(format!("context{d}"), json!([start, end]))),
                    Err(e) => failed = Some(e),
                }
            }
            failed.map_or(Ok(()), |e| Err(e.into()))
        }
        // `peerpool check`'s negative probe, its context and module first, then the probe itself
        // (`peerpool::check::negative_probe`: a pool on the owner made with only the accessor's
        // context, read by the accessor's kernel, ungranted). Ends in a fault.
        "probe" => {
            let (owner, accessor) = (devices[0], devices[1]);
            stamp(phases, &format!("context{accessor}"), || system.enter(accessor).map(drop).map_err(Into::into))?;
            stamp(phases, "module_accessor", || system.kernels(accessor).map(drop).map_err(Into::into))?;
            timed_fault(phases, || peerpool::check::negative_probe(&system, owner, accessor));
            Ok(())
        }
        // A fault on one device: a kernel reads address space reserved and never mapped. What
        // a fault costs to surface and to exit after, where no second GPU gives a probe.
        "fault_local" => {
            let device = devices[0];
            stamp(phases, &format!("context{device}"), || system.enter(device).map(drop).map_err(Into::into))?;
            stamp(phases, "module", || system.kernels(device).map(drop).map_err(Into::into))?;
            let _current = system.enter(device)?;
            let reserved = system.driver().mem_address_reserve(2 << 20, 0)?;
            wait_for_start()?;
            // SAFETY: none, on purpose: the range is not mapped, and the read must fault. This
            // child exists to fault and exits right after; it touches the range with nothing else.
            let unmapped = unsafe { peerpool::DeviceSlice::from_raw(reserved, 1 << 20) };
            timed_fault(phases, || system.with_kernels(device, |k| k.compare_pattern(unmapped, 1)));
            Ok(())
        }
        // Each visible ordinal's UUID as CUDA_VISIBLE_DEVICES takes it (GPU-8-4-4-4-12 hex).
        "uuids" => {
            let driver = system.driver();
            let uuids: Vec<String> = (0..system.device_count() as i32)
                .map(|d| driver.device_get_uuid(d).map(|b| peerpool::driver::uuid_text(&b)))
                .collect::<Result<_, _>>()?;
            phases.insert("uuids".into(), json!(uuids));
            Ok(())
        }
        other => Err(format!("unknown child mode {other}").into()),
    }
}

/// Where the parent set a start time (`START`, epoch nanoseconds: children that fault at one
/// instant), sleeps until then; a child ready too late fails rather than fault out of step.
fn wait_for_start() -> Res<()> {
    let Some(start) = std::env::var(START).ok().and_then(|s| s.parse::<u64>().ok()) else { return Ok(()) };
    let now = epoch();
    if now > start {
        return Err(format!("ready {} ms after the start time", (now - start) / 1_000_000).into());
    }
    std::thread::sleep(std::time::Duration::from_nanos(start - now));
    Ok(())
}

/// The variable that gives children a start time.
const START: &str = "PEERPOOL_CALIBRATE_START";

/// Runs `read`, which must fault, and records when it ran and with what code.
fn timed_fault<T>(phases: &mut BTreeMap<String, Value>, read: impl FnOnce() -> peerpool::Result<T>) {
    let start = epoch();
    let seen = read();
    phases.insert("fault".into(), json!([start, epoch()]));
    phases.insert("fault_code".into(), json!(seen.err().and_then(|e| e.cuda().map(|c| c.code_name()))));
}

/// A child's report and when its parent spawned and reaped it.
struct Ran {
    spawn: u64,
    reaped: u64,
    report: Value,
}

impl Ran {
    fn phase(&self, name: &str) -> Option<(u64, u64)> {
        let p = self.report.get("phases")?.get(name)?;
        Some((p.get(0)?.as_u64()?, p.get(1)?.as_u64()?))
    }

    fn at(&self, name: &str) -> Option<u64> {
        self.report.get("phases")?.get(name)?.as_u64()
    }

    fn micros(&self, name: &str) -> Option<f64> {
        self.phase(name).map(|(a, b)| b.saturating_sub(a) as f64 / 1e3)
    }
}

/// Runs these children at once; returns each one's report with its spawn and reap times.
fn run_children(specs: &[Vec<String>]) -> Res<Vec<Ran>> {
    run_children_with(specs, &[])
}

/// [`run_children`] with these variables set in each child's environment.
fn run_children_with(specs: &[Vec<String>], env: &[(&str, &str)]) -> Res<Vec<Ran>> {
    let mut running = Vec::new();
    for spec in specs {
        let mut command = CHILD.command();
        command.rest(spec);
        for (name, value) in env {
            command.env(name, value);
        }
        let command = command.build()?;
        let spawn = epoch();
        running.push((spawn, peerpool::child::spawn(command, CHILD_TIMEOUT)?));
    }
    let mut done = Vec::new();
    for (spawn, child) in running {
        let finished = child.wait()?;
        let reaped = epoch();
        if let Finished::TimedOut { .. } = finished {
            return Err(format!("a child ran past {CHILD_TIMEOUT:?} and was killed").into());
        }
        let stdout = String::from_utf8_lossy(finished.stdout());
        let line = stdout.lines().next().unwrap_or_default();
        let report: Value = serde_json::from_str(line.trim()).unwrap_or(json!({ "unparsed": line }));
        done.push(Ran { spawn, reaped, report });
    }
    Ok(done)
}

fn spec(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// The length of the union of `intervals`: how long at least one of them was running.
fn union_length(intervals: &[(u64, u64)]) -> u64 {
    let mut sorted: Vec<(u64, u64)> = intervals.to_vec();
    sorted.sort();
    let (mut union, mut cur): (u64, Option<(u64, u64)>) = (0, None);
    for (s, e) in sorted {
        cur = match cur {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                union += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    union + cur.map_or(0, |(cs, ce)| ce - cs)
}

/// How much `intervals` overlapped: their summed length over their union's (1: one after
/// another; n: n fully at once). Overlap is not throughput: two that each take twice as long
/// side by side overlap fully and gain nothing. `None` for fewer than two.
fn overlap(intervals: &[(u64, u64)]) -> Option<f64> {
    let union = union_length(intervals);
    let sum: u64 = intervals.iter().map(|(s, e)| e - s).sum();
    (intervals.len() >= 2).then(|| if union == 0 { 1.0 } else { sum as f64 / union as f64 })
}

/// What running `intervals` side by side gained over one after another, each taking `alone_us`
/// as it does alone: n x alone over the union (1: no gain, serialised; n: n at once at full
/// speed). `None` for fewer than two, or no time alone to compare with.
fn speedup(intervals: &[(u64, u64)], alone_us: f64) -> Option<f64> {
    let union_us = union_length(intervals) as f64 / 1e3;
    (intervals.len() >= 2 && alone_us.is_finite() && alone_us > 0.0 && union_us > 0.0)
        .then(|| intervals.len() as f64 * alone_us / union_us)
}

// ---------------------------------------------------------------------------------------------
// The parent.

fn calibrate(out: &Path) -> Res<()> {
    std::fs::create_dir_all(out)?;
    let mut raw: BTreeMap<String, Value> = BTreeMap::new();
    let mut model = Latencies::default();
    let record = |raw: &mut BTreeMap<String, Value>, name: &str, r: Res<Value>| {
        let v = r.unwrap_or_else(|e| json!({ "error": e.to_string() }));
        eprintln!("calibrate: {name}: {v}");
        raw.insert(name.into(), v);
    };

    // Children alone, five of each, one after another.
    let r = processes_alone(&mut model);
    record(&mut raw, "processes_alone", r);
    // Children at once.
    let r = processes_at_once(&mut model);
    record(&mut raw, "processes_at_once", r);
    // Which devices a child sees when CUDA_VISIBLE_DEVICES lists UUIDs, and in which order.
    let r = visible_by_uuid();
    record(&mut raw, "visible_by_uuid", r);

    // This process.
    let opened = (|| -> Res<(Arc<FaultInjector>, System)> {
        let injector = Arc::new(FaultInjector::new(Arc::new(CudaDriver::load()?)));
        let system = System::with_driver(injector.clone())?;
        if system.device_count() < 2 {
            return Err("needs two GPUs".into());
        }
        for d in 0..2 {
            drop(system.kernels(d)?);
        }
        Ok((injector, system))
    })();
    let failed = match &opened {
        Ok((injector, system)) => {
            let r = plain_calls(system, injector, &mut model);
            record(&mut raw, "plain_calls", r);
            let r = pool_costs(system, &mut model);
            record(&mut raw, "pool_costs", r);
            let r = live_bytes(system, &mut model);
            record(&mut raw, "live_bytes", r);
            let r = transfers(system, &mut model);
            record(&mut raw, "transfers", r);
            let r = mapping_threads(system, &mut model);
            record(&mut raw, "mapping_threads", r);
            let name = system.driver().device_get_name(0).unwrap_or_default();
            let version = system.driver().driver_get_version().unwrap_or(0);
            model.machine = format!("2 x {name} (calibrated), CUDA {}.{}", version / 1000, (version % 1000) / 10);
            None
        }
        Err(e) => {
            raw.insert("this_process".into(), json!({ "error": e.to_string() }));
            model.machine = format!("{} (only the process costs calibrated: {e})", model.machine);
            Some(e.to_string())
        }
    };
    model.source = format!(
        "host/examples/calibrate.rs at {} on {}; raw measurements in calibration.json",
        std::env::var("PEERPOOL_COMMIT").unwrap_or_else(|_| "an unknown commit".into()),
        std::env::var("PEERPOOL_CALIBRATION_DATE").unwrap_or_else(|_| format!("epoch {}", epoch() / 1_000_000_000))
    );
    std::fs::write(out.join("timing.json"), serde_json::to_string_pretty(&model)? + "\n")?;
    std::fs::write(out.join("calibration.json"), serde_json::to_string_pretty(&raw)? + "\n")?;
    println!("calibrate: wrote {} and {}", out.join("timing.json").display(), out.join("calibration.json").display());
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

fn set(field: &mut f64, value: f64) {
    if value.is_finite() && value > 0.0 {
        *field = value;
    }
}

/// Process start, `cuInit`, a context, a negative probe and its exit, each in a fresh process
/// with nothing else running.
fn processes_alone(model: &mut Latencies) -> Res<Value> {
    let mut samples: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for _ in 0..5 {
        // cuInit with only the first device visible: beside init_us (all of them), what each
        // further device adds (the model's init_per_device_us).
        for ran in run_children_with(&[spec(&["init"])], &[("CUDA_VISIBLE_DEVICES", "0")])? {
            // A driver that does not honour the variable (the simulator) shows them all.
            if ran.report["phases"]["visible"] == json!(1) {
                samples.entry("init_one_visible_us").or_default().extend(ran.micros("init"));
            }
        }
        for ran in run_children(&[spec(&["noop"])])? {
            samples
                .entry("process_start_us")
                .or_default()
                .push(ran.at("main").unwrap_or(0).saturating_sub(ran.spawn) as f64 / 1e3);
            samples
                .entry("exit_us")
                .or_default()
                .push(ran.reaped.saturating_sub(ran.at("end").unwrap_or(0)) as f64 / 1e3);
        }
        for ran in run_children(&[spec(&["context", "0", "1"])])? {
            samples
                .entry("context_process_exit_us")
                .or_default()
                .push(ran.reaped.saturating_sub(ran.at("end").unwrap_or(0)) as f64 / 1e3);
            samples.entry("init_us").or_default().extend(ran.micros("init"));
            samples.entry("context_first_us").or_default().extend(ran.micros("context0"));
            samples.entry("context_second_us").or_default().extend(ran.micros("context1"));
        }
        for ran in run_children(&[spec(&["probe", "0", "1"])])? {
            samples.entry("probe_wall_us").or_default().push(ran.reaped.saturating_sub(ran.spawn) as f64 / 1e3);
            samples.entry("probe_module_us").or_default().extend(ran.micros("module_accessor"));
            if ran.report["phases"]["fault_code"] != json!("CUDA_ERROR_ILLEGAL_ADDRESS") {
                eprintln!("calibrate: the probe child did not fault as expected: {}", ran.report);
                continue;
            }
            samples.entry("probe_fault_us").or_default().extend(ran.micros("fault"));
            samples
                .entry("probe_exit_us")
                .or_default()
                .push(ran.reaped.saturating_sub(ran.at("end").unwrap_or(0)) as f64 / 1e3);
        }
        // Recorded, not fitted: the model's fault is the probe's (a peer's access).
        for ran in run_children(&[spec(&["fault_local", "0"])])? {
            if ran.report["phases"]["fault_code"] != json!("CUDA_ERROR_ILLEGAL_ADDRESS") {
                eprintln!("calibrate: the local fault child did not fault as expected: {}", ran.report);
                continue;
            }
            samples.entry("local_fault_wall_us").or_default().push(ran.reaped.saturating_sub(ran.spawn) as f64 / 1e3);
            samples.entry("local_fault_us").or_default().extend(ran.micros("fault"));
            samples
                .entry("local_fault_exit_us")
                .or_default()
                .push(ran.reaped.saturating_sub(ran.at("end").unwrap_or(0)) as f64 / 1e3);
        }
    }
    let m: BTreeMap<&str, f64> = samples.iter().map(|(k, v)| (*k, median(v.clone()))).collect();
    // NaN for what no child measured (on one GPU: the second context, the probe): `set` skips it.
    let m = |name: &str| m.get(name).copied().unwrap_or(f64::NAN);
    set(&mut model.process_start_us, m("process_start_us"));
    set(&mut model.init_us, m("init_us"));
    set(&mut model.context_create_us, median(vec![m("context_first_us"), m("context_second_us")]));
    set(&mut model.module_cubin_us, m("probe_module_us"));
    // A CUDA process's clean exit; a negative probe's fault to surface, and its exit after it.
    set(&mut model.process_exit_us, m("context_process_exit_us"));
    set(&mut model.fault_us, m("probe_fault_us"));
    set(&mut model.fault_exit_us, m("probe_exit_us"));
    let medians: BTreeMap<&str, f64> = samples.keys().map(|k| (*k, m(k))).collect();
    let visible = run_children(&[spec(&["init"])])?.first().and_then(|r| r.report["phases"]["visible"].as_u64());
    let per_device = visible
        .filter(|&n| n >= 2)
        .map(|n| (m("init_us") - m("init_one_visible_us")) / (n - 1) as f64)
        .filter(|v| v.is_finite());
    if let Some(n) = visible.and_then(|n| u32::try_from(n).ok()).filter(|&n| n >= 1) {
        model.init_devices = n;
    }
    // Fewer devices cannot make cuInit slower: a negative slope is noise, taken as none.
    if let Some(slope) = per_device {
        model.init_per_device_us = slope.max(0.0);
    }
    Ok(json!({ "medians": medians, "samples": samples, "devices_visible": visible,
               "init_per_further_device_us": per_device }))
}

/// A child's devices by UUID, then a child told to see the last and the first of them in that
/// order (on one GPU, that one), as a negative probe's child is told its pair: does it see
/// them, in the order listed? Recorded, not fitted.
fn visible_by_uuid() -> Res<Value> {
    let uuids_of = |ran: Vec<Ran>| -> Vec<String> {
        let seen = ran.first().map(|r| r.report["phases"]["uuids"].clone()).unwrap_or_default();
        serde_json::from_value(seen).unwrap_or_default()
    };
    let all = uuids_of(run_children(&[spec(&["uuids"])])?);
    let (Some(first), Some(last)) = (all.first(), all.last()) else {
        return Ok(json!({ "all": all, "listed": null, "error": "no device" }));
    };
    // One GPU: is its UUID taken at all (the order needs two).
    let listed = if all.len() < 2 { vec![first.clone()] } else { vec![last.clone(), first.clone()] };
    let seen = uuids_of(run_children_with(&[spec(&["uuids"])], &[("CUDA_VISIBLE_DEVICES", &listed.join(","))])?);
    Ok(json!({ "all": all, "listed": listed, "seen": seen, "order_kept": seen == listed }))
}

/// Several children at once: do `cuInit`s overlap, do contexts on one device, on two devices,
/// on two threads of one process, do faults on one device and on two; what a round's probes
/// cost together.
fn processes_at_once(model: &mut Latencies) -> Res<Value> {
    let mut out = BTreeMap::new();
    // A figure from a set of children only when every one of them did its work (on one GPU the
    // children asked for device 1 fail, and the rest alone would measure something else).
    let complete = |ran: &[Ran]| ran.iter().all(|r| r.report.get("error").is_some_and(Value::is_null));
    let intervals = |ran: &[Ran], phase: &str| -> Vec<(u64, u64)> {
        if complete(ran) { ran.iter().filter_map(|r| r.phase(phase)).collect() } else { vec![] }
    };
    let wall = |ran: &[Ran]| -> Option<f64> {
        let start = ran.iter().map(|r| r.spawn).min()?;
        let end = ran.iter().map(|r| r.reaped).max()?;
        complete(ran).then(|| end.saturating_sub(start) as f64 / 1e3)
    };
    // Each set: how much its phases overlapped, and what that gained over the phase alone
    // (from `processes_alone`, run first). The model's choices follow the gain.
    let measure = |iv: &[(u64, u64)], alone_us: f64| (overlap(iv), speedup(iv, alone_us));
    let mut init_gain = Vec::new();
    for k in [2usize, 4, 8] {
        let ran = run_children(&vec![spec(&["init"]); k])?;
        let (o, g) = measure(&intervals(&ran, "init"), model.init_us);
        init_gain.extend(g.map(|g| (k, g)));
        out.insert(format!("init_x{k}"), json!({ "wall_us": wall(&ran), "overlap": o, "speedup": g }));
    }
    // Contexts on one device from k processes; then half on each device.
    let context_us = model.context_create_us;
    let mut same = Vec::new();
    let mut split = Vec::new();
    for k in [2usize, 4] {
        let ran = run_children(&vec![spec(&["context", "0"]); k])?;
        let (o, g) = measure(&intervals(&ran, "context0"), context_us);
        same.extend(g);
        out.insert(format!("context_device0_x{k}"), json!({ "wall_us": wall(&ran), "overlap": o, "speedup": g }));
        let specs: Vec<Vec<String>> = (0..k).map(|i| spec(&["context", if i % 2 == 0 { "0" } else { "1" }])).collect();
        let ran = run_children(&specs)?;
        let mut both = intervals(&ran, "context0");
        both.extend(intervals(&ran, "context1"));
        let (o, g) = measure(&both, context_us);
        split.extend(g.map(|g| (k, g)));
        out.insert(format!("context_split_x{k}"), json!({ "wall_us": wall(&ran), "overlap": o, "speedup": g }));
    }
    let ran = run_children(&[spec(&["context_threads", "0", "1"])])?;
    let mut threads = intervals(&ran, "context0");
    threads.extend(intervals(&ran, "context1"));
    let (thread_o, thread_g) = measure(&threads, context_us);
    out.insert("context_two_threads".into(), json!({ "overlap": thread_o, "speedup": thread_g }));
    // Faults at one instant: one alone, then several on device 0, then one on each device.
    let faults = |devices: &[usize]| -> Res<Vec<(u64, u64)>> {
        let specs: Vec<Vec<String>> = devices.iter().map(|d| spec(&["fault_local", &d.to_string()])).collect();
        // Time for every child's cuInit and context first (contexts are made one at a time).
        let start = epoch() + 1_500_000_000 + 300_000_000 * devices.len() as u64;
        let ran = run_children_with(&specs, &[(START, &start.to_string())])?;
        let faulted = ran.iter().all(|r| r.report["phases"]["fault_code"] == json!("CUDA_ERROR_ILLEGAL_ADDRESS"));
        Ok(if faulted { intervals(&ran, "fault") } else { vec![] })
    };
    let alone = faults(&[0])?;
    let fault_us = median(alone.iter().map(|&(a, b)| b.saturating_sub(a) as f64 / 1e3).collect());
    out.insert("fault_device0_x1".into(), json!({ "fault_us": fault_us }));
    let mut fault_same = Vec::new();
    for k in [2usize, 4] {
        let (o, g) = measure(&faults(&vec![0; k])?, fault_us);
        fault_same.extend(g);
        out.insert(format!("fault_device0_x{k}"), json!({ "overlap": o, "speedup": g }));
    }
    let (o, fault_split) = measure(&faults(&[0, 1])?, fault_us);
    let fault_split: Vec<(usize, f64)> = fault_split.map(|g| (2, g)).into_iter().collect();
    out.insert("fault_split_x2".into(), json!({ "overlap": o, "speedup": fault_split }));
    // A round's probes on two GPUs: both directions at once, as `peerpool check` runs them.
    let ran = run_children(&[spec(&["probe", "0", "1"]), spec(&["probe", "1", "0"])])?;
    out.insert("probe_round".into(), json!({ "wall_us": wall(&ran) }));
    // Per device and per process, gaining less than 1.25 x is one at a time; across the machine,
    // how many at once ([`at_once`]). What could not be measured keeps the model's own choice.
    let gains = |v: &[(usize, f64)]| median(v.iter().map(|&(_, g)| g).collect());
    let (same_g, split_g, init_g) = (median(same), gains(&split), gains(&init_gain));
    let decide = |field: &mut bool, g: f64| {
        if g.is_finite() {
            *field = g < 1.25;
        }
    };
    decide(&mut model.context_serial.device, same_g);
    decide(&mut model.context_serial.process, thread_g.unwrap_or(f64::NAN));
    for (serial, gains) in [
        (&mut model.context_serial, &split),
        (&mut model.init_serial, &init_gain),
        (&mut model.fault_serial, &fault_split),
    ] {
        if let Some((machine, at_once)) = at_once(gains) {
            (serial.machine, serial.at_once) = (machine, at_once);
        }
    }
    // Recorded, not decided: in the model a fault holds its GPU, so faults on one GPU are one at
    // a time whatever `fault_serial.device` says; this shows whether the GPU agrees.
    let fault_same_g = median(fault_same);
    out.insert(
        "decided".into(),
        json!({ "context_serial": model.context_serial, "init_serial": model.init_serial,
                "fault_serial": model.fault_serial,
                "context_same_device_speedup": same_g, "context_split_speedup": split_g,
                "init_speedup": init_g, "fault_same_device_speedup": fault_same_g,
                "fault_split_speedup": gains(&fault_split) }),
    );
    Ok(json!(out))
}

/// From the gains of k processes doing the same work at once, `(k, gain)`: whether the machine
/// limits how many run at once, and to how many. Gaining less than 1.25x is one at a time;
/// gaining near the most processes tried (0.8 of them) is no limit; in between, the gain the
/// work levelled off at (`cuInit` on the H200s: 1.8x, 3.0x, 3.0x for 2, 4, 8: three at once).
fn at_once(gains: &[(usize, f64)]) -> Option<(bool, u32)> {
    let finite: Vec<(usize, f64)> = gains.iter().copied().filter(|(_, g)| g.is_finite()).collect();
    let most = finite.iter().map(|&(k, _)| k).max()?;
    let best = finite.iter().map(|&(_, g)| g).fold(f64::NAN, f64::max);
    Some(match best {
        g if g < 1.25 => (true, 1),
        g if g >= 0.8 * most as f64 => (false, 1),
        g => (true, g.round() as u32),
    })
}

/// The base cost of plain calls, from the stopwatch over a representative workload: two
/// verifications and `peerpool check`'s steps for both ordered pairs.
fn plain_calls(system: &System, injector: &FaultInjector, model: &mut Latencies) -> Res<Value> {
    let driver = system.driver();
    injector.reset();
    for _ in 0..2000 {
        driver.ctx_get_current()?;
        driver.device_get_attribute(0, DeviceAttribute::MultiprocessorCount)?;
    }
    for (o, a) in [(0, 1), (1, 0)] {
        system.forget_evidence();
        let pool = system.create_pool(o, PoolOptions::default())?;
        system.grant(pool.as_ref(), a)?;
        let m = system.alloc(pool.as_ref(), 4 << 20)?;
        system.with_kernels(a, |k| k.fill(m.as_slice(), 1))?;
        system.with_kernels(o, |k| k.compare_pattern(m.as_slice(), 1))?;
        m.free()?;
        pool.destroy()?;
    }
    let times = injector.times();
    let counts = injector.counts();
    let per_call: BTreeMap<&str, f64> = times
        .iter()
        .filter_map(|(name, t)| {
            let n = *counts.get(name)?;
            (n > 0).then(|| (*name, t.as_secs_f64() * 1e6 / n as f64))
        })
        .collect();
    let get = |n: &str| per_call.get(n).copied().unwrap_or(f64::NAN);
    set(&mut model.context_switch_us, get("cuCtxGetCurrent"));
    set(&mut model.call_us, get("cuDeviceGetAttribute"));
    set(&mut model.launch_us, get("cuLaunchKernel"));
    set(&mut model.sync_us, get("cuStreamSynchronize"));
    set(&mut model.free_us, get("cuMemFreeAsync"));
    set(&mut model.memset_us, get("cuMemsetD32Async"));
    set(&mut model.pool_create_us, get("cuMemPoolCreate"));
    set(&mut model.pool_destroy_us, get("cuMemPoolDestroy"));
    Ok(json!({ "per_call_us": per_call, "counts": counts }))
}

/// A new pool's first grant, an unchanged grant, first allocations with and without a peer,
/// allocating first and granting after.
fn pool_costs(system: &System, model: &mut Latencies) -> Res<Value> {
    let driver = system.driver().clone();
    let rw = [AccessDesc { device: 1, access: Access::ReadWrite }];
    let mut s: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for _ in 0..7 {
        // No peer.
        let pool = system.create_pool(0, PoolOptions::default())?;
        let t = Instant::now();
        let a = system.alloc(pool.as_ref(), 1 << 20)?;
        s.entry("alloc_first_no_peer").or_default().push(micros(t));
        let t = Instant::now();
        let b = system.alloc(pool.as_ref(), 1 << 20)?;
        s.entry("alloc_later").or_default().push(micros(t));
        drop((a, b));
        pool.destroy()?;
        // Grant, then allocate.
        let pool = system.create_pool(0, PoolOptions::default())?;
        let t = Instant::now();
        unsafe { driver.mem_pool_set_access(pool.handle(), &rw) }?;
        s.entry("grant_empty").or_default().push(micros(t));
        let t = Instant::now();
        unsafe { driver.mem_pool_set_access(pool.handle(), &rw) }?;
        s.entry("grant_unchanged").or_default().push(micros(t));
        let t = Instant::now();
        let a = system.alloc(pool.as_ref(), 1 << 20)?;
        s.entry("alloc_first_after_grant").or_default().push(micros(t));
        drop(a);
        pool.destroy()?;
        // Allocate, then grant.
        let pool = system.create_pool(0, PoolOptions::default())?;
        let a = system.alloc(pool.as_ref(), 1 << 20)?;
        let t = Instant::now();
        unsafe { driver.mem_pool_set_access(pool.handle(), &rw) }?;
        s.entry("grant_over_live_first").or_default().push(micros(t));
        drop(a);
        pool.destroy()?;
    }
    let m: BTreeMap<&str, f64> = s.iter().map(|(k, v)| (*k, median(v.clone()))).collect();
    set(&mut model.alloc_first_us, m["alloc_first_no_peer"]);
    set(&mut model.alloc_us, m["alloc_later"]);
    set(&mut model.grant_empty_us, m["grant_empty"]);
    set(&mut model.set_access_unchanged_us, m["grant_unchanged"]);
    set(&mut model.map_on_alloc_us, m["alloc_first_after_grant"] - m["alloc_first_no_peer"]);
    set(&mut model.map_on_grant_first_us, m["grant_over_live_first"]);
    Ok(json!({ "medians_us": m, "samples_us": s }))
}

/// Grant and revoke again over 1 and 8 GiB live: the growth with live bytes.
fn live_bytes(system: &System, model: &mut Latencies) -> Res<Value> {
    let driver = system.driver().clone();
    let rw = [AccessDesc { device: 1, access: Access::ReadWrite }];
    let none = [AccessDesc { device: 1, access: Access::None }];
    let mut points = BTreeMap::new();
    for gib in [1u64, 8] {
        let pool = system.create_pool(0, PoolOptions::default())?;
        let live = system.alloc(pool.as_ref(), (gib << 30) as usize)?;
        unsafe { driver.mem_pool_set_access(pool.handle(), &rw) }?;
        let (mut grant, mut revoke) = (vec![], vec![]);
        for _ in 0..5 {
            let t = Instant::now();
            unsafe { driver.mem_pool_set_access(pool.handle(), &none) }?;
            revoke.push(micros(t));
            let t = Instant::now();
            unsafe { driver.mem_pool_set_access(pool.handle(), &rw) }?;
            grant.push(micros(t));
        }
        points.insert(gib, (median(grant), median(revoke)));
        drop(live);
        pool.destroy()?;
    }
    let ((g1, r1), (g8, r8)) = (points[&1], points[&8]);
    let (grant_slope, revoke_slope) = ((g8 - g1) / 7.0, (r8 - r1) / 7.0);
    set(&mut model.map_per_gib_us, grant_slope);
    set(&mut model.map_on_grant_again_us, g1 - grant_slope.max(0.0));
    set(&mut model.revoke_per_gib_us, revoke_slope);
    set(&mut model.revoke_us, r1 - revoke_slope.max(0.0));
    Ok(json!({ "grant_us_by_gib": { "1": g1, "8": g8 }, "revoke_us_by_gib": { "1": r1, "8": r8 } }))
}

/// Kernels and copies, small and large: their fixed cost and their rate.
fn transfers(system: &System, model: &mut Latencies) -> Res<Value> {
    let driver = system.driver().clone();
    let (small, big) = (4096usize, 256usize << 20);
    let pools = [system.create_pool(0, PoolOptions::default())?, system.create_pool(1, PoolOptions::default())?];
    let rw = [AccessDesc { device: 1, access: Access::ReadWrite }];
    unsafe { driver.mem_pool_set_access(pools[0].handle(), &rw) }?;
    let on0 = system.alloc(pools[0].as_ref(), big)?;
    let on1 = system.alloc(pools[1].as_ref(), big)?;
    let time = |f: &mut dyn FnMut() -> Res<()>| -> Res<f64> {
        f()?; // warm
        let mut v = vec![];
        for _ in 0..5 {
            let t = Instant::now();
            f()?;
            v.push(micros(t));
        }
        Ok(median(v))
    };
    let words = |bytes: usize| (bytes / 4) as u64;
    let fill = |device: usize, bytes: usize| -> Res<f64> {
        time(&mut || Ok(system.with_kernels(device, |k| k.fill(on0.words(words(bytes))?, 7))?))
    };
    let (local_small, local_big) = (fill(0, small)?, fill(0, big)?);
    let (peer_small, peer_big) = (fill(1, small)?, fill(1, big)?);
    let copy = |bytes: usize| -> Res<f64> {
        time(&mut || {
            let _current = system.enter(1)?;
            unsafe {
                driver.memcpy_dtod_async(on1.ptr(), on0.ptr(), bytes, Stream::LEGACY)?;
                driver.stream_synchronize(Stream::LEGACY)?;
            }
            Ok(())
        })
    };
    let (copy_small, copy_big) = (copy(small)?, copy(big)?);
    let host = |bytes: usize| -> Res<f64> {
        let mut buffer = vec![0u8; bytes];
        time(&mut || Ok(on0.read(&mut buffer)?))
    };
    let (host_small, host_big) = (host(small)?, host(64 << 20)?);
    let gbps = |bytes: usize, t_big: f64, t_small: f64| (bytes - small) as f64 / ((t_big - t_small) * 1e3);
    set(&mut model.local_gbps, gbps(big, local_big, local_small));
    set(&mut model.peer_kernel_gbps, gbps(big, peer_big, peer_small));
    set(&mut model.peer_copy_gbps, gbps(big, copy_big, copy_small));
    set(&mut model.host_copy_gbps, gbps(64 << 20, host_big, host_small));
    set(&mut model.copy_us, copy_small - model.sync_us);
    Ok(json!({
        "fill_local_us": { "4KiB": local_small, "256MiB": local_big },
        "fill_peer_us": { "4KiB": peer_small, "256MiB": peer_big },
        "copy_peer_us": { "4KiB": copy_small, "256MiB": copy_big },
        "read_to_host_us": { "4KiB": host_small, "64MiB": host_big },
    }))
}

/// Two threads making the first allocation after a grant in two new pools, one per device:
/// does the mapping serialise within a process?
fn mapping_threads(system: &System, model: &mut Latencies) -> Res<Value> {
    let mut apart = vec![];
    let mut together = vec![];
    for round in 0..6 {
        let pools = [system.create_pool(0, PoolOptions::default())?, system.create_pool(1, PoolOptions::default())?];
        for (device, pool) in pools.iter().enumerate() {
            let other = [AccessDesc { device: 1 - device as i32, access: Access::ReadWrite }];
            unsafe { system.driver().mem_pool_set_access(pool.handle(), &other) }?;
        }
        let t = Instant::now();
        let made = if round % 2 == 0 {
            [system.alloc(pools[0].as_ref(), 1 << 20), system.alloc(pools[1].as_ref(), 1 << 20)]
        } else {
            std::thread::scope(|s| {
                let second = s.spawn(|| system.alloc(pools[1].as_ref(), 1 << 20));
                let first = system.alloc(pools[0].as_ref(), 1 << 20);
                [first, second.join().unwrap_or_else(|_| Err(peerpool::Error::InvalidArgument("thread".into())))]
            })
        };
        let took = micros(t);
        if round % 2 == 0 {
            apart.push(took)
        } else {
            together.push(took)
        }
        for m in made {
            m?.free()?;
        }
        for pool in pools {
            pool.destroy()?;
        }
    }
    let (apart, together) = (median(apart), median(together));
    // Two threads no faster than one after the other: one at a time.
    model.map_serial = Serial::one_at_a_time(false, together > 0.8 * apart, false);
    Ok(json!({ "one_after_the_other_us": apart, "two_threads_us": together, "decided": model.map_serial }))
}
