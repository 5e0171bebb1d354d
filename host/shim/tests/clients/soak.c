/* A soak of the calls a long-running program repeats: allocate, copy and free (cuMemAlloc, or
 * a pool's stream-ordered allocations), create and destroy pools, create and destroy
 * contexts. After a warm-up of a tenth of the cycles, it prints how much the process's resident
 * memory grew over the rest, so that leaks in whatever answers the calls show.
 * churn: allocation churn across every device's pools and streams.
 * Usage: soak alloc|pool|pools|contexts|churn CYCLES   Prints "<what> <cycles> cycles: rss grew <KiB> KiB". */
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

/* Allocation churn on every device: each cycle on the next device, from its default pool, a
 * pool of its own or cuMemAlloc, on one of two streams, of a size between 256 bytes and 4 MiB;
 * 64 allocations live at a time, the oldest freed to make room, so freed ranges of every size
 * are reused. Prints how much resident memory grew after the warm-up. */
#define LIVE 64
static int churn(long cycles) {
    TRY(cuInit(0));
    int n = 0;
    TRY(cuDeviceGetCount(&n));
    if (n > 16) n = 16;
    CUcontext ctx[16];
    CUstream streams[16][2];
    CUmemoryPool pools[16][2];
    for (int d = 0; d < n; d++) {
        CUdevice dev;
        TRY(cuDeviceGet(&dev, d));
        TRY(cuDevicePrimaryCtxRetain(&ctx[d], dev));
        TRY(cuCtxSetCurrent(ctx[d]));
        for (int k = 0; k < 2; k++) TRY(cuStreamCreate(&streams[d][k], CU_STREAM_NON_BLOCKING));
        CUmemPoolProps props = pinned_pool_props(d);
        TRY(cuDeviceGetDefaultMemPool(&pools[d][0], dev));
        TRY(cuMemPoolCreate(&pools[d][1], &props));
    }
    struct Live {
        CUdeviceptr p;
        int device, legacy;
        CUstream s;
    } live[LIVE];
    memset(live, 0, sizeof live);
    unsigned long long seed = 88172645463325252ull;
    long warm = cycles / 10, before = 0;
    for (long i = 0; i < cycles; i++) {
        if (i == warm) before = rss_kib();
        struct Live *slot = &live[i % LIVE];
        if (slot->p) {
            TRY(cuCtxSetCurrent(ctx[slot->device]));
            if (slot->legacy) TRY(cuMemFree(slot->p));
            else TRY(cuMemFreeAsync(slot->p, slot->s));
        }
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        int d = (int)(i % n), how = (int)(seed % 3);
        size_t bytes = (size_t)256 << (seed >> 8) % 15;
        CUstream s = streams[d][(seed >> 20) & 1];
        TRY(cuCtxSetCurrent(ctx[d]));
        CUresult r = how == 2 ? cuMemAlloc(&slot->p, bytes) : cuMemAllocFromPoolAsync(&slot->p, bytes, pools[d][how], s);
        if (r != CUDA_SUCCESS) {
            printf("fail cycle %ld: %s\n", i, name_of(r));
            return 1;
        }
        slot->device = d, slot->legacy = how == 2, slot->s = s;
        if (i % 100000 == 99999) {
            for (int e = 0; e < n; e++) {
                TRY(cuCtxSetCurrent(ctx[e]));
                TRY(cuCtxSynchronize());
            }
        }
    }
    printf("churn on %d GPUs, %ld cycles: rss grew %ld KiB\n", n, cycles - warm, rss_kib() - before);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        printf("usage: soak alloc|pool|pools|contexts|churn CYCLES\n");
        return 2;
    }
    long cycles = atol(argv[2]);
    if (strcmp(argv[1], "churn") == 0) return churn(cycles);
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
