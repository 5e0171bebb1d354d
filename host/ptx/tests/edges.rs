//! Results at the edges of their types as an H200 gives them, where the PTX ISA leaves them open
//! or a GPU departs from IEEE's defaults: NaNs through f64 arithmetic and conversions, a NaN to an
//! integer, remainders by zero, flushing a result that is tiny before rounding, zeros counted as
//! normal, 64-bit bit fields, and what ptxas refuses. Each value here was read on an H200 (the
//! shim's `one_h200` test runs the random programs it came from:
//! `host/shim/tests/clients/ptx_random.py`).

mod common;

use common::{kernel, words};
use peerpool_ptx::{LoadError, load};

/// What `body` leaves in `%rd1` (64 bits) and `%r1`, run by one thread.
fn run(body: &str) -> (u64, u32) {
    let text = format!("{body}\nst.global.u64 [%rd15], %rd1;\nst.global.u32 [%rd15+8], %r1;\nret;");
    let w = words(&kernel(&text), 3).expect("runs");
    (w[0] as u64 | (w[1] as u64) << 32, w[2])
}

/// `op` of the f64 operands, its result's bits.
fn f64_op(op: &str, operands: &[u64]) -> u64 {
    let movs: String =
        operands.iter().enumerate().map(|(i, v)| format!("mov.b64 %fd{}, 0d{v:016X};\n", i + 1)).collect();
    let names: Vec<String> = (1..=operands.len()).map(|i| format!("%fd{i}")).collect();
    run(&format!("{movs}{op} %fd0, {};\nmov.b64 %rd1, %fd0;", names.join(", "))).0
}

/// `op` of the f32 operands, its result's bits.
fn f32_op(op: &str, operands: &[u32]) -> u32 {
    let movs: String = operands.iter().enumerate().map(|(i, v)| format!("mov.b32 %f{}, 0f{v:08X};\n", i + 1)).collect();
    let names: Vec<String> = (1..=operands.len()).map(|i| format!("%f{i}")).collect();
    run(&format!("{movs}{op} %f0, {};\nmov.b32 %r1, %f0;", names.join(", "))).1
}

const SNAN64: u64 = 0x7ff0_0000_0000_0001;
const ONE64: u64 = 0x3ff0_0000_0000_0000;
const INF64: u64 = 0x7ff0_0000_0000_0000;

#[test]
fn f64_arithmetic_carries_its_first_nan_operand_made_quiet_and_makes_a_negative_default_nan() {
    assert_eq!(f64_op("add.rn.f64", &[SNAN64, ONE64]), 0x7ff8_0000_0000_0001);
    assert_eq!(f64_op("sub.rz.f64", &[ONE64, 0xfff8_0000_0000_0001]), 0xfff8_0000_0000_0001);
    assert_eq!(f64_op("fma.rm.f64", &[ONE64, 0x7ff8_0000_0000_0002, ONE64]), 0x7ff8_0000_0000_0002);
    assert_eq!(f64_op("rcp.rp.f64", &[0xfff8_0000_0000_0001]), 0xfff8_0000_0000_0001);
    assert_eq!(f64_op("mul.rn.f64", &[0, INF64]), 0xfff8_0000_0000_0000);
    assert_eq!(f64_op("sqrt.rn.f64", &[0xbff0_0000_0000_0000]), 0xfff8_0000_0000_0000);
    assert_eq!(f64_op("add.rp.f64", &[0xfff0_0000_0000_0000, INF64]), 0xfff8_0000_0000_0000);
    assert_eq!(f64_op("max.f64", &[ONE64, SNAN64]), ONE64, "min and max take the number");
    // f32 results stay the canonical NaN.
    assert_eq!(f32_op("add.rn.f32", &[0x7f80_0001, 0x3f80_0000]), 0x7fff_ffff);
}

#[test]
fn abs_and_neg_of_a_nan_keep_an_f64_made_quiet_and_make_an_f32_canonical() {
    assert_eq!(f64_op("abs.f64", &[0xfff8_0000_0000_0001]), 0xfff8_0000_0000_0001);
    assert_eq!(f64_op("neg.f64", &[SNAN64]), 0x7ff8_0000_0000_0001);
    assert_eq!(f32_op("abs.f32", &[0x7fc0_0000]), 0x7fff_ffff);
    assert_eq!(f32_op("neg.f32", &[0x7f80_0001]), 0x7fff_ffff);
    assert_eq!(f32_op("neg.f32", &[0x3f80_0000]), 0xbf80_0000);
}

#[test]
fn a_nan_keeps_its_sign_and_payload_across_widths() {
    let widen = |ftz: &str, v: u32| {
        run(&format!("mov.b32 %f1, 0f{v:08X};\ncvt{ftz}.f64.f32 %fd0, %f1;\nmov.b64 %rd1, %fd0;")).0
    };
    assert_eq!(widen("", 0x7f80_0001), 0x7ff8_0000_2000_0000);
    assert_eq!(widen("", 0xffc0_0001), 0xfff8_0000_2000_0000);
    assert_eq!(widen(".ftz", 0x7fc0_0000), 0x7fff_ffff_e000_0000, "under .ftz the canonical NaN first");
    let narrow = |v: u64| run(&format!("mov.b64 %fd1, 0d{v:016X};\ncvt.rn.f32.f64 %f0, %fd1;\nmov.b32 %r1, %f0;")).1;
    assert_eq!(narrow(0xfff8_0000_0000_0001), 0xffc0_0000);
    assert_eq!(narrow(0x7ff8_0000_0000_0000), 0x7fc0_0000);
}

#[test]
fn a_nan_to_an_integer_is_zero_from_f32_to_32_bits_and_the_top_bit_otherwise() {
    let nan = "mov.b32 %f1, 0f7FC00000;\nmov.b64 %fd1, 0dFFF8000000000001;\n";
    assert_eq!(run(&format!("{nan}cvt.rzi.s32.f32 %r1, %f1;")).1, 0);
    assert_eq!(run(&format!("{nan}cvt.rni.u32.f32 %r1, %f1;")).1, 0);
    assert_eq!(run(&format!("{nan}cvt.rzi.s32.f64 %r1, %fd1;")).1, 0x8000_0000);
    assert_eq!(run(&format!("{nan}cvt.rmi.u32.f64 %r1, %fd1;")).1, 0x8000_0000);
    assert_eq!(run(&format!("{nan}cvt.rpi.u64.f32 %rd1, %f1;")).0, 1 << 63);
    assert_eq!(run(&format!("{nan}cvt.rzi.s64.f64 %rd1, %fd1;")).0, 1 << 63);
}

#[test]
fn a_remainder_by_zero_is_all_ones_as_a_quotient_is() {
    for ty in ["u32", "s32"] {
        assert_eq!(run(&format!("mov.u32 %r2, 13;\nmov.u32 %r3, 0;\nrem.{ty} %r1, %r2, %r3;")).1, u32::MAX);
        assert_eq!(run(&format!("mov.u32 %r2, 13;\nmov.u32 %r3, 0;\ndiv.{ty} %r1, %r2, %r3;")).1, u32::MAX);
    }
    assert_eq!(run("mov.u64 %rd2, 13;\nmov.u64 %rd3, 0;\nrem.s64 %rd1, %rd2, %rd3;").0, u64::MAX);
}

#[test]
fn under_ftz_a_result_tiny_before_rounding_is_flushed_though_it_rounds_to_the_smallest_normal() {
    // 0.99999994 * 2^-126 lies just below 2^-126: rounding up or to nearest reaches 2^-126.
    let (almost_one, smallest) = (0x3f7f_ffff, 0x0080_0000);
    assert_eq!(f32_op("mul.rp.ftz.f32", &[almost_one, smallest]), 0);
    assert_eq!(f32_op("mul.rp.f32", &[almost_one, smallest]), smallest, "kept without .ftz");
    assert_eq!(f32_op("fma.rn.ftz.sat.f32", &[smallest, almost_one, 0x8000_0000]), 0);
    assert_eq!(f32_op("mul.rp.ftz.f32", &[0x3f80_0000, smallest]), smallest, "exactly the smallest normal stays");
}

#[test]
fn zeros_count_as_normal() {
    let test = |class: &str, ty: &str, v: &str| {
        run(&format!(
            "mov.b{w} %{r}1, {v};\ntestp.{class}.{ty} %p1, %{r}1;\nselp.u32 %r1, 1, 0, %p1;",
            w = &ty[1..],
            r = if ty == "f64" { "fd" } else { "f" }
        ))
        .1
    };
    assert_eq!(test("normal", "f32", "0f80000000"), 1);
    assert_eq!(test("normal", "f64", "0d0000000000000000"), 1);
    assert_eq!(test("normal", "f32", "0f00000001"), 0, "a subnormal is not");
    assert_eq!(test("subnormal", "f32", "0f00000000"), 0);
}

#[test]
fn a_64_bit_field_reads_all_32_bits_of_its_position_and_length() {
    // 0x100 is past 64 for a 64-bit field; a 32-bit field reads it as 0.
    assert_eq!(run("mov.u64 %rd2, 0x41;\nmov.u32 %r2, 0x100;\nmov.u32 %r3, 3;\nbfe.u64 %rd1, %rd2, %r2, %r3;").0, 0);
    assert_eq!(run("mov.u32 %r4, 0x41;\nmov.u32 %r2, 0x100;\nmov.u32 %r3, 3;\nbfe.u32 %r1, %r4, %r2, %r3;").1, 1);
    let bfi = "mov.u64 %rd2, 0x3f;\nmov.u64 %rd3, 0x8000000080000000;\nmov.u32 %r2, 0;\nmov.u32 %r3, 0x80000000;\n";
    assert_eq!(run(&format!("{bfi}bfi.b64 %rd1, %rd2, %rd3, %r2, %r3;")).0, 0x3f, "a length past 64: all of a");
}

#[test]
fn slct_under_ftz_takes_a_negative_subnormal_as_zero() {
    let slct = |ftz: &str| {
        run(&format!(
            "mov.b32 %f1, 0f80000001;\nmov.u32 %r2, 7;\nmov.u32 %r3, 9;\nslct{ftz}.u32.f32 %r1, %r2, %r3, %f1;"
        ))
        .1
    };
    assert_eq!(slct(".ftz"), 7);
    assert_eq!(slct(""), 9);
}

#[test]
fn the_min_of_a_register_and_itself_is_the_register() {
    // As ptxas compiles it: a signalling NaN comes back as it is.
    assert_eq!(run("mov.b32 %f1, 0f7F800001;\nmin.f32 %f0, %f1, %f1;\nmov.b32 %r1, %f0;").1, 0x7f80_0001);
    assert_eq!(
        run("mov.b32 %f1, 0f7F800001;\nmov.b32 %f2, 0f7F800001;\nmin.f32 %f0, %f1, %f2;\nmov.b32 %r1, %f0;").1,
        0x7fff_ffff
    );
}

#[test]
fn sat_on_an_integer_conversion_that_cannot_overflow_is_refused_as_ptxas_refuses_it() {
    let module = |cvt: &str| {
        load(&format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n.reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n{cvt};\nret;\n}}\n"
        ))
    };
    for refused in ["cvt.sat.s64.s32 %rd1, %r1", "cvt.sat.u32.u16 %r1, %r1", "cvt.sat.s32.s32 %r1, %r1"] {
        assert!(matches!(module(refused), Err(LoadError::Syntax { line: 8, .. })), "{refused}");
    }
    for kept in ["cvt.sat.u64.s32 %rd1, %r1", "cvt.sat.s32.u32 %r1, %r1", "cvt.sat.u32.s8 %r1, %r1"] {
        assert!(module(kept).is_ok(), "{kept}");
    }
}

/// `body` run by one thread with `%hs1` (a 16-bit register) holding `half`; `%r1`, `%rd1` as
/// [`run`] gives them.
fn with_half(half: u16, body: &str) -> (u64, u32) {
    run(&format!(".reg .b16 %hs<4>;\nmov.b16 %hs1, 0x{half:04X};\n{body}"))
}

#[test]
fn halves_keep_or_make_their_nans_as_an_h200_does() {
    let store = "cvt.u32.u16 %r1, %hs0;";
    // `abs` and `neg` of a NaN make the canonical NaN; a number's sign flips.
    assert_eq!(with_half(0x7e00, &format!("neg.f16 %hs0, %hs1;\n{store}")).1, 0x7fff);
    assert_eq!(with_half(0xffc0, &format!("abs.bf16 %hs0, %hs1;\n{store}")).1, 0x7fff);
    assert_eq!(with_half(0x3c00, &format!("neg.f16 %hs0, %hs1;\n{store}")).1, 0xbc00);
    // Widening to f64 keeps the payload, made quiet; bf16 to f32 is its bits; f16 to f32 the
    // canonical NaN.
    assert_eq!(with_half(0x7c01, "cvt.f64.f16 %fd0, %hs1;\nmov.b64 %rd1, %fd0;").0, 0x7ff8_0400_0000_0000);
    assert_eq!(with_half(0xff84, "cvt.f64.bf16 %fd0, %hs1;\nmov.b64 %rd1, %fd0;").0, 0xfff8_8000_0000_0000);
    assert_eq!(with_half(0x7f81, "cvt.f32.bf16 %f0, %hs1;\nmov.b32 %r1, %f0;").1, 0x7f81_0000);
    assert_eq!(with_half(0x7c01, "cvt.f32.f16 %f0, %hs1;\nmov.b32 %r1, %f0;").1, 0x7fff_ffff);
    // Narrowing from f64 keeps the top of the payload; from f32, the canonical NaN.
    let narrow = |to: &str, v: u64| {
        run(&format!(
            ".reg .b16 %hs<2>;\nmov.b64 %fd1, 0d{v:016X};\ncvt.rn.{to}.f64 %hs0, %fd1;\ncvt.u32.u16 %r1, %hs0;"
        ))
        .1
    };
    assert_eq!(narrow("f16", 0x7ff8_0400_0000_0000), 0x7e01);
    assert_eq!(narrow("bf16", 0xfff8_0000_0000_0001), 0xffc0);
    // To integers: 0 in 32 bits, the top bit in 64.
    assert_eq!(with_half(0x7e00, "cvt.rzi.s32.f16 %r1, %hs1;").1, 0);
    assert_eq!(with_half(0x7fc0, "cvt.rmi.u64.bf16 %rd1, %hs1;").0, 1 << 63);
    // ptxas folds an f16's max with itself; a bf16's it computes.
    assert_eq!(with_half(0x7c01, &format!("max.f16 %hs0, %hs1, %hs1;\n{store}")).1, 0x7c01);
    assert_eq!(with_half(0x7f81, &format!("max.bf16 %hs0, %hs1, %hs1;\n{store}")).1, 0x7fff);
}
