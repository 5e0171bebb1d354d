// The executor's corpus: small kernels, each `extern "C"` with the same parameters
// (const u32 *in, u32 *out, u32 n), launched as kernels.txt says. Inputs are in[i] = hash(i)
// (README.md); every output is a pure function of them, whatever the order threads run in.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_pipeline.h>
#include <cuda/barrier>
#include <cuda/ptx>
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
#include <cub/block/block_load.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <mma.h>
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;
#define KERNEL extern "C" __global__ void
#define ARGS const u32 *__restrict__ in, u32 *__restrict__ out, u32 n
#define FULL 0xffffffffu
// An intrinsic in its four roundings: to nearest, to zero, down, up.
#define ROUNDINGS(f, ...) f##_rn(__VA_ARGS__), f##_rz(__VA_ARGS__), f##_rd(__VA_ARGS__), f##_ru(__VA_ARGS__)

// Finite f32s with |x| in [2^-15, 2^17) and f64s with |x| in [2^-31, 2^33): no overflow,
// no subnormals, every mantissa bit random.
__device__ __forceinline__ float f_of(u32 w) {
    return __uint_as_float((w & 0x807fffffu) | ((((w >> 23) & 31u) + 112u) << 23));
}
__device__ __forceinline__ double d_of(u32 lo, u32 hi) {
    u64 b = ((u64)hi << 32) | lo;
    return __longlong_as_double((b & 0x800fffffffffffffull) | ((((b >> 52) & 63ull) + 992ull) << 52));
}
__device__ __forceinline__ u64 gid() { return blockIdx.x * (u64)blockDim.x + threadIdx.x; }
__device__ __forceinline__ u32 lane() { return threadIdx.x & 31; }

// ---- elementwise, grid-stride, 64-bit indexing
KERNEL saxpy(ARGS) {
    for (u64 i = gid(); i < n; i += (u64)blockDim.x * gridDim.x)
        out[i] = __float_as_uint(fmaf(2.5f, f_of(in[i]), f_of(in[i + n])));
}
KERNEL index64(ARGS) {
    for (u64 i = gid(); i < n; i += (u64)blockDim.x * gridDim.x)
        out[i] = (u32)((i * 0x9E3779B97F4A7C15ull) >> 32) ^ in[i];
}
KERNEL int_arith(ARGS) {
    u64 i = gid();
    if (i >= n) return;
    u32 a = in[2 * i], b = in[2 * i + 1] | 1;
    int sa = (int)a, sb = (int)b;
    u32 *o = out + 8 * i;
    o[0] = a / b; o[1] = a % b; o[2] = (u32)(sa / sb); o[3] = (u32)(sa % sb);
    o[4] = __umulhi(a, b); o[5] = (u32)__mulhi(sa, sb);
    o[6] = (u32)__umul64hi(((u64)a << 32) | b, 0x123456789abcdefull);
    o[7] = (u32)min(sa, sb) ^ max(a, b) ^ (u32)abs(sa);
}
KERNEL int64_arith(ARGS) {
    u64 i = gid();
    if (i >= n) return;
    const u64 *w = (const u64 *)in;
    u64 a = w[2 * i], b = w[2 * i + 1] | 1;
    u64 *o = (u64 *)out + 8 * i;
    o[0] = a * b; o[1] = a / b; o[2] = a % b; o[3] = (u64)((i64)a / (i64)b);
    o[4] = __umul64hi(a, b); o[5] = (u64)__mul64hi((i64)a, (i64)b);
    o[6] = a >> (b & 63); o[7] = (u64)((i64)a >> (b & 63));
}
KERNEL bits32(ARGS) {
    u64 i = gid();
    if (i >= n) return;
    u32 a = in[2 * i], b = in[2 * i + 1];
    u32 *o = out + 8 * i;
    o[0] = __popc(a) | (__clz(a) << 8) | (__ffs(b) << 16);
    o[1] = __brev(a);
    o[2] = __byte_perm(a, b, b & 0x7777);
    o[3] = __byte_perm(a, b, (b >> 16) | 0x8888);
    o[4] = __funnelshift_l(a, b, b >> 27);
    o[5] = __funnelshift_r(a, b, b >> 26);
    o[6] = __funnelshift_lc(a, b, b >> 26);
    o[7] = (a >> (b & 31)) & 0xfff;
}
KERNEL packed16(ARGS) {
    u64 i = gid();
    if (i >= n) return;
    u32 a = in[2 * i], b = in[2 * i + 1];
    u32 *o = out + 12 * i;
    __prof_trigger(5);
    o[0] = __vadd2(a, b);
    o[1] = __viaddmax_s16x2(a, b, a ^ b);
    o[2] = __vmaxs2(a, b);
    o[3] = __vmins2(a, b);
    o[4] = __vmaxu2(a, b);
    o[5] = __vminu2(a, b);
    o[6] = __vimax_s16x2_relu(a, b);
    o[7] = __vimin_s16x2_relu(a, b);
    o[8] = __fns(a, b & 31, 0);
    o[9] = __fns(a, b & 31, (int)(b >> 27) - 16);
    o[10] = __fns(a & 0x01010101, (b >> 8) & 31, (int)((b >> 16) & 7) - 3);
    o[11] = __fns(a, (b >> 20) & 31, (int)(b >> 25));
}
KERNEL bits64(ARGS) {
    u64 i = gid();
    if (i >= n) return;
    u64 a = ((const u64 *)in)[i];
    u64 *o = (u64 *)out + 2 * i;
    o[0] = (u64)__popcll(a) | ((u64)__clzll(a) << 8) | ((u64)__ffsll(a) << 16);
    o[1] = __brevll(a);
}
KERNEL dot_products(ARGS) {
    u64 i = gid();
    if (i >= n) return;
    u32 a = in[3 * i], b = in[3 * i + 1], c = in[3 * i + 2];
    u32 *o = out + 4 * i;
    o[0] = (u32)__dp4a((int)a, (int)b, (int)c);
    o[1] = __dp4a(a, b, c);
    o[2] = (u32)__dp2a_lo((int)a, (int)b, (int)c);
    o[3] = __dp2a_hi(a, b, c);
}
KERNEL sad_mul24(ARGS) {
    u64 i = gid();
    if (i >= n) return;
    u32 a = in[3 * i], b = in[3 * i + 1], c = in[3 * i + 2];
    u32 *o = out + 4 * i;
    o[0] = __usad(a, b, c);
    o[1] = __sad((int)a, (int)b, c);
    o[2] = (u32)__mul24((int)a, (int)b);
    o[3] = __umul24(a, b);
}
KERNEL wide_mul_add(ARGS) {
    u64 i = gid();
    if (i >= n) return;
    u32 a = in[3 * i], b = in[3 * i + 1], c = in[3 * i + 2];
    u64 *o = (u64 *)out + 3 * i;
    o[0] = (u64)a * b + c;
    o[1] = (u64)((i64)(int)a * (int)b + (int)c);
    o[2] = (u64)(a * b + c) | ((u64)__umulhi(a, b) << 32);
}

// ---- shared memory and barriers
KERNEL reduce_shared(ARGS) {
    __shared__ u32 s[256];
    u32 t = threadIdx.x;
    s[t] = in[gid()];
    __syncthreads();
    for (u32 k = 128; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
KERNEL reduce_dynamic_f32(ARGS) {
    extern __shared__ float sf[];
    u32 t = threadIdx.x;
    sf[t] = f_of(in[gid()]);
    __syncthreads();
    for (u32 k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) sf[t] += sf[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = __float_as_uint(sf[0]);
}
KERNEL transpose(ARGS) {
    __shared__ u32 tile[32][33];
    u32 w = gridDim.x * 32;
    u32 x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (u32 j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (u32 j = 0; j < 32; j += 8) out[(y + j) * w + x] = tile[threadIdx.x][threadIdx.y + j];
}
KERNEL block_scan(ARGS) {
    __shared__ u32 buf[2][128];
    u32 t = threadIdx.x, cur = 0;
    buf[0][t] = in[gid()] & 0xffff;
    __syncthreads();
    for (u32 k = 1; k < 128; k <<= 1) {
        buf[cur ^ 1][t] = buf[cur][t] + (t >= k ? buf[cur][t - k] : 0);
        cur ^= 1;
        __syncthreads();
    }
    out[gid()] = buf[cur][t];
}
KERNEL histogram_shared(ARGS) {
    __shared__ u32 bins[64];
    if (threadIdx.x < 64) bins[threadIdx.x] = 0;
    __syncthreads();
    for (u64 i = gid(); i < n; i += (u64)blockDim.x * gridDim.x) atomicAdd(&bins[in[i] & 63], 1);
    __syncthreads();
    if (threadIdx.x < 64) atomicAdd(&out[threadIdx.x], bins[threadIdx.x]);
}
KERNEL syncthreads_reductions(ARGS) {
    u32 v = in[gid()];
    int c = __syncthreads_count(v & 1);
    int a = __syncthreads_and(v & 0x80000001);
    int o = __syncthreads_or((v & 0xff) == 0x42);
    out[gid()] = (u32)c | ((u32)a << 16) | ((u32)o << 17);
}

// ---- warps
KERNEL warp_reduce_down(ARGS) {
    u32 v = in[gid()];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(FULL, v, off);
    if (lane() == 0) out[gid() / 32] = v;
}
KERNEL warp_scan_up(ARGS) {
    u32 v = in[gid()] & 0xffff;
    for (u32 off = 1; off < 32; off <<= 1) {
        u32 t = __shfl_up_sync(FULL, v, off);
        if (lane() >= off) v += t;
    }
    out[gid()] = v;
}
KERNEL warp_max_xor(ARGS) {
    u32 v = in[gid()];
    for (int m = 16; m > 0; m >>= 1) v = max(v, __shfl_xor_sync(FULL, v, m));
    out[gid()] = v;
}
KERNEL shfl_widths(ARGS) {
    u32 v = in[gid()];
    u32 *o = out + 4 * gid();
    o[0] = __shfl_sync(FULL, v, (v >> 8) & 15, 16);
    o[1] = __shfl_up_sync(FULL, v, 3, 8);
    o[2] = __shfl_down_sync(FULL, v, 5, 8);
    o[3] = __shfl_xor_sync(FULL, v, 9, 16);
}
KERNEL shfl_f64(ARGS) {
    double d = d_of(in[2 * gid()], in[2 * gid() + 1]);
    double r = __shfl_down_sync(FULL, d, 1) + __shfl_sync(FULL, d, 0);
    ((u64 *)out)[gid()] = __double_as_longlong(r);
}
KERNEL ballot_rank(ARGS) {
    bool p = in[gid()] & 1;
    u32 b = __ballot_sync(FULL, p);
    out[2 * gid()] = b;
    out[2 * gid() + 1] = __popc(b & ((1u << lane()) - 1));
}
KERNEL votes(ARGS) {
    u32 v = in[gid()];
    u32 all = __all_sync(FULL, v > 0x01000000), any = __any_sync(FULL, v < 0x08000000);
    u32 uni = __uni_sync(FULL, (v >> 31) == (in[gid() & ~31u] >> 31));
    out[gid()] = all | (any << 1) | (uni << 2);
}
KERNEL divergent_shfl(ARGS) {
    u32 v = in[gid()];
    bool odd = v & 1;
    u32 m = __ballot_sync(FULL, odd);
    u32 r = 0;
    if (odd) {
        r = __shfl_sync(m, v, __ffs(m) - 1);
        __syncwarp(m);
    } else {
        r = __reduce_xor_sync(~m, v);
    }
    out[gid()] = r ^ __activemask();
}
KERNEL match_groups(ARGS) {
    u32 key = in[gid()] & 3;
    int pred;
    u32 any = __match_any_sync(FULL, key);
    u32 all = __match_all_sync(FULL, key >> 2, &pred);
    out[gid()] = any ^ all ^ (u32)pred;
}
KERNEL redux(ARGS) {
    u32 v = in[gid()];
    u32 *o = out + 4 * gid();
    o[0] = __reduce_add_sync(FULL, v);
    o[1] = __reduce_min_sync(FULL, v) ^ __reduce_max_sync(FULL, v);
    o[2] = (u32)__reduce_min_sync(FULL, (int)v) ^ (u32)__reduce_max_sync(FULL, (int)v);
    o[3] = __reduce_and_sync(FULL, v) ^ __reduce_or_sync(FULL, v) ^ __reduce_xor_sync(FULL, v);
}
KERNEL partial_warp(ARGS) {
    u64 i = gid();
    if (i >= n) return;
    u32 m = __activemask();
    out[i] = __ballot_sync(m, in[i] & 1) ^ (m << 1);
}
KERNEL syncwarp_shared(ARGS) {
    __shared__ u32 s[64];
    u32 t = threadIdx.x;
    s[t] = in[gid()];
    __syncwarp();
    out[gid()] = s[t ^ 1] + s[t ^ 31];
}

// ---- atomics
KERNEL atomic_add_device(ARGS) {
    u32 v = in[gid()];
    atomicAdd(&out[v & 15], 1);
    atomicAdd(&out[16], v & 0xff);
}
KERNEL atomic_add_block(ARGS) {
    u32 v = in[gid()];
    atomicAdd_block(&out[v & 7], v >> 24);
}
KERNEL atomic_add_system(ARGS) {
    u32 v = in[gid()];
    atomicAdd_system(&out[v & 7], 1u);
    atomicAdd_system((unsigned long long *)&out[8] + (v & 1), (u64)v);
}
// out starts as all ones (kernels.txt).
KERNEL atomic_min_and(ARGS) {
    u32 v = in[gid()];
    atomicMax((int *)&out[0], (int)v);
    atomicMin((int *)&out[1], (int)v);
    atomicMin(&out[2], v);
    atomicAnd(&out[3], v | 0x00010000);
}
// out starts as zeros.
KERNEL atomic_max_or(ARGS) {
    u32 v = in[gid()];
    atomicMax(&out[0], v >> 1);
    atomicOr(&out[1], v & 0x01010101);
    atomicXor(&out[2], v);
    atomicInc(&out[3], 6);
    atomicDec(&out[4], 5);
    if (atomicExch(&out[5], 42) == 0) atomicAdd(&out[6], 1);
    atomicMax((unsigned long long *)&out[8], (u64)v << 20);
    atomicMin((long long *)&out[10], -(long long)v);
}
// out[0] starts as 1.
KERNEL atomic_cas_mul(ARGS) {
    u32 v = in[gid()] | 1;
    u32 old = out[0], assumed;
    do {
        assumed = old;
        old = atomicCAS(&out[0], assumed, assumed * v);
    } while (old != assumed);
}
KERNEL atomic_float(ARGS) {
    u32 v = in[gid()];
    atomicAdd((float *)&out[v & 3], (float)(v >> 24));
    atomicAdd((double *)&out[4] + (v >> 31), (double)(v & 0xffff) * 0.25);
}
KERNEL atomic_ticket(ARGS) {
    u32 t = atomicAdd(&out[0], 1);
    atomicAdd(&out[1 + t], 1);
}

// ---- floats
KERNEL f32_rounding(ARGS) {
    u64 i = gid();
    float a = f_of(in[3 * i]), b = f_of(in[3 * i + 1]), c = f_of(in[3 * i + 2]);
    float r[24] = {
        ROUNDINGS(__fadd, a, b), ROUNDINGS(__fsub, a, b), ROUNDINGS(__fmul, a, b), ROUNDINGS(__fdiv, a, b),
        ROUNDINGS(__fmaf, a, b, c), ROUNDINGS(__fsqrt, fabsf(a)),
    };
    for (int k = 0; k < 24; k++) out[24 * i + k] = __float_as_uint(r[k]);
}
KERNEL f32_rcp(ARGS) {
    u64 i = gid();
    float a = f_of(in[i]);
    out[4 * i] = __float_as_uint(__frcp_rn(a));
    out[4 * i + 1] = __float_as_uint(__frcp_rz(a));
    out[4 * i + 2] = __float_as_uint(__frcp_rd(a));
    out[4 * i + 3] = __float_as_uint(__frcp_ru(a));
}
KERNEL f64_rounding(ARGS) {
    u64 i = gid();
    double a = d_of(in[6 * i], in[6 * i + 1]), b = d_of(in[6 * i + 2], in[6 * i + 3]);
    double c = d_of(in[6 * i + 4], in[6 * i + 5]);
    double r[24] = {
        ROUNDINGS(__dadd, a, b), ROUNDINGS(__dsub, a, b), ROUNDINGS(__dmul, a, b), ROUNDINGS(__ddiv, a, b),
        ROUNDINGS(__fma, a, b, c), ROUNDINGS(__dsqrt, fabs(a)),
    };
    for (int k = 0; k < 24; k++) ((u64 *)out)[24 * i + k] = __double_as_longlong(r[k]);
}
KERNEL conversions(ARGS) {
    u64 i = gid();
    u32 w = in[4 * i];
    float f = __uint_as_float((w & 0x807fffffu) | ((((w >> 23) & 63u) + 100u) << 23));
    double d = d_of(in[4 * i + 1], in[4 * i + 2]) * 4096.0;
    int s = (int)in[4 * i + 3];
    i64 l = (i64)(((u64)in[4 * i + 3] << 32) | in[4 * i + 1]);
    u32 *o = out + 24 * i;
    o[0] = (u32)__float2int_rn(f); o[1] = (u32)__float2int_rz(f); o[2] = (u32)__float2int_rd(f); o[3] = (u32)__float2int_ru(f);
    o[4] = __float2uint_rn(f); o[5] = __float2uint_rz(f);
    o[6] = (u32)__float2ll_rd(f); o[7] = (u32)(__float2ull_ru(f) >> 3);
    o[8] = (u32)__double2int_rn(d); o[9] = (u32)__double2int_rz(d); o[10] = __double2uint_rd(d);
    o[11] = __float_as_uint(__double2float_rn(d)); o[12] = __float_as_uint(__double2float_rz(d));
    o[13] = __float_as_uint(__double2float_rd(d)); o[14] = __float_as_uint(__double2float_ru(d));
    o[15] = __float_as_uint(__int2float_rn(s)); o[16] = __float_as_uint(__int2float_rz(s));
    o[17] = __float_as_uint(__int2float_rd(s)); o[18] = __float_as_uint(__uint2float_ru((u32)s));
    o[19] = __float_as_uint(__ll2float_rd(l));
    o[20] = (u32)__double_as_longlong(__ll2double_ru(l)); o[21] = (u32)(__double_as_longlong(__ll2double_rz(l)) >> 32);
    o[22] = (u32)__double_as_longlong(__ull2double_rd((u64)l));
    o[23] = (u32)__double2ll_ru(d);
}
KERNEL ieee_default(ARGS) {
    u64 i = gid();
    float a = f_of(in[4 * i]), b = f_of(in[4 * i + 1]);
    double x = d_of(in[4 * i + 2], in[4 * i + 3]), y = d_of(in[4 * i + 1], in[4 * i]);
    u32 *o = out + 8 * i;
    o[0] = __float_as_uint(a / b); o[1] = __float_as_uint(sqrtf(fabsf(a))); o[2] = __float_as_uint(1.0f / a);
    o[3] = __float_as_uint(fmaf(a, b, -a));
    u64 *q = (u64 *)(o + 4);
    q[0] = __double_as_longlong(x / y); q[1] = __double_as_longlong(sqrt(fabs(x)));
}
KERNEL float_misc(ARGS) {
    u64 i = gid();
    float a = f_of(in[2 * i]), b = f_of(in[2 * i + 1]);
    double x = d_of(in[2 * i], in[2 * i + 1]);
    u32 *o = out + 12 * i;
    o[0] = __float_as_uint(fminf(a, b)); o[1] = __float_as_uint(fmaxf(a, b)); o[2] = __float_as_uint(copysignf(a, b));
    o[3] = __float_as_uint(floorf(a)); o[4] = __float_as_uint(ceilf(a)); o[5] = __float_as_uint(truncf(a));
    o[6] = __float_as_uint(rintf(a)); o[7] = __float_as_uint(__saturatef(a * 1e-4f));
    o[8] = __float_as_uint(fabsf(a) - b);
    o[9] = (u32)__double_as_longlong(floor(x)); o[10] = (u32)(__double_as_longlong(fmin(x, (double)a)) >> 32);
    o[11] = (u32)(__double_as_longlong(ceil(x)) >> 32);
}
KERNEL approx_math(ARGS) {
    u64 i = gid();
    float a = (float)(int)(in[2 * i] % 20001u - 10000u) * 3.0e-4f, b = f_of(in[2 * i + 1]);
    u32 *o = out + 8 * i;
    o[0] = __float_as_uint(__sinf(a)); o[1] = __float_as_uint(__cosf(a));
    o[2] = __float_as_uint(__expf(a)); o[3] = __float_as_uint(__log2f(fabsf(b)));
    o[4] = __float_as_uint(__fdividef(a, b)); o[5] = __float_as_uint(rsqrtf(fabsf(b)));
    o[6] = __float_as_uint(exp2f(a)); o[7] = __float_as_uint(__frcp_rn(b) * a);
}
KERNEL classify(ARGS) {
    u64 i = gid();
    u32 w = in[i];
    if (i % 8 == 0) w = 0x7f800000u | (w & 0x80000000u);
    if (i % 8 == 1) w = 0x7fc00000u | (w & 0x007fffffu);
    if (i % 8 == 2) w &= 0x807fffffu;
    float f = __uint_as_float(w);
    out[i] = (u32)isnan(f) | ((u32)isinf(f) << 1) | ((u32)isfinite(f) << 2) | ((u32)(signbit(f) != 0) << 3) |
             ((u32)(fabsf(f) < 1.17549435e-38f && f != 0.0f) << 4);
}

// ---- control flow, calls, local and constant memory
KERNEL collatz(ARGS) {
    u64 i = gid();
    u32 v = (in[i] & 0xffff) + 1, steps = 0;
    while (v != 1 && steps < 1000) {
        v = (v & 1) ? 3 * v + 1 : v / 2;
        steps++;
    }
    out[i] = steps;
}
KERNEL switch_case(ARGS) {
    u64 i = gid();
    u32 v = in[i], r;
    switch (v % 8) {
    case 0: r = v * 3; break;
    case 1: r = v ^ 0xdeadbeef; break;
    case 2: r = v >> 3; break;
    case 3: r = v + in[(i + 1) % n]; break;
    case 4: r = ~v; break;
    case 5: r = v * v; break;
    case 6: r = __popc(v); break;
    default: r = 7;
    }
    out[i] = r;
}
__device__ __noinline__ u32 mix(u32 a, u32 b) { return a * 31 + (b ^ (a >> 3)); }
__device__ __noinline__ float scale(float a, double b) { return a * (float)b; }
__device__ __noinline__ void put(u32 *p, u32 v) { *p = v; }
__device__ __noinline__ u32 fib(u32 k) { return k < 2 ? k : fib(k - 1) + fib(k - 2); }
KERNEL noinline_calls(ARGS) {
    u64 i = gid();
    u32 v = in[i];
    put(out + i, mix(v, fib(v & 15)) + __float_as_uint(scale(f_of(v), 0.5)));
}
extern "C" __global__ void __launch_bounds__(128, 2) launch_bounds(ARGS) {
    u64 i = gid();
    out[i] = in[i] * (u32)blockDim.x + (u32)i;
}
KERNEL local_array(ARGS) {
    u64 i = gid();
    u32 a[16];
    for (int k = 0; k < 16; k++) a[k] = in[i] * (k + 1);
    for (int k = 0; k < 16; k++) a[(in[i] >> k) & 15] += k;
    out[i] = a[in[i] & 15] ^ a[(in[i] >> 4) & 15];
}
KERNEL grid3d(ARGS) {
    u32 bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    u32 tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    u32 t = bx * (blockDim.x * blockDim.y * blockDim.z) + tx;
    out[t] = threadIdx.x | (threadIdx.y << 4) | (threadIdx.z << 8) | (blockIdx.x << 12) | (blockIdx.y << 16) |
             (blockIdx.z << 20);
}
__constant__ u32 table[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};
__device__ u32 counter;
KERNEL const_and_global(ARGS) {
    u64 i = gid();
    out[i] = table[in[i] & 15] * in[i];
    atomicAdd(&counter, 1);
    __threadfence();
    if (i == 0) out[n] = 0x600d;
}
KERNEL vector_access(ARGS) {
    u64 i = gid();
    uint4 v = ((const uint4 *)in)[i];
    float4 f = make_float4(f_of(v.x), f_of(v.y), f_of(v.z), f_of(v.w));
    ((uint4 *)out)[2 * i] = make_uint4(v.w, v.z, v.y, v.x);
    ((float4 *)out)[2 * i + 1] = make_float4(f.x + f.y, f.y * f.z, f.z - f.w, f.w);
}

// ---- 16-bit floats: f16 and bf16, one or two in a register (cuda_fp16.h, cuda_bf16.h)
// f16s with |x| in [2^-7, 2^9) (products may overflow), bf16s with |x| in [2^-7, 2^9); every
// mantissa bit random.
__device__ __forceinline__ __half h_of(u32 w) {
    return __ushort_as_half((unsigned short)((w & 0x83ffu) | ((((w >> 10) & 15u) + 8u) << 10)));
}
__device__ __forceinline__ __nv_bfloat16 bf_of(u32 w) {
    return __ushort_as_bfloat16((unsigned short)((w & 0x807fu) | ((((w >> 7) & 15u) + 120u) << 7)));
}
__device__ __forceinline__ u32 h2_bits(__half2 v) { return *(u32 *)&v; }
__device__ __forceinline__ u32 bf2_bits(__nv_bfloat162 v) { return *(u32 *)&v; }
// Two 16-bit results as one word, the first low.
__device__ __forceinline__ u32 pair(unsigned short lo, unsigned short hi) { return lo | ((u32)hi << 16); }
#define H(x) __half_as_ushort(x)
#define BF(x) __bfloat16_as_ushort(x)
// One kernel a format: scalar and paired arithmetic, NaN-aware min/max, comparisons; a NaN
// and an infinity among the inputs.
#define HALF_ARITH(NAME, T, T2, OF, BITS, BITS2, NAN, INF)                                            \
    KERNEL NAME(ARGS) {                                                                             \
        u64 i = gid();                                                                              \
        if (i >= n) return;                                                                         \
        u32 w = in[2 * i], v = in[2 * i + 1];                                                      \
        T a = OF(w), b = OF(w >> 16), c = OF(v);                                                    \
        if (i % 16 == 5) c = NAN;                                                                   \
        if (i % 16 == 6) b = INF;                                                                   \
        T2 x = make_##T2(a, b), y = make_##T2(c, a);                                                \
        u32 *o = out + 8 * i;                                                                       \
        o[0] = pair(BITS(__hadd(a, b)), BITS(__hsub(a, b)));                                        \
        o[1] = pair(BITS(__hmul(a, b)), BITS(__hfma(a, b, c)));                                     \
        o[2] = pair(BITS(__hmin(a, c)), BITS(__hmax(b, c)));                                        \
        o[3] = pair(BITS(__hmin_nan(a, c)), BITS(__hmax_nan(b, c)));                                \
        o[4] = pair(BITS(__hneg(a)), BITS(__habs(__hneg(b))));                                      \
        o[5] = BITS2(__hfma2(x, y, __hadd2(x, y)));                                                 \
        o[6] = BITS2(__hsub2(x, y)) ^ BITS2(__hmul2(x, y));                                         \
        o[7] = BITS2(__hlt2(x, y)) | __hlt(a, b) | (__hgeu(b, c) << 1) | (__hisnan(c) << 2) |      \
               (__hbgt2(x, y) << 3) | (__heq(a, a) << 4) | (__hne(b, c) << 5);                     \
    }
__device__ __forceinline__ __half2 make___half2(__half a, __half b) { return __halves2half2(a, b); }
__device__ __forceinline__ __nv_bfloat162 make___nv_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __halves2bfloat162(a, b);
}
HALF_ARITH(half_arith, __half, __half2, h_of, H, h2_bits, __ushort_as_half(0x7e01), __ushort_as_half(0x7c00))
HALF_ARITH(bf16_arith, __nv_bfloat16, __nv_bfloat162, bf_of, BF, bf2_bits, __ushort_as_bfloat16(0x7fc1),
           __ushort_as_bfloat16(0x7f80))
KERNEL half_convert(ARGS) {
    u64 i = gid();
    if (i >= n) return;
    u32 w = in[4 * i], v = in[4 * i + 1];
    float f = f_of(w), g = f_of(v);
    double d = d_of(in[4 * i + 2], in[4 * i + 3]);
    __half a = h_of(v);
    __nv_bfloat16 p = bf_of(w);
    int s = (int)in[4 * i + 2] >> 8;
    u32 *o = out + 12 * i;
    o[0] = pair(H(__float2half_rn(f)), H(__float2half_rz(f)));
    o[1] = pair(H(__float2half_rd(f)), H(__float2half_ru(f)));
    o[2] = pair(BF(__float2bfloat16_rn(f)), BF(__float2bfloat16_rz(f)));
    o[3] = pair(H(__double2half(d)), H(__int2half_rn(s)));
    o[4] = pair(H(__int2half_rz(s)), H(__uint2half_rd((u32)s)));
    o[5] = __float_as_uint(__half2float(a));
    o[6] = __float_as_uint(__bfloat162float(p));
    o[7] = (u32)__half2int_rn(a) ^ ((u32)__half2int_rz(__hneg(a)) << 8);
    o[8] = (u32)__half2int_rd(a) ^ ((u32)__half2uint_ru(a) << 12);
    o[9] = h2_bits(__floats2half2_rn(f, g));
    o[10] = bf2_bits(__floats2bfloat162_rn(f, g));
    o[11] = pair(H(hrint(a)), H(htrunc(__hneg(a)))) ^ pair(H(hfloor(a)), H(hceil(a)));
}
// Atomic sums that are exact in any order: counts of ones (and twos) in f16 and bf16.
KERNEL half_atomic(ARGS) {
    u64 i = gid();
    __half *h = (__half *)out;
    atomicAdd(h + (i & 3), __ushort_as_half(0x3c00));
    atomicAdd((__half2 *)out + 2, __halves2half2(__ushort_as_half(0x3c00), __ushort_as_half(0x4000)));
    atomicAdd((__nv_bfloat16 *)out + 6 + (i & 1), __ushort_as_bfloat16(0x3f80));
    atomicAdd((__nv_bfloat162 *)out + 4, __halves2bfloat162(__ushort_as_bfloat16(0x3f80), __ushort_as_bfloat16(0x4000)));
}

// ---- asynchronous copies into shared memory (cp.async): whole, zero-filled, a block's
KERNEL async_copy(ARGS) {
    __shared__ alignas(16) u32 a[512];
    __shared__ alignas(16) u32 b[256];
    __shared__ alignas(16) u32 c[256];
    u32 t = threadIdx.x;
    const u32 *base = in + 512 * blockIdx.x;
    __pipeline_memcpy_async(&a[4 * t], &base[4 * t], 16);
    __pipeline_memcpy_async(&b[2 * t], &base[2 * t], 8, 4); // the last 4 bytes zero
    __pipeline_commit();
    __pipeline_wait_prior(0);
    auto block = cooperative_groups::this_thread_block();
    cooperative_groups::memcpy_async(block, c, base + 256, sizeof(u32) * 256);
    cooperative_groups::wait(block);
    u32 *o = out + 4 * gid();
    o[0] = a[(4 * t + 5) % 512];
    o[1] = b[2 * t] + 3 * b[2 * t + 1];
    o[2] = c[(7 * t) % 256];
    o[3] = b[(2 * t + 3) % 256] ^ a[(13 * t) % 512];
}

// ---- device printf (vprintf): integers, floats, strings and characters as C prints them; its
// result, the number of arguments
KERNEL device_printf(ARGS) {
    u64 i = gid();
    out[i] = in[i] ^ 0x5a5a5a5au;
    if (i != 0) return;
    int r = printf("printf: %d %u %x %X %o|%5d|%-5d|%05d|%+d|% d|%ld|%llu|%lx|%#x|%.3d\n", (int)in[1], in[2],
                   in[3], in[4], in[5] & 0777, (int)(in[6] % 1000), (int)(in[7] % 100), (int)(in[8] % 1000) - 500,
                   (int)(in[9] % 50) - 25, 42, -((long)in[10] << 12), ((u64)in[11] << 32) | in[12],
                   (u64)in[13] * 12345ull, in[14] & 0xfff, 7);
    printf("printf: %f %.3f %e %.2E %g %g %g|%10.4f|%-12.3e|%G\n", f_of(in[15]), d_of(in[16], in[17]), f_of(in[18]),
           d_of(in[19], in[20]), 1e-5, 123456789.0, f_of(in[21]), f_of(in[22]), d_of(in[23], in[24]), -0.0);
    printf("printf: %c%c %s|%8s|%.2s %%\n", 'o', 'k', "a string", "right", "cut");
    out[0] = (u32)r;
}
// ---- 16-bit compare-and-swap (atom.cas.b16): each thread sets its own half-word once
KERNEL atomic_cas16(ARGS) {
    u64 i = gid();
    unsigned short *h = (unsigned short *)out;
    unsigned short v = (unsigned short)(in[i] | 1);
    unsigned short old = atomicCAS(h + i, (unsigned short)0, v);
    unsigned short again = atomicCAS(h + i, (unsigned short)0, (unsigned short)7);
    out[32 + i] = old | ((u32)again << 16);
}
// ---- prmt's modes, address-space tests, cache hints and policies, a pause, relu into halves
#define PRMT(MODE, A, B, C, D) asm("prmt.b32." MODE " %0, %1, %2, %3;" : "=r"(D) : "r"(A), "r"(B), "r"(C))
KERNEL misc_ops(ARGS) {
    __shared__ u32 s[64];
    u64 i = gid();
    u32 a = in[3 * i], b = in[3 * i + 1], c = in[3 * i + 2];
    u32 *o = out + 12 * i;
    PRMT("f4e", a, b, c, o[0]);
    PRMT("b4e", a, b, c, o[1]);
    PRMT("rc8", a, b, c, o[2]);
    PRMT("ecl", a, b, c, o[3]);
    PRMT("ecr", a, b, c, o[4]);
    PRMT("rc16", a, b, c, o[5]);
    u32 local[4];
    s[threadIdx.x] = a;
    o[6] = __isGlobal(in) | __isShared(&s[threadIdx.x]) << 1 | __isLocal(local) << 2 | __isGlobal(s) << 3 |
           __isShared(in) << 4 | __isLocal(in) << 5;
    local[i & 3] = o[6];
    u64 policy;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0;" : "=l"(policy));
    u32 v, w;
    asm volatile("ld.global.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(v) : "l"(in + 3 * i), "l"(policy));
    asm volatile("ld.global.nc.L1::no_allocate.b32 %0, [%1];" : "=r"(w) : "l"(in + 3 * i + 1));
    asm volatile("prefetch.global.L2 [%0];" ::"l"(in + 3 * i + 2));
    __nanosleep(10);
    o[7] = v ^ w ^ local[i & 3];
    __half x = h_of(a), y = h_of(b), z = h_of(c);
    o[8] = pair(H(__hfma_relu(x, y, z)), H(__hfma_relu(__hneg(x), y, z)));
    unsigned short r;
    asm("cvt.rn.relu.f16.f32 %0, %1;" : "=h"(r) : "f"((i & 1) ? f_of(a) : -f_of(a)));
    u32 r2;
    asm("cvt.rn.relu.bf16x2.f32 %0, %1, %2;" : "=r"(r2) : "f"(f_of(b)), "f"(-f_of(c)));
    o[9] = r;
    o[10] = r2;
    o[11] = (u32)i;
}

// ---- CUB's block and warp algorithms (blocks of 128): a radix sort of 4 keys a thread, an
// exclusive scan, warp sums, and loads and stores through a transposing shared tile
KERNEL cub_block_sort(ARGS) {
    using Sort = cub::BlockRadixSort<u32, 128, 4>;
    __shared__ typename Sort::TempStorage temp;
    u32 keys[4];
    for (int k = 0; k < 4; k++) keys[k] = in[blockIdx.x * 512 + threadIdx.x * 4 + k];
    Sort(temp).Sort(keys);
    for (int k = 0; k < 4; k++) out[blockIdx.x * 512 + threadIdx.x * 4 + k] = keys[k];
}
KERNEL cub_block_scan(ARGS) {
    using Scan = cub::BlockScan<u32, 128>;
    __shared__ typename Scan::TempStorage temp;
    u32 r;
    Scan(temp).ExclusiveSum(in[gid()], r);
    out[gid()] = r;
}
KERNEL cub_warp_reduce(ARGS) {
    using Reduce = cub::WarpReduce<u32>;
    __shared__ typename Reduce::TempStorage temp[4];
    u32 s = Reduce(temp[threadIdx.x / 32]).Sum(in[gid()]);
    if (lane() == 0) out[gid() / 32] = s;
}
KERNEL cub_load_store(ARGS) {
    using Load = cub::BlockLoad<u32, 128, 4, cub::BLOCK_LOAD_TRANSPOSE>;
    using Store = cub::BlockStore<u32, 128, 4, cub::BLOCK_STORE_TRANSPOSE>;
    __shared__ union {
        typename Load::TempStorage load;
        typename Store::TempStorage store;
    } temp;
    u32 items[4];
    Load(temp.load).Load(in + blockIdx.x * 512, items);
    __syncthreads();
    for (int k = 0; k < 4; k++) items[k] = items[k] * 3 + threadIdx.x;
    Store(temp.store).Store(out + blockIdx.x * 512, items);
}
// ---- bmsk and szext in both modes, positions and widths past 31 among them
KERNEL bit_masks(ARGS) {
    u64 i = gid();
    u32 a = in[2 * i] % 40, b = in[2 * i + 1] % 40, v = in[2 * i] ^ in[2 * i + 1];
    u32 *o = out + 4 * i;
    asm("bmsk.clamp.b32 %0, %1, %2;" : "=r"(o[0]) : "r"(a), "r"(b));
    asm("bmsk.wrap.b32 %0, %1, %2;" : "=r"(o[1]) : "r"(a), "r"(b));
    asm("szext.clamp.s32 %0, %1, %2;" : "=r"(o[2]) : "r"(v), "r"(b));
    asm("szext.wrap.u32 %0, %1, %2;" : "=r"(o[3]) : "r"(v), "r"(a));
}

// ---- SIMD video instructions, in four forms each: unsigned, merged; signed and saturated;
// signed into unsigned, saturated; and summed onto c (as __vsadu4 sums). Then the intrinsics
// that nvcc writes with them.
#define VIDEO(op, form) asm(#op form " %0, %1, %2, %3;" : "=r"(o[k]) : "r"(a), "r"(b), "r"(c)); k++;
#define VIDEO_FORMS(op) \
    VIDEO(op, ".u32.u32.u32") VIDEO(op, ".s32.s32.s32.sat") VIDEO(op, ".u32.s32.s32.sat") VIDEO(op, ".s32.u32.s32.add")
KERNEL simd_video(ARGS) {
    u64 i = gid();
    u32 a = in[3 * i], b = in[3 * i + 1], c = in[3 * i + 2];
    u32 *o = out + 52 * i;
    int k = 0;
    VIDEO_FORMS(vadd4) VIDEO_FORMS(vsub4) VIDEO_FORMS(vavrg4) VIDEO_FORMS(vabsdiff4) VIDEO_FORMS(vmin4) VIDEO_FORMS(vmax4)
    VIDEO_FORMS(vadd2) VIDEO_FORMS(vsub2) VIDEO_FORMS(vavrg2) VIDEO_FORMS(vabsdiff2) VIDEO_FORMS(vmin2) VIDEO_FORMS(vmax2)
    o[48] = __vabsdiffu4(a, b); o[49] = __vsadu4(a, b); o[50] = __vabsdiffu2(a, b); o[51] = __vsadu2(a, b);
}

// ---- elect.sync: the leader of the lanes a mask names, with its lane and whether it is this one
__device__ __forceinline__ u32 elect(u32 mask, u32 &leads) {
    u32 lane;
    asm volatile("{\n\t.reg .pred P;\n\telect.sync %0|P, %2;\n\tselp.u32 %1, 1, 0, P;\n}"
                 : "=r"(lane), "=r"(leads) : "r"(mask));
    return lane;
}
KERNEL elect_leader(ARGS) {
    u32 v = in[gid()];
    bool take = (v >> 3) & 1;
    u32 m = __ballot_sync(FULL, take), leads = 0, first = 99;
    if (take) first = elect(m, leads);
    u32 whole, anyone = elect(FULL, whole), sunk;
    // As CUB's transform kernel spells it: the lane thrown away.
    asm volatile("{\n\t.reg .pred P;\n\telect.sync _|P, %1;\n\tselp.u32 %0, 1, 0, P;\n}" : "=r"(sunk) : "r"(FULL));
    out[gid()] = first | leads << 8 | anyone << 9 | whole << 14 | sunk << 15;
}

// ---- 8-bit floats (cuda_fp8.h): f32 pairs into e4m3 and e5m2, saturated; back into f16 pairs;
// an f16 pair into e4m3; a NaN and an infinity among the inputs
KERNEL fp8_convert(ARGS) {
    u64 i = gid();
    float2 f = make_float2(f_of(in[2 * i]), f_of(in[2 * i + 1]));
    if (i % 16 == 3) f.x = __int_as_float(0x7fc00000);
    if (i % 16 == 4) f.y = __int_as_float(0xff800000);
    __nv_fp8x2_storage_t a = __nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, __NV_E4M3);
    __nv_fp8x2_storage_t b = __nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, __NV_E5M2);
    __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(a, __NV_E4M3), g = __nv_cvt_fp8x2_to_halfraw2(b, __NV_E5M2);
    __half2_raw p;
    p.x = __half_as_ushort(h_of(in[2 * i]));
    p.y = __half_as_ushort(h_of(in[2 * i + 1]));
    u32 *o = out + 4 * i;
    o[0] = a | (u32)b << 16;
    o[1] = h.x | (u32)h.y << 16;
    o[2] = g.x | (u32)g.y << 16;
    o[3] = __nv_cvt_halfraw2_to_fp8x2(p, __NV_SATFINITE, __NV_E4M3);
}

// ---- cooperative groups: a coalesced group of the lanes an odd value took into a branch (its
// first lane's value, each lane's rank, its sum), and tiles of 8 (a scan, a max, any, ballot)
KERNEL coop_groups(ARGS) {
    namespace cg = cooperative_groups;
    u32 v = in[gid()] >> 24;
    if (v & 1) {
        cg::coalesced_group g = cg::coalesced_threads();
        out[2 * gid()] = g.shfl(v, 0) + g.thread_rank() + cg::reduce(g, v, cg::plus<u32>());
    }
    cg::thread_block_tile<8> tile = cg::tiled_partition<8>(cg::this_thread_block());
    u32 s = cg::inclusive_scan(tile, v);
    out[2 * gid() + 1] = s + cg::reduce(tile, v, cg::greater<u32>()) + tile.any(v > 200) + (tile.ballot(v & 2) << 8);
}

// ---- the carry chain (add.cc/addc, sub.cc/subc, mad.lo.cc/madc.hi) on 64-bit numbers made of
// words, and CUDA's double math functions, whose slow paths (a huge sine's argument reduction)
// use the same chain
KERNEL carry_chain(ARGS) {
    u64 i = gid();
    u32 a0 = in[4 * i], a1 = in[4 * i + 1], b0 = in[4 * i + 2], b1 = in[4 * i + 3];
    u32 *o = out + 8 * i;
    asm("add.cc.u32 %0, %3, %4;\n\taddc.cc.u32 %1, %5, %6;\n\taddc.u32 %2, 0, 0;"
        : "=r"(o[0]), "=r"(o[1]), "=r"(o[2]) : "r"(a0), "r"(b0), "r"(a1), "r"(b1));
    asm("sub.cc.u32 %0, %3, %4;\n\tsubc.cc.u32 %1, %5, %6;\n\tsubc.u32 %2, 0, 0;"
        : "=r"(o[3]), "=r"(o[4]), "=r"(o[5]) : "r"(a0), "r"(b0), "r"(a1), "r"(b1));
    asm("mad.lo.cc.u32 %0, %2, %3, %4;\n\tmadc.hi.u32 %1, %2, %3, %5;"
        : "=r"(o[6]), "=r"(o[7]) : "r"(a0), "r"(b0), "r"(a1), "r"(b1));
}
KERNEL double_math(ARGS) {
    u64 i = gid();
    double x = d_of(in[2 * i], in[2 * i + 1]);
    double *o = (double *)out + 6 * i;
    o[0] = sin(x);
    o[1] = cos(x * 1e12);
    o[2] = pow(fabs(x), 0.37);
    o[3] = exp(x * 0x1p-27);
    o[4] = log(fabs(x));
    o[5] = tanh(x * 0x1p-30);
}

// ---- mbarrier: cuda::barrier's phases (arrive and wait, a token's wait) across the block's
// four warps, and a raw barrier that half the block arrives at while every thread waits on its
// phase 0 by parity (a thread that waits yields to the threads it waits for)
#pragma nv_diag_suppress static_var_with_dynamic_init
__device__ __forceinline__ u32 smem(const void *p) { return (u32)__cvta_generic_to_shared(p); }
KERNEL mbarrier_phases(ARGS) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ u64 raw;
    __shared__ u32 s[128];
    u32 t = threadIdx.x;
    if (t == 0) {
        init(&bar, blockDim.x);
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(&raw)), "r"(blockDim.x / 2));
    }
    __syncthreads();
    s[t] = in[gid()];
    bar.arrive_and_wait();
    u32 v = s[(t + 37) % blockDim.x];
    bar.arrive_and_wait();
    s[t] = v ^ (t * 0x9e3779b9u);
    auto token = bar.arrive();
    bar.wait(std::move(token));
    u32 w = s[(t + 64) % blockDim.x];
    if (t & 1) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(&raw)));
    u32 done = 0;
    while (!done)
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0;\n\t"
                     "selp.b32 %0, 1, 0, p;\n\t}" : "=r"(done) : "r"(smem(&raw)));
    out[gid()] = v + w;
}
// cuda::memcpy_async into shared memory, its completion tracked by a cuda::barrier
// (cp.async, then cp.async.mbarrier.arrive)
KERNEL memcpy_async_barrier(ARGS) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ alignas(16) u32 s[256];
    auto block = cooperative_groups::this_thread_block();
    if (block.thread_rank() == 0) init(&bar, block.size());
    block.sync();
    cuda::memcpy_async(block, s, in + blockIdx.x * 256, sizeof(u32) * 256, bar);
    bar.arrive_and_wait();
    out[gid()] = s[(threadIdx.x + 5) % 256] * 7 + threadIdx.x;
}
// Bulk copies (sm_90): cuda::memcpy_async of 16-byte-aligned words into shared memory, its
// bytes a transaction of the barrier (cp.async.bulk, mbarrier.expect_tx), and the results back
// to global memory by one bulk copy of a bulk group
KERNEL bulk_copy(ARGS) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ alignas(128) u32 s[256];
    u32 t = threadIdx.x;
    if (t == 0) init(&bar, blockDim.x);
    __syncthreads();
    if (t == 0) cuda::memcpy_async(s, in + blockIdx.x * 256, cuda::aligned_size_t<16>(sizeof(u32) * 256), bar);
    bar.wait(bar.arrive());
    u32 v = s[(t + 5) % 256] * 7 + t;
    __syncthreads();
    s[t] = v;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (t == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 1024;"
                     ::"l"(out + blockIdx.x * 256), "r"(smem(s)) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}

// ---- tensor cores (wmma): each warp of a block multiplies one pair of tiles. The values are
// small multiples of 1/2, so every product and sum is exact: the tensor cores' own order and
// rounding of the sums cannot show.
__device__ __forceinline__ float small(u32 w) { return (float)((int)(w & 15) - 8) * 0.5f; }
namespace wm = nvcuda::wmma;
KERNEL wmma_tiles(ARGS) {
    __shared__ __align__(32) __half ha[4][32 * 24];
    __shared__ __align__(32) __half hb[4][32 * 24];
    __shared__ __align__(32) __nv_bfloat16 ba[8 * 16], bb[16 * 32];
    __shared__ __align__(32) float fc[4][256];
    __shared__ __align__(32) __half hc[256];
    u32 w = threadIdx.x / 32, l = lane();
    const u32 *src = in + (blockIdx.x * 4 + w) * 2048;
    u32 *dst = out + (blockIdx.x * 4 + w) * 256;
    for (u32 i = l; i < 32 * 24; i += 32) {
        ha[w][i] = __float2half(small(src[i]));
        hb[w][i] = __float2half(small(src[1024 + i]));
    }
    for (u32 i = l; i < 256; i += 32) fc[w][i] = small(src[800 + i]) * 4.0f;
    if (w == 3) {
        for (u32 i = l; i < 8 * 16; i += 32) ba[i] = __float2bfloat16(small(src[1800 + i]));
        for (u32 i = l; i < 16 * 32; i += 32) bb[i] = __float2bfloat16(small(src[1500 + i]));
    }
    if (w == 1)
        for (u32 i = l; i < 256; i += 32) hc[i] = __float2half(small(src[1900 + i]));
    __syncwarp();
    if (w == 0) {
        // f16 by rows times f16 by columns plus a doubled f32 C; D stored by columns.
        wm::fragment<wm::matrix_a, 16, 16, 16, __half, wm::row_major> a;
        wm::fragment<wm::matrix_b, 16, 16, 16, __half, wm::col_major> b;
        wm::fragment<wm::accumulator, 16, 16, 16, float> c;
        wm::load_matrix_sync(a, ha[w], 16);
        wm::load_matrix_sync(b, hb[w], 16);
        wm::load_matrix_sync(c, fc[w], 16, wm::mem_row_major);
        for (int i = 0; i < c.num_elements; i++) c.x[i] *= 2.0f;
        wm::mma_sync(c, a, b, c);
        wm::store_matrix_sync((float *)dst, c, 16, wm::mem_col_major);
    } else if (w == 1) {
        // By columns times by rows into an f16 accumulator, padded rows (24).
        wm::fragment<wm::matrix_a, 16, 16, 16, __half, wm::col_major> a;
        wm::fragment<wm::matrix_b, 16, 16, 16, __half, wm::row_major> b;
        wm::fragment<wm::accumulator, 16, 16, 16, __half> c;
        wm::load_matrix_sync(a, ha[w], 24);
        wm::load_matrix_sync(b, hb[w], 24);
        wm::load_matrix_sync(c, hc, 16, wm::mem_row_major);
        wm::mma_sync(c, a, b, c);
        wm::store_matrix_sync((__half *)dst, c, 16, wm::mem_row_major);
    } else if (w == 2) {
        // 32 x 8 x 16, from zero, twice: D = A B + A B.
        wm::fragment<wm::matrix_a, 32, 8, 16, __half, wm::row_major> a;
        wm::fragment<wm::matrix_b, 32, 8, 16, __half, wm::row_major> b;
        wm::fragment<wm::accumulator, 32, 8, 16, float> c;
        wm::fill_fragment(c, 0.0f);
        wm::load_matrix_sync(a, ha[w], 24);
        wm::load_matrix_sync(b, hb[w], 8);
        wm::mma_sync(c, a, b, c);
        wm::mma_sync(c, a, b, c);
        wm::store_matrix_sync((float *)dst, c, 8, wm::mem_row_major);
    } else {
        // bf16, 8 x 32 x 16, C from f32 by columns, D by rows.
        wm::fragment<wm::matrix_a, 8, 32, 16, __nv_bfloat16, wm::row_major> a;
        wm::fragment<wm::matrix_b, 8, 32, 16, __nv_bfloat16, wm::col_major> b;
        wm::fragment<wm::accumulator, 8, 32, 16, float> c;
        wm::load_matrix_sync(a, ba, 16);
        wm::load_matrix_sync(b, bb, 16);
        wm::load_matrix_sync(c, fc[w], 8, wm::mem_col_major);
        wm::mma_sync(c, a, b, c);
        wm::store_matrix_sync((float *)dst, c, 32, wm::mem_row_major);
    }
}

// ---- tensor cores (mma.sync, ldmatrix): each warp loads its tiles from shared memory with
// ldmatrix, as the PTX ISA lays the fragments out, and multiplies them with mma.sync; each lane
// stores the elements of D it holds where the ISA says they sit. Values as in wmma_tiles.
__device__ __forceinline__ void ldsm4(u32 (&r)[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem(p)));
}
__device__ __forceinline__ void ldsm2(u32 (&r)[2], const void *p, bool trans) {
    if (trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(smem(p)));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(smem(p)));
}
KERNEL mma_sync_tiles(ARGS) {
    __shared__ __align__(16) unsigned short sa[2][16 * 16], sb[2][16 * 16], sc[2][16 * 8];
    u32 w = threadIdx.x / 32, l = lane(), g = l / 4, t = l % 4;
    const u32 *src = in + (blockIdx.x * 2 + w) * 1024;
    u32 *dst = out + (blockIdx.x * 2 + w) * 256;
    bool bf = w == 1;  // warp 0: f16, warp 1: bf16
    auto bits = [&](float v) -> unsigned short {
        return bf ? __bfloat16_as_ushort(__float2bfloat16(v)) : __half_as_ushort(__float2half(v));
    };
    // A by rows; B by columns in warp 0 (sb holds B transposed) and by rows in warp 1.
    for (u32 i = l; i < 256; i += 32) {
        sa[w][i] = bits(small(src[i]));
        sb[w][i] = bits(small(src[256 + i]));
    }
    for (u32 i = l; i < 128; i += 32) sc[w][i] = __half_as_ushort(__float2half(small(src[512 + i])));
    __syncwarp();
    // A's four 8x8 quarters: lane 8 q + r gives row r of quarter q (rows 8 (q % 2) on, columns 8 (q / 2) on).
    u32 a[4], b[2], b8[2], a8[4];
    u32 q = l / 8, r = l % 8;
    ldsm4(a, &sa[w][(r + 8 * (q % 2)) * 16 + 8 * (q / 2)]);
    if (!bf)  // B transposed (8 rows of 16): lanes 0-15 give rows r of its two halves along k.
        ldsm2(b, &sb[w][(l % 8) * 16 + 8 * ((l / 8) % 2)], false);
    else  // B by rows (16 rows of 8): lanes 0-15 give rows 0-15, transposed on the way.
        ldsm2(b, &sb[w][(l % 16) * 8], true);
    float c[4], d[4];
    for (int i = 0; i < 4; i++) c[i] = small(src[640 + (g + 8 * (i / 2)) * 8 + 2 * t + i % 2]) * 4.0f;
    if (!bf)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int i = 0; i < 4; i++) dst[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = __float_as_uint(d[i]);
    // m16n8k8 into f16, warp 0 only: A's left half (quarters 0 and 1), B's first 8 rows along k,
    // C of halves from sc, read as pairs.
    if (!bf) {
        ldsm2(b8, &sb[w][(l % 8) * 16], false);  // lanes 8-15's addresses are not read by .x1 halves
        ldsm4(a8, &sa[w][(r + 8 * (q % 2)) * 16 + 8 * (q / 2)]);
        const u32 *cp = (const u32 *)sc[w];
        u32 c8[2] = {cp[g * 4 + t], cp[(g + 8) * 4 + t]}, d8[2];
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3}, {%4}, {%5, %6};"
                     : "=r"(d8[0]), "=r"(d8[1]) : "r"(a8[0]), "r"(a8[1]), "r"(b8[0]), "r"(c8[0]), "r"(c8[1]));
        dst[128 + g * 4 + t] = d8[0];
        dst[128 + (g + 8) * 4 + t] = d8[1];
    }
}

// ---- tensor cores, 8-bit integers (mma.sync into s32): warp 0 multiplies s8 by s8 (m16n8k32,
// wrapping), warp 1 u8 by s8 (m16n8k16) with .satfinite, C near s32's limits. Each lane builds
// its fragments from bytes of `in` where the PTX ISA puts them, and stores D where it sits.
KERNEL mma_sync_int(ARGS) {
    u32 w = threadIdx.x / 32, l = lane(), g = l / 4, t = l % 4;
    const u32 *src = in + (blockIdx.x * 2 + w) * 1024;
    u32 *dst = out + (blockIdx.x * 2 + w) * 128;
    const unsigned char *bytes = (const unsigned char *)src;
    const int K = w == 0 ? 32 : 16;
    // A (16 x K) by rows from byte 0; B (K x 8) by columns from byte 1024; C by rows from word 512.
    auto a_reg = [&](int r) {
        u32 v = 0;
        for (int j = 0; j < 4; j++) v |= (u32)bytes[(g + 8 * (r % 2)) * K + 4 * t + j + K / 2 * (r / 2)] << (8 * j);
        return v;
    };
    auto b_reg = [&](int r) {
        u32 v = 0;
        for (int j = 0; j < 4; j++) v |= (u32)bytes[1024 + g * K + 4 * t + j + K / 2 * r] << (8 * j);
        return v;
    };
    int c[4], d[4];
    for (int i = 0; i < 4; i++) {
        int at = (g + 8 * (i / 2)) * 8 + 2 * t + i % 2;
        // Warp 1's C lies within 2^20 of s32's limits, so that some sums saturate.
        c[i] = w == 0 ? (int)src[512 + at] : (int)((src[512 + at] & 0x800fffffu) ^ (src[512 + at] >> 31 ? 0 : 0x7ff00000u));
    }
    if (w == 0)
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                     : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                     : "r"(a_reg(0)), "r"(a_reg(1)), "r"(a_reg(2)), "r"(a_reg(3)), "r"(b_reg(0)), "r"(b_reg(1)),
                       "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.satfinite.s32.u8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"
                     : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                     : "r"(a_reg(0)), "r"(a_reg(1)), "r"(b_reg(0)), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int i = 0; i < 4; i++) dst[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = (u32)d[i];
}

// ---- tensor cores, tf32 (mma.sync m16n8k8 and m16n8k4 into f32): fragments built where the
// PTX ISA puts them from small values rounded by cvt.rna.tf32.f32; and cvt.rna.tf32.f32 of
// infinities, NaNs, subnormals and random words.
__device__ __forceinline__ u32 tf32(float f) {
    u32 r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
    return r;
}
KERNEL mma_sync_tf32(ARGS) {
    u32 l = lane(), g = l / 4, t = l % 4;
    const u32 *src = in + blockIdx.x * 1024;
    u32 *dst = out + blockIdx.x * 512;
    for (int i = 0; i < 8; i++) {
        u32 w = src[512 + l * 8 + i];
        u32 bits = i == 0 ? 0x7f800000u | (w & 0x80000000u) : i == 1 ? 0x7fc00000u | w : i == 2 ? w & 0x807fffffu : w;
        dst[256 + l * 8 + i] = tf32(__uint_as_float(bits));
    }
    // A (16 x 8) by rows from word 0, B (8 x 8) by rows from word 128, C by rows from word 192.
    auto a = [&](int row, int col) { return tf32(small(src[row * 8 + col])); };
    auto b = [&](int k, int n) { return tf32(small(src[128 + k * 8 + n])); };
    float c[4], d[4], d4[4];
    for (int i = 0; i < 4; i++) c[i] = small(src[192 + (g + 8 * (i / 2)) * 8 + 2 * t + i % 2]) * 4.0f;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a(g, t)), "r"(a(g + 8, t)), "r"(a(g, t + 4)), "r"(a(g + 8, t + 4)), "r"(b(t, g)), "r"(b(t + 4, g)),
                   "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"
                 : "=f"(d4[0]), "=f"(d4[1]), "=f"(d4[2]), "=f"(d4[3])
                 : "r"(a(g, t)), "r"(a(g + 8, t)), "r"(b(t, g)), "f"(0.0f), "f"(0.0f), "f"(0.0f), "f"(0.0f));
    for (int i = 0; i < 4; i++) {
        dst[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = __float_as_uint(d[i]);
        dst[128 + (g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = __float_as_uint(d4[i]);
    }
}

// ---- stmatrix (sm_90): each warp's four words a lane written as 8x8 matrices of halves, each
// row at the address its lane gives (rows 32 bytes apart, the gaps keeping their fill): x4,
// x4 transposed, x2 and x1 transposed; then the x4 tile read back with ldmatrix.
KERNEL stmatrix_tiles(ARGS) {
    __shared__ __align__(16) u32 tiles[2][4][32 * 8];
    u32 w = threadIdx.x / 32, l = lane();
    u32 r[4], q[4], *tile = tiles[w][0];
    for (int i = 0; i < 4; i++) r[i] = in[w * 128 + 4 * l + i];
    for (int k = l; k < 4 * 32 * 8; k += 32) tile[k] = 0xabcd0000u | k;
    __syncwarp();
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 :: "r"(smem(&tiles[w][0][8 * l])), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
                 :: "r"(smem(&tiles[w][1][8 * l])), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
    asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};"
                 :: "r"(smem(&tiles[w][2][8 * l])), "r"(r[1]), "r"(r[3]) : "memory");
    asm volatile("stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};"
                 :: "r"(smem(&tiles[w][3][8 * l])), "r"(r[2]) : "memory");
    __syncwarp();
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(q[0]), "=r"(q[1]), "=r"(q[2]), "=r"(q[3]) : "r"(smem(&tiles[w][0][8 * l])));
    u32 *dst = out + w * (4 * 32 * 8 + 128);
    for (int k = l; k < 4 * 32 * 8; k += 32) dst[k] = tile[k];
    for (int i = 0; i < 4; i++) dst[4 * 32 * 8 + 4 * l + i] = q[i];
}

// ---- calls through addresses: device function pointers from an initialised table, a lane's
// own, and virtual functions of objects on the stack; lanes of a warp call different functions
typedef u32 (*unary_fn)(u32);
__device__ __noinline__ u32 fp_rotate(u32 x) { return (x << 7) | (x >> 25); }
__device__ __noinline__ u32 fp_mix(u32 x) { return x * 0x9e3779b9u ^ (x >> 13); }
__device__ __noinline__ u32 fp_not(u32 x) { return ~x + 3; }
__device__ unary_fn fp_table[3] = {fp_rotate, fp_mix, fp_not};
struct Shape {
    __device__ virtual u32 area(u32 s) const { return s * s; }
};
struct Rect : Shape {
    u32 w;
    __device__ Rect(u32 w) : w(w) {}
    __device__ u32 area(u32 s) const override { return s * w; }
};
struct Tri : Shape {
    __device__ u32 area(u32 s) const override { return s * s / 2; }
};
KERNEL indirect_calls(ARGS) {
    u64 i = gid();
    u32 v = in[i];
    unary_fn f = fp_table[v % 3];
    unary_fn g = (v & 16) ? fp_not : fp_rotate;
    Shape base;
    Rect rect(v >> 20);
    Tri tri;
    const Shape *s = (v & 4) ? (const Shape *)&rect : (v & 8) ? (const Shape *)&tri : &base;
    out[3 * i] = f(v);
    out[3 * i + 1] = g(v ^ 0x5555);
    out[3 * i + 2] = s->area(v & 0xffff);
}

// ---- addresses in initialisers: device pointers to a device array and into it, in global and
// constant memory (`generic(x)+4`)
__device__ u32 addr_words[4] = {11, 22, 33, 44};
__device__ u32 *addr_table[2] = {&addr_words[1], &addr_words[3]};
__device__ u32 *addr_whole = addr_words;
__constant__ u32 *addr_const = &addr_words[2];
KERNEL initialised_pointers(ARGS) {
    u64 i = gid();
    u32 v = in[i];
    out[2 * i] = *addr_table[v & 1] + *addr_whole + *addr_const;
    out[2 * i + 1] = addr_whole[v & 3] ^ (u32)(addr_table[1] - addr_table[0]) ^ (u32)(addr_const - addr_whole);
}

// ---- threads that wait for others
// Launched cooperatively (kernels.txt): three grid-wide barriers. Each block sums its part of
// the input, every thread then reads every block's sum, then a value another block wrote.
KERNEL grid_sync(ARGS) {
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    u32 blocks = gridDim.x, i = (u32)gid(), all = blocks * blockDim.x;
    u32 *sums = out, *mixed = out + blocks, *passed = out + blocks + all;
    atomicAdd(&sums[blockIdx.x], in[i]);
    grid.sync();
    u32 m = i;
    for (u32 b = 0; b < blocks; b++) m = m * 31 + sums[b];
    mixed[i] = m;
    grid.sync();
    passed[i] = mixed[(i + blockDim.x) % all] ^ sums[(blockIdx.x + 1) % blocks];
    grid.sync();
    if (i == 0) out[blocks + 2 * all] = passed[all - 1] + grid.num_blocks();
}
// Warps of a block that wait for each other through shared memory, later ones first: warp w
// spins until warp w + 1 has posted its running sum, so only independently scheduled warps
// finish.
KERNEL warp_handoff(ARGS) {
    __shared__ volatile u32 posted[33], sum[33];
    u32 w = threadIdx.x / 32, warps = blockDim.x / 32;
    if (threadIdx.x < 33) posted[threadIdx.x] = 0;
    __syncthreads();
    u32 s = __reduce_add_sync(FULL, in[gid()]);
    if (w + 1 < warps) {
        if (lane() == 0)
            while (posted[w + 1] == 0) {
            }
        __syncwarp();
        s += sum[w + 1];
    }
    if (lane() == 0) {
        sum[w] = s;
        __threadfence_block();
        posted[w] = 1;
    }
    out[gid()] = s;
}
// Blocks of an ordinary launch that wait for each other through global memory, later ones
// first: block b spins until block b + 1 has posted its running sum, so only blocks that run
// side by side finish (a GPU holds all of them). out[b]: the sum of in from block b's first
// word on; out[gridDim.x + b]: block b's posted flag.
KERNEL block_handoff(ARGS) {
    volatile u32 *sum = out, *posted = out + gridDim.x;
    __shared__ u32 s;
    u32 b = blockIdx.x;
    if (threadIdx.x == 0) s = 0;
    __syncthreads();
    atomicAdd(&s, in[gid()]);
    __syncthreads();
    if (threadIdx.x == 0) {
        u32 total = s;
        if (b + 1 < gridDim.x) {
            while (posted[b + 1] == 0) {
            }
            total += sum[b + 1];
        }
        sum[b] = total;
        __threadfence();
        posted[b] = 1;
    }
}
// ---- clusters
// What a block learns of its cluster, and its neighbour's shared memory: in a launch without
// clusters, a cluster of one block; kernels.txt also launches it in clusters of 2 and of 4.
KERNEL cluster_shape(ARGS) {
    __shared__ u32 mine[64];
    cooperative_groups::cluster_group cl = cooperative_groups::this_cluster();
    u32 t = threadIdx.x, i = (u32)gid();
    mine[t] = in[i] + blockIdx.x;
    cl.sync();
    u32 rank = cl.block_rank(), blocks = cl.num_blocks(), explicit_cluster, id, ids;
    u32 v = cl.map_shared_rank(mine, (rank + blocks - 1) % blocks)[63 - t];
    asm("{ .reg .pred p; mov.pred p, %%is_explicit_cluster; selp.u32 %0, 1, 0, p; }" : "=r"(explicit_cluster));
    asm("mov.u32 %0, %%clusterid.x;" : "=r"(id));
    asm("mov.u32 %0, %%nclusterid.x;" : "=r"(ids));
    out[i] = v ^ (rank << 28) ^ (blocks << 24) ^ (cl.dim_blocks().x << 20) ^ (explicit_cluster << 19) ^ (id << 12) ^ (ids << 4);
    // No block leaves while another may still read its shared memory.
    cl.sync();
}
// Blocks in clusters of 2 x 2 (__cluster_dims__): each fills its shared memory, the cluster
// synchronises, each reads the next block's through map_shared_rank and adds into rank 0's with
// atomics, the cluster synchronises again, and each block writes what it saw.
KERNEL __cluster_dims__(2, 2, 1) cluster_exchange(ARGS) {
    __shared__ u32 part[128], total;
    cooperative_groups::cluster_group cl = cooperative_groups::this_cluster();
    u32 t = threadIdx.x, rank = cl.block_rank(), blocks = cl.num_blocks();
    u32 i = (blockIdx.x + gridDim.x * blockIdx.y) * blockDim.x + t;
    part[t] = in[i];
    if (t == 0) total = 0;
    cl.sync();
    u32 v = cl.map_shared_rank(part, (rank + 1) % blocks)[(t * 7) % blockDim.x];
    atomicAdd(cl.map_shared_rank(&total, 0), in[i] & 0xff);
    cl.sync();
    dim3 at = cl.block_index();
    out[i] = v ^ (rank << 24) ^ (at.x << 20) ^ (at.y << 16) ^ (blocks << 12) ^ (rank == 0 ? total : 0u);
}
