//! nvcc's and NVRTC's PTX for `corpus/corpus.cu`, every kernel launched as `corpus/kernels.txt`
//! says on a plain memory, each output checked against a reference computed here: bit for bit, but for
//! the approximate instructions, within the 1 ulp that `lib.rs` states. `corpus/README.md`
//! says what each kernel checks. rustc's PTX for `rustc/kernels.rs` (jump tables) is launched
//! and checked in the same way, as `rustc/kernels.txt` says.

mod common;

use common::Ram;
use common::half::Half;
use common::oracle::{self, MODES, Mode};
use peerpool_ptx::{GridSync, Launch, Module, Shape, load, run};

/// The corpus compiled by nvcc and by NVRTC (`corpus/README.md`).
const PTX: [(&str, &str); 2] =
    [("corpus.ptx", include_str!("corpus/corpus.ptx")), ("corpus.nvrtc.ptx", include_str!("corpus/corpus.nvrtc.ptx"))];
const LAUNCHES: &str = include_str!("corpus/kernels.txt");
/// Kernels in Rust compiled by rustc's nvptx64 backend, and their launches (`rustc/README.md`).
const RUSTC: (&str, &str, &str) =
    ("rustc/kernels.ptx", include_str!("rustc/kernels.ptx"), include_str!("rustc/kernels.txt"));

/// A kernel's launch, as a line of kernels.txt.
struct Line {
    name: String,
    grid: [u32; 3],
    block: [u32; 3],
    dynamic_shared: u32,
    in_words: usize,
    out_words: usize,
    n: u32,
    fill: u32,
    /// Launched cooperatively (`cuLaunchCooperativeKernel`).
    cooperative: bool,
    /// Launched in clusters of these dimensions (a launch attribute).
    cluster: Option<[u32; 3]>,
}

fn launches(text: &str) -> Vec<Line> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let num = |i: usize| match f[i].strip_prefix("0x") {
                Some(hex) => u32::from_str_radix(hex, 16).unwrap(),
                None => f[i].parse::<u32>().unwrap(),
            };
            Line {
                name: f[0].to_string(),
                grid: [num(1), num(2), num(3)],
                block: [num(4), num(5), num(6)],
                dynamic_shared: num(7),
                in_words: num(8) as usize,
                out_words: num(9) as usize,
                n: num(10),
                fill: num(11),
                cooperative: f.get(12) == Some(&"cooperative"),
                cluster: match f.get(12) {
                    None | Some(&"cooperative") => None,
                    Some(kind) => {
                        let dims = kind.strip_prefix("cluster=").map(|d| d.split('x').map(|v| v.parse().unwrap()));
                        let dims: Vec<u32> =
                            dims.unwrap_or_else(|| panic!("{}: unknown launch {kind}", f[0])).collect();
                        Some([dims[0], dims[1], dims[2]])
                    }
                },
            }
        })
        .collect()
}

/// The inputs: murmur3's finaliser of `i` times the golden ratio.
pub fn hash(i: u32) -> u32 {
    let mut x = i.wrapping_mul(0x9e37_79b9) ^ 0x5bd1_e995;
    x ^= x >> 16;
    x = x.wrapping_mul(0x85eb_ca6b);
    x ^= x >> 13;
    x = x.wrapping_mul(0xc2b2_ae35);
    x ^ (x >> 16)
}

fn f_of(w: u32) -> f32 {
    f32::from_bits((w & 0x807f_ffff) | ((((w >> 23) & 31) + 112) << 23))
}

fn d_of(lo: u32, hi: u32) -> f64 {
    let b = (hi as u64) << 32 | lo as u64;
    f64::from_bits((b & 0x800f_ffff_ffff_ffff) | ((((b >> 52) & 63) + 992) << 52))
}

fn b32(f: f32) -> u32 {
    f.to_bits()
}

/// `rustc/kernels.rs`'s `pick`: one of twelve functions of `v`.
fn pick(k: u32, v: u32) -> u32 {
    match k {
        0 => v.wrapping_mul(3),
        1 => v ^ 0x55,
        2 => v.wrapping_add(100),
        3 => v.wrapping_mul(7),
        4 => v.wrapping_mul(v),
        5 => v ^ 0xffff,
        6 => v.wrapping_add(9),
        7 => v.wrapping_mul(13),
        8 => v ^ 0x1000,
        9 => v & 0xff,
        10 => v.wrapping_mul(11),
        11 => v.wrapping_add(77),
        _ => 42,
    }
}

/// `rustc/kernels.rs`'s bytecode machine for thread `i`, its code from `v` and `next`.
fn bytecode(i: usize, v: u32, next: u32) -> u32 {
    let mut code = u64::from(v) | u64::from(next) << 32;
    let mut acc = i as u32;
    for _ in 0..16 {
        acc = match code & 7 {
            0 => acc.wrapping_add(v),
            1 => acc.wrapping_mul(3),
            2 => acc ^ 0xdead_beef,
            3 => acc.wrapping_mul(acc),
            4 => acc ^ (acc >> 7),
            5 => acc.wrapping_add(0x0123_4567),
            6 => acc.wrapping_mul(0x0100_0193),
            _ => acc ^ v,
        };
        code >>= 3;
    }
    acc
}

/// u64s as pairs of words, low first.
fn split(v: &[u64]) -> Vec<u32> {
    v.iter().flat_map(|&x| [x as u32, (x >> 32) as u32]).collect()
}

/// A launch: the output words, the module's variables' final bytes, and what it printed.
fn launch(module: &Module, l: &Line, input: &[u32]) -> (Vec<u32>, Vec<Vec<u8>>, String) {
    let mut ram = Ram::default();
    let inp = ram.add(0x1000_0000, input.iter().flat_map(|w| w.to_le_bytes()).collect());
    let out = ram.add(0x2000_0000, (0..l.out_words).flat_map(|_| l.fill.to_le_bytes()).collect());
    // Each variable in a region of its own, holding the addresses its initialiser names.
    let variables: Vec<u64> = (0..module.variables.len()).map(|i| 0x3000_0000 + 0x1_0000 * i as u64).collect();
    for (v, &at) in module.variables.iter().zip(&variables) {
        let mut bytes = v.initial_bytes(&variables);
        bytes.resize(v.size.max(1) as usize, 0);
        ram.add(at, bytes);
    }
    let mut params = inp.to_le_bytes().to_vec();
    params.extend(out.to_le_bytes());
    params.extend(l.n.to_le_bytes());
    // The grid workspace a driver gives a cooperative launch, zeroed.
    let grid_sync = l.cooperative.then(|| GridSync { workspace: ram.add(0x4000_0000, vec![0; 8]), resident: true });
    let launch = Launch {
        shape: Shape { grid: l.grid, block: l.block, shared: l.dynamic_shared, params: &params },
        variables: &variables,
        budget: 1 << 30,
        grid_sync,
        cluster: l.cluster,
        // The corpus's grids are small: a GPU holds every block of each at once.
        resident_blocks: l.grid.iter().map(|&d| d as u64).product(),
    };
    let kernel = module.kernel(&l.name).unwrap_or_else(|| panic!("{} is in corpus.ptx", l.name));
    run(kernel, &launch, &mut ram).unwrap_or_else(|t| panic!("{}: {t:?}", l.name));
    let vars = variables.iter().map(|&v| ram.bytes(v).to_vec()).collect();
    (ram.words(out), vars, ram.printed)
}

#[test]
fn every_kernel_of_the_corpus_computes_what_the_reference_does() {
    for (file, text) in PTX {
        let lines = launches(LAUNCHES);
        assert!(lines.len() >= 40);
        compute_what_the_reference_does(file, &load(text).unwrap_or_else(|e| panic!("{file}: {e}")), &lines);
    }
}

#[test]
fn every_kernel_rustc_compiled_computes_what_the_reference_does() {
    let (file, text, lines) = RUSTC;
    let module = load(text).unwrap_or_else(|e| panic!("{file}: {e}"));
    // The file's point: rustc's jump tables, each kernel's at least once.
    assert!(text.split(".entry").skip(1).all(|kernel| kernel.contains("brx.idx")), "a kernel without brx.idx");
    compute_what_the_reference_does(file, &module, &launches(lines));
}

fn compute_what_the_reference_does(file: &str, module: &Module, lines: &[Line]) {
    let entries: std::collections::BTreeSet<&str> =
        module.functions.iter().filter(|f| f.entry).map(|f| f.name.as_str()).collect();
    let launched: std::collections::BTreeSet<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(entries, launched, "every kernel of {file} has a line in its kernels.txt");
    for l in lines {
        let input: Vec<u32> = (0..l.in_words as u32).map(hash).collect();
        let (got, vars, printed) = launch(module, l, &input);
        // Device printf: three lines (what the H200 printed is compared in the shim's tests).
        match l.name.as_str() {
            "device_printf" => {
                assert_eq!(printed.lines().count(), 3, "{printed}");
                assert!(printed.ends_with("\nprintf: ok a string|   right|cu %\n"), "{printed}");
            }
            _ => assert_eq!(printed, "", "{}", l.name),
        }
        let warps = |w: usize| input.chunks(32).nth(w).unwrap().to_vec();
        let want = reference(l, &input, &got, &vars, warps);
        if let Some(want) = want {
            assert_eq!(got.len(), want.len(), "{}", l.name);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g, w, "{file}: {} word {i}: got {g:#x}, want {w:#x}", l.name);
            }
        }
    }
}

/// What a kernel's output must be (`None`: the kernel's check is done here, in place).
fn reference(l: &Line, x: &[u32], got: &[u32], vars: &[Vec<u8>], warp: impl Fn(usize) -> Vec<u32>) -> Option<Vec<u32>> {
    let n = l.n as usize;
    let threads = (l.grid.iter().product::<u32>() * l.block.iter().product::<u32>()) as usize;
    let per = |k: usize, f: &dyn Fn(usize) -> Vec<u32>| (0..k).flat_map(f).collect::<Vec<u32>>();
    Some(match l.name.as_str() {
        "rs_jump_table" => per(n, &|i| vec![pick(x[i] & 15, x[i])]),
        "rs_warp_table" => per(n, &|i| vec![pick((i as u32 >> 5) & 15, x[i])]),
        "rs_bytecode" => per(n, &|i| vec![bytecode(i, x[i], x[if i + 1 < n { i + 1 } else { 0 }])]),
        "saxpy" => per(n, &|i| vec![b32(2.5f32.mul_add(f_of(x[i]), f_of(x[i + n])))]),
        "index64" => per(n, &|i| vec![((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32 ^ x[i]]),
        "int_arith" => per(n, &|i| {
            let (a, b) = (x[2 * i], x[2 * i + 1] | 1);
            let (sa, sb) = (a as i32, b as i32);
            let wide = ((a as u64) << 32 | b as u64) as u128 * 0x0123_4567_89ab_cdef_u128;
            vec![
                a / b,
                a % b,
                sa.wrapping_div(sb) as u32,
                sa.wrapping_rem(sb) as u32,
                ((a as u64 * b as u64) >> 32) as u32,
                ((sa as i64 * sb as i64) >> 32) as u32,
                (wide >> 64) as u32,
                (sa.min(sb) as u32) ^ a.max(b) ^ sa.wrapping_abs() as u32,
            ]
        }),
        "int64_arith" => per(n, &|i| {
            let w = |k: usize| x[2 * k] as u64 | (x[2 * k + 1] as u64) << 32;
            let (a, b) = (w(2 * i), w(2 * i + 1) | 1);
            split(&[
                a.wrapping_mul(b),
                a / b,
                a % b,
                (a as i64).wrapping_div(b as i64) as u64,
                ((a as u128 * b as u128) >> 64) as u64,
                ((a as i64 as i128 * b as i64 as i128) >> 64) as u64,
                a >> (b & 63),
                ((a as i64) >> (b & 63)) as u64,
            ])
        }),
        "packed16" => per(n, &|i| {
            let (a, b) = (x[2 * i], x[2 * i + 1]);
            // Each 16-bit half on its own, as unsigned or signed integers.
            let halves = |f: &dyn Fn(u32, u32) -> u32| {
                (0..2).fold(0, |w, k| w | (f(a >> (16 * k), b >> (16 * k)) & 0xffff) << (16 * k))
            };
            let s = |v: u32| v as u16 as i16 as i32;
            let relu = |v: i32| v.max(0) as u32;
            let c = a ^ b;
            // `fns` as the PTX ISA walks it.
            let fns = |mask: u32, base: u32, offset: i32| -> u32 {
                let (mut pos, mut count, step) = (base as i32, offset.unsigned_abs().max(1) - 1, offset.signum());
                while (0..32).contains(&pos) {
                    if mask >> pos & 1 == 1 {
                        if count == 0 {
                            return pos as u32;
                        }
                        count -= 1;
                    }
                    if step == 0 {
                        break;
                    }
                    pos += step;
                }
                u32::MAX
            };
            vec![
                halves(&|x, y| x.wrapping_add(y)),
                (0..2).fold(0, |w, k| {
                    let sum = s(a >> (16 * k)).wrapping_add(s(b >> (16 * k))) as i16 as i32;
                    w | (sum.max(s(c >> (16 * k))) as u32 & 0xffff) << (16 * k)
                }),
                halves(&|x, y| s(x).max(s(y)) as u32),
                halves(&|x, y| s(x).min(s(y)) as u32),
                halves(&|x, y| (x & 0xffff).max(y & 0xffff)),
                halves(&|x, y| (x & 0xffff).min(y & 0xffff)),
                halves(&|x, y| relu(s(x).max(s(y)))),
                halves(&|x, y| relu(s(x).min(s(y)))),
                fns(a, b & 31, 0),
                fns(a, b & 31, (b >> 27) as i32 - 16),
                fns(a & 0x0101_0101, (b >> 8) & 31, ((b >> 16) & 7) as i32 - 3),
                fns(a, (b >> 20) & 31, (b >> 25) as i32),
            ]
        }),
        "bits32" => per(n, &|i| {
            let (a, b) = (x[2 * i], x[2 * i + 1]);
            let ffs = if b == 0 { 0 } else { b.trailing_zeros() + 1 };
            let perm = |s: u32| {
                let src = (b as u64) << 32 | a as u64;
                (0..4).fold(0u32, |d, k| d | (((src >> (8 * ((s >> (4 * k)) & 7))) & 0xff) as u32) << (8 * k))
            };
            let funnel = (b as u64) << 32 | a as u64;
            vec![
                a.count_ones() | a.leading_zeros() << 8 | ffs << 16,
                a.reverse_bits(),
                perm(b & 0x7777),
                perm((b >> 16) & 0x7777),
                ((funnel << (b >> 27 & 31)) >> 32) as u32,
                (funnel >> ((b >> 26) & 31)) as u32,
                ((funnel << (b >> 26).min(32)) >> 32) as u32,
                (a >> (b & 31)) & 0xfff,
            ]
        }),
        "bits64" => per(n, &|i| {
            let a = x[2 * i] as u64 | (x[2 * i + 1] as u64) << 32;
            let ffs = if a == 0 { 0 } else { a.trailing_zeros() as u64 + 1 };
            split(&[a.count_ones() as u64 | (a.leading_zeros() as u64) << 8 | ffs << 16, a.reverse_bits()])
        }),
        "dot_products" => per(n, &|i| {
            let (a, b, c) = (x[3 * i], x[3 * i + 1], x[3 * i + 2]);
            let byte = |v: u32, k: u32, s: bool| {
                if s { (v >> (8 * k)) as u8 as i8 as i64 } else { (v >> (8 * k)) as u8 as i64 }
            };
            let half = |v: u32, k: u32, s: bool| {
                if s { (v >> (16 * k)) as u16 as i16 as i64 } else { (v >> (16 * k)) as u16 as i64 }
            };
            let dp4 = |s: bool| (0..4).map(|k| byte(a, k, s) * byte(b, k, s)).sum::<i64>();
            let dp2 = |s: bool, hi: u32| (0..2).map(|k| half(a, k, s) * byte(b, k + 2 * hi, s)).sum::<i64>();
            vec![
                (c as i32 as i64 + dp4(true)) as u32,
                (c as i64 + dp4(false)) as u32,
                (c as i32 as i64 + dp2(true, 0)) as u32,
                (c as i64 + dp2(false, 1)) as u32,
            ]
        }),
        "sad_mul24" => per(n, &|i| {
            let (a, b, c) = (x[3 * i], x[3 * i + 1], x[3 * i + 2]);
            let s24 = |v: u32| ((v << 8) as i32 >> 8) as i64;
            vec![
                c.wrapping_add(a.abs_diff(b)),
                c.wrapping_add((a as i32).abs_diff(b as i32)),
                (s24(a) * s24(b)) as u32,
                ((a & 0xff_ffff) as u64 * (b & 0xff_ffff) as u64) as u32,
            ]
        }),
        "wide_mul_add" => per(n, &|i| {
            let (a, b, c) = (x[3 * i], x[3 * i + 1], x[3 * i + 2]);
            split(&[
                a as u64 * b as u64 + c as u64,
                (a as i32 as i64 * b as i32 as i64 + c as i32 as i64) as u64,
                a.wrapping_mul(b).wrapping_add(c) as u64 | ((a as u64 * b as u64) >> 32) << 32,
            ])
        }),
        "reduce_shared" => x.chunks(256).map(|c| c.iter().fold(0u32, |s, &v| s.wrapping_add(v))).collect(),
        "reduce_dynamic_f32" => x
            .chunks(128)
            .map(|c| {
                let mut s: Vec<f32> = c.iter().map(|&w| f_of(w)).collect();
                let mut k = 64;
                while k > 0 {
                    for t in 0..k {
                        s[t] += s[t + k];
                    }
                    k /= 2;
                }
                b32(s[0])
            })
            .collect(),
        "transpose" => (0..64 * 64).map(|i| x[(i % 64) * 64 + i / 64]).collect(),
        "block_scan" => x
            .chunks(128)
            .flat_map(|c| {
                c.iter()
                    .scan(0u32, |s, &v| {
                        *s += v & 0xffff;
                        Some(*s)
                    })
                    .collect::<Vec<_>>()
            })
            .collect(),
        "histogram_shared" => (0..64).map(|b| x[..n].iter().filter(|&&v| v & 63 == b).count() as u32).collect(),
        "syncthreads_reductions" => x
            .chunks(128)
            .flat_map(|c| {
                let count = c.iter().filter(|&&v| v & 1 != 0).count() as u32;
                let and = c.iter().all(|&v| v & 0x8000_0001 != 0) as u32;
                let or = c.iter().any(|&v| v & 0xff == 0x42) as u32;
                vec![count | and << 16 | or << 17; 128]
            })
            .collect(),
        "warp_reduce_down" => (0..threads / 32).map(|w| warp(w).iter().fold(0u32, |s, &v| s.wrapping_add(v))).collect(),
        "warp_scan_up" => (0..threads / 32)
            .flat_map(|w| {
                warp(w)
                    .iter()
                    .scan(0u32, |s, &v| {
                        *s += v & 0xffff;
                        Some(*s)
                    })
                    .collect::<Vec<_>>()
            })
            .collect(),
        "warp_max_xor" => (0..threads / 32).flat_map(|w| vec![*warp(w).iter().max().unwrap(); 32]).collect(),
        "shfl_widths" => per(threads, &|t| {
            let w = warp(t / 32);
            let (lane, v) = (t % 32, x[t]);
            let idx = (lane & 16) | ((v as usize >> 8) & 15);
            let up = if lane >= (lane & !7) + 3 { lane - 3 } else { lane };
            let down = if lane + 5 <= (lane | 7) { lane + 5 } else { lane };
            vec![w[idx], w[up], w[down], w[lane ^ 9]]
        }),
        "shfl_f64" => split(
            &(0..threads)
                .map(|t| {
                    let d = |k: usize| d_of(x[2 * k], x[2 * k + 1]);
                    let next = if t % 32 == 31 { t } else { t + 1 };
                    (d(next) + d(t - t % 32)).to_bits()
                })
                .collect::<Vec<_>>(),
        ),
        "ballot_rank" => per(threads, &|t| {
            let b = warp(t / 32).iter().enumerate().fold(0u32, |m, (i, &v)| m | (v & 1) << i);
            vec![b, (b & ((1u32 << (t % 32)) - 1)).count_ones()]
        }),
        "votes" => per(threads, &|t| {
            let w = warp(t / 32);
            let all = w.iter().all(|&v| v > 0x0100_0000) as u32;
            let any = w.iter().any(|&v| v < 0x0800_0000) as u32;
            let uni = w.iter().all(|&v| v >> 31 == w[0] >> 31) as u32;
            vec![all | any << 1 | uni << 2]
        }),
        "divergent_shfl" => per(threads, &|t| {
            let w = warp(t / 32);
            let m = w.iter().enumerate().fold(0u32, |m, (i, &v)| m | (v & 1) << i);
            let r = if x[t] & 1 != 0 {
                w[m.trailing_zeros() as usize]
            } else {
                w.iter().filter(|&&v| v & 1 == 0).fold(0, |s, &v| s ^ v)
            };
            vec![r ^ 0xffff_ffff]
        }),
        "match_groups" => per(threads, &|t| {
            let any = warp(t / 32).iter().enumerate().fold(0u32, |m, (i, &v)| m | ((v & 3 == x[t] & 3) as u32) << i);
            vec![any ^ 0xffff_ffff ^ 1]
        }),
        "redux" => per(threads, &|t| {
            let w = warp(t / 32);
            let signed = |f: fn(i32, i32) -> i32| w.iter().map(|&v| v as i32).reduce(f).unwrap() as u32;
            vec![
                w.iter().fold(0u32, |s, &v| s.wrapping_add(v)),
                w.iter().min().unwrap() ^ w.iter().max().unwrap(),
                signed(i32::min) ^ signed(i32::max),
                w.iter().fold(!0, |s, &v| s & v) ^ w.iter().fold(0, |s, &v| s | v) ^ w.iter().fold(0, |s, &v| s ^ v),
            ]
        }),
        "partial_warp" => (0..threads)
            .map(|i| {
                if i >= n {
                    return 0;
                }
                // Warps of 32 and 16 threads per block of 48; lanes past n have exited.
                let (block, t) = (i / 48, i % 48);
                let first = block * 48 + if t < 32 { 0 } else { 32 };
                let lanes = (if t < 32 { 32 } else { 16 }).min(n - first);
                let m = if lanes == 32 { u32::MAX } else { (1u32 << lanes) - 1 };
                let ballot = (0..lanes).fold(0u32, |b, k| b | (x[first + k] & 1) << k);
                ballot ^ (m << 1)
            })
            .collect(),
        "syncwarp_shared" => per(threads, &|t| vec![x[t ^ 1].wrapping_add(x[t ^ 31])]),
        "atomic_add_device" => {
            let mut o = vec![0u32; 17];
            for &v in x {
                o[(v & 15) as usize] += 1;
                o[16] = o[16].wrapping_add(v & 0xff);
            }
            o
        }
        "atomic_add_block" => {
            let mut o = vec![0u32; 8];
            x.iter().for_each(|&v| o[(v & 7) as usize] += v >> 24);
            o
        }
        "atomic_add_system" => {
            let mut o = vec![0u32; 8];
            let mut q = [0u64; 2];
            for &v in x {
                o[(v & 7) as usize] += 1;
                q[(v & 1) as usize] += v as u64;
            }
            o.extend(split(&q));
            o
        }
        "atomic_min_and" => vec![
            x.iter().map(|&v| v as i32).fold(-1, i32::max) as u32,
            x.iter().map(|&v| v as i32).fold(-1, i32::min) as u32,
            *x.iter().min().unwrap(),
            x.iter().fold(!0, |s, &v| s & (v | 0x10000)),
        ],
        "atomic_max_or" => {
            let count = x.len() as u32;
            let mut o = vec![
                x.iter().map(|&v| v >> 1).max().unwrap(),
                x.iter().fold(0, |s, &v| s | (v & 0x0101_0101)),
                x.iter().fold(0, |s, &v| s ^ v),
                count % 7,
                (6 - count % 6) % 6,
                42,
                1,
                0,
            ];
            o.extend(split(&[
                x.iter().map(|&v| (v as u64) << 20).max().unwrap(),
                (-(*x.iter().max().unwrap() as i64)) as u64,
            ]));
            o
        }
        "atomic_cas_mul" => vec![x.iter().fold(1u32, |p, &v| p.wrapping_mul(v | 1))],
        "atomic_float" => {
            let mut f = [0f32; 4];
            let mut d = [0f64; 2];
            for &v in x {
                f[(v & 3) as usize] += (v >> 24) as f32;
                d[(v >> 31) as usize] += (v & 0xffff) as f64 * 0.25;
            }
            let mut o: Vec<u32> = f.iter().map(|&v| b32(v)).collect();
            o.extend(split(&[d[0].to_bits(), d[1].to_bits()]));
            o
        }
        "atomic_ticket" => {
            let mut o = vec![1u32; threads + 1];
            o[0] = threads as u32;
            o
        }
        "half_arith" => per(n, &|i| half_arith(Half::F16, x[2 * i], x[2 * i + 1], i)),
        "bf16_arith" => per(n, &|i| half_arith(Half::BF16, x[2 * i], x[2 * i + 1], i)),
        "half_convert" => per(n, &|i| half_convert(&x[4 * i..4 * i + 4])),
        "half_atomic" => {
            // 256 ones over four f16 counters, (1, 2) in an f16 pair; bf16 the same.
            let f16 = |v: f64| Half::F16.round(v, Mode::Near) as u32;
            let bf16 = |v: f64| Half::BF16.round(v, Mode::Near) as u32;
            let mut o = vec![f16(64.0) * 0x1_0001, f16(64.0) * 0x1_0001, f16(256.0) | f16(512.0) << 16];
            o.extend([bf16(128.0) * 0x1_0001, bf16(256.0) | bf16(512.0) << 16, 0, 0, 0]);
            o
        }
        "async_copy" => per(threads, &|i| {
            let (block, t) = (i / 128, i % 128);
            let base = &x[512 * block..];
            // a: 512 words; b: each pair's first word, its second zero; c: 256 words from 256.
            let b = |k: usize| if k.is_multiple_of(2) { base[k] } else { 0 };
            vec![
                base[(4 * t + 5) % 512],
                b(2 * t),
                base[256 + (7 * t) % 256],
                b((2 * t + 3) % 256) ^ base[(13 * t) % 512],
            ]
        }),
        "device_printf" => {
            let mut o: Vec<u32> = x.iter().map(|w| w ^ 0x5a5a_5a5a).collect();
            o[0] = 15; // the first printf's arguments
            o
        }
        "atomic_cas16" => {
            let v = |i: usize| (x[i] | 1) & 0xffff;
            let mut o: Vec<u32> = (0..32).map(|k| v(2 * k) | v(2 * k + 1) << 16).collect();
            o.extend((0..64).map(|i| v(i) << 16));
            o
        }
        "misc_ops" => per(threads, &|i| misc_ops(i, &x[3 * i..3 * i + 3])),
        "cub_block_sort" => x
            .chunks(512)
            .flat_map(|b| {
                let mut b = b.to_vec();
                b.sort();
                b
            })
            .collect(),
        "cub_block_scan" => x
            .chunks(128)
            .flat_map(|b| {
                b.iter().scan(0u32, |sum, &v| Some(std::mem::replace(sum, sum.wrapping_add(v)))).collect::<Vec<_>>()
            })
            .collect(),
        "cub_warp_reduce" => x.chunks(32).map(|w| w.iter().fold(0u32, |s, &v| s.wrapping_add(v))).collect(),
        // Thread t of a block holds the block's items 4t..4t+4 (the blocked arrangement).
        "cub_load_store" => (0..x.len()).map(|k| x[k].wrapping_mul(3).wrapping_add((k % 512 / 4) as u32)).collect(),
        "bit_masks" => per(threads, &|i| {
            let (a, b, v) = (x[2 * i] % 40, x[2 * i + 1] % 40, x[2 * i] ^ x[2 * i + 1]);
            vec![bmsk(true, a, b), bmsk(false, a, b), szext(true, true, v, b), szext(false, false, v, a)]
        }),
        "fp8_convert" => per(threads, &|i| fp8_convert(i, x[2 * i], x[2 * i + 1])),
        "coop_groups" => {
            let v: Vec<u32> = x.iter().map(|w| w >> 24).collect();
            let mut o = vec![0u32; 2 * v.len()];
            for warp in (0..v.len()).step_by(32) {
                let odd: Vec<usize> = (warp..warp + 32).filter(|&i| v[i] & 1 == 1).collect();
                let sum = odd.iter().fold(0u32, |s, &i| s.wrapping_add(v[i]));
                for (rank, &i) in odd.iter().enumerate() {
                    o[2 * i] = v[odd[0]] + rank as u32 + sum;
                }
            }
            for tile in (0..v.len()).step_by(8) {
                let t = &v[tile..tile + 8];
                let max = *t.iter().max().unwrap_or(&0);
                let any = t.iter().any(|&w| w > 200) as u32;
                let ballot = (0..8).filter(|&k| t[k] & 2 != 0).fold(0u32, |b, k| b | 1 << k);
                for k in 0..8 {
                    let scan: u32 = t[..=k].iter().sum();
                    o[2 * (tile + k) + 1] = scan + max + any + (ballot << 8);
                }
            }
            o
        }
        "carry_chain" => per(threads, &|i| {
            let w = |k: usize| x[4 * i + k] as u64;
            let (a, b) = (w(1) << 32 | w(0), w(3) << 32 | w(2));
            let (sum, carry) = a.overflowing_add(b);
            let (diff, borrow) = a.overflowing_sub(b);
            let mad = (w(0) * w(2)).wrapping_add(w(3) << 32 | w(1));
            let words = |v: u64| [v as u32, (v >> 32) as u32];
            let mut o = words(sum).to_vec();
            o.push(carry as u32);
            o.extend(words(diff));
            o.push(if borrow { u32::MAX } else { 0 });
            o.extend(words(mad));
            o
        }),
        "mbarrier_phases" => (0..x.len())
            .map(|g| {
                let (b, t) = (g / 128 * 128, g % 128);
                let v = |t: usize| x[b + (t + 37) % 128];
                v(t).wrapping_add(v((t + 64) % 128) ^ (((t + 64) % 128) as u32).wrapping_mul(0x9e37_79b9))
            })
            .collect(),
        "memcpy_async_barrier" | "bulk_copy" => (0..x.len())
            .map(|g| {
                let (b, t) = (g / 256 * 256, g % 256);
                x[b + (t + 5) % 256].wrapping_mul(7).wrapping_add(t as u32)
            })
            .collect(),
        "simd_video" => per(threads, &|i| simd_video(x[3 * i], x[3 * i + 1], x[3 * i + 2])),
        "elect_leader" => per(threads, &|t| {
            let (w, lane) = (warp(t / 32), t as u32 % 32);
            let m = w.iter().enumerate().fold(0u32, |m, (k, &v)| m | (v >> 3 & 1) << k);
            let (first, leads) =
                if x[t] >> 3 & 1 == 1 { (m.trailing_zeros(), (lane == m.trailing_zeros()) as u32) } else { (99, 0) };
            vec![first | leads << 8 | ((lane == 0) as u32) << 14 | ((lane == 0) as u32) << 15]
        }),
        "stmatrix_tiles" => stmatrix_tiles(x),
        "initialised_pointers" => per(threads, &|i| {
            let words = [11u32, 22, 33, 44];
            let v = x[i];
            vec![[22, 44][(v & 1) as usize] + 11 + 33, words[(v & 3) as usize] ^ 2 ^ 2]
        }),
        "indirect_calls" => per(threads, &|i| {
            let v = x[i];
            let table = [v.rotate_left(7), v.wrapping_mul(0x9e37_79b9) ^ (v >> 13), (!v).wrapping_add(3)];
            let w = v ^ 0x5555;
            let g = if v & 16 != 0 { (!w).wrapping_add(3) } else { w.rotate_left(7) };
            let s = v & 0xffff;
            let area = match (v & 4, v & 8) {
                (4, _) => s.wrapping_mul(v >> 20),
                (0, 8) => s.wrapping_mul(s) / 2,
                _ => s.wrapping_mul(s),
            };
            vec![table[(v % 3) as usize], g, area]
        }),
        "grid_sync" => {
            let (blocks, all) = (l.grid[0] as usize, threads);
            let size = l.block[0] as usize;
            let sums: Vec<u32> = x.chunks(size).map(|c| c.iter().fold(0u32, |a, &v| a.wrapping_add(v))).collect();
            let mixed: Vec<u32> =
                (0..all as u32).map(|i| sums.iter().fold(i, |m, &s| m.wrapping_mul(31).wrapping_add(s))).collect();
            let passed: Vec<u32> = (0..all).map(|i| mixed[(i + size) % all] ^ sums[(i / size + 1) % blocks]).collect();
            let last = passed[all - 1].wrapping_add(blocks as u32);
            [sums, mixed, passed, vec![last]].concat()
        }
        "warp_handoff" => {
            let size = l.block[0] as usize / 32;
            let warp_sums: Vec<u32> = x.chunks(32).map(|c| c.iter().fold(0u32, |a, &v| a.wrapping_add(v))).collect();
            // Each warp's sum with those of the later warps of its block.
            let running = |w: usize| {
                let end = (w / size + 1) * size;
                warp_sums[w..end].iter().fold(0u32, |a, &v| a.wrapping_add(v))
            };
            per(threads, &|i| vec![running(i / 32)])
        }
        "block_handoff" => {
            let size = l.block[0] as usize;
            let block_sums: Vec<u32> = x.chunks(size).map(|c| c.iter().fold(0u32, |a, &v| a.wrapping_add(v))).collect();
            // Each block's sum with those of the later blocks, then every block's flag.
            let running = (0..block_sums.len()).map(|b| block_sums[b..].iter().fold(0u32, |a, &v| a.wrapping_add(v)));
            running.chain(block_sums.iter().map(|_| 1)).collect()
        }
        "cluster_shape" => {
            let size = l.cluster.map_or(1, |d| d[0]) as usize;
            per(threads, &|i| {
                let (b, t) = (i / 64, i % 64);
                let rank = b % size;
                let next = b - rank + (rank + size - 1) % size;
                let v = x[next * 64 + 63 - t].wrapping_add(next as u32);
                let explicit = l.cluster.is_some() as u32;
                let (id, ids) = ((b / size) as u32, (l.grid[0] as usize / size) as u32);
                vec![
                    v ^ (rank as u32) << 28
                        ^ (size as u32) << 24
                        ^ (size as u32) << 20
                        ^ explicit << 19
                        ^ id << 12
                        ^ ids << 4,
                ]
            })
        }
        "cluster_exchange" => {
            // Clusters of 2 x 2 blocks of 128 threads; a block's rank is x + 2 y within them.
            let (gx, size) = (l.grid[0] as usize, l.block[0] as usize);
            let block_at = |bx: usize, by: usize| bx + gx * by;
            let mut out = vec![0u32; threads];
            for by in 0..l.grid[1] as usize {
                for bx in 0..gx {
                    let (cx, cy, rx, ry) = (bx / 2, by / 2, bx % 2, by % 2);
                    let rank = rx + 2 * ry;
                    let member = |r: usize| block_at(2 * cx + r % 2, 2 * cy + r / 2);
                    let total = (0..4)
                        .flat_map(|r| (0..size).map(move |t| member(r) * size + t))
                        .fold(0u32, |a, i| a.wrapping_add(x[i] & 0xff));
                    for t in 0..size {
                        let v = x[member((rank + 1) % 4) * size + (t * 7) % size];
                        let mine = if rank == 0 { total } else { 0 };
                        out[block_at(bx, by) * size + t] =
                            v ^ (rank as u32) << 24 ^ (rx as u32) << 20 ^ (ry as u32) << 16 ^ 4 << 12 ^ mine;
                    }
                }
            }
            out
        }
        "wmma_tiles" => wmma_tiles(x),
        "mma_sync_tiles" => mma_sync_tiles(x),
        "mma_sync_int" => mma_sync_int(x),
        "mma_sync_tf32" => mma_sync_tf32(x),
        "double_math" => {
            double_math(x, got);
            return None;
        }
        "f32_rounding" => per(threads, &|i| {
            let (a, b, c) = (f_of(x[3 * i]), f_of(x[3 * i + 1]), f_of(x[3 * i + 2]));
            let mut o = Vec::new();
            o.extend(MODES.map(|m| b32(oracle::add32(a, b, m))));
            o.extend(MODES.map(|m| b32(oracle::add32(a, -b, m))));
            o.extend(MODES.map(|m| b32(oracle::mul32(a, b, m))));
            o.extend(MODES.map(|m| b32(oracle::div32(a, b, m))));
            o.extend(MODES.map(|m| b32(oracle::fma32(a, b, c, m))));
            o.extend(MODES.map(|m| b32(oracle::sqrt32(a.abs(), m))));
            o
        }),
        "f32_rcp" => per(threads, &|i| MODES.map(|m| b32(oracle::div32(1.0, f_of(x[i]), m))).to_vec()),
        "f64_rounding" => per(threads, &|i| {
            let d = |k: usize| d_of(x[6 * i + 2 * k], x[6 * i + 2 * k + 1]);
            let (a, b, c) = (d(0), d(1), d(2));
            let mut o = Vec::new();
            o.extend(MODES.map(|m| oracle::add64(a, b, m).to_bits()));
            o.extend(MODES.map(|m| oracle::add64(a, -b, m).to_bits()));
            o.extend(MODES.map(|m| oracle::mul64(a, b, m).to_bits()));
            o.extend(MODES.map(|m| oracle::div64(a, b, m).to_bits()));
            o.extend(MODES.map(|m| oracle::fma64(a, b, c, m).to_bits()));
            o.extend(MODES.map(|m| oracle::sqrt64(a.abs(), m).to_bits()));
            split(&o)
        }),
        "conversions" => per(threads, &|i| conversions(&x[4 * i..4 * i + 4])),
        "ieee_default" => per(threads, &|i| {
            let (a, b) = (f_of(x[4 * i]), f_of(x[4 * i + 1]));
            let (p, q) = (d_of(x[4 * i + 2], x[4 * i + 3]), d_of(x[4 * i + 1], x[4 * i]));
            let mut o = vec![b32(a / b), b32(a.abs().sqrt()), b32(1.0 / a), b32(a.mul_add(b, -a))];
            o.extend(split(&[(p / q).to_bits(), p.abs().sqrt().to_bits()]));
            o
        }),
        "float_misc" => per(threads, &|i| {
            let (a, b) = (f_of(x[2 * i]), f_of(x[2 * i + 1]));
            let d = d_of(x[2 * i], x[2 * i + 1]);
            vec![
                b32(a.min(b)),
                b32(a.max(b)),
                b32(a.copysign(b)),
                b32(a.floor()),
                b32(a.ceil()),
                b32(a.trunc()),
                b32(a.round_ties_even()),
                b32((a * 1e-4).clamp(0.0, 1.0)),
                b32(a.abs() - b),
                d.floor().to_bits() as u32,
                (d.min(a as f64).to_bits() >> 32) as u32,
                (d.ceil().to_bits() >> 32) as u32,
            ]
        }),
        "approx_math" => {
            approx_math(x, got);
            return None;
        }
        "classify" => per(threads, &|i| {
            let mut w = x[i];
            match i % 8 {
                0 => w = 0x7f80_0000 | (w & 0x8000_0000),
                1 => w = 0x7fc0_0000 | (w & 0x007f_ffff),
                2 => w &= 0x807f_ffff,
                _ => {}
            }
            let f = f32::from_bits(w);
            let sub = f.is_subnormal() as u32;
            vec![
                f.is_nan() as u32
                    | (f.is_infinite() as u32) << 1
                    | (f.is_finite() as u32) << 2
                    | (w >> 31) << 3
                    | sub << 4,
            ]
        }),
        "collatz" => per(threads, &|i| {
            let (mut v, mut steps) = ((x[i] & 0xffff) + 1, 0);
            while v != 1 && steps < 1000 {
                v = if v & 1 != 0 { 3 * v + 1 } else { v / 2 };
                steps += 1;
            }
            vec![steps]
        }),
        "switch_case" => per(threads, &|i| {
            let v = x[i];
            vec![match v % 8 {
                0 => v.wrapping_mul(3),
                1 => v ^ 0xdead_beef,
                2 => v >> 3,
                3 => v.wrapping_add(x[(i + 1) % n]),
                4 => !v,
                5 => v.wrapping_mul(v),
                6 => v.count_ones(),
                _ => 7,
            }]
        }),
        "noinline_calls" => per(threads, &|i| {
            fn fib(k: u32) -> u32 {
                if k < 2 { k } else { fib(k - 1) + fib(k - 2) }
            }
            let v = x[i];
            let f = fib(v & 15);
            let mix = v.wrapping_mul(31).wrapping_add(f ^ (v >> 3));
            vec![mix.wrapping_add(b32(f_of(v) * 0.5))]
        }),
        "launch_bounds" => per(threads, &|i| vec![x[i].wrapping_mul(128).wrapping_add(i as u32)]),
        "local_array" => per(threads, &|i| {
            let v = x[i];
            let mut a: Vec<u32> = (0..16).map(|k| v.wrapping_mul(k + 1)).collect();
            for k in 0..16 {
                a[((v >> k) & 15) as usize] = a[((v >> k) & 15) as usize].wrapping_add(k);
            }
            vec![a[(v & 15) as usize] ^ a[((v >> 4) & 15) as usize]]
        }),
        "grid3d" => per(threads, &|t| {
            let (b, th) = (t / 32, t % 32);
            let (bx, by, bz) = (b % 2, (b / 2) % 2, b / 4);
            let (tx, ty, tz) = (th % 4, (th / 4) % 4, th / 16);
            vec![(tx | ty << 4 | tz << 8 | bx << 12 | by << 16 | bz << 20) as u32]
        }),
        "const_and_global" => {
            let table = [3u32, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3];
            let counter = vars.iter().find(|v| v.len() == 4).expect("the counter");
            assert_eq!(u32::from_le_bytes(counter[..4].try_into().unwrap()), threads as u32, "counter");
            let mut o: Vec<u32> = x.iter().map(|&v| table[(v & 15) as usize].wrapping_mul(v)).collect();
            o.push(0x600d);
            o
        }
        "vector_access" => per(threads, &|i| {
            let v = &x[4 * i..4 * i + 4];
            let f: Vec<f32> = v.iter().map(|&w| f_of(w)).collect();
            vec![v[3], v[2], v[1], v[0], b32(f[0] + f[1]), b32(f[1] * f[2]), b32(f[2] - f[3]), b32(f[3])]
        }),
        other => panic!("no reference for {other}"),
    })
}

fn conversions(w: &[u32]) -> Vec<u32> {
    let f = f32::from_bits((w[0] & 0x807f_ffff) | ((((w[0] >> 23) & 63) + 100) << 23));
    let d = d_of(w[1], w[2]) * 4096.0;
    let s = w[3] as i32;
    let l = ((w[3] as u64) << 32 | w[1] as u64) as i64;
    let ff = f as f64;
    let f32_of = |m: Mode| b32(oracle::from64_32(d, m));
    vec![
        ff.round_ties_even() as i32 as u32,
        ff.trunc() as i32 as u32,
        ff.floor() as i32 as u32,
        ff.ceil() as i32 as u32,
        ff.round_ties_even() as u32,
        ff.trunc() as u32,
        ff.floor() as i64 as u32,
        ((ff.ceil() as u64) >> 3) as u32,
        d.round_ties_even() as i32 as u32,
        d.trunc() as i32 as u32,
        d.floor() as u32,
        f32_of(Mode::Near),
        f32_of(Mode::Zero),
        f32_of(Mode::Down),
        f32_of(Mode::Up),
        b32(oracle::int32(s as i128, Mode::Near)),
        b32(oracle::int32(s as i128, Mode::Zero)),
        b32(oracle::int32(s as i128, Mode::Down)),
        b32(oracle::int32(s as u32 as i128, Mode::Up)),
        b32(oracle::int32(l as i128, Mode::Down)),
        oracle::int64(l as i128, Mode::Up).to_bits() as u32,
        (oracle::int64(l as i128, Mode::Zero).to_bits() >> 32) as u32,
        oracle::int64(l as u64 as i128, Mode::Down).to_bits() as u32,
        d.ceil() as i64 as u32,
    ]
}

/// The approximate instructions within 1 ulp of the exact function of the same f32 input;
/// the others (a reciprocal times a value) exact.
fn approx_math(x: &[u32], got: &[u32]) {
    let ulps = |g: u32, want: f64| (g as i64 - (want as f32).to_bits() as i64).abs();
    for i in 0..got.len() / 8 {
        let a = ((x[2 * i] % 20001) as i32 - 10000) as f32 * 3.0e-4;
        let b = f_of(x[2 * i + 1]);
        let o = &got[8 * i..8 * i + 8];
        let t = a * std::f32::consts::LOG2_E;
        let close = [
            (o[0], (a as f64).sin(), "sin"),
            (o[1], (a as f64).cos(), "cos"),
            (o[2], (t as f64).exp2(), "exp"),
            (o[3], (b.abs() as f64).log2(), "log2"),
            (o[4], a as f64 / b as f64, "fdividef"),
            (o[5], 1.0 / (b.abs() as f64).sqrt(), "rsqrt"),
            (o[6], (a as f64).exp2(), "exp2"),
        ];
        for (g, want, what) in close {
            assert!(ulps(g, want) <= 1, "{what} of {a:e} {b:e}: {:e} for {want:e}", f32::from_bits(g));
        }
        assert_eq!(o[7], b32(a * (1.0 / b)), "rcp.rn times");
    }
}

/// f16s with |x| in [2^-7, 2^9), bf16s with |x| in [2^-7, 2^9) (corpus.cu's `h_of`, `bf_of`).
fn half_of(h: Half, w: u32) -> u16 {
    match h {
        Half::F16 => ((w & 0x83ff) | ((((w >> 10) & 15) + 8) << 10)) as u16,
        Half::BF16 => ((w & 0x807f) | ((((w >> 7) & 15) + 120) << 7)) as u16,
    }
}

fn pair(lo: u16, hi: u16) -> u32 {
    lo as u32 | (hi as u32) << 16
}

/// `half_arith`/`bf16_arith`: every result exact in f64 (the inputs' range sees to it), then
/// rounded once.
fn half_arith(h: Half, w: u32, v: u32, i: usize) -> Vec<u32> {
    let (a, mut b, mut c) = (half_of(h, w), half_of(h, w >> 16), half_of(h, v));
    if i % 16 == 5 {
        c = if h == Half::F16 { 0x7e01 } else { 0x7fc1 };
    }
    if i % 16 == 6 {
        b = if h == Half::F16 { 0x7c00 } else { 0x7f80 };
    }
    let val = |x: u16| h.value(x);
    let r = |x: f64| h.round(x, Mode::Near);
    let add = |x: u16, y: u16| r(val(x) + val(y));
    let sub = |x: u16, y: u16| r(val(x) - val(y));
    let mul = |x: u16, y: u16| r(val(x) * val(y));
    let fma = |x: u16, y: u16, z: u16| r(val(x) * val(y) + val(z));
    let lt = |x: u16, y: u16| val(x) < val(y);
    let one = |t: bool| if t { h.one() } else { 0 };
    // x = (a, b) and y = (c, a), the first in the low half.
    let (x, y) = ([a, b], [c, a]);
    let lanes = |f: &dyn Fn(u16, u16) -> u16| pair(f(x[0], y[0]), f(x[1], y[1]));
    let flags = lt(a, b) as u32
        | ((val(b) >= val(c) || val(c).is_nan()) as u32) << 1
        | (val(c).is_nan() as u32) << 2
        | ((val(x[0]) > val(y[0]) && val(x[1]) > val(y[1])) as u32) << 3
        | ((val(a) == val(a)) as u32) << 4
        | ((val(b) != val(c) && !val(c).is_nan()) as u32) << 5;
    vec![
        pair(add(a, b), sub(a, b)),
        pair(mul(a, b), fma(a, b, c)),
        pair(h.pick(a, c, false, false), h.pick(b, c, true, false)),
        pair(h.pick(a, c, false, true), h.pick(b, c, true, true)),
        pair(a ^ 0x8000, b & 0x7fff),
        lanes(&|p, q| fma(p, q, add(p, q))),
        lanes(&|p, q| sub(p, q)) ^ lanes(&|p, q| mul(p, q)),
        lanes(&|p, q| one(lt(p, q))) | flags,
    ]
}

/// `half_convert`: conversions to and from halves in each rounding.
fn half_convert(x: &[u32]) -> Vec<u32> {
    use Mode::*;
    let (f, g) = (f_of(x[0]) as f64, f_of(x[1]) as f64);
    let d = d_of(x[2], x[3]);
    let a = half_of(Half::F16, x[1]);
    let av = Half::F16.value(a);
    let p = half_of(Half::BF16, x[0]);
    let s = (x[2] as i32 >> 8) as f64;
    let f16 = |v: f64, m: Mode| Half::F16.round(v, m);
    let bf16 = |v: f64, m: Mode| Half::BF16.round(v, m);
    let int = |v: f64| v as i32 as u32;
    let integral = |v: f64, m: Mode| match m {
        Near => v.round_ties_even(),
        Zero => v.trunc(),
        Down => v.floor(),
        Up => v.ceil(),
    };
    vec![
        pair(f16(f, Near), f16(f, Zero)),
        pair(f16(f, Down), f16(f, Up)),
        pair(bf16(f, Near), bf16(f, Zero)),
        pair(f16(d, Near), f16(s, Near)),
        pair(f16(s, Zero), f16(s as i32 as u32 as f64, Down)),
        b32(av as f32),
        b32(Half::BF16.value(p) as f32),
        int(integral(av, Near)) ^ int(integral(-av, Zero)) << 8,
        int(integral(av, Down)) ^ (integral(av, Up) as u32) << 12,
        pair(f16(f, Near), f16(g, Near)),
        pair(bf16(f, Near), bf16(g, Near)),
        pair(f16(integral(av, Near), Near), f16(integral(-av, Zero), Near))
            ^ pair(f16(integral(av, Down), Near), f16(integral(av, Up), Near)),
    ]
}

#[test]
fn rounding_agrees_with_known_values() {
    use Mode::*;
    assert_eq!(Half::F16.round(1.0 / 3.0, Near), 0x3555);
    assert_eq!(Half::F16.round(1.0 / 3.0, Up), 0x3556);
    assert_eq!(Half::F16.round(65520.0, Near), 0x7c00);
    assert_eq!(Half::F16.round(65520.0, Zero), 0x7bff);
    assert_eq!(Half::F16.round(-65520.0, Up), 0xfbff);
    assert_eq!(Half::F16.round(2f64.powi(-24), Near), 1);
    assert_eq!(Half::F16.round(2f64.powi(-25), Near), 0, "a tie to even zero");
    assert_eq!(Half::F16.round(3.0 * 2f64.powi(-25), Near), 2);
    assert_eq!(Half::BF16.round(1.0 + 2f64.powi(-8), Near), 0x3f80, "a tie to even");
    assert_eq!(Half::BF16.round(1.0 + 2f64.powi(-8) + 2f64.powi(-40), Near), 0x3f81);
    for bits in 0..=0xffffu16 {
        for h in [Half::F16, Half::BF16] {
            let v = h.value(bits);
            if !v.is_nan() {
                assert_eq!(h.round(v, Near), bits, "{h:?} {bits:#x}");
            }
        }
    }
}

/// `misc_ops`: prmt's modes from the PTX ISA's table, address spaces, loads with cache hints,
/// relu into halves.
fn misc_ops(i: usize, x: &[u32]) -> Vec<u32> {
    let (a, b, c) = (x[0], x[1], x[2]);
    let source = (b as u64) << 32 | a as u64;
    let s = (c & 3) as usize;
    let table =
        |bytes: [usize; 4]| (0..4).fold(0u32, |d, k| d | (((source >> (8 * (bytes[k] % 8))) & 0xff) as u32) << (8 * k));
    let h = 2 * (s & 1);
    let mut o = vec![
        table([s, s + 1, s + 2, s + 3]),
        table([s, s + 7, s + 6, s + 5]),
        table([s; 4]),
        table([s, s.max(1), s.max(2), 3]),
        table([0, s.min(1), s.min(2), s]),
        table([h, h + 1, h, h + 1]),
        0b111,
        a ^ b ^ 0b111,
    ];
    let relu = |v: u16, f: Half| if v & 0x8000 != 0 && !f.value(v).is_nan() { 0 } else { v };
    let (p, q, r) = [a, b, c].map(|w| Half::F16.value(half_of(Half::F16, w))).into();
    let fma = |p: f64| relu(Half::F16.round(p * q + r, Mode::Near), Half::F16);
    o.push(pair(fma(p), fma(-p)));
    let fa = if i % 2 == 1 { f_of(a) } else { -f_of(a) } as f64;
    o.push(relu(Half::F16.round(fa, Mode::Near), Half::F16) as u32);
    let bf = |v: f32| relu(Half::BF16.round(v as f64, Mode::Near), Half::BF16);
    o.push(pair(bf(-f_of(c)), bf(f_of(b))));
    o.push(i as u32);
    o
}

/// `simd_video`: the twelve SIMD video instructions in its four forms (types of d, a and b,
/// then saturate or add), as the PTX ISA's pseudo-code says, and four intrinsics.
fn simd_video(a: u32, b: u32, c: u32) -> Vec<u32> {
    const FORMS: [([bool; 3], &str); 4] =
        [([false; 3], ""), ([true; 3], "sat"), ([false, true, true], "sat"), ([true, false, true], "add")];
    let mut o = Vec::new();
    for width in [8u32, 16] {
        for op in ["vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax"] {
            for (signed, then) in FORMS {
                let element = |v: u32, k: u32, s: bool| {
                    let bits = (v >> (width * k)) & ((1 << width) - 1);
                    if s && bits >= 1 << (width - 1) { bits as i64 - (1 << width) } else { bits as i64 }
                };
                let results: Vec<i64> = (0..32 / width)
                    .map(|k| {
                        let (p, q) = (element(a, k, signed[1]), element(b, k, signed[2]));
                        match op {
                            "vadd" => p + q,
                            "vsub" => p - q,
                            "vavrg" if p + q >= 0 => (p + q + 1) >> 1,
                            "vavrg" => (p + q) >> 1,
                            "vabsdiff" => (p - q).abs(),
                            "vmin" => p.min(q),
                            _ => p.max(q),
                        }
                    })
                    .collect();
                let word = match then {
                    "add" => results.iter().fold(c as i64, |s, r| s + r) as u32,
                    _ => results.iter().enumerate().fold(0u32, |d, (k, &r)| {
                        let (lo, hi) = if signed[0] {
                            (-(1i64 << (width - 1)), (1i64 << (width - 1)) - 1)
                        } else {
                            (0, (1i64 << width) - 1)
                        };
                        let r = if then == "sat" { r.max(lo).min(hi) } else { r };
                        d | ((r as u32) & ((1u32 << width) - 1)) << (width * k as u32)
                    }),
                };
                o.push(word);
            }
        }
    }
    let bytes = |v: u32| v.to_le_bytes().map(u32::from);
    let halves = |v: u32| [v & 0xffff, v >> 16];
    let (ab, bb, ah, bh) = (bytes(a), bytes(b), halves(a), halves(b));
    o.push((0..4).fold(0, |d, k| d | ab[k].abs_diff(bb[k]) << (8 * k)));
    o.push((0..4).map(|k| ab[k].abs_diff(bb[k])).sum());
    o.push(ah[0].abs_diff(bh[0]) | ah[1].abs_diff(bh[1]) << 16);
    o.push(ah[0].abs_diff(bh[0]) + ah[1].abs_diff(bh[1]));
    o
}

/// `stmatrix_tiles`: per warp, four tiles of 32 rows of 8 words, each filled with its index
/// (high half 0xabcd), the matrices' rows written over the first 16 bytes of rows as the PTX
/// ISA places a lane's pair (row `lane / 4`, columns `2 (lane % 4)` and one more; transposed:
/// those columns' rows); then the first tile's x4 read back by `ldmatrix`.
fn stmatrix_tiles(x: &[u32]) -> Vec<u32> {
    let mut o = Vec::new();
    for w in 0..2 {
        let r = |lane: usize, i: usize| x[w * 128 + 4 * lane + i];
        let mut tiles: Vec<u32> = (0..4 * 256).map(|k| 0xabcd_0000 | k as u32).collect();
        // (tile, registers, transposed)
        let stores: [(usize, &[usize], bool); 4] =
            [(0, &[0, 1, 2, 3], false), (1, &[0, 1, 2, 3], true), (2, &[1, 3], false), (3, &[2], true)];
        for (tile, regs, trans) in stores {
            for (m, &reg) in regs.iter().enumerate() {
                for lane in 0..32 {
                    let (g, c) = (lane / 4, 2 * (lane % 4));
                    for (k, half) in [r(lane, reg) & 0xffff, r(lane, reg) >> 16].into_iter().enumerate() {
                        let (row, col) = if trans { (c + k, g) } else { (g, c + k) };
                        // Row `row` of matrix `m` is row 8 m + row of the tile, 8 words long.
                        let word = &mut tiles[tile * 256 + (8 * m + row) * 8 + col / 2];
                        let shift = 16 * (col % 2);
                        *word = (*word & !(0xffff << shift)) | half << shift;
                    }
                }
            }
        }
        let back: Vec<u32> =
            (0..32).flat_map(|lane| (0..4).map(move |i| (lane, i))).map(|(lane, i)| r(lane, i)).collect();
        o.extend(tiles);
        o.extend(back);
    }
    o
}

/// `bmsk` as the PTX ISA's pseudo-code says.
fn bmsk(clamp: bool, a: u32, b: u32) -> u32 {
    let (a1, b1) = (a & 0x1f, b & 0x1f);
    let mut mask0 = !0u32 << a1;
    let sum = a1 + b1;
    let mut mask1 = if sum >= 32 { 0 } else { !0u32 << sum };
    let (mut position_overflow, mut width_overflow) = (false, false);
    if clamp {
        if a >= 32 {
            position_overflow = true;
            mask0 = 0;
        }
        width_overflow = b >= 32;
    }
    if sum >= 32 || position_overflow || width_overflow {
        mask1 = 0;
    } else if b1 == 0 {
        mask1 = !0;
    }
    mask0 & !mask1
}

/// `szext` as the PTX ISA's pseudo-code says.
fn szext(clamp: bool, signed: bool, a: u32, b: u32) -> u32 {
    let b1 = b & 0x1f;
    let too_large = b >= 32 && clamp;
    let mask = if too_large { 0 } else { !0u32 << b1 };
    let sign_pos = b1.wrapping_sub(1) & 0x1f;
    let sign_bit = !(b1 == 0 || too_large || !signed) && (a >> sign_pos) & 1 != 0;
    (a & !mask) | if sign_bit { mask } else { 0 }
}

/// The finite values of an 8-bit float by code (e4m3: 4 exponent bits, bias 7; e5m2: 5, bias 15).
fn fp8_values(e4m3: bool) -> Vec<(u32, f64)> {
    let (frac, bias, max) = if e4m3 { (3, 7, 0x7e) } else { (2, 15, 0x7b) };
    (0..=max)
        .map(|c: u32| {
            let (e, m) = ((c >> frac) as i32, (c & ((1 << frac) - 1)) as f64);
            let v = match e {
                0 => m * 2f64.powi(1 - bias - frac),
                e => (m + (1 << frac) as f64) * 2f64.powi(e - bias - frac),
            };
            (c, v)
        })
        .collect()
}

/// `v` into an 8-bit float by search: the nearest code (ties to the even one), saturated at the
/// largest, a NaN 0x7f.
fn to_fp8(v: f64, e4m3: bool) -> u32 {
    if v.is_nan() {
        return 0x7f;
    }
    let codes = fp8_values(e4m3);
    let a = v.abs().min(codes.last().map_or(0.0, |&(_, max)| max));
    let best = codes
        .iter()
        .min_by(|(c, x), (d, y)| (x - a).abs().total_cmp(&(y - a).abs()).then((c & 1).cmp(&(d & 1))))
        .map_or(0, |&(c, _)| c);
    if v.is_sign_negative() { 0x80 | best } else { best }
}

/// An 8-bit float's code as f16 bits.
fn fp8_to_f16(c: u32, e4m3: bool) -> u16 {
    match fp8_values(e4m3).get((c & 0x7f) as usize) {
        Some(&(_, v)) => Half::F16.round(if c & 0x80 != 0 { -v } else { v }, Mode::Near),
        // e5m2's infinities are f16's; a NaN of either is the canonical one.
        None if !e4m3 && c & 3 == 0 => (c << 8) as u16,
        None => Half::NAN,
    }
}

fn fp8_convert(i: usize, w: u32, v: u32) -> Vec<u32> {
    let mut f = [f_of(w), f_of(v)].map(|x| x as f64);
    if i % 16 == 3 {
        f[0] = f64::NAN;
    }
    if i % 16 == 4 {
        f[1] = f64::NEG_INFINITY;
    }
    let codes = |e4m3: bool| to_fp8(f[0], e4m3) | to_fp8(f[1], e4m3) << 8;
    let (a, b) = (codes(true), codes(false));
    let widen = |p: u32, e4m3: bool| pair(fp8_to_f16(p & 0xff, e4m3), fp8_to_f16(p >> 8, e4m3));
    let h = [w, v].map(|x| Half::F16.value(half_of(Half::F16, x)));
    vec![a | b << 16, widen(a, true), widen(b, false), to_fp8(h[0], true) | to_fp8(h[1], true) << 8]
}

/// CUDA's double functions within a few ulp of the host's (CUDA's own bounds are 1 to 2 ulp);
/// what the GPU computes, bit for bit, the shim's `one_h200` test compares.
fn double_math(x: &[u32], got: &[u32]) {
    let ulps = |g: f64, want: f64| (g.to_bits() as i64 - want.to_bits() as i64).abs();
    for i in 0..got.len() / 12 {
        let v = d_of(x[2 * i], x[2 * i + 1]);
        let o: Vec<f64> = (0..6)
            .map(|k| f64::from_bits((got[12 * i + 2 * k + 1] as u64) << 32 | got[12 * i + 2 * k] as u64))
            .collect();
        let want = [
            v.sin(),
            (v * 1e12).cos(),
            v.abs().powf(0.37),
            (v * 2f64.powi(-27)).exp(),
            v.abs().ln(),
            (v * 2f64.powi(-30)).tanh(),
        ];
        for (k, (&g, &w)) in o.iter().zip(&want).enumerate() {
            assert!(ulps(g, w) <= 3, "double_math[{i}][{k}] of {v:e}: {g:e} for {w:e}");
        }
    }
}

/// `wmma_tiles`: each warp's `D = A B + C`, as corpus.cu sets its tiles up and stores D.
fn wmma_tiles(x: &[u32]) -> Vec<u32> {
    let small = |w: u32| ((w & 15) as i32 - 8) as f64 * 0.5;
    let mut out = vec![0u32; 2048];
    for (tile, dst) in out.chunks_mut(256).enumerate() {
        let (w, src) = (tile % 4, &x[tile * 2048..]);
        let ha = |i: usize| small(src[i]);
        let hb = |i: usize| small(src[1024 + i]);
        let fc = |i: usize| small(src[800 + i]) * 4.0;
        // Row i of A times column j of B (k = 16 for every shape).
        type Matrix<'a> = &'a dyn Fn(usize, usize) -> f64;
        let dot = |a: Matrix<'_>, b: Matrix<'_>, i: usize, j: usize| (0..16).map(|k| a(i, k) * b(k, j)).sum::<f64>();
        match w {
            0 => {
                let (a, b) = (|i, k| ha(i * 16 + k), |k, j| hb(j * 16 + k));
                for (i, j) in (0..16).flat_map(|i| (0..16).map(move |j| (i, j))) {
                    dst[j * 16 + i] = ((dot(&a, &b, i, j) + 2.0 * fc(i * 16 + j)) as f32).to_bits();
                }
            }
            1 => {
                let (a, b) = (|i, k| ha(k * 24 + i), |k, j| hb(k * 24 + j));
                for (i, j) in (0..16).flat_map(|i| (0..16).map(move |j| (i, j))) {
                    let h = Half::F16.round(dot(&a, &b, i, j) + small(src[1900 + i * 16 + j]), Mode::Near) as u32;
                    dst[(i * 16 + j) / 2] |= h << (16 * ((i * 16 + j) % 2));
                }
            }
            2 => {
                let (a, b) = (|i, k| ha(i * 24 + k), |k, j| hb(k * 8 + j));
                for (i, j) in (0..32).flat_map(|i| (0..8).map(move |j| (i, j))) {
                    dst[i * 8 + j] = ((2.0 * dot(&a, &b, i, j)) as f32).to_bits();
                }
            }
            _ => {
                let (a, b) = (|i, k| small(src[1800 + i * 16 + k]), |k, j| small(src[1500 + j * 16 + k]));
                for (i, j) in (0..8).flat_map(|i| (0..32).map(move |j| (i, j))) {
                    dst[i * 32 + j] = ((dot(&a, &b, i, j) + fc(j * 8 + i)) as f32).to_bits();
                }
            }
        }
    }
    out
}

/// `mma_sync_tiles`: each warp's m16n8k16 product (f16 in warp 0, bf16 in warp 1) and warp 0's
/// m16n8k8 one into f16, as corpus.cu sets them up and stores D.
fn mma_sync_tiles(x: &[u32]) -> Vec<u32> {
    let small = |w: u32| ((w & 15) as i32 - 8) as f64 * 0.5;
    let mut out = vec![0u32; 1024];
    for (tile, dst) in out.chunks_mut(256).enumerate() {
        let (w, src) = (tile % 2, &x[tile * 1024..]);
        let a = |i: usize, k: usize| small(src[i * 16 + k]);
        // Warp 0 keeps B transposed (n by k), warp 1 by rows (k by n).
        let b = |k: usize, n: usize| if w == 0 { small(src[256 + n * 16 + k]) } else { small(src[256 + k * 8 + n]) };
        for (i, j) in (0..16).flat_map(|i| (0..8).map(move |j| (i, j))) {
            let d = (0..16).map(|k| a(i, k) * b(k, j)).sum::<f64>() + 4.0 * small(src[640 + i * 8 + j]);
            dst[i * 8 + j] = (d as f32).to_bits();
            if w == 0 {
                let d8 = (0..8).map(|k| a(i, k) * b(k, j)).sum::<f64>() + small(src[512 + i * 8 + j]);
                dst[128 + (i * 8 + j) / 2] |= (Half::F16.round(d8, Mode::Near) as u32) << (16 * (j % 2));
            }
        }
    }
    out
}

/// `mma_sync_int`: warp 0's s8 m16n8k32 product, wrapping, and warp 1's u8-by-s8 m16n8k16
/// one, saturated, with C near s32's limits.
fn mma_sync_int(x: &[u32]) -> Vec<u32> {
    let mut out = vec![0u32; 512];
    for (tile, dst) in out.chunks_mut(128).enumerate() {
        let (w, src) = (tile % 2, &x[tile * 1024..]);
        let byte = |i: usize| (src[i / 4] >> (8 * (i % 4))) as u8;
        let k = if w == 0 { 32 } else { 16 };
        for (i, j) in (0..16).flat_map(|i| (0..8).map(move |j| (i, j))) {
            let word = src[512 + i * 8 + j];
            let c = match w {
                0 => word as i32 as i64,
                _ => ((word & 0x800f_ffff) ^ if word >> 31 == 1 { 0 } else { 0x7ff0_0000 }) as i32 as i64,
            };
            let a = |kk: usize| if w == 0 { byte(i * k + kk) as i8 as i64 } else { byte(i * k + kk) as i64 };
            let sum = (0..k).fold(c, |s, kk| s + a(kk) * byte(1024 + j * k + kk) as i8 as i64);
            dst[i * 8 + j] =
                if w == 0 { sum as i32 } else { sum.clamp(i32::MIN as i64, i32::MAX as i64) as i32 } as u32;
        }
    }
    out
}

/// `cvt.rna.tf32.f32`: to 10 fraction bits, to nearest, ties away from zero; a NaN cut to them.
fn tf32(bits: u32) -> u32 {
    match f32::from_bits(bits).is_nan() {
        true => bits & !0x1fff,
        false => (bits & 0x8000_0000) | (((bits & 0x7fff_ffff) + 0x1000) & !0x1fff),
    }
}

/// `mma_sync_tf32`: a tf32 m16n8k8 and m16n8k4 product of each block, and its words through
/// `cvt.rna.tf32.f32`.
fn mma_sync_tf32(x: &[u32]) -> Vec<u32> {
    let small = |w: u32| ((w & 15) as i32 - 8) as f64 * 0.5;
    let mut out = vec![0u32; 1024];
    for (block, dst) in out.chunks_mut(512).enumerate() {
        let src = &x[block * 1024..];
        for (at, &w) in src[512..768].iter().enumerate() {
            let bits = match at % 8 {
                0 => 0x7f80_0000 | (w & 0x8000_0000),
                1 => 0x7fc0_0000 | w,
                2 => w & 0x807f_ffff,
                _ => w,
            };
            dst[256 + at] = tf32(bits);
        }
        let (a, b) = (|i: usize, k: usize| small(src[i * 8 + k]), |k: usize, n: usize| small(src[128 + k * 8 + n]));
        for (i, j) in (0..16).flat_map(|i| (0..8).map(move |j| (i, j))) {
            let d = (0..8).map(|k| a(i, k) * b(k, j)).sum::<f64>() + 4.0 * small(src[192 + i * 8 + j]);
            dst[i * 8 + j] = (d as f32).to_bits();
            dst[128 + i * 8 + j] = ((0..4).map(|k| a(i, k) * b(k, j)).sum::<f64>() as f32).to_bits();
        }
    }
    out
}
