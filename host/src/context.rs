//! [`CurrentContext`]: a context made current for a scope, the caller's restored afterwards.

use crate::driver::{Context, Driver};
use crate::error::Result;

/// Makes a context current on this thread; on drop, makes the previous one current again.
///
/// peerpool enters a device's primary context for every operation that needs one and restores
/// the caller's context (or none) on every path, success or error: callers never find their
/// current context changed by a peerpool call.
#[must_use = "the context is current only while the guard lives"]
pub struct CurrentContext<'d> {
    driver: &'d dyn Driver,
    previous: Option<Context>,
    entered: Context,
    /// The current context is per thread: the guard must drop on the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl<'d> CurrentContext<'d> {
    /// Saves the current context, then makes `context` current. If either call fails nothing
    /// has changed.
    pub fn enter(driver: &'d dyn Driver, context: Context) -> Result<Self> {
        let previous = driver.ctx_get_current()?;
        if previous != Some(context) {
            driver.ctx_set_current(Some(context))?;
        }
        Ok(CurrentContext { driver, previous, entered: context, _not_send: std::marker::PhantomData })
    }

    /// The context this guard made current.
    pub fn context(&self) -> Context {
        self.entered
    }
}

impl Drop for CurrentContext<'_> {
    fn drop(&mut self) {
        if self.previous != Some(self.entered) {
            // Nothing to report to from a drop; a failure here means the process's CUDA state
            // is already broken (a sticky error), which the failing call itself reported.
            let _ = self.driver.ctx_set_current(self.previous);
        }
    }
}
