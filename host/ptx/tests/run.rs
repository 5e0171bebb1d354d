//! Kernels run by the executor against a memory of plain byte regions: nvcc's PTX for
//! `kernels.cu` (an add with an atomic counter; a scale through dynamic shared memory and a
//! barrier), and hand-written kernels for what must stop a launch (an illegal address, a
//! deadlock at barriers, an endless loop) or a load (an instruction not implemented).

mod common;

use common::{kernel as body_kernel, words};

use peerpool_ptx::{Fault, Launch, LoadError, Memory, Module, Shape, Space, Thread, Trap, TrapKind, load, run};

/// A global access: the thread, the address, and whether it writes.
type Logged = (Thread, u64, bool);

/// The shared byte regions ([`common::Ram`]), with every global access logged.
#[derive(Default)]
struct Ram {
    regions: common::Ram,
    /// Every global access, in order.
    log: Vec<Logged>,
}

impl Ram {
    fn add(&mut self, base: u64, bytes: Vec<u8>) -> u64 {
        self.regions.add(base, bytes)
    }

    fn words(&self, base: u64) -> Vec<u32> {
        self.regions.words(base)
    }
}

impl Memory for Ram {
    fn read(&mut self, space: Space, addr: u64, out: &mut [u8], who: Thread) -> Result<(), Fault> {
        self.log.push((who, addr, false));
        self.regions.read(space, addr, out, who)
    }

    fn write(&mut self, addr: u64, data: &[u8], who: Thread) -> Result<(), Fault> {
        self.log.push((who, addr, true));
        self.regions.write(addr, data, who)
    }

    fn atomic(&mut self, addr: u64, len: usize, who: Thread, update: &mut dyn FnMut(&mut [u8])) -> Result<(), Fault> {
        self.log.push((who, addr, true));
        self.regions.atomic(addr, len, who, update)
    }
}

/// nvcc's module, and a memory holding its variables from 0x9000_0000 with their initial bytes
/// (where each one lies, by its index).
fn nvcc_kernels() -> (Module, Ram, Vec<u64>) {
    let module = load(include_str!("data/kernels.ptx")).expect("nvcc's PTX loads");
    let mut ram = Ram::default();
    let mut at = 0x9000_0000;
    let variables = module
        .variables
        .iter()
        .map(|v| {
            let mut bytes = v.init.clone();
            bytes.resize(v.size.max(1) as usize, 0);
            let base = ram.add(at, bytes);
            at += 0x1000;
            base
        })
        .collect();
    (module, ram, variables)
}

fn launch<'a>(grid: u32, block: u32, params: &'a [u8], variables: &'a [u64]) -> Launch<'a> {
    Launch {
        shape: Shape { grid: [grid, 1, 1], block: [block, 1, 1], shared: 0, params },
        variables,
        budget: 1 << 30,
        grid_sync: None,
        cluster: None,
        resident_blocks: 0,
    }
}

#[test]
fn nvccs_add_kernel_adds_and_counts_once() {
    let (module, mut ram, variables) = nvcc_kernels();
    let n = 1000u32;
    let data = ram.add(0x1000_0000, (0..n).flat_map(|i| i.to_le_bytes()).collect());
    let params = [data.to_le_bytes().as_slice(), &n.to_le_bytes(), &5u32.to_le_bytes()].concat();
    let kernel = module.kernel("pp_test_add").unwrap();
    let ran = run(kernel, &launch(4, 256, &params, &variables), &mut ram).unwrap();
    assert!(ran.instructions > 1024 * 5);
    assert_eq!(ram.words(data), (0..n).map(|i| i + 5).collect::<Vec<_>>());
    let counter = module.variables.iter().position(|v| v.name == "pp_test_counter").unwrap();
    assert_eq!(ram.words(variables[counter]), [1], "only global thread 0 counts");
}

#[test]
fn nvccs_scale_kernel_goes_through_shared_memory_and_a_barrier() {
    let (module, mut ram, variables) = nvcc_kernels();
    let n = 300u64;
    let data = ram.add(0x2000_0000, (0..n).flat_map(|i| (i as f32 + 0.5).to_le_bytes()).collect());
    let params = [data.to_le_bytes(), n.to_le_bytes()].concat();
    let kernel = module.kernel("pp_test_scale").unwrap();
    let mut l = launch(3, 128, &params, &variables);
    l.shape.shared = 128 * 4;
    run(kernel, &l, &mut ram).unwrap();
    let got: Vec<f32> = ram.words(data).into_iter().map(f32::from_bits).collect();
    assert_eq!(got, (0..n).map(|i| (i as f32 + 0.5) * 2.0).collect::<Vec<_>>());
}

/// A kernel of one instruction sequence, `.entry k(.param .u64 p)`.
fn kernel(body: &str) -> Module {
    let text = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n.reg .pred %p<4>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n{body}\n}}\n"
    );
    load(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// `module`'s `k` run by one thread, its `p` pointing at `words`: the words after.
fn one_thread(module: &Module, words: &[u32]) -> Vec<u32> {
    let mut ram = Ram::default();
    let data = ram.add(0x1000, words.iter().flat_map(|w| w.to_le_bytes()).collect());
    run(module.kernel("k").unwrap(), &launch(1, 1, &data.to_le_bytes(), &[]), &mut ram).unwrap();
    ram.words(data)
}

#[test]
fn an_illegal_address_stops_the_launch_naming_thread_line_and_address() {
    let module = kernel(
        "ld.param.u64 %rd1, [p];\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r1;\nret;",
    );
    let mut ram = Ram::default();
    let data = ram.add(0x1000, vec![0; 16]); // room for 4 threads of 8
    let params = data.to_le_bytes();
    let trap: Trap = run(module.kernel("k").unwrap(), &launch(1, 8, &params, &[]), &mut ram).unwrap_err();
    assert_eq!(trap.kind, TrapKind::Fault(Fault::Illegal));
    assert_eq!(trap.who.thread, [4, 0, 0]);
    assert_eq!(trap.addr, 0x1000 + 16);
    assert_eq!(trap.line, 13, "the st.global line: after 8 lines of header and 4 of body");
}

#[test]
fn barriers_that_cannot_all_be_met_are_a_deadlock_and_endless_loops_run_out() {
    let split = kernel(
        "mov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 16;\n@%p1 bra A;\nbar.sync 1;\nret;\nA:\nbar.sync 0;\nret;",
    );
    let trap = run(split.kernel("k").unwrap(), &launch(1, 32, &[0; 8], &[]), &mut Ram::default()).unwrap_err();
    assert_eq!(trap.kind, TrapKind::Deadlock);
    // Threads that exit before a barrier are not waited for.
    let early = kernel("mov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 16;\n@%p1 bra A;\nret;\nA:\nbar.sync 0;\nret;");
    run(early.kernel("k").unwrap(), &launch(1, 32, &[0; 8], &[]), &mut Ram::default()).unwrap();
    let endless = kernel("A:\nbra A;");
    let mut l = launch(1, 1, &[0; 8], &[]);
    l.budget = 1000;
    assert_eq!(run(endless.kernel("k").unwrap(), &l, &mut Ram::default()).unwrap_err().kind, TrapKind::TooLong);
}

/// Images linked into one text (as the simulated JIT linker joins them): the kernel calls a
/// function and reads a variable that it declares `.extern` and a later image defines.
#[test]
fn extern_functions_and_variables_are_the_ones_defined_later() {
    let text = ".version 8.5\n.target sm_90\n.address_size 64\n\
        .extern .func (.param .b32 r) twice (.param .b32 a);\n.extern .global .align 4 .u32 bias;\n\
        .visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<2>;\n\
        ld.param.u64 %rd1, [p];\nld.global.u32 %r1, [%rd1];\n\
        {\n.param .b32 a0;\nst.param.b32 [a0], %r1;\n.param .b32 r0;\ncall.uni (r0), twice, (a0);\n\
        ld.param.b32 %r2, [r0];\n}\nld.global.u32 %r3, [bias];\nadd.u32 %r2, %r2, %r3;\n\
        st.global.u32 [%rd1], %r2;\nret;\n}\n\
        .visible .global .align 4 .u32 bias = 7;\n\
        .visible .func (.param .b32 r) twice (.param .b32 a)\n{\n.reg .b32 %r<3>;\n\
        ld.param.b32 %r1, [a];\nshl.b32 %r2, %r1, 1;\nst.param.b32 [r], %r2;\nret;\n}\n";
    let module = load(text).unwrap();
    assert_eq!(module.variables.len(), 1, "the declaration and the definition are one variable");
    assert!(!module.variables[0].external);
    let mut ram = Ram::default();
    let bias = ram.add(0x9000_0000, module.variables[0].init.clone());
    let data = ram.add(0x1000, 5u32.to_le_bytes().to_vec());
    run(module.kernel("k").unwrap(), &launch(1, 1, &data.to_le_bytes(), &[bias]), &mut ram).unwrap();
    assert_eq!(ram.words(data), [2 * 5 + 7]);
    let twice = text.replace(".extern .global .align 4 .u32 bias;", ".global .u32 bias;");
    assert!(load(&twice).unwrap_err().to_string().contains("bias is defined twice"));
}

/// A producer warp fills shared memory and arrives at barrier 1 without waiting; the consumer
/// warp waits there for both warps' 64 threads, then at barrier 2 alone (a count of 32), and
/// copies what the producer wrote. Either warp may be the producer.
#[test]
fn named_barriers_count_arrivals_and_release_only_their_own_threads() {
    for producer in ["", "!"] {
        let module = kernel(&format!(
            ".shared .align 4 .b8 s[128];\nld.param.u64 %rd1, [p];\nmov.u32 %r1, %tid.x;\n\
             and.b32 %r2, %r1, 31;\nshl.b32 %r3, %r2, 2;\nmov.u32 %r4, s;\nadd.u32 %r4, %r4, %r3;\n\
             setp.lt.u32 %p1, %r1, 32;\n@{producer}%p1 bra C;\nadd.u32 %r5, %r2, 1;\n\
             st.shared.u32 [%r4], %r5;\nbar.arrive 1, 64;\nret;\nC:\nbar.sync 1, 64;\nbar.sync 2, 32;\n\
             ld.shared.u32 %r5, [%r4];\ncvt.u64.u32 %rd2, %r3;\nadd.s64 %rd2, %rd1, %rd2;\n\
             st.global.u32 [%rd2], %r5;\nret;"
        ));
        let mut ram = Ram::default();
        let data = ram.add(0x1000, vec![0; 128]);
        let params = data.to_le_bytes();
        run(module.kernel("k").unwrap(), &launch(1, 64, &params, &[]), &mut ram).unwrap();
        assert_eq!(ram.words(data), (1..=32).collect::<Vec<u32>>(), "producer {producer}%p1");
    }
}

#[test]
fn what_is_not_implemented_is_refused_at_load_with_its_line() {
    let text = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<4>;\nwgmma.fence.sync.aligned;\nret;\n}\n";
    match load(text) {
        Err(LoadError::Unsupported { line: 7, what }) => assert_eq!(what, "wgmma.fence.sync.aligned"),
        other => panic!("{other:?}"),
    }
    let oob = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n.reg .b16 %h<4>;\nfma.rn.oob.f16 %h0, %h1, %h2, %h3;\nret;\n}\n";
    match load(oob) {
        Err(LoadError::Unsupported { line: 7, what }) => assert!(what.contains(".oob"), "{what}"),
        other => panic!("{other:?}"),
    }
    // An address in a 32-bit initialiser.
    let narrow = ".version 8.0\n.target sm_90\n.address_size 64\n.global .u32 v;\n.global .u32 t = v;\n";
    match load(narrow) {
        Err(LoadError::Unsupported { line: 5, what }) => {
            assert_eq!(what, "an address (v) in an initialiser narrower than 64 bits")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(load("not ptx at all"), Err(LoadError::Syntax { .. })));
}

/// Words of the ISA up to 9.5 that the executor does not run are refused by name, as valid PTX
/// (`Unsupported`); a word no ISA has is refused as ptxas refuses it (`Syntax`), never mistaken
/// for one of the other.
#[test]
fn newer_isa_words_are_refused_by_name_and_unknown_ones_as_not_ptx() {
    let body = |line: &str| {
        format!(
            ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n.reg .b64 %rd<4>;\n{line}\nret;\n}}\n"
        )
    };
    for (line, what) in
        [("clmad.lo.u64 %rd0, %rd1, %rd2, %rd3;", "clmad"), ("tcgen05.fence::before_thread_sync;", "tcgen05")]
    {
        match load(&body(line)) {
            Err(LoadError::Unsupported { line: 7, what: w }) => assert!(w.contains(what), "{line}: {w}"),
            other => panic!("{line}: {other:?}"),
        }
    }
    match load(&body("frob.b64 %rd0, 1;")) {
        Err(LoadError::Syntax { line: 7, what }) => {
            assert_eq!(what, "Not a name of any known instruction: 'frob'")
        }
        other => panic!("{other:?}"),
    }
    // A top-level directive this parser does not know: named, not taken for text that is not PTX.
    let directive = ".version 9.0\n.target sm_90\n.address_size 64\n.blocksareclusters\n";
    match load(directive) {
        Err(LoadError::Unsupported { line: 4, what }) => assert_eq!(what, "the directive .blocksareclusters"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_pointer_parameters_align_is_its_pointees_not_its_own() {
    // rustc's nvptx backend declares pointers `.ptr .align 1`: the parameter itself still lies
    // at its natural alignment, as the driver lays out the buffer.
    let text = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(\n.param .u32 n,\n\
                .param .u64 .ptr .align 1 p\n)\n{\nret;\n}\n";
    let module = load(text).expect("loads");
    let params = &module.kernel("k").expect("k").params;
    assert_eq!((params[1].offset, params[1].size), (8, 8));
}

#[test]
fn an_async_copy_reads_through_the_memory_zero_fills_and_faults_like_a_load() {
    // Thread t copies 16 bytes from p + 16 t into shared memory, all zero where ignore-src
    // holds (thread 1), then writes the first word back to p + 64 + 4 t.
    let module = kernel(
        ".shared .align 16 .b8 s[64];\nld.param.u64 %rd1, [p];\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 16;\n\
         add.s64 %rd3, %rd1, %rd2;\nmov.u32 %r2, s;\nmul.lo.u32 %r3, %r1, 16;\nadd.u32 %r4, %r2, %r3;\n\
         setp.eq.u32 %p1, %r1, 1;\ncp.async.cg.shared.global [%r4], [%rd3], 16, %p1;\ncp.async.commit_group;\n\
         cp.async.wait_group 0;\nld.shared.u32 %r5, [%r4];\nmul.wide.u32 %rd4, %r1, 4;\nadd.s64 %rd5, %rd1, %rd4;\n\
         st.global.u32 [%rd5+64], %r5;\nret;",
    );
    let mut ram = Ram::default();
    let data = ram.add(0x1000, (0..20u32).flat_map(|i| (i + 1).to_le_bytes()).collect());
    let params = data.to_le_bytes();
    run(module.kernel("k").unwrap(), &launch(1, 4, &params, &[]), &mut ram).unwrap();
    assert_eq!(ram.words(data)[16..], [1, 0, 9, 13]);
    assert!(ram.log.contains(&(Thread { block: [0; 3], thread: [2, 0, 0] }, 0x1000 + 32, false)), "read as a load");
    // A source past the memory: the copy faults there.
    let past = kernel(
        ".shared .align 16 .b8 s[16];\nld.param.u64 %rd1, [p];\ncp.async.ca.shared.global [s], [%rd1+80], 4;\nret;",
    );
    let trap = run(past.kernel("k").unwrap(), &launch(1, 1, &params, &[]), &mut ram).unwrap_err();
    assert_eq!((trap.kind, trap.addr), (TrapKind::Fault(Fault::Illegal), 0x1000 + 80));
}

#[test]
fn isspacep_tells_generic_addresses_apart() {
    // Generic addresses of shared, local and global memory, each asked of all three spaces;
    // the nine answers as bits 0-8 of one word.
    let module = kernel(
        ".shared .align 4 .b8 s[4];\n.local .align 4 .b8 l[4];\nld.param.u64 %rd1, [p];\ncvta.shared.u64 %rd2, s;\n\
         cvta.local.u64 %rd3, l;\nmov.u32 %r1, 0;\nisspacep.shared %p1, %rd2;\nselp.u32 %r2, 1, 0, %p1;\nor.b32 %r1, %r1, %r2;\n\
         isspacep.local %p1, %rd3;\nselp.u32 %r2, 2, 0, %p1;\nor.b32 %r1, %r1, %r2;\nisspacep.global %p1, %rd1;\n\
         selp.u32 %r2, 4, 0, %p1;\nor.b32 %r1, %r1, %r2;\nisspacep.global %p1, %rd2;\nselp.u32 %r2, 8, 0, %p1;\n\
         or.b32 %r1, %r1, %r2;\nisspacep.shared %p1, %rd3;\nselp.u32 %r2, 16, 0, %p1;\nor.b32 %r1, %r1, %r2;\n\
         isspacep.local %p1, %rd1;\nselp.u32 %r2, 32, 0, %p1;\nor.b32 %r1, %r1, %r2;\nst.global.u32 [%rd1], %r1;\nret;",
    );
    assert_eq!(one_thread(&module, &[0]), [0b111], "each address in its own space alone");
}

#[test]
fn shared_cta_is_the_blocks_shared_memory() {
    // Written through `.shared::cta` and read back through `.shared` and a generic address.
    let module = kernel(
        ".shared .align 4 .b8 s[8];\nld.param.u64 %rd1, [p];\nmov.u32 %r1, 41;\nst.shared::cta.u32 [s], %r1;\n\
         atom.shared::cta.add.u32 %r2, [s], 1;\nld.shared.u32 %r3, [s];\ncvta.shared::cta.u64 %rd2, s;\nld.u32 %r4, [%rd2];\n\
         add.u32 %r5, %r3, %r4;\nst.global.u32 [%rd1], %r5;\nret;",
    );
    assert_eq!(one_thread(&module, &[0]), [84]);
}

#[test]
fn a_pause_and_programmatic_dependent_launch_change_nothing() {
    let module = kernel(
        "ld.param.u64 %rd1, [p];\ngriddepcontrol.wait;\nnanosleep.u32 100;\nmov.u32 %r1, 7;\nst.global.u32 [%rd1], %r1;\n\
         griddepcontrol.launch_dependents;\nret;",
    );
    assert_eq!(one_thread(&module, &[0]), [7]);
}

#[test]
fn an_async_copys_cache_policy_is_not_its_source_size() {
    // `.L2::cache_hint`'s last operand is a policy (here 3): the whole 16 bytes are copied.
    let module = kernel(
        ".shared .align 16 .b8 s[16];\nld.param.u64 %rd1, [p];\nmov.u64 %rd2, 3;\n\
         cp.async.cg.shared.global.L2::cache_hint [s], [%rd1], 16, %rd2;\ncp.async.wait_all;\n\
         ld.shared.u32 %r1, [s+12];\nst.global.u32 [%rd1], %r1;\nret;",
    );
    assert_eq!(one_thread(&module, &[1, 2, 3, 4])[0], 4, "the fourth word came too");
}

#[test]
fn mbarrier_waits_yield_bulk_copies_complete_transactions_and_misuse_is_refused_or_trapped() {
    let decl = ".shared .align 8 .b64 bar;\nmov.u32 %r1, bar;\n";
    // Two warps: the first waits for the second's arrivals, the token's phase and by parity.
    let wait = "setp.eq.u32 %p2, %r0, 0;\n@%p2 mbarrier.init.shared.b64 [%r1], 64;\nbar.sync 0;\n\
        mbarrier.arrive.shared.b64 %rd1, [%r1];\nW:\nmbarrier.try_wait.shared.b64 %p1, [%r1], %rd1;\n@!%p1 bra W;\n\
        mbarrier.test_wait.parity.shared::cta.b64 %p3, [%r1], 0;\nmbarrier.test_wait.parity.shared::cta.b64 %p4, [%r1], 1;\n\
        selp.u32 %r2, 1, 0, %p3;\nselp.u32 %r3, 2, 0, %p4;\nadd.u32 %r2, %r2, %r3;\nst.global.u32 [%rd0], %r2;\nret;";
    assert_eq!(words(&body_kernel(&format!("{decl}{wait}")), 64).unwrap(), [1; 64], "phase 0 done, phase 1 not");
    // A thread's copies arrive at once: with `.noinc` as one of the phase's arrivals, without
    // it as none.
    let copies = "mbarrier.init.shared.b64 [%r1], 2;\ncp.async.mbarrier.arrive.noinc.shared.b64 [%r1];\n\
        cp.async.mbarrier.arrive.shared.b64 [%r1];\nmbarrier.arrive.shared.b64 %rd1, [%r1];\n\
        mbarrier.test_wait.shared.b64 %p1, [%r1], %rd1;\nselp.u32 %r2, 1, 0, %p1;\nst.global.u32 [%rd0], %r2;\nret;";
    assert_eq!(words(&body_kernel(&format!("{decl}{copies}")), 1).unwrap(), [1]);
    // A bulk copy's bytes complete the phase that expects them; a size not a multiple of 16
    // is misaligned.
    let bulk = "setp.ne.u32 %p3, %r0, 0;\n@%p3 ret;\nmbarrier.init.shared.b64 [%r1], 1;\nmbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r1], 16;\n\
        mbarrier.test_wait.shared.b64 %p1, [%r1], %rd1;\nmov.u32 %r4, bar;\nadd.u32 %r4, %r4, 16;\n\
        cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd0], 16, [%r1];\n\
        mbarrier.test_wait.shared.b64 %p2, [%r1], %rd1;\nselp.u32 %r2, 1, 0, %p1;\nselp.u32 %r3, 2, 0, %p2;\n\
        add.u32 %r2, %r2, %r3;\nst.global.u32 [%rd0], %r2;\nret;";
    let room = ".shared .align 16 .b8 bar[32];\nmov.u32 %r1, bar;\n";
    // Four threads: the copy reads the first's 16 bytes of output.
    assert_eq!(words(&body_kernel(&format!("{room}{bulk}")), 4).unwrap(), [2, 0, 0, 0], "done only once copied");
    let odd = body_kernel(&format!("{room}cp.async.bulk.global.shared::cta.bulk_group [%rd0], [%r1], 24;\nret;"));
    assert_eq!(words(&odd, 1).unwrap_err().kind, TrapKind::Fault(Fault::Misaligned));
    // A phase that can never complete: the wait loops until the budget ends the launch.
    let never = "mbarrier.init.shared.b64 [%r1], 2;\nmbarrier.arrive.shared.b64 %rd1, [%r1];\n\
        W:\nmbarrier.try_wait.shared.b64 %p1, [%r1], %rd1;\n@!%p1 bra W;\nret;";
    assert_eq!(words(&body_kernel(&format!("{decl}{never}")), 1).unwrap_err().kind, TrapKind::TooLong);
    // An arrival at an object that is not a barrier, or at global memory: an illegal access.
    let trap = words(&body_kernel(&format!("{decl}mbarrier.arrive.shared.b64 %rd1, [%r1];\nret;")), 1).unwrap_err();
    assert_eq!((trap.kind, trap.line, trap.addr), (TrapKind::Fault(Fault::Illegal), 14, 0));
    let global = body_kernel("mbarrier.init.b64 [%rd0], 1;\nret;");
    assert_eq!(words(&global, 1).unwrap_err().kind, TrapKind::Fault(Fault::Illegal));
    // Transaction counts, a cluster's barriers and pending counts are refused at load.
    for (form, what) in [
        ("mbarrier.arrive.expect_tx.shared::cluster.b64 %rd1, [%r1], 16;", ".shared::cluster"),
        (
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r1], [%rd1], 16, [%r2], 3;",
            "this form",
        ),
        ("mbarrier.arrive.shared::cluster.b64 _, [%r1];", ".shared::cluster"),
        ("mbarrier.pending_count.b64 %r2, %rd1;", ".pending_count"),
    ] {
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n{form}\nret;\n}}\n"
        );
        match load(&text) {
            Err(LoadError::Unsupported { line: 8, what: w }) => assert!(w.contains(what), "{w}"),
            other => panic!("{form}: {other:?}"),
        }
    }
}

#[test]
fn a_variables_address_in_an_initialiser_is_filled_in_where_the_caller_puts_it() {
    let text = ".version 8.0\n.target sm_90\n.address_size 64\n.global .align 4 .b8 x[16];\n\
                .global .align 8 .u64 p[3] = {generic(x)+4, 7, x};\n.const .align 8 .u64 q = generic(x);\n";
    let module = load(text).expect("loads");
    let (p, q) = (&module.variables[1], &module.variables[2]);
    let words = |b: Vec<u8>| b.chunks(8).map(|w| u64::from_le_bytes(w.try_into().unwrap())).collect::<Vec<_>>();
    assert_eq!(words(p.init.clone()), [0, 7, 0], "zero until placed");
    assert_eq!(words(p.initial_bytes(&[0x5000, 0x6000, 0x7000])), [0x5004, 7, 0x5000]);
    assert_eq!(words(q.initial_bytes(&[0x5000, 0x6000, 0x7000])), [0x5000]);
    let undeclared = ".version 8.0\n.target sm_90\n.address_size 64\n.global .u64 p = y;\n";
    assert!(matches!(load(undeclared), Err(LoadError::Syntax { line: 4, .. })));
}

/// `brx.idx` (rustc's jump tables): each lane goes to its own target and the lanes meet again;
/// an index past the list stops the launch; a list or label that does not exist is refused.
#[test]
fn a_jump_table_sends_each_lane_to_its_target_and_an_index_past_it_stops_the_launch() {
    let table = |index: &str| {
        kernel(&format!(
            "ld.param.u64 %rd1, [p];\nmov.u32 %r1, %tid.x;\n{index}\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\n\
             $L_t: .branchtargets A, B, C;\nbrx.idx %r2, $L_t;\nA:\nmov.u32 %r3, 10;\nbra.uni D;\n\
             C:\nmov.u32 %r3, 12;\nbra.uni D;\nB:\nmov.u32 %r3, 11;\nD:\nadd.u32 %r3, %r3, %r1;\nst.global.u32 [%rd3], %r3;\nret;"
        ))
    };
    let mut ram = Ram::default();
    let data = ram.add(0x1000, vec![0; 32 * 4]);
    let params = data.to_le_bytes();
    run(table("rem.u32 %r2, %r1, 3;").kernel("k").unwrap(), &launch(1, 32, &params, &[]), &mut ram).unwrap();
    assert_eq!(ram.words(data), (0..32).map(|t| [10, 11, 12][t as usize % 3] + t).collect::<Vec<u32>>());
    let past = table("mov.u32 %r2, 3;");
    let trap = run(past.kernel("k").unwrap(), &launch(1, 32, &params, &[]), &mut ram).unwrap_err();
    assert_eq!((trap.kind, trap.addr, trap.line), (TrapKind::BadBranch, 3, 15));
    for (body, what) in [
        ("brx.idx %r1, $L_none;\nret;", "unknown .branchtargets $L_none"),
        ("$L_t: .branchtargets A, Z;\nbrx.idx %r1, $L_t;\nA:\nret;", "unknown label Z"),
    ] {
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n.reg .b32 %r<4>;\n{body}\n}}\n"
        );
        match load(&text) {
            Err(LoadError::Syntax { what: w, .. }) => assert_eq!(w, what),
            other => panic!("{body}: {other:?}"),
        }
    }
}

/// `body_kernel(body)` over one block of `threads`, its `p` at `room` words, in flat memory
/// (a warp's accesses served at once) and in memory that logs each (one at a time): the
/// words after, or the trap, from both, which must agree; and the log.
fn both_memories(body: &str, threads: u32, room: usize) -> (Result<Vec<u32>, Trap>, Vec<Logged>) {
    let module = body_kernel(body);
    let mut flat = common::Ram::default();
    let mut logged = Ram::default();
    let at = flat.add(0x1000, vec![0; room * 4]);
    logged.add(0x1000, vec![0; room * 4]);
    let params = at.to_le_bytes();
    let mut l = launch(1, threads, &params, &[]);
    l.shape.shared = 4 * threads;
    let k = module.kernel("k").unwrap();
    let a = run(k, &l, &mut flat).map(|_| flat.words(at));
    let b = run(k, &l, &mut logged).map(|_| logged.words(at));
    assert_eq!(a, b, "flat and logged memory agree on {body}");
    (a, logged.log)
}

#[test]
fn a_warps_accesses_reach_memory_in_lane_order_and_stop_at_the_first_fault() {
    let thread = |t: u32| Thread { block: [0; 3], thread: [t, 0, 0] };
    // Generic stores of eight lanes, with room for four: the fifth lane faults, the first
    // four wrote, and memory saw lanes 0 to 4 in order.
    let (got, log) = both_memories("st.u32 [%rd0], %r0;\nret;", 8, 4);
    let trap = got.unwrap_err();
    assert_eq!((trap.kind, trap.who, trap.addr), (TrapKind::Fault(Fault::Illegal), thread(4), 0x1010));
    assert_eq!(log, (0..5).map(|t| (thread(t), 0x1000 + 4 * t as u64, true)).collect::<Vec<_>>());
    // The third lane's address is misaligned: it faults before memory sees it, after the
    // first two stored.
    let odd = "setp.eq.u32 %p1, %r0, 2;\nselp.u64 %rd1, 2, 0, %p1;\nadd.s64 %rd1, %rd0, %rd1;\nst.global.u32 [%rd1], %r0;\nret;";
    let (got, log) = both_memories(odd, 4, 4);
    let trap = got.unwrap_err();
    assert_eq!((trap.kind, trap.who, trap.addr), (TrapKind::Fault(Fault::Misaligned), thread(2), 0x100a));
    assert_eq!(log.len(), 2);
    // Lanes far apart (the second at the top of the address space): each goes alone, and the
    // second faults.
    let far = "setp.eq.u32 %p1, %r0, 1;\nselp.u64 %rd1, -16, %rd0, %p1;\nst.global.u32 [%rd1], %r0;\nret;";
    let (got, log) = both_memories(far, 2, 2);
    let trap = got.unwrap_err();
    assert_eq!((trap.kind, trap.who, trap.addr), (TrapKind::Fault(Fault::Illegal), thread(1), u64::MAX - 15));
    assert_eq!(log.len(), 2);
    // A narrow signed load sign-extends, lane by lane.
    let signed = "mov.u32 %r1, 0xff;\nsub.u32 %r1, %r1, %r0;\nst.global.u8 [%rd0], %r1;\nld.global.s8 %r2, [%rd0];\nst.global.u32 [%rd0], %r2;\nret;";
    let want: Vec<u32> = (0..32).map(|t| (0xffu32 - t) as u8 as i8 as i32 as u32).collect();
    assert_eq!(both_memories(signed, 32, 32).0.unwrap(), want);
    // Generic addresses of both windows in one instruction: even lanes' in shared memory,
    // odd lanes' in global memory; the even lanes then copy theirs out.
    let mixed = ".shared .align 4 .b32 s[32];\nmov.u64 %rd1, s;\ncvta.shared.u64 %rd1, %rd1;\nmul.wide.u32 %rd2, %r0, 4;\n\
        add.s64 %rd1, %rd1, %rd2;\nand.b32 %r1, %r0, 1;\nsetp.eq.u32 %p1, %r1, 0;\nselp.b64 %rd3, %rd1, %rd0, %p1;\n\
        add.u32 %r2, %r0, 100;\nst.u32 [%rd3], %r2;\nld.u32 %r3, [%rd3];\nst.global.u32 [%rd0], %r3;\nret;";
    let (got, log) = both_memories(mixed, 32, 32);
    assert_eq!(got.unwrap(), (100..132).collect::<Vec<u32>>());
    assert!(log.iter().all(|&(_, addr, _)| addr < 0x1000 + 128), "shared accesses stay with the executor");
}

#[test]
fn debug_directives_end_where_nvcc_ends_them() {
    // `-lineinfo` and `-G` write `.file` and `.loc` without a `;` (they end at their line) and
    // `.section` with a braced body: each instruction after them runs.
    let text = ".version 8.0\n.target sm_90\n.address_size 64\n.file 1 \"k.cu\"\n.file 2 \"h.h\", 1700000000, 42\n\
        .visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n.loc 1 3 5\nld.param.u64 %rd1, [p];\n\
        .loc 1 4 5, function_name $L__info_string0, inlined_at 2 9 1\nmov.u32 %r1, 7;\n.loc 1 5 5\nadd.s32 %r1, %r1, 5;\n\
        st.global.u32 [%rd1], %r1;\nret;\n}\n.section .debug_str\n{\n$L__info_string0:\n.b8 107,0\n}\n";
    let module = load(text).unwrap_or_else(|e| panic!("{e}"));
    let mut ram = common::Ram::default();
    let out = ram.add(0x1000, vec![0; 4]);
    let params = out.to_le_bytes();
    let launch = launch(1, 1, &params, &[]);
    peerpool_ptx::run(module.kernel("k").unwrap(), &launch, &mut ram).unwrap();
    assert_eq!(ram.words(out), [12], "the mov and the add after their .loc lines both ran");
}

#[test]
fn register_ranges_and_names_shadowed_in_a_block() {
    // `%r<4>` is `%r0` to `%r3`; a block's own `%r1` hides the range's until its `}`.
    let body =
        "mov.u32 %r1, 5;\n{\n.reg .b32 %r1;\nmov.u32 %r1, 100;\n}\nadd.s32 %r2, %r1, 1;\nst.global.u32 [%rd0], %r2;";
    assert_eq!(words(&body_kernel(body), 1).unwrap(), [6]);
    let past = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<4>;\nmov.u32 %r4, 1;\nret;\n}\n";
    assert!(load(past).is_err(), "%r4 is past %r<4>");
    let padded = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<4>;\nmov.u32 %r01, 1;\nret;\n}\n";
    assert!(load(padded).is_err(), "%r01 is not %r1");
}
