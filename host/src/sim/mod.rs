//! A simulated multi-GPU driver behind the [`Driver`](crate::driver::Driver) seam.
