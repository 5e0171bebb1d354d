/* Runs the PTX executor's corpus (host/ptx/tests/corpus: corpus.ptx, made by NVIDIA's nvcc from
 * corpus.cu, and kernels.txt, how each kernel is launched) through the CUDA driver API, and
 * prints what each kernel wrote: the words' FNV-1a hash, and for approx_math, whose
 * instructions are approximate, every word. The same PTX run by a GPU and by the simulator
 * must print the same, but for approx_math's words, which must lie within the GPU's error
 * bounds of each other. A line of kernels.txt that ends in "cooperative" is launched with
 * cuLaunchCooperativeKernel, one that ends in "cluster=XxYxZ" through cuLaunchKernelEx in clusters
 * of that size.
 * In its cooperative mode it prints how many blocks of grid_sync a multiprocessor holds at
 * once, for several sizes, then launches grid_sync, whose grid synchronises, in the other ways
 * there are: through cuLaunchKernelEx with the cooperative attribute; with more blocks than
 * the device holds at once; and as an ordinary launch after those. In its first-ordinary mode it
 * launches grid_sync ordinarily before any cooperative launch.
 * In its clusters mode it prints what the driver answers about clusters and launches in them.
 * Usage: corpus CORPUS_DIR [PTX_FILE [cooperative|first-ordinary|clusters]] (default corpus.ptx).
 * Exits 1 on an unexpected error. */
#include "client.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The corpus's input words: README.md's hash. */
static uint32_t hash(uint32_t i) {
    uint32_t x = (i * 0x9e3779b9u) ^ 0x5bd1e995u;
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

/* Dynamic shared memory for a block of `threads`: 160 bytes a thread. */
static size_t per_thread_bytes(int threads) { return (size_t)threads * 160; }

/* What the driver says of how many blocks of `f` a multiprocessor holds at once, for block
 * sizes and bytes of dynamic shared memory (0 and a failure's name where it fails), and the
 * block size it suggests. */
static void occupancy(CUfunction f) {
    int sizes[] = {32, 64, 96, 256, 1000, 1024, 1025, 0};
    size_t bytes[] = {0, 100000, 240000};
    for (unsigned i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (unsigned j = 0; j < sizeof bytes / sizeof *bytes; j++) {
            int n = -1;
            CUresult r = cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, sizes[i], bytes[j]);
            printf("occupancy of %d threads and %zu bytes: %s %d\n", sizes[i], bytes[j], name_of(r), n);
        }
    int n = -1;
    CUresult r = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, f, 256, 0, CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE);
    printf("occupancy of 256 threads, caching override disabled: %s %d\n", name_of(r), n);
    struct { CUoccupancyB2DSize bytes_of; size_t bytes; int limit; } asks[] = {
        {NULL, 0, 0}, {NULL, 20000, 0}, {NULL, 0, 200}, {per_thread_bytes, 0, 0}, {per_thread_bytes, 0, 100}, {NULL, 0, 2000}};
    for (unsigned i = 0; i < sizeof asks / sizeof *asks; i++) {
        int grid = -1, block = -1;
        r = cuOccupancyMaxPotentialBlockSize(&grid, &block, f, asks[i].bytes_of, asks[i].bytes, asks[i].limit);
        printf("potential block size%s, %zu bytes, limit %d: %s grid %d block %d\n",
               asks[i].bytes_of ? " with 160 bytes a thread" : "", asks[i].bytes, asks[i].limit, name_of(r), grid, block);
    }
}

/* Launches f through cuLaunchKernelEx in clusters of `cluster` blocks. */
static CUresult launch_in_clusters(CUfunction f, unsigned g[3], unsigned b[3], unsigned shared, unsigned cluster[3],
                                   void **args) {
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = cluster[0];
    attr.value.clusterDim.y = cluster[1];
    attr.value.clusterDim.z = cluster[2];
    CUlaunchConfig config = {g[0], g[1], g[2], b[0], b[1], b[2], shared, 0, &attr, 1};
    return cuLaunchKernelEx(&config, f, args, NULL);
}

/* The driver's answers about clusters: the device's support, each cluster kernel's attributes,
 * and launches in clusters it takes or refuses (the launch's and the synchronisation's codes). */
static int clusters(CUmodule m, CUdevice dev) {
    TRY(show_attribute("cluster launch", CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, dev));
    const char *names[] = {"cluster_exchange", "cluster_shape"};
    CUfunction f[2];
    CUfunction_attribute attrs[] = {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
                                    CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
                                    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED};
    for (int k = 0; k < 2; k++) {
        TRY(cuModuleGetFunction(&f[k], m, names[k]));
        printf("%s attributes:", names[k]);
        for (unsigned a = 0; a < sizeof attrs / sizeof *attrs; a++) {
            int v = -1;
            CUresult r = cuFuncGetAttribute(&v, attrs[a], f[k]);
            if (r == CUDA_SUCCESS) printf(" %d", v);
            else printf(" %s", name_of(r));
        }
        printf("\n");
    }
    CUdeviceptr in, out;
    TRY(cuMemAlloc(&in, 4096 * 4));
    TRY(cuMemAlloc(&out, 4096 * 4));
    TRY(cuMemsetD8(in, 1, 4096 * 4));
    unsigned n = 4096;
    void *args[] = {&in, &out, &n};
    struct { int kernel; unsigned grid[3], block[3], cluster[3]; } asks[] = {
        {0, {4, 2, 1}, {128, 1, 1}, {2, 2, 1}}, {0, {4, 2, 1}, {128, 1, 1}, {4, 1, 1}},
        {1, {6, 1, 1}, {64, 1, 1}, {4, 1, 1}},  {1, {16, 1, 1}, {64, 1, 1}, {16, 1, 1}},
        {1, {9, 1, 1}, {64, 1, 1}, {9, 1, 1}},  {1, {8, 1, 1}, {64, 1, 1}, {8, 1, 1}},
        {1, {8, 1, 1}, {64, 1, 1}, {0, 1, 1}},  {1, {8, 2, 1}, {64, 1, 1}, {2, 2, 1}}};
    for (unsigned i = 0; i < sizeof asks / sizeof *asks; i++) {
        CUresult launched = launch_in_clusters(f[asks[i].kernel], asks[i].grid, asks[i].block, 0, asks[i].cluster, args);
        CUresult synced = cuCtxSynchronize();
        printf("%s grid %ux%ux%u in clusters of %ux%ux%u: launch %s, synchronize %s\n", names[asks[i].kernel],
               asks[i].grid[0], asks[i].grid[1], asks[i].grid[2], asks[i].cluster[0], asks[i].cluster[1],
               asks[i].cluster[2], name_of(launched), name_of(synced));
    }
    return 0;
}

/* How run() launches a kernel: as its line says, or in one of the cooperative mode's ways. */
enum how { AS_LISTED, THROUGH_EX, TOO_MANY_BLOCKS, ORDINARY };

/* One kernel of kernels.txt: launched on fresh buffers; what it wrote, printed. */
static int run(CUmodule m, const char *line, enum how how) {
    char name[128], kind[32] = "";
    unsigned g[3], b[3], shared, in_words, out_words, n;
    unsigned long fill;
    int fields = sscanf(line, "%127s %u %u %u %u %u %u %u %u %u %u %li %31s", name, &g[0], &g[1], &g[2], &b[0], &b[1],
                        &b[2], &shared, &in_words, &out_words, &n, (long *)&fill, kind);
    int cooperative = fields == 13 && strcmp(kind, "cooperative") == 0;
    unsigned cluster[3] = {0, 0, 0};
    int clustered = fields == 13 && sscanf(kind, "cluster=%ux%ux%u", &cluster[0], &cluster[1], &cluster[2]) == 3;
    if (fields < 12 || (fields == 13 && !cooperative && !clustered)) {
        printf("bad line: %s\n", line);
        return 1;
    }
    CUfunction f;
    TRY(cuModuleGetFunction(&f, m, name));
    uint32_t *host_in = calloc(in_words + 1, 4), *host_out = calloc(out_words + 1, 4);
    for (unsigned i = 0; i < in_words; i++) host_in[i] = hash(i);
    for (unsigned i = 0; i < out_words; i++) host_out[i] = (uint32_t)fill;
    CUdeviceptr in, out;
    TRY(cuMemAlloc(&in, (in_words + 1) * 4ull));
    TRY(cuMemAlloc(&out, (out_words + 1) * 4ull));
    TRY(cuMemcpyHtoD(in, host_in, (in_words + 1) * 4ull));
    TRY(cuMemcpyHtoD(out, host_out, (out_words + 1) * 4ull));
    void *args[] = {&in, &out, &n};
    if (how == AS_LISTED && cooperative) {
        TRY(cuLaunchCooperativeKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], shared, 0, args));
    } else if (how == AS_LISTED && clustered) {
        TRY(launch_in_clusters(f, g, b, shared, cluster, args));
    } else if (how == AS_LISTED) {
        TRY(cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], shared, 0, args, NULL));
    } else if (how == THROUGH_EX) {
        CUlaunchAttribute attr;
        memset(&attr, 0, sizeof attr);
        attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attr.value.cooperative = 1;
        CUlaunchConfig config = {g[0], g[1], g[2], b[0], b[1], b[2], shared, 0, &attr, 1};
        TRY(cuLaunchKernelEx(&config, f, args, NULL));
        printf("through cuLaunchKernelEx with the cooperative attribute: ");
    } else if (how == TOO_MANY_BLOCKS) {
        /* More blocks than any H200-class device holds: 132 multiprocessors of at most 32. */
        unsigned blocks = 132 * 32 * 2;
        printf("%s with %u blocks: %s\n", name, blocks,
               name_of(cuLaunchCooperativeKernel(f, blocks, 1, 1, b[0], b[1], b[2], shared, 0, args)));
        return 0;
    } else {
        /* Last: a failure would end the context. */
        CUresult launched = cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], shared, 0, args, NULL);
        CUresult synced = cuCtxSynchronize();
        printf("launched ordinarily: launch %s, synchronize %s", name_of(launched), name_of(synced));
        if (launched != CUDA_SUCCESS || synced != CUDA_SUCCESS) {
            printf("\n");
            return 0;
        }
        printf(": ");
    }
    TRY(cuCtxSynchronize());
    TRY(cuMemcpyDtoH(host_out, out, out_words * 4ull));
    uint64_t fnv = 0xcbf29ce484222325ull;
    for (unsigned i = 0; i < out_words * 4; i++) fnv = (fnv ^ ((unsigned char *)host_out)[i]) * 0x100000001b3ull;
    printf("%s: %u words fnv %016llx\n", name, out_words, (unsigned long long)fnv);
    /* Every word of approx_math, and of the kernel $PEERPOOL_CORPUS_WORDS names (to see where a
     * hash differs). */
    const char *words = getenv("PEERPOOL_CORPUS_WORDS");
    if (strcmp(name, "approx_math") == 0 || (words && strcmp(name, words) == 0))
        for (unsigned i = 0; i < out_words; i += 8) {
            printf("%s[%u]:", name, i);
            for (unsigned j = i; j < i + 8 && j < out_words; j++) printf(" %08x", host_out[j]);
            printf("\n");
        }
    TRY(cuMemFree(in));
    TRY(cuMemFree(out));
    free(host_in);
    free(host_out);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0); /* what was printed survives a crash */
    if (argc < 2) {
        printf("usage: corpus CORPUS_DIR\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    ON_GPU0(dev, ctx);
    char *ptx = (char *)read_or_exit(argv[1], argc > 2 ? argv[2] : "corpus.ptx");
    char *kernels = (char *)read_or_exit(argv[1], "kernels.txt");
    CUmodule m;
    TRY(cuModuleLoadData(&m, ptx));
    if (argc > 3 && strcmp(argv[3], "clusters") == 0) {
        if (clusters(m, dev)) return 1;
        printf("done\n");
        return 0;
    }
    int first_ordinary = argc > 3 && strcmp(argv[3], "first-ordinary") == 0;
    if (first_ordinary || (argc > 3 && strcmp(argv[3], "cooperative") == 0)) {
        char *line = strstr(kernels, "\ngrid_sync ");
        if (!line) {
            printf("kernels.txt has no grid_sync\n");
            return 1;
        }
        char *end = strchr(line + 1, '\n');
        if (end) *end = '\0';
        CUfunction f;
        TRY(cuModuleGetFunction(&f, m, "grid_sync"));
        if (!first_ordinary) occupancy(f);
        for (enum how how = first_ordinary ? ORDINARY : THROUGH_EX; how <= ORDINARY; how++)
            if (run(m, line + 1, how)) return 1;
        printf("done\n");
        return 0;
    }
    for (char *line = strtok(kernels, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || line[0] == '\0') continue;
        if (run(m, line, AS_LISTED)) return 1;
    }
    /* const_and_global's thread count, where the module has it (corpus.cu's does). */
    CUdeviceptr counter;
    size_t size;
    unsigned int count = 0;
    if (cuModuleGetGlobal(&counter, &size, m, "counter") == CUDA_SUCCESS) {
        TRY(cuMemcpyDtoH(&count, counter, sizeof count));
        printf("counter: %u\n", count);
    }
    TRY(cuModuleUnload(m));
    printf("done\n");
    return 0;
}
