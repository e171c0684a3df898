/* Module moves: clt_module_to of a 100M-parameter model (400 MB of f32) from cpu to each OpenCL
 * device and back, in GB/s against memcpy of the same bytes in the same run (into reused and
 * into new memory), and the time of a
 * clt_module_to call on a model already on the device. One JSON line per case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cltensor.h>

#include "bench_util.h"

#define REPEATS 5

static volatile char sink;

int main(void)
{
    const size_t bytes = (size_t)10000 * 10000 * sizeof(float);
    clt_manual_seed(0);
    clt_module *model = clt_nn_linear(10000, 10000, false);
    char *a = malloc(bytes), *b = malloc(bytes);
    double t_mem[REPEATS];
    if (!model || !a || !b) {
        fprintf(stderr, "%s\n", clt_last_error());
        return 1;
    }
    memset(a, 1, bytes);
    memset(b, 0, bytes);
    for (int r = -1; r < REPEATS; r++) {
        double t0 = now_s();
        memcpy(b, a, bytes);
        if (r >= 0)
            t_mem[r] = now_s() - t0;
    }
    double mem = median(t_mem, REPEATS), t_fresh[REPEATS];
    for (int r = -1; r < REPEATS; r++) { /* into new memory, as a move makes */
        double t0 = now_s();
        char *c = malloc(bytes);
        if (!c)
            return 1;
        memcpy(c, a, bytes);
        sink += c[bytes / 2]; /* the copy is used: the compiler keeps it */
        free(c);
        if (r >= 0)
            t_fresh[r] = now_s() - t0;
    }
    double fresh = median(t_fresh, REPEATS);
    for (int d = 0; d < clt_device_count(); d++) {
        char name[16];
        double t_to[REPEATS], t_back[REPEATS], t_noop[1001];
        snprintf(name, sizeof name, "gpu:%d", d);
        clt_device *dev = clt_device_get(name), *cpu = clt_device_cpu();
        for (int r = -1; r < REPEATS; r++) {
            double t0 = now_s();
            if (clt_module_to(model, dev) != CLT_OK)
                return fprintf(stderr, "%s\n", clt_last_error()), 1;
            clt_device_synchronize(dev);
            double t1 = now_s();
            if (clt_module_to(model, cpu) != CLT_OK)
                return fprintf(stderr, "%s\n", clt_last_error()), 1;
            double t2 = now_s();
            if (r >= 0)
                t_to[r] = t1 - t0, t_back[r] = t2 - t1;
        }
        clt_module_to(model, dev);
        for (int r = 0; r < 1001; r++) {
            double t0 = now_s();
            clt_module_to(model, dev);
            t_noop[r] = now_s() - t0;
        }
        clt_module_to(model, cpu);
        double to = median(t_to, REPEATS), back = median(t_back, REPEATS);
        printf("{\"name\": \"module_to cpu->%s\", \"bytes\": %zu, \"time_s\": %.4f, \"GB_per_s\": %.2f, "
               "\"reference\": \"memcpy\", \"reference_GB_per_s\": %.2f, \"ratio_to_reference\": %.2f}\n",
               name, bytes, to, (double)bytes / to * 1e-9, (double)bytes / mem * 1e-9, to / mem);
        printf("{\"name\": \"module_to %s->cpu\", \"bytes\": %zu, \"time_s\": %.4f, \"GB_per_s\": %.2f, "
               "\"reference\": \"memcpy\", \"reference_GB_per_s\": %.2f, \"ratio_to_reference\": %.2f}\n",
               name, bytes, back, (double)bytes / back * 1e-9, (double)bytes / mem * 1e-9, back / mem);
        printf("{\"name\": \"module_to cpu->%s\", \"bytes\": %zu, \"reference\": \"malloc+memcpy into new memory\", "
               "\"reference_GB_per_s\": %.2f, \"ratio_to_reference\": %.2f}\n",
               name, bytes, (double)bytes / fresh * 1e-9, to / fresh);
        printf("{\"name\": \"module_to already on %s\", \"time_us\": %.3f}\n", name,
               median(t_noop, 1001) * 1e6);
    }
    clt_module_release(model);
    free(a);
    free(b);
    return 0;
}
