// How the tensor cores sum D = A B + C (wmma's 16x16x16, mma.sync's m16n8k16 and m16n8k8).
// Random inputs whose exponents spread over `spread` binades around `center`, some cases with
// zeros; for each input type and
// accumulator, prints how many elements differ from two references, and by how many ulp at
// most: `plain`, the exact products summed in f64 and rounded once, and `model`, the sum
// peerpool's PTX executor computes (`tensor_sum` in host/ptx/src/exec/matrix.rs, fitted to
// this probe's results). With a folder as argument, also writes each case's A, B, C and D
// there (`NAME.bin`, the first two tiles of each in turn).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <type_traits>
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

// mma.sync m16n8k16 or m16n8k8 (`K`): each lane builds its fragments from A (16 x K), B (K x 8)
// and C (16 x 8), all by rows, as the PTX ISA lays them out, and stores D where it sits.
__device__ uint32_t pack(uint32_t lo, uint32_t hi) { return lo | hi << 16; }
template <typename In, typename Acc, int K>
__global__ void sync_product(const In *a, const In *b, const Acc *c, Acc *d) {
    size_t t = blockIdx.x;
    int l = threadIdx.x, g = l / 4, q = l % 4;
    a += t * 16 * K; b += t * K * 8; c += t * 128; d += t * 128;
    auto bits = [](In v) { uint32_t x = 0; memcpy(&x, &v, sizeof(In)); return x; };
    uint32_t ar[4], br[2], cr[4], dr[4];
    if constexpr (sizeof(In) == 4) {  // tf32: one element a register
        for (int r = 0; r < K / 2; r++) ar[r] = bits(a[(g + 8 * (r % 2)) * K + q + K / 2 * (r / 2)]);
        for (int r = 0; r < K / 4; r++) br[r] = bits(b[(q + K / 2 * r) * 8 + g]);
    } else {
        for (int r = 0; r < K / 4; r++) {
            int row = g + 8 * (r % 2), col = 2 * q + 8 * (r / 2);
            ar[r] = pack(bits(a[row * K + col]), bits(a[row * K + col + 1]));
        }
        for (int r = 0; r < K / 8; r++) br[r] = pack(bits(b[(2 * q + 8 * r) * 8 + g]), bits(b[(2 * q + 8 * r + 1) * 8 + g]));
    }
    float cf[4], df[4];
    for (int i = 0; i < 4; i++) {
        int at = (g + 8 * (i / 2)) * 8 + 2 * q + i % 2;
        if constexpr (sizeof(Acc) == 4) cf[i] = c[at];
        else if (i % 2 == 0) { unsigned short lo, hi; memcpy(&lo, &c[at], 2); memcpy(&hi, &c[at + 1], 2); cr[i / 2] = pack(lo, hi); }
    }
    if constexpr (sizeof(In) == 4)
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                     : "=f"(df[0]), "=f"(df[1]), "=f"(df[2]), "=f"(df[3])
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]), "f"(cf[0]), "f"(cf[1]), "f"(cf[2]), "f"(cf[3]));
    else if constexpr (K == 8)
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"
                     : "=f"(df[0]), "=f"(df[1]), "=f"(df[2]), "=f"(df[3])
                     : "r"(ar[0]), "r"(ar[1]), "r"(br[0]), "f"(cf[0]), "f"(cf[1]), "f"(cf[2]), "f"(cf[3]));
    else if constexpr (sizeof(Acc) == 2)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};"
                     : "=r"(dr[0]), "=r"(dr[1])
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]), "r"(cr[0]), "r"(cr[1]));
    else if constexpr (std::is_same<In, __nv_bfloat16>::value)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                     : "=f"(df[0]), "=f"(df[1]), "=f"(df[2]), "=f"(df[3])
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]), "f"(cf[0]), "f"(cf[1]), "f"(cf[2]), "f"(cf[3]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                     : "=f"(df[0]), "=f"(df[1]), "=f"(df[2]), "=f"(df[3])
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]), "f"(cf[0]), "f"(cf[1]), "f"(cf[2]), "f"(cf[3]));
    for (int i = 0; i < 4; i++) {
        int at = (g + 8 * (i / 2)) * 8 + 2 * q + i % 2;
        if constexpr (sizeof(Acc) == 4) d[at] = df[i];
        else { unsigned short h = (unsigned short)(dr[i / 2] >> (16 * (i % 2))); memcpy(&d[at], &h, 2); }
    }
}

static uint64_t state = 0x9e3779b97f4a7c15ull;
static double uniform() {
    state ^= state << 13; state ^= state >> 7; state ^= state << 17;
    return (state >> 11) * 0x1.0p-53;
}
struct Case { int spread, center; bool signs; double zeros; };
// A value with a random sign (or none), an exponent in [center - spread/2, center + spread/2),
// or (with probability `zeros`) a zero.
static double draw(const Case &k) {
    double v = uniform() < k.zeros ? 0.0 : std::ldexp(1.0 + uniform(), (int)(uniform() * k.spread) - k.spread / 2 + k.center);
    return k.signs && uniform() < 0.5 ? -v : v;
}
// The exponent field's exponent: floor(log2 |x|), or for a subnormal its type's least.
static int exponent(double x, int least) { int e; std::frexp(x, &e); return e - 1 > least ? e - 1 : least; }
// The model: each term truncated below 2^(E - 25), E the largest of C's exponent and the
// products' (the sum of their factors'), summed exactly, rounded toward zero into f32 (an
// infinity past its range) or to nearest into f16, a zero always +0. `least`: the input's and
// C's least normal exponents.
static double model(double c, const double *a, const double *b, int terms, bool f32, int least_in, int least_c) {
    double plain = c;
    for (int k = 0; k < terms; k++) plain += a[k] * b[k];
    if (!std::isfinite(plain)) return plain;
    bool any = c != 0.0;
    int top = any ? exponent(c, least_c) : 0;
    for (int k = 0; k < terms; k++)
        if (a[k] != 0.0 && b[k] != 0.0) {
            int e = exponent(a[k], least_in) + exponent(b[k], least_in);
            top = any && top > e ? top : e;
            any = true;
        }
    if (!any) return plain;
    int lowest = top - 25;
    long long sum = (long long)std::trunc(std::ldexp(c, -lowest));
    for (int k = 0; k < terms; k++) sum += (long long)std::trunc(std::ldexp(a[k] * b[k], -lowest));
    if (sum == 0) return 0.0;
    double exact = std::ldexp((double)sum, lowest);
    double r;
    if (!f32) {
        r = (double)__half2float(__double2half(exact));
    } else if (std::fabs(exact) >= 0x1p128) {
        r = exact > 0 ? INFINITY : -INFINITY;
    } else {
        float f = (float)exact;  // to nearest; then one step toward zero where that went past
        if (std::fabs((double)f) > std::fabs(exact)) f = std::nextafter(f, 0.0f);
        r = f;
    }
    return r == 0.0 ? 0.0 : r;  // too small for D: +0 whatever the sign
}
static double value(float v) { return v; }
static double value(__half v) { return __half2float(v); }
static double value(__nv_bfloat16 v) { return __bfloat162float(v); }
// An input as the tensor cores take it: a tf32 (given as an f32) without its low 13 bits.
template <typename T> static double input(T v) { return value(v); }
template <> double input(float v) { uint32_t b; memcpy(&b, &v, 4); b &= ~0x1fffu; float f; memcpy(&f, &b, 4); return f; }
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

static const char *dump_dir = nullptr;

template <typename T>
static void dump(FILE *f, const std::vector<T> &v, int n) { fwrite(v.data(), sizeof(T), n, f); }

// wmma's 16x16x16 (`N` 16), or mma.sync's m16n8k16 and m16n8k8 (`N` 8).
template <typename In, typename Acc, int N = 16, int K = 16>
static void run(const char *name, Case k) {
    const int tiles = 512, n = tiles * 256, nc = tiles * 16 * N;
    std::vector<In> a(n), b(n);
    std::vector<Acc> c(n), d(n);
    for (int i = 0; i < n; i++) { make(a[i], draw(k)); make(b[i], draw(k)); make(c[i], draw(k)); }
    In *da, *db; Acc *dc, *dd;
    cudaMalloc(&da, n * sizeof(In)); cudaMalloc(&db, n * sizeof(In));
    cudaMalloc(&dc, n * sizeof(Acc)); cudaMalloc(&dd, n * sizeof(Acc));
    cudaMemcpy(da, a.data(), n * sizeof(In), cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), n * sizeof(In), cudaMemcpyHostToDevice);
    cudaMemcpy(dc, c.data(), n * sizeof(Acc), cudaMemcpyHostToDevice);
    if constexpr (N == 16) product<In, Acc><<<tiles, 32>>>(da, db, dc, dd);
    else sync_product<In, Acc, K><<<tiles, 32>>>(da, db, dc, dd);
    cudaError_t e = cudaMemcpy(d.data(), dd, n * sizeof(Acc), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) { printf("%s: %s\n", name, cudaGetErrorString(e)); return; }
    if (dump_dir && N == 16) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s-%d-%d-%s-%d.bin", dump_dir, name, k.spread, k.center,
                 k.signs ? "signed" : "positive", (int)(k.zeros * 100));
        for (char *p = path + strlen(dump_dir); *p; p++) if (*p == ' ' || *p == '>') *p = '_';
        FILE *f = fopen(path, "wb");
        if (f) { dump(f, a, 512); dump(f, b, 512); dump(f, c, 512); dump(f, d, 512); fclose(f); }
    }
    long differ[2] = {0, 0}, worst[2] = {0, 0};
    const int bits = sizeof(Acc) * 8;
    for (int t = 0; t < tiles; t++)
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < N; j++) {
                double row[16], col[16], c0 = value(c[t * 16 * N + i * N + j]), got = value(d[t * 16 * N + i * N + j]);
                for (int q = 0; q < K; q++) { row[q] = value(a[t * 16 * K + i * K + q]); col[q] = value(b[t * K * N + q * N + j]); }
                double mrow[16], mcol[16];  // what the model takes: of an f32 input, its tf32 bits
                for (int q = 0; q < K; q++) { mrow[q] = input(a[t * 16 * K + i * K + q]); mcol[q] = input(b[t * K * N + q * N + j]); }
                double plain = c0;
                for (int q = 0; q < K; q++) plain += row[q] * col[q];
                int least_in = std::is_same<In, __half>::value ? -14 : -126;
                double refs[2] = {plain, model(c0, mrow, mcol, K, bits == 32, least_in, bits == 32 ? -126 : -14)};
                for (int r = 0; r < 2; r++) {
                    bool same = std::isnan(refs[r]) ? std::isnan(got) : ordered(refs[r], bits) == ordered(got, bits) && std::signbit(refs[r]) == std::signbit(got);
                    long ulp = std::isnan(refs[r]) || std::isnan(got) ? (same ? 0 : 1L << 40) : std::labs((long)(ordered(refs[r], bits) - ordered(got, bits)));
                    differ[r] += !same; worst[r] = ulp > worst[r] ? ulp : worst[r];
                }
            }
    printf("%-12s spread %2d center %3d %-8s zeros %2d%%: %6d elements; plain: %6ld differ, at most %5ld ulp; model: %ld differ\n",
           name, k.spread, k.center, k.signs ? "signed" : "positive", (int)(k.zeros * 100), nc, differ[0], worst[0], differ[1]);
    cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dd);
}

int main(int argc, char **argv) {
    if (argc > 1) dump_dir = argv[1];
    std::vector<Case> cases;
    for (int spread : {1, 4, 8})
        for (bool signs : {false, true}) cases.push_back({spread, 0, signs, 0.0});
    cases.push_back({4, 0, true, 0.3});   // zeros of either sign among the inputs
    cases.push_back({40, 0, true, 0.0});  // terms far apart: whole products truncated away
    for (const Case &k : cases) {
        run<__half, float>("f16 -> f32", k);
        run<__half, __half>("f16 -> f16", k);
        run<__nv_bfloat16, float>("bf16 -> f32", k);
    }
    // Subnormal f16 inputs (and sums), f16 sums past f16's range, and bf16 inputs far from 1.
    run<__half, float>("f16 -> f32", {18, -17, true, 0.0});
    run<__half, __half>("f16 -> f16", {18, -17, true, 0.0});
    run<__half, __half>("f16 -> f16", {8, 8, true, 0.0});
    run<__nv_bfloat16, float>("bf16 -> f32", {80, -90, true, 0.0});
    run<__nv_bfloat16, float>("bf16 -> f32", {80, 90, true, 0.0});
    // mma.sync, fragments as the PTX ISA lays them out; tf32 given f32s with all their bits.
    for (const Case &k : {Case{8, 0, true, 0.0}, Case{4, 0, true, 0.3}, Case{18, -17, true, 0.0}}) {
        run<__half, float, 8, 16>("sync f16 -> f32 k16", k);
        run<__half, __half, 8, 16>("sync f16 -> f16 k16", k);
        run<__nv_bfloat16, float, 8, 16>("sync bf16 -> f32 k16", k);
        run<__half, float, 8, 8>("sync f16 -> f32 k8", k);
        run<float, float, 8, 8>("sync tf32 -> f32 k8", k);
    }
    run<float, float, 8, 8>("sync tf32 -> f32 k8", {60, -100, true, 0.0});
    return 0;
}
