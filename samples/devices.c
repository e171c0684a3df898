/* Lists the devices cltensor sees, like `nvidia-smi -L` or `clinfo -l`: `cpu`, then every
 * OpenCL device as gpu:N, and the default device. */
#include <stdio.h>

#include <cltensor.h>

static void show(const clt_device *dev)
{
    static const char *const types[] = {"host", "GPU", "accelerator", "CPU"};
    const clt_device_info *info = clt_device_get_info(dev);
    printf("%-6s %s\n", clt_device_name(dev), info->name);
    printf("       type %s, %s platform %s, %u compute units, %.1f GiB%s%s\n", types[info->type],
           info->backend, info->platform, info->compute_units, (double)info->global_mem_bytes / (1 << 30),
           info->fp64 ? ", fp64" : "", info->fp16 ? ", fp16" : "");
    if (info->version[0])
        printf("       %s, driver %s\n", info->version, info->driver_version);
}

int main(void)
{
    int n = clt_device_count();
    if (n < 0) {
        fprintf(stderr, "%s\n", clt_last_error());
        return 1;
    }
    show(clt_device_cpu());
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", i);
        show(clt_device_get(name));
    }
    printf("%d OpenCL device%s; default device: %s\n", n, n == 1 ? "" : "s",
           clt_device_name(clt_device_default()));
    if (n == 0) { /* why there is no gpu:N (NULL: a library built without OpenCL) */
        const char *why = clt_backend_status("opencl");
        printf("OpenCL: %s\n", why ? why : "not built into this library");
    }
    return 0;
}
