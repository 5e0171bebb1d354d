// A host-only program on the CUDA 12 runtime (built with a C++ compiler against CUDA 12.9's
// headers, linked with libcudart.so.12): devices and their properties, errors, a pool with
// stream-ordered allocations, pinned and managed staging, a peer pool granted and copied from.
// One line per fact, no address, name or timing printed.
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(call)                                                                  \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            std::printf("fail %s: %s\n", #call, cudaGetErrorName(e_));               \
            return 1;                                                                \
        }                                                                            \
    } while (0)

int main() {
    std::setvbuf(stdout, nullptr, _IONBF, 0);
    int runtime = 0, count = 0;
    CHECK(cudaRuntimeGetVersion(&runtime));
    CHECK(cudaGetDeviceCount(&count));
    std::printf("runtime 12: %d, devices: %d\n", runtime / 1000 == 12, count > 0);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("properties: memory %d, warp %d, major at least 8: %d, pools %d\n", prop.totalGlobalMem > 0,
                prop.warpSize, prop.major >= 8, prop.memoryPoolsSupported);
    std::printf("bad device: %s\n", cudaGetErrorName(cudaSetDevice(count)));
    std::printf("then: %s\n", cudaGetErrorName(cudaGetLastError()));

    const size_t n = 1 << 12, bytes = n * sizeof(int);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool;
    CHECK(cudaMemPoolCreate(&pool, &props));
    int *pinned = nullptr, *managed = nullptr, *data = nullptr;
    CHECK(cudaMallocHost(&pinned, bytes));
    for (size_t i = 0; i < n; i++) pinned[i] = (int)i * 7;
    CHECK(cudaMallocFromPoolAsync(&data, bytes, pool, s));
    CHECK(cudaMemcpyAsync(data, pinned, bytes, cudaMemcpyHostToDevice, s));
    CHECK(cudaMallocManaged(&managed, bytes));
    CHECK(cudaMemcpyAsync(managed, data, bytes, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaStreamSynchronize(s));
    std::printf("staged: %d\n", managed[n - 1] == (int)(n - 1) * 7);
    cudaPointerAttributes a;
    CHECK(cudaPointerGetAttributes(&a, data));
    std::printf("pool memory: type %d on %d\n", (int)a.type, a.device);
    if (count > 1) {
        cudaMemAccessDesc desc = {};
        desc.location.type = cudaMemLocationTypeDevice;
        desc.location.id = 1;
        desc.flags = cudaMemAccessFlagsProtReadWrite;
        CHECK(cudaMemPoolSetAccess(pool, &desc, 1));
        CHECK(cudaSetDevice(1));
        int *mine = nullptr;
        CHECK(cudaMalloc(&mine, bytes));
        CHECK(cudaMemcpy(mine, data, bytes, cudaMemcpyDeviceToDevice));
        int last = 0;
        CHECK(cudaMemcpy(&last, mine + n - 1, sizeof last, cudaMemcpyDeviceToHost));
        std::printf("peer copy after the grant: %d\n", last == (int)(n - 1) * 7);
        CHECK(cudaFree(mine));
        CHECK(cudaSetDevice(0));
    }
    CHECK(cudaFreeAsync(data, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemPoolDestroy(pool));
    CHECK(cudaFree(managed));
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaStreamDestroy(s));
    std::printf("done\n");
    return 0;
}
