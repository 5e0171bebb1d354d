//! The exhaustive fault sweep: every driver call that discovery, grant (with and without
//! verification), revoke, set-to-list, the all-visible helper and read-only requests reach is
//! failed in turn, on the simulator behind a fault injector. Each time:
//! - no panic, and the operation's error names the injected call (or, for the few calls on
//!   cleanup paths whose failure cannot be reported, the operation's clean result);
//! - the caller's current context is what it was, at every site: where restoring it is what
//!   failed, the result reports that `cuCtxSetCurrent` error (never a silent change);
//! - every pool's access table is unchanged (the failing call applied nothing);
//! - nothing leaks: pools, allocations, streams, modules and context retains all return to
//!   the clean run's counts once the system drops, except what the failed call itself held.
//!
//! `SITES` lists the call sites each scenario reaches: a new call in an engine path fails
//! `the_swept_sites_are_the_known_ones` until it is added there (and so swept).

use peerpool::driver::{Access, Context};
use peerpool::fault::{FaultInjector, FaultPlan, Rule};
use peerpool::{CudaCode, Grant, GrantError, OwnedPool, PoolOptions, Revoke, System};
use peerpool_sim::{SimDriver, SimStats, Topology, catalog_topology};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Failures of these calls happen on cleanup paths (drops) and cannot reach the caller.
const UNREPORTABLE: &[&str] = &["cuMemFreeAsync", "cuMemFree", "cuModuleUnload", "cuDevicePrimaryCtxRelease"];

/// The calls on a free's path (entering the owner's context, the free itself, its sync).
const FREE_PATH: &[&str] =
    &["cuCtxGetCurrent", "cuCtxSetCurrent", "cuMemFreeAsync", "cuMemFree", "cuStreamSynchronize"];

/// What an operation returned, and the access changes its result claims: `(pool index, device,
/// access)`. After any failure the tables must equal the starting tables with exactly these
/// claimed changes applied.
struct Outcome {
    text: Result<String, String>,
    claims: Vec<(usize, usize, Access)>,
}

type Op = fn(&System, &[OwnedPool]) -> Outcome;

struct Scenario {
    name: &'static str,
    topology: fn() -> Topology,
    /// Pools made before the operation (owner ordinals), and whether their pairs are verified.
    pools: &'static [usize],
    warm: bool,
    /// Whether the pools start granted to gpu0 (or gpu1 for gpu0's pools).
    granted: bool,
    op: Op,
}

fn outcome<T: std::fmt::Debug, E: std::fmt::Display>(r: &Result<T, E>, claims: Vec<(usize, usize, Access)>) -> Outcome {
    let text = match r {
        Ok(v) => Ok(format!("{v:?}")),
        Err(e) => Err(e.to_string()),
    };
    Outcome { text, claims }
}

fn grant_claim(r: &Result<Grant, GrantError>, device: usize, access: Access) -> Vec<(usize, usize, Access)> {
    if matches!(r, Ok(Grant::Granted { .. })) { vec![(0, device, access)] } else { vec![] }
}

/// The pool (on gpu0) granted to gpu1: verifying or warm, depending on the scenario's setup.
fn grant_0_to_1(s: &System, p: &[OwnedPool]) -> Outcome {
    let r = s.grant(p[0].as_ref(), 1);
    outcome(&r, grant_claim(&r, 1, Access::ReadWrite))
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "discovery",
        topology: Topology::two_h200,
        pools: &[],
        warm: false,
        granted: false,
        op: |s, _| outcome(&s.facts(), vec![]),
    },
    Scenario {
        name: "grant_verifying",
        topology: Topology::two_h200,
        pools: &[0],
        warm: false,
        granted: false,
        op: grant_0_to_1,
    },
    Scenario {
        name: "grant_warm",
        topology: Topology::two_h200,
        pools: &[0],
        warm: true,
        granted: false,
        op: grant_0_to_1,
    },
    Scenario {
        name: "revoke",
        topology: Topology::two_h200,
        pools: &[1],
        warm: true,
        granted: true,
        op: |s, p| {
            let r = s.revoke(p[0].as_ref(), 0);
            let claims = if matches!(r, Ok(Revoke::Revoked { .. })) { vec![(0, 0, Access::None)] } else { vec![] };
            outcome(&r, claims)
        },
    },
    Scenario {
        name: "set_peers",
        topology: || catalog_topology("four_gpu_islands").expect("catalog"),
        pools: &[2],
        warm: false,
        granted: false,
        op: |s, p| {
            let r = s.set_peers(p[0].as_ref(), &[3]);
            let claims = r.as_ref().map_or(vec![], |up| {
                let granted = up.granted.iter().map(|&d| (0, d, Access::ReadWrite));
                granted.chain(up.revoked.iter().map(|&d| (0, d, Access::None))).collect()
            });
            outcome(&r, claims)
        },
    },
    Scenario {
        name: "grant_all_visible",
        topology: || catalog_topology("four_gpu_islands").expect("catalog"),
        pools: &[0],
        warm: false,
        granted: false,
        op: |s, p| {
            let r = s.grant_all_visible(p[0].as_ref());
            let claims = r.as_ref().map_or(vec![], |report| {
                report.results.iter().flat_map(|(d, g)| grant_claim(g, *d, Access::ReadWrite)).collect()
            });
            outcome(&r, claims)
        },
    },
    Scenario {
        name: "read_only",
        topology: Topology::two_h200,
        pools: &[0],
        warm: true,
        granted: false,
        op: |s, p| {
            let r = s.grant_read_only(p[0].as_ref(), 1);
            outcome(&r, grant_claim(&r, 1, Access::Read))
        },
    },
];

/// The calls a grant that verifies a pair for the first time in its process makes, with counts:
/// the base of the scenarios in `ON_FIRST_VERIFICATION`. The verifier's probe pools and
/// buffers are made here and kept (released when the system drops, outside the operation).
const FIRST_VERIFICATION: &[(&str, u64)] = &[
    ("cuCtxGetCurrent", 18),
    ("cuCtxSetCurrent", 16),
    ("cuDeviceCanAccessPeer", 2),
    ("cuDeviceGetAttribute", 6),
    ("cuDevicePrimaryCtxRetain", 1),
    ("cuLaunchKernel", 12),
    ("cuMemAlloc", 2),
    ("cuMemAllocFromPoolAsync", 2),
    ("cuMemPoolCreate", 2),
    ("cuMemPoolGetAccess", 1),
    ("cuMemPoolSetAccess", 3),
    ("cuMemcpyDtoDAsync", 2),
    ("cuMemcpyDtoH", 6),
    ("cuMemsetD32Async", 12),
    ("cuModuleGetFunction", 14),
    ("cuModuleLoadData", 2),
    ("cuStreamSynchronize", 16),
];

/// Scenarios whose operation runs a first verification.
const ON_FIRST_VERIFICATION: [&str; 3] = ["grant_verifying", "set_peers", "grant_all_visible"];

/// The call sites each scenario's operation reaches, with counts (over `FIRST_VERIFICATION`
/// for the scenarios in `ON_FIRST_VERIFICATION`).
const SITES: &[(&str, &[(&str, u64)])] = &[
    (
        "discovery",
        &[
            ("cuDeviceCanAccessPeer", 2),
            ("cuDeviceGetAttribute", 14),
            ("cuDeviceGetDefaultMemPool", 2),
            ("cuDeviceGetMemPool", 2),
            ("cuDeviceGetName", 2),
            ("cuDeviceGetP2PAttribute", 4),
            ("cuDeviceTotalMem", 2),
            ("cuMemPoolGetAccess", 4),
        ],
    ),
    // grant_verifying, set_peers and grant_all_visible: only what differs from FIRST_VERIFICATION.
    ("grant_verifying", &[]),
    ("grant_warm", &[("cuDeviceCanAccessPeer", 1), ("cuMemPoolGetAccess", 1), ("cuMemPoolSetAccess", 1)]),
    ("revoke", &[("cuMemPoolGetAccess", 1), ("cuMemPoolSetAccess", 1)]),
    ("set_peers", &[("cuMemPoolGetAccess", 3)]),
    ("grant_all_visible", &[("cuCtxSetCurrent", 36), ("cuDeviceCanAccessPeer", 10), ("cuMemPoolGetAccess", 6)]),
    ("read_only", &[("cuDeviceCanAccessPeer", 1), ("cuMemPoolGetAccess", 1), ("cuMemPoolSetAccess", 1)]),
];

struct Setup {
    sim: Arc<SimDriver>,
    injector: Arc<FaultInjector>,
    system: System,
    pools: Vec<OwnedPool>,
    caller: Option<Context>,
}

/// A fresh simulated system with the scenario's pools, evidence warmed if asked, and gpu1's
/// context current on this thread as the caller's own (so a leaked switch would show).
fn setup(s: &Scenario) -> Setup {
    let sim = Arc::new(SimDriver::new((s.topology)()));
    let injector = Arc::new(FaultInjector::new(sim.clone()));
    let system = System::with_driver(injector.clone()).expect("opens");
    system.set_scratch_bytes(4096).expect("a valid probe size");
    let pools: Vec<OwnedPool> =
        s.pools.iter().map(|&o| system.create_pool(o, PoolOptions::default()).unwrap()).collect();
    if s.warm {
        for pool in &pools {
            for accessor in (0..system.device_count()).filter(|&a| a != pool.owner()) {
                let _ = system.verify_pair(pool.owner(), accessor);
            }
        }
    }
    if s.granted {
        for pool in &pools {
            let accessor = usize::from(pool.owner() == 0);
            system.grant(pool.as_ref(), accessor).expect("setup grant");
        }
    }
    let caller = system.device_count().checked_sub(1).map(|d| sim.primary_ctx_retain(d as i32).unwrap());
    sim.ctx_set_current(caller).unwrap();
    injector.reset();
    Setup { sim, injector, system, pools, caller }
}

fn tables(setup: &Setup) -> Vec<Vec<Access>> {
    setup.pools.iter().map(|p| setup.system.pool_access_table(p.as_ref()).unwrap()).collect()
}

/// Drops everything the scenario made and returns what is still live in the simulator.
fn teardown(setup: Setup) -> SimStats {
    let Setup { sim, system, pools, caller, .. } = setup;
    drop(pools);
    drop(system);
    if caller.is_some() {
        let _ = sim.ctx_set_current(None);
        let _ = sim.primary_ctx_release(sim.device_get_count().unwrap() - 1);
    }
    sim.stats()
}

/// The clean run: the operation's result and the sites it reaches.
fn record(s: &Scenario) -> (Result<String, String>, Vec<(&'static str, u64)>, SimStats) {
    let setup = setup(s);
    let result = (s.op)(&setup.system, &setup.pools).text;
    let calls = setup.injector.calls();
    let sites =
        calls.iter().enumerate().map(|(i, &c)| (c, calls[..=i].iter().filter(|&&x| x == c).count() as u64)).collect();
    (result, sites, teardown(setup))
}

fn sweep(s: &Scenario) -> usize {
    let (clean, sites, clean_stats) = record(s);
    for &(call, nth) in &sites {
        let setup = setup(s);
        let before = tables(&setup);
        setup.injector.add_rule(Rule::nth(call, nth, CudaCode::CUDA_ERROR_UNKNOWN).sticky(false));
        let Outcome { text: result, claims } = (s.op)(&setup.system, &setup.pools);
        let site = format!("{} at {call} #{nth}", s.name);
        assert_eq!(setup.injector.injected().len(), 1, "{site}: the fault fired once");
        setup.injector.arm(FaultPlan::new());
        match &result {
            Err(message) => assert!(message.contains(call), "{site}: the error does not name the call: {message}"),
            Ok(value) if value.contains(call) => {} // reported inside a per-peer report
            Ok(_) if UNREPORTABLE.contains(&call) => {
                assert_eq!(result, clean, "{site}: a cleanup failure changed the result")
            }
            Ok(value) => panic!("{site}: succeeded ({value}) although {call} failed"),
        }
        // The caller's context is back at every site, unless restoring it is what failed: then
        // the result says so (a changed context is never silent).
        let current = setup.sim.ctx_get_current().unwrap();
        let text = match &result {
            Ok(text) | Err(text) => text,
        };
        let restore_failed = call == "cuCtxSetCurrent" && text.contains("cuCtxSetCurrent");
        assert!(
            current == setup.caller || restore_failed,
            "{site}: the caller's context changed silently ({result:?})"
        );
        let mut expected = before;
        for (pool, device, access) in claims {
            expected[pool][device] = access;
        }
        assert_eq!(tables(&setup), expected, "{site}: the tables differ from what the result reports");
        let stats = teardown(setup);
        // A failed free leaves its memory allocated: the one leak a failure may cause, when the
        // failing call is on a free's path (entering the owner's context, the free, its sync).
        let on_free_path = FREE_PATH.contains(&call);
        let leaked = stats.allocations.saturating_sub(clean_stats.allocations);
        assert!(leaked == 0 || (on_free_path && leaked == 1), "{site}: {leaked} allocations leaked");
        let keys = |s: SimStats| (s.pools, s.modules, s.streams);
        assert_eq!(keys(stats), keys(clean_stats), "{site}: pools, modules or streams leaked");
        if !UNREPORTABLE.contains(&call) {
            assert_eq!(stats.context_retains, clean_stats.context_retains, "{site}: a context retain leaked");
        }
    }
    sites.len()
}

#[test]
fn every_engine_call_site_fails_cleanly() {
    let mut total = 0;
    for s in SCENARIOS {
        let covered = sweep(s);
        println!("fault sweep: {covered:>4} call sites in {}", s.name);
        total += covered;
    }
    println!("fault sweep: {total} call sites covered in {} scenarios", SCENARIOS.len());
    assert!(total > 100, "the sweep reached {total} sites");
}

/// `SITES` for `scenario`, over `FIRST_VERIFICATION` where it verifies.
fn known_sites(scenario: &str) -> BTreeMap<&'static str, u64> {
    let mut known = BTreeMap::new();
    if ON_FIRST_VERIFICATION.contains(&scenario) {
        known.extend(FIRST_VERIFICATION.iter().copied());
    }
    if let Some((_, own)) = SITES.iter().find(|(n, _)| *n == scenario) {
        known.extend(own.iter().copied());
    }
    known
}

#[test]
fn the_swept_sites_are_the_known_ones() {
    let mut report = String::new();
    for s in SCENARIOS {
        let (_, sites, _) = record(s);
        let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
        for (call, _) in &sites {
            *counts.entry(call).or_default() += 1;
        }
        let known = known_sites(s.name);
        if counts != known {
            let differ: Vec<_> = counts.iter().filter(|(call, n)| known.get(*call) != Some(n)).collect();
            let gone: Vec<_> = known.keys().filter(|call| !counts.contains_key(*call)).collect();
            report += &format!("    {}: now {differ:?}; no longer reached: {gone:?}\n", s.name);
        }
    }
    assert!(report.is_empty(), "call sites changed; review them and update SITES:\n{report}");
}
