//! Kernels that are not peerpool's, run by the simulator from their PTX (nvcc's, for
//! `host/shim/tests/clients/images/kernels.cu`): they compute on pool memory and module globals,
//! a granted peer's pool is theirs to touch, an ungranted one kills the process as on the
//! H200s, and launches the driver refuses are refused without harm.

mod sim_support;

use peerpool::Allocation;
use peerpool::driver::{Function, Module, Stream};
use peerpool_sim::{LinkFault, PtxLaunch, SimDriver, Topology};
use sim_support::{code, granted_alloc, pool_alloc, sim};

const KERNELS: &str = include_str!("../../ptx/tests/data/kernels.ptx");

/// `pp_test_add`'s parameters: `int *p, int n, int v`.
fn add_params(p: u64, n: i32, v: i32) -> Vec<u8> {
    [p.to_le_bytes().as_slice(), &n.to_le_bytes(), &v.to_le_bytes()].concat()
}

fn words(d: &SimDriver, at: peerpool::driver::DevicePtr, n: usize) -> Vec<i32> {
    let bytes = d.peek(at, n * 4).unwrap();
    bytes.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn launch_add(d: &SimDriver, f: Function, p: u64, n: i32) -> Result<(), peerpool::CudaError> {
    let params = add_params(p, n, 5);
    let shape = PtxLaunch { grid: [4, 1, 1], block: [256, 1, 1], shared: 0, params: &params };
    d.launch_ptx(f, &shape, Stream::LEGACY)
}

/// A newly loaded module of `KERNELS`, and its `pp_test_add`.
fn load_add(d: &SimDriver) -> (Module, Function) {
    let module = d.module_load_image(KERNELS.as_bytes()).unwrap();
    (module, d.module_get_function(module, c"pp_test_add").unwrap())
}

/// Runs `test` on two H200s with device 0's context current, given the simulator, `bytes` of a
/// pool on device 0, a newly loaded module of `KERNELS` and its `pp_test_add`.
fn on_gpu0(bytes: usize, test: impl FnOnce(&SimDriver, &Allocation, Module, Function)) {
    let (d, system) = sim(Topology::two_h200());
    let _ctx = system.enter(0).unwrap();
    let (_pool, memory) = pool_alloc(&system, 0, bytes);
    let (module, add) = load_add(&d);
    test(&d, &memory, module, add);
}

#[test]
fn a_foreign_kernel_adds_and_counts_in_its_global() {
    on_gpu0(4000, |d, memory, module, add| {
        launch_add(d, add, memory.ptr().0, 1000).unwrap();
        assert_eq!(words(d, memory.ptr(), 1000), vec![5; 1000]);
        let (counter, _) = d.module_get_global(module, b"pp_test_counter").unwrap();
        assert_eq!(d.peek(counter, 4).unwrap(), 1u32.to_le_bytes(), "thread 0 counted once");
        assert!(!d.runs_natively(add));
    });
}

#[test]
fn a_granted_peer_pool_is_touched_an_ungranted_one_kills_the_process() {
    let (d, system) = sim(Topology::two_h200());
    let (_granted_pool, granted) = granted_alloc(&system, 1, 0, 4000);
    let (_pool, ungranted) = pool_alloc(&system, 1, 4000);
    let _ctx = system.enter(0).unwrap();
    let (_, add) = load_add(&d);
    launch_add(&d, add, granted.ptr().0, 1000).unwrap();
    assert_eq!(words(&d, granted.ptr(), 1000), vec![5; 1000]);
    launch_add(&d, add, ungranted.ptr().0, 1000).expect("the fault surfaces at the next call");
    let sticky = d.sticky_error().expect("the process is dead");
    assert_eq!(sticky, peerpool::CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_eq!(words(&d, ungranted.ptr(), 1000), vec![0; 1000], "no byte changed");
}

#[test]
fn launches_the_driver_refuses_are_refused_without_harm() {
    on_gpu0(4000, |d, memory, _, add| {
        let params = add_params(memory.ptr().0, 1000, 5);
        let refused = |grid: [u32; 3], block: [u32; 3], shared: u32, params: &[u8]| {
            let shape = PtxLaunch { grid, block, shared, params };
            code(d.launch_ptx(add, &shape, Stream::LEGACY))
        };
        let invalid = Some("CUDA_ERROR_INVALID_VALUE".to_owned());
        assert_eq!(refused([1, 1, 1], [1025, 1, 1], 0, &params), invalid, "too many threads");
        assert_eq!(refused([1, 65_536, 1], [32, 1, 1], 0, &params), invalid, "grid y");
        assert_eq!(refused([0, 1, 1], [32, 1, 1], 0, &params), invalid, "empty grid");
        assert_eq!(refused([1, 1, 1], [32, 1, 1], 1 << 20, &params), invalid, "shared memory");
        assert_eq!(refused([1, 1, 1], [32, 1, 1], 0, &params[..12]), invalid, "parameters cut short");
        assert!(d.sticky_error().is_none());
        assert_eq!(words(d, memory.ptr(), 1000), vec![0; 1000]);
    });
}

#[test]
fn a_kernel_of_an_unloaded_module_is_an_invalid_handle() {
    on_gpu0(4096, |d, memory, module, add| {
        launch_add(d, add, memory.ptr().0, 4).unwrap();
        d.module_unload(module).unwrap();
        assert_eq!(code(launch_add(d, add, memory.ptr().0, 4)).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"));
        assert!(d.sticky_error().is_none());
    });
}

/// A foreign kernel's peer accesses cross the link as copies do: a link that drops every byte
/// it carries leaves a read of the peer's memory zero, and a write to it unmade.
#[test]
fn a_foreign_kernel_s_peer_accesses_cross_a_faulty_link() {
    let dropped = |from: usize, to: usize| {
        let mut topology = Topology::two_h200();
        topology.set_fault(from, to, Some(LinkFault { period: 1, ..LinkFault::drop_bytes() }));
        let (d, system) = sim(topology);
        let (_pool, memory) = granted_alloc(&system, 1, 0, 4000);
        memory.write(&7i32.to_le_bytes().repeat(1000)).unwrap();
        let _ctx = system.enter(0).unwrap();
        let (_module, add) = load_add(&d);
        launch_add(&d, add, memory.ptr().0, 1000).unwrap();
        assert!(d.sticky_error().is_none());
        words(&d, memory.ptr(), 1000)
    };
    assert_eq!(dropped(1, 0), vec![5; 1000], "each read of the peer's 7 arrives as 0");
    assert_eq!(dropped(0, 1), vec![7; 1000], "each write of 12 to the peer is lost");
}

/// Host memory registered read-only is the kernels' to read and never to write: a foreign
/// kernel's store there faults, with no byte changed.
#[test]
fn a_foreign_kernel_s_write_to_read_only_host_memory_faults() {
    const READ_ONLY: u32 = 0x08;
    let (d, system) = sim(Topology::two_h200());
    let _ctx = system.enter(0).unwrap();
    let mut host = vec![7i32; 1000];
    let at = host.as_mut_ptr() as u64;
    // SAFETY: `host` outlives every use of the registration (it is dropped after the checks).
    unsafe { d.mem_host_register(at, 4000, READ_ONLY) }.unwrap();
    let (_module, add) = load_add(&d);
    launch_add(&d, add, at, 1000).expect("the fault surfaces at the next call");
    assert_eq!(d.sticky_error(), Some(peerpool::CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS));
    assert_eq!(host, vec![7; 1000], "no byte changed");
}

/// `sync(u32 *out)`: each block's thread 0 adds 1 to the grid workspace's counter and spins
/// until every block has, then writes how many it saw; a kernel with no workspace traps.
const GRID_SYNC: &str = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry sync(.param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    mov.u32 %r0, %envreg1; mov.u32 %r1, %envreg2;
    cvt.u64.u32 %rd0, %r0; cvt.u64.u32 %rd1, %r1; shl.b64 %rd0, %rd0, 32; or.b64 %rd2, %rd0, %rd1;
    setp.eq.u64 %p0, %rd2, 0;
    @%p0 trap;
    mov.u32 %r2, %tid.x; setp.ne.u32 %p1, %r2, 0;
    @%p1 ret;
    mov.u32 %r3, %nctaid.x;
    atom.add.release.gpu.u32 %r4, [%rd2], 1;
WAIT:
    ld.acquire.gpu.u32 %r5, [%rd2];
    setp.lt.u32 %p2, %r5, %r3;
    @%p2 bra WAIT;
    ld.param.u64 %rd3, [out]; mov.u32 %r6, %ctaid.x; mul.wide.u32 %rd4, %r6, 4; add.s64 %rd5, %rd3, %rd4;
    st.global.u32 [%rd5], %r5;
}
";

#[test]
fn cooperative_launches_hold_every_block_at_once_and_make_the_workspace_later_ordinary_ones_get() {
    let (d, system) = sim(Topology::two_h200());
    let _ctx = system.enter(0).unwrap();
    let (_pool, memory) = pool_alloc(&system, 0, 4 * 64);
    let module = d.module_load_image(GRID_SYNC.as_bytes()).unwrap();
    let f = d.module_get_function(module, c"sync").unwrap();
    let params = memory.ptr().0.to_le_bytes();
    let shape = |blocks: u32| PtxLaunch { grid: [blocks, 1, 1], block: [64, 1, 1], shared: 0, params: &params };
    d.launch_ptx_cooperative(f, &shape(48), Stream::LEGACY).unwrap();
    assert_eq!(words(&d, memory.ptr(), 48), vec![48; 48], "every block saw every other arrive");
    // An H200 holds 32 blocks of 64 threads on each of its 132 multiprocessors.
    let too_many = d.launch_ptx_cooperative(f, &shape(132 * 32 + 1), Stream::LEGACY);
    assert_eq!(code(too_many).as_deref(), Some("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"));
    // Ordinarily too, now that the context has its workspace, where the device holds every block.
    d.launch_ptx(f, &shape(64), Stream::LEGACY).unwrap();
    assert_eq!(words(&d, memory.ptr(), 64), vec![64; 64]);
    assert!(d.sticky_error().is_none());
}

#[test]
fn occupancy_is_an_h200_multiprocessors_by_threads_blocks_and_shared_memory() {
    let (d, system) = sim(Topology::two_h200());
    let _ctx = system.enter(0).unwrap();
    let module = d.module_load_image(GRID_SYNC.as_bytes()).unwrap();
    let f = d.module_get_function(module, c"sync").unwrap();
    let blocks = |threads: i32, bytes: usize| d.occupancy_max_active_blocks(f, threads, bytes).unwrap();
    // At most 32 blocks and 2048 threads; 228 KiB of shared memory, 1 KiB of it reserved a block.
    assert_eq!([blocks(32, 0), blocks(96, 0), blocks(256, 0), blocks(1024, 0)], [32, 21, 8, 2]);
    assert_eq!(blocks(64, 40_000), 5);
    // Past what a block may have: none.
    assert_eq!([blocks(1025, 0), blocks(64, 50_000)], [0, 0]);
    assert_eq!(code(d.occupancy_max_active_blocks(f, 0, 0)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
    let potential =
        |bytes_of: &dyn Fn(i32) -> usize, limit| d.occupancy_max_potential_block_size(f, bytes_of, limit).unwrap();
    assert_eq!(potential(&|_| 0, 0), (132 * 2, 1024));
    assert_eq!(potential(&|_| 0, 200), (132 * 16, 128), "a limit not a warp's multiple is tried as it is");
    assert_eq!(potential(&|t| t as usize * 160, 0), (132 * 6, 224), "the largest of the best");
}

#[test]
fn before_a_cooperative_launch_an_ordinary_one_finds_no_workspace() {
    let (d, system) = sim(Topology::two_h200());
    let _ctx = system.enter(0).unwrap();
    let (_pool, memory) = pool_alloc(&system, 0, 64);
    let module = d.module_load_image(GRID_SYNC.as_bytes()).unwrap();
    let f = d.module_get_function(module, c"sync").unwrap();
    let params = memory.ptr().0.to_le_bytes();
    let shape = PtxLaunch { grid: [2, 1, 1], block: [32, 1, 1], shared: 0, params: &params };
    d.launch_ptx(f, &shape, Stream::LEGACY).expect("the trap surfaces at the next call");
    assert_eq!(d.sticky_error(), Some(peerpool::CudaCode::CUDA_ERROR_LAUNCH_FAILED));
}

/// A kernel that synchronises its grid as numba-cuda's `cg.this_grid().sync()` compiles: through
/// the device runtime's `cudaCGGetIntrinsicHandle` and `cudaCGSynchronize`. Every block adds 1
/// to `out[0]`, the grid waits, then each block writes what it sees at `out[1 + block]`; twice.
const DEVICE_RUNTIME_CALLER: &str = "
.version 8.0
.target sm_90
.address_size 64
.extern .func (.param .b64 r) cudaCGGetIntrinsicHandle (.param .b32 scope);
.extern .func (.param .b32 r) cudaCGSynchronize (.param .b64 h, .param .b32 flags);
.visible .entry twice(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    { .param .b32 s; st.param.b32 [s], 1; .param .b64 h; call.uni (h), cudaCGGetIntrinsicHandle, (s); ld.param.b64 %rd2, [h]; }
    mov.u32 %r1, %tid.x; setp.eq.u32 %p1, %r1, 0;
    mov.u32 %r2, %ctaid.x; mul.wide.u32 %rd3, %r2, 4; add.s64 %rd4, %rd1, %rd3;
    mov.u32 %r5, 0;
LOOP:
    @%p1 atom.global.add.u32 %r3, [%rd1], 1;
    { .param .b64 h; st.param.b64 [h], %rd2; .param .b32 f; st.param.b32 [f], 0; .param .b32 r; call.uni (r), cudaCGSynchronize, (h, f); }
    ld.volatile.global.u32 %r4, [%rd1];
    @%p1 st.global.u32 [%rd4+4], %r4;
    { .param .b64 h; st.param.b64 [h], %rd2; .param .b32 f; st.param.b32 [f], 0; .param .b32 r; call.uni (r), cudaCGSynchronize, (h, f); }
    add.u32 %r5, %r5, 1;
    setp.lt.u32 %p0, %r5, 2;
    @%p0 bra LOOP;
}
";

#[test]
fn the_device_runtime_links_as_ptx_that_synchronises_a_cooperative_grid() {
    let (d, system) = sim(Topology::two_h200());
    let _ctx = system.enter(0).unwrap();
    let (_pool, memory) = pool_alloc(&system, 0, 4 * 65);
    let linked = peerpool_sim::image::link::link(&[
        DEVICE_RUNTIME_CALLER.as_bytes(),
        peerpool_sim::image::devrt::PTX.as_bytes(),
    ])
    .unwrap();
    let module = d.module_load_image(linked.as_bytes()).unwrap();
    let f = d.module_get_function(module, c"twice").unwrap();
    let params = memory.ptr().0.to_le_bytes();
    let shape = PtxLaunch { grid: [64, 1, 1], block: [96, 1, 1], shared: 0, params: &params };
    d.launch_ptx_cooperative(f, &shape, Stream::LEGACY).unwrap();
    // After the second round every block saw all 64 of the first, then all 128.
    assert_eq!(words(&d, memory.ptr(), 65), [vec![128], vec![128; 64]].concat());
    // Without the workspace (an ordinary launch before any cooperative one) it traps.
    let (d, system) = sim(Topology::two_h200());
    let _ctx = system.enter(0).unwrap();
    let (_pool, memory) = pool_alloc(&system, 0, 4 * 65);
    let module = d.module_load_image(linked.as_bytes()).unwrap();
    let f = d.module_get_function(module, c"twice").unwrap();
    let params = memory.ptr().0.to_le_bytes();
    let shape = PtxLaunch { grid: [2, 1, 1], block: [32, 1, 1], shared: 0, params: &params };
    d.launch_ptx(f, &shape, Stream::LEGACY).expect("the trap surfaces at the next call");
    assert_eq!(d.sticky_error(), Some(peerpool::CudaCode::CUDA_ERROR_LAUNCH_FAILED));
}

/// A jump table's index past its list: on an H200 the launch hung, here it times out, sticky.
#[test]
fn a_jump_table_index_past_its_list_is_a_launch_that_would_hang() {
    let text = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u32 i)\n{\n.reg .b32 %r<2>;\n\
                ld.param.u32 %r1, [i];\nts: .branchtargets A, B;\nbrx.idx %r1, ts;\nA:\nret;\nB:\nret;\n}\n";
    let (d, system) = sim(Topology::two_h200());
    let _ctx = system.enter(0).unwrap();
    let module = d.module_load_image(text.as_bytes()).unwrap();
    let f = d.module_get_function(module, c"k").unwrap();
    for (index, sticky) in [(1u32, None), (2, Some(peerpool::CudaCode::CUDA_ERROR_LAUNCH_TIMEOUT))] {
        let params = index.to_le_bytes();
        let shape = PtxLaunch { grid: [1, 1, 1], block: [32, 1, 1], shared: 0, params: &params };
        d.launch_ptx(f, &shape, Stream::LEGACY).unwrap();
        assert_eq!(d.sticky_error(), sticky, "index {index}");
    }
}

/// Clusters' occupancy as an H200 answered (`docs/hardware/2026-12-03-jump-tables-grid-sync`):
/// per group of multiprocessors a cluster fits in, at most 8 blocks a multiprocessor.
#[test]
fn cluster_occupancy_is_an_h200_s_groups_of_multiprocessors() {
    let (d, system) = sim(Topology::two_h200());
    let _ctx = system.enter(0).unwrap();
    let module = d.module_load_image(GRID_SYNC.as_bytes()).unwrap();
    let f = d.module_get_function(module, c"sync").unwrap();
    let active = |threads: u32, shared: u32, c: u32| {
        let launch = PtxLaunch { grid: [c * 16, 1, 1], block: [threads, 1, 1], shared, params: &[] };
        d.occupancy_max_active_clusters(f, &launch, Some([c, 1, 1]))
    };
    let answers: Vec<i32> = [1, 2, 3, 4, 8].iter().map(|&c| active(32, 0, c).unwrap()).collect();
    assert_eq!(answers, [1056, 528, 327, 248, 124]);
    assert_eq!(active(1024, 0, 3).unwrap(), 79);
    assert_eq!(code(active(32, 0, 9)).as_deref(), Some("CUDA_ERROR_INVALID_CLUSTER_SIZE"));
    assert_eq!(d.occupancy_max_potential_cluster_size(f).unwrap(), 8);
    // Non-portable sizes allowed (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED).
    d.func_set_attribute(f, 14, 1).unwrap();
    assert_eq!([active(32, 0, 16).unwrap(), active(32, 0, 17).unwrap()], [58, 16]);
    assert_eq!(d.occupancy_max_potential_cluster_size(f).unwrap(), 16);
    let launch = PtxLaunch { grid: [16, 1, 1], block: [32, 1, 1], shared: 0, params: &[] };
    assert_eq!(d.occupancy_max_active_clusters(f, &launch, None).unwrap(), 0, "no cluster dimension");
}

/// A grid barrier of the program's own making in an ordinary launch: every block counts itself
/// in and waits for the rest, which works where the device holds them all, as on a GPU.
#[test]
fn an_ordinary_launch_whose_blocks_wait_for_each_other_runs_them_side_by_side() {
    const BARRIER: &str = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry barrier(.param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x; setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    mov.u32 %r2, %nctaid.x;
    atom.global.add.u32 %r3, [%rd1], 1;
WAIT:
    ld.volatile.global.u32 %r3, [%rd1];
    setp.lt.u32 %p2, %r3, %r2;
    @%p2 bra WAIT;
    mov.u32 %r4, %ctaid.x; mul.wide.u32 %rd2, %r4, 4; add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3+4], %r3;
DONE:
    ret;
}
";
    let (d, system) = sim(Topology::two_h200());
    let _ctx = system.enter(0).unwrap();
    let (_pool, memory) = pool_alloc(&system, 0, 4 * 33);
    let module = d.module_load_image(BARRIER.as_bytes()).unwrap();
    let f = d.module_get_function(module, c"barrier").unwrap();
    let params = memory.ptr().0.to_le_bytes();
    let shape = PtxLaunch { grid: [32, 1, 1], block: [128, 1, 1], shared: 0, params: &params };
    d.launch_ptx(f, &shape, Stream::LEGACY).unwrap();
    assert_eq!(words(&d, memory.ptr(), 33), vec![32; 33]);
    assert!(d.sticky_error().is_none());
}

/// A warp's accesses go to memory together up to the end of their allocation: the lanes past
/// it fault alone. Warps before the faulting one have added; the faulting warp stops at its
/// loads, so none of its words change, in the allocation or past it.
#[test]
fn a_warp_running_past_its_allocation_faults_at_the_first_lane_outside() {
    on_gpu0(4000, |d, memory, _, add| {
        launch_add(d, add, memory.ptr().0, 1008).expect("the fault surfaces at the next call");
        assert_eq!(d.sticky_error(), Some(peerpool::CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS));
        let got = d.peek(memory.ptr(), 4000).unwrap();
        let got: Vec<i32> = got.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(got[..992], [5; 992], "every warp before the last added");
        assert_eq!(got[992..], [0; 8], "the last warp's lanes inside read, then its ninth lane faulted");
    });
}
