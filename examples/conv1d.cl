// 1D convolution of N outputs with a MASK-tap mask (Erdem et al. 2018, §3). Each work-group of WG
// work-items stages the WG + MASK - 1 inputs it needs in local memory (eq. 11).
// Defines: N, MASK, WG. The input has N + MASK - 1 elements.
__kernel void conv1d(__global const float *in, __global const float *mask, __global float *out)
{
    __local float tile[WG + MASK - 1];
    const int gid = get_global_id(0);
    const int lid = get_local_id(0);
    const int base = gid - lid; // first output of this work-group (global offsets included)
    for (int i = lid; i < WG + MASK - 1; i += WG)
        tile[i] = in[base + i];
    barrier(CLK_LOCAL_MEM_FENCE);
    float acc = 0.0f;
    for (int m = 0; m < MASK; ++m)
        acc += tile[lid + m] * mask[m];
    out[gid] = acc;
}
