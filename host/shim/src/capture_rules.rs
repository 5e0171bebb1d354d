//! What stream capture forbids beyond the capturing stream: the calls the driver calls
//! potentially unsafe while a capture is in progress, refused by each thread's interaction mode
//! (`cuThreadExchangeStreamCaptureMode`) and the modes the captures began in.

use crate::graphs::{self, GLOBAL, MODES, RELAXED, THREAD_LOCAL};
use cudarc::driver::sys::CUresult;

std::thread_local! {
    /// The thread's capture interaction mode.
    static MODE: std::cell::Cell<u32> = const { std::cell::Cell::new(GLOBAL) };
}

/// Sets the calling thread's interaction mode to `mode`; the one it had.
pub(crate) fn exchange_mode(mode: u32) -> Result<u32, CUresult> {
    match mode < MODES {
        true => Ok(MODE.replace(mode)),
        false => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

/// The calls the driver calls potentially unsafe in capture, by documented name (as recorded
/// on NVIDIA's driver: the capture-rules record).
const UNSAFE_IN_CAPTURE: [&str; 0] = [];

/// Whether the calling thread may not make a potentially unsafe call now, as the driver
/// documents for `cuThreadExchangeStreamCaptureMode`: in global mode (the default), while this
/// thread has a capture not begun relaxed or another thread one begun global; in thread-local
/// mode, while this thread has one not begun relaxed; never in relaxed mode.
fn prohibited() -> bool {
    let me = std::thread::current().id();
    let mode = MODE.get();
    graphs::origins().into_iter().any(|(thread, began)| match mode {
        GLOBAL => (thread == me && began != RELAXED) || (thread != me && began == GLOBAL),
        THREAD_LOCAL => thread == me && began != RELAXED,
        _ => false,
    })
}

/// For the entry point `name` (as documented) while some stream captures: a potentially unsafe
/// call the calling thread may not make is `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`.
pub(crate) fn gate(name: &str) -> Option<CUresult> {
    if !UNSAFE_IN_CAPTURE.contains(&name) {
        return None;
    }
    prohibited().then_some(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
}
