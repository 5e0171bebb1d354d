/* What a kernel costs launched one by one on a stream against launched as a node of a captured
 * graph: `kernels` launches of a small kernel (one block of 64 threads adding one), the best of
 * `rounds` rounds each way, rounds alternating, in nanoseconds a kernel, each round waited for.
 * Usage: graph_cost [kernels] [rounds]
 * Prints: stream_ns_per_kernel <n> graph_ns_per_kernel <n> graph_over_stream <ratio> */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *PTX =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry add_one(.param .u64 p)\n{\n.reg .b32 %r<3>;\n.reg .b64 %rd<4>;\n"
    "ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd1, %rd1;\nmov.u32 %r1, %tid.x;\n"
    "mul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\nld.global.u32 %r2, [%rd3];\n"
    "add.s32 %r2, %r2, 1;\nst.global.u32 [%rd3], %r2;\nret;\n}\n";

#define TRY(call)                                                            \
    do {                                                                     \
        CUresult r_ = (call);                                                \
        if (r_ != CUDA_SUCCESS) {                                            \
            fprintf(stderr, "fail %s: %d\n", #call, (int)r_);                \
            return 1;                                                        \
        }                                                                    \
    } while (0)

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    int kernels = argc > 1 ? atoi(argv[1]) : 1000, rounds = argc > 2 ? atoi(argv[2]) : 5;
    CUdevice dev;
    CUcontext ctx;
    CUmodule module;
    CUfunction f;
    CUstream s;
    CUdeviceptr p;
    TRY(cuInit(0));
    TRY(cuDeviceGet(&dev, 0));
    TRY(cuDevicePrimaryCtxRetain(&ctx, dev));
    TRY(cuCtxSetCurrent(ctx));
    TRY(cuModuleLoadData(&module, PTX));
    TRY(cuModuleGetFunction(&f, module, "add_one"));
    TRY(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    TRY(cuMemAlloc(&p, 64 * 4));
    void *args[] = {&p};
    CUgraph g;
    CUgraphExec exec;
    TRY(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < kernels; i++) TRY(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, args, NULL));
    TRY(cuStreamEndCapture(s, &g));
    TRY(cuGraphInstantiateWithFlags(&exec, g, 0));
    TRY(cuGraphLaunch(exec, s)); /* warm */
    TRY(cuStreamSynchronize(s));
    double best_stream = 1e300, best_graph = 1e300;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_ns();
        for (int i = 0; i < kernels; i++) TRY(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, args, NULL));
        TRY(cuStreamSynchronize(s));
        double t1 = now_ns();
        TRY(cuGraphLaunch(exec, s));
        TRY(cuStreamSynchronize(s));
        double t2 = now_ns();
        if (t1 - t0 < best_stream) best_stream = t1 - t0;
        if (t2 - t1 < best_graph) best_graph = t2 - t1;
    }
    printf("stream_ns_per_kernel %.0f graph_ns_per_kernel %.0f graph_over_stream %.3f\n", best_stream / kernels,
           best_graph / kernels, best_graph / best_stream);
    return 0;
}
