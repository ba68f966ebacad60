/* A sum in two stages: each work-group adds up its share of `x` into one partial sum
 * (work-items stride over the input, then a tree in local memory); a second launch of the same
 * kernel with a single work-group adds up the partial sums (reduction-final.toml).
 * The work-group size must be a power of two. */
__kernel void reduce(__global const float *x, __global float *partial, __local float *scratch,
                     const int n)
{
    const size_t lid = get_local_id(0);
    float sum = 0.0f;
    for (size_t i = get_global_id(0); i < (size_t)n; i += get_global_size(0))
        sum += x[i];
    scratch[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {
        if (lid < s)
            scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}
