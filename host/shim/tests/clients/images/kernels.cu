// Kernels that are not peerpool's, for the foreign-image client (images.c): built to PTX, to an
// sm_90 cubin and to fatbins (plain and compressed) by NVIDIA's nvcc.
__device__ unsigned int pp_test_counter;
__constant__ float pp_test_scale_by = 2.0f;

extern "C" __global__ void pp_test_add(int *p, int n, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += v;
    if (i == 0) atomicAdd(&pp_test_counter, 1u);
}

extern "C" __global__ void pp_test_scale(float *p, unsigned long long n) {
    extern __shared__ float tile[];
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) {
        tile[threadIdx.x] = p[i] * pp_test_scale_by;
        __syncthreads();
        p[i] = tile[threadIdx.x];
    }
}
