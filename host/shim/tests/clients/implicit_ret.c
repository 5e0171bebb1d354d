/* What NVIDIA's driver does with a function whose code runs off its end (no `ret` before its
 * closing brace, or a branch to a label there), and with a kernel that runs off its end where
 * the functions it calls could follow it: each variant's load and launch result codes and the
 * words its 32 threads wrote (thread t's argument is t; `f` returns its argument plus 1000).
 * The shim's `one_h200` test runs it on the simulator against what it printed on an H200
 * (built there with gcc implicit_ret.c -I/usr/local/cuda/include -lcuda). */
#include <cuda.h>
#include <stdio.h>

#define HEAD ".version 8.0\n.target sm_90\n.address_size 64\n"
/* f(a) = a + 1000, with no ret; g(a) = a + 1000 where a is even, else a, its odd path a
 * branch to a label at its end. */
#define F ".func (.param .b32 r) f(.param .b32 a)\n{\n.reg .b32 %r<3>;\nld.param.u32 %r1, [a];\n" \
          "add.u32 %r2, %r1, 1000;\nst.param.b32 [r], %r2;\n}\n"
#define G ".func (.param .b32 r) g(.param .b32 a)\n{\n.reg .b32 %r<3>;\n.reg .pred %p<2>;\n" \
          "ld.param.u32 %r1, [a];\nst.param.b32 [r], %r1;\nand.b32 %r2, %r1, 1;\nsetp.ne.u32 %p1, %r2, 0;\n" \
          "@%p1 bra END;\nadd.u32 %r2, %r1, 1000;\nst.param.b32 [r], %r2;\nEND:\n}\n"
/* A kernel calling `callee` for thread t, writing the result at p[t]; `end` closes it. */
#define K(callee, end) ".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n" \
          "ld.param.u64 %rd1, [p];\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\n" \
          "{\n.param .b32 a0;\nst.param.b32 [a0], %r1;\n.param .b32 r0;\ncall.uni (r0), " callee ", (a0);\n" \
          "ld.param.b32 %r2, [r0];\n}\nst.global.u32 [%rd3], %r2;\n" end "}\n"

static int run(const char *name, const char *ptx) {
  CUmodule m; CUfunction f; CUdeviceptr p; unsigned got[32] = {0};
  const char *n;
  CUresult r = cuModuleLoadData(&m, ptx);
  cuGetErrorName(r, &n);
  printf("%s: load %s", name, n);
  if (r) { printf("\n"); return 0; }
  cuModuleGetFunction(&f, m, "k");
  cuMemAlloc(&p, sizeof got);
  cuMemsetD32(p, 0, 32);
  void *args[] = {&p};
  CUresult l = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, args, NULL), s = cuCtxSynchronize();
  const char *ln, *sn;
  cuGetErrorName(l, &ln); cuGetErrorName(s, &sn);
  if (s == CUDA_SUCCESS) cuMemcpyDtoH(got, p, sizeof got);
  printf(", launch %s, synchronize %s, wrote", ln, sn);
  for (int i = 0; i < 32; i++) printf(" %u", got[i]);
  printf("\n");
  cuMemFree(p);
  cuModuleUnload(m);
  return s != CUDA_SUCCESS;
}

int main(void) {
  CUdevice d; CUcontext c;
  if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c)) {
    printf("no CUDA device\n");
    return 1;
  }
  /* Each variant after one that failed would see the sticky error: stop there. */
  if (run("with ret", HEAD F K("f", "ret;\n"))) return 1;
  if (run("function without ret", HEAD ".func (.param .b32 r) f(.param .b32 a);\n" K("f", "ret;\n") F)) return 1;
  if (run("function branching to its end", HEAD ".func (.param .b32 r) g(.param .b32 a);\n" K("g", "ret;\n") G)) return 1;
  if (run("kernel without ret", HEAD ".func (.param .b32 r) f(.param .b32 a);\n" K("f", "") F)) return 1;
  return 0;
}
