//! IEEE results in the directed modes without a soft float: the host's round-to-nearest
//! result `r` and the sign of `exact - r`, found exactly by summing error-free terms into a
//! non-overlapping expansion, say which neighbour each mode picks.

use std::cmp::Ordering;

/// `.rn`, `.rz`, `.rm`, `.rp` by index, as PTX and CUDA's `_rn/_rz/_rd/_ru` name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Near,
    Zero,
    Down,
    Up,
}

pub const MODES: [Mode; 4] = [Mode::Near, Mode::Zero, Mode::Down, Mode::Up];

pub fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// The sign of the exact sum of `terms` (each a double, their sum not overflowing).
pub fn exact_sign(terms: &[f64]) -> Ordering {
    let mut expansion: Vec<f64> = Vec::new();
    for &t in terms {
        let mut q = t;
        let mut next = Vec::new();
        for &x in &expansion {
            let (s, e) = two_sum(q, x);
            if e != 0.0 {
                next.push(e);
            }
            q = s;
        }
        if q != 0.0 {
            next.push(q);
        }
        expansion = next;
    }
    // Non-overlapping, in increasing magnitude: the largest decides.
    expansion.last().map_or(Ordering::Equal, |v| v.partial_cmp(&0.0).unwrap())
}

/// The product `a * b` as two doubles whose sum is exact.
pub fn two_prod(a: f64, b: f64) -> [f64; 2] {
    let p = a * b;
    [p, a.mul_add(b, -p)]
}

/// The two float widths, as the directed rounding below needs them.
pub trait Float: Copy + PartialOrd {
    const ZERO: Self;
    fn next_up(self) -> Self;
    fn next_down(self) -> Self;
}

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Float for $t {
            const ZERO: $t = 0.0;
            fn next_up(self) -> $t {
                <$t>::next_up(self)
            }
            fn next_down(self) -> $t {
                <$t>::next_down(self)
            }
        }
    )*};
}
float!(f32, f64);

/// The nearest result `r`, whose error against the exact one is `err`, rounded by `mode`.
pub fn directed<F: Float>(r: F, err: Ordering, mode: Mode) -> F {
    let up = if err == Ordering::Greater { r.next_up() } else { r };
    let down = if err == Ordering::Less { r.next_down() } else { r };
    let positive = r > F::ZERO || (r == F::ZERO && err == Ordering::Greater);
    match mode {
        Mode::Near => r,
        Mode::Zero if positive => down,
        Mode::Zero => up,
        Mode::Down => down,
        Mode::Up => up,
    }
}

pub fn directed32(r: f32, err: Ordering, mode: Mode) -> f32 {
    directed(r, err, mode)
}

pub fn directed64(r: f64, err: Ordering, mode: Mode) -> f64 {
    directed(r, err, mode)
}

/// f32 operations in `mode` (their exact values are sums of doubles).
pub fn add32(a: f32, b: f32, m: Mode) -> f32 {
    let r = a + b;
    directed32(r, exact_sign(&[a as f64, b as f64, -(r as f64)]), m)
}
pub fn mul32(a: f32, b: f32, m: Mode) -> f32 {
    let r = a * b;
    directed32(r, exact_sign(&[a as f64 * b as f64, -(r as f64)]), m)
}
pub fn fma32(a: f32, b: f32, c: f32, m: Mode) -> f32 {
    let r = a.mul_add(b, c);
    directed32(r, exact_sign(&[a as f64 * b as f64, c as f64, -(r as f64)]), m)
}
pub fn div32(a: f32, b: f32, m: Mode) -> f32 {
    let q = a / b;
    let o = exact_sign(&[a as f64, -(q as f64 * b as f64)]);
    directed32(q, if b < 0.0 { o.reverse() } else { o }, m)
}
pub fn sqrt32(a: f32, m: Mode) -> f32 {
    let r = a.sqrt();
    directed32(r, exact_sign(&[a as f64, -(r as f64 * r as f64)]), m)
}
pub fn from64_32(d: f64, m: Mode) -> f32 {
    let r = d as f32;
    directed32(r, exact_sign(&[d, -(r as f64)]), m)
}
pub fn int32(v: i128, m: Mode) -> f32 {
    let r = v as f32;
    directed32(r, v.cmp(&(r as i128)), m)
}

/// f64 operations in `mode`.
pub fn add64(a: f64, b: f64, m: Mode) -> f64 {
    let r = a + b;
    directed64(r, exact_sign(&[a, b, -r]), m)
}
pub fn mul64(a: f64, b: f64, m: Mode) -> f64 {
    let r = a * b;
    let [p, e] = two_prod(a, b);
    directed64(r, exact_sign(&[p, e, -r]), m)
}
pub fn fma64(a: f64, b: f64, c: f64, m: Mode) -> f64 {
    let r = a.mul_add(b, c);
    let [p, e] = two_prod(a, b);
    directed64(r, exact_sign(&[p, e, c, -r]), m)
}
pub fn div64(a: f64, b: f64, m: Mode) -> f64 {
    let q = a / b;
    let [p, e] = two_prod(q, b);
    let o = exact_sign(&[a, -p, -e]);
    directed64(q, if b < 0.0 { o.reverse() } else { o }, m)
}
pub fn sqrt64(a: f64, m: Mode) -> f64 {
    let r = a.sqrt();
    let [p, e] = two_prod(r, r);
    directed64(r, exact_sign(&[a, -p, -e]), m)
}
pub fn int64(v: i128, m: Mode) -> f64 {
    let r = v as f64;
    directed64(r, v.cmp(&(r as i128)), m)
}
