//! What nvcc's host code registers at start-up: each fatbin, its kernels by host stub and its
//! variables by host shadow. A fatbin becomes a driver library on first use (the driver loads
//! it into each device's context lazily, as CUDA's lazy loading does).

use crate::device;
use crate::driver::{cu, ok};
use crate::error::{self, Error};
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_void};
use std::sync::{Mutex, OnceLock, RwLock};

/// nvcc's fatbin wrapper (`__fatDeviceText`): a magic, a version, the fatbin.
#[repr(C)]
struct Wrapper {
    magic: u32,
    version: u32,
    data: *const c_void,
    /// For relocatable device code, the list of each translation unit's fatbin.
    filename_or_fatbins: *const c_void,
}
const WRAPPER_MAGIC: u32 = 0x466243b1;

/// A fatbin's header: its size is the header's and the rest's.
#[repr(C)]
struct FatbinHeader {
    magic: u32,
    version: u16,
    header_size: u16,
    fat_size: u64,
}
const FATBIN_MAGIC: u32 = 0xba55_ed50;

/// What a registered fatbin holds.
#[derive(Clone, Copy)]
enum Image {
    /// A fatbin in the program's image (nvcc's whole-program compilation).
    Whole(usize),
    /// Relocatable device code (`-rdc`): the null-terminated list of each translation unit's
    /// fatbin, linked by the driver's linker when first used.
    Relocatable(usize),
    /// A wrapper that is none of nvcc's.
    Unknown,
}

/// One registered fatbin.
pub(crate) struct Fatbin {
    image: Image,
    library: OnceLock<Result<usize, Error>>,
    /// Managed variables: the host pointer each gets its address through, and the name.
    managed: Mutex<Vec<(usize, &'static CStr)>>,
}

/// A kernel: its fatbin and its device name.
pub(crate) struct Kernel {
    fatbin: &'static Fatbin,
    name: &'static CStr,
    handle: OnceLock<Result<usize, Error>>,
}

/// A device variable: its fatbin and name.
struct Variable {
    fatbin: &'static Fatbin,
    name: &'static CStr,
}

static KERNELS: RwLock<Option<HashMap<usize, &'static Kernel>>> = RwLock::new(None);
static VARIABLES: RwLock<Option<HashMap<usize, &'static Variable>>> = RwLock::new(None);

impl Fatbin {
    /// The driver's library of this fatbin, loaded on first use.
    fn library(&self) -> Result<cu::CUlibrary, Error> {
        let loaded = self.library.get_or_init(|| {
            device::started()?;
            let lib = match self.image {
                Image::Whole(image) => load(image as *const c_void)?,
                // SAFETY: nvcc's list, alive for the program's life.
                Image::Relocatable(list) => unsafe { linked(list as *const *const c_void) }?,
                Image::Unknown => return Err(Error(error::INVALID_KERNEL_IMAGE)),
            };
            Ok(lib as usize)
        });
        loaded.map(|l| l as cu::CUlibrary)
    }
}

/// A library of `image` (a fatbin or a cubin the driver reads whole).
fn load(image: *const c_void) -> Result<cu::CUlibrary, Error> {
    let mut lib = std::ptr::null_mut();
    // SAFETY: the image outlives the call (the driver copies what it keeps); no options.
    ok(unsafe {
        cu::cuLibraryLoadData(
            &mut lib,
            image,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    })?;
    Ok(lib)
}

/// The fatbins of `list` linked into one image by the driver's linker, loaded as a library.
///
/// # Safety
/// `list` is a null-terminated array of fatbins, each alive for the call.
unsafe fn linked(list: *const *const c_void) -> Result<cu::CUlibrary, Error> {
    let mut state = std::ptr::null_mut();
    // SAFETY: no options; a valid out-pointer.
    ok(unsafe { cu::cuLinkCreate_v2(0, std::ptr::null_mut(), std::ptr::null_mut(), &mut state) })?;
    let result = (|| {
        for i in 0.. {
            // SAFETY: the caller's null-terminated list.
            let fatbin = unsafe { *list.add(i) };
            if fatbin.is_null() {
                break;
            }
            // SAFETY: each entry starts with a fatbin header.
            let header = unsafe { fatbin.cast::<FatbinHeader>().read_unaligned() };
            if header.magic != FATBIN_MAGIC {
                return Err(Error(error::INVALID_KERNEL_IMAGE));
            }
            let size = usize::from(header.header_size).saturating_add(header.fat_size as usize);
            // SAFETY: the fatbin's `size` bytes; no options.
            ok(unsafe {
                cu::cuLinkAddData_v2(
                    state,
                    cu::CUjitInputType::CU_JIT_INPUT_FATBINARY,
                    fatbin.cast_mut(),
                    size,
                    c"relocatable device code".as_ptr(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            })?;
        }
        let (mut image, mut size) = (std::ptr::null_mut(), 0);
        // SAFETY: valid out-pointers; the image lives until the state is destroyed.
        ok(unsafe { cu::cuLinkComplete(state, &mut image, &mut size) })?;
        load(image)
    })();
    // SAFETY: the state made above, destroyed once.
    unsafe { cu::cuLinkDestroy(state) };
    result
}

impl Kernel {
    /// The driver's kernel (context-independent).
    pub(crate) fn handle(&self) -> Result<cu::CUkernel, Error> {
        let got = self.handle.get_or_init(|| {
            let lib = self.fatbin.library()?;
            let mut k = std::ptr::null_mut();
            // SAFETY: a library the driver gave; a NUL-terminated name.
            ok(unsafe { cu::cuLibraryGetKernel(&mut k, lib, self.name.as_ptr()) })?;
            Ok(k as usize)
        });
        got.map(|k| k as cu::CUkernel)
    }

    /// The kernel in the thread's context, loaded there if it is not yet.
    pub(crate) fn function(&self) -> Result<cu::CUfunction, Error> {
        in_context(self.handle()?)
    }
}

/// A driver kernel's function in the thread's context, loaded there if it is not yet.
pub(crate) fn in_context(kernel: cu::CUkernel) -> Result<cu::CUfunction, Error> {
    device::context()?;
    let mut f = std::ptr::null_mut();
    // SAFETY: a kernel handle (the driver checks it); a context is current.
    ok(unsafe { cu::cuKernelGetFunction(&mut f, kernel) })?;
    Ok(f)
}

/// The kernel registered for a host stub, or `cudaErrorInvalidDeviceFunction`.
pub(crate) fn kernel(host: *const c_void) -> Result<&'static Kernel, Error> {
    let kernels = KERNELS.read().unwrap_or_else(|p| p.into_inner());
    kernels.as_ref().and_then(|k| k.get(&(host as usize)).copied()).ok_or(Error(error::INVALID_DEVICE_FUNCTION))
}

/// A variable's address and size in the thread's context, or `cudaErrorInvalidSymbol`.
pub(crate) fn variable(host: *const c_void) -> Result<(cu::CUdeviceptr, usize), Error> {
    let var = {
        let vars = VARIABLES.read().unwrap_or_else(|p| p.into_inner());
        vars.as_ref().and_then(|v| v.get(&(host as usize)).copied()).ok_or(Error(error::INVALID_SYMBOL))?
    };
    let lib = var.fatbin.library()?;
    device::context()?;
    let (mut p, mut size) = (0, 0);
    // SAFETY: a library the driver gave; a NUL-terminated name; a context is current.
    ok(unsafe { cu::cuLibraryGetGlobal(&mut p, &mut size, lib, var.name.as_ptr()) })?;
    Ok((p, size))
}

/// # Safety
/// `wrapper` is nvcc's fatbin wrapper, alive for the program's life.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __cudaRegisterFatBinary(wrapper: *const c_void) -> *mut *mut c_void {
    // SAFETY: the caller's.
    let w = unsafe { wrapper.cast::<Wrapper>().as_ref() };
    let image = match w {
        Some(w) if w.magic == WRAPPER_MAGIC && w.version == 1 => Image::Whole(w.data as usize),
        Some(w) if w.magic == WRAPPER_MAGIC && w.version == 2 => Image::Relocatable(w.filename_or_fatbins as usize),
        _ => Image::Unknown,
    };
    let fatbin: &'static Fatbin =
        Box::leak(Box::new(Fatbin { image, library: OnceLock::new(), managed: Mutex::new(Vec::new()) }));
    (fatbin as *const Fatbin).cast_mut().cast()
}

/// # Safety
/// `handle` is what [`__cudaRegisterFatBinary`] returned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __cudaRegisterFatBinaryEnd(_handle: *mut *mut c_void) {}

/// Libraries stay loaded to the process's end: the driver may be gone by the time this runs.
///
/// # Safety
/// `handle` is what [`__cudaRegisterFatBinary`] returned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __cudaUnregisterFatBinary(_handle: *mut *mut c_void) {}

/// # Safety
/// `handle` is what [`__cudaRegisterFatBinary`] returned.
unsafe fn fatbin(handle: *mut *mut c_void) -> &'static Fatbin {
    // SAFETY: the caller's: a leaked `Fatbin`.
    unsafe { &*handle.cast::<Fatbin>() }
}

/// # Safety
/// `handle` is what [`__cudaRegisterFatBinary`] returned; `name` a NUL-terminated string alive
/// for the program's life.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __cudaRegisterFunction(
    handle: *mut *mut c_void,
    host: *const c_char,
    _device_fun: *mut c_char,
    name: *const c_char,
    _thread_limit: i32,
    _tid: *mut c_void,
    _bid: *mut c_void,
    _block: *mut c_void,
    _grid: *mut c_void,
    _warp_size: *mut i32,
) {
    // SAFETY: the caller's.
    let (fatbin, name) = unsafe { (fatbin(handle), CStr::from_ptr(name)) };
    let kernel: &'static Kernel = Box::leak(Box::new(Kernel { fatbin, name, handle: OnceLock::new() }));
    KERNELS.write().unwrap_or_else(|p| p.into_inner()).get_or_insert_default().insert(host as usize, kernel);
}

/// # Safety
/// As [`__cudaRegisterFunction`]; `host` is the variable's host shadow.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __cudaRegisterVar(
    handle: *mut *mut c_void,
    host: *mut c_char,
    _device_address: *mut c_char,
    name: *const c_char,
    _ext: i32,
    _size: usize,
    _constant: i32,
    _global: i32,
) {
    // SAFETY: the caller's.
    let (fatbin, name) = unsafe { (fatbin(handle), CStr::from_ptr(name)) };
    let var: &'static Variable = Box::leak(Box::new(Variable { fatbin, name }));
    VARIABLES.write().unwrap_or_else(|p| p.into_inner()).get_or_insert_default().insert(host as usize, var);
}

/// A managed variable: its address reaches the host through `host_pointer` once the module is
/// initialised ([`__cudaInitModule`], which nvcc's code calls before the host first reads it).
///
/// # Safety
/// As [`__cudaRegisterFunction`]; `host_pointer` is valid for writes for the program's life.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __cudaRegisterManagedVar(
    handle: *mut *mut c_void,
    host_pointer: *mut *mut c_void,
    _device_address: *mut c_char,
    name: *const c_char,
    _ext: i32,
    _size: usize,
    _constant: i32,
    _global: i32,
) {
    // SAFETY: the caller's.
    let (fatbin, name) = unsafe { (fatbin(handle), CStr::from_ptr(name)) };
    fatbin.managed.lock().unwrap_or_else(|p| p.into_inner()).push((host_pointer as usize, name));
}

/// Loads the fatbin and gives each of its managed variables its address. 1 when it could.
///
/// # Safety
/// `handle` is what [`__cudaRegisterFatBinary`] returned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __cudaInitModule(handle: *mut *mut c_void) -> c_char {
    // SAFETY: the caller's.
    let fatbin = unsafe { fatbin(handle) };
    let done = (|| -> Result<(), Error> {
        let lib = fatbin.library()?;
        device::context()?;
        for &(host, name) in fatbin.managed.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let (mut p, mut size) = (0, 0);
            // SAFETY: a library the driver gave; a NUL-terminated name.
            ok(unsafe { cu::cuLibraryGetManaged(&mut p, &mut size, lib, name.as_ptr()) })?;
            // SAFETY: nvcc's host pointer for the variable (the registration's contract).
            unsafe { (host as *mut *mut c_void).write(p as *mut c_void) };
        }
        Ok(())
    })();
    match done {
        Ok(()) => 1,
        Err(e) => {
            error::record(e);
            0
        }
    }
}
