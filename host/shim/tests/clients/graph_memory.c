/* Graph memory on gpu0: allocation and free nodes built by hand and captured from
 * cuMemAllocAsync (the default pool and a pool of its own), their parameters, the address kept
 * across launches, an allocation left to the caller (a second launch refused until it is freed,
 * or freed by auto-free on launch), the rules on child graphs, clones and instantiations, the
 * device's graph-memory attributes and cuDeviceGraphMemTrim. One line per fact, each the same
 * on any GPU, so that a run through the shim can be compared with NVIDIA's driver. Exits 1 on
 * an unexpected error. */
#include "client.h"

static const char *PTX = ADD_ONE_PTX;

enum { N = 1024, BYTES = 1 << 20 };

static int attributes(const char *when, CUdevice dev) {
    cuuint64_t used = 0, used_high = 0, reserved = 0, reserved_high = 0;
    TRY(cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used));
    TRY(cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &used_high));
    TRY(cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved));
    TRY(cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &reserved_high));
    printf("%s: used %llu (high %llu), reserved %llu (high %llu)\n", when, (unsigned long long)used,
           (unsigned long long)used_high, (unsigned long long)reserved, (unsigned long long)reserved_high);
    return 0;
}

static int show_alloc_node(const char *what, CUgraphNode node) {
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    TRY(cuGraphMemAllocNodeGetParams(node, &p));
    printf("%s: bytes %zu, type %d, location %d/%d, handle types %d, access descriptors %zu", what, p.bytesize,
           (int)p.poolProps.allocType, (int)p.poolProps.location.type, p.poolProps.location.id,
           (int)p.poolProps.handleTypes, p.accessDescCount);
    for (size_t i = 0; i < p.accessDescCount; i++)
        printf(" [%d/%d %d]", (int)p.accessDescs[i].location.type, p.accessDescs[i].location.id,
               (int)p.accessDescs[i].flags);
    printf(", address nonzero %d\n", p.dptr != 0);
    return 0;
}

/* The first node of `type` in `g`, or NULL. */
static CUgraphNode first_of(CUgraph g, CUgraphNodeType type) {
    CUgraphNode nodes[16];
    size_t count = 16;
    if (cuGraphGetNodes(g, nodes, &count) != CUDA_SUCCESS) return NULL;
    for (size_t i = 0; i < count && i < 16; i++) {
        CUgraphNodeType t;
        if (cuGraphNodeGetType(nodes[i], &t) == CUDA_SUCCESS && t == type) return nodes[i];
    }
    return NULL;
}

int main(void) {
    CUdevice dev;
    CUcontext ctx;
    ON_GPU0(dev, ctx);
    CUmodule module;
    CUfunction add_one;
    TRY(cuModuleLoadData(&module, PTX));
    TRY(cuModuleGetFunction(&add_one, module, "add_one"));
    CUstream s;
    TRY(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    unsigned *host;
    TRY(cuMemAllocHost((void **)&host, N * 4));
    unsigned n = N;
    if (attributes("at the start", dev)) return 1;

    /* Built by hand: allocate, set 5, add one, copy out, free. */
    CUgraph g;
    TRY(cuGraphCreate(&g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS a;
    memset(&a, 0, sizeof a);
    a.poolProps = pinned_pool_props(0);
    a.bytesize = BYTES;
    CUgraphNode alloc_node, set_node, kernel_node, copy_node, free_node;
    TRY(cuGraphAddMemAllocNode(&alloc_node, g, NULL, 0, &a));
    CUdeviceptr p = a.dptr;
    if (show_alloc_node("built allocation", alloc_node)) return 1;
    CUDA_MEMSET_NODE_PARAMS set;
    memset(&set, 0, sizeof set);
    set.dst = p, set.value = 5, set.elementSize = 4, set.width = N, set.height = 1;
    TRY(cuGraphAddMemsetNode(&set_node, g, &alloc_node, 1, &set, ctx));
    void *args[] = {&p, &n};
    CUDA_KERNEL_NODE_PARAMS k;
    memset(&k, 0, sizeof k);
    k.func = add_one, k.gridDimX = N / 128, k.gridDimY = 1, k.gridDimZ = 1;
    k.blockDimX = 128, k.blockDimY = 1, k.blockDimZ = 1, k.kernelParams = args;
    TRY(cuGraphAddKernelNode(&kernel_node, g, &set_node, 1, &k));
    CUDA_MEMCPY3D copy;
    memset(&copy, 0, sizeof copy);
    copy.srcMemoryType = CU_MEMORYTYPE_DEVICE, copy.srcDevice = p;
    copy.dstMemoryType = CU_MEMORYTYPE_HOST, copy.dstHost = host;
    copy.WidthInBytes = N * 4, copy.Height = 1, copy.Depth = 1;
    TRY(cuGraphAddMemcpyNode(&copy_node, g, &kernel_node, 1, &copy, ctx));
    TRY(cuGraphAddMemFreeNode(&free_node, g, &copy_node, 1, p));
    CUdeviceptr freed = 0;
    TRY(cuGraphMemFreeNodeGetParams(free_node, &freed));
    printf("free node frees the allocation: %d\n", freed == p);
    CUgraphNode extra;
    printf("a second free of it: %s\n", name_of(cuGraphAddMemFreeNode(&extra, g, &free_node, 1, p)));
    printf("a free of no allocation: %s\n", name_of(cuGraphAddMemFreeNode(&extra, g, NULL, 0, p + 4096)));
    CUgraph outer;
    TRY(cuGraphCreate(&outer, 0));
    printf("as a child graph: %s\n", name_of(cuGraphAddChildGraphNode(&extra, outer, NULL, 0, g)));
    CUgraph clone = NULL;
    CUresult cloned = cuGraphClone(&clone, g);
    printf("cloned: %s\n", name_of(cloned));
    if (clone) TRY(cuGraphDestroy(clone));
    CUgraphExec exec, second_exec;
    TRY(cuGraphInstantiateWithFlags(&exec, g, 0));
    printf("a second instantiation: %s\n", name_of(cuGraphInstantiateWithFlags(&second_exec, g, 0)));
    for (int launch = 1; launch <= 2; launch++) {
        memset(host, 0, N * 4);
        TRY(cuGraphLaunch(exec, s));
        TRY(cuStreamSynchronize(s));
        printf("built, launch %d: host[0] %u host[%d] %u\n", launch, host[0], N - 1, host[N - 1]);
    }
    if (attributes("after the launches", dev)) return 1;
    TRY(cuDeviceGraphMemTrim(dev));
    if (attributes("after a trim", dev)) return 1;
    TRY(cuGraphExecDestroy(exec));
    TRY(cuGraphDestroy(outer));

    /* Captured from the default pool and from a pool of its own. */
    CUmemoryPool pool;
    CUmemPoolProps props = pinned_pool_props(0);
    TRY(cuMemPoolCreate(&pool, &props));
    CUmemAccessDesc self;
    memset(&self, 0, sizeof self);
    self.location.type = CU_MEM_LOCATION_TYPE_DEVICE, self.location.id = 0;
    self.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    TRY(cuMemPoolSetAccess(pool, &self, 1));
    CUdeviceptr q = 0, r = 0;
    TRY(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    TRY(cuMemAllocAsync(&q, BYTES, s));
    TRY(cuMemAllocFromPoolAsync(&r, BYTES, pool, s));
    TRY(cuMemsetD32Async(q, 1, N, s));
    void *qargs[] = {&q, &n};
    TRY(cuLaunchKernel(add_one, N / 128, 1, 1, 128, 1, 1, 0, s, qargs, NULL));
    TRY(cuMemcpyDtoDAsync(r, q, N * 4, s));
    TRY(cuMemcpyDtoHAsync(host, r, N * 4, s));
    TRY(cuMemFreeAsync(q, s));
    CUgraph captured;
    TRY(cuStreamEndCapture(s, &captured));
    CUgraphNode nodes[16];
    size_t count = 16;
    TRY(cuGraphGetNodes(captured, nodes, &count));
    int allocs = 0, frees = 0;
    for (size_t i = 0; i < count; i++) {
        CUgraphNodeType t;
        TRY(cuGraphNodeGetType(nodes[i], &t));
        if (t == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
            char what[64];
            snprintf(what, sizeof what, "captured allocation %d", ++allocs);
            if (show_alloc_node(what, nodes[i])) return 1;
        }
        frees += t == CU_GRAPH_NODE_TYPE_MEM_FREE;
    }
    printf("captured: %zu nodes, %d allocations, %d frees\n", count, allocs, frees);
    CUmemoryPool of_r = NULL;
    printf("a graph allocation's pool attribute: %s", name_of(cuPointerGetAttribute(&of_r, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, r)));
    printf(", the pool's %d\n", of_r == pool);

    /* r is left to the caller: a second launch waits for its free. */
    CUgraphExec captured_exec;
    TRY(cuGraphInstantiateWithFlags(&captured_exec, captured, 0));
    memset(host, 0, N * 4);
    TRY(cuGraphLaunch(captured_exec, s));
    TRY(cuStreamSynchronize(s));
    printf("captured, launched: host[0] %u host[%d] %u\n", host[0], N - 1, host[N - 1]);
    if (attributes("with one allocation left", dev)) return 1;
    printf("launched again before the free: %s\n", name_of(cuGraphLaunch(captured_exec, s)));
    TRY(cuStreamSynchronize(s));
    printf("freed by cuMemFree: %s", name_of(cuMemFree(r)));
    printf(", then by cuMemFreeAsync: %s\n", name_of(cuMemFreeAsync(r, s)));
    TRY(cuStreamSynchronize(s));
    printf("freed twice: %s\n", name_of(cuMemFreeAsync(r, s)));
    TRY(cuStreamSynchronize(s));
    CUdeviceptr r_first = r;
    printf("launched after the free: %s", name_of(cuGraphLaunch(captured_exec, s)));
    TRY(cuStreamSynchronize(s));
    printf(", freed after it: %s\n", name_of(cuMemFreeAsync(r, s)));
    TRY(cuStreamSynchronize(s));
    TRY(cuGraphExecDestroy(captured_exec));

    /* Auto-free on launch: launched twice without a free. */
    CUgraphExec auto_exec;
    TRY(cuGraphInstantiateWithFlags(&auto_exec, captured, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
    for (int launch = 1; launch <= 2; launch++) {
        memset(host, 0, N * 4);
        printf("auto-free, launch %d: %s", launch, name_of(cuGraphLaunch(auto_exec, s)));
        TRY(cuStreamSynchronize(s));
        printf(", host[0] %u\n", host[0]);
    }
    printf("the same address each launch: %d\n", r == r_first);
    TRY(cuGraphExecDestroy(auto_exec));
    if (attributes("after the executables are gone", dev)) return 1;
    TRY(cuDeviceGraphMemTrim(dev));
    if (attributes("after a trim", dev)) return 1;
    CUgraphNode found = first_of(captured, CU_GRAPH_NODE_TYPE_MEM_FREE);
    CUdeviceptr free_of = 0;
    if (found) TRY(cuGraphMemFreeNodeGetParams(found, &free_of));
    printf("the captured free frees the first allocation: %d\n", free_of == q);
    TRY(cuGraphDestroy(captured));
    TRY(cuGraphDestroy(g));
    TRY(cuMemPoolDestroy(pool));
    TRY(cuMemFreeHost(host));
    printf("done\n");
    return 0;
}
