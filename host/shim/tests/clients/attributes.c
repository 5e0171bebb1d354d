/* Every device attribute of every GPU, as the driver answers it: "device D attribute N value V"
 * or "device D attribute N CODE". The record of an H200 is the simulator's table of attribute
 * values; a run through the shim compares its answers with it. */
#include "client.h"

int main(void) {
    int count = 0;
    setvbuf(stdout, NULL, _IONBF, 0);
    TRY(cuInit(0));
    TRY(cuDeviceGetCount(&count));
    for (int d = 0; d < count; d++) {
        CUdevice dev;
        TRY(cuDeviceGet(&dev, d));
        for (int a = 1; a < (int)CU_DEVICE_ATTRIBUTE_MAX; a++) {
            int value = 0;
            CUresult r = cuDeviceGetAttribute(&value, (CUdevice_attribute)a, dev);
            if (r == CUDA_SUCCESS) {
                printf("device %d attribute %d value %d\n", d, a, value);
            } else {
                printf("device %d attribute %d %s\n", d, a, name_of(r));
            }
        }
    }
    printf("done\n");
    return 0;
}
