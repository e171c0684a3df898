/* libFuzzer target for the CLT_VISIBLE_DEVICES parser: the first byte of an input is how many
 * of eight made-up devices exist (0 ... 8), the rest the variable's value. Aborts when a success
 * chooses a device twice, one that does not exist or more than exist, or when a failure gives
 * no reason or keeps a choice. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/registry.h"

static const char *const names[8] = {
    "NVIDIA H200", "AMD Radeon RX 7900 XTX", "Intel(R) Arc(TM) A770 Graphics",
    "pthread-skylake-avx512-AMD EPYC (sub-device 1 of 2)",
    "pthread-skylake-avx512-AMD EPYC (sub-device 2 of 2)", "Apple M2", "Mali-G710",
    "Oclgrind Simulator"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char value[1024], why[512];
    int order[8], chosen = -1;
    bool seen[8] = {false};
    if (size == 0 || size > sizeof value)
        return 0;
    int count = data[0] % 9;
    memcpy(value, data + 1, size - 1);
    value[size - 1] = '\0';
    clt_status st = clt__visible_parse(value, names, count, order, &chosen, why, sizeof why);
    if (st == CLT_OK) {
        if (chosen < 0 || chosen > count)
            abort();
        for (int i = 0; i < chosen; i++) {
            if (order[i] < 0 || order[i] >= count || seen[order[i]])
                abort();
            seen[order[i]] = true;
        }
    } else if (st != CLT_ERR_ENVIRONMENT || chosen != 0 || why[0] == '\0' ||
               strlen(why) >= sizeof why) {
        abort();
    }
    return 0;
}
