//! A deterministic fault injector that wraps any [`Driver`].
//!
//! [`FaultInjector`] passes each call to the driver it wraps unless a [`Rule`] of its
//! [`FaultPlan`] says that call fails: then the call returns the rule's `CudaCode` without
//! reaching the wrapped driver (nothing is applied). Calls are named as the real driver's
//! (`CudaError::call`: `"cuMemPoolSetAccess"`, …) and every call is recorded in order, so a
//! test can first run a scenario clean, list its call sites, then fail each one in turn.
//!
//! A sticky rule behaves like a real sticky error: once it fires, every later call fails with
//! its code (`sticky = true`) until [`FaultInjector::reset`].

mod ledger;
mod plan;

pub use ledger::{Injected, Ledger, notice};
pub use plan::{FaultPlan, PlanError, Rule, When};

use crate::driver::codes::CudaCode;
use crate::driver::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Wraps a driver and fails the calls its [`FaultPlan`] names. Deterministic for a given
/// sequence of calls; `Send + Sync`.
pub struct FaultInjector {
    inner: Arc<dyn Driver>,
    ledger: Ledger,
}

impl FaultInjector {
    /// `inner`, with no rules yet: every call passes through and is recorded.
    pub fn new(inner: Arc<dyn Driver>) -> FaultInjector {
        FaultInjector::with_plan(inner, FaultPlan::new())
    }

    /// `inner`, with `plan` armed.
    pub fn with_plan(inner: Arc<dyn Driver>, plan: FaultPlan) -> FaultInjector {
        FaultInjector { inner, ledger: Ledger::new(plan, true) }
    }

    /// `inner`, keeping the outcome of every call ([`Ledger::outcomes`]): the recorder whose
    /// records of one script on two drivers (a GPU machine's and the simulator's) are compared.
    pub fn recording(inner: Arc<dyn Driver>) -> FaultInjector {
        FaultInjector { inner, ledger: Ledger::new(FaultPlan::new(), true).keeping_outcomes() }
    }

    /// The wrapped driver.
    pub fn inner(&self) -> &Arc<dyn Driver> {
        &self.inner
    }

    /// The record of every call and the plan (see [`Ledger`]).
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Replaces the plan and starts afresh: counts, the call list and any sticky fault cleared.
    pub fn arm(&self, plan: FaultPlan) {
        self.ledger.arm(plan)
    }

    /// Adds a rule to the armed plan; it counts calls from now on.
    pub fn add_rule(&self, rule: Rule) {
        self.ledger.add_rule(rule)
    }

    /// Keeps the plan, clears counts, the call list and any sticky fault (re-arms every rule).
    pub fn reset(&self) {
        self.ledger.reset()
    }

    /// Every call seen since the last arm or reset, in order.
    pub fn calls(&self) -> Vec<&'static str> {
        self.ledger.calls()
    }

    /// How many times each call was seen since the last arm or reset.
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        self.ledger.counts()
    }

    /// How many times `call` was seen since the last arm or reset.
    pub fn count(&self, call: &str) -> u64 {
        self.ledger.count(call)
    }

    /// Time spent in the wrapped driver per call name since the last arm or reset (failed
    /// calls that never reached it count nothing): where a slow operation's time goes.
    pub fn times(&self) -> BTreeMap<&'static str, Duration> {
        self.ledger.times()
    }

    /// The failures returned since the last arm or reset, in order.
    pub fn injected(&self) -> Vec<Injected> {
        self.ledger.injected()
    }

    /// The sticky code every call now fails with, if a sticky rule fired.
    pub fn sticky_error(&self) -> Option<CudaCode> {
        self.ledger.sticky_error()
    }

    /// Records `call`; fails it if the plan says so, else runs `f` on the wrapped driver
    /// (with the lock released, so the wrapped driver may take its time).
    fn call<T>(&self, call: Call, f: impl FnOnce(&dyn Driver) -> DriverResult<T>) -> DriverResult<T> {
        let name = call.name();
        let injected = self.ledger.decide(name);
        let result = match injected {
            Some(fault) if !fault.after => Err(fault.error()),
            _ => {
                let start = Instant::now();
                let result = f(self.inner.as_ref());
                self.ledger.add_time(name, start.elapsed());
                // An `!after` fault: the call was made; whatever it made is dropped unseen.
                match injected {
                    Some(fault) => Err(fault.error()),
                    None => result,
                }
            }
        };
        let outcome = match &result {
            Ok(_) => "CUDA_SUCCESS".to_string(),
            Err(e) => e.code_name(),
        };
        self.ledger.trace(name, String::new, &outcome);
        result
    }
}

impl std::fmt::Debug for FaultInjector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultInjector")
            .field("inner", &self.inner.describe())
            .field("plan", &self.ledger.plan())
            .finish()
    }
}

macro_rules! delegate_to_inner {
    (() $( $(#[$doc:meta])* $safety:ident fn $method:ident($($arg:ident: $ty:ty),*) -> $out:ty
        = $call:ident @ $symbol:ident; )*) => {
        impl Driver for FaultInjector {
            fn describe(&self) -> String {
                format!("{} (faults injected)", self.inner.describe())
            }

            fn timeline(&self) -> Option<&dyn Timeline> {
                self.inner.timeline()
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
