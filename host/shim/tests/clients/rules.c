/* A C client that shows what a fault rule on cuMemAlloc did: the code the call returned,
 * whether the device's free memory shrank by the allocation anyway (a rule that fails the call
 * after making it leaves the memory allocated and the pointer unknown to the caller), and
 * what the next call answers (a sticky fault fails every later call). One line per fact. */
#include "client.h"

int main(void) {
    CUdevice dev;
    CUcontext ctx;
    size_t free_before = 0, free_after = 0, total = 0;
    CUdeviceptr p = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
        cuMemGetInfo(&free_before, &total) != CUDA_SUCCESS) {
        printf("fail setup\n");
        return 1;
    }
    const size_t bytes = 64 << 20;
    CUresult alloc = cuMemAlloc(&p, bytes);
    printf("alloc %s\n", name_of(alloc));
    CUresult info = cuMemGetInfo(&free_after, &total);
    printf("next %s\n", name_of(info));
    if (info == CUDA_SUCCESS) printf("shrank %d\n", free_before - free_after >= bytes);
    if (alloc == CUDA_SUCCESS) cuMemFree(p);
    return 0;
}
