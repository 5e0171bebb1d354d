/* Runs ptx_random.py's programs through the CUDA driver API, one module and one launch of one
 * block each. Prints a line a program: "N refused" where the driver refused its PTX (at load, or
 * a simulator at launch), else "N ran HASH", the FNV-1a hash of every instruction's result of
 * every thread. With RAW.bin, writes those results there too, in program order (INSTRUCTIONS x
 * THREADS words of 8 bytes a program, zeros for one refused), for ptx_random_compare.py.
 * Exits 1 where a launch fails (that ends the process's CUDA).
 * Usage: ptx_random DIR [RAW.bin]   (DIR holds programs.ptx and in.bin)
 * On a GPU machine: gcc ptx_random.c -I/usr/local/cuda/include -lcuda -o ptx_random */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 32, INSTRUCTIONS = 32, IN_BYTES = 192 };

static char *slurp(const char *dir, const char *name, size_t *len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(2); }
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc(*len + 1);
  if (fread(b, 1, *len, f) != *len) { perror(path); exit(2); }
  b[*len] = 0;
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: ptx_random DIR [RAW.bin]\n"); return 2; }
  size_t plen, ilen;
  char *programs = slurp(argv[1], "programs.ptx", &plen);
  char *in = slurp(argv[1], "in.bin", &ilen);
  if (ilen != THREADS * IN_BYTES) { fprintf(stderr, "in.bin: %zu bytes\n", ilen); return 2; }
  FILE *out = argc > 2 ? fopen(argv[2], "wb") : NULL;
  if (argc > 2 && !out) { perror(argv[2]); return 2; }
  CUdevice dev; CUcontext ctx; CUdeviceptr din, dout;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) {
    printf("no CUDA device\n");
    return 1;
  }
  size_t out_bytes = (size_t)INSTRUCTIONS * THREADS * 8;
  unsigned char *words = malloc(out_bytes);
  if (cuMemAlloc(&din, ilen) || cuMemAlloc(&dout, out_bytes) || cuMemcpyHtoD(din, in, ilen)) return 1;
  int i = 0;
  for (char *p = programs; p < programs + plen; p += strlen(p) + 1, i++) {
    CUmodule m; CUfunction f;
    const char *name;
    char log[1024] = "";
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {log, (void *)(size_t)sizeof log};
    CUresult r = cuModuleLoadDataEx(&m, p, 2, opts, vals);
    memset(words, 0, out_bytes);
    int ran = 0;
    if (r == CUDA_SUCCESS) {
      void *args[] = {&din, &dout};
      if (cuModuleGetFunction(&f, m, "k") || cuMemsetD8(dout, 0, out_bytes)) return 1;
      /* A launch refused (a simulator that reads the PTX only now) leaves the context usable. */
      r = cuLaunchKernel(f, 1, 1, 1, THREADS, 1, 1, 0, 0, args, NULL);
      if (r == CUDA_SUCCESS) {
        if (cuCtxSynchronize() || cuMemcpyDtoH(words, dout, out_bytes)) {
          printf("%d launch failed\n", i);
          return 1;
        }
        ran = 1;
      }
      cuModuleUnload(m);
    }
    if (ran) {
      uint64_t h = 0xcbf29ce484222325ull;
      for (size_t k = 0; k < out_bytes; k++) h = (h ^ words[k]) * 0x100000001b3ull;
      printf("%d ran %016llx\n", i, (unsigned long long)h);
    } else {
      cuGetErrorName(r, &name);
      for (char *c = log; *c; c++) if (*c == '\n') *c = ' ';
      printf("%d refused\n", i);
      fprintf(stderr, "%d %s %s\n", i, name, log);
    }
    if (out) fwrite(words, 1, out_bytes, out);
  }
  if (out) fclose(out);
  return 0;
}
