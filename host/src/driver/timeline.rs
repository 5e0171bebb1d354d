//! [`Timeline`]: virtual time, for a driver that models how long its calls take.
//!
//! The simulator answers calls at the speed of this machine's CPU; with a timing model it also
//! keeps a virtual clock per thread and per device, advanced by what each call would have taken
//! on real GPUs (`peerpool_sim::timing`). Code that runs work on several threads at once tells
//! the timeline where each thread starts ([`Timeline::set_now`]), so that the projected wall time
//! ([`Timeline::elapsed`]) shows the concurrency that really happened. The real driver has no
//! timeline: there, wall time is measured.

use std::time::Duration;

/// Virtual time per thread, the projected wall time of the whole process, and host-side work
/// the driver never sees. Implemented by the simulator's timing model.
pub trait Timeline: Send + Sync {
    /// The calling thread's virtual time, from the start of the simulated process.
    fn now(&self) -> Duration;

    /// Puts the calling thread at virtual time `at`: a worker thread starts at the time its
    /// spawner reached; a spawner resumes at the latest time its workers reached.
    fn set_now(&self, at: Duration);

    /// Adds host-side work the driver did not see (waiting for a child process's run, say)
    /// to the calling thread's virtual time.
    fn charge(&self, busy: Duration) {
        self.set_now(self.now().saturating_add(busy));
    }

    /// The projected wall time so far: the latest virtual time any thread or device reached.
    fn elapsed(&self) -> Duration;

    /// The projected wall time of the whole process were it to end now: [`Timeline::elapsed`]
    /// and the process's exit.
    fn wall(&self) -> Duration {
        self.elapsed()
    }

    /// What the timing model stands for (the machine it was calibrated on).
    fn describe(&self) -> String;
}

impl std::fmt::Debug for dyn Timeline + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Runs `f` on the calling thread from virtual time `at`, when there is a timeline, and
/// returns `f`'s result with the thread's virtual time at its end (zero without a timeline).
pub fn from<T>(timeline: Option<&dyn Timeline>, at: Duration, f: impl FnOnce() -> T) -> (T, Duration) {
    if let Some(t) = timeline {
        t.set_now(at);
    }
    let out = f();
    (out, timeline.map_or(Duration::ZERO, |t| t.now()))
}
