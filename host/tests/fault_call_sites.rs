//! Every driver call site of a typical peerpool session, failed in turn: the scenario is first
//! run clean under a recording [`FaultInjector`], then once per recorded call with that call
//! failing. peerpool must never panic, must report the injected error under the right call
//! name, and must restore the caller's (absent) current context. Seeded random plans run the
//! same way and repeat exactly.
//
// SAFETY (every `unsafe` block below): the driver is a simulator, or a fault injector over
// one, which checks every handle, range and argument list itself.

use peerpool::driver::{Access, AccessDesc};
use peerpool::fault::{FaultInjector, FaultPlan, Injected, Rule};
use peerpool::{CudaCode, PoolOptions, System};
use peerpool_sim::{SimDriver, Topology};
use std::sync::Arc;

const WORDS: u64 = 4096;

/// A session: a pool on gpu0 granted to gpu1, memory written by gpu1's kernel, checked by
/// gpu0's, read by the host, freed, the pool destroyed; the caller drops the system after.
fn scenario(system: &System) -> peerpool::Result<()> {
    let _facts = system.facts()?;
    let pool = system.create_pool(0, PoolOptions::default())?;
    let grant = [AccessDesc { device: 1, access: Access::ReadWrite }];
    unsafe { system.driver().mem_pool_set_access(pool.handle(), &grant) }?;
    let memory = system.alloc(pool.as_ref(), (WORDS * 4) as usize)?;
    system.with_kernels(1, |k| k.fill(memory.words(WORDS)?, 5))?;
    let seen = system.with_kernels(0, |k| k.compare_pattern(memory.words(WORDS)?, 5))?;
    if !seen.is_clean() {
        return Err(peerpool::Error::InvalidArgument(format!("unexpected mismatches: {seen:?}")));
    }
    let _ = memory.read_words(16)?;
    memory.free()?;
    pool.destroy()
}

/// Runs the scenario under `plan`, then drops its system; returns the scenario's result (a
/// failed start included), what was injected, and the sim.
fn run(plan: FaultPlan) -> (peerpool::Result<()>, Vec<Injected>, Arc<SimDriver>, Arc<FaultInjector>) {
    let sim = Arc::new(SimDriver::new(Topology::two_h200()));
    let injector = Arc::new(FaultInjector::with_plan(sim.clone(), plan));
    let result = System::with_driver(injector.clone()).and_then(|system| scenario(&system));
    (result, injector.injected(), sim, injector)
}

/// The clean run's calls, and how many of them the scenario made before its system's drop
/// (whose failures have no caller to go to).
fn recorded_calls() -> (Vec<&'static str>, usize) {
    let sim = Arc::new(SimDriver::new(Topology::two_h200()));
    let injector = Arc::new(FaultInjector::new(sim.clone()));
    let system = System::with_driver(injector.clone()).unwrap();
    scenario(&system).expect("the scenario passes without faults");
    let before_drop = injector.calls().len();
    drop(system);
    assert!(injector.injected().is_empty());
    assert_eq!(sim.stats().allocations, 0, "a clean run frees everything");
    (injector.calls(), before_drop)
}

/// The `nth` call of `name` in `calls`, for every position.
fn sites(calls: &[&'static str]) -> Vec<(&'static str, u64)> {
    calls
        .iter()
        .enumerate()
        .map(|(i, &name)| (name, calls[..=i].iter().filter(|&&c| c == name).count() as u64))
        .collect()
}

#[test]
fn every_call_site_fails_cleanly() {
    let (calls, before_drop) = recorded_calls();
    assert!(calls.len() > 50, "the scenario reaches many call sites: {}", calls.len());
    let mut reported = 0;
    for (at, (name, nth)) in sites(&calls).into_iter().enumerate() {
        let (result, injected, sim, _) = run(FaultPlan::new().with(Rule::nth(name, nth, CudaCode::CUDA_ERROR_UNKNOWN)));
        assert_eq!(injected.len(), 1, "{name} #{nth}");
        // This thread's (absent) context is back, unless restoring it failed and said so, or
        // failed in the system's drop, which has no caller to tell.
        let restore_reported = result.as_ref().is_err_and(|e| e.to_string().contains("cuCtxSetCurrent"));
        let in_drop = at >= before_drop;
        let current = sim.ctx_get_current().unwrap();
        assert!(
            current.is_none() || restore_reported || in_drop,
            "{name} #{nth}: the context changed silently: {result:?}"
        );
        if let Err(error) = result {
            // Errors are never misattributed: what failed is what was injected.
            let cuda = error.cuda().unwrap_or_else(|| panic!("{name} #{nth}: not a driver error: {error}"));
            assert_eq!((cuda.call, cuda.code), (name, CudaCode::CUDA_ERROR_UNKNOWN), "{name} #{nth}");
            reported += 1;
        }
        // Whatever else failed, the system released what it retained (unless the release itself
        // failed).
        if name != "cuDevicePrimaryCtxRelease" {
            assert_eq!(sim.stats().context_retains, 0, "{name} #{nth}: every retained context released");
        }
    }
    // Failures in the system's drop (unloads, frees, context restores and releases) cannot be
    // reported.
    assert!(reported * 2 > calls.len(), "{reported} of {} failures reached the caller", calls.len());
}

#[test]
fn a_sticky_fault_at_any_site_ends_the_session_with_it() {
    let (calls, _) = recorded_calls();
    for (name, nth) in sites(&calls) {
        let rule = Rule::nth(name, nth, CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS);
        let (result, injected, _, injector) = run(FaultPlan::new().with(rule));
        assert!(injector.sticky_error().is_some());
        assert!(injected.iter().all(|i| i.sticky), "{name} #{nth}");
        if let Err(error) = result {
            assert!(error.is_sticky(), "{name} #{nth}: {error}");
        }
    }
}

#[test]
fn seeded_random_plans_repeat_exactly() {
    let (calls, _) = recorded_calls();
    for seed in 0..40 {
        let (first, injected, _, log) = run(FaultPlan::random(seed, &calls, 3));
        let (again, injected_again, _, log_again) = run(FaultPlan::random(seed, &calls, 3));
        assert_eq!(format!("{first:?}"), format!("{again:?}"), "seed {seed}");
        assert_eq!(injected, injected_again, "seed {seed}");
        assert_eq!(log.calls(), log_again.calls(), "seed {seed}");
        assert!(!injected.is_empty(), "seed {seed}: the first rule always fires");
    }
}
