// How far the tensor cores' D = A B + C (wmma, 16x16x16) lies from peerpool's PTX executor's,
// which sums the exact products in f64 from C, k = 0 first, and rounds once. Random inputs
// whose exponents spread over `spread` binades, so that sums round; prints, for each input
// type and accumulator, how many elements differ and by how many ulp at most.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>
using namespace nvcuda;

template <typename In, typename Acc>
__global__ void product(const In *a, const In *b, const Acc *c, Acc *d) {
    size_t t = blockIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, In, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, In, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, Acc> fc;
    wmma::load_matrix_sync(fa, a + t * 256, 16);
    wmma::load_matrix_sync(fb, b + t * 256, 16);
    wmma::load_matrix_sync(fc, c + t * 256, 16, wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d + t * 256, fc, 16, wmma::mem_row_major);
}

static uint64_t state = 0x9e3779b97f4a7c15ull;
static double uniform() {
    state ^= state << 13; state ^= state >> 7; state ^= state << 17;
    return (state >> 11) * 0x1.0p-53;
}
// A value with a random sign (or none) and an exponent in [-spread/2, spread/2).
static double draw(int spread, bool signs) {
    double v = std::ldexp(1.0 + uniform(), (int)(uniform() * spread) - spread / 2);
    return signs && uniform() < 0.5 ? -v : v;
}
static double value(float v) { return v; }
static double value(__half v) { return __half2float(v); }
static double value(__nv_bfloat16 v) { return __bfloat162float(v); }
static void make(float &out, double v) { out = (float)v; }
static void make(__half &out, double v) { out = __double2half(v); }
static void make(__nv_bfloat16 &out, double v) { out = __double2bfloat16(v); }
// Position on the number line, so that neighbours differ by one.
static int64_t ordered(double v, int bits) {
    int64_t w;
    if (bits == 32) { float f = (float)v; int32_t i; std::memcpy(&i, &f, 4); w = i; }
    else { __half h = __double2half(v); uint16_t i; std::memcpy(&i, &h, 2); w = (int16_t)i; }
    return w < 0 ? (int64_t)INT32_MIN - w : w;
}

template <typename In, typename Acc>
static void run(const char *name, int spread, bool signs) {
    const int tiles = 512, n = tiles * 256;
    std::vector<In> a(n), b(n);
    std::vector<Acc> c(n), d(n);
    for (int i = 0; i < n; i++) { make(a[i], draw(spread, signs)); make(b[i], draw(spread, signs)); make(c[i], draw(spread, signs)); }
    In *da, *db; Acc *dc, *dd;
    cudaMalloc(&da, n * sizeof(In)); cudaMalloc(&db, n * sizeof(In));
    cudaMalloc(&dc, n * sizeof(Acc)); cudaMalloc(&dd, n * sizeof(Acc));
    cudaMemcpy(da, a.data(), n * sizeof(In), cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), n * sizeof(In), cudaMemcpyHostToDevice);
    cudaMemcpy(dc, c.data(), n * sizeof(Acc), cudaMemcpyHostToDevice);
    product<In, Acc><<<tiles, 32>>>(da, db, dc, dd);
    cudaError_t e = cudaMemcpy(d.data(), dd, n * sizeof(Acc), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) { printf("%s: %s\n", name, cudaGetErrorString(e)); return; }
    long differ = 0, worst = 0, histogram[4] = {0, 0, 0, 0};
    const int bits = sizeof(Acc) * 8;
    for (int t = 0; t < tiles; t++)
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) {
                double sum = value(c[t * 256 + i * 16 + j]);
                for (int k = 0; k < 16; k++) sum += value(a[t * 256 + i * 16 + k]) * value(b[t * 256 + k * 16 + j]);
                long ulp = std::labs((long)(ordered(sum, bits) - ordered(value(d[t * 256 + i * 16 + j]), bits)));
                differ += ulp != 0; worst = ulp > worst ? ulp : worst; histogram[ulp < 3 ? ulp : 3]++;
            }
    printf("%-14s spread %2d %-9s: %6d elements, %6ld differ, at most %ld ulp (0: %ld, 1: %ld, 2: %ld, more: %ld)\n",
           name, spread, signs ? "signed" : "positive", n, differ, worst, histogram[0], histogram[1], histogram[2], histogram[3]);
    cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dd);
}

int main() {
    for (int spread : {1, 4, 8}) {
        for (bool signs : {false, true}) {
            run<__half, float>("f16 -> f32", spread, signs);
            run<__half, __half>("f16 -> f16", spread, signs);
            run<__nv_bfloat16, float>("bf16 -> f32", spread, signs);
        }
    }
    return 0;
}
