//! The calibration's children: each one JSON line of timestamps (epoch nanoseconds), then its
//! exit; and the parent's side, which runs them at once and reads when each phase ran.

// SAFETY (every `unsafe` block below): pools, buffers and streams are this program's own,
// alive while used; copies stay inside allocations of at least the sizes copied.

use super::Res;
use peerpool::System;
use peerpool::child::{Finished, Role};
use peerpool::driver::CudaDriver;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Wall-clock nanoseconds since the epoch: comparable between processes on one machine.
pub(super) fn epoch() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// This program as one of its own children: `MODE DEVICE...` after `--`.
pub(crate) const CHILD: Role = Role::new("calibrate-child", &[]).with_rest();
/// How long a child may take in all (a few seconds at most on the H200s).
pub(super) const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

pub(crate) fn child(args: &[String]) {
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
pub(super) fn stamp(phases: &mut BTreeMap<String, Value>, name: &str, f: impl FnOnce() -> Res<()>) -> Res<()> {
    let start = epoch();
    f()?;
    phases.insert(name.into(), json!([start, epoch()]));
    Ok(())
}

pub(super) fn run_child(mode: &str, devices: &[usize], phases: &mut BTreeMap<String, Value>) -> Res<()> {
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
pub(super) fn wait_for_start() -> Res<()> {
    let Some(start) = std::env::var(START).ok().and_then(|s| s.parse::<u64>().ok()) else { return Ok(()) };
    let now = epoch();
    if now > start {
        return Err(format!("ready {} ms after the start time", (now - start) / 1_000_000).into());
    }
    std::thread::sleep(std::time::Duration::from_nanos(start - now));
    Ok(())
}

/// The variable that gives children a start time.
pub(super) const START: &str = "PEERPOOL_CALIBRATE_START";

/// Runs `read`, which must fault, and records when it ran and with what code.
pub(super) fn timed_fault<T>(phases: &mut BTreeMap<String, Value>, read: impl FnOnce() -> peerpool::Result<T>) {
    let start = epoch();
    let seen = read();
    phases.insert("fault".into(), json!([start, epoch()]));
    phases.insert("fault_code".into(), json!(seen.err().and_then(|e| e.cuda().map(|c| c.code_name()))));
}

/// A child's report and when its parent spawned and reaped it.
pub(super) struct Ran {
    pub(super) spawn: u64,
    pub(super) reaped: u64,
    pub(super) report: Value,
}

impl Ran {
    pub(super) fn phase(&self, name: &str) -> Option<(u64, u64)> {
        let p = self.report.get("phases")?.get(name)?;
        Some((p.get(0)?.as_u64()?, p.get(1)?.as_u64()?))
    }

    pub(super) fn at(&self, name: &str) -> Option<u64> {
        self.report.get("phases")?.get(name)?.as_u64()
    }

    pub(super) fn micros(&self, name: &str) -> Option<f64> {
        self.phase(name).map(|(a, b)| b.saturating_sub(a) as f64 / 1e3)
    }
}

/// Runs these children at once; returns each one's report with its spawn and reap times.
pub(super) fn run_children(specs: &[Vec<String>]) -> Res<Vec<Ran>> {
    run_children_with(specs, &[])
}

/// [`run_children`] with these variables set in each child's environment.
pub(super) fn run_children_with(specs: &[Vec<String>], env: &[(&str, &str)]) -> Res<Vec<Ran>> {
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

pub(super) fn spec(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// The length of the union of `intervals`: how long at least one of them was running.
pub(super) fn union_length(intervals: &[(u64, u64)]) -> u64 {
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
pub(super) fn overlap(intervals: &[(u64, u64)]) -> Option<f64> {
    let union = union_length(intervals);
    let sum: u64 = intervals.iter().map(|(s, e)| e - s).sum();
    (intervals.len() >= 2).then(|| if union == 0 { 1.0 } else { sum as f64 / union as f64 })
}

/// What running `intervals` side by side gained over one after another, each taking `alone_us`
/// as it does alone: n x alone over the union (1: no gain, serialised; n: n at once at full
/// speed). `None` for fewer than two, or no time alone to compare with.
pub(super) fn speedup(intervals: &[(u64, u64)], alone_us: f64) -> Option<f64> {
    let union_us = union_length(intervals) as f64 / 1e3;
    (intervals.len() >= 2 && alone_us.is_finite() && alone_us > 0.0 && union_us > 0.0)
        .then(|| intervals.len() as f64 * alone_us / union_us)
}
