/* A C client of CUDA graphs on gpu0: a graph built node by node (memset, kernel, child graph,
 * copy to the host, host function, empty node), instantiated and launched twice; the same work
 * captured from a stream, with the capture's queries; a capture forked to a second stream and
 * joined back through events, and one left unjoined; calls forbidden in capture; a graph
 * launched inside a capture. One line per fact, each the same on any GPU, so that a run through
 * the shim can be compared with NVIDIA's driver. Exits 1 on an unexpected error. */
#include "client.h"

static const char *PTX = ADD_ONE_PTX;

enum { N = 256 };

static void CUDA_CB bump(void *data) { (*(int *)data)++; }

static CUDA_KERNEL_NODE_PARAMS kernel_params(CUfunction f, void **args) {
    CUDA_KERNEL_NODE_PARAMS k;
    memset(&k, 0, sizeof k);
    k.func = f;
    k.gridDimX = N / 64, k.gridDimY = 1, k.gridDimZ = 1;
    k.blockDimX = 64, k.blockDimY = 1, k.blockDimZ = 1;
    k.kernelParams = args;
    return k;
}

/* The node types of `g`, counted, in the order of CUgraphNodeType. */
static int print_types(const char *what, CUgraph g) {
    size_t count = 0;
    TRY(cuGraphGetNodes(g, NULL, &count));
    CUgraphNode nodes[32];
    if (count > 32) return 1;
    TRY(cuGraphGetNodes(g, nodes, &count));
    int types[16] = {0};
    for (size_t i = 0; i < count; i++) {
        CUgraphNodeType t;
        TRY(cuGraphNodeGetType(nodes[i], &t));
        if ((int)t < 16) types[t]++;
    }
    size_t edges = 0, roots = 0;
    TRY(cuGraphGetEdges(g, NULL, NULL, NULL, &edges));
    TRY(cuGraphGetRootNodes(g, NULL, &roots));
    printf("%s: %zu nodes (kernel %d, memcpy %d, memset %d, host %d, graph %d, empty %d, wait %d, record %d), "
           "%zu edges, %zu roots\n",
           what, count, types[0], types[1], types[2], types[3], types[4], types[5], types[6], types[7], edges, roots);
    return 0;
}

int main(void) {
    CUdevice dev;
    CUcontext ctx;
    ON_GPU0(dev, ctx);
    CUmodule module;
    CUfunction add_one;
    TRY(cuModuleLoadData(&module, PTX));
    TRY(cuModuleGetFunction(&add_one, module, "add_one"));
    CUdeviceptr p;
    TRY(cuMemAlloc(&p, N * 4));
    unsigned *host;
    TRY(cuMemAllocHost((void **)&host, N * 4));
    unsigned n = N;
    void *args[] = {&p, &n};
    int callbacks = 0;
    CUstream s, s2;
    TRY(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    TRY(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));

    /* Built node by node: set 5, add one, a child graph adds one, copy out, count. */
    CUgraph g, child;
    TRY(cuGraphCreate(&g, 0));
    TRY(cuGraphCreate(&child, 0));
    CUDA_KERNEL_NODE_PARAMS k = kernel_params(add_one, args);
    CUgraphNode child_kernel;
    TRY(cuGraphAddKernelNode(&child_kernel, child, NULL, 0, &k));
    CUDA_MEMSET_NODE_PARAMS set;
    memset(&set, 0, sizeof set);
    set.dst = p, set.value = 5, set.elementSize = 4, set.width = N, set.height = 1;
    CUgraphNode set_node, kernel_node, child_node, copy_node, host_node, empty_node;
    TRY(cuGraphAddMemsetNode(&set_node, g, NULL, 0, &set, ctx));
    TRY(cuGraphAddKernelNode(&kernel_node, g, &set_node, 1, &k));
    TRY(cuGraphAddChildGraphNode(&child_node, g, &kernel_node, 1, child));
    CUDA_MEMCPY3D copy;
    memset(&copy, 0, sizeof copy);
    copy.srcMemoryType = CU_MEMORYTYPE_DEVICE, copy.srcDevice = p;
    copy.dstMemoryType = CU_MEMORYTYPE_HOST, copy.dstHost = host;
    copy.WidthInBytes = N * 4, copy.Height = 1, copy.Depth = 1;
    TRY(cuGraphAddMemcpyNode(&copy_node, g, &child_node, 1, &copy, ctx));
    CUDA_HOST_NODE_PARAMS h = {bump, &callbacks};
    TRY(cuGraphAddHostNode(&host_node, g, &copy_node, 1, &h));
    TRY(cuGraphAddEmptyNode(&empty_node, g, &host_node, 1));
    if (print_types("built", g)) return 1;
    size_t before = 0, after = 0;
    TRY(cuGraphNodeGetDependencies(kernel_node, NULL, NULL, &before));
    TRY(cuGraphNodeGetDependentNodes(kernel_node, NULL, NULL, &after));
    CUgraphNode before_kernel = NULL;
    size_t one = 1;
    TRY(cuGraphNodeGetDependencies(kernel_node, &before_kernel, NULL, &one));
    printf("the kernel node: %zu before it (the memset %d), %zu after it\n", before, before_kernel == set_node, after);
    TRY(cuGraphDestroyNode(empty_node));
    if (print_types("without the empty node", g)) return 1;
    TRY(cuGraphAddEmptyNode(&empty_node, g, &host_node, 1));
    printf("dot file: %s\n", name_of(cuGraphDebugDotPrint(g, "/tmp/peerpool-graphs-client.dot", 0)));
    printf("an edge already there: %s\n", name_of(cuGraphAddDependencies(g, &set_node, &kernel_node, NULL, 1)));
    printf("a dependency of another graph: %s\n", name_of(cuGraphAddEmptyNode(&empty_node, g, &child_kernel, 1)));
    CUgraphExec exec;
    TRY(cuGraphInstantiateWithFlags(&exec, g, 0));
    for (int launch = 1; launch <= 2; launch++) {
        memset(host, 0, N * 4);
        TRY(cuGraphLaunch(exec, s));
        TRY(cuStreamSynchronize(s));
        printf("built, launch %d: host[0] %u host[255] %u, callbacks %d\n", launch, host[0], host[N - 1], callbacks);
    }

    /* The same work captured from a stream. */
    CUstreamCaptureStatus status;
    TRY(cuStreamIsCapturing(s, &status));
    printf("before capture: status %d\n", (int)status);
    TRY(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    TRY(cuMemsetD32Async(p, 1, N, s));
    for (int i = 0; i < 3; i++) TRY(cuLaunchKernel(add_one, N / 64, 1, 1, 64, 1, 1, 0, s, args, NULL));
    TRY(cuMemcpyDtoHAsync(host, p, N * 4, s));
    TRY(cuLaunchHostFunc(s, bump, &callbacks));
    cuuint64_t id = 0;
    CUgraph capturing = NULL;
    const CUgraphNode *deps = NULL;
    size_t ndeps = 0;
    TRY(cuStreamGetCaptureInfo(s, &status, &id, &capturing, &deps, NULL, &ndeps));
    printf("in capture: status %d, id nonzero %d, graph %d, dependencies %zu\n", (int)status, id != 0,
           capturing != NULL, ndeps);
    printf("nothing ran at capture: callbacks %d\n", callbacks);
    CUgraph captured;
    TRY(cuStreamEndCapture(s, &captured));
    if (print_types("captured", captured)) return 1;
    CUgraphExec captured_exec;
    TRY(cuGraphInstantiateWithFlags(&captured_exec, captured, 0));
    memset(host, 0, N * 4);
    TRY(cuGraphLaunch(captured_exec, s));
    TRY(cuStreamSynchronize(s));
    printf("captured, launched: host[0] %u host[255] %u, callbacks %d\n", host[0], host[N - 1], callbacks);

    /* Dependencies set by hand: the second launch depends on nothing. */
    TRY(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    TRY(cuLaunchKernel(add_one, N / 64, 1, 1, 64, 1, 1, 0, s, args, NULL));
    TRY(cuStreamUpdateCaptureDependencies(s, NULL, NULL, 0, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    TRY(cuLaunchKernel(add_one, N / 64, 1, 1, 64, 1, 1, 0, s, args, NULL));
    CUgraph two_roots;
    TRY(cuStreamEndCapture(s, &two_roots));
    if (print_types("dependencies set to none", two_roots)) return 1;
    TRY(cuGraphDestroy(two_roots));

    /* Forked to a second stream through an event and joined back. */
    CUevent fork, join;
    TRY(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    TRY(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    TRY(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    TRY(cuMemsetD32Async(p, 10, N, s));
    TRY(cuEventRecord(fork, s));
    TRY(cuStreamWaitEvent(s2, fork, 0));
    TRY(cuStreamIsCapturing(s2, &status));
    printf("second stream joined: status %d\n", (int)status);
    TRY(cuLaunchKernel(add_one, N / 64, 1, 1, 64, 1, 1, 0, s2, args, NULL));
    TRY(cuEventRecord(join, s2));
    TRY(cuStreamWaitEvent(s, join, 0));
    TRY(cuMemcpyDtoHAsync(host, p, N * 4, s));
    CUgraph forked;
    TRY(cuStreamEndCapture(s, &forked));
    TRY(cuStreamIsCapturing(s2, &status));
    printf("after the end: second stream status %d\n", (int)status);
    if (print_types("forked", forked)) return 1;
    CUgraphExec forked_exec;
    TRY(cuGraphInstantiateWithFlags(&forked_exec, forked, 0));
    TRY(cuGraphLaunch(forked_exec, s));
    TRY(cuStreamSynchronize(s));
    printf("forked, launched: host[0] %u\n", host[0]);

    /* Left unjoined. */
    TRY(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    TRY(cuEventRecord(fork, s));
    TRY(cuStreamWaitEvent(s2, fork, 0));
    TRY(cuLaunchKernel(add_one, N / 64, 1, 1, 64, 1, 1, 0, s2, args, NULL));
    CUgraph unjoined = (CUgraph)1;
    CUresult ended = cuStreamEndCapture(s, &unjoined);
    printf("end unjoined: %s, graph null %d\n", name_of(ended), unjoined == NULL);
    TRY(cuStreamIsCapturing(s2, &status));
    printf("after it: second stream status %d\n", (int)status);

    /* Forbidden in capture. */
    printf("capture the legacy stream: %s\n", name_of(cuStreamBeginCapture(0, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    TRY(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    printf("begin twice: %s\n", name_of(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL)));
    TRY(cuLaunchKernel(add_one, N / 64, 1, 1, 64, 1, 1, 0, s, args, NULL));
    printf("synchronize in capture: %s\n", name_of(cuStreamSynchronize(s)));
    TRY(cuStreamIsCapturing(s, &status));
    printf("then status %d\n", (int)status);
    printf("launch after: %s\n", name_of(cuLaunchKernel(add_one, N / 64, 1, 1, 64, 1, 1, 0, s, args, NULL)));
    CUgraph invalid = (CUgraph)1;
    ended = cuStreamEndCapture(s, &invalid);
    printf("end: %s, graph null %d\n", name_of(ended), invalid == NULL);
    printf("end again: %s\n", name_of(cuStreamEndCapture(s, &invalid)));

    /* A graph launched in a capture becomes a child graph node. */
    TRY(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    TRY(cuGraphLaunch(exec, s));
    TRY(cuLaunchKernel(add_one, N / 64, 1, 1, 64, 1, 1, 0, s, args, NULL));
    CUgraph outer;
    TRY(cuStreamEndCapture(s, &outer));
    if (print_types("launch captured", outer)) return 1;
    CUgraphExec outer_exec;
    TRY(cuGraphInstantiateWithFlags(&outer_exec, outer, 0));
    TRY(cuGraphLaunch(outer_exec, s));
    TRY(cuStreamSynchronize(s));
    unsigned first = 0;
    TRY(cuMemcpyDtoH(&first, p, 4));
    printf("outer launched: p[0] %u, host[0] %u, callbacks %d\n", first, host[0], callbacks);

    TRY(cuGraphExecDestroy(outer_exec));
    TRY(cuGraphExecDestroy(forked_exec));
    TRY(cuGraphExecDestroy(captured_exec));
    TRY(cuGraphExecDestroy(exec));
    TRY(cuGraphDestroy(outer));
    TRY(cuGraphDestroy(forked));
    TRY(cuGraphDestroy(captured));
    TRY(cuGraphDestroy(child));
    TRY(cuGraphDestroy(g));
    TRY(cuMemFreeHost(host));
    printf("done\n");
    return 0;
}
