//! Which image of the kernels a device loads: the sm_90 cubin on compute capability 9.0, the
//! PTX elsewhere, and the PTX again when the driver refuses the cubin as an image (an older
//! driver may not read a newer ptxas's output); any other load failure is reported.

mod sim_support;

use peerpool::CudaCode;
use peerpool::driver::{Cubin, ImageError, ModuleImage};
use peerpool::fault::{FaultInjector, Rule};
use peerpool::{KernelImage, System, ptx_image};
use peerpool_sim::{SimDriver, Topology};
use sim_support::{code, pool_alloc, sim};
use std::sync::Arc;

fn with_compute_capability(cc: (i32, i32)) -> Topology {
    let mut t = Topology::two_h200();
    for d in &mut t.devices {
        d.compute_capability = cc;
    }
    t
}

/// A fill and check through the loaded kernels, to show they run.
fn kernels_run(system: &System, device: usize) {
    let (_pool, memory) = pool_alloc(system, device, 4096);
    let kernels = system.kernels(device).unwrap();
    kernels.fill(memory.as_slice(), 7).unwrap();
    assert!(kernels.compare_pattern(memory.as_slice(), 7).unwrap().is_clean());
}

#[test]
fn hopper_devices_load_the_cubin_and_others_the_ptx() {
    let cubin = peerpool_kernels::SM90_CUBIN.expect("the committed cubin is fresh (kernels/tests/ptx.rs)");
    assert!(!cubin.is_empty());
    for (cc, expected) in [((9, 0), KernelImage::Sm90Cubin), ((8, 0), KernelImage::Ptx), ((10, 0), KernelImage::Ptx)] {
        let (_, system) = sim(with_compute_capability(cc));
        assert_eq!(system.kernels(0).unwrap().image(), expected, "compute capability {cc:?}");
        kernels_run(&system, 0);
    }
}

#[test]
fn a_refused_cubin_falls_back_to_the_ptx() {
    let injector = Arc::new(FaultInjector::new(Arc::new(SimDriver::new(Topology::two_h200()))));
    injector.add_rule(Rule::nth("cuModuleLoadData", 1, CudaCode::CUDA_ERROR_NO_BINARY_FOR_GPU).sticky(false));
    let system = System::with_driver(injector.clone()).unwrap();
    assert_eq!(system.kernels(0).unwrap().image(), KernelImage::Ptx);
    assert_eq!(injector.count("cuModuleLoadData"), 2, "the cubin, then the PTX");
    kernels_run(&system, 0);
    // The other device still tries its cubin first.
    assert_eq!(system.kernels(1).unwrap().image(), KernelImage::Sm90Cubin);
}

#[test]
fn other_load_failures_are_reported_not_hidden() {
    let injector = Arc::new(FaultInjector::new(Arc::new(SimDriver::new(Topology::two_h200()))));
    injector.add_rule(Rule::nth("cuModuleLoadData", 1, CudaCode::CUDA_ERROR_OUT_OF_MEMORY).sticky(false));
    let system = System::with_driver(injector.clone()).unwrap();
    let error = system.kernels(0).err().expect("the load failed");
    assert!(error.to_string().contains("cuModuleLoadData"), "{error}");
    assert_eq!(injector.count("cuModuleLoadData"), 1, "no fallback after an out-of-memory");
    // Nothing stayed loaded: the next call loads the cubin.
    assert_eq!(system.kernels(0).unwrap().image(), KernelImage::Sm90Cubin);
}

#[test]
fn the_simulator_refuses_machine_code_for_another_gpu_and_non_elf_images() {
    let cubin = peerpool_kernels::SM90_CUBIN.unwrap();
    let sm90 = ModuleImage::Cubin(Cubin::new(cubin).unwrap());
    let (driver, system) = sim(with_compute_capability((8, 0)));
    {
        let _current = system.enter(0).unwrap();
        assert_eq!(code(driver.module_load_data(sm90)).as_deref(), Some("CUDA_ERROR_NO_BINARY_FOR_GPU"));
    }
    assert_eq!(Cubin::new(b"not an elf").unwrap_err(), ImageError::NotElf, "refused before any driver");
    // On the GPU it was built for, it loads and names every entry.
    let (driver, system) = sim(with_compute_capability((9, 0)));
    let _current = system.enter(0).unwrap();
    let module = driver.module_load_data(sm90).unwrap();
    for name in peerpool_kernels::ENTRY_POINTS {
        let name = std::ffi::CString::new(name).unwrap();
        assert!(driver.module_get_function(module, &name).is_ok(), "{name:?}");
    }
    driver.module_unload(module).unwrap();
    assert!(driver.module_load_data(ModuleImage::Ptx(ptx_image())).is_ok());
}
