/* What the C clients share: a CUresult's name, and TRY, which on an unexpected error prints
 * "fail <call>: <code>", then "after <code>" for one more call (a context killed by a sticky
 * error answers it with the same code), and makes main return 1. */
#include <cuda.h>
#include <stdio.h>

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

/* In main: cuInit, then device 0 into `dev` and its primary context, retained and made current,
 * into `ctx` (TRY on each). */
#define ON_GPU0(dev, ctx)                                                                \
    do {                                                                                 \
        TRY(cuInit(0));                                                                  \
        TRY(cuDeviceGet(&(dev), 0));                                                     \
        TRY(cuDevicePrimaryCtxRetain(&(ctx), (dev)));                                    \
        TRY(cuCtxSetCurrent(ctx));                                                       \
    } while (0)
