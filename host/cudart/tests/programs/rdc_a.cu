// Relocatable device code across two translation units (nvcc -rdc=true): a kernel here calls a
// device function and reads a device variable defined in rdc_b.cu.
#include <cstdio>
#include <cuda_runtime.h>

extern __device__ int offset;
extern __device__ int add_offset(int v);

__global__ void shifted(int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = add_offset(i);
}

int main() {
    const int n = 1000;
    int *out = nullptr;
    int host[n];
    if (cudaMallocManaged(&out, n * sizeof(int)) != cudaSuccess) return 1;
    shifted<<<(n + 127) / 128, 128>>>(out, n);
    cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(host, out, sizeof host, cudaMemcpyDefault);
    std::printf("relocatable device code: %s, first %d last %d\n", cudaGetErrorName(e), host[0], host[n - 1]);
    return e == cudaSuccess ? 0 : 1;
}
