/* A C client that launches kernels that are not peerpool's (images/kernels.cu, built by NVIDIA's
 * nvcc) from PTX, a fatbin, a compressed fatbin loaded as a library, or PTX through the JIT
 * linker: parameters through kernelParams, through extra and through cuLaunchKernelEx, dynamic
 * shared memory, a module global its kernel counts in, launches the driver refuses, and a
 * kernel that touches an address it may not. One line per fact, no address printed, so that a run through the shim
 * can be compared with NVIDIA's driver.
 * Usage: kernels IMAGES_DIR          (one GPU)
 *        kernels IMAGES_DIR link     (one GPU: the same launches of PTX linked by the JIT linker)
 *        kernels IMAGES_DIR peer     (two GPUs: GPU 0's kernel on GPU 1's pool, ungranted,
 *                                     then granted; the ungranted launch ends the process's CUDA)
 *        kernels IMAGES_DIR assert   (one GPU: a kernel whose device assert fails, errors.ptx;
 *                                     the message goes to stderr, and the process's CUDA ends)
 *        kernels IMAGES_DIR trap     (one GPU: a kernel that runs __trap(), errors.ptx)
 * Exits 1 on an unexpected error. */
#include "client.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { N = 1000 };
static char dir[4096];

/* The bytes of IMAGES_DIR/name, NUL-terminated (PTX is text); exits if unreadable. */
static unsigned char *read_image(const char *name) { return read_or_exit(dir, name); }

/* The sum of p[i] for i < N, as ints. */
static long long ints_sum(CUdeviceptr p) {
    int host[N];
    long long sum = 0;
    if (cuMemcpyDtoH(host, p, sizeof host) != CUDA_SUCCESS) return -1;
    for (int i = 0; i < N; i++) sum += host[i];
    return sum;
}

/* Whether p[i] == i + add (or i * scale) for every i < N, as ints (or floats). */
static int ints_are(CUdeviceptr p, int add) {
    int host[N];
    if (cuMemcpyDtoH(host, p, sizeof host) != CUDA_SUCCESS) return 0;
    for (int i = 0; i < N; i++)
        if (host[i] != i + add) return 0;
    return 1;
}

static int floats_are(CUdeviceptr p, float scale) {
    float host[N];
    if (cuMemcpyDtoH(host, p, sizeof host) != CUDA_SUCCESS) return 0;
    for (int i = 0; i < N; i++)
        if (host[i] != (float)i * scale) return 0;
    return 1;
}

static CUresult fill_ints(CUdeviceptr p) {
    int host[N];
    for (int i = 0; i < N; i++) host[i] = i;
    return cuMemcpyHtoD(p, host, sizeof host);
}

static CUresult fill_floats(CUdeviceptr p) {
    float host[N];
    for (int i = 0; i < N; i++) host[i] = (float)i;
    return cuMemcpyHtoD(p, host, sizeof host);
}

/* What calls answer once a kernel's fault has ended the process's CUDA: those that need no
 * context, and those that do. */
static void after_a_fault(const char *what) {
    int count = 0, value = 0, version = 0, active = 0;
    unsigned int flags = 0;
    CUdevice dev;
    char name[64];
    CUcontext ctx;
    CUdeviceptr p;
    size_t free_bytes, total;
    CUstream s;
    CUmemoryPool pool;
    printf("%s after cuDeviceGetCount: %s\n", what, name_of(cuDeviceGetCount(&count)));
    printf("%s after cuDeviceGet: %s\n", what, name_of(cuDeviceGet(&dev, 0)));
    printf("%s after cuDeviceGetAttribute: %s\n", what,
           name_of(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0)));
    printf("%s after cuDeviceGetName: %s\n", what, name_of(cuDeviceGetName(name, sizeof name, 0)));
    printf("%s after cuDriverGetVersion: %s\n", what, name_of(cuDriverGetVersion(&version)));
    printf("%s after cuDevicePrimaryCtxGetState: %s\n", what, name_of(cuDevicePrimaryCtxGetState(0, &flags, &active)));
    printf("%s after cuDeviceGetDefaultMemPool: %s\n", what, name_of(cuDeviceGetDefaultMemPool(&pool, 0)));
    printf("%s after cuCtxGetCurrent: %s\n", what, name_of(cuCtxGetCurrent(&ctx)));
    printf("%s after cuCtxGetDevice: %s\n", what, name_of(cuCtxGetDevice(&dev)));
    printf("%s after cuMemGetInfo: %s\n", what, name_of(cuMemGetInfo(&free_bytes, &total)));
    printf("%s after cuMemAlloc: %s\n", what, name_of(cuMemAlloc(&p, 4096)));
    printf("%s after cuStreamCreate: %s\n", what, name_of(cuStreamCreate(&s, 0)));
    printf("%s after cuCtxSynchronize: %s\n", what, name_of(cuCtxSynchronize()));
}

/* pp_test_add and pp_test_scale of one image: launched every way a program launches. */
static int run_kernels(const char *what, CUfunction add, CUfunction scale, CUmodule m) {
    CUdeviceptr p;
    int n = N, v = 5;
    TRY(cuMemAlloc(&p, N * sizeof(int)));
    TRY(fill_ints(p));
    void *args[] = {&p, &n, &v};
    TRY(cuLaunchKernel(add, 4, 1, 1, 256, 1, 1, 0, 0, args, NULL));
    TRY(cuCtxSynchronize());
    printf("%s add by kernelParams: %d\n", what, ints_are(p, 5));

    /* The same through cuLaunchKernelEx, with attributes that change nothing it computes. */
    CUlaunchAttribute attrs[2];
    memset(attrs, 0, sizeof attrs);
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attrs[0].value.priority = 0;
    attrs[1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[1].value.clusterDim.x = attrs[1].value.clusterDim.y = attrs[1].value.clusterDim.z = 1;
    CUlaunchConfig config = {.gridDimX = 4, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 256, .blockDimY = 1,
                             .blockDimZ = 1, .sharedMemBytes = 0, .hStream = 0, .attrs = attrs, .numAttrs = 2};
    TRY(cuLaunchKernelEx(&config, add, args, NULL));
    TRY(cuCtxSynchronize());
    printf("%s add by cuLaunchKernelEx: sum %lld\n", what, ints_sum(p));

    if (m) {
        CUdeviceptr counter;
        size_t size;
        unsigned int count = 0;
        TRY(cuModuleGetGlobal(&counter, &size, m, "pp_test_counter"));
        TRY(cuMemcpyDtoH(&count, counter, sizeof count));
        printf("%s counter: %u\n", what, count);
    }

    /* pp_test_scale through extra, with a tile of dynamic shared memory per block. */
    TRY(fill_floats(p));
    struct {
        CUdeviceptr p;
        unsigned long long n;
    } buffer = {p, N};
    size_t buffer_size = sizeof buffer;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &buffer_size,
                     CU_LAUNCH_PARAM_END};
    TRY(cuLaunchKernel(scale, 8, 1, 1, 128, 1, 1, 128 * sizeof(float), 0, NULL, extra));
    TRY(cuCtxSynchronize());
    printf("%s scale by extra: %d\n", what, floats_are(p, 2.0f));

    /* Launches the driver refuses, each before it runs. */
    printf("%s block of 1025 threads: %s\n", what, name_of(cuLaunchKernel(add, 1, 1, 1, 1025, 1, 1, 0, 0, args, NULL)));
    printf("%s block z of 65: %s\n", what, name_of(cuLaunchKernel(add, 1, 1, 1, 1, 1, 65, 0, 0, args, NULL)));
    printf("%s grid y of 65536: %s\n", what, name_of(cuLaunchKernel(add, 1, 65536, 1, 32, 1, 1, 0, 0, args, NULL)));
    printf("%s 1 MiB of dynamic shared memory: %s\n", what,
           name_of(cuLaunchKernel(scale, 1, 1, 1, 32, 1, 1, 1 << 20, 0, NULL, extra)));
    printf("%s kernelParams and extra: %s\n", what, name_of(cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, 0, args, extra)));
    TRY(cuCtxSynchronize());
    printf("%s unchanged: %d\n", what, floats_are(p, 2.0f));
    TRY(cuMemFree(p));
    return 0;
}

static int from_module(const char *name) {
    unsigned char *image = read_image(name);
    CUmodule m;
    CUfunction add, scale;
    TRY(cuModuleLoadData(&m, image));
    TRY(cuModuleGetFunction(&add, m, "pp_test_add"));
    TRY(cuModuleGetFunction(&scale, m, "pp_test_scale"));
    if (run_kernels(name, add, scale, m)) return 1;
    TRY(cuModuleUnload(m));
    free(image);
    return 0;
}

/* The image the JIT linker makes of one input, loaded as a module: what programs that compile
 * at run time do (a GPU's linker gives a cubin; the simulator gives the input back). */
static int from_link(const char *name, CUjitInputType type) {
    unsigned char *image = read_image(name);
    CUlinkState link;
    void *out = NULL;
    size_t size = 0;
    TRY(cuLinkCreate(0, NULL, NULL, &link));
    TRY(cuLinkAddData(link, type, image, strlen((const char *)image) + 1, name, 0, NULL, NULL));
    TRY(cuLinkComplete(link, &out, &size));
    CUmodule m;
    CUfunction add, scale;
    TRY(cuModuleLoadData(&m, out));
    TRY(cuLinkDestroy(link));
    TRY(cuModuleGetFunction(&add, m, "pp_test_add"));
    TRY(cuModuleGetFunction(&scale, m, "pp_test_scale"));
    char what[256];
    snprintf(what, sizeof what, "linked %s", name);
    if (run_kernels(what, add, scale, m)) return 1;
    TRY(cuModuleUnload(m));
    free(image);
    return 0;
}

/* A library's kernels, launched by their CUkernel handles as the runtime launches them. */
static int from_library(const char *name) {
    unsigned char *image = read_image(name);
    CUlibrary lib;
    CUkernel add, scale;
    TRY(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
    TRY(cuLibraryGetKernel(&add, lib, "pp_test_add"));
    TRY(cuLibraryGetKernel(&scale, lib, "pp_test_scale"));
    if (run_kernels(name, (CUfunction)add, (CUfunction)scale, NULL)) return 1;
    TRY(cuLibraryUnload(lib));
    free(image);
    return 0;
}

/* pp_test_add from kernels.ptx, its module left loaded (a launch that faults comes next). */
static int ptx_add(CUfunction *add) {
    unsigned char *image = read_image("kernels.ptx");
    CUmodule m;
    TRY(cuModuleLoadData(&m, image));
    TRY(cuModuleGetFunction(add, m, "pp_test_add"));
    free(image);
    return 0;
}

/* GPU 0 runs pp_test_add on memory of GPU 1's default pool: granted, then not. The ungranted
 * launch's fault ends the process's CUDA, so it comes last. */
static int peer(void) {
    CUdevice gpu1;
    CUcontext ctx1;
    CUmemoryPool pool;
    CUdeviceptr p;
    TRY(cuDeviceGet(&gpu1, 1));
    TRY(cuDevicePrimaryCtxRetain(&ctx1, gpu1));
    TRY(cuCtxSetCurrent(ctx1));
    TRY(cuDeviceGetDefaultMemPool(&pool, gpu1));
    TRY(cuMemAllocFromPoolAsync(&p, N * sizeof(int), pool, 0));
    TRY(fill_ints(p));
    TRY(cuCtxSynchronize());
    CUcontext ctx0;
    TRY(cuDevicePrimaryCtxRetain(&ctx0, 0));
    TRY(cuCtxSetCurrent(ctx0));
    CUfunction add;
    if (ptx_add(&add)) return 1;
    int n = N, v = 7;
    void *args[] = {&p, &n, &v};
    CUmemAccessDesc desc = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    TRY(cuMemPoolSetAccess(pool, &desc, 1));
    TRY(cuLaunchKernel(add, 4, 1, 1, 256, 1, 1, 0, 0, args, NULL));
    TRY(cuCtxSynchronize());
    printf("peer granted: %d\n", ints_are(p, 7));
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    TRY(cuMemPoolSetAccess(pool, &desc, 1));
    printf("peer ungranted launch: %s\n", name_of(cuLaunchKernel(add, 4, 1, 1, 256, 1, 1, 0, 0, args, NULL)));
    printf("peer ungranted synchronize: %s\n", name_of(cuCtxSynchronize()));
    after_a_fault("peer");
    return 0;
}

/* A kernel of errors.ptx that stops itself: thread 5's assert fails, or thread 3 runs
 * __trap(). The launch returns, the failure surfaces at the next synchronisation, and then? */
static int stops(const char *mode) {
    unsigned char *image = read_image("errors.ptx");
    CUmodule m;
    CUfunction f;
    TRY(cuModuleLoadData(&m, image));
    free(image);
    int host[64], n = 5, at = 3, assert_mode = strcmp(mode, "assert") == 0;
    for (int i = 0; i < 64; i++) host[i] = i;
    CUdeviceptr p;
    TRY(cuMemAlloc(&p, sizeof host));
    TRY(cuMemcpyHtoD(p, host, sizeof host));
    void *assert_args[] = {&p, &n}, *trap_args[] = {&at};
    TRY(cuModuleGetFunction(&f, m, assert_mode ? "pp_test_assert" : "pp_test_trap"));
    void **args = assert_mode ? assert_args : trap_args;
    printf("%s launch: %s\n", mode, name_of(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, 0, args, NULL)));
    printf("%s synchronize: %s\n", mode, name_of(cuCtxSynchronize()));
    after_a_fault(mode);
    return 0;
}

int main(int argc, char **argv) {
    images_dir_arg(argc, argv, dir, sizeof dir, "kernels IMAGES_DIR [peer|link|assert|trap]");
    CUdevice dev;
    CUcontext ctx;
    ON_GPU0(dev, ctx);
    if (argc > 2 && strcmp(argv[2], "peer") == 0) return peer();
    if (argc > 2 && strcmp(argv[2], "link") == 0) return from_link("kernels.ptx", CU_JIT_INPUT_PTX);
    if (argc > 2 && (strcmp(argv[2], "assert") == 0 || strcmp(argv[2], "trap") == 0)) return stops(argv[2]);
    if (from_module("kernels.ptx") || from_module("kernels.fatbin") || from_library("kernels.compressed.fatbin"))
        return 1;
    /* A kernel given an address in no allocation: the launch returns, the fault surfaces at the
     * next synchronisation, and the context is gone for good. */
    CUfunction add;
    if (ptx_add(&add)) return 1;
    CUdeviceptr nowhere = 0x10;
    int n = N, v = 1;
    void *args[] = {&nowhere, &n, &v};
    printf("stray launch: %s\n", name_of(cuLaunchKernel(add, 4, 1, 1, 256, 1, 1, 0, 0, args, NULL)));
    printf("stray synchronize: %s\n", name_of(cuCtxSynchronize()));
    after_a_fault("stray");
    return 0;
}
