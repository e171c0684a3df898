/* Start-up: the time from a process's start to the first result of a small operation (clt_add
 * of two 16-element f32 tensors, read back) on each OpenCL implementation the machine has (PoCL,
 * Rusticl with RUSTICL_ENABLE=llvmpipe, ...), against the OpenCL runtime's own start-up
 * (platform, context, queue and a one-line kernel built and run once) on the same platform as
 * the reference, both cold (the drivers' caches and the library's at fresh empty folders:
 * POCL_CACHE_DIR, MESA_SHADER_CACHE_DIR, CLT_CACHE_DIR) and warm (folders that a first run
 * filled). With `--sample PROGRAM` (the seed sample, samples/move_model), that program's whole
 * run on the platform's device is timed cold and warm too, with the lines it wrote on stderr.
 * Each case runs as a child process (this program executed again with arguments); median of 5.
 * One JSON line per case. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <cltensor.h>

#include "bench_util.h"

#define RUNS 5
#define CACHES 3 /* the compile caches a cold run starts without */
static const char *const cache_vars[CACHES] = {"POCL_CACHE_DIR", "MESA_SHADER_CACHE_DIR",
                                               "CLT_CACHE_DIR"};

/* The child's part: the first result of a clt_add on the OpenCL device of `platform`. */
static int child_cltensor(const char *platform)
{
    float a[16], b[16], c[16];
    const int64_t shape[1] = {16};
    clt_device *gpu = NULL;
    for (int i = 0; i < 16; i++)
        a[i] = (float)i, b[i] = 1.0f;
    for (int i = 0; !gpu && i < clt_device_count(); i++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", i);
        clt_device *d = clt_device_get(name);
        if (d && strcmp(clt_device_get_info(d)->platform, platform) == 0)
            gpu = d;
    }
    clt_tensor *x = gpu ? clt_tensor_from_data(1, shape, a, CLT_F32, gpu) : NULL;
    clt_tensor *y = x ? clt_tensor_from_data(1, shape, b, CLT_F32, gpu) : NULL;
    clt_tensor *z = y ? clt_add(x, y) : NULL;
    if (!z || clt_tensor_copy_to_host(z, c, sizeof c) != CLT_OK || c[15] != 16.0f) {
        fprintf(stderr, "bench_startup: %s\n", gpu ? clt_last_error() : "no such device");
        return 1;
    }
    return 0; /* tensors are left to the process's end, as a short program would */
}

/* The platform whose name is `name`, or NULL. */
static cl_platform_id find_platform(const char *name)
{
    cl_platform_id all[16];
    cl_uint n = 0;
    char got[256];
    if (clGetPlatformIDs(16, all, &n) != CL_SUCCESS)
        return NULL;
    for (cl_uint i = 0; i < n && i < 16; i++)
        if (clGetPlatformInfo(all[i], CL_PLATFORM_NAME, sizeof got, got, NULL) == CL_SUCCESS &&
            strcmp(got, name) == 0)
            return all[i];
    return NULL;
}

/* The child's part for the reference: plain OpenCL up to a trivial kernel's first result. */
static int child_opencl(const char *platform_name)
{
    static const char *src = "__kernel void add1(__global float *x) { x[get_global_id(0)] += 1.0f; }";
    cl_platform_id platform = find_platform(platform_name);
    cl_device_id dev;
    cl_int err;
    float v[16] = {0};
    size_t n = 16;
    if (!platform || clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS)
        return 1;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (clBuildProgram(prog, 1, &dev, "-cl-std=CL1.2", NULL, NULL) != CL_SUCCESS)
        return 1;
    cl_kernel k = clCreateKernel(prog, "add1", &err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof v, v, &err);
    clSetKernelArg(k, 0, sizeof buf, &buf);
    if (clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL) != CL_SUCCESS ||
        clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof v, v, 0, NULL, NULL) != CL_SUCCESS ||
        v[15] != 1.0f)
        return 1;
    return 0;
}

/* Deletes a folder and everything under it. */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[1024];
    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0)
            remove_tree(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* Fresh empty folders for the caches, under one new folder (into root). */
static int make_caches(char *root, size_t size, char dirs[CACHES][256])
{
    snprintf(root, size, "/tmp/clt_bench_startup_XXXXXX");
    if (!mkdtemp(root))
        return -1;
    for (int i = 0; i < CACHES; i++) {
        snprintf(dirs[i], 256, "%s/%d", root, i);
        if (mkdir(dirs[i], 0700) != 0)
            return -1;
    }
    return 0;
}

/* What a child run gave: seconds from fork to its first result (or to its end for a sample),
 * and the lines it wrote on stderr; seconds -1 when it failed. */
typedef struct outcome {
    double seconds;
    int stderr_lines;
} outcome;

/* Runs the child of mode ("cltensor" or "opencl" on the platform `where` names, or "sample" on
 * the device it names), with its caches at dirs. */
static outcome run_child(const char *mode, const char *where, const char *sample,
                         char dirs[CACHES][256])
{
    int out[2], err[2], status = 0;
    outcome r = {-1.0, 0};
    double start, done = -1.0;
    char line[512] = "";
    pid_t pid;

    if (pipe(out) != 0 || pipe(err) != 0)
        return r;
    start = now_s();
    pid = fork();
    if (pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        close(out[0]), close(err[0]);
        for (int i = 0; i < CACHES; i++)
            setenv(cache_vars[i], dirs[i], 1);
        if (strcmp(mode, "sample") == 0) {
            setenv("CLT_VISIBLE_DEVICES", where, 1); /* the device alone, as gpu:0 */
            setenv("CLT_DEVICE", "gpu:0", 1); /* chosen even where it is a CPU-type device */
            execl(sample, sample, (char *)NULL);
        } else {
            execl("/proc/self/exe", "bench_startup", "--child", mode, where, (char *)NULL);
        }
        _exit(127);
    }
    close(out[1]), close(err[1]);
    FILE *fo = fdopen(out[0], "r"), *fe = fdopen(err[0], "r");
    while (fo && fgets(line, sizeof line, fo))
        if (strcmp(mode, "sample") != 0)
            done = atof(line);
    while (fe && fgets(line, sizeof line, fe))
        r.stderr_lines++;
    if (fo)
        fclose(fo);
    if (fe)
        fclose(fe);
    waitpid(pid, &status, 0);
    if (strcmp(mode, "sample") == 0)
        done = now_s();
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || done <= 0.0)
        return r;
    r.seconds = done - start;
    return r;
}

/* The median of RUNS children of mode: cold runs each get fresh empty caches, warm runs share
 * the ones in warm. The most stderr lines any run wrote into *lines. */
static double measure(const char *mode, const char *where, const char *sample, bool cold,
                      char warm[CACHES][256], int *lines)
{
    double t[RUNS];
    *lines = 0;
    for (int i = 0; i < RUNS; i++) {
        char root[64], dirs[CACHES][256];
        if (cold && make_caches(root, sizeof root, dirs) != 0)
            return -1.0;
        outcome o = run_child(mode, where, sample, cold ? dirs : warm);
        if (cold)
            remove_tree(root);
        if (o.seconds < 0)
            return -1.0;
        t[i] = o.seconds;
        if (o.stderr_lines > *lines)
            *lines = o.stderr_lines;
    }
    return median(t, RUNS);
}

static void report(const char *platform, const char *label, double s, double ref, int lines)
{
    printf("{\"bench\":\"startup\",\"platform\":\"%s\",\"case\":\"%s\",\"runs\":%d,"
           "\"median_s\":%.4f,\"reference_s\":%.4f,\"ratio\":%.2f,\"stderr_lines\":%d}\n",
           platform, label, RUNS, s, ref, s / ref, lines);
}

/* Every case on one platform (its device's name for a sample run in device). */
static int bench_platform(const char *platform, const char *device, const char *sample)
{
    char root[64], warm[CACHES][256];
    int lines = 0, failed = 0;
    if (make_caches(root, sizeof root, warm) != 0)
        return 1;
    /* fill the warm caches: a first run of each */
    if (run_child("cltensor", platform, NULL, warm).seconds < 0 ||
        run_child("opencl", platform, NULL, warm).seconds < 0) {
        fprintf(stderr, "bench_startup: the first run on %s failed\n", platform);
        remove_tree(root);
        return 1;
    }
    double ref_cold = measure("opencl", platform, NULL, true, NULL, &lines);
    double ref_warm = measure("opencl", platform, NULL, false, warm, &lines);
    double cold = measure("cltensor", platform, NULL, true, NULL, &lines);
    if (ref_cold > 0 && ref_warm > 0 && cold > 0) {
        printf("{\"bench\":\"startup\",\"platform\":\"%s\",\"case\":\"opencl_cold\",\"runs\":%d,"
               "\"median_s\":%.4f,\"ratio\":1.00}\n", platform, RUNS, ref_cold);
        printf("{\"bench\":\"startup\",\"platform\":\"%s\",\"case\":\"opencl_warm\",\"runs\":%d,"
               "\"median_s\":%.4f,\"ratio\":1.00}\n", platform, RUNS, ref_warm);
        report(platform, "cold", cold, ref_cold, lines);
        double hot = measure("cltensor", platform, NULL, false, warm, &lines);
        if (hot > 0)
            report(platform, "warm", hot, ref_warm, lines);
        failed |= hot <= 0;
    } else {
        failed = 1;
    }
    if (sample && !failed) {
        double s_cold = measure("sample", device, sample, true, NULL, &lines);
        if (s_cold > 0)
            report(platform, "sample_cold", s_cold, ref_cold, lines);
        run_child("sample", device, sample, warm); /* fills the warm caches */
        double s_warm = measure("sample", device, sample, false, warm, &lines);
        if (s_warm > 0)
            report(platform, "sample_warm", s_warm, ref_warm, lines);
        failed |= s_cold <= 0 || s_warm <= 0;
    }
    remove_tree(root);
    if (failed)
        fprintf(stderr, "bench_startup: a child process on %s failed\n", platform);
    return failed;
}

int main(int argc, char **argv)
{
    const char *sample = NULL;
    if (argc == 4 && strcmp(argv[1], "--child") == 0) {
        int rc = strcmp(argv[2], "opencl") == 0 ? child_opencl(argv[3]) : child_cltensor(argv[3]);
        if (rc == 0)
            printf("%.9f\n", now_s());
        fflush(stdout);
        return rc;
    }
    if (argc == 3 && strcmp(argv[1], "--sample") == 0)
        sample = argv[2];
    else if (argc != 1) {
        fprintf(stderr, "usage: bench_startup [--sample PROGRAM]\n");
        return 2;
    }
    setenv("RUSTICL_ENABLE", "llvmpipe", 0); /* Mesa's Rusticl on the CPU, unless told */

    /* the platforms of the OpenCL devices, each once, with a device's name (for the sample) */
    char platforms[8][256], devices[8][256];
    int n = 0, failed = 0;
    for (int i = 0; i < clt_device_count() && n < 8; i++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", i);
        const clt_device_info *info = clt_device_get_info(clt_device_get(name));
        bool seen = false;
        for (int j = 0; j < n; j++)
            seen = seen || strcmp(platforms[j], info->platform) == 0;
        if (!seen) {
            snprintf(platforms[n], sizeof platforms[n], "%s", info->platform);
            /* (up to a comma: CLT_VISIBLE_DEVICES is a comma list of name parts) */
            snprintf(devices[n++], sizeof devices[0], "%.*s", (int)strcspn(info->name, ","),
                     info->name);
        }
    }
    if (n == 0) {
        fprintf(stderr, "bench_startup: no OpenCL device\n");
        return 1;
    }
    /* this process touched OpenCL: the children are executed afresh, never merely forked */
    for (int i = 0; i < n; i++)
        failed |= bench_platform(platforms[i], devices[i], sample);
    return failed;
}
