//! Timing samples, shared by the examples that measure (`mod samples;`).

use std::time::Instant;

/// Microseconds since `start`.
pub fn micros(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e6
}

/// The median of `v`'s finite samples (the upper middle one of an even count); NaN for none.
/// A NaN sample is a measurement that failed: it is left out, not sorted last.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
