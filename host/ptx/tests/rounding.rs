//! Directed rounding through the executor, checked against an oracle of its own: the host's
//! round-to-nearest result and the sign of its error, found exactly with error-free
//! transformations (TwoSum, products exact in f64 or by fma), give the results rounded up,
//! down and toward zero.

mod common;

use common::Ram;
use peerpool_ptx::{Launch, Shape, load, run};
use std::cmp::Ordering;

/// The ops each thread runs, each in `.rz`, `.rm`, `.rp` and `.rn`: (PTX, operands).
const F32_OPS: [(&str, &str); 6] = [
    ("add.{m}.f32", "%f1, %f2"),
    ("sub.{m}.f32", "%f1, %f2"),
    ("mul.{m}.f32", "%f1, %f2"),
    ("div.{m}.f32", "%f1, %f2"),
    ("fma.{m}.f32", "%f1, %f2, %f3"),
    ("sqrt.{m}.f32", "%f4"),
];
const F64_OPS: [(&str, &str); 5] = [
    ("add.{m}.f64", "%fd1, %fd2"),
    ("mul.{m}.f64", "%fd1, %fd2"),
    ("div.{m}.f64", "%fd1, %fd2"),
    ("sqrt.{m}.f64", "%fd3"),
    ("rcp.{m}.f64", "%fd2"),
];
const MODES: [&str; 4] = ["rz", "rm", "rp", "rn"];
/// Inputs of a thread: x, y, z, |x| (f32), then X, Y, |X| (f64), then an i32 and an i64.
const IN: usize = 64;

fn module() -> peerpool_ptx::Module {
    let mut body = String::from(
        "mov.u32 %r0, %tid.x;\nld.param.u64 %rd1, [in];\nld.param.u64 %rd2, [out];\nmul.wide.u32 %rd3, %r0, 64;\n\
         add.s64 %rd1, %rd1, %rd3;\nmul.wide.u32 %rd3, %r0, 1024;\nadd.s64 %rd2, %rd2, %rd3;\n\
         ld.global.f32 %f1, [%rd1];\nld.global.f32 %f2, [%rd1+4];\nld.global.f32 %f3, [%rd1+8];\nabs.f32 %f4, %f1;\n\
         ld.global.f64 %fd1, [%rd1+16];\nld.global.f64 %fd2, [%rd1+24];\nabs.f64 %fd3, %fd1;\n\
         ld.global.s32 %r1, [%rd1+40];\nld.global.s64 %rd4, [%rd1+48];\n",
    );
    let mut at = 0;
    for m in MODES {
        for (op, args) in F32_OPS {
            body += &format!("{} %f9, {args};\nst.global.f32 [%rd2+{at}], %f9;\n", op.replace("{m}", m));
            at += 8;
        }
        for (op, args) in F64_OPS {
            body += &format!("{} %fd9, {args};\nst.global.f64 [%rd2+{at}], %fd9;\n", op.replace("{m}", m));
            at += 8;
        }
        for (cvt, src, dst) in [("f32.f64", "%fd1", "%f9"), ("f32.s32", "%r1", "%f9"), ("f32.s64", "%rd4", "%f9")] {
            body += &format!("cvt.{m}.{cvt} {dst}, {src};\nst.global.f32 [%rd2+{at}], {dst};\n");
            at += 8;
        }
        body += &format!("cvt.{m}.f64.s64 %fd9, %rd4;\nst.global.f64 [%rd2+{at}], %fd9;\n");
        at += 8;
    }
    let text = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 in, .param .u64 out)\n{{\n\
         .reg .b32 %r<4>;\n.reg .b64 %rd<8>;\n.reg .f32 %f<10>;\n.reg .f64 %fd<10>;\n{body}ret;\n}}\n"
    );
    load(&text).unwrap()
}

/// A deterministic stream of values with moderate exponents (no overflow or underflow).
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 ^ (self.0 >> 31)
    }
    fn f32(&mut self) -> f32 {
        let r = self.next();
        f32::from_bits((r as u32 & 0x807f_ffff) | ((127 - 20 + (r >> 40) % 40) as u32) << 23)
    }
    fn f64(&mut self) -> f64 {
        let r = self.next();
        f64::from_bits((r & 0x800f_ffff_ffff_ffff) | (1023 - 200 + (r >> 50) % 400) << 52)
    }
}

/// The results in `.rz`, `.rm`, `.rp` from the nearest one `r` and the sign of `exact - r`.
fn directed32(r: f32, err: Ordering) -> [f32; 3] {
    let up = if err == Ordering::Greater { r.next_up() } else { r };
    let down = if err == Ordering::Less { r.next_down() } else { r };
    let positive = r > 0.0 || (r == 0.0 && err == Ordering::Greater);
    [if positive { down } else { up }, down, up]
}

fn directed64(r: f64, err: Ordering) -> [f64; 3] {
    let up = if err == Ordering::Greater { r.next_up() } else { r };
    let down = if err == Ordering::Less { r.next_down() } else { r };
    let positive = r > 0.0 || (r == 0.0 && err == Ordering::Greater);
    [if positive { down } else { up }, down, up]
}

/// The sign of `(s + e) - r` for `s + e` exact and `r` near `s` (so `s - r` is exact).
fn sign_of(s: f64, e: f64, r: f64) -> Ordering {
    ((s - r) + e).partial_cmp(&0.0).unwrap()
}

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// Each op's nearest result and the sign of its error, f32 then f64 then conversions.
/// Nearest results with the signs of their errors.
type Nearest<T> = Vec<(T, Ordering)>;

fn oracle(x: f32, y: f32, z: f32, xx: f64, yy: f64, i: i32, l: i64) -> (Nearest<f32>, Nearest<f64>) {
    let (dx, dy, dz) = (x as f64, y as f64, z as f64);
    let mut f = Vec::new();
    let (s, e) = two_sum(dx, dy);
    f.push((x + y, sign_of(s, e, (x + y) as f64)));
    let (s, e) = two_sum(dx, -dy);
    f.push((x - y, sign_of(s, e, (x - y) as f64)));
    f.push((x * y, (dx * dy).partial_cmp(&((x * y) as f64)).unwrap()));
    let q = x / y;
    let o = dx.partial_cmp(&(q as f64 * dy)).unwrap();
    f.push((q, if y < 0.0 { o.reverse() } else { o }));
    let (s, e) = two_sum(dx * dy, dz);
    let r = x.mul_add(y, z);
    f.push((r, sign_of(s, e, r as f64)));
    let r = x.abs().sqrt();
    f.push((r, dx.abs().partial_cmp(&(r as f64 * r as f64)).unwrap()));
    let mut d = Vec::new();
    let (s, e) = two_sum(xx, yy);
    d.push((s, e.partial_cmp(&0.0).unwrap()));
    let p = xx * yy;
    d.push((p, xx.mul_add(yy, -p).partial_cmp(&0.0).unwrap()));
    let q = xx / yy;
    let o = (-q).mul_add(yy, xx).partial_cmp(&0.0).unwrap();
    d.push((q, if yy < 0.0 { o.reverse() } else { o }));
    let r = xx.abs().sqrt();
    d.push((r, (-r).mul_add(r, xx.abs()).partial_cmp(&0.0).unwrap()));
    let q = 1.0 / yy;
    let o = (-q).mul_add(yy, 1.0).partial_cmp(&0.0).unwrap();
    d.push((q, if yy < 0.0 { o.reverse() } else { o }));
    f.push((xx as f32, xx.partial_cmp(&(xx as f32 as f64)).unwrap()));
    f.push((i as f32, (i as i64).cmp(&(i as f32 as i64))));
    f.push((l as f32, (l as i128).cmp(&(l as f32 as i128))));
    d.push((l as f64, (l as i128).cmp(&(l as f64 as i128))));
    (f, d)
}

#[test]
fn directed_rounding_matches_an_independent_oracle() {
    let module = module();
    let threads = 256usize;
    let mut g = Gen(3);
    let mut input = vec![0u8; threads * IN];
    let mut values = Vec::new();
    for t in 0..threads {
        let (x, y, z, xx, yy) = (g.f32(), g.f32(), g.f32(), g.f64(), g.f64());
        let (i, l) = (g.next() as i32, g.next() as i64 >> (g.next() % 40));
        let b = &mut input[t * IN..];
        b[0..4].copy_from_slice(&x.to_le_bytes());
        b[4..8].copy_from_slice(&y.to_le_bytes());
        b[8..12].copy_from_slice(&z.to_le_bytes());
        b[16..24].copy_from_slice(&xx.to_le_bytes());
        b[24..32].copy_from_slice(&yy.to_le_bytes());
        b[40..44].copy_from_slice(&i.to_le_bytes());
        b[48..56].copy_from_slice(&l.to_le_bytes());
        values.push((x, y, z, xx, yy, i, l));
    }
    let mut ram = Ram::default();
    let (inp, out) = (ram.add(0x10_0000, input), ram.add(0x20_0000, vec![0; threads * 1024]));
    let mut params = inp.to_le_bytes().to_vec();
    params.extend(out.to_le_bytes());
    let launch = Launch {
        shape: Shape { grid: [1, 1, 1], block: [threads as u32, 1, 1], shared: 0, params: &params },
        variables: &[],
        budget: 1 << 24,
        grid_sync: None,
        cluster: None,
        resident_blocks: 0,
    };
    run(module.kernel("k").unwrap(), &launch, &mut ram).unwrap();
    let bytes = ram.bytes(out);
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let mut inexact = 0;
    for (t, &(x, y, z, xx, yy, i, l)) in values.iter().enumerate() {
        let (f, d) = oracle(x, y, z, xx, yy, i, l);
        let per_mode = 8 * (F32_OPS.len() + F64_OPS.len() + 4);
        for (m, mode) in MODES.iter().enumerate() {
            let base = t * 1024 + m * per_mode;
            let (fs, fd) = (&f[..6], &d[..5]);
            let mut at = base;
            let mut check32 = |(r, err): (f32, Ordering), what: &str, at: usize| {
                let want = if m == 3 { r } else { directed32(r, err)[m] };
                inexact += (err != Ordering::Equal) as u32;
                assert_eq!(
                    word(at) as u32,
                    want.to_bits(),
                    "{what}.{mode} thread {t}: {x:e} {y:e} {z:e} {xx:e} {i} {l}"
                );
            };
            for (k, &v) in fs.iter().enumerate() {
                check32(v, F32_OPS[k].0, at);
                at += 8;
            }
            for (k, &(r, err)) in fd.iter().enumerate() {
                let want = if m == 3 { r } else { directed64(r, err)[m] };
                assert_eq!(word(at), want.to_bits(), "{}.{mode} thread {t}: {xx:e} {yy:e}", F64_OPS[k].0);
                at += 8;
            }
            for (k, &v) in f[6..].iter().enumerate() {
                check32(v, ["cvt.f32.f64", "cvt.f32.s32", "cvt.f32.s64"][k], at);
                at += 8;
            }
            let (r, err) = d[5];
            let want = if m == 3 { r } else { directed64(r, err)[m] };
            assert_eq!(word(at), want.to_bits(), "cvt.{mode}.f64.s64 {l}");
        }
    }
    assert!(inexact > 1000, "the inputs round: {inexact}");
}
