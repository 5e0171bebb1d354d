/* When NVIDIA's driver gives a launch the grid workspace that cooperative groups' grid.sync()
 * counts in (%envreg1, %envreg2), and what an ordinary launch of grid.sync() does without it.
 * Usage: grid_workspace first GSUM_PTX   an ordinary launch of gsum (gsum.cu, built to PTX)
 *                                        before any cooperative launch: the result codes
 *        grid_workspace scope            whether kernels of two modules, in ordinary and
 *                                        cooperative launches and in a second context, are
 *                                        given a workspace ("workspace") or not ("none")
 * Built on the GPU machine: gcc grid_workspace.c -I/usr/local/cuda/include -lcuda */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define K(name) ".visible .entry " name "(.param .u64 p)\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<2>;\nld.param.u64 %rd0, [p];\nmov.u32 %r1, %envreg1;\nmov.u32 %r2, %envreg2;\nst.global.u32 [%rd0], %r1;\nst.global.u32 [%rd0+4], %r2;\nret;\n}\n"
static const char *m1 = ".version 8.0\n.target sm_90\n.address_size 64\n" K("a") K("b");
static const char *m2 = ".version 8.0\n.target sm_90\n.address_size 64\n" K("c");
#define CK(x) do { CUresult r = (x); if (r) { const char *n; cuGetErrorName(r, &n); printf("%s: %s\n", #x, n); return 1; } } while (0)
static CUdeviceptr p;
static int show(CUmodule m, const char *name, int coop) {
  CUfunction f; unsigned h[2] = {9, 9};
  CK(cuModuleGetFunction(&f, m, name));
  void *args[] = {&p};
  if (coop) CK(cuLaunchCooperativeKernel(f, 2, 1, 1, 32, 1, 1, 0, 0, args));
  else CK(cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, 0, args, NULL));
  CK(cuCtxSynchronize()); CK(cuMemcpyDtoH(h, p, 8));
  printf("%s %s: %s\n", coop ? "cooperative" : "ordinary", name, h[0] || h[1] ? "workspace" : "none");
  return 0;
}
static char *slurp(const char *path) { FILE *f = fopen(path, "rb"); fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET); char *b = calloc(n + 1, 1); fread(b, 1, n, f); fclose(f); return b; }
int main(int argc, char **argv) {
  CUdevice d; CUcontext c, c2; CUmodule a, b, g;
  CK(cuInit(0)); CK(cuDeviceGet(&d, 0)); CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
  CK(cuMemAlloc(&p, 64));
  if (argc > 2 && strcmp(argv[1], "first") == 0) {
    CK(cuModuleLoadData(&g, slurp(argv[2])));
    CUfunction f; CK(cuModuleGetFunction(&f, g, "gsum"));
    CUdeviceptr o, in; CK(cuMemAlloc(&o, 4 * 300)); CK(cuMemAlloc(&in, 4 * 256)); CK(cuMemsetD8(o, 0, 1200)); CK(cuMemsetD8(in, 1, 1024));
    unsigned n = 256; void *args[] = {&o, &in, &n};
    CUresult l = cuLaunchKernel(f, 4, 1, 1, 64, 1, 1, 0, 0, args, NULL); CUresult s = cuCtxSynchronize();
    const char *ln, *sn; cuGetErrorName(l, &ln); cuGetErrorName(s, &sn);
    printf("gsum first, ordinary: launch %s, synchronize %s\n", ln, sn);
    return 0;
  }
  CK(cuModuleLoadData(&a, m1)); CK(cuModuleLoadData(&b, m2));
  if (show(a, "a", 0) || show(a, "b", 0) || show(a, "a", 1) || show(a, "a", 0) || show(a, "b", 0) || show(b, "c", 0)) return 1;
  CK(cuCtxCreate(&c2, NULL, 0, d)); CK(cuMemAlloc(&p, 64));
  CUmodule a2; CK(cuModuleLoadData(&a2, m1));
  if (show(a2, "a", 0)) return 1;
  printf("second context\n");
  return 0;
}
