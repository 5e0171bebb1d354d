// What cheap runtime calls cost: cudaGetDevice, cudaStreamQuery and cudaPeekAtLastError a
// million times each, and a hundred thousand cudaMallocAsync/cudaFreeAsync pairs on a stream,
// each timed five times; the best of five is printed in nanoseconds a call. Run the same binary
// on NVIDIA's runtime and on peerpool's, side by side.
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>

template <class F> static double best_ns(long calls, F f) {
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        auto t0 = std::chrono::steady_clock::now();
        for (long i = 0; i < calls; i++) f();
        auto t1 = std::chrono::steady_clock::now();
        double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / calls;
        if (ns < best) best = ns;
    }
    return best;
}

int main() {
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return 1;
    int device = 0;
    volatile int sink = 0;
    std::printf("cudaGetDevice %.1f\n", best_ns(1000000, [&] { sink += cudaGetDevice(&device); }));
    std::printf("cudaStreamQuery %.1f\n", best_ns(1000000, [&] { sink += cudaStreamQuery(s); }));
    std::printf("cudaPeekAtLastError %.1f\n", best_ns(1000000, [&] { sink += cudaPeekAtLastError(); }));
    void *p = nullptr;
    std::printf("cudaMallocAsync+cudaFreeAsync %.1f\n", best_ns(100000, [&] {
                    sink += cudaMallocAsync(&p, 4096, s);
                    sink += cudaFreeAsync(p, s);
                }));
    cudaStreamSynchronize(s);
    return sink == 0 ? 0 : 2;
}
