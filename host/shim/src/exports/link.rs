//! The JIT linker (`cuLinkCreate`, `cuLinkAddData`, `cuLinkAddFile`, `cuLinkComplete`,
//! `cuLinkDestroy`), as programs that compile kernels at run time use it. The simulator compiles
//! nothing: linking one image (PTX, a cubin or a fatbin) gives that image back, and
//! `cuModuleLoadData` loads it, its kernels then running from their PTX. Several PTX images
//! (numba-cuda's kernels with the CUDA C they call, or with its float16 functions) are joined
//! into one PTX text (`peerpool_sim::image::link::link`), where one image's `.extern` functions
//! and variables are another's; images that do not link answer their refusal's code, named once
//! (a name two images define: `CUDA_ERROR_NOT_SUPPORTED`). NVIDIA's device runtime
//! (`libcudadevrt.a`, which numba-cuda links for grid synchronisation) is linked as peerpool's
//! PTX for the functions the simulator models (`peerpool_sim::image::devrt`). Linking machine
//! code with anything, an object or another library is not simulated: `CUDA_ERROR_NOT_SUPPORTED`,
//! named once. As the JIT does, each PTX input is compiled for the current device as it is
//! added (what ptxas refuses is refused there), and what was linked at `cuLinkComplete`, where
//! a call no input defines is `CUDA_ERROR_UNKNOWN`; the logs go where `cuLinkCreate` was told
//! (`jit_options.rs`).

use crate::abi::out;
use crate::boundary::{code, entry, name_once_owned, sim};
use crate::exports::module::file;
use crate::jit_options::JitOptions;
use cudarc::driver::sys::{CUjit_option, CUlinkState, CUresult};
use peerpool_sim::image::devrt;
use peerpool_sim::jit::Purpose;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_uint, c_void};
use std::sync::Mutex;

/// `CUjitInputType`: what an input is.
const CUBIN: c_uint = 0;
const PTX: c_uint = 1;
const FATBINARY: c_uint = 2;
const LIBRARY: c_uint = 4;

/// One link in progress: its inputs, and once complete, the image it gave (kept until the link
/// is destroyed, as the driver keeps its output).
#[derive(Default)]
struct Link {
    /// Each input's `CUjitInputType` and bytes.
    inputs: Vec<(c_uint, Vec<u8>)>,
    /// Each PTX input's name as added (what the linker's log names) and bytes.
    named: Vec<(String, Vec<u8>)>,
    output: Option<Box<[u8]>>,
    /// Where the JIT's logs go, as `cuLinkCreate` was told.
    jit: JitOptions,
}

/// Links by handle; handles count up from 1 and are never reused.
static LINKS: Mutex<(usize, BTreeMap<usize, Link>)> = Mutex::new((0, BTreeMap::new()));

fn links() -> std::sync::MutexGuard<'static, (usize, BTreeMap<usize, Link>)> {
    LINKS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds `bytes` of kind `kind`, named `name`, to link `state`: PTX is compiled as it is added,
/// as the JIT does (its refusal and log are this call's; a call another input may define is
/// left for `cuLinkComplete`).
fn add(state: CUlinkState, kind: c_uint, bytes: Vec<u8>, name: String) -> crate::boundary::Answer {
    let device_runtime = kind == LIBRARY && devrt::is_device_runtime(&bytes);
    if !matches!(kind, CUBIN | PTX | FATBINARY) && !device_runtime {
        let what = "links an object or a library other than the device runtime, which is not simulated: \
                    CUDA_ERROR_NOT_SUPPORTED";
        name_once_owned(format!("cuLinkAddData: input type {kind}"), what);
        return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
    }
    let until_nul = |bytes: &[u8]| bytes.split(|&b| b == 0).next().unwrap_or_default().to_vec();
    let (kind, bytes) = match kind {
        PTX => (PTX, until_nul(&bytes)),
        // A fatbin is linked by the PTX the device would compile (nvcc's -rdc objects hold it
        // beside their relocatable machine code).
        FATBINARY => match code(sim().fatbin_ptx(&bytes))? {
            Some(ptx) => (PTX, until_nul(&ptx)),
            None => (FATBINARY, bytes),
        },
        // The device runtime's machine code stands for the functions the simulator models.
        LIBRARY => (PTX, devrt::PTX.as_bytes().to_vec()),
        _ => (kind, bytes),
    };
    let mut links = links();
    let Some(link) = links.1.get_mut(&(state as usize)).filter(|l| l.output.is_none()) else {
        return Err(CUresult::CUDA_ERROR_INVALID_HANDLE);
    };
    if kind == PTX && !device_runtime {
        let mut text = bytes.clone();
        text.push(0);
        let (checked, log) = sim().link_check(&text, Purpose::LinkInput);
        // SAFETY: the promise cuLinkCreate was given holds until cuLinkDestroy.
        unsafe { link.jit.write(&log) };
        code(checked)?;
        link.named.push((name, bytes.clone()));
    }
    link.inputs.push((kind, bytes));
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkCreate_v2(
    count: c_uint,
    options: *mut CUjit_option,
    values: *mut *mut c_void,
    state_out: *mut CUlinkState,
) -> CUresult {
    entry!(cuLinkCreate_v2(count, options, values, state_out), {
        if state_out.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        // The log buffers and the option arrays stay the caller's until cuLinkDestroy.
        let jit = JitOptions::read(count, options, values);
        let mut links = links();
        links.0 += 1;
        let handle = links.0;
        links.1.insert(handle, Link { jit, ..Link::default() });
        out(state_out, handle as CUlinkState)
    })
}

/// `type_` is read as a plain integer: a C caller may pass any value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkAddData_v2(
    state: CUlinkState,
    type_: c_uint,
    data: *mut c_void,
    size: usize,
    _name: *const c_char,
    _count: c_uint,
    _options: *mut CUjit_option,
    _values: *mut *mut c_void,
) -> CUresult {
    entry!(cuLinkAddData_v2(state, type_, data, size, _name, _count, _options, _values), {
        if data.is_null() || size == 0 || size as u64 > peerpool_sim::image::MAX_IMAGE_BYTES {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let name = input_name(_name);
        // SAFETY: the caller's: `data` holds `size` bytes.
        add(state, type_, std::slice::from_raw_parts(data.cast::<u8>(), size).to_vec(), name)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkAddFile_v2(
    state: CUlinkState,
    type_: c_uint,
    path: *const c_char,
    _count: c_uint,
    _options: *mut CUjit_option,
    _values: *mut *mut c_void,
) -> CUresult {
    entry!(cuLinkAddFile_v2(state, type_, path, _count, _options, _values), {
        add(state, type_, file(path)?, input_name(path))
    })
}

/// An input's name as the caller gave it (none: empty).
///
/// # Safety
/// A non-null `name` is NUL-terminated.
unsafe fn input_name(name: *const c_char) -> String {
    match name.is_null() {
        true => String::new(),
        // SAFETY: the caller's.
        false => unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy().into_owned(),
    }
}

/// The one input, whole; it lives until `cuLinkDestroy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkComplete(
    state: CUlinkState,
    cubin_out: *mut *mut c_void,
    size_out: *mut usize,
) -> CUresult {
    entry!(cuLinkComplete(state, cubin_out, size_out), {
        if cubin_out.is_null() || size_out.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let mut links = links();
        let Some(link) = links.1.get_mut(&(state as usize)) else { return Err(CUresult::CUDA_ERROR_INVALID_HANDLE) };
        if link.output.is_none() {
            let several = link.inputs.len() > 1;
            if link.inputs.is_empty() || (several && link.inputs.iter().any(|(kind, _)| *kind != PTX)) {
                let what = "is not one input or PTX only: linking machine code is not simulated: \
                            CUDA_ERROR_NOT_SUPPORTED";
                name_once_owned(format!("cuLinkComplete: {} inputs", link.inputs.len()), what);
                return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
            }
            let (kind, mut image) = match several {
                true => {
                    let texts: Vec<&[u8]> = link.inputs.iter().map(|(_, bytes)| bytes.as_slice()).collect();
                    let text = peerpool_sim::image::link::link(&texts).map_err(|refusal| {
                        let code = refusal.code();
                        name_once_owned(format!("cuLinkComplete: {refusal}"), &code.name());
                        code.to_bindings()
                    })?;
                    (PTX, text.into_bytes())
                }
                false => link.inputs.remove(0),
            };
            // PTX goes out NUL-terminated, as text for cuModuleLoadData, once it compiles for
            // the current device, as the JIT compiles what it linked.
            if kind == PTX {
                image.push(0);
                let (checked, log) = sim().link_check(&image, Purpose::Linked(&link.named));
                // SAFETY: the promise cuLinkCreate was given holds until cuLinkDestroy.
                link.jit.write(&log);
                code(checked)?;
            }
            link.output = Some(image.into_boxed_slice());
        }
        let image = link.output.as_ref().expect("set above");
        out(size_out, image.len())?;
        out(cubin_out, image.as_ptr().cast_mut().cast::<c_void>())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkDestroy(state: CUlinkState) -> CUresult {
    entry!(cuLinkDestroy(state), {
        match links().1.remove(&(state as usize)) {
            Some(_) => Ok(()),
            None => Err(CUresult::CUDA_ERROR_INVALID_HANDLE),
        }
    })
}
