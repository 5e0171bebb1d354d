// A stream-ordered pool allocator on the CUDA runtime, as RMM- or cuCascade-style code uses it:
// pinned and managed staging, kernels with shared memory, warp shuffles and system-scope
// atomics, module variables, and (with "two") a peer pool read after a grant and faulting after
// its revoke. One line per fact, no address, name or timing printed, so that the output is the
// same on any GPU.
//
// Usage: pool_peers one|two   (one: device 0 alone; two: devices 0 and 1)
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(call)                                                                  \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            std::printf("fail %s: %s\n", #call, cudaGetErrorName(e_));               \
            return 1;                                                                \
        }                                                                            \
    } while (0)

__device__ int scale_by;
__managed__ int launches;

__global__ void scale(int *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= scale_by;
    if (i == 0) atomicAdd_system(&launches, 1);
}

// Each block sums its part through shuffles and shared memory; one system-scope atomic a block.
__global__ void block_sum(const int *in, int n, unsigned long long *total) {
    __shared__ int partial[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0;
        for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
        if (threadIdx.x == 0) atomicAdd_system(total, (unsigned long long)v);
    }
    if (i == 0) atomicAdd_system(&launches, 1);
}

static void host_note(void *flag) { *(int *)flag = 1; }

static const char *kind(cudaMemoryType t) {
    switch (t) {
        case cudaMemoryTypeHost: return "host";
        case cudaMemoryTypeDevice: return "device";
        case cudaMemoryTypeManaged: return "managed";
        default: return "unregistered";
    }
}

static const int n = 1 << 16;
static const size_t bytes = n * sizeof(int);
static const unsigned long long expected = (unsigned long long)n * (n - 1) / 2 * 3;

static int one_gpu(cudaMemPool_t *pool_out, int **data_out, cudaStream_t *stream_out) {
    CHECK(cudaSetDevice(0));
    int device = -1;
    CHECK(cudaGetDevice(&device));
    std::printf("device %d\n", device);

    // Errors: a bad device is the thread's last error until read, not after.
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    cudaError_t bad = cudaSetDevice(count);
    cudaError_t peeked = cudaPeekAtLastError();
    cudaError_t read = cudaGetLastError();
    std::printf("bad device: %s peek %s read %s then %s\n", cudaGetErrorName(bad), cudaGetErrorName(peeked),
                cudaGetErrorName(read), cudaGetErrorName(cudaGetLastError()));
    std::printf("text: %s\n", cudaGetErrorString(bad));

    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool;
    CHECK(cudaMemPoolCreate(&pool, &props));
    unsigned long long threshold = 1 << 20, got = 0;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &got));
    std::printf("release threshold %llu\n", got);
    cudaMemPool_t fallback;
    CHECK(cudaDeviceGetDefaultMemPool(&fallback, 0));
    std::printf("created pool is the default: %d\n", pool == fallback);

    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int *pinned = nullptr, *data = nullptr;
    CHECK(cudaMallocHost(&pinned, bytes));
    for (int i = 0; i < n; i++) pinned[i] = i;
    CHECK(cudaMallocFromPoolAsync(&data, bytes, pool, s));
    CHECK(cudaMemcpyAsync(data, pinned, bytes, cudaMemcpyHostToDevice, s));
    int by = 3;
    CHECK(cudaMemcpyToSymbol(scale_by, &by, sizeof by));
    int back = 0;
    CHECK(cudaMemcpyFromSymbol(&back, scale_by, sizeof back));
    std::printf("symbol round trip %d\n", back);
    scale<<<(n + 255) / 256, 256, 0, s>>>(data, n);
    CHECK(cudaGetLastError());

    unsigned long long *total = nullptr;
    CHECK(cudaMallocManaged(&total, sizeof *total));
    *total = 0;
    block_sum<<<(n + 255) / 256, 256, 0, s>>>(data, n, total);
    CHECK(cudaGetLastError());
    int noted = 0;
    CHECK(cudaLaunchHostFunc(s, host_note, &noted));
    CHECK(cudaStreamSynchronize(s));
    std::printf("sum %s, host function ran %d, launches %d\n", *total == expected ? "right" : "wrong", noted, launches);

    // A block too large: refused at launch, not sticky.
    scale<<<1, 2048, 0, s>>>(data, n);
    cudaError_t too_large = cudaGetLastError();
    std::printf("block of 2048: %s then %s\n", cudaGetErrorName(too_large), cudaGetErrorName(cudaGetLastError()));

    // Staging back through managed memory.
    int *managed = nullptr;
    CHECK(cudaMallocManaged(&managed, bytes));
    CHECK(cudaMemcpyAsync(managed, data, bytes, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaStreamSynchronize(s));
    std::printf("managed staging %s\n", managed[n - 1] == (n - 1) * 3 ? "right" : "wrong");

    int *from_default = nullptr;
    CHECK(cudaMallocAsync(&from_default, 4096, s));
    int *pointers[] = {pinned, managed, data, from_default};
    const char *names[] = {"pinned", "managed", "pool", "default pool"};
    for (int i = 0; i < 4; i++) {
        cudaPointerAttributes a;
        CHECK(cudaPointerGetAttributes(&a, pointers[i]));
        std::printf("%s: %s on %d\n", names[i], kind(a.type), a.device);
    }
    CHECK(cudaFreeAsync(from_default, s));

    cudaEvent_t start, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    CHECK(cudaEventRecord(start, s));
    block_sum<<<(n + 255) / 256, 256, 0, s>>>(data, n, total);
    CHECK(cudaEventRecord(end, s));
    CHECK(cudaEventSynchronize(end));
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    std::printf("elapsed is a time: %d, stream idle: %s\n", ms >= 0, cudaGetErrorName(cudaStreamQuery(s)));
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(end));
    CHECK(cudaFree(managed));
    CHECK(cudaFree(total));
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaMemPoolTrimTo(pool, 0));
    *pool_out = pool;
    *data_out = data;
    *stream_out = s;
    return 0;
}

// Device 1 reads device 0's pool: refused before the grant, read after it, a fault after the
// revoke (sticky: the process's CUDA context is lost).
static int two_gpus(cudaMemPool_t pool, const int *data, cudaStream_t s0) {
    int can = 0;
    CHECK(cudaDeviceCanAccessPeer(&can, 1, 0));
    std::printf("peer 1 to 0 capable %d\n", can);
    cudaMemLocation on1 = {};
    on1.type = cudaMemLocationTypeDevice;
    on1.id = 1;
    cudaMemAccessFlags flags = cudaMemAccessFlagsProtReadWrite;
    CHECK(cudaMemPoolGetAccess(&flags, pool, &on1));
    std::printf("access before the grant %d\n", (int)flags);
    CHECK(cudaSetDevice(1));
    cudaStream_t s1;
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    int *mine = nullptr;
    CHECK(cudaMallocAsync(&mine, bytes, s1));
    cudaError_t refused = cudaMemcpyAsync(mine, data, bytes, cudaMemcpyDeviceToDevice, s1);
    cudaGetLastError();
    std::printf("copy before the grant: %s\n", cudaGetErrorName(refused));
    cudaMemAccessDesc desc = {};
    desc.location = on1;
    desc.flags = cudaMemAccessFlagsProtReadWrite;
    CHECK(cudaMemPoolSetAccess(pool, &desc, 1));
    CHECK(cudaMemPoolGetAccess(&flags, pool, &on1));
    std::printf("access after the grant %d\n", (int)flags);
    unsigned long long *total = nullptr;
    CHECK(cudaMallocManaged(&total, sizeof *total));
    *total = 0;
    block_sum<<<(n + 255) / 256, 256, 0, s1>>>(data, n, total);
    CHECK(cudaStreamSynchronize(s1));
    std::printf("device 1 read device 0's pool: sum %s\n", *total == expected ? "right" : "wrong");
    desc.flags = cudaMemAccessFlagsProtNone;
    CHECK(cudaMemPoolSetAccess(pool, &desc, 1));
    block_sum<<<(n + 255) / 256, 256, 0, s1>>>(data, n, total);
    cudaError_t faulted = cudaStreamSynchronize(s1);
    cudaError_t last = cudaGetLastError();
    cudaError_t again = cudaGetLastError();
    std::printf("after the revoke: %s, last %s, again %s\n", cudaGetErrorName(faulted), cudaGetErrorName(last),
                cudaGetErrorName(again));
    (void)s0;
    return 0;
}

int main(int argc, char **argv) {
    std::setvbuf(stdout, nullptr, _IONBF, 0);
    bool two = argc > 1 && std::strcmp(argv[1], "two") == 0;
    cudaMemPool_t pool;
    int *data;
    cudaStream_t s;
    if (one_gpu(&pool, &data, &s) != 0) return 1;
    if (two && two_gpus(pool, data, s) != 0) return 1;
    if (!two) {
        CHECK(cudaFreeAsync(data, s));
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaStreamDestroy(s));
        CHECK(cudaMemPoolDestroy(pool));
        CHECK(cudaDeviceReset());
    }
    std::printf("done\n");
    return 0;
}
