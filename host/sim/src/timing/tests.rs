use super::clock::{Busy, fit};
use super::price::Touched;
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
    let peer = Touched { bytes: 1 << 40, atomics: u64::MAX, loads: u64::MAX };
    let traffic = Traffic { peer, ..Traffic::default() };
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
        format!(r#"{{"init_serial": {{"device": false, "process": false, "machine": true, "at_once": {at_once}}}}}"#)
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
    let all: Vec<(usize, usize)> = (0..8).flat_map(|o| (0..8).filter(move |&a| a != o).map(move |a| (o, a))).collect();
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
    let m =
        Latencies { fault_us: 100.0, fault_serial: Serial::one_at_a_time(false, false, false), ..Latencies::default() };
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
        passed.pass_on(crate::threads::current(), costs.of_work(work).expect("a lane-only call"));
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
