//! How the benchmark times work: CUDA events around one stream's work, a stopwatch around
//! work on several GPUs; both on the simulator's virtual clock where the driver keeps one.

use crate::driver::{Driver, Event, Timeline};
use crate::{DeviceStream, Result, System};
use std::time::{Duration, Instant};

/// Host-side time around work, on the clock of the machine the driver stands for: the
/// simulator's virtual clock where the driver keeps one, else this host's.
pub(super) struct Stopwatch<'s> {
    timeline: Option<&'s dyn Timeline>,
    virtual_start: Duration,
    start: Instant,
}

impl<'s> Stopwatch<'s> {
    pub(super) fn start(system: &'s System) -> Self {
        let timeline = system.driver().timeline();
        Stopwatch { timeline, virtual_start: timeline.map_or(Duration::ZERO, |t| t.now()), start: Instant::now() }
    }

    /// Seconds since the start, on the calling thread.
    pub(super) fn seconds(&self) -> f64 {
        match self.timeline {
            Some(t) => t.now().saturating_sub(self.virtual_start).as_secs_f64(),
            None => self.start.elapsed().as_secs_f64(),
        }
    }
}

/// Two events in the current context, timing work queued on one stream of the same device.
pub(super) struct Timer<'d> {
    driver: &'d dyn Driver,
    start: Event,
    end: Event,
}

impl<'d> Timer<'d> {
    pub(super) fn new(driver: &'d dyn Driver) -> Result<Self> {
        let start = driver.event_create(0)?;
        let end = driver.event_create(0).inspect_err(|_| {
            // SAFETY: the event just made, destroyed once.
            let _ = unsafe { driver.event_destroy(start) };
        })?;
        Ok(Timer { driver, start, end })
    }

    /// Seconds the work `queue` puts on `stream` takes on the GPU.
    pub(super) fn time(&self, stream: &DeviceStream<'_>, queue: impl FnOnce() -> Result<()>) -> Result<f64> {
        // SAFETY: both events are this timer's, live until it drops; the stream is live while
        // borrowed (the caller made both in the same device's context).
        unsafe {
            self.driver.event_record(self.start, stream.handle())?;
            queue()?;
            self.driver.event_record(self.end, stream.handle())?;
            self.driver.event_synchronize(self.end)?;
            Ok(self.driver.event_elapsed_time(self.start, self.end)? as f64 / 1e3)
        }
    }
}

impl Drop for Timer<'_> {
    fn drop(&mut self) {
        // SAFETY: this timer's events, destroyed once.
        unsafe {
            let _ = self.driver.event_destroy(self.start);
            let _ = self.driver.event_destroy(self.end);
        }
    }
}
