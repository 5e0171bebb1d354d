/* Compiles a CUDA C file to PTX with NVIDIA's NVRTC, as programs that compile their kernels at
 * run time do: nvrtc SOURCE.cu OUT.ptx [options...] (default: --gpu-architecture=compute_90).
 * Prints NVRTC's log on failure and exits 1. */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                          \
    do {                                                                     \
        nvrtcResult r_ = (call);                                             \
        if (r_ != NVRTC_SUCCESS) {                                           \
            fprintf(stderr, "%s: %s\n", #call, nvrtcGetErrorString(r_));     \
            return 1;                                                        \
        }                                                                    \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: nvrtc SOURCE.cu OUT.ptx [options...]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *source = calloc((size_t)n + 1, 1);
    if (fread(source, 1, (size_t)n, f) != (size_t)n) return 1;
    fclose(f);
    const char *fallback[] = {"--gpu-architecture=compute_90"};
    const char **options = argc > 3 ? (const char **)argv + 3 : fallback;
    int count = argc > 3 ? argc - 3 : 1;
    nvrtcProgram program;
    CHECK(nvrtcCreateProgram(&program, source, argv[1], 0, NULL, NULL));
    nvrtcResult compiled = nvrtcCompileProgram(program, count, options);
    size_t log_size = 0;
    nvrtcGetProgramLogSize(program, &log_size);
    if (compiled != NVRTC_SUCCESS) {
        char *log = calloc(log_size + 1, 1);
        nvrtcGetProgramLog(program, log);
        fprintf(stderr, "%s\n%s\n", nvrtcGetErrorString(compiled), log);
        return 1;
    }
    size_t size = 0;
    CHECK(nvrtcGetPTXSize(program, &size));
    char *ptx = calloc(size + 1, 1);
    CHECK(nvrtcGetPTX(program, ptx));
    FILE *out = fopen(argv[2], "wb");
    if (!out || fwrite(ptx, 1, size - 1, out) != size - 1) { /* size counts the NUL */
        fprintf(stderr, "cannot write %s\n", argv[2]);
        return 1;
    }
    fclose(out);
    return 0;
}
