/* What one cheap driver call costs: the median, over rounds, of the mean time of a run of
 * calls (cuCtxGetCurrent unless another is named). Run it against NVIDIA's libcuda and through
 * the shim's real backend (with and without a trace) in one session, and compare:
 * ci/gpu-passthrough.sh does.
 * Usage: call_cost [calls per round] [rounds] [call]   Prints: ns_per_call <median>
 * call: cuCtxGetCurrent (the default), cuCtxGetDevice, cuDeviceGet or cuStreamQuery (of a
 * stream made for it, idle). */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static CUdevice dev;
static CUcontext ctx;
static CUstream stream;

static int ctx_get_current(void) {
    CUcontext seen;
    return cuCtxGetCurrent(&seen) != CUDA_SUCCESS || seen != ctx;
}

static int ctx_get_device(void) {
    CUdevice seen;
    return cuCtxGetDevice(&seen) != CUDA_SUCCESS || seen != dev;
}

static int device_get(void) {
    CUdevice seen;
    return cuDeviceGet(&seen, 0) != CUDA_SUCCESS || seen != dev;
}

static int stream_query(void) {
    return cuStreamQuery(stream) != CUDA_SUCCESS;
}

static const struct {
    const char *name;
    int (*call)(void);
} CALLS[] = {
    {"cuCtxGetCurrent", ctx_get_current},
    {"cuCtxGetDevice", ctx_get_device},
    {"cuDeviceGet", device_get},
    {"cuStreamQuery", stream_query},
};

int main(int argc, char **argv) {
    long calls = argc > 1 ? atol(argv[1]) : 200000;
    int rounds = argc > 2 ? atoi(argv[2]) : 21;
    const char *name = argc > 3 ? argv[3] : "cuCtxGetCurrent";
    int (*call)(void) = NULL;
    for (size_t i = 0; i < sizeof CALLS / sizeof CALLS[0]; i++)
        if (strcmp(CALLS[i].name, name) == 0) call = CALLS[i].call;
    if (calls <= 0 || rounds <= 0 || rounds > 1000 || !call) {
        fprintf(stderr, "usage: call_cost [calls > 0] [rounds 1..1000] [cuCtxGetCurrent|cuCtxGetDevice|cuDeviceGet|cuStreamQuery]\n");
        return 2;
    }
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
        cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)) {
        printf("fail setup\n");
        return 1;
    }
    double per_call[1000];
    for (int r = 0; r < rounds; r++) {
        double start = now_ns();
        for (long i = 0; i < calls; i++) {
            if (call()) {
                printf("fail %s\n", name);
                return 1;
            }
        }
        per_call[r] = (now_ns() - start) / calls;
    }
    qsort(per_call, rounds, sizeof per_call[0], by_value);
    printf("ns_per_call %.2f\n", per_call[rounds / 2]);
    return 0;
}
