// scripts/test-gpu.sh: dynamic shared memory (Kernel Tuner's `smem_args`, the spec's `local`
// argument): each block stages its part of x in `tile`, sized by the launch.
extern "C" __global__ void twice(float *y, const float *x) {
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = x[i];
    __syncthreads();
    y[i] = 2.0f * tile[blockDim.x - 1 - threadIdx.x];
}
