// The CUDA runtime's semantics, one fact a line, for the side-by-side record (NVIDIA's runtime
// and peerpool's over one driver): the implicit primary context, the thread's device, a
// context already current honoured, the last error (sticky and not), the special streams and
// the per-thread default stream, stream capture and graphs, error names and texts,
// cudaDeviceReset. Built with
// `--default-stream per-thread` too (the `_ptsz`/`_ptds` twins). Needs one GPU.
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#include <thread>

#define CHECK(call)                                                                  \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            std::printf("fail %s: %s\n", #call, cudaGetErrorName(e_));               \
            return 1;                                                                \
        }                                                                            \
    } while (0)

__global__ void fill(int *p, int n, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}

__global__ void stray(int *p) { p[threadIdx.x] = 1; }

static CUcontext current() {
    CUcontext c = nullptr;
    cuCtxGetCurrent(&c);
    return c;
}

int main() {
    std::setvbuf(stdout, nullptr, _IONBF, 0);
    // The implicit primary context: no context before the first call, device 0's primary after.
    std::printf("context before any call: %d\n", current() != nullptr);
    CHECK(cudaFree(0));
    CUdevice dev0;
    cuDeviceGet(&dev0, 0);
    CUcontext primary = nullptr;
    cuDevicePrimaryCtxRetain(&primary, dev0);
    std::printf("after cudaFree(0): primary context current %d\n", current() == primary);
    unsigned flags = 0;
    int active = 0;
    cuDevicePrimaryCtxGetState(dev0, &flags, &active);
    std::printf("primary context active %d\n", active);

    // The thread's device: another thread starts on device 0, its context made current lazily.
    int other_device = -1, before = -1, after = -1;
    std::thread t([&] {
        before = current() != nullptr;
        cudaGetDevice(&other_device);
        int *p = nullptr;
        cudaMalloc(&p, 4);
        after = current() == primary;
        cudaFree(p);
    });
    t.join();
    std::printf("new thread: device %d, context before %d, primary after a call %d\n", other_device, before, after);

    // A context already current is the runtime's: allocations land in it.
    CUcontext own = nullptr;
    CUctxCreateParams params = {};
    cuCtxCreate(&own, &params, 0, dev0);
    int *in_own = nullptr;
    CHECK(cudaMalloc(&in_own, 4));
    CUcontext owner = nullptr;
    cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)in_own);
    int device = -1;
    CHECK(cudaGetDevice(&device));
    std::printf("a context made current by the driver API: used %d, device %d\n", owner == own, device);
    CHECK(cudaFree(in_own));
    cuCtxDestroy(own);
    std::printf("after destroying it: %s\n", cudaGetErrorName(cudaFree(0)));
    cuCtxSetCurrent(primary);

    // The last error: set by a failing call, read once.
    std::printf("null pointer out: %s\n", cudaGetErrorName(cudaMalloc(nullptr, 4)));
    cudaError_t first = cudaGetLastError();
    cudaError_t second = cudaGetLastError();
    std::printf("last %s then %s\n", cudaGetErrorName(first), cudaGetErrorName(second));
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    std::printf("device out of range: %s\n", cudaGetErrorName(cudaSetDevice(count)));
    cudaError_t freed = cudaFree(0);
    std::printf("a success leaves the error: %s, peek %s\n", cudaGetErrorName(freed),
                cudaGetErrorName(cudaPeekAtLastError()));
    cudaGetLastError();
    fill<<<1, 2048>>>(nullptr, 0, 0);
    std::printf("block of 2048: %s\n", cudaGetErrorName(cudaGetLastError()));
    fill<<<0, 32>>>(nullptr, 0, 0);
    std::printf("grid of 0: %s\n", cudaGetErrorName(cudaGetLastError()));

    // The special streams.
    const int n = 1024;
    int *d = nullptr;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    fill<<<4, 256, 0, cudaStreamPerThread>>>(d, n, 5);
    CHECK(cudaStreamSynchronize(cudaStreamPerThread));
    fill<<<4, 256, 0, cudaStreamLegacy>>>(d, n, 6);
    CHECK(cudaMemsetAsync(d, 0, sizeof(int), cudaStreamLegacy));
    CHECK(cudaStreamSynchronize(cudaStreamLegacy));
    fill<<<4, 256>>>(d, n, 7);
    CHECK(cudaStreamSynchronize(0));
    int host[2] = {};
    CHECK(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost));
    std::printf("streams: per-thread, legacy and default ran in order: %d %d\n", host[0], host[1]);
    cudaError_t q1 = cudaStreamQuery(cudaStreamPerThread), q2 = cudaStreamQuery(cudaStreamLegacy);
    cudaError_t q3 = cudaStreamQuery(0);
    std::printf("query per-thread %s legacy %s default %s\n", cudaGetErrorName(q1), cudaGetErrorName(q2),
                cudaGetErrorName(q3));
    unsigned sflags = 99;
    cudaError_t got_flags = cudaStreamGetFlags(cudaStreamPerThread, &sflags);
    std::printf("per-thread flags: %s %u\n", cudaGetErrorName(got_flags), sflags);

    // Capture: work on a capturing stream is recorded, not run; the graph runs it when launched.
    cudaStream_t cs;
    CHECK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    int *seen = nullptr;
    CHECK(cudaMallocHost(&seen, sizeof(int)));
    *seen = -1;
    CHECK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal));
    fill<<<4, 256, 0, cs>>>(d, n, 9);
    CHECK(cudaMemcpyAsync(seen, d, sizeof(int), cudaMemcpyDeviceToHost, cs));
    cudaStreamCaptureStatus captured_status;
    CHECK(cudaStreamIsCapturing(cs, &captured_status));
    cudaGraph_t graph;
    CHECK(cudaStreamEndCapture(cs, &graph));
    std::printf("capture: status %d, nothing ran %d\n", (int)captured_status, *seen == -1);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, cs));
    CHECK(cudaStreamSynchronize(cs));
    std::printf("graph launched: %d\n", *seen);
    CHECK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal));
    cudaError_t in_capture = cudaStreamSynchronize(cs);
    cudaError_t last_in_capture = cudaGetLastError();
    cudaGraph_t broken = nullptr;
    cudaError_t ended = cudaStreamEndCapture(cs, &broken);
    std::printf("synchronize in capture %s (last %s), end %s, graph null %d\n", cudaGetErrorName(in_capture),
                cudaGetErrorName(last_in_capture), cudaGetErrorName(ended), broken == nullptr);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(cs));
    CHECK(cudaFreeHost(seen));

    // Names and texts.
    int codes[] = {0, 1, 2, 3, 35, 98, 100, 101, 200, 209, 400, 500, 600, 700, 704, 705, 719, 801, 999, 12345};
    for (int c : codes)
        std::printf("%d %s: %s\n", c, cudaGetErrorName((cudaError_t)c), cudaGetErrorString((cudaError_t)c));

    // cudaDeviceReset: allocations go, the device works again; the last error (the failed
    // capture's) stays.
    int *kept = nullptr;
    CHECK(cudaMalloc(&kept, 4));
    CHECK(cudaDeviceReset());
    cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, kept);
    cudaError_t last = cudaGetLastError();
    std::printf("after reset: old pointer %s type %d, last %s\n", cudaGetErrorName(e), (int)a.type, cudaGetErrorName(last));
    int *fresh = nullptr;
    CHECK(cudaMalloc(&fresh, 4));
    std::printf("after reset: primary context current %d\n", current() == primary);

    // Sticky: a fault kills the context; the last error reads once, every later call gives it.
    stray<<<1, 1>>>((int *)0x10);
    std::printf("fault: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    cudaError_t l1 = cudaGetLastError();
    cudaError_t l2 = cudaGetLastError();
    cudaError_t m = cudaMalloc(&fresh, 4);
    std::printf("then last %s, again %s, malloc %s\n", cudaGetErrorName(l1), cudaGetErrorName(l2), cudaGetErrorName(m));
    return 0;
}
