//! Threads that wait on memory other threads write: warps of a block take turns, so a warp
//! that spins on a flag lets the warp that sets it run; in a cooperative launch every block is
//! resident and blocks take turns too, and `%envreg1`/`%envreg2` hold the grid workspace.

mod common;

use common::Ram;
use peerpool_ptx::{GridSync, Launch, LoadError, Module, Shape, Trap, TrapKind, load};

const FLAG: u64 = 0x9000;
const OUT: u64 = 0x1000;
/// Every block resident, the workspace after the flag.
const RESIDENT: Option<GridSync> = Some(GridSync { workspace: FLAG + 8, resident: true });

/// A kernel `k(.param .u64 out, .param .u64 flag)` around `body`, with `%r0` = `%tid.x`,
/// `%r1` = `%ctaid.x`, `%rd0` = `out + 4 * (global thread index)`, `%rd1` = `flag`.
fn kernel(body: &str) -> Module {
    let text = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 out, .param .u64 flag)\n{{\n\
         .reg .pred %p<8>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<8>;\n\
         mov.u32 %r0, %tid.x; mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mad.lo.s32 %r3, %r1, %r2, %r0;\n\
         ld.param.u64 %rd2, [out]; mul.wide.u32 %rd3, %r3, 4; add.s64 %rd0, %rd2, %rd3; ld.param.u64 %rd1, [flag];\n\
         {body}\n}}\n"
    );
    load(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Runs `k` over `grid` blocks of `block` threads, one output word a thread and a zeroed flag
/// word; the words, or the trap.
fn run(module: &Module, grid: u32, block: u32, grid_sync: Option<GridSync>) -> Result<Vec<u32>, Trap> {
    run_resident(module, grid, block, grid_sync, 0)
}

/// [`run`] on a device that holds `resident` blocks at once.
fn run_resident(
    module: &Module,
    grid: u32,
    block: u32,
    grid_sync: Option<GridSync>,
    resident: u64,
) -> Result<Vec<u32>, Trap> {
    let mut ram = Ram::default();
    ram.add(OUT, vec![0; (grid * block) as usize * 4]);
    ram.add(FLAG, vec![0; 16]);
    let mut params = OUT.to_le_bytes().to_vec();
    params.extend(FLAG.to_le_bytes());
    let launch = Launch {
        shape: Shape { grid: [grid, 1, 1], block: [block, 1, 1], shared: 0, params: &params },
        variables: &[],
        budget: 1 << 24,
        grid_sync,
        cluster: None,
        resident_blocks: resident,
    };
    peerpool_ptx::run(module.kernel("k").expect("k"), &launch, &mut ram)?;
    Ok(ram.words(OUT))
}

/// Threads for which `%p1` holds spin until the flag is set, then every thread writes its
/// index plus one; the thread `%p2` names sets the flag.
const WAIT_FOR_SETTER: &str = "
    @%p2 st.volatile.global.u32 [%rd1], 1;
    @!%p1 bra DONE;
WAIT:
    ld.volatile.global.u32 %r4, [%rd1];
    setp.eq.u32 %p3, %r4, 0;
    @%p3 bra WAIT;
DONE:
    add.u32 %r5, %r3, 1;
    st.global.u32 [%rd0], %r5;
";

#[test]
fn a_warp_spinning_on_a_flag_lets_a_later_warp_of_its_block_set_it() {
    // Warp 0 waits for thread 32, of warp 1, which runs after it.
    let k = kernel(&format!("setp.lt.u32 %p1, %r0, 32; setp.eq.u32 %p2, %r0, 32;{WAIT_FOR_SETTER}"));
    let got = run(&k, 1, 64, None).unwrap();
    assert_eq!(got, (1..=64).collect::<Vec<u32>>());
}

#[test]
fn a_flag_no_thread_sets_still_ends_the_launch_when_the_budget_does() {
    let k = kernel(&format!("setp.lt.u32 %p1, %r0, 32; setp.eq.u32 %p2, %r0, 99;{WAIT_FOR_SETTER}"));
    let trap = run(&k, 1, 64, None).unwrap_err();
    assert_eq!(trap.kind, TrapKind::TooLong);
    assert_eq!(trap.who.thread, [0, 0, 0], "{trap:?}");
}

#[test]
fn blocks_of_a_cooperative_launch_take_turns_and_those_of_an_ordinary_one_do_not() {
    // Block 0 waits for block 3: all four resident, it runs; one block at a time, block 0
    // never ends.
    let k = kernel(&format!("setp.eq.u32 %p1, %r1, 0; setp.eq.u32 %p2, %r3, 96;{WAIT_FOR_SETTER}"));
    let got = run(&k, 4, 32, RESIDENT).unwrap();
    assert_eq!(got, (1..=128).collect::<Vec<u32>>());
    let trap = run(&k, 4, 32, None).unwrap_err();
    assert_eq!((trap.kind, trap.who.block), (TrapKind::TooLong, [0, 0, 0]));
    // A block waiting for an earlier one needs no turns: block 0 has ended by then.
    let k = kernel(&format!("setp.eq.u32 %p1, %r1, 3; setp.eq.u32 %p2, %r3, 0;{WAIT_FOR_SETTER}"));
    assert_eq!(run(&k, 4, 32, None).unwrap(), (1..=128).collect::<Vec<u32>>());
}

#[test]
fn a_barrier_no_thread_can_reach_is_a_deadlock_in_a_cooperative_launch_too() {
    // Half of block 1 exits, the other half waits at a barrier for 32 threads: never met.
    let k =
        kernel("setp.eq.u32 %p1, %r1, 1; @!%p1 bra END; setp.lt.u32 %p2, %r0, 16; @%p2 ret; bar.sync 0, 32; END: ret;");
    let trap = run(&k, 2, 32, RESIDENT).unwrap_err();
    assert_eq!((trap.kind, trap.who.block), (TrapKind::Deadlock, [1, 0, 0]), "{trap:?}");
}

#[test]
fn the_grid_workspace_is_in_envreg1_and_envreg2_and_zero_in_an_ordinary_launch() {
    let k = kernel(
        "mov.u32 %r4, %envreg1; mov.u32 %r5, %envreg2; setp.eq.u32 %p1, %r0, 0; selp.b32 %r6, %r4, %r5, %p1; st.global.u32 [%rd0], %r6;",
    );
    assert_eq!(
        run(&k, 1, 2, Some(GridSync { workspace: 0x1234_5678_9abc_def0, resident: false })).unwrap(),
        [0x1234_5678, 0x9abc_def0]
    );
    assert_eq!(run(&k, 1, 2, None).unwrap(), [0, 0]);
    let text = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<2>;\nmov.u32 %r0, %envreg0;\n}\n";
    match load(text) {
        Err(LoadError::Unsupported { line: 7, what }) => assert_eq!(what, "the register %envreg0"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_kernel_reads_the_grid_workspace_if_it_or_a_function_it_calls_does() {
    let module = |body: &str| {
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.func (.param .b32 r) f()\n{{\n.reg .b32 %r<2>;\n{body}\nst.param.b32 [r], %r0;\nret;\n}}\n\
             .visible .entry calls()\n{{\n.reg .b32 %r<2>;\n.param .b32 r0;\ncall (r0), f, ();\nret;\n}}\n\
             .visible .entry reads()\n{{\n.reg .b32 %r<2>;\nmov.u32 %r0, %envreg2;\n}}\n.visible .entry plain()\n{{\nret;\n}}\n"
        );
        load(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    };
    let reads = |m: &Module, k: &str| m.kernel(k).unwrap().reads_grid_workspace;
    let m = module("mov.u32 %r0, %envreg1;");
    assert!(reads(&m, "calls") && reads(&m, "reads") && !reads(&m, "plain"));
    let m = module("mov.u32 %r0, %tid.x;");
    assert!(!reads(&m, "calls") && reads(&m, "reads"));
}

/// A kernel in clusters of two blocks: each thread stores its index in its block's shared
/// memory, the cluster meets at its barrier, and each thread reads the word of the same index
/// in block `%r4` of the cluster (through `mapa`), or faults there.
const CLUSTER: &str = "
    .shared .align 4 .b8 words[128];
    mov.u32 %r6, words; shl.b32 %r7, %r0, 2; add.u32 %r8, %r6, %r7;
    st.shared.u32 [%r8], %r3;
    barrier.cluster.arrive.release.aligned;
    barrier.cluster.wait.acquire.aligned;
    mov.u32 %r9, %cluster_ctarank; add.u32 %r10, %r9, %r4; and.b32 %r10, %r10, %r5;
    mapa.shared::cluster.u32 %r11, %r8, %r10;
    ld.shared::cluster.u32 %r12, [%r11];
    st.global.u32 [%rd0], %r12;
    barrier.cluster.arrive;
    barrier.cluster.wait;
";

#[test]
fn blocks_of_a_cluster_read_each_others_shared_memory_after_its_barrier() {
    let with = |next: u32, mask: u32| kernel(&format!("mov.u32 %r4, {next}; mov.u32 %r5, {mask};{CLUSTER}"));
    let launch = |k: &Module, cluster: Option<[u32; 3]>| {
        let mut ram = Ram::default();
        ram.add(OUT, vec![0; 4 * 32 * 4]);
        let mut params = OUT.to_le_bytes().to_vec();
        params.extend(FLAG.to_le_bytes());
        let launch = Launch {
            shape: Shape { grid: [4, 1, 1], block: [32, 1, 1], shared: 0, params: &params },
            variables: &[],
            budget: 1 << 20,
            grid_sync: None,
            cluster,
            resident_blocks: 0,
        };
        peerpool_ptx::run(k.kernel("k").unwrap(), &launch, &mut ram).map(|_| ram.words(OUT))
    };
    // Each block reads the other block of its pair: block 1 block 0's indices, and so on.
    let got = launch(&with(1, 1), Some([2, 1, 1])).unwrap();
    let want: Vec<u32> = (0..128).map(|i| (i ^ 32) as u32).collect();
    assert_eq!(got, want);
    // Its own shared memory, named by its rank.
    assert_eq!(launch(&with(0, 1), Some([2, 1, 1])).unwrap(), (0..128).collect::<Vec<u32>>());
    // Without clusters each block is a cluster of one: rank 1 is no block.
    let trap = launch(&with(1, 1), None).unwrap_err();
    assert_eq!(trap.kind, TrapKind::Fault(peerpool_ptx::Fault::Illegal));
    // Clusters that do not divide the grid.
    assert_eq!(launch(&with(1, 1), Some([3, 1, 1])).unwrap_err().kind, TrapKind::BadLaunch);
}

#[test]
fn a_cluster_barrier_a_block_never_reaches_ends_the_launch_when_the_budget_does() {
    // Block 1 of each pair leaves before the barrier.
    let k = kernel(
        "mov.u32 %r4, %cluster_ctarank; setp.eq.u32 %p1, %r4, 1; @%p1 ret; barrier.cluster.arrive; barrier.cluster.wait;",
    );
    let mut ram = Ram::default();
    ram.add(OUT, vec![0; 64 * 4]);
    let params = [OUT.to_le_bytes(), FLAG.to_le_bytes()].concat();
    let launch = Launch {
        shape: Shape { grid: [2, 1, 1], block: [32, 1, 1], shared: 0, params: &params },
        variables: &[],
        budget: 1 << 16,
        grid_sync: None,
        cluster: Some([2, 1, 1]),
        resident_blocks: 0,
    };
    let trap = peerpool_ptx::run(k.kernel("k").unwrap(), &launch, &mut ram).unwrap_err();
    assert_eq!((trap.kind, trap.who.block), (TrapKind::TooLong, [0, 0, 0]), "{trap:?}");
}

/// An ordinary launch on a device that holds several blocks at once: a block that waits for a
/// later one lets it start beside it, so a wait that would end on a GPU ends here; where the
/// blocks that wait fill the device, the one they wait for never starts, as on a GPU.
#[test]
fn in_an_ordinary_launch_a_block_waiting_for_a_later_one_lets_it_start_where_the_device_has_room() {
    // Block 0 waits for the flag the last block (3) sets.
    let later = kernel(&format!("setp.eq.u32 %p1, %r1, 0; setp.eq.u32 %p2, %r3, 96;{WAIT_FOR_SETTER}"));
    let want: Vec<u32> = (1..=128).collect();
    assert_eq!(run_resident(&later, 4, 32, None, 2).unwrap(), want, "one waits, the other slot goes round");
    assert_eq!(run_resident(&later, 4, 32, None, 1).unwrap_err().kind, TrapKind::TooLong, "one at a time");
    // A barrier of the grid's own making: each block counts itself in, then waits for all.
    let barrier = kernel(
        "setp.ne.u32 %p1, %r0, 0; @%p1 bra DONE; mov.u32 %r6, %nctaid.x; atom.global.add.u32 %r4, [%rd1], 1;\n\
         WAIT: ld.volatile.global.u32 %r4, [%rd1]; setp.lt.u32 %p3, %r4, %r6; @%p3 bra WAIT;\n\
         DONE: bar.sync 0; ld.volatile.global.u32 %r5, [%rd1]; st.global.u32 [%rd0], %r5;",
    );
    assert_eq!(run_resident(&barrier, 4, 32, None, 4).unwrap(), vec![4; 128], "every block resident");
    assert_eq!(run_resident(&barrier, 4, 32, None, 3).unwrap_err().kind, TrapKind::TooLong, "three hold the device");
}
