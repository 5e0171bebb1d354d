//! 16-bit floats for the references, written apart from the executor's soft float: a value
//! from its bits, and an exact f64 rounded once into the format by scaling to its quantum.

use super::oracle::Mode;

/// f16 or bf16: precision (with the hidden bit) and exponent bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    F16,
    BF16,
}

impl Half {
    fn shape(self) -> (i32, i32) {
        match self {
            Half::F16 => (11, 5),
            Half::BF16 => (8, 8),
        }
    }

    fn bias(self) -> i32 {
        (1 << (self.shape().1 - 1)) - 1
    }

    /// The exponent of the smallest subnormal.
    fn quantum(self) -> i32 {
        1 - self.bias() - (self.shape().0 - 1)
    }

    fn inf(self) -> u16 {
        let (p, e) = self.shape();
        (((1 << e) - 1) << (p - 1)) as u16
    }

    /// The GPU's canonical NaN.
    pub const NAN: u16 = 0x7fff;

    pub fn one(self) -> u16 {
        self.round(1.0, Mode::Near)
    }

    /// The value of `bits`.
    pub fn value(self, bits: u16) -> f64 {
        let (p, e) = self.shape();
        let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
        let frac = (bits & ((1 << (p - 1)) - 1)) as f64;
        let field = ((bits >> (p - 1)) & ((1 << e) - 1)) as i32;
        match field {
            f if f == (1 << e) - 1 && frac == 0.0 => sign * f64::INFINITY,
            f if f == (1 << e) - 1 => f64::NAN,
            0 => sign * frac * 2f64.powi(self.quantum()),
            f => sign * (frac + 2f64.powi(p - 1)) * 2f64.powi(f - self.bias() - (p - 1)),
        }
    }

    /// `x`, exact, rounded once in `mode`; a NaN is the canonical one.
    pub fn round(self, x: f64, mode: Mode) -> u16 {
        let (p, _) = self.shape();
        if x.is_nan() {
            return Self::NAN;
        }
        let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
        if x.is_infinite() {
            return sign | self.inf();
        }
        if x == 0.0 {
            return sign;
        }
        // The quantum of x's binade (never below the subnormals'): x / q is exact.
        let top = ((x.abs().to_bits() >> 52) as i32) - 1023;
        let q = (top - (p - 1)).max(self.quantum());
        let m = x / 2f64.powi(q);
        let r = match mode {
            Mode::Near => m.round_ties_even(),
            Mode::Zero => m.trunc(),
            Mode::Down => m.floor(),
            Mode::Up => m.ceil(),
        };
        let v = (r * 2f64.powi(q)).abs();
        let max = (2f64.powi(p) - 1.0) * 2f64.powi(self.bias() - (p - 1));
        if v > max {
            let to_inf = match mode {
                Mode::Near => true,
                Mode::Zero => false,
                Mode::Down => sign != 0,
                Mode::Up => sign == 0,
            };
            return sign | if to_inf { self.inf() } else { self.inf() - 1 };
        }
        if v == 0.0 {
            return sign;
        }
        // Encode v: subnormal below 2^(1 - bias), else a field and a fraction.
        let top = ((v.to_bits() >> 52) as i32) - 1023;
        let bits = if top < 1 - self.bias() {
            (v / 2f64.powi(self.quantum())) as u16
        } else {
            let frac = v / 2f64.powi(top - (p - 1)) - 2f64.powi(p - 1);
            (((top + self.bias()) as u16) << (p - 1)) | frac as u16
        };
        sign | bits
    }

    /// `min`/`max` as the GPU computes them: a NaN yields the other (both: NaN), or with
    /// `nan_wins` any NaN yields NaN; -0 is below +0.
    pub fn pick(self, a: u16, b: u16, max: bool, nan_wins: bool) -> u16 {
        let (x, y) = (self.value(a), self.value(b));
        match (x.is_nan(), y.is_nan()) {
            (true, _) | (_, true) if nan_wins => Self::NAN,
            (true, true) => Self::NAN,
            (true, false) => b,
            (false, true) => a,
            _ if x == y => {
                if (a & 0x8000 != 0) != max {
                    a
                } else {
                    b
                }
            }
            _ if (x < y) != max => a,
            _ => b,
        }
    }
}
