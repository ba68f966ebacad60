// scripts/test-gpu.sh: a filter whose taps are in constant memory (Kernel Tuner's `cmem_args`,
// the spec's `kind = "constant"`), checked against a host reference (constant_ref.c).
__constant__ float taps[TAPS];

extern "C" __global__ void filter(float *y, const float *x) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int k = 0; k < TAPS; ++k)
        sum += taps[k] * x[i + k];
    y[i] = sum;
}
