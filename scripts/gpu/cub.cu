// A kernel written for nvcc (scripts/gpu/cub.toml): it includes CUB's umbrella header, whose
// device-wide dispatch is host code NVRTC refuses, for a block-wide sum. ndtune builds it with
// nvcc; the kernel is a template, found in nvcc's cubin by its mangled name.
#include <cub/cub.cuh>

// y = 2 x, each block also counting its threads with cub::BlockReduce (a count of WG, exact).
template <typename T>
__global__ void twice(T *y, const T *x) {
    typedef cub::BlockReduce<T, WG> BlockReduce;
    __shared__ typename BlockReduce::TempStorage temp;
    __shared__ T count;
    T n = BlockReduce(temp).Sum(T(1));
    if (threadIdx.x == 0)
        count = n;
    __syncthreads();
    int i = blockIdx.x * WG + threadIdx.x;
    y[i] = T(2) * x[i] * count / T(WG);
}
