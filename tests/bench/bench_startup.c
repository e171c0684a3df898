/* Start-up: the time from a process's start to the first result of a small operation (clt_add
 * of two 16-element f32 tensors on gpu:0, read back), with the program cache cold (an empty
 * CLT_CACHE_DIR, PoCL's own cache off) and warm, against the OpenCL runtime's own start-up
 * (platform, context, queue and a trivial kernel built and run once) as the reference. Each
 * case runs as a child process (this program executed again with an argument); median of 5.
 * One JSON line per case. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <cltensor.h>

#include "bench_util.h"

#define RUNS 5

/* The child's part: the first result of a clt_add on gpu:0. */
static int child_cltensor(void)
{
    float a[16], b[16], c[16];
    const int64_t shape[1] = {16};
    for (int i = 0; i < 16; i++)
        a[i] = (float)i, b[i] = 1.0f;
    clt_device *gpu = clt_device_get("gpu:0");
    clt_tensor *x = gpu ? clt_tensor_from_data(a, CLT_F32, 1, shape, gpu) : NULL;
    clt_tensor *y = x ? clt_tensor_from_data(b, CLT_F32, 1, shape, gpu) : NULL;
    clt_tensor *z = y ? clt_add(x, y) : NULL;
    if (!z || clt_tensor_copy_to_host(z, c, sizeof c) != CLT_OK || c[15] != 16.0f) {
        fprintf(stderr, "bench_startup: %s\n", clt_last_error());
        return 1;
    }
    return 0; /* tensors are left to the process's end, as a short program would */
}

/* The child's part for the reference: plain OpenCL up to a trivial kernel's first result. */
static int child_opencl(void)
{
    static const char *src = "__kernel void add1(__global float *x) { x[get_global_id(0)] += 1.0f; }";
    cl_platform_id platform;
    cl_device_id dev;
    cl_int err;
    float v[16] = {0};
    size_t n = 16;
    if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS)
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

/* Deletes the files of a folder, then the folder. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* Seconds from fork to the child's first result (it reports the time on its stdout), or -1. */
static double run_child(const char *mode, const char *cache_dir)
{
    int fds[2];
    double start, done = -1.0;
    char line[64] = "";
    pid_t pid;
    int status = 0;

    if (pipe(fds) != 0)
        return -1.0;
    start = now_s();
    pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        setenv("POCL_KERNEL_CACHE", "0", 1);
        setenv("CLT_CACHE_DIR", cache_dir, 1);
        execl("/proc/self/exe", "bench_startup", "--child", mode, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    if (f && fgets(line, sizeof line, f))
        done = atof(line);
    if (f)
        fclose(f);
    waitpid(pid, &status, 0);
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || done <= 0.0)
        return -1.0;
    return done - start;
}

/* The median of RUNS children of mode; cold runs each get a fresh empty cache folder. */
static double measure(const char *mode, bool cold, const char *warm_dir)
{
    double t[RUNS];
    for (int i = 0; i < RUNS; i++) {
        char dir[64] = "/tmp/clt_bench_startup_XXXXXX";
        if (cold && !mkdtemp(dir))
            return -1.0;
        t[i] = run_child(mode, cold ? dir : warm_dir);
        if (cold)
            remove_dir(dir);
        if (t[i] < 0)
            return -1.0;
    }
    return median(t, RUNS);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        int rc = strcmp(argv[2], "opencl") == 0 ? child_opencl() : child_cltensor();
        if (rc == 0)
            printf("%.9f\n", now_s());
        fflush(stdout);
        return rc;
    }

    char warm[64] = "/tmp/clt_bench_startup_XXXXXX";
    if (!mkdtemp(warm) || run_child("cltensor", warm) < 0) { /* fills the warm cache */
        fprintf(stderr, "bench_startup: no OpenCL device, or the first run failed\n");
        return 1;
    }
    double ref = measure("opencl", false, "off");
    double cold = measure("cltensor", true, NULL);
    double hot = measure("cltensor", false, warm);
    remove_dir(warm);
    if (ref < 0 || cold < 0 || hot < 0) {
        fprintf(stderr, "bench_startup: a child process failed\n");
        return 1;
    }
    printf("{\"bench\":\"startup\",\"case\":\"opencl_reference\",\"runs\":%d,\"median_s\":%.4f,"
           "\"ratio\":1.00}\n", RUNS, ref);
    printf("{\"bench\":\"startup\",\"case\":\"cold_cache\",\"runs\":%d,\"median_s\":%.4f,"
           "\"reference_s\":%.4f,\"ratio\":%.2f}\n", RUNS, cold, ref, cold / ref);
    printf("{\"bench\":\"startup\",\"case\":\"warm_cache\",\"runs\":%d,\"median_s\":%.4f,"
           "\"reference_s\":%.4f,\"ratio\":%.2f}\n", RUNS, hot, ref, hot / ref);
    return 0;
}
