/* A C client that loads images that are not peerpool's (images/kernels.cu built by NVIDIA's
 * nvcc into PTX, an sm_90 cubin and fatbins, plain and compressed) as modules and as
 * libraries, lists their kernels and asks what each is, and refuses bad images. Given
 * "launch" after the images' directory, it also launches one kernel (a GPU runs it; the
 * simulator refuses foreign kernels). One line per fact, no address printed, so that a run
 * through the shim can be compared with NVIDIA's driver.
 * Usage: images IMAGES_DIR [launch]. Exits 1 on an unexpected error. */
#include "client.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char dir[4096];

/* The bytes of IMAGES_DIR/name (read_bytes). */
static unsigned char *read_image(const char *name, size_t *len) { return read_bytes(dir, name, len); }

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The name of handles[i], a module's functions or a library's kernels. */
typedef CUresult (*name_getter)(const char **name, const void *handles, unsigned int i);

static CUresult function_name(const char **name, const void *fs, unsigned int i) {
    return cuFuncGetName(name, ((const CUfunction *)fs)[i]);
}

static CUresult kernel_name(const char **name, const void *ks, unsigned int i) {
    return cuKernelGetName(name, ((const CUkernel *)ks)[i]);
}

/* Prints " <count>:", then, if the handles were listed, their names sorted ("?" for one the
 * getter does not name), then the line's end. */
static void print_names(unsigned int count, int listed, const void *handles, name_getter get) {
    printf(" %u:", count);
    const char *names[8];
    if (listed) {
        for (unsigned int i = 0; i < count; i++) {
            names[i] = "?";
            get(&names[i], handles, i);
        }
        qsort(names, count, sizeof names[0], by_name);
        for (unsigned int i = 0; i < count; i++) printf(" %s", names[i]);
    }
    printf("\n");
}

/* What a loaded module holds and says of its kernels. */
static void describe_module(const char *what, CUmodule m) {
    unsigned int count = 0;
    printf("%s function count %s", what, name_of(cuModuleGetFunctionCount(&count, m)));
    CUfunction fs[8];
    int listed = count <= 8 && cuModuleEnumerateFunctions(fs, count, m) == CUDA_SUCCESS;
    print_names(count, listed, fs, function_name);
    CUfunction f;
    printf("%s get pp_test_add: %s\n", what, name_of(cuModuleGetFunction(&f, m, "pp_test_add")));
    CUfunction missing;
    printf("%s get nope: %s\n", what, name_of(cuModuleGetFunction(&missing, m, "nope")));
    const char *name = NULL;
    CUresult named = cuFuncGetName(&name, f);
    printf("%s name %s %s\n", what, name_of(named), name ? name : "null");
    printf("%s params:", what);
    for (size_t i = 0; i < 4; i++) {
        size_t offset = 0, size = 0;
        CUresult r = cuFuncGetParamInfo(f, i, &offset, &size);
        if (r != CUDA_SUCCESS) {
            printf(" %zu:%s", i, name_of(r));
            break;
        }
        printf(" %zu:%zu+%zu", i, offset, size);
    }
    printf("\n");
    CUfunction_attribute attrs[] = {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                    CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,      CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                                    CU_FUNC_ATTRIBUTE_PTX_VERSION,           CU_FUNC_ATTRIBUTE_BINARY_VERSION,
                                    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES};
    printf("%s attributes:", what);
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = -9;
        CUresult r = cuFuncGetAttribute(&v, attrs[i], f);
        printf(" %d=%s", (int)attrs[i], r == CUDA_SUCCESS ? "" : name_of(r));
        if (r == CUDA_SUCCESS) printf("%d", v);
    }
    printf("\n");
    printf("%s set max dynamic shared 8192: %s\n", what,
           name_of(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8192)));
    CUdeviceptr global = 0;
    size_t bytes = 0;
    printf("%s global pp_test_counter %s", what, name_of(cuModuleGetGlobal(&global, &bytes, m, "pp_test_counter")));
    printf(" %zu\n", bytes);
    printf("%s global nope %s\n", what, name_of(cuModuleGetGlobal(&global, &bytes, m, "nope")));
}

static void as_module(const char *file) {
    size_t len = 0;
    unsigned char *image = read_image(file, &len);
    if (!image) {
        printf("%s: missing\n", file);
        return;
    }
    CUmodule m;
    CUresult r = cuModuleLoadData(&m, image);
    printf("%s module load: %s\n", file, name_of(r));
    if (r == CUDA_SUCCESS) {
        describe_module(file, m);
        printf("%s unload: %s\n", file, name_of(cuModuleUnload(m)));
        printf("%s unload again: %s\n", file, name_of(cuModuleUnload(m)));
    }
    free(image);
}

static void as_library(const char *file) {
    size_t len = 0;
    unsigned char *image = read_image(file, &len);
    if (!image) return;
    CUlibrary lib;
    CUresult r = cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0);
    printf("%s library load: %s\n", file, name_of(r));
    free(image); /* the driver keeps what it needs */
    if (r != CUDA_SUCCESS) return;
    unsigned int count = 0;
    printf("%s kernel count %s", file, name_of(cuLibraryGetKernelCount(&count, lib)));
    CUkernel ks[8];
    int listed = count <= 8 && cuLibraryEnumerateKernels(ks, count, lib) == CUDA_SUCCESS;
    print_names(count, listed, ks, kernel_name);
    CUkernel k;
    printf("%s get kernel pp_test_scale: %s\n", file, name_of(cuLibraryGetKernel(&k, lib, "pp_test_scale")));
    printf("%s get kernel nope: %s\n", file, name_of(cuLibraryGetKernel(&ks[0], lib, "nope")));
    CUfunction f;
    printf("%s kernel's function: %s", file, name_of(cuKernelGetFunction(&f, k)));
    const char *name = NULL;
    CUresult named = cuFuncGetName(&name, f);
    printf(" named %s %s\n", name_of(named), name ? name : "null");
    int v = -9;
    printf("%s kernel max threads: %s", file,
           name_of(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 0)));
    printf(" %d\n", v);
    CUmodule m;
    printf("%s library's module: %s\n", file, name_of(cuLibraryGetModule(&m, lib)));
    CUdeviceptr global = 0;
    size_t bytes = 0;
    printf("%s library global pp_test_scale_by %s", file,
           name_of(cuLibraryGetGlobal(&global, &bytes, lib, "pp_test_scale_by")));
    printf(" %zu\n", bytes);
    printf("%s library unload: %s\n", file, name_of(cuLibraryUnload(lib)));
}

/* Images that are not images. */
static void bad_images(void) {
    CUmodule m;
    unsigned char garbage[64];
    for (int i = 0; i < 64; i++) garbage[i] = (unsigned char)(i * 37 + 11);
    garbage[63] = 0;
    printf("garbage module: %s\n", name_of(cuModuleLoadData(&m, garbage)));
    const char *not_ptx = "this is not PTX";
    printf("text module: %s\n", name_of(cuModuleLoadData(&m, not_ptx)));
    unsigned char elf[64];
    memset(elf, 0, sizeof elf);
    memcpy(elf, "\177ELF\002\001\001", 7);
    elf[16] = 2;    /* ET_EXEC */
    elf[18] = 190;  /* EM_CUDA */
    elf[20] = 1;    /* EV_CURRENT */
    uint64_t far = (uint64_t)1 << 40; /* section headers far past the image */
    memcpy(elf + 0x28, &far, 8);
    elf[0x3a] = 64; /* e_shentsize */
    elf[0x3c] = 1;  /* e_shnum */
    printf("null image: %s\n", name_of(cuModuleLoadData(&m, NULL)));
    CUlibrary lib;
    printf("garbage library: %s\n", name_of(cuLibraryLoadData(&lib, garbage, NULL, NULL, 0, NULL, NULL, 0)));
    printf("elf with far sections: %s\n", name_of(cuModuleLoadData(&m, elf)));
}

/* Launches pp_test_add from the cubin: every element gains 5. */
static int launch(void) {
    size_t len = 0;
    unsigned char *image = read_image("kernels.cubin", &len);
    CUmodule m;
    CUfunction f;
    TRY(cuModuleLoadData(&m, image));
    TRY(cuModuleGetFunction(&f, m, "pp_test_add"));
    CUdeviceptr p;
    int n = 1000, v = 5, host[1000];
    for (int i = 0; i < n; i++) host[i] = i;
    TRY(cuMemAlloc(&p, sizeof host));
    TRY(cuMemcpyHtoD(p, host, sizeof host));
    void *args[] = {&p, &n, &v};
    CUresult r = cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, 0, args, NULL);
    printf("launch pp_test_add: %s\n", name_of(r));
    if (r == CUDA_SUCCESS) {
        TRY(cuCtxSynchronize());
        TRY(cuMemcpyDtoH(host, p, sizeof host));
        printf("launched bytes: %d %d\n", host[0] == 5, host[999] == 1004);
    }
    TRY(cuMemFree(p));
    TRY(cuModuleUnload(m));
    free(image);
    return 0;
}

int main(int argc, char **argv) {
    images_dir_arg(argc, argv, dir, sizeof dir, "images IMAGES_DIR [launch]");
    CUdevice dev;
    CUcontext ctx;
    ON_GPU0(dev, ctx);
    CUmoduleLoadingMode mode;
    TRY(cuModuleGetLoadingMode(&mode));
    printf("loading mode %d\n", (int)mode);
    if (argc > 2 && strcmp(argv[2], "launch") == 0) return launch();
    const char *files[] = {"kernels.ptx", "kernels.cubin", "kernels.fatbin", "kernels.default.fatbin",
                           "kernels.compressed.fatbin"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) as_module(files[i]);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) as_library(files[i]);
    size_t len = 0;
    unsigned char *fatbin = read_image("kernels.fatbin", &len);
    CUmodule m;
    CUresult r = cuModuleLoadFatBinary(&m, fatbin);
    printf("load fat binary: %s\n", name_of(r));
    if (r == CUDA_SUCCESS) TRY(cuModuleUnload(m));
    free(fatbin);
    char path[8192];
    snprintf(path, sizeof path, "%s/kernels.cubin", dir);
    r = cuModuleLoad(&m, path);
    printf("module load from file: %s\n", name_of(r));
    if (r == CUDA_SUCCESS) TRY(cuModuleUnload(m));
    printf("module load from a missing file: %s\n", name_of(cuModuleLoad(&m, "/nonexistent/kernels.cubin")));
    CUlibrary lib;
    r = cuLibraryLoadFromFile(&lib, path, NULL, NULL, 0, NULL, NULL, 0);
    printf("library load from file: %s\n", name_of(r));
    if (r == CUDA_SUCCESS) TRY(cuLibraryUnload(lib));
    bad_images();
    TRY(cuDevicePrimaryCtxRelease(dev));
    printf("done\n");
    return 0;
}
