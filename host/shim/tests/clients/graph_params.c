/* A C client of graph node parameters on gpu0: each kind's parameters read back and set on a
 * graph (memset, kernel, child graph, copy to the host, host function, events), the embedded
 * graph of a child graph node changed; the graph instantiated and its nodes set in the
 * executable graph (each setter changing what the next launch computes), a node disabled and
 * enabled, the executable graph updated from a graph of the same shape and refused one of
 * another; instantiation flags read back; dependencies removed; a clone's node found; kernel
 * node attributes; nodes added and set through CUgraphNodeParams. One line per fact, each the
 * same on any GPU, so that a run through the shim can be compared with NVIDIA's driver. Exits 1
 * on an unexpected error. */
#include "client.h"

static const char *PTX =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry add_to(.param .u64 p, .param .u32 n, .param .u32 v)\n{\n"
    ".reg .pred %p<2>;\n.reg .b32 %r<7>;\n.reg .b64 %rd<4>;\n"
    "ld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nld.param.u32 %r6, [v];\n"
    "mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmov.u32 %r4, %tid.x;\n"
    "mad.lo.s32 %r2, %r2, %r3, %r4;\nsetp.ge.u32 %p1, %r2, %r1;\n@%p1 bra DONE;\n"
    "cvta.to.global.u64 %rd1, %rd1;\nmul.wide.u32 %rd2, %r2, 4;\nadd.s64 %rd3, %rd1, %rd2;\n"
    "ld.global.u32 %r5, [%rd3];\nadd.s32 %r5, %r5, %r6;\nst.global.u32 [%rd3], %r5;\n"
    "DONE:\nret;\n}\n";

enum { N = 256 };

static void CUDA_CB bump(void *data) { (*(int *)data)++; }
static void CUDA_CB bump_ten(void *data) { (*(int *)data) += 10; }

/* add_to over N values, its parameters at `args` (p, n, v). */
static CUDA_KERNEL_NODE_PARAMS kernel_params(CUfunction f, void **args) {
    CUDA_KERNEL_NODE_PARAMS k;
    memset(&k, 0, sizeof k);
    k.func = f;
    k.gridDimX = N / 64, k.gridDimY = 1, k.gridDimZ = 1;
    k.blockDimX = 64, k.blockDimY = 1, k.blockDimZ = 1;
    k.kernelParams = args;
    return k;
}

/* N 4-byte values of `value` at `dst`. */
static CUDA_MEMSET_NODE_PARAMS memset_params(CUdeviceptr dst, unsigned value) {
    CUDA_MEMSET_NODE_PARAMS m;
    memset(&m, 0, sizeof m);
    m.dst = dst, m.value = value, m.elementSize = 4, m.width = N, m.height = 1;
    return m;
}

/* `bytes` from device memory to the host. */
static CUDA_MEMCPY3D copy_params(CUdeviceptr src, void *dst, size_t bytes) {
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE, c.srcDevice = src;
    c.dstMemoryType = CU_MEMORYTYPE_HOST, c.dstHost = dst;
    c.WidthInBytes = bytes, c.Height = 1, c.Depth = 1;
    return c;
}

/* A graph of one add_to node, adding `v`. */
static CUresult one_kernel(CUgraph *g, CUfunction f, CUdeviceptr *p, unsigned *n, unsigned v) {
    CUresult r = cuGraphCreate(g, 0);
    if (r != CUDA_SUCCESS) return r;
    void *args[] = {p, n, &v};
    CUDA_KERNEL_NODE_PARAMS k = kernel_params(f, args);
    CUgraphNode node;
    return cuGraphAddKernelNode(&node, *g, NULL, 0, &k);
}

/* The chain memset (m), kernel (adds k), child graph (`child`), copy to `out`, host function
 * (`fn`) into a new graph `g`, its nodes in `nodes`. */
static CUresult chain(CUgraph *g, CUgraphNode *nodes, CUfunction f, CUdeviceptr *p, unsigned *n, unsigned m,
                      unsigned k, CUgraph child, void *out, CUhostFn fn, int *calls, CUcontext ctx) {
    CUresult r = cuGraphCreate(g, 0);
    CUDA_MEMSET_NODE_PARAMS set = memset_params(*p, m);
    if (r == CUDA_SUCCESS) r = cuGraphAddMemsetNode(&nodes[0], *g, NULL, 0, &set, ctx);
    void *args[] = {p, n, &k};
    CUDA_KERNEL_NODE_PARAMS kp = kernel_params(f, args);
    if (r == CUDA_SUCCESS) r = cuGraphAddKernelNode(&nodes[1], *g, &nodes[0], 1, &kp);
    if (r == CUDA_SUCCESS) r = cuGraphAddChildGraphNode(&nodes[2], *g, &nodes[1], 1, child);
    CUDA_MEMCPY3D copy = copy_params(*p, out, N * 4);
    if (r == CUDA_SUCCESS) r = cuGraphAddMemcpyNode(&nodes[3], *g, &nodes[2], 1, &copy, ctx);
    CUDA_HOST_NODE_PARAMS h = {fn, calls};
    if (r == CUDA_SUCCESS) r = cuGraphAddHostNode(&nodes[4], *g, &nodes[3], 1, &h);
    return r;
}

/* Launches `exec` on `s` and waits for it. */
static CUresult launch(CUgraphExec exec, CUstream s) {
    CUresult r = cuGraphLaunch(exec, s);
    return r == CUDA_SUCCESS ? cuStreamSynchronize(s) : r;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    CUdevice dev;
    CUcontext ctx;
    ON_GPU0(dev, ctx);
    CUmodule module;
    CUfunction add_to;
    TRY(cuModuleLoadData(&module, PTX));
    TRY(cuModuleGetFunction(&add_to, module, "add_to"));
    CUdeviceptr p;
    TRY(cuMemAlloc(&p, N * 4));
    unsigned *host, *host2;
    TRY(cuMemAllocHost((void **)&host, N * 4));
    TRY(cuMemAllocHost((void **)&host2, N * 4));
    unsigned n = N;
    int calls = 0;
    CUstream s;
    TRY(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    /* Each kind's parameters read back and set. */
    CUgraph child, g;
    TRY(one_kernel(&child, add_to, &p, &n, 100));
    CUgraphNode nodes[5];
    TRY(chain(&g, nodes, add_to, &p, &n, 1, 2, child, host, bump, &calls, ctx));
    CUgraphNode set_node = nodes[0], kernel_node = nodes[1], child_node = nodes[2], copy_node = nodes[3],
                host_node = nodes[4];
    CUDA_KERNEL_NODE_PARAMS k;
    TRY(cuGraphKernelNodeGetParams(kernel_node, &k));
    printf("kernel node: same function %d, grid %u block %u, arguments p %d n %u v %u, no extra %d\n",
           k.func == add_to, k.gridDimX, k.blockDimX, *(CUdeviceptr *)k.kernelParams[0] == p,
           *(unsigned *)k.kernelParams[1], *(unsigned *)k.kernelParams[2], k.extra == NULL);
    unsigned kv = 3;
    void *kargs[] = {&p, &n, &kv};
    CUDA_KERNEL_NODE_PARAMS kp = kernel_params(add_to, kargs);
    TRY(cuGraphKernelNodeSetParams(kernel_node, &kp));
    kv = 0;
    TRY(cuGraphKernelNodeGetParams(kernel_node, &k));
    printf("kernel node set: v %u\n", *(unsigned *)k.kernelParams[2]);
    CUDA_MEMSET_NODE_PARAMS m;
    TRY(cuGraphMemsetNodeGetParams(set_node, &m));
    printf("memset node: dst p %d, value %u, element %u, width %zu, height %zu\n", m.dst == p, m.value,
           m.elementSize, m.width, m.height);
    m = memset_params(p, 4);
    TRY(cuGraphMemsetNodeSetParams(set_node, &m));
    TRY(cuGraphMemsetNodeGetParams(set_node, &m));
    printf("memset node set: value %u\n", m.value);
    printf("memset parameters of the kernel node: %s\n", name_of(cuGraphMemsetNodeGetParams(kernel_node, &m)));
    CUDA_MEMCPY3D c;
    TRY(cuGraphMemcpyNodeGetParams(copy_node, &c));
    printf("memcpy node: from device p %d, to host %d, width %zu, height %zu, depth %zu\n",
           c.srcMemoryType == CU_MEMORYTYPE_DEVICE && c.srcDevice == p,
           c.dstMemoryType == CU_MEMORYTYPE_HOST && c.dstHost == host, c.WidthInBytes, c.Height, c.Depth);
    c = copy_params(p, host, N * 2);
    TRY(cuGraphMemcpyNodeSetParams(copy_node, &c));
    TRY(cuGraphMemcpyNodeGetParams(copy_node, &c));
    printf("memcpy node set: width %zu\n", c.WidthInBytes);
    c = copy_params(p, host, N * 4);
    TRY(cuGraphMemcpyNodeSetParams(copy_node, &c));
    CUDA_HOST_NODE_PARAMS h;
    TRY(cuGraphHostNodeGetParams(host_node, &h));
    printf("host node: bump %d, data %d\n", h.fn == bump, h.userData == &calls);
    h.fn = bump_ten;
    TRY(cuGraphHostNodeSetParams(host_node, &h));
    TRY(cuGraphHostNodeGetParams(host_node, &h));
    printf("host node set: bump_ten %d\n", h.fn == bump_ten);

    /* The child graph node's graph is its own, and changes to it reach the node. */
    CUgraph embedded;
    TRY(cuGraphChildGraphNodeGetGraph(child_node, &embedded));
    size_t count = 0;
    TRY(cuGraphGetNodes(embedded, NULL, &count));
    CUgraphNode inner;
    size_t one = 1;
    TRY(cuGraphGetNodes(embedded, &inner, &one));
    printf("child node's graph: a copy %d, %zu node\n", embedded != child, count);
    unsigned cv = 50;
    void *cargs[] = {&p, &n, &cv};
    CUDA_KERNEL_NODE_PARAMS ckp = kernel_params(add_to, cargs);
    TRY(cuGraphKernelNodeSetParams(inner, &ckp));

    /* Events. */
    CUevent ev1, ev2, got;
    TRY(cuEventCreate(&ev1, CU_EVENT_DISABLE_TIMING));
    TRY(cuEventCreate(&ev2, CU_EVENT_DISABLE_TIMING));
    CUgraph eg;
    CUgraphNode record_node, wait_node;
    TRY(cuGraphCreate(&eg, 0));
    TRY(cuGraphAddEventRecordNode(&record_node, eg, NULL, 0, ev1));
    TRY(cuGraphAddEventWaitNode(&wait_node, eg, &record_node, 1, ev2));
    TRY(cuGraphEventRecordNodeGetEvent(record_node, &got));
    int record_was = got == ev1;
    TRY(cuGraphEventWaitNodeGetEvent(wait_node, &got));
    int wait_was = got == ev2;
    TRY(cuGraphEventRecordNodeSetEvent(record_node, ev2));
    TRY(cuGraphEventWaitNodeSetEvent(wait_node, ev1));
    TRY(cuGraphEventRecordNodeGetEvent(record_node, &got));
    int record_is = got == ev2;
    TRY(cuGraphEventWaitNodeGetEvent(wait_node, &got));
    printf("event nodes: record %d then %d, wait %d then %d\n", record_was, record_is, wait_was, got == ev1);
    CUgraphExec event_exec;
    TRY(cuGraphInstantiate(&event_exec, eg, 0));
    printf("exec record node set: %s\n", name_of(cuGraphExecEventRecordNodeSetEvent(event_exec, record_node, ev1)));
    printf("exec wait node set: %s\n", name_of(cuGraphExecEventWaitNodeSetEvent(event_exec, wait_node, ev2)));
    printf("event graph launched: %s\n", name_of(launch(event_exec, s)));

    /* Instantiated, then set node by node in the executable graph. */
    CUgraphExec exec;
    TRY(cuGraphInstantiate(&exec, g, 0));
    TRY(launch(exec, s));
    printf("launch 1: host[0] %u host[255] %u, calls %d\n", host[0], host[N - 1], calls);
    m = memset_params(p, 10);
    TRY(cuGraphExecMemsetNodeSetParams(exec, set_node, &m, ctx));
    kv = 20;
    TRY(cuGraphExecKernelNodeSetParams(exec, kernel_node, &kp));
    h.fn = bump;
    TRY(cuGraphExecHostNodeSetParams(exec, host_node, &h));
    c = copy_params(p, host2, N * 4);
    TRY(cuGraphExecMemcpyNodeSetParams(exec, copy_node, &c, ctx));
    CUgraph child2, child3;
    TRY(one_kernel(&child2, add_to, &p, &n, 200));
    TRY(cuGraphExecChildGraphNodeSetParams(exec, child_node, child2));
    TRY(launch(exec, s));
    printf("launch 2: host2[0] %u host2[255] %u, host[0] %u, calls %d\n", host2[0], host2[N - 1], host[0], calls);
    TRY(cuGraphMemsetNodeGetParams(set_node, &m));
    TRY(cuGraphKernelNodeGetParams(kernel_node, &k));
    printf("the graph's nodes unchanged: memset %u, kernel %u\n", m.value, *(unsigned *)k.kernelParams[2]);
    printf("exec memset parameters on the kernel node: %s\n",
           name_of(cuGraphExecMemsetNodeSetParams(exec, kernel_node, &m, ctx)));
    TRY(one_kernel(&child3, add_to, &p, &n, 1));
    CUgraphNode extra_node;
    TRY(cuGraphAddEmptyNode(&extra_node, child3, NULL, 0));
    printf("exec child graph of another shape: %s\n",
           name_of(cuGraphExecChildGraphNodeSetParams(exec, child_node, child3)));
    CUgraphNodeParams np;
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_MEMSET;
    np.memset.dst = p, np.memset.value = 30, np.memset.elementSize = 4, np.memset.width = N, np.memset.height = 1;
    np.memset.ctx = ctx;
    TRY(cuGraphExecNodeSetParams(exec, set_node, &np));
    TRY(launch(exec, s));
    printf("launch 3, memset set generically: host2[0] %u\n", host2[0]);

    /* A node disabled runs as an empty one. */
    unsigned enabled = 7;
    TRY(cuGraphNodeSetEnabled(exec, kernel_node, 0));
    TRY(cuGraphNodeGetEnabled(exec, kernel_node, &enabled));
    TRY(launch(exec, s));
    printf("kernel disabled: enabled %u, host2[0] %u\n", enabled, host2[0]);
    TRY(cuGraphNodeSetEnabled(exec, kernel_node, 1));
    TRY(cuGraphNodeGetEnabled(exec, kernel_node, &enabled));
    TRY(launch(exec, s));
    printf("kernel enabled: enabled %u, host2[0] %u\n", enabled, host2[0]);

    /* Updated from a graph of the same shape; refused from others, changing nothing. */
    CUgraph child4, g2, g3, g4;
    CUgraphNode nodes2[5], nodes3[5], nodes4[5];
    TRY(one_kernel(&child4, add_to, &p, &n, 7));
    TRY(chain(&g2, nodes2, add_to, &p, &n, 5, 6, child4, host, bump, &calls, ctx));
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    CUresult updated = cuGraphExecUpdate(exec, g2, &info);
    printf("update, same shape: %s, result %d\n", name_of(updated), (int)info.result);
    TRY(launch(exec, s));
    printf("launch 4, updated: host[0] %u host[255] %u, calls %d\n", host[0], host[N - 1], calls);
    TRY(cuGraphCreate(&g3, 0));
    m = memset_params(p, 1);
    TRY(cuGraphAddMemsetNode(&nodes3[0], g3, NULL, 0, &m, ctx));
    TRY(cuGraphAddKernelNode(&nodes3[1], g3, &nodes3[0], 1, &kp));
    memset(&info, 0, sizeof info);
    updated = cuGraphExecUpdate(exec, g3, &info);
    printf("update, fewer nodes: %s, result %d, error node null %d\n", name_of(updated), (int)info.result,
           info.errorNode == NULL);
    TRY(cuGraphCreate(&g4, 0));
    TRY(cuGraphAddMemsetNode(&nodes4[0], g4, NULL, 0, &m, ctx));
    TRY(cuGraphAddEmptyNode(&nodes4[1], g4, &nodes4[0], 1));
    TRY(cuGraphAddChildGraphNode(&nodes4[2], g4, &nodes4[1], 1, child2));
    TRY(cuGraphAddMemcpyNode(&nodes4[3], g4, &nodes4[2], 1, &c, ctx));
    TRY(cuGraphAddHostNode(&nodes4[4], g4, &nodes4[3], 1, &h));
    memset(&info, 0, sizeof info);
    updated = cuGraphExecUpdate(exec, g4, &info);
    printf("update, a kernel node now empty: %s, result %d, error node the empty node %d\n", name_of(updated),
           (int)info.result, info.errorNode == nodes4[1]);
    TRY(launch(exec, s));
    printf("launch 5, after the refusals: host[0] %u, calls %d\n", host[0], calls);

    /* Instantiation flags, less upload. */
    cuuint64_t flags = 99;
    TRY(cuGraphExecGetFlags(exec, &flags));
    printf("flags: %llu", (unsigned long long)flags);
    CUgraphExec flagged;
    flags = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    TRY(cuGraphInstantiate(&flagged, g3, flags));
    TRY(cuGraphExecGetFlags(flagged, &flags));
    printf(", auto-free and node priority %llu", (unsigned long long)flags);
    CUDA_GRAPH_INSTANTIATE_PARAMS ip;
    memset(&ip, 0, sizeof ip);
    ip.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, ip.hUploadStream = s;
    CUgraphExec uploaded;
    TRY(cuGraphInstantiateWithParams(&uploaded, g3, &ip));
    TRY(cuGraphExecGetFlags(uploaded, &flags));
    printf(", upload %llu\n", (unsigned long long)flags);

    /* Dependencies removed. */
    CUgraph r;
    CUgraphNode a, b, d;
    TRY(cuGraphCreate(&r, 0));
    TRY(cuGraphAddEmptyNode(&a, r, NULL, 0));
    TRY(cuGraphAddEmptyNode(&b, r, &a, 1));
    TRY(cuGraphAddEmptyNode(&d, r, &a, 1));
    TRY(cuGraphRemoveDependencies(r, &a, &b, NULL, 1));
    size_t edges = 0, roots = 0, before = 9;
    TRY(cuGraphGetEdges(r, NULL, NULL, NULL, &edges));
    TRY(cuGraphGetRootNodes(r, NULL, &roots));
    TRY(cuGraphNodeGetDependencies(b, NULL, NULL, &before));
    printf("dependency removed: %zu edge, %zu roots, %zu before the node\n", edges, roots, before);
    printf("removed again: %s\n", name_of(cuGraphRemoveDependencies(r, &a, &b, NULL, 1)));

    /* A clone's node, found from its original. */
    CUgraph copy;
    CUgraphNode found = NULL;
    TRY(cuGraphClone(&copy, g));
    TRY(cuGraphNodeFindInClone(&found, kernel_node, copy));
    CUgraphNodeType type;
    TRY(cuGraphNodeGetType(found, &type));
    TRY(cuGraphKernelNodeGetParams(found, &k));
    printf("found in the clone: another node %d, type %d, v %u\n", found != kernel_node, (int)type,
           *(unsigned *)k.kernelParams[2]);
    printf("a node of another graph: %s\n", name_of(cuGraphNodeFindInClone(&found, a, copy)));

    /* Kernel node attributes. */
    CUkernelNodeAttrValue value;
    memset(&value, 0, sizeof value);
    value.priority = -1;
    TRY(cuGraphKernelNodeSetAttribute(kernel_node, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &value));
    memset(&value, 0, sizeof value);
    value.cooperative = 1;
    TRY(cuGraphKernelNodeSetAttribute(kernel_node, CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE, &value));
    memset(&value, 0, sizeof value);
    TRY(cuGraphKernelNodeGetAttribute(kernel_node, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &value));
    int priority = value.priority;
    TRY(cuGraphKernelNodeGetAttribute(kernel_node, CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE, &value));
    printf("attributes: priority %d, cooperative %d\n", priority, value.cooperative);
    TRY(cuGraphKernelNodeCopyAttributes(nodes2[1], kernel_node));
    memset(&value, 0, sizeof value);
    TRY(cuGraphKernelNodeGetAttribute(nodes2[1], CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &value));
    priority = value.priority;
    TRY(cuGraphKernelNodeGetAttribute(nodes2[1], CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE, &value));
    printf("copied: priority %d, cooperative %d\n", priority, value.cooperative);
    printf("attribute 1000: %s\n",
           name_of(cuGraphKernelNodeGetAttribute(kernel_node, (CUkernelNodeAttrID)1000, &value)));

    /* Nodes added and set through CUgraphNodeParams; a graph moved into a child graph node. */
    CUgraph ag;
    CUgraphNode empty, gset, gkernel, galloc, gfree;
    TRY(cuGraphCreate(&ag, 0));
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_EMPTY;
    TRY(cuGraphAddNode(&empty, ag, NULL, NULL, 0, &np));
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_MEMSET;
    np.memset.dst = p, np.memset.value = 9, np.memset.elementSize = 4, np.memset.width = N, np.memset.height = 1;
    np.memset.ctx = ctx;
    TRY(cuGraphAddNode(&gset, ag, &empty, NULL, 1, &np));
    kv = 1;
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_KERNEL;
    np.kernel.func = add_to, np.kernel.kernelParams = kargs;
    np.kernel.gridDimX = N / 64, np.kernel.gridDimY = 1, np.kernel.gridDimZ = 1;
    np.kernel.blockDimX = 64, np.kernel.blockDimY = 1, np.kernel.blockDimZ = 1;
    TRY(cuGraphAddNode(&gkernel, ag, &gset, NULL, 1, &np));
    CUgraphNodeParams kernel_np = np;
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    np.alloc.poolProps = pinned_pool_props(0);
    np.alloc.bytesize = N * 4;
    TRY(cuGraphAddNode(&galloc, ag, NULL, NULL, 0, &np));
    CUdeviceptr va = np.alloc.dptr;
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
    np.free.dptr = va;
    TRY(cuGraphAddNode(&gfree, ag, &galloc, NULL, 1, &np));
    CUgraphNodeType types[5];
    CUgraphNode added[5] = {empty, gset, gkernel, galloc, gfree};
    for (int i = 0; i < 5; i++) TRY(cuGraphNodeGetType(added[i], &types[i]));
    printf("added: types %d %d %d %d %d, allocation address set %d\n", (int)types[0], (int)types[1], (int)types[2],
           (int)types[3], (int)types[4], va != 0);
    TRY(cuGraphMemsetNodeGetParams(gset, &m));
    int added_value = m.value;
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_MEMSET;
    np.memset.dst = p, np.memset.value = 11, np.memset.elementSize = 4, np.memset.width = N, np.memset.height = 1;
    np.memset.ctx = ctx;
    TRY(cuGraphNodeSetParams(gset, &np));
    TRY(cuGraphMemsetNodeGetParams(gset, &m));
    printf("memset node: added with %d, set to %u\n", added_value, m.value);
    printf("kernel parameters on the memset node: %s\n", name_of(cuGraphNodeSetParams(gset, &kernel_np)));
    CUgraph moved, held;
    CUgraphNode moved_node;
    TRY(one_kernel(&moved, add_to, &p, &n, 1));
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_GRAPH;
    np.graph.graph = moved, np.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
    TRY(cuGraphAddNode(&moved_node, ag, &gkernel, NULL, 1, &np));
    TRY(cuGraphChildGraphNodeGetGraph(moved_node, &held));
    printf("child graph moved: the node holds it %d\n", held == moved);
    CUgraphExec added_exec;
    TRY(cuGraphInstantiate(&added_exec, ag, 0));
    TRY(launch(added_exec, s));
    unsigned first = 0;
    TRY(cuMemcpyDtoH(&first, p, 4));
    printf("added graph launched: p[0] %u\n", first);

    /* Captured into a graph of the caller's, after its node. */
    CUgraph into;
    CUgraphNode root;
    TRY(cuGraphCreate(&into, 0));
    TRY(cuGraphAddEmptyNode(&root, into, NULL, 0));
    TRY(cuStreamBeginCaptureToGraph(s, into, &root, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    TRY(cuMemsetD32Async(p, 20, n, s));
    CUgraph ended = NULL;
    TRY(cuStreamEndCapture(s, &ended));
    size_t into_nodes = 0, into_edges = 0;
    TRY(cuGraphGetNodes(into, NULL, &into_nodes));
    TRY(cuGraphGetEdges(into, NULL, NULL, NULL, &into_edges));
    printf("captured into a graph: the same graph %d, %zu nodes, %zu edges\n", ended == into, into_nodes, into_edges);
    TRY(cuGraphDestroy(into));

    TRY(cuGraphExecDestroy(added_exec));
    TRY(cuGraphExecDestroy(uploaded));
    TRY(cuGraphExecDestroy(flagged));
    TRY(cuGraphExecDestroy(event_exec));
    TRY(cuGraphExecDestroy(exec));
    CUgraph all[] = {ag, copy, r, g4, g3, g2, child4, child3, child2, eg, g, child};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) TRY(cuGraphDestroy(all[i]));
    TRY(cuMemFreeHost(host2));
    TRY(cuMemFreeHost(host));
    TRY(cuMemFree(p));
    printf("done\n");
    return 0;
}
