/* A soak of the calls a long-running program repeats: allocate, copy and free (cuMemAlloc, or
 * a pool's stream-ordered allocations), create and destroy pools, create and destroy
 * contexts. After a warm-up of a tenth of the cycles, it prints how much the process's resident
 * memory grew over the rest, so that leaks in whatever answers the calls show.
 * Usage: soak alloc|pool|pools|contexts CYCLES   Prints "<what> <cycles> cycles: rss grew <KiB> KiB". */
#include "client.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Resident memory in KiB, from /proc/self/statm. */
static long rss_kib(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static CUresult one_cycle(const char *what, CUdevice dev, CUmemoryPool pool, CUstream s) {
    unsigned char bytes[64] = {7};
    CUresult r = CUDA_SUCCESS;
    if (strcmp(what, "alloc") == 0) {
        CUdeviceptr p;
        if ((r = cuMemAlloc(&p, 4096)) || (r = cuMemcpyHtoD(p, bytes, sizeof bytes)) || (r = cuMemFree(p))) return r;
    } else if (strcmp(what, "pool") == 0) {
        CUdeviceptr p;
        if ((r = cuMemAllocFromPoolAsync(&p, 4096, pool, s)) || (r = cuMemcpyHtoDAsync(p, bytes, sizeof bytes, s)) ||
            (r = cuMemFreeAsync(p, s)))
            return r;
    } else if (strcmp(what, "pools") == 0) {
        CUmemPoolProps props = pinned_pool_props(0);
        CUmemoryPool made;
        if ((r = cuMemPoolCreate(&made, &props)) || (r = cuMemPoolDestroy(made))) return r;
    } else if (strcmp(what, "contexts") == 0) {
        CUcontext ctx;
        if ((r = cuCtxCreate(&ctx, NULL, 0, dev)) || (r = cuCtxDestroy(ctx))) return r;
    } else {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return r;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        printf("usage: soak alloc|pool|pools|contexts CYCLES\n");
        return 2;
    }
    long cycles = atol(argv[2]);
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    ON_GPU0(dev, ctx);
    TRY(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUmemoryPool pool;
    TRY(cuDeviceGetDefaultMemPool(&pool, dev));
    long warm = cycles / 10, before = 0;
    for (long i = 0; i < cycles; i++) {
        if (i == warm) before = rss_kib();
        CUresult r = one_cycle(argv[1], dev, pool, s);
        if (r != CUDA_SUCCESS) {
            printf("fail cycle %ld: %s\n", i, name_of(r));
            return 1;
        }
        if (i % 1000 == 999) TRY(cuStreamSynchronize(s));
    }
    TRY(cuStreamSynchronize(s));
    printf("%s %ld cycles: rss grew %ld KiB\n", argv[1], cycles - warm, rss_kib() - before);
    return 0;
}
