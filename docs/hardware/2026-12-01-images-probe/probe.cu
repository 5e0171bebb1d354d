// Kernels for probing what NVIDIA's driver answers about foreign images beyond images.c.
__device__ int arr[10] = {1, 2, 3};
__device__ double dd;
__constant__ int cvals[4] = {7, 8, 9, 10};

__device__ __noinline__ int helper(int x) { return x * 3 + arr[x & 7] + cvals[x & 3]; }

extern "C" __global__ void k_static(int *p) {
    __shared__ int s[100];
    s[threadIdx.x] = p[threadIdx.x];
    __syncthreads();
    p[threadIdx.x] = s[99 - threadIdx.x] + helper(threadIdx.x);
}

extern "C" __global__ void __launch_bounds__(256) k_bounded(int *p, char c, double d, short h) {
    int a[50];
    for (int i = 0; i < 50; i++) a[i] = p[i * c];
    p[threadIdx.x] = a[p[0] % 50] + (int)d + h;
    dd = d;
}

struct Big { int x[40]; };
extern "C" __global__ void k_struct(Big b, int *out) { out[0] = b.x[3]; }
