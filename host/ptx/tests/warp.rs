//! Warp-synchronous instructions under independent scheduling: lanes meet wherever they come
//! from, compute at once, and a meeting that cannot happen or a value PTX leaves undefined
//! stops the launch with a trap naming the lane, the line and the member mask.

mod common;

use common::{kernel, words};
use peerpool_ptx::{TrapKind, WarpFault};

fn shfl_down_sum(lanes: &[u32]) -> Vec<u32> {
    let mut v = lanes.to_vec();
    for off in [16, 8, 4, 2, 1] {
        let old = v.clone();
        for (l, x) in v.iter_mut().enumerate() {
            let j = l + off;
            *x = x.wrapping_add(if j < 32 { old[j] } else { old[l] });
        }
    }
    v
}

#[test]
fn a_shuffle_down_reduction_sums_each_warp() {
    let mut body = String::from("mov.u32 %r1, %r0;\n");
    for off in [16, 8, 4, 2, 1] {
        body += &format!("shfl.sync.down.b32 %r2|%p1, %r1, {off}, 31, -1;\nadd.u32 %r1, %r1, %r2;\n");
    }
    body += "st.global.u32 [%rd0], %r1;\nret;";
    let got = words(&kernel(&body), 64).unwrap();
    assert_eq!(got[0], (0..32).sum::<u32>());
    assert_eq!(got[32], (32..64).sum::<u32>());
    let mut want = shfl_down_sum(&(0..32).collect::<Vec<_>>());
    want.extend(shfl_down_sum(&(32..64).collect::<Vec<_>>()));
    assert_eq!(got, want);
}

#[test]
fn lanes_meet_at_different_shuffles_of_the_same_kind() {
    let body = "and.b32 %r1, %r0, 16;\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 bra LOW;\n\
        shfl.sync.bfly.b32 %r2, %r0, 16, 31, -1;\nadd.u32 %r2, %r2, 1000;\nbra END;\n\
        LOW:\nshfl.sync.bfly.b32 %r2, %r0, 16, 31, -1;\nEND:\nst.global.u32 [%rd0], %r2;\nret;";
    let got = words(&kernel(body), 32).unwrap();
    let want: Vec<u32> = (0..32).map(|i| if i < 16 { i + 16 } else { i - 16 + 1000 }).collect();
    assert_eq!(got, want);
}

#[test]
fn shuffles_in_segments_and_with_the_predicate_out() {
    // width 8 (c = 0x181f for down, 0x1800 for up): the predicate says whether the source
    // lane was in the segment.
    let body = "shfl.sync.down.b32 %r1|%p1, %r0, 3, 0x181f, -1;\nshfl.sync.up.b32 %r2|%p2, %r0, 2, 0x1800, -1;\n\
        selp.u32 %r3, 1, 0, %p1;\nselp.u32 %r4, 2, 0, %p2;\nshl.b32 %r1, %r1, 8;\nshl.b32 %r2, %r2, 16;\n\
        or.b32 %r1, %r1, %r2;\nor.b32 %r1, %r1, %r3;\nor.b32 %r1, %r1, %r4;\nst.global.u32 [%rd0], %r1;\nret;";
    let got = words(&kernel(body), 32).unwrap();
    for (l, &w) in got.iter().enumerate() {
        let (seg, l) = (l / 8 * 8, l as u32);
        let down = if l as usize + 3 < seg + 8 { l + 3 } else { l };
        let up = if l as usize >= seg + 2 { l - 2 } else { l };
        let want = (down << 8) | (up << 16) | (down != l) as u32 | ((up != l) as u32) << 1;
        assert_eq!(w, want, "lane {l}");
    }
}

#[test]
fn a_shuffle_reading_an_exited_lane_traps_but_a_vote_leaves_it_out() {
    let shfl = kernel("setp.eq.u32 %p1, %r0, 31;\n@%p1 exit;\nshfl.sync.down.b32 %r2, %r0, 1, 31, -1;\nret;");
    let trap = words(&shfl, 32).unwrap_err();
    assert_eq!(trap.kind, TrapKind::Warp(WarpFault::Inactive));
    assert_eq!((trap.who.thread[0], trap.line, trap.addr), (30, 14, 0xffff_ffff));
    // A block of 48: the second warp's lanes 16..31 do not exist.
    let partial = kernel("shfl.sync.down.b32 %r2, %r0, 1, 31, -1;\nret;");
    let trap = words(&partial, 48).unwrap_err();
    assert_eq!((trap.kind, trap.who.thread[0]), (TrapKind::Warp(WarpFault::Inactive), 47));
    let vote = kernel(
        "setp.eq.u32 %p1, %r0, 31;\n@%p1 exit;\nsetp.lt.u32 %p2, %r0, 40;\nvote.sync.all.pred %p3, %p2, -1;\n\
         vote.sync.ballot.b32 %r3, %p2, -1;\nselp.u32 %r2, 1, 0, %p3;\nadd.u32 %r3, %r3, %r2;\nst.global.u32 [%rd0], %r3;\nret;",
    );
    let got = words(&vote, 32).unwrap();
    assert_eq!(&got[..31], &[0x7fff_ffff + 1; 31]);
    assert_eq!(got[31], 0, "lane 31 exited before storing");
}

#[test]
fn lanes_waiting_at_different_kinds_of_warp_instructions_trap_as_a_mismatch() {
    let body = "setp.lt.u32 %p1, %r0, 16;\n@%p1 bra A;\nshfl.sync.bfly.b32 %r2, %r0, 1, 31, -1;\nbra B;\n\
        A:\nvote.sync.any.pred %p2, %p1, -1;\nB:\nret;";
    let trap = words(&kernel(body), 32).unwrap_err();
    assert_eq!(trap.kind, TrapKind::Warp(WarpFault::Mismatch));
    assert_eq!((trap.who.thread[0], trap.line, trap.addr), (0, 17, 0xffff_ffff));
    // Same kind, different masks that name each other: a mismatch too.
    let masks = "selp.b32 %r1, 3, 7, %p0;\nsetp.eq.u32 %p0, %r0, 0;\nselp.b32 %r1, 3, 7, %p0;\n\
        bar.warp.sync %r1;\nret;";
    let trap = words(&kernel(masks), 3).unwrap_err();
    assert_eq!(trap.kind, TrapKind::Warp(WarpFault::Mismatch));
    // A lane at a block barrier while its warp waits for it at a shuffle: a deadlock.
    let bar = "setp.eq.u32 %p1, %r0, 5;\n@%p1 bra A;\nshfl.sync.idx.b32 %r2, %r0, 0, 31, -1;\nA:\nbar.sync 0;\nret;";
    assert_eq!(words(&kernel(bar), 32).unwrap_err().kind, TrapKind::Deadlock);
}

#[test]
fn a_lane_outside_its_own_mask_traps() {
    let trap = words(&kernel("shfl.sync.idx.b32 %r2, %r0, 0, 31, 1;\nret;"), 2).unwrap_err();
    assert_eq!(trap.kind, TrapKind::Warp(WarpFault::NotInMask));
    assert_eq!((trap.who.thread[0], trap.addr), (1, 1));
}

#[test]
fn half_warps_with_their_own_masks_meet_apart() {
    let body = "setp.lt.u32 %p1, %r0, 16;\nselp.b32 %r3, 0xffff, 0xffff0000, %p1;\n@%p1 bra A;\n\
        redux.sync.add.u32 %r2, %r0, %r3;\nbra B;\nA:\nredux.sync.add.u32 %r2, %r0, %r3;\nB:\n\
        redux.sync.max.s32 %r4, %r0, -1;\nadd.u32 %r2, %r2, %r4;\nst.global.u32 [%rd0], %r2;\nret;";
    let got = words(&kernel(body), 32).unwrap();
    assert_eq!(&got[..16], &[120 + 31; 16]);
    assert_eq!(&got[16..], &[376 + 31; 16]);
}

#[test]
fn activemask_names_the_lanes_that_arrive_together() {
    // A block of 48, odd and even lanes apart: each branch sees its own lanes.
    let body = "and.b32 %r1, %r0, 1;\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 bra EVEN;\nactivemask.b32 %r2;\nbra END;\n\
        EVEN:\nactivemask.b32 %r2;\nEND:\nactivemask.b32 %r3;\nsetp.ge.u32 %p2, %r0, 5;\n\
        vote.sync.ballot.b32 %r4, %p2, %r3;\nxor.b32 %r2, %r2, %r4;\nst.global.u32 [%rd0], %r2;\nret;";
    let got = words(&kernel(body), 48).unwrap();
    for (t, &w) in got.iter().enumerate() {
        let (odd, even) = if t < 32 { (0xaaaa_aaaa, 0x5555_5555) } else { (0xaaaa, 0x5555) };
        let ballot = if t < 32 { 0xffff_ffe0u32 } else { 0xffff };
        assert_eq!(w, if t % 2 == 1 { odd } else { even } ^ ballot, "thread {t}");
    }
}

#[test]
fn elect_picks_the_lowest_lane_of_its_meeting_with_either_result_thrown_away() {
    // A block of 40: lanes 0-3 leave first; the rest elect over the mask of the lanes left,
    // once with both results and once each with `_` for one of them.
    let body = "setp.lt.u32 %p1, %r0, 4;
@%p1 bra END;
activemask.b32 %r1;
elect.sync %r2|%p2, %r1;
        elect.sync _|%p3, %r1;
elect.sync %r3|_, %r1;
selp.u32 %r4, 0x100, 0, %p2;
selp.u32 %r5, 0x200, 0, %p3;
        shl.b32 %r3, %r3, 16;
or.b32 %r2, %r2, %r4;
or.b32 %r2, %r2, %r5;
or.b32 %r2, %r2, %r3;
        END:
st.global.u32 [%rd0], %r2;
ret;";
    let got = words(&kernel(body), 40).unwrap();
    for (t, &w) in got.iter().enumerate().skip(4) {
        let leader = if t < 32 { 4 } else { 0 };
        let flags = if t % 32 == leader { 0x300 } else { 0 };
        assert_eq!(w, leader as u32 | flags | (leader as u32) << 16, "thread {t}");
    }
    let refused = peerpool_ptx::load(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<2>;\nelect %r0, %r1;\n}\n",
    );
    assert!(refused.unwrap_err().to_string().contains("elect without .sync"));
}

#[test]
fn votes_matches_and_barrier_reductions() {
    let body = "and.b32 %r1, %r0, 3;\nmatch.any.sync.b32 %r2, %r1, -1;\nshr.u32 %r5, %r0, 6;\n\
        match.all.sync.b32 %r3|%p1, %r5, -1;\nsetp.lt.u32 %p2, %r0, 10;\nbar.red.popc.u32 %r4, 0, %p2;\n\
        bar.red.and.pred %p3, 0, !%p2;\nbar.red.or.pred %p4, 0, %p2;\nvote.sync.uni.pred %p5, %p2, -1;\n\
        selp.u32 %r6, 1, 0, %p1;\nselp.u32 %r7, 2, 0, %p3;\nselp.u32 %r8, 4, 0, %p4;\nselp.u32 %r9, 8, 0, %p5;\n\
        add.u32 %r6, %r6, %r7;\nadd.u32 %r6, %r6, %r8;\nadd.u32 %r6, %r6, %r9;\nshl.b32 %r4, %r4, 4;\n\
        add.u32 %r6, %r6, %r4;\nxor.b32 %r6, %r6, %r2;\nxor.b32 %r6, %r6, %r3;\nst.global.u32 [%rd0], %r6;\nret;";
    let got = words(&kernel(body), 64).unwrap();
    for (t, &w) in got.iter().enumerate() {
        let any = 0x1111_1111u32 << (t % 4);
        let uni = t >= 32; // the first warp is split by t < 10
        let flags = 1 | 4 | (uni as u32) << 3 | 10 << 4;
        assert_eq!(w, flags ^ any ^ 0xffff_ffff, "thread {t}");
    }
}

#[test]
fn mov_packs_and_unpacks_registers() {
    let body = "add.u32 %r1, %r0, 0x100;\nmov.b64 %rd1, {%r0, %r1};\nmov.b64 {%r2, %r3}, %rd1;\n\
        mov.b32 {%r4, %r5}, %r1;\nshr.u64 %rd2, %rd1, 24;\ncvt.u32.u64 %r6, %rd2;\nadd.u32 %r6, %r6, %r3;\n\
        add.u32 %r6, %r6, %r5;\nst.global.u32 [%rd0], %r6;\nret;";
    let got = words(&kernel(body), 4).unwrap();
    let want: Vec<u32> = (0..4u32).map(|t| ((t + 0x100) << 8) + (t + 0x100) + ((t + 0x100) >> 16)).collect();
    assert_eq!(got, want);
}

const MMA: &str = "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, \
    {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, \
    {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7};";

#[test]
fn a_matrix_product_needs_every_lane_of_the_warp() {
    // 0x3c00 is 1.0 in f16: A and B all ones, C zero, so each element of D is 16.
    let body = format!(
        "mov.b32 %r1, 0x3c003c00;\nmov.b32 %r2, %r1;\nmov.b32 %r3, %r1;\nmov.b32 %r4, %r1;\nmov.b32 %r5, %r1;\n\
         mov.b32 %r6, %r1;\nmov.b32 %r7, %r1;\nmov.b32 %r8, %r1;\nmov.f32 %f0, 0f00000000;\nmov.f32 %f1, %f0;\n\
         mov.f32 %f2, %f0;\nmov.f32 %f3, %f0;\nmov.f32 %f4, %f0;\nmov.f32 %f5, %f0;\nmov.f32 %f6, %f0;\nmov.f32 %f7, %f0;\n\
         {MMA}\nadd.f32 %f0, %f0, %f7;\nst.global.f32 [%rd0], %f0;\nret;"
    );
    let module = kernel(&body);
    assert_eq!(words(&module, 32).unwrap(), vec![32f32.to_bits(); 32]);
    // A block of 48: its second warp has 16 lanes, so its fragments are not whole.
    let trap = words(&module, 48).unwrap_err();
    assert_eq!((trap.kind, trap.who.thread[0], trap.line), (TrapKind::Warp(WarpFault::Inactive), 32, 28));
    // A lane that exited takes no part either.
    let early = kernel(&format!("setp.eq.u32 %p1, %r0, 5;\n@%p1 ret;\n{body}"));
    let trap = words(&early, 32).unwrap_err();
    assert_eq!((trap.kind, trap.who.thread[0]), (TrapKind::Warp(WarpFault::Inactive), 0));
}

#[test]
fn matrix_forms_not_implemented_are_refused_and_fragments_of_the_wrong_size_are_wrong() {
    use peerpool_ptx::{LoadError, load};
    let text = |inst: &str| {
        format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n.reg .b32 %r<16>;\n.reg .b64 %rd<4>;\n{inst}\nret;\n}}\n"
        )
    };
    let regs = |n: usize| (1..=n).map(|i| format!("%r{i}")).collect::<Vec<_>>().join(", ");
    for (inst, what) in [
        (format!("wmma.load.a.sync.aligned.row.m16n16k8.tf32 {{{}}}, [%rd1], 8;", regs(4)), "the shape .m16n16k8"),
        (format!("wmma.load.a.sync.aligned.row.m8n8k32.s4 {{{}}}, [%rd1], 32;", regs(1)), "the shape .m8n8k32"),
        (format!("wmma.load.a.sync.aligned.row.m16n16k16.s8 {{{}}}, [%rd1], 16;", regs(2)), "this type"),
        (format!("wmma.load.c.sync.aligned.row.m16n16k16.s32 {{{}}}, [%rd1], 16;", regs(8)), "this type"),
        (format!("wmma.store.d.sync.aligned.row.m16n16k16.satfinite.f32 [%rd1], {{{}}}, 16;", regs(8)), ".satfinite"),
        (
            format!(
                "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {{{}}}, {{%r1, %r2}}, {{%r9}}, {{{}}};",
                regs(8),
                regs(8)
            ),
            "the modifier .m8n8k4",
        ),
        (
            format!(
                "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {{{}}}, {{{}}}, {{%r9}}, {{{}}};",
                regs(4),
                regs(4),
                regs(4)
            ),
            "the modifier .e4m3",
        ),
        ("cvt.rn.tf32.f32 %r1, %r2;".into(), "the modifier .rn"),
        (
            format!(
                "mma.sync.aligned.m16n8k16.row.col.f16.bf16.bf16.f16 {{{}}}, {{{}}}, {{%r9, %r10}}, {{%r1, %r2}};",
                regs(2),
                regs(4)
            ),
            "these types",
        ),
        ("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r1}, [%rd1];".into(), "the modifier .m16n16"),
    ] {
        match load(&text(&inst)) {
            Err(LoadError::Unsupported { line: 8, what: w }) => assert!(w.contains(what), "{inst}: {w}"),
            other => panic!("{inst}: {other:?}"),
        }
    }
    let short = format!("wmma.load.a.sync.aligned.row.m16n16k16.f16 {{{}}}, [%rd1], 16;", regs(7));
    assert!(matches!(load(&text(&short)), Err(LoadError::Syntax { line: 8, .. })));
    let fine = format!("wmma.load.a.sync.aligned.row.m16n16k16.f16 {{{}}}, [%rd1], 16;", regs(8));
    assert!(load(&text(&fine)).is_ok());
}
