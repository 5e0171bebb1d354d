//! Every driver call site of a typical peerpool session, failed in turn: the scenario is first
//! run clean under a recording [`FaultInjector`], then once per recorded call with that call
//! failing. peerpool must never panic, must report the injected error under the right call
//! name, and must restore the caller's (absent) current context. Seeded random plans run the
//! same way and repeat exactly.

use peerpool::driver::{Access, AccessDesc, Driver};
use peerpool::fault::{FaultInjector, FaultPlan, Injected, Rule};
use peerpool::{CUresult, PoolOptions, System};
use peerpool_sim::{SimDriver, Topology};
use std::sync::Arc;

const WORDS: u64 = 4096;

/// A session: a pool on gpu0 granted to gpu1, memory written by gpu1's kernel, checked by
/// gpu0's, read by the host; everything dropped at the end.
fn scenario(driver: Arc<dyn Driver>) -> peerpool::Result<()> {
    let system = System::with_driver(driver)?;
    let _facts = system.facts()?;
    let pool = system.create_pool(0, PoolOptions::default())?;
    let grant = [AccessDesc { device: 1, access: Access::ReadWrite }];
    system.driver().mem_pool_set_access(pool.handle(), &grant)?;
    let memory = system.alloc(pool.as_ref(), (WORDS * 4) as usize)?;
    system.kernels(1)?.fill(memory.ptr(), WORDS, 5)?;
    let seen = system.kernels(0)?.check(memory.ptr(), WORDS, 5)?;
    if !seen.is_clean() {
        return Err(peerpool::Error::InvalidArgument(format!("unexpected mismatches: {seen:?}")));
    }
    let _ = memory.read_words(16)?;
    pool.destroy()
}

/// Runs the scenario under `plan`; returns its result, what was injected, and the sim.
fn run(plan: FaultPlan) -> (peerpool::Result<()>, Vec<Injected>, Arc<SimDriver>, Arc<FaultInjector>) {
    let sim = Arc::new(SimDriver::new(Topology::two_h200()));
    let injector = Arc::new(FaultInjector::with_plan(sim.clone(), plan));
    let result = scenario(injector.clone());
    (result, injector.injected(), sim, injector)
}

fn recorded_calls() -> Vec<&'static str> {
    let (result, injected, sim, injector) = run(FaultPlan::new());
    result.expect("the scenario passes without faults");
    assert!(injected.is_empty());
    assert_eq!(sim.stats().allocations, 0, "a clean run frees everything");
    injector.calls()
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
    let calls = recorded_calls();
    assert!(calls.len() > 50, "the scenario reaches many call sites: {}", calls.len());
    let mut reported = 0;
    for (name, nth) in sites(&calls) {
        let (result, injected, sim, _) = run(FaultPlan::new().with(Rule::nth(name, nth, CUresult::CUDA_ERROR_UNKNOWN)));
        assert_eq!(injected.len(), 1, "{name} #{nth}");
        if let Err(error) = result {
            // Errors are never misattributed: what failed is what was injected.
            let cuda = error.cuda().unwrap_or_else(|| panic!("{name} #{nth}: not a driver error: {error}"));
            assert_eq!((cuda.call, cuda.code), (name, CUresult::CUDA_ERROR_UNKNOWN), "{name} #{nth}");
            reported += 1;
        }
        // Whatever else failed, every guard restored this thread's (absent) context and the
        // system released what it retained (unless the restore or release itself failed).
        if name != "cuCtxSetCurrent" {
            assert_eq!(Arc::clone(&sim).ctx_get_current().unwrap(), None, "{name} #{nth}");
        }
        if name != "cuDevicePrimaryCtxRelease" {
            assert_eq!(sim.stats().context_retains, 0, "{name} #{nth}: every retained context released");
        }
    }
    // Failures in drop paths (frees, unloads, context restores) cannot be reported.
    assert!(reported * 2 > calls.len(), "{reported} of {} failures reached the caller", calls.len());
}

#[test]
fn a_sticky_fault_at_any_site_ends_the_session_with_it() {
    let calls = recorded_calls();
    for (name, nth) in sites(&calls) {
        let rule = Rule::nth(name, nth, CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
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
    let calls = recorded_calls();
    for seed in 0..40 {
        let (first, injected, _, log) = run(FaultPlan::random(seed, &calls, 3));
        let (again, injected_again, _, log_again) = run(FaultPlan::random(seed, &calls, 3));
        assert_eq!(format!("{first:?}"), format!("{again:?}"), "seed {seed}");
        assert_eq!(injected, injected_again, "seed {seed}");
        assert_eq!(log.calls(), log_again.calls(), "seed {seed}");
        assert!(!injected.is_empty(), "seed {seed}: the first rule always fires");
    }
}
