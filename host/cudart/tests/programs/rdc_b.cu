// The other translation unit of rdc_a.cu.
__device__ int offset = 7;
__device__ int add_offset(int v) { return v + offset; }
