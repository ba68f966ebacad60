/* An OpenCL host program that asks ndtune for its work-group size.
 *
 *   blur --model MODEL.json     predict in this process from a model file
 *   blur --service ADDRESS      ask a running `ndtune serve` (HOST:PORT or unix:/PATH)
 *
 * It runs a 3x3 box blur over a COLS x ROWS float image on the first OpenCL device, the kernel
 * reading a __local tile of the work-group plus a one-cell border; the local size comes from
 * ndtune_predict_local_size, the global size is rounded up to its multiples. It checks the
 * output against a plain C blur, times cached predictions, reports the kernel's runtime with
 * ndtune_observe and plans a split of the rows with a second, slower device.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ndtune.h"

#define COLS 1000
#define ROWS 700
#define CACHED_CALLS 10000

static const char *SOURCE =
    "__kernel void blur(__global const float *in, __global float *out, int cols, int rows,\n"
    "                   __local float *tile) {\n"
    "  int lx = get_local_id(0), ly = get_local_id(1);\n"
    "  int wc = get_local_size(0), wr = get_local_size(1);\n"
    "  int x0 = get_group_id(0) * wc - 1, y0 = get_group_id(1) * wr - 1;\n"
    "  int tw = wc + 2, th = wr + 2;\n"
    "  for (int y = ly; y < th; y += wr)\n"
    "    for (int x = lx; x < tw; x += wc) {\n"
    "      int sx = clamp(x0 + x, 0, cols - 1), sy = clamp(y0 + y, 0, rows - 1);\n"
    "      tile[y * tw + x] = in[sy * cols + sx];\n"
    "    }\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  int c = get_global_id(0), r = get_global_id(1);\n"
    "  if (c >= cols || r >= rows) return;\n"
    "  float s = 0.0f;\n"
    "  for (int dy = 0; dy < 3; dy++)\n"
    "    for (int dx = 0; dx < 3; dx++) s += tile[(ly + dy) * tw + lx + dx];\n"
    "  out[r * cols + c] = s / 9.0f;\n"
    "}\n";

static void die_cl(const char *call, cl_int err) {
  fprintf(stderr, "blur: %s failed: %d\n", call, err);
  exit(1);
}

static void die_ndtune(const char *call, ndtune_status status) {
  const char *message = ndtune_last_error();
  fprintf(stderr, "blur: %s failed (%d): %s\n", call, (int)status, message ? message : "");
  exit(1);
}

#define CHECK(call, err)         \
  do {                           \
    if ((err) != CL_SUCCESS)     \
      die_cl(call, err);         \
  } while (0)

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The same blur with plain loops, no tile. */
static void blur_reference(const float *in, float *out) {
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++) {
      float s = 0.0f;
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++)
          s += in[clampi(r + dy, 0, ROWS - 1) * COLS + clampi(c + dx, 0, COLS - 1)];
      out[r * COLS + c] = s / 9.0f;
    }
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "--model") != 0 && strcmp(argv[1], "--service") != 0)) {
    fprintf(stderr, "usage: %s --model MODEL.json | --service ADDRESS\n", argv[0]);
    return 2;
  }
  int in_process = strcmp(argv[1], "--model") == 0;
  ndtune_predictor *predictor =
      in_process ? ndtune_predictor_load(argv[2]) : ndtune_predictor_connect(argv[2]);
  if (!predictor) {
    fprintf(stderr, "blur: %s\n", ndtune_last_error());
    return 1;
  }

  cl_int err;
  cl_platform_id platform;
  cl_device_id device;
  CHECK("clGetPlatformIDs", clGetPlatformIDs(1, &platform, NULL));
  CHECK("clGetDeviceIDs", clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
  char name[256];
  CHECK("clGetDeviceInfo", clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name, name, NULL));
  printf("device: %s\n", name);

  /* Ask ndtune: the first call reads the device and extracts the kernel's features. */
  const size_t global[2] = {COLS, ROWS};
  const ndtune_stencil_shape shape = {1, 1, 1, 1, "float", "float"};
  size_t local[2];
  ndtune_status status =
      ndtune_predict_local_size(predictor, device, SOURCE, NULL, global, &shape, local);
  if (status != NDTUNE_OK)
    die_ndtune("ndtune_predict_local_size", status);
  printf("local size: %zu x %zu (%s)\n", local[0], local[1],
         in_process ? "in process" : "through the service");

  /* Later calls hit the caches. */
  double start = seconds();
  for (int i = 0; i < CACHED_CALLS; i++) {
    size_t again[2];
    status = ndtune_predict_local_size(predictor, device, SOURCE, NULL, global, &shape, again);
    if (status != NDTUNE_OK)
      die_ndtune("ndtune_predict_local_size", status);
    if (again[0] != local[0] || again[1] != local[1]) {
      fprintf(stderr, "blur: call %d predicted %zu x %zu\n", i, again[0], again[1]);
      return 1;
    }
  }
  printf("cached prediction: %.2f us per call (%d calls)\n",
         (seconds() - start) * 1e6 / CACHED_CALLS, CACHED_CALLS);

  /* Run the blur with that local size. */
  cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  CHECK("clCreateContext", err);
  cl_command_queue queue = clCreateCommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE, &err);
  CHECK("clCreateCommandQueue", err);
  cl_program program = clCreateProgramWithSource(context, 1, &SOURCE, NULL, &err);
  CHECK("clCreateProgramWithSource", err);
  err = clBuildProgram(program, 1, &device, NULL, NULL, NULL);
  if (err != CL_SUCCESS) {
    char log[8192];
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
    fprintf(stderr, "blur: build failed:\n%s\n", log);
    return 1;
  }
  cl_kernel kernel = clCreateKernel(program, "blur", &err);
  CHECK("clCreateKernel", err);

  size_t bytes = sizeof(float) * COLS * ROWS;
  float *in = malloc(bytes), *out = malloc(bytes), *expected = malloc(bytes);
  for (int i = 0; i < COLS * ROWS; i++)
    in[i] = (float)(((unsigned)i * 7919u) % 1000u) / 1000.0f;
  cl_mem d_in = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, in, &err);
  CHECK("clCreateBuffer", err);
  cl_mem d_out = clCreateBuffer(context, CL_MEM_WRITE_ONLY, bytes, NULL, &err);
  CHECK("clCreateBuffer", err);
  cl_int cols = COLS, rows = ROWS;
  CHECK("clSetKernelArg", clSetKernelArg(kernel, 0, sizeof d_in, &d_in));
  CHECK("clSetKernelArg", clSetKernelArg(kernel, 1, sizeof d_out, &d_out));
  CHECK("clSetKernelArg", clSetKernelArg(kernel, 2, sizeof cols, &cols));
  CHECK("clSetKernelArg", clSetKernelArg(kernel, 3, sizeof rows, &rows));
  CHECK("clSetKernelArg",
        clSetKernelArg(kernel, 4, sizeof(float) * (local[0] + 2) * (local[1] + 2), NULL));
  size_t launch[2] = {round_up(COLS, local[0]), round_up(ROWS, local[1])};
  cl_event done;
  CHECK("clEnqueueNDRangeKernel",
        clEnqueueNDRangeKernel(queue, kernel, 2, NULL, launch, local, 0, NULL, &done));
  CHECK("clEnqueueReadBuffer",
        clEnqueueReadBuffer(queue, d_out, CL_TRUE, 0, bytes, out, 1, &done, NULL));
  cl_ulong t0, t1;
  CHECK("clGetEventProfilingInfo",
        clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL));
  CHECK("clGetEventProfilingInfo",
        clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL));
  double runtime_ms = (double)(t1 - t0) * 1e-6;

  blur_reference(in, expected);
  for (int i = 0; i < COLS * ROWS; i++)
    if (fabsf(out[i] - expected[i]) > 1e-5f) {
      fprintf(stderr, "blur: cell (%d, %d) is %f, expected %f\n", i % COLS, i / COLS, out[i],
              expected[i]);
      return 1;
    }
  printf("verified: %d x %d cells, kernel %.3f ms\n", COLS, ROWS, runtime_ms);

  /* Report the runtime; only a service keeps it. */
  status = ndtune_observe(predictor, device, SOURCE, NULL, global, &shape, local, runtime_ms);
  if (status == NDTUNE_OK)
    printf("observed: %.3f ms reported to the service\n", runtime_ms);
  else if (status == NDTUNE_ERR_UNSUPPORTED)
    printf("observed: not kept (%s)\n", ndtune_last_error());
  else
    die_ndtune("ndtune_observe", status);

  /* Split the rows between this device and one twice as slow with twice its rows per group. */
  size_t split_rows = launch[1] * 2;
  size_t work_group[2] = {local[1], local[1] * 2};
  double time_ms[2] = {runtime_ms, runtime_ms * 2.0};
  ndtune_split_part parts[2];
  double theoretical_ms;
  status = ndtune_split_plan(split_rows, 2, work_group, time_ms, parts, &theoretical_ms);
  if (status != NDTUNE_OK)
    die_ndtune("ndtune_split_plan", status);
  printf("split of %zu rows, theoretical %.3f ms:\n", split_rows, theoretical_ms);
  for (int i = 0; i < 2; i++)
    printf("  part %d: offset %zu size %zu work_groups %zu factor %.4f\n", i, parts[i].offset,
           parts[i].size, parts[i].work_groups, parts[i].factor);

  clReleaseEvent(done);
  clReleaseMemObject(d_in);
  clReleaseMemObject(d_out);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  free(in);
  free(out);
  free(expected);
  ndtune_predictor_free(predictor);
  return 0;
}
