//! The [`Ledger`]: counts calls by name, decides which fail under a [`FaultPlan`], keeps what
//! was injected and how long calls took, and writes a trace. The [`FaultInjector`](super::FaultInjector)
//! keeps one for the seam's calls; a libcuda built on peerpool keeps one for the C entry points
//! its clients call.

use super::plan::{FaultPlan, Rule, SplitMix64, When};
use crate::driver::codes::CudaCode;
use crate::error::CudaError;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// A failure the injector returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Injected {
    /// The call that failed.
    pub call: &'static str,
    /// Which call of that name it was (1-based).
    pub nth: u64,
    /// The code returned.
    pub code: CudaCode,
    /// Whether it was sticky (a rule firing, or the aftermath of a sticky one).
    pub sticky: bool,
    /// Whether the call is made first and its result replaced (a `!after` rule); the
    /// aftermath of a sticky fault never reaches the driver.
    pub after: bool,
}

impl Injected {
    /// The error the caller sees.
    pub fn error(&self) -> CudaError {
        CudaError { call: self.call, code: self.code, sticky: self.sticky }
    }
}

#[derive(Default)]
struct Log {
    plan: FaultPlan,
    /// Matching calls seen per rule, by index in `plan.rules`.
    seen: Vec<u64>,
    keep_calls: bool,
    calls: Vec<&'static str>,
    counts: BTreeMap<&'static str, u64>,
    /// Time spent in the driver per call name.
    time: BTreeMap<&'static str, Duration>,
    injected: Vec<Injected>,
    dead: Option<CudaCode>,
    /// `call => outcome`, in order, when kept (see [`Ledger::keeping_outcomes`]).
    outcomes: Option<Vec<String>>,
    /// Draws for `When::Chance` rules.
    draws: SplitMix64,
}

impl Log {
    fn rearm(&mut self) {
        self.draws = SplitMix64(self.plan.seed);
        self.seen = vec![0; self.plan.rules.len()];
        self.calls.clear();
        if let Some(outcomes) = &mut self.outcomes {
            outcomes.clear();
        }
        self.counts.clear();
        self.time.clear();
        self.injected.clear();
        self.dead = None;
    }

    /// Counts `call` and decides whether it fails.
    fn decide(&mut self, call: &'static str) -> Option<Injected> {
        if self.keep_calls {
            self.calls.push(call);
        }
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
                    When::Chance(per_million) => self.draws.next() % 1_000_000 < per_million as u64,
                };
                if due && fired.is_none() {
                    fired = Some((rule.code, rule.sticky, rule.after));
                }
            }
        }
        let (code, sticky, after) = match (self.dead, fired) {
            (Some(code), _) => (code, true, false),
            (None, Some(fired)) => fired,
            (None, None) => return None,
        };
        if sticky {
            self.dead = Some(code);
        }
        let injected = Injected { call, nth, code, sticky, after };
        self.injected.push(injected);
        Some(injected)
    }
}

/// The record of a stream of driver calls, and the plan that fails some of them.
///
/// While no rule is armed, no trace is written and the call list is not kept, [`Ledger::decide`]
/// and [`Ledger::trace`] return at once without taking a lock (every call of a libcuda built on
/// peerpool passes here).
pub struct Ledger {
    log: Mutex<Log>,
    /// A rule is armed, the call list is kept, or a trace is written.
    active: AtomicBool,
    /// The trace's sink; `None` inside once a write failed (said once on stderr).
    trace: Option<Mutex<Option<Box<dyn Write + Send>>>>,
}

impl Ledger {
    /// A ledger with `plan` armed, keeping the ordered call list when `keep_calls` (what a test
    /// of every call site needs; a long-lived process should not).
    pub fn new(plan: FaultPlan, keep_calls: bool) -> Ledger {
        let ledger = Ledger {
            log: Mutex::new(Log { keep_calls, ..Log::default() }),
            active: AtomicBool::new(false),
            trace: None,
        };
        ledger.arm(plan);
        ledger
    }

    /// Also keeps every traced call's `call => outcome` line in memory ([`Ledger::outcomes`]):
    /// the record two drivers' runs of one script are compared by.
    pub fn keeping_outcomes(self) -> Ledger {
        self.lock().outcomes = Some(Vec::new());
        self.refresh();
        self
    }

    /// Also writes one line per traced call to `sink` (see [`Ledger::trace`]).
    pub fn tracing_to(mut self, sink: Box<dyn Write + Send>) -> Ledger {
        self.trace = Some(Mutex::new(Some(sink)));
        self.refresh();
        self
    }

    fn lock(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn refresh(&self) {
        let log = self.lock();
        let active = !log.plan.rules.is_empty() || log.keep_calls || log.outcomes.is_some() || self.trace.is_some();
        self.active.store(active, Ordering::Relaxed);
    }

    /// Whether nothing is armed, kept or traced: then [`Ledger::decide`] fails nothing and
    /// [`Ledger::trace`] writes nothing, and a hot path may skip both.
    #[inline]
    pub fn is_idle(&self) -> bool {
        !self.active.load(Ordering::Relaxed)
    }

    /// Replaces the plan and starts afresh: counts, the call list and any sticky fault cleared.
    pub fn arm(&self, plan: FaultPlan) {
        let mut log = self.lock();
        log.plan = plan;
        log.rearm();
        drop(log);
        self.refresh();
    }

    /// Adds a rule to the armed plan; it counts calls from now on.
    pub fn add_rule(&self, rule: Rule) {
        let mut log = self.lock();
        log.plan.rules.push(rule);
        log.seen.push(0);
        drop(log);
        self.refresh();
    }

    /// Keeps the plan, clears counts, the call list and any sticky fault (re-arms every rule).
    pub fn reset(&self) {
        self.lock().rearm();
    }

    /// The armed plan.
    pub fn plan(&self) -> FaultPlan {
        self.lock().plan.clone()
    }

    /// Counts `call` and returns the failure the plan gives it, if any (a sticky fault that
    /// fired fails every later call). The caller makes the call first when it says `after`.
    pub fn decide(&self, call: &'static str) -> Option<Injected> {
        if !self.active.load(Ordering::Relaxed) {
            return None;
        }
        self.lock().decide(call)
    }

    /// Adds `elapsed` to the time spent in `call`.
    pub fn add_time(&self, call: &'static str, elapsed: Duration) {
        *self.lock().time.entry(call).or_default() += elapsed;
    }

    /// Writes `call args => outcome` as one line, when tracing (`args` is only formatted then),
    /// and keeps `call => outcome` when keeping outcomes.
    pub fn trace(&self, call: &str, args: impl FnOnce() -> String, outcome: impl std::fmt::Display) {
        if !self.active.load(Ordering::Relaxed) {
            return;
        }
        if let Some(outcomes) = &mut self.lock().outcomes {
            outcomes.push(format!("{call} => {outcome}"));
        }
        if let Some(sink) = &self.trace {
            let line = format!("{call} {} => {outcome}\n", args());
            let mut sink = sink.lock().unwrap_or_else(|e| e.into_inner());
            // A trace that cannot be written must not change the call's result: it stops, and
            // says so once. A reader that went away (a FIFO's, or `head` on a piped stderr) is
            // such a failure, not a SIGPIPE that kills the traced program.
            let written =
                without_sigpipe(|| sink.as_mut().map(|s| s.write_all(line.as_bytes()).and_then(|()| s.flush())));
            if let Some(Err(e)) = written {
                *sink = None;
                notice(&format!("peerpool: the call trace stopped at {call}: writing it failed: {e}"));
            }
        }
    }

    /// Every traced call's `call => outcome` since the last arm or reset (empty unless kept).
    pub fn outcomes(&self) -> Vec<String> {
        self.lock().outcomes.clone().unwrap_or_default()
    }

    /// Every call seen since the last arm or reset, in order (empty unless kept).
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

    /// Time spent in the driver per call name since the last arm or reset.
    pub fn times(&self) -> BTreeMap<&'static str, Duration> {
        self.lock().time.clone()
    }

    /// The failures returned since the last arm or reset, in order.
    pub fn injected(&self) -> Vec<Injected> {
        self.lock().injected.clone()
    }

    /// The sticky code every call now fails with, if a sticky rule fired.
    pub fn sticky_error(&self) -> Option<CudaCode> {
        self.lock().dead
    }
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger").field("plan", &self.lock().plan).field("tracing", &self.trace.is_some()).finish()
    }
}

/// Writes one line to stderr for a person to read: a stderr that cannot be written (closed, or a
/// pipe whose reader left) loses the line and nothing else: no panic, no SIGPIPE.
pub fn notice(line: &str) {
    use std::io::Write;
    let _ = without_sigpipe(|| writeln!(std::io::stderr(), "{line}"));
}

/// Runs `write` with SIGPIPE blocked on this thread, and takes a SIGPIPE it raised, so that
/// writing to a pipe with no reader fails with `EPIPE` instead of killing the process (a traced
/// program of any language keeps SIGPIPE's default action). A SIGPIPE this
/// thread already blocked is left alone.
fn without_sigpipe<R>(write: impl FnOnce() -> R) -> R {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut pipe: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut before: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid sigset_t pointers; the mask changes for this thread only.
    let blocked = unsafe {
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut before) == 0
    };
    let result = write();
    // SAFETY: as above; `before` was filled by pthread_sigmask.
    if blocked && unsafe { libc::sigismember(&before, libc::SIGPIPE) } == 0 {
        let none = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: valid pointers; takes a pending SIGPIPE of this thread, if there is one, and
        // does not wait.
        unsafe {
            while libc::sigtimedwait(&pipe, std::ptr::null_mut(), &none) == libc::SIGPIPE {}
            libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        }
    }
    result
}
