// Which way of moving bytes over NVLink reaches the copy engine's rate, and what each costs on
// the link: a diagnostic for kernel reads and writes of peer memory, which reach 0.94 of the
// copy engine. GPU1 reads and writes a GPU0 pool allocation, 1 GiB, by
//   - the copy engine (cudaMemcpyAsync in GPU1's context),
//   - SM loads / stores of 16 bytes (like peerpool's pp_read16 / pp_copy16),
//   - the Hopper bulk-copy unit (cp.async.bulk, global <-> shared, completion on an mbarrier),
// and reads the NVLink throughput counters (`nvidia-smi nvlink -gt d` payload, `-gt r` payload
// plus protocol) around each path. CUDA C++ on purpose: a probe of the hardware, kept apart
// from peerpool's own kernels (Rust); build with `nvcc -O3 -arch=sm_90`. Prints a table and
// JSON lines.
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));  \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

__device__ __forceinline__ unsigned fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

// 16-byte loads, four in flight per thread, folded so they cannot be dropped.
__global__ void sm_read(const uint4* __restrict__ src, size_t n, unsigned* sink, unsigned never) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    unsigned f = 0;
    for (; i + 3 * stride < n; i += 4 * stride)
        f ^= fold(src[i]) ^ fold(src[i + stride]) ^ fold(src[i + 2 * stride]) ^ fold(src[i + 3 * stride]);
    for (; i < n; i += stride) f ^= fold(src[i]);
    if (f == never) sink[threadIdx.x] = f;
}

// 16-byte stores of a value made from the index.
__global__ void sm_write(uint4* dst, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) dst[i] = make_uint4((unsigned)i, 1, 2, 3);
}

// dst[i] = src[i] in 16-byte vectors, four loads in flight (like pp_copy16).
__global__ void sm_copy(uint4* dst, const uint4* __restrict__ src, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a, dst[i + stride] = b, dst[i + 2 * stride] = c, dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) dst[i] = src[i];
}

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void bar_init(uint64_t* bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(1) : "memory");
}

// One arrival that also expects `bytes` of transactions, then the bulk load that delivers them.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
    asm volatile(
        "{\n .reg .b64 st;\n mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}" ::"r"(smem_addr(bar)),
        "r"(bytes)
        : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(bar))
                 : "memory");
}

__device__ __forceinline__ void bar_wait(uint64_t* bar, unsigned parity) {
    unsigned done = 0;
    while (!done) {
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
            : "=r"(done)
            : "r"(smem_addr(bar)), "r"(parity)
            : "memory");
    }
}

constexpr int STAGES = 4;

// Bulk loads of `chunk` bytes into shared memory, STAGES in flight per block; one thread issues.
__global__ void tma_read(const char* src, size_t bytes, unsigned chunk) {
    extern __shared__ __align__(128) unsigned char stage[];
    __shared__ __align__(8) uint64_t bars[STAGES];
    if (threadIdx.x != 0) return;
    for (int s = 0; s < STAGES; s++) bar_init(&bars[s]);
    asm volatile("fence.mbarrier_init.release.cluster;\n fence.proxy.async.shared::cta;" ::: "memory");
    size_t chunks = bytes / chunk, next = blockIdx.x;
    for (int s = 0; s < STAGES && next < chunks; s++, next += gridDim.x)
        bulk_load(stage + s * chunk, src + next * chunk, chunk, &bars[s]);
    unsigned phases = 0;
    int s = 0;
    for (size_t c = blockIdx.x; c < chunks; c += gridDim.x) {
        bar_wait(&bars[s], (phases >> s) & 1);
        phases ^= 1u << s;
        if (next < chunks) {
            bulk_load(stage + s * chunk, src + next * chunk, chunk, &bars[s]);
            next += gridDim.x;
        }
        s = (s + 1) % STAGES;
    }
}

// Bulk stores of `chunk` bytes from shared memory (contents unchanged), a bounded number in flight.
__global__ void tma_write(char* dst, size_t bytes, unsigned chunk) {
    extern __shared__ __align__(128) unsigned char stage[];
    if (threadIdx.x != 0) return;
    for (unsigned k = 0; k < chunk; k += 4) *(unsigned*)(stage + k) = k;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    size_t chunks = bytes / chunk;
    for (size_t c = blockIdx.x; c < chunks; c += gridDim.x) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + c * chunk),
                     "r"(smem_addr(stage)), "r"(chunk)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;\n cp.async.bulk.wait_group.read 7;" ::: "memory");
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

struct Counters {
    double data_tx = 0, data_rx = 0, raw_tx = 0, raw_rx = 0;  // KiB summed over GPU0's links
    bool raw_ok = false;
};

static void sum_counters(const char* kind, double& tx, double& rx, bool& any) {
    std::string cmd = std::string("nvidia-smi nvlink -gt ") + kind + " -i 0 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        const char* t = strstr(line, "Tx:");
        const char* r = strstr(line, "Rx:");
        double v = 0;
        if (t && sscanf(t + 3, "%lf", &v) == 1) tx += v, any = true;
        if (r && sscanf(r + 3, "%lf", &v) == 1) rx += v, any = true;
    }
    pclose(p);
}

static Counters read_counters() {
    Counters c;
    bool any = false;
    sum_counters("d", c.data_tx, c.data_rx, any);
    bool raw = false;
    sum_counters("r", c.raw_tx, c.raw_rx, raw);
    c.raw_ok = raw;
    return c;
}

struct Ctx {
    cudaStream_t s;
    cudaEvent_t a, b;
    int sms;
};

template <class F>
static double median_ms(Ctx& c, int reps, F f) {
    f();
    CK(cudaStreamSynchronize(c.s));
    std::vector<float> t;
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(c.a, c.s));
        f();
        CK(cudaEventRecord(c.b, c.s));
        CK(cudaEventSynchronize(c.b));
        float ms;
        CK(cudaEventElapsedTime(&ms, c.a, c.b));
        t.push_back(ms);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

static bool quick = false;  // `paths quick`: two repeats, no counters, for running under ncu

template <class F>
static void path(Ctx& c, const char* name, size_t bytes, bool counters, F f) {
    const int reps = quick ? 2 : 20;
    counters = counters && !quick;
    Counters before = counters ? read_counters() : Counters{};
    double ms = median_ms(c, reps, f);
    Counters after = counters ? read_counters() : Counters{};
    double gbps = bytes / (ms * 1e-3) / 1e9;
    // The timed repeats plus one warm-up passed the link between the two readings.
    double moved_kib = (reps + 1) * (double)bytes / 1024.0;
    printf("%-44s %8.1f GB/s", name, gbps);
    if (counters) {
        double dtx = after.data_tx - before.data_tx, drx = after.data_rx - before.data_rx;
        double rtx = after.raw_tx - before.raw_tx, rrx = after.raw_rx - before.raw_rx;
        printf("  gpu0 data tx/rx %.3f/%.3f  raw tx/rx %.3f/%.3f  (per payload byte moved)", dtx / moved_kib,
               drx / moved_kib, rtx / moved_kib, rrx / moved_kib);
        printf("\n{\"path\":\"%s\",\"gbps\":%.2f,\"bytes\":%zu,\"passes\":%d,\"gpu0_data_tx_kib\":%.0f,"
               "\"gpu0_data_rx_kib\":%.0f,\"gpu0_raw_tx_kib\":%.0f,\"gpu0_raw_rx_kib\":%.0f,\"raw_supported\":%s}",
               name, gbps, bytes, reps + 1, dtx, drx, rtx, rrx, after.raw_ok ? "true" : "false");
    } else {
        printf("\n{\"path\":\"%s\",\"gbps\":%.2f,\"bytes\":%zu}", name, gbps, bytes);
    }
    printf("\n");
    fflush(stdout);
}

// `bytes` from a new pool on `dev` that `peer` may read and write.
static char* pool_alloc(int dev, int peer, size_t bytes) {
    CK(cudaSetDevice(dev));
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    cudaMemPool_t pool;
    CK(cudaMemPoolCreate(&pool, &props));
    cudaMemAccessDesc d = {};
    d.location.type = cudaMemLocationTypeDevice;
    d.location.id = peer;
    d.flags = cudaMemAccessFlagsProtReadWrite;
    CK(cudaMemPoolSetAccess(pool, &d, 1));
    char* p;
    CK(cudaMallocFromPoolAsync((void**)&p, bytes, pool, 0));
    CK(cudaMemset(p, 1 + dev, bytes));
    CK(cudaDeviceSynchronize());
    return p;
}

// Both GPUs at once, timed by the host around both streams: GB/s summed over the two.
template <class F>
static void both(const char* name, size_t bytes, cudaStream_t s0, cudaStream_t s1, F f) {
    const int reps = quick ? 2 : 20;
    Counters before = quick ? Counters{} : read_counters();
    std::vector<double> t;
    for (int r = 0; r <= reps; r++) {
        auto start = std::chrono::steady_clock::now();
        f();
        CK(cudaStreamSynchronize(s0));
        CK(cudaStreamSynchronize(s1));
        if (r > 0) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    Counters after = quick ? Counters{} : read_counters();
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    double gbps = 2.0 * bytes / t[t.size() / 2] / 1e9;
    double moved_kib = (reps + 1) * (double)bytes / 1024.0;  // per direction
    printf("%-44s %8.1f GB/s (sum)  gpu0 data tx/rx %.3f/%.3f  raw tx/rx %.3f/%.3f  (per payload byte each way)\n",
           name, gbps, (after.data_tx - before.data_tx) / moved_kib, (after.data_rx - before.data_rx) / moved_kib,
           (after.raw_tx - before.raw_tx) / moved_kib, (after.raw_rx - before.raw_rx) / moved_kib);
    printf("{\"path\":\"%s\",\"gbps_sum\":%.2f,\"bytes_each_way\":%zu,\"passes\":%d,\"gpu0_data_tx_kib\":%.0f,"
           "\"gpu0_data_rx_kib\":%.0f,\"gpu0_raw_tx_kib\":%.0f,\"gpu0_raw_rx_kib\":%.0f}\n",
           name, gbps, bytes, reps + 1, after.data_tx - before.data_tx, after.data_rx - before.data_rx,
           after.raw_tx - before.raw_tx, after.raw_rx - before.raw_rx);
    fflush(stdout);
}

int main(int argc, char** argv) {
    quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    const size_t bytes = 1ull << 30;
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    if (n < 2) {
        fprintf(stderr, "needs two GPUs\n");
        return 2;
    }
    // Two 1 GiB pool allocations on each GPU, each readable and writable by the other GPU.
    char* remote = pool_alloc(0, 1, bytes);   // GPU0's, read and written by GPU1
    char* remote_b = pool_alloc(0, 1, bytes);  // GPU0's, GPU0's own target when both GPUs copy
    char* local = pool_alloc(1, 0, bytes);     // GPU1's
    char* local_b = pool_alloc(1, 0, bytes);   // GPU1's, read and written by GPU0 when both copy
    CK(cudaSetDevice(0));
    cudaStream_t s0;
    CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    CK(cudaSetDevice(1));
    Ctx c;
    CK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
    CK(cudaEventCreate(&c.a));
    CK(cudaEventCreate(&c.b));
    CK(cudaDeviceGetAttribute(&c.sms, cudaDevAttrMultiProcessorCount, 1));
    unsigned* sink;
    CK(cudaMalloc(&sink, 4096));
    const size_t v = bytes / 16;
    const int grid = c.sms * 8;

    printf("# GPU1 (%d SMs) moving 1 GiB to / from a GPU0 pool allocation; median of 20\n", c.sms);
    path(c, "copy engine read (remote -> local)", bytes, true,
         [&] { CK(cudaMemcpyAsync(local, remote, bytes, cudaMemcpyDeviceToDevice, c.s)); });
    path(c, "copy engine write (local -> remote)", bytes, true,
         [&] { CK(cudaMemcpyAsync(remote, local, bytes, cudaMemcpyDeviceToDevice, c.s)); });
    path(c, "SM read, 16-byte loads, 8 blocks/SM x 256", bytes, true,
         [&] { sm_read<<<grid, 256, 0, c.s>>>((const uint4*)remote, v, sink, 0x9E3779B9u); });
    path(c, "SM write, 16-byte stores, 8 blocks/SM x 256", bytes, true,
         [&] { sm_write<<<grid, 256, 0, c.s>>>((uint4*)remote, v); });

    if (quick) {
        CK(cudaFuncSetAttribute(tma_read, cudaFuncAttributeMaxDynamicSharedMemorySize, STAGES * 16384));
        path(c, "bulk read 16 KiB", bytes, false,
             [&] { tma_read<<<c.sms * 2, 32, STAGES * 16384, c.s>>>(remote, bytes, 16384); });
        path(c, "bulk write 16 KiB", bytes, false,
             [&] { tma_write<<<c.sms * 2, 32, 16384, c.s>>>(remote, bytes, 16384); });
        return 0;
    }
    for (unsigned chunk : {4096u, 16384u, 32768u}) {
        size_t smem = (size_t)STAGES * chunk;
        CK(cudaFuncSetAttribute(tma_read, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        CK(cudaFuncSetAttribute(tma_write, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)chunk));
        for (int per_sm : {1, 2, 4}) {
            if (smem * per_sm > 200 * 1024) continue;
            char name[96];
            snprintf(name, sizeof name, "bulk read, %u B x %d stages, %d blocks/SM", chunk, STAGES, per_sm);
            path(c, name, bytes, per_sm == 2,
                 [&] { tma_read<<<c.sms * per_sm, 32, smem, c.s>>>(remote, bytes, chunk); });
            snprintf(name, sizeof name, "bulk write, %u B, 8 in flight, %d blocks/SM", chunk, per_sm);
            path(c, name, bytes, per_sm == 2,
                 [&] { tma_write<<<c.sms * per_sm, 32, chunk, c.s>>>(remote, bytes, chunk); });
        }
    }
    // Both directions at once. Pull: each GPU's kernel reads the other's memory into its own;
    // push: each writes its memory into the other's. The copy engine for comparison.
    const size_t vv = v;
    auto on = [](int dev) { CK(cudaSetDevice(dev)); };
    both("copy engine both directions", bytes, s0, c.s, [&] {
        on(1);
        CK(cudaMemcpyAsync(local, remote, bytes, cudaMemcpyDeviceToDevice, c.s));
        on(0);
        CK(cudaMemcpyAsync(remote_b, local_b, bytes, cudaMemcpyDeviceToDevice, s0));
    });
    both("SM copy both directions, pull (remote reads)", bytes, s0, c.s, [&] {
        on(1);
        sm_copy<<<grid, 256, 0, c.s>>>((uint4*)local, (const uint4*)remote, vv);
        on(0);
        sm_copy<<<grid, 256, 0, s0>>>((uint4*)remote_b, (const uint4*)local_b, vv);
    });
    both("SM copy both directions, push (remote writes)", bytes, s0, c.s, [&] {
        on(1);
        sm_copy<<<grid, 256, 0, c.s>>>((uint4*)remote, (const uint4*)local, vv);
        on(0);
        sm_copy<<<grid, 256, 0, s0>>>((uint4*)local_b, (const uint4*)remote_b, vv);
    });
    on(1);
    // Occupancy: is the SM path short of requests in flight, or at a ceiling?
    for (int per_sm : {1, 2, 4, 16}) {
        for (int threads : {256, 1024}) {
            if (per_sm * threads > 2048) continue;
            char name[96];
            snprintf(name, sizeof name, "SM read, %d blocks/SM x %d", per_sm, threads);
            path(c, name, bytes, false,
                 [&] { sm_read<<<c.sms * per_sm, threads, 0, c.s>>>((const uint4*)remote, v, sink, 0x9E3779B9u); });
        }
    }
    // The same read on GPU1's own memory: the SM path's local ceiling, for scale.
    path(c, "SM read of local memory, 8 blocks/SM x 256", bytes, false,
         [&] { sm_read<<<grid, 256, 0, c.s>>>((const uint4*)local, v, sink, 0x9E3779B9u); });
    // Check that the bulk read really read: copy remote's first bytes by a plain kernel-free path.
    unsigned first = 0;
    CK(cudaMemcpy(&first, remote, 4, cudaMemcpyDeviceToHost));
    printf("# remote first word 0x%08x (the last writer was the bulk write or the SM write)\n", first);
    return 0;
}
