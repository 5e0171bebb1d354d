// Kernels that stop themselves, for the foreign-kernel client's error modes (kernels.c): a
// failed device assert (thread 5 alone) and __trap() (thread `at`).
#include <assert.h>

extern "C" __global__ void pp_test_assert(const int *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(p[i] != n);
}

extern "C" __global__ void pp_test_trap(int at) {
    if (threadIdx.x == at) __trap();
}
