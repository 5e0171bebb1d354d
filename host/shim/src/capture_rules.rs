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

/// The calls the driver calls potentially unsafe in capture, by documented name:
/// `cuThreadExchangeStreamCaptureMode` names `cudaMalloc` (`cuMemAlloc`), which allocates
/// outside any stream, so that a graph replaying the capture would not allocate.
const UNSAFE_IN_CAPTURE: [&str; 1] = ["cuMemAlloc"];

/// The captures that forbid the calling thread a potentially unsafe call now, as the driver
/// documents for `cuThreadExchangeStreamCaptureMode`: in global mode (the default), this
/// thread's captures not begun relaxed and other threads' begun global; in thread-local mode,
/// this thread's not begun relaxed; none in relaxed mode. By the stream each began on.
fn prohibiting() -> Vec<u64> {
    let me = std::thread::current().id();
    let mode = MODE.get();
    let forbids = |thread, began| match mode {
        GLOBAL => (thread == me && began != RELAXED) || (thread != me && began == GLOBAL),
        THREAD_LOCAL => thread == me && began != RELAXED,
        _ => false,
    };
    graphs::origins().into_iter().filter(|&(_, thread, began)| forbids(thread, began)).map(|(s, _, _)| s).collect()
}

/// For the entry point `name` (as documented) while some stream captures: a potentially unsafe
/// call the calling thread may not make is `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`, and the
/// captures that forbid it are invalidated (their end answers
/// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`).
pub(crate) fn gate(name: &str) -> Option<CUresult> {
    if !UNSAFE_IN_CAPTURE.contains(&name) {
        return None;
    }
    let captures = prohibiting();
    if captures.is_empty() {
        return None;
    }
    for stream in captures {
        graphs::invalidate(stream);
    }
    Some(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
}
