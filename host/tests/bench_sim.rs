//! `peerpool bench` on the simulator: every measurement path runs and reports (the simulator
//! keeps no time, so the numbers mean nothing here; the hardware run gives them).

use peerpool::System;
use peerpool::bench::{BenchOptions, run};
use peerpool_sim::{SimDriver, Topology};
use std::sync::Arc;

#[test]
fn every_measurement_runs_on_every_pair() {
    let system = System::with_driver(Arc::new(SimDriver::new(Topology::two_h200()))).unwrap();
    system.set_probe_bytes(4096).expect("a valid probe size");
    let options = BenchOptions { sizes: vec![4096, 1 << 16, 1 << 20], repeats: 2, live_gib: vec![0], chase_hops: 50 };
    let report = run(&system, &options).expect("the bench runs");
    assert_eq!(report.pairs.len(), 2);
    for pair in &report.pairs {
        assert_eq!(pair.curves.len(), 9, "{:?}", pair.curves.iter().map(|c| &c.path).collect::<Vec<_>>());
        assert!(pair.curves.iter().all(|c| c.gbps.len() == 3));
    }
    assert_eq!(report.grant_vs_live.len(), 1);
    assert!(report.ratios.iter().any(|(name, _)| name.contains("kernel read / copy engine")));
    assert!(report.ratios.iter().any(|(name, _)| name.contains("both directions, kernels push / copy engine")));
    // The simulated H200s are compute capability 9.0: the cubin's load is measured too.
    assert!(report.sm90_cubin_load_ms.is_some());
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains("\"sizes\":[4096,65536,1048576]"));
}

#[test]
fn the_cubin_load_is_measured_only_where_it_runs() {
    let mut topology = Topology::two_h200();
    for device in &mut topology.devices {
        device.compute_capability = (8, 0);
    }
    let system = System::with_driver(Arc::new(SimDriver::new(topology))).unwrap();
    system.set_probe_bytes(4096).expect("a valid probe size");
    let options = BenchOptions { sizes: vec![4096], repeats: 1, live_gib: vec![0], chase_hops: 10 };
    assert_eq!(run(&system, &options).expect("the bench runs").sm90_cubin_load_ms, None);
}
