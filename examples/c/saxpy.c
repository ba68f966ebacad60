/* An OpenCL host program that takes its configuration from ndtune's wisdom (docs/deploy.md).
 *
 *   saxpy [--wisdom FILE] [--n N] [--source FILE]
 *
 * It runs y = a * x + y (examples/saxpy.cl) over N floats on the first OpenCL device, with the
 * work-group size WG and the items per work-item ITEMS that ndtune_pick chooses for this device
 * and this N: the build options and launch sizes come from the pick. Where the wisdom cannot
 * say (no file yet, a corrupt one, no configuration valid here), it keeps its own defaults and
 * says why. Run it with NDTUNE_CAPTURE=DIR and it records what it asked for, so that
 * `ndtune tune examples/saxpy.toml --captured DIR` tunes exactly that. It checks the result
 * against plain C and prints one line: `saxpy N=...: WG=.. ITEMS=.. (how) ... ms, correct`.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ndtune.h"

#ifndef SAXPY_SOURCE
#define SAXPY_SOURCE "examples/saxpy.cl"
#endif

static void die_cl(const char *call, cl_int err) {
  fprintf(stderr, "saxpy: %s failed: %d\n", call, err);
  exit(1);
}

#define CHECK(call, err)     \
  do {                       \
    if ((err) != CL_SUCCESS) \
      die_cl(call, err);     \
  } while (0)

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "saxpy: cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  if (!text || fread(text, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "saxpy: cannot read %s\n", path);
    exit(1);
  }
  text[n] = '\0';
  fclose(f);
  return text;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  const char *wisdom_path = "saxpy.wisdom.json", *source_path = SAXPY_SOURCE;
  size_t n = 1 << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--wisdom"))
      wisdom_path = argv[i + 1];
    else if (!strcmp(argv[i], "--n"))
      n = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--source"))
      source_path = argv[i + 1];
    else {
      fprintf(stderr, "usage: saxpy [--wisdom FILE] [--n N] [--source FILE]\n");
      return 2;
    }
  }

  cl_int err;
  cl_platform_id platform;
  cl_device_id device;
  CHECK("clGetPlatformIDs", clGetPlatformIDs(1, &platform, NULL));
  CHECK("clGetDeviceIDs", clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));

  /* The program's own configuration, kept where the wisdom cannot say. */
  char defaults[64];
  const char *how = "defaults", *params = "WG=64 ITEMS=1", *options = defaults;
  size_t global = n, local = 64;
  snprintf(defaults, sizeof defaults, "-D WG=64 -D ITEMS=1");

  ndtune_wisdom *wisdom = ndtune_wisdom_open(wisdom_path);
  char constants[64];
  snprintf(constants, sizeof constants, "N=%zu", n);
  ndtune_config config;
  ndtune_status status = ndtune_pick(wisdom, "saxpy", device, constants, &config);
  if (status == NDTUNE_OK) {
    static const char *words[] = {"exact", "nearest", "predicted"};
    how = words[config.how];
    params = config.params;
    options = config.build_options;
    global = config.global[0];
    local = config.local[0];
    fprintf(stderr, "saxpy: %s\n", config.reason);
  } else {
    fprintf(stderr, "saxpy: keeping the defaults: %s\n", ndtune_last_error());
  }

  /* The lookup of an answer already given is what a launch pays each time. */
  double t0 = now_ms();
  for (int i = 0; i < 100000; i++)
    ndtune_pick(wisdom, "saxpy", device, constants, &config);
  double lookup_us = (now_ms() - t0) * 1e3 / 100000;

  cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  CHECK("clCreateContext", err);
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
  CHECK("clCreateCommandQueue", err);
  char *source = read_file(source_path);
  cl_program program = clCreateProgramWithSource(context, 1, (const char **)&source, NULL, &err);
  CHECK("clCreateProgramWithSource", err);
  if (clBuildProgram(program, 1, &device, options, NULL, NULL) != CL_SUCCESS) {
    char log[4096] = "";
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
    fprintf(stderr, "saxpy: the build with \"%s\" failed:\n%s\n", options, log);
    return 1;
  }
  cl_kernel kernel = clCreateKernel(program, "saxpy", &err);
  CHECK("clCreateKernel", err);

  float a = 2.0f, *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  for (size_t i = 0; i < n; i++) {
    x[i] = (float)(i % 1000) / 1000.0f;
    y[i] = (float)(i % 7);
  }
  cl_mem dx = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * sizeof *x, x, &err);
  CHECK("clCreateBuffer", err);
  cl_mem dy = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof *y, y, &err);
  CHECK("clCreateBuffer", err);
  CHECK("clSetKernelArg", clSetKernelArg(kernel, 0, sizeof a, &a));
  CHECK("clSetKernelArg", clSetKernelArg(kernel, 1, sizeof dx, &dx));
  CHECK("clSetKernelArg", clSetKernelArg(kernel, 2, sizeof dy, &dy));
  double start = now_ms();
  CHECK("clEnqueueNDRangeKernel", clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, &local, 0, NULL, NULL));
  CHECK("clFinish", clFinish(queue));
  double ms = now_ms() - start;
  float *out = malloc(n * sizeof *out);
  CHECK("clEnqueueReadBuffer", clEnqueueReadBuffer(queue, dy, CL_TRUE, 0, n * sizeof *out, out, 0, NULL, NULL));
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++)
    if (fabsf(out[i] - (a * x[i] + y[i])) > 1e-5f)
      wrong++;

  printf("saxpy N=%zu: %s (%s), global %zu local %zu, %.3f ms, lookup %.3f us, %s\n", n, params, how,
         global, local, ms, lookup_us, wrong ? "WRONG" : "correct");
  ndtune_wisdom_free(wisdom);
  return wrong ? 1 : 0;
}
