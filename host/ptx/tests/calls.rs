//! Calls of `.func`s as nvcc emits them: arguments and results through `.param`s, frames of
//! registers and local memory per call, recursion, and the limits that stop a runaway one.

mod common;

use common::{kernel, words};
use peerpool_ptx::{LoadError, TrapKind, load};

/// `fib(n)` by recursion, `mix(a, b)` with two arguments, `put(p, v)` with no result and a
/// pointer, `pair(x)` with two results and a local array: nvcc's calling sequence.
const FUNCS: &str = ".version 8.0\n.target sm_90\n.address_size 64\n
.func (.param .b32 r) fib(.param .b32 n);
.func (.param .b32 r) mix(.param .b32 a, .param .b32 b)
{
.reg .b32 %r<6>;
ld.param.u32 %r1, [a];
ld.param.u32 %r2, [b];
shr.u32 %r3, %r1, 3;
xor.b32 %r4, %r3, %r2;
mad.lo.s32 %r5, %r1, 31, %r4;
st.param.b32 [r+0], %r5;
ret;
}
.func put(.param .b64 p, .param .b32 v)
{
.reg .b32 %r<2>;
.reg .b64 %rd<2>;
ld.param.u64 %rd1, [p];
ld.param.u32 %r1, [v];
st.global.u32 [%rd1], %r1;
ret;
}
.func (.param .b32 lo, .param .b32 hi) pair(.param .b32 x)
{
.local .align 4 .b8 depot[16];
.reg .b32 %r<4>;
.reg .b64 %rd<3>;
ld.param.u32 %r1, [x];
mov.u64 %rd1, depot;
st.local.u32 [%rd1+8], %r1;
add.u32 %r2, %r1, 1;
st.local.u32 [%rd1+12], %r2;
ld.local.u32 %r3, [%rd1+8];
st.param.b32 [lo], %r3;
ld.local.u32 %r3, [%rd1+12];
st.param.b32 [hi], %r3;
ret;
}
.func (.param .b32 r) fib(.param .b32 n)
{
.reg .pred %p<2>;
.reg .b32 %r<9>;
ld.param.u32 %r8, [n];
setp.lt.u32 %p1, %r8, 2;
@%p1 bra DONE;
add.s32 %r4, %r8, -1;
{
.reg .b32 temp_param_reg;
.param .b32 param0;
st.param.b32 [param0+0], %r4;
.param .b32 retval0;
call.uni (retval0),
fib,
(
param0
);
ld.param.b32 %r5, [retval0+0];
}
add.s32 %r6, %r8, -2;
{
.param .b32 param0;
st.param.b32 [param0+0], %r6;
.param .b32 retval0;
call.uni (retval0), fib, (param0);
ld.param.b32 %r7, [retval0+0];
}
add.s32 %r8, %r7, %r5;
DONE:
st.param.b32 [r+0], %r8;
ret;
}
.visible .entry k(.param .u64 out, .param .u32 depth)
{
.reg .b32 %r<12>;
.reg .b64 %rd<4>;
mov.u32 %r1, %tid.x;
ld.param.u64 %rd1, [out];
mul.wide.u32 %rd2, %r1, 8;
add.s64 %rd3, %rd1, %rd2;
ld.param.u32 %r9, [depth];
add.u32 %r2, %r1, %r9;
{
.param .b32 param0;
st.param.b32 [param0+0], %r2;
.param .b32 retval0;
call.uni (retval0), fib, (param0);
ld.param.b32 %r3, [retval0+0];
}
{
.param .b32 param0;
st.param.b32 [param0+0], %r3;
.param .b32 param1;
st.param.b32 [param1+0], %r1;
.param .b32 retval0;
call.uni (retval0), mix, (param0, param1);
ld.param.b32 %r4, [retval0+0];
}
{
.param .b32 param0;
st.param.b32 [param0+0], %r1;
.param .b32 lo;
.param .b32 hi;
call.uni (lo, hi), pair, (param0);
ld.param.b32 %r5, [lo];
ld.param.b32 %r6, [hi];
}
add.u32 %r4, %r4, %r5;
add.u32 %r4, %r4, %r6;
{
.param .b64 param0;
st.param.b64 [param0+0], %rd3;
.param .b32 param1;
st.param.b32 [param1+0], %r4;
call.uni put, (param0, param1);
}
st.global.u32 [%rd3+4], %r3;
ret;
}
";

fn fib(n: u32) -> u32 {
    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
}

fn launch(
    module: &peerpool_ptx::Module,
    threads: u32,
    depth: u32,
    budget: u64,
) -> Result<Vec<u32>, peerpool_ptx::Trap> {
    let mut ram = common::Ram::default();
    let out = ram.add(0x1000, vec![0; threads as usize * 8]);
    let mut params = out.to_le_bytes().to_vec();
    params.extend(depth.to_le_bytes());
    let launch = peerpool_ptx::Launch {
        shape: peerpool_ptx::Shape { grid: [1, 1, 1], block: [threads, 1, 1], shared: 0, params: &params },
        variables: &[],
        budget,
        grid_sync: None,
        cluster: None,
        resident_blocks: 0,
    };
    peerpool_ptx::run(module.kernel("k").unwrap(), &launch, &mut ram)?;
    Ok(ram.words(out))
}

#[test]
fn calls_pass_arguments_and_results_and_recurse_each_thread_its_own_way() {
    let module = load(FUNCS).unwrap();
    let got = launch(&module, 20, 0, 1 << 26).unwrap();
    for t in 0..20u32 {
        let f = fib(t);
        let mix = f.wrapping_mul(31).wrapping_add((f >> 3) ^ t);
        assert_eq!((got[2 * t as usize], got[2 * t as usize + 1]), (mix + t + t + 1, f), "thread {t}");
    }
}

#[test]
fn a_function_that_runs_off_its_end_returns_and_a_kernel_that_does_exits() {
    // Every `ret` gone: each function ends at its closing brace, the kernel too, and the code
    // of the functions it calls lies after its own.
    let module = load(&FUNCS.replace("ret;\n", "")).unwrap();
    let want = launch(&load(FUNCS).unwrap(), 20, 0, 1 << 26).unwrap();
    assert_eq!(launch(&module, 20, 0, 1 << 26).unwrap(), want);
}

#[test]
fn runaway_recursion_runs_out_of_budget_or_stack() {
    let module = load(FUNCS).unwrap();
    let trap = launch(&module, 1, 40, 100_000).unwrap_err();
    assert_eq!(trap.kind, TrapKind::TooLong);
    // A function that calls itself before anything else overflows the stack first.
    let text = FUNCS.replace(
        "ld.param.u32 %r8, [n];\nsetp.lt.u32 %p1, %r8, 2;",
        "ld.param.u32 %r8, [n];\nsetp.lt.u32 %p1, %r8, 0;",
    );
    let trap = launch(&load(&text).unwrap(), 1, 3, 1 << 30).unwrap_err();
    assert_eq!(trap.kind, TrapKind::StackOverflow);
}

#[test]
fn ret_in_a_kernel_exits_and_a_call_of_an_undeclared_function_is_a_syntax_error() {
    assert_eq!(words(&kernel("ret;\nst.global.u32 [%rd0], 7;"), 2).unwrap(), [0, 0]);
    let text =
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\ncall.uni nowhere, ();\nret;\n}\n";
    assert!(matches!(load(text), Err(LoadError::Syntax { line: 6, .. })));
}

/// Function pointers as nvcc writes them: `inc` and `dbl` in a table (a vtable is one), their
/// addresses taken by `mov`, and calls through a register with a `.callprototype`.
const POINTERS: &str = ".version 8.0\n.target sm_90\n.address_size 64\n
.func (.param .b32 r) inc(.param .b32 x)
{
.reg .b32 %r<3>;
ld.param.u32 %r1, [x];
add.u32 %r2, %r1, 1;
st.param.b32 [r], %r2;
ret;
}
.func (.param .b32 r) dbl(.param .b32 x)
{
.reg .b32 %r<3>;
ld.param.u32 %r1, [x];
shl.b32 %r2, %r1, 1;
st.param.b32 [r], %r2;
ret;
}
.func unused(.param .b64 p)
{
ret;
}
.global .align 8 .u64 table[3] = {inc, dbl, 0};
.visible .entry k(.param .u64 out, .param .u32 skew)
{
.reg .pred %p<2>;
.reg .b32 %r<8>;
.reg .b64 %rd<8>;
mov.u32 %r1, %tid.x;
ld.param.u64 %rd1, [out];
mul.wide.u32 %rd2, %r1, 8;
add.s64 %rd3, %rd1, %rd2;
and.b32 %r2, %r1, 1;
setp.eq.u32 %p1, %r2, 0;
mov.u64 %rd4, inc;
mov.u64 %rd5, dbl;
selp.b64 %rd6, %rd4, %rd5, %p1;
ld.param.u32 %r7, [skew];
cvt.u64.u32 %rd7, %r7;
add.s64 %rd6, %rd6, %rd7;
{
.param .b32 param0;
st.param.b32 [param0+0], %r1;
.param .b32 retval0;
prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
call (retval0), %rd6, (param0), prototype_0;
ld.param.b32 %r3, [retval0+0];
}
st.global.u32 [%rd3], %r3;
st.global.u32 [%rd3+4], %r2;
ret;
}
";

#[test]
fn calls_through_function_pointers_reach_the_function_each_lane_names() {
    let module = load(POINTERS).unwrap();
    // Odd and even lanes of one warp call different functions, and come back together.
    let got = launch(&module, 40, 0, 1 << 20).unwrap();
    for t in 0..40u32 {
        let want = if t % 2 == 0 { t + 1 } else { 2 * t };
        assert_eq!((got[2 * t as usize], got[2 * t as usize + 1]), (want, t % 2), "thread {t}");
    }
    // The table's words are the addresses `mov` takes: a vtable calls what a pointer does.
    let table = &module.variables.iter().find(|v| v.name == "table").unwrap().init;
    let words: Vec<u64> = table.chunks(8).map(|w| u64::from_le_bytes(w.try_into().unwrap())).collect();
    assert_eq!(words.len(), 3);
    assert_eq!((words[1].wrapping_sub(words[0]), words[2]), (16, 0), "two functions declared in a row");
    // An address that names no function stops the launch there, naming it.
    let trap = launch(&module, 1, 8, 1 << 20).unwrap_err();
    assert_eq!(trap.kind, TrapKind::Fault(peerpool_ptx::Fault::Illegal));
    assert_eq!(trap.addr, words[0] + 8);
}
