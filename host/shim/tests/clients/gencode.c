/* A C client that loads one image of images/globals.cu, as nvcc built it with one -gencode
 * form, as a module and as a library, and launches its kernel on every device: a pointer
 * global, a table of function pointers and a virtual call, which are right only where the
 * module's globals and code come from one image. One line per step, no address printed, so
 * that a run through the shim can be compared with NVIDIA's driver.
 * Usage: gencode IMAGE_FILE. Exits 1 on an unexpected error. */
#include "client.h"

/* Launches pp_globals with sel 0 and 1 and prints what it wrote, or the first failure. */
static void launch(const char *how, int device, CUfunction f) {
    CUdeviceptr out;
    CUresult r = cuMemAlloc(&out, 4 * sizeof(int));
    if (r != CUDA_SUCCESS) {
        printf("gpu%d %s alloc %s\n", device, how, name_of(r));
        return;
    }
    for (int sel = 0; sel < 2; sel++) {
        int got[4] = {-1, -1, -1, -1};
        void *args[] = {&out, &sel};
        r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
        if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
        if (r == CUDA_SUCCESS) r = cuMemcpyDtoH(got, out, sizeof got);
        if (r != CUDA_SUCCESS) {
            printf("gpu%d %s sel %d launch %s\n", device, how, sel, name_of(r));
            return;
        }
        printf("gpu%d %s sel %d: %d %d %d %d\n", device, how, sel, got[0], got[1], got[2], got[3]);
    }
    cuMemFree(out);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gencode IMAGE_FILE\n");
        return 2;
    }
    const char *slash = strrchr(argv[1], '/');
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - argv[1]) : 1, slash ? argv[1] : ".");
    unsigned char *image = read_bytes(dir, slash ? slash + 1 : argv[1], NULL);
    if (!image) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    TRY(cuInit(0));
    int count = 0;
    TRY(cuDeviceGetCount(&count));
    for (int device = 0; device < count; device++) {
        CUdevice dev;
        CUcontext ctx;
        TRY(cuDeviceGet(&dev, device));
        TRY(cuDevicePrimaryCtxRetain(&ctx, dev));
        TRY(cuCtxSetCurrent(ctx));
        int major = 0, minor = 0;
        TRY(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
        TRY(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
        printf("gpu%d compute %d.%d\n", device, major, minor);
        CUmodule m;
        CUresult r = cuModuleLoadData(&m, image);
        printf("gpu%d module load %s\n", device, name_of(r));
        if (r == CUDA_SUCCESS) {
            CUfunction f;
            r = cuModuleGetFunction(&f, m, "pp_globals");
            printf("gpu%d module function %s\n", device, name_of(r));
            if (r == CUDA_SUCCESS) launch("module", device, f);
            TRY(cuModuleUnload(m));
        }
        CUlibrary lib;
        r = cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0);
        printf("gpu%d library load %s\n", device, name_of(r));
        if (r == CUDA_SUCCESS) {
            CUkernel k;
            r = cuLibraryGetKernel(&k, lib, "pp_globals");
            printf("gpu%d library kernel %s\n", device, name_of(r));
            if (r == CUDA_SUCCESS) launch("library", device, (CUfunction)k);
            TRY(cuLibraryUnload(lib));
        }
        TRY(cuDevicePrimaryCtxRelease(dev));
    }
    free(image);
    printf("done\n");
    return 0;
}
