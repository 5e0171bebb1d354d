//! The timing model: what each simulated driver call would have taken on real GPUs, and a
//! virtual clock that adds it up into a projected wall time.
//!
//! [`Latencies`] are per-call costs and what they depend on, calibrated on the recorded 2 x H200
//! machine (`host/sim/timing/h200.json`, from `peerpool calibrate` by
//! `ci/gpu-calibrate.sh`: `docs/hardware/2026-12-01-calibration`): process start and `cuInit`
//! (growing with the GPUs a process sees), a context's
//! creation, a module's load, a pool's creation and its first access change, mapping a pool's
//! memory into a peer (the first allocation after a grant, or a grant over live bytes, growing
//! with them), kernels and copies by bytes and path, and a small base cost for everything else.
//!
//! The clock (a machine part shared by every simulated process, and a part per process)
//! follows these rules:
//! - every thread of a simulated process has its own virtual time (a lane); a call starts when
//!   its lane is there, when every device whose engines it occupies is free (work on one device
//!   is serialised, devices run in parallel), and when the locks its kind of work takes are
//!   free ([`Serial`]: per device, per process, per machine, as calibrated), then moves all of
//!   them to its end;
//! - work the real driver queues (launches, asynchronous copies between devices, memsets) is
//!   queued per device and process: the lane moves by the call's own cost only, the device works
//!   on, a synchronisation waits for the device's queue, and an event happens when the queue
//!   reaches it (so events time device work, as on a GPU);
//! - a lane first seen starts at the end of the latest call of its process (a thread spawned
//!   just now); code that knows better says so through [`peerpool::driver::Timeline::set_now`]
//!   (`peerpool::rounds::run` does);
//! - a fork ([`crate::SimDriver::fork`]) is a child process: it starts at its parent's thread's
//!   time plus the process start, calls `cuInit`, creates its contexts and loads its modules
//!   again, and shares the machine's devices and machine-wide locks with its parent;
//! - nothing really sleeps: the clock is a model, computed under the simulator's lock.

mod clock;
mod model;
mod price;
#[cfg(test)]
mod tests;

pub(crate) use clock::{Cost, Lock, Machine, ProcessTime};
pub use model::{Floor, Latencies, Serial};
pub(crate) use price::{LaneCosts, Path, Traffic, Work, price};

/// Nanoseconds of virtual time.
pub(crate) type Nanos = u64;

/// Nanoseconds from microseconds (nothing for a negative or non-finite count).
fn ns(micros: f64) -> Nanos {
    if micros.is_finite() && micros > 0.0 { (micros * 1e3).round() as Nanos } else { 0 }
}

/// Nanoseconds from microseconds, for the driver's cost table.
pub(crate) fn us(micros: f64) -> Nanos {
    ns(micros)
}
