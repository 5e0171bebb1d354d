//! `wmma` fragments and `wmma.mma`. The PTX ISA leaves unspecified which thread holds which
//! element of a fragment, so a program sees the layout only through elementwise operations;
//! this executor's is simple: lane `l` holds the `E` elements from `l * E` on, in row-major
//! order, wrapping round where the warp holds the matrix more than once (f16 A and B of most
//! shapes). `D = A B + C` is summed as the H200's tensor cores sum, a model fitted bit for bit
//! to their results ([`tensor_sum`]).

use super::half;
use super::round::{self, Format};
use crate::ir::{Fragment, Matrix, Mma, Round, Ty};

/// Elements of `frag` each thread holds.
pub(super) fn per_thread(frag: Fragment) -> usize {
    frag.regs() * frag.per_reg()
}

/// Where element `e` of lane `lane`'s part of `frag` sits in its matrix: (row, column).
pub(super) fn place(frag: Fragment, lane: u32, e: usize) -> (u32, u32) {
    if frag.sync {
        return sync_place(frag, lane, e as u32);
    }
    let (rows, cols) = frag.dims();
    let index = (lane as usize * per_thread(frag) + e) % (rows * cols) as usize;
    ((index / cols as usize) as u32, (index % cols as usize) as u32)
}

/// [`place`] for `mma.sync`'s shapes, as the PTX ISA lays their fragments out: lanes in
/// groups of four, `g` the group and `t` the lane in it; a register's elements (`p` of them)
/// run along a row of A and C (a column of B); A's registers go 8 rows down, then (past the
/// first two) half of k on; B's go half of k on; C's pairs go 8 rows down.
fn sync_place(frag: Fragment, lane: u32, e: u32) -> (u32, u32) {
    let (g, t, p, half_k) = (lane / 4, lane % 4, frag.per_reg() as u32, frag.shape[2] / 2);
    let (r, j) = (e / p, e % p);
    match frag.matrix {
        Matrix::A => (g + 8 * (r % 2), t * p + j + half_k * (r / 2)),
        Matrix::B => (t * p + j + half_k * r, g),
        Matrix::C => (g + 8 * (e / 2), 2 * t + e % 2),
    }
}

/// The byte offset of the element at (`row`, `col`) of a matrix stored by rows (by columns when
/// `col_major`), `stride` elements from one row (column) to the next.
pub(super) fn offset(ty: Ty, col_major: bool, stride: u64, (row, col): (u32, u32)) -> u64 {
    let (major, minor) = if col_major { (col, row) } else { (row, col) };
    (major as u64).wrapping_mul(stride).wrapping_add(minor as u64).wrapping_mul(ty.bytes() as u64)
}

/// Element `e` of a fragment of `ty` from the thread's register values.
pub(super) fn element(ty: Ty, regs: &[u64], e: usize) -> u64 {
    let (per, bits) = ((32 / ty.bits()) as usize, ty.bits());
    (regs[e / per] >> ((e % per) as u32 * bits)) & (u64::MAX >> (64 - bits))
}

/// Element `e` of a fragment of `ty` set to `v` in the register values.
pub(super) fn set_element(ty: Ty, regs: &mut [u64], e: usize, v: u64) {
    let (per, bits) = ((32 / ty.bits()) as usize, ty.bits());
    let shift = (e % per) as u32 * bits;
    let mask = (u64::MAX >> (64 - bits)) << shift;
    regs[e / per] = (regs[e / per] & !mask) | ((v << shift) & mask);
}

/// The format of an accumulator's elements (f16 or f32).
fn format(ty: Ty) -> Format {
    if ty == Ty::F16 { Format::Half } else { Format::Single }
}

/// The value of an element of any fragment, exactly.
fn to_f64(ty: Ty, bits: u64) -> f64 {
    match ty {
        Ty::S8 => bits as u8 as i8 as f64,
        Ty::U8 => bits as u8 as f64,
        Ty::S32 => bits as u32 as i32 as f64,
        Ty::F16 | Ty::BF16 => half::value(ty, bits, false),
        // The tensor cores take tf32's bits of an f32 and ignore the rest.
        Ty::TF32 => f32::from_bits(bits as u32 & !0x1fff) as f64,
        _ => f32::from_bits(bits as u32) as f64,
    }
}

/// One element of an integer `D = A B + C` (8-bit inputs, s32 C and D): exact, then wrapped to
/// 32 bits, or clamped with `.satfinite`.
fn integer_sum(c: f64, a: impl Iterator<Item = f64>, b: impl Iterator<Item = f64>, saturate: bool) -> u64 {
    let sum = a.zip(b).fold(c as i64, |s, (x, y)| s + x as i64 * y as i64);
    let d = if saturate { sum.clamp(i32::MIN as i64, i32::MAX as i64) as i32 } else { sum as i32 };
    d as u32 as u64
}

/// `2^e` (within f64's normal range).
fn two_to(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// The exponent of a finite nonzero `x` of type `ty` as its exponent field gives it: `floor(log2
/// |x|)`, or for a subnormal the type's least normal exponent. (`x` is held in f64, where every
/// f16, bf16 and f32 is normal.)
fn exponent(ty: Ty, x: f64) -> i32 {
    let least = if ty == Ty::F16 { -14 } else { -126 };
    (((x.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(least)
}

/// One element of `D = A B + C`, `c + sum(a[k] b[k])`, as the H200's tensor cores compute it
/// (a model fitted to their results; it matches 4.8 million of them, `experiments/wmma_rounding`),
/// for 16, 8 or 4 products: every product is exact; each term, C and the products, is truncated toward zero to a multiple of
/// `2^(E - 25)`, where `E` is the largest of C's exponent and the products' (the sum of their
/// factors' exponents, so a product whose significands multiply past 2 still counts at the
/// lower one; a subnormal counts at its type's least normal exponent); the truncated terms are
/// summed exactly, and the sum rounded toward zero into f32 (past f32's range: an infinity),
/// or to nearest into f16. Infinities and NaNs give what IEEE arithmetic gives (a NaN the
/// GPU's canonical one); a sum of zeros keeps IEEE's sign, while a sum that cancels exactly,
/// or is too small for D, is +0.
/// `input` is A's and B's type, `c` is C's and `d` D's; the values come in f64, exact.
pub(super) fn tensor_sum(
    (input, c_ty, d): (Ty, Ty, Ty),
    c: f64,
    a: impl Iterator<Item = f64> + Clone,
    b: impl Iterator<Item = f64> + Clone,
) -> u64 {
    let pairs = a.zip(b);
    let rounded = |v: f64, mode| round::convert(v.to_bits(), Format::Double, format(d), mode);
    let naive = pairs.clone().fold(c, |s, (x, y)| s + x * y);
    if naive.is_nan() {
        return round::nan(format(d));
    }
    if naive.is_infinite() {
        return rounded(naive, Round::Nearest);
    }
    let nonzero = |x: f64| x != 0.0;
    let refs =
        pairs.clone().filter(|&(x, y)| nonzero(x) && nonzero(y)).map(|(x, y)| exponent(input, x) + exponent(input, y));
    let Some(top) = refs.chain(nonzero(c).then(|| exponent(c_ty, c))).max() else {
        // Every term is a zero: IEEE's sign, as the plain sum has it.
        return rounded(naive, Round::Nearest);
    };
    let lowest = top - 25;
    // Each term in units of 2^lowest, truncated: below 2^28 apiece, so the sum fits.
    let units = |x: f64| (x * two_to(-lowest)).trunc() as i64;
    let sum = pairs.fold(units(c), |s, (x, y)| s + units(x * y));
    let exact = sum as f64 * two_to(lowest);
    let bits = match d {
        _ if sum == 0 => 0,
        Ty::F32 if exact.abs() >= two_to(128) => rounded(exact, Round::Nearest),
        Ty::F32 => rounded(exact, Round::Zero),
        _ => rounded(exact, Round::Nearest),
    };
    // A sum too small for D is +0 whatever its sign.
    if bits & !round::sign_bit(format(d)) == 0 { 0 } else { bits }
}

/// What `ldmatrix` gives lane `lane` of one 8x8 matrix of 16-bit elements (`rows`: its rows'
/// bytes): a pair along row `lane / 4`, from column `2 (lane % 4)`, as A and C of `mma.sync`
/// hold it; with `trans`, the same of the transposed matrix.
pub(super) fn ldmatrix_word(rows: &[[u8; 16]], lane: usize, trans: bool) -> u64 {
    let at = |(r, c): (usize, usize)| u16::from_le_bytes([rows[r][2 * c], rows[r][2 * c + 1]]) as u64;
    let [low, high] = pair_place(lane, trans);
    at(low) | at(high) << 16
}

/// What `stmatrix` writes of one 8x8 matrix of 16-bit elements into `rows` from each lane's
/// word (`words[lane]`): the inverse of [`ldmatrix_word`].
pub(super) fn stmatrix_rows(words: &[u64; 32], rows: &mut [[u8; 16]], trans: bool) {
    for (lane, &w) in words.iter().enumerate() {
        for ((r, c), half) in pair_place(lane, trans).into_iter().zip([w as u16, (w >> 16) as u16]) {
            rows[r][2 * c..2 * c + 2].copy_from_slice(&half.to_le_bytes());
        }
    }
}

/// The (row, column) of the low and the high half of lane `lane`'s pair in one 8x8 matrix:
/// along row `lane / 4` from column `2 (lane % 4)`, or the transposed places.
fn pair_place(lane: usize, trans: bool) -> [(usize, usize); 2] {
    let (r, c) = (lane / 4, 2 * (lane % 4));
    match trans {
        false => [(r, c), (r, c + 1)],
        true => [(c, r), (c + 1, r)],
    }
}

/// One lane's registers of each operand: A, B and C, as [`Mma`] lists them.
pub(super) struct Operands<'a> {
    pub(super) a: &'a [u64],
    pub(super) b: &'a [u64],
    pub(super) c: &'a [u64],
}

/// `D = A B + C` for a whole warp: `lanes[l]` holds lane `l`'s operands; the result is each
/// lane's D registers.
pub(super) fn multiply(mma: &Mma, lanes: &[Operands<'_>; 32]) -> [Vec<u64>; 32] {
    let [_, n, k] = mma.shape.map(|v| v as usize);
    // Each matrix row-major, from the lanes' elements (the first where one is held twice).
    let gather = |matrix: Matrix| {
        let frag = mma.fragment(matrix);
        let (_, cols) = frag.dims();
        let mut out = vec![None; (frag.dims().0 * cols) as usize];
        for (lane, o) in lanes.iter().enumerate() {
            let regs = match matrix {
                Matrix::A => o.a,
                Matrix::B => o.b,
                Matrix::C => o.c,
            };
            for e in 0..per_thread(frag) {
                let (r, c) = place(frag, lane as u32, e);
                let v = &mut out[(r * cols + c) as usize];
                v.get_or_insert_with(|| to_f64(frag.ty, element(frag.ty, regs, e)));
            }
        }
        out.into_iter().map(|v| v.expect("every element is held")).collect::<Vec<f64>>()
    };
    let (a, b, c) = (gather(Matrix::A), gather(Matrix::B), gather(Matrix::C));
    let d_frag = Fragment { ty: mma.d, ..mma.fragment(Matrix::C) };
    std::array::from_fn(|lane| {
        let mut regs = vec![0u64; d_frag.regs()];
        for e in 0..per_thread(d_frag) {
            let (i, j) = place(d_frag, lane as u32, e);
            let (i, j) = (i as usize, j as usize);
            let (row, col) = ((0..k).map(|kk| a[i * k + kk]), (0..k).map(|kk| b[kk * n + j]));
            let sum = match mma.d {
                Ty::S32 => integer_sum(c[i * n + j], row, col, mma.saturate),
                _ => tensor_sum((mma.input, mma.c, mma.d), c[i * n + j], row, col),
            };
            set_element(mma.d, &mut regs, e, sum);
        }
        regs
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn stmatrix_writes_what_ldmatrix_reads_back_plain_and_transposed() {
        let words: [u64; 32] = std::array::from_fn(|l| (0x0101_0101 * l as u64) ^ 0x8000_0001);
        for trans in [false, true] {
            let mut rows = [[0u8; 16]; 8];
            stmatrix_rows(&words, &mut rows, trans);
            let back: Vec<u64> = (0..32).map(|l| ldmatrix_word(&rows, l, trans)).collect();
            assert_eq!(back, words, "trans {trans}");
        }
        // Lane 5 holds row 1, columns 2 and 3; transposed, rows 2 and 3 of column 1.
        let mut rows = [[0u8; 16]; 8];
        stmatrix_rows(&words, &mut rows, false);
        assert_eq!(&rows[1][4..8], &[0x04, 0x05, 0x05, 0x85]);
        stmatrix_rows(&words, &mut rows, true);
        assert_eq!((&rows[2][2..4], &rows[3][2..4]), (&[0x04, 0x05][..], &[0x05, 0x85][..]));
    }

    use super::*;

    fn frag(matrix: Matrix, shape: [u32; 3], ty: Ty) -> Fragment {
        Fragment { matrix, shape, ty, sync: shape[1] == 8 && shape[0] == 16 }
    }

    #[test]
    fn every_element_of_every_fragment_is_held_by_some_lane_as_often_as_any_other() {
        for shape in [[16, 16, 16], [32, 8, 16], [8, 32, 16], [16, 8, 16], [16, 8, 8]] {
            for (matrix, ty) in [
                (Matrix::A, Ty::F16),
                (Matrix::B, Ty::F16),
                (Matrix::A, Ty::BF16),
                (Matrix::B, Ty::BF16),
                (Matrix::C, Ty::F16),
                (Matrix::C, Ty::F32),
            ] {
                let f = frag(matrix, shape, ty);
                let (rows, cols) = f.dims();
                let mut held = vec![0; (rows * cols) as usize];
                for lane in 0..32 {
                    for e in 0..per_thread(f) {
                        let (r, c) = place(f, lane, e);
                        held[(r * cols + c) as usize] += 1;
                    }
                }
                let copies = held[0];
                assert!(copies >= 1 && held.iter().all(|&h| h == copies), "{f:?}: {held:?}");
                assert!(!f.sync || copies == 1, "{f:?}");
            }
        }
    }

    #[test]
    fn mma_sync_fragments_sit_where_the_ptx_isa_puts_them() {
        // m16n8k16: lane 5 is in group 1 at place 1.
        let (a, b, c) = (
            frag(Matrix::A, [16, 8, 16], Ty::F16),
            frag(Matrix::B, [16, 8, 16], Ty::F16),
            frag(Matrix::C, [16, 8, 16], Ty::F32),
        );
        let a_places: Vec<_> = (0..8).map(|e| place(a, 5, e)).collect();
        assert_eq!(a_places, [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11), (9, 10), (9, 11)]);
        assert_eq!((0..4).map(|e| place(b, 5, e)).collect::<Vec<_>>(), [(2, 1), (3, 1), (10, 1), (11, 1)]);
        assert_eq!((0..4).map(|e| place(c, 5, e)).collect::<Vec<_>>(), [(1, 2), (1, 3), (9, 2), (9, 3)]);
        let (a8, b8) = (frag(Matrix::A, [16, 8, 8], Ty::F16), frag(Matrix::B, [16, 8, 8], Ty::F16));
        assert_eq!((0..4).map(|e| place(a8, 31, e)).collect::<Vec<_>>(), [(7, 6), (7, 7), (15, 6), (15, 7)]);
        assert_eq!((0..2).map(|e| place(b8, 31, e)).collect::<Vec<_>>(), [(6, 7), (7, 7)]);
        assert_eq!((a.regs(), b.regs(), c.regs(), a8.regs(), b8.regs()), (4, 2, 4, 2, 1));
    }

    #[test]
    fn elements_pack_into_registers_lowest_first() {
        let mut regs = vec![0u64; 2];
        for e in 0..4 {
            set_element(Ty::F16, &mut regs, e, 0x1000 + e as u64);
        }
        assert_eq!(regs, vec![0x1001_1000, 0x1003_1002]);
        assert_eq!(element(Ty::F16, &regs, 3), 0x1003);
        assert_eq!(offset(Ty::F16, false, 24, (2, 5)), (2 * 24 + 5) * 2);
        assert_eq!(offset(Ty::F32, true, 16, (2, 5)), (5 * 16 + 2) * 4);
    }

    #[test]
    fn a_product_is_the_matrix_product_plus_c() {
        let mma = Mma {
            sync: false,
            saturate: false,
            shape: [16, 16, 16],
            input: Ty::F16,
            input_b: Ty::F16,
            c: Ty::F32,
            d: Ty::F32,
            a_regs: vec![],
            b_regs: vec![],
            c_regs: vec![],
            d_regs: vec![],
        };
        let (fa, fb, fc) = (mma.fragment(Matrix::A), mma.fragment(Matrix::B), mma.fragment(Matrix::C));
        let half = |v: f64| round::convert(v.to_bits(), Format::Double, Format::Half, Round::Nearest);
        // A[i][k] = i - k, B[k][j] = (k + 2 j) / 4, C[i][j] = i j.
        let fill = |f: Fragment, value: &dyn Fn(u32, u32) -> f64, bits: &dyn Fn(f64) -> u64| -> Vec<Vec<u64>> {
            (0..32)
                .map(|lane| {
                    let mut regs = vec![0; f.regs()];
                    for e in 0..per_thread(f) {
                        let (r, c) = place(f, lane, e);
                        set_element(f.ty, &mut regs, e, bits(value(r, c)));
                    }
                    regs
                })
                .collect()
        };
        let a = fill(fa, &|i, k| i as f64 - k as f64, &half);
        let b = fill(fb, &|k, j| (k + 2 * j) as f64 / 4.0, &half);
        let c = fill(fc, &|i, j| (i * j) as f64, &|v| (v as f32).to_bits() as u64);
        let lanes = std::array::from_fn(|l| Operands { a: &a[l], b: &b[l], c: &c[l] });
        let d = multiply(&mma, &lanes);
        for lane in 0..32 {
            for e in 0..per_thread(fc) {
                let (i, j) = place(fc, lane, e);
                let want: f64 =
                    (0..16).map(|k| (i as f64 - k as f64) * (k + 2 * j) as f64 / 4.0).sum::<f64>() + (i * j) as f64;
                assert_eq!(f32::from_bits(element(Ty::F32, &d[lane as usize], e) as u32), want as f32, "({i}, {j})");
            }
        }
    }
}
