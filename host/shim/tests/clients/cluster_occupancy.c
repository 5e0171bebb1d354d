/* What NVIDIA's driver answers about clusters' occupancy on one GPU: cuOccupancyMaxActiveClusters
 * for cluster sizes, block sizes and bytes of dynamic shared memory, and
 * cuOccupancyMaxPotentialClusterSize for block sizes and bytes, with non-portable sizes refused
 * and allowed. One line an answer: the result code's name and the number.
 * Usage: cluster_occupancy */
#include <cuda.h>
#include <stdio.h>
static const char *ptx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<2>;\nld.param.u64 %rd0, [p];\nret;\n}\n";
#define CK(x) do { CUresult r = (x); if (r) { const char *n; cuGetErrorName(r, &n); printf("%s: %s\n", #x, n); return 1; } } while (0)
static const char *name(CUresult r) { const char *n = "?"; cuGetErrorName(r, &n); return n; }
static CUlaunchConfig config(unsigned cluster, unsigned threads, unsigned bytes, CUlaunchAttribute *a) {
  CUlaunchConfig c = {0};
  c.gridDimX = cluster ? cluster * 16 : 16; c.gridDimY = 1; c.gridDimZ = 1;
  c.blockDimX = threads; c.blockDimY = 1; c.blockDimZ = 1;
  c.sharedMemBytes = bytes;
  if (cluster) {
    a->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a->value.clusterDim.x = cluster; a->value.clusterDim.y = 1; a->value.clusterDim.z = 1;
    c.attrs = a; c.numAttrs = 1;
  }
  return c;
}
int main(void) {
  CUdevice d; CUcontext ctx; CUmodule m; CUfunction f;
  CK(cuInit(0)); CK(cuDeviceGet(&d, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, d)); CK(cuCtxSetCurrent(ctx));
  int sms; CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d));
  printf("multiprocessors: %d\n", sms);
  CK(cuModuleLoadData(&m, ptx)); CK(cuModuleGetFunction(&f, m, "k"));
  CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 227 * 1024));
  unsigned clusters[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17};
  unsigned threads[] = {32, 64, 128, 256, 384, 512, 1024};
  unsigned bytes[] = {0, 30000, 60000, 100000, 150000, 200000};
  for (int allowed = 0; allowed < 2; allowed++) {
    CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, allowed));
    for (unsigned t = 0; t < sizeof threads / sizeof *threads; t++)
      for (unsigned b = 0; b < sizeof bytes / sizeof *bytes; b++) {
        CUlaunchAttribute a;
        for (unsigned c = 0; c < sizeof clusters / sizeof *clusters; c++) {
          CUlaunchConfig cfg = config(clusters[c], threads[t], bytes[b], &a);
          int n = -1;
          CUresult r = cuOccupancyMaxActiveClusters(&n, f, &cfg);
          printf("non-portable %d, cluster %u, %u threads, %u bytes: active clusters %s %d\n", allowed, clusters[c],
                 threads[t], bytes[b], name(r), n);
        }
        CUlaunchConfig cfg = config(0, threads[t], bytes[b], &a);
        int n = -1;
        CUresult r = cuOccupancyMaxPotentialClusterSize(&n, f, &cfg);
        printf("non-portable %d, %u threads, %u bytes: potential cluster size %s %d\n", allowed, threads[t], bytes[b],
               name(r), n);
      }
  }
  return 0;
}
