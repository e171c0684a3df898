/* clt-info: what cltensor sees on this machine, for people and for scripts. Lists the devices
 * one a line (like `nvidia-smi -L`), or every detail with -v; builds the kernel cache ahead of
 * time with --warmup; prints the version and the disk cache's folder. Uses only the public API.
 *
 * Exit status: 0 success; 1 something failed (the device list, a warm-up, the cache is off for
 * --cache), with the reason on stderr; 2 a usage error; 3 a device named with -d does not exist.
 * The library's warnings go to stderr and change no exit status. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cltensor.h>

enum { EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_NO_DEVICE = 3, MAX_SELECTED = 64 };

static const char usage[] =
    "usage: clt-info [-v] [-d NAME]... [--warmup]\n"
    "       clt-info --version | --cache | --help\n"
    "\n"
    "Lists the devices cltensor sees: cpu, then the OpenCL devices gpu:0, gpu:1, ...\n"
    "  -L, --list         one line per device (the default)\n"
    "  -v, --verbose      every detail of each device, the version, the disk cache and the\n"
    "                     CLT_* variables in effect\n"
    "  -d, --device NAME  only this device (cpu, gpu, gpu:N); may be repeated\n"
    "      --warmup       build every kernel on each device listed, so that later processes\n"
    "                     load them from the disk cache\n"
    "      --version      print the library's version\n"
    "      --cache        print the disk cache's folder\n"
    "  -h, --help         this text\n"
    "\n"
    "Exit status: 0 success; 1 a failure, explained on stderr (the device list, a warm-up,\n"
    "--cache with the cache off); 2 a usage error; 3 a device named with -d does not exist.\n"
    "Warnings (an OpenCL platform that could not be loaded, ...) go to stderr.\n";

typedef struct options {
    bool verbose, warmup, version, cache;
    const char *names[MAX_SELECTED];
    int n_names;
} options;

static const char *const type_names[] = {"host", "GPU", "accelerator", "CPU"};

/* "23.5 GiB" into buf. */
static const char *human_bytes(uint64_t bytes, char *buf, size_t size)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    if (u == 0)
        snprintf(buf, size, "%" PRIu64 " bytes", bytes);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
    return buf;
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "clt-info: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(clt-info --help lists the options)\n");
    return EXIT_USAGE;
}

/* Fills o from the command line; 0, or the exit status of a usage error. */
static int parse(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *name = NULL;
        if (!strcmp(a, "-L") || !strcmp(a, "--list"))
            continue;
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose"))
            o->verbose = true;
        else if (!strcmp(a, "--warmup"))
            o->warmup = true;
        else if (!strcmp(a, "--version"))
            o->version = true;
        else if (!strcmp(a, "--cache"))
            o->cache = true;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            exit(0);
        } else if (!strcmp(a, "-d") || !strcmp(a, "--device")) {
            if (i + 1 == argc)
                return usage_error("%s needs a device name", a);
            name = argv[++i];
        } else if (!strncmp(a, "--device=", 9))
            name = a + 9;
        else
            return usage_error("unknown option %s", a);
        if (name) {
            if (o->n_names == MAX_SELECTED)
                return usage_error("more than 64 devices named (at %s)", name);
            o->names[o->n_names++] = name;
        }
    }
    if ((o->version || o->cache) && (o->verbose || o->warmup || o->n_names || o->version == o->cache))
        return usage_error("%s is used alone", o->version ? "--version" : "--cache");
    return 0;
}

/* The devices to show, each once: those named, else cpu and every gpu:N. Returns the count, or
 * minus the exit status after printing why. */
static int select_devices(const options *o, clt_device **devs)
{
    int n = 0, count = clt_device_count();

    if (count < 0) {
        fprintf(stderr, "clt-info: %s\n", clt_last_error());
        return -EXIT_FAILED;
    }
    if (o->n_names == 0) {
        devs[n++] = clt_device_cpu();
        for (int i = 0; i < count && n < MAX_SELECTED; i++) {
            char name[16];
            snprintf(name, sizeof name, "gpu:%d", i);
            devs[n++] = clt_device_get(name);
        }
        return n;
    }
    for (int i = 0; i < o->n_names; i++) {
        clt_device *dev = clt_device_get(o->names[i]);
        bool seen = false;
        if (!dev) {
            fprintf(stderr, "clt-info: %s\n", clt_last_error());
            return -EXIT_NO_DEVICE;
        }
        for (int j = 0; j < n; j++)
            seen |= devs[j] == dev;
        if (!seen)
            devs[n++] = dev;
    }
    return n;
}

static void list_line(clt_device *dev)
{
    const clt_device_info *info = clt_device_get_info(dev);
    char mem[32];
    printf("%s: %s (%s", clt_device_name(dev), info->name, type_names[info->type]);
    if (info->type != CLT_DEVICE_HOST)
        printf(", %s: %s", info->backend, info->platform);
    printf(", %u compute units, %s)\n", info->compute_units,
           human_bytes(info->global_mem_bytes, mem, sizeof mem));
}

static void field(const char *label, const char *value)
{
    printf("  %-20s %s\n", label, value);
}

static void field_bytes(const char *label, uint64_t bytes)
{
    char buf[64], human[32];
    snprintf(buf, sizeof buf, "%s (%" PRIu64 " bytes)", human_bytes(bytes, human, sizeof human),
             bytes);
    field(label, buf);
}

static void details(clt_device *dev)
{
    const clt_device_info *info = clt_device_get_info(dev);
    clt_memory_stats stats;
    char buf[64];

    printf("%s: %s\n", clt_device_name(dev), info->name);
    field("type:", type_names[info->type]);
    field("backend:", info->backend);
    field("platform:", info->platform);
    field("vendor:", info->vendor);
    if (info->type != CLT_DEVICE_HOST) {
        field("version:", info->version);
        field("driver version:", info->driver_version);
    }
    snprintf(buf, sizeof buf, "%u", info->compute_units);
    field("compute units:", buf);
    if (info->type != CLT_DEVICE_HOST) {
        snprintf(buf, sizeof buf, "%zu", info->max_work_group_size);
        field("max work-group size:", buf);
    }
    field_bytes("global memory:", info->global_mem_bytes);
    field_bytes("largest buffer:", info->max_alloc_bytes);
    if (clt_device_memory_stats(dev, &stats) == CLT_OK && stats.limit)
        field_bytes("memory limit:", stats.limit);
    else
        field("memory limit:", "none");
    field("f64:", info->fp64 ? "yes" : "no");
    field("f16 arithmetic:", info->fp16 ? "yes" : "no (f16 storage, f32 arithmetic)");
}

static void header(void)
{
    static const char *const vars[] = {"CLT_VISIBLE_DEVICES", "CLT_SUBDEVICES", "CLT_KERNEL_DIR",
                                       "CLT_CACHE_DIR", "CLT_CACHE_SIZE", "CLT_GEMM",
                                       "CLT_WINOGRAD", "CLT_NUM_THREADS", "CLT_LOG",
                                       "CLT_DEVICE_MEMORY_LIMIT", "CLT_BATCH_WORKERS",
                                       "CLT_OPENCL_LIBRARY", "CLT_CLBLAST_LIBRARY",
                                       "CLT_HOST_GEMM", "CLT_HOST_GEMM_ISA", "OCL_ICD_VENDORS"};
    clt_cache_info cache;
    char size[32], limit[32];

    const char *opencl = clt_backend_status("opencl");
    printf("cltensor %s\n", clt_version_string());
    printf("opencl: %s\n", opencl ? opencl : "not built into this library");
    clt_cache_get_info(&cache);
    if (cache.enabled)
        printf("disk cache: %s (%" PRIu64 " entries, %s; limit %s)\n", cache.dir, cache.entries,
               human_bytes(cache.bytes, size, sizeof size),
               human_bytes(cache.size_limit, limit, sizeof limit));
    else if (cache.dir[0])
        printf("disk cache: off (%s cannot be used)\n", cache.dir);
    else
        printf("disk cache: off\n");
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v)
            printf("%s=%s\n", vars[i], v);
    }
    printf("default device: %s\n", clt_device_name(clt_device_default()));
}

static int cache_folder(void)
{
    clt_cache_info cache;
    clt_cache_get_info(&cache);
    if (!cache.enabled) {
        if (cache.dir[0])
            fprintf(stderr, "clt-info: the disk cache is off: %s cannot be created or written\n",
                    cache.dir);
        else
            fprintf(stderr, "clt-info: the disk cache is off (CLT_CACHE_DIR=off, or no folder: "
                            "CLT_CACHE_DIR, XDG_CACHE_HOME and HOME unset, or a name too long)\n");
        return EXIT_FAILED;
    }
    printf("%s\n", cache.dir);
    return 0;
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Builds the kernels of each device; 0, or EXIT_FAILED when one failed (the others still run). */
static int warmup(clt_device **devs, int n)
{
    int status = 0;
    for (int i = 0; i < n; i++) {
        double t0 = seconds();
        if (clt_device_warmup(devs[i]) != CLT_OK) {
            fprintf(stderr, "clt-info: %s: warm-up failed: %s\n", clt_device_name(devs[i]),
                    clt_last_error());
            status = EXIT_FAILED;
            continue;
        }
        printf("%s: kernels ready in %.2f s\n", clt_device_name(devs[i]), seconds() - t0);
    }
    return status;
}

/* The library's warnings (a platform that could not be loaded, an unusable cache folder) go to
 * stderr; they change no exit status. */
static void print_warning(clt_log_level level, const char *message, void *user)
{
    (void)level, (void)user;
    fprintf(stderr, "clt-info: warning: %s\n", message);
}

int main(int argc, char **argv)
{
    options o = {0};
    clt_device *devs[MAX_SELECTED];
    int n, status = parse(argc, argv, &o);

    if (status)
        return status;
    if (!getenv("CLT_LOG")) /* CLT_LOG logs to stderr itself */
        clt_set_log_callback(print_warning, NULL, CLT_LOG_WARN);
    if (o.version) {
        printf("cltensor %s\n", clt_version_string());
        return 0;
    }
    if (o.cache)
        return cache_folder();
    n = select_devices(&o, devs);
    if (n < 0)
        return -n;
    if (o.verbose) {
        header();
        for (int i = 0; i < n; i++) {
            printf("\n");
            details(devs[i]);
        }
        if (o.warmup)
            printf("\n");
    } else if (!o.warmup) {
        for (int i = 0; i < n; i++)
            list_line(devs[i]);
        if (clt_device_count() == 0 && o.n_names == 0) { /* why there is no gpu:N */
            const char *opencl = clt_backend_status("opencl");
            printf("no gpu:N: %s\n", opencl ? opencl : "OpenCL is not built into this library");
        }
    }
    return o.warmup ? warmup(devs, n) : 0;
}
