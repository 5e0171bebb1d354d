/* What NVIDIA's driver does with a jump table (`brx.idx` over a `.branchtargets` list) whose
 * index lies past the list, which PTX leaves undefined: for the index given, the launch's and
 * the synchronisation's result codes and the word the kernel wrote (10, 11 or 12 for a target;
 * 0 where it wrote nothing). One index a process: a failed launch ends the process's CUDA,
 * and on an H200 an index past the list hung the launch, so run each under `timeout`.
 * Usage: brx_range INDEX
 * Built on the GPU machine: gcc brx_range.c -I/usr/local/cuda/include -lcuda */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
static const char *ptx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k(.param .u64 p, .param .u32 i)\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<2>;\n"
    "ld.param.u64 %rd0, [p];\nld.param.u32 %r1, [i];\n"
    "ts: .branchtargets A, B, C;\nbrx.idx %r1, ts;\n"
    "A:\nmov.u32 %r2, 10;\nbra.uni D;\nB:\nmov.u32 %r2, 11;\nbra.uni D;\nC:\nmov.u32 %r2, 12;\n"
    "D:\nst.global.u32 [%rd0], %r2;\nret;\n}\n";
#define CK(x) do { CUresult r = (x); if (r) { const char *n; cuGetErrorName(r, &n); printf("%s: %s\n", #x, n); return 1; } } while (0)
int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: brx_range INDEX\n"); return 2; }
  unsigned index = (unsigned)strtoul(argv[1], NULL, 0), got = 0;
  CUdevice d; CUcontext c; CUmodule m; CUfunction f; CUdeviceptr p;
  CK(cuInit(0)); CK(cuDeviceGet(&d, 0)); CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
  CK(cuModuleLoadData(&m, ptx)); CK(cuModuleGetFunction(&f, m, "k"));
  CK(cuMemAlloc(&p, 4)); CK(cuMemsetD32(p, 0, 1));
  void *args[] = {&p, &index};
  CUresult l = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, args, NULL), s = cuCtxSynchronize();
  const char *ln, *sn; cuGetErrorName(l, &ln); cuGetErrorName(s, &sn);
  if (s == CUDA_SUCCESS) CK(cuMemcpyDtoH(&got, p, 4));
  printf("index %u: launch %s, synchronize %s, wrote %u\n", index, ln, sn, got);
  return 0;
}
