/* A C client of the driver's contracts that long runs and careful programs meet: a CUDA 12.x
 * context creation, host functions on a thread of the driver's, the hints and attribute queries
 * that change nothing, a managed pool with no preferred location, a kernel query without a
 * context, pools' reserves in cuMemGetInfo, device printf among the program's own lines, and
 * allocate/free cycles of 1 GiB. One line per fact, no address printed, so that a run through
 * the shim can be compared with NVIDIA's driver.
 * Usage: hardening [CYCLES]   (default 1000); hardening spin: a kernel that never ends, for a
 * simulator's watchdog (a GPU would hang); hardening shared: a kernel that writes past its
 * shared memory. Exits 1 on an unexpected error. */
#include "client.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

/* A kernel that prints one line (device printf through vprintf). */
static const char *PRINTS =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);\n"
    ".global .align 1 .b8 fmt[13] = {107,101,114,110,101,108,32,108,105,110,101,10,0};\n"
    ".visible .entry say(.param .u64 p)\n{\n.reg .b64 %rd<3>;\n.reg .b32 %r<2>;\n"
    "mov.u64 %rd1, fmt;\ncvta.global.u64 %rd2, %rd1;\n"
    "{\n.param .b64 f;\nst.param.b64 [f], %rd2;\n.param .b64 a;\nst.param.b64 [a], 0;\n.param .b32 r;\n"
    "call.uni (r), vprintf, (f, a);\n}\nret;\n}\n";

/* What the host function saw. */
static volatile int released;
static int waited, other_thread, inside_count = -1, inside_alloc = -1;
static pthread_t enqueuer;

static void CUDA_CB host_function(void *arg) {
    (void)arg;
    other_thread = !pthread_equal(pthread_self(), enqueuer);
    int count;
    inside_count = cuDeviceGetCount(&count);
    CUdeviceptr p;
    inside_alloc = cuMemAlloc(&p, 1 << 20);
    if (inside_alloc == CUDA_SUCCESS) cuMemFree(p);
    /* Waits for the thread that enqueued it, which releases it after the call returns (two
     * seconds at most: a driver that runs it inside the call would wait for ever). */
    for (int i = 0; i < 200 && !released; i++) usleep(10000);
    waited = released;
}

typedef CUresult (*create_v2)(CUcontext *, unsigned int, CUdevice);
typedef CUresult (*create_v3)(CUcontext *, CUexecAffinityParam *, int, unsigned int, CUdevice);
typedef CUresult (*two_ints)(CUfunction, int);
typedef CUresult (*no_args)(void);

/* A kernel that waits for a flag nobody sets: a GPU would hang (run only on the simulator,
 * whose watchdog stops it). */
static const char *SPINS =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry spin(.param .u64 p)\n{\n.reg .b64 %rd<3>;\n.reg .b32 %r<2>;\n.reg .pred %q<2>;\n"
    "ld.param.u64 %rd1, [p];\nLOOP:\nld.volatile.global.u32 %r1, [%rd1];\nsetp.eq.u32 %q1, %r1, 0;\n"
    "@%q1 bra LOOP;\nret;\n}\n";

/* A kernel that writes past its block's 256 bytes of shared memory. */
static const char *PAST_SHARED =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry past()\n{\n.shared .align 4 .b8 tile[256];\n.reg .b32 %r<2>;\n"
    "mov.u32 %r1, tile;\nst.shared.u32 [%r1+320], 7;\nret;\n}\n";

/* Loads `ptx`, launches its kernel `name` on one thread (with `arg` if not NULL), and prints
 * what the launch and the synchronisation answer. */
static int launch_alone(const char *ptx, const char *name, CUdeviceptr *arg) {
    CUmodule m;
    CUfunction f;
    TRY(cuModuleLoadData(&m, ptx));
    TRY(cuModuleGetFunction(&f, m, name));
    void *args[] = {arg};
    printf("%s launch: %s\n", name, name_of(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, arg ? args : NULL, NULL)));
    printf("%s synchronize: %s\n", name, name_of(cuCtxSynchronize()));
    return 0;
}

int main(int argc, char **argv) {
    CUdevice dev;
    CUcontext ctx;
    ON_GPU0(dev, ctx);
    CUresult r;
    if (argc > 1 && strcmp(argv[1], "spin") == 0) {
        CUdeviceptr flag;
        TRY(cuMemAlloc(&flag, 4));
        TRY(cuMemsetD32(flag, 0, 1));
        return launch_alone(SPINS, "spin", &flag);
    }
    if (argc > 1 && strcmp(argv[1], "shared") == 0) return launch_alone(PAST_SHARED, "past", NULL);
    int cycles = argc > 1 ? atoi(argv[1]) : 1000;

    /* cuCtxCreate as a CUDA 12.x header names it (_v2), and as cuGetProcAddress gives it at
     * 12000 (the affinity form, _v3). */
    create_v2 v2 = (create_v2)dlsym(RTLD_DEFAULT, "cuCtxCreate_v2");
    CUcontext made;
    r = v2 ? v2(&made, 0, dev) : CUDA_ERROR_NOT_FOUND;
    printf("cuCtxCreate_v2: %s\n", name_of(r));
    if (r == CUDA_SUCCESS) TRY(cuCtxDestroy(made));
    void *pfn = NULL;
    CUdriverProcAddressQueryResult found;
    r = cuGetProcAddress("cuCtxCreate", &pfn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    printf("cuGetProcAddress(cuCtxCreate, 12000): %s found %d is _v3 %d\n", name_of(r), (int)found,
           pfn != NULL && pfn == dlsym(RTLD_DEFAULT, "cuCtxCreate_v3"));
    if (r == CUDA_SUCCESS && pfn) {
        r = ((create_v3)pfn)(&made, NULL, 0, 0, dev);
        printf("cuCtxCreate_v3 without affinity: %s\n", name_of(r));
        if (r == CUDA_SUCCESS) TRY(cuCtxDestroy(made));
    }
    TRY(cuCtxSetCurrent(ctx));

    /* A host function: on a thread of the driver's, waiting for its enqueuer, and what driver
     * calls answer inside it. */
    CUstream stream;
    TRY(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    enqueuer = pthread_self();
    r = cuLaunchHostFunc(stream, host_function, NULL);
    released = 1;
    printf("cuLaunchHostFunc: %s\n", name_of(r));
    TRY(cuStreamSynchronize(stream));
    printf("host function: other thread %d, waited for its enqueuer %d\n", other_thread, waited);
    printf("host function: cuDeviceGetCount inside %s, cuMemAlloc inside %s\n", name_of((CUresult)inside_count),
           name_of((CUresult)inside_alloc));

    /* Hints and attribute queries. */
    CUmodule m;
    TRY(cuModuleLoadData(&m, PRINTS));
    CUfunction say;
    TRY(cuModuleGetFunction(&say, m, "say"));
    printf("cuFuncSetCacheConfig: %s\n", name_of(cuFuncSetCacheConfig(say, CU_FUNC_CACHE_PREFER_SHARED)));
    printf("cuCtxSetCacheConfig: %s\n", name_of(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_NONE)));
    two_ints shared_config = (two_ints)dlsym(RTLD_DEFAULT, "cuFuncSetSharedMemConfig");
    printf("cuFuncSetSharedMemConfig: %s\n", shared_config ? name_of(shared_config(say, 0)) : "absent");
    no_args start = (no_args)dlsym(RTLD_DEFAULT, "cuProfilerStart");
    no_args stop = (no_args)dlsym(RTLD_DEFAULT, "cuProfilerStop");
    printf("cuProfilerStart: %s\n", start ? name_of(start()) : "absent");
    printf("cuProfilerStop: %s\n", stop ? name_of(stop()) : "absent");
    CUstreamAttrValue value;
    memset(&value, 0, sizeof value);
    r = cuStreamGetAttribute(stream, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &value);
    printf("cuStreamGetAttribute(synchronization policy): %s %d\n", name_of(r), (int)value.syncPolicy);
    value.syncPolicy = CU_SYNC_POLICY_SPIN;
    r = cuStreamSetAttribute(stream, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &value);
    printf("cuStreamSetAttribute(spin): %s\n", name_of(r));
    memset(&value, 0, sizeof value);
    r = cuStreamGetAttribute(stream, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &value);
    printf("cuStreamGetAttribute again: %s %d\n", name_of(r), (int)value.syncPolicy);
    CUevent event;
    TRY(cuEventCreate(&event, CU_EVENT_DEFAULT));
    printf("cuEventRecordWithFlags: %s\n", name_of(cuEventRecordWithFlags(event, stream, CU_EVENT_RECORD_DEFAULT)));
    TRY(cuEventDestroy(event));
    CUdeviceptr small;
    TRY(cuMemAlloc(&small, 4096));
    unsigned int sync_memops = 1;
    r = cuPointerSetAttribute(&sync_memops, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, small);
    printf("cuPointerSetAttribute(sync memops): %s\n", name_of(r));
    unsigned int read_back = 0;
    r = cuPointerGetAttribute(&read_back, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, small);
    printf("cuPointerGetAttribute(sync memops): %s %u\n", name_of(r), read_back);
    TRY(cuMemFree(small));
    const struct {
        const char *name;
        CUdevice_attribute attr;
    } promises[] = {
        {"can use stream wait value nor", CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR},
        {"can use 64-bit stream mem ops", CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS},
        {"can flush remote writes", CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES},
    };
    for (size_t i = 0; i < sizeof promises / sizeof promises[0]; i++) TRY(show_attribute(promises[i].name, promises[i].attr, dev));

    /* A managed pool with no preferred location (cuda.core's ManagedMemoryResource). */
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
    props.location.type = CU_MEM_LOCATION_TYPE_NONE;
    CUmemoryPool managed;
    r = cuMemPoolCreate(&managed, &props);
    printf("cuMemPoolCreate(managed, location none): %s\n", name_of(r));
    if (r == CUDA_SUCCESS) {
        CUdeviceptr p;
        r = cuMemAllocFromPoolAsync(&p, 1 << 20, managed, stream);
        printf("cuMemAllocFromPoolAsync(managed none): %s\n", name_of(r));
        if (r == CUDA_SUCCESS) TRY(cuMemFreeAsync(p, stream));
        TRY(cuStreamSynchronize(stream));
        TRY(cuMemPoolDestroy(managed));
    }

    /* A pool's reserve counts as used in cuMemGetInfo. */
    CUmemoryPool pool;
    CUmemPoolProps pinned = pinned_pool_props(0);
    TRY(cuMemPoolCreate(&pool, &pinned));
    cuuint64_t keep = UINT64_MAX;
    TRY(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    size_t free_before, free_after, total;
    TRY(cuMemGetInfo(&free_before, &total));
    CUdeviceptr held;
    TRY(cuMemAllocFromPoolAsync(&held, (size_t)1 << 30, pool, stream));
    TRY(cuMemFreeAsync(held, stream));
    TRY(cuStreamSynchronize(stream));
    TRY(cuMemGetInfo(&free_after, &total));
    printf("cuMemGetInfo: a pool's 1 GiB reserve counted %d\n", free_before - free_after >= ((size_t)1 << 30));
    TRY(cuMemPoolDestroy(pool));

    /* A kernel's query with no current context. */
    CUlibrary lib;
    TRY(cuLibraryLoadData(&lib, PRINTS, NULL, NULL, 0, NULL, NULL, 0));
    CUkernel kernel;
    TRY(cuLibraryGetKernel(&kernel, lib, "say"));
    TRY(cuCtxSetCurrent(NULL));
    size_t offset, size;
    printf("cuKernelGetParamInfo without a context: %s\n", name_of(cuKernelGetParamInfo(kernel, 0, &offset, &size)));
    TRY(cuCtxSetCurrent(ctx));
    TRY(cuLibraryUnload(lib));

    /* Device printf among the program's own lines, stdout going to a file or a pipe. */
    printf("before the kernel\n");
    void *args[] = {&small};
    TRY(cuLaunchKernel(say, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    TRY(cuCtxSynchronize());
    printf("after the kernel\n");
    TRY(cuModuleUnload(m));

    /* Allocate and free 1 GiB, again and again. */
    int done = 0;
    for (; done < cycles; done++) {
        CUdeviceptr p;
        r = cuMemAlloc(&p, (size_t)1 << 30);
        if (r != CUDA_SUCCESS) break;
        TRY(cuMemFree(p));
    }
    printf("1 GiB alloc/free cycles: %d of %d (%s)\n", done, cycles, name_of(done == cycles ? CUDA_SUCCESS : r));
    TRY(cuStreamDestroy(stream));
    printf("done\n");
    return 0;
}
