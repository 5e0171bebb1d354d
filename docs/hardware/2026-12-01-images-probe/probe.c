/* Probes what NVIDIA's driver answers about foreign images beyond images.c. */
#include "client.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char dir[4096];
static unsigned char *rd(const char *name) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = calloc((size_t)n + 1, 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
    fclose(f);
    return b;
}
static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void func(const char *what, CUmodule m, const char *k) {
    CUfunction f;
    CUresult r = cuModuleGetFunction(&f, m, k);
    printf("%s %s get: %s\n", what, k, name_of(r));
    if (r) return;
    printf("%s %s params:", what, k);
    for (size_t i = 0; i < 6; i++) {
        size_t o = 0, s = 0;
        CUresult p = cuFuncGetParamInfo(f, i, &o, &s);
        if (p) { printf(" %zu:%s", i, name_of(p)); break; }
        printf(" %zu:%zu+%zu", i, o, s);
    }
    printf("\n%s %s attrs:", what, k);
    for (int a = 0; a <= 16; a++) {
        int v = -9;
        CUresult q = cuFuncGetAttribute(&v, (CUfunction_attribute)a, f);
        if (q) printf(" %d=%s", a, name_of(q)); else printf(" %d=%d", a, v);
    }
    printf("\n");
}

static void module_facts(const char *what, CUmodule m) {
    unsigned int count = 0;
    CUresult r = cuModuleGetFunctionCount(&count, m);
    printf("%s count %s %u:", what, name_of(r), count);
    CUfunction fs[16];
    const char *names[16];
    if (count <= 16 && cuModuleEnumerateFunctions(fs, count, m) == CUDA_SUCCESS) {
        for (unsigned i = 0; i < count; i++) { names[i] = "?"; cuFuncGetName(&names[i], fs[i]); }
        qsort(names, count, sizeof names[0], by_name);
        for (unsigned i = 0; i < count; i++) printf(" %s", names[i]);
    }
    printf("\n");
    if (count > 1) printf("%s enumerate fewer: %s\n", what, name_of(cuModuleEnumerateFunctions(fs, count - 1, m)));
    printf("%s enumerate more: %s\n", what, name_of(cuModuleEnumerateFunctions(fs, count + 1, m)));
    printf("%s enumerate zero: %s\n", what, name_of(cuModuleEnumerateFunctions(fs, 0, m)));
    func(what, m, "k_static");
    func(what, m, "k_bounded");
    func(what, m, "k_struct");
    func(what, m, "helper");
    func(what, m, "_Z6helperi");
    const char *globals[] = {"arr", "dd", "cvals", "helper", "k_static"};
    for (int i = 0; i < 5; i++) {
        CUdeviceptr p = 0;
        size_t n = 0;
        CUresult g = cuModuleGetGlobal(&p, &n, m, globals[i]);
        printf("%s global %s %s %zu", what, globals[i], name_of(g), n);
        if (!g && n >= 12) {
            int v[3] = {-1, -1, -1};
            cuMemcpyDtoH(v, p, sizeof v);
            printf(" values %d %d %d", v[0], v[1], v[2]);
        }
        printf("\n");
    }
    CUdeviceptr p;
    size_t n;
    printf("%s global null out: %s\n", what, name_of(cuModuleGetGlobal(NULL, NULL, m, "arr")));
    printf("%s global null name: %s\n", what, name_of(cuModuleGetGlobal(&p, &n, m, NULL)));
    CUfunction f;
    if (cuModuleGetFunction(&f, m, "k_static") == CUDA_SUCCESS) {
        printf("%s set dyn 8192: %s", what, name_of(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8192)));
        int v = -9;
        cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f);
        printf(" reads %d\n", v);
        int vals[] = {232448, 232048, 232049, 300000, -1};
        for (int i = 0; i < 5; i++) {
            CUresult s = cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, vals[i]);
            v = -9;
            cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f);
            printf("%s set dyn %d: %s reads %d\n", what, vals[i], name_of(s), v);
        }
        int attrs[] = {0, 1, 4, 9, 10, 11, 14, 15, 99};
        int setv[] = {512, 0, 32, 50, 1, 2, 1, 1, 1};
        for (int i = 0; i < 9; i++) {
            CUresult s = cuFuncSetAttribute(f, (CUfunction_attribute)attrs[i], setv[i]);
            v = -9;
            CUresult g = cuFuncGetAttribute(&v, (CUfunction_attribute)attrs[i], f);
            printf("%s set attr %d=%d: %s reads %s %d\n", what, attrs[i], setv[i], name_of(s), name_of(g), v);
        }
        size_t o, sz;
        printf("%s param null out: %s\n", what, name_of(cuFuncGetParamInfo(f, 0, NULL, NULL)));
        printf("%s param null size: %s %zu\n", what, name_of(cuFuncGetParamInfo(f, 0, &o, NULL)), o);
        const char *nm = NULL;
        printf("%s name null: %s\n", what, name_of(cuFuncGetName(NULL, f)));
        CUmodule fm = NULL;
        printf("%s func module: %s same %d\n", what, name_of(cuFuncGetModule(&fm, f)), fm == m);
        CUfunction f2;
        cuModuleGetFunction(&f2, m, "k_static");
        printf("%s same function twice %d\n", what, f == f2);
        (void)nm;
    }
}

static void as_module(const char *file) {
    unsigned char *img = rd(file);
    if (!img) { printf("%s missing\n", file); return; }
    CUmodule m;
    CUresult r = cuModuleLoadData(&m, img);
    printf("%s load: %s\n", file, name_of(r));
    if (!r) { module_facts(file, m); printf("%s unload: %s\n", file, name_of(cuModuleUnload(m))); }
    free(img);
}

static void library_facts(const char *what, CUlibrary lib) {
    unsigned int count = 99;
    printf("%s lib count %s %u\n", what, name_of(cuLibraryGetKernelCount(&count, lib)), count);
    CUkernel ks[16];
    printf("%s lib enumerate: %s\n", what, name_of(cuLibraryEnumerateKernels(ks, count < 16 ? count : 16, lib)));
    CUkernel k = NULL, k2 = NULL;
    CUresult r = cuLibraryGetKernel(&k, lib, "k_static");
    printf("%s lib kernel: %s\n", what, name_of(r));
    CUmodule m = NULL;
    printf("%s lib module: %s\n", what, name_of(cuLibraryGetModule(&m, lib)));
    CUdeviceptr p = 0;
    size_t n = 0;
    printf("%s lib global arr: %s %zu\n", what, name_of(cuLibraryGetGlobal(&p, &n, lib, "arr")), n);
    printf("%s lib managed arr: %s\n", what, name_of(cuLibraryGetManaged(&p, &n, lib, "arr")));
    if (r) return;
    cuLibraryGetKernel(&k2, lib, "k_static");
    printf("%s lib same kernel twice %d\n", what, k == k2);
    CUfunction f = NULL, f2 = NULL;
    printf("%s kernel function: %s\n", what, name_of(cuKernelGetFunction(&f, k)));
    cuKernelGetFunction(&f2, k);
    printf("%s kernel function twice same %d\n", what, f == f2);
    CUmodule fm = NULL;
    cuFuncGetModule(&fm, f);
    printf("%s function's module is library's module %d\n", what, fm == m);
    CUfunction mf = NULL;
    cuModuleGetFunction(&mf, m, "k_static");
    printf("%s module's function is kernel's function %d\n", what, mf == f);
    printf("%s kernel is function %d\n", what, (void *)k == (void *)f);
    printf("%s kernel attrs:", what);
    for (int a = 0; a <= 9; a++) {
        int v = -9;
        CUresult q = cuKernelGetAttribute(&v, (CUfunction_attribute)a, k, 0);
        if (q) printf(" %d=%s", a, name_of(q)); else printf(" %d=%d", a, v);
    }
    printf("\n");
    int v = -9;
    printf("%s kernel attr dev 5: %s\n", what, name_of(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 5)));
    printf("%s kernel set dyn: %s\n", what, name_of(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 4096, k, 0)));
    v = -9;
    cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f);
    printf("%s function reads %d\n", what, v);
    printf("%s kernel params:", what);
    CUkernel kb;
    cuLibraryGetKernel(&kb, lib, "k_bounded");
    for (size_t i = 0; i < 6; i++) {
        size_t o = 0, s = 0;
        CUresult q = cuKernelGetParamInfo(kb, i, &o, &s);
        if (q) { printf(" %zu:%s", i, name_of(q)); break; }
        printf(" %zu:%zu+%zu", i, o, s);
    }
    printf("\n");
    const char *nm = NULL;
    printf("%s kernel name: %s %s\n", what, name_of(cuKernelGetName(&nm, k)), nm ? nm : "null");
    CUlibrary back = NULL;
    printf("%s kernel library: %s same %d\n", what, name_of(cuKernelGetLibrary(&back, k)), back == lib);
}

static void as_library(const char *what, const void *img) {
    CUlibrary lib;
    CUresult r = cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0);
    printf("%s library load: %s\n", what, name_of(r));
    if (r) return;
    library_facts(what, lib);
    printf("%s library unload: %s\n", what, name_of(cuLibraryUnload(lib)));
    printf("%s library unload again: %s\n", what, name_of(cuLibraryUnload(lib)));
}

struct wrapper { int magic; int version; const void *data; void *filename; };

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(dir, sizeof dir, "%s", argv[1]);
    int libs_only = argc > 2;
    CUdevice dev;
    CUcontext ctx;
    TRY(cuInit(0));
    TRY(cuDeviceGet(&dev, 0));
    TRY(cuDevicePrimaryCtxRetain(&ctx, dev));
    TRY(cuCtxSetCurrent(ctx));
    CUmoduleLoadingMode mode;
    TRY(cuModuleGetLoadingMode(&mode));
    printf("loading mode %d\n", (int)mode);
    unsigned char garbage[64];
    for (int i = 0; i < 64; i++) garbage[i] = (unsigned char)(i * 37 + 11);
    garbage[63] = 0;
    as_library("garbage", garbage);
    as_library("text", "this is not PTX");
    unsigned char elf[64];
    memset(elf, 0, sizeof elf);
    memcpy(elf, "\177ELF\002\001\001", 7);
    elf[16] = 2; elf[18] = 190; elf[20] = 1;
    uint64_t far = (uint64_t)1 << 40;
    memcpy(elf + 0x28, &far, 8);
    elf[0x3a] = 64; elf[0x3c] = 1;
    as_library("far elf", elf);
    if (libs_only) return 0;
    const char *files[] = {"probe.ptx", "probe.cubin", "probe.sm80.cubin", "probe.sm100.ptx", "probe.v99.ptx",
                           "probe.sm80ptx.fatbin", "probe.sm80only.fatbin", "probe.speed.fatbin", "probe.multi.fatbin"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) as_module(files[i]);
    const char *libs[] = {"probe.ptx", "probe.cubin", "probe.sm80only.fatbin"};
    for (size_t i = 0; i < 3; i++) {
        unsigned char *img = rd(libs[i]);
        as_library(libs[i], img);
        free(img);
    }
    unsigned char *fat = rd("probe.speed.fatbin");
    struct wrapper w = {0x466243B1, 1, fat, NULL};
    CUmodule m;
    CUresult r = cuModuleLoadData(&m, &w);
    printf("wrapper module load: %s\n", name_of(r));
    if (!r) { module_facts("wrapper", m); cuModuleUnload(m); }
    r = cuModuleLoadFatBinary(&m, &w);
    printf("wrapper fat binary: %s\n", name_of(r));
    if (!r) cuModuleUnload(m);
    struct wrapper w2 = {0x466243B1, 2, fat, NULL};
    r = cuModuleLoadData(&m, &w2);
    printf("wrapper v2 module load: %s\n", name_of(r));
    if (!r) cuModuleUnload(m);
    struct wrapper w3 = {0x466243B1, 7, fat, NULL};
    r = cuModuleLoadData(&m, &w3);
    printf("wrapper v7 module load: %s\n", name_of(r));
    if (!r) cuModuleUnload(m);
    as_library("wrapper", &w);
    unsigned char *ptx = rd("probe.ptx");
    r = cuModuleLoadFatBinary(&m, ptx);
    printf("fat binary of ptx: %s\n", name_of(r));
    if (!r) cuModuleUnload(m);
    unsigned char *cubin = rd("probe.cubin");
    r = cuModuleLoadFatBinary(&m, cubin);
    printf("fat binary of cubin: %s\n", name_of(r));
    if (!r) cuModuleUnload(m);
    /* a fatbin whose one entry's payload is cut: the header claims more than the entry holds */
    unsigned char *sp = rd("probe.speed.fatbin");
    sp[0x10 + 0x20] ^= 0x55; /* the compressed size of the first entry */
    r = cuModuleLoadData(&m, sp);
    printf("fatbin with a bad compressed size: %s\n", name_of(r));
    if (!r) cuModuleUnload(m);
    sp = rd("probe.speed.fatbin");
    sp[0x10 + 0x40 + 20] ^= 0xff; /* corrupt compressed data */
    r = cuModuleLoadData(&m, sp);
    printf("fatbin with corrupt lz4: %s\n", name_of(r));
    if (!r) cuModuleUnload(m);
    unsigned char magic_only[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0};
    r = cuModuleLoadData(&m, magic_only);
    printf("empty fatbin: %s\n", name_of(r));
    if (!r) cuModuleUnload(m);
    /* a module in a context that is then destroyed */
    CUcontext other;
    CUctxCreateParams cp = {0};
    (void)cp;
    TRY(cuCtxCreate(&other, NULL, 0, dev));
    r = cuModuleLoadData(&m, ptx);
    printf("module in another context: %s\n", name_of(r));
    TRY(cuCtxDestroy(other));
    TRY(cuCtxSetCurrent(ctx));
    CUlibrary lib;
    r = cuLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0);
    CUkernel k;
    cuLibraryGetKernel(&k, lib, "k_static");
    TRY(cuCtxSetCurrent(NULL));
    CUfunction f;
    printf("kernel function without a context: %s\n", name_of(cuKernelGetFunction(&f, k)));
    CUmodule lm;
    printf("library module without a context: %s\n", name_of(cuLibraryGetModule(&lm, lib)));
    int v = -9;
    printf("kernel attribute without a context: %s %d\n", name_of(cuKernelGetAttribute(&v, 0, k, 0)), v);
    unsigned int cnt = 0;
    printf("kernel count without a context: %s %u\n", name_of(cuLibraryGetKernelCount(&cnt, lib)), cnt);
    TRY(cuCtxSetCurrent(ctx));
    printf("library unload: %s\n", name_of(cuLibraryUnload(lib)));
    printf("kernel after unload: %s\n", name_of(cuKernelGetFunction(&f, k)));
    r = cuModuleLoadData(&m, ptx);
    cuModuleUnload(m);
    printf("get function after unload: %s\n", name_of(cuModuleGetFunction(&f, m, "k_static")));
    printf("count after unload: %s\n", name_of(cuModuleGetFunctionCount(&cnt, m)));
    TRY(cuDevicePrimaryCtxRelease(dev));
    printf("done\n");
    return 0;
}
