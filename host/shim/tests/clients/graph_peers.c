/* Graph allocations and peers, on every ordered pair of GPUs of the machine: an allocation
 * node on the owner whose access descriptors name the peer, and one captured from a pool of
 * the owner's that granted the peer before the capture; each launched on the owner, then a
 * kernel on the peer adds one to it, read back on the owner. A pair whose GPUs have no peer
 * link is refused at the node, as a pool grant is. Then, by the argument, the fault that ends
 * the process (a kernel on GPU 1 over GPU 0's graph allocation):
 *   none           no fault
 *   no-descriptor  the node names no peer
 *   after-capture  the pool granted GPU 1 only after the capture
 * Exits 1 on an unexpected error. */
#include "client.h"

static const char *PTX =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry add_one(.param .u64 p)\n{\n"
    ".reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n"
    "ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd1, %rd1;\n"
    "ld.global.u32 %r1, [%rd1];\nadd.s32 %r1, %r1, 1;\nst.global.u32 [%rd1], %r1;\nret;\n}\n";

enum { MAX = 16, BYTES = 4096 };

static CUcontext ctx[MAX];
static CUfunction add_one[MAX];
static CUstream stream[MAX];

static CUmemAccessDesc rw(int device) {
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE, d.location.id = device;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return d;
}

/* On `owner`: a graph of one allocation node (access for `peer` where `grant`) and a memset
 * of 41; its address in *p, its executable in *exec. */
static CUresult built(int owner, int peer, int grant, CUdeviceptr *p, CUgraphExec *exec) {
    CUgraph g;
    CUresult r = cuCtxSetCurrent(ctx[owner]);
    if (r == CUDA_SUCCESS) r = cuGraphCreate(&g, 0);
    if (r != CUDA_SUCCESS) return r;
    CUDA_MEM_ALLOC_NODE_PARAMS a;
    memset(&a, 0, sizeof a);
    a.poolProps = pinned_pool_props(owner);
    CUmemAccessDesc d = rw(peer);
    a.accessDescs = grant ? &d : NULL;
    a.accessDescCount = grant ? 1 : 0;
    a.bytesize = BYTES;
    CUgraphNode alloc, set;
    r = cuGraphAddMemAllocNode(&alloc, g, NULL, 0, &a);
    if (r == CUDA_SUCCESS) {
        CUDA_MEMSET_NODE_PARAMS m;
        memset(&m, 0, sizeof m);
        m.dst = a.dptr, m.value = 41, m.elementSize = 4, m.width = 1, m.height = 1;
        r = cuGraphAddMemsetNode(&set, g, &alloc, 1, &m, ctx[owner]);
    }
    if (r == CUDA_SUCCESS) r = cuGraphInstantiateWithFlags(exec, g, 0);
    cuGraphDestroy(g);
    *p = a.dptr;
    return r;
}

/* On `owner`: cuMemAllocFromPoolAsync of a pool of its own captured, after a memset of 41;
 * the pool grants `peer` before the capture where `grant`, and after it where `late`. */
static CUresult captured(int owner, int peer, int grant, int late, CUdeviceptr *p, CUgraphExec *exec) {
    CUmemPoolProps props = pinned_pool_props(owner);
    CUmemoryPool pool;
    CUmemAccessDesc d = rw(peer);
    CUgraph g = NULL;
    CUresult r = cuCtxSetCurrent(ctx[owner]);
    if (r == CUDA_SUCCESS) r = cuMemPoolCreate(&pool, &props);
    if (r == CUDA_SUCCESS && grant) r = cuMemPoolSetAccess(pool, &d, 1);
    if (r == CUDA_SUCCESS) r = cuStreamBeginCapture(stream[owner], CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (r != CUDA_SUCCESS) return r;
    CUresult made = cuMemAllocFromPoolAsync(p, BYTES, pool, stream[owner]);
    if (made == CUDA_SUCCESS) made = cuMemsetD32Async(*p, 41, 1, stream[owner]);
    r = cuStreamEndCapture(stream[owner], &g);
    if (made != CUDA_SUCCESS) return made;
    if (r == CUDA_SUCCESS && late) r = cuMemPoolSetAccess(pool, &d, 1);
    if (r == CUDA_SUCCESS) r = cuGraphInstantiateWithFlags(exec, g, 0);
    if (g) cuGraphDestroy(g);
    return r;
}

/* Launches `exec` on the owner, then adds one on `peer`; the value read back on the owner. */
static CUresult touched(int owner, int peer, CUdeviceptr p, CUgraphExec exec, unsigned *value) {
    CUresult r = cuCtxSetCurrent(ctx[owner]);
    if (r == CUDA_SUCCESS) r = cuGraphLaunch(exec, stream[owner]);
    if (r == CUDA_SUCCESS) r = cuStreamSynchronize(stream[owner]);
    void *args[] = {&p};
    if (r == CUDA_SUCCESS) r = cuCtxSetCurrent(ctx[peer]);
    if (r == CUDA_SUCCESS) r = cuLaunchKernel(add_one[peer], 1, 1, 1, 1, 1, 1, 0, stream[peer], args, NULL);
    if (r == CUDA_SUCCESS) r = cuStreamSynchronize(stream[peer]);
    if (r == CUDA_SUCCESS) r = cuCtxSetCurrent(ctx[owner]);
    if (r == CUDA_SUCCESS) r = cuMemcpyDtoH(value, p, 4);
    if (r == CUDA_SUCCESS) r = cuMemFreeAsync(p, stream[owner]);
    if (r == CUDA_SUCCESS) r = cuStreamSynchronize(stream[owner]);
    if (r == CUDA_SUCCESS) r = cuGraphExecDestroy(exec);
    return r;
}

int main(int argc, char **argv) {
    const char *fault = argc > 1 ? argv[1] : "none";
    setvbuf(stdout, NULL, _IONBF, 0);
    TRY(cuInit(0));
    int count = 0;
    TRY(cuDeviceGetCount(&count));
    if (count > MAX) count = MAX;
    for (int d = 0; d < count; d++) {
        CUdevice dev;
        CUmodule m;
        TRY(cuDeviceGet(&dev, d));
        TRY(cuDevicePrimaryCtxRetain(&ctx[d], dev));
        TRY(cuCtxSetCurrent(ctx[d]));
        TRY(cuModuleLoadData(&m, PTX));
        TRY(cuModuleGetFunction(&add_one[d], m, "add_one"));
        TRY(cuStreamCreate(&stream[d], CU_STREAM_NON_BLOCKING));
    }
    for (int owner = 0; owner < count; owner++)
        for (int peer = 0; peer < count; peer++) {
            if (peer == owner) continue;
            int capable = 0;
            TRY(cuDeviceCanAccessPeer(&capable, peer, owner));
            CUdeviceptr p = 0;
            CUgraphExec exec;
            unsigned by_node = 0, by_capture = 0;
            CUresult node = built(owner, peer, 1, &p, &exec);
            if (node == CUDA_SUCCESS) node = touched(owner, peer, p, exec, &by_node);
            CUresult capture = captured(owner, peer, 1, 0, &p, &exec);
            if (capture == CUDA_SUCCESS) capture = touched(owner, peer, p, exec, &by_capture);
            printf("GPU %d's graph allocation, GPU %d (peer capable %d): node %s %u, captured %s %u\n", owner, peer,
                   capable, name_of(node), by_node, name_of(capture), by_capture);
        }
    if (strcmp(fault, "none") == 0 || count < 2) {
        printf("done\n");
        return 0;
    }
    CUdeviceptr p = 0;
    CUgraphExec exec;
    if (strcmp(fault, "no-descriptor") == 0) TRY(built(0, 1, 0, &p, &exec));
    else if (strcmp(fault, "after-capture") == 0) TRY(captured(0, 1, 0, 1, &p, &exec));
    else return 2;
    unsigned value = 0;
    CUresult r = touched(0, 1, p, exec, &value);
    printf("GPU 1 over GPU 0's graph allocation (%s): %s\n", fault, name_of(r));
    return 0;
}
