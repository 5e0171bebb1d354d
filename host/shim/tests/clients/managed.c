/* A C client of managed memory and of pools that are not on a device: cuMemAllocManaged
 * written by the host and by the devices, advice, prefetches and range attributes, the
 * managed memory pool (cuMemGetMemPool), and pools located on the host (cuda.core's
 * PinnedMemoryResource). With two or more GPUs, gpu1 copies from and memsets gpu0's managed
 * memory. One line per fact, no address printed, so that a run through the shim can be
 * compared with NVIDIA's driver. Exits 1 on an unexpected error ("fail <call>: <code>"). */
#include "client.h"
#include <stdint.h>
#include <string.h>

static void attributes(const char *what, CUdeviceptr p) {
    unsigned int type = 0, managed = 0, mapped = 0;
    int ordinal = -9;
    void *host_ptr = NULL;
    CUdeviceptr dev_ptr = 0, start = 0;
    size_t size = 0;
    CUmemoryPool pool = NULL;
    CUpointer_attribute which[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,    CU_POINTER_ATTRIBUTE_IS_MANAGED,   CU_POINTER_ATTRIBUTE_MAPPED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_HOST_POINTER, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
    };
    void *data[] = {&type, &managed, &mapped, &ordinal, &host_ptr, &dev_ptr, &start, &size, &pool};
    CUresult r = cuPointerGetAttributes(sizeof which / sizeof which[0], which, data, p);
    printf("%s attributes %s type %u managed %u mapped %u ordinal %d host_ptr %s dev_ptr %s range_start %s "
           "range_size %zu pool %s\n",
           what, name_of(r), type, managed, mapped, ordinal,
           host_ptr == NULL ? "null" : (CUdeviceptr)(uintptr_t)host_ptr == p ? "same" : "other",
           dev_ptr == 0 ? "null" : dev_ptr == p ? "same" : "other", start == 0 ? "null" : start == p ? "same" : "other",
           size, pool == NULL ? "null" : "set");
}

static CUmemLocation location(CUmemLocationType type, int id) {
    CUmemLocation l;
    l.type = type;
    l.id = id;
    return l;
}

/* What cuMemRangeGetAttribute says of [p, p + bytes). */
static void range_attributes(const char *what, CUdeviceptr p, size_t bytes) {
    int read_mostly = -9, preferred = -9, last = -9, preferred_type = -9, last_type = -9;
    int accessed[4] = {-9, -9, -9, -9};
    printf("%s range read_mostly %s", what,
           name_of(cuMemRangeGetAttribute(&read_mostly, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, p, bytes)));
    printf(" %d preferred %s", read_mostly,
           name_of(cuMemRangeGetAttribute(&preferred, 4, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, p, bytes)));
    printf(" %d type %s", preferred,
           name_of(cuMemRangeGetAttribute(&preferred_type, 4, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, p, bytes)));
    printf(" %d last_prefetch %s", preferred_type,
           name_of(cuMemRangeGetAttribute(&last, 4, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, p, bytes)));
    printf(" %d type %s", last,
           name_of(cuMemRangeGetAttribute(&last_type, 4, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, p, bytes)));
    printf(" %d accessed_by %s", last_type,
           name_of(cuMemRangeGetAttribute(accessed, sizeof accessed, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, p, bytes)));
    printf(" %d %d %d %d\n", accessed[0], accessed[1], accessed[2], accessed[3]);
}

/* A pool with its allocation type and location, asked for a POSIX-fd handle or not; what the
 * host and device 0 may do with its memory. */
static int other_pool(const char *what, CUmemAllocationType alloc, CUmemLocationType type, int id, int ipc,
                       CUstream s) {
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = alloc;
    props.location = location(type, id);
    props.handleTypes = ipc ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
    CUmemoryPool pool;
    CUresult made = cuMemPoolCreate(&pool, &props);
    printf("%s pool create: %s\n", what, name_of(made));
    if (made != CUDA_SUCCESS) return 0;
    CUmemAccessDesc desc;
    desc.location = location(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    printf("%s pool grant device 0: %s", what, name_of(cuMemPoolSetAccess(pool, &desc, 1)));
    CUmemAccess_flags flags = 77;
    CUmemLocation loc = location(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    printf(" access %s", name_of(cuMemPoolGetAccess(&flags, pool, &loc)));
    printf(" %d\n", (int)flags);
    CUdeviceptr p = 0;
    CUresult got = cuMemAllocFromPoolAsync(&p, 4096, pool, s);
    printf("%s pool alloc: %s\n", what, name_of(got));
    if (got == CUDA_SUCCESS) {
        TRY(cuStreamSynchronize(s));
        attributes(what, p);
        unsigned char *host = (unsigned char *)(uintptr_t)p;
        int on_host = type != CU_MEM_LOCATION_TYPE_DEVICE;
        if (on_host) {
            memset(host, 0x42, 4096); /* memory on the host: the host writes it directly */
        } else {
            TRY(cuMemsetD8(p, 0x42, 4096));
        }
        unsigned char back[64];
        memset(back, 0, sizeof back);
        CUresult r = cuMemcpyDtoH(back, p + 64, 64);
        printf("%s pool dtoh: %s bytes %d\n", what, name_of(r), back[0] == 0x42 && back[63] == 0x42);
        memset(back, 0, sizeof back);
        r = cuMemcpy((CUdeviceptr)(uintptr_t)back, p + 64, 64);
        printf("%s pool cuMemcpy to the host: %s bytes %d\n", what, name_of(r), back[0] == 0x42 && back[63] == 0x42);
        CUdeviceptr d;
        TRY(cuMemAlloc(&d, 4096));
        TRY(cuMemsetD8(d, 0x24, 4096));
        r = cuMemcpyDtoD(p, d, 4096);
        printf("%s pool dtod from device 0: %s\n", what, name_of(r));
        TRY(cuMemsetD8(d, 0x25, 4096));
        r = cuMemcpy(p, d, 4096);
        printf("%s pool cuMemcpy from device 0: %s", what, name_of(r));
        memset(back, 0, sizeof back);
        TRY(cuMemcpy((CUdeviceptr)(uintptr_t)back, p, 64));
        printf(" bytes %d\n", back[0] == 0x25);
        r = cuMemsetD8(p, 0x26, 16);
        printf("%s pool memset by device 0: %s", what, name_of(r));
        TRY(cuMemcpy((CUdeviceptr)(uintptr_t)back, p, 64));
        printf(" bytes %d\n", back[0] == 0x26);
        if (on_host) printf("%s pool seen by the host: %d\n", what, host[16] == 0x25);
        TRY(cuMemFree(d));
        TRY(cuMemFreeAsync(p, s));
        TRY(cuStreamSynchronize(s));
    }
    printf("%s pool destroy: %s\n", what, name_of(cuMemPoolDestroy(pool)));
    return 0;
}

int main(void) {
    CUdevice dev;
    CUcontext ctx, ctx1 = NULL;
    int count = 0;
    setvbuf(stdout, NULL, _IONBF, 0); /* what was printed survives a crash */
    TRY(cuInit(0));
    TRY(cuDeviceGetCount(&count));
    TRY(cuDeviceGet(&dev, 0));
    TRY(cuDevicePrimaryCtxRetain(&ctx, dev));
    if (count > 1) TRY(cuDevicePrimaryCtxRetain(&ctx1, 1));
    TRY(cuCtxSetCurrent(ctx));
    TRY(show_attribute("managed memory", CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, dev));
    TRY(show_attribute("concurrent managed access", CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, dev));
    TRY(show_attribute("direct managed access from host", CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, dev));
    CUstream s;
    TRY(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    /* cuMemAllocManaged: the host writes, the device copies and memsets. */
    CUdeviceptr m;
    TRY(cuMemAllocManaged(&m, 8192, CU_MEM_ATTACH_GLOBAL));
    unsigned char *host = (unsigned char *)(uintptr_t)m;
    for (int i = 0; i < 8192; i++) host[i] = (unsigned char)(i * 5 + 3);
    attributes("managed", m);
    attributes("managed+100", m + 100);
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult range = cuMemGetAddressRange(&base, &size, m + 100);
    printf("managed range %s base %s size %zu\n", name_of(range), base == m ? "same" : "other", size);
    unsigned char back[64];
    TRY(cuMemcpyDtoH(back, m + 64, 64));
    printf("dtoh from host-written managed: %d\n", back[0] == (unsigned char)(64 * 5 + 3));
    TRY(cuMemsetD8(m, 0x77, 16));
    printf("memset seen by the host: %d\n", host[0] == 0x77 && host[15] == 0x77 && host[16] == (unsigned char)(16 * 5 + 3));
    CUdeviceptr d;
    TRY(cuMemAlloc(&d, 8192));
    TRY(cuMemsetD8(d, 0x31, 8192));
    TRY(cuMemcpyDtoD(m + 4096, d, 4096));
    printf("dtod seen by the host: %d\n", host[4096] == 0x31);
    TRY(cuMemcpyDtoD(d, m, 64));
    TRY(cuMemcpyDtoH(back, d, 64));
    printf("dtod from managed: %d\n", back[0] == 0x77 && back[20] == (unsigned char)(20 * 5 + 3));
    memset(host, 0x12, 64);
    TRY(cuMemcpy(d, m, 64));
    TRY(cuMemcpyDtoH(back, d, 64));
    printf("cuMemcpy from managed: %d\n", back[0] == 0x12);
    range_attributes("fresh", m, 8192);

    /* Advice and prefetches. */
    CUmemLocation dev0 = location(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CUmemLocation on_host = location(CU_MEM_LOCATION_TYPE_HOST, 0);
    printf("advise read mostly: %s\n", name_of(cuMemAdvise(m, 8192, CU_MEM_ADVISE_SET_READ_MOSTLY, dev0)));
    printf("advise preferred device 0: %s\n", name_of(cuMemAdvise(m, 8192, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev0)));
    printf("advise accessed by device 0: %s\n", name_of(cuMemAdvise(m, 8192, CU_MEM_ADVISE_SET_ACCESSED_BY, dev0)));
    printf("prefetch to device 0: %s\n", name_of(cuMemPrefetchAsync(m, 8192, dev0, 0, s)));
    TRY(cuStreamSynchronize(s));
    range_attributes("advised", m, 8192);
    printf("host reads after prefetch: %d\n", host[0] == 0x12 && host[4096] == 0x31);
    printf("prefetch to host: %s\n", name_of(cuMemPrefetchAsync(m, 8192, on_host, 0, s)));
    TRY(cuStreamSynchronize(s));
    range_attributes("on host", m, 4096);
    printf("advise unset read mostly: %s\n", name_of(cuMemAdvise(m, 8192, CU_MEM_ADVISE_UNSET_READ_MOSTLY, dev0)));
    printf("advise preferred host: %s\n", name_of(cuMemAdvise(m, 8192, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, on_host)));
    printf("advise unset preferred: %s\n", name_of(cuMemAdvise(m, 8192, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, dev0)));
    printf("advise unset accessed by: %s\n", name_of(cuMemAdvise(m, 8192, CU_MEM_ADVISE_UNSET_ACCESSED_BY, dev0)));
    range_attributes("unadvised", m, 8192);
    printf("advise device 9: %s\n", name_of(cuMemAdvise(m, 8192, CU_MEM_ADVISE_SET_ACCESSED_BY, location(CU_MEM_LOCATION_TYPE_DEVICE, 9))));
    printf("advise 99: %s\n", name_of(cuMemAdvise(m, 8192, (CUmem_advise)99, dev0)));
    printf("prefetch device 9: %s\n", name_of(cuMemPrefetchAsync(m, 8192, location(CU_MEM_LOCATION_TYPE_DEVICE, 9), 0, s)));
    printf("prefetch past the end: %s\n", name_of(cuMemPrefetchAsync(m, 16384, dev0, 0, s)));
    printf("advise device memory: %s\n", name_of(cuMemAdvise(d, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, dev0)));
    printf("prefetch device memory: %s\n", name_of(cuMemPrefetchAsync(d, 4096, dev0, 0, s)));
    int value = 0;
    printf("range attribute of device memory: %s\n",
           name_of(cuMemRangeGetAttribute(&value, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, d, 4096)));
    TRY(cuStreamSynchronize(s));

    /* Another GPU's view of gpu0's managed memory. */
    if (count > 1) {
        TRY(cuCtxSetCurrent(ctx1));
        CUdeviceptr d1;
        TRY(cuMemAlloc(&d1, 4096));
        printf("gpu1 copies from managed: %s", name_of(cuMemcpyDtoD(d1, m, 64)));
        TRY(cuMemcpyDtoH(back, d1, 64));
        printf(" bytes %d\n", back[0] == 0x12);
        printf("gpu1 memsets managed: %s", name_of(cuMemsetD8(m + 128, 0x66, 16)));
        printf(" seen %d\n", host[128] == 0x66);
        printf("gpu1 prefetch to device 1: %s\n",
               name_of(cuMemPrefetchAsync(m, 8192, location(CU_MEM_LOCATION_TYPE_DEVICE, 1), 0, 0)));
        TRY(cuCtxSynchronize());
        range_attributes("on gpu1", m, 8192);
        TRY(cuMemFree(d1));
        TRY(cuCtxSetCurrent(ctx));
    } else {
        printf("one GPU: no peer view of managed memory\n");
    }
    CUdeviceptr host_attached;
    printf("managed attach host: %s\n", name_of(cuMemAllocManaged(&host_attached, 4096, CU_MEM_ATTACH_HOST)));
    attributes("attached to host", host_attached);
    printf("free it: %s\n", name_of(cuMemFree(host_attached)));
    CUdeviceptr none = 0;
    printf("managed flags 0: %s\n", name_of(cuMemAllocManaged(&none, 4096, 0)));
    printf("managed flags 0x4: %s\n", name_of(cuMemAllocManaged(&none, 4096, 0x4)));
    printf("managed 0 bytes: %s\n", name_of(cuMemAllocManaged(&none, 0, CU_MEM_ATTACH_GLOBAL)));
    printf("free host on managed: %s\n", name_of(cuMemFreeHost(host)));
    printf("free managed: %s\n", name_of(cuMemFree(m)));
    printf("free managed again: %s\n", name_of(cuMemFree(m)));

    /* The managed pool, and pools on the host. */
    CUmemoryPool managed_pool = NULL, default_managed = NULL;
    CUmemLocation loc0 = dev0;
    printf("managed mem pool of device 0: %s\n", name_of(cuMemGetMemPool(&managed_pool, &loc0, CU_MEM_ALLOCATION_TYPE_MANAGED)));
    CUresult got_default = cuMemGetDefaultMemPool(&default_managed, &loc0, CU_MEM_ALLOCATION_TYPE_MANAGED);
    printf("default managed pool of device 0: %s same %d\n", name_of(got_default), managed_pool == default_managed);
    CUmemoryPool device_pool = NULL, device_default = NULL;
    printf("pinned mem pool of device 0: %s",
           name_of(cuMemGetMemPool(&device_pool, &loc0, CU_MEM_ALLOCATION_TYPE_PINNED)));
    TRY(cuDeviceGetDefaultMemPool(&device_default, dev));
    printf(" is the device's default %d\n", device_pool == device_default);
    CUmemLocation host_loc = on_host;
    CUmemoryPool host_default = NULL;
    printf("default pinned pool of the host: %s\n",
           name_of(cuMemGetDefaultMemPool(&host_default, &host_loc, CU_MEM_ALLOCATION_TYPE_PINNED)));
    if (managed_pool != NULL) {
        CUdeviceptr p = 0;
        CUresult got = cuMemAllocFromPoolAsync(&p, 4096, managed_pool, s);
        printf("managed pool alloc: %s\n", name_of(got));
        if (got == CUDA_SUCCESS) {
            TRY(cuStreamSynchronize(s));
            attributes("managed pool", p);
            memset((void *)(uintptr_t)p, 0x5c, 4096);
            TRY(cuMemcpyDtoH(back, p, 64));
            printf("managed pool bytes: %d\n", back[0] == 0x5c);
            TRY(cuMemFreeAsync(p, s));
            TRY(cuStreamSynchronize(s));
        }
    }
    if (other_pool("host", CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST, 0, 0, s)) return 1;
    if (other_pool("host ipc", CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST, 0, 1, s)) return 1;
    if (other_pool("host numa 0", CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA, 0, 0, s)) return 1;
    if (other_pool("host numa 0 ipc", CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA, 0, 1, s)) return 1;
    if (other_pool("managed device 0", CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_LOCATION_TYPE_DEVICE, 0, 0, s)) return 1;
    TRY(cuMemFree(d));
    TRY(cuStreamDestroy(s));
    TRY(cuDevicePrimaryCtxRelease(dev));
    if (count > 1) TRY(cuDevicePrimaryCtxRelease(1));
    printf("done\n");
    return 0;
}
