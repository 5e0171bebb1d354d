/* What one cheap driver call costs: the median, over rounds, of the mean time of a run of
 * cuCtxGetCurrent calls. Run it against NVIDIA's libcuda and through the shim's real backend
 * (with and without a trace) in one session, and compare: ci/gpu-passthrough.sh does.
 * Usage: call_cost [calls per round] [rounds]   Prints: ns_per_call <median> */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
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

int main(int argc, char **argv) {
    long calls = argc > 1 ? atol(argv[1]) : 200000;
    int rounds = argc > 2 ? atoi(argv[2]) : 21;
    if (calls <= 0 || rounds <= 0 || rounds > 1000) {
        fprintf(stderr, "usage: call_cost [calls > 0] [rounds 1..1000]\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx, seen;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) {
        printf("fail setup\n");
        return 1;
    }
    double per_call[1000];
    for (int r = 0; r < rounds; r++) {
        double start = now_ns();
        for (long i = 0; i < calls; i++) {
            if (cuCtxGetCurrent(&seen) != CUDA_SUCCESS || seen != ctx) {
                printf("fail cuCtxGetCurrent\n");
                return 1;
            }
        }
        per_call[r] = (now_ns() - start) / calls;
    }
    qsort(per_call, rounds, sizeof per_call[0], by_value);
    printf("ns_per_call %.2f\n", per_call[rounds / 2]);
    return 0;
}
