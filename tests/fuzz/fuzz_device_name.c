/* libFuzzer target for the device-name parser (clt_device_get's): the first byte of an input is
 * the number of OpenCL devices (0 ... 15), the rest the name. Aborts when the answer breaks what
 * the names mean: "cpu" is cpu, "gpu" the current GPU when there is one, "gpu:N" device N when
 * it exists and is written without leading zeros, and nothing else is a name. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char name[64], canonical[32];
    if (size == 0 || size > sizeof name)
        return 0;
    int gpus = data[0] % 16;
    memcpy(name, data + 1, size - 1);
    name[size - 1] = '\0'; /* a NUL inside cuts the name short, as in C */
    int r = clt__device_name_parse(name, gpus);
    if (r >= 0) {
        snprintf(canonical, sizeof canonical, "gpu:%d", r);
        if (r >= gpus || strcmp(canonical, name) != 0)
            abort();
    } else if (r == CLT__NAME_CPU) {
        if (strcmp(name, "cpu") != 0)
            abort();
    } else if (r == CLT__NAME_GPU) {
        if (strcmp(name, "gpu") != 0 || gpus == 0)
            abort();
    } else if (r == CLT__NAME_NO_DEVICE) {
        if (strcmp(name, "gpu") != 0 && strncmp(name, "gpu:", 4) != 0)
            abort();
    } else if (r != CLT__NAME_INVALID) {
        abort();
    }
    return 0;
}
