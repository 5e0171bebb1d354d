// How much a context costs, and what a fault in one context leaves usable, on one GPU.
// Driver API only; plain C so that it checks the driver apart from peerpool's code.
// Modes (each prints JSON lines):
//   timing            primary context, then cuCtxCreate x4 and green contexts x3, each timed
//   isolation KIND    KIND created|green: fault in one context, then what still works
//   cycles K          K probes in one process: new context, control, fault, destroy
//   concurrent N      N processes fault at one instant; per-process fault and exit times
//   after_fault       a context made while another process's faulted context goes away, and
//                     one made alone, for comparison
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

// One kernel: *dst = *src + 1. A fault is a src that no page backs on this GPU.
static const char *PTX =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry touch(.param .u64 src, .param .u64 dst) {\n"
    "  .reg .u64 %rd<3>; .reg .u32 %r<2>;\n"
    "  ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst];\n"
    "  ld.global.u32 %r1, [%rd1]; add.u32 %r1, %r1, 1; st.global.u32 [%rd2], %r1;\n"
    "  ret;\n}\n";

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static const char *err_name(CUresult r) {
    const char *s = NULL;
    if (cuGetErrorName(r, &s) != CUDA_SUCCESS || !s) return "?";
    return s;
}

#define CHECK(call)                                                                    \
    do {                                                                               \
        CUresult r_ = (call);                                                          \
        if (r_ != CUDA_SUCCESS) {                                                      \
            printf("{\"fatal\":\"%s\",\"line\":%d,\"error\":\"%s\"}\n", #call, __LINE__, \
                   err_name(r_));                                                      \
            fflush(stdout);                                                            \
            exit(2);                                                                   \
        }                                                                              \
    } while (0)

static CUdevice dev;
static CUdeviceptr unmapped; // reserved, never mapped: every read of it faults

typedef struct {
    CUmodule module;
    CUfunction touch;
    CUdeviceptr buf;
} Kit;

// Loads the kernel and a one-word buffer in the current context.
static double kit_make(Kit *k) {
    double t0 = now_us();
    CHECK(cuModuleLoadData(&k->module, PTX));
    CHECK(cuModuleGetFunction(&k->touch, k->module, "touch"));
    CHECK(cuMemAlloc(&k->buf, 4));
    return now_us() - t0;
}

// Runs touch(src -> buf) in the current context; returns launch and sync results.
static void run_touch(Kit *k, CUdeviceptr src, CUresult *launch, CUresult *sync, double *us) {
    void *args[] = {&src, &k->buf};
    double t0 = now_us();
    *launch = cuLaunchKernel(k->touch, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
    *sync = cuCtxSynchronize();
    *us = now_us() - t0;
}

// The control: buf = 41, touch(buf -> buf), expect 42. Prints one line.
static int control(const char *where, Kit *k) {
    unsigned v = 41;
    CUresult w = cuMemcpyHtoD(k->buf, &v, 4), launch = CUDA_SUCCESS, sync = CUDA_SUCCESS;
    double us = 0;
    if (w == CUDA_SUCCESS) run_touch(k, k->buf, &launch, &sync, &us);
    CUresult rd = CUDA_ERROR_UNKNOWN;
    v = 0;
    if (w == CUDA_SUCCESS && launch == CUDA_SUCCESS && sync == CUDA_SUCCESS)
        rd = cuMemcpyDtoH(&v, k->buf, 4);
    int ok = rd == CUDA_SUCCESS && v == 42;
    printf("{\"control\":\"%s\",\"write\":\"%s\",\"launch\":\"%s\",\"sync\":\"%s\",\"value\":%u,"
           "\"ok\":%s}\n",
           where, err_name(w), err_name(launch), err_name(sync), v, ok ? "true" : "false");
    return ok;
}

// The probe: touch(unmapped -> buf) must fault. Prints one line; returns the sync result.
static CUresult fault(const char *where, Kit *k) {
    CUresult launch, sync;
    double us;
    run_touch(k, unmapped, &launch, &sync, &us);
    printf("{\"fault\":\"%s\",\"launch\":\"%s\",\"sync\":\"%s\",\"us\":%.1f}\n", where,
           err_name(launch), err_name(sync), us);
    return sync;
}

static void setup(void) {
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
}

// After setup and a current context: reserve a VA range that stays unmapped.
static void reserve_unmapped(void) { CHECK(cuMemAddressReserve(&unmapped, 2 << 20, 0, 0, 0)); }

static CUcontext primary(double *us) {
    CUcontext c;
    double t0 = now_us();
    CHECK(cuDevicePrimaryCtxRetain(&c, dev));
    CHECK(cuCtxSetCurrent(c));
    CHECK(cuCtxSynchronize());
    *us = now_us() - t0;
    return c;
}

static CUcontext created(double *us) {
    CUcontext c;
    double t0 = now_us();
    CHECK(cuCtxCreate(&c, NULL, 0, dev)); // made current by cuCtxCreate
    CHECK(cuCtxSynchronize());
    *us = now_us() - t0;
    return c;
}

static CUgreenCtx green(CUcontext *as_ctx, double *us) {
    CUdevResource sm;
    CUdevResourceDesc desc;
    CUgreenCtx g;
    double t0 = now_us();
    CHECK(cuDeviceGetDevResource(dev, &sm, CU_DEV_RESOURCE_TYPE_SM));
    CHECK(cuDevResourceGenerateDesc(&desc, &sm, 1));
    CHECK(cuGreenCtxCreate(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    CHECK(cuCtxFromGreenCtx(as_ctx, g));
    CHECK(cuCtxSetCurrent(*as_ctx));
    CHECK(cuCtxSynchronize());
    *us = now_us() - t0;
    return g;
}

static void mode_timing(void) {
    double t0 = now_us(), us;
    setup();
    printf("{\"step\":\"cuInit\",\"us\":%.1f}\n", now_us() - t0);
    CUcontext c[4];
    for (int i = 0; i < 2; i++) {
        c[i] = created(&us);
        printf("{\"step\":\"cuCtxCreate before primary\",\"n\":%d,\"us\":%.1f}\n", i, us);
    }
    primary(&us);
    printf("{\"step\":\"primary\",\"us\":%.1f}\n", us);
    for (int i = 2; i < 4; i++) {
        c[i] = created(&us);
        printf("{\"step\":\"cuCtxCreate after primary\",\"n\":%d,\"us\":%.1f}\n", i, us);
    }
    for (int i = 0; i < 4; i++) {
        t0 = now_us();
        CHECK(cuCtxDestroy(c[i]));
        printf("{\"step\":\"cuCtxDestroy\",\"n\":%d,\"us\":%.1f}\n", i, now_us() - t0);
    }
    for (int i = 0; i < 3; i++) {
        CUcontext as;
        CUgreenCtx g = green(&as, &us);
        printf("{\"step\":\"green\",\"n\":%d,\"us\":%.1f}\n", i, us);
        t0 = now_us();
        CHECK(cuGreenCtxDestroy(g));
        printf("{\"step\":\"cuGreenCtxDestroy\",\"n\":%d,\"us\":%.1f}\n", i, now_us() - t0);
    }
}

static void mode_isolation(const char *kind) {
    double us;
    setup();
    CUcontext p = primary(&us);
    reserve_unmapped();
    Kit pk;
    kit_make(&pk);
    control("primary before", &pk);
    for (int round = 0; round < 3; round++) {
        char name[64];
        CUcontext x;
        CUgreenCtx g = NULL;
        if (strcmp(kind, "green") == 0)
            g = green(&x, &us);
        else
            x = created(&us);
        printf("{\"step\":\"%s context\",\"round\":%d,\"us\":%.1f}\n", kind, round, us);
        Kit xk;
        CHECK(cuCtxSetCurrent(x));
        us = kit_make(&xk);
        printf("{\"step\":\"module and buffer\",\"round\":%d,\"us\":%.1f}\n", round, us);
        snprintf(name, sizeof name, "%s %d before its fault", kind, round);
        control(name, &xk);
        snprintf(name, sizeof name, "%s %d", kind, round);
        fault(name, &xk);
        CUresult again = cuCtxSynchronize();
        printf("{\"after\":\"%s\",\"its own sync\":\"%s\"}\n", name, err_name(again));
        CHECK(cuCtxSetCurrent(p));
        snprintf(name, sizeof name, "primary after %s %d's fault", kind, round);
        control(name, &pk);
        double t0 = now_us();
        CUresult d = g ? cuGreenCtxDestroy(g) : cuCtxDestroy(x);
        printf("{\"step\":\"destroy faulted\",\"round\":%d,\"result\":\"%s\",\"us\":%.1f}\n", round,
               err_name(d), now_us() - t0);
        CHECK(cuCtxSetCurrent(p));
        snprintf(name, sizeof name, "primary after destroying %s %d", kind, round);
        control(name, &pk);
    }
}

static void mode_cycles(int k) {
    double us, t_all = now_us();
    setup();
    CUcontext p = primary(&us);
    (void)p;
    reserve_unmapped();
    int faulted = 0, controls = 0;
    for (int i = 0; i < k; i++) {
        double t0 = now_us(), c_us;
        CUcontext x = created(&c_us);
        Kit xk;
        double m_us = kit_make(&xk);
        char name[32];
        snprintf(name, sizeof name, "cycle %d", i);
        controls += control(name, &xk);
        double f0 = now_us();
        faulted += fault(name, &xk) == CUDA_ERROR_ILLEGAL_ADDRESS;
        double f_us = now_us() - f0, d0 = now_us();
        CUresult d = cuCtxDestroy(x);
        printf("{\"cycle\":%d,\"context_us\":%.1f,\"module_us\":%.1f,\"fault_us\":%.1f,"
               "\"destroy\":\"%s\",\"destroy_us\":%.1f,\"total_us\":%.1f}\n",
               i, c_us, m_us, f_us, err_name(d), now_us() - d0, now_us() - t0);
    }
    printf("{\"cycles\":%d,\"controls_ok\":%d,\"faults\":%d,\"wall_us\":%.1f}\n", k, controls,
           faulted, now_us() - t_all);
}

static void mode_concurrent(int n) {
    int ready[2], go[2];
    if (pipe(ready) || pipe(go)) exit(2);
    double spawn = now_us();
    for (int i = 0; i < n; i++) {
        if (fork() == 0) {
            double us, t0 = now_us();
            setup();
            primary(&us);
            reserve_unmapped();
            Kit k;
            kit_make(&k);
            double made = now_us() - t0;
            char b = 'r';
            if (write(ready[1], &b, 1) != 1 || read(go[0], &b, 1) != 1) _exit(3);
            double f0 = now_us();
            CUresult r = fault("child", &k);
            double f1 = now_us();
            printf("{\"child\":%d,\"setup_us\":%.1f,\"fault_start\":%.1f,\"fault_end\":%.1f,"
                   "\"result\":\"%s\",\"exit_at\":%.1f}\n",
                   i, made, f0, f1, err_name(r), now_us());
            fflush(stdout);
            _exit(r == CUDA_ERROR_ILLEGAL_ADDRESS ? 0 : 1);
        }
    }
    char b;
    for (int i = 0; i < n; i++)
        if (read(ready[0], &b, 1) != 1) exit(2);
    double released = now_us();
    for (int i = 0; i < n; i++)
        if (write(go[1], "g", 1) != 1) exit(2);
    int ok = 0;
    for (int i = 0; i < n; i++) {
        int st;
        wait(&st);
        ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
        printf("{\"reaped\":%d,\"at\":%.1f}\n", i, now_us());
    }
    printf("{\"concurrent\":%d,\"faulted_ok\":%d,\"ready_after_us\":%.1f,\"released_at\":%.1f,"
           "\"all_reaped_after_release_us\":%.1f}\n",
           n, ok, released - spawn, released, now_us() - released);
}

// Child B waits (cuInit done) until child A's kernel has faulted, then makes its context while
// A exits; then a third child makes one with nobody else on the GPU.
static void mode_after_fault(void) {
    int faulted[2], go[2], ready[2];
    if (pipe(faulted) || pipe(go) || pipe(ready)) exit(2);
    char b;
    if (fork() == 0) { // B
        double us;
        setup();
        if (write(ready[1], "r", 1) != 1 || read(go[0], &b, 1) != 1) _exit(3);
        double at = now_us();
        primary(&us);
        printf("{\"child\":\"B\",\"context_while_A_exits_us\":%.1f,\"started_at\":%.1f}\n", us, at);
        _exit(0);
    }
    if (read(ready[0], &b, 1) != 1) exit(2);
    if (fork() == 0) { // A
        double us;
        setup();
        primary(&us);
        reserve_unmapped();
        Kit k;
        kit_make(&k);
        fault("A", &k);
        double at = now_us();
        if (write(faulted[1], "f", 1) != 1) _exit(3);
        printf("{\"child\":\"A\",\"exits_at\":%.1f}\n", at);
        fflush(stdout);
        _exit(0);
    }
    if (read(faulted[0], &b, 1) != 1 || write(go[1], "g", 1) != 1) exit(2);
    int st;
    while (wait(&st) > 0) {
    }
    printf("{\"A_and_B_reaped_at\":%.1f}\n", now_us());
    if (fork() == 0) {
        double us;
        setup();
        primary(&us);
        printf("{\"child\":\"C\",\"context_alone_us\":%.1f}\n", us);
        _exit(0);
    }
    while (wait(&st) > 0) {
    }
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "timing") == 0) mode_timing();
    else if (argc >= 3 && strcmp(argv[1], "isolation") == 0) mode_isolation(argv[2]);
    else if (argc >= 3 && strcmp(argv[1], "cycles") == 0) mode_cycles(atoi(argv[2]));
    else if (argc >= 3 && strcmp(argv[1], "concurrent") == 0) mode_concurrent(atoi(argv[2]));
    else if (argc >= 2 && strcmp(argv[1], "after_fault") == 0) mode_after_fault();
    else {
        fprintf(stderr, "usage: contexts timing | isolation created|green | cycles K | concurrent N | after_fault\n");
        return 2;
    }
    return 0;
}
