//! A deterministic fault injector that wraps any [`Driver`].
//!
//! [`FaultInjector`] passes each call to the driver it wraps unless a [`Rule`] of its
//! [`FaultPlan`] says that call fails: then the call returns the rule's `CUresult` without
//! reaching the wrapped driver (nothing is applied). Calls are named as the real driver's
//! (`CudaError::call`: `"cuMemPoolSetAccess"`, …) and every call is recorded in order, so a
//! test can first run a scenario clean, list its call sites, then fail each one in turn.
//!
//! A sticky rule behaves like a real sticky error: once it fires, every later call fails with
//! its code (`sticky = true`) until [`FaultInjector::reset`].

use crate::driver::*;
use crate::error::{CudaError, is_sticky};
use cudarc::driver::sys::CUresult;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Which calls of a name a rule fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// The `n`th matching call (1-based), counted since the plan was armed or reset.
    Nth(u64),
    /// Every matching call.
    Every,
}

/// One injected failure: which calls, with which code, sticky or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// A call name (`"cuMemPoolSetAccess"`), or a prefix ending in `*` (`"cuMemcpy*"`).
    pub call: String,
    /// Which matching calls fail.
    pub when: When,
    /// The `CUresult` returned.
    pub code: CUresult,
    /// Whether every later call fails too, like a real sticky error.
    pub sticky: bool,
}

impl Rule {
    /// Fails the `n`th (1-based) call matching `call`; sticky when the code is sticky on hardware.
    pub fn nth(call: &str, n: u64, code: CUresult) -> Rule {
        Rule { call: call.into(), when: When::Nth(n), code, sticky: is_sticky(code) }
    }

    /// Fails every call matching `call`; sticky when the code is sticky on hardware.
    pub fn every(call: &str, code: CUresult) -> Rule {
        Rule { call: call.into(), when: When::Every, code, sticky: is_sticky(code) }
    }

    /// Overrides the stickiness.
    pub fn sticky(mut self, sticky: bool) -> Rule {
        self.sticky = sticky;
        self
    }

    fn matches(&self, call: &str) -> bool {
        match self.call.strip_suffix('*') {
            Some(prefix) => call.starts_with(prefix),
            None => self.call == call,
        }
    }
}

/// The rules an injector applies, in order (the first that fires wins).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// The rules.
    pub rules: Vec<Rule>,
}

/// Codes a random plan draws from: what real calls return when resources, arguments or the
/// device give out.
const RANDOM_CODES: [CUresult; 6] = [
    CUresult::CUDA_ERROR_INVALID_VALUE,
    CUresult::CUDA_ERROR_OUT_OF_MEMORY,
    CUresult::CUDA_ERROR_INVALID_CONTEXT,
    CUresult::CUDA_ERROR_NOT_SUPPORTED,
    CUresult::CUDA_ERROR_UNKNOWN,
    CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
];

impl FaultPlan {
    /// No rules.
    pub fn new() -> FaultPlan {
        FaultPlan::default()
    }

    /// This plan and `rule`.
    pub fn with(mut self, rule: Rule) -> FaultPlan {
        self.rules.push(rule);
        self
    }

    /// Up to `faults` distinct call sites drawn from `calls` (a recorded call list, see
    /// [`FaultInjector::calls`]), each failed once with a code drawn from a fixed list;
    /// sticky codes make sticky rules. The same seed and list give the same plan.
    pub fn random(seed: u64, calls: &[&str], faults: usize) -> FaultPlan {
        let mut rng = SplitMix64(seed);
        let mut plan = FaultPlan::new();
        for _ in 0..faults.min(calls.len()) {
            let at = (rng.next() % calls.len() as u64) as usize;
            let name = calls[at];
            let nth = calls[..=at].iter().filter(|&&c| c == name).count() as u64;
            let code = RANDOM_CODES[(rng.next() % RANDOM_CODES.len() as u64) as usize];
            if !plan.rules.iter().any(|r| r.call == name && r.when == When::Nth(nth)) {
                plan.rules.push(Rule::nth(name, nth, code));
            }
        }
        plan
    }
}

/// splitmix64 (Steele, Lea, Flood 2014): a tiny, good-enough seeded generator, no dependency.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A failure the injector returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Injected {
    /// The call that failed.
    pub call: &'static str,
    /// Which call of that name it was (1-based).
    pub nth: u64,
    /// The code returned.
    pub code: CUresult,
    /// Whether it was sticky (a rule firing, or the aftermath of a sticky one).
    pub sticky: bool,
}

#[derive(Default)]
struct Log {
    plan: FaultPlan,
    /// Matching calls seen per rule, by index in `plan.rules`.
    seen: Vec<u64>,
    calls: Vec<&'static str>,
    counts: BTreeMap<&'static str, u64>,
    /// Time spent inside the wrapped driver per call name.
    time: BTreeMap<&'static str, Duration>,
    injected: Vec<Injected>,
    dead: Option<CUresult>,
}

impl Log {
    fn rearm(&mut self) {
        self.seen = vec![0; self.plan.rules.len()];
        self.calls.clear();
        self.counts.clear();
        self.time.clear();
        self.injected.clear();
        self.dead = None;
    }

    /// Records `call` and decides whether it fails.
    fn decide(&mut self, call: &'static str) -> Option<CudaError> {
        self.calls.push(call);
        let count = self.counts.entry(call).or_default();
        *count += 1;
        let nth = *count;
        let mut fired = None;
        for (rule, seen) in self.plan.rules.iter().zip(self.seen.iter_mut()) {
            if rule.matches(call) {
                *seen += 1;
                let due = match rule.when {
                    When::Nth(n) => *seen == n,
                    When::Every => true,
                };
                if due && fired.is_none() {
                    fired = Some((rule.code, rule.sticky));
                }
            }
        }
        let (code, sticky) = match (self.dead, fired) {
            (Some(code), _) => (code, true),
            (None, Some((code, sticky))) => (code, sticky),
            (None, None) => return None,
        };
        if sticky {
            self.dead = Some(code);
        }
        self.injected.push(Injected { call, nth, code, sticky });
        Some(CudaError { call, code, sticky })
    }
}

/// Wraps a driver and fails the calls its [`FaultPlan`] names. Deterministic for a given
/// sequence of calls; `Send + Sync`.
pub struct FaultInjector {
    inner: Arc<dyn Driver>,
    log: Mutex<Log>,
}

impl FaultInjector {
    /// `inner`, with no rules yet: every call passes through and is recorded.
    pub fn new(inner: Arc<dyn Driver>) -> FaultInjector {
        FaultInjector::with_plan(inner, FaultPlan::new())
    }

    /// `inner`, with `plan` armed.
    pub fn with_plan(inner: Arc<dyn Driver>, plan: FaultPlan) -> FaultInjector {
        let injector = FaultInjector { inner, log: Mutex::new(Log::default()) };
        injector.arm(plan);
        injector
    }

    /// The wrapped driver.
    pub fn inner(&self) -> &Arc<dyn Driver> {
        &self.inner
    }

    /// Replaces the plan and starts afresh: counts, the call list and any sticky fault cleared.
    pub fn arm(&self, plan: FaultPlan) {
        let mut log = self.lock();
        log.plan = plan;
        log.rearm();
    }

    /// Adds a rule to the armed plan; it counts calls from now on.
    pub fn add_rule(&self, rule: Rule) {
        let mut log = self.lock();
        log.plan.rules.push(rule);
        log.seen.push(0);
    }

    /// Keeps the plan, clears counts, the call list and any sticky fault (re-arms every rule).
    pub fn reset(&self) {
        self.lock().rearm();
    }

    /// Every call seen since the last arm or reset, in order.
    pub fn calls(&self) -> Vec<&'static str> {
        self.lock().calls.clone()
    }

    /// How many times each call was seen since the last arm or reset.
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        self.lock().counts.clone()
    }

    /// How many times `call` was seen since the last arm or reset.
    pub fn count(&self, call: &str) -> u64 {
        self.lock().counts.get(call).copied().unwrap_or(0)
    }

    /// Time spent in the wrapped driver per call name since the last arm or reset (failed
    /// calls that never reached it count nothing): where a slow operation's time goes.
    pub fn times(&self) -> BTreeMap<&'static str, Duration> {
        self.lock().time.clone()
    }

    /// The failures returned since the last arm or reset, in order.
    pub fn injected(&self) -> Vec<Injected> {
        self.lock().injected.clone()
    }

    /// The sticky code every call now fails with, if a sticky rule fired.
    pub fn sticky_error(&self) -> Option<CUresult> {
        self.lock().dead
    }

    fn lock(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `call`; fails it if the plan says so, else runs `f` on the wrapped driver
    /// (with the lock released, so the wrapped driver may take its time).
    fn call<T>(&self, call: Call, f: impl FnOnce(&dyn Driver) -> DriverResult<T>) -> DriverResult<T> {
        let name = call.name();
        if let Some(error) = self.lock().decide(name) {
            return Err(error);
        }
        let start = Instant::now();
        let result = f(self.inner.as_ref());
        *self.lock().time.entry(name).or_default() += start.elapsed();
        result
    }
}

impl std::fmt::Debug for FaultInjector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultInjector").field("inner", &self.inner.describe()).field("plan", &self.lock().plan).finish()
    }
}

macro_rules! delegate_to_inner {
    (() $( $(#[$doc:meta])* $safety:ident fn $method:ident($($arg:ident: $ty:ty),*) -> $out:ty
        = $call:ident @ $symbol:ident; )*) => {
        impl Driver for FaultInjector {
            fn describe(&self) -> String {
                format!("{} (faults injected)", self.inner.describe())
            }

            $( crate::seam_fn! { $safety
                #[allow(unused_unsafe)]
                fn $method(&self, $($arg: $ty),*) -> DriverResult<$out> {
                    // SAFETY: the caller's contract for this call, passed on unchanged.
                    self.call(Call::$call, |d| unsafe { d.$method($($arg),*) })
                }
            } )*
        }
    };
}

crate::for_each_driver_call!(delegate_to_inner);
