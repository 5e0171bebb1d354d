/* A C client of the CUDA driver API, linked with -lcuda, that knows nothing of peerpool:
 * it prints what it observes about every ordered GPU pair (peer capability, and whether a
 * pool grant to the peer takes, reads back and moves bytes), so that a test can compare it
 * with the simulated topology. One line per fact. On an unexpected error it prints
 * "fail <call>: <code>", then "after <code>" for one more call (a context killed by a sticky
 * error answers it with the same code), and exits 1. */
#include "client.h"
#include <string.h>

int main(void) {
    int count = 0, version = 0;
    TRY(cuInit(0));
    TRY(cuDriverGetVersion(&version));
    TRY(cuDeviceGetCount(&count));
    printf("devices %d\n", count);
    CUcontext ctx[64];
    for (int d = 0; d < count && d < 64; d++) {
        CUdevice dev;
        char name[64];
        TRY(cuDeviceGet(&dev, d));
        TRY(cuDeviceGetName(name, sizeof name, dev));
        TRY(cuDevicePrimaryCtxRetain(&ctx[d], dev));
    }
    for (int owner = 0; owner < count && owner < 64; owner++) {
        for (int peer = 0; peer < count && peer < 64; peer++) {
            if (peer == owner) continue;
            int can = 0;
            TRY(cuDeviceCanAccessPeer(&can, peer, owner));
            /* A pool on the owner, granted to the peer when it can access it. */
            TRY(cuCtxSetCurrent(ctx[owner]));
            CUmemPoolProps props = pinned_pool_props(owner);
            CUmemoryPool pool;
            TRY(cuMemPoolCreate(&pool, &props));
            CUmemAccessDesc desc;
            desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            desc.location.id = peer;
            desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            CUresult grant = cuMemPoolSetAccess(pool, &desc, 1);
            CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
            CUmemLocation loc = desc.location;
            TRY(cuMemPoolGetAccess(&flags, pool, &loc));
            /* Bytes written on the owner, copied by the peer's context into its own memory. */
            int moved = 0;
            if (grant == CUDA_SUCCESS) {
                CUdeviceptr src, dst;
                unsigned char out[256], back[256];
                for (int i = 0; i < 256; i++) out[i] = (unsigned char)(i * 7 + owner);
                TRY(cuMemAllocFromPoolAsync(&src, sizeof out, pool, 0));
                TRY(cuMemcpyHtoD(src, out, sizeof out));
                TRY(cuCtxSetCurrent(ctx[peer]));
                TRY(cuMemAlloc(&dst, sizeof out));
                TRY(cuMemcpyDtoD(dst, src, sizeof out));
                TRY(cuMemcpyDtoH(back, dst, sizeof back));
                moved = memcmp(out, back, sizeof out) == 0;
                TRY(cuMemFree(dst));
                TRY(cuCtxSetCurrent(ctx[owner]));
                TRY(cuMemFreeAsync(src, 0));
                TRY(cuCtxSynchronize());
                desc.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
                TRY(cuMemPoolSetAccess(pool, &desc, 1));
            }
            TRY(cuMemPoolDestroy(pool));
            printf("pair %d->%d can_access %d grant %s readback %s moved %d\n", peer, owner, can,
                   grant == CUDA_SUCCESS ? "ok" : name_of(grant),
                   flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? "rw" : "none", moved);
        }
    }
    for (int d = 0; d < count && d < 64; d++) TRY(cuDevicePrimaryCtxRelease(d));
    printf("done version %d\n", version);
    return 0;
}
