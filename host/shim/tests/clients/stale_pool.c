/* A C client that keeps using a pool after destroying it, as a use-after-free bug would: it
 * asks for the pool's access, grants it, allocates from it, and destroys it again. On NVIDIA's
 * driver such a handle returned stale access and then crashed the process; the shim answers
 * every call CUDA_ERROR_INVALID_HANDLE and names the handle once on stderr. */
#include "client.h"
#include <string.h>

int main(void) {
    CUdevice dev;
    CUcontext ctx;
    ON_GPU0(dev, ctx);
    CUmemPoolProps props = pinned_pool_props(0);
    CUmemoryPool pool;
    TRY(cuMemPoolCreate(&pool, &props));
    TRY(cuMemPoolDestroy(pool));
    CUmemLocation loc = props.location;
    CUmemAccess_flags flags;
    printf("get access: %s\n", name_of(cuMemPoolGetAccess(&flags, pool, &loc)));
    CUmemAccessDesc desc;
    desc.location = loc;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    printf("set access: %s\n", name_of(cuMemPoolSetAccess(pool, &desc, 1)));
    CUdeviceptr p;
    printf("allocate: %s\n", name_of(cuMemAllocFromPoolAsync(&p, 64, pool, 0)));
    printf("destroy again: %s\n", name_of(cuMemPoolDestroy(pool)));
    int count;
    printf("the process goes on: %s\n", name_of(cuDeviceGetCount(&count)));
    return 0;
}
