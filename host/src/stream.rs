//! [`DeviceStream`]: a stream of one device, for work queued without waiting (benchmarks time
//! it with events).

use crate::driver::Stream;
use crate::error::{Error, Result};
use crate::system::System;

/// A non-blocking stream in one device's primary context, destroyed on drop.
#[derive(Debug)]
pub struct DeviceStream<'s> {
    system: &'s System,
    device: usize,
    stream: Stream,
}

impl System {
    /// A new stream on `device` (`cuStreamCreate`, non-blocking), in its primary context.
    pub fn stream(&self, device: usize) -> Result<DeviceStream<'_>> {
        self.within(device, || {
            Ok::<_, Error>(DeviceStream { system: self, device, stream: self.driver().stream_create()? })
        })
    }
}

impl DeviceStream<'_> {
    /// The device whose context the stream belongs to.
    pub fn device(&self) -> usize {
        self.device
    }

    /// The raw `CUstream`, live while this value is.
    pub fn handle(&self) -> Stream {
        self.stream
    }

    /// Waits for everything queued on the stream (`cuStreamSynchronize`).
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: the stream is live while `self` is.
        self.system.within(self.device, || Ok(unsafe { self.system.driver().stream_synchronize(self.stream) }?))
    }
}

impl Drop for DeviceStream<'_> {
    fn drop(&mut self) {
        let driver = self.system.driver();
        // SAFETY: the stream is this value's, destroyed once, in its device's context.
        let _ = self.system.within(self.device, || Ok::<_, Error>(unsafe { driver.stream_destroy(self.stream) }?));
    }
}
