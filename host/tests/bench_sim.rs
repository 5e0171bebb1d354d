//! `peerpool bench` on the simulator: every measurement path runs and reports, and its numbers
//! are what the timing model projects (events and the stopwatch read the virtual clock); the
//! hardware run gives the measured ones.

use peerpool::GrantError;
use peerpool::System;
use peerpool::bench::{BenchError, BenchOptions, run};
use peerpool_sim::{Latencies, SimDriver, Topology, catalog_topology};
use std::sync::Arc;

/// A system on a simulator of `topology`, with small verification probes.
fn on(topology: Topology) -> System {
    let system = System::with_driver(Arc::new(SimDriver::new(topology))).unwrap();
    system.set_scratch_bytes(4096).expect("a valid scratch size");
    system
}

#[test]
fn every_measurement_runs_on_every_pair() {
    let system = on(Topology::two_h200());
    let options = BenchOptions {
        sizes: vec![4096, 1 << 16, 1 << 20],
        repeats: 2,
        live_gib: vec![0],
        chase_hops: 50,
        curve_pairs: None,
    };
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
    // The numbers are the model's: every rate positive, growing with size (fixed costs
    // amortised), and the grant and the first PTX load cost what the H200 calibration says.
    let model = Latencies::h200();
    for curve in report.pairs.iter().flat_map(|p| &p.curves) {
        assert!(curve.gbps.windows(2).all(|w| 0.0 < w[0] && w[0] < w[1]), "{}: {:?}", curve.path, curve.gbps);
    }
    let grant_us = report.grant_vs_live[0].grant_us;
    assert!((model.grant_empty_us..model.grant_empty_us + 50.0).contains(&grant_us), "grant {grant_us} us");
    assert!(report.ptx_load_first_ms >= model.module_ptx_jit_us / 1e3, "{} ms", report.ptx_load_first_ms);
}

#[test]
fn the_cubin_load_is_measured_only_where_it_runs() {
    let mut topology = Topology::two_h200();
    for device in &mut topology.devices {
        device.compute_capability = (8, 0);
    }
    let system = on(topology);
    let options = BenchOptions { sizes: vec![4096], repeats: 1, live_gib: vec![0], chase_hops: 10, curve_pairs: None };
    assert_eq!(run(&system, &options).expect("the bench runs").sm90_cubin_load_ms, None);
}

fn quick(curve_pairs: Option<usize>) -> BenchOptions {
    BenchOptions { sizes: vec![4096, 1 << 16], repeats: 1, live_gib: vec![0], chase_hops: 10, curve_pairs }
}

#[test]
fn pairs_without_peer_access_are_skipped_with_the_reason_and_the_rest_measured() {
    // Two NVLink-bridged pairs (0-1, 2-3) with no peer path between them.
    let system = on(catalog_topology("four_gpu_islands").unwrap());
    let report = run(&system, &quick(None)).expect("the bench runs on the pairs that reach each other");
    let measured: Vec<(usize, usize)> = report.pairs.iter().map(|p| (p.owner, p.accessor)).collect();
    let mut sorted = measured.clone();
    sorted.sort();
    assert_eq!(sorted, vec![(0, 1), (1, 0), (2, 3), (3, 2)]);
    assert_eq!(report.skipped.len(), 8);
    assert!(report.skipped.iter().all(|s| s.reason.contains("cannot access") && (s.owner < 2) != (s.accessor < 2)));
    assert_eq!(report.grant_pair, measured[0]);
}

#[test]
fn past_curve_pairs_only_the_largest_size_is_measured() {
    let system = on(catalog_topology("four_gpu_islands").unwrap());
    let report = run(&system, &quick(Some(1))).expect("the bench runs");
    assert_eq!(report.pairs[0].sizes, vec![4096, 1 << 16]);
    assert!(report.pairs[1..].iter().all(|p| p.sizes == vec![1 << 16] && p.curves.iter().all(|c| c.gbps.len() == 1)));
}

#[test]
fn no_pair_that_reaches_both_ways_is_an_error_not_a_panic() {
    let system = on(catalog_topology("one_way_pair").unwrap());
    let error = run(&system, &quick(None)).expect_err("nothing to measure");
    assert!(matches!(error, BenchError::NoPair { .. }), "{error:?}");
    assert!(error.to_string().contains("no pair of GPUs reaches each other both ways"), "{error}");
}

/// A pair whose link corrupts bytes is not measured: its verification's rejection is the
/// bench's error, typed and readable.
#[test]
fn a_pair_that_fails_verification_stops_the_bench_with_the_rejection() {
    let system = on(catalog_topology("corrupt_link_pair").unwrap());
    let error = run(&system, &quick(None)).expect_err("the corrupt link is found");
    assert!(matches!(error, BenchError::Grant(GrantError::Rejected { .. })), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("bytes moved") && text.contains("came back wrong") && !text.contains('{'), "{text}");
}

/// Options outside their ranges are refused before any work, each by what is wrong (a
/// pointer chase of u64::MAX hops ran for ever).
#[test]
fn options_out_of_range_are_refused_before_any_work() {
    let system = on(Topology::two_h200());
    let base = quick(None);
    for (options, says) in [
        (BenchOptions { sizes: vec![], ..base.clone() }, "no transfer size"),
        (BenchOptions { sizes: vec![100], ..base.clone() }, "size 100"),
        (BenchOptions { sizes: vec![1 << 37], ..base.clone() }, "64 GiB"),
        (BenchOptions { repeats: 0, ..base.clone() }, "0 repeats"),
        (BenchOptions { live_gib: vec![1 << 20], ..base.clone() }, "live GiB"),
        (BenchOptions { chase_hops: u64::MAX, ..base.clone() }, "hops"),
        (BenchOptions { chase_hops: 0, ..base.clone() }, "hops"),
    ] {
        let error = run(&system, &options).expect_err(says);
        assert!(matches!(error, BenchError::Api(peerpool::Error::InvalidArgument(_))), "{error:?}");
        assert!(error.to_string().contains(says), "{says}: {error}");
    }
}
