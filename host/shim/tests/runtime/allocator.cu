// A stream-ordered pool allocator on the CUDA runtime API, shaped like RMM's or cuCascade's: a
// pool per GPU, peer access granted pool by pool, staging through pinned and managed host
// memory, pointer attributes to tell memory apart. The binary carries a kernel, launched only
// when asked ("launch"). One line per fact, no address printed.
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

__global__ void bump(int *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1;
}

#define CHECK(call)                                                             \
    do {                                                                        \
        cudaError_t e_ = (call);                                                \
        if (e_ != cudaSuccess) {                                                \
            std::printf("fail %s: %s\n", #call, cudaGetErrorName(e_));          \
            return 1;                                                           \
        }                                                                       \
    } while (0)

static const char *kind(cudaMemoryType t) {
    switch (t) {
        case cudaMemoryTypeHost: return "host";
        case cudaMemoryTypeDevice: return "device";
        case cudaMemoryTypeManaged: return "managed";
        default: return "unregistered";
    }
}

int main(int argc, char **argv) {
    std::setvbuf(stdout, nullptr, _IONBF, 0);
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    std::printf("devices %d\n", count);
    const int n = 1 << 14;
    const size_t bytes = n * sizeof(int);
    cudaMemPool_t pools[2] = {};
    int used = count < 2 ? count : 2;
    for (int d = 0; d < used; d++) {
        CHECK(cudaSetDevice(d));
        cudaMemPoolProps props = {};
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = d;
        CHECK(cudaMemPoolCreate(&pools[d], &props));
    }
    CHECK(cudaSetDevice(0));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    // Staging: pinned host memory written by the host, into a pool allocation and back.
    int *pinned = nullptr, *managed = nullptr, *pool0 = nullptr;
    CHECK(cudaMallocHost(&pinned, bytes));
    for (int i = 0; i < n; i++) pinned[i] = i * 3;
    CHECK(cudaMallocFromPoolAsync(&pool0, bytes, pools[0], s));
    CHECK(cudaMemcpyAsync(pool0, pinned, bytes, cudaMemcpyHostToDevice, s));
    CHECK(cudaMallocManaged(&managed, bytes));
    CHECK(cudaMemsetAsync(managed, 0, bytes, s));
    CHECK(cudaMemcpyAsync(managed, pool0, bytes, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaStreamSynchronize(s));
    std::printf("managed holds the pinned bytes: %d\n", managed[0] == 0 && managed[n - 1] == (n - 1) * 3);
    int *pointers[] = {pinned, managed, pool0};
    const char *names[] = {"pinned", "managed", "pool"};
    for (int i = 0; i < 3; i++) {
        cudaPointerAttributes a;
        CHECK(cudaPointerGetAttributes(&a, pointers[i]));
        std::printf("%s: type %s device %d\n", names[i], kind(a.type), a.device);
    }
    int *pageable = new int[4];
    cudaPointerAttributes a;
    CHECK(cudaPointerGetAttributes(&a, pageable));
    std::printf("pageable: type %s\n", kind(a.type));
    delete[] pageable;

    // Peer grants, pool by pool: gpu1 reads gpu0's pool only once granted.
    if (count > 1) {
        int can = 0;
        CHECK(cudaDeviceCanAccessPeer(&can, 1, 0));
        cudaMemAccessFlags before = cudaMemAccessFlagsProtNone, after = cudaMemAccessFlagsProtNone;
        cudaMemLocation loc = {};
        loc.type = cudaMemLocationTypeDevice;
        loc.id = 1;
        CHECK(cudaMemPoolGetAccess(&before, pools[0], &loc));
        CHECK(cudaSetDevice(1));
        int *on1 = nullptr;
        CHECK(cudaMalloc(&on1, bytes));
        cudaError_t denied = cudaMemcpy(on1, pool0, bytes, cudaMemcpyDeviceToDevice);
        cudaGetLastError();
        cudaMemAccessDesc desc = {};
        desc.location = loc;
        desc.flags = cudaMemAccessFlagsProtReadWrite;
        CHECK(cudaMemPoolSetAccess(pools[0], &desc, 1));
        CHECK(cudaMemPoolGetAccess(&after, pools[0], &loc));
        cudaError_t granted = cudaMemcpy(on1, pool0, bytes, cudaMemcpyDeviceToDevice);
        int last = -1;
        CHECK(cudaMemcpy(&last, on1 + n - 1, sizeof last, cudaMemcpyDeviceToHost));
        std::printf("peer 1->0: can %d access before %d after %d copy before %s after %s bytes %d\n", can, (int)before,
                    (int)after, cudaGetErrorName(denied), cudaGetErrorName(granted), last == (n - 1) * 3);
        CHECK(cudaFree(on1));
        CHECK(cudaSetDevice(0));
    } else {
        std::printf("one GPU: no peer grant\n");
    }

    if (argc > 1 && std::strcmp(argv[1], "launch") == 0) {
        bump<<<(n + 255) / 256, 256, 0, s>>>(pool0, n);
        cudaError_t launched = cudaGetLastError();
        CHECK(cudaStreamSynchronize(s));
        int first = -1;
        CHECK(cudaMemcpy(&first, pool0, sizeof first, cudaMemcpyDeviceToHost));
        std::printf("launch: %s first %d\n", cudaGetErrorName(launched), first);
    }
    CHECK(cudaFreeAsync(pool0, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaFree(managed));
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaStreamDestroy(s));
    for (int d = 0; d < used; d++) CHECK(cudaMemPoolDestroy(pools[d]));
    std::printf("done\n");
    return 0;
}
