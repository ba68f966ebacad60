// Device-to-device copy: the bandwidth a memory-bound kernel reaches on this device, to compare
// tuned stencils against (BENCHMARKS.md). n is the element count (the NDRange is exactly n).
__kernel void copy(__global const float *in, __global float *out, const int n)
{
    const int i = (int)get_global_id(0);
    if (i < n)
        out[i] = in[i];
}
