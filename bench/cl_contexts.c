// What one process pays to use an NVIDIA GPU through OpenCL, and how builds run in parallel
// (bench/cl_contexts.sh; BENCHMARKS.md, "What a context and a build cost on NVIDIA's driver").
//   cl_contexts context K TAG              discovery, context + queue, a tiny build and launch,
//                                          release, on the platform's K-th GPU: one JSON line
//   cl_contexts builds serial|threads N U S  N distinct programs (-DUNROLL=U -DSEED=S+i), one
//                                          after another or in N threads on one shared context
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static cl_device_id nvidia_gpu(unsigned k, cl_uint *count) {
    cl_platform_id platforms[8];
    cl_uint n = 0;
    clGetPlatformIDs(8, platforms, &n);
    for (cl_uint i = 0; i < n; i++) {
        char name[256] = "";
        clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (!strstr(name, "NVIDIA")) continue;
        cl_device_id devices[16];
        clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_GPU, 16, devices, count);
        return devices[k < *count ? k : 0];
    }
    fprintf(stderr, "no NVIDIA platform\n");
    exit(1);
}

static cl_context context;
static cl_device_id device;
static int unroll;
static const char *heavy =
    "__kernel void f(__global float *a) { float x = a[get_global_id(0)];\n"
    "#pragma unroll\n"
    "for (int i = 0; i < UNROLL; i++) x = x * 1.0001f + SEED * 0.5f + sin(x * (float)i);\n"
    "a[get_global_id(0)] = x; }";

static double build(int seed) {
    char options[128];
    snprintf(options, sizeof options, "-DUNROLL=%d -DSEED=%d", unroll, seed);
    double start = now();
    cl_int e;
    cl_program p = clCreateProgramWithSource(context, 1, &heavy, NULL, &e);
    if (clBuildProgram(p, 1, &device, options, NULL, NULL) != CL_SUCCESS) fprintf(stderr, "build failed\n");
    clReleaseProgram(p);
    return now() - start;
}

static void *build_thread(void *arg) {
    double *slot = arg;
    *slot = build((int)*slot);
    return NULL;
}

static int contexts(unsigned k, const char *tag) {
    cl_uint count;
    double t0 = now();
    device = nvidia_gpu(k, &count);
    double t1 = now();
    cl_int e;
    context = clCreateContext(NULL, 1, &device, NULL, NULL, &e);
    cl_command_queue q = clCreateCommandQueue(context, device, 0, &e);
    double t2 = now();
    const char *src = "__kernel void f(__global float *a) { a[get_global_id(0)] *= 2.0f; }";
    cl_program p = clCreateProgramWithSource(context, 1, &src, NULL, &e);
    clBuildProgram(p, 1, &device, "", NULL, NULL);
    cl_kernel kernel = clCreateKernel(p, "f", &e);
    cl_mem b = clCreateBuffer(context, CL_MEM_READ_WRITE, 4096, NULL, &e);
    clSetKernelArg(kernel, 0, sizeof b, &b);
    size_t global = 1024;
    clEnqueueNDRangeKernel(q, kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
    clFinish(q);
    double t3 = now();
    clReleaseMemObject(b);
    clReleaseKernel(kernel);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(context);
    double t4 = now();
    printf("{\"tag\":\"%s\",\"gpu\":%u,\"gpus_seen\":%u,\"discover\":%.3f,\"context\":%.3f,"
           "\"build_run\":%.3f,\"release\":%.3f,\"total\":%.3f}\n",
           tag, k, count, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0);
    return 0;
}

static int builds(const char *mode, int n, int seed0) {
    cl_uint count;
    double t0 = now();
    device = nvidia_gpu(0, &count);
    cl_int e;
    context = clCreateContext(NULL, 1, &device, NULL, NULL, &e);
    double t1 = now();
    double took[256];
    if (n > 256) n = 256;
    if (!strcmp(mode, "serial")) {
        for (int i = 0; i < n; i++) took[i] = build(seed0 + i);
    } else {
        pthread_t threads[256];
        for (int i = 0; i < n; i++) {
            took[i] = seed0 + i;
            pthread_create(&threads[i], NULL, build_thread, &took[i]);
        }
        for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
    }
    double t2 = now(), sum = 0, longest = 0;
    for (int i = 0; i < n; i++) {
        sum += took[i];
        if (took[i] > longest) longest = took[i];
    }
    clReleaseContext(context);
    printf("{\"mode\":\"%s\",\"builds\":%d,\"unroll\":%d,\"setup\":%.3f,\"wall\":%.3f,\"sum\":%.3f,"
           "\"longest\":%.3f}\n", mode, n, unroll, t1 - t0, t2 - t1, sum, longest);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "context")) return contexts(atoi(argv[2]), argc > 3 ? argv[3] : "");
    if (argc >= 6 && !strcmp(argv[1], "builds")) {
        unroll = atoi(argv[4]);
        return builds(argv[2], atoi(argv[3]), atoi(argv[5]));
    }
    fprintf(stderr, "usage: cl_contexts context K [TAG] | builds serial|threads N UNROLL SEED\n");
    return 2;
}
