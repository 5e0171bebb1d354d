// CCCL's device algorithms and libraries as CUDA 13's headers write them: Thrust (sorts, scans,
// reductions, transforms, set operations, searches, by-key algorithms), CUB's device-wide
// algorithms, cooperative groups, libcu++'s barriers, atomics and complex numbers,
// the half and bf16 intrinsics, CUDA's math library and the SIMD intrinsics. Compiled to PTX
// by tests/cccl.rs, which loads every kernel; nothing here is launched.
#include <thrust/device_vector.h>
#include <thrust/sort.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/unique.h>
#include <thrust/transform.h>
#include <thrust/copy.h>
#include <thrust/functional.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_histogram.cuh>
#include <cub/device/device_select.cuh>
#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_partition.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <thrust/count.h>
#include <thrust/find.h>
#include <thrust/inner_product.h>
#include <thrust/set_operations.h>
#include <thrust/merge.h>
#include <thrust/extrema.h>
#include <thrust/adjacent_difference.h>
#include <thrust/binary_search.h>
#include <thrust/gather.h>
#include <thrust/scatter.h>
#include <thrust/sequence.h>
#include <thrust/tabulate.h>
#include <thrust/partition.h>
#include <thrust/reverse.h>
#include <thrust/remove.h>
#include <thrust/mismatch.h>
#include <thrust/equal.h>
#include <thrust/logical.h>
#include <thrust/for_each.h>
#include <thrust/random.h>
#include <thrust/complex.h>
#include <cub/device/device_for.cuh>
#include <cub/device/device_adjacent_difference.cuh>
#include <cub/device/device_copy.cuh>
#include <cub/device/device_memcpy.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
struct is_odd { __host__ __device__ bool operator()(int x) const { return x & 1; } };
struct less_f { __host__ __device__ bool operator()(float a, float b) const { return a < b; } };
void all(int n) {
    thrust::device_vector<int> v(n), w(n);
    thrust::device_vector<float> f(n);
    thrust::device_vector<double> d(n);
    thrust::sort(v.begin(), v.end());
    thrust::sort(f.begin(), f.end());
    thrust::sort_by_key(d.begin(), d.end(), v.begin());
    thrust::stable_sort(f.begin(), f.end(), less_f());
    int s = thrust::reduce(v.begin(), v.end());
    double sd = thrust::reduce(d.begin(), d.end(), 0.0, thrust::maximum<double>());
    thrust::inclusive_scan(v.begin(), v.end(), w.begin());
    thrust::exclusive_scan(f.begin(), f.end(), f.begin());
    thrust::unique(v.begin(), v.end());
    thrust::copy_if(v.begin(), v.end(), w.begin(), is_odd());
    thrust::transform(f.begin(), f.end(), f.begin(), thrust::negate<float>());
    void *tmp = nullptr; size_t bytes = 0;
    int *a = thrust::raw_pointer_cast(v.data()), *b = thrust::raw_pointer_cast(w.data());
    float *fa = thrust::raw_pointer_cast(f.data());
    cub::DeviceRadixSort::SortPairs(tmp, bytes, a, b, a, b, n);
    cub::DeviceSegmentedReduce::Sum(tmp, bytes, a, b, 4, a, a + 1);
    cub::DeviceHistogram::HistogramEven(tmp, bytes, fa, b, 33, 0.0f, 1.0f, n);
    cub::DeviceSelect::Flagged(tmp, bytes, a, (char*)b, a, b, n);
    cub::DeviceMergeSort::SortKeys(tmp, bytes, fa, n, less_f());
    cub::DeviceRunLengthEncode::Encode(tmp, bytes, a, b, a, b, n);
    cub::DevicePartition::If(tmp, bytes, a, b, b, n, is_odd());
    cub::DeviceSegmentedSort::SortKeys(tmp, bytes, a, b, n, 4, a, a + 1);
    (void)s; (void)sd;
}

struct sq { __host__ __device__ int operator()(int x) const { return x * x; } };
struct rnd { __host__ __device__ float operator()(int i) const { thrust::default_random_engine e(i); thrust::uniform_real_distribution<float> d; return d(e); } };
void all2(int n) {
    thrust::device_vector<int> a(n), b(n), c(2 * n);
    thrust::device_vector<float> f(n);
    thrust::device_vector<thrust::complex<double>> z(n);
    thrust::sequence(a.begin(), a.end());
    thrust::tabulate(f.begin(), f.end(), rnd());
    int k = thrust::count(a.begin(), a.end(), 3);
    auto it = thrust::find(a.begin(), a.end(), 7);
    int ip = thrust::inner_product(a.begin(), a.end(), b.begin(), 0);
    thrust::set_union(a.begin(), a.end(), b.begin(), b.end(), c.begin());
    thrust::set_intersection(a.begin(), a.end(), b.begin(), b.end(), c.begin());
    thrust::merge(a.begin(), a.end(), b.begin(), b.end(), c.begin());
    auto mm = thrust::minmax_element(f.begin(), f.end());
    thrust::adjacent_difference(a.begin(), a.end(), b.begin());
    thrust::lower_bound(a.begin(), a.end(), b.begin(), b.end(), c.begin());
    thrust::gather(a.begin(), a.end(), b.begin(), c.begin());
    thrust::scatter(a.begin(), a.end(), b.begin(), c.begin());
    thrust::stable_partition(a.begin(), a.end(), thrust::placeholders::_1 > 3);
    thrust::reverse(a.begin(), a.end());
    thrust::remove(a.begin(), a.end(), 0);
    thrust::mismatch(a.begin(), a.end(), b.begin());
    bool e = thrust::equal(a.begin(), a.end(), b.begin());
    bool any = thrust::any_of(a.begin(), a.end(), thrust::placeholders::_1 > 3);
    thrust::for_each(a.begin(), a.end(), sq());
    thrust::reduce_by_key(a.begin(), a.end(), b.begin(), c.begin(), c.begin());
    thrust::inclusive_scan_by_key(a.begin(), a.end(), b.begin(), c.begin());
    thrust::complex<double> zs = thrust::reduce(z.begin(), z.end());
    void *tmp = nullptr; size_t bytes = 0;
    int *pa = thrust::raw_pointer_cast(a.data()), *pb = thrust::raw_pointer_cast(b.data());
    cub::DeviceAdjacentDifference::SubtractLeftCopy(tmp, bytes, pa, pb, n);
    cub::DeviceReduce::ArgMax(tmp, bytes, pa, (cub::KeyValuePair<int,int>*)pb, n);
    cub::DeviceScan::ExclusiveSumByKey(tmp, bytes, pa, pb, pb, n);
    cub::DeviceReduce::TransformReduce(tmp, bytes, pa, pb, n, cuda::std::plus<>{}, sq(), 0);
    (void)k; (void)it; (void)ip; (void)mm; (void)e; (void)any; (void)zs;
}

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda/atomic>
#include <cuda/std/complex>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda/ptx>
namespace cg = cooperative_groups;
__global__ void k1(const float *in, float *out, int n) {
    auto block = cg::this_thread_block();
    auto tile = cg::tiled_partition<32>(block);
    float v = in[block.thread_rank()];
    float s = cg::reduce(tile, v, cg::plus<float>());
    int m = cg::reduce(tile, (int)v, cg::greater<int>());
    __shared__ float sh[256];
    cg::memcpy_async(block, sh, in, sizeof(float) * 256);
    cg::wait(block);
    out[block.thread_rank()] = s + m + sh[threadIdx.x];
}
// cuda::barrier in shared memory, as its documentation writes it.
#pragma nv_diag_suppress static_var_with_dynamic_init
__global__ void k2(const int *in, int *out, int n) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ int sh[256];
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    cuda::memcpy_async(sh, in, sizeof(int) * 256, bar);
    bar.arrive_and_wait();
    cuda::atomic_ref<int, cuda::thread_scope_device> a(out[0]);
    a.fetch_add(sh[threadIdx.x], cuda::memory_order_relaxed);
    cuda::atomic_ref<int, cuda::thread_scope_system> b(out[1]);
    b.fetch_max(sh[threadIdx.x]);
    out[2 + threadIdx.x] = a.load(cuda::memory_order_acquire);
}
__global__ void k3(const float2 *in, float2 *out, int n) {
    cuda::std::complex<float> c(in[threadIdx.x].x, in[threadIdx.x].y);
    c = cuda::std::exp(c) * cuda::std::sqrt(c) / cuda::std::log(c);
    out[threadIdx.x] = make_float2(c.real(), c.imag());
    __half2 h = __floats2half2_rn(c.real(), c.imag());
    h = __hmul2(h, h2exp(h));
    __nv_bfloat162 b = __floats2bfloat162_rn(c.real(), c.imag());
    b = __hfma2(b, b, b);
    out[n + threadIdx.x] = make_float2(__low2float(h) + __low2float(b), __high2float(h) + __high2float(b));
}
__global__ void k4(const double *in, double *out, int n) {
    int i = threadIdx.x;
    double x = in[i];
    out[i] = erf(x) + tgamma(x) + lgamma(x) + j0(x) + cbrt(x) + atan2(x, 1.0) + pow(x, 2.5) + fmod(x, 3.0) + remainder(x, 2.0) + normcdfinv(x) + erfcinv(x);
    float f = (float)x;
    out[n + i] = erff(f) + tgammaf(f) + powf(f, 2.5f) + expm1f(f) + log1pf(f) + sinpif(f) + __expf(f) + __logf(f) + rsqrtf(f) + fmodf(f, 3.0f) + cyl_bessel_i0f(f);
    __nanosleep(10);
    out[2 * n + i] = __brevll(i) + __popcll(i) + __clzll(i) + __ffsll(i) + __funnelshift_l(i, 3, 5) + __byte_perm(i, 3, 0x1234) + __usad(i, 3, 4) + __vabsdiffu4(i, 77) + __dp4a(i, 3, 2);
}
