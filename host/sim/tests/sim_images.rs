//! Images that are not peerpool's: they load, their kernels are listed and described and their
//! globals live in device memory (their kernels run from PTX: `sim_ptx_kernels.rs`); peerpool's
//! own kernels run natively wherever they are loaded from. Libraries load lazily.

mod sim_support;

use peerpool::driver::{KernelArg, LaunchShape, Stream};
use peerpool_sim::Topology;
use sim_support::{code, pool_alloc, sim};

/// A foreign module: a kernel, a counter and an initialised constant.
const FOREIGN: &str = r#"
.version 9.0
.target sm_90
.address_size 64
.global .align 4 .u32 counter;
.const .align 4 .f32 scale = 0f40000000;
.visible .entry my_add(
	.param .u64 my_add_param_0,
	.param .u32 my_add_param_1,
	.param .u32 my_add_param_2
)
.maxntid 128, 1, 1
{
	.shared .align 4 .b8 tile[400];
	ret;
}
"#;

fn current(system: &peerpool::System) -> peerpool::CurrentContext<'_> {
    system.enter(0).unwrap()
}

#[test]
fn a_foreign_module_lists_describes_and_refuses_to_launch() {
    let (d, system) = sim(Topology::two_h200());
    let _ctx = current(&system);
    let module = d.module_load_image(FOREIGN.as_bytes()).unwrap();
    assert_eq!(d.module_function_count(module).unwrap(), 1);
    let [f] = d.module_functions(module, 8).unwrap()[..] else { panic!("one function") };
    assert_eq!(d.func_name(f).unwrap(), "my_add");
    assert_eq!(d.module_get_function(module, c"my_add").unwrap(), f, "one handle per kernel");
    assert_eq!(code(d.module_get_function(module, c"nope")).as_deref(), Some("CUDA_ERROR_NOT_FOUND"));
    let params: Vec<_> = (0..3).map(|i| d.func_get_param_info(f, i).unwrap()).collect();
    assert_eq!(params, [(0, 8), (8, 4), (12, 4)]);
    assert_eq!(code(d.func_get_param_info(f, 3)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
    // Threads per block, static shared, constant bytes, PTX and binary versions, dynamic shared.
    let attrs: Vec<i32> = [0, 1, 2, 5, 6, 8].iter().map(|&a| d.func_get_attribute(f, a).unwrap()).collect();
    assert_eq!(attrs, [128, 400, 4, 90, 90, 49_152 - 400]);
    d.func_set_attribute(f, 8, 8192).unwrap();
    assert_eq!(d.func_get_attribute(f, 8).unwrap(), 8192);
    assert_eq!(
        code(d.func_set_attribute(f, 8, 232_448)).as_deref(),
        Some("CUDA_ERROR_INVALID_VALUE"),
        "static included"
    );
    assert_eq!(code(d.func_set_attribute(f, 0, 64)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"), "read-only");
    assert_eq!(code(d.func_get_attribute(f, 16)).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"));
    // Through the seam only peerpool's kernels launch (others run by `launch_ptx`): refused,
    // not sticky.
    let (_pool, memory) = pool_alloc(&system, 0, 4096);
    let args = [KernelArg::Ptr(memory.ptr()), KernelArg::U32(4), KernelArg::U32(5)];
    let shape = LaunchShape { grid: 1, block: 32 };
    // SAFETY: live handles; the simulator checks the rest.
    let launched = unsafe { peerpool::driver::Driver::launch_kernel(&*d, f, shape, Stream::LEGACY, &args) };
    assert_eq!(code(launched).as_deref(), Some("CUDA_ERROR_NOT_SUPPORTED"));
    assert!(!d.runs_natively(f));
    assert!(d.sticky_error().is_none());
}

#[test]
fn globals_hold_their_initial_bytes_and_go_with_their_module() {
    let (d, system) = sim(Topology::two_h200());
    let _ctx = current(&system);
    let before = d.stats();
    let module = d.module_load_image(FOREIGN.as_bytes()).unwrap();
    let (scale, size) = d.module_get_global(module, b"scale").unwrap();
    assert_eq!(size, 4);
    assert_eq!(d.peek(scale, 4).unwrap(), 2.0f32.to_le_bytes());
    let (counter, size) = d.module_get_global(module, b"counter").unwrap();
    assert_eq!((size, d.peek(counter, 4).unwrap()), (4, vec![0; 4]));
    assert_eq!(code(d.module_get_global(module, b"nope")).as_deref(), Some("CUDA_ERROR_NOT_FOUND"));
    assert_eq!(code(d.module_get_global(module, b"my_add")).as_deref(), Some("CUDA_ERROR_INVALID_VALUE"), "a kernel");
    // SAFETY: a live address; the simulator checks it.
    let freed = unsafe { peerpool::driver::Driver::mem_free(&*d, counter) };
    assert!(freed.is_err(), "a module's global is not cuMemFree's");
    d.module_unload(module).unwrap();
    assert!(d.peek(counter, 4).is_none(), "gone with its module");
    assert_eq!(code(d.module_unload(module)).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"));
    assert_eq!(d.stats(), before);
}

#[test]
fn peerpools_kernels_run_from_a_module_that_also_holds_foreign_ones() {
    let (d, system) = sim(Topology::two_h200());
    let _ctx = current(&system);
    let mixed = format!("{}\n.visible .entry my_kernel(\n.param .u64 p\n)\n{{ ret; }}\n", peerpool_kernels::PTX);
    let module = d.module_load_image(mixed.as_bytes()).unwrap();
    let (_pool, memory) = pool_alloc(&system, 0, 4096);
    let fill = d.module_get_function(module, c"pp_fill").unwrap();
    let args = [KernelArg::Ptr(memory.ptr()), KernelArg::U64(1024), KernelArg::U32(7)];
    let shape = LaunchShape { grid: 4, block: 256 };
    // SAFETY: live handles and a whole allocation.
    unsafe { peerpool::driver::Driver::launch_kernel(&*d, fill, shape, Stream::LEGACY, &args) }.unwrap();
    let first = u32::from_le_bytes(d.peek(memory.ptr(), 4).unwrap().try_into().unwrap());
    assert_eq!(first, peerpool_kernels::pattern::pattern(0, 7));
    assert!(d.runs_natively(fill));
    let mine = d.module_get_function(module, c"my_kernel").unwrap();
    assert!(!d.runs_natively(mine));
    // peerpool's cubin through the same door.
    let cubin = peerpool_kernels::SM90_CUBIN.expect("embedded while its PTX hash matches");
    let module = d.module_load_image(cubin).unwrap();
    assert_eq!(d.module_function_count(module).unwrap() as usize, peerpool_kernels::ENTRY_POINTS.len());
}

#[test]
fn bad_images_are_codes() {
    let (d, system) = sim(Topology::two_h200());
    let _ctx = current(&system);
    let garbage: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8).collect();
    assert_eq!(code(d.module_load_image(&garbage)).as_deref(), Some("CUDA_ERROR_INVALID_IMAGE"));
    assert_eq!(code(d.module_load_image(b"this is not PTX")).as_deref(), Some("CUDA_ERROR_INVALID_IMAGE"));
    let newer = FOREIGN.replace("sm_90", "sm_100");
    assert_eq!(code(d.module_load_image(newer.as_bytes())).as_deref(), Some("CUDA_ERROR_INVALID_PTX"));
    let cubin = peerpool_kernels::SM90_CUBIN.expect("embedded while its PTX hash matches");
    let (d8, system8) = sim(peerpool_sim::catalog_topology("four_gpu_islands").unwrap());
    let _ctx8 = current(&system8);
    assert_eq!(code(d8.module_load_image(cubin)).as_deref(), Some("CUDA_ERROR_NO_BINARY_FOR_GPU"));
    assert_eq!(d.stats().modules, 0);
}

#[test]
fn libraries_load_lazily_and_answer_what_their_image_holds() {
    let (d, system) = sim(Topology::two_h200());
    // No context needed to load or to count.
    let lib = d.library_load(Ok(FOREIGN.as_bytes().to_vec())).unwrap();
    assert_eq!(d.library_kernel_count(lib).unwrap(), 1);
    let kernel = d.library_get_kernel(lib, b"my_add").unwrap();
    assert_eq!(d.library_get_kernel(lib, b"my_add").unwrap(), kernel, "one handle per name");
    assert_eq!(d.library_kernels(lib, 4).unwrap(), [kernel]);
    assert_eq!(d.kernel_name(kernel).unwrap(), "my_add");
    assert_eq!(d.kernel_get_attribute(kernel, 0, 0).unwrap(), 128);
    assert_eq!(code(d.kernel_get_attribute(kernel, 0, 5)).as_deref(), Some("CUDA_ERROR_INVALID_DEVICE"));
    assert_eq!(code(d.kernel_get_function(kernel)).as_deref(), Some("CUDA_ERROR_INVALID_CONTEXT"));
    {
        let _ctx = current(&system);
        let f = d.kernel_get_function(kernel).unwrap();
        assert_eq!(d.kernel_get_function(kernel).unwrap(), f);
        let module = d.library_get_module(lib).unwrap();
        assert_eq!(d.module_get_function(module, c"my_add").unwrap(), f, "the library's module's function");
        assert_eq!(d.library_get_global(lib, b"scale").unwrap().1, 4);
        assert_eq!(d.func_get_module(f).unwrap(), module);
        assert_eq!(d.kernel_get_library(kernel).unwrap(), lib);
        assert_eq!(d.kernel_get_param_info(kernel, 1).unwrap(), (8, 4));
        // A kernel's setting reaches its function on that device, made or still to be made.
        d.kernel_set_attribute(kernel, 8, 4096, 0).unwrap();
        assert_eq!(d.func_get_attribute(f, 8).unwrap(), 4096);
        assert_eq!(d.kernel_get_attribute(kernel, 8, 0).unwrap(), 4096);
        assert_eq!(d.kernel_get_attribute(kernel, 8, 1).unwrap(), 49_152 - 400, "another device's");
        assert_eq!(code(d.library_get_managed(lib, b"scale")).as_deref(), Some("CUDA_ERROR_NOT_FOUND"), "not managed");
    }
    d.library_unload(lib).unwrap();
    assert_eq!(code(d.kernel_get_function(kernel)).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"));
    assert_eq!(code(d.library_unload(lib)).as_deref(), Some("CUDA_ERROR_INVALID_HANDLE"));
    assert_eq!(d.stats().modules, 0, "its modules went with it");
    // Garbage loads; a call that needs what it holds answers what reading it found.
    let garbage = d.library_load(Ok(b"this is not PTX".to_vec())).unwrap();
    assert_eq!(d.library_kernel_count(garbage).unwrap(), 0);
    assert_eq!(code(d.library_get_kernel(garbage, b"k")).as_deref(), Some("CUDA_ERROR_INVALID_IMAGE"));
    let _ctx = current(&system);
    assert_eq!(code(d.library_get_module(garbage)).as_deref(), Some("CUDA_ERROR_INVALID_IMAGE"));
    let unreadable = d.library_load(Err(peerpool::CudaCode::CUDA_ERROR_UNKNOWN)).unwrap();
    assert_eq!(code(d.library_get_global(unreadable, b"x")).as_deref(), Some("CUDA_ERROR_UNKNOWN"));
}

/// `__managed__` variables: one for all of a library's contexts, in memory the host reaches at
/// the same address, holding its initial bytes; gone with the library.
#[test]
fn a_librarys_managed_variables_are_one_for_every_context() {
    let ptx =
        FOREIGN.replace(".global .align 4 .u32 counter;", ".global .attribute(.managed) .align 4 .u32 counter = 41;");
    let (d, system) = sim(Topology::two_h200());
    let lib = d.library_load(Ok(ptx.into_bytes())).unwrap();
    let on0 = {
        let _ctx = system.enter(0).unwrap();
        d.library_get_managed(lib, b"counter").unwrap()
    };
    let on1 = {
        let _ctx = system.enter(1).unwrap();
        d.library_get_managed(lib, b"counter").unwrap()
    };
    assert_eq!(on0, on1, "one variable for both devices' contexts");
    assert_eq!(on0.1, 4);
    // SAFETY: managed memory the simulator placed at its host address, 4 bytes, alive.
    let value = unsafe { (on0.0.0 as *const u32).read() };
    assert_eq!(value, 41, "its initial value, read by the host where it lies");
    let _ctx = system.enter(0).unwrap();
    assert_eq!(code(d.library_get_managed(lib, b"scale")).as_deref(), Some("CUDA_ERROR_NOT_FOUND"));
    d.library_unload(lib).unwrap();
    assert_eq!(d.stats().modules, 0);
}

#[test]
fn nvccs_compressed_fatbins_read_as_the_h200_described_them() {
    // Found at run time: an archived test runs from another path than the build's.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo test or nextest");
    let dir = std::path::Path::new(&manifest).join("tests/images");
    for name in ["kernels.lz4.fatbin", "kernels.zstd.fatbin"] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let contents = peerpool_sim::image::read(&bytes, (9, 0), peerpool_sim::image::ptx::NEWEST_ISA)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(contents.code, peerpool_sim::image::Code::Machine((9, 0)), "{name}: the sm_90 cubin");
        let add = contents.kernel(b"pp_test_add").unwrap();
        let layout: Vec<_> = add.params.iter().map(|p| (p.offset, p.size)).collect();
        assert_eq!(layout, [(0, 8), (8, 4), (12, 4)], "{name}");
        assert_eq!(contents.global(b"pp_test_counter").map(|g| g.size), Some(4), "{name}");
        assert_eq!(contents.global(b"pp_test_scale_by").unwrap().init, 2.0f32.to_le_bytes(), "{name}");
        assert_eq!(contents.const_bytes, 4, "{name}");
        // On a device without sm_90 code's major version, the PTX entry: compute_90 PTX.
        let ptx = peerpool_sim::image::read(&bytes, (10, 0), peerpool_sim::image::ptx::NEWEST_ISA).unwrap();
        assert_eq!(ptx.code, peerpool_sim::image::Code::Ptx((9, 0)), "{name}");
        assert_eq!(ptx.kernels.len(), 2, "{name}");
    }
}

/// A kernel around `body` (after its registers), PTX ISA 9.0 for sm_90.
fn module_with(body: &str) -> String {
    format!(
        ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n.reg .b32 %r<4>;\n\
         .reg .b64 %rd<4>;\n{body}\nret;\n}}\n"
    )
}

#[test]
fn ptx_is_compiled_at_load_and_refused_there_with_the_jits_log() {
    let (d, system) = sim(Topology::two_h200());
    let _ctx = current(&system);
    // What ptxas refuses: the driver's code at the load, the error in ptxas's words, its line.
    for (body, says) in [
        ("ld.parm.u64 %rd1, [p];", "Unknown modifier '.parm'"),
        ("frob.b32 %r1, 1;", "Not a name of any known instruction: 'frob'"),
        ("mov.u32 %r9, 1;", "Unknown symbol '%r9'"),
    ] {
        let (loaded, log) = d.module_load_logged(module_with(body).as_bytes());
        assert_eq!(code(loaded).as_deref(), Some("CUDA_ERROR_INVALID_PTX"), "{body}");
        assert!(log.error.starts_with("ptxas application ptx input, line 8; error   : "), "{body}: {}", log.error);
        assert!(log.error.contains(says), "{body}: {}", log.error);
    }
    // Valid PTX the executor does not run: refused at the load, not at a launch.
    let (loaded, log) = d.module_load_logged(module_with("wgmma.fence.sync.aligned;").as_bytes());
    assert_eq!(code(loaded).as_deref(), Some("CUDA_ERROR_NOT_SUPPORTED"));
    assert!(log.error.is_empty(), "NVIDIA's driver would take it: no error of the JIT's");
    // Valid PTX: empty logs, as the driver's were.
    let (loaded, log) = d.module_load_logged(module_with("mov.u32 %r1, 1;").as_bytes());
    assert!(loaded.is_ok());
    assert_eq!(log, peerpool_sim::jit::JitLog::default());
}

#[test]
fn the_driver_version_decides_which_ptx_loads() {
    let text = module_with("mov.u32 %r1, 1;").replace(".version 9.0", ".version 9.5");
    let (d, system) = sim(Topology::two_h200());
    let _ctx = current(&system);
    assert!(d.module_load_image(text.as_bytes()).is_ok(), "the default driver reads ISA 9.5");
    drop(_ctx);
    let mut older = Topology::two_h200();
    older.driver_version = 13_000;
    let (d, system) = sim(older);
    let _ctx = current(&system);
    assert_eq!(d.driver_get_version().unwrap(), 13_000);
    let (loaded, log) = d.module_load_logged(text.as_bytes());
    assert_eq!(code(loaded).as_deref(), Some("CUDA_ERROR_UNSUPPORTED_PTX_VERSION"));
    assert!(log.error.contains("Unsupported .version 9.5; current version is '9.0'"), "{}", log.error);
    assert!(d.module_load_image(module_with("mov.u32 %r1, 1;").as_bytes()).is_ok(), "ISA 9.0 does");
}
