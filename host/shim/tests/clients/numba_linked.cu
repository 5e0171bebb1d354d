// Device functions in CUDA C that numba_linked.py's kernels call: numba-cuda compiles this with
// NVRTC and links its PTX with theirs.
extern "C" __device__ int mix(int *ret, int a, int b) {
    *ret = (int)((unsigned)a * 2654435761u) ^ (b >> 3);
    return 0;
}

extern "C" __device__ int scaled(double *ret, double x, int k) {
    *ret = ldexp(x, k) + x / 3.0;
    return 0;
}

// CUDA's double sin and cos carry internal helpers and tables that numba-cuda's own sin (from
// libdevice) carries too: each image keeps its own.
extern "C" __device__ int waves(double *ret, double x) {
    *ret = sin(x) + cos(3.0 * x);
    return 0;
}
