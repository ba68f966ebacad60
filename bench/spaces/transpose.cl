// Transpose of an N x N float matrix: the per-configuration overhead benchmark (bench/overhead.sh).
// A bandwidth kernel whose buffers grow with N (N = 4096: 64 MiB in, 64 MiB out).
__kernel void transpose(__global const float *in, __global float *out)
{
    const size_t x = get_global_id(0), y = get_global_id(1);
    out[x * N + y] = in[y * N + x];
}
