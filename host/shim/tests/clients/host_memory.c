/* A C client of page-locked host memory on gpu0, as staging buffers use it: allocated by the
 * driver (cuMemAllocHost, cuMemHostAlloc with each flag) or registered (cuMemHostRegister),
 * written by the host and copied to and from the device, asked what it is (flags, device
 * pointer, pointer attributes, address range), freed twice and mixed up with device memory.
 * Also cuMemcpy on a freed device pointer and past an allocation's end. One line per fact,
 * with no address printed (only how addresses relate), so that a run through the shim can be
 * compared with NVIDIA's driver. Exits 1 on an unexpected error ("fail <call>: <code>"). */
#include "client.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* What the pointer attributes say of `p`, relative to `host` (the host address) and `ctx`. */
static void attributes(const char *what, CUdeviceptr p, void *host, CUcontext ctx) {
    unsigned int type = 0, managed = 0, mapped = 0, ipc = 0;
    int ordinal = -9;
    void *host_ptr = NULL;
    CUdeviceptr dev_ptr = 0, start = 0;
    size_t size = 0;
    CUcontext owner = NULL;
    CUmemoryPool pool = NULL;
    CUpointer_attribute which[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,        CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_MAPPED,             CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,     CU_POINTER_ATTRIBUTE_HOST_POINTER,
        CU_POINTER_ATTRIBUTE_DEVICE_POINTER,     CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,         CU_POINTER_ATTRIBUTE_CONTEXT,
        CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
    };
    void *data[] = {&type, &managed, &mapped, &ipc, &ordinal, &host_ptr, &dev_ptr, &start, &size, &owner, &pool};
    CUresult r = cuPointerGetAttributes(sizeof which / sizeof which[0], which, data, p);
    printf("%s attributes %s type %u managed %u mapped %u legacy_ipc %u ordinal %d host_ptr %s dev_ptr %s "
           "range_start %s range_size %zu context %s pool %s\n",
           what, name_of(r), type, managed, mapped, ipc, ordinal,
           host_ptr == NULL ? "null" : host_ptr == host ? "same" : "other",
           dev_ptr == 0 ? "null" : dev_ptr == (CUdeviceptr)(uintptr_t)host ? "same" : "other",
           start == 0 ? "null" : start == (CUdeviceptr)(uintptr_t)host ? "same" : "other", size,
           owner == NULL ? "null" : owner == ctx ? "current" : "other", pool == NULL ? "null" : "set");
    unsigned int one = 77;
    r = cuPointerGetAttribute(&one, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
    printf("%s memory type alone %s %u\n", what, name_of(r), one);
}

/* Copies that name device memory that is not there, case by case: freed, or past the end of
 * an allocation. */
#define RISKY 5
static int risky(int which) {
    static const char *what[RISKY] = {"cuMemcpy to a freed device pointer", "cuMemcpy from a freed device pointer",
                                      "cuMemcpyHtoD to a freed device pointer",
                                      "cuMemcpy past the end of an allocation",
                                      "cuMemcpy across the end of an allocation"};
    CUdevice dev;
    CUcontext ctx;
    ON_GPU0(dev, ctx);
    CUdeviceptr gone, d;
    TRY(cuMemAlloc(&gone, 4096));
    TRY(cuMemFree(gone));
    TRY(cuMemAlloc(&d, 4096));
    unsigned char host[16] = {1};
    CUdeviceptr h = (CUdeviceptr)(uintptr_t)host;
    CUresult r = CUDA_ERROR_UNKNOWN;
    switch (which) {
        case 0: r = cuMemcpy(gone, h, 16); break;
        case 1: r = cuMemcpy(h, gone, 16); break;
        case 2: r = cuMemcpyHtoD(gone, host, 16); break;
        case 3: r = cuMemcpy(d + 4096, h, 16); break;
        case 4: r = cuMemcpy(d + 4090, h, 16); break;
    }
    printf("%s: %s\n", what[which], name_of(r));
    return 0;
}

/* Runs risky(which) in a new process of this program and says how it ended. */
static void risky_in_child(const char *self, int which) {
    pid_t pid = fork();
    if (pid == 0) {
        char arg[16];
        snprintf(arg, sizeof arg, "%d", which);
        execl(self, self, "risky", arg, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) printf("case %d: the process died of signal %d\n", which, WTERMSIG(status));
}

/* Allocates with cuMemHostAlloc(flags) and prints what comes back. */
static void host_alloc(unsigned int flags) {
    void *p = NULL;
    CUresult r = cuMemHostAlloc(&p, 4096, flags);
    unsigned int got = 0;
    CUresult g = r == CUDA_SUCCESS ? cuMemHostGetFlags(&got, p) : r;
    CUdeviceptr d = 0;
    CUresult dp = r == CUDA_SUCCESS ? cuMemHostGetDevicePointer(&d, p, 0) : r;
    printf("host alloc flags 0x%x: %s get_flags %s 0x%x device_pointer %s %s\n", flags, name_of(r), name_of(g), got,
           name_of(dp), d == 0 ? "null" : d == (CUdeviceptr)(uintptr_t)p ? "same" : "other");
    if (r == CUDA_SUCCESS) printf("free it: %s\n", name_of(cuMemFreeHost(p)));
}

int main(int argc, char **argv) {
    CUdevice dev;
    CUcontext ctx;
    setvbuf(stdout, NULL, _IONBF, 0); /* what was printed survives a crash */
    if (argc > 2 && strcmp(argv[1], "risky") == 0) return risky(atoi(argv[2]));
    ON_GPU0(dev, ctx);
    TRY(show_attribute("can map host memory", CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dev));
    TRY(show_attribute("unified addressing", CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, dev));
    TRY(show_attribute("host register supported", CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, dev));
    TRY(show_attribute("read-only host register supported", CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, dev));
    TRY(show_attribute("pageable memory access", CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, dev));

    /* cuMemcpy on device addresses that are no longer, or never were, allocated: each in a
     * process of its own, since a driver may crash on them. */
    for (int i = 0; i < RISKY; i++) risky_in_child(argv[0], i);

    /* cuMemAllocHost: written by the host, copied to the device and back. */
    unsigned char *pinned = NULL;
    TRY(cuMemAllocHost((void **)&pinned, 4096));
    for (int i = 0; i < 4096; i++) pinned[i] = (unsigned char)(i * 13 + 1);
    unsigned int flags = 0;
    TRY(cuMemHostGetFlags(&flags, pinned));
    printf("alloc host flags 0x%x\n", flags);
    CUdeviceptr mapped = 0;
    printf("device pointer %s", name_of(cuMemHostGetDevicePointer(&mapped, pinned, 0)));
    printf(" %s\n", mapped == (CUdeviceptr)(uintptr_t)pinned ? "same" : "other");
    printf("device pointer flags 1: %s\n", name_of(cuMemHostGetDevicePointer(&mapped, pinned, 1)));
    printf("device pointer inside: %s", name_of(cuMemHostGetDevicePointer(&mapped, pinned + 100, 0)));
    printf(" %s\n", mapped == (CUdeviceptr)(uintptr_t)(pinned + 100) ? "same" : "other");
    attributes("pinned", (CUdeviceptr)(uintptr_t)pinned, pinned, ctx);
    attributes("pinned+100", (CUdeviceptr)(uintptr_t)(pinned + 100), pinned, ctx);
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult range = cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)(pinned + 100));
    printf("address range %s base %s size %zu\n", name_of(range), base == (CUdeviceptr)(uintptr_t)pinned ? "same" : "other", size);

    CUdeviceptr d;
    TRY(cuMemAlloc(&d, 4096));
    TRY(cuMemcpyHtoD(d, pinned, 4096));
    unsigned char back[4096];
    memset(back, 0, sizeof back);
    TRY(cuMemcpyDtoH(back, d, 4096));
    printf("htod/dtoh through pinned: %d\n", memcmp(back, pinned, 4096) == 0);
    memset(pinned, 0, 4096);
    TRY(cuMemcpy((CUdeviceptr)(uintptr_t)pinned, d, 4096));
    printf("cuMemcpy device to pinned: %d\n", memcmp(back, pinned, 4096) == 0);
    CUstream s;
    TRY(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    memset(pinned, 0x11, 64);
    TRY(cuMemcpyHtoDAsync(d, pinned, 64, s));
    TRY(cuMemcpyDtoHAsync(back, d, 64, s));
    TRY(cuStreamSynchronize(s));
    printf("async through pinned: %d\n", back[0] == 0x11 && back[63] == 0x11);
    printf("memset on pinned: %s", name_of(cuMemsetD8((CUdeviceptr)(uintptr_t)pinned, 0x5a, 16)));
    printf(" bytes %d\n", pinned[0] == 0x5a && pinned[15] == 0x5a);
    printf("dtod into pinned: %s", name_of(cuMemcpyDtoD((CUdeviceptr)(uintptr_t)pinned, d, 64)));
    printf(" bytes %d\n", pinned[0] == 0x11 && pinned[63] == 0x11);

    /* Pageable memory (malloc): not known to the driver. */
    unsigned char *pageable = malloc(8192);
    memset(pageable, 3, 8192);
    attributes("pageable", (CUdeviceptr)(uintptr_t)pageable, pageable, ctx);
    printf("pageable flags %s\n", name_of(cuMemHostGetFlags(&flags, pageable)));
    TRY(cuMemcpyHtoD(d, pageable, 4096));
    printf("cuMemcpy device to pageable: %s\n", name_of(cuMemcpy((CUdeviceptr)(uintptr_t)pageable, d, 16)));

    /* cuMemHostAlloc, flag by flag. */
    host_alloc(0);
    host_alloc(CU_MEMHOSTALLOC_PORTABLE);
    host_alloc(CU_MEMHOSTALLOC_DEVICEMAP);
    host_alloc(CU_MEMHOSTALLOC_WRITECOMBINED);
    host_alloc(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    host_alloc(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_WRITECOMBINED);
    host_alloc(CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED);
    host_alloc(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED);
    host_alloc(0x8);
    host_alloc(0x100);
    void *none = NULL;
    CUresult zero = cuMemHostAlloc(&none, 0, 0);
    printf("host alloc 0 bytes: %s null %d\n", name_of(zero), none == NULL);
    printf("alloc host 0 bytes: %s\n", name_of(cuMemAllocHost(&none, 0)));
    printf("alloc host null out: %s\n", name_of(cuMemAllocHost(NULL, 64)));

    /* cuMemHostRegister of page-aligned host memory. */
    unsigned char *mine = NULL;
    if (posix_memalign((void **)&mine, 4096, 3 * 4096) != 0) return 1;
    memset(mine, 9, 3 * 4096);
    printf("register: %s\n", name_of(cuMemHostRegister(mine, 2 * 4096, 0)));
    printf("registered flags %s", name_of(cuMemHostGetFlags(&flags, mine)));
    printf(" 0x%x\n", flags);
    printf("registered device pointer %s", name_of(cuMemHostGetDevicePointer(&mapped, mine + 8, 0)));
    printf(" %s\n", mapped == (CUdeviceptr)(uintptr_t)(mine + 8) ? "same" : "other");
    attributes("registered", (CUdeviceptr)(uintptr_t)mine, mine, ctx);
    attributes("registered+4096", (CUdeviceptr)(uintptr_t)(mine + 4096), mine, ctx);
    attributes("past registered", (CUdeviceptr)(uintptr_t)(mine + 2 * 4096), mine, ctx);
    range = cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)(mine + 5000));
    printf("registered range %s base %s size %zu\n", name_of(range), base == (CUdeviceptr)(uintptr_t)mine ? "same" : "other", size);
    TRY(cuMemcpyDtoH(mine, d, 64));
    printf("dtoh into registered: %d\n", mine[0] == 3 && mine[63] == 3);
    printf("register again: %s\n", name_of(cuMemHostRegister(mine, 2 * 4096, 0)));
    printf("register overlapping: %s\n", name_of(cuMemHostRegister(mine + 4096, 2 * 4096, 0)));
    printf("unregister inside: %s\n", name_of(cuMemHostUnregister(mine + 4096)));
    printf("unregister: %s\n", name_of(cuMemHostUnregister(mine)));
    printf("unregister again: %s\n", name_of(cuMemHostUnregister(mine)));
    printf("register unaligned: %s", name_of(cuMemHostRegister(mine + 8, 100, 0)));
    printf(" unregister it: %s\n", name_of(cuMemHostUnregister(mine + 8)));
    printf("register flags 0x%x: %s", CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP,
           name_of(cuMemHostRegister(mine, 4096, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP)));
    printf(" flags %s", name_of(cuMemHostGetFlags(&flags, mine)));
    printf(" 0x%x unregister %s\n", flags, name_of(cuMemHostUnregister(mine)));
    printf("register read-only: %s", name_of(cuMemHostRegister(mine, 4096, CU_MEMHOSTREGISTER_READ_ONLY)));
    printf(" flags %s", name_of(cuMemHostGetFlags(&flags, mine)));
    printf(" 0x%x unregister %s\n", flags, name_of(cuMemHostUnregister(mine)));
    printf("register iomemory: %s\n", name_of(cuMemHostRegister(mine, 4096, CU_MEMHOSTREGISTER_IOMEMORY)));
    printf("register flags 0x40: %s\n", name_of(cuMemHostRegister(mine, 4096, 0x40)));
    printf("register 0 bytes: %s\n", name_of(cuMemHostRegister(mine, 0, 0)));
    printf("register null: %s\n", name_of(cuMemHostRegister(NULL, 4096, 0)));
    printf("register pinned: %s\n", name_of(cuMemHostRegister(pinned, 4096, 0)));
    printf("register device memory: %s\n", name_of(cuMemHostRegister((void *)(uintptr_t)d, 4096, 0)));

    /* Frees that mix kinds up, and frees twice. */
    printf("free host on device memory: %s\n", name_of(cuMemFreeHost((void *)(uintptr_t)d)));
    printf("free host on pageable: %s\n", name_of(cuMemFreeHost(pageable)));
    printf("free host inside: %s\n", name_of(cuMemFreeHost(pinned + 100)));
    printf("free (device) on pinned: %s\n", name_of(cuMemFree((CUdeviceptr)(uintptr_t)pinned)));
    printf("free host: %s\n", name_of(cuMemFreeHost(pinned)));
    printf("free host again: %s\n", name_of(cuMemFreeHost(pinned)));
    printf("free host null: %s\n", name_of(cuMemFreeHost(NULL)));
    attributes("freed pinned", (CUdeviceptr)(uintptr_t)pinned, pinned, ctx);

    TRY(cuMemFree(d));
    TRY(cuStreamDestroy(s));
    free(mine);
    free(pageable);
    TRY(cuDevicePrimaryCtxRelease(dev));
    printf("done\n");
    return 0;
}
