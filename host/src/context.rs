//! [`CurrentContext`]: a context made current for a scope, the caller's restored afterwards.

use crate::driver::{Context, Driver};
use crate::error::Result;

/// Makes a context current on this thread until [`CurrentContext::exit`] or drop, which make
/// the previous one current again.
///
/// peerpool enters a device's primary context for every operation that needs one and restores
/// the caller's context (or none) on every path, success or error: callers never find their
/// current context changed by a peerpool call. Where the restore itself fails (the driver
/// refuses `cuCtxSetCurrent`), the operation returns that error instead of its result, so a
/// changed context is never silent.
#[must_use = "the context is current only while the guard lives"]
pub struct CurrentContext<'d> {
    driver: &'d dyn Driver,
    previous: Option<Context>,
    entered: Context,
    /// `exit` ran: the drop has nothing left to do.
    exited: bool,
    /// The current context is per thread: the guard must drop on the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl<'d> CurrentContext<'d> {
    /// Saves the current context, then makes `context` current. If either call fails nothing
    /// has changed.
    ///
    /// # Safety
    /// `context` is a live context of `driver` (retained) for as long as the guard lives.
    pub(crate) unsafe fn enter(driver: &'d dyn Driver, context: Context) -> Result<Self> {
        let previous = driver.ctx_get_current()?;
        if previous != Some(context) {
            // SAFETY: the caller promises `context` is live.
            unsafe { driver.ctx_set_current(Some(context)) }?;
        }
        Ok(CurrentContext { driver, previous, entered: context, exited: false, _not_send: std::marker::PhantomData })
    }

    /// The context this guard made current.
    pub fn context(&self) -> Context {
        self.entered
    }

    /// Makes the caller's context current again, and says whether that worked.
    pub fn exit(mut self) -> Result<()> {
        self.exited = true;
        self.restore()
    }

    fn restore(&self) -> Result<()> {
        if self.previous != Some(self.entered) {
            // SAFETY: `previous` was this thread's current context when the guard was made;
            // only this guard's own calls changed it since.
            unsafe { self.driver.ctx_set_current(self.previous) }?;
        }
        Ok(())
    }
}

impl Drop for CurrentContext<'_> {
    /// Restores on early returns and unwinding; a failure here has nowhere to go, so every
    /// peerpool operation ends with [`CurrentContext::exit`] on its success path.
    fn drop(&mut self) {
        if !self.exited {
            let _ = self.restore();
        }
    }
}

/// `result`, unless it is a success and `guard` fails to restore the caller's context: then
/// that failure. The guard is exited on every path.
pub(crate) fn leave<T, E: From<crate::Error>>(guard: CurrentContext<'_>, result: Result<T, E>) -> Result<T, E> {
    let restored = guard.exit();
    let value = result?;
    restored?;
    Ok(value)
}
