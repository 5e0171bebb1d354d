//! What only fresh processes show: process start and exit, `cuInit`, context creation and a
//! negative probe, alone and several at once, and which devices a child sees.

use super::children::*;
use super::{Res, set};
use peerpool::bench::median;
use peerpool_sim::Latencies;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// with nothing else running.
pub(super) fn processes_alone(model: &mut Latencies) -> Res<Value> {
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
                eprintln!("peerpool calibrate: the probe child did not fault as expected: {}", ran.report);
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
                eprintln!("peerpool calibrate: the local fault child did not fault as expected: {}", ran.report);
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
pub(super) fn visible_by_uuid() -> Res<Value> {
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
pub(super) fn processes_at_once(model: &mut Latencies) -> Res<Value> {
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
pub(super) fn at_once(gains: &[(usize, f64)]) -> Option<(bool, u32)> {
    let finite: Vec<(usize, f64)> = gains.iter().copied().filter(|(_, g)| g.is_finite()).collect();
    let most = finite.iter().map(|&(k, _)| k).max()?;
    let best = finite.iter().map(|&(_, g)| g).fold(f64::NAN, f64::max);
    Some(match best {
        g if g < 1.25 => (true, 1),
        g if g >= 0.8 * most as f64 => (false, 1),
        g => (true, g.round() as u32),
    })
}
