// examples/conv1d.cl in CUDA: 1D convolution of N outputs with a MASK-tap mask, each block of WG
// threads staging the WG + MASK - 1 inputs it needs in shared memory. Defines: N, MASK, WG.
extern "C" __global__ void conv1d(const float *in, const float *mask, float *out)
{
    __shared__ float tile[WG + MASK - 1];
    const int lid = threadIdx.x;
    const int gid = blockIdx.x * WG + lid;
    const int base = gid - lid; // first output of this block (split's offsets included)
    for (int i = lid; i < WG + MASK - 1; i += WG)
        tile[i] = in[base + i];
    __syncthreads();
    float acc = 0.0f;
    for (int m = 0; m < MASK; ++m)
        acc += tile[lid + m] * mask[m];
    out[gid] = acc;
}
