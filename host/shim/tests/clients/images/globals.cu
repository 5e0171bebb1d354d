// Globals whose initialisers name addresses, a table of function pointers and a virtual call:
// what a module's relocations give. The kernel writes what it reads of each.
__device__ int pp_arr[4] = {10, 20, 30, 40};
__device__ int *pp_ptr = &pp_arr[2];
__device__ __noinline__ int pp_inc(int x) { return x + 1; }
__device__ __noinline__ int pp_dbl(int x) { return x * 2; }
typedef int (*pp_fn)(int);
__device__ pp_fn pp_table[2] = {pp_inc, pp_dbl};
struct PpBase { __device__ virtual int v(int x) const { return x + 100; } };
struct PpDerived : PpBase { __device__ int v(int x) const override { return x + 200; } };
__device__ __noinline__ int pp_call(const PpBase *b, int x) { return b->v(x); }

extern "C" __global__ void pp_globals(int *out, int sel) {
    out[0] = *pp_ptr;
    out[1] = (int)(pp_ptr - pp_arr);
    out[2] = pp_table[sel & 1](5);
    PpBase base;
    PpDerived derived;
    out[3] = pp_call((sel & 1) ? (const PpBase *)&derived : &base, 1);
}
