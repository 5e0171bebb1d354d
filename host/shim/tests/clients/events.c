/* A C client that times work with CUDA events on gpu0, as any benchmark does, and asks for
 * what the driver refuses: flags it does not know, an interprocess event that keeps time, the
 * time of an event never recorded or made without timing. One line per fact, each the same on
 * any GPU (no absolute times), so that a run through the shim can be compared with NVIDIA's
 * driver. Exits 1 on an unexpected error ("fail <call>: <code>"). */
#include "client.h"

/* Milliseconds the memset of `bytes` takes on the default stream, between two timed events. */
static CUresult time_memset(CUdeviceptr p, size_t bytes, CUevent a, CUevent b, float *ms) {
    CUresult r;
    if ((r = cuEventRecord(a, 0)) || (r = cuMemsetD8Async(p, 7, bytes, 0)) || (r = cuEventRecord(b, 0)) ||
        (r = cuEventSynchronize(b)))
        return r;
    return cuEventElapsedTime(ms, a, b);
}

int main(void) {
    CUdevice dev;
    CUcontext ctx;
    ON_GPU0(dev, ctx);
    CUevent bad;
    printf("create flags 0x8: %s\n", name_of(cuEventCreate(&bad, 0x8)));
    printf("create interprocess, timed: %s\n", name_of(cuEventCreate(&bad, CU_EVENT_INTERPROCESS)));
    CUevent a, b, fresh, untimed;
    TRY(cuEventCreate(&a, CU_EVENT_DEFAULT));
    TRY(cuEventCreate(&b, CU_EVENT_BLOCKING_SYNC));
    TRY(cuEventCreate(&fresh, CU_EVENT_DEFAULT));
    TRY(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
    float ms = 0;
    TRY(cuEventRecord(a, 0));
    printf("elapsed to a never recorded event: %s\n", name_of(cuEventElapsedTime(&ms, a, fresh)));
    TRY(cuEventRecord(untimed, 0));
    TRY(cuEventSynchronize(untimed));
    printf("elapsed to an untimed event: %s\n", name_of(cuEventElapsedTime(&ms, a, untimed)));
    size_t big = (size_t)256 << 20;
    CUdeviceptr p;
    TRY(cuMemAlloc(&p, big));
    float small_ms = 0, big_ms = 0;
    TRY(time_memset(p, big / 16, a, b, &small_ms)); /* warm */
    TRY(time_memset(p, big / 16, a, b, &small_ms));
    TRY(time_memset(p, big, a, b, &big_ms));
    printf("a memset takes time: %d\n", small_ms > 0);
    printf("sixteen times the bytes take more than four times as long: %d\n", big_ms > 4 * small_ms);
    TRY(cuMemFree(p));
    TRY(cuEventDestroy(a));
    TRY(cuEventDestroy(b));
    TRY(cuEventDestroy(fresh));
    TRY(cuEventDestroy(untimed));
    printf("done\n");
    return 0;
}
