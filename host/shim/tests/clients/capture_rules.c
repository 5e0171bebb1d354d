/* The calls the driver forbids during stream capture, as a table: each call made while a
 * non-blocking stream of gpu0 is capturing (a kernel already captured), for each capture mode
 * (global, thread-local, relaxed), from the capturing thread, from a second thread whose
 * interaction mode is the default, and from a second thread that made its mode relaxed. One line a cell: the call's result, the capture's status
 * after it, and what ending the capture answered. Each cell starts from a fresh capture.
 * Exits 1 on an unexpected error outside the calls under test. */
#include <pthread.h>

#include "client.h"

static const char *PTX =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry nop()\n{\nret;\n}\n";

/* What a row's call may use: made before the capture begins, freed after it ends. */
struct world {
    CUcontext ctx;
    CUfunction nop;
    CUstream s;       /* the capturing stream */
    CUstream other;   /* a non-blocking stream outside the capture */
    CUstream second;  /* a second capturing stream, for isolation */
    CUevent before;   /* recorded on `other` before the capture */
    CUevent captured; /* recorded in the capture */
    CUdeviceptr dev;  /* 4 KiB of device memory */
    void *host;       /* 4 KiB of pinned host memory */
    char pageable[4096];
    CUdeviceptr made; /* what a row allocated, freed after the capture */
    void *made_host;
    CUmemoryPool pool;
    CUdeviceptr pooled; /* from the default pool, made before the capture */
};

typedef CUresult (*call_fn)(struct world *);

static CUresult alloc(struct world *w) { return cuMemAlloc(&w->made, 4096); }
static CUresult free_dev(struct world *w) {
    CUresult r = cuMemFree(w->dev);
    if (r == CUDA_SUCCESS) w->dev = 0;
    return r;
}
static CUresult alloc_host(struct world *w) { return cuMemAllocHost(&w->made_host, 4096); }
static CUresult free_host(struct world *w) {
    CUresult r = cuMemFreeHost(w->host);
    if (r == CUDA_SUCCESS) w->host = NULL;
    return r;
}
static CUresult copy_sync(struct world *w) { return cuMemcpyHtoD(w->dev, w->pageable, 64); }
static CUresult memset_sync(struct world *w) { return cuMemsetD32(w->dev, 7, 16); }
static CUresult copy_other(struct world *w) { return cuMemcpyHtoDAsync(w->dev, w->host, 64, w->other); }
static CUresult launch_legacy(struct world *w) {
    return cuLaunchKernel(w->nop, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
}
static CUresult copy_legacy(struct world *w) { return cuMemcpyHtoDAsync(w->dev, w->host, 64, NULL); }
static CUresult sync_stream(struct world *w) { return cuStreamSynchronize(w->s); }
static CUresult query_stream(struct world *w) { return cuStreamQuery(w->s); }
static CUresult sync_other(struct world *w) { return cuStreamSynchronize(w->other); }
static CUresult sync_ctx(struct world *w) {
    (void)w;
    return cuCtxSynchronize();
}
static CUresult query_event(struct world *w) { return cuEventQuery(w->captured); }
static CUresult sync_event(struct world *w) { return cuEventSynchronize(w->captured); }
static CUresult wait_outside(struct world *w) { return cuStreamWaitEvent(w->s, w->before, 0); }
static CUresult wait_isolated(struct world *w) { return cuStreamWaitEvent(w->second, w->captured, 0); }
static void CUDA_CB callback(CUstream s, CUresult r, void *data) {
    (void)s, (void)r, (void)data;
}
static CUresult add_callback(struct world *w) { return cuStreamAddCallback(w->s, callback, NULL, 0); }
static CUresult alloc_async(struct world *w) {
    CUresult r = cuMemAllocAsync(&w->made, 4096, w->s);
    if (r == CUDA_SUCCESS) r = cuMemFreeAsync(w->made, w->s);
    w->made = 0;
    return r;
}
static CUresult free_pooled(struct world *w) {
    CUresult r = cuMemFreeAsync(w->pooled, w->s);
    if (r == CUDA_SUCCESS) w->pooled = 0;
    return r;
}
static CUresult pool_access(struct world *w) {
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE, d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return cuMemPoolSetAccess(w->pool, &d, 1);
}
static CUresult pool_trim(struct world *w) { return cuMemPoolTrimTo(w->pool, 0); }
static CUresult load_module(struct world *w) {
    (void)w;
    CUmodule m;
    CUresult r = cuModuleLoadData(&m, PTX);
    if (r == CUDA_SUCCESS) cuModuleUnload(m);
    return r;
}
static CUresult copy_pageable(struct world *w) { return cuMemcpyDtoHAsync(w->pageable, w->dev, 64, w->s); }
static CUresult copy_pinned(struct world *w) { return cuMemcpyDtoHAsync(w->host, w->dev, 64, w->s); }
static CUresult mem_info(struct world *w) {
    (void)w;
    size_t free_bytes, total;
    return cuMemGetInfo(&free_bytes, &total);
}
static CUresult graph_trim(struct world *w) {
    (void)w;
    return cuDeviceGraphMemTrim(0);
}
static CUresult end_capture(struct world *w) {
    CUgraph g = NULL;
    CUresult r = cuStreamEndCapture(w->s, &g);
    if (g) cuGraphDestroy(g);
    return r;
}
static CUresult create_stream(struct world *w) {
    (void)w;
    CUstream t;
    CUresult r = cuStreamCreate(&t, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS) cuStreamDestroy(t);
    return r;
}
static CUresult event_elapsed(struct world *w) {
    float ms;
    return cuEventElapsedTime(&ms, w->before, w->captured);
}

static const struct row {
    const char *name;
    call_fn call;
} ROWS[] = {
    {"cuMemAlloc", alloc},
    {"cuMemFree", free_dev},
    {"cuMemAllocHost", alloc_host},
    {"cuMemFreeHost", free_host},
    {"cuMemcpyHtoD", copy_sync},
    {"cuMemsetD32", memset_sync},
    {"cuMemcpyHtoDAsync on another stream", copy_other},
    {"cuLaunchKernel on the legacy stream", launch_legacy},
    {"cuMemcpyHtoDAsync on the legacy stream", copy_legacy},
    {"cuStreamSynchronize of the capturing stream", sync_stream},
    {"cuStreamQuery of the capturing stream", query_stream},
    {"cuStreamSynchronize of another stream", sync_other},
    {"cuCtxSynchronize", sync_ctx},
    {"cuEventQuery of a captured event", query_event},
    {"cuEventSynchronize of a captured event", sync_event},
    {"cuEventElapsedTime with a captured event", event_elapsed},
    {"cuStreamWaitEvent on an event recorded outside", wait_outside},
    {"cuStreamWaitEvent of another capture's event", wait_isolated},
    {"cuStreamAddCallback", add_callback},
    {"cuMemAllocAsync and cuMemFreeAsync", alloc_async},
    {"cuMemFreeAsync of an allocation made outside", free_pooled},
    {"cuMemPoolSetAccess", pool_access},
    {"cuMemPoolTrimTo", pool_trim},
    {"cuDeviceGraphMemTrim", graph_trim},
    {"cuModuleLoadData", load_module},
    {"cuMemcpyDtoHAsync to pageable memory", copy_pageable},
    {"cuMemcpyDtoHAsync to pinned memory", copy_pinned},
    {"cuMemGetInfo", mem_info},
    {"cuStreamCreate", create_stream},
    {"cuStreamEndCapture", end_capture},
};

struct job {
    struct world *w;
    call_fn call;
    int relaxed;
    CUresult result;
};

static void *on_second_thread(void *arg) {
    struct job *job = arg;
    job->result = cuCtxSetCurrent(job->w->ctx);
    CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (job->result == CUDA_SUCCESS && job->relaxed) job->result = cuThreadExchangeStreamCaptureMode(&relaxed);
    if (job->result == CUDA_SUCCESS) job->result = job->call(job->w);
    return NULL;
}

static const char *MODES[] = {"global", "thread-local", "relaxed"};
static const char *CALLERS[] = {"capturing thread", "second thread", "second thread, relaxed"};

/* One cell: fresh buffers and streams, a capture in `mode` holding a kernel and an event
 * record, the call from this thread or a second one (`threaded` 1, or 2: in relaxed mode), then
 * the status and the end. */
static int cell(struct world *w, const struct row *row, CUstreamCaptureMode mode, int threaded) {
    TRY(cuStreamCreate(&w->s, CU_STREAM_NON_BLOCKING));
    TRY(cuStreamCreate(&w->other, CU_STREAM_NON_BLOCKING));
    TRY(cuStreamCreate(&w->second, CU_STREAM_NON_BLOCKING));
    TRY(cuEventCreate(&w->before, 0));
    TRY(cuEventCreate(&w->captured, 0));
    TRY(cuMemAlloc(&w->dev, 4096));
    TRY(cuMemAllocHost(&w->host, 4096));
    TRY(cuMemAllocAsync(&w->pooled, 4096, w->other));
    TRY(cuEventRecord(w->before, w->other));
    TRY(cuStreamSynchronize(w->other));
    w->made = 0, w->made_host = NULL;
    TRY(cuStreamBeginCapture(w->s, mode));
    TRY(cuStreamBeginCapture(w->second, CU_STREAM_CAPTURE_MODE_RELAXED));
    TRY(cuLaunchKernel(w->nop, 1, 1, 1, 1, 1, 1, 0, w->s, NULL, NULL));
    TRY(cuLaunchKernel(w->nop, 1, 1, 1, 1, 1, 1, 0, w->second, NULL, NULL));
    TRY(cuEventRecord(w->captured, w->s));
    struct job job = {w, row->call, threaded == 2, CUDA_SUCCESS};
    if (threaded) {
        pthread_t t;
        if (pthread_create(&t, NULL, on_second_thread, &job) || pthread_join(t, NULL)) return 1;
    } else {
        job.result = row->call(w);
    }
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult queried = cuStreamIsCapturing(w->s, &status);
    CUgraph g = NULL;
    CUresult ended = CUDA_SUCCESS;
    if (queried == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE) ended = cuStreamEndCapture(w->s, &g);
    if (g) TRY(cuGraphDestroy(g));
    CUstreamCaptureStatus second = CU_STREAM_CAPTURE_STATUS_NONE;
    TRY(cuStreamIsCapturing(w->second, &second));
    CUgraph g2 = NULL;
    CUresult ended2 = CUDA_SUCCESS;
    if (second != CU_STREAM_CAPTURE_STATUS_NONE) ended2 = cuStreamEndCapture(w->second, &g2);
    if (g2) TRY(cuGraphDestroy(g2));
    printf("%s [%s, %s]: %s; status then %s %d; end %s; other capture %d, end %s\n", row->name,
           MODES[mode], CALLERS[threaded], name_of(job.result), name_of(queried), (int)status,
           name_of(ended), (int)second, name_of(ended2));
    TRY(cuCtxSynchronize());
    if (w->made) TRY(cuMemFree(w->made));
    if (w->pooled) TRY(cuMemFreeAsync(w->pooled, w->other));
    TRY(cuStreamSynchronize(w->other));
    if (w->made_host) TRY(cuMemFreeHost(w->made_host));
    if (w->dev) TRY(cuMemFree(w->dev));
    if (w->host) TRY(cuMemFreeHost(w->host));
    TRY(cuEventDestroy(w->before));
    TRY(cuEventDestroy(w->captured));
    TRY(cuStreamDestroy(w->s));
    TRY(cuStreamDestroy(w->other));
    TRY(cuStreamDestroy(w->second));
    return 0;
}

int main(void) {
    static struct world w;
    CUdevice dev;
    ON_GPU0(dev, w.ctx);
    CUmodule module;
    TRY(cuModuleLoadData(&module, PTX));
    TRY(cuModuleGetFunction(&w.nop, module, "nop"));
    TRY(cuDeviceGetDefaultMemPool(&w.pool, dev));
    for (size_t r = 0; r < sizeof ROWS / sizeof ROWS[0]; r++)
        for (int mode = 0; mode < 3; mode++)
            for (int threaded = 0; threaded < 3; threaded++)
                if (cell(&w, &ROWS[r], (CUstreamCaptureMode)mode, threaded)) return 1;
    int count;
    printf("after the table: %s\n", name_of(cuDeviceGetCount(&count)));
    return 0;
}
