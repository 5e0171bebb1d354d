//! A deterministic fault injector that wraps any [`Driver`](crate::driver::Driver).
