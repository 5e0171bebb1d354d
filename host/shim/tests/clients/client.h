/* What the C clients share: a CUresult's name, and TRY, which on an unexpected error prints
 * "fail <call>: <code>", then "after <code>" for one more call (a context killed by a sticky
 * error answers it with the same code), and makes main return 1; device attributes and pool
 * properties; the files they load; and the kernel the graph clients launch. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *name_of(CUresult r) {
    const char *name = "?";
    cuGetErrorName(r, &name);
    return name;
}

#define TRY(call)                                                                        \
    do {                                                                                 \
        CUresult r_ = (call);                                                            \
        if (r_ != CUDA_SUCCESS) {                                                        \
            printf("fail %s: %s\n", #call, name_of(r_));                                 \
            int count_;                                                                  \
            printf("after %s\n", name_of(cuDeviceGetCount(&count_)));                    \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

/* add_one(p, n): p[i] += 1 for each i < n of the grid (PTX for sm_80), what the graph clients
 * launch. */
#define ADD_ONE_PTX \
    ".version 8.0\n.target sm_80\n.address_size 64\n" \
    ".visible .entry add_one(.param .u64 p, .param .u32 n)\n{\n" \
    ".reg .pred %p<2>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<4>;\n" \
    "ld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\n" \
    "mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmov.u32 %r4, %tid.x;\n" \
    "mad.lo.s32 %r2, %r2, %r3, %r4;\nsetp.ge.u32 %p1, %r2, %r1;\n@%p1 bra DONE;\n" \
    "cvta.to.global.u64 %rd1, %rd1;\nmul.wide.u32 %rd2, %r2, 4;\nadd.s64 %rd3, %rd1, %rd2;\n" \
    "ld.global.u32 %r5, [%rd3];\nadd.s32 %r5, %r5, 1;\nst.global.u32 [%rd3], %r5;\n" \
    "DONE:\nret;\n}\n"

/* In main: cuInit, then device 0 into `dev` and its primary context, retained and made current,
 * into `ctx` (TRY on each). */
#define ON_GPU0(dev, ctx)                                                                \
    do {                                                                                 \
        TRY(cuInit(0));                                                                  \
        TRY(cuDeviceGet(&(dev), 0));                                                     \
        TRY(cuDevicePrimaryCtxRetain(&(ctx), (dev)));                                    \
        TRY(cuCtxSetCurrent(ctx));                                                       \
    } while (0)

/* Prints "<what> <value>" of `dev`'s attribute `attr`, and answers the query's result. */
static inline CUresult show_attribute(const char *what, CUdevice_attribute attr, CUdevice dev) {
    int value = 0;
    CUresult r = cuDeviceGetAttribute(&value, attr, dev);
    if (r == CUDA_SUCCESS) printf("%s %d\n", what, value);
    return r;
}

/* The properties of a pinned pool on device `device`, the rest zero. */
static inline CUmemPoolProps pinned_pool_props(int device) {
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = device;
    return props;
}

/* The bytes of dir/name, NUL-terminated (PTX is text), their count in *len unless len is NULL;
 * NULL if the file cannot be opened, sized (a pipe, a directory) or read whole. */
static inline unsigned char *read_bytes(const char *dir, const char *name, size_t *len) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    unsigned char *bytes = n >= 0 && fseek(f, 0, SEEK_SET) == 0 ? calloc((size_t)n + 1, 1) : NULL;
    if (bytes && fread(bytes, 1, (size_t)n, f) != (size_t)n) {
        free(bytes);
        bytes = NULL;
    }
    fclose(f);
    if (bytes && len) *len = (size_t)n;
    return bytes;
}

/* read_bytes, or "cannot read dir/name" and exit 1. */
static inline unsigned char *read_or_exit(const char *dir, const char *name) {
    unsigned char *bytes = read_bytes(dir, name, NULL);
    if (!bytes) {
        printf("cannot read %s/%s\n", dir, name);
        exit(1);
    }
    return bytes;
}

/* In main: stdout unbuffered (what was printed survives a crash), and the IMAGES_DIR argument
 * (argv[1]) copied into `dir`; without one, "usage: <usage>" and exit 2. */
static inline void images_dir_arg(int argc, char **argv, char *dir, size_t size, const char *usage) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 2) {
        printf("usage: %s\n", usage);
        exit(2);
    }
    snprintf(dir, size, "%s", argv[1]);
}
