/* A C client of the calls programs make around their kernels on gpu0: stream and context
 * identities, capture status, host functions and callbacks on a stream, 16-bit and 2D
 * memsets, 2D copies, context limits and cache configuration, and the device's PCI identity.
 * One line per fact, no address or absolute id printed (only how they relate), so that a run
 * through the shim can be compared with NVIDIA's driver. Exits 1 on an unexpected error. */
#include "client.h"
#include <stdint.h>
#include <string.h>

static int host_fn_ran = 0;
static void CUDA_CB host_fn(void *data) { host_fn_ran = *(int *)data; }

static int callback_ran = 0;
static CUresult callback_status = CUDA_ERROR_UNKNOWN;
static void CUDA_CB callback(CUstream s, CUresult status, void *data) {
    (void)s;
    callback_ran = *(int *)data;
    callback_status = status;
}

int main(void) {
    CUdevice dev;
    CUcontext ctx;
    setvbuf(stdout, NULL, _IONBF, 0); /* what was printed survives a crash */
    TRY(cuInit(0));
    TRY(cuDeviceGet(&dev, 0));
    unsigned int flags = 99;
    int active = 99;
    TRY(cuDevicePrimaryCtxGetState(dev, &flags, &active));
    printf("primary before retain: flags %u active %d\n", flags, active);
    TRY(cuDevicePrimaryCtxRetain(&ctx, dev));
    TRY(cuDevicePrimaryCtxGetState(dev, &flags, &active));
    printf("primary after retain: flags %u active %d\n", flags, active);
    TRY(cuCtxSetCurrent(ctx));

    /* Identities. */
    unsigned long long ctx_id = 0, ctx_id2 = 0;
    TRY(cuCtxGetId(ctx, &ctx_id));
    TRY(cuCtxGetId(NULL, &ctx_id2));
    printf("context id stable and current: %d nonzero %d\n", ctx_id == ctx_id2, ctx_id != 0);
    CUstream a, b;
    TRY(cuStreamCreate(&a, CU_STREAM_DEFAULT));
    TRY(cuStreamCreateWithPriority(&b, CU_STREAM_NON_BLOCKING, -1));
    unsigned long long ia = 0, ib = 0, inull = 0, ilegacy = 0, iper = 0;
    TRY(cuStreamGetId(a, &ia));
    TRY(cuStreamGetId(b, &ib));
    TRY(cuStreamGetId(NULL, &inull));
    TRY(cuStreamGetId(CU_STREAM_LEGACY, &ilegacy));
    TRY(cuStreamGetId(CU_STREAM_PER_THREAD, &iper));
    printf("stream ids distinct %d ordered %d; null is legacy %d; per-thread differs %d\n", ia != ib, ib > ia,
           inull == ilegacy, iper != ilegacy);
    CUcontext sc = NULL;
    TRY(cuStreamGetCtx(a, &sc));
    printf("stream's context is current %d\n", sc == ctx);
    TRY(cuStreamGetCtx(NULL, &sc));
    printf("null stream's context is current %d\n", sc == ctx);
    unsigned int sflags = 99;
    int prio = 99;
    TRY(cuStreamGetFlags(b, &sflags));
    TRY(cuStreamGetPriority(b, &prio));
    printf("stream flags %u priority %d\n", sflags, prio);
    TRY(cuStreamGetFlags(a, &sflags));
    TRY(cuStreamGetPriority(a, &prio));
    printf("default stream flags %u priority %d\n", sflags, prio);
    int least = 99, greatest = 99;
    TRY(cuCtxGetStreamPriorityRange(&least, &greatest));
    printf("priority range %d %d\n", least, greatest);
    CUstreamCaptureStatus status = (CUstreamCaptureStatus)99;
    cuuint64_t capture_id = 99;
    CUgraph graph = (CUgraph)1;
    const CUgraphNode *deps = (const CUgraphNode *)1;
    const CUgraphEdgeData *edges = (const CUgraphEdgeData *)1;
    size_t ndeps = 99;
    CUresult r = cuStreamGetCaptureInfo(a, &status, &capture_id, &graph, &deps, &edges, &ndeps);
    printf("capture info %s status %d\n", name_of(r), (int)status);
    TRY(cuStreamIsCapturing(a, &status));
    printf("capturing %d\n", (int)status);

    /* Host work on a stream. */
    int token = 7, token2 = 9;
    TRY(cuLaunchHostFunc(a, host_fn, &token));
    TRY(cuStreamAddCallback(a, callback, &token2, 0));
    TRY(cuStreamSynchronize(a));
    printf("host function ran %d callback ran %d with %s\n", host_fn_ran, callback_ran, name_of(callback_status));
    printf("callback flags 1: %s\n", name_of(cuStreamAddCallback(a, callback, &token2, 1)));
    printf("query: %s\n", name_of(cuStreamQuery(a)));

    /* Memsets and 2D copies. */
    CUdeviceptr d;
    TRY(cuMemAlloc(&d, 65536));
    TRY(cuMemsetD16(d, 0xabcd, 100));
    unsigned short halves[101];
    TRY(cuMemcpyDtoH(halves, d, sizeof halves));
    printf("memset d16: %d %d\n", halves[0] == 0xabcd && halves[99] == 0xabcd, halves[100] != 0xabcd);
    printf("memset d16 unaligned: %s\n", name_of(cuMemsetD16(d + 1, 1, 4)));
    TRY(cuMemsetD16Async(d, 0x1234, 8, a));
    TRY(cuStreamSynchronize(a));
    TRY(cuMemcpyDtoH(halves, d, 16));
    printf("memset d16 async: %d\n", halves[7] == 0x1234);
    TRY(cuMemsetD8(d, 0, 65536));
    TRY(cuMemsetD2D8(d, 256, 0x7f, 100, 10)); /* 10 rows of 100 bytes, 256 apart */
    unsigned char rows[256 * 10];
    TRY(cuMemcpyDtoH(rows, d, sizeof rows));
    printf("memset 2d8: %d %d %d\n", rows[0] == 0x7f && rows[99] == 0x7f, rows[100] == 0, rows[9 * 256 + 99] == 0x7f);
    TRY(cuMemsetD2D16(d, 256, 0x0102, 50, 10));
    TRY(cuMemsetD2D32(d + 128, 256, 0x05060708, 25, 10));
    TRY(cuMemcpyDtoH(rows, d, sizeof rows));
    printf("memset 2d16/32: %d %d %d\n", rows[0] == 0x02 && rows[1] == 0x01, rows[128] == 0x08 && rows[131] == 0x05,
           rows[9 * 256 + 128 + 99] == 0x05);
    printf("memset 2d8 pitch too small: %s\n", name_of(cuMemsetD2D8(d, 50, 1, 100, 2)));
    unsigned char src[64 * 8], dst[64 * 8];
    for (int i = 0; i < (int)sizeof src; i++) src[i] = (unsigned char)(i * 3 + 1);
    memset(dst, 0, sizeof dst);
    /* 8 rows of 48 bytes, to 512-byte device rows and back (unnamed fields zero). */
    CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src, .srcPitch = 64,
                       .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = d, .dstPitch = 512,
                       .WidthInBytes = 48, .Height = 8};
    TRY(cuMemcpy2D(&c));
    c = (CUDA_MEMCPY2D){.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = d, .srcPitch = 512,
                        .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = dst, .dstPitch = 64,
                        .WidthInBytes = 48, .Height = 8};
    TRY(cuMemcpy2DAsync(&c, a));
    TRY(cuStreamSynchronize(a));
    int same = 1;
    for (int row = 0; row < 8; row++)
        for (int col = 0; col < 64; col++)
            same &= dst[row * 64 + col] == (col < 48 ? src[row * 64 + col] : 0);
    printf("memcpy 2d there and back: %d\n", same);
    c.WidthInBytes = 600;
    printf("memcpy 2d wider than the pitch: %s\n", name_of(cuMemcpy2D(&c)));
    c.WidthInBytes = 48;
    c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    printf("memcpy 2d unified source: %s\n", name_of(cuMemcpy2D(&c)));

    /* Limits and cache configuration. */
    size_t limit = 0;
    CUlimit limits[] = {CU_LIMIT_STACK_SIZE, CU_LIMIT_PRINTF_FIFO_SIZE, CU_LIMIT_MALLOC_HEAP_SIZE,
                        CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, CU_LIMIT_MAX_L2_FETCH_GRANULARITY,
                        CU_LIMIT_PERSISTING_L2_CACHE_SIZE};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        r = cuCtxGetLimit(&limit, limits[i]);
        printf("limit %d: %s %zu\n", (int)limits[i], name_of(r), limit);
    }
    printf("set stack size 4096: %s", name_of(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096)));
    TRY(cuCtxGetLimit(&limit, CU_LIMIT_STACK_SIZE));
    printf(" now %zu\n", limit);
    printf("set malloc heap 16 MiB: %s", name_of(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 16 << 20)));
    TRY(cuCtxGetLimit(&limit, CU_LIMIT_MALLOC_HEAP_SIZE));
    printf(" now %zu\n", limit);
    printf("limit 99: %s\n", name_of(cuCtxGetLimit(&limit, (CUlimit)99)));
    CUfunc_cache cache = (CUfunc_cache)99;
    TRY(cuCtxGetCacheConfig(&cache));
    printf("cache config %d", (int)cache);
    printf(" set prefer shared %s", name_of(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_SHARED)));
    TRY(cuCtxGetCacheConfig(&cache));
    printf(" now %d\n", (int)cache);
    unsigned int ctx_flags = 99;
    TRY(cuCtxGetFlags(&ctx_flags));
    printf("context flags %u\n", ctx_flags);
    unsigned int api = 0;
    TRY(cuCtxGetApiVersion(ctx, &api));
    printf("api version %u\n", api);

    /* The device's identity. */
    char bus[64];
    TRY(cuDeviceGetPCIBusId(bus, sizeof bus, dev));
    CUdevice found = -1;
    printf("by pci bus id: %s", name_of(cuDeviceGetByPCIBusId(&found, bus)));
    printf(" same %d\n", found == dev);
    printf("by a pci bus id that is no GPU: %s\n", name_of(cuDeviceGetByPCIBusId(&found, "0000:ff:1f.7")));
    printf("by garbage: %s\n", name_of(cuDeviceGetByPCIBusId(&found, "not a bus id")));
    char luid[8];
    unsigned int mask = 0;
    printf("luid: %s\n", name_of(cuDeviceGetLuid(luid, &mask, dev)));
    size_t width = 0;
    printf("texture 1d linear max width: %s\n",
           name_of(cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_FLOAT, 1, dev)));
    TRY(cuMemFree(d));
    TRY(cuStreamDestroy(a));
    TRY(cuStreamDestroy(b));
    TRY(cuDevicePrimaryCtxRelease(dev));
    printf("done\n");
    return 0;
}
