/* A C client that loads PTX the JIT compiler must refuse, and PTX it must take, and prints what
 * the driver answers: the code at each call that takes an image (cuModuleLoadDataEx,
 * cuLibraryLoadData, cuLinkAddData, cuLinkComplete), the JIT's error and info logs, and the
 * sizes written back into the log-size options. One line per fact, no address printed, so that
 * a run through the shim can be compared with NVIDIA's driver.
 * Usage: jit_logs. Exits 1 on an unexpected error. */
#include "client.h"
#include <stdint.h>

#define HEADER ".version 9.0\n.target sm_90\n.address_size 64\n"

/* Each case: a name and its PTX. */
static const char *const CASES[][2] = {
    {"valid", HEADER ".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n"
              "ld.param.u64 %rd1, [p];\nmov.u32 %r1, 7;\nst.global.u32 [%rd1], %r1;\nret;\n}\n"},
    {"unknown_state_space", HEADER ".visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<2>;\n"
                            "ld.parm.u64 %rd1, [p];\nret;\n}\n"},
    {"unknown_instruction", HEADER ".visible .entry k()\n{\n.reg .b32 %r<2>;\nfrob.b32 %r1, 1;\nret;\n}\n"},
    {"sat_that_cannot_overflow", HEADER ".visible .entry k(.param .u64 p)\n{\n.reg .b16 %rs<2>;\n"
                                 ".reg .b32 %r<2>;\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [p];\n"
                                 "ld.global.s16 %rs1, [%rd1];\ncvt.sat.s32.s16 %r1, %rs1;\n"
                                 "st.global.s32 [%rd1], %r1;\nret;\n}\n"},
    {"undefined_extern_call", HEADER ".extern .func (.param .b32 r) helper(.param .b32 a);\n"
                              ".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<3>;\n.reg .b64 %rd<2>;\n"
                              "ld.param.u64 %rd1, [p];\nmov.u32 %r1, 1;\n{\n.param .b32 a;\n.param .b32 r;\n"
                              "st.param.b32 [a], %r1;\ncall.uni (r), helper, (a);\nld.param.b32 %r2, [r];\n}\n"
                              "st.global.u32 [%rd1], %r2;\nret;\n}\n"},
    {"missing_semicolon", HEADER ".visible .entry k()\n{\n.reg .b32 %r<2>;\nmov.u32 %r1, 1\nret;\n}\n"},
    {"undeclared_register", HEADER ".visible .entry k()\n{\n.reg .b32 %r<2>;\nmov.u32 %r5, 1;\nret;\n}\n"},
    {"isa_9_5", ".version 9.5\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n"},
    {"newer_target", ".version 9.0\n.target sm_100\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n"},
};

#define LOG 4096

/* Prints "<what> <code> error_size <n> info_size <n>", then each log's lines prefixed. */
static void show(const char *what, CUresult r, char *error, uintptr_t error_size, char *info, uintptr_t info_size) {
    printf("%s %s error_size %lu info_size %lu\n", what, name_of(r), (unsigned long)error_size,
           (unsigned long)info_size);
    const char *logs[2][2] = {{"error", error}, {"info", info}};
    for (int i = 0; i < 2; i++) {
        const char *line = logs[i][1];
        while (line && *line) {
            const char *end = strchr(line, '\n');
            printf("%s %s| %.*s\n", what, logs[i][0], end ? (int)(end - line) : (int)strlen(line), line);
            line = end ? end + 1 : NULL;
        }
    }
}

/* The JIT options: both logs, their sizes, and verbose or not. */
struct Jit {
    CUjit_option options[5];
    void *values[5];
    char error[LOG], info[LOG];
};

static void jit(struct Jit *j, int verbose) {
    memset(j->error, 0, LOG);
    memset(j->info, 0, LOG);
    CUjit_option options[5] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                               CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
    void *values[5] = {j->error, (void *)(uintptr_t)LOG, j->info, (void *)(uintptr_t)LOG, (void *)(uintptr_t)verbose};
    memcpy(j->options, options, sizeof options);
    memcpy(j->values, values, sizeof values);
}

int main(void) {
    CUdevice dev;
    CUcontext ctx;
    ON_GPU0(dev, ctx);
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        const char *name = CASES[c][0], *ptx = CASES[c][1];
        char what[128];
        for (int verbose = 0; verbose < 2; verbose++) {
            struct Jit j;
            jit(&j, verbose);
            CUmodule m;
            CUresult r = cuModuleLoadDataEx(&m, ptx, 5, j.options, j.values);
            snprintf(what, sizeof what, "%s module verbose %d", name, verbose);
            show(what, r, j.error, (uintptr_t)j.values[1], j.info, (uintptr_t)j.values[3]);
            if (r == CUDA_SUCCESS) TRY(cuModuleUnload(m));
        }
        CUresult r;
        CUmodule m;
        snprintf(what, sizeof what, "%s module plain", name);
        r = cuModuleLoadData(&m, ptx);
        printf("%s %s\n", what, name_of(r));
        if (r == CUDA_SUCCESS) TRY(cuModuleUnload(m));
        struct Jit j;
        jit(&j, 0);
        CUlibrary lib;
        r = cuLibraryLoadData(&lib, ptx, j.options, j.values, 5, NULL, NULL, 0);
        snprintf(what, sizeof what, "%s library", name);
        show(what, r, j.error, (uintptr_t)j.values[1], j.info, (uintptr_t)j.values[3]);
        if (r == CUDA_SUCCESS) {
            CUkernel k;
            printf("%s library kernel %s\n", name, name_of(cuLibraryGetKernel(&k, lib, "k")));
            TRY(cuLibraryUnload(lib));
        }
        /* The JIT linker: -rdc style, one piece. */
        jit(&j, 0);
        CUlinkState link;
        TRY(cuLinkCreate(5, j.options, j.values, &link));
        r = cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)ptx, strlen(ptx) + 1, name, 0, NULL, NULL);
        snprintf(what, sizeof what, "%s link add", name);
        show(what, r, j.error, (uintptr_t)j.values[1], j.info, (uintptr_t)j.values[3]);
        if (r == CUDA_SUCCESS) {
            void *cubin;
            size_t size;
            r = cuLinkComplete(link, &cubin, &size);
            snprintf(what, sizeof what, "%s link complete", name);
            show(what, r, j.error, (uintptr_t)j.values[1], j.info, (uintptr_t)j.values[3]);
        }
        TRY(cuLinkDestroy(link));
    }
    /* A log buffer too small for the log: what is written, and the size written back. */
    struct Jit j;
    jit(&j, 0);
    j.values[1] = (void *)(uintptr_t)16;
    CUmodule m;
    CUresult r = cuModuleLoadDataEx(&m, CASES[1][1], 5, j.options, j.values);
    show("small_log module", r, j.error, (uintptr_t)j.values[1], j.info, (uintptr_t)j.values[3]);
    printf("done\n");
    return 0;
}
