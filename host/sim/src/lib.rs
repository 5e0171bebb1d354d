//! A simulated multi-GPU driver behind the [`Driver`](peerpool::driver::Driver) seam.
//!
//! [`SimDriver`] answers every driver call peerpool makes from a [`Topology`] (devices, an
//! ordered-pair peer matrix that may be asymmetric, per-direction link faults), holding real
//! bytes so copies and peerpool's kernels move real data. Its answers follow the real driver's
//! as measured on the recorded 2 × H200 machine (`docs/hardware/2026-11-30-foundation/driver_probe.txt`,
//! `docs/hardware/2026-11-30-foundation`); the tests in `host/sim/tests/sim_*.rs` replay that probe line by line, and
//! `tests/differential.rs` compares the two step by step on hardware. Its seven scenarios'
//! call-by-call records from the H200s (`docs/hardware/recorded/`, 2,463 calls) agree with the
//! simulator's through the libcuda shim line for line: no difference below is in them.
//!
//! # Known differences from the real driver
//! - A destroyed pool's handle panics in every call that takes a pool, naming the handle: the
//!   real driver returned stale data (`cuMemPoolGetAccess` said READWRITE) and crashed the
//!   process in `cuMemPoolSetAccess`, so a path that sends one is a bug tests must see.
//! - Everything is synchronous: streams never hold pending work, so ordering bugs that need a
//!   real race (e.g. reading before an unsynchronised `cuMemcpyHtoD` lands) do not show, and
//!   `cuStreamQuery`/`cuEventQuery` never answer `CUDA_ERROR_NOT_READY`. Only the virtual clock
//!   queues work (`timing`): event times are what the model projects, not what ran here.
//! - A kernel that faults changes no byte (the check precedes the work); a real one may have
//!   written part of its range before the fault. `cuLaunchKernel` itself returns success and
//!   every later call fails, as on hardware; the real error surfaces only at the synchronise.
//! - Kernel arguments are checked against each kernel's parameter list (a mismatch is
//!   `CUDA_ERROR_INVALID_VALUE`); the real driver would run the kernel on garbage.
//!   `pp_atomic_add_sys` with `slots == 0` is refused the same way (unspecified on a GPU).
//! - `pp_copy16` on overlapping ranges copies as `memmove`; on a GPU the threads race.
//! - Link faults affect peer traffic only (copies, memsets, kernels across devices), never
//!   host copies. Atomics are done at the memory; only their results cross a faulty link.
//! - Not measured on hardware, chosen here: `cuMemPoolSetAccess` granting READWRITE to a device
//!   without a peer path (`cuDeviceCanAccessPeer` false) is `CUDA_ERROR_INVALID_DEVICE`, nothing
//!   applied; `cuMemPoolCreate` with unsupported handle types, or on a device without pools, is
//!   `CUDA_ERROR_NOT_SUPPORTED`; destroying a default pool is `CUDA_ERROR_INVALID_VALUE`;
//!   another device's `cuMemAlloc` memory is unreachable by kernels (peerpool never calls
//!   `cuCtxEnablePeerAccess`; copies do reach it and memsets do not, as measured by
//!   `tests/differential.rs` on the H200s); zero-byte copies and memsets succeed without looking at
//!   their addresses; `cuMemAlloc(0)` is `CUDA_ERROR_INVALID_VALUE`; `cuMemFree` and
//!   `cuMemFreeAsync` each free either kind of memory; an async call on a created stream runs on
//!   the stream's device whatever context is current; a function or stream of another device's
//!   context passed to `cuLaunchKernel` is `CUDA_ERROR_INVALID_HANDLE`.
//! - Releasing a primary context's last retain resets it: its modules, streams and `cuMemAlloc`
//!   memory go; calls made with it current are `CUDA_ERROR_INVALID_CONTEXT` until it is
//!   retained again. Pools and pool memory survive.
//! - Each device has 64 TiB of addresses (from 2^48 up, above any host pointer, laid out for
//!   [`MAX_DEVICES`] devices), and a freed range is the next allocation's of its size, as the
//!   driver reuses them; allocations are 256-byte aligned with a 256-byte gap after each, so
//!   running past the end faults; the real driver maps in 2 MiB granules. An allocation's
//!   bytes from 1 MiB on are reserved and committed as they are written, so a device may hold
//!   more than the host; a program that writes more than the host has is stopped by the host.
//! - No machine code is made or run: what an image holds is read from it (`image`: PTX
//!   declarations, a cubin's symbols and `.nv.info` records, the fatbin entry the driver would
//!   choose and the PTX the simulator runs in its place, LZ4 or Zstandard entries expanded), as
//!   one H200 answered for the same images (`docs/hardware/recorded/one-h200/images.txt`, and
//!   the `-gencode` table's `gencode_*.txt`), and the PTX is loaded by `peerpool-ptx` whole at
//!   `cuModuleLoadData` (`jit`). peerpool's kernels (by name and parameter sizes) run natively
//!   whatever image holds them; any other kernel runs from its module's PTX (the image's, or a
//!   fatbin's beside its machine code: the module's globals come from that PTX too). A module
//!   of machine code alone loads and its launches are `CUDA_ERROR_NOT_SUPPORTED` (the GPU runs
//!   them); a module of valid PTX that the executor cannot run is refused at its load with
//!   `CUDA_ERROR_NOT_SUPPORTED` (the GPU loads it). A
//!   launch runs to its end inside `cuLaunchKernel`, blocks one after another, a block that
//!   keeps running letting later ones start beside it up to the device's occupancy (a
//!   cooperative launch's, and an ordinary launch's of a kernel that synchronises its grid once
//!   the context has its grid workspace, all at once where the device holds them, taking
//!   turns); which blocks run together is the simulator's order, not a GPU's; the clock
//!   charges its traffic as the timing model prices it. Each such launch gets a zeroed grid
//!   workspace of its own, where NVIDIA's driver keeps one per context from its first
//!   cooperative launch on. A cluster's blocks run at once, a cluster after another. NVIDIA's
//!   device runtime (`libcudadevrt.a`) links as peerpool's PTX for the grid synchronisation
//!   numba-cuda calls (`image::devrt`), not as NVIDIA's code.
//!   Occupancy counts a PTX kernel's 32 registers (below); clusters' occupancy
//!   (`cuOccupancyMaxActiveClusters`) is an H200's groups of multiprocessors as measured, and
//!   a device with another count of multiprocessors is taken as groups of 16. The executor's
//!   approximate instructions (`ex2.approx`, `rcp.approx`, `rsqrt.approx`, `sin.approx`, ...)
//!   are within 1 ulp of the exact value where a GPU's are coarser, so a function built on
//!   them (libdevice's `expf`, `tanf`, `hypot`, ...) may differ from a GPU's by an ulp or two
//!   (`docs/hardware/2026-12-03-numba-probe`). Exact instructions give an H200's results,
//!   NaNs and edge values included (`docs/hardware/2026-12-03-ptx-random`), but where ptxas's
//!   way of compiling decides: an f64 operation with two NaN operands carries the first's
//!   payload (on the GPU, whichever ptxas put first); `min`/`max` of two registers that hold
//!   the same NaN is the canonical NaN (ptxas folds only a register with itself, which the
//!   executor does too); a few instructions given `0x80000000` (`slct`'s selector,
//!   `cvt.rz.f32.u32`, `sub.sat.s32`) gave another result than the ISA's in some programs on
//!   the H200; a 16-bit NaN that one instruction makes and the next takes may reach the second
//!   with another payload where ptxas fused the two. PTX that ptxas refuses is
//!   `CUDA_ERROR_INVALID_PTX` at its load, its error in ptxas's words but not ptxas's own text;
//!   what the executor's parser does not read is taken for that too. Machine code
//!   loads on its own major version at its minor version or later (an H200 refused sm_80 code:
//!   `CUDA_ERROR_NO_BINARY_FOR_GPU`). The PTX JIT's cache and cost are not simulated.
//! - Chosen where the image cannot say (`modules.rs`): a PTX kernel uses 32 registers (the
//!   JIT decides; an H200 gave 8 to 32 for small kernels) and no local memory; PTX for a
//!   newer target than the device's is `CUDA_ERROR_INVALID_PTX`, and of a newer ISA than the
//!   driver's CUDA version reads (13.5 by default, `Topology::driver_version`)
//!   `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`. A module's globals are
//!   device memory of their own, not charged to the device, with their initial bytes (an
//!   address in an initializer is where this module placed its target). A library is read when a call
//!   needs what it holds, so loading one never fails for its bytes (as on the H200); its kernel
//!   count is 0 when it does not read, and a second `cuLibraryUnload` is
//!   `CUDA_ERROR_INVALID_HANDLE` (the H200's driver crashed the process).
//! - Clients other than peerpool (through the libcuda shim): ordinary contexts (`cuCtxCreate`)
//!   share their device's pools; destroying one, resetting a primary context or releasing its
//!   last retain takes the modules, streams, events and `cuMemAlloc` memory made in it. Legacy
//!   peer access (`cuCtxEnablePeerAccess`) is kept per pair of devices, not of contexts. Pools
//!   reserve exactly what is allocated, keep freed bytes reserved until a synchronisation (of
//!   a stream, event or context of the device) releases what exceeds the release threshold or
//!   `cuMemPoolTrimTo` trims; the reuse policies are stored and have no effect. Streams and
//!   events are always idle (`cuStreamQuery`, `cuEventQuery` succeed). UUIDs are a hash of the topology
//!   name and the device's index on the machine (the same in every process's view).
//! - PCI bus ids are synthetic (`0x18 + 0x10 ×` the index on the machine); every sticky error
//!   is the process's last word, including for `cuDeviceGetCount` and `cuCtxSetCurrent`.
//! - `CUDA_VISIBLE_DEVICES` is read by the libcuda shim as NVIDIA's driver read it on an H200
//!   (`visible.rs`: indices or UUID prefixes, in order, up to the first that names nothing;
//!   none visible makes `cuInit` `CUDA_ERROR_NO_DEVICE`, one listed twice
//!   `CUDA_ERROR_INVALID_DEVICE`); the in-process simulator
//!   (`peerpool check --topology`, `PEERPOOL_TOPOLOGY`) shows the whole topology. Importing
//!   shared memory whose device the importer does not see is `CUDA_ERROR_INVALID_DEVICE`
//!   (not measured).
//!
//! ## Memory the host reaches (`host_memory.rs`)
//! Page-locked memory (`cuMemAllocHost`, `cuMemHostAlloc`, `cuMemHostRegister`), managed memory
//! and pools on the host or of managed memory, as one H200 answered a client of each
//! (`docs/hardware/2026-12-01-clients`): the bytes sit at a host address that the host and every
//! device use. Departures, chosen:
//! - An address in the devices' range that is in no allocation (freed, past an allocation's
//!   end) is `CUDA_ERROR_INVALID_VALUE` for `cuMemcpy` and the copies; the H200's driver copied
//!   (its allocator still mapped the range) or crashed the process.
//! - Memory registered read-only may not be written by a copy, a memset (`CUDA_ERROR_INVALID_VALUE`)
//!   or a kernel (an illegal-address fault): the H200 took the registration; writes were not tried.
//! - Managed memory never migrates: advice and prefetches are kept for the whole allocation that
//!   holds the range given, and read back by `cuMemRangeGetAttribute`; every device reaches it.
//!   With no preferred location, `cuMemGetMemPool` gives the current device's managed pool.
//! - A pool on the host can be shared only at `HOST_NUMA` node 0 (the H200's machine had one node),
//!   and its memory cannot be exported (`CUDA_ERROR_NOT_SUPPORTED`).
//! - Device attributes are an H200's (`attributes/h200.txt`, recorded), except those the
//!   topology gives.
//!
//! ## Inter-process sharing (`shared_file.rs`, `handles.rs`, `share.rs`, `vmm.rs`)
//! Processes share as on a GPU machine: two programs on the libcuda shim, each with its own
//! simulator, or two simulators in one process. An export moves the allocation's bytes into a
//! sealed memfd mapped `MAP_SHARED` (a header page with a lock word, then the data); an import
//! opens that file through `/proc/<exporter pid>/fd/<n>` and maps it, so writes on either side
//! are seen by the other, and every copy or atomic kernel update holds the file's lock word, one
//! step for all processes. Access does not travel (an imported pool is read-write for its owner
//! only), as measured. Beyond that:
//! - A POSIX-fd export handle is an eventfd (an anonymous inode; the real one is an open of the
//!   device node, a character device) whose 64-bit counter names the exporter's pid, the memfd's
//!   fd number there and part of the memfd's nonce. Export data, legacy IPC handles and fabric
//!   handles carry the pid, fd number and whole nonce with a tag and a check word. Anything else
//!   (garbage data, a foreign fd, a file that is not one of ours) is `CUDA_ERROR_INVALID_VALUE`;
//!   the real driver's answer to garbage was not measured (a reopened `/proc/<pid>/fd` gave
//!   `CUDA_ERROR_UNKNOWN`). Exporter and importer need the same user and pid namespace (the
//!   real driver's handles need neither).
//! - Handles do not keep memory alive: the exporter holds the memfd, so importing what it has
//!   freed (a pool allocation, `cuMemAlloc` memory, a `cuMemCreate` allocation with no
//!   reference or mapping left), or anything from an exporter that has exited, is
//!   `CUDA_ERROR_INVALID_VALUE`; a real exported fd keeps its allocation until closed. An
//!   import does keep the bytes, as a real mapping does.
//! - Not measured, chosen: `CUDA_ERROR_INVALID_VALUE` for exporting a pool or allocation without
//!   the handle type asked for, re-exporting an imported pool, `cuMemPoolExportPointer` other than
//!   at the start of a live allocation of a live exportable pool, `cuIpcGetMemHandle` other than
//!   at the start of `cuMemAlloc` memory (pool memory measured), `cuMemAllocFromPoolAsync` and
//!   `cuDeviceSetMemPool` on an imported pool (documented as unsupported). Importing into the
//!   exporting simulator itself works. Opened IPC memory is reachable from its own device only,
//!   reports `IS_LEGACY_CUDA_IPC_CAPABLE` 0, and survives a primary-context reset.
//! - Virtual memory: the granularity is 2 MiB for both options and for every handle type the
//!   device's pools support. `cuMemMap` needs offset 0, a granule-aligned address inside one
//!   reservation with nothing mapped there, and at most the allocation's size; `cuMemSetAccess`
//!   and `cuMemUnmap` need whole mappings tiling the range exactly; `cuMemSetAccess` refuses
//!   read-only (`CUDA_ERROR_NOT_SUPPORTED`) and peers without a path (`CUDA_ERROR_INVALID_DEVICE`)
//!   as pools do; `cuMemAddressFree` needs the exact reservation with nothing mapped. A copy or
//!   kernel spanning two adjacent mappings is out of bounds (each mapping is its own block).
//! - [`SimDriver::fork`] keeps exported and imported bytes shared with the fork (like
//!   `MAP_SHARED` memory) and copies the rest.

mod address_space;
pub mod attributes;
mod catalog;
mod checked;
mod contexts;
mod copies;
mod device_access;
mod driver;
pub mod env;
mod handles;
pub mod host_memory;
pub mod image;
mod input;
pub mod jit;
mod kernels;
mod memory;
mod module_calls;
mod modules;
mod occupancy;
mod own_kernels;
mod pools;
mod ptx_kernels;
pub mod select;
pub mod settings;
mod share;
mod shared_file;
mod state;
mod threads;
pub mod timing;
mod topology;
mod topology_file;
pub mod visible;
mod vmm;

pub use catalog::{CatalogEntry, catalog, catalog_topology};
pub use driver::{ANSWERED_WHEN_DEAD, SimDriver, SimOptions, SimStats};
pub use pools::GraphPool;
pub use ptx_kernels::{PtxLaunch, PtxLaunchHow};
pub use timing::{Floor, Latencies, Serial};
pub use topology::{
    DRIVER_VERSION, DeviceSpec, FaultKind, KERNEL_TIMEOUT_S, Link, LinkFault, MAX_DEVICES, Topology, TopologyError,
};
pub use topology_file::MAX_TOPOLOGY_BYTES;
