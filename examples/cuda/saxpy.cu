// y = a * x + y in CUDA, each thread updating ITEMS elements WG apart (coalesced): the
// kernel of examples/saxpy.cl as a CUDA user writes it, with C++ linkage (NVRTC finds its
// mangled name).
__global__ void saxpy(const float a, const float *x, float *y) {
    size_t base = blockIdx.x * (WG * ITEMS) + threadIdx.x;
    for (int k = 0; k < ITEMS; ++k) {
        size_t i = base + (size_t)k * WG;
        y[i] = a * x[i] + y[i];
    }
}
